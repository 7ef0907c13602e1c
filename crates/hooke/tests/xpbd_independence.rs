//! XPBD's stiffness does not depend on iterations, substeps or mesh resolution; PBD's does
//! (article §3.3).
//!
//! Scene: a 1 m × 1 m cloth, 0.2 kg/m², hanging from its whole top edge. Its weight per unit
//! width, 0.2·9.81·1 ≈ 1.96 N/m, against a stretch modulus K = 50 N/m gives a static strain of
//! 1.96/50 ≈ 3.9 % at the top, falling linearly to 0 at the bottom: a mean strain of ≈ 2 %, so
//! the bottom edge should drop by about 2 cm. "Sag" below is that drop, measured after 4 s.

mod common;

use common::{bottom_sag, hanging_cloth, run};
use glam::Vec3;
use hooke::{ClothMaterial, Control, Method, ModelBuilder, Rope, RopeMaterial, Solver, XpbdSettings, XpbdSolver};
use std::sync::Arc;

fn material() -> ClothMaterial {
    ClothMaterial {
        areal_density: 0.2,
        stretch_stiffness: 50.0,
        compression_stiffness: 50.0,
        shear_stiffness: 50.0,
        bend_stiffness: 0.01,
        bending_modulus: 1e-5,
        // Axial damping adds γ = τ/h to the denominator of every Δλ and so slows each
        // substep's Gauss–Seidel convergence; these tests settle through air damping instead.
        damping: 0.0,
        thickness: 0.0,
        ..ClothMaterial::default()
    }
}

fn sag(n: usize, settings: XpbdSettings) -> f32 {
    sag_after(n, settings, 240)
}

fn sag_after(n: usize, settings: XpbdSettings, frames: usize) -> f32 {
    let (model, control) = hanging_cloth(n, 1.0, material());
    let mut solver = run(&model, &control, settings, frames, 60.0);
    bottom_sag(&model, &mut solver, n)
}

fn settings(substeps: u32, iterations: u32, method: Method) -> XpbdSettings {
    XpbdSettings { substeps, iterations, method, air_damping: 3.0, ..XpbdSettings::default() }
}

fn change(a: f32, b: f32) -> f32 {
    (a - b).abs() / a.abs().max(b.abs())
}

#[test]
fn xpbd_sag_is_independent_of_iterations_and_substeps() {
    let n = 16;
    let it5 = sag(n, settings(10, 5, Method::Xpbd));
    let it50 = sag(n, settings(10, 50, Method::Xpbd));
    let sub10 = it5;
    let sub40 = sag(n, settings(40, 5, Method::Xpbd));
    println!("XPBD sag: 5 it {it5:.5} m, 50 it {it50:.5} m; 10 substeps {sub10:.5} m, 40 substeps {sub40:.5} m");
    // The static strain is a few percent: the drop is 1–4 % of the cloth's height.
    assert!(it50 > 0.01 && it50 < 0.04, "sag {it50} m");
    assert!(change(it5, it50) < 0.05, "iterations change the sag by {:.1}%", 100.0 * change(it5, it50));
    assert!(change(sub10, sub40) < 0.05, "substeps change the sag by {:.1}%", 100.0 * change(sub10, sub40));
}

#[test]
fn pbd_sag_depends_on_iterations_and_substeps() {
    let n = 16;
    let pbd = |sub, it| sag(n, settings(sub, it, Method::Pbd { stiffness: 0.05 }));
    let (it5, it50) = (pbd(10, 5), pbd(10, 50));
    let (sub10, sub40) = (it5, pbd(40, 5));
    println!("PBD sag: 5 it {it5:.5} m, 50 it {it50:.5} m; 10 substeps {sub10:.5} m, 40 substeps {sub40:.5} m");
    assert!(change(it5, it50) > 0.5, "iterations change the PBD sag by only {:.1}%", 100.0 * change(it5, it50));
    assert!(change(sub10, sub40) > 0.5, "substeps change the PBD sag by only {:.1}%", 100.0 * change(sub10, sub40));
}

#[test]
fn xpbd_sag_is_independent_of_resolution() {
    // XPBD's result is independent of the discretisation once each substep's solve has
    // converged. The 64² mesh has 16× the stiffness-to-mass ratio per particle of the 16² one,
    // so its Gauss–Seidel sweep converges more slowly (at 20 substeps × 1 iteration its sag is
    // ~15 % larger). One setting that converges for all three: 40 substeps × 4 iterations.
    let s = settings(40, 4, Method::Xpbd);
    let sags: Vec<f32> = [16, 32, 64].iter().map(|&n| sag_after(n, s, 150)).collect();
    println!("XPBD sag at 16², 32², 64²: {sags:?}");
    for w in sags.windows(2) {
        assert!(change(w[0], w[1]) < 0.05, "resolution changes the sag: {sags:?}");
    }
    assert!(change(sags[0], sags[2]) < 0.05, "resolution changes the sag: {sags:?}");
}

/// A vertical rope — 1 m, 16 particles, μ = 0.1 kg/m, EA = 20 N — hanging from its top
/// particle: at rest segment k carries the weight of the particles below it, so the bottom end
/// drops by Σₖ (g Σ_{j>k} mⱼ)·Lₖ/EA ≈ μgL²/(2EA) ≈ 2.45 cm (half-mass end particles make the
/// lumped sum equal the continuum's to 0.1 %). XPBD reaches it within 1 % at 5 and 50 iterations, 10 and 40
/// substeps (the GPU twin: `hooke-gpu/tests/gpu/independence.rs`).
#[test]
fn xpbd_rope_drop_is_the_analytic_static_elongation() {
    const N: usize = 16;
    const EA: f32 = 20.0;
    let mut b = ModelBuilder::new();
    let mut rope = Rope::straight("rope", Vec3::ZERO, Vec3::new(0.0, -1.0, 0.0), N);
    rope.material = RopeMaterial {
        linear_density: 0.1,
        stretch_stiffness: EA,
        compression_stiffness: EA,
        damping: 0.0,
        ..RopeMaterial::default()
    };
    rope.bending = hooke::Bending::None;
    b.add_rope(&rope).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let m = model.particle_mass();
    let segment = 1.0 / (N - 1) as f64;
    let discrete: f64 =
        (0..N - 1).map(|k| 9.81 * m[k + 1..].iter().map(|&m| m as f64).sum::<f64>() * segment / EA as f64).sum();
    let continuum = 0.1 * 9.81 / (2.0 * EA as f64);
    let mut control = Control::new();
    control.pin(0);
    let drop = |substeps, iterations| {
        let s = XpbdSettings { substeps, iterations, air_damping: 4.0, parallel: false, ..XpbdSettings::default() };
        let mut solver = XpbdSolver::new(model.clone(), s).unwrap();
        for _ in 0..240 {
            solver.step(&control, 1.0 / 60.0).unwrap();
        }
        let mut x = Vec::new();
        solver.read_positions(&mut x);
        (model.particle_position()[N - 1].y - x[N - 1].y) as f64
    };
    println!("rope drop: analytic {discrete:.5} m (continuum {continuum:.5} m)");
    for (substeps, iterations) in [(10, 5), (10, 50), (40, 5)] {
        let d = drop(substeps, iterations);
        println!("  {substeps} substeps × {iterations} iterations: {d:.5} m ({:+.2} %)", 100.0 * (d / discrete - 1.0));
        assert!((d - discrete).abs() < 0.01 * discrete, "{substeps}×{iterations}: drop {d} m, analytic {discrete} m");
    }
}
