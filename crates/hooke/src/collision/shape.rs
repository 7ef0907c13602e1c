//! Analytic signed distance functions of the collider shapes (article §4.2).
//!
//! Each shape answers φ(x), the signed distance from x to its surface (m; φ > 0 outside,
//! φ < 0 inside), and the outward unit normal n = ∇φ/‖∇φ‖ at x. A particle of radius r
//! satisfies the inequality constraint φ(x) − r ≥ 0; when it is violated the particle is
//! moved by (r − φ)·n, the projection along the gradient.

use super::sdf::SdfGrid;
use glam::{Mat3, Quat, Vec3};
use std::sync::Arc;

/// A collider shape in its rest placement (the collider's animation translates it).
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// Half-space below a plane through `point` with outward unit `normal`.
    Plane {
        /// A point on the plane (m).
        point: Vec3,
        /// Outward unit normal (pointing into the free side).
        normal: Vec3,
    },
    /// Solid sphere.
    Sphere {
        /// Centre (m).
        center: Vec3,
        /// Radius (m), > 0.
        radius: f32,
    },
    /// Solid capsule: all points within `radius` of the segment `a`–`b`.
    Capsule {
        /// First end of the axis segment (m).
        a: Vec3,
        /// Second end of the axis segment (m).
        b: Vec3,
        /// Radius (m), > 0.
        radius: f32,
    },
    /// Solid oriented box.
    Box {
        /// Centre (m).
        center: Vec3,
        /// Half extents along the box's local axes (m), each > 0.
        half_extents: Vec3,
        /// Orientation of the box's local axes in the world.
        rotation: Quat,
    },
    /// Solid given by a signed distance grid, e.g. built from a closed triangle mesh
    /// ([`SdfGrid::build`](super::SdfGrid::build)); shared, not copied, between models.
    Sdf(Arc<SdfGrid>),
}

impl Shape {
    /// Signed distance φ (m) and outward unit normal at `x`, with the shape moved by `offset`.
    ///
    /// At points where the gradient is undefined (the centre of a sphere, the axis of a
    /// capsule) a fixed normal (+Y) is returned so that the result is always finite.
    #[inline]
    pub fn signed_distance(&self, x: Vec3, offset: Vec3) -> (f32, Vec3) {
        let p = x - offset;
        match *self {
            Shape::Sdf(ref grid) => grid.sample(p),
            Shape::Plane { point, normal } => ((p - point).dot(normal), normal),
            Shape::Sphere { center, radius } => {
                let d = p - center;
                let len = d.length();
                let n = if len > 1e-12 { d / len } else { Vec3::Y };
                (len - radius, n)
            }
            Shape::Capsule { a, b, radius } => {
                let ab = b - a;
                let denom = ab.length_squared();
                let t = if denom > 0.0 { ((p - a).dot(ab) / denom).clamp(0.0, 1.0) } else { 0.0 };
                let d = p - (a + ab * t);
                let len = d.length();
                let n = if len > 1e-12 { d / len } else { Vec3::Y };
                (len - radius, n)
            }
            Shape::Box { center, half_extents, rotation } => {
                // The rotation as a matrix, Rᵀ(p − c) one dot product per column and R n as a sum
                // of columns, left to right: the arithmetic of the GPU kernel (collide.wgsl),
                // so both round alike.
                let r = Mat3::from_quat(rotation);
                let d = p - center;
                let dot = |a: Vec3| a.x * d.x + a.y * d.y + a.z * d.z;
                let local = Vec3::new(dot(r.x_axis), dot(r.y_axis), dot(r.z_axis));
                let turn = |v: Vec3| r.x_axis * v.x + r.y_axis * v.y + r.z_axis * v.z;
                let q = local.abs() - half_extents;
                let outside = q.max(Vec3::ZERO);
                let out_len = outside.length();
                if out_len > 0.0 {
                    let n_local = outside * local.signum() / out_len;
                    (out_len, turn(n_local))
                } else {
                    // Inside: the nearest face is the one with the largest q component.
                    let (axis, depth) = if q.x >= q.y && q.x >= q.z {
                        (Vec3::X * local.x.signum(), q.x)
                    } else if q.y >= q.z {
                        (Vec3::Y * local.y.signum(), q.y)
                    } else {
                        (Vec3::Z * local.z.signum(), q.z)
                    };
                    (depth, turn(axis))
                }
            }
        }
    }

    /// The point a collider turns about when it is rotated ([`Pose`](super::Pose)): the
    /// plane's point, the sphere's or box's centre, the capsule's midpoint (m).
    pub fn origin(&self) -> Vec3 {
        match *self {
            Shape::Plane { point, .. } => point,
            Shape::Sphere { center, .. } | Shape::Box { center, .. } => center,
            Shape::Capsule { a, b, .. } => (a + b) * 0.5,
            Shape::Sdf(ref grid) => grid.centre(),
        }
    }

    /// Radius (m) of a ball about [`origin`](Self::origin) outside which φ ≥ the distance
    /// past it, so that no particle farther than this plus its radius touches the shape —
    /// whatever the shape's rotation about its origin; `None` for the unbounded plane.
    pub fn bounding_radius(&self) -> Option<f32> {
        match *self {
            Shape::Plane { .. } => None,
            Shape::Sphere { radius, .. } => Some(radius),
            Shape::Capsule { a, b, radius } => Some(0.5 * (b - a).length() + radius),
            Shape::Box { half_extents, .. } => Some(half_extents.length()),
            Shape::Sdf(ref grid) => Some(grid.reach()),
        }
    }

    /// How fast φ can change per metre moved, at most: 1 for the analytic shapes (exact
    /// distances); 2 for a distance grid, whose trilinear interpolant of exact distances may
    /// change √3 times as fast, with room to spare for the lower bounds far from the mesh. The
    /// swept test and the triangles' early-out divide and multiply by it.
    pub fn growth_bound(&self) -> f32 {
        match self {
            Shape::Sdf(_) => 2.0,
            _ => 1.0,
        }
    }

    /// Short name used in reports and scene files.
    pub fn kind(&self) -> &'static str {
        match self {
            Shape::Plane { .. } => "plane",
            Shape::Sphere { .. } => "sphere",
            Shape::Capsule { .. } => "capsule",
            Shape::Box { .. } => "box",
            Shape::Sdf(_) => "mesh",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The returned normal is the normalised gradient of φ (central differences).
    #[test]
    fn normals_are_sdf_gradients() {
        let shapes = [
            Shape::Plane { point: Vec3::new(0.0, 0.2, 0.0), normal: Vec3::new(0.6, 0.8, 0.0) },
            Shape::Sphere { center: Vec3::new(0.1, 0.0, 0.0), radius: 0.5 },
            Shape::Capsule { a: Vec3::ZERO, b: Vec3::new(1.0, 0.5, 0.0), radius: 0.3 },
            Shape::Box {
                center: Vec3::new(0.0, 0.1, 0.0),
                half_extents: Vec3::new(0.5, 0.3, 0.2),
                rotation: Quat::from_rotation_y(0.4),
            },
        ];
        let points = [
            Vec3::new(0.9, 0.7, 0.1),
            Vec3::new(-0.3, 0.2, 0.35),
            Vec3::new(0.05, 0.15, -0.02),
            Vec3::new(0.4, -0.9, 0.3),
        ];
        let h = 1e-3;
        for s in &shapes {
            for &x in &points {
                let (_, n) = s.signed_distance(x, Vec3::ZERO);
                let g = Vec3::new(
                    s.signed_distance(x + Vec3::X * h, Vec3::ZERO).0 - s.signed_distance(x - Vec3::X * h, Vec3::ZERO).0,
                    s.signed_distance(x + Vec3::Y * h, Vec3::ZERO).0 - s.signed_distance(x - Vec3::Y * h, Vec3::ZERO).0,
                    s.signed_distance(x + Vec3::Z * h, Vec3::ZERO).0 - s.signed_distance(x - Vec3::Z * h, Vec3::ZERO).0,
                ) / (2.0 * h);
                assert!((g.normalize() - n).length() < 1e-2, "{:?} at {x}: {g} vs {n}", s.kind());
                assert!((n.length() - 1.0).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn sphere_distance_is_exact() {
        let s = Shape::Sphere { center: Vec3::ZERO, radius: 1.0 };
        let (phi, _) = s.signed_distance(Vec3::new(0.0, 3.0, 4.0), Vec3::ZERO);
        assert!((phi - 4.0).abs() < 1e-6);
        let (phi, _) = s.signed_distance(Vec3::new(0.0, 3.0, 4.0), Vec3::new(0.0, 3.0, 0.0));
        assert!((phi - 3.0).abs() < 1e-6);
    }
}
