//! Cache writers: USD text, OBJ sequence and PC2 — content read back, atomicity, clean-up.

use glam::Vec3;
use hooke::{ClothGrid, Model, ModelBuilder, Rope};
use hooke_io::cache::{self, CacheError, CacheSpec, Format, read_pc2};
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
    CacheSpec { dir, scene_name: "scene", fps: 30.0, model }
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
        let faces: Vec<Vec<usize>> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("f "))
            .map(|l| l.split_whitespace().map(|s| s.parse().unwrap()).collect())
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
        if name == "cloth" {
            assert_eq!((faces, lines), (CLOTH_FACES, 0));
        } else {
            assert_eq!((faces, lines), (0, 1));
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
        let s = CacheSpec { dir, scene_name: name, fps, model: &m };
        assert!(matches!(cache::create(Format::Usda, &s), Err(CacheError::Invalid(_))), "{name:?} {fps}");
    }

    // A directory that is a file: an I/O error naming it.
    let file = dir.join("file");
    std::fs::write(&file, b"x").unwrap();
    let s = CacheSpec { dir: &file, scene_name: "scene", fps: 30.0, model: &m };
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
