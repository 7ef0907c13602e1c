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
