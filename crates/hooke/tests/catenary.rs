//! A rope hanging between two pins settles onto the catenary of the same length — closely
//! enough that the parabola of the same length, the plausible wrong answer, fails the test.

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

/// The parabola through (±S/2, 0) with the arc length L: y = −d(1 − (2x/S)²), d by bisection on
/// the length (Simpson's rule over 2 000 intervals).
fn parabola_depth(span: f64, length: f64) -> f64 {
    let arc = |d: f64| {
        let n = 2000;
        let h = span / n as f64;
        let f = |x: f64| (1.0 + (8.0 * d * x / (span * span)).powi(2)).sqrt();
        let mut s = f(-span / 2.0) + f(span / 2.0);
        for k in 1..n {
            s += if k % 2 == 1 { 4.0 } else { 2.0 } * f(-span / 2.0 + k as f64 * h);
        }
        s * h / 3.0
    };
    let (mut lo, mut hi) = (0.0, 10.0 * length);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if arc(mid) < length { lo = mid } else { hi = mid }
    }
    0.5 * (lo + hi)
}

#[test]
fn xpbd_hanging_rope_is_a_catenary() {
    let span = 1.0f32;
    let length = 1.5f32;
    let n = 41;
    let y0 = 1.0f32;
    let left = Vec3::new(-span / 2.0, y0, 0.0);
    let right = Vec3::new(span / 2.0, y0, 0.0);
    // Start as a V of the right length.
    let depth = ((length / 2.0).powi(2) - (span / 2.0).powi(2)).sqrt();
    let mut rope = Rope::polyline("rope", vec![left, Vec3::new(0.0, y0 - depth, 0.0), right], n);
    rope.bending = hooke::Bending::None;
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
    let catenary = |xc: f64| y0 as f64 + a * (xc / a).cosh() - a * (span as f64 / (2.0 * a)).cosh();
    let d = parabola_depth(span as f64, length as f64);
    let parabola = |xc: f64| y0 as f64 - d * (1.0 - (2.0 * xc / span as f64).powi(2));
    // The largest vertical distance of the rope's particles from a curve.
    let worst_from =
        |curve: &dyn Fn(f64) -> f64| x.iter().map(|p| (p.y as f64 - curve(p.x as f64)).abs()).fold(0.0, f64::max);
    let worst = worst_from(&catenary);
    let worst_parabola = worst_from(&parabola);
    println!(
        "catenary a = {a:.4} m: worst deviation {:.2} mm; from the parabola of the same length: {:.2} mm",
        1e3 * worst,
        1e3 * worst_parabola
    );
    // 2 mm: several times the measured deviation, a tenth of the parabola's.
    const TOLERANCE: f64 = 2e-3;
    assert!(worst < TOLERANCE, "worst deviation {worst} m from the catenary");
    assert!(
        worst_parabola > TOLERANCE,
        "the parabola passes too ({worst_parabola} m): the test cannot tell them apart"
    );
    // The rope kept its length (rigid constraints converged).
    let l: f32 = x.windows(2).map(|w| (w[1] - w[0]).length()).sum();
    assert!((l - length).abs() < 0.005 * length, "length {l}");
}
