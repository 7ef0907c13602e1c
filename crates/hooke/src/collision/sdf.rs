//! A signed distance field sampled on a regular grid: the form in which a triangle mesh
//! collides (article §4.2, "SDF"), on the CPU and, with the same formula, on the GPU
//! (`hooke-gpu`'s `collide.wgsl`).
//!
//! **Build.** Rows are filled along x, each query starting from the previous node's nearest
//! triangle, and z-slices in parallel. The grid covers the mesh's bounds plus a margin on
//! every side, so a particle near the surface is always inside it. Within [`EXACT_BAND_CELLS`]
//! cells of the surface every node holds the exact signed distance
//! ([`ColliderMesh::signed_distance`]). Farther out only a lower bound is needed — contacts
//! happen near the surface, and the swept test only needs φ never to exceed the distance — so
//! there a node takes the sign of the previous node in its row (two nodes h apart cannot lie
//! on opposite sides when the first is more than h from the surface) and a distance within
//! [`FAR_SLACK`] of the true one, never above it. Far nodes are most of a grid, and the
//! approximate query skips most of the BVH that an exact one far from the mesh must visit.
//!
//! **Sampling.** Trilinear interpolation of the eight nodes around p, and its exact gradient
//! (normalised) for the normal. Outside the grid, φ is the value at the nearest point of the
//! grid's box plus the distance to it — an upper bound on the true distance, fine for the
//! free space a margin keeps around the mesh. The arithmetic is spelled out operation by
//! operation (each product rounded before it is added, no fused multiply-add) so that the
//! WGSL kernel, which does the same operations in the same order, gets the same bits.
//!
//! **Accuracy.** Trilinear interpolation is exact for planes; near a curved surface of radius
//! R it errs by about h²/(8R) for a cell of size h, and at a sharp edge or corner it rounds the
//! feature off by up to about h/2. Choose the cell below the particles' radius where sharp
//! features matter.

use super::mesh::{ColliderMesh, MeshColliderError};
use glam::{DVec3, Vec3};
use rayon::prelude::*;

/// How finely the grid samples the mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GridResolution {
    /// Cells along the longest side of the mesh's bounding box.
    Cells(u32),
    /// Cell size (m).
    CellSize(f32),
}

/// Default margin around the mesh, in cells.
pub const DEFAULT_MARGIN_CELLS: f32 = 3.0;

/// Nodes nearer the surface than this many cells hold the exact signed distance.
pub const EXACT_BAND_CELLS: f64 = 8.0;

/// Beyond the exact band, a node's |φ| lies between d/(1 + FAR_SLACK) and d, d the distance.
pub const FAR_SLACK: f64 = 0.25;

/// The cell size (m) `resolution` gives a box whose longest side is `longest` (m).
fn cell_size(resolution: GridResolution, longest: f64) -> Result<f64, MeshColliderError> {
    match resolution {
        GridResolution::Cells(n) if n >= 2 => Ok(longest / n as f64),
        GridResolution::Cells(n) => {
            Err(MeshColliderError::Settings(format!("resolution must be at least 2 cells, got {n}")))
        }
        // At least two cells along the longest side, as `Cells` asks: a coarser grid holds no
        // node inside the mesh but by chance (a 1e9 m cell over a 0.6 m sphere put its one
        // inner node at the centre by rounding, and the cloth was thrown off a sphere it could
        // not see).
        GridResolution::CellSize(h) if h.is_finite() && h > 0.0 && h as f64 <= longest / 2.0 => Ok(h as f64),
        GridResolution::CellSize(h) if h.is_finite() && h > 0.0 => Err(MeshColliderError::Settings(format!(
            "cell_size {h} m is more than half the mesh's longest side ({longest:.6} m): the grid would have fewer than \
             2 cells across it; use at most {:.6} m",
            longest / 2.0
        ))),
        GridResolution::CellSize(h) => {
            Err(MeshColliderError::Settings(format!("cell_size must be a finite length > 0 m, got {h}")))
        }
    }
}

/// A signed distance field on a grid of `dims[0] × dims[1] × dims[2]` nodes spaced `cell`
/// metres apart from `origin` (the lower corner), x fastest: node (i, j, k) holds φ at
/// origin + cell·(i, j, k), at index `i + dims[0]·(j + dims[1]·k)`.
#[derive(Clone, Debug, PartialEq)]
pub struct SdfGrid {
    origin: Vec3,
    cell: f32,
    inv_cell: f32,
    dims: [u32; 3],
    values: Vec<f32>,
    centre: Vec3,
    /// Radius about `centre` beyond which φ > 0 (see [`reach`](Self::reach)).
    reach: f32,
}

impl SdfGrid {
    /// Nodes in a grid at most (2²⁷: 512 MiB of f32).
    pub const MAX_SAMPLES: usize = 1 << 27;

    /// Samples the exact signed distance of `mesh` on a grid over its bounds plus `margin`
    /// (m; `None`: [`DEFAULT_MARGIN_CELLS`] cells) on every side.
    ///
    /// # Errors
    /// [`MeshColliderError::Settings`] for a resolution or margin out of range;
    /// [`MeshColliderError::GridTooLarge`] beyond [`MAX_SAMPLES`](Self::MAX_SAMPLES) nodes;
    /// [`MeshColliderError::Settings`] if no node is inside (an open mesh that encloses
    /// nothing, or a mesh thinner than a cell).
    pub fn build(
        mesh: &ColliderMesh,
        resolution: GridResolution,
        margin: Option<f32>,
    ) -> Result<SdfGrid, MeshColliderError> {
        let (lo, hi) = mesh.bounds();
        let cell = cell_size(resolution, (hi - lo).max_element())?;
        let margin = match margin {
            None => DEFAULT_MARGIN_CELLS as f64 * cell,
            Some(m) if m.is_finite() && m >= 0.0 => m as f64,
            Some(m) => {
                return Err(MeshColliderError::Settings(format!("margin must be a finite length ≥ 0 m, got {m}")));
            }
        };
        // The nodes lie where the f32 origin and cell that sample the grid put them.
        let origin = (lo - DVec3::splat(margin)).as_vec3().as_dvec3();
        Self::sample_box(mesh, origin, hi + DVec3::splat(margin), cell as f32 as f64)
    }

    /// Samples the exact signed distance of `mesh` on a grid over the box from `lo` to `hi`
    /// (m, in the mesh's frame) instead of the mesh's bounds plus a margin: the part of a large
    /// mesh that cloth can reach, say. `resolution` counts cells along the box's longest side.
    /// Outside the box φ is as [`SdfGrid::sample`] says, the boundary value plus the distance
    /// to the box: an upper bound on the distance, so the part of the mesh outside the box is
    /// not felt. The box must therefore hold every part of the mesh that particles can reach;
    /// where it cuts through the mesh, [`SdfGrid::deepest_boundary_node`] is below zero (hooke-io
    /// warns).
    ///
    /// # Errors
    /// [`MeshColliderError::Settings`] when a corner is not finite or `lo` is not below `hi` on
    /// every axis, when no node is inside (the box misses the mesh) or none is outside (the
    /// box lies within the mesh), and as [`SdfGrid::build`] otherwise.
    pub fn build_within(
        mesh: &ColliderMesh,
        resolution: GridResolution,
        lo: Vec3,
        hi: Vec3,
    ) -> Result<SdfGrid, MeshColliderError> {
        if !(lo.is_finite() && hi.is_finite() && lo.cmplt(hi).all()) {
            return Err(MeshColliderError::Settings(format!(
                "bounds must be two finite corners, the first below the second on every axis, got {lo} and {hi}"
            )));
        }
        let cell = cell_size(resolution, (hi - lo).max_element() as f64)?;
        // A mesh smaller than a cell is not resolved at all (and the sign of the distance far
        // from it, estimated from cells of that size, is not reliable).
        let (mesh_lo, mesh_hi) = mesh.bounds();
        let across = (mesh_hi - mesh_lo).max_element();
        if cell > across {
            return Err(MeshColliderError::Settings(format!(
                "bounds {lo} to {hi} give cells of {cell:.3e} m, larger than the mesh ({across:.3e} m across): the grid \
                 cannot resolve it; give bounds around the part of the mesh the cloth can reach, or a finer resolution"
            )));
        }
        Self::sample_box(mesh, lo.as_dvec3(), hi.as_dvec3(), cell as f32 as f64)
    }

    /// The grid of nodes `cell` apart from `origin` to at least `far` (m), sampled.
    fn sample_box(mesh: &ColliderMesh, origin: DVec3, far: DVec3, cell: f64) -> Result<SdfGrid, MeshColliderError> {
        let (lo, hi) = mesh.bounds();
        let span = far - origin;
        // Counted in f64 first (a huge margin or a tiny cell must not overflow an integer).
        let per_axis = span.to_array().map(|s| (s / cell).ceil() + 1.0);
        let samples_f: f64 = per_axis.iter().product();
        let dims_wide = per_axis.map(|d| d as u128);
        if samples_f.is_nan() || samples_f > Self::MAX_SAMPLES as f64 {
            let samples = dims_wide.iter().fold(1u128, |a, &d| a.saturating_mul(d));
            return Err(MeshColliderError::GridTooLarge { samples, dims: dims_wide, limit: Self::MAX_SAMPLES });
        }
        let dims = dims_wide.map(|d| d.max(2) as u32);
        let [nx, ny, nz] = dims.map(|d| d as usize);
        let mut values = vec![0.0f32; nx * ny * nz];
        let band = EXACT_BAND_CELLS * cell;
        values.par_chunks_mut(nx * ny).enumerate().for_each(|(k, slice)| {
            let mut hint = None;
            for j in 0..ny {
                // Start each row from the row below's first node.
                let mut row_hint = hint;
                // The previous node's φ: exact, or a lower bound on |φ| with the right sign.
                let mut previous: Option<f64> = None;
                for i in 0..nx {
                    let p = origin + cell * DVec3::new(i as f64, j as f64, k as f64);
                    // |φ| here ≥ |φ(previous)| − h, φ being 1-Lipschitz.
                    let at_least = previous.map_or(0.0, |v| v.abs() - cell);
                    let far = match previous {
                        Some(v) if at_least > band => mesh.nearest(p, row_hint, FAR_SLACK).map(|near| (v, near)),
                        _ => None,
                    };
                    let phi = match far {
                        Some((v, near)) => {
                            row_hint = Some(near.triangle);
                            let d = (near.distance2.sqrt() / (1.0 + FAR_SLACK)).max(at_least);
                            d.copysign(v)
                        }
                        None => {
                            let (phi, t) = mesh.signed_distance(p, row_hint);
                            row_hint = Some(t);
                            phi
                        }
                    };
                    if i == 0 {
                        hint = row_hint;
                    }
                    previous = Some(phi);
                    slice[i + nx * j] = phi as f32;
                }
            }
        });
        if values.iter().all(|&v| v >= 0.0) {
            return Err(MeshColliderError::Settings(format!(
                "no node of the grid lies inside the mesh: it encloses nothing (an open mesh), is thinner than a \
                 cell ({cell:.3e} m) everywhere, or lies outside the grid's bounds; use a finer resolution or a \
                 smaller cell_size"
            )));
        }
        if values.iter().all(|&v| v < 0.0) {
            return Err(MeshColliderError::Settings(
                "every node of the grid lies inside the mesh: its bounds lie within it; make them larger".into(),
            ));
        }
        let centre = (0.5 * (lo + hi)).as_vec3();
        // 1/cell from the f32 cell, as `from_parts` computes it, so that a grid read back from
        // a cache samples bit for bit as the one built.
        let cell = cell as f32;
        Ok(SdfGrid { origin: origin.as_vec3(), cell, inv_cell: 1.0 / cell, dims, values, centre, reach: 0.0 }
            .with_reach())
    }

    /// A grid from its parts (e.g. read back from a cache file): `values` of length
    /// `dims[0]·dims[1]·dims[2]`, x fastest; `centre` is the point the collider turns about (m).
    ///
    /// # Errors
    /// A message if a value is not finite, the length does not match, an axis has fewer than
    /// two nodes, or the cell is not a finite length > 0.
    pub fn from_parts(
        origin: Vec3,
        cell: f32,
        dims: [u32; 3],
        values: Vec<f32>,
        centre: Vec3,
    ) -> Result<SdfGrid, String> {
        if !(cell.is_finite() && cell > 0.0 && origin.is_finite() && centre.is_finite()) {
            return Err(format!("grid origin {origin}, centre {centre} and cell {cell} must be finite, the cell > 0"));
        }
        if dims.iter().any(|&d| d < 2) {
            return Err(format!("grid dimensions {dims:?} must be at least 2 on every axis"));
        }
        let n = dims.iter().map(|&d| d as u128).product::<u128>();
        if n > Self::MAX_SAMPLES as u128 || n != values.len() as u128 {
            return Err(format!("grid of {dims:?} nodes needs {n} values, has {}", values.len()));
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(format!("grid value {i} is not finite"));
        }
        Ok(SdfGrid { origin, cell, inv_cell: 1.0 / cell, dims, values, centre, reach: 0.0 }.with_reach())
    }

    /// Lower corner of the grid (m).
    pub fn origin(&self) -> Vec3 {
        self.origin
    }

    /// Node spacing (m).
    pub fn cell(&self) -> f32 {
        self.cell
    }

    /// 1 / cell (1/m), as used by the sampling.
    pub fn inv_cell(&self) -> f32 {
        self.inv_cell
    }

    /// Nodes per axis.
    pub fn dims(&self) -> [u32; 3] {
        self.dims
    }

    /// φ at the nodes (m), x fastest.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// The centre of the mesh's bounding box (m): the point the collider turns about.
    pub fn centre(&self) -> Vec3 {
        self.centre
    }

    /// Distance from [`centre`](Self::centre) to the grid's farthest corner (m): a ball about
    /// the centre of this radius holds the whole grid.
    pub fn half_diagonal(&self) -> f32 {
        let far = self.origin
            + self.cell * Vec3::new(self.dims[0] as f32 - 1.0, self.dims[1] as f32 - 1.0, self.dims[2] as f32 - 1.0);
        (self.centre - self.origin).abs().max((far - self.centre).abs()).length()
    }

    /// Radius about [`centre`](Self::centre) beyond which φ exceeds the distance past it
    /// (m): the half diagonal, plus the depth of the deepest node on the grid's boundary when
    /// the mesh reaches it (φ outside the grid is the boundary value plus the distance to it).
    /// A particle of radius r farther than reach + r from the centre cannot touch the collider.
    pub fn reach(&self) -> f32 {
        self.reach
    }

    fn with_reach(mut self) -> SdfGrid {
        self.reach = self.half_diagonal() - self.deepest_boundary_node().min(0.0);
        self
    }

    /// The lowest φ (m) on the grid's boundary nodes: below zero where the mesh reaches
    /// through the grid's boundary — a grid over bounds that cut through the mesh, whose part
    /// outside them is not felt ([`SdfGrid::build_within`]).
    pub fn deepest_boundary_node(&self) -> f32 {
        let [nx, ny, nz] = self.dims.map(|d| d as usize);
        let mut lowest = f32::INFINITY;
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    let boundary = i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1;
                    if boundary {
                        lowest = lowest.min(self.values[i + nx * (j + ny * k)]);
                    }
                }
            }
        }
        lowest
    }

    /// Signed distance φ (m) and outward unit normal at `p` (m, in the grid's frame).
    ///
    /// Trilinear interpolation inside the grid; outside it, the value at the nearest point of
    /// the grid plus the distance to that point. Where the gradient vanishes the normal is +Y.
    #[inline]
    pub fn sample(&self, p: Vec3) -> (f32, Vec3) {
        let [nx, ny, nz] = self.dims;
        let g = Vec3::new(
            (p.x - self.origin.x) * self.inv_cell,
            (p.y - self.origin.y) * self.inv_cell,
            (p.z - self.origin.z) * self.inv_cell,
        );
        let top = Vec3::new((nx - 1) as f32, (ny - 1) as f32, (nz - 1) as f32);
        let c = g.max(Vec3::ZERO).min(top);
        let i = [(c.x.floor() as u32).min(nx - 2), (c.y.floor() as u32).min(ny - 2), (c.z.floor() as u32).min(nz - 2)];
        let f = Vec3::new(c.x - i[0] as f32, c.y - i[1] as f32, c.z - i[2] as f32);
        let base = (i[0] + nx * (i[1] + ny * i[2])) as usize;
        let (sx, sy, sz) = (1usize, nx as usize, (nx * ny) as usize);
        let v = |o: usize| self.values[base + o];
        let (c000, c100, c010, c110) = (v(0), v(sx), v(sy), v(sx + sy));
        let (c001, c101, c011, c111) = (v(sz), v(sx + sz), v(sy + sz), v(sx + sy + sz));
        let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
        let c00 = lerp(c000, c100, f.x);
        let c10 = lerp(c010, c110, f.x);
        let c01 = lerp(c001, c101, f.x);
        let c11 = lerp(c011, c111, f.x);
        let c0 = lerp(c00, c10, f.y);
        let c1 = lerp(c01, c11, f.y);
        let mut phi = lerp(c0, c1, f.z);
        // The gradient of the trilinear interpolant, up to the factor 1/cell.
        let dx = lerp(lerp(c100 - c000, c110 - c010, f.y), lerp(c101 - c001, c111 - c011, f.y), f.z);
        let dy = lerp(c10 - c00, c11 - c01, f.z);
        let dz = c1 - c0;
        let len2 = dx * dx + dy * dy + dz * dz;
        let n = if len2 > 0.0 {
            let len = len2.sqrt();
            Vec3::new(dx / len, dy / len, dz / len)
        } else {
            Vec3::Y
        };
        let out = g - c;
        let out2 = out.x * out.x + out.y * out.y + out.z * out.z;
        if out2 > 0.0 {
            phi += out2.sqrt() * self.cell;
        }
        (phi, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trilinear sampling reproduces a linear field exactly, with its gradient as the normal.
    #[test]
    fn linear_fields_are_reproduced() {
        let dims = [5, 4, 6];
        let (origin, cell) = (Vec3::new(-1.0, 0.5, 2.0), 0.25);
        let normal = Vec3::new(0.36, 0.48, 0.8);
        let phi = |p: Vec3| (p - Vec3::new(-0.5, 0.9, 2.6)).dot(normal);
        let mut values = Vec::new();
        for k in 0..6 {
            for j in 0..4 {
                for i in 0..5 {
                    values.push(phi(origin + cell * Vec3::new(i as f32, j as f32, k as f32)));
                }
            }
        }
        let grid = SdfGrid::from_parts(origin, cell, dims, values, Vec3::ZERO).unwrap();
        for p in [Vec3::new(-0.7, 0.8, 2.3), Vec3::new(-0.01, 1.2, 3.1), Vec3::new(-0.5, 0.9, 2.6)] {
            let (s, n) = grid.sample(p);
            assert!((s - phi(p)).abs() < 1e-5, "{p}: {s} vs {}", phi(p));
            assert!((n - normal).length() < 1e-5);
        }
        // Outside: value at the nearest grid point plus the distance to it.
        let p = Vec3::new(-2.0, 0.8, 2.3);
        let (s, _) = grid.sample(p);
        assert!((s - (phi(Vec3::new(-1.0, 0.8, 2.3)) + 1.0)).abs() < 1e-5);
    }

    #[test]
    fn bad_parts_are_refused() {
        assert!(SdfGrid::from_parts(Vec3::ZERO, 0.1, [2, 2, 2], vec![0.0; 7], Vec3::ZERO).is_err());
        assert!(SdfGrid::from_parts(Vec3::ZERO, 0.1, [1, 2, 2], vec![0.0; 4], Vec3::ZERO).is_err());
        assert!(SdfGrid::from_parts(Vec3::ZERO, -0.1, [2, 2, 2], vec![0.0; 8], Vec3::ZERO).is_err());
        assert!(SdfGrid::from_parts(Vec3::ZERO, 0.1, [2, 2, 2], vec![f32::NAN; 8], Vec3::ZERO).is_err());
    }
}
