//! A spatial hash of points (article §4.1): the broad phase of particle contacts.
//!
//! Space is cut into cubic cells of side s. A point x lies in the cell
//! c = (⌊x/s⌋, ⌊y/s⌋, ⌊z/s⌋) ∈ ℤ³, and the cell is mapped to one of T buckets by the hash of
//! Teschner et al. 2003 ("Optimized spatial hashing for collision detection of deformable
//! objects") that the article uses:
//!
//! h(c) = ((cₓ·73856093) ⊕ (c_y·19349663) ⊕ (c_z·83492791)) mod T,
//! with T a power of two (so the modulo is a mask of the low bits),
//!
//! computed on the cells' two's-complement bits as `u32` with wrapping multiplication, so a
//! negative coordinate hashes as well as a positive one and the CPU and WGSL give the same
//! bucket. The table is dense: T = 2·n buckets for n points (rounded up to a power of two),
//! its bucket starts in one array of T + 1 offsets and the points in another of n, filled by
//! a counting sort (count per bucket, exclusive prefix sum, scatter). The scatter goes through
//! the points in increasing index, so each bucket lists its points in increasing index: a
//! *canonical order*, so a query answers the same on every thread count. (The GPU's table,
//! built with atomics, lists them in any order; the contact solve sums in fixed point, so its
//! result does not depend on the order.)
//!
//! Different cells can share a bucket. A query for the points within r of x takes the buckets
//! of every cell that the box [x − r, x + r] touches (at most 27 with s ≥ r), sorts them and
//! drops repeats, and visits each bucket once, in increasing bucket index: every point within
//! r is in one of them, none is reported twice, and points of other cells that share a bucket
//! are rejected by the caller's distance test like any other far point. Each entry carries its
//! position, so a query streams through the bucket's memory instead of gathering by id.

use glam::{IVec3, Vec3, Vec4};

/// The article's three primes (Teschner et al. 2003).
pub const PRIMES: [u32; 3] = [73_856_093, 19_349_663, 83_492_791];

/// The cell of `x` for cells of side 1/`inv_cell` (m): ⌊x·inv_cell⌋ per axis, as `i32`.
#[inline]
pub fn cell_of(x: Vec3, inv_cell: f32) -> IVec3 {
    let c = (x * inv_cell).floor();
    IVec3::new(c.x as i32, c.y as i32, c.z as i32)
}

/// The bucket of `cell` in a table of `table_size` buckets, a power of two (as
/// [`table_size`] gives): the hash mod T, taken as its low bits.
#[inline]
pub fn bucket_of(cell: IVec3, table_size: u32) -> u32 {
    debug_assert!(table_size.is_power_of_two());
    let h = (cell.x as u32).wrapping_mul(PRIMES[0])
        ^ (cell.y as u32).wrapping_mul(PRIMES[1])
        ^ (cell.z as u32).wrapping_mul(PRIMES[2]);
    h & (table_size - 1)
}

/// The number of buckets for `points` points: the power of two at or above 2·points (at
/// least 1), so that the modulo of the hash is a mask.
#[inline]
pub fn table_size(points: usize) -> u32 {
    (2 * points).max(1).next_power_of_two() as u32
}

/// A spatial hash over a set of points, rebuilt with [`SpatialHash::build`].
#[derive(Clone, Debug, Default)]
pub struct SpatialHash {
    inv_cell: f32,
    /// T + 1 offsets into `entries`: bucket b holds `entries[start[b]..start[b + 1]]`.
    start: Vec<u32>,
    /// The points' indices (as given to `build`), bucket by bucket, increasing in each bucket.
    entries: Vec<u32>,
    /// The point of each entry when the hash was built (same order as `entries`): its
    /// position (m) and the caller's value in w.
    entry_point: Vec<Vec4>,
    /// The same points by coordinate (x, y, z and the caller's value), for
    /// [`SpatialHash::for_each_overlapping`]'s four-lane distance test.
    entry_lanes: [Vec<f32>; 4],
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
    /// id is reported by queries as given) at `point(id)`: the position (m) in xyz and any
    /// value the caller wants back in w; cells of side `cell_size` (m, > 0; an infinite size
    /// puts every point in one cell, which is correct but makes queries visit all of them).
    pub fn build(&mut self, cell_size: f32, indices: &[u32], point: impl Fn(u32) -> Vec4) {
        self.inv_cell = 1.0 / cell_size;
        let t = table_size(indices.len());
        self.start.clear();
        self.start.resize(t as usize + 1, 0);
        self.bucket.clear();
        self.bucket.extend(indices.iter().map(|&i| bucket_of(cell_of(point(i).truncate(), self.inv_cell), t)));
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
        self.entry_point.resize(n, Vec4::ZERO);
        for (k, &b) in self.bucket.iter().enumerate() {
            let slot = self.next[b as usize] as usize;
            self.next[b as usize] += 1;
            self.entries[slot] = indices[k];
            self.entry_point[slot] = point(indices[k]);
        }
        for (axis, lane) in self.entry_lanes.iter_mut().enumerate() {
            lane.clear();
            lane.extend(self.entry_point.iter().map(|p| p[axis]));
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

    /// Calls `f(id)` for every point in the buckets of the cells that the box [x − r, x + r]
    /// touches (`r` in m, ≥ 0): buckets in increasing index, each once, and inside a bucket in
    /// increasing id. Every point within r of x is among them (and others may be): the caller
    /// tests the distance.
    #[inline]
    pub fn for_each_candidate(&self, x: Vec3, r: f32, mut f: impl FnMut(u32)) {
        self.for_each_candidate_at(x, r, |id, _| f(id));
    }

    /// As [`SpatialHash::for_each_candidate`], also passing each point as it was given to
    /// [`SpatialHash::build`].
    #[inline]
    pub fn for_each_candidate_at(&self, x: Vec3, r: f32, mut f: impl FnMut(u32, Vec4)) {
        self.for_each_bucket(x, r, |range| {
            for (&id, &p) in self.entries[range.clone()].iter().zip(&self.entry_point[range]) {
                f(id, p);
            }
        });
    }

    /// Calls `f(id, point)` for the candidates of [`SpatialHash::for_each_candidate_at`]
    /// within `reach` (m) of `x` whose sphere overlaps the sphere of radius `radius` (m) about
    /// `x`: ‖x − p‖² < (radius + p.w)², with p.w the value given to [`SpatialHash::build`]
    /// (a radius in m), the squared distance computed as (Δx² + Δy²) + Δz² from Δ = x − p —
    /// the operations a caller that tests `(x − p).length_squared() < t²` with
    /// t = radius + p.w does, so it is given exactly the candidates it would keep. The test
    /// runs on four entries at once; the order of the calls is that of
    /// [`SpatialHash::for_each_candidate_at`].
    #[inline]
    pub fn for_each_overlapping(&self, x: Vec3, radius: f32, reach: f32, mut f: impl FnMut(u32, Vec4)) {
        let [lx, ly, lz, lw] = &self.entry_lanes;
        let (sx, sy, sz, sr) = (Vec4::splat(x.x), Vec4::splat(x.y), Vec4::splat(x.z), Vec4::splat(radius));
        self.for_each_bucket(x, reach, |range| {
            let (bx, by, bz, bw) = (&lx[range.clone()], &ly[range.clone()], &lz[range.clone()], &lw[range.clone()]);
            let (ids, points) = (&self.entries[range.clone()], &self.entry_point[range]);
            let full = bx.len() / 4 * 4;
            for k in (0..full).step_by(4) {
                let load = |lane: &[f32]| Vec4::from_array(lane[k..k + 4].try_into().unwrap());
                let (dx, dy, dz) = (sx - load(bx), sy - load(by), sz - load(bz));
                let t = sr + load(bw);
                let d2 = dx * dx + dy * dy + dz * dz;
                let mut hits = d2.cmplt(t * t).bitmask();
                while hits != 0 {
                    let lane = hits.trailing_zeros() as usize;
                    f(ids[k + lane], points[k + lane]);
                    hits &= hits - 1;
                }
            }
            for (&id, &p) in ids[full..].iter().zip(&points[full..]) {
                let (d, t) = (x - p.truncate(), radius + p.w);
                if d.length_squared() < t * t {
                    f(id, p);
                }
            }
        });
    }

    /// Calls `f(range of entries)` for each bucket of the cells that the box [x − r, x + r]
    /// touches, in increasing bucket index, each once.
    #[inline]
    fn for_each_bucket(&self, x: Vec3, r: f32, mut f: impl FnMut(std::ops::Range<usize>)) {
        if self.entries.is_empty() {
            return;
        }
        let t = (self.start.len() - 1) as u32;
        let lo = cell_of(x - Vec3::splat(r), self.inv_cell);
        let hi = cell_of(x + Vec3::splat(r), self.inv_cell);
        let span = (hi - lo + IVec3::ONE).as_uvec3();
        let cells = span.x as usize * span.y as usize * span.z as usize;
        let mut small = [0u32; 27];
        let mut large = Vec::new();
        let buckets: &mut [u32] = if cells <= 27 {
            &mut small[..cells]
        } else {
            large.resize(cells, 0);
            &mut large
        };
        let mut k = 0;
        for cz in lo.z..=hi.z {
            for cy in lo.y..=hi.y {
                for cx in lo.x..=hi.x {
                    buckets[k] = bucket_of(IVec3::new(cx, cy, cz), t);
                    k += 1;
                }
            }
        }
        buckets.sort_unstable();
        let mut last = u32::MAX;
        for &b in buckets.iter() {
            if b != last {
                f(self.start[b as usize] as usize..self.start[b as usize + 1] as usize);
                last = b;
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
        assert_eq!(table_size(3), 8);
        assert_eq!(table_size(0), 1);
        assert_eq!(cell_of(Vec3::new(-0.0001, 0.0, 0.25), 4.0), IVec3::new(-1, 0, 1));
        assert_eq!(cell_of(Vec3::new(-0.25, 0.5, 0.0), 4.0), IVec3::new(-1, 2, 0));
    }

    #[test]
    fn buckets_list_points_in_increasing_index() {
        let points: Vec<Vec3> =
            (0..200).map(|k| Vec3::new((k % 7) as f32 * 0.01, 0.0, (k % 3) as f32 * 0.01)).collect();
        let ids: Vec<u32> = (0..200).collect();
        let mut h = SpatialHash::new();
        h.build(0.05, &ids, |i| points[i as usize].extend(0.0));
        for b in 0..h.start.len() - 1 {
            let s = &h.entries[h.start[b] as usize..h.start[b + 1] as usize];
            assert!(s.windows(2).all(|w| w[0] < w[1]), "bucket {b}: {s:?}");
        }
    }
}
