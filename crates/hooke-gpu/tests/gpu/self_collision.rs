//! Particle contacts on the GPU: the same spatial hash and Jacobi gather as the CPU.

use crate::*;
use hooke::collision::deepest_overlap;

/// A 12 × 12 cloth pinned at its four corners (a trampoline) and a 10 × 10 cloth dropped on it
/// from 3 cm above, both 2 cm thick with self-collision on, at 1.2 cm spacing (thickness above
/// the spacing, so the layers cannot slip between particles). Returns the model and control.
fn trampoline() -> (Arc<Model>, Control) {
    let mut b = ModelBuilder::new();
    let mut ids = Vec::new();
    for (k, (n, y)) in [(12, 0.5f32), (10, 0.53)].into_iter().enumerate() {
        let mut g = ClothGrid::new(format!("layer{k}"), n, n, 0.012);
        g.center = Vec3::new(0.002 * k as f32, y, -0.001 * k as f32);
        g.material.thickness = 0.02;
        g.material.self_collision = true;
        ids.push(b.add_cloth_grid(&g).unwrap());
    }
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    let low = &model.bodies()[ids[0].0];
    for (r, c) in [(0, 0), (0, 11), (11, 0), (11, 11)] {
        control.pin(low.grid_index(r, c).unwrap());
    }
    (model, control)
}

/// A cloth dropped onto a pinned one, both with self-collision, for 40 frames: on lavapipe
/// the GPU's positions and velocities equal the CPU's to the last bit (the hash's table is
/// integer work, the gather the CPU's operations in its order); elsewhere within 1 mm. Both
/// keep the layers at least 90 % of the thickness apart, and the GPU reports the contacts.
#[test]
fn self_collision_matches_the_cpu() {
    let ctx = gpu_or_skip!();
    let (model, control) = trampoline();
    let mut cpu = XpbdSolver::new(model.clone(), settings()).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    let (mut cpu_contacts, mut gpu_contacts) = (0, 0);
    for _ in 0..40 {
        cpu_contacts = cpu_contacts.max(cpu.step(&control, 1.0 / 60.0).unwrap().particle_contacts);
        gpu_contacts = gpu_contacts.max(gpu.step(&control, 1.0 / 60.0).unwrap().particle_contacts);
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    let dv = max_diff(&c.particle_velocity, &g.particle_velocity);
    let all: Vec<u32> = (0..model.particle_count() as u32).collect();
    let closest = |x: &[Vec3]| deepest_overlap(&model, x, &all).map_or(1.0, |o| o.distance / o.contact_distance);
    let (cc, gc) = (closest(&c.particle_position), closest(&g.particle_position));
    eprintln!(
        "self-collision parity after 40 frames: max |Δx| = {dx:.3e} m, |Δv| = {dv:.3e} m/s; closest pair {cc:.4} t (CPU), \
         {gc:.4} t (GPU); particles in contact {cpu_contacts} (CPU), {gpu_contacts} (GPU)"
    );
    if rounding(&ctx).exact() {
        assert_eq!((dx, dv), (0.0, 0.0), "lavapipe rounds like the CPU: the runs must be identical");
        assert_eq!(cpu_contacts, gpu_contacts);
    }
    assert!(dx < 1e-3, "max vertex difference {dx} m");
    assert!(cpu_contacts > 50 && gpu_contacts > 50, "the upper cloth must land on the lower one");
    assert!(cc >= 0.9 && gc >= 0.9, "layers {cc} (CPU) and {gc} (GPU) of the thickness apart");
    // The upper cloth rests on the lower one instead of falling through it.
    let upper = &model.bodies()[1];
    let lower_mean = |s: &State, b: &hooke::Body| {
        b.particles.clone().map(|p| s.particle_position[p as usize].y).sum::<f32>() / b.particles.len() as f32
    };
    assert!(lower_mean(&g, upper) > lower_mean(&g, &model.bodies()[0]) + 0.015, "the upper cloth fell through");
}

/// Switching self-collision on by a material change builds the contact kernels; the GPU then
/// matches the CPU switched the same way (bit for bit on lavapipe).
#[test]
fn self_collision_switched_on_by_a_material_change() {
    let ctx = gpu_or_skip!();
    let (on, control) = trampoline();
    let mut off = (*on).clone();
    for body in 0..2 {
        let hooke::BodyMaterial::Cloth(m) = off.bodies()[body].material else { unreachable!() };
        off = off.with_cloth_material(body, ClothMaterial { self_collision: false, ..m }).unwrap();
    }
    let off = Arc::new(off);
    let mut cpu = XpbdSolver::new(off.clone(), settings()).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), off.clone(), settings()).unwrap();
    for frame in 0..30 {
        if frame == 5 {
            cpu.notify_model_changed(on.clone()).unwrap();
            gpu.notify_model_changed(on.clone()).unwrap();
        }
        cpu.step(&control, 1.0 / 60.0).unwrap();
        gpu.step(&control, 1.0 / 60.0).unwrap();
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    eprintln!("self-collision switched on at frame 5: max |Δx| = {dx:.3e} m after 30 frames");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(dx < 1e-3, "{dx}");
    let all: Vec<u32> = (0..on.particle_count() as u32).collect();
    let closest = deepest_overlap(&on, &g.particle_position, &all).map_or(1.0, |o| o.distance / o.contact_distance);
    assert!(closest >= 0.9, "layers {closest} of the thickness apart");
}

/// The speed clamp on the GPU: a 1 cm cloth with self-collision and the clamp, falling for
/// 0.5 s, matches the CPU (bit for bit on lavapipe) and never moves faster than
/// 0.2 × thickness / h = 2.4 m/s (it would reach 4.9 m/s).
#[test]
fn speed_clamp_matches_the_cpu() {
    let ctx = gpu_or_skip!();
    let mut g = ClothGrid::new("cloth", 8, 8, 0.01);
    g.center = Vec3::new(0.0, 2.0, 0.0);
    g.material.thickness = 0.01;
    g.material.self_collision = true;
    g.material.self_collision_speed_clamp = true;
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let s = XpbdSettings { air_damping: 0.0, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    let cap = 0.2 * 0.01 * 1200.0;
    let mut fastest = 0.0f32;
    for _ in 0..30 {
        cpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        let g = state_of(&mut gpu);
        fastest = g.particle_velocity.iter().map(|v| v.length()).fold(fastest, f32::max);
    }
    let dx = max_diff(&state_of(&mut cpu).particle_position, &state_of(&mut gpu).particle_position);
    eprintln!("speed clamp: fastest particle {fastest:.4} m/s (cap {cap} m/s); |Δx| vs CPU {dx:.3e} m");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(dx < 1e-3, "{dx}");
    assert!(fastest <= cap * (1.0 + 1e-5) && fastest > 0.99 * cap, "{fastest} m/s against {cap} m/s");
}

/// A self-collision thickness apart from the thickness (3 cm against 1 cm): two layers dropped
/// onto the ground rest 3 cm apart on the GPU as on the CPU, bit for bit on lavapipe.
#[test]
fn self_collision_thickness_matches_the_cpu() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    for (k, y) in [0.02f32, 0.08].into_iter().enumerate() {
        let mut g = ClothGrid::new(format!("layer{k}"), 8, 8, 0.02);
        g.center = Vec3::new(0.0, y, 0.0);
        g.material.thickness = 0.01;
        g.material.self_collision = true;
        g.material.self_collision_thickness = Some(0.03);
        b.add_cloth_grid(&g).unwrap();
    }
    b.add_collider(
        Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y }).with_friction(0.6, 0.5),
    )
    .unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let s = XpbdSettings { substeps: 10, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    for _ in 0..60 {
        cpu.step(&Control::new(), 1.0 / 60.0).unwrap();
        gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    let mean =
        |r: std::ops::Range<usize>| g.particle_position[r.clone()].iter().map(|p| p.y).sum::<f32>() / r.len() as f32;
    let gap = mean(64..128) - mean(0..64);
    eprintln!("self-collision thickness on the GPU: layers {gap:.4} m apart; |Δx| vs CPU {dx:.3e} m");
    assert!(gap > 0.9 * 0.03 && gap < 0.033, "{gap}");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(dx < 1e-3, "{dx}");
}
