//! The point of a triangle nearest a given point, and which feature of the triangle it lies
//! on (Ericson, *Real-Time Collision Detection*, 2005, §5.1.5).
//!
//! The feature matters for the sign of a mesh's distance: the nearest point of a closed mesh
//! lies on a face, an edge or a vertex, and the sign of (p − q)·n is right only with the normal
//! of that feature — the face's normal, the edge's or the vertex's pseudo-normal (see
//! [`super::mesh`]). Computed in f64 so that the sign is right to within ~10⁻¹⁵ m of a face.

use glam::DVec3;

/// Where on a triangle (a, b, c) its nearest point lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// At vertex 0, 1 or 2 (a, b, c).
    Vertex(u8),
    /// Inside edge k, between vertices k and (k + 1) mod 3 (ab, bc, ca).
    Edge(u8),
    /// Inside the face.
    Face,
}

/// The point of triangle (a, b, c) nearest `p`, and the feature it lies on.
///
/// A degenerate triangle is handled (its nearest point is on an edge or a vertex).
pub fn closest_point(p: DVec3, a: DVec3, b: DVec3, c: DVec3) -> (DVec3, Feature) {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = ab.dot(ap);
    let d2 = ac.dot(ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return (a, Feature::Vertex(0));
    }
    let bp = p - b;
    let d3 = ab.dot(bp);
    let d4 = ac.dot(bp);
    if d3 >= 0.0 && d4 <= d3 {
        return (b, Feature::Vertex(1));
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return (a + ab * v, Feature::Edge(0));
    }
    let cp = p - c;
    let d5 = ab.dot(cp);
    let d6 = ac.dot(cp);
    if d6 >= 0.0 && d5 <= d6 {
        return (c, Feature::Vertex(2));
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return (a + ac * w, Feature::Edge(2));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (b + (c - b) * w, Feature::Edge(1));
    }
    let sum = va + vb + vc;
    if sum.abs() <= f64::MIN_POSITIVE {
        // Degenerate (zero-area) triangle that reached the face region: take the nearest edge.
        let edges = [(a, b), (b, c), (c, a)];
        let mut best = (a, Feature::Vertex(0), f64::INFINITY);
        for (k, &(s, e)) in edges.iter().enumerate() {
            let d = e - s;
            let l2 = d.length_squared();
            let t = if l2 > 0.0 { ((p - s).dot(d) / l2).clamp(0.0, 1.0) } else { 0.0 };
            let q = s + d * t;
            let dist = (p - q).length_squared();
            if dist < best.2 {
                best = (q, Feature::Edge(k as u8), dist);
            }
        }
        return (best.0, best.1);
    }
    let denom = 1.0 / sum;
    let v = vb * denom;
    let w = vc * denom;
    (a + ab * v + ac * w, Feature::Face)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a dense sampling of the triangle: the returned point is at least as near as any
    /// sample, and its feature is the region it lies in.
    #[test]
    fn nearest_point_beats_dense_sampling_and_names_its_feature() {
        let (a, b, c) = (DVec3::new(0.0, 0.0, 0.0), DVec3::new(1.0, 0.2, 0.0), DVec3::new(0.3, 0.9, 0.1));
        let mut state = 12345u64;
        let mut rand = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 3.0 - 1.0
        };
        for _ in 0..500 {
            let p = DVec3::new(rand(), rand(), rand() * 0.5);
            let (q, feature) = closest_point(p, a, b, c);
            let mut best = f64::INFINITY;
            let n = 200;
            for i in 0..=n {
                for j in 0..=(n - i) {
                    let (u, v) = (i as f64 / n as f64, j as f64 / n as f64);
                    let s = a + (b - a) * u + (c - a) * v;
                    best = best.min((p - s).length());
                }
            }
            let d = (p - q).length();
            assert!(d <= best + 1e-12, "{p}: {d} > sampled {best}");
            assert!(best - d < 1e-2, "{p}: {d} much nearer than sampled {best}");
            match feature {
                Feature::Vertex(k) => assert!((q - [a, b, c][k as usize]).length() < 1e-12),
                Feature::Edge(k) => {
                    let (s, e) = ([a, b, c][k as usize], [a, b, c][(k as usize + 1) % 3]);
                    assert!((q - s).cross(e - s).length() < 1e-9, "{q} not on edge {k}");
                }
                Feature::Face => {
                    let n = (b - a).cross(c - a).normalize();
                    assert!((p - q).cross(n).length() < 1e-9, "face point not along the normal");
                }
            }
        }
    }
}
