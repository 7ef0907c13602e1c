//! The state every CPU solver steps: one [`Particle`] record (x⁰ with w, d) and one velocity
//! per particle, and the time.
//!
//! **Precision.** Positions are `f32`. With many substeps the motion of one substep (v·h, or
//! g·h² ≈ 7 µm at h = 1/1200 s) is close to the spacing of `f32` values near 1 m (0.12 µm), so
//! a velocity recomputed as (x − x⁰)/h from rounded positions is visibly wrong (a pendulum
//! whose bob weighs more than its rope does not even start to swing at h = 1/9600 s). The
//! solvers therefore keep, per particle, the position x⁰ at the start of the substep and the
//! displacement d = x − x⁰ of the substep separately: constraints read xᵢ − xⱼ as
//! (xᵢ⁰ − xⱼ⁰) + (dᵢ − dⱼ), corrections go into d, and the velocity is d/h with no
//! cancellation. Between substeps d is folded into x⁰ by the finish stage.

use crate::{Model, State};
use glam::{Vec3, Vec4};

/// A particle as the solvers see it: position at the start of the substep with its effective
/// inverse mass (x, y, z, w; w = 0 while pinned), and its displacement in this substep
/// (dx, dy, dz, 0). 32 bytes, so one constraint's two records are two cache-line halves.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(32))]
pub(crate) struct Particle {
    /// x⁰ (m) and w (1/kg).
    pub x: Vec4,
    /// d (m), last lane 0.
    pub d: Vec4,
}

impl Particle {
    /// Current position x⁰ + d (m).
    #[inline(always)]
    pub fn position(&self) -> Vec3 {
        (self.x + self.d).truncate()
    }
}

/// Positions, velocities and time of a CPU solver.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SolverState {
    /// One record per particle.
    pub particles: Vec<Particle>,
    /// Velocity (m/s), one per particle.
    pub velocity: Vec<Vec3>,
    /// Simulated time (s).
    pub time: f64,
}

impl SolverState {
    /// The model's initial state, with the model's inverse masses.
    pub fn from_model(model: &Model) -> SolverState {
        let particles = model
            .particle_position()
            .iter()
            .zip(model.particle_inv_mass())
            .map(|(x, &w)| Particle { x: x.extend(w), d: Vec4::ZERO })
            .collect();
        SolverState { particles, velocity: model.particle_velocity().to_vec(), time: 0.0 }
    }

    /// Copies positions (x⁰ + d) into `out`.
    pub fn read_positions(&self, out: &mut Vec<Vec3>) {
        out.clear();
        out.extend(self.particles.iter().map(Particle::position));
    }

    /// Copies the state into `out`.
    pub fn read(&self, out: &mut State) {
        self.read_positions(&mut out.particle_position);
        out.particle_velocity.clone_from(&self.velocity);
        out.time = self.time;
    }

    /// Loads `state` (already checked against the model): positions with d = 0, inverse
    /// masses kept.
    pub fn write(&mut self, state: &State) {
        for (p, q) in self.particles.iter_mut().zip(&state.particle_position) {
            p.x = q.extend(p.x.w);
            p.d = Vec4::ZERO;
        }
        self.velocity.clone_from(&state.particle_velocity);
        self.time = state.time;
    }

    /// Sets every particle's w to the model's inverse mass (pins of the last frame off).
    pub fn reset_inverse_masses(&mut self, model: &Model) {
        for (p, &w) in self.particles.iter_mut().zip(model.particle_inv_mass()) {
            p.x.w = w;
        }
    }

    /// The first particle whose position, displacement or velocity is not finite.
    pub fn first_non_finite(&self) -> Option<usize> {
        self.particles
            .iter()
            .zip(&self.velocity)
            .position(|(p, v)| !p.x.is_finite() || !p.d.is_finite() || !v.is_finite())
    }
}
