//! What a renderer and a live editor rely on: frames recorded into the caller's encoder with
//! no read-back, kernels compiled once per device, parameters and topology changed without
//! recompiling, colliders moved and turned through the control.

use crate::*;
use hooke::collision::Pose;

/// 100 frames recorded with `encode_frame` into encoders of the caller's and submitted by it
/// map no buffer — counted where buffers are mapped, on a device of this test's own, and by
/// the solver — and give bit for bit the trajectory of 100 `step`s (which read the health
/// record after each frame: 100 maps).
#[test]
fn encode_frame_maps_no_buffer_and_matches_step() {
    let _ = gpu_or_skip!();
    let ctx = GpuContext::new().unwrap();
    let (model, control) = contact_free_scene();
    let s = XpbdSettings { substeps: 5, ..settings() };
    let mut encoded = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    let mut stepped = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    for _ in 0..100 {
        let mut enc = ctx.device().create_command_encoder(&Default::default());
        encoded.encode_frame(&mut enc, &control, 1.0 / 60.0).unwrap();
        ctx.queue().submit([enc.finish()]);
    }
    assert_eq!(encoded.read_backs(), 0, "read-backs while encoding 100 frames");
    assert_eq!(ctx.read_backs(), 0, "buffers mapped on the device while encoding 100 frames");
    for _ in 0..100 {
        stepped.step(&control, 1.0 / 60.0).unwrap();
    }
    assert_eq!(stepped.read_backs(), 100, "one health read per step");
    let (a, b) = (state_of(&mut encoded), state_of(&mut stepped));
    assert_eq!(a, b);
    assert_eq!(encoded.time(), stepped.time());
    // The rope swung (from its horizontal start 1.5 m up): the frames ran.
    let tip = model.bodies()[1].particles.end as usize - 1;
    let swing = (a.particle_position[tip] - model.particle_position()[tip]).length();
    assert!(swing > 0.3, "the rope's tip moved {swing} m");
}

/// Two frames recorded into one encoder are two frames: each gets its own constants (a pin
/// moving to a different target in each) and the result is that of two steps.
#[test]
fn frames_recorded_back_to_back_keep_their_own_constants() {
    let ctx = gpu_or_skip!();
    let (model, _) = contact_free_scene();
    let s = XpbdSettings { substeps: 4, ..settings() };
    let mut a = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    let mut b = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    let x0 = model.particle_position()[0];
    let mut first = Control::new();
    first.pin_to(0, x0 + Vec3::new(0.1, 0.0, 0.0));
    let mut second = Control::new();
    second.pin_to(0, x0 + Vec3::new(0.1, 0.2, 0.0));
    let mut enc = ctx.device().create_command_encoder(&Default::default());
    a.encode_frame(&mut enc, &first, 1.0 / 60.0).unwrap();
    a.encode_frame(&mut enc, &second, 1.0 / 60.0).unwrap();
    ctx.queue().submit([enc.finish()]);
    b.step(&first, 1.0 / 60.0).unwrap();
    b.step(&second, 1.0 / 60.0).unwrap();
    let (sa, sb) = (state_of(&mut a), state_of(&mut b));
    assert_eq!(sa, sb);
    assert_eq!(sa.particle_position[0], x0 + Vec3::new(0.1, 0.2, 0.0));
}

/// Kernels are compiled once per device: more solvers, a material change and a rebuild on
/// the same context compile nothing.
#[test]
fn kernels_are_compiled_once_per_device() {
    let ctx = gpu_or_skip!();
    let (model, control) = contact_free_scene();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    let compiled = ctx.kernel_compilations();
    assert_eq!(compiled, 1);
    let _second = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    let stiffer = ClothMaterial { stretch_stiffness: 5e4, ..ClothMaterial::default() };
    gpu.notify_model_changed(Arc::new(model.with_cloth_material(0, stiffer).unwrap())).unwrap();
    gpu.step(&control, 1.0 / 60.0).unwrap();
    let state = state_of(&mut gpu);
    gpu.rebuild(model.clone(), &state).unwrap();
    gpu.step(&control, 1.0 / 60.0).unwrap();
    assert_eq!(ctx.kernel_compilations(), compiled);
}

/// A material change through `notify_model_changed` gives on the GPU what it gives on the CPU
/// (bit for bit where the device rounds like the CPU), keeps the state (no jump at the
/// switch), and a model of another topology is refused with the error that says to rebuild.
#[test]
fn material_changes_match_the_cpu_and_keep_the_state() {
    let ctx = gpu_or_skip!();
    let (model, control) = contact_free_scene();
    let s = XpbdSettings { substeps: 5, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    for _ in 0..20 {
        cpu.step(&control, 1.0 / 60.0).unwrap();
        gpu.step(&control, 1.0 / 60.0).unwrap();
    }
    let before = state_of(&mut gpu);
    let changed = Arc::new(
        model
            .with_cloth_material(0, ClothMaterial { stretch_stiffness: 2e4, damping: 1e-3, ..ClothMaterial::default() })
            .unwrap()
            .with_gravity(Vec3::new(0.0, -5.0, 1.0))
            .unwrap(),
    );
    cpu.notify_model_changed(changed.clone()).unwrap();
    gpu.notify_model_changed(changed.clone()).unwrap();
    assert_eq!(state_of(&mut gpu), before, "the change itself moved nothing");
    for _ in 0..20 {
        cpu.step(&control, 1.0 / 60.0).unwrap();
        gpu.step(&control, 1.0 / 60.0).unwrap();
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    eprintln!("after a material and gravity change: max |Δx| cpu–gpu = {dx:.3e} m");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    } else {
        assert!(dx < 1e-4, "{dx}");
    }
    // Gravity now pulls along +z too: the cloth moved that way.
    let mean_z = g.particle_position.iter().map(|x| x.z).sum::<f32>() / g.particle_position.len() as f32;
    assert!(mean_z > 0.01, "{mean_z}");
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&ClothGrid::new("other", 4, 4, 0.1)).unwrap();
    let other = Arc::new(b.finalize().unwrap());
    assert!(matches!(gpu.notify_model_changed(other), Err(SolverError::TopologyChanged(_))));
}

/// A keyframed box that turns (30° about y over the second half-second) and one moved frame
/// by frame through `Control::move_collider` carry a cloth lying on them on the GPU as on the
/// CPU (bit for bit where the device rounds like the CPU).
#[test]
fn rotating_colliders_match_the_cpu() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 10, 10, 0.04);
    g.center = Vec3::new(0.0, 0.215, 0.0);
    b.add_cloth_grid(&g).unwrap();
    let shape = Shape::Box {
        center: Vec3::new(0.0, 0.1, 0.0),
        half_extents: Vec3::new(0.3, 0.1, 0.3),
        rotation: Quat::IDENTITY,
    };
    b.add_collider(Collider::new("table", shape).with_friction(0.8, 0.6)).unwrap();
    b.add_collider(Collider::new(
        "bar",
        Shape::Capsule { a: Vec3::new(-0.5, 0.5, 0.3), b: Vec3::new(0.5, 0.5, 0.3), radius: 0.05 },
    ))
    .unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let turn = Arc::new(
        Motion::new(vec![
            Keyframe::translation(0.0, Vec3::ZERO),
            Keyframe { time: 0.5, translation: Vec3::ZERO, rotation: Quat::IDENTITY },
            Keyframe { time: 1.0, translation: Vec3::new(0.0, 0.05, 0.0), rotation: Quat::from_rotation_y(0.5) },
        ])
        .unwrap(),
    );
    let s = XpbdSettings { substeps: 8, iterations: 2, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    for f in 0..60 {
        let mut control = Control::new();
        control.animate_collider(0, turn.clone());
        let t = (f + 1) as f32 / 60.0;
        control
            .move_collider(1, Pose { translation: Vec3::new(0.0, -0.1 * t, 0.0), rotation: Quat::from_rotation_x(t) });
        cpu.step(&control, 1.0 / 60.0).unwrap();
        gpu.step(&control, 1.0 / 60.0).unwrap();
    }
    let (c, g) = (state_of(&mut cpu), state_of(&mut gpu));
    let dx = max_diff(&c.particle_position, &g.particle_position);
    // The cloth turned with the table: its centre particle went round by about the table's
    // 0.5 rad (friction holds it), so a corner moved by ~0.5 × its distance from the axis.
    let corner = 0;
    let start = model.particle_position()[corner];
    let angle = start.z.atan2(start.x) - c.particle_position[corner].z.atan2(c.particle_position[corner].x);
    eprintln!("rotating colliders: max |Δx| cpu–gpu = {dx:.3e} m, corner turned by {angle:.3} rad");
    assert!((angle - 0.5).abs() < 0.1, "the cloth turned by {angle} rad with the table's 0.5 rad");
    if rounding(&ctx).exact() {
        assert_eq!(dx, 0.0);
    } else {
        assert!(dx < 1e-3, "{dx}");
    }
}
