//! The broad phase of collider contact (article §4.1): which colliders a particle's path in a
//! substep can touch at all, so that a cloth among many colliders (100 capsules, say) tests
//! each particle against the few near it instead of all of them.
//!
//! Each bounded collider is held in the box its bounding ball sweeps through the substep
//! ([`ColliderPlacement::swept_bounds`]); the unbounded plane is always a candidate. With
//! [`GRID_FROM`] colliders or more the boxes are binned in a uniform grid whose cell is the
//! median box size, doubled until the grid has at most 64 cells per collider (a collider
//! spanning more than [`LARGE_CELLS`] cells is kept aside and always tested); a turning
//! collider is always tested (see [`ColliderPlacement::swept_bounds`]). A particle asks for the first collider, from a given index on, whose box
//! overlaps its path's box (start and end of its move, grown by its radius); the narrow phase
//! resolves that collider, and the particle asks again from the next index with its path as
//! corrected. Colliders are therefore still applied in index order, and every collider skipped
//! is one whose contact test would have found nothing — the result is bit for bit that of
//! testing all colliders.

use super::{Collider, ColliderPlacement};
use glam::Vec3;

/// Colliders from which a grid is built (below, a scan of the boxes is as fast).
pub const GRID_FROM: usize = 8;

/// A collider covering more grid cells than this is tested for every particle.
pub const LARGE_CELLS: usize = 64;

/// Cells per axis at most.
const MAX_DIMS: u32 = 128;

/// The colliders' boxes in one substep. See the [module documentation](self).
#[derive(Clone, Debug, Default)]
pub struct ColliderBroadPhase {
    /// Per collider, its swept box (lower, upper corner; m), `None` when unbounded.
    bounds: Vec<Option<[Vec3; 2]>>,
    grid: Option<Grid>,
}

#[derive(Clone, Debug)]
struct Grid {
    origin: Vec3,
    inv_cell: f32,
    dims: [u32; 3],
    /// CSR: the colliders of cell c are `items[offsets[c]..offsets[c + 1]]`, increasing.
    offsets: Vec<u32>,
    items: Vec<u32>,
    /// Unbounded and large colliders, increasing.
    always: Vec<u32>,
}

impl ColliderBroadPhase {
    /// The broad phase of `colliders` placed by `placements` (one per collider).
    pub fn new(colliders: &[Collider], placements: &[ColliderPlacement]) -> ColliderBroadPhase {
        let bounds: Vec<Option<[Vec3; 2]>> =
            colliders.iter().zip(placements).map(|(c, p)| p.swept_bounds(&c.shape)).collect();
        let grid = (colliders.len() >= GRID_FROM).then(|| Grid::new(&bounds)).flatten();
        ColliderBroadPhase { bounds, grid }
    }

    /// No broad phase: every one of `count` colliders is a candidate for every particle (for
    /// comparisons; same result as [`new`](Self::new), more work).
    pub fn everything(count: usize) -> ColliderBroadPhase {
        ColliderBroadPhase { bounds: vec![None; count], grid: None }
    }

    /// [`first_overlapping`](Self::first_overlapping) among the colliders `from..end` only (a
    /// world's, in a model of several).
    #[inline]
    pub fn first_overlapping_before(&self, from: usize, end: usize, lo: Vec3, hi: Vec3) -> Option<usize> {
        self.first_overlapping(from, lo, hi).filter(|&k| k < end)
    }

    /// The lowest collider index ≥ `from` that a particle whose path lies in the box `lo`–`hi`
    /// (m, already grown by its radius) may touch, or `None`.
    #[inline]
    pub fn first_overlapping(&self, from: usize, lo: Vec3, hi: Vec3) -> Option<usize> {
        let overlaps = |k: usize| match &self.bounds[k] {
            None => true,
            Some([a, b]) => lo.cmple(*b).all() && a.cmple(hi).all(),
        };
        let Some(grid) = &self.grid else {
            return (from..self.bounds.len()).find(|&k| overlaps(k));
        };
        let first_in = |list: &[u32], best: usize| -> usize {
            let start = list.partition_point(|&k| (k as usize) < from);
            list[start..].iter().map(|&k| k as usize).take_while(|&k| k < best).find(|&k| overlaps(k)).unwrap_or(best)
        };
        let mut best = first_in(&grid.always, usize::MAX);
        if let Some([c0, c1]) = grid.cells(lo, hi) {
            let [nx, ny, _] = grid.dims;
            for z in c0[2]..=c1[2] {
                for y in c0[1]..=c1[1] {
                    for x in c0[0]..=c1[0] {
                        let c = (x + nx * (y + ny * z)) as usize;
                        best = first_in(&grid.items[grid.offsets[c] as usize..grid.offsets[c + 1] as usize], best);
                    }
                }
            }
        }
        (best != usize::MAX).then_some(best)
    }
}

impl Grid {
    /// A grid over the bounded colliders' boxes, or `None` if there are none.
    fn new(bounds: &[Option<[Vec3; 2]>]) -> Option<Grid> {
        let boxes: Vec<(usize, [Vec3; 2])> = bounds.iter().enumerate().filter_map(|(k, b)| b.map(|b| (k, b))).collect();
        if boxes.is_empty() {
            return None;
        }
        let (mut lo, mut hi) = (Vec3::INFINITY, Vec3::NEG_INFINITY);
        let mut sizes: Vec<f32> = Vec::with_capacity(boxes.len());
        for (_, [a, b]) in &boxes {
            lo = lo.min(*a);
            hi = hi.max(*b);
            sizes.push((*b - *a).max_element());
        }
        sizes.sort_by(f32::total_cmp);
        let span = hi - lo;
        let cell = sizes[sizes.len() / 2].max(span.max_element() / MAX_DIMS as f32).max(1e-6);
        if !(cell.is_finite() && span.is_finite()) {
            return None;
        }
        // At most 64 cells per collider (and 4 096): colliders far apart in 3D would otherwise
        // make a grid of millions of empty cells, rebuilt every substep.
        let cap = (64 * boxes.len()).max(4096);
        let mut cell = cell;
        let dims_of = |cell: f32| [span.x, span.y, span.z].map(|s| ((s / cell).floor() as u32 + 1).min(MAX_DIMS));
        while dims_of(cell).iter().map(|&d| d as usize).product::<usize>() > cap {
            cell *= 2.0;
        }
        let inv_cell = 1.0 / cell;
        let dims = dims_of(cell);
        let mut grid = Grid { origin: lo, inv_cell, dims, offsets: Vec::new(), items: Vec::new(), always: Vec::new() };
        let cells = (dims[0] * dims[1] * dims[2]) as usize;
        let mut count = vec![0u32; cells + 1];
        let mut placed: Vec<(usize, [[u32; 3]; 2])> = Vec::with_capacity(boxes.len());
        for (k, b) in bounds.iter().enumerate() {
            match b.and_then(|[a, b]| grid.cells(a, b)) {
                Some([c0, c1]) if (0..3).map(|i| (c1[i] - c0[i] + 1) as usize).product::<usize>() <= LARGE_CELLS => {
                    placed.push((k, [c0, c1]));
                }
                _ => grid.always.push(k as u32),
            }
        }
        let each = |[c0, c1]: [[u32; 3]; 2], f: &mut dyn FnMut(usize)| {
            for z in c0[2]..=c1[2] {
                for y in c0[1]..=c1[1] {
                    for x in c0[0]..=c1[0] {
                        f((x + dims[0] * (y + dims[1] * z)) as usize);
                    }
                }
            }
        };
        for &(_, r) in &placed {
            each(r, &mut |c| count[c + 1] += 1);
        }
        for c in 0..cells {
            count[c + 1] += count[c];
        }
        let mut next = count.clone();
        let mut items = vec![0u32; count[cells] as usize];
        // In increasing collider order, so each cell's list is sorted.
        for &(k, r) in &placed {
            each(r, &mut |c| {
                items[next[c] as usize] = k as u32;
                next[c] += 1;
            });
        }
        grid.offsets = count;
        grid.items = items;
        Some(grid)
    }

    /// The range of cells the box `lo`–`hi` overlaps, or `None` if it misses the grid.
    #[inline]
    fn cells(&self, lo: Vec3, hi: Vec3) -> Option<[[u32; 3]; 2]> {
        let a = (lo - self.origin) * self.inv_cell;
        let b = (hi - self.origin) * self.inv_cell;
        let top = Vec3::new(self.dims[0] as f32, self.dims[1] as f32, self.dims[2] as f32);
        if b.cmplt(Vec3::ZERO).any() || a.cmpge(top).any() || !(a.is_finite() && b.is_finite()) {
            return None;
        }
        let cell = |v: Vec3| {
            let c = v.max(Vec3::ZERO).floor();
            [c.x as u32, c.y as u32, c.z as u32]
        };
        let (c0, c1) = (cell(a), cell(b));
        Some([[0, 1, 2].map(|i| c0[i].min(self.dims[i] - 1)), [0, 1, 2].map(|i| c1[i].min(self.dims[i] - 1))])
    }
}

/// The box (m) a particle's move from `x0` to `x1` sweeps with radius `radius`, grown by a
/// margin (10⁻⁴ m plus 10⁻⁵ of the coordinates' size) that covers the rounding of the signed
/// distances, so that a collider outside it is certainly out of reach.
#[inline]
pub fn path_box(x0: Vec3, x1: Vec3, radius: f32) -> (Vec3, Vec3) {
    let size = x0.abs().max(x1.abs()).max_element();
    let grow = Vec3::splat(radius + 1e-4 + 1e-5 * size);
    (x0.min(x1) - grow, x0.max(x1) + grow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::Shape;

    /// With and without the grid, the first overlapping collider is the brute-force answer.
    #[test]
    fn first_overlapping_equals_brute_force() {
        let mut colliders = Vec::new();
        let mut state = 1u64;
        let mut rand = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        for k in 0..60 {
            let c = Vec3::new(rand() * 4.0 - 2.0, rand() * 2.0, rand() * 4.0 - 2.0);
            let shape = match k % 4 {
                0 => Shape::Sphere { center: c, radius: 0.05 + 0.2 * rand() },
                1 => Shape::Capsule { a: c, b: c + Vec3::new(rand(), 0.1, 0.0), radius: 0.05 },
                2 if k == 2 => Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y },
                2 => Shape::Sphere { center: c, radius: 3.0 },
                _ => Shape::Box { center: c, half_extents: Vec3::splat(0.1), rotation: glam::Quat::IDENTITY },
            };
            colliders.push(Collider::new(format!("c{k}"), shape));
        }
        let placements = vec![ColliderPlacement::REST; colliders.len()];
        for n in [5, 60] {
            let broad = ColliderBroadPhase::new(&colliders[..n], &placements[..n]);
            assert_eq!(broad.grid.is_some(), n >= GRID_FROM);
            for _ in 0..2000 {
                let p = Vec3::new(rand() * 5.0 - 2.5, rand() * 3.0 - 0.5, rand() * 5.0 - 2.5);
                let (lo, hi) = path_box(p, p + Vec3::new(rand(), rand(), rand()) * 0.1, 0.01);
                let from = (rand() * n as f32) as usize;
                let brute = (from..n).find(|&k| match placements[k].swept_bounds(&colliders[k].shape) {
                    None => true,
                    Some([a, b]) => lo.cmple(b).all() && a.cmple(hi).all(),
                });
                assert_eq!(broad.first_overlapping(from, lo, hi), brute, "n {n} from {from} at {p}");
            }
        }
    }
}
