//! The time per stage ([`Solver::measure_stages`], [`Solver::take_stage_times`]): each stage a
//! solver runs is charged, the ones it does not run are not, the stages add up to the frame's
//! wall time, and measuring changes no result.

use glam::{Quat, Vec3};
use hooke::collision::{Collider, Shape};
use hooke::{
    ClothGrid, Control, ForceSettings, ForceSolver, Integrator, Model, ModelBuilder, Solver, Stage, XpbdSettings,
    XpbdSolver,
};
use std::sync::Arc;
use std::time::Instant;

/// A 48×48 cloth of 2.5 cm cells hanging from its top edge just behind a sphere, so the
/// colliders stage has work; no air.
fn hanging_cloth() -> (Arc<Model>, Control) {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 48, 48, 0.025);
    g.rotation = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    let cloth = b.add_cloth_grid(&g).unwrap();
    b.add_collider(Collider::new("sphere", Shape::Sphere { center: Vec3::new(0.0, 0.8, 0.2), radius: 0.25 })).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    for c in 0..48 {
        control.pin(model.bodies()[cloth.0].grid_index(0, c).unwrap());
    }
    (model, control)
}

/// Runs `frames` frames; returns the wall time of the `step` calls (s) and the positions.
fn run(solver: &mut dyn Solver, control: &Control, frames: usize) -> (f64, Vec<Vec3>) {
    let t = Instant::now();
    for _ in 0..frames {
        solver.step(control, 1.0 / 60.0).unwrap();
    }
    let wall = t.elapsed().as_secs_f64();
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    (wall, x)
}

/// XPBD on the CPU: every stage it runs is charged (aerodynamics, with no air, exactly
/// nothing), the constraint stage of 8 iterations costs more than the prediction, the stages
/// and `other` add up to between 90 % and 100 % of the wall time of the `step` calls, the
/// counts are those of the frames run, and the positions are bit-identical to an unmeasured
/// run. A second `take` with no frame in between has nothing.
#[test]
fn xpbd_stage_times_add_up_to_the_frame() {
    let (model, control) = hanging_cloth();
    let s = XpbdSettings { substeps: 20, iterations: 8, parallel: false, tethers: false, ..XpbdSettings::default() };
    let mut plain = XpbdSolver::new(model.clone(), s).unwrap();
    let mut timed = XpbdSolver::new(model.clone(), s).unwrap();
    // Warm the caches and the sphere contact.
    run(&mut plain, &control, 10);
    run(&mut timed, &control, 10);
    assert!(timed.measure_stages(true));
    assert!(timed.take_stage_times().is_none(), "nothing measured yet");
    let (wall, x) = run(&mut timed, &control, 5);
    let (_, y) = run(&mut plain, &control, 5);
    assert_eq!(x, y, "measuring changed the result");
    let t = timed.take_stage_times().expect("five frames measured");
    println!("{t:?} against {wall:.6} s of wall time");
    assert_eq!((t.frames, t.substeps), (5, 100));
    assert_eq!(t.of(Stage::Aerodynamics), 0.0, "no air, no aerodynamics");
    for stage in [Stage::Predict, Stage::Constraints, Stage::Contacts, Stage::Colliders, Stage::Finish] {
        assert!(t.of(stage) > 0.0, "{} not charged", stage.name());
    }
    assert!(t.of(Stage::Constraints) > t.of(Stage::Predict), "{t:?}");
    assert!(t.total() <= wall && t.total() >= 0.9 * wall, "stages {:.6} s of {wall:.6} s", t.total());
    assert!(timed.take_stage_times().is_none(), "taken already");
    assert!(timed.measure_stages(false));
    run(&mut timed, &control, 1);
    assert!(timed.take_stage_times().is_none(), "not measuring");
}

/// Implicit Euler measures its stages (no constraint stage: springs are in its linear
/// system, charged to the prediction with the solve, which costs most); the explicit
/// integrators, whose stages are fused in one pass, say they cannot.
#[test]
fn implicit_euler_measures_its_stages_and_explicit_integrators_do_not() {
    let (model, control) = hanging_cloth();
    let implicit = ForceSettings { integrator: Integrator::ImplicitEuler, substeps: 10, ..ForceSettings::default() };
    let mut solver = ForceSolver::new(model.clone(), implicit).unwrap();
    assert!(solver.measure_stages(true));
    let (wall, _) = run(&mut solver, &control, 3);
    let t = solver.take_stage_times().unwrap();
    println!("{t:?} against {wall:.6} s");
    assert_eq!((t.frames, t.substeps), (3, 30));
    assert_eq!(t.of(Stage::Constraints), 0.0);
    assert!(t.of(Stage::Predict) > t.of(Stage::Colliders) && t.of(Stage::Colliders) > 0.0, "{t:?}");
    assert!(t.total() <= wall && t.total() >= 0.9 * wall, "stages {:.6} s of {wall:.6} s", t.total());
    let explicit = ForceSettings { integrator: Integrator::SymplecticEuler, ..ForceSettings::default() };
    let mut solver = ForceSolver::new(model, explicit).unwrap();
    assert!(!solver.measure_stages(true));
    assert!(solver.take_stage_times().is_none());
}
