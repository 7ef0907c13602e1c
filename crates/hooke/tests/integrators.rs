//! The force-based integrators on a single spring (article §2.1–2.3): forward Euler's exact
//! amplification, symplectic Euler's and Verlet's lack of drift, implicit Euler's stability at
//! ωΔt = 100, and the CG residual of implicit Euler on cloth.
//!
//! Rule-level tests run the integrators' update functions in `f64`; solver-level tests run the
//! real `ForceSolver` (state in `f32`) on a two-particle model: particle 0 pinned at the
//! origin, particle 1 of mass m on a spring of stiffness k along x, gravity off.

mod common;

use glam::Vec3;
use glam::{DMat3, DVec3};
use hooke::solver::{forward_euler, symplectic_euler, verlet};
use hooke::{
    ClothMaterial, Control, ForceSettings, ForceSolver, Integrator, ModelBuilder, Rope, RopeMaterial, Solver,
    SolverError, State,
};
use std::sync::Arc;

const REST: f32 = 1.0;
const AMPLITUDE: f32 = 0.1;

/// A pinned particle and a mass `m` (kg) on a spring of stiffness `k` (N/m), undamped.
fn spring_pair(k: f32, m: f32) -> (Arc<hooke::Model>, Control) {
    let mut rope = Rope::straight("spring", Vec3::ZERO, Vec3::X * REST, 2);
    rope.bending = hooke::Bending::None;
    rope.material = RopeMaterial {
        stretch_stiffness: k * REST, // k = EA/L
        compression_stiffness: k * REST,
        damping: 0.0,
        ..RopeMaterial::default()
    };
    let mut b = ModelBuilder::new();
    b.add_rope(&rope).unwrap();
    b.set_gravity(Vec3::ZERO).unwrap();
    b.set_particle_mass(1, m).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(0);
    (model, control)
}

/// A solver on `spring_pair` with the mass displaced by AMPLITUDE, at rest, one substep per step.
fn oscillator(integrator: Integrator, k: f32, m: f32) -> (ForceSolver, Control) {
    let (model, control) = spring_pair(k, m);
    let settings = ForceSettings { integrator, substeps: 1, ..ForceSettings::default() };
    let mut solver = ForceSolver::new(model.clone(), settings).unwrap();
    let mut state = State::from_model(&model);
    state.particle_position[1].x += AMPLITUDE;
    solver.write_state(&state).unwrap();
    (solver, control)
}

/// Energy ½mv² + ½k(L − L₀)² (J) of the oscillator, in f64.
fn energy(solver: &mut ForceSolver, k: f32, m: f32) -> f64 {
    let mut s = State::from_model(solver.model());
    solver.read_state(&mut s);
    let stretch = ((s.particle_position[1] - s.particle_position[0]).length() - REST) as f64;
    0.5 * m as f64 * (s.particle_velocity[1].length_squared() as f64) + 0.5 * k as f64 * stretch * stretch
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Article §2.1: forward Euler on x'' = −ω²x multiplies the amplitude √(x² + (v/ω)²) by exactly
/// √(1 + (ωΔt)²) per step. The rule is `forward_euler::step`, the one the solver runs.
#[test]
fn forward_euler_amplifies_by_the_exact_factor() {
    for (omega, dt) in [(10.0f64, 0.001), (10.0, 0.01), (3.0, 0.2), (1.0, 1.5)] {
        let factor = (1.0 + (omega * dt).powi(2)).sqrt();
        let (mut x, mut v) = (1.0f64, 0.0f64);
        let mut worst = 0.0f64;
        for _ in 0..200 {
            let before = (x * x + (v / omega).powi(2)).sqrt();
            let (dx, v1) = forward_euler::step(v, -omega * omega * x, dt, 1.0);
            x += dx;
            v = v1;
            let after = (x * x + (v / omega).powi(2)).sqrt();
            worst = worst.max((after / before / factor - 1.0).abs());
        }
        println!("ωΔt = {:5.3}: factor {factor:.9}, worst relative deviation {worst:.2e}", omega * dt);
        assert!(worst < 1e-9, "ωΔt = {}: {worst}", omega * dt);
    }
}

/// The article's demonstration (x₀ = 1, v₀ = 0, 200 steps): forward Euler's amplitude grows
/// as (1 + (ωΔt)²)^{n/2}; Verlet's stays within its O(ωΔt) band around 1.
#[test]
fn article_oscillator_comparison_forward_euler_vs_verlet() {
    let (omega, dt) = (2.0f64, 0.1);
    let (mut xe, mut ve) = (1.0f64, 0.0f64);
    let (mut xv, mut dv) = (1.0f64, 0.0f64);
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for _ in 0..200 {
        let (dx, v1) = forward_euler::step(ve, -omega * omega * xe, dt, 1.0);
        xe += dx;
        ve = v1;
        dv = verlet::step(dv, -omega * omega * xv, dt, 1.0);
        xv += dv;
        let amp = (xv * xv + (verlet::velocity(dv, 1.0 / dt) / omega).powi(2)).sqrt();
        (lo, hi) = (lo.min(amp), hi.max(amp));
    }
    let euler = (xe * xe + (ve / omega).powi(2)).sqrt();
    let expected = (1.0 + (omega * dt).powi(2)).powi(100);
    println!(
        "after 200 steps at ωΔt = 0.2: forward Euler amplitude {euler:.4} (theory {expected:.4}), Verlet in [{lo:.4}, {hi:.4}]"
    );
    assert!((euler / expected - 1.0).abs() < 1e-9);
    assert!(lo > 1.0 - omega * dt && hi < 1.0 + omega * dt, "Verlet amplitude in [{lo}, {hi}]");
}

/// Mean energy of the last 1 000 of 10 000 steps against the first 1 000, and the relative
/// peak-to-peak oscillation, for an `f64` rule.
fn rule_drift(step: impl Fn(f64, f64, f64) -> (f64, f64), omega: f64) -> (f64, f64) {
    let (mut x, mut v) = (1.0f64, 0.0f64);
    let mut e = Vec::with_capacity(10_000);
    for _ in 0..10_000 {
        (x, v) = step(x, v, -omega * omega * x);
        e.push(0.5 * v * v + 0.5 * omega * omega * x * x);
    }
    let (lo, hi) = e.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &e| (l.min(e), h.max(e)));
    (mean(&e[9000..]) / mean(&e[..1000]) - 1.0, (hi - lo) / mean(&e))
}

/// Symplectic Euler and Verlet rules (f64): no drift over 10 000 steps, oscillation O(ωΔt).
#[test]
fn symplectic_rules_do_not_drift() {
    let (omega, dt) = (10.0f64, 0.01);
    let symplectic = |x: f64, v: f64, a: f64| {
        let (dx, v1) = symplectic_euler::step(v, a, dt, 1.0);
        (x + dx, v1)
    };
    // Verlet carries d = v·Δt as its state.
    let verlet_rule = |x: f64, v: f64, a: f64| {
        let d = verlet::step(v * dt, a, dt, 1.0);
        (x + d, verlet::velocity(d, 1.0 / dt))
    };
    for (name, (drift, osc)) in
        [("symplectic Euler", rule_drift(symplectic, omega)), ("Verlet", rule_drift(verlet_rule, omega))]
    {
        println!("{name} (f64, ωΔt = 0.1): drift {:.4}%, peak-to-peak {:.4} (ωΔt = 0.1)", drift * 100.0, osc);
        assert!(drift.abs() < 0.01, "{name}: drift {drift}");
        assert!(osc > 0.5 * omega * dt && osc < 1.5 * omega * dt, "{name}: oscillation {osc}");
    }
}

/// The real solver (f32 state) on the spring: symplectic Euler and Verlet keep the energy over
/// 10 000 steps at ωΔt = 0.1; forward Euler at the same step gains energy by 1 + (ωΔt)² per
/// step and is stopped as a blow-up once the mass exceeds the speed limit.
#[test]
fn solver_energy_symplectic_and_verlet_conserve_forward_euler_drifts() {
    let (k, m) = (100.0f32, 1.0f32); // ω = 10 rad/s
    let dt = 0.01f32; // ωΔt = 0.1
    for integrator in [Integrator::SymplecticEuler, Integrator::Verlet] {
        let (mut solver, control) = oscillator(integrator, k, m);
        let mut e = Vec::with_capacity(10_000);
        for _ in 0..10_000 {
            solver.step(&control, dt).unwrap();
            e.push(energy(&mut solver, k, m));
        }
        let drift = mean(&e[9000..]) / mean(&e[..1000]) - 1.0;
        let (lo, hi) = e.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &e| (l.min(e), h.max(e)));
        let osc = (hi - lo) / mean(&e);
        println!(
            "{integrator} solver (f32, ωΔt = 0.1, 10 000 steps): drift {:+.4}%, peak-to-peak {osc:.4}",
            drift * 100.0
        );
        assert!(drift.abs() < 0.01, "{integrator}: drift {drift}");
        assert!(osc > 0.5 * 0.1 && osc < 1.5 * 0.1, "{integrator}: oscillation {osc}");
    }
    // Forward Euler: the same step drifts upward at the theoretical rate.
    let (mut solver, control) = oscillator(Integrator::ForwardEuler, k, m);
    let e0 = energy(&mut solver, k, m);
    let mut e = Vec::new();
    // 300 steps: the amplitude grows ×4.4 to 0.45 m, still short of the pinned particle.
    for _ in 0..300 {
        solver.step(&control, dt).unwrap();
        e.push(energy(&mut solver, k, m));
    }
    let growth = e[299] / e0;
    let expected = 1.01f64.powi(300);
    let drift = mean(&e[200..]) / mean(&e[..100]) - 1.0;
    println!(
        "forward Euler solver: energy ×{growth:.3} after 300 steps (theory (1 + (ωΔt)²)³⁰⁰ = ×{expected:.3}), \
         mean of steps 200–300 vs 0–100: {:+.0}%",
        drift * 100.0
    );
    assert!(drift > 5.0);
    assert!((growth / expected - 1.0).abs() < 0.02, "growth {growth} vs {expected}");
    // It runs away: the speed limit stops it and the state stays at the start of that frame.
    let mut x = Vec::new();
    let mut failure = None;
    for _ in 0..5000 {
        solver.read_positions(&mut x);
        let before = x.clone();
        if let Err(e) = solver.step(&control, dt) {
            solver.read_positions(&mut x);
            assert_eq!(x, before);
            failure = Some(e);
            break;
        }
    }
    let err = failure.expect("forward Euler never ran away");
    match err {
        SolverError::BlowUp { particle, constraint, detail, .. } => {
            println!("forward Euler stopped at t = {:.2} s: {detail}", solver.time());
            assert_eq!(particle, 1);
            assert!(detail.contains("m/s") || (detail.contains("strain") && constraint == Some(0)), "{detail}");
        }
        e => panic!("unexpected {e}"),
    }
}

/// Implicit Euler at ωΔt = 100 is stable: the energy never increases, and the first step
/// shrinks the amplitude by 1/√(1 + (ωΔt)²) like exact backward Euler.
#[test]
fn implicit_euler_is_stable_at_omega_dt_100() {
    let (k, m) = (1.0e4f32, 1.0f32); // ω = 100 rad/s
    let dt = 1.0f32; // ωΔt = 100
    let (mut solver, control) = oscillator(Integrator::ImplicitEuler, k, m);
    let e0 = energy(&mut solver, k, m);
    let mut prev = e0;
    let mut s = State::from_model(solver.model());
    for n in 0..50 {
        let report = solver.step(&control, dt).unwrap();
        let e = energy(&mut solver, k, m);
        assert!(e <= prev + 1e-12 * e0, "step {n}: energy rose from {prev} to {e}");
        assert!(report.linear_residual <= 1e-6, "{report:?}");
        if n == 0 {
            solver.read_state(&mut s);
            let u = (s.particle_position[1].x - REST) as f64;
            let v = s.particle_velocity[1].x as f64;
            let ratio = (u * u + (v / 100.0).powi(2)).sqrt() / AMPLITUDE as f64;
            let expected = 1.0 / (1.0f64 + 1.0e4).sqrt();
            println!("implicit Euler, ωΔt = 100: amplitude ratio {ratio:.6} (theory {expected:.6}), CG {report:?}");
            assert!((ratio / expected - 1.0).abs() < 1e-3);
        }
        prev = e;
    }
    assert!(prev < 1e-6 * e0);
}

/// The filtered relative residual ‖S(b − AΔv)‖/‖S(b − Az)‖ of implicit Euler's system
/// (M − h ∂f/∂v − h² ∂f/∂x) Δv = h (f + m g + h ∂f/∂x v) (Baraff & Witkin eq. 6, pinned rows
/// filtered out, z the prescribed Δv of pinned particles), assembled here in f64 from the
/// spring law — independently of the solver's own assembly — at positions `x` and
/// velocities `v` (after air damping; no aerodynamics), with the solver's spring forces
/// `solver_f`. Those are the one input taken from the solver: stiff springs at f32 positions
/// give forces whose rounding is a fraction of a percent of a particle's weight, far above
/// the 10⁻⁶ being checked; the f64 forces computed here must agree with them to that
/// rounding (returned second: the largest difference over the largest weight).
fn independent_residual(
    model: &hooke::Model,
    x: &[Vec3],
    v: &[Vec3],
    dv: &[DVec3],
    solver_f: &[Vec3],
    pinned: &[bool],
    h: f64,
) -> (f64, f64) {
    let n = x.len();
    let (mut f, mut kv, mut a_dv, mut a_z) =
        (vec![DVec3::ZERO; n], vec![DVec3::ZERO; n], vec![DVec3::ZERO; n], vec![DVec3::ZERO; n]);
    let z: Vec<DVec3> = dv.iter().zip(pinned).map(|(d, &p)| if p { *d } else { DVec3::ZERO }).collect();
    for c in model.distance().constraints() {
        let (i, j) = (c.i as usize, c.j as usize);
        let d = x[i].as_dvec3() - x[j].as_dvec3();
        let len = d.length();
        let u = d / len;
        let rest = c.rest_length as f64;
        let alpha = if len >= rest { c.compliance_stretch } else { c.compliance_compression } as f64;
        let k = 1.0 / alpha;
        let kd = c.damping as f64 * k;
        let uu = DMat3::from_cols(u * u.x, u * u.y, u * u.z);
        let fi = -u * (k * (len - rest)) - u * (kd * (v[i] - v[j]).as_dvec3().dot(u));
        f[i] += fi;
        f[j] -= fi;
        // ∂fᵢ/∂xᵢ, the transverse term dropped under compression (clamp_compression).
        let transverse = if len > rest { (DMat3::IDENTITY - uu) * (1.0 - rest / len) } else { DMat3::ZERO };
        let dfdx = (uu + transverse) * -k;
        let dfdv = uu * -kd;
        let b = -(dfdv * h + dfdx * (h * h));
        let dvel = (v[i] - v[j]).as_dvec3();
        kv[i] += dfdx * dvel;
        kv[j] -= dfdx * dvel;
        a_dv[i] += b * (dv[i] - dv[j]);
        a_dv[j] += b * (dv[j] - dv[i]);
        a_z[i] += b * (z[i] - z[j]);
        a_z[j] += b * (z[j] - z[i]);
    }
    let g = model.gravity().as_dvec3();
    let (mut rr, mut reference, mut df, mut weight) = (0.0, 0.0, 0.0f64, 0.0f64);
    for p in (0..n).filter(|&p| !pinned[p]) {
        let m = model.particle_mass()[p] as f64;
        let fp = solver_f[p].as_dvec3();
        df = df.max((fp - f[p]).length());
        weight = weight.max(m * g.length());
        let b = (fp + g * m) * h + kv[p] * (h * h);
        rr += (b - (dv[p] * m + a_dv[p])).length_squared();
        reference += (b - (z[p] * m + a_z[p])).length_squared();
    }
    ((rr / reference).sqrt(), df / weight)
}

/// Implicit Euler on a stiff hanging cloth (ω_max Δt ≈ 90 at one step per 1/60 s frame):
/// every frame's CG meets its relative tolerance — checked against the residual recomputed
/// here from an independent assembly of the system, not only the solver's own report — and
/// the cloth settles to the drape a converged XPBD run gives (within 3 % of the sag). The
/// material resists compression as much as stretch: with the default's 100× softer
/// compression, springs at their rest length would switch stiffness on rounding, and an
/// independent assembly could pick the other branch.
#[test]
fn implicit_euler_cg_meets_its_tolerance_on_stiff_cloth() {
    let material = ClothMaterial { compression_stiffness: 5e3, areal_density: 1.0, ..ClothMaterial::default() };
    let (model, control) = common::hanging_cloth(20, 0.5, material);
    let tol = 1e-6;
    let settings = ForceSettings {
        integrator: Integrator::ImplicitEuler,
        substeps: 1,
        cg_tolerance: tol,
        air_damping: 2.0,
        ..ForceSettings::default()
    };
    let decay = (-2.0f32 / 60.0).exp();
    // ω_max of the stiffest spring against the lightest particle.
    let k_max = model.distance().constraints().iter().map(|c| 1.0 / c.compliance_stretch).fold(0.0, f32::max);
    let m_min = model.particle_mass().iter().copied().fold(f32::INFINITY, f32::min);
    println!("ω_max Δt ≈ {:.0}", (k_max / m_min).sqrt() / 60.0);
    let mut solver = ForceSolver::new(model.clone(), settings).unwrap();
    let pinned: Vec<bool> = (0..model.particle_count() as u32).map(|p| control.is_pinned(p)).collect();
    let (mut iters, mut worst, mut worst_independent) = (Vec::new(), 0.0f64, 0.0f64);
    let mut before = State::from_model(&model);
    for _ in 0..180 {
        solver.read_state(&mut before);
        let r = solver.step(&control, 1.0 / 60.0).unwrap();
        assert!(r.linear_residual <= tol, "{r:?}");
        assert!(r.linear_iterations >= 1 && r.linear_iterations < 200);
        let dv = solver.implicit_velocity_change().unwrap();
        // The system's v is the velocity after this substep's air damping.
        let v0: Vec<Vec3> =
            before.particle_velocity.iter().zip(&pinned).map(|(v, &p)| if p { *v } else { *v * decay }).collect();
        let (x0, v0) = (&before.particle_position, &v0);
        let (independent, df) = independent_residual(&model, x0, v0, dv, solver.implicit_forces(), &pinned, 1.0 / 60.0);
        assert!(independent <= 2.0 * tol, "recomputed residual {independent:.3e}, reported {:.3e}", r.linear_residual);
        assert!(df < 0.02, "spring forces differ from an f64 evaluation by {df:.2e} of a particle's weight");
        iters.push(r.linear_iterations);
        worst = worst.max(r.linear_residual);
        worst_independent = worst_independent.max(independent);
    }
    println!(
        "implicit Euler 20×20 cloth, 1 step/frame: CG iterations first {} max {} last {}, worst residual {worst:.2e} \
         (recomputed independently: {worst_independent:.2e})",
        iters[0],
        iters.iter().max().unwrap(),
        iters.last().unwrap()
    );
    let sag = |x: &[Vec3]| {
        let k = model.bodies()[0].grid_index(19, 10).unwrap() as usize;
        model.particle_position()[k].y - x[k].y
    };
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    let implicit = sag(&x);
    // The static drape, from XPBD converged to it: many iterations, heavy air damping.
    let xpbd = hooke::XpbdSettings { substeps: 20, iterations: 50, air_damping: 2.0, ..hooke::XpbdSettings::default() };
    let mut reference = hooke::XpbdSolver::new(model.clone(), xpbd).unwrap();
    for _ in 0..180 {
        reference.step(&control, 1.0 / 60.0).unwrap();
    }
    reference.read_positions(&mut x);
    let expected = sag(&x);
    println!("sag after 3 s: implicit Euler {:.3} mm, converged XPBD {:.3} mm", implicit * 1e3, expected * 1e3);
    assert!((implicit - expected).abs() < 0.03 * expected, "sag {implicit} m, static drape {expected} m");
}

/// Settings out of range and rigid constraints are errors, never panics.
#[test]
fn bad_settings_are_errors() {
    let (model, _) = spring_pair(100.0, 1.0);
    let bad = |s: ForceSettings| ForceSolver::new(model.clone(), s).err();
    let d = ForceSettings::default();
    let cases = [
        ("substeps", ForceSettings { substeps: 0, ..d }),
        ("cg_tolerance", ForceSettings { cg_tolerance: -1e-6, ..d }),
        ("cg_tolerance", ForceSettings { cg_tolerance: f64::NAN, ..d }),
        ("cg_tolerance", ForceSettings { cg_tolerance: 0.0, ..d }),
        ("cg_max_iterations", ForceSettings { cg_max_iterations: 0, ..d }),
        ("air_damping", ForceSettings { air_damping: -1.0, ..d }),
        ("air_damping", ForceSettings { air_damping: f32::INFINITY, ..d }),
        ("max_speed/max_strain", ForceSettings { max_speed: 0.0, ..d }),
        ("max_speed/max_strain", ForceSettings { max_strain: f32::NAN, ..d }),
    ];
    for (name, s) in cases {
        match bad(s) {
            Some(SolverError::InvalidSettings { setting, .. }) => assert_eq!(setting, name),
            e => panic!("{name}: {e:?}"),
        }
    }
    // A rigid rope cannot be a force spring: the error names the constraint.
    let mut rope = Rope::straight("chain", Vec3::ZERO, Vec3::X, 4);
    rope.material.stretch_stiffness = f32::INFINITY;
    let mut b = ModelBuilder::new();
    b.add_rope(&rope).unwrap();
    let rigid = Arc::new(b.finalize().unwrap());
    for integrator in Integrator::ALL {
        let err = ForceSolver::new(rigid.clone(), ForceSettings { integrator, ..d }).err().unwrap();
        let text = err.to_string();
        println!("{text}");
        assert!(matches!(err, SolverError::InvalidSettings { setting: "integrator", .. }));
        assert!(text.contains("structural constraint") && text.contains("rigid"), "{text}");
    }
    // Bad steps and pins.
    let mut solver = ForceSolver::new(model.clone(), d).unwrap();
    for dt in [0.0, -1.0, f32::NAN] {
        assert!(matches!(solver.step(&Control::new(), dt), Err(SolverError::InvalidTimeStep(_))));
    }
    let mut c = Control::new();
    c.pin(7);
    assert!(matches!(solver.step(&c, 0.01), Err(SolverError::InvalidPin { particle: 7, .. })));
    c.release_all().pin_to(1, Vec3::splat(f32::NAN));
    assert!(matches!(solver.step(&c, 0.01), Err(SolverError::InvalidPin { particle: 1, .. })));
    assert_eq!(solver.info().name, "symplectic-euler-cpu");
}
