//! Position Verlet with damping, article §2.3 (Jakobsen 2001, "Advanced character physics").
//!
//! The state is the position x and the previous position x⁻; the velocity is implicit in
//! their difference. With the acceleration a(x) (m/s²), the step h (s) and a damping factor:
//!
//! x⁺ = x + (x − x⁻)(1 − damping) + a h².
//!
//! The damping factor comes from the solver's air damping **rate** c (1/s), not from a
//! per-step constant, so that the result does not depend on the frame rate:
//! 1 − damping = e^{−c h}, and the velocity decays as e^{−c t} for any h.
//!
//! **Displacement form.** hooke stores the last displacement d = x − x⁻ instead of x⁻, and
//! advances it: d⁺ = d e^{−c h} + a h², x⁺ = x + d⁺ ([`step`]). This is the same recurrence,
//! but x − x⁻ is never recomputed from two rounded `f32` positions near 1 m whose difference
//! may be a few µm (the precision note of the XPBD kernels). If the step changes between frames
//! (h ≠ h_prev), d is first rescaled by h/h_prev — time-corrected Verlet (Dummer 2005, as in
//! NvCloth's `integrateParticles`), so that d/h stays the velocity.
//!
//! **Velocity.** hooke reports v = (x⁺ − x)/h = d⁺/h ([`velocity`]): the mean velocity over the
//! last step, first-order accurate at t, exact at t − h/2. The central difference
//! (x⁺ − x⁻)/(2h) would be second-order, but it belongs to the previous position, one step
//! behind the positions handed out. d⁺/h is what the next step actually uses, what a
//! collision's position correction changes, what [`Solver::write_state`](crate::Solver::write_state)
//! can set (d = v h), and with it the angular momentum Σ m x × v is conserved exactly by
//! central forces. Velocity-dependent forces (spring damping, aerodynamics) are evaluated with
//! this v.
//!
//! In exact arithmetic this sequence of positions is the one [symplectic
//! Euler](super::symplectic_euler) gives (both are the Störmer–Verlet/leapfrog scheme with
//! v_{n+½} = (x_{n+1} − x_n)/h), so it shares its properties: no energy drift, bounded
//! oscillation of order ωh, stable for ωh < 2.
//!
//! **One rule, two precisions.** [`step`] and [`velocity`] are generic over [`Integrable`]:
//! the [`ForceSolver`](super::ForceSolver) calls them per particle with `Vec3`/`f32`; the tests
//! with `f64`.

use super::integrate::Integrable;
use std::ops::Mul;

/// The next displacement d⁺ = d·retain + a·h² (m), from the previous displacement `d` = x − x⁻
/// (m), the acceleration `a` (m/s²) at x, the step `h` (s) and `retain` = 1 − damping =
/// e^{−c h}. The new position is x + d⁺.
#[inline(always)]
pub fn step<T: Integrable<S>, S: Copy + Mul<Output = S>>(d: T, a: T, h: S, retain: S) -> T {
    d * retain + a * (h * h)
}

/// The velocity (x⁺ − x)/h = d⁺/h (m/s) of a displacement `d` (m) taken over a step of
/// 1/`inv_h` seconds.
#[inline(always)]
pub fn velocity<T: Integrable<S>, S: Copy>(d: T, inv_h: S) -> T {
    d * inv_h
}
