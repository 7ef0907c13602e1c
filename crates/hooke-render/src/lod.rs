//! Level of detail for fine cloth grids: draw every s-th row and column of particles when the
//! full mesh would have more triangles than the picture has room for.
//!
//! A triangle smaller than a pixel adds no detail, but it still costs a vertex, a primitive
//! and — under multisampling — a pass over its samples. On a 512 × 512 cloth in a 1280 × 800
//! picture (522 k triangles, most of them under a pixel) drawing at full detail took a third
//! of the frame on an H200 (docs/BENCHMARKS.md). So a [`ClothGrid`](hooke::ClothGrid) body
//! whose triangles exceed the budget is drawn through a coarser index buffer over the *same*
//! position and normal buffers: the particles of rows and columns 0, s, 2s, … and always the
//! last one, split into triangles the way the grid splits its cells. The positions are still
//! the solver's (nothing is copied or averaged); the normals are the fine mesh's vertex
//! normals, so the shading keeps the fine mesh's wrinkles to the extent the sampled vertices
//! see them; the outline is exact at the borders, pinned corners included.
//!
//! Cloths from meshes (not grids), and grids that have torn (their particles split, see
//! `hooke::tearing`), are always drawn in full.

use hooke::{BodyKind, Model};

/// The triangles a picture of `pixels` pixels is given: a quarter of its pixels (so an
/// on-screen triangle covers about four pixels or more when the cloth fills the picture).
pub fn triangle_budget(pixels: u64) -> u64 {
    (pixels / 4).max(1)
}

/// The stride s ≥ 1 at which the model's cloth triangles fit `budget`: 1 when they already
/// do, else the smallest s whose coarse grids, with the non-grid cloths in full, come within
/// it — or the coarsest possible (each grid two rows by two columns) when none does.
pub fn stride(model: &Model, budget: u64) -> u32 {
    let mut s = 1u32;
    loop {
        let (count, coarsest) = triangle_count(model, s);
        if count <= budget || coarsest {
            return s;
        }
        s += 1;
    }
}

/// The cloth triangles drawn at stride `s`, and whether every grid is at its coarsest.
fn triangle_count(model: &Model, s: u32) -> (u64, bool) {
    let mut count = 0u64;
    let mut coarsest = true;
    for body in model.bodies() {
        match body.kind {
            BodyKind::ClothGrid { rows, columns } if body.particles.len() == rows * columns => {
                let (r, c) = (samples(rows, s).len(), samples(columns, s).len());
                coarsest &= r <= 2 && c <= 2;
                count += 2 * (r.saturating_sub(1) * c.saturating_sub(1)) as u64;
            }
            _ => count += body.triangles.len() as u64,
        }
    }
    (count, coarsest)
}

/// The rows (or columns) 0, s, 2s, … of `n`, and the last one.
fn samples(n: usize, s: u32) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).step_by(s.max(1) as usize).collect();
    if n > 0 && v.last() != Some(&(n - 1)) {
        v.push(n - 1);
    }
    v
}

/// The model's cloth triangles at stride `s` (particle indices, three per triangle, in body
/// order): grids by their sampled rows and columns, split as the grid splits a cell; other
/// cloths as they are. At `s = 1` this is [`Model::triangles`].
pub fn triangles(model: &Model, s: u32) -> Vec<[u32; 3]> {
    let mut out = Vec::new();
    for body in model.bodies() {
        match body.kind {
            BodyKind::ClothGrid { rows, columns } if body.particles.len() == rows * columns => {
                let (rs, cs) = (samples(rows, s), samples(columns, s));
                let id = |r: usize, c: usize| body.particles.start + (r * columns + c) as u32;
                for w in rs.windows(2) {
                    for v in cs.windows(2) {
                        let (a, b, cc, d) = (id(w[0], v[0]), id(w[0], v[1]), id(w[1], v[0]), id(w[1], v[1]));
                        out.push([a, cc, b]);
                        out.push([b, cc, d]);
                    }
                }
            }
            _ => {
                let range = body.triangles.start as usize..body.triangles.end as usize;
                out.extend_from_slice(&model.triangles()[range]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooke::{ClothGrid, ModelBuilder};

    fn grid(n: usize) -> Model {
        let mut b = ModelBuilder::new();
        b.add_cloth_grid(&ClothGrid::new("cloth", n, n, 0.01)).unwrap();
        b.finalize().unwrap()
    }

    #[test]
    fn stride_one_is_the_models_own_triangles() {
        let m = grid(7);
        assert_eq!(triangles(&m, 1), m.triangles());
    }

    #[test]
    fn coarse_grids_keep_their_border_and_fit_the_budget() {
        let m = grid(101);
        let s = stride(&m, 5000);
        let t = triangles(&m, s);
        assert!(t.len() as u64 <= 5000 && s > 1, "stride {s}: {} triangles", t.len());
        // The stride is the smallest that fits.
        assert!(triangles(&m, s - 1).len() > 5000);
        // Every corner of the grid is still a vertex of some triangle.
        for corner in [0u32, 100, 100 * 101, 101 * 101 - 1] {
            assert!(t.iter().any(|t| t.contains(&corner)), "corner {corner} dropped at stride {s}");
        }
        // The coarse mesh covers the same area (1 m² sheet of spacing 0.01: 1.0 m²).
        let p = m.particle_position();
        let area: f32 = t
            .iter()
            .map(|t| 0.5 * (p[t[1] as usize] - p[t[0] as usize]).cross(p[t[2] as usize] - p[t[0] as usize]).length())
            .sum();
        assert!((area - 1.0).abs() < 1e-4, "area {area} m²");
    }
}
