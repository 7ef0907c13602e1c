//! Coulomb friction on the GPU.

use crate::*;

/// The GPU passes the CPU's physics tests where they apply: Coulomb friction on an incline
/// (μₛ = 0.5, μₖ = 0.4: a patch holds at 24°, where μₖ < tan θ < μₛ so that only the static
/// branch can hold it, and slides at 35° with a = g(sin θ − μₖ cos θ)), with no penetration
/// of the plane.
#[test]
fn gpu_friction_holds_at_24_degrees_and_slides_at_35() {
    let ctx = gpu_or_skip!();
    let slide = |deg: f32, frames: usize| {
        let theta = deg.to_radians();
        let rot = Quat::from_rotation_z(theta);
        let (normal, downhill) = (rot * Vec3::Y, rot * -Vec3::X);
        let mut b = ModelBuilder::new();
        let mut g = ClothGrid::new("patch", 6, 6, 0.02);
        g.material.thickness = 0.004;
        g.rotation = rot;
        g.center = normal * 0.002;
        b.add_cloth_grid(&g).unwrap();
        b.add_collider(Collider::new("incline", Shape::Plane { point: Vec3::ZERO, normal }).with_friction(0.5, 0.4))
            .unwrap();
        let model = Arc::new(b.finalize().unwrap());
        let s = XpbdSettings { substeps: 20, iterations: 2, air_damping: 0.0, ..settings() };
        let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
        let start: Vec3 = model.particle_position().iter().copied().sum::<Vec3>() / model.particle_count() as f32;
        let mut x = Vec::new();
        for _ in 0..frames {
            gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        }
        gpu.read_positions(&mut x);
        let c = x.iter().copied().sum::<Vec3>() / x.len() as f32;
        let deepest = hooke::diagnostics::max_penetration(&model, &x, &[]);
        ((c - start).dot(downhill), deepest)
    };
    let (creep, deepest) = slide(24.0, 120);
    assert!(creep.abs() < 1e-3, "crept {creep} m in 2 s");
    assert!(deepest < 0.01 * 0.002);
    // From rest, s = ½at² after 1 s.
    let (s, _) = slide(35.0, 60);
    let theta = 35f32.to_radians();
    let expected = 9.81 * (theta.sin() - 0.4 * theta.cos());
    let a = 2.0 * s;
    assert!((a - expected).abs() < 0.05 * expected, "a = {a}, expected {expected}");
}
