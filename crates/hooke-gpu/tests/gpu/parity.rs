//! CPU/GPU parity: the same model, control and settings give the CPU's trajectories.

use crate::*;

/// CPU/GPU parity without contact: a hanging cloth and a swinging rope, 100 frames of
/// 20 substeps, the same colour order on both. The kernels do the CPU's operations in its
/// order, so on a device that rounds like the CPU (lavapipe does: IEEE division and square
/// root, no contraction into fused multiply-adds) the trajectories agree to the last bit,
/// which is asserted there; elsewhere the tolerance of 0.1 mm leaves room for GPUs with
/// approximate division and square root or fused multiply-adds, whose rounding differences
/// the swinging rope carries along (measured on the H200: 3.1 µm).
#[test]
fn parity_without_contact() {
    let ctx = gpu_or_skip!();
    let (model, control) = contact_free_scene();
    let (mut cpu, mut gpu) = run_both(&ctx, &model, &control, settings(), 100);
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    let dv = max_diff(&c.particle_velocity, &g.particle_velocity);
    eprintln!("contact-free parity after 100 frames: max |Δx| = {dx:.3e} m, max |Δv| = {dv:.3e} m/s");
    if rounding(&ctx).exact() {
        assert_eq!((dx, dv), (0.0, 0.0), "lavapipe rounds like the CPU: the runs must be identical");
    }
    assert!(dx < 1e-4, "max vertex difference {dx} m");
    assert_eq!(gpu.time(), cpu.time());
    // The scene really moved (the rope swung down from its horizontal start at 1.5 m).
    let rope = &model.bodies()[1];
    let tip = rope.particles.end as usize - 1;
    assert!(c.particle_position[tip].y < 1.2, "rope tip at {}", c.particle_position[tip]);
}

/// PBD mode matches too (a rope, so it stays cheap).
#[test]
fn parity_pbd_mode() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    let rope = b.add_rope(&Rope::straight("rope", Vec3::new(0.0, 1.0, 0.0), Vec3::new(1.0, 1.0, 0.0), 12)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(model.bodies()[rope.0].particles.start);
    let s = XpbdSettings { substeps: 4, iterations: 5, method: Method::Pbd { stiffness: 0.5 }, ..settings() };
    let (mut cpu, mut gpu) = run_both(&ctx, &model, &control, s, 60);
    let dx = max_diff(&state_of(&mut cpu).particle_position, &state_of(&mut gpu).particle_position);
    eprintln!("PBD parity after 60 frames: max |Δx| = {dx:.3e} m");
    assert!(dx < 1e-4, "{dx}");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert_eq!(gpu.info().name, "pbd-gpu");
}

/// The cloth over a sphere and a ground plane, pinned at two corners (the article's §5.5
/// demo without wind): after 100 frames the GPU agrees with the CPU in mean position (1 mm),
/// deepest penetration and total energy (1 %), and never sinks into the sphere by more than
/// 1 % of its radius.
#[test]
fn parity_with_sphere_contact() {
    let ctx = gpu_or_skip!();
    let (model, control, radius) = sphere_scene();
    let frames = 100;
    let mut cpu = XpbdSolver::new(model.clone(), settings()).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    let mut deepest_sphere = 0.0f32;
    let sphere = &model.colliders()[0];
    let mut contacts = 0;
    for f in 0..frames {
        cpu.step(&control, 1.0 / 60.0).unwrap();
        let report = gpu.step(&control, 1.0 / 60.0).unwrap();
        contacts = contacts.max(report.contacts);
        if f % 10 == 9 {
            let g = state_of(&mut gpu);
            for (x, r) in g.particle_position.iter().zip(model.particle_radius()) {
                let (phi, _) = sphere.signed_distance_at(*x, &hooke::collision::Pose::IDENTITY);
                deepest_sphere = deepest_sphere.max(r - phi);
            }
        }
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dc = Diagnostics::measure(&model, &c.particle_position, &c.particle_velocity, c.time, &[]);
    let dg = Diagnostics::measure(&model, &g.particle_position, &g.particle_velocity, g.time, &[]);
    let mean = |x: &[Vec3]| x.iter().copied().sum::<Vec3>() / x.len() as f32;
    let dmean = (mean(&c.particle_position) - mean(&g.particle_position)).length();
    let dx = max_diff(&c.particle_position, &g.particle_position);
    let (ec, eg) = (dc.total_energy(), dg.total_energy());
    eprintln!(
        "sphere parity after {frames} frames: |Δ mean x| = {dmean:.3e} m, max |Δx| = {dx:.3e} m, \
         energy cpu {ec:.6} J gpu {eg:.6} J (rel {:.3e}), penetration cpu {:.3e} m gpu {:.3e} m, \
         deepest into the sphere {deepest_sphere:.3e} m, contacts {contacts}",
        (eg - ec).abs() / ec.abs(),
        dc.max_penetration,
        dg.max_penetration
    );
    assert!(contacts > 0, "the cloth never touched anything");
    // Cloth folding over a sphere under friction is chaotic: a difference in the last bit grows
    // to millimetres within a second. On a device that rounds like the CPU (lavapipe: the
    // kernels do the CPU's operations in its order) the runs are identical and the 1 mm bound
    // holds with room to spare (measured: 0). A GPU whose division and square root are not
    // correctly rounded (the H200: up to 2 units of rounding, see
    // `device_rounding_against_the_cpu`) ends up 4.6 mm away in mean position after 100
    // frames with energy within 0.03 % — a different fold, not a different physics — so
    // there the bound is 1 cm.
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0, "lavapipe rounds like the CPU: the runs must be identical");
    }
    let bound = if rounding(&ctx).exact() { 1e-3 } else { 1e-2 };
    assert!(dmean < bound, "mean position differs by {dmean} m (bound {bound} m)");
    assert!((eg - ec).abs() <= 0.01 * ec.abs(), "energy {eg} J vs {ec} J");
    // 1 % of the CPU's deepest penetration, or 1 µm when both are at rounding level.
    let dp = (dg.max_penetration - dc.max_penetration).abs();
    assert!(
        dp <= (0.01 * dc.max_penetration.abs()).max(1e-6),
        "penetration {} vs {}",
        dg.max_penetration,
        dc.max_penetration
    );
    assert!(deepest_sphere < 0.01 * radius, "sank {deepest_sphere} m into the sphere");
}

/// Moving colliders of every other shape (capsule, box), pin targets and aerodynamic drag and
/// lift, against the CPU over 30 frames: bit for bit where the device rounds like the CPU.
#[test]
fn parity_with_moving_colliders_pin_targets_and_wind() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    b.set_air(Air { density: 1.2, drag_coefficient: 1.0, lift_coefficient: 0.5 }).unwrap();
    let mut g = ClothGrid::new("cloth", 12, 12, 0.05);
    g.center = Vec3::new(0.0, 0.6, 0.0);
    let cloth = b.add_cloth_grid(&g).unwrap();
    let motion =
        Motion::new(vec![Keyframe::translation(0.0, Vec3::ZERO), Keyframe::translation(0.5, Vec3::new(0.2, 0.0, 0.0))])
            .unwrap();
    b.add_collider(
        Collider::new(
            "bar",
            Shape::Capsule { a: Vec3::new(-0.5, 0.4, 0.0), b: Vec3::new(0.5, 0.4, 0.1), radius: 0.05 },
        )
        .with_friction(0.3, 0.2),
    )
    .unwrap();
    b.add_collider(
        Collider::new(
            "box",
            Shape::Box {
                center: Vec3::new(0.1, 0.1, 0.0),
                half_extents: Vec3::new(0.2, 0.1, 0.15),
                rotation: Quat::from_rotation_y(0.3),
            },
        )
        .with_friction(0.5, 0.4),
    )
    .unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let body = &model.bodies()[cloth.0];
    let mut control = Control::new();
    control.wind = Vec3::new(3.0, 0.0, 1.0);
    control.animate_collider(0, Arc::new(motion));
    let corner = body.grid_index(0, 0).unwrap();
    let target = model.particle_position()[corner as usize] + Vec3::new(0.0, 0.1, 0.0);
    control.pin_to(corner, target);
    let (mut cpu, mut gpu) = run_both(&ctx, &model, &control, settings(), 30);
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    let mean = |x: &[Vec3]| x.iter().copied().sum::<Vec3>() / x.len() as f32;
    let dmean = (mean(&c.particle_position) - mean(&g.particle_position)).length();
    eprintln!("moving colliders + pins + wind after 30 frames: max |Δx| = {dx:.3e} m, |Δ mean| = {dmean:.3e} m");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0, "lavapipe rounds like the CPU: the runs must be identical");
    }
    assert!(dmean < 1e-3, "{dmean}");
    assert!(dx < 1e-2, "{dx}");
    // The pin reached its target on both (lerp(start, target, 1) is the target exactly).
    assert_eq!(g.particle_position[corner as usize], target);
    assert_eq!(c.particle_position[corner as usize], target);
}

/// Issue #9's input C on the GPU — a cloth hung from one corner, which used to turn for ever
/// about the pin's vertical — for 2 s: bit for bit the CPU's trajectory where the device rounds
/// like the CPU, and no angular momentum about the pin's vertical on either.
#[test]
fn corner_hung_cloth_matches_the_cpu_and_does_not_spin() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 20, 20, 0.05);
    g.center = Vec3::new(0.0, 2.0, 0.0);
    let id = b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let pin = model.bodies()[id.0].grid_index(0, 0).unwrap();
    let mut control = Control::new();
    control.pin(pin);
    let s = XpbdSettings { air_damping: 0.5, ..settings() };
    let (mut cpu, mut gpu) = run_both(&ctx, &model, &control, s, 120);
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let origin = model.particle_position()[pin as usize];
    let spin = |s: &State| -> f64 {
        s.particle_position
            .iter()
            .zip(&s.particle_velocity)
            .zip(model.particle_mass())
            .map(|((x, v), &m)| m as f64 * (*x - origin).as_dvec3().cross(v.as_dvec3()).y)
            .sum()
    };
    let dx = max_diff(&c.particle_position, &g.particle_position);
    eprintln!(
        "corner-hung cloth after 2 s: L_y cpu {:.2e}, gpu {:.2e} kg·m²/s, max |Δx| {dx:.2e} m",
        spin(&c),
        spin(&g)
    );
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    }
    assert!(spin(&g).abs() < 1e-7 && spin(&c).abs() < 1e-7);
}
