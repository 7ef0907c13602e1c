//! Cache writers: USD text, OBJ sequence and PC2 — content read back, atomicity, clean-up.

use glam::Vec3;
use hooke::{ClothGrid, Model, ModelBuilder, Rope};
use hooke_io::cache::{self, CacheError, CacheSpec, Format, read_pc2, read_usda};
use std::path::{Path, PathBuf};
use support::read_usda_summary;

mod support;

/// Cloth: 4 × 5 = 20 particles, 2·3·4 = 24 triangles; rope "rope 1": 7 particles.
const CLOTH: usize = 20;
const CLOTH_FACES: usize = 24;
const ROPE: usize = 7;
const FRAMES: usize = 3;

fn model() -> Model {
    let mut b = ModelBuilder::new();
    let mut grid = ClothGrid::new("cloth", 4, 5, 0.1);
    grid.center = Vec3::new(0.0, 1.0, 0.0);
    b.add_cloth_grid(&grid).unwrap();
    b.add_rope(&Rope::straight("rope 1", Vec3::new(-0.3, 2.0, 0.0), Vec3::new(0.3, 2.0, 0.0), ROPE)).unwrap();
    b.finalize().unwrap()
}

/// Distinct positions per frame and particle, with values that are not short decimals.
fn positions(model: &Model, frame: usize) -> Vec<Vec3> {
    model
        .particle_position()
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            p + Vec3::new(0.01 * frame as f32, -0.1 * frame as f32 / 3.0, 1e-3 * i as f32 + frame as f32 / 7.0)
        })
        .collect()
}

fn spec<'a>(dir: &'a Path, model: &'a Model) -> CacheSpec<'a> {
    CacheSpec { dir, scene_name: "scene", fps: 30.0, model, vertex_maps: &[] }
}

/// Writes `frames` frames and finishes.
fn write(format: Format, dir: &Path, model: &Model, frames: usize) -> Vec<PathBuf> {
    let mut w = cache::create(format, &spec(dir, model)).unwrap();
    for f in 0..frames {
        w.write_frame(f, &positions(model, f)).unwrap();
    }
    w.finish().unwrap()
}

/// File names in `dir`, sorted (hidden temporary files included).
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn names(paths: &[PathBuf]) -> Vec<String> {
    let mut v: Vec<String> = paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// `read_usda` gives back what the writer was given, bit for bit: every frame's positions, the
/// mesh's triangles (local to the body), no triangles for the rope, the time codes and the
/// frame rate.
#[test]
fn usda_reads_back_bit_for_bit() {
    let tmp = tempfile::tempdir().unwrap();
    let m = model();
    let paths = write(Format::Usda, tmp.path(), &m, FRAMES);
    let cache = read_usda(&paths[0]).unwrap();
    assert_eq!(cache.fps, 30.0);
    assert_eq!(cache.times, (0..FRAMES).map(|f| f as f64).collect::<Vec<_>>());
    assert_eq!(cache.prims.len(), 2);
    assert_eq!(cache.prims[0].triangles.as_deref(), Some(m.triangles()));
    assert_eq!((cache.prims[1].name.as_str(), cache.prims[1].triangles.is_none()), ("rope_1", true));
    for f in 0..FRAMES {
        let want = positions(&m, f);
        let got = cache.positions(f);
        assert!(
            want.iter().zip(&got).all(|(a, b)| a.to_array().map(f32::to_bits) == b.to_array().map(f32::to_bits))
                && want.len() == got.len(),
            "frame {f} differs"
        );
    }
}

/// `read_usda` refuses what is not its own cache, naming the file and line: no header, quads,
/// an index past the points, a point count that changes, a point that is not finite or not three
/// numbers, prims
/// with different time codes, no prim at all.
#[test]
fn usda_reader_refuses_bad_files() {
    let tmp = tempfile::tempdir().unwrap();
    let m = model();
    let paths = write(Format::Usda, tmp.path(), &m, FRAMES);
    let good = std::fs::read_to_string(&paths[0]).unwrap();
    let case = |name: &str, text: String, expect: &str| {
        let path = tmp.path().join(format!("{name}.usda"));
        std::fs::write(&path, text).unwrap();
        let e = read_usda(&path).unwrap_err().to_string();
        println!("{name}: {e}");
        assert!(e.contains(&format!("{name}.usda")) && e.contains(expect), "{name}: {e}");
    };
    case("header", good.replacen("#usda 1.0", "#sdf 1.0", 1), "no `#usda 1.0` header");
    case("quads", good.replacen("faceVertexCounts = [3, ", "faceVertexCounts = [4, ", 1), "other than triangles");
    case("index", good.replacen("faceVertexIndices = [0", "faceVertexIndices = [20", 1), "index 20 with 20 points");
    // Frame 1 of the cloth's points (not of its extent, which comes first).
    let points = &good[good.find("points.timeSamples").unwrap()..];
    let line = points.lines().find(|l| l.trim_start().starts_with("1: [(")).unwrap().to_string();
    let shorter =
        line.replacen("[(", "[", 1).split_once("), ").map(|(_, rest)| format!("            1: [{rest}")).unwrap();
    case("count", good.replacen(&line, &shorter, 1), "points at time 1");
    let (head, tail) = line.split_once("[(").unwrap();
    let nan = format!("{head}[(NaN,{}", tail.split_once(',').unwrap().1);
    case("nan", good.replacen(&line, &nan, 1), "is not finite");
    let extra = format!("{head}[(1.0, {tail}");
    case("coordinates", good.replacen(&line, &extra, 1), "does not have three coordinates");
    let rope_first = good.rfind("            0: [(").unwrap();
    let mut retimed = good.clone();
    retimed.replace_range(rope_first..rope_first + "            0".len(), "            0.5");
    case("times", retimed, "other time codes");
    case("empty", "#usda 1.0\n(\n)\n".replace("\\n", "\n"), "no animated");
    // Far or overflowing points, at a later frame as at the first.
    let far = format!("{head}[(1e30,{}", tail.split_once(',').unwrap().1);
    case("far", good.replacen(&line, &far, 1), "beyond 1e9 m");
    let overflow = format!("{head}[(1e39,{}", tail.split_once(',').unwrap().1);
    case("overflow", good.replacen(&line, &overflow, 1), "beyond 1e9 m");
    // Cut short: inside a block, after the blocks' lines but before their ends, or frames
    // missing from a file whose blocks were closed by hand.
    let at = good.find(&line).unwrap() + line.len() + 1;
    case("truncated", good[..at].to_string(), "ends inside a `points.timeSamples` block");
    let trimmed = good.trim_end();
    let unclosed = &trimmed[..trimmed.rfind('\n').unwrap()];
    case("unclosed", format!("{unclosed}\n"), "1 block(s) `{ … }` not closed");
    let end = format!("endTimeCode = {}", FRAMES - 1);
    assert!(good.contains(&end));
    case("end", good.replacen(&end, &format!("endTimeCode = {FRAMES}"), 1), "frames are missing");
    case("range", good.replacen(&end, &format!("endTimeCode = {}", FRAMES - 2), 1), "leaves frames out");
    case("start", good.replacen("startTimeCode = 0", "startTimeCode = 1", 1), "start at time code 0");
    case("closes", format!("{good}}}\n"), "a `}` that closes no block");
    let fps = good.lines().find(|l| l.trim_start().starts_with("framesPerSecond =")).unwrap();
    case(
        "fps",
        good.replacen(fps, "    framesPerSecond = 1e39", 1),
        "framesPerSecond 1e39 is not a finite number in f32",
    );
    // A third helper's (2026-12-07), each drawn before with exit 0: fewer face counts than
    // triangles, a frame missing between the time codes, and layer metadata that changes what
    // the points mean.
    case("faces", good.replacen("faceVertexCounts = [3, ", "faceVertexCounts = [", 1), "faces, faceVertexIndices");
    let skipped = good.replace("            1: [", "            1.5: [");
    case("skipped", skipped, "time code 1.5 follows 0: a hooke cache has a sample every frame");
    let codes = good.lines().find(|l| l.trim_start().starts_with("timeCodesPerSecond =")).unwrap();
    case(
        "codes",
        good.replacen(codes, "    timeCodesPerSecond = -60", 1),
        "timeCodesPerSecond \"-60\" is not a number",
    );
    case(
        "rate",
        good.replacen(codes, "    timeCodesPerSecond = 7", 1),
        "timeCodesPerSecond 7 differs from framesPerSecond",
    );
    case("units", good.replacen("metersPerUnit = 1", "metersPerUnit = 0", 1), "metersPerUnit 0 (");
    case("axis", good.replacen("upAxis = \"Y\"", "upAxis = \"Q\"", 1), "upAxis \"Q\" (");
}

/// A cache whose topology changes (a cloth that tore or was cut, in the writer's layout: face
/// counts and indices time-sampled from the first time code, points gaining a split particle)
/// is read with each topology and the time code it holds from; an index beyond a later frame's
/// points, a topology that starts after the points or whose time codes do not ascend are
/// refused, naming the file and what is wrong.
#[test]
fn usda_reader_reads_a_topology_that_changes() {
    let text = "#usda 1.0\n(\n    framesPerSecond = 30\n    timeCodesPerSecond = 30\n)\n\ndef Xform \"World\"\n{\n    def Mesh \"cloth\"\n    {\n        int[] faceVertexCounts.timeSamples = {\n            0: [3, 3],\n            2: [3, 3],\n        }\n        int[] faceVertexIndices.timeSamples = {\n            0: [0, 1, 2, 2, 1, 3],\n            2: [0, 1, 2, 4, 1, 3],\n        }\n        point3f[] points.timeSamples = {\n            0: [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)],\n            1: [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)],\n            2: [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 1, 0)],\n        }\n    }\n}\n";
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("torn.usda");
    std::fs::write(&path, text).unwrap();
    let cache = read_usda(&path).unwrap();
    assert_eq!(cache.times, [0.0, 1.0, 2.0]);
    let prim = &cache.prims[0];
    assert_eq!(prim.triangles.as_deref(), Some(&[[0, 1, 2], [2, 1, 3]][..]));
    assert_eq!(prim.later_triangles, [(2.0, vec![[0, 1, 2], [4, 1, 3]])]);
    assert_eq!(prim.triangles_at(1.0), Some(&[[0, 1, 2], [2, 1, 3]][..]));
    assert_eq!(prim.triangles_at(2.0), Some(&[[0, 1, 2], [4, 1, 3]][..]));
    assert_eq!(prim.frames.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4, 5]);
    let case = |name: &str, from: &str, to: &str, expect: &str| {
        let path = tmp.path().join(format!("{name}.usda"));
        assert!(text.contains(from));
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        let e = read_usda(&path).unwrap_err().to_string();
        println!("{name}: {e}");
        assert!(e.contains(&format!("{name}.usda")) && e.contains(expect), "{name}: {e}");
    };
    case("later_index", "2: [0, 1, 2, 4, 1, 3]", "2: [0, 1, 2, 5, 1, 3]", "index 5 with 5 points at time 2");
    case("early_index", "0: [0, 1, 2, 2, 1, 3]", "0: [0, 1, 2, 4, 1, 3]", "index 4 with 4 points at time 0");
    case("late_start", "0: [0, 1, 2, 2, 1, 3]", "1: [0, 1, 2, 2, 1, 3]", "its topology starts at time 1");
    case("order", "2: [0, 1, 2, 4, 1, 3]", "0: [0, 1, 2, 4, 1, 3]", "topology time code 0 does not follow 0");
    case("quads", "2: [3, 3]", "2: [4, 3]", "other than triangles");
    // Face counts and indices sampled at other times.
    case(
        "counts_time",
        "2: [0, 1, 2, 4, 1, 3]",
        "3: [0, 1, 2, 4, 1, 3]",
        "faceVertexCounts (time, faces) [(0.0, 2), (2.0, 2)] do not match those of faceVertexIndices [(0.0, 2), (3.0, 2)]",
    );
    // Points gained with no new faces (the topology samples moved past them).
    let path = tmp.path().join("no_faces.usda");
    let moved =
        text.replacen("2: [3, 3]", "3: [3, 3]", 1).replacen("2: [0, 1, 2, 4, 1, 3]", "3: [0, 1, 2, 4, 1, 3]", 1);
    std::fs::write(&path, moved).unwrap();
    let e = read_usda(&path).unwrap_err().to_string();
    assert!(e.contains("no_faces.usda") && e.contains("5 points at time 2, 4 at time 1, with no new faces"), "{e}");
}

#[test]
fn usda_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out/nested"); // created by create()
    let m = model();
    let paths = write(Format::Usda, &dir, &m, FRAMES);
    assert_eq!(paths, vec![dir.join("scene.usda")]);
    assert_eq!(listing(&dir), ["scene.usda"], "no temporary files may remain");

    let prims = read_usda_summary(&paths[0]).unwrap();
    assert_eq!(prims.len(), 2);
    assert_eq!((prims[0].name.as_str(), prims[0].type_name.as_str()), ("cloth", "Mesh"));
    assert_eq!(prims[0].points_per_frame, vec![CLOTH; FRAMES]);
    assert_eq!(prims[0].face_count, CLOTH_FACES);
    assert_eq!((prims[1].name.as_str(), prims[1].type_name.as_str()), ("rope_1", "BasisCurves"));
    assert_eq!(prims[1].points_per_frame, vec![ROPE; FRAMES]);
    assert_eq!(prims[1].face_count, 0);

    let text = std::fs::read_to_string(&paths[0]).unwrap();
    assert!(text.starts_with("#usda 1.0\n"));
    for needle in [
        "defaultPrim = \"World\"",
        "upAxis = \"Y\"",
        "metersPerUnit = 1",
        "startTimeCode = 0",
        "endTimeCode = 2",
        "timeCodesPerSecond = 30",
        "framesPerSecond = 30",
        "def Xform \"World\"",
        "uniform token subdivisionScheme = \"none\"",
        "uniform token type = \"linear\"",
        "int[] curveVertexCounts = [7]",
        "interpolation = \"vertex\"",
    ] {
        assert!(text.contains(needle), "missing {needle:?}");
    }
    // Face indices are local to the body and the last point of frame 1 round-trips exactly.
    let p = positions(&m, 1)[CLOTH + ROPE - 1];
    assert!(text.contains(&format!("({:?}, {:?}, {:?})]", p.x, p.y, p.z)));
    let idx_line = text.lines().find(|l| l.contains("faceVertexIndices")).unwrap();
    let max = idx_line.split(['[', ']', ',']).filter_map(|s| s.trim().parse::<usize>().ok()).max().unwrap();
    assert_eq!(max, CLOTH - 1);

    // Overwriting an existing cache replaces it atomically.
    let paths = write(Format::Usda, &dir, &m, 1);
    assert_eq!(read_usda_summary(&paths[0]).unwrap()[0].points_per_frame, vec![CLOTH]);
    assert_eq!(listing(&dir), ["scene.usda"]);
}

#[test]
fn usda_opens_in_pxr() {
    if support::pxr("", &[]).is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let m = model();
    let paths = write(Format::Usda, tmp.path(), &m, FRAMES);
    let script = r#"
import sys
from pxr import Usd, UsdGeom
stage = Usd.Stage.Open(sys.argv[1])
print("stage", stage.GetStartTimeCode(), stage.GetEndTimeCode(), stage.GetTimeCodesPerSecond(),
      stage.GetFramesPerSecond(), UsdGeom.GetStageUpAxis(stage), UsdGeom.GetStageMetersPerUnit(stage),
      stage.GetDefaultPrim().GetPath())
for prim in stage.Traverse():
    if prim.GetTypeName() not in ("Mesh", "BasisCurves"):
        continue
    points = prim.GetAttribute("points")
    times = points.GetTimeSamples()
    counts = " ".join(str(len(points.Get(t))) for t in times)
    extra = ""
    if prim.GetTypeName() == "Mesh":
        mesh = UsdGeom.Mesh(prim)
        extra = "%d %d" % (len(mesh.GetFaceVertexCountsAttr().Get()), max(mesh.GetFaceVertexIndicesAttr().Get()))
    else:
        curves = UsdGeom.BasisCurves(prim)
        extra = "%s %d %s" % (curves.GetTypeAttr().Get(), len(curves.GetWidthsAttr().Get()), curves.GetWidthsInterpolation())
    print(prim.GetPath(), prim.GetTypeName(), len(times), counts, extra, repr(tuple(points.Get(1)[0])),
          len(UsdGeom.Boundable(prim).GetExtentAttr().GetTimeSamples()))
"#;
    let stdout = support::pxr(script, &[paths[0].to_str().unwrap()]).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(lines[0], "stage 0.0 2.0 30.0 30.0 Y 1.0 /World");
    let cloth: Vec<&str> = lines[1].splitn(9, ' ').collect();
    assert_eq!(cloth[..8], ["/World/cloth", "Mesh", "3", "20", "20", "20", "24", "19"], "{stdout}");
    let rope: Vec<&str> = lines[2].splitn(10, ' ').collect();
    assert_eq!(rope[..9], ["/World/rope_1", "BasisCurves", "3", "7", "7", "7", "linear", "7", "vertex"], "{stdout}");
    // The first point at time 1, read by USD as f32, equals what was written.
    for (line, k) in [(lines[1], 0), (lines[2], CLOTH)] {
        let tuple = &line[line.find('(').unwrap() + 1..line.find(')').unwrap()];
        let got: Vec<f32> = tuple.split(',').map(|s| s.trim().parse::<f64>().unwrap() as f32).collect();
        assert_eq!(got, positions(&m, 1)[k].to_array(), "{line}");
        assert!(line.ends_with(" 3"), "three extent samples: {line}");
    }
}

#[test]
fn obj_sequence_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let m = model();
    let paths = write(Format::Obj, dir, &m, FRAMES);
    assert_eq!(names(&paths), ["scene_0000.obj", "scene_0001.obj", "scene_0002.obj"]);
    assert_eq!(listing(dir), ["scene_0000.obj", "scene_0001.obj", "scene_0002.obj"]);
    for (f, path) in paths.iter().enumerate() {
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let objects: Vec<&str> = lines.iter().filter_map(|l| l.strip_prefix("o ")).collect();
        assert_eq!(objects, ["cloth", "rope_1"]);
        let verts: Vec<[f32; 3]> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("v "))
            .map(|l| {
                let v: Vec<f32> = l.split_whitespace().map(|s| s.parse().unwrap()).collect();
                [v[0], v[1], v[2]]
            })
            .collect();
        assert_eq!(verts.len(), CLOTH + ROPE);
        let expected = positions(&m, f);
        for k in [0, 7, CLOTH - 1, CLOTH, CLOTH + ROPE - 1] {
            assert_eq!(verts[k], expected[k].to_array(), "frame {f} vertex {k}");
        }
        // The grid's UVs, one `vt` per vertex, and faces `f a/a b/b c/c`.
        let vt: Vec<[f32; 2]> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("vt "))
            .map(|l| {
                let v: Vec<f32> = l.split_whitespace().map(|s| s.parse().unwrap()).collect();
                [v[0], v[1]]
            })
            .collect();
        let uv: Vec<[f32; 2]> = m.particle_uv().unwrap()[..CLOTH].iter().map(|u| u.to_array()).collect();
        assert_eq!(vt, uv);
        let faces: Vec<Vec<usize>> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("f "))
            .map(|l| {
                l.split_whitespace()
                    .map(|s| {
                        let (v, t) = s.split_once('/').unwrap();
                        assert_eq!(v, t, "{l}");
                        v.parse().unwrap()
                    })
                    .collect()
            })
            .collect();
        assert_eq!(faces.len(), CLOTH_FACES);
        assert!(faces.iter().flatten().all(|&i| (1..=CLOTH).contains(&i)));
        let polylines: Vec<Vec<usize>> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("l "))
            .map(|l| l.split_whitespace().map(|s| s.parse().unwrap()).collect())
            .collect();
        assert_eq!(polylines, vec![(CLOTH + 1..=CLOTH + ROPE).collect::<Vec<_>>()]);
    }
}

#[test]
fn pc2_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let m = model();
    let paths = write(Format::Pc2, dir, &m, FRAMES);
    assert_eq!(names(&paths), ["cloth.obj", "cloth.pc2", "rope_1.obj", "rope_1.pc2"]);
    assert_eq!(listing(dir), ["cloth.obj", "cloth.pc2", "rope_1.obj", "rope_1.pc2"]);

    for (name, range) in [("cloth", 0..CLOTH), ("rope_1", CLOTH..CLOTH + ROPE)] {
        let (points, frames) = read_pc2(dir.join(format!("{name}.pc2"))).unwrap();
        assert_eq!(points, range.len());
        assert_eq!(frames.len(), FRAMES);
        for (f, frame) in frames.iter().enumerate() {
            assert_eq!(frame.len(), range.len());
            let expected = positions(&m, f);
            for k in [0, range.len() / 2, range.len() - 1] {
                assert_eq!(frame[k], expected[range.start + k].to_array(), "{name} frame {f} point {k}");
            }
        }
        // Raw header: signature, version, points, startFrame, sampleRate, samples.
        let raw = std::fs::read(dir.join(format!("{name}.pc2"))).unwrap();
        assert_eq!(&raw[..12], b"POINTCACHE2\0");
        let word = |o: usize| <[u8; 4]>::try_from(&raw[o..o + 4]).unwrap();
        assert_eq!(i32::from_le_bytes(word(12)), 1);
        assert_eq!(i32::from_le_bytes(word(16)), range.len() as i32);
        assert_eq!(f32::from_le_bytes(word(20)), 0.0);
        assert_eq!(f32::from_le_bytes(word(24)), 1.0);
        assert_eq!(i32::from_le_bytes(word(28)), FRAMES as i32);
        assert_eq!(raw.len(), 32 + 12 * range.len() * FRAMES);

        // Rest mesh: frame-0 positions in the same order.
        let text = std::fs::read_to_string(dir.join(format!("{name}.obj"))).unwrap();
        assert!(text.contains(&format!("\no {name}\n")));
        let verts: Vec<Vec<f32>> = text
            .lines()
            .filter_map(|l| l.strip_prefix("v "))
            .map(|l| l.split_whitespace().map(|s| s.parse().unwrap()).collect())
            .collect();
        assert_eq!(verts.len(), range.len());
        assert_eq!(verts[range.len() - 1], positions(&m, 0)[range.end - 1].to_array());
        let faces = text.lines().filter(|l| l.starts_with("f ")).count();
        let lines = text.lines().filter(|l| l.starts_with("l ")).count();
        let vt = text.lines().filter(|l| l.starts_with("vt ")).count();
        if name == "cloth" {
            // The grid's UVs: a texture maps onto the rest mesh the cache is applied to.
            assert_eq!((faces, lines, vt), (CLOTH_FACES, 0, CLOTH));
            assert!(text.contains("\nf 1/1 "), "faces with texture indices");
        } else {
            assert_eq!((faces, lines, vt), (0, 1, 0));
        }
    }
}

#[test]
fn dropped_writer_leaves_no_files() {
    let m = model();
    for format in Format::ALL {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cache");
        let mut w = cache::create(format, &spec(&dir, &m)).unwrap();
        if format != Format::Obj {
            // OBJ frames are complete files as soon as written: only check its clean-up of
            // a writer that wrote nothing.
            for f in 0..2 {
                w.write_frame(f, &positions(&m, f)).unwrap();
            }
            assert!(listing(&dir).iter().all(|n| n.starts_with('.')), "{format}: only temporary files before finish");
            assert!(!listing(&dir).is_empty(), "{format}: samples are streamed to temporary files");
        }
        drop(w);
        assert_eq!(listing(&dir), Vec::<String>::new(), "{format}");
    }
}

#[test]
fn blow_up_keeps_frames_written_so_far() {
    let m = model();
    for format in Format::ALL {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut w = cache::create(format, &spec(dir, &m)).unwrap();
        w.write_frame(0, &positions(&m, 0)).unwrap();
        w.write_frame(1, &positions(&m, 1)).unwrap();
        let mut bad = positions(&m, 2);
        bad[3].y = f32::NAN;
        let e = w.write_frame(2, &bad).unwrap_err();
        assert!(matches!(e, CacheError::Invalid(_)) && e.to_string().contains("particle 3"), "{e}");
        let paths = w.finish().unwrap();
        match format {
            Format::Usda => {
                let prims = read_usda_summary(&paths[0]).unwrap();
                assert_eq!(prims[0].points_per_frame, vec![CLOTH; 2]);
                assert_eq!(prims[1].points_per_frame, vec![ROPE; 2]);
                assert!(std::fs::read_to_string(&paths[0]).unwrap().contains("endTimeCode = 1\n"));
            }
            Format::Obj => assert_eq!(names(&paths), ["scene_0000.obj", "scene_0001.obj"]),
            Format::Pc2 => {
                let (points, frames) = read_pc2(dir.join("rope_1.pc2")).unwrap();
                assert_eq!((points, frames.len()), (ROPE, 2));
                assert_eq!(frames[1][0], positions(&m, 1)[CLOTH].to_array());
            }
        }
        let mut expected = names(&paths);
        expected.sort();
        assert_eq!(listing(dir), expected, "{format}: no temporary files remain");
    }
}

#[test]
fn invalid_input_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let m = model();
    let mut w = cache::create(Format::Usda, &spec(dir, &m)).unwrap();
    let e = w.write_frame(1, &positions(&m, 1)).unwrap_err();
    assert!(e.to_string().contains("out of order") && e.to_string().contains("scene.usda"), "{e}");
    let e = w.write_frame(0, &positions(&m, 0)[1..]).unwrap_err();
    assert!(e.to_string().contains("positions"), "{e}");
    // Nothing written: finishing fails and cleans up.
    let e = w.finish().unwrap_err();
    assert!(e.to_string().contains("no frame"), "{e}");
    assert_eq!(listing(dir), Vec::<String>::new());

    for (name, fps) in [("a/b", 30.0), ("", 30.0), ("..", 30.0), ("ok", 0.0), ("ok", f32::NAN)] {
        let s = CacheSpec { dir, scene_name: name, fps, model: &m, vertex_maps: &[] };
        assert!(matches!(cache::create(Format::Usda, &s), Err(CacheError::Invalid(_))), "{name:?} {fps}");
    }

    // A directory that is a file: an I/O error naming it.
    let file = dir.join("file");
    std::fs::write(&file, b"x").unwrap();
    let s = CacheSpec { dir: &file, scene_name: "scene", fps: 30.0, model: &m, vertex_maps: &[] };
    let e = cache::create(Format::Pc2, &s).err().unwrap();
    assert!(matches!(e, CacheError::Io { .. }) && e.to_string().contains("file"), "{e}");
}

#[test]
fn format_names() {
    assert_eq!(Format::default(), Format::Usda);
    for (s, f) in [("usda", Format::Usda), ("obj", Format::Obj), ("pc2", Format::Pc2)] {
        assert_eq!(s.parse::<Format>().unwrap(), f);
        assert_eq!(f.to_string(), s);
    }
    let e = "abc".parse::<Format>().unwrap_err().to_string();
    assert!(e.contains("\"abc\"") && e.contains("usda, obj, pc2"), "{e}");
}

#[test]
fn prim_and_file_names_are_sanitised_and_unique() {
    let mut b = ModelBuilder::new();
    for name in ["2 cloth", "2_cloth", "_2_cloth"] {
        b.add_cloth_grid(&ClothGrid::new(name, 2, 2, 0.1)).unwrap();
    }
    let m = b.finalize().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let usd = write(Format::Usda, tmp.path(), &m, 1);
    let prims: Vec<String> = read_usda_summary(&usd[0]).unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(prims, ["_2_cloth_1", "_2_cloth_2", "_2_cloth"]);
    let pc2 = write(Format::Pc2, tmp.path(), &m, 1);
    assert_eq!(
        names(&pc2),
        ["2_cloth.obj", "2_cloth.pc2", "2_cloth_1.obj", "2_cloth_1.pc2", "_2_cloth.obj", "_2_cloth.pc2"]
    );
}

/// A run killed outright leaves its temporary files; the next writer on the directory removes
/// those of dead processes (pid 999999999 is above Linux's pid_max) and keeps everything
/// else. Linux only (elsewhere nothing is swept).
#[cfg(target_os = "linux")]
#[test]
fn temporary_files_of_killed_runs_are_swept() {
    let m = model();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let dead = ".scene.usda.tmp-999999999-3";
    let mine = format!(".scene.usda.tmp-{}-999999", std::process::id());
    for name in [dead, mine.as_str(), "notes.txt", ".hidden"] {
        std::fs::write(dir.join(name), b"x").unwrap();
    }
    write(Format::Usda, dir, &m, 2);
    let left = listing(dir);
    assert!(!left.contains(&dead.to_string()), "{left:?}");
    for kept in [mine.as_str(), "notes.txt", ".hidden", "scene.usda"] {
        assert!(left.contains(&kept.to_string()), "{kept} removed: {left:?}");
    }
}

/// Re-running a scene for fewer frames into the same directory removes the later OBJ frames
/// of the earlier run (they would be read as part of the sequence), and nothing else.
#[test]
fn shorter_obj_rerun_removes_later_frames() {
    let m = model();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(Format::Obj, dir, &m, 5);
    std::fs::write(dir.join("scene_notes.obj"), b"# not a frame").unwrap();
    std::fs::write(dir.join("other_0007.obj"), b"# another scene").unwrap();
    let written = write(Format::Obj, dir, &m, 3);
    assert_eq!(names(&written), ["scene_0000.obj", "scene_0001.obj", "scene_0002.obj"]);
    assert_eq!(
        listing(dir),
        ["other_0007.obj", "scene_0000.obj", "scene_0001.obj", "scene_0002.obj", "scene_notes.obj"]
    );
}

/// A run that fails part-way (here a frame of the wrong size; a full disk takes the same path:
/// the writer dropped without `finish`) into a folder holding an earlier, longer run leaves
/// that run's sequence as it was, byte for byte, and none of its own frames or temporary
/// files — not a sequence whose first frames are one run's and the rest another's; while it
/// runs, the folder shows the earlier sequence only. A run whose frame name a folder takes
/// is refused when it finishes, before any frame is renamed.
#[test]
fn a_failed_obj_run_leaves_the_earlier_sequence_as_it_was() {
    let m = model();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(Format::Obj, dir, &m, 5);
    let contents = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        // (A folder as its name alone.)
        let read = |p: PathBuf| if p.is_dir() { Vec::new() } else { std::fs::read(p).unwrap() };
        listing(dir).into_iter().map(|n| (n.clone(), read(dir.join(&n)))).collect()
    };
    let before = contents(dir);
    let mut w = cache::create(Format::Obj, &spec(dir, &m)).unwrap();
    for f in 0..2 {
        // Other positions than the earlier run's.
        let x: Vec<Vec3> = positions(&m, f).iter().map(|p| *p + Vec3::Y).collect();
        w.write_frame(f, &x).unwrap();
    }
    let visible = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        contents(dir).into_iter().filter(|(n, _)| !n.starts_with('.')).collect()
    };
    assert!(visible(dir) == before, "frames of the running run appeared: {:?}", listing(dir));
    assert!(w.write_frame(2, &positions(&m, 2)[1..]).is_err());
    drop(w);
    assert!(contents(dir) == before, "the earlier sequence changed: {:?}", listing(dir));
    // A frame's name taken by a folder: refused at the end, before any frame is renamed.
    std::fs::create_dir(dir.join("scene_0006.obj")).unwrap();
    let before = contents(dir);
    let mut w = cache::create(Format::Obj, &spec(dir, &m)).unwrap();
    for f in 0..7 {
        w.write_frame(f, &positions(&m, f)).unwrap();
    }
    let e = w.finish().unwrap_err().to_string();
    assert!(e.contains("scene_0006.obj: a folder has the name of a frame"), "{e}");
    assert!(contents(dir) == before, "the earlier sequence changed: {:?}", listing(dir));
}

/// A scene with a welded mesh cloth whose UV seam splits vertices (input E of issue #9, with
/// the copies of the shared edge's vertices given their own UVs), a grid and a rope.
fn welded_scene(dir: &Path) -> hooke_io::scene::Scene {
    let obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\n\
               vt 0 0\nvt 0.5 0\nvt 0 0.5\nvt 0.625 0\nvt 0 0.625\nvt 0.625 0.625\n\
               f 1/1 2/2 3/3\nf 4/4 6/6 5/5\n";
    std::fs::write(dir.join("split.obj"), obj).unwrap();
    let scene = "[[cloth]]\nname = \"sheet\"\nmesh = \"split.obj\"\n\
                 [[cloth]]\nname = \"grid\"\nrows = 3\ncolumns = 3\nspacing = 0.1\ncenter = [0.0, 2.0, 0.0]\n\
                 [[rope]]\nname = \"rope\"\nstart = [0.0, 3.0, 0.0]\nend = [1.0, 3.0, 0.0]\nparticles = 5\n";
    std::fs::write(dir.join("welded.toml"), scene).unwrap();
    hooke_io::scene::load(&dir.join("welded.toml"), 1 << 30).unwrap()
}

fn welded_spec<'a>(dir: &'a Path, s: &'a hooke_io::scene::Scene) -> CacheSpec<'a> {
    CacheSpec { dir, scene_name: "welded", fps: 30.0, model: &s.model, vertex_maps: &s.vertex_maps }
}

/// The file's UVs of `welded_scene`'s mesh, per file vertex.
const SHEET_UVS: [[f32; 2]; 6] = [[0.0, 0.0], [0.5, 0.0], [0.0, 0.5], [0.625, 0.0], [0.0, 0.625], [0.625, 0.625]];
/// Its file vertex → particle map.
const SHEET_MAP: [usize; 6] = [0, 1, 2, 1, 2, 3];

/// A welded mesh is cached in its file's vertex order — 6 vertices, not its 4 particles, a
/// welded particle's position repeated at each of its file vertices, the file's faces — with
/// the file's UVs (the seam keeps both sets), in USD (read by Pixar's reader: `primvars:st`,
/// texCoord2f[], vertex interpolation, not time-sampled), in the OBJ sequence (`vt`, `f a/a`)
/// and in PC2 and its rest mesh. A grid's UVs go along too; a rope has none.
#[test]
fn welded_mesh_caches_line_up_with_the_file_and_carry_uvs() {
    let tmp = tempfile::tempdir().unwrap();
    let s = welded_scene(tmp.path());
    let m = &s.model;
    assert_eq!(m.particle_count(), 4 + 9 + 5);
    let grid_uv: Vec<[f32; 2]> = m.particle_uv().unwrap()[4..13].iter().map(|u| u.to_array()).collect();
    let write_all = |format: Format, dir: &Path| {
        let mut w = cache::create(format, &welded_spec(dir, &s)).unwrap();
        for f in 0..FRAMES {
            w.write_frame(f, &positions(m, f)).unwrap();
        }
        w.finish().unwrap()
    };
    // What file vertex v of the sheet shows at frame f.
    let sheet = |f: usize, v: usize| positions(m, f)[SHEET_MAP[v]].to_array();

    // USD, read by pxr.
    let usd = write_all(Format::Usda, &tmp.path().join("usd"));
    let script = r#"
import sys
from pxr import Usd, UsdGeom
stage = Usd.Stage.Open(sys.argv[1])
for prim in stage.Traverse():
    if prim.GetTypeName() not in ("Mesh", "BasisCurves"):
        continue
    pv = UsdGeom.PrimvarsAPI(prim).GetPrimvar("st")
    pts = UsdGeom.PointBased(prim).GetPointsAttr().Get(1)
    print(prim.GetName(), len(pts), pv.IsDefined())
    print(" ".join("%r,%r,%r" % tuple(float(c) for c in p) for p in pts))
    if prim.GetTypeName() == "Mesh":
        print(" ".join(str(i) for i in UsdGeom.Mesh(prim).GetFaceVertexIndicesAttr().Get()))
    if pv.IsDefined():
        print(pv.GetTypeName(), pv.GetInterpolation(), len(pv.GetAttr().GetTimeSamples()),
              " ".join("%r,%r" % (float(u), float(v)) for u, v in pv.Get()))
"#;
    let floats = |s: &str| -> Vec<Vec<f32>> {
        s.split_whitespace().map(|t| t.split(',').map(|x| x.parse::<f64>().unwrap() as f32).collect()).collect()
    };
    if let Some(out) = support::pxr(script, &[usd[0].to_str().unwrap()]) {
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4 + 4 + 2, "{out}");
        assert_eq!(lines[0], "sheet 6 True");
        let pts = floats(lines[1]);
        for (v, p) in pts.iter().enumerate() {
            assert_eq!(p[..], sheet(1, v), "sheet point {v}");
        }
        assert_eq!(lines[2], "0 1 2 3 5 4", "the file's faces");
        // Type, interpolation, number of time samples (0: written once), values.
        let primvar = |line: &str| -> (String, Vec<[f32; 2]>) {
            let f: Vec<&str> = line.splitn(4, ' ').collect();
            (f[..3].join(" "), floats(f[3]).into_iter().map(|u| [u[0], u[1]]).collect())
        };
        assert_eq!(primvar(lines[3]), ("texCoord2f[] vertex 0".to_string(), SHEET_UVS.to_vec()));
        assert_eq!(lines[4], "grid 9 True");
        assert_eq!(primvar(lines[7]), ("texCoord2f[] vertex 0".to_string(), grid_uv));
        assert_eq!(lines[8], "rope 5 False");
    }
    // The summary reader sees 6 points per frame for the sheet.
    let prims = read_usda_summary(&usd[0]).unwrap();
    assert_eq!(prims[0].points_per_frame, vec![6; FRAMES]);

    // OBJ sequence: `v` in file order, `vt` per vertex, faces with texture indices.
    let objs = write_all(Format::Obj, &tmp.path().join("obj"));
    let text = std::fs::read_to_string(&objs[1]).unwrap();
    let v: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("v ")).collect();
    let vt: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("vt ")).collect();
    assert_eq!((v.len(), vt.len()), (6 + 9 + 5, 6 + 9));
    for k in 0..6 {
        assert_eq!(floats(&v[k].replace(' ', ","))[0], sheet(1, k), "OBJ vertex {k}");
        assert_eq!(floats(&vt[k].replace(' ', ","))[0], SHEET_UVS[k], "OBJ vt {k}");
    }
    let faces: Vec<&str> = text.lines().filter(|l| l.starts_with("f ")).collect();
    assert_eq!(faces[..2], ["f 1/1 2/2 3/3", "f 4/4 6/6 5/5"]);
    assert_eq!(faces.len(), 2 + 8);
    assert!(text.contains("\nl 16 17 18 19 20\n"), "{text}");

    // PC2: the sheet's 6 file vertices per sample; its rest mesh with the file's UVs.
    let dir = tmp.path().join("pc2");
    write_all(Format::Pc2, &dir);
    let (points, frames) = read_pc2(dir.join("sheet.pc2")).unwrap();
    assert_eq!((points, frames.len()), (6, FRAMES));
    for (f, frame) in frames.iter().enumerate() {
        for (v, p) in frame.iter().enumerate() {
            assert_eq!(*p, sheet(f, v), "PC2 frame {f} vertex {v}");
        }
    }
    let rest = std::fs::read_to_string(dir.join("sheet.obj")).unwrap();
    let vt: Vec<[f32; 2]> = rest
        .lines()
        .filter_map(|l| l.strip_prefix("vt "))
        .map(|l| {
            let u = floats(&l.replace(' ', ","))[0].clone();
            [u[0], u[1]]
        })
        .collect();
    assert_eq!(vt, SHEET_UVS);
    assert!(rest.contains("\nf 1/1 2/2 3/3\nf 4/4 6/6 5/5\n"), "{rest}");

    // A vertex map must belong to a cloth and cover its particles.
    let map = s.vertex_maps[0].clone();
    let on_rope = [None, None, map.clone()];
    let e =
        cache::create(Format::Usda, &CacheSpec { vertex_maps: &on_rope, ..welded_spec(tmp.path(), &s) }).err().unwrap();
    assert!(e.to_string().contains("rope"), "{e}");
    let mut short = map.unwrap();
    short.particle = vec![0, 1, 2, 1, 2, 2]; // particle 3 shown by no vertex
    let e = cache::create(Format::Obj, &CacheSpec { vertex_maps: &[Some(short)], ..welded_spec(tmp.path(), &s) })
        .err()
        .unwrap();
    assert!(e.to_string().contains("particle 3"), "{e}");
}

/// A scene of many bodies (300 ropes) streams its samples into two scratch files, whatever the
/// number of bodies (one pair per body ran out of open files past about 510 bodies), and every
/// prim reads back its own positions bit for bit.
#[test]
fn usda_of_many_bodies_keeps_two_scratch_files() {
    let mut b = ModelBuilder::new();
    for k in 0..300 {
        let x = 0.01 * k as f32;
        b.add_rope(&Rope::straight(format!("r{k}"), Vec3::new(x, 2.0, 0.0), Vec3::new(x, 1.0, 0.0), 3)).unwrap();
    }
    let m = b.finalize().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut w = cache::create(Format::Usda, &spec(tmp.path(), &m)).unwrap();
    for f in 0..FRAMES {
        w.write_frame(f, &positions(&m, f)).unwrap();
        let scratch = listing(tmp.path());
        assert!(scratch.len() <= 2, "{} temporary files for 300 bodies: {:?}…", scratch.len(), &scratch[..3]);
    }
    let paths = w.finish().unwrap();
    let cache = read_usda(&paths[0]).unwrap();
    assert_eq!(cache.prims.len(), 300);
    for f in 0..FRAMES {
        let want = positions(&m, f);
        let got = cache.positions(f);
        assert_eq!(got.len(), want.len());
        assert!(
            want.iter().zip(&got).all(|(a, b)| a.to_array().map(f32::to_bits) == b.to_array().map(f32::to_bits)),
            "frame {f} differs"
        );
    }
}
