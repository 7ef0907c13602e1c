//! Shared scene builders for the physics tests. Every mesh is generated here by code.
#![allow(dead_code)]

use glam::{Quat, Vec3};
use hooke::{ClothGrid, ClothMaterial, Control, ModelBuilder, Solver, XpbdSettings, XpbdSolver};
use std::sync::Arc;

/// A square cloth of side `size` (m) with `n × n` particles hanging in the x–y plane, row 0 on
/// top at y = 0, pinned along its whole top edge.
pub fn hanging_cloth(n: usize, size: f32, material: ClothMaterial) -> (Arc<hooke::Model>, Control) {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", n, n, size / (n - 1) as f32);
    g.rotation = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, -size / 2.0, 0.0);
    g.material = material;
    let id = b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    for c in 0..n {
        control.pin(model.bodies()[id.0].grid_index(0, c).unwrap());
    }
    (model, control)
}

/// Runs `frames` frames at `fps` and returns the solver.
pub fn run(
    model: &Arc<hooke::Model>,
    control: &Control,
    settings: XpbdSettings,
    frames: usize,
    fps: f32,
) -> XpbdSolver {
    let mut s = XpbdSolver::new(model.clone(), settings).unwrap();
    for _ in 0..frames {
        s.step(control, 1.0 / fps).unwrap();
    }
    s
}

/// Mean drop (m) of the bottom row of an `n × n` hanging cloth below its rest height.
pub fn bottom_sag(model: &hooke::Model, solver: &mut XpbdSolver, n: usize) -> f32 {
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    let body = &model.bodies()[0];
    let mut sum = 0.0;
    for c in 0..n {
        let k = body.grid_index(n - 1, c).unwrap() as usize;
        sum += model.particle_position()[k].y - x[k].y;
    }
    sum / n as f32
}
