//! Symplectic (semi-implicit) Euler: the velocity first, then the position with the new
//! velocity.
//!
//! With position x (m), velocity v (m/s), acceleration a(x, v) = g + f(x, v)/m (m/s²) and the
//! step h (s):
//!
//! v⁺ = v + h a(x, v),  x⁺ = x + h v⁺.
//!
//! Using v⁺ in the position update makes the step a symplectic map (for forces that depend on
//! x only): for the undamped oscillator a = −ω²x its matrix has determinant 1, its eigenvalues
//! lie on the unit circle for ωh < 2, and it conserves the modified energy
//! ω²x² + v² − hω² x v exactly. The true energy therefore oscillates with a relative amplitude of
//! order ωh but does not drift, over any number of steps. This is the integrator of NVIDIA
//! Warp's cloth benchmark (DESIGN §4) and hooke's default force-based method; it needs
//! h < 2/ω_max for the stiffest spring.
//!
//! Central forces (springs and their axial damping) evaluated at x give Σ xᵢ × fᵢ = 0, so the
//! angular momentum L = Σ mᵢ xᵢ × vᵢ is conserved exactly: L⁺ = Σ mᵢ (xᵢ + h vᵢ⁺) × vᵢ⁺ =
//! Σ mᵢ xᵢ × vᵢ⁺ = L + h Σ xᵢ × fᵢ = L.
//!
//! With an air damping rate c (1/s): v⁺ = e^{−c h} v + h a.
//!
//! **One rule, two precisions.** [`step`] is generic over [`Integrable`]: the
//! [`ForceSolver`](super::ForceSolver) calls it per particle with `Vec3`/`f32`; the tests call
//! it with `f64`.

use super::integrate::Integrable;

/// One symplectic-Euler step for velocity `v`, acceleration `a` = a(x, v) evaluated at the
/// start of the step, step `h` (s) and velocity retention `retain` = e^{−c h}. Returns the
/// displacement h·v⁺ (m) and the new velocity v⁺ (m/s).
#[inline(always)]
pub fn step<T: Integrable<S>, S: Copy>(v: T, a: T, h: S, retain: S) -> (T, T) {
    let v1 = v * retain + a * h;
    (v1 * h, v1)
}
