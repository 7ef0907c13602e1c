//! Collisions with colliders on the GPU: Coulomb friction, and no tunnelling through thin ones.

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

/// A mesh collider (a box given as 12 triangles, sampled into a signed distance grid), turning
/// and moving under keyframes, with friction: the GPU samples the grid with the CPU's formula,
/// so the trajectories agree bit for bit on lavapipe, and no particle ends inside the box.
#[test]
fn a_mesh_collider_matches_the_cpu_on_the_gpu() {
    use hooke::collision::{ColliderMesh, GridResolution, SdfGrid, SignMethod};
    let ctx = gpu_or_skip!();
    let (p, t) = scenes::cube_mesh(Vec3::new(-0.15, 0.0, -0.15), Vec3::new(0.15, 0.25, 0.15));
    let (mesh, _) = ColliderMesh::new(&p, &t, SignMethod::PseudoNormals).unwrap();
    let grid = Arc::new(SdfGrid::build(&mesh, GridResolution::Cells(16), None).unwrap());
    let mut g = ClothGrid::new("cloth", 10, 10, 0.04);
    g.center = Vec3::new(0.02, 0.4, 0.01);
    g.material.thickness = 0.01;
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&g).unwrap();
    b.add_collider(Collider::new("mesh box", Shape::Sdf(grid)).with_friction(0.5, 0.4)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let keys = vec![
        Keyframe::translation(0.0, Vec3::ZERO),
        Keyframe { time: 0.5, translation: Vec3::new(0.05, 0.02, 0.0), rotation: Quat::from_rotation_y(0.4) },
    ];
    let mut control = Control::new();
    control.animate_collider(0, Arc::new(Motion::new(keys).unwrap()));
    let s = XpbdSettings { substeps: 10, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    for _ in 0..30 {
        cpu.step(&control, 1.0 / 60.0).unwrap();
        gpu.step(&control, 1.0 / 60.0).unwrap();
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    // At the end the box rests at its last key.
    let pose = hooke::collision::Pose { translation: Vec3::new(0.05, 0.02, 0.0), rotation: Quat::from_rotation_y(0.4) };
    let deepest = hooke::diagnostics::max_penetration(&model, &g.particle_position, &[pose]);
    eprintln!("mesh collider on the GPU: |Δx| vs CPU {dx:.3e} m, deepest {deepest:.2e} m");
    assert!(deepest < 0.001, "{deepest}");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(dx < 1e-3, "{dx}");
}

/// Triangle contact on the GPU: a coarse cloth (6 × 6 particles 0.2 m apart) draped over a
/// sphere, held out of it between its particles by the triangles' virtual particles, with the
/// CPU's trajectory bit for bit on lavapipe.
#[test]
fn a_coarse_cloth_on_a_sphere_matches_the_cpu_on_the_gpu() {
    let ctx = gpu_or_skip!();
    let (radius, centre) = (0.3f32, Vec3::new(0.0, 0.3, 0.0));
    let mut g = ClothGrid::new("coarse", 6, 6, 0.2);
    g.center = Vec3::new(0.01, 0.75, -0.02);
    g.material.thickness = 0.01;
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&g).unwrap();
    b.add_collider(Collider::new("sphere", Shape::Sphere { center: centre, radius }).with_friction(0.6, 0.5)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let s = XpbdSettings { iterations: 4, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    for _ in 0..60 {
        cpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
    }
    let (c, x) = (state_of(&mut cpu), state_of(&mut gpu).particle_position);
    let dx = max_diff(&c.particle_position, &x);
    // The deepest point of the surface inside the sphere, at the triangles' centroids.
    let deepest = model
        .triangles()
        .iter()
        .map(|t| radius - ((x[t[0] as usize] + x[t[1] as usize] + x[t[2] as usize]) / 3.0 - centre).length())
        .fold(f32::NEG_INFINITY, f32::max);
    eprintln!("coarse cloth on the GPU: |Δx| vs CPU {dx:.3e} m, deepest centroid {deepest:.4} m inside");
    assert!(deepest < 0.0, "a triangle's centroid is {deepest} m inside the sphere");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(dx < 1e-3, "{dx}");
}
