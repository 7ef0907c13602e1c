//! The explicit integrators' substep as one fused pass (see the [stages](crate::solver::stages)
//! documentation): for each particle, the gather of its spring forces and its triangles'
//! aerodynamic shares (the aerodynamics stage's second half), the integrator's step (predict),
//! the collision response (colliders) and the new position (finish), reading the state at the
//! start of the substep and writing the next one into a second buffer.

use super::{Integrator, MAX_PARTICLE_CHUNK, MIN_PARTICLE_CHUNK};
use crate::Model;
use crate::collision::{self, ColliderBroadPhase, ColliderPlacement};
use crate::solver::spring_gather::{PairVisitor, Phase, SpringGather};
use crate::solver::{forward_euler, stages, symplectic_euler, verlet};
use glam::{Vec3, Vec4};
use std::ops::Range;

/// The chunk of particles per parallel task, or `None` to run on the calling thread: about
/// four chunks per thread, at least [`MIN_PARTICLE_CHUNK`] particles each, an even number
/// (particles are evaluated in pairs, see [`SpringGather`]).
pub(crate) fn particle_chunk(n: usize, parallel: bool) -> Option<usize> {
    let threads = rayon::current_num_threads();
    (parallel && threads > 1 && n >= 2 * MIN_PARTICLE_CHUNK)
        .then(|| n.div_ceil(8 * threads).clamp(MIN_PARTICLE_CHUNK / 2, MAX_PARTICLE_CHUNK / 2) * 2)
}

/// Everything that acts on a particle besides gravity, for one state.
pub(crate) struct Forces<'a> {
    pub model: &'a Model,
    pub gather: &'a SpringGather,
    pub phase: &'a [Phase],
    /// A third of each triangle's aerodynamic force (N, xyz) and drag rate (kg/s, w), if
    /// aerodynamics are on.
    pub aero: Option<&'a [Vec4]>,
    /// The step (s) the aerodynamic forces are limited for
    /// ([`limited_force`](crate::forces::aerodynamics::limited_force)).
    pub h: f32,
    /// The force of the angle sets on each particle (N), if the model has any
    /// (`constraint_forces.rs`).
    pub angles: Option<&'a [Vec3]>,
}

impl Forces<'_> {
    /// Calls `f.visit(p, force)` for every particle p in `range` (which starts at an even
    /// index), in order, with its spring and aerodynamic force (N in xyz, w = 0).
    #[inline(always)]
    pub fn for_each<V: ParticleVisitor>(&self, range: Range<usize>, f: &mut V) {
        let pairs = range.start / 2..range.end.div_ceil(2);
        self.gather.for_each_pair(pairs, self.phase, &mut PerParticle { forces: self, end: range.end, inner: f });
    }

    /// The aerodynamic force on particle `p` (its triangles' shares, limited for the step h
    /// with the particle's inverse mass) and that of its angle constraints (N in xyz, w = 0).
    #[inline(always)]
    fn aero(&self, p: usize) -> Vec4 {
        let aero = match self.aero {
            Some(tf) => stages::aerodynamics::particle_force(self.model, tf, p, self.h, self.phase[p].x.w).extend(0.0),
            None => Vec4::ZERO,
        };
        match self.angles {
            Some(a) => aero + a[p].extend(0.0),
            None => aero,
        }
    }
}

/// What [`Forces::for_each`] hands each particle's force to (`visit` is `#[inline(always)]` in
/// every implementation, so that it is compiled into the SIMD loop).
pub(crate) trait ParticleVisitor {
    /// Receives the force on particle `p` (N in xyz, w = 0; gravity not included).
    fn visit(&mut self, p: usize, force: Vec4);
}

impl<F: FnMut(usize, Vec4)> ParticleVisitor for F {
    #[inline(always)]
    fn visit(&mut self, p: usize, force: Vec4) {
        self(p, force)
    }
}

/// Splits a pair's spring forces into its particles and adds their aerodynamic forces.
struct PerParticle<'a, 'f, V> {
    forces: &'a Forces<'f>,
    /// One past the last particle to visit.
    end: usize,
    inner: &'a mut V,
}

impl<V: ParticleVisitor> PairVisitor for PerParticle<'_, '_, V> {
    #[inline(always)]
    fn visit(&mut self, m: usize, pair: [Vec4; 2]) {
        for (h, force) in pair.into_iter().enumerate() {
            let p = 2 * m + h;
            if p < self.end {
                self.inner.visit(p, force + self.forces.aero(p));
            }
        }
    }
}

/// The explicit step of particles `start..start + new.len()` (see [`ExplicitPass::run`]).
struct Advance<'a, 'f> {
    pass: &'a ExplicitPass<'f>,
    start: usize,
    new: &'a mut [Phase],
    d: &'a mut [Vec3],
    touching: u32,
}

impl ParticleVisitor for Advance<'_, '_> {
    #[inline(always)]
    fn visit(&mut self, p: usize, force: Vec4) {
        let k = p - self.start;
        self.touching += self.pass.advance(p, force, &mut self.new[k], &mut self.d[k]);
    }
}

/// One step of an explicit integrator for a range of particles: force, integration and
/// collisions of each particle in one go, reading the state at the start of the step and
/// writing the new one (pinned particles are copied; the caller moves them).
pub(crate) struct ExplicitPass<'a> {
    pub forces: Forces<'a>,
    pub pinned: &'a [bool],
    /// The colliders' placements in this substep, one per collider.
    pub placements: &'a [ColliderPlacement],
    /// Their broad phase.
    pub broad: &'a ColliderBroadPhase,
    pub integrator: Integrator,
    /// Gravity (m/s²) in xyz, w = 0.
    pub gravity: Vec4,
    pub h: f32,
    pub inv_h: f32,
    pub retain: f32,
}

impl ExplicitPass<'_> {
    /// Advances particles `start..start + new.len()` into `new`; for Verlet also their step
    /// displacements in `d` (read as the previous step's). Returns how many touch a collider.
    /// `start` must be even.
    pub fn run(&self, start: usize, new: &mut [Phase], d: &mut [Vec3]) -> u32 {
        debug_assert!(start.is_multiple_of(2));
        let end = start + new.len();
        let mut advance = Advance { pass: self, start, new, d, touching: 0 };
        self.forces.for_each(start..end, &mut advance);
        advance.touching
    }

    /// Advances particle `p` under the force `f` (N in xyz, w = 0; gravity not included);
    /// returns 1 if it touches a collider. The update runs on (x, y, z, w) vectors: the w
    /// lanes of force, gravity and velocity are 0, so the position's w (the inverse mass) is
    /// kept exactly.
    #[inline(always)]
    fn advance(&self, p: usize, f: Vec4, new: &mut Phase, d: &mut Vec3) -> u32 {
        let old = self.forces.phase[p];
        if self.pinned[p] {
            *new = old;
            return 0;
        }
        let (h, inv_h, retain) = (self.h, self.inv_h, self.retain);
        let mut v = old.v;
        let a = self.gravity + f * old.x.w;
        let mut step = match self.integrator {
            Integrator::ForwardEuler => {
                let (d, v1) = forward_euler::step(v, a, h, retain);
                v = v1;
                d
            }
            Integrator::SymplecticEuler => {
                let (d, v1) = symplectic_euler::step(v, a, h, retain);
                v = v1;
                d
            }
            _ => verlet::step(d.extend(0.0), a, h, retain),
        };
        let mut touching = 0;
        let colliders = self.forces.model.colliders();
        if !colliders.is_empty() {
            let mut moved = step.truncate();
            let radius = self.forces.model.particle_radius()[p];
            if collision::resolve_particle(
                colliders,
                0..colliders.len(),
                self.placements,
                self.broad,
                old.x.truncate(),
                &mut moved,
                radius,
            ) > 0.0
            {
                touching = 1;
                v += (moved.extend(0.0) - step) * inv_h;
                step = moved.extend(0.0);
            }
        }
        if self.integrator == Integrator::Verlet {
            // Verlet's next step starts from this displacement; the Euler steps do not read it.
            v = verlet::velocity(step, inv_h);
            *d = step.truncate();
        }
        *new = Phase { x: old.x + step, v };
        touching
    }
}
