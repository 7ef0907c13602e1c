//! Run-time changes of a running scene: a material change takes effect without a jump, on the
//! CPU and on the GPU.

use crate::common;
use glam::Vec3;
use hooke::{BodyMaterial, State};
use hooke_io::scene::{self, Scene};
use hooke_sim::{Backend, SolverOptions};
use std::path::Path;
use std::sync::Arc;

/// The example flag in a steady 5 m/s wind (no gusts).
fn flag() -> Scene {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes/flag.toml");
    let mut scene = scene::load(&path, 1 << 30).unwrap();
    scene.wind = Vec3::new(5.0, 0.0, 0.0);
    scene.gust = None;
    scene
}

/// What [`switch`] measured.
struct Switch {
    /// The largest difference of any particle's velocity one frame after the switch (m/s).
    jump: f32,
    /// The fastest particle at the switch (m/s).
    speed: f32,
    /// The largest distance between the two runs' particles 1 s after the switch (m).
    apart: f32,
}

/// Runs the flag to t = 2 s twice, then on: once as it is, once with the stretch stiffness
/// ×10 given to the running solver at t = 2 s.
fn switch(options: &SolverOptions, frames: usize) -> Switch {
    let scene = flag();
    let mut a = hooke_sim::make_solver(&scene, options).unwrap().solver;
    let mut b = hooke_sim::make_solver(&scene, options).unwrap().solver;
    let dt = 1.0 / scene.fps;
    for _ in 0..frames {
        a.step(&scene.control_at(a.time()), dt).unwrap();
        b.step(&scene.control_at(b.time()), dt).unwrap();
    }
    let mut before = State::from_model(&scene.model);
    a.read_state(&mut before);
    let BodyMaterial::Cloth(m) = scene.model.bodies()[0].material else { unreachable!("the flag is a cloth") };
    let stiffer = hooke::ClothMaterial { stretch_stiffness: 10.0 * m.stretch_stiffness, ..m };
    b.notify_model_changed(Arc::new(scene.model.with_cloth_material(0, stiffer).unwrap())).unwrap();
    a.step(&scene.control_at(a.time()), dt).unwrap();
    b.step(&scene.control_at(b.time()), dt).unwrap();
    let (mut sa, mut sb) = (State::from_model(&scene.model), State::from_model(&scene.model));
    a.read_state(&mut sa);
    b.read_state(&mut sb);
    let diff = |x: &[Vec3], y: &[Vec3]| x.iter().zip(y).map(|(p, q)| (*p - *q).length()).fold(0.0, f32::max);
    let speed = before.particle_velocity.iter().map(|v| v.length()).fold(0.0, f32::max);
    let jump = diff(&sa.particle_velocity, &sb.particle_velocity);
    for _ in 0..60 {
        a.step(&scene.control_at(a.time()), dt).unwrap();
        b.step(&scene.control_at(b.time()), dt).unwrap();
    }
    a.read_state(&mut sa);
    b.read_state(&mut sb);
    Switch { jump, speed, apart: diff(&sa.particle_position, &sb.particle_position) }
}

/// The checks of both tests: no jump at the switch, while the flag was moving, and the change
/// did take effect (a second later the two flags are apart: 0.7 mm).
fn check(backend: &str, s: Switch) {
    println!(
        "{backend}: velocity difference at the switch {:.4} m/s (fastest particle {:.3} m/s); the two flags 1 s later up to {:.1} mm apart",
        s.jump,
        s.speed,
        1e3 * s.apart
    );
    assert!(s.jump < 0.05, "{backend}: the velocities jumped by {} m/s", s.jump);
    assert!(s.speed > 0.2, "{backend}: the flag is not moving ({} m/s): the test would prove nothing", s.speed);
    // Without the change the two runs would be identical, 0 m apart.
    assert!(s.apart > 1e-4, "{backend}: the change did not take effect ({} m apart)", s.apart);
}

/// Stretch stiffness ×10 at t = 2 s on the flag in a 5 m/s wind moves no particle's velocity
/// by more than 0.05 m/s at the switch, against the same run without the change — while the
/// flag moves at over 0.2 m/s, and with the change in force a second later (the two runs part).
#[test]
fn a_material_change_on_the_cpu_causes_no_jump() {
    check("CPU", switch(&SolverOptions::new(Backend::Cpu), 120));
}

/// The same on the GPU.
#[test]
fn a_material_change_on_the_gpu_causes_no_jump() {
    let ctx = gpu_or_skip!();
    let mut options = SolverOptions::new(Backend::Gpu);
    options.context = Some(ctx);
    check("GPU", switch(&options, 120));
}
