//! A triangle mesh made ready to serve as a solid collider: validated, consistently wound
//! outwards, with the pseudo-normals that give its exact signed distance (article §4.1–4.2).
//!
//! **Exact signed distance.** The distance from p to the mesh is the distance to the nearest
//! point q of its nearest triangle ([`TriangleBvh::nearest`]). Its sign needs care at edges
//! and vertices, where the nearest point is shared by several faces: there the face normal
//! of any one of them can point the wrong way. The *angle-weighted pseudo-normal* of
//! Bærentzen & Aanæs (2005) — for a face its normal, for an edge the sum of its two faces'
//! normals, for a vertex the sum of its faces' normals weighted by their angles at it — makes
//! sign((p − q)·n) right at every point of a closed, consistently wound, manifold mesh.
//!
//! **Open or messy meshes.** Where the mesh is open (edges with one face) or non-manifold,
//! pseudo-normals are undefined and the sign is taken instead from the generalized winding
//! number, w(p) > ½ inside ([`TriangleBvh::winding_number`]); this must be asked for
//! ([`SignMethod::WindingNumber`]), since a solid collider is usually meant to be closed.
//!
//! **Repairs and checks at load.** Degenerate triangles (repeated or collinear corners) are
//! dropped; triangles wound against their neighbours are turned to agree with them (a
//! breadth-first walk over shared edges); a closed part wound inwards (negative volume) is
//! turned outwards — each closed part on its own, so the inner shell of a hollow mesh becomes
//! a solid of its own. Each repair is reported as a warning. A mesh that is empty, not finite,
//! open or non-manifold (with pseudo-normals), not orientable, or of zero volume is an error.

use super::triangle::Feature;
use super::triangle_bvh::{Nearest, TriangleBvh};
use glam::{DVec3, Vec3};
use std::collections::HashMap;

/// How the inside of a collider mesh is told from its outside.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SignMethod {
    /// Angle-weighted pseudo-normals (Bærentzen & Aanæs 2005): exact, needs a closed manifold
    /// mesh.
    #[default]
    PseudoNormals,
    /// Generalized winding number (Jacobson et al. 2013): for open or non-manifold meshes.
    WindingNumber,
}

/// Why a mesh cannot be a collider. The caller adds the file name.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MeshColliderError {
    /// No triangles left (or none given).
    #[error("the mesh has no triangles{0}")]
    Empty(String),
    /// A vertex position is NaN or infinite.
    #[error("vertex {0} is not finite")]
    NonFinite(usize),
    /// A triangle refers to a vertex that does not exist.
    #[error("triangle {triangle} refers to vertex {vertex}, but there are {count} vertices")]
    IndexOutOfRange {
        /// Triangle index.
        triangle: usize,
        /// Vertex index it refers to.
        vertex: u32,
        /// Number of vertices.
        count: usize,
    },
    /// Edges with one face (a hole) or more than two.
    #[error(
        "the mesh is not closed: {open} edges have one face and {non_manifold} have more than two \
         (first between vertices {} and {}); a solid collider needs a closed mesh — close it, or \
         set sign = \"winding-number\" to take its inside from the generalized winding number",
        .example.0, .example.1
    )]
    Open {
        /// Edges with one face.
        open: usize,
        /// Edges with more than two faces.
        non_manifold: usize,
        /// One such edge (vertex indices).
        example: (u32, u32),
    },
    /// The faces cannot all be wound consistently (e.g. a Möbius strip).
    #[error("the mesh is not orientable: its faces cannot all be wound the same way (near triangle {0})")]
    NonOrientable(usize),
    /// The enclosed volume is zero (a flat or doubled-up mesh).
    #[error(
        "the mesh encloses no volume ({volume:.3e} m³ inside a bounding box of {box_volume:.3e} m³): a flat \
         or doubled-up mesh cannot be a solid collider"
    )]
    ZeroVolume {
        /// Enclosed volume (m³).
        volume: f64,
        /// Volume of the bounding box (m³).
        box_volume: f64,
    },
    /// The grid would hold too many samples.
    #[error(
        "the signed distance grid would have {} samples ({} × {} × {}); at most {limit} are allowed — use a coarser resolution or a larger cell_size",
        count_text(*samples), count_text(dims[0]), count_text(dims[1]), count_text(dims[2])
    )]
    GridTooLarge {
        /// Samples requested.
        samples: u128,
        /// Samples per axis.
        dims: [u128; 3],
        /// The limit.
        limit: usize,
    },
    /// A grid setting is out of range.
    #[error("{0}")]
    Settings(String),
}

/// A validated collider mesh with its BVH and pseudo-normals. Positions are in metres, in
/// the collider's rest placement.
#[derive(Clone, Debug)]
pub struct ColliderMesh {
    positions: Vec<DVec3>,
    triangles: Vec<[u32; 3]>,
    bvh: TriangleBvh,
    face_normals: Vec<DVec3>,
    /// Per triangle, the pseudo-normal of its edges k → k+1 (sum of the two faces' normals).
    edge_normals: Vec<[DVec3; 3]>,
    vertex_normals: Vec<DVec3>,
    sign: SignMethod,
    volume: f64,
    min: DVec3,
    max: DVec3,
}

impl ColliderMesh {
    /// Validates and prepares a mesh: `positions` (m), `triangles` (indices into
    /// `positions`). Returns the mesh and the repairs made, as warnings.
    ///
    /// # Errors
    /// [`MeshColliderError`] for an empty or non-finite mesh, an index out of range, an open
    /// or non-manifold mesh with [`SignMethod::PseudoNormals`], a non-orientable mesh, or zero
    /// volume.
    pub fn new(
        positions: &[Vec3],
        triangles: &[[u32; 3]],
        sign: SignMethod,
    ) -> Result<(ColliderMesh, Vec<String>), MeshColliderError> {
        let mut warnings = Vec::new();
        if let Some(i) = positions.iter().position(|p| !p.is_finite()) {
            return Err(MeshColliderError::NonFinite(i));
        }
        for (t, tri) in triangles.iter().enumerate() {
            if let Some(&v) = tri.iter().find(|&&v| v as usize >= positions.len()) {
                return Err(MeshColliderError::IndexOutOfRange { triangle: t, vertex: v, count: positions.len() });
            }
        }
        let positions: Vec<DVec3> = positions.iter().map(|p| p.as_dvec3()).collect();
        let (mut min, mut max) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
        for t in triangles {
            for &v in t {
                min = min.min(positions[v as usize]);
                max = max.max(positions[v as usize]);
            }
        }
        let diagonal = (max - min).length();
        // Degenerate triangles: repeated corners, or area below (10⁻⁹ × diagonal)².
        let tiny = (1e-9 * diagonal).powi(2);
        let area = |t: &[u32; 3]| {
            let [a, b, c] = t.map(|v| positions[v as usize]);
            0.5 * (b - a).cross(c - a).length()
        };
        let mut tris: Vec<[u32; 3]> = triangles
            .iter()
            .copied()
            .filter(|t| t[0] != t[1] && t[1] != t[2] && t[2] != t[0] && area(t) > tiny)
            .collect();
        if tris.len() < triangles.len() {
            warnings.push(format!(
                "{} degenerate triangles (repeated corners or zero area) were dropped",
                triangles.len() - tris.len()
            ));
        }
        if tris.is_empty() {
            let why = if triangles.is_empty() { String::new() } else { " that are not degenerate".to_string() };
            return Err(MeshColliderError::Empty(why));
        }
        if diagonal.is_nan() || diagonal <= 0.0 {
            return Err(MeshColliderError::Empty(" with extent".into()));
        }
        // The bounds of the triangles kept (a dropped one's stray vertex must not widen them).
        let (mut min, mut max) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
        for t in &tris {
            for &v in t {
                min = min.min(positions[v as usize]);
                max = max.max(positions[v as usize]);
            }
        }
        let diagonal = (max - min).length();
        if diagonal > 200.0 {
            warnings.push(format!(
                "the mesh is {diagonal:.0} m across: if it is in centimetres or millimetres, set `scale` (0.01, 0.001)"
            ));
        } else if diagonal < 1e-3 {
            warnings
                .push(format!("the mesh is {diagonal:.2e} m across: if it is in other units than metres, set `scale`"));
        }

        // Edges: the triangles on each undirected edge.
        let edges = edge_map(&tris);
        let mut open = 0;
        let mut non_manifold = 0;
        let mut example = None;
        for (&(i, j), faces) in &edges {
            if faces.len() != 2 {
                if faces.len() == 1 {
                    open += 1;
                } else {
                    non_manifold += 1;
                }
                example = Some(example.map_or((i, j), |e: (u32, u32)| e.min((i, j))));
            }
        }
        if let (Some(example), SignMethod::PseudoNormals) = (example, sign) {
            return Err(MeshColliderError::Open { open, non_manifold, example });
        }

        // Consistent winding: walk each connected part across edges with two faces; a
        // neighbour must run the shared edge the other way, else it is turned.
        let mut component = vec![u32::MAX; tris.len()];
        let mut turned = 0usize;
        let mut parts = 0u32;
        let mut parts_closed = Vec::new();
        for seed in 0..tris.len() {
            if component[seed] != u32::MAX {
                continue;
            }
            let part = parts;
            parts += 1;
            let mut closed = true;
            component[seed] = part;
            let mut queue = std::collections::VecDeque::from([seed]);
            while let Some(t) = queue.pop_front() {
                for k in 0..3 {
                    let (a, b) = (tris[t][k], tris[t][(k + 1) % 3]);
                    let faces = &edges[&(a.min(b), a.max(b))];
                    if faces.len() != 2 {
                        closed = false;
                        continue;
                    }
                    let u = if faces[0] == t as u32 { faces[1] } else { faces[0] } as usize;
                    let runs_same_way = directed(&tris[u], a, b);
                    if component[u] == u32::MAX {
                        if runs_same_way {
                            tris[u].swap(1, 2);
                            turned += 1;
                        }
                        component[u] = part;
                        queue.push_back(u);
                    } else if runs_same_way {
                        if sign == SignMethod::PseudoNormals {
                            return Err(MeshColliderError::NonOrientable(u));
                        }
                        closed = false;
                    }
                }
            }
            parts_closed.push(closed);
        }
        if turned > 0 {
            warnings.push(format!("{turned} triangles were wound against their neighbours and were turned to agree"));
        }
        // Each closed part wound inwards is turned outwards.
        let mut volumes = vec![0.0f64; parts as usize];
        for (t, tri) in tris.iter().enumerate() {
            let [a, b, c] = tri.map(|v| positions[v as usize]);
            volumes[component[t] as usize] += a.dot(b.cross(c)) / 6.0;
        }
        let inward: Vec<bool> = (0..parts as usize).map(|p| parts_closed[p] && volumes[p] < 0.0).collect();
        if inward.iter().any(|&x| x) {
            for (t, tri) in tris.iter_mut().enumerate() {
                if inward[component[t] as usize] {
                    tri.swap(1, 2);
                }
            }
            let n = inward.iter().filter(|&&x| x).count();
            warnings.push(format!("{n} closed part(s) were wound inwards (negative volume) and were turned outwards"));
        }
        // The volume of the closed parts (an open part has none of its own; with the winding
        // number, `SdfGrid::build` checks that something is inside).
        let volume: f64 = volumes
            .iter()
            .zip(&inward)
            .zip(&parts_closed)
            .filter(|(_, closed)| **closed)
            .map(|((v, &i), _)| if i { -v } else { *v })
            .sum();
        let extent = max - min;
        let box_volume = extent.x * extent.y * extent.z;
        if parts_closed.iter().any(|&c| c) && volume.abs() <= 1e-6 * diagonal.powi(3) {
            return Err(MeshColliderError::ZeroVolume { volume, box_volume });
        }

        // Pseudo-normals.
        let face_normals: Vec<DVec3> = tris
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|v| positions[v as usize]);
                (b - a).cross(c - a).normalize_or_zero()
            })
            .collect();
        let edges = edge_map(&tris);
        let mut edge_normals = vec![[DVec3::ZERO; 3]; tris.len()];
        let mut vertex_normals = vec![DVec3::ZERO; positions.len()];
        for (t, tri) in tris.iter().enumerate() {
            for k in 0..3 {
                let (a, b) = (tri[k], tri[(k + 1) % 3]);
                edge_normals[t][k] = edges[&(a.min(b), a.max(b))].iter().map(|&f| face_normals[f as usize]).sum();
                let (p, prev, next) =
                    (positions[a as usize], positions[tri[(k + 2) % 3] as usize], positions[b as usize]);
                let angle = (next - p).angle_between(prev - p);
                vertex_normals[a as usize] += angle * face_normals[t];
            }
        }
        let bvh = TriangleBvh::new(&positions, &tris);
        let mesh = ColliderMesh {
            positions,
            triangles: tris,
            bvh,
            face_normals,
            edge_normals,
            vertex_normals,
            sign,
            volume,
            min,
            max,
        };
        Ok((mesh, warnings))
    }

    /// Exact signed distance (m; negative inside) from `p` to the mesh, and the index of the
    /// nearest triangle (a good `hint` for the next query nearby).
    pub fn signed_distance(&self, p: DVec3, hint: Option<u32>) -> (f64, u32) {
        let Some(near) = self.nearest(p, hint, 0.0) else {
            return (f64::INFINITY, 0);
        };
        let distance = near.distance2.sqrt();
        (if self.is_inside(p, &near) { -distance } else { distance }, near.triangle)
    }

    /// The nearest point of the mesh to `p`, or one at most (1 + `slack`) times farther (see
    /// [`TriangleBvh::nearest_within`]).
    pub fn nearest(&self, p: DVec3, hint: Option<u32>, slack: f64) -> Option<Nearest> {
        self.bvh.nearest_within(&self.positions, &self.triangles, p, hint, slack)
    }

    /// Whether `p` is inside, given its exact nearest point `near`.
    fn is_inside(&self, p: DVec3, near: &Nearest) -> bool {
        match self.sign {
            SignMethod::PseudoNormals => {
                let t = near.triangle as usize;
                let n = match near.feature {
                    Feature::Face => self.face_normals[t],
                    Feature::Edge(k) => self.edge_normals[t][k as usize],
                    Feature::Vertex(k) => self.vertex_normals[self.triangles[t][k as usize] as usize],
                };
                (p - near.point).dot(n) < 0.0
            }
            // |w| > ½: an open mesh cannot be turned outwards, so either winding counts.
            SignMethod::WindingNumber => self.winding_number(p).abs() > 0.5,
        }
    }

    /// The generalized winding number at `p` (≈ 1 inside, ≈ 0 outside).
    pub fn winding_number(&self, p: DVec3) -> f64 {
        self.bvh.winding_number(&self.positions, &self.triangles, p)
    }

    /// Lower and upper corners of the bounding box (m).
    pub fn bounds(&self) -> (DVec3, DVec3) {
        (self.min, self.max)
    }

    /// Volume enclosed by the closed parts (m³; 0 for a mesh with none).
    pub fn volume(&self) -> f64 {
        self.volume
    }

    /// The triangles kept (after repairs), wound outwards.
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// The vertex positions (m).
    pub fn positions(&self) -> &[DVec3] {
        &self.positions
    }

    /// How the sign is decided.
    pub fn sign_method(&self) -> SignMethod {
        self.sign
    }
}

/// For each undirected edge (i < j), the triangles that have it, in increasing order.
fn edge_map(tris: &[[u32; 3]]) -> HashMap<(u32, u32), Vec<u32>> {
    let mut edges: HashMap<(u32, u32), Vec<u32>> = HashMap::with_capacity(tris.len() * 3 / 2);
    for (t, tri) in tris.iter().enumerate() {
        for k in 0..3 {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            edges.entry((a.min(b), a.max(b))).or_default().push(t as u32);
        }
    }
    edges
}

/// Whether triangle `t` runs from `a` to `b` along one of its edges.
fn directed(t: &[u32; 3], a: u32, b: u32) -> bool {
    (0..3).any(|k| t[k] == a && t[(k + 1) % 3] == b)
}

/// A count as written in messages: in full up to 10¹², in scientific notation beyond (a
/// margin of 10³⁸ m asked for 3.4·10³⁸ samples, printed as a 39-digit number).
fn count_text(v: u128) -> String {
    if v < 1_000_000_000_000 { v.to_string() } else { format!("{v:.3e}") }
}

#[cfg(test)]
mod count_text_tests {
    /// Counts print in full up to 10¹² and in scientific notation beyond.
    #[test]
    fn large_counts_print_in_scientific_notation() {
        assert_eq!(super::count_text(134_217_728), "134217728");
        assert_eq!(super::count_text(u128::MAX), "3.403e38");
    }
}
