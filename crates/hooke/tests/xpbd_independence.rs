//! XPBD's stiffness does not depend on iterations, substeps or mesh resolution; PBD's does
//! (article §3.3).
//!
//! Scene: a 1 m × 1 m cloth, 0.2 kg/m², hanging from its whole top edge. Its weight per unit
//! width, 0.2·9.81·1 ≈ 1.96 N/m, against a stretch modulus K = 50 N/m gives a static strain of
//! 1.96/50 ≈ 3.9 % at the top, falling linearly to 0 at the bottom: a mean strain of ≈ 2 %, so
//! the bottom edge should drop by about 2 cm. "Sag" below is that drop, measured after 4 s.

mod common;

use common::{bottom_sag, hanging_cloth, run};
use hooke::{ClothMaterial, Method, XpbdSettings};

fn material() -> ClothMaterial {
    ClothMaterial {
        areal_density: 0.2,
        stretch_stiffness: 50.0,
        compression_stiffness: 50.0,
        shear_stiffness: 50.0,
        bend_stiffness: 0.01,
        // Axial damping adds γ = τ/h to the denominator of every Δλ and so slows each
        // substep's Gauss–Seidel convergence; these tests settle through air damping instead.
        damping: 0.0,
        thickness: 0.0,
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
    let sub10 = sag(n, settings(10, 5, Method::Xpbd));
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
    let (sub10, sub40) = (pbd(10, 5), pbd(40, 5));
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
