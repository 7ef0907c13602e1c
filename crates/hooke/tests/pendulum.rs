//! A rope pendulum whose end carries almost all the mass swings with the period 2π√(L/g).

use glam::Vec3;
use hooke::{Control, ModelBuilder, Rope, RopeMaterial, Solver, XpbdSettings, XpbdSolver};
use std::sync::Arc;

#[test]
fn xpbd_pendulum_period_matches_small_angle_formula() {
    let length = 1.0f32; // m
    let g = 9.81f32;
    let amplitude = 5.0f32.to_radians();
    let n = 10;
    let top = Vec3::new(0.0, 2.0, 0.0);
    let end = top + Vec3::new(amplitude.sin(), -amplitude.cos(), 0.0) * length;
    let mut rope = Rope::straight("pendulum", top, end, n);
    rope.bending = hooke::Bending::None;
    rope.material = RopeMaterial {
        linear_density: 0.005, // 5 g/m: 5 g of rope against a 1 kg bob
        stretch_stiffness: f32::INFINITY,
        compression_stiffness: f32::INFINITY,
        damping: 0.0,
        ..RopeMaterial::default()
    };
    let mut b = ModelBuilder::new();
    b.add_rope(&rope).unwrap();
    b.set_particle_mass(n as u32 - 1, 1.0).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let bob_share = 1.0 / model.total_mass();
    assert!(bob_share >= 0.95, "bob carries {bob_share:.3} of the mass");

    let mut control = Control::new();
    control.pin(0);
    let settings = XpbdSettings { substeps: 40, iterations: 4, air_damping: 0.0, ..XpbdSettings::default() };
    let mut solver = XpbdSolver::new(model.clone(), settings).unwrap();
    let dt = 1.0 / 240.0;
    let mut x = Vec::new();
    let (mut prev_x, mut prev_t) = (amplitude.sin(), 0.0f64);
    let mut crossings = Vec::new();
    while solver.time() < 12.0 {
        solver.step(&control, dt).unwrap();
        solver.read_positions(&mut x);
        let xb = x[n - 1].x;
        let t = solver.time();
        // Downward zero crossings (from + to −), interpolated linearly.
        if prev_x > 0.0 && xb <= 0.0 {
            crossings.push(prev_t + (t - prev_t) * (prev_x / (prev_x - xb)) as f64);
        }
        prev_x = xb;
        prev_t = t;
    }
    assert!(crossings.len() >= 5, "only {} crossings", crossings.len());
    let period = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64;
    let expected = 2.0 * std::f64::consts::PI * (length as f64 / g as f64).sqrt();
    let err = (period - expected).abs() / expected;
    println!("period {period:.5} s, expected {expected:.5} s, error {:.3}%", err * 100.0);
    assert!(err < 0.02, "period {period} s vs {expected} s");
}
