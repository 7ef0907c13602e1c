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
    // A fixed budget (the scene iterates to a tolerance, per substep on the CPU and per frame
    // on the GPU).
    (xpbd.substeps, xpbd.iterations, xpbd.auto_iterations) = (20, 2, None);
    scene
}

/// What [`Flag::switch`] measured.
struct Switch {
    /// The largest difference of any particle's velocity one frame after the switch (m/s).
    jump: f32,
    /// The fastest particle at the switch (m/s).
    speed: f32,
    /// The largest distance between the two runs' particles 0.5 s after the switch (m).
    apart: f32,
}

/// What [`Flag::run`] returns.
struct Run {
    /// The fastest particle at the switch (m/s).
    speed: f32,
    /// Velocities one frame after the switch (m/s), one per particle.
    velocity: Vec<Vec3>,
    /// Positions [`AFTER`] frames later (m), one per particle.
    position: Vec<Vec3>,
}

/// Frames after the switch before the two runs are compared for `apart` (0.5 s).
const AFTER: usize = 30;

/// The flag in a steady `wind` (m/s) run for some frames: its scene and its state then,
/// where every run of [`Flag::run`] starts (written into a fresh solver, so that a run and its
/// changed twin start from the same bits without running the same frames twice).
struct Flag {
    scene: Scene,
    start: State,
    options: SolverOptions,
}

impl Flag {
    /// The flag run for `frames` − 1 frames ([`Flag::run`] runs the last, on `options`'
    /// backend). These frames only set the flag fluttering, so they run on the CPU whatever
    /// the backend (on lavapipe the GPU's Gauss–Seidel is the CPU's trajectory bit for bit —
    /// `golden_trajectories_on_lavapipe_are_unchanged` — and there they were two fifths of the
    /// GPU test's time).
    fn new(options: &SolverOptions, frames: usize, wind: Vec3) -> Flag {
        let mut scene = flag();
        scene.wind = wind;
        let mut s = hooke_sim::make_solver(&scene, &SolverOptions::new(Backend::Cpu)).unwrap().solver;
        for _ in 1..frames {
            s.step(&scene.control_at(s.time()), 1.0 / scene.fps).unwrap();
        }
        let mut start = State::from_model(&scene.model);
        s.read_state(&mut start);
        Flag { scene, start, options: options.clone() }
    }

    /// From the start, one frame (so that whatever a solver keeps from frame to frame is
    /// there at the switch, as in a run that never stopped), then the flag's material changed
    /// by `change` in the running solver (none: as it is), one frame and [`AFTER`] more: the
    /// fastest particle at the switch (m/s), the velocities one frame after it and the
    /// positions after the last.
    fn run(&self, change: Option<&dyn Fn(hooke::ClothMaterial) -> hooke::ClothMaterial>) -> Run {
        let scene = &self.scene;
        let dt = 1.0 / scene.fps;
        let mut s = hooke_sim::make_solver(scene, &self.options).unwrap().solver;
        s.write_state(&self.start).unwrap();
        s.step(&scene.control_at(s.time()), dt).unwrap();
        let mut state = State::from_model(&scene.model);
        s.read_state(&mut state);
        let speed = state.particle_velocity.iter().map(|v| v.length()).fold(0.0, f32::max);
        if let Some(change) = change {
            let BodyMaterial::Cloth(m) = scene.model.bodies()[0].material else { unreachable!("the flag is a cloth") };
            s.notify_model_changed(Arc::new(scene.model.with_cloth_material(0, change(m)).unwrap())).unwrap();
        }
        s.step(&scene.control_at(s.time()), dt).unwrap();
        s.read_state(&mut state);
        let velocity = std::mem::take(&mut state.particle_velocity);
        for _ in 0..AFTER {
            s.step(&scene.control_at(s.time()), dt).unwrap();
        }
        s.read_state(&mut state);
        Run { speed, velocity, position: state.particle_position }
    }

    /// The run with `change` against `unchanged` (this flag's [`Flag::run`] with none).
    fn switch(&self, unchanged: &Run, change: &dyn Fn(hooke::ClothMaterial) -> hooke::ClothMaterial) -> Switch {
        let changed = self.run(Some(change));
        let diff = |x: &[Vec3], y: &[Vec3]| x.iter().zip(y).map(|(p, q)| (*p - *q).length()).fold(0.0, f32::max);
        Switch {
            jump: diff(&changed.velocity, &unchanged.velocity),
            speed: changed.speed,
            apart: diff(&changed.position, &unchanged.position),
        }
    }
}

/// The checks of both tests. A change of material is a change of force, so the velocities
/// one frame later differ in proportion to it (about 0.27 m/s per unit of relative change of the
/// bending modulus on this flag); what must not be there is a jump that does not scale with
/// the change, as a reset of any solver state would cause. So: the same material given again
/// changes nothing at all; a ×1.01 change moves the velocities 1/100 of what a ×2 change does
/// (within 10 %); a ×1.1 change stays under 0.05 m/s while the flag flutters at over 1 m/s; and
/// the change takes effect (half a second later the two flags are apart). And the pipeline issue's own
/// case: stretch stiffness ×10 in a 5 m/s wind along the flag, under 0.05 m/s at the switch.
fn check(backend: &str, options: &SolverOptions) {
    let frames = 120;
    let flag = Flag::new(options, frames, Vec3::new(5.0, 0.0, 0.5));
    let unchanged = flag.run(None);
    let bending = |factor: f32| {
        flag.switch(&unchanged, &move |m: hooke::ClothMaterial| hooke::ClothMaterial {
            bending_modulus: factor * m.bending_modulus,
            ..m
        })
    };
    let (same, tiny, small, big) = (bending(1.0), bending(1.01), bending(1.1), bending(2.0));
    for (name, s) in [("x1", &same), ("x1.01", &tiny), ("x1.1", &small), ("x2", &big)] {
        println!(
            "{backend} {name}: velocity difference at the switch {:.4} m/s (fastest particle {:.3} m/s); the two flags 0.5 s later up to {:.1} mm apart",
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
    let along = Flag::new(options, frames, Vec3::new(5.0, 0.0, 0.0));
    let stretch = along
        .switch(&along.run(None), &|m| hooke::ClothMaterial { stretch_stiffness: 10.0 * m.stretch_stiffness, ..m });
    println!(
        "{backend} stretch x10: velocity difference at the switch {:.4} m/s; 0.5 s later {:.1} mm apart",
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
