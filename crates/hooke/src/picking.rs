//! Picking: the nearest cloth triangle a ray hits, and the corner of it nearest the hit, for a
//! viewer's mouse (Ten Minute Physics 16's ray cast; `hooke-gpu`'s `raycast.wgsl` does the same
//! operations in the same order, so both pick the same particle).
//!
//! The ray–triangle test is Möller & Trumbore 1997 ("Fast, minimum storage ray/triangle
//! intersection"), two-sided: for the ray o + t·d (t ≥ 0) and the triangle (a, b, c) with
//! e₁ = b − a, e₂ = c − a, p = d × e₂ and det = e₁·p, a hit has |det| > 0, barycentric
//! u = (o − a)·p / det ∈ [0, 1], v = d·((o − a) × e₁) / det ≥ 0 with u + v ≤ 1, at
//! t = e₂·((o − a) × e₁) / det ≥ 0. Among hits the smallest t wins, then the lowest triangle
//! index; the picked particle is the triangle's corner nearest the hit point (barycentric
//! weight largest: corner 0 has 1 − u − v, corner 1 has u, corner 2 has v; ties to the lower
//! corner).
//!
//! Colliders are picked by sphere tracing (Hart 1996, "Sphere tracing: a geometric method for
//! the antialiased ray tracing of implicit surfaces"): from the ray's origin, step along the
//! ray by the collider's signed distance φ — a step no longer than the distance to the surface,
//! so it cannot cross it — until φ falls below a small tolerance ([`pick_collider`]). The same
//! signed distance the solvers use, so any shape — a mesh's distance grid included — is picked
//! where the cloth meets it.

use crate::Model;
use crate::collision::{ColliderPlacement, Pose, Shape};
use glam::Vec3;

/// A ray's hit on a cloth triangle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Distance along the ray, in units of the direction's length (m for a unit direction).
    pub distance: f32,
    /// The triangle (index into [`Model::triangles`]).
    pub triangle: u32,
    /// The corner (0, 1 or 2) nearest the hit point.
    pub corner: u32,
    /// The particle at that corner.
    pub particle: u32,
}

/// The distance t ≥ 0 along `origin + t·direction` at which it meets the triangle (a, b, c),
/// and the barycentric (u, v) of the hit; `None` for a miss or a ray in the triangle's plane.
#[inline]
pub fn ray_triangle(origin: Vec3, direction: Vec3, a: Vec3, b: Vec3, c: Vec3) -> Option<(f32, f32, f32)> {
    let e1 = b - a;
    let e2 = c - a;
    let p = direction.cross(e2);
    let det = e1.dot(p);
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let s = origin - a;
    let u = s.dot(p) / det;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(e1);
    let v = direction.dot(q) / det;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = e2.dot(q) / det;
    (t >= 0.0).then_some((t, u, v))
}

/// The corner (0, 1, 2) of largest barycentric weight for a hit at (u, v).
#[inline]
pub fn nearest_corner(u: f32, v: f32) -> u32 {
    let w = 1.0 - u - v;
    if w >= u && w >= v {
        0
    } else if u >= v {
        1
    } else {
        2
    }
}

/// The nearest triangle of `model` hit by `origin + t·direction` with the particles at
/// `positions` (m, one per particle), or `None` when the ray misses every triangle (or there is
/// not one position per particle).
pub fn pick(model: &Model, positions: &[Vec3], origin: Vec3, direction: Vec3) -> Option<Hit> {
    if positions.len() != model.particle_count() {
        return None;
    }
    let mut best: Option<Hit> = None;
    for (k, t) in model.triangles().iter().enumerate() {
        let [a, b, c] = t.map(|i| positions[i as usize]);
        let Some((distance, u, v)) = ray_triangle(origin, direction, a, b, c) else { continue };
        // The GPU compares distances as the bits of non-negative floats: the same order.
        if best.is_none_or(|h| distance < h.distance) {
            let corner = nearest_corner(u, v);
            best = Some(Hit { distance, triangle: k as u32, corner, particle: t[corner as usize] });
        }
    }
    best
}

/// Steps of [`pick_collider`]'s sphere tracing before it gives up on a collider.
const TRACE_STEPS: usize = 512;
/// How far [`pick_collider`] looks along the ray (m).
const TRACE_FAR: f32 = 1e4;

/// The nearest bounded collider of `model` hit by `origin + t·direction` (`direction` a unit
/// vector), each collider placed at `poses[k]` (missing poses: at rest): its index into
/// [`Model::colliders`] and the distance t (m) at which the ray meets its surface, within
/// 0.1 mm. Planes (unbounded) are never picked, nor a collider the ray starts inside.
/// `None` when the ray meets none within 10 km.
pub fn pick_collider(model: &Model, poses: &[Pose], origin: Vec3, direction: Vec3) -> Option<(usize, f32)> {
    let mut best: Option<(usize, f32)> = None;
    for (k, collider) in model.colliders().iter().enumerate() {
        if matches!(collider.shape, Shape::Plane { .. }) {
            continue;
        }
        let pose = poses.get(k).copied().unwrap_or(Pose::IDENTITY);
        let placement = ColliderPlacement::between(&pose, &pose);
        let phi = |t: f32| placement.signed_distance(&collider.shape, origin + direction * t).0;
        if phi(0.0) <= 0.0 {
            continue;
        }
        let mut t = 0.0f32;
        for _ in 0..TRACE_STEPS {
            let d = phi(t);
            if d < 1e-4 {
                if best.is_none_or(|(_, b)| t < b) {
                    best = Some((k, t));
                }
                break;
            }
            t += d;
            if t > TRACE_FAR || best.is_some_and(|(_, b)| t > b) {
                break;
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ray down onto a unit right triangle hits where expected, with the barycentric
    /// coordinates of the point; rays outside, behind or parallel miss.
    #[test]
    fn ray_triangle_hits_and_misses() {
        let (a, b, c) = (Vec3::ZERO, Vec3::X, Vec3::Z);
        let (t, u, v) = ray_triangle(Vec3::new(0.2, 2.0, 0.3), Vec3::NEG_Y, a, b, c).unwrap();
        assert!((t - 2.0).abs() < 1e-6 && (u - 0.2).abs() < 1e-6 && (v - 0.3).abs() < 1e-6);
        // From below too (two-sided).
        assert!(ray_triangle(Vec3::new(0.2, -1.0, 0.3), Vec3::Y, a, b, c).is_some());
        assert!(ray_triangle(Vec3::new(0.8, 2.0, 0.8), Vec3::NEG_Y, a, b, c).is_none(), "outside");
        assert!(ray_triangle(Vec3::new(0.2, 2.0, 0.3), Vec3::Y, a, b, c).is_none(), "behind");
        assert!(ray_triangle(Vec3::new(0.2, 0.0, 0.3), Vec3::X, a, b, c).is_none(), "in its plane");
        assert_eq!(nearest_corner(0.1, 0.1), 0);
        assert_eq!(nearest_corner(0.7, 0.1), 1);
        assert_eq!(nearest_corner(0.1, 0.7), 2);
    }

    /// A ray at a sphere meets it at |c − o| − r; a ray at a box behind that sphere picks the
    /// sphere, and one at the box alone picks the box at its face; a ray that starts inside
    /// a collider, or meets only the ground plane, picks nothing; a moved sphere is picked
    /// where it has moved to.
    #[test]
    fn colliders_are_picked_at_their_surface() {
        use crate::ModelBuilder;
        use crate::collision::Collider;
        let mut b = ModelBuilder::new();
        // A small cloth far away (a model needs a body).
        let mut g = crate::ClothGrid::new("cloth", 2, 2, 0.1);
        g.center = Vec3::new(50.0, 0.0, 50.0);
        b.add_cloth_grid(&g).unwrap();
        b.add_collider(Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y })).unwrap();
        b.add_collider(Collider::new("ball", Shape::Sphere { center: Vec3::new(0.0, 1.0, 0.0), radius: 0.5 })).unwrap();
        let shape = Shape::Box {
            center: Vec3::new(0.0, 1.0, -3.0),
            half_extents: Vec3::splat(1.0),
            rotation: glam::Quat::IDENTITY,
        };
        b.add_collider(Collider::new("box", shape)).unwrap();
        let model = b.finalize().unwrap();
        let o = Vec3::new(0.0, 1.0, 5.0);
        let (k, t) = pick_collider(&model, &[], o, Vec3::NEG_Z).unwrap();
        assert_eq!(k, 1);
        assert!((t - 4.5).abs() < 2e-4, "{t}");
        let (k, t) = pick_collider(&model, &[], Vec3::new(0.8, 1.0, 5.0), Vec3::NEG_Z).unwrap();
        assert_eq!(k, 2);
        assert!((t - 7.0).abs() < 2e-4, "{t}");
        assert!(pick_collider(&model, &[], Vec3::new(0.0, 1.0, 0.0), Vec3::NEG_Z).is_some_and(|(k, _)| k == 2));
        assert!(pick_collider(&model, &[], Vec3::new(5.0, 3.0, 5.0), Vec3::NEG_Y).is_none(), "only the ground");
        let poses = [Pose::IDENTITY, Pose::translation(Vec3::new(3.0, 0.0, 0.0))];
        assert!(pick_collider(&model, &poses, o, Vec3::NEG_Z).is_some_and(|(k, _)| k == 2), "the ball moved away");
        let (k, t) = pick_collider(&model, &poses, Vec3::new(3.0, 1.0, 5.0), Vec3::NEG_Z).unwrap();
        assert_eq!(k, 1);
        assert!((t - 4.5).abs() < 2e-4, "{t}");
    }
}
