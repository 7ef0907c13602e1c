//! The colliders stage (article §4.2–4.3): each free particle is projected out of every
//! collider along the signed distance's gradient and its tangential displacement relative to
//! the collider is reduced by Coulomb friction (see [`crate::collision`]).

use super::for_particles;
use crate::Model;
use crate::collision::{self, ColliderBroadPhase, ColliderPlacement, TriangleContact};
use crate::solver::state::{Particle, SolverState};
use glam::Vec3;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the stage does to the velocity of a particle it moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Velocity {
    /// Nothing: the finish stage sets v = d/h from the corrected displacement (position-based
    /// solvers).
    FromDisplacement,
    /// v += Δd/h, the correction over the step (force-based solvers, whose velocity is their
    /// own state); `inv_h` is 1/h (1/s).
    Correct { inv_h: f32 },
}

/// Resolves every free particle (w > 0) against the colliders placed by `placements` (one per
/// collider), through their broad phase when `broad_phase` is set (else against every
/// collider; same result), then the cloth triangles of `triangles` through their virtual
/// particles ([`TriangleContact`]); returns how many particles touch a collider, directly or
/// through their triangles.
pub(crate) fn resolve(
    model: &Model,
    state: &mut SolverState,
    placements: &[ColliderPlacement],
    broad_phase: bool,
    triangles: &mut TriangleContact,
    velocity: Velocity,
    parallel: bool,
) -> u32 {
    let colliders = model.colliders();
    if colliders.is_empty() {
        return 0;
    }
    let radius = model.particle_radius();
    // Which particles touched directly (for the count, when triangles touch too).
    let touched: Vec<AtomicBool> = if triangles.is_empty() {
        Vec::new()
    } else {
        (0..state.particles.len()).map(|_| AtomicBool::new(false)).collect()
    };
    let broad = if broad_phase {
        ColliderBroadPhase::new(colliders, placements)
    } else {
        ColliderBroadPhase::everything(colliders.len())
    };
    let run = |start: usize, p: &mut [Particle], v: &mut [Vec3]| -> u32 {
        let mut touching = 0;
        for k in 0..p.len() {
            let q = &mut p[k];
            if q.x.w <= 0.0 {
                continue;
            }
            let x0 = q.x.truncate();
            let before = q.d.truncate();
            let mut d = before;
            let within = model.colliders_of_particle(start + k);
            let depth =
                collision::resolve_particle(colliders, within, placements, &broad, x0, &mut d, radius[start + k]);
            if depth > 0.0 {
                touching += 1;
                if let Some(t) = touched.get(start + k) {
                    t.store(true, Ordering::Relaxed);
                }
                if let Velocity::Correct { inv_h } = velocity {
                    v[k] += (d - before) * inv_h;
                }
            }
            q.d = d.extend(0.0);
        }
        touching
    };
    let touching = for_particles(parallel, &mut state.particles, &mut state.velocity, run);
    if triangles.is_empty() {
        return touching;
    }
    // Virtual particles: every correction from the positions after the particle pass, then
    // each particle's mean share (a Jacobi pass).
    let particles = &state.particles;
    let (start, moved) = (|i: usize| particles[i].x.truncate(), |i: usize| particles[i].d.truncate());
    if triangles.push(model, placements, &broad, start, moved, parallel) == 0 {
        return touching;
    }
    let triangles = &*triangles;
    let share =
        |i: usize| if particles[i].x.w > 0.0 { triangles.gather(model, i, |j| particles[j].x.w) } else { Vec3::ZERO };
    let shares: Vec<Vec3> = if parallel {
        (0..particles.len()).into_par_iter().with_min_len(256).map(share).collect()
    } else {
        (0..particles.len()).map(share).collect()
    };
    let mut touching = touching;
    for (i, share) in shares.into_iter().enumerate() {
        if share != Vec3::ZERO {
            // In contact through its triangles, if not directly.
            touching += !touched[i].load(Ordering::Relaxed) as u32;
            state.particles[i].d += share.extend(0.0);
            if let Velocity::Correct { inv_h } = velocity {
                state.velocity[i] += share * inv_h;
            }
        }
    }
    touching
}
