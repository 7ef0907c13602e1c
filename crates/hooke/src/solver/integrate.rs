//! What the integrator rules share: the values they advance ([`Integrable`]) and the air
//! damping per step ([`velocity_retention`]).

use std::ops::{Add, Mul};

/// A value the integrator rules can advance: positions, velocities or displacements, with
/// `S` the scalar type of time. Implemented for `f64` and `f32` (reference tests), and for
/// `Vec3`, `Vec4` and `DVec3` (the solvers), by the blanket impl.
pub trait Integrable<S>: Copy + Add<Output = Self> + Mul<S, Output = Self> {}

impl<T, S> Integrable<S> for T where T: Copy + Add<Output = T> + Mul<S, Output = T> {}

/// Velocity retention e^{−c h} of an air damping rate `rate` c (1/s) over a step of `h` (s):
/// the factor velocities are multiplied by each step, so the decay e^{−c t} does not depend on
/// the step.
#[inline]
pub fn velocity_retention(rate: f32, h: f32) -> f32 {
    (-rate * h).exp()
}
