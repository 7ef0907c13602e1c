//! Scene parsing: every example scene loads; bad input gives an error naming file and key.

use glam::Vec3;
use hooke::Solver;
use hooke_io::scene::{self, SceneError};
use std::collections::HashMap;
use std::path::Path;

const LIMIT: u64 = 8 << 30;

fn parse(text: &str) -> Result<scene::Scene, SceneError> {
    scene::parse(text, "test.toml", "test", None, LIMIT)
}

fn err(text: &str) -> String {
    let e = parse(text).expect_err("must fail");
    assert_eq!(e.file, "test.toml");
    e.to_string()
}

const GRID: &str = "[[cloth]]\nrows = 4\ncolumns = 4\nspacing = 0.1\n";

#[test]
fn example_scenes_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let s = match scene::load(&path, LIMIT) {
                Ok(s) => s,
                // A scene whose mesh collider the user provides (the bunny) is skipped where
                // the mesh is absent.
                Err(e) if e.to_string().contains("cannot read the mesh") => {
                    println!("skipped {}: {e}", path.display());
                    continue;
                }
                Err(e) => panic!("{e}"),
            };
            assert!(s.model.particle_count() > 0 && s.frames > 0);
            n += 1;
        }
    }
    assert!(n >= 5, "only {n} scenes");
    let d = parse(scene::DEFAULT_SCENE).unwrap();
    assert_eq!(d.name, "cloth_on_sphere");
    assert_eq!(d.pins.len(), 2);
}

/// The README's annotated scene file ("Scene files") loads as printed, with a 4 × 4 grid of
/// vertices with texture coordinates standing in for the user's `dress.obj`, and without
/// warnings.
#[test]
fn the_readmes_scene_example_loads() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let section = &readme[readme.find("## Scene files").expect("a Scene files section")..];
    let start = section.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let mut obj = String::new();
    for k in 0..16 {
        obj += &format!("v {} {} 0\n", (k % 4) as f32 * 10.0, (k / 4) as f32 * 10.0);
        obj += &format!("vt {} {}\n", (k % 4) as f32 / 3.0, (k / 4) as f32 / 3.0);
    }
    for r in 0..3 {
        for c in 0..3 {
            let v = r * 4 + c + 1;
            obj += &format!("f {0}/{0} {1}/{1} {2}/{2}\nf {0}/{0} {2}/{2} {3}/{3}\n", v, v + 1, v + 5, v + 4);
        }
    }
    std::fs::write(dir.path().join("dress.obj"), obj).unwrap();
    std::fs::write(dir.path().join("full.toml"), block).unwrap();
    let s = scene::load(&dir.path().join("full.toml"), LIMIT).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.name, "my_scene");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

#[test]
fn syntax_errors_give_line_and_column() {
    let e = err("[solver\nsubsteps = 3\n");
    assert!(e.contains("line 1"), "{e}");
}

/// A cloth's sub-table written before any `[[cloth]]` makes TOML call the `[[cloth]]` that
/// follows a duplicate key; the error names the misplaced header and its line, and a file
/// with the header after its cloth loads.
#[test]
fn a_sub_table_before_its_cloth_is_named() {
    let pins = "[[cloth.pin_groups]]\nindices = [0]\nkeyframes = [{ time = 0.0, translation = [0.0, 0.0, 0.0] }]\n";
    let e = err(&format!("{pins}\n{GRID}"));
    assert!(e.contains("`[[cloth.pin_groups]]` at line 1") && e.contains("`[[cloth]]` at line 5"), "{e}");
    let e = err(&format!("[materials.paper]\ndensity = 0.1\n{GRID}[[cloth]]\n[[cloth]]\nrows = x\n"));
    assert!(!e.contains("comes before"), "no hint where no sub-table comes first: {e}");
    parse(&format!("{GRID}{pins}")).unwrap();
}

#[test]
fn unknown_keys_are_rejected() {
    let e = err(&format!("{GRID}stifness = 3\n"));
    assert!(e.contains("stifness"), "{e}");
    let e = err("[solver]\nsubstep = 3\n");
    assert!(e.contains("substep") && e.contains("line 2"), "{e}");
}

#[test]
fn out_of_range_values_name_their_key() {
    let cases = [
        (format!("{GRID}particle_mass = -1.0\n"), "particle mass"),
        (
            "[materials.m]\ndensity = -0.2\n[[cloth]]\nmaterial = \"m\"\nrows = 4\ncolumns = 4\nspacing = 0.1\n"
                .to_string(),
            "density",
        ),
        (format!("[solver]\nfps = 0\n{GRID}"), "solver.fps"),
        (format!("[solver]\nfps = -30\n{GRID}"), "solver.fps"),
        (format!("[solver]\nsubsteps = 0\n{GRID}"), "solver.substeps"),
        ("[[cloth]]\nrows = 4\ncolumns = 4\nspacing = nan\n".to_string(), "spacing"),
        (format!("gravity = [0.0, nan, 0.0]\n{GRID}"), "gravity"),
        ("[[cloth]]\nrows = 0\ncolumns = 0\nspacing = 0.1\n".to_string(), "2×2"),
        ("[[cloth]]\nrows = -3\ncolumns = 4\nspacing = 0.1\n".to_string(), "rows"),
        ("[[cloth]]\nrows = 1000000\ncolumns = 1000000\nspacing = 0.1\n".to_string(), "memory limit"),
        (format!("{GRID}material = \"silk\"\n"), "silk"),
        (format!("{GRID}pin_rows = [7]\n"), "pin_rows"),
        (format!("{GRID}[[collider]]\nshape = \"sphere\"\ncenter = [0.0, 0.0, 0.0]\n"), "radius"),
        (format!("{GRID}[[collider]]\nshape = \"sphere\"\ncenter = [0.0, 0.0, 0.0]\nradius = -1.0\n"), "radius"),
        (format!("{GRID}[[collider]]\nshape = \"cone\"\n"), "cone"),
        (
            format!("{GRID}[[collider]]\nshape = \"plane\"\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 0.0]\n"),
            "normal",
        ),
        ("[[rope]]\nstart = [0.0, 0.0, 0.0]\nend = [0.0, 0.0, 0.0]\nparticles = 10\n".to_string(), "too short"),
        (String::new(), "no cloth or rope"),
        (format!("{GRID}pin_box = {{ min = [1.0, 0.0, 0.0], max = [0.0, 1.0, 1.0] }}\n"), "pin_box.min"),
        (format!("[solver]\nframes = 0\n{GRID}"), "solver.frames"),
        (
            format!(
                "[solver]\nmethod = \"symplectic-euler\"\nsubsteps = 1\n[materials.m]\nstretch_stiffness = 1e5\n{GRID}material = \"m\"\n"
            ),
            "substeps",
        ),
        (format!("[materials.m]\nbend_stiffness = 3e38\n{GRID}material = \"m\"\n"), "bend_stiffness"),
        // Past the blow-up speed limit within one substep: above a ground plane the run froze
        // the cloth where it started (the sweep of a path that long rounds to its start) and
        // wrote it out with no error.
        (
            format!(
                "gravity = [0.0, -1e14, 0.0]\n{GRID}[[collider]]\nshape = \"plane\"\npoint = [0.0, -1.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n"
            ),
            "takes a particle past the blow-up speed limit",
        ),
        // A particle thrown so fast at a plane that the sweep of its path rounds to its start:
        // it froze in the air, with no blow-up to see.
        (
            format!(
                "{GRID}velocity = [0.0, -1e11, 0.0]\n[[collider]]\nshape = \"plane\"\npoint = [0.0, -1.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n"
            ),
            "longer than the colliders can be swept along",
        ),
    ];
    // Fast, but within what the sweep resolves (a path of 833 m a substep), or with nothing to
    // sweep against: taken.
    for text in [
        format!(
            "{GRID}velocity = [0.0, -1e6, 0.0]\n[[collider]]\nshape = \"plane\"\npoint = [0.0, -1.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n"
        ),
        format!("{GRID}velocity = [0.0, -1e11, 0.0]\n"),
    ] {
        assert!(parse(&text).is_ok(), "{text}");
    }
    for (text, needle) in &cases {
        let e = err(text);
        assert!(e.contains(needle), "expected {needle:?} in: {e}");
    }
    // A plane's normal of any length but zero is taken (1e-30 was refused as "zero").
    for tiny in ["1e-30", "1e-7", "1e30"] {
        let text =
            format!("{GRID}[[collider]]\nshape = \"plane\"\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, {tiny}, 0.0]\n");
        let s = parse(&text).unwrap_or_else(|e| panic!("normal {tiny}: {e}"));
        let hooke::collision::Shape::Plane { normal, .. } = s.model.colliders()[0].shape else { panic!("a plane") };
        assert_eq!(normal, Vec3::Y, "normal {tiny}");
    }
}

#[test]
fn pins_and_release_schedule() {
    let s = parse(&format!("{GRID}pin_rows = [0]\npin_cells = [[-1, -1]]\nrelease_pins_at = 1.5\n")).unwrap();
    assert_eq!(s.pins.len(), 5);
    assert_eq!(s.control_at(1.0).pins.len(), 5);
    assert!(s.control_at(1.5).pins.is_empty());
    let last = s.model.bodies()[0].grid_index(3, 3).unwrap();
    assert!(s.pins.iter().any(|p| p.pin.particle == last));
}

/// OBJ import keeps the file's vertex order, and texture/normal indices do not split
/// vertices (a flat-shaded quad with a UV seam stays one piece of 4 particles).
#[test]
fn obj_meshes_keep_vertex_order_and_are_not_split_by_uvs() {
    let dir = tempfile::tempdir().unwrap();
    let obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvt 1 1\nvn 0 0 1\nvn 0 0 1\nf 4/4/1 3/3/1 2/2/1\nf 1/1/2 2/2/2 3/3/2\n";
    std::fs::write(dir.path().join("quad.obj"), obj).unwrap();
    let scene_path = dir.path().join("quad.toml");
    std::fs::write(&scene_path, "[[cloth]]\nmesh = \"quad.obj\"\npin_indices = [0]\n").unwrap();
    let s = scene::load(&scene_path, LIMIT).unwrap();
    assert_eq!(s.model.particle_count(), 4);
    assert_eq!(s.model.particle_position()[0], glam::Vec3::ZERO);
    assert_eq!(s.model.particle_position()[3], glam::Vec3::new(1.0, 1.0, 0.0));
    assert_eq!(s.pins[0].pin.particle, 0);
    // Two triangles sharing an edge: 5 edges, 1 hinge across the shared one.
    assert_eq!((s.model.distance().len(), s.model.dihedral().len()), (5, 1));
    // Not a regular file: a clear error, not an attempt to read it.
    std::fs::write(&scene_path, "[[cloth]]\nmesh = \".\"\n").unwrap();
    let e = scene::load(&scene_path, LIMIT).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
}

/// Sizes valid one by one but degenerate in f32 together are rejected when loading.
#[test]
fn degenerate_sizes_are_rejected_at_load() {
    for text in [
        "[[cloth]]\nrows = 3\ncolumns = 3\nspacing = 1e30\n",
        "[[cloth]]\nrows = 3\ncolumns = 3\nspacing = 1e-30\n",
        "[[rope]]\nstart = [0.0, 1.0, 0.0]\nend = [1e30, 1.0, 0.0]\nparticles = 10\n",
    ] {
        let e = err(text);
        // A spacing too small for the particles' masses is named as the spacing (it was
        // "particle 0: mass 0 kg").
        if text.contains("1e-30") {
            assert!(e.contains("spacing: 1e-30 m at an areal density of") && e.contains("particle_mass"), "{e}");
        }
        assert!(
            e.contains("particle")
                || e.contains("constraint")
                || e.contains("overflows f32")
                || e.contains("spacing: 1e30 m makes the grid 2e30 m × 2e30 m; it must span at most 1e9 m"),
            "{e}"
        );
    }
}

// ---- Mesh import: welding, file-order pins, polygons, byte-order marks ----

/// Writes `obj` as `mesh.obj` and a scene with one cloth made from it (plus `extra` keys of
/// that `[[cloth]]` and anything after), then loads the scene. The folder lives as long as the
/// returned guard.
fn mesh_scene(obj: &str, extra: &str) -> (tempfile::TempDir, Result<scene::Scene, SceneError>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mesh.obj"), obj).unwrap();
    let path = dir.path().join("mesh.toml");
    std::fs::write(&path, format!("[[cloth]]\nmesh = \"mesh.obj\"\n{extra}")).unwrap();
    let s = scene::load(&path, LIMIT);
    (dir, s)
}

/// Runs the scene's XPBD solver for `frames` frames; returns the particle positions (m).
fn simulate(s: &scene::Scene, frames: usize) -> Vec<Vec3> {
    let scene::SolverChoice::Position(settings) = s.solver else { panic!("an XPBD scene") };
    let mut solver = hooke::XpbdSolver::new(s.model.clone(), settings).unwrap();
    for _ in 0..frames {
        let control = s.control_at(solver.time());
        solver.step(&control, 1.0 / s.fps).unwrap();
    }
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    x
}

/// Number of connected pieces of the model's constraint graph.
fn pieces(m: &hooke::Model) -> usize {
    let mut parent: Vec<usize> = (0..m.particle_count()).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    for c in m.distance().constraints() {
        let (a, b) = (root(&mut parent, c.i as usize), root(&mut parent, c.j as usize));
        parent[a] = b;
    }
    (0..parent.len()).filter(|&i| root(&mut parent, i) == i).count()
}

/// Whether every triangle edge of the model is shared by exactly two triangles.
fn closed(m: &hooke::Model) -> bool {
    let mut edges: HashMap<(u32, u32), usize> = HashMap::new();
    for t in m.triangles() {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *edges.entry((a.min(b), a.max(b))).or_default() += 1;
        }
    }
    edges.values().all(|&n| n == 2)
}

/// Input E of issue #9: one quad whose triangles share no vertex record.
const SPLIT_QUAD: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 4 6 5\n";

/// Input E is welded into one piece of 4 particles; pins are file vertex indices (0, 1, 2 hold
/// the first triangle) and the free corner hangs from the shared edge at its rest distances.
/// With `weld = false` it stays in two pieces (with a warning) and the free corner falls away.
#[test]
fn split_quad_is_welded_and_pinned_by_file_index() {
    let (_dir, s) = mesh_scene(SPLIT_QUAD, "pin_indices = [0, 1, 2]\n");
    let s = s.unwrap();
    assert_eq!(s.model.particle_count(), 4);
    let map = s.vertex_maps[0].as_ref().unwrap();
    assert_eq!(map.particle, [0, 1, 2, 1, 2, 3]);
    assert_eq!((map.vertex_count(), map.particle_count(), map.welded()), (6, 4, 2));
    assert_eq!(map.triangles, [[0, 1, 2], [3, 5, 4]]);
    assert_eq!(s.model.triangles(), [[0, 1, 2], [1, 3, 2]]);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(pieces(&s.model), 1);
    let mut pinned: Vec<u32> = s.pins.iter().map(|p| p.pin.particle).collect();
    pinned.sort();
    assert_eq!(pinned, [0, 1, 2]);

    let rest = s.model.particle_position().to_vec();
    let x = simulate(&s, 120);
    let at = |v: usize| x[map.particle[v] as usize];
    for (v, r) in rest.iter().enumerate().take(3) {
        assert_eq!(at(v), *r, "pinned file vertex {v} moved");
    }
    for (v, w) in [(5, 1), (5, 2), (5, 3), (5, 4)] {
        let d = (at(v) - at(w)).length();
        println!("file vertices {v}–{w}: {d} m after 2 s");
        assert!((d - 1.0).abs() < 0.02, "file vertices {v}–{w}: {d} m, rest 1 m");
    }

    // Pins name file vertices: 3 and 4 are copies of 1 and 2; 5 and −1 are the last vertex,
    // particle 3.
    let (_dir, s) = mesh_scene(SPLIT_QUAD, "pin_indices = [3, 4, 5, -1]\n");
    let mut pinned: Vec<u32> = s.unwrap().pins.iter().map(|p| p.pin.particle).collect();
    pinned.sort();
    assert_eq!(pinned, [1, 2, 3]);

    // A third triangle on the shared edge (a "book"): a warning that the edge has no hinge;
    // none under spring bending, which has no hinges to miss.
    let book = format!("{SPLIT_QUAD}v 0 0 1\nf 2 3 7\n");
    let (_dir, s) = mesh_scene(&book, "");
    let w = s.unwrap().warnings;
    assert!(w.len() == 1 && w[0].contains("1 edge(s) shared by more than two triangles"), "{w:?}");
    let (_dir, s) = mesh_scene(&book, "bending = \"springs\"\n");
    let w = s.unwrap().warnings;
    assert!(w.is_empty(), "{w:?}");

    let (_dir, s) = mesh_scene(SPLIT_QUAD, "pin_indices = [0, 1, 2]\nweld = false\n");
    let s = s.unwrap();
    assert_eq!((s.model.particle_count(), pieces(&s.model)), (6, 2));
    assert!(s.warnings.len() == 1 && s.warnings[0].contains("weld = false"), "{:?}", s.warnings);
    assert!(s.warnings[0].contains("2 of the mesh's 6 vertices"), "{:?}", s.warnings);
    let x = simulate(&s, 60);
    assert!(x[5].y < -1.0, "unwelded, the free corner falls: {}", x[5]);
}

/// A UV sphere with rings × segments, as exporters write it: the seam column duplicated (UV
/// u = 0 and u = 1) and one pole vertex per segment (each with its own UV). Returns the OBJ
/// text and the file vertex index of (ring, segment) for the rings between the poles.
fn uv_sphere(rings: usize, segments: usize, radius: f32, center: Vec3) -> (String, impl Fn(usize, usize) -> usize) {
    let mut v = String::new();
    let mut vt = String::new();
    let (r, s) = (rings, segments);
    // Top pole copies 0..s, ring vertices, bottom pole copies.
    let ring = move |i: usize, j: usize| s + (i - 1) * (s + 1) + j;
    let bottom = s + (r - 1) * (s + 1);
    for j in 0..s {
        v.push_str(&format!("v {} {} {}\n", center.x, center.y + radius, center.z));
        vt.push_str(&format!("vt {} 1\n", (j as f32 + 0.5) / s as f32));
    }
    for i in 1..r {
        let theta = std::f32::consts::PI * i as f32 / r as f32;
        for j in 0..=s {
            let phi = std::f32::consts::TAU * (j % s) as f32 / s as f32; // the seam repeats j = 0
            let p = center + radius * Vec3::new(theta.sin() * phi.cos(), theta.cos(), -theta.sin() * phi.sin());
            v.push_str(&format!("v {} {} {}\n", p.x, p.y, p.z));
            vt.push_str(&format!("vt {} {}\n", j as f32 / s as f32, 1.0 - i as f32 / r as f32));
        }
    }
    for j in 0..s {
        v.push_str(&format!("v {} {} {}\n", center.x, center.y - radius, center.z));
        vt.push_str(&format!("vt {} 0\n", (j as f32 + 0.5) / s as f32));
    }
    let mut f = String::new();
    let tri = |f: &mut String, a: usize, b: usize, c: usize| {
        f.push_str(&format!("f {}/{} {}/{} {}/{}\n", a + 1, a + 1, b + 1, b + 1, c + 1, c + 1))
    };
    for j in 0..s {
        tri(&mut f, j, ring(1, j), ring(1, j + 1));
        tri(&mut f, bottom + j, ring(r - 1, j + 1), ring(r - 1, j));
    }
    for i in 1..r - 1 {
        for j in 0..s {
            let (a, b, c, d) = (ring(i, j), ring(i + 1, j), ring(i + 1, j + 1), ring(i, j + 1));
            f.push_str(&format!("f {}/{} {}/{} {}/{} {}/{}\n", a + 1, a + 1, b + 1, b + 1, c + 1, c + 1, d + 1, d + 1));
        }
    }
    (format!("{v}{vt}{f}"), ring)
}

/// A UV sphere whose seam and poles are split in the file is welded into one closed surface
/// (2 + (rings − 1)·segments particles), and hung from its top pole the seam stays shut; the
/// same file unwelded opens along the seam (issue #9 measured 0.83 m).
#[test]
fn uv_sphere_with_a_split_seam_stays_closed() {
    let (rings, segments) = (8, 16);
    let (obj, ring) = uv_sphere(rings, segments, 0.5, Vec3::new(0.0, 1.5, 0.0));
    let mut gaps = Vec::new();
    for weld in [true, false] {
        // Welding is the default.
        let (_dir, s) =
            mesh_scene(&obj, if weld { "pin_indices = [0]\n" } else { "pin_indices = [0]\nweld = false\n" });
        let s = s.unwrap();
        let map = s.vertex_maps[0].as_ref().unwrap();
        if weld {
            assert_eq!(s.model.particle_count(), 2 + (rings - 1) * segments);
            assert_eq!(map.welded(), 2 * (segments - 1) + (rings - 1));
            assert!(closed(&s.model) && pieces(&s.model) == 1);
            assert!(s.model.particle_uv().is_some());
        } else {
            assert!(!closed(&s.model));
        }
        let x = simulate(&s, 90);
        let at = |v: usize| x[map.particle[v] as usize];
        gaps.push((1..rings).map(|i| (at(ring(i, 0)) - at(ring(i, segments))).length()).fold(0.0, f32::max));
    }
    println!("seam gap after 1.5 s: welded {} m, unwelded {} m", gaps[0], gaps[1]);
    assert_eq!(gaps[0], 0.0, "welded seam opened");
    assert!(gaps[1] > 0.1, "the unwelded seam should open: {} m", gaps[1]);
}

/// A flat-shaded cube of 24 vertices (4 per face) and 6 quads.
fn flat_cube(side: f32, center: Vec3) -> String {
    let h = side / 2.0;
    let mut v = String::new();
    let mut f = String::new();
    let mut n = 0;
    for a in 0..3 {
        for s in [1.0f32, -1.0] {
            let (e, u, w) = (Vec3::AXES[a], Vec3::AXES[(a + 1) % 3], Vec3::AXES[(a + 2) % 3]);
            let mut corners = [-u - w, u - w, u + w, -u + w].map(|c| center + h * (s * e + c));
            if s < 0.0 {
                corners.reverse(); // counter-clockwise seen from outside
            }
            for c in corners {
                v.push_str(&format!("v {} {} {}\nvn {} 0 0\n", c.x, c.y, c.z, s));
            }
            f.push_str(&format!("f {}//1 {}//1 {}//1 {}//1\n", n + 1, n + 2, n + 3, n + 4));
            n += 4;
        }
    }
    format!("{v}{f}")
}

/// A flat-shaded 24-vertex box is welded into 8 particles and one closed surface; dropped on
/// the ground it keeps its edges (within 5 %). Unwelded it is six separate squares.
#[test]
fn flat_shaded_cube_is_welded_into_one_body() {
    let side = 0.4;
    let obj = flat_cube(side, Vec3::new(0.0, 0.6, 0.0));
    let ground = "[[collider]]\nshape = \"plane\"\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n";
    let (_dir, s) = mesh_scene(&obj, ground);
    let s = s.unwrap();
    assert_eq!((s.model.particle_count(), s.model.triangles().len()), (8, 12));
    assert_eq!(s.vertex_maps[0].as_ref().unwrap().welded(), 16);
    assert!(closed(&s.model) && pieces(&s.model) == 1);
    // Every triangle faces outwards (the file's winding is kept).
    let rest = s.model.particle_position();
    let c = rest.iter().copied().sum::<Vec3>() / 8.0;
    for t in s.model.triangles() {
        let [a, b, d] = t.map(|k| rest[k as usize]);
        assert!((b - a).cross(d - a).dot((a + b + d) / 3.0 - c) > 0.0, "{t:?} faces inwards");
    }
    let x = simulate(&s, 90);
    assert!(x.iter().all(|p| p.y > -0.01), "the box went through the ground");
    for i in 0..8 {
        for j in i + 1..8 {
            let r = (rest[i] - rest[j]).length();
            if (r - side).abs() < 1e-5 {
                let d = (x[i] - x[j]).length();
                println!("cube edge {i}–{j}: strain {:.2e}", d / r - 1.0);
                assert!((d / r - 1.0).abs() < 0.05, "edge {i}–{j}: {d} m, rest {r} m");
            }
        }
    }
    let (_dir, s) = mesh_scene(&obj, &format!("weld = false\n{ground}"));
    let s = s.unwrap();
    assert_eq!((s.model.particle_count(), pieces(&s.model)), (24, 6));
}

/// A concave pentagon (a square with a notch) is ear-clipped: three triangles all facing +z,
/// of total area 2.5 m², so the mass is density × 2.5 (the old fan had an inverted triangle
/// and 40 % extra mass here). A self-intersecting face and a flat one are refused with their
/// line.
#[test]
fn concave_pentagon_is_triangulated_with_the_right_mass() {
    let obj = "v 0 0 0\nv 2 0 0\nv 2 2 0\nv 1 0.5 0\nv 0 2 0\nf 1 2 3 4 5\n";
    let (_dir, s) = mesh_scene(obj, "material = \"m\"\n[materials.m]\ndensity = 0.2\n");
    let s = s.unwrap();
    let p = s.model.particle_position();
    assert_eq!(s.model.triangles().len(), 3);
    let mut area = 0.0;
    for t in s.model.triangles() {
        let [a, b, c] = t.map(|k| p[k as usize]);
        let n = 0.5 * (b - a).cross(c - a);
        assert!(n.z > 0.0 && n.x == 0.0 && n.y == 0.0, "triangle {t:?} is inverted: {n}");
        area += n.z;
    }
    assert!((area - 2.5).abs() < 1e-6, "area {area} m²");
    assert!((s.model.total_mass() - 0.5).abs() < 1e-6, "mass {} kg", s.model.total_mass());

    for (obj, needle) in [
        ("v 0 0 0\nv 2 2 0\nv 2 0 0\nv 0 1 0\n# a bow tie\nf 1 2 3 4\n", "self-intersecting"),
        ("v 0 0 0\nv 1 0 0\nv 2 0 0\nv 3 0 0\nf 1 2 3 4\n", "no area"),
    ] {
        let (_dir, e) = mesh_scene(obj, "");
        let e = e.unwrap_err().to_string();
        assert!(e.contains("line 6") || e.contains("line 5"), "{e}");
        assert!(e.contains(needle) && e.contains("mesh.obj") && e.contains("cloth[0]"), "{e}");
    }
}

/// A UTF-8 byte-order mark before the first vertex is skipped: all four vertices load, and
/// pin 0 is the first vertex (without the fix the first `v` line was lost).
#[test]
fn byte_order_mark_is_stripped() {
    let obj = "\u{feff}v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\n";
    let (_dir, s) = mesh_scene(obj, "pin_indices = [0]\n");
    let s = s.unwrap();
    assert_eq!(s.model.particle_count(), 4);
    assert_eq!(s.model.particle_position()[s.pins[0].pin.particle as usize], Vec3::ZERO);
    // A scene file with one, too (the TOML parser skips it).
    let grid = parse(&format!("\u{feff}{GRID}")).unwrap();
    assert_eq!(grid.model.particle_count(), 16);
}

/// `weld_tolerance` is in the file's units and welds what is within it; bad values, a
/// tolerance that collapses triangles, double-sided meshes and weld keys on grids are errors
/// naming the key or the face's line.
#[test]
fn weld_tolerance_and_weld_errors() {
    // The second triangle's copies of vertices 2 and 3 are 1 mm off.
    let near = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1.001 0 0\nv 0 1.001 0\nv 1 1 0\nf 1 2 3\nf 4 6 5\n";
    let (_dir, s) = mesh_scene(near, "");
    assert_eq!(s.unwrap().model.particle_count(), 6, "1 mm is beyond the default tolerance");
    let (_dir, s) = mesh_scene(near, "weld_tolerance = 0.002\n");
    let s = s.unwrap();
    assert_eq!(s.model.particle_count(), 4);
    assert_eq!(s.vertex_maps[0].as_ref().unwrap().weld_tolerance, Some(0.002));
    // Scale applies after welding: the tolerance stays in file units.
    let (_dir, s) = mesh_scene(near, "weld_tolerance = 0.002\nscale = 100.0\n");
    assert_eq!(s.unwrap().model.particle_count(), 4);

    for (extra, needle) in [
        ("weld_tolerance = -1.0\n", "weld_tolerance"),
        ("weld_tolerance = nan\n", "weld_tolerance"),
        ("weld = false\nweld_tolerance = 0.1\n", "weld_tolerance"),
        ("weld_tolerance = 1.0\n", "line 7"),
    ] {
        let (_dir, e) = mesh_scene(near, extra);
        let e = e.unwrap_err().to_string();
        assert!(e.contains(needle) && e.contains("cloth[0]"), "{extra:?}: {e}");
    }
    let (_dir, e) = mesh_scene(near, "weld_tolerance = 1.0\n");
    assert!(e.unwrap_err().to_string().contains("collapses"));
    // Both sides of a sheet, each with its own vertices: the same triangles once welded.
    let two_sided = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 4 6 5\n";
    let (_dir, e) = mesh_scene(two_sided, "");
    let e = e.unwrap_err().to_string();
    assert!(e.contains("line 8") && e.contains("line 7") && e.contains("weld = false"), "{e}");
    let (_dir, s) = mesh_scene(two_sided, "weld = false\n");
    assert_eq!(s.unwrap().model.particle_count(), 6);
    // A vertex no face uses, named by its line.
    let (_dir, e) = mesh_scene("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 5 5 5\nf 1 2 3\n", "");
    let e = e.unwrap_err().to_string();
    assert!(e.contains("vertex 3 (line 4)") && e.contains("no face"), "{e}");
    for key in ["weld = true", "weld_tolerance = 0.1"] {
        let e = err(&format!("{GRID}{key}\n"));
        assert!(e.contains(key.split(' ').next().unwrap()) && e.contains("mesh"), "{e}");
    }
    let (_dir, e) = mesh_scene(SPLIT_QUAD, "pin_indices = [6]\n");
    let e = e.unwrap_err().to_string();
    assert!(e.contains("pin_indices") && e.contains("6"), "{e}");
}

/// Scene names with control characters are refused; μₖ > μₛ is a warning, not an error; a
/// rope's stiffness errors are in N (EA), a cloth's in N/m.
#[test]
fn names_friction_warnings_and_units() {
    let e = err(&format!("name = \"bad\\u0007name\"\n{GRID}"));
    assert!(e.contains("name") && e.contains("U+0007"), "{e}");
    let e = scene::parse(GRID, "test.toml", "stem\nline", None, LIMIT).unwrap_err().to_string();
    assert!(e.contains("stem") && e.contains("U+000A"), "{e}");

    let plane = "[[collider]]\nshape = \"plane\"\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n";
    let s = parse(&format!("{GRID}{plane}static_friction = 0.3\nkinetic_friction = 0.5\n")).unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(s.warnings[0].contains("collider[0]") && s.warnings[0].contains("μₖ = 0.5"), "{:?}", s.warnings);
    let s = parse(&format!("{GRID}{plane}static_friction = 0.5\nkinetic_friction = 0.3\n")).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // A material that no body names changes nothing: a warning naming it (a misspelt name,
    // most likely); one that a body names, none.
    let s = parse(&format!("[materials.cottn]\ndensity = 0.2\n{GRID}")).unwrap();
    assert!(s.warnings.len() == 1 && s.warnings[0].contains("materials.cottn"), "{:?}", s.warnings);
    let named = GRID.replacen("[[cloth]]\n", "[[cloth]]\nmaterial = \"cotton\"\n", 1);
    let s = parse(&format!("[materials.cotton]\ndensity = 0.2\n{named}")).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // A wind without [air] acts on nothing: a warning; with [air], none.
    let s = parse(&format!("wind = [5.0, 0.0, 0.0]\n{GRID}")).unwrap();
    assert!(s.warnings.len() == 1 && s.warnings[0].contains("no [air] section"), "{:?}", s.warnings);
    let s = parse(&format!("wind = [5.0, 0.0, 0.0]\n[air]\n{GRID}")).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);

    let rope = "[[rope]]\nmaterial = \"r\"\nstart = [0.0, 0.0, 0.0]\nend = [1.0, 0.0, 0.0]\nparticles = 5\n";
    for key in ["stretch_stiffness", "bend_stiffness"] {
        let e = err(&format!("[materials.r]\n{key} = -1.0\n{rope}"));
        assert!(e.contains("> 0 N (") && !e.contains("N/m"), "{e}");
    }
    let e = err(&format!("[materials.c]\nbend_stiffness = -1.0\n{GRID}material = \"c\"\n"));
    assert!(e.contains("> 0 N/m"), "{e}");
}

/// `[solver] tethers` turns the long-range attachments off (they are on by default), is
/// refused for force-based integrators, and must be a boolean.
#[test]
fn tethers_key_turns_them_off() {
    let tethers = |text: &str| match parse(text).unwrap().solver {
        scene::SolverChoice::Position(s) => s.tethers,
        _ => panic!("an XPBD scene"),
    };
    assert!(tethers(GRID));
    assert!(!tethers(&format!("[solver]\ntethers = false\n{GRID}")));
    let e = err(&format!("[solver]\nmethod = \"implicit-euler\"\ntethers = false\n{GRID}"));
    assert!(e.contains("solver.tethers"), "{e}");
    let e = err(&format!("[solver]\ntethers = \"no\"\n{GRID}"));
    assert!(e.contains("tethers"), "{e}");
}

/// `[air]`: `lift_coefficient` is read (default 0); each key must be finite and ≥ 0, and the
/// error names it.
#[test]
fn air_lift_coefficient_is_read_and_checked() {
    let s = parse(&format!("[air]\nlift_coefficient = 0.7\n{GRID}")).unwrap();
    let air = s.model.air();
    assert_eq!((air.density, air.drag_coefficient, air.lift_coefficient), (1.225, 1.0, 0.7));
    let s = parse(&format!("[air]\ndensity = 1.0\ndrag_coefficient = 1.5\n{GRID}")).unwrap();
    assert_eq!((s.model.air().drag_coefficient, s.model.air().lift_coefficient), (1.5, 0.0));
    for key in ["lift_coefficient", "drag_coefficient", "density"] {
        for bad in ["-0.5", "nan", "inf"] {
            let e = err(&format!("[air]\n{key} = {bad}\n{GRID}"));
            assert!(e.contains(&format!("air.{key}")) && e.contains("≥ 0"), "{key} = {bad}: {e}");
        }
    }
}

/// Issue #9's input D, read from its scene file and run as `hooke run` would (XPBD, one
/// substep per frame): a 0.03 kg/m² silk square is never faster than the wind, at 10, 30 and
/// 100 m/s (it blew up within five frames before the limited drag step).
#[test]
fn input_d_silk_in_strong_wind_stays_below_the_wind_speed() {
    for speed in [10.0f32, 30.0, 100.0] {
        let text = format!(
            "gravity = [0.0, 0.0, 0.0]\nwind = [0.0, {speed:?}, 0.0]\n[solver]\nsubsteps = 1\nframes = 30\n[air]\n\
             [materials.silk]\ndensity = 0.03\n[[cloth]]\nmaterial = \"silk\"\nrows = 2\ncolumns = 2\nspacing = 0.1\n"
        );
        let s = parse(&text).unwrap();
        let scene::SolverChoice::Position(settings) = s.solver else { panic!("an XPBD scene") };
        let mut solver = hooke::XpbdSolver::new(s.model.clone(), settings).unwrap();
        let mut fastest = 0.0f32;
        for frame in 0..s.frames {
            let control = s.control_at(solver.time());
            solver.step(&control, 1.0 / s.fps).unwrap_or_else(|e| panic!("{speed} m/s, frame {frame}: {e}"));
            let v = solver.velocities().iter().map(|v| v.length()).fold(0.0, f32::max);
            assert!(v <= speed * (1.0 + 1e-5), "{v} m/s in a {speed} m/s wind at frame {frame}");
            fastest = fastest.max(v);
        }
        println!("input D at {speed} m/s: fastest particle {fastest:.4} m/s over {} frames", s.frames);
    }
}

// ---- The convergence monitor's keys and the blow-up speed limit (issue #9 item 4) ----

/// `[solver] max_speed` and `residual_tolerance`: set, defaulted, refused when not > 0. The
/// default speed limit is max(50, 20·(√(2|g|D) + |wind| + |gust| + v_colliders + v₀)) with D
/// the diagonal of the box around particles and colliders: it grows with the scene's size and
/// gravity, takes the wind, gusts, keyframed colliders and initial velocities in, and reaches
/// every solver (force-based ones too).
#[test]
fn max_speed_is_derived_from_the_scene_or_set() {
    let limit = |text: &str| parse(text).unwrap().solver.max_speed();
    let g = 9.81f32;
    // A 1 m × 1 m grid flat at y = 0 (11 × 11 at 0.1 m): D = √2 m.
    let grid = "[[cloth]]\nrows = 11\ncolumns = 11\nspacing = 0.1\n";
    let one = limit(grid);
    let expected = 20.0 * (2.0 * g * 2f32.sqrt()).sqrt();
    eprintln!("1 m grid: {one} m/s (expected {expected})");
    assert!((one - expected).abs() < 1e-3 * expected, "{one} vs {expected}");
    // The same grid 100 m above a ground plane: D ≈ 100 m, √(2gD) ≈ 44 m/s.
    let high = limit(&format!(
        "{grid}center = [0.0, 100.0, 0.0]\n[[collider]]\nshape = \"plane\"\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n"
    ));
    let d = (100.0f32 * 100.0 + 2.0).sqrt();
    assert!((high - 20.0 * (2.0 * g * d).sqrt()).abs() < 0.1, "{high}");
    assert!(high > 800.0 && high > 8.0 * one, "{high} vs {one}");
    // Wind, gusts, a moving collider and an initial velocity add their speeds.
    let windy =
        limit(&format!("wind = [10.0, 0.0, 0.0]\ngust = {{ amplitude = [0.0, 0.0, 5.0], period = 1.0 }}\n{grid}"));
    assert!((windy - (one + 20.0 * 15.0)).abs() < 1e-2, "{windy}");
    let thrown = limit(&format!("{grid}velocity = [0.0, 30.0, 0.0]\n"));
    assert!((thrown - (one + 20.0 * 30.0)).abs() < 1e-2, "{thrown}");
    let swept = limit(&format!(
        "{grid}[[collider]]\nshape = \"sphere\"\ncenter = [0.0, -0.5, 0.0]\nradius = 0.1\nkeyframes = [{{ time = 0.0 }}, {{ time = 0.5, translation = [2.0, 0.0, 0.0] }}]\n"
    ));
    assert!(swept > 20.0 * 4.0 + one, "{swept}: a collider moving at 4 m/s");
    // So does a moving pin group, which drags its cloth at its speed (100 m/s here: 5 m in
    // 0.05 s; left out, the limit stayed near 94 m/s and a valid pull stopped as a blow-up).
    let pulled = limit(&format!(
        "{grid}pin_columns = [0]
[[cloth.pin_groups]]
columns = [-1]
         keyframes = [{{ time = 0.0 }}, {{ time = 0.05, translation = [5.0, 0.0, 0.0] }}]
"
    ));
    assert!(pulled >= 20.0 * 100.0, "{pulled}: pins moving at 100 m/s");
    // A cloth that tears adds the recoil of its free edges, ε·L₀·√(k/m) at most over its
    // constraints (the lightest particle is a corner's, the longest constraint a shear one).
    let tearing = parse(&format!(
        "[materials.m]\ndensity = 0.1\nstretch_stiffness = 4000.0\nshear_stiffness = 4000.0\ntear_strain = 0.2\n\
         {grid}material = \"m\"\n"
    ))
    .unwrap();
    let masses = tearing.model.particle_mass();
    let (light, heavy) = masses.iter().fold((f32::INFINITY, 0.0f32), |(a, b), &m| (a.min(m), b.max(m)));
    let (low, high) = (0.2 * 0.1 * (4000.0 / heavy).sqrt(), 0.2 * 0.1 * 2f32.sqrt() * (4000.0 / light).sqrt());
    let torn = tearing.solver.max_speed();
    eprintln!("tearing grid: {torn} m/s, recoil between {low} and {high} m/s");
    assert!(torn >= one + 20.0 * low - 1e-2 && torn <= one + 20.0 * high + 1e-2, "{torn}");
    assert!(low > 10.0, "{low}");
    // No gravity and nothing moving: the floor.
    assert_eq!(limit(&format!("gravity = [0.0, 0.0, 0.0]\n{grid}")), scene::MIN_DERIVED_MAX_SPEED);
    // Worlds: the strongest gravity and the windiest world set the limit, whichever world they
    // are (world 1 here; world 0 alone would give the floor).
    let worlds = limit(&format!(
        "gravity = [0.0, 0.0, 0.0]\n{grid}[[world]]\ngravity = [0.0, -9.81, 0.0]\nwind = [10.0, 0.0, 0.0]\n\
         [[cloth]]\nname = \"b\"\nworld = 1\nrows = 11\ncolumns = 11\nspacing = 0.1\n"
    ));
    assert!((worlds - (one + 20.0 * 10.0)).abs() < 1e-2, "{worlds} vs {}", one + 200.0);
    // Set in the file, for XPBD and force-based solvers alike; inf disables the check.
    assert_eq!(limit(&format!("[solver]\nmax_speed = 75.0\n{grid}")), 75.0);
    assert_eq!(limit(&format!("[solver]\nmax_speed = inf\n{grid}")), f32::INFINITY);
    let s = parse(&format!("[solver]\nmethod = \"implicit-euler\"\nmax_speed = 75.0\n{grid}")).unwrap();
    let scene::SolverChoice::Force(f) = s.solver else { panic!("force-based") };
    assert_eq!(f.max_speed, 75.0);
    for bad in ["0.0", "-1.0", "nan"] {
        let e = err(&format!("[solver]\nmax_speed = {bad}\n{GRID}"));
        assert!(e.contains("solver.max_speed") && e.contains("m/s"), "{e}");
    }

    assert_eq!(parse(GRID).unwrap().residual_tolerance, 0.02);
    assert_eq!(parse(&format!("[solver]\nresidual_tolerance = 0.05\n{GRID}")).unwrap().residual_tolerance, 0.05);
    for bad in ["0.0", "-0.02", "nan"] {
        let e = err(&format!("[solver]\nresidual_tolerance = {bad}\n{GRID}"));
        assert!(e.contains("solver.residual_tolerance"), "{e}");
    }
}

/// `[solver] iterations = "auto"`: iterate to half the residual tolerance, at most
/// `max_iterations` (default 50); other words, `max_iterations` without `"auto"`, PBD and
/// force-based methods are refused with the key named.
#[test]
fn auto_iterations_key() {
    let auto = |text: &str| match parse(text).unwrap().solver {
        scene::SolverChoice::Position(s) => s.auto_iterations,
        _ => panic!("an XPBD scene"),
    };
    assert_eq!(auto(GRID), None);
    let a = auto(&format!("[solver]\niterations = \"auto\"\n{GRID}")).unwrap();
    assert_eq!((a.tolerance, a.max_iterations), (0.01, 50));
    let a = auto(&format!("[solver]\niterations = \"auto\"\nmax_iterations = 8\nresidual_tolerance = 0.05\n{GRID}"))
        .unwrap();
    assert_eq!((a.tolerance, a.max_iterations), (0.025, 8));
    let s = parse(&format!("[solver]\niterations = \"auto\"\n{GRID}")).unwrap();
    assert!(s.solver.iterations_text().contains("to 1.00 %"), "{}", s.solver.iterations_text());
    for (text, key) in [
        ("iterations = \"many\"", "solver.iterations"),
        ("iterations = 0", "solver.iterations"),
        ("max_iterations = 8", "solver.max_iterations"),
        ("iterations = \"auto\"\nmax_iterations = 0", "solver.max_iterations"),
        ("iterations = \"auto\"\nmethod = \"pbd\"", "iterations"),
        ("iterations = \"auto\"\nmethod = \"implicit-euler\"", "solver.iterations"),
    ] {
        let e = err(&format!("[solver]\n{text}\n{GRID}"));
        assert!(e.contains(key), "{text}: {e}");
    }
}

/// `[[cloth.pin_groups]]` pins move along their keyframes: at t = 1 s of a 2 s ramp to −0.2 m in
/// x, each of the group's particles is pinned to its start plus (−0.1, 0, 0); the cloth's other
/// pins stay put; a group with a rotation, or naming no particle, is refused by key; and a
/// material's `tear_strain` and a `[[cut]]` are read (the cut's points must not run along its
/// direction).
#[test]
fn pin_groups_move_and_tearing_keys_are_read() {
    let text = format!(
        "{GRID}pin_cells = [[0, 0]]\n[[cloth.pin_groups]]\ncolumns = [-1]\nkeyframes = [{{ time = 0.0 }}, {{ time = 2.0, translation = [-0.2, 0.0, 0.0] }}]\n"
    );
    let s = parse(&text).unwrap();
    let x = s.model.particle_position();
    let control = s.control_at(1.0);
    assert_eq!(control.pins.len(), 1 + 4);
    for pin in &control.pins {
        let p = pin.particle as usize;
        match pin.target {
            Some(t) => assert!((t - (x[p] + Vec3::new(-0.1, 0.0, 0.0))).length() < 1e-6, "{t} from {}", x[p]),
            None => assert_eq!(p, 0),
        }
    }
    let rotating = format!(
        "{GRID}[[cloth.pin_groups]]\ncolumns = [0]\nkeyframes = [{{ time = 0.0, rotation = [0.0, 90.0, 0.0] }}]\n"
    );
    assert!(err(&rotating).contains("pin_groups[0]: keyframes of pins translate only"));
    let nothing = format!("{GRID}[[cloth.pin_groups]]\nkeyframes = [{{ time = 0.0 }}]\n");
    assert!(err(&nothing).contains("pin_groups[0]: names no particle"));
    // A group moves its particles from where they start: a translation at t = 0 (from keys
    // before 0 s, or one key after it) would jump them there in the first substep.
    for keys in [
        "[{ time = -1.0 }, { time = 1.0, translation = [0.2, 0.0, 0.0] }]",
        "[{ time = 1.0, translation = [0.0, 0.1, 0.0] }]",
    ] {
        let jump = format!("{GRID}[[cloth.pin_groups]]\ncolumns = [0]\nkeyframes = {keys}\n");
        let e = err(&jump);
        assert!(e.contains("pin_groups[0]: keyframes: the translation at t = 0 s is"), "{e}");
    }
    // A particle has one pin: in a group and pinned in place, or in two groups, is refused,
    // naming the particle (row 0, column 0: index 0).
    let both =
        format!("{GRID}pin_cells = [[0, 0]]\n[[cloth.pin_groups]]\ncolumns = [0]\nkeyframes = [{{ time = 0.0 }}]\n");
    let e = err(&both);
    assert!(
        e.contains("pin_groups[0]: particle 0 (index 0 of the cloth) is already pinned by the cloth's pin keys"),
        "{e}"
    );
    let twice = format!(
        "{GRID}[[cloth.pin_groups]]\ncolumns = [0]\nkeyframes = [{{ time = 0.0 }}]\n\
         [[cloth.pin_groups]]\nrows = [0]\nkeyframes = [{{ time = 0.0 }}]\n"
    );
    let e = err(&twice);
    assert!(
        e.contains("pin_groups[1]: particle 0 (index 0 of the cloth) is already pinned by an earlier pin group"),
        "{e}"
    );
    // A group's messages name its own keys (`columns`, `release_at`), not the cloth's.
    let far = format!("{GRID}[[cloth.pin_groups]]\ncolumns = [99]\nkeyframes = [{{ time = 0.0 }}]\n");
    assert!(err(&far).contains("pin_groups[0]: columns:"), "{}", err(&far));
    let never =
        format!("{GRID}[[cloth.pin_groups]]\ncolumns = [0]\nrelease_at = -1.0\nkeyframes = [{{ time = 0.0 }}]\n");
    assert!(err(&never).contains("pin_groups[0]: release_at:"), "{}", err(&never));
    let tearing = format!(
        "[materials.m]\ntear_strain = 0.3\n{GRID}material = \"m\"\n[[cut]]\ntime = 0.5\npoints = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]\n"
    );
    let s = parse(&tearing).unwrap();
    assert!(matches!(s.model.bodies()[0].material, hooke::BodyMaterial::Cloth(m) if m.tear_strain == 0.3));
    assert_eq!(s.cuts.len(), 1);
    assert!(err(&tearing.replace("0.3", "-1.0")).contains("tear strain"));
    // A blade's direction of any length is made a unit vector (1e-10 and 1e20 alike); points
    // too far apart to square within f32 are refused, not left cutting nothing.
    for d in ["1e-10", "1e20"] {
        let s = parse(&format!("{tearing}direction = [0.0, {d}, 0.0]\n")).unwrap();
        assert_eq!(s.cuts[0].1.direction, glam::Vec3::Y, "direction {d}");
    }
    let far = tearing.replace("[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]", "[[-1e20, 0.0, 0.0], [1e20, 0.0, 0.0]]");
    assert!(err(&far).contains("too far apart"), "{}", err(&far));
    let rope = "[materials.m]\ntear_strain = 0.3\n[[rope]]\nmaterial = \"m\"\nstart = [0.0, 0.0, 0.0]\nend = [1.0, 0.0, 0.0]\nparticles = 4\n";
    assert!(err(rope).contains("tear_strain"));
    // tear_energy (J/m²) is read, and gives the strain at which a constraint holds it.
    let energy = format!("[materials.m]\ntear_energy = 2.0\nstretch_stiffness = 1e4\n{GRID}material = \"m\"\n");
    let s = parse(&energy).unwrap();
    let hooke::BodyMaterial::Cloth(m) = s.model.bodies()[0].material else { panic!("not a cloth") };
    assert_eq!((m.tear_energy, m.tear_strain), (2.0, f32::INFINITY));
    assert!((m.breaking_strain(hooke::ConstraintFamily::Structural) - 0.02).abs() < 1e-7);
    assert!(err(&energy.replace("2.0", "nan")).contains("tear energy"));
}

/// A mesh cloth whose material tears (a `tear_strain` or `tear_energy`) but has no texture coordinates is
/// refused at load, naming the cloth and the key — not at its first tear, after the frames
/// before it were simulated; a scene with a `[[cut]]` warns about it; with `vt` lines it loads.
/// The same beside a grid, which has texture coordinates (the mesh's are then NaN in the
/// model, which a reviewer found taken for texture coordinates).
#[test]
fn tearing_a_mesh_without_texture_coordinates_is_refused_at_load() {
    let quad = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n";
    let tearing =
        "[materials.paper]\ntear_strain = 0.2\n[[cloth]]\nname = \"m\"\nmesh = \"mesh.obj\"\nmaterial = \"paper\"\n";
    let with_uv = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nvt 1 1\nf 1/1 2/2 3/3\nf 2/2 4/4 3/3\n";
    for (obj, ok) in [(quad, false), (with_uv, true)] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mesh.obj"), obj).unwrap();
        let path = dir.path().join("s.toml");
        // By either key.
        let beside_a_grid = format!("{tearing}{GRID}name = \"g\"\n");
        for tearing in [tearing.to_string(), tearing.replace("tear_strain = 0.2", "tear_energy = 1.0"), beside_a_grid] {
            std::fs::write(&path, &tearing).unwrap();
            let r = scene::load(&path, LIMIT);
            assert_eq!(r.is_ok(), ok, "{:?}", r.as_ref().err().map(|e| e.to_string()));
            if let Err(e) = r {
                let e = e.to_string();
                assert!(e.contains("cloth \"m\"") && e.contains("tear_") && e.contains("texture coordinates"), "{e}");
            }
        }
        // A scripted cut might not cross it: a warning, not an error.
        let cut = "[[cloth]]\nname = \"m\"\nmesh = \"mesh.obj\"\n[[cut]]\ntime = 0.5\npoints = [[-1.0, 0.5, -1.0], [2.0, 0.5, -1.0]]\n";
        for cut in [cut.to_string(), format!("{cut}{GRID}name = \"g\"\n")] {
            std::fs::write(&path, cut).unwrap();
            let s = scene::load(&path, LIMIT).unwrap();
            let warned = s.warnings.iter().any(|w| w.contains("cloth \"m\"") && w.contains("[[cut]]"));
            assert_eq!(warned, !ok, "{:?}", s.warnings);
        }
    }
}

/// A bending modulus that `bending = "none"` leaves unused is a warning naming the body and
/// the key (not an error: a named material may serve other bodies that bend); with the model
/// that takes it, there is none.
#[test]
fn an_unused_bending_modulus_is_a_warning() {
    let text = format!("[materials.m]\nbending_modulus = 0.01\n{GRID}material = \"m\"\nbending = \"none\"\n");
    let s = parse(&text).unwrap();
    assert!(
        s.warnings.len() == 1
            && s.warnings[0].contains("cloth[0]")
            && s.warnings[0].contains("bending = \"none\": its material's bending_modulus is not used"),
        "{:?}",
        s.warnings
    );
    let s = parse(&text.replace("bending = \"none\"\n", "")).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

/// A number below f32's smallest normal magnitude (subnormal in f32, or rounding to 0) is
/// refused by its key, wherever it is — so `hooke validate` and `hooke run` (whose threads
/// flush subnormals to zero and then read it as 0) agree on it. Zero itself and the smallest
/// normal value pass this check.
#[test]
fn numbers_too_small_for_f32_are_refused_by_key() {
    for (text, key) in [
        (
            format!("[materials.m]\nstretch_stiffness = 1e-38\n{GRID}material = \"m\"\n"),
            "materials.m.stretch_stiffness",
        ),
        (
            format!("{GRID}[[collider]]\nshape = \"sphere\"\nradius = 1e-46\ncenter = [0.0, -1.0, 0.0]\n"),
            "collider[0].radius",
        ),
        (
            format!(
                "{GRID}[[cloth.pin_groups]]\ncolumns = [0]\nkeyframes = [{{ time = 0.0, translation = [1e-39, 0.0, 0.0] }}]\n"
            ),
            "cloth[0].pin_groups[0].keyframes[0].translation[0]",
        ),
    ] {
        let e = err(&text);
        assert!(e.contains(&format!("{key}: ")) && e.contains("too small for f32"), "{key}: {e}");
    }
    let wind = |w: &str| format!("wind = [{w}, 0.0, 0.0]\n{GRID}");
    assert!(parse(&wind("0.0")).is_ok());
    assert!(parse(&wind("1.2e-38")).is_ok());
    assert!(err(&wind("1e-40")).contains("wind[0]: 1e-40 is too small for f32"));
    // Beyond f32's largest: refused by key rather than read as infinity (a tear strain of
    // 1e300 was taken as "never tears", a spacing of 1e300 reported as "got inf").
    let tear = format!("[materials.m]\ntear_strain = 1e300\n{GRID}material = \"m\"\n");
    assert!(err(&tear).contains("materials.m.tear_strain: 1e300 is too large for f32"), "{}", err(&tear));
    assert!(err(&wind("-1e39")).contains("wind[0]: -1e39 is too large for f32"));
    let tear = format!("[materials.m]\ntear_strain = 3.4e38\n{GRID}material = \"m\"\n");
    assert!(parse(&tear).is_ok(), "{}", err(&tear));
    // A wind that large is an f32, but its drag is not.
    assert!(err(&wind("3.4e38")).contains("wind: [340000000000000000000000000000000000000, 0, 0] m/s is too fast"));
}

/// A mesh cloth's pin group chooses its particles by `indices` (the mesh file's vertices):
/// `rows`, `columns` and `cells`, which only a grid has, are refused by key instead of being
/// passed over (a group with rows and an index pinned the index alone; one with rows only was
/// told it named no particle).
#[test]
fn a_mesh_cloths_pin_group_refuses_grid_keys() {
    let quad = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n";
    let group = |keys: &str| format!("[[cloth.pin_groups]]\n{keys}\nkeyframes = [{{ time = 0.0 }}]\n");
    for keys in ["rows = [0]", "columns = [1]\nindices = [1]", "cells = [[0, 0]]"] {
        let (_dir, s) = mesh_scene(quad, &group(keys));
        let e = s.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("pin_groups[0]: rows, columns and cells apply to grids"), "{keys}: {e}");
    }
    let (_dir, s) = mesh_scene(quad, &group("indices = [3]"));
    assert_eq!(s.unwrap().pins.len(), 1);
    // A scale that makes the mesh's masses or positions unusable names the file and the scale.
    let (_dir, s) = mesh_scene(quad, "scale = -1.0\n");
    let e = s.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("scale") && !e.contains("spans"), "{e}");
    for scale in ["1e-30", "1e12"] {
        let (_dir, s) = mesh_scene(quad, &format!("scale = {scale}\n"));
        let e = s.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.contains("mesh.obj (scale = ") && e.contains(&format!("{}", scale.parse::<f32>().unwrap())),
            "{scale}: {e}"
        );
    }
}

/// Faults a helper found, each refused (or warned about) by the key that causes it: two
/// colliders of one name; a fractional iteration count (was serde's "did not match any
/// variant"); a grid spacing that puts particles beyond 10⁹ m (was "position NaN" of particle
/// 0); a rope whose start is its end (was "points: length 0 m" for a rope without points); a
/// negative count (was "a count ≥ 0" where 0 is refused too); a mesh vertex at 10³⁸ (was a
/// weld tolerance of inf); a cut after the last frame (a warning: a longer run reaches it).
#[test]
fn more_bad_input_is_named_by_key() {
    let two = format!(
        "{GRID}[[collider]]\nname = \"ball\"\nshape = \"sphere\"\nradius = 0.1\ncenter = [0.0, -1.0, 0.0]\n\
         [[collider]]\nname = \"ball\"\nshape = \"sphere\"\nradius = 0.2\ncenter = [0.0, -2.0, 0.0]\n"
    );
    let e = err(&two);
    assert!(e.contains("collider[1] \"ball\": two colliders are named \"ball\""), "{e}");
    let e = err(&format!("[output]\ndir = \"a\\u0000b\"\n{GRID}"));
    assert!(e.contains("output.dir") && e.contains("NUL"), "{e}");
    let e = err(&format!("[solver]\niterations = 2.5\n{GRID}"));
    assert!(e.contains("solver.iterations: expected a whole count ≥ 1 or \"auto\", got 2.5"), "{e}");
    let e = err(&GRID.replace("spacing = 0.1", "spacing = 1e38"));
    assert!(e.contains("spacing") && e.contains("it must span at most 1e9 m"), "{e}");
    let e = err("[[rope]]\nstart = [0.0, 1.0, 0.0]\nend = [0.0, 1.0, 0.0]\nparticles = 5\n");
    assert!(e.contains("the rope's length 0 m (along its points, or from start to end) is too short"), "{e}");
    let e = err(&GRID.replace("rows = 4", "rows = -1"));
    assert!(e.contains("rows: must be a positive count, got -1"), "{e}");
    let (_dir, s) = mesh_scene("v 0 0 0\nv 1e38 0 0\nv 0 1 0\nf 1 2 3\n", "");
    let e = s.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("line 2: vertex") && e.contains("is beyond 1e9"), "{e}");
    let cut =
        format!("[solver]\nframes = 30\n{GRID}[[cut]]\ntime = 2.0\npoints = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]\n");
    let s = parse(&cut).unwrap();
    assert!(
        s.warnings.iter().any(|w| w.contains("cut[0]: time 2 s is after the scene's last frame (t = 0.5 s")),
        "{:?}",
        s.warnings
    );
    assert!(parse(&cut.replace("time = 2.0", "time = 0.25")).unwrap().warnings.is_empty());
    // A blade cuts cloth only: in a scene of ropes it cuts nothing, and says so (it was silent).
    let ropes = "[solver]\nframes = 30\n[[rope]]\nstart = [0.0, 1.0, 0.0]\nend = [1.0, 1.0, 0.0]\nparticles = 5\n\
                 [[cut]]\ntime = 0.25\npoints = [[0.5, 0.0, -1.0], [0.5, 2.0, -1.0]]\ndirection = [0.0, 0.0, 1.0]\n";
    let s = parse(ropes).unwrap();
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("a [[cut]] but no cloth, and a blade cuts only cloth (a rope is not cut)")),
        "{:?}",
        s.warnings
    );
    assert!(parse(&format!("{ropes}{GRID}")).unwrap().warnings.is_empty());
    // A second helper's (2026-12-06): a keyframe translation of 1e30 m loaded and the run then
    // blamed a structural constraint for the non-finite particle; a cut whose points are all
    // one point was said to run along its direction.
    let far = "keyframes = [{ time = 0.0 }, { time = 0.05, translation = [0.0, 1e30, 0.0] }]\n";
    let e = err(&format!(
        "{GRID}[[collider]]\nname = \"floor\"\nshape = \"sphere\"\nradius = 0.1\ncenter = [0.0, -1.0, 0.0]\n{far}"
    ));
    assert!(e.contains("collider[0] \"floor\": keyframes[1].translation") && e.contains("beyond 1e9 m"), "{e}");
    let near = "keyframes = [{ time = 0.0 }, { time = 1e-30, translation = [0.0, 1.0, 0.0] }]\n";
    let e = err(&format!(
        "{GRID}[[collider]]\nname = \"floor\"\nshape = \"sphere\"\nradius = 0.1\ncenter = [0.0, -1.0, 0.0]\n{near}"
    ));
    assert!(e.contains("collider[0] \"floor\": keyframe 1: time 1e-30 s is less than 1 ns after"), "{e}");
    let cut = format!("{GRID}[[cut]]\ntime = 0.1\npoints = [[0.0, 0.7, 0.0], [0.0, 0.7, 0.0]]\n");
    let e = err(&cut);
    assert!(e.contains("cut[0]: the points are all one point, so the blade has no length"), "{e}");
    // A third helper's (2026-12-07): a damping time of 1e30 s loaded and ran, its residuals
    // printed as 1e30 %; a TOML error in a file of one 50 MB line echoed the line whole.
    let damped = |tau: &str| format!("[materials.m]\ndamping = {tau}\n{GRID}material = \"m\"\n");
    let e = err(&damped("1e30"));
    assert!(e.contains("damping (s)") && e.contains("1e30 s is longer than 1e3 s"), "{e}");
    assert!(parse(&damped("1e3")).is_ok());
    let e = err(&format!("{}\n", "x".repeat(100_000)));
    assert!(e.len() < 300 && e.contains("TOML parse error at line 1, column"), "{}", &e[..e.len().min(400)]);
    assert!(e.contains("(a line of 100000 characters, not shown)"), "{e}");
    // A wind faster than sound (10⁴ m/s stretched a cloth by 600 % and the run exited 0),
    // alone or at its gust's peak.
    let e = err(&format!("wind = [1e4, 0.0, 0.0]\n[air]\n{GRID}"));
    assert!(e.contains("wind: [10000, 0, 0] m/s (1.0000e4 m/s) is faster than sound in air (343 m/s)"), "{e}");
    assert!(parse(&format!("wind = [340.0, 0.0, 0.0]\n[air]\n{GRID}")).is_ok());
    let gust = "gust = { amplitude = [100.0, 0.0, 0.0], period = 1.0 }\n";
    let e = err(&format!("wind = [300.0, 0.0, 0.0]\n{gust}[air]\n{GRID}"));
    assert!(e.contains("gust.amplitude with the wind: [400, 0, 0] m/s") && e.contains("faster than sound"), "{e}");
    assert!(parse(&format!("wind = [200.0, 0.0, 0.0]\n{gust}[air]\n{GRID}")).is_ok());
    // A cloth that starts inside a collider is thrown out of it in the first substep (from
    // 0.6 J to 3 700 J): a warning names both; one that starts clear of it has none.
    let ball = |y: f32| {
        format!("{GRID}[[collider]]\nname = \"ball\"\nshape = \"sphere\"\nradius = 0.5\ncenter = [0.0, {y:?}, 0.0]\n")
    };
    let s = parse(&ball(0.0)).unwrap();
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("cloth \"cloth0\": 16 of its 16 particles start inside collider \"ball\"")),
        "{:?}",
        s.warnings
    );
    assert!(parse(&ball(-1.0)).unwrap().warnings.is_empty());
    // Where its keyframes place it at t = 0, not where its keys alone put it.
    let keyed =
        format!("{}keyframes = [{{ time = 0.0, translation = [0.0, 1.0, 0.0] }}, {{ time = 1.0 }}]\n", ball(-1.0));
    let s = parse(&keyed).unwrap();
    assert!(
        s.warnings.iter().any(|w| w.contains("16 of its 16 particles start inside collider \"ball\"")),
        "{:?}",
        s.warnings
    );
    let e = err(&format!("{GRID}x\n"));
    assert!(e.contains("5 | x\n  |  ^"), "a short line is still shown with its caret: {e}");
}

/// The derived blow-up speed counts a tearing cloth's recoil at most at the blow-up strain
/// (10): a tear energy of 10³⁸ J/m², which no constraint reaches before the strain limit
/// stops the run, gives the limit of a tear strain of 10 (it gave 1.3·10²¹ m/s, blow-up
/// detection off in effect).
#[test]
fn an_unreachable_tear_energy_does_not_lift_the_speed_limit() {
    let grid = "[[cloth]]\nrows = 6\ncolumns = 6\nspacing = 0.1\nmaterial = \"m\"\n";
    let limit = |key: &str| {
        parse(&format!("[materials.m]\nstretch_stiffness = 4000.0\nshear_stiffness = 4000.0\n{key}\n{grid}"))
            .unwrap()
            .solver
            .max_speed()
    };
    let (energy, strain) = (limit("tear_energy = 1e38"), limit("tear_strain = 10.0"));
    assert_eq!(energy, strain);
    assert!(strain < 1e6, "{strain}");
}

/// Keys that are allowed but do nothing warn, naming the key: release_pins_at without pins,
/// the self-collision speed clamp without self-collision, a grid with neither structural nor
/// shear constraints, a capsule whose ends coincide, PBD stiffness 0, `tear_overlap` where
/// nothing tears by strain; a pin group with an
/// empty keyframe list is refused, as one without the key is.
#[test]
fn keys_that_do_nothing_warn() {
    let warns = |text: &str, what: &str| {
        let s = parse(text).unwrap();
        assert!(s.warnings.iter().any(|w| w.contains(what)), "{what}: {:?}", s.warnings);
    };
    warns(
        &format!("{GRID}release_pins_at = 1.0\n"),
        "cloth[0] \"cloth0\": release_pins_at is set but the cloth has no pins",
    );
    warns(
        &format!("{GRID}self_collision_speed_clamp = true\n"),
        "self_collision_speed_clamp is set but self_collision is off",
    );
    warns(
        &format!("{GRID}self_collision_thickness = 0.05\n"),
        "self_collision_thickness is set but self_collision is off",
    );
    warns(
        &format!("[solver]\nsubsteps = 20\nmax_substeps = 5\n{GRID}"),
        "solver.max_substeps = 5 is below solver.substeps = 20",
    );
    for quiet in [
        format!("{GRID}self_collision = true\nself_collision_thickness = 0.12\n"),
        format!("[solver]\nsubsteps = 20\nmax_substeps = 20\n{GRID}"),
    ] {
        assert!(parse(&quiet).unwrap().warnings.is_empty(), "{quiet}: {:?}", parse(&quiet).unwrap().warnings);
    }
    warns(&format!("{GRID}structural = false\nshear = false\n"), "together but its bending");
    // A grid far from the origin: rounding a good part of its spacing is refused, a smaller part
    // warned of; at 100 m a 10 cm spacing is fine.
    let at = |x: &str| GRID.replace("spacing = 0.1\n", &format!("spacing = 0.1\ncenter = [{x}, 1.0, 0.0]\n"));
    assert!(err(&at("1e6")).contains("too coarse for a spacing of 0.1 m"), "{}", err(&at("1e6")));
    warns(&at("2e4"), "the rounding shows as strain");
    assert!(parse(&at("100.0")).unwrap().warnings.is_empty());
    // A negative spacing or scale is named as such, not as rounding far from the origin.
    let e = err(&GRID.replace("spacing = 0.1", "spacing = -0.1"));
    assert!(e.contains("spacing") && !e.contains("origin"), "{e}");
    warns(
        &format!("{GRID}structural = false\nshear = false\nbending = \"none\"\n"),
        "together: it has no constraints at all",
    );
    warns(
        &format!("{GRID}[[collider]]\nshape = \"capsule\"\na = [0.0, -1.0, 0.0]\nb = [0.0, -1.0, 0.0]\nradius = 0.1\n"),
        "a and b are the same point: the capsule is a sphere",
    );
    warns(&format!("[solver]\nmethod = \"pbd\"\npbd_stiffness = 0.0\n{GRID}"), "solver.pbd_stiffness = 0");
    // Tears made beside the next frame, in a scene where nothing tears by strain.
    warns(
        &format!("[solver]\ntear_overlap = true\n{GRID}"),
        "solver.tear_overlap: no cloth of the scene has a tear_strain",
    );
    let tearing = format!("[solver]\ntear_overlap = true\n[materials.m]\ntear_strain = 0.1\n{GRID}material = \"m\"\n");
    let s = parse(&tearing).unwrap();
    assert!(s.tear_overlap && s.warnings.is_empty(), "{:?}", s.warnings);
    assert!(!parse(GRID).unwrap().tear_overlap, "off by default");
    warns(
        "[[rope]]\nstart = [0.0, 1.0, 0.0]\nend = [1.0, 1.0, 0.0]\nparticles = 5\nrelease_pins_at = 1.0\n",
        "the rope has no pins",
    );
    assert!(parse(&format!("{GRID}pin_rows = [0]\nrelease_pins_at = 1.0\n")).unwrap().warnings.is_empty());
    // A polyline that folds back lays one leg's particles over the other's; a right angle does not warn.
    let rope = |third: &str| {
        format!("[[rope]]\npoints = [[0.0, 1.0, 0.0], [1.0, 1.0, 0.0], {third}]\nparticles = 9\npin_indices = [0]\n")
    };
    warns(&rope("[0.2, 1.01, 0.0]"), "rope[0] \"rope0\": points[1] turns the rope back by 179°");
    assert!(parse(&rope("[1.0, 0.0, 0.0]")).unwrap().warnings.is_empty());
    // A repeated point between the legs does not hide the fold; a step back far shorter than
    // the particles' spacing (rounding) is not one.
    warns(&rope("[1.0, 1.0, 0.0], [0.2, 1.01, 0.0]"), "points[2] turns the rope back by 179°");
    assert!(parse(&rope("[0.9999999, 1.0, 0.0], [2.0, 1.0, 0.0]")).unwrap().warnings.is_empty());
    let e = err(&format!("{GRID}[[cloth.pin_groups]]\ncolumns = [0]\nkeyframes = []\n"));
    assert!(e.contains("pin_groups[0]: keyframes is empty"), "{e}");
}

/// A scene file that is a named pipe: read to its end where something writes to it (as
/// `hooke run <(…)` does), and refused at once where nothing does — opening it waited for a
/// writer for ever, in every command and in Python.
#[cfg(unix)]
#[test]
fn a_named_pipe_is_read_or_refused_without_waiting() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("scene.toml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let read = |path: std::path::PathBuf| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(scene::read_text(&path).map_err(|e| e.to_string())));
        rx.recv_timeout(std::time::Duration::from_secs(20)).expect("reading the pipe waited for a writer")
    };
    let e = read(fifo.clone()).unwrap_err();
    assert!(e.contains("a named pipe that nothing wrote to"), "{e}");
    // A writer holds the pipe (read and write, which does not wait for a reader) and closes it
    // a moment after writing the scene.
    let mut writer = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    writer.write_all(GRID.as_bytes()).unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(writer);
    });
    assert_eq!(read(fifo).unwrap(), GRID);
    closer.join().unwrap();
}
