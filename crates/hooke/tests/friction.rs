//! Coulomb friction on an incline (article §4.3), μₛ = 0.5, μₖ = 0.4.
//!
//! μₖ < tan 24° = 0.445 < μₛ: a cloth patch resting on a 24° incline must stay put — and only
//! the static branch can hold it there: kinetic friction alone (clamped, never reversing the
//! motion) removes at most μₖ/tan θ = 90 % of each substep's slide, so without static
//! friction the patch creeps downhill at g(sin θ − μₖ cos θ) = 0.45 m/s². (At 20°,
//! tan θ < μₖ, and kinetic friction alone would hold it: a test there cannot fail.)
//! tan 35° = 0.70 > μₛ: it slides with a = g(sin θ − μₖ cos θ) = 2.412 m/s².

use glam::{Quat, Vec3};
use hooke::collision::{Collider, Shape};
use hooke::{ClothGrid, ClothMaterial, Control, ModelBuilder, Solver, XpbdSettings, XpbdSolver};
use std::sync::Arc;

const G: f32 = 9.81;

/// Mean position of the patch along the downhill direction (m) at each frame, 60 fps.
fn slide(theta_deg: f32, seconds: f32) -> (Vec<f32>, f32) {
    let theta = theta_deg.to_radians();
    // The incline: a plane through the origin tilted about z; downhill is −x along it.
    let rot = Quat::from_rotation_z(theta);
    let normal = rot * Vec3::Y;
    let downhill = rot * -Vec3::X;
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("patch", 6, 6, 0.02);
    g.material = ClothMaterial { thickness: 0.004, ..ClothMaterial::default() };
    g.rotation = rot;
    g.center = normal * 0.002; // resting on the plane: particle radius 2 mm
    b.add_cloth_grid(&g).unwrap();
    b.add_collider(Collider::new("incline", Shape::Plane { point: Vec3::ZERO, normal }).with_friction(0.5, 0.4))
        .unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let settings = XpbdSettings { substeps: 20, iterations: 2, air_damping: 0.0, ..XpbdSettings::default() };
    let mut solver = XpbdSolver::new(model.clone(), settings).unwrap();
    let control = Control::new();
    let mut x = Vec::new();
    let mut s = vec![0.0];
    let start: Vec3 = model.particle_position().iter().copied().sum::<Vec3>() / model.particle_count() as f32;
    let mut deepest = 0.0f32;
    for _ in 0..(seconds * 60.0) as usize {
        solver.step(&control, 1.0 / 60.0).unwrap();
        solver.read_positions(&mut x);
        let c = x.iter().copied().sum::<Vec3>() / x.len() as f32;
        s.push((c - start).dot(downhill));
        deepest = deepest.max(hooke::diagnostics::max_penetration(&model, &x, &[]));
    }
    (s, deepest)
}

#[test]
fn xpbd_static_friction_holds_between_the_kinetic_and_static_angles() {
    let (s, deepest) = slide(24.0, 2.0);
    let creep = s.last().unwrap().abs();
    println!("24°: creep {:.3} mm in 2 s", creep * 1e3);
    assert!(creep < 1e-3, "crept {creep} m");
    assert!(deepest < 0.01 * 0.002, "penetration {deepest} m");
}

#[test]
fn xpbd_kinetic_friction_gives_the_coulomb_acceleration() {
    let (s, _) = slide(35.0, 1.0);
    let theta = 35f32.to_radians();
    let expected = G * (theta.sin() - 0.4 * theta.cos());
    // From rest, s = ½at²: fit a over the second half of the run.
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (k, &sk) in s.iter().enumerate().skip(30) {
        let t = k as f64 / 60.0;
        let basis = 0.5 * t * t;
        num += basis * sk as f64;
        den += basis * basis;
    }
    let a = (num / den) as f32;
    println!("35°: a = {a:.4} m/s², expected {expected:.4} m/s²");
    assert!((a - expected).abs() < 0.05 * expected, "a = {a}, expected {expected}");
}

/// Friction acts on the motion relative to the collider: a patch resting on a box that slides
/// sideways at 0.5 m/s² is carried along when μₛ·g exceeds that acceleration, and left behind
/// on a frictionless box.
#[test]
fn xpbd_moving_collider_drags_the_cloth_by_friction() {
    let carried = |mu: f32| {
        let mut b = ModelBuilder::new();
        let mut g = ClothGrid::new("patch", 5, 5, 0.02);
        g.material = ClothMaterial { thickness: 0.004, ..ClothMaterial::default() };
        g.center = Vec3::new(0.0, 0.002, 0.0); // on the box top (y = 0), radius 2 mm
        b.add_cloth_grid(&g).unwrap();
        // x(t) = ¼ t² (a = 0.5 m/s²), sampled every 0.05 s over 1 s.
        let keys = (0..=20)
            .map(|k| {
                let t = k as f32 * 0.05;
                hooke::collision::Keyframe::translation(t, Vec3::new(0.25 * t * t, 0.0, 0.0))
            })
            .collect();
        let shape =
            Shape::Box { center: Vec3::new(0.0, -0.5, 0.0), half_extents: Vec3::splat(0.5), rotation: Quat::IDENTITY };
        let motion = Arc::new(hooke::collision::Motion::new(keys).unwrap());
        b.add_collider(Collider::new("box", shape).with_friction(mu, mu)).unwrap();
        let mut control = Control::new();
        control.animate_collider(0, motion.clone());
        let model = Arc::new(b.finalize().unwrap());
        let settings = XpbdSettings { substeps: 20, iterations: 2, air_damping: 0.0, ..XpbdSettings::default() };
        let mut solver = XpbdSolver::new(model.clone(), settings).unwrap();
        for _ in 0..60 {
            solver.step(&control, 1.0 / 60.0).unwrap();
        }
        let mut x = Vec::new();
        solver.read_positions(&mut x);
        let shift = x.iter().map(|p| p.x).sum::<f32>() / x.len() as f32;
        (shift, hooke::diagnostics::max_penetration(&model, &x, &[motion.pose_at(solver.time())]))
    };
    let (with, pen) = carried(0.5);
    let (without, _) = carried(0.0);
    println!("box moved 0.25 m: cloth moved {with:.4} m with μ = 0.5, {without:.4} m with μ = 0");
    assert!((with - 0.25).abs() < 0.01, "carried {with} m");
    assert!(without.abs() < 0.005, "frictionless cloth moved {without} m");
    assert!(pen < 0.01 * 0.002);
}
