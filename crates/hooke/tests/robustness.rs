//! Determinism of the parallel path, and blow-up detection.

mod common;

use glam::Vec3;
use hooke::{Control, ModelBuilder, Rope, Solver, SolverError, XpbdSettings, XpbdSolver};
use std::sync::Arc;

/// The rayon path projects each colour in parallel; because no two constraints of a colour
/// share a particle, the result must be bit-for-bit that of the sequential sweep.
#[test]
fn xpbd_parallel_equals_sequential_bit_for_bit() {
    // A horizontal cloth pinned along one edge, which falls and swings (a hanging one is
    // already at rest).
    let (model, control) = {
        let mut b = ModelBuilder::new();
        let id = b.add_cloth_grid(&hooke::ClothGrid::new("cloth", 100, 100, 0.01)).unwrap();
        let model = Arc::new(b.finalize().unwrap());
        let mut control = Control::new();
        for c in 0..100 {
            control.pin(model.bodies()[id.0].grid_index(0, c).unwrap());
        }
        (model, control)
    };
    // Big enough that colours and particle loops are split across threads.
    assert!(model.distance().colour_ranges().iter().any(|r| r.len() >= 4096) && model.particle_count() >= 4096);
    let run = |parallel| {
        let settings = XpbdSettings { parallel, substeps: 5, iterations: 2, ..XpbdSettings::default() };
        let mut s = common::run(&model, &control, settings, 20, 60.0);
        let mut x = Vec::new();
        s.read_positions(&mut x);
        x
    };
    let a = run(false);
    // On pools of several sizes: each colour is split among the threads of the pool (a team,
    // `solver/xpbd/team.rs`), in parts that differ with the count.
    for threads in [2, 3, 4] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let b = pool.install(|| run(true));
        let same = a.iter().zip(&b).all(|(p, q)| p.to_array().map(f32::to_bits) == q.to_array().map(f32::to_bits));
        assert!(same, "{threads} threads");
    }
    // And the cloth did move.
    assert!(a.iter().zip(model.particle_position()).any(|(p, q)| (*p - *q).length() > 1e-3));
}

fn rope_model(gravity: Vec3) -> Arc<hooke::Model> {
    let mut b = ModelBuilder::new();
    b.add_rope(&Rope::straight("rope", Vec3::ZERO, Vec3::X, 10)).unwrap();
    b.set_gravity(gravity).unwrap();
    Arc::new(b.finalize().unwrap())
}

#[test]
fn xpbd_runaway_is_detected_and_the_state_kept() {
    // Gravity of 10⁶ m/s² drives every particle past the 500 m/s limit in one frame.
    let model = rope_model(Vec3::new(0.0, -1.0e6, 0.0));
    let mut solver = XpbdSolver::new(model.clone(), XpbdSettings::default()).unwrap();
    let err = solver.step(&Control::new(), 1.0 / 60.0).unwrap_err();
    match &err {
        SolverError::BlowUp { time, detail, .. } => {
            assert_eq!(*time, 0.0);
            assert!(detail.contains("m/s"), "{detail}");
        }
        e => panic!("unexpected error {e}"),
    }
    // The state is still the one at the start of the failed frame.
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    assert_eq!(x, model.particle_position());
}

#[test]
fn xpbd_nan_is_traced_to_the_stage_that_made_it() {
    // f32::MAX gravity times a 5 s substep overflows to infinity in the prediction step.
    let model = rope_model(Vec3::new(0.0, -f32::MAX, 0.0));
    let mut solver = XpbdSolver::new(model, XpbdSettings::default()).unwrap();
    let err = solver.step(&Control::new(), 100.0).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("prediction") && text.contains("rope"), "{text}");
}

#[test]
fn xpbd_bad_time_steps_and_pins_are_errors() {
    let model = rope_model(Vec3::new(0.0, -9.81, 0.0));
    let mut solver = XpbdSolver::new(model, XpbdSettings::default()).unwrap();
    // Below 1 ns the substep's square leaves f32 (10⁻³⁸ s made the rope NaN in its first
    // projection): refused, like zero.
    for dt in [0.0, -1.0, f32::NAN, f32::INFINITY, 1e-38, 1e-12] {
        assert!(matches!(solver.step(&Control::new(), dt), Err(SolverError::InvalidTimeStep(_))), "{dt}");
    }
    let mut c = Control::new();
    c.pin(99);
    assert!(matches!(solver.step(&c, 0.01), Err(SolverError::InvalidPin { particle: 99, .. })));
    // The shortest step allowed runs.
    assert!(solver.step(&Control::new(), hooke::solver::MIN_FRAME_DT).is_ok());
    let bad = XpbdSettings { substeps: 0, ..XpbdSettings::default() };
    assert!(XpbdSolver::new(solver.model().clone(), bad).is_err());
}

/// A pin with a target moves its particle there by the end of the frame, linearly over the
/// substeps; releasing it frees the rope (only gravity changes its momentum).
#[test]
fn xpbd_moves_pins_to_their_targets_and_releases_them() {
    let model = rope_model(Vec3::new(0.0, -9.81, 0.0));
    let settings = XpbdSettings { air_damping: 0.0, ..XpbdSettings::default() };
    let mut solver = XpbdSolver::new(model, settings).unwrap();
    let mut c = Control::new();
    let target = Vec3::new(0.2, 0.3, -0.1);
    c.pin_to(0, target);
    solver.step(&c, 1.0 / 60.0).unwrap();
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    assert!((x[0] - target).length() < 1e-6, "{}", x[0]);
    // Held where it is from now on.
    c.pin(0);
    solver.step(&c, 1.0 / 60.0).unwrap();
    solver.read_positions(&mut x);
    assert!((x[0] - target).length() < 1e-6);
    // Released, the rope is free: whatever it does (it whips over, having been yanked at
    // 22 m/s), its momentum changes only by gravity's impulse M g Δt, and particle 0 leaves
    // the target.
    c.release_all();
    let momentum = |s: &mut XpbdSolver| -> Vec3 {
        let mut st = hooke::State::from_model(s.model());
        s.read_state(&mut st);
        st.particle_velocity.iter().zip(s.model().particle_mass()).map(|(v, &m)| *v * m).sum()
    };
    let before = momentum(&mut solver);
    for _ in 0..10 {
        solver.step(&c, 1.0 / 60.0).unwrap();
    }
    let change = momentum(&mut solver) - before;
    let impulse = Vec3::new(0.0, -9.81, 0.0) * solver.model().total_mass() as f32 * (10.0 / 60.0);
    solver.read_positions(&mut x);
    assert!(
        (change - impulse).length() < 0.01 * impulse.length(),
        "momentum changed by {change}, gravity gave {impulse}"
    );
    assert!((x[0] - target).length() > 0.01, "{}", x[0]);
}

/// The memory limit refuses a model before it is built: a 300² cloth, estimated at 400 bytes a
/// particle and 96 a constraint (about 96 MB; 100 MB measured at its peak), fits a 100 MB limit
/// and not a 90 MB one; the same cloth with a tear strain counts twice (a tear makes the torn
/// model beside the old one), so it no longer fits 100 MB but fits 200 MB.
#[test]
fn the_memory_limit_counts_what_a_cloth_and_its_tears_need() {
    let fits = |limit: u64, tear_strain: f32| {
        let mut b = ModelBuilder::new();
        b.set_memory_limit(limit);
        let mut g = hooke::ClothGrid::new("cloth", 300, 300, 0.01);
        g.material.tear_strain = tear_strain;
        match b.add_cloth_grid(&g) {
            Ok(_) => true,
            Err(hooke::ModelError::TooLarge { .. }) => false,
            Err(e) => panic!("{e}"),
        }
    };
    assert!(fits(100_000_000, f32::INFINITY) && !fits(90_000_000, f32::INFINITY));
    assert!(!fits(100_000_000, 0.5) && fits(200_000_000, 0.5));
}

/// A mesh with a vertex so far out that its size overflows f32 is refused naming that vertex
/// (every triangle's area test failed, and the first triangle was called degenerate, whether
/// or not it held the vertex); a mesh of sane size with a flat triangle is still refused as
/// degenerate.
#[test]
fn a_mesh_too_large_for_f32_names_the_vertex() {
    let far = |k: usize| {
        let mut x = vec![Vec3::ZERO, Vec3::X, Vec3::Z, Vec3::new(1.0, 0.0, 1.0), Vec3::new(2.0, 0.0, 0.0)];
        x[k] = Vec3::new(1e38, 0.0, 0.0);
        hooke::ClothMesh::new("m", x, vec![[0, 2, 1], [1, 2, 3], [1, 3, 4]])
    };
    let e = ModelBuilder::new().add_cloth_mesh(&far(4)).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("vertex 4") && e.contains("more than f32 can measure"), "{e}");
    let flat = hooke::ClothMesh::new("m", vec![Vec3::ZERO, Vec3::X, Vec3::new(2.0, 0.0, 0.0)], vec![[0, 1, 2]]);
    let e = ModelBuilder::new().add_cloth_mesh(&flat).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("triangle 0") && e.contains("degenerate"), "{e}");
}
