//! Where a collider is: its [`Pose`] at an instant, and its [`ColliderPlacement`] over one
//! substep (start and end), the form every solver's collider stage reads.
//!
//! A pose turns the collider's rest shape by `rotation` about the shape's origin
//! ([`Shape::origin`](super::Shape::origin)) and then moves it by `translation`:
//! x_world = origin + translation + R (x_rest − origin). The signed distance of a placed
//! shape is the rest shape's at the pulled-back point, p = origin + Rᵀ((x − translation) −
//! origin), with the normal turned by R. A pose without rotation skips the rotation entirely
//! (p = x − translation), so translation-only motion costs nothing extra.

use super::Shape;
use glam::{Mat3, Quat, Vec3};

/// A placement of a collider relative to its rest placement in the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    /// Translation (m).
    pub translation: Vec3,
    /// Rotation about the shape's origin (unit quaternion).
    pub rotation: Quat,
}

impl Pose {
    /// The rest placement.
    pub const IDENTITY: Pose = Pose { translation: Vec3::ZERO, rotation: Quat::IDENTITY };

    /// A translation without rotation.
    pub fn translation(translation: Vec3) -> Pose {
        Pose { translation, rotation: Quat::IDENTITY }
    }

    /// The pose a fraction `s` ∈ [0, 1] of the way from `self` to `to` (translation linear,
    /// rotation spherical; an unchanged rotation is kept exactly).
    pub fn interpolate(&self, to: &Pose, s: f32) -> Pose {
        let rotation = if self.rotation == to.rotation { to.rotation } else { self.rotation.slerp(to.rotation, s) };
        Pose { translation: self.translation.lerp(to.translation, s), rotation }
    }

    /// Whether the values are finite and the rotation is a unit quaternion (to 1e-3).
    pub fn is_valid(&self) -> bool {
        self.translation.is_finite() && self.rotation.is_finite() && (self.rotation.length() - 1.0).abs() < 1e-3
    }
}

/// A collider's placement over one substep: where it is at the end, and how it moved since
/// the start (friction is measured relative to that motion).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColliderPlacement {
    /// Translation at the end of the substep (m).
    pub translation_end: Vec3,
    /// Translation at the end minus at the start of the substep (m).
    pub displacement: Vec3,
    /// Rotation matrix at the end of the substep (identity when not `rotated`).
    pub rotation_end: Mat3,
    /// Rotation matrix at the start of the substep (identity when not `rotated`).
    pub rotation_start: Mat3,
    /// Whether either rotation differs from the identity; if not, the rotation is skipped.
    pub rotated: bool,
}

impl ColliderPlacement {
    /// At rest for the whole substep.
    pub const REST: ColliderPlacement = ColliderPlacement {
        translation_end: Vec3::ZERO,
        displacement: Vec3::ZERO,
        rotation_end: Mat3::IDENTITY,
        rotation_start: Mat3::IDENTITY,
        rotated: false,
    };

    /// The placement of a substep from pose `start` to pose `end`.
    pub fn between(start: &Pose, end: &Pose) -> ColliderPlacement {
        let rotated = start.rotation != Quat::IDENTITY || end.rotation != Quat::IDENTITY;
        ColliderPlacement {
            translation_end: end.translation,
            displacement: end.translation - start.translation,
            rotation_end: if rotated { Mat3::from_quat(end.rotation) } else { Mat3::IDENTITY },
            rotation_start: if rotated { Mat3::from_quat(start.rotation) } else { Mat3::IDENTITY },
            rotated,
        }
    }

    /// The rest-shape point that lies at `x` at the end of the substep (m).
    #[inline]
    fn pull_back(&self, origin: Vec3, x: Vec3) -> Vec3 {
        let q = (x - self.translation_end) - origin;
        let r = &self.rotation_end;
        // Rᵀq, one dot product per column, in glam's summation order (the GPU does the same).
        let local = Vec3::new(
            r.x_axis.x * q.x + r.x_axis.y * q.y + r.x_axis.z * q.z,
            r.y_axis.x * q.x + r.y_axis.y * q.y + r.y_axis.z * q.z,
            r.z_axis.x * q.x + r.z_axis.y * q.y + r.z_axis.z * q.z,
        );
        origin + local
    }

    /// Signed distance φ (m) and outward unit normal of `shape` placed here, at `x`.
    #[inline]
    pub fn signed_distance(&self, shape: &Shape, x: Vec3) -> (f32, Vec3) {
        if !self.rotated {
            return shape.signed_distance(x, self.translation_end);
        }
        let (phi, n) = shape.signed_distance(self.pull_back(shape.origin(), x), Vec3::ZERO);
        (phi, rotate(&self.rotation_end, n))
    }

    /// The box (lower and upper corner, m) that holds `shape` throughout the substep: the ball
    /// of its [`bounding_radius`](Shape::bounding_radius) about its origin, at the start and at
    /// the end of the substep, and everything between. `None` — test every particle — for an
    /// unbounded shape, and for a turning one: its swept test follows a particle's path in the
    /// collider's own frame, which a box around the world path does not hold.
    pub fn swept_bounds(&self, shape: &Shape) -> Option<[Vec3; 2]> {
        if self.rotated {
            return None;
        }
        let r = shape.bounding_radius()?;
        let end = shape.origin() + self.translation_end;
        let start = end - self.displacement;
        Some([start.min(end) - Vec3::splat(r), start.max(end) + Vec3::splat(r)])
    }

    /// How far the collider's surface point under `x` (at the end of the substep) moved in
    /// the substep (m): the translation's displacement, plus the rotation's sweep when turned.
    #[inline]
    pub fn surface_displacement(&self, shape: &Shape, x: Vec3) -> Vec3 {
        if !self.rotated {
            return self.displacement;
        }
        let origin = shape.origin();
        let local = self.pull_back(origin, x) - origin;
        let start = (self.translation_end - self.displacement) + origin + rotate(&self.rotation_start, local);
        x - start
    }
}

/// R v as x_axis·v.x + y_axis·v.y + z_axis·v.z, summed left to right.
#[inline]
fn rotate(r: &Mat3, v: Vec3) -> Vec3 {
    r.x_axis * v.x + r.y_axis * v.y + r.z_axis * v.z
}
