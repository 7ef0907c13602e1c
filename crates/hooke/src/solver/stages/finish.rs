//! The finish stage: the substep's displacement becomes position (and, for the position-based
//! solvers, velocity).

use super::for_particles;
use crate::solver::state::{Particle, SolverState};
use glam::{Vec3, Vec4};

/// The finish of one particle: v ← d/h, x⁰ ← x⁰ + d, d ← 0 (`inv_h` = 1/h). Shared by
/// [`velocity_from_displacement`] and the fused pass of
/// [`predict`](super::predict::predict), so that both give the same bits.
#[inline(always)]
pub(crate) fn finish_one(q: &mut Particle, v: &mut Vec3, inv_h: f32) {
    let x0 = q.x.truncate();
    let d = q.d.truncate();
    *v = d * inv_h;
    q.x = (x0 + d).extend(q.x.w);
    q.d = Vec4::ZERO;
}

/// v ← d/h, x⁰ ← x⁰ + d, d ← 0 for every particle (position-based solvers; article §3.1's
/// last step). `inv_h` is 1/h (1/s).
pub(crate) fn velocity_from_displacement(state: &mut SolverState, inv_h: f32, parallel: bool) {
    let run = |_: usize, p: &mut [Particle], v: &mut [Vec3]| {
        for (q, v) in p.iter_mut().zip(v) {
            finish_one(q, v, inv_h);
        }
        0
    };
    for_particles(parallel, &mut state.particles, &mut state.velocity, run);
}

/// x⁰ ← x⁰ + d, d ← 0 for every particle, velocities kept (force-based solvers).
pub(crate) fn advance(state: &mut SolverState) {
    for q in &mut state.particles {
        let x0 = q.x.truncate();
        q.x = (x0 + q.d.truncate()).extend(q.x.w);
        q.d = Vec4::ZERO;
    }
}
