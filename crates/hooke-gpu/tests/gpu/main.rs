//! GPU tests, one test binary (each binary links wgpu, and the build machine has two cores):
//! shaders on a device and with naga, CPU/GPU parity, contact, friction, normals and tangents,
//! blow-up detection, the convergence monitor's residuals, the Jacobi solve, XPBD's independence of iterations, frame timing, and
//! what a renderer relies on (recording into its encoder, no read-backs, kernels compiled once).
//!
//! They need a wgpu adapter; Mesa's lavapipe (a CPU Vulkan driver) is enough. Without one a
//! test prints "skipped: no adapter" and passes, unless `HOOKE_REQUIRE_GPU=1` (CI), where it
//! fails with an install hint. Scenes are small because lavapipe is slow.

use glam::{Quat, Vec3};
use hooke::collision::{Collider, Keyframe, Motion, Shape};
use hooke::{
    Air, ClothGrid, ClothMaterial, ConstraintFamily, Control, Diagnostics, Method, Model, ModelBuilder, Rope, Solver,
    SolverError, Stage, State, XpbdSettings, XpbdSolver,
};
use hooke_gpu::{ContactSearch, GpuContext, GpuSettings, GpuSolve, GpuXpbdSolver, LocalSweepMode, shaders};
use std::sync::Arc;
use std::time::Instant;

#[path = "../common/mod.rs"]
#[macro_use]
mod common;
/// The shared device, lavapipe without its worker threads: this binary's dispatches are small
/// (`common::gpu_without_lavapipe_threads`).
fn device() -> Option<Arc<GpuContext>> {
    common::gpu_without_lavapipe_threads()
}

/// `common`'s macro, through [`device`].
macro_rules! gpu_or_skip {
    () => {
        match crate::device() {
            Some(g) => g,
            None => return,
        }
    };
}

// The engine's own test scenes (hanging cloth, …), shared rather than copied.
#[path = "../../../hooke/tests/common/mod.rs"]
mod scenes;

mod aerodynamics;
mod bending;
mod contacts;
mod convergence;
mod device;
mod friction;
mod independence;
mod jacobi;
mod local_sweep;
mod naga_validation;
mod parity;
mod pipeline;
mod robustness;
mod ropes;
mod self_collision;
mod surface;
mod tearing;
mod tiles;
mod timing;
mod worlds;

pub(crate) fn settings() -> XpbdSettings {
    // A fixed count on the CPU too: the GPU runs its `substeps` always, and the CPU's tension
    // limit (which ropes at these loads can reach) would otherwise change the CPU's count.
    XpbdSettings { parallel: false, max_substeps: 0, ..XpbdSettings::default() }
}

/// Runs `frames` frames on both backends from the same model and control.
pub(crate) fn run_both(
    ctx: &Arc<GpuContext>,
    model: &Arc<Model>,
    control: &Control,
    s: XpbdSettings,
    frames: usize,
) -> (XpbdSolver, GpuXpbdSolver) {
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    let t = Instant::now();
    for _ in 0..frames {
        cpu.step(control, 1.0 / 60.0).unwrap();
    }
    let t_cpu = t.elapsed();
    let t = Instant::now();
    for _ in 0..frames {
        gpu.step(control, 1.0 / 60.0).unwrap();
    }
    eprintln!("{frames} frames: cpu {t_cpu:?}, gpu {:?}", t.elapsed());
    (cpu, gpu)
}

pub(crate) fn state_of(s: &mut dyn Solver) -> State {
    let mut st = State { particle_position: Vec::new(), particle_velocity: Vec::new(), time: 0.0 };
    s.read_state(&mut st);
    st
}

pub(crate) fn max_diff(a: &[Vec3], b: &[Vec3]) -> f32 {
    a.iter().zip(b).map(|(a, b)| (*a - *b).length()).fold(0.0, f32::max)
}

/// A hanging 16×16 cloth pinned along its top edge, and a 20-particle rope pinned at one end
/// and released horizontally. No colliders.
pub(crate) fn contact_free_scene() -> (Arc<Model>, Control) {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 16, 16, 0.05);
    g.rotation = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    let cloth = b.add_cloth_grid(&g).unwrap();
    let rope = b.add_rope(&Rope::straight("rope", Vec3::new(1.0, 1.5, 0.0), Vec3::new(2.0, 1.5, 0.0), 20)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    for c in 0..16 {
        control.pin(model.bodies()[cloth.0].grid_index(0, c).unwrap());
    }
    control.pin(model.bodies()[rope.0].particles.start);
    (model, control)
}

/// A 20×20 cloth of 1 m falling onto a sphere of radius 0.3 m above a ground plane, pinned at
/// two corners.
pub(crate) fn sphere_scene() -> (Arc<Model>, Control, f32) {
    let radius = 0.3;
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 20, 20, 1.0 / 19.0);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    let cloth = b.add_cloth_grid(&g).unwrap();
    b.add_collider(
        Collider::new("sphere", Shape::Sphere { center: Vec3::new(0.1, 0.6, 0.0), radius }).with_friction(0.4, 0.3),
    )
    .unwrap();
    b.add_collider(
        Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y }).with_friction(0.5, 0.4),
    )
    .unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let body = &model.bodies()[cloth.0];
    let mut control = Control::new();
    control.pin(body.grid_index(0, 0).unwrap());
    control.pin(body.grid_index(0, 19).unwrap());
    (model, control, radius)
}

/// CPU area-weighted vertex normals.
pub(crate) fn cpu_normals(model: &Model, x: &[Vec3]) -> Vec<Vec3> {
    let mut n = vec![Vec3::ZERO; x.len()];
    for t in model.triangles() {
        let [a, b, c] = t.map(|i| x[i as usize]);
        let f = (b - a).cross(c - a);
        for &i in t {
            n[i as usize] += f;
        }
    }
    n.iter().map(|v| v.normalize_or_zero()).collect()
}

pub(crate) use device::rounding;
