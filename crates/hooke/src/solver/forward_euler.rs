//! Forward (explicit) Euler, article §2.1.
//!
//! With position x (m), velocity v (m/s), acceleration a(x, v) = g + f(x, v)/m (m/s²) and the
//! step h (s):
//!
//! x⁺ = x + h v,  v⁺ = v + h a(x, v).
//!
//! The position moves with the **old** velocity, which is what makes the method unstable for
//! oscillations: for the undamped oscillator a = −ω²x the step is the linear map
//! (x, v/ω) ↦ [[1, ωh], [−ωh, 1]] (x, v/ω), a rotation scaled by √(1 + (ωh)²), so the amplitude
//! √(x² + (v/ω)²) grows by exactly √(1 + (ωh)²) > 1 per step and the energy by 1 + (ωh)²,
//! whatever h. hooke keeps it to show this (article §2.1); use [symplectic
//! Euler](super::symplectic_euler) or [implicit Euler](super::implicit_euler) for real work.
//!
//! With an air damping rate c (1/s) the velocity also decays by r = e^{−c h} per step, so the
//! decay does not depend on the step: v⁺ = r v + h a.
//!
//! **One rule, two precisions.** [`step`] is generic over [`Integrable`]: the
//! [`ForceSolver`](super::ForceSolver) calls it per particle with `Vec3`/`f32`, and the tests
//! call the very same function with `f64` to check the amplification factor to 1e-9.

use super::integrate::Integrable;

/// One forward-Euler step for velocity `v`, acceleration `a` = a(x, v) evaluated at the start
/// of the step, step `h` (s) and velocity retention `retain` = e^{−c h} (1 for no air
/// damping). Returns the displacement h·v (m) (to be added to x) and the new velocity.
#[inline(always)]
pub fn step<T: Integrable<S>, S: Copy>(v: T, a: T, h: S, retain: S) -> (T, T) {
    (v * h, v * retain + a * h)
}
