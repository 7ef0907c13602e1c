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

use crate::Model;
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
}
