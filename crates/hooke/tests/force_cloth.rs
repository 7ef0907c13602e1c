//! The force-based solvers on cloth: the same static drape as XPBD, angular momentum of a
//! spinning cloth, pins, collisions, determinism of the parallel path, blow-up reports.

mod common;

use glam::{DVec3, Quat, Vec3};
use hooke::collision::{Collider, Shape};
use hooke::{
    ClothGrid, ClothMaterial, Control, ForceSettings, ForceSolver, Integrator, ModelBuilder, Solver, SolverError,
    State, XpbdSettings, XpbdSolver,
};
use std::sync::Arc;

/// A soft cloth (membrane modulus 20 N/m) so that its own weight stretches it visibly.
fn soft() -> ClothMaterial {
    ClothMaterial {
        areal_density: 0.2,
        stretch_stiffness: 20.0,
        compression_stiffness: 20.0,
        shear_stiffness: 20.0,
        bend_stiffness: 0.2,
        bending_modulus: 1e-5,
        damping: 0.01,
        thickness: 0.01,
        ..ClothMaterial::default()
    }
}

fn run_frames(solver: &mut dyn Solver, control: &Control, frames: usize, dt: f32) -> Vec<Vec3> {
    for _ in 0..frames {
        solver.step(control, dt).unwrap();
    }
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    x
}

fn max_difference(a: &[Vec3], b: &[Vec3]) -> f32 {
    a.iter().zip(b).map(|(p, q)| (*p - *q).length()).fold(0.0, f32::max)
}

/// A cloth pinned along its top edge settles to one static drape whichever solver finds it:
/// symplectic Euler at a small step, implicit Euler at a large step, and converged XPBD agree
/// to 2 % of the drape's own sag (the bottom edge's drop, 3.5 % of the cloth's size) at every
/// vertex — a solver 5 % too stiff or too soft would move the bottom row by more.
#[test]
fn force_and_xpbd_solvers_settle_to_the_same_drape() {
    let (n, size) = (11, 1.0f32);
    let (model, control) = common::hanging_cloth(n, size, soft());
    let seconds = 8.0f32;
    let symplectic = ForceSettings {
        integrator: Integrator::SymplecticEuler,
        substeps: 16,
        air_damping: 3.0,
        ..ForceSettings::default()
    };
    let mut s = ForceSolver::new(model.clone(), symplectic).unwrap();
    let xs = run_frames(&mut s, &control, (seconds * 60.0) as usize, 1.0 / 60.0);
    let implicit = ForceSettings {
        integrator: Integrator::ImplicitEuler,
        substeps: 1,
        air_damping: 3.0,
        ..ForceSettings::default()
    };
    let mut s = ForceSolver::new(model.clone(), implicit).unwrap();
    let xi = run_frames(&mut s, &control, (seconds * 20.0) as usize, 1.0 / 20.0);
    let xpbd = XpbdSettings { substeps: 20, iterations: 20, air_damping: 3.0, ..XpbdSettings::default() };
    let mut s = XpbdSolver::new(model.clone(), xpbd).unwrap();
    let xp = run_frames(&mut s, &control, (seconds * 60.0) as usize, 1.0 / 60.0);
    // The drape differs clearly from the rest shape: the bottom row dropped.
    let bottom = model.bodies()[0].grid_index(n - 1, n / 2).unwrap() as usize;
    let sag = model.particle_position()[bottom].y - xs[bottom].y;
    let (se_ie, se_xp, ie_xp) = (max_difference(&xs, &xi), max_difference(&xs, &xp), max_difference(&xi, &xp));
    println!(
        "drape of a {n}×{n} cloth of {size} m: bottom sag {:.2}% of its size; max vertex difference \
         symplectic–implicit {:.2e}%, symplectic–XPBD {:.2e}%, implicit–XPBD {:.2e}%",
        100.0 * sag / size,
        100.0 * se_ie / size,
        100.0 * se_xp / size,
        100.0 * ie_xp / size
    );
    assert!(sag > 0.03 * size, "sag {sag}");
    for d in [se_ie, se_xp, ie_xp] {
        assert!(d < 0.02 * sag, "vertices differ by {d} m, {:.1} % of the {sag} m sag", 100.0 * d / sag);
    }
}

/// Angular momentum L = Σ m x × v (kg·m²/s) in f64.
fn angular_momentum(model: &hooke::Model, s: &State) -> DVec3 {
    s.particle_position
        .iter()
        .zip(&s.particle_velocity)
        .zip(model.particle_mass())
        .map(|((x, v), &m)| x.as_dvec3().cross(v.as_dvec3()) * m as f64)
        .sum()
}

/// A free 10×10 cloth (k = 500 N/m, 10 g particles) at the origin, gravity off, with spring
/// damping time `damping` (s), and its state spinning rigidly at `omega` (rad/s).
fn spinning_cloth(damping: f32, omega: Vec3) -> (Arc<hooke::Model>, State) {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("spinner", 10, 10, 0.05);
    // Centred at the origin: f32 positions then carry the most digits of the lever arms.
    g.rotation = Quat::from_rotation_x(0.3);
    g.particle_mass = Some(0.01);
    g.material = ClothMaterial { damping, ..ClothMaterial::default() };
    g.spring_stiffness = Some(500.0);
    b.add_cloth_grid(&g).unwrap();
    b.set_gravity(Vec3::ZERO).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut state = State::from_model(&model);
    for (x, v) in state.particle_position.iter().zip(state.particle_velocity.iter_mut()) {
        *v = omega.cross(*x - g.center);
    }
    (model, state)
}

/// Runs 100 frames of 16 steps; returns the worst |L − L₀|/|L₀|, the final L, and the
/// relative change of kinetic energy.
fn spin(model: &Arc<hooke::Model>, state: &State, integrator: Integrator) -> (f64, DVec3, f64) {
    let settings = ForceSettings { integrator, substeps: 16, ..ForceSettings::default() };
    let mut solver = ForceSolver::new(model.clone(), settings).unwrap();
    solver.write_state(state).unwrap();
    let l0 = angular_momentum(model, state);
    let mut s = state.clone();
    let mut worst = 0.0f64;
    for _ in 0..100 {
        solver.step(&Control::new(), 1.0 / 60.0).unwrap();
        solver.read_state(&mut s);
        worst = worst.max((angular_momentum(model, &s) - l0).length() / l0.length());
    }
    let ke = |s: &State| -> f64 {
        s.particle_velocity
            .iter()
            .zip(model.particle_mass())
            .map(|(v, &m)| 0.5 * m as f64 * v.length_squared() as f64)
            .sum()
    };
    (worst, angular_momentum(model, &s), ke(&s) / ke(state) - 1.0)
}

/// Spring damping acts only along the springs (article §1.3), so a free cloth spinning rigidly
/// keeps its angular momentum however heavily its springs are damped. Symplectic Euler and
/// Verlet conserve L exactly in exact arithmetic (the forces are central): only f32 rounding
/// remains, under 1e-6 over 100 frames (1 600 steps).
///
/// Implicit Euler does lose some rotation, but not through the spring damping (its Jacobian
/// −k_d d̂d̂ᵀ is central too): the linearised stiffness term h²K v is not central for stretched
/// springs (the geometric stiffness k(1 − L₀/L)(I − d̂d̂ᵀ)), and with the centrifugal tension
/// it removes about (ω h)² of L per step — backward Euler's numerical damping. Switching the
/// spring damping off changes that loss only through the slightly different stretch it leaves
/// (by under 5 % of the loss).
#[test]
fn spring_damping_leaves_rigid_rotation_alone() {
    let omega = Vec3::new(0.5, 2.0, -1.0);
    // Heavily damped springs: τ = 1 ms, k_d = 0.5 N·s/m per spring.
    let (model, state) = spinning_cloth(1e-3, omega);
    for integrator in [Integrator::SymplecticEuler, Integrator::Verlet] {
        let (worst, _, ke) = spin(&model, &state, integrator);
        println!(
            "{integrator}: |ΔL|/|L| ≤ {worst:.2e} over 100 frames (1 600 steps), kinetic energy {:+.4}%",
            ke * 100.0
        );
        assert!(worst < 1e-6, "{integrator}: {worst}");
        assert!(ke.abs() < 1e-3, "{integrator}: kinetic energy {ke}");
    }
    let (undamped_model, _) = spinning_cloth(0.0, omega);
    let (worst, l_damped, ke) = spin(&model, &state, Integrator::ImplicitEuler);
    let (worst_undamped, l_undamped, _) = spin(&undamped_model, &state, Integrator::ImplicitEuler);
    let l0 = angular_momentum(&model, &state);
    let same = (l_damped - l_undamped).length() / l0.length();
    let steps = 1600.0;
    let h = 1.0 / 960.0f64;
    let expected = steps * (omega.length() as f64 * h).powi(2);
    println!(
        "implicit-euler: |ΔL|/|L| ≤ {worst:.2e} with spring damping, {worst_undamped:.2e} without (difference \
         {same:.2e}); 1 600·(ωh)² = {expected:.2e}; kinetic energy {:+.3}%",
        ke * 100.0
    );
    assert!(same < 0.05 * worst_undamped, "spring damping changed implicit Euler's rotation by {same}");
    assert!(worst < 2.0 * expected, "{worst} vs {expected}");
}

/// A pin with a target moves its particle there by the end of the frame under every force
/// integrator; releasing it lets the particle fall.
#[test]
fn force_solvers_move_pins_to_their_targets_and_release_them() {
    let (model, _) = common::hanging_cloth(6, 0.5, soft());
    for integrator in Integrator::ALL {
        let settings = ForceSettings { integrator, substeps: 16, ..ForceSettings::default() };
        let mut solver = ForceSolver::new(model.clone(), settings).unwrap();
        let mut c = Control::new();
        let target = Vec3::new(0.2, 0.3, -0.1);
        c.pin_to(0, target);
        for p in 1..6 {
            c.pin(p);
        }
        solver.step(&c, 1.0 / 60.0).unwrap();
        let mut x = Vec::new();
        solver.read_positions(&mut x);
        assert!((x[0] - target).length() < 1e-6, "{integrator}: {}", x[0]);
        c.pin(0);
        solver.step(&c, 1.0 / 60.0).unwrap();
        solver.read_positions(&mut x);
        assert!((x[0] - target).length() < 1e-6, "{integrator}: {}", x[0]);
        c.release_all();
        for _ in 0..10 {
            solver.step(&c, 1.0 / 60.0).unwrap();
        }
        solver.read_positions(&mut x);
        assert!(x[0].y < target.y - 0.01, "{integrator}: {}", x[0]);
    }
}

/// A cloth dropped on a sphere stays outside it (collisions run every step) under every
/// integrator, and comes to rest draped over it.
#[test]
fn force_solvers_drop_a_cloth_onto_a_sphere() {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("sheet", 12, 12, 0.05);
    g.center = Vec3::new(0.0, 0.5, 0.0);
    g.material = ClothMaterial {
        stretch_stiffness: 100.0,
        compression_stiffness: 10.0,
        shear_stiffness: 10.0,
        bend_stiffness: 0.1,
        damping: 1e-3,
        ..soft()
    };
    b.add_cloth_grid(&g).unwrap();
    b.add_collider(Collider::new("ball", Shape::Sphere { center: Vec3::ZERO, radius: 0.2 }).with_friction(0.5, 0.4))
        .unwrap();
    let model = Arc::new(b.finalize().unwrap());
    for integrator in [Integrator::SymplecticEuler, Integrator::Verlet, Integrator::ImplicitEuler] {
        let settings = ForceSettings { integrator, substeps: 32, air_damping: 1.0, ..ForceSettings::default() };
        let mut solver = ForceSolver::new(model.clone(), settings).unwrap();
        let mut contacts = 0;
        for _ in 0..90 {
            contacts = solver.step(&Control::new(), 1.0 / 60.0).unwrap().contacts;
        }
        let mut x = Vec::new();
        solver.read_positions(&mut x);
        let deepest = hooke::diagnostics::max_penetration(&model, &x, &[]);
        let top = x.iter().map(|p| p.y).fold(f32::MIN, f32::max);
        println!("{integrator}: {contacts} contacts, deepest penetration {deepest:.2e} m, top at {top:.3} m");
        assert!(contacts > 10, "{integrator}");
        assert!(deepest < 1e-3, "{integrator}: {deepest}");
        assert!(top > 0.19 && top < 0.25, "{integrator}: top {top}");
    }
}

/// Forces are gathered per particle and dot products summed in fixed chunks, so the parallel
/// path gives exactly the sequential result.
#[test]
fn force_solver_parallel_equals_sequential_bit_for_bit() {
    let (model, control) = common::hanging_cloth(72, 1.0, ClothMaterial { damping: 1e-4, ..soft() });
    assert!(model.particle_count() >= 4096 && model.distance().constraints().len() >= 4096);
    for (integrator, substeps, frames) in [(Integrator::SymplecticEuler, 64, 3), (Integrator::ImplicitEuler, 2, 3)] {
        let run = |parallel| {
            let settings = ForceSettings { integrator, substeps, parallel, ..ForceSettings::default() };
            let mut s = ForceSolver::new(model.clone(), settings).unwrap();
            let mut report = None;
            for _ in 0..frames {
                report = Some(s.step(&control, 1.0 / 60.0).unwrap());
            }
            let mut x = Vec::new();
            s.read_positions(&mut x);
            (x, report.unwrap())
        };
        let ((a, ra), (b, rb)) = (run(false), run(true));
        assert_eq!(ra, rb, "{integrator}");
        assert!(
            a.iter().zip(&b).all(|(p, q)| p.to_array().map(f32::to_bits) == q.to_array().map(f32::to_bits)),
            "{integrator}"
        );
        assert!(a.iter().zip(model.particle_position()).any(|(p, q)| (*p - *q).length() > 1e-4), "{integrator}");
    }
}

/// The stability limit of symplectic Euler, h < 2/ω_max (article §2.1), estimated by the
/// solver: a step 10 % under the estimate stays bounded for 2 s, one 40 % over it runs away
/// (with the check switched off) and is reported as a blow-up with the state kept at the start
/// of the frame; with the check on, a step far beyond it is refused before anything moves,
/// with a message that says how many substeps are needed.
#[test]
fn the_stability_limit_is_estimated_checked_and_real() {
    let (model, control) = common::hanging_cloth(10, 0.5, ClothMaterial::default());
    let frame = 1.0 / 60.0;
    let make = |substeps: u32, check_stability: bool| {
        let s = ForceSettings {
            integrator: Integrator::SymplecticEuler,
            substeps,
            check_stability,
            ..ForceSettings::default()
        };
        ForceSolver::new(model.clone(), s).unwrap()
    };
    let limit = make(1, true).stable_step();
    let stable = (frame as f64 / (0.9 * limit)).ceil() as u32;
    let unstable = ((frame as f64 / (1.4 * limit)).floor() as u32).max(1);
    println!("stability limit 2/ω_max = {limit:.4e} s: {stable} substeps stable, {unstable} unstable");

    // Refused up front, nothing moved.
    let mut solver = make(1, true);
    match solver.step(&control, frame) {
        Err(SolverError::InvalidSettings { setting: "substeps", message }) => {
            assert!(message.contains("unstable") && message.contains("substeps"), "{message}");
        }
        other => panic!("expected the step to be refused, got {other:?}"),
    }
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    assert_eq!(x, model.particle_position());

    // Under the limit: bounded.
    let mut solver = make(stable, true);
    for _ in 0..120 {
        solver.step(&control, frame).unwrap();
    }
    solver.read_positions(&mut x);
    let d = hooke::Diagnostics::measure(&model, &x, solver.velocities(), solver.time(), &[]);
    assert!(d.max_stretch_strain < 0.5 && d.max_speed < 5.0, "{d:?}");

    // Over it: runs away, reported with the state of the start of the failing frame.
    let mut solver = make(unstable, false);
    let mut failure = None;
    for _ in 0..120 {
        solver.read_positions(&mut x);
        let before = x.clone();
        if let Err(e) = solver.step(&control, frame) {
            solver.read_positions(&mut x);
            assert_eq!(x, before);
            failure = Some(e);
            break;
        }
    }
    match failure.expect("symplectic Euler 40 % over its stability limit should run away") {
        SolverError::BlowUp { particle, detail, .. } => {
            println!("symplectic Euler at 1.4 × its limit stopped at t = {:.3} s: {detail}", solver.time());
            assert!((particle as usize) < model.particle_count());
        }
        e => panic!("unexpected {e}"),
    }
}

/// Two free particles on a spring: ω² = k(1/m₁ + 1/m₂) exactly, so the estimated limit is
/// 2/ω to 1e-6 without damping, and √(τ² + (2/ω)²) − τ with the spring's damping τ. That
/// damped limit is real: at τ = 0.1 s (the undamped limit is 0.141 s) symplectic Euler 10 %
/// under it lets the spring's 1 cm stretch decay, and 15 % over it — still under 2/ω, where
/// the check stood before it took damping in — lets it grow tenfold within 200 steps.
#[test]
fn the_stability_limit_of_one_spring_is_two_over_omega_less_for_damping() {
    let model = |damping: f32| {
        let mut b = hooke::ModelBuilder::new();
        b.set_gravity(glam::Vec3::ZERO).unwrap();
        let rope = hooke::Rope {
            name: "pair".into(),
            points: vec![glam::Vec3::ZERO, glam::Vec3::new(0.3, 0.4, 0.0)],
            particles: 2,
            material: hooke::RopeMaterial {
                stretch_stiffness: 40.0,
                compression_stiffness: 40.0,
                damping,
                ..Default::default()
            },
            bending: hooke::Bending::None,
            particle_mass: None,
        };
        b.add_rope(&rope).unwrap();
        b.set_particle_mass(0, 2.0).unwrap();
        b.set_particle_mass(1, 0.5).unwrap();
        std::sync::Arc::new(b.finalize().unwrap())
    };
    let k = 40.0 / 0.5; // EA / L
    let omega = (k * (1.0 / 2.0 + 1.0 / 0.5f64)).sqrt();
    let limit = ForceSolver::new(model(0.0), ForceSettings::default()).unwrap().stable_step();
    assert!((limit * omega / 2.0 - 1.0).abs() < 1e-6, "limit {limit} s vs 2/ω = {} s", 2.0 / omega);
    let tau = 0.1f64;
    let damped = ForceSolver::new(model(tau as f32), ForceSettings::default()).unwrap().stable_step();
    let want = (tau * tau + 4.0 / (omega * omega)).sqrt() - tau;
    assert!((damped / want - 1.0).abs() < 1e-6, "damped limit {damped} s vs {want} s");
    // The spring stretched by 1 cm and let go, 200 steps of h: the largest stretch after them.
    let run = |h: f64| {
        let m = model(tau as f32);
        let s = ForceSettings {
            integrator: Integrator::SymplecticEuler,
            substeps: 1,
            check_stability: false,
            ..ForceSettings::default()
        };
        let mut solver = ForceSolver::new(m.clone(), s).unwrap();
        let mut st = hooke::State::from_model(&m);
        st.particle_position[1] *= 1.02;
        solver.write_state(&st).unwrap();
        let control = hooke::Control::new();
        let mut x = Vec::new();
        let mut worst = 0.0f32;
        for _ in 0..200 {
            if solver.step(&control, h as f32).is_err() {
                return f32::INFINITY;
            }
            solver.read_positions(&mut x);
            worst = worst.max(((x[1] - x[0]).length() - 0.5).abs());
        }
        worst
    };
    let (under, over) = (run(0.9 * damped), run(1.15 * damped));
    println!(
        "τ = {tau} s: limit {damped:.4} s (2/ω = {limit:.4} s); largest stretch {under} m at 0.9×, {over} m at 1.15×"
    );
    assert!(1.15 * damped < limit, "the test's step must lie under the undamped limit");
    // (From 1 cm: at 0.9× it decays; at 1.15× it grows about 2 % a step.)
    assert!(under < 0.01 && over > 0.1, "{under} m at 0.9 × the limit, {over} m at 1.15 ×");
}
