//! Per-vertex surface frames of the cloth triangles: normals and UV tangents, for rendering
//! (normal and tangent space, e.g. normal maps) and as the CPU reference of the GPU kernels.

use crate::Model;
use glam::{Vec2, Vec3};

/// Area-weighted vertex normals (unit, or zero for a particle without triangles): the
/// normalised sum of (x₁ − x₀) × (x₂ − x₀) over the triangles around each particle.
/// `positions` holds one position (m) per particle of `model`.
///
/// # Panics
/// If `positions` is shorter than the model's particle count.
pub fn vertex_normals(model: &Model, positions: &[Vec3]) -> Vec<Vec3> {
    let mut n = vec![Vec3::ZERO; model.particle_count()];
    for t in model.triangles() {
        let [a, b, c] = t.map(|i| positions[i as usize]);
        let f = (b - a).cross(c - a);
        for &i in t {
            n[i as usize] += f;
        }
    }
    n.iter().map(|v| v.normalize_or_zero()).collect()
}

/// ∂x/∂u of a triangle from its UV parametrisation, times its area (m² · m per unit u), or
/// `None` for a degenerate UV triangle (its UV area is zero, tiny, or not finite).
///
/// With e₁ = x₁ − x₀, e₂ = x₂ − x₀, (s₁, t₁) = uv₁ − uv₀, (s₂, t₂) = uv₂ − uv₀ and
/// r = s₁t₂ − s₂t₁ (twice the signed UV area), x(u, v) is linear on the triangle with
/// ∂x/∂u = (t₂e₁ − t₁e₂)/r (Lengyel 2001, "Computing tangent space basis vectors for an
/// arbitrary mesh").
pub fn triangle_tangent(x: [Vec3; 3], uv: [Vec2; 3]) -> Option<Vec3> {
    let (e1, e2) = (x[1] - x[0], x[2] - x[0]);
    let (d1, d2) = (uv[1] - uv[0], uv[2] - uv[0]);
    let r = d1.x * d2.y - d2.x * d1.y;
    // Relative to the UV edge lengths; NaN UVs (particles without UVs) give a NaN r.
    if !r.is_finite() || r.abs() <= 1e-12 * (d1.abs().element_sum() * d2.abs().element_sum()) {
        return None;
    }
    let area = 0.5 * e1.cross(e2).length();
    Some((e1 * d2.y - e2 * d1.y) * (area / r))
}

/// Per-vertex unit tangents along the UV u direction (the standard construction of Lengyel
/// 2001): for each particle, the area-weighted sum of ∂x/∂u ([`triangle_tangent`]) over the
/// triangles around it, made orthogonal to the particle's unit normal by Gram–Schmidt,
/// t ← t − n (n·t), and normalised. Degenerate UV triangles and triangles with a particle
/// without UVs are skipped; a particle with no usable triangle, or whose sum is parallel to
/// its normal, gets the zero vector. Empty if the model has no UVs
/// ([`Model::particle_uv`]). `positions` and `normals` (unit, e.g. from [`vertex_normals`])
/// hold one entry per particle.
///
/// # Panics
/// If `positions` or `normals` is shorter than the model's particle count.
pub fn vertex_tangents(model: &Model, positions: &[Vec3], normals: &[Vec3]) -> Vec<Vec3> {
    let Some(uv) = model.particle_uv() else { return Vec::new() };
    let mut sum = vec![Vec3::ZERO; model.particle_count()];
    for t in model.triangles() {
        let x = t.map(|i| positions[i as usize]);
        if let Some(dxdu) = triangle_tangent(x, t.map(|i| uv[i as usize])) {
            for &i in t {
                sum[i as usize] += dxdu;
            }
        }
    }
    sum.iter().zip(normals).map(|(&t, &n)| (t - n * n.dot(t)).normalize_or_zero()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClothGrid, ModelBuilder, Rope};
    use glam::Quat;

    /// On a flat, rotated grid the tangent is the grid's column direction (u) everywhere,
    /// orthogonal to the normal; a rope in the same model gets none.
    #[test]
    fn flat_grid_tangent_is_the_u_direction() {
        let mut b = ModelBuilder::new();
        let mut g = ClothGrid::new("c", 4, 6, 0.1);
        g.rotation = Quat::from_rotation_y(0.7) * Quat::from_rotation_x(0.3);
        b.add_cloth_grid(&g).unwrap();
        b.add_rope(&Rope::straight("r", Vec3::ZERO, Vec3::X, 5)).unwrap();
        let m = b.finalize().unwrap();
        let uv = m.particle_uv().unwrap();
        assert_eq!(uv[5], Vec2::new(1.0, 0.0));
        assert_eq!(uv[6], Vec2::new(0.0, 1.0 / 3.0));
        assert!(uv[24].is_nan(), "rope particles have no UV");
        let x = m.particle_position();
        let n = vertex_normals(&m, x);
        let t = vertex_tangents(&m, x, &n);
        let u = g.rotation * Vec3::X;
        for p in 0..24 {
            assert!((t[p] - u).length() < 1e-5, "particle {p}: {} vs {u}", t[p]);
            assert!(t[p].dot(n[p]).abs() < 1e-5);
        }
        assert_eq!(t[24], Vec3::ZERO);
    }

    #[test]
    fn degenerate_uv_triangles_are_skipped() {
        let x = [Vec3::ZERO, Vec3::X, Vec3::Y];
        assert!(triangle_tangent(x, [Vec2::ZERO, Vec2::X, Vec2::X * 2.0]).is_none());
        assert!(triangle_tangent(x, [Vec2::NAN, Vec2::X, Vec2::Y]).is_none());
        // ∂x/∂u of the identity map is x's direction, times the area ½.
        let t = triangle_tangent(x, [Vec2::ZERO, Vec2::X, Vec2::Y]).unwrap();
        assert!((t - Vec3::X * 0.5).length() < 1e-6);
    }
}
