//! A spatial hash of points (article §4.1): the broad phase of particle contacts.
//!
//! Space is cut into cubic cells of side s. A point x lies in the cell
//! c = (⌊x/s⌋, ⌊y/s⌋, ⌊z/s⌋) ∈ ℤ³, and the cell is mapped to one of T buckets by the hash of
//! Teschner et al. 2003 ("Optimized spatial hashing for collision detection of deformable
//! objects") that the article uses:
//!
//! h(c) = ((cₓ·73856093) ⊕ (c_y·19349663) ⊕ (c_z·83492791)) mod T,
//!
//! computed on the cells' two's-complement bits as `u32` with wrapping multiplication, so a
//! negative coordinate hashes as well as a positive one and the CPU and WGSL give the same
//! bucket. The table is dense: T = 2·n buckets for n points, its bucket starts in one array of
//! T + 1 offsets and the points in another of n, filled by a counting sort (count per bucket,
//! exclusive prefix sum, scatter). The scatter goes through the points in increasing index,
//! so each bucket lists its points in increasing index: the *canonical order* that makes a
//! query's answer, and the order in which a solver sums what it finds, the same on every
//! backend.
//!
//! Different cells can share a bucket. A query for the points within r of x visits every cell
//! that the box [x − r, x + r] touches and keeps, from each cell's bucket, only the points whose
//! own cell is that cell — so no point is reported twice and none from a cell not visited —
//! then tests the distance. With s ≥ r that is at most 27 cells.

use glam::{IVec3, Vec3};

/// The article's three primes (Teschner et al. 2003).
pub const PRIMES: [u32; 3] = [73_856_093, 19_349_663, 83_492_791];

/// The cell of `x` for cells of side 1/`inv_cell` (m): ⌊x·inv_cell⌋ per axis, as `i32`.
#[inline]
pub fn cell_of(x: Vec3, inv_cell: f32) -> IVec3 {
    let c = (x * inv_cell).floor();
    IVec3::new(c.x as i32, c.y as i32, c.z as i32)
}

/// The bucket of `cell` in a table of `table_size` (> 0) buckets.
#[inline]
pub fn bucket_of(cell: IVec3, table_size: u32) -> u32 {
    let h = (cell.x as u32).wrapping_mul(PRIMES[0])
        ^ (cell.y as u32).wrapping_mul(PRIMES[1])
        ^ (cell.z as u32).wrapping_mul(PRIMES[2]);
    h % table_size
}

/// The number of buckets for `points` points: 2·points, at least 1.
#[inline]
pub fn table_size(points: usize) -> u32 {
    (2 * points).max(1) as u32
}

/// A spatial hash over a set of points, rebuilt with [`SpatialHash::build`].
#[derive(Clone, Debug, Default)]
pub struct SpatialHash {
    inv_cell: f32,
    /// T + 1 offsets into `entries`: bucket b holds `entries[start[b]..start[b + 1]]`.
    start: Vec<u32>,
    /// The points' indices (as given to `build`), bucket by bucket, increasing in each bucket.
    entries: Vec<u32>,
    /// The cell of each entry (same order as `entries`).
    entry_cell: Vec<IVec3>,
    /// The position of each entry when the hash was built (m; same order as `entries`), so a
    /// query streams through memory instead of gathering positions by id.
    entry_position: Vec<Vec3>,
    /// Scratch of `build`: each point's bucket, and the next free slot of each bucket.
    bucket: Vec<u32>,
    next: Vec<u32>,
}

impl SpatialHash {
    /// An empty hash.
    pub fn new() -> SpatialHash {
        SpatialHash::default()
    }

    /// Rebuilds the hash over the points `indices` (any increasing or not list of ids; each
    /// id is reported by queries as given) placed at `position(id)` (m), with cells of side
    /// `cell_size` (m, > 0 and finite).
    ///
    /// # Panics
    /// If `cell_size` is not positive and finite (an internal error: callers derive it from
    /// validated radii).
    pub fn build(&mut self, cell_size: f32, indices: &[u32], position: impl Fn(u32) -> Vec3) {
        assert!(cell_size > 0.0 && cell_size.is_finite(), "cell size {cell_size}");
        self.inv_cell = 1.0 / cell_size;
        let t = table_size(indices.len());
        self.start.clear();
        self.start.resize(t as usize + 1, 0);
        self.bucket.clear();
        self.bucket.extend(indices.iter().map(|&i| bucket_of(cell_of(position(i), self.inv_cell), t)));
        // Count, then exclusive prefix sum (start[b] = points in buckets before b).
        for &b in &self.bucket {
            self.start[b as usize + 1] += 1;
        }
        for b in 0..t as usize {
            self.start[b + 1] += self.start[b];
        }
        // Scatter in the order given: canonical (increasing) inside each bucket when the
        // indices are increasing.
        self.next.clear();
        self.next.extend_from_slice(&self.start[..t as usize]);
        let n = indices.len();
        self.entries.resize(n, 0);
        self.entry_cell.resize(n, IVec3::ZERO);
        self.entry_position.resize(n, Vec3::ZERO);
        for (k, &b) in self.bucket.iter().enumerate() {
            let slot = self.next[b as usize] as usize;
            self.next[b as usize] += 1;
            let x = position(indices[k]);
            self.entries[slot] = indices[k];
            self.entry_cell[slot] = cell_of(x, self.inv_cell);
            self.entry_position[slot] = x;
        }
    }

    /// Number of points in the hash.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the hash holds no point.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Calls `f(id)` for every point whose cell touches the box [x − r, x + r] (`r` in m,
    /// ≥ 0): cells in z, then y, then x order, and inside a cell in increasing id. Every point
    /// within r of x is among them (and others near it may be): the caller tests the distance.
    #[inline]
    pub fn for_each_candidate(&self, x: Vec3, r: f32, mut f: impl FnMut(u32)) {
        self.for_each_candidate_at(x, r, |id, _| f(id));
    }

    /// As [`SpatialHash::for_each_candidate`], also passing each point's position when the
    /// hash was built.
    #[inline]
    pub fn for_each_candidate_at(&self, x: Vec3, r: f32, mut f: impl FnMut(u32, Vec3)) {
        if self.entries.is_empty() {
            return;
        }
        let t = (self.start.len() - 1) as u32;
        let lo = cell_of(x - Vec3::splat(r), self.inv_cell);
        let hi = cell_of(x + Vec3::splat(r), self.inv_cell);
        for cz in lo.z..=hi.z {
            for cy in lo.y..=hi.y {
                for cx in lo.x..=hi.x {
                    let cell = IVec3::new(cx, cy, cz);
                    let b = bucket_of(cell, t) as usize;
                    let range = self.start[b] as usize..self.start[b + 1] as usize;
                    let cells = &self.entry_cell[range.clone()];
                    let positions = &self.entry_position[range.clone()];
                    for ((&id, &c), &p) in self.entries[range].iter().zip(cells).zip(positions) {
                        if c == cell {
                            f(id, p);
                        }
                    }
                }
            }
        }
    }

    /// The ids of the points within `r` (m) of `x` (distance ≤ r), in the canonical order of
    /// [`SpatialHash::for_each_candidate`], appended to `out`.
    pub fn query(&self, x: Vec3, r: f32, position: impl Fn(u32) -> Vec3, out: &mut Vec<u32>) {
        self.for_each_candidate(x, r, |id| {
            if (position(id) - x).length_squared() <= r * r {
                out.push(id);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_cells_hash_as_twos_complement() {
        // (−1)·p mod 2³² is 2³² − p: the u32 of the i32.
        let t = 1 << 20;
        let h = bucket_of(IVec3::new(-1, 0, 0), t);
        assert_eq!(h, (0u32.wrapping_sub(PRIMES[0])) % t);
        assert_eq!(cell_of(Vec3::new(-0.0001, 0.0, 0.25), 4.0), IVec3::new(-1, 0, 1));
        assert_eq!(cell_of(Vec3::new(-0.25, 0.5, 0.0), 4.0), IVec3::new(-1, 2, 0));
    }

    #[test]
    fn buckets_list_points_in_increasing_index() {
        let points: Vec<Vec3> =
            (0..200).map(|k| Vec3::new((k % 7) as f32 * 0.01, 0.0, (k % 3) as f32 * 0.01)).collect();
        let ids: Vec<u32> = (0..200).collect();
        let mut h = SpatialHash::new();
        h.build(0.05, &ids, |i| points[i as usize]);
        for b in 0..h.start.len() - 1 {
            let s = &h.entries[h.start[b] as usize..h.start[b + 1] as usize];
            assert!(s.windows(2).all(|w| w[0] < w[1]), "bucket {b}: {s:?}");
        }
    }
}
