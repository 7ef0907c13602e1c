//! Run-time changes of a running scene: a material change takes effect without a jump, on the
//! CPU and on the GPU.

use crate::common;
use glam::Vec3;
use hooke::{BodyMaterial, State};
use hooke_io::scene::{self, Scene};
use hooke_sim::{Backend, SolverOptions};
use std::path::Path;
use std::sync::Arc;

/// The example flag in a steady wind of 5 m/s along it and 0.5 m/s across it (no gusts: a wind
/// along the flag alone keeps it flat, where bending has nothing to do), without tethers: they
/// are unilateral, and one switching on or off makes the response to a tiny change of
/// material as large as to a big one, which would hide the proportionality checked here.
fn flag() -> Scene {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes/flag.toml");
    let mut scene = scene::load(&path, 1 << 30).unwrap();
    scene.wind = Vec3::new(5.0, 0.0, 0.5);
    scene.gust = None;
    let scene::SolverChoice::Position(xpbd) = &mut scene.solver else { unreachable!("the flag is an XPBD scene") };
    xpbd.tethers = false;
    // A fixed budget (the scene iterates to a tolerance on the CPU, a fixed count on the GPU).
    (xpbd.substeps, xpbd.iterations, xpbd.auto_iterations) = (20, 2, None);
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

/// Runs the flag to t = 2 s twice, then on: once as it is, once with the bending modulus
/// multiplied by `factor` given to the running solver at t = 2 s (a stiffness change the
/// fluttering flag shows: its stretch is held by tethers either way).
fn switch(options: &SolverOptions, frames: usize, factor: f32) -> Switch {
    switch_material(options, frames, Vec3::new(5.0, 0.0, 0.5), |m| hooke::ClothMaterial {
        bending_modulus: factor * m.bending_modulus,
        ..m
    })
}

/// [`switch`] with any change of the flag's material, in a steady `wind` (m/s).
fn switch_material(
    options: &SolverOptions,
    frames: usize,
    wind: Vec3,
    change: impl Fn(hooke::ClothMaterial) -> hooke::ClothMaterial,
) -> Switch {
    let mut scene = flag();
    scene.wind = wind;
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
    let stiffer = change(m);
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

/// The checks of both tests. A change of material is a change of force, so the velocities
/// one frame later differ in proportion to it (about 0.27 m/s per unit of relative change of the
/// bending modulus on this flag); what must not be there is a jump that does not scale with
/// the change, as a reset of any solver state would cause. So: the same material given again
/// changes nothing at all; a ×1.01 change moves the velocities 1/100 of what a ×2 change does
/// (within 10 %); a ×1.1 change stays under 0.05 m/s while the flag flutters at over 1 m/s; and
/// the change takes effect (a second later the two flags are apart). And the pipeline issue's own
/// case: stretch stiffness ×10 in a 5 m/s wind along the flag, under 0.05 m/s at the switch.
fn check(backend: &str, options: &SolverOptions) {
    let frames = 120;
    let same = switch(options, frames, 1.0);
    let (tiny, small, big) =
        (switch(options, frames, 1.01), switch(options, frames, 1.1), switch(options, frames, 2.0));
    for (name, s) in [("x1", &same), ("x1.01", &tiny), ("x1.1", &small), ("x2", &big)] {
        println!(
            "{backend} {name}: velocity difference at the switch {:.4} m/s (fastest particle {:.3} m/s); the two flags 1 s later up to {:.1} mm apart",
            s.jump,
            s.speed,
            1e3 * s.apart
        );
    }
    assert_eq!((same.jump, same.apart), (0.0, 0.0), "{backend}: giving the same material again changed the run");
    assert!(big.speed > 1.0, "{backend}: the flag is not moving ({} m/s): the test would prove nothing", big.speed);
    let ratio = big.jump / tiny.jump;
    assert!(
        (90.0..110.0).contains(&ratio),
        "{backend}: the response is not proportional to the change (x2 / x1.01 = {ratio})"
    );
    assert!(small.jump < 0.05, "{backend}: a 10 % change moved the velocities by {} m/s", small.jump);
    assert!(small.apart > 1e-3, "{backend}: the change did not take effect ({} m apart)", small.apart);
    // The pipeline issue's case: stretch stiffness ×10 at t = 2 s on the flag in a 5 m/s wind
    // (along it) moves no velocity by more than 0.05 m/s at the switch, and takes effect.
    let stretch = switch_material(options, frames, Vec3::new(5.0, 0.0, 0.0), |m| hooke::ClothMaterial {
        stretch_stiffness: 10.0 * m.stretch_stiffness,
        ..m
    });
    println!(
        "{backend} stretch x10: velocity difference at the switch {:.4} m/s; 1 s later {:.1} mm apart",
        stretch.jump,
        1e3 * stretch.apart
    );
    assert!(stretch.jump < 0.05, "{backend}: stretch ×10 moved the velocities by {} m/s", stretch.jump);
    assert!(stretch.apart > 1e-4, "{backend}: the stretch change did not take effect");
}

/// A change of the bending modulus at t = 2 s on the flag in a steady wind changes the
/// velocities in proportion to the change, with nothing on top, and takes effect.
#[test]
fn a_material_change_on_the_cpu_causes_no_jump() {
    check("CPU", &SolverOptions::new(Backend::Cpu));
}

/// The same on the GPU.
#[test]
fn a_material_change_on_the_gpu_causes_no_jump() {
    let ctx = gpu_or_skip!();
    let mut options = SolverOptions::new(Backend::Gpu);
    options.context = Some(ctx);
    check("GPU", &options);
}
