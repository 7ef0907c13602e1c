//! A run tears by either key: `Tearing` (the CLI's, viewer's, batch's and Python's tearing) is
//! active for a cloth that has only a `tear_energy`, and tears it; such a scene is not packed
//! into worlds.

use hooke_io::scene;
use hooke_sim::Tearing;

const SHEET: &str = "[solver]\nsubsteps = 10\n[[cloth]]\nrows = 8\ncolumns = 8\nspacing = 0.05\nmaterial = \"m\"\n";

#[test]
fn a_cloth_with_only_a_tear_energy_tears_in_a_run() {
    let dir = tempfile::tempdir().unwrap();
    for (material, tears) in [("", false), ("tear_energy = 0.5\n", true), ("tear_strain = 0.1\n", true)] {
        let text = format!("[materials.m]\nstretch_stiffness = 1e4\n{material}{SHEET}");
        let s = scene::parse(&text, "sheet.toml", "sheet", None, 1 << 30).unwrap();
        let mut tearing = Tearing::for_scene(&s);
        assert_eq!(tearing.active(), tears, "{material:?}");
        // Every particle's position scaled by 1.05: 5 % strain, past the 1.0 % at which a
        // 1e4 N/m constraint holds 0.5 J/m², not past a tear strain of 0.1.
        let mut made = hooke_sim::make_solver(&s, &hooke_sim::SolverOptions::new(hooke_sim::Backend::Cpu)).unwrap();
        let mut state = hooke::State::from_model(&s.model);
        for p in state.particle_position.iter_mut() {
            *p *= 1.05;
        }
        let torn = tearing.after_frame(made.solver.as_mut(), &mut state).unwrap();
        assert_eq!(torn.is_some(), material.contains("energy"), "{material:?}: {torn:?}");
        // Packing into worlds refuses a scene that tears, by either key.
        let path = dir.path().join("sheet.toml");
        std::fs::write(&path, &text).unwrap();
        let packed = hooke_sim::worlds::pack(&[(&path, &toml::Table::new()), (&path, &toml::Table::new())], 1 << 30);
        match packed {
            Ok(_) => assert!(!tears, "{material:?} was packed"),
            Err((_, e)) => assert!(tears && e.contains("cannot be packed into worlds"), "{material:?}: {e}"),
        }
    }
}
