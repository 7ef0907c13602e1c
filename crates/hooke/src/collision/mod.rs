//! Collisions with analytic colliders and Coulomb friction (article §4).
//!
//! Every substep, after the constraint projection, each particle of radius r is tested against
//! each collider's signed distance φ (see [`Shape`]). Where φ(x) < r the particle is projected
//! back to the surface along the normal, and the tangential displacement of the step is then
//! reduced by Coulomb friction ([`Friction`]), measured relative to the collider's own motion
//! so that a moving collider drags the cloth lying on it.
//!
//! The model holds each collider's shape and friction ([`Collider`]); where it is — at rest,
//! keyframed ([`Motion`]) or moved frame by frame (a [`Pose`], e.g. dragged in a viewer) — is
//! an input of each frame, in [`Control`](crate::Control). Solvers turn it into one
//! [`ColliderPlacement`] per collider and substep.

mod friction;
mod motion;
mod placement;
pub mod self_collision;
mod shape;
pub mod spatial_hash;

pub use friction::Friction;
pub use motion::{Keyframe, Motion};
pub use placement::{ColliderPlacement, Pose};
pub use self_collision::{DEPENETRATION_SPEED, Overlap, deepest_overlap};
pub use shape::Shape;
pub use spatial_hash::SpatialHash;

use glam::Vec3;

/// A collider: a shape in its rest placement and its friction.
#[derive(Clone, Debug, PartialEq)]
pub struct Collider {
    /// Name used in reports.
    pub name: String,
    /// Shape in its rest placement.
    pub shape: Shape,
    /// Friction coefficients against particles.
    pub friction: Friction,
}

impl Collider {
    /// A collider without friction.
    pub fn new(name: impl Into<String>, shape: Shape) -> Collider {
        Collider { name: name.into(), shape, friction: Friction::NONE }
    }

    /// Sets the friction coefficients.
    pub fn with_friction(mut self, static_coefficient: f32, kinetic_coefficient: f32) -> Self {
        self.friction = Friction { static_coefficient, kinetic_coefficient };
        self
    }

    /// Signed distance (m) and outward normal at `x` with the collider at `pose`.
    #[inline]
    pub fn signed_distance_at(&self, x: Vec3, pose: &Pose) -> (f32, Vec3) {
        ColliderPlacement::between(pose, pose).signed_distance(&self.shape, x)
    }
}

/// Projects one particle out of every collider and applies friction.
///
/// `x0` is the particle's position at the start of the substep and `d` its displacement in
/// the substep after constraint projection (see the solver's precision note); `radius` is its
/// collision radius (m); `placements` has one entry per collider. Corrections are added to
/// `d`. Returns the deepest normal correction applied (m, 0 when not in contact).
#[inline]
pub(crate) fn resolve_particle(
    colliders: &[Collider],
    placements: &[ColliderPlacement],
    x0: Vec3,
    d: &mut Vec3,
    radius: f32,
) -> f32 {
    let mut deepest = 0.0f32;
    for (c, s) in colliders.iter().zip(placements) {
        let (phi, n) = s.signed_distance(&c.shape, x0 + *d);
        let depth = radius - phi;
        if depth > 0.0 {
            *d += n * depth;
            let rel = *d - s.surface_displacement(&c.shape, x0 + *d);
            let tangential = rel - n * rel.dot(n);
            *d += c.friction.correction(tangential, depth);
            deepest = deepest.max(depth);
        }
    }
    deepest
}
