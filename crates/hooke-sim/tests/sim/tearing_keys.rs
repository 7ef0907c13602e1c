//! A run tears by either key: `Tearing` (the CLI's, viewer's, batch's and Python's tearing) is
//! active for a cloth that has only a `tear_energy`, and tears it; such a scene is not packed
//! into worlds.

use hooke_io::scene;
use hooke_sim::Tearing;
use std::sync::Arc;

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

/// With `[solver] tear_overlap = true` a tear found after frame n waits one frame (`Tearing`'s
/// "one frame in flight"): frame n + 1 is solved on the model unchanged, and after it the
/// solver takes the torn model made from frame n's positions — the tear `hooke::tearing` makes
/// of those positions, record for record (frame n + 1's would break other constraints) — with
/// frame n + 1's state mapped onto it; under the global cloth solve as under Gauss–Seidel. A
/// model changed in between (a material edit) drops the waiting tear, which the next check
/// finds again. Without the key the tear is taken at once.
#[test]
fn an_overlapped_tear_waits_one_frame() {
    let base = format!("[materials.m]\nstretch_stiffness = 1e4\ntear_strain = 0.1\n{SHEET}");
    for (overlap, global, edit) in
        [(true, false, false), (true, true, false), (true, false, true), (false, false, false)]
    {
        let mut solver_keys = String::from("substeps = 10\n");
        if overlap {
            solver_keys += "tear_overlap = true\n";
        }
        if global {
            solver_keys += "cloth_solver = \"global\"\n";
        }
        let text = base.replace("substeps = 10\n", &solver_keys);
        let s = scene::parse(&text, "sheet.toml", "sheet", None, 1 << 30).unwrap();
        let mut tearing = Tearing::for_scene(&s);
        assert_eq!(tearing.overlap(), overlap);
        let mut made = hooke_sim::make_solver(&s, &hooke_sim::SolverOptions::new(hooke_sim::Backend::Cpu)).unwrap();
        let solver = made.solver.as_mut();
        // Stretched by 30 % in the sheet's plane: structural and shear constraints break.
        let mut state = hooke::State::from_model(&s.model);
        for p in state.particle_position.iter_mut() {
            (p.x, p.z) = (p.x * 1.3, p.z * 1.3);
        }
        solver.write_state(&state).unwrap();
        let model = solver.model().clone();
        let broken = hooke::tearing::strained(&model, &state.particle_position);
        assert!(!broken.is_empty());
        let expected = hooke::tearing::tear(&model, &state.particle_position, &broken).unwrap().unwrap();
        let found = tearing.after_frame(solver, &mut state).unwrap();
        if !overlap {
            let c = found.expect("taken at once");
            assert_eq!((c.broken, c.split), (expected.broken, expected.split));
            assert!(!tearing.waiting());
            continue;
        }
        assert!(found.is_none() && tearing.waiting() && tearing.due(solver), "{found:?}");
        assert!(Arc::ptr_eq(solver.model(), &model), "the model changed before the next frame");
        if edit {
            // The same material, as a viewer's edit would give it: another model.
            solver.notify_model_changed(Arc::new((*model).clone())).unwrap();
        }
        solver.step(&hooke::Control::default(), 1.0 / 60.0).unwrap();
        solver.read_state(&mut state);
        let moved = state.particle_position.clone();
        let taken = tearing.after_frame(solver, &mut state).unwrap();
        if edit {
            assert!(taken.is_none(), "a tear of the model before the edit was taken: {taken:?}");
            assert!(tearing.waiting(), "the tear was not found again");
            continue;
        }
        let c = taken.expect("taken after the frame");
        assert_eq!((c.broken, c.split), (expected.broken, expected.split));
        let now = solver.model();
        assert_eq!(now.particle_count(), expected.model.particle_count());
        assert!(now.distance().constraints() == expected.model.distance().constraints(), "not the tear of frame n");
        // Frame n + 1's positions, mapped onto the torn model.
        for (k, &p) in expected.parent.iter().enumerate() {
            assert_eq!(state.particle_position[k], moved[p as usize]);
        }
        // (What frame n + 1 would break is another set: the tear is frame n's.)
        assert_ne!(hooke::tearing::strained(&model, &moved), broken, "the test cannot tell");
    }
}

/// With `tear_overlap`, a tear waiting for the next frame is dropped when the state is written
/// back to the time it was found at (a viewer's snapshot restored) instead of a frame being
/// stepped: it is not taken at a state no frame followed, and the check finds it again there.
#[test]
fn a_waiting_tear_is_dropped_at_a_restored_state() {
    let text = format!("[materials.m]\nstretch_stiffness = 1e4\ntear_strain = 0.1\n{SHEET}")
        .replace("substeps = 10\n", "substeps = 10\ntear_overlap = true\n");
    let s = scene::parse(&text, "sheet.toml", "sheet", None, 1 << 30).unwrap();
    let mut tearing = Tearing::for_scene(&s);
    let mut made = hooke_sim::make_solver(&s, &hooke_sim::SolverOptions::new(hooke_sim::Backend::Cpu)).unwrap();
    let solver = made.solver.as_mut();
    let stretched = || {
        let mut state = hooke::State::from_model(&s.model);
        for p in state.particle_position.iter_mut() {
            (p.x, p.z) = (p.x * 1.3, p.z * 1.3);
        }
        state
    };
    let mut state = stretched();
    solver.write_state(&state).unwrap();
    let model = solver.model().clone();
    assert!(tearing.after_frame(solver, &mut state).unwrap().is_none() && tearing.waiting());
    // The snapshot restored: the same time, no frame stepped.
    let mut back = stretched();
    solver.write_state(&back).unwrap();
    let again = tearing.after_frame(solver, &mut back).unwrap();
    assert!(again.is_none(), "a tear taken at the restored state: {again:?}");
    assert!(Arc::ptr_eq(solver.model(), &model) && tearing.waiting(), "not dropped and found again");
    // After a frame, the tear found again is taken.
    solver.step(&hooke::Control::default(), 1.0 / 60.0).unwrap();
    solver.read_state(&mut back);
    assert!(tearing.after_frame(solver, &mut back).unwrap().is_some(), "the tear found again was not taken");
}
