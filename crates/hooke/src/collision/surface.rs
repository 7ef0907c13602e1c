//! The surface drawn for a collider whose shape has no closed form: a mesh collider's triangles,
//! kept beside its signed distance grid ([`SdfGrid`](super::SdfGrid)) for renderers and viewers.
//! The physics never reads it: particles collide with the grid, which was sampled from these
//! triangles.

use super::{ColliderMesh, MeshColliderError};
use glam::Vec3;

/// Triangles of a collider's surface in its rest placement (the collider's pose moves them as
/// it moves the shape).
#[derive(Clone, Debug, PartialEq)]
pub struct ColliderSurface {
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
}

impl ColliderSurface {
    /// A surface of vertex `positions` (m) and `triangles` (three indices into `positions`
    /// each, counter-clockwise seen from outside).
    ///
    /// # Errors
    /// [`MeshColliderError::NonFinite`] for a position that is not finite (its index);
    /// [`MeshColliderError::IndexOutOfRange`] for a triangle naming a vertex beyond
    /// `positions`.
    pub fn new(positions: Vec<Vec3>, triangles: Vec<[u32; 3]>) -> Result<ColliderSurface, MeshColliderError> {
        if let Some(i) = positions.iter().position(|p| !p.is_finite()) {
            return Err(MeshColliderError::NonFinite(i));
        }
        for (t, tri) in triangles.iter().enumerate() {
            if let Some(&v) = tri.iter().find(|&&v| v as usize >= positions.len()) {
                return Err(MeshColliderError::IndexOutOfRange { triangle: t, vertex: v, count: positions.len() });
            }
        }
        Ok(ColliderSurface { positions, triangles })
    }

    /// The surface a signed distance grid is sampled from: `mesh`'s vertices (to `f32`) and
    /// the triangles it kept after its repairs, wound outwards.
    pub fn from_mesh(mesh: &ColliderMesh) -> ColliderSurface {
        ColliderSurface {
            positions: mesh.positions().iter().map(|p| p.as_vec3()).collect(),
            triangles: mesh.triangles().to_vec(),
        }
    }

    /// Vertex positions (m), one per vertex.
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// Triangles: three vertex indices each, counter-clockwise seen from outside.
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// One unit normal per vertex (same length as [`positions`](Self::positions)): the sum of
    /// its triangles' normals weighted by their areas, normalised — the zero vector at a
    /// vertex of no triangle, or where its triangles' normals cancel.
    pub fn vertex_normals(&self) -> Vec<Vec3> {
        let mut sum = vec![Vec3::ZERO; self.positions.len()];
        for t in &self.triangles {
            let [a, b, c] = t.map(|v| self.positions[v as usize]);
            // The cross product's length is twice the area: an area-weighted normal.
            let n = (b - a).cross(c - a);
            for &v in t {
                sum[v as usize] += n;
            }
        }
        sum.into_iter().map(Vec3::normalize_or_zero).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A regular octahedron of circumradius 1, wound outwards.
    fn octahedron() -> ColliderSurface {
        let positions = vec![Vec3::X, -Vec3::X, Vec3::Y, -Vec3::Y, Vec3::Z, -Vec3::Z];
        let mut triangles = Vec::new();
        for (a, b) in [(0u32, 2u32), (2, 1), (1, 3), (3, 0)] {
            triangles.push([a, b, 4]);
            triangles.push([b, a, 5]);
        }
        ColliderSurface::new(positions, triangles).unwrap()
    }

    /// By symmetry each vertex normal of a regular octahedron points along its vertex, out of
    /// the solid; every face is wound outwards.
    #[test]
    fn an_octahedrons_vertex_normals_point_out_along_its_vertices() {
        let s = octahedron();
        for t in s.triangles() {
            let [a, b, c] = t.map(|v| s.positions()[v as usize]);
            assert!((b - a).cross(c - a).dot(a + b + c) > 0.0, "triangle {t:?} wound inwards");
        }
        for (p, n) in s.positions().iter().zip(s.vertex_normals()) {
            assert!((n - *p).length() < 1e-6, "normal {n} at vertex {p}");
        }
    }

    /// A vertex no triangle uses has the zero normal; bad input is refused, naming the element.
    #[test]
    fn a_lone_vertex_has_no_normal_and_bad_input_is_refused() {
        let s = ColliderSurface::new(vec![Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z], vec![[0, 1, 2]]).unwrap();
        assert_eq!(s.vertex_normals()[3], Vec3::ZERO);
        assert_eq!(s.vertex_normals()[0], Vec3::Z);
        assert!(matches!(
            ColliderSurface::new(vec![Vec3::ZERO, Vec3::X], vec![[0, 1, 2]]),
            Err(MeshColliderError::IndexOutOfRange { triangle: 0, vertex: 2, count: 2 })
        ));
        assert!(matches!(
            ColliderSurface::new(vec![Vec3::ZERO, Vec3::NAN, Vec3::Y], vec![[0, 1, 2]]),
            Err(MeshColliderError::NonFinite(1))
        ));
    }
}
