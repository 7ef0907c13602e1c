//! Scene parsing: every example scene loads; bad input gives an error naming file and key.

use hooke_io::scene::{self, SceneError};
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
            let s = scene::load(&path, LIMIT).unwrap_or_else(|e| panic!("{e}"));
            assert!(s.model.particle_count() > 0 && s.frames > 0);
            n += 1;
        }
    }
    assert!(n >= 5, "only {n} scenes");
    let d = parse(scene::DEFAULT_SCENE).unwrap();
    assert_eq!(d.name, "cloth_on_sphere");
    assert_eq!(d.pins.len(), 2);
}

#[test]
fn syntax_errors_give_line_and_column() {
    let e = err("[solver\nsubsteps = 3\n");
    assert!(e.contains("line 1"), "{e}");
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
    ];
    for (text, needle) in &cases {
        let e = err(text);
        assert!(e.contains(needle), "expected {needle:?} in: {e}");
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
        assert!(e.contains("particle") || e.contains("constraint"), "{e}");
    }
}
