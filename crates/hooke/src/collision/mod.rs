//! Collisions with analytic colliders and Coulomb friction (article §4).
//!
//! Every substep, after the constraint projection, each particle of radius r is tested against
//! each collider's signed distance φ (see [`Shape`]). Where φ(x) < r the particle is projected
//! back to the surface along the normal, and the tangential displacement of the step is then
//! reduced by Coulomb friction ([`Friction`]), measured relative to the collider's own motion
//! so that a moving collider drags the cloth lying on it.

mod friction;
mod motion;
mod shape;

pub use friction::Friction;
pub use motion::{Keyframe, Motion};
pub use shape::Shape;

use glam::Vec3;

/// A collider: a shape, its friction, and an optional keyframed translation.
#[derive(Clone, Debug, PartialEq)]
pub struct Collider {
    /// Name used in reports.
    pub name: String,
    /// Shape in its rest placement.
    pub shape: Shape,
    /// Friction coefficients against particles.
    pub friction: Friction,
    /// Keyframed translation (empty for a static collider).
    pub motion: Motion,
}

impl Collider {
    /// A static collider without friction.
    pub fn new(name: impl Into<String>, shape: Shape) -> Collider {
        Collider { name: name.into(), shape, friction: Friction::NONE, motion: Motion::default() }
    }

    /// Sets the friction coefficients.
    pub fn with_friction(mut self, static_coefficient: f32, kinetic_coefficient: f32) -> Self {
        self.friction = Friction { static_coefficient, kinetic_coefficient };
        self
    }

    /// Sets the keyframed translation.
    pub fn with_motion(mut self, motion: Motion) -> Self {
        self.motion = motion;
        self
    }

    /// Signed distance (m) and outward normal at `x` at time `t` (s).
    #[inline]
    pub fn signed_distance_at(&self, x: Vec3, t: f64) -> (f32, Vec3) {
        self.shape.signed_distance(x, self.motion.translation_at(t))
    }
}

/// Collider placement for one substep: its translation at the start and at the end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ColliderStep {
    pub offset_end: Vec3,
    pub displacement: Vec3,
}

impl ColliderStep {
    pub fn new(c: &Collider, t0: f64, t1: f64) -> ColliderStep {
        let a = c.motion.translation_at(t0);
        let b = c.motion.translation_at(t1);
        ColliderStep { offset_end: b, displacement: b - a }
    }
}

/// Projects one particle out of every collider and applies friction.
///
/// `x0` is the particle's position at the start of the substep and `d` its displacement in
/// the substep after constraint projection (see the solver's precision note); `radius` is its
/// collision radius (m). Corrections are added to `d`. Returns the deepest normal correction
/// applied (m, 0 when not in contact).
#[inline]
pub(crate) fn resolve_particle(
    colliders: &[Collider],
    steps: &[ColliderStep],
    x0: Vec3,
    d: &mut Vec3,
    radius: f32,
) -> f32 {
    let mut deepest = 0.0f32;
    for (c, s) in colliders.iter().zip(steps) {
        let (phi, n) = c.shape.signed_distance(x0 + *d, s.offset_end);
        let depth = radius - phi;
        if depth > 0.0 {
            *d += n * depth;
            let rel = *d - s.displacement;
            let tangential = rel - n * rel.dot(n);
            *d += c.friction.correction(tangential, depth);
            deepest = deepest.max(depth);
        }
    }
    deepest
}
