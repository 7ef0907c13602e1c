//! A rope hanging between two pins settles onto the catenary of the same length.

use glam::Vec3;
use hooke::{Control, ModelBuilder, Rope, RopeMaterial, Solver, XpbdSettings, XpbdSolver};
use std::sync::Arc;

/// Catenary parameter a (m) with 2a·sinh(S/2a) = L, by bisection.
fn catenary_parameter(span: f64, length: f64) -> f64 {
    let f = |a: f64| 2.0 * a * (span / (2.0 * a)).sinh() - length;
    let (mut lo, mut hi) = (1e-3 * span, 1e3 * span);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        // f decreases with a.
        if f(mid) > 0.0 { lo = mid } else { hi = mid }
    }
    0.5 * (lo + hi)
}

#[test]
fn hanging_rope_is_a_catenary() {
    let span = 1.0f32;
    let length = 1.5f32;
    let n = 41;
    let y0 = 1.0f32;
    let left = Vec3::new(-span / 2.0, y0, 0.0);
    let right = Vec3::new(span / 2.0, y0, 0.0);
    // Start as a V of the right length.
    let depth = ((length / 2.0).powi(2) - (span / 2.0).powi(2)).sqrt();
    let mut rope = Rope::polyline("rope", vec![left, Vec3::new(0.0, y0 - depth, 0.0), right], n);
    rope.bend_springs = false;
    rope.material = RopeMaterial {
        linear_density: 0.1,
        stretch_stiffness: f32::INFINITY,
        compression_stiffness: f32::INFINITY,
        damping: 0.0,
        ..RopeMaterial::default()
    };
    let mut b = ModelBuilder::new();
    b.add_rope(&rope).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(0).pin(n as u32 - 1);
    let settings = XpbdSettings { substeps: 20, iterations: 10, air_damping: 2.0, ..XpbdSettings::default() };
    let mut solver = XpbdSolver::new(model, settings).unwrap();
    for _ in 0..900 {
        solver.step(&control, 1.0 / 60.0).unwrap();
    }
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    let a = catenary_parameter(span as f64, length as f64);
    let mut worst = 0.0f64;
    for p in &x {
        let xc = p.x as f64;
        let y = y0 as f64 + a * (xc / a).cosh() - a * (span as f64 / (2.0 * a)).cosh();
        worst = worst.max((p.y as f64 - y).abs());
    }
    println!("catenary a = {a:.4} m, worst deviation {:.3}% of the span", 100.0 * worst / span as f64);
    assert!(worst < 0.02 * span as f64, "worst deviation {worst} m");
    // The rope kept its length (rigid constraints converged).
    let l: f32 = x.windows(2).map(|w| (w[1] - w[0]).length()).sum();
    assert!((l - length).abs() < 0.005 * length, "length {l}");
}
