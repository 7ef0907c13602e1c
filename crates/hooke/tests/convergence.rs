//! The convergence monitor (issue #9 item 4): the residual stretch strain |C + α̃λ|/L₀ that
//! XPBD's Gauss–Seidel iterations leave, what it means, and who reports it.

mod common;

use glam::Vec3;
use hooke::diagnostics::{BodyConvergence, ConstraintResiduals, pinned_particles};
use hooke::{
    Bending, ClothMaterial, ConstraintFamily, Control, ForceSettings, ForceSolver, Integrator, Method, ModelBuilder,
    Rope, Solver, State, XpbdSettings, XpbdSolver,
};
use std::sync::Arc;

/// A stiff rope with a heavy end hanging at rest after one Gauss–Seidel iteration per substep
/// (the rope solved by Gauss–Seidel, not the direct rope solver; no tethers):
/// the constraint forces balance the weight below each segment exactly (the state repeats
/// substep after substep), so the physical strain of segment j is g·M_j·α_j/L₀ with M_j the
/// mass below it, and the residual must be the measured strain minus that — for every
/// segment. Computing the residual as the plain strain |C|/L₀ (dropping α̃λ) misses by the
/// physical strain (1.1 %, over 10 % of the excess), and taking α from the wrong side or from
/// another substep's h misses by far more.
///
/// And by hand, what one iteration leaves: the rope's segments come in two colours. A segment
/// of the colour projected last is projected once from λ = 0 and nothing moves its particles
/// after it, so its residual is 0. A segment s of the first colour was solved exactly too, but
/// then each neighbour n (of the last colour) moved the particle p they share by wₚ·λₙ along
/// the rope, with λₙ = h²Tₙ (its tension Tₙ = g·Mₙ at rest); so s is left stretched by
/// r_s = h² Σₙ wₚ g Mₙ beyond its equation.
#[test]
fn residual_of_a_rope_at_rest_is_its_strain_beyond_the_physical_one() {
    let n = 21;
    let mut b = ModelBuilder::new();
    let mut rope = Rope::straight("rope", Vec3::ZERO, Vec3::new(0.0, -1.0, 0.0), n);
    rope.material.stretch_stiffness = 1.0e3; // EA (N)
    rope.material.compression_stiffness = 1.0e3;
    rope.material.damping = 0.0;
    rope.bending = Bending::None;
    let id = b.add_rope(&rope).unwrap();
    let particles = b.body(id).particles.clone();
    b.set_particle_mass(particles.end - 1, 1.0).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(particles.start);
    // Gauss–Seidel for the rope and no tethers: the direct rope solver and the tethers would
    // leave nothing to measure.
    let settings = XpbdSettings {
        air_damping: 5.0,
        parallel: false,
        rope_solver: hooke::RopeSolver::GaussSeidel,
        tethers: false,
        ..XpbdSettings::default()
    };
    let mut solver = XpbdSolver::new(model.clone(), settings).unwrap();
    for _ in 0..600 {
        solver.step(&control, 1.0 / 60.0).unwrap();
    }
    let mut state = State::from_model(&model);
    solver.read_state(&mut state);
    let speed = state.particle_velocity.iter().map(|v| v.length()).fold(0.0, f32::max);
    assert!(speed < 1e-4, "not at rest: {speed} m/s");
    let mut r = ConstraintResiduals::default();
    assert!(solver.constraint_residuals(&mut r));
    let g = model.gravity().length();
    let x = &state.particle_position;
    let mut worst_excess = 0.0f32;
    eprintln!("segment  strain    physical  excess    residual");
    for (k, c) in model.distance().constraints().iter().enumerate() {
        assert_eq!(model.distance().families()[k], ConstraintFamily::Structural);
        let below = c.i.max(c.j) as usize;
        let mass: f32 = model.particle_mass()[below..particles.end as usize].iter().sum();
        let physical = g * mass * c.compliance_stretch / c.rest_length;
        let strain = ((x[c.i as usize] - x[c.j as usize]).length() - c.rest_length) / c.rest_length;
        let excess = strain - physical;
        eprintln!("{:>7}  {strain:.6}  {physical:.6}  {excess:.6}  {:.6}", c.i.min(c.j), r.strain[k]);
        assert!(!r.compliance_dominated[k], "segment {k} is stiffness-dominated");
        assert!(
            (r.strain[k] - excess).abs() <= 0.01 * excess.abs() + 2e-5,
            "segment {k}: residual {} vs strain {strain} − physical {physical}",
            r.strain[k]
        );
        worst_excess = worst_excess.max(excess);
    }
    // The case is one the monitor must catch: one iteration leaves more than 2 % beyond the
    // 1 % the load explains.
    assert!(worst_excess > 0.02, "{worst_excess}");

    // By hand (see above).
    let set = model.distance();
    let last = set.colour_ranges().last().unwrap().clone();
    let h = 1.0 / (60.0 * settings.substeps as f32);
    let mass_below = |c: &hooke::DistanceConstraint| -> f32 {
        model.particle_mass()[c.i.max(c.j) as usize..particles.end as usize].iter().sum()
    };
    for (k, c) in set.constraints().iter().enumerate() {
        let expected = if last.contains(&(k as u32)) {
            0.0
        } else {
            let mut stretch = 0.0;
            for n in set.constraints() {
                for p in [c.i, c.j] {
                    if n != c && (n.i == p || n.j == p) && !control.pins.iter().any(|q| q.particle == p) {
                        stretch += h * h * model.particle_inv_mass()[p as usize] * g * mass_below(n);
                    }
                }
            }
            stretch / c.rest_length
        };
        eprintln!("segment {:>2}: residual {:.6}, by hand {expected:.6}", c.i.min(c.j), r.strain[k]);
        assert!((r.strain[k] - expected).abs() <= 0.01 * expected + 2e-5, "segment {k}");
    }
}

/// A soft sheet (K = 20 N/m) hangs with a large, physical strain: every structural constraint
/// is compliance-dominated (α̃ ≫ wᵢ + wⱼ) and its residual is a small fraction of the strain.
/// Reporting the plain strain |C|/L₀ as the residual fails here.
#[test]
fn a_soft_sheet_strain_is_not_reported_as_a_residual() {
    let material = ClothMaterial {
        areal_density: 0.15,
        stretch_stiffness: 20.0,
        compression_stiffness: 20.0,
        shear_stiffness: 20.0,
        ..ClothMaterial::default()
    };
    let (model, control) = common::hanging_cloth(20, 1.0, material);
    let settings = XpbdSettings { air_damping: 2.0, parallel: false, ..XpbdSettings::default() };
    let mut solver = common::run(&model, &control, settings, 180, 60.0);
    let mut r = ConstraintResiduals::default();
    assert!(solver.constraint_residuals(&mut r));
    let (mut x, mut pinned, mut bodies) = (Vec::new(), Vec::new(), Vec::new());
    solver.read_positions(&mut x);
    pinned_particles(&model, &control, &mut pinned);
    BodyConvergence::measure(&model, &x, &pinned, Some(&r), &mut bodies);
    let b = bodies[0];
    eprintln!("soft sheet: {b:?}");
    assert!(b.strain > 0.05, "the sheet should stretch physically: {b:?}");
    assert!(b.residual_stiff.is_nan(), "no stiffness-dominated constraint: {b:?}");
    assert!(b.residual_compliant < 0.1 * b.strain, "{b:?}");
    assert!(b.residual() < 0.02, "{b:?}");
}

/// Who reports a residual: XPBD after a frame; not before the first frame, not after a state
/// is written or the model changed, not PBD (no λ) and not the force-based integrators.
#[test]
fn only_xpbd_after_a_frame_reports_a_residual() {
    let (model, control) = common::hanging_cloth(6, 0.5, ClothMaterial::default());
    let mut r = ConstraintResiduals { strain: vec![1.0], compliance_dominated: vec![true] };
    let mut xpbd = XpbdSolver::new(model.clone(), XpbdSettings::default()).unwrap();
    assert!(!xpbd.constraint_residuals(&mut r) && r.strain.is_empty());
    xpbd.step(&control, 1.0 / 60.0).unwrap();
    assert!(xpbd.constraint_residuals(&mut r));
    assert_eq!(r.strain.len(), model.distance().len());
    assert_eq!(r.compliance_dominated.len(), model.distance().len());
    let mut state = State::from_model(&model);
    xpbd.read_state(&mut state);
    xpbd.write_state(&state).unwrap();
    assert!(!xpbd.constraint_residuals(&mut r));
    xpbd.step(&control, 1.0 / 60.0).unwrap();
    xpbd.notify_model_changed(model.clone()).unwrap();
    assert!(!xpbd.constraint_residuals(&mut r));

    let pbd = XpbdSettings { method: Method::Pbd { stiffness: 1.0 }, ..XpbdSettings::default() };
    let mut pbd = XpbdSolver::new(model.clone(), pbd).unwrap();
    pbd.step(&control, 1.0 / 60.0).unwrap();
    assert!(!pbd.constraint_residuals(&mut r));

    let implicit = ForceSettings { integrator: Integrator::ImplicitEuler, ..ForceSettings::default() };
    let mut force = ForceSolver::new(model.clone(), implicit).unwrap();
    force.step(&control, 1.0 / 60.0).unwrap();
    assert!(!force.constraint_residuals(&mut r) && r.strain.is_empty());
    // The strains are still measured, the residuals are NaN.
    let (mut x, mut pinned, mut bodies) = (Vec::new(), Vec::new(), Vec::new());
    force.read_positions(&mut x);
    pinned_particles(&model, &control, &mut pinned);
    BodyConvergence::measure(&model, &x, &pinned, None, &mut bodies);
    assert!(bodies[0].strain.is_finite() && bodies[0].strain_at_pins.is_finite());
    assert!(bodies[0].residual().is_nan() && bodies[0].residual_at_pins.is_nan());
}

/// `iterations = "auto"` (issue #9 item 5): a 1 m sheet of K = 1e4 N/m and 0.15 kg/m², 20×20,
/// hung by its two top corners without tethers, at 20 substeps. One iteration per substep
/// leaves a residual stretch strain over 2 % in its first second; iterating to 1 % keeps the
/// monitored residual under 1.5 % in every frame, with a few iterations per substep on average
/// and never more than the cap; a tolerance the first iteration meets stops at one iteration,
/// bit for bit the fixed-count run.
#[test]
fn auto_iterations_reach_the_tolerance() {
    let (model, control) = common::stiff_sheet_by_two_corners();
    // (largest monitored residual over the frames, most iterations in a substep, mean, positions)
    let run = |auto: Option<hooke::AutoIterations>| {
        let settings = XpbdSettings { tethers: false, auto_iterations: auto, ..XpbdSettings::default() };
        let mut solver = XpbdSolver::new(model.clone(), settings).unwrap();
        let (mut worst, mut most, mut total, mut substeps) = (0.0f32, 0u32, 0u32, 0u32);
        let (mut r, mut x, mut pinned, mut bodies) =
            (ConstraintResiduals::default(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..60 {
            let report = solver.step(&control, 1.0 / 60.0).unwrap();
            most = most.max(report.iterations);
            total += report.total_iterations;
            substeps += report.substeps;
            assert!(solver.constraint_residuals(&mut r));
            solver.read_positions(&mut x);
            pinned_particles(&model, &control, &mut pinned);
            BodyConvergence::measure(&model, &x, &pinned, Some(&r), &mut bodies);
            worst = worst.max(bodies[0].residual());
        }
        (worst, most, total as f32 / substeps as f32, x)
    };
    let (fixed, one, _, x_fixed) = run(None);
    let cap = 40;
    let (auto, most, mean, _) = run(Some(hooke::AutoIterations { tolerance: 0.01, max_iterations: cap }));
    let (_, loose_most, _, x_loose) = run(Some(hooke::AutoIterations { tolerance: 10.0, max_iterations: cap }));
    eprintln!(
        "1 iteration: residual up to {fixed:.4}; to 1 %: {auto:.4} with {mean:.2} iterations per substep (at most {most})"
    );
    assert_eq!(one, 1);
    assert!(fixed > 0.02, "the fixed count converged already ({fixed}): the test would prove nothing");
    assert!(auto < 0.015, "iterating to 1 % left {auto}");
    assert!(mean > 1.5 && most <= cap, "{mean} on average, at most {most}");
    assert_eq!(loose_most, 1);
    assert!(x_loose == x_fixed, "one iteration to a loose tolerance differs from the fixed count");
}

/// Iterating to a tolerance projects the colliders inside the iterations: a 20 × 20 velvet
/// (K = 4000 N/m, soft in compression and shear) dropped onto a box tilted 20° keeps the
/// monitored residual at the 1 % tolerance in every frame as it lands, with no particle
/// inside the box. Projected only after the last iteration (the colliders stage alone), the
/// box stretched the cloth the iterations had converged: 4.7 % in the landing frame.
#[test]
fn iterations_to_a_tolerance_see_the_colliders() {
    let scene = common::VelvetOnTiltedBox::new();
    let model = scene.model.clone();
    let auto = hooke::AutoIterations { tolerance: 0.01, max_iterations: 50 };
    let settings = XpbdSettings { auto_iterations: Some(auto), ..XpbdSettings::default() };
    let mut solver = XpbdSolver::new(model.clone(), settings).unwrap();
    let control = Control::new();
    let (mut r, mut x, mut pinned, mut bodies) = (ConstraintResiduals::default(), Vec::new(), Vec::new(), Vec::new());
    let (mut worst, mut landed, mut deepest) = (0.0f32, false, 0.0f32);
    for _ in 0..60 {
        let report = solver.step(&control, 1.0 / 60.0).unwrap();
        landed |= report.contacts > 0;
        assert!(solver.constraint_residuals(&mut r));
        solver.read_positions(&mut x);
        pinned_particles(&model, &control, &mut pinned);
        BodyConvergence::measure(&model, &x, &pinned, Some(&r), &mut bodies);
        worst = worst.max(bodies[0].residual());
        deepest = deepest.max(scene.deepest(&x));
    }
    eprintln!("velvet onto a tilted box, iterations to 1 %: residual up to {worst:.4}, deepest {deepest:.2e} m");
    assert!(landed, "the cloth never reached the box: the test would prove nothing");
    assert!(worst < 0.012, "the residual reached {worst} in the landing");
    assert!(deepest < 1e-4, "a particle went {deepest} m into the box");
}

/// Iterating to a tolerance resolves the particle contacts (self-collision) between the
/// iterations too, as it projects the colliders: a cloth dropped onto a net held by its
/// corners keeps its monitored residual within 1.5 % in every frame of its landings (0.94 %
/// measured). With the contacts stage alone after the last iteration, the pushes between the
/// layers stretch what the iterations converged: 2.7 %.
#[test]
fn iterations_to_a_tolerance_see_the_particle_contacts() {
    let make: common::contact_cases::Make =
        &|model, settings| Box::new(XpbdSolver::new(model.clone(), settings).unwrap());
    let worst = common::contact_cases::drop_onto_net(32, 50, make);
    eprintln!("cloth onto a net, iterations to 1 %: the dropped cloth's residual up to {worst:.4}");
    assert!(worst < 0.015, "the dropped cloth's residual reached {worst}");
}

/// Axial damping and convergence (docs/BENCHMARKS.md, "Axial damping and convergence"). XPBD's
/// damped update (Macklin et al. 2016, eq. 26) solves C + α̃λ + γ(C − C(x⁰)) = 0 with
/// γ = τ/h: the dashpot takes the error that the previous substep's iterations left in C(x⁰)
/// for strain and relaxes it over τ, closing only 1/(1 + γ) of it per substep, so at a fixed
/// iteration count the residual settles at about (1 + γ) × the undamped one — the factor the
/// run summary's advice prints. A 21 × 21 sheet of K = 10⁴ N/m in stretch, compression and
/// shear, 0.15 kg/m², hung from its top row without tethers at one iteration per substep: after
/// 1.5 s its residual with τ = 10⁻³ s over that without damping is 1 + τ/h within 10 % at 20
/// and at 40 substeps (2.2 and 3.4; measured 2.21 and 3.43 when written). A damping that did not
/// hold the error back would give 1; one that weighed each correction by 1/(1 + γ) without
/// retaining the error, about 1 at the fixed point too.
#[test]
fn axial_damping_multiplies_the_residual_by_one_plus_tau_over_h() {
    let residual = |tau: f32, substeps: u32| {
        let material = ClothMaterial {
            areal_density: 0.15,
            stretch_stiffness: 1e4,
            compression_stiffness: 1e4,
            shear_stiffness: 1e4,
            damping: tau,
            ..ClothMaterial::default()
        };
        let (model, control) = common::hanging_cloth(21, 1.0, material);
        let settings =
            XpbdSettings { substeps, iterations: 1, tethers: false, parallel: false, ..XpbdSettings::default() };
        let mut solver = common::run(&model, &control, settings, 90, 60.0);
        let (mut r, mut x, mut pinned, mut bodies) =
            (ConstraintResiduals::default(), Vec::new(), Vec::new(), Vec::new());
        assert!(solver.constraint_residuals(&mut r));
        solver.read_positions(&mut x);
        pinned_particles(&model, &control, &mut pinned);
        BodyConvergence::measure(&model, &x, &pinned, Some(&r), &mut bodies);
        bodies[0].residual()
    };
    let tau = 1e-3;
    for substeps in [20, 40] {
        let gamma = tau * 60.0 * substeps as f32;
        let (undamped, damped) = (residual(0.0, substeps), residual(tau, substeps));
        let ratio = damped / undamped;
        eprintln!(
            "{substeps} × 1: residual {undamped:.5} undamped, {damped:.5} at τ = {tau} s; ratio {ratio:.3}, 1 + τ/h = {:.2}",
            1.0 + gamma
        );
        assert!(undamped > 1e-4, "the undamped sheet converged fully ({undamped}): the ratio would mean nothing");
        assert!(
            (ratio / (1.0 + gamma) - 1.0).abs() < 0.1,
            "{substeps} substeps: ratio {ratio}, 1 + τ/h = {}",
            1.0 + gamma
        );
    }
}
