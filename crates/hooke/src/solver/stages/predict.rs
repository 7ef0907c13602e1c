//! The predict stage of the position-based solvers (article §3.1, first step): external
//! forces and gravity advance the velocity, the velocity the position; pinned particles move
//! along their paths instead.

use super::for_particles;
use crate::solver::state::{Particle, SolverState};
use glam::{Vec3, Vec4};

/// v ← v·e^{−c h} + h (g + w f) and d ← h v for every free particle (w > 0), d ← 0 for pinned
/// ones. `force` is the external (aerodynamic) force per particle (N), if any; g is the gravity
/// of the particle's world.
///
/// With `finish` (1/h of the substep before) each particle is first finished
/// ([`finish_one`](super::finish::finish_one)): the previous substep's finish and this
/// prediction in one pass over the particles, with the bits of the two passes, where no stage
/// comes between them (no aerodynamics, which reads the finished velocities of every particle).
pub(crate) fn predict(
    state: &mut SolverState,
    force: Option<&[Vec3]>,
    model: &crate::Model,
    h: f32,
    decay: f32,
    finish: Option<f32>,
    parallel: bool,
) {
    let (worlds, particle_world) = (model.worlds(), model.particle_world());
    let run = |start: usize, p: &mut [Particle], v: &mut [Vec3]| {
        for k in 0..p.len() {
            if let Some(inv_h) = finish {
                super::finish::finish_one(&mut p[k], &mut v[k], inv_h);
            }
            let w = p[k].x.w;
            if w > 0.0 {
                let gravity = match particle_world.get(start + k) {
                    Some(&world) => worlds[world as usize].gravity,
                    None => worlds[0].gravity,
                };
                let a = match force {
                    Some(f) => gravity + f[start + k] * w,
                    None => gravity,
                };
                v[k] = v[k] * decay + a * h;
                p[k].d = (v[k] * h).extend(0.0);
            } else {
                p[k].d = Vec4::ZERO;
            }
        }
        0
    };
    for_particles(parallel, &mut state.particles, &mut state.velocity, run);
}

/// A pinned particle during a frame: its index, where it was at the start of the frame and
/// where it must be at the end (m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PinMove {
    pub particle: u32,
    pub start: Vec3,
    pub target: Vec3,
}

/// Moves every pinned particle the fraction `frac` of the way along its path by the end of
/// the substep: d = lerp(start, target, frac) − x⁰.
pub(crate) fn move_pins(state: &mut SolverState, pins: &[PinMove], frac: f32) {
    for pin in pins {
        let q = &mut state.particles[pin.particle as usize];
        q.d = (pin.start.lerp(pin.target, frac) - q.x.truncate()).extend(0.0);
    }
}

/// Sets w = 0 on the plan's pinned particles and returns their paths, from where each is now.
pub(crate) fn begin_pins(state: &mut SolverState, pins: &[crate::solver::PinPath]) -> Vec<PinMove> {
    pins.iter()
        .map(|pin| {
            let p = &mut state.particles[pin.particle as usize];
            p.x.w = 0.0;
            let start = p.position();
            PinMove { particle: pin.particle, start, target: pin.target.unwrap_or(start) }
        })
        .collect()
}
