//! Spring forces gathered per particle, four springs at a time (the force loop of the
//! explicit integrators and of implicit Euler's right-hand side).
//!
//! # Gather instead of scatter
//!
//! The textbook mass–spring loop walks the springs and *scatters* each force to its two
//! particles, fᵢ += F, fⱼ −= F (article §1.3). Two springs that share a particle then write
//! the same accumulator, so a parallel scatter needs colours or atomics, and a colour sweep
//! streams the whole particle array once per colour.
//!
//! Here every particle p instead *gathers* the forces of its own springs:
//!
//! f_p = Σ_{springs (p, q)} −k(L − L₀) n − k_d ((v_p − v_q)·n) n,  n = (x_p − x_q)/L,
//!
//! computing each spring twice (once from each end). The two evaluations are exact negatives
//! of each other — ‖−Δx‖ = ‖Δx‖ and every other factor changes sign with Δx and Δv — so
//! momentum is conserved as in the scatter form. What the doubled arithmetic buys:
//!
//! * **no write conflicts**: each particle writes only its own force, so any split of the
//!   particles over threads is race-free without colours, and the result does not depend on
//!   the number of threads (each particle sums its springs in a fixed order);
//! * **one pass in particle order**: the neighbours of a particle are near it in memory for
//!   grids and well-ordered meshes, so the pass streams memory once, where a colour-ordered
//!   scatter sweeps it once per colour;
//! * **fusion**: the integrator's update of p can follow its force in the same pass when the
//!   positions and velocities are double-buffered (see [`ForceSolver`](super::ForceSolver)).
//!
//! # Layout and SIMD
//!
//! Positions and velocities are read as [`Phase`] records (x, w | v, 0: 32 bytes, one load
//! of eight floats per neighbour). Particles are taken in pairs (2m, 2m + 1), and their springs
//! in [`PairBlock`]s of eight lanes: four springs of particle 2m in lanes 0–3 and four of 2m + 1
//! in lanes 4–7, structure-of-arrays. One block is evaluated with 8-lane SIMD on CPUs with AVX2
//! (detected at run time): the eight neighbour records are loaded and transposed, and the
//! lengths, directions and force magnitudes of the eight springs are computed together. Other
//! CPUs run the same operations in two 4-lane halves (SSE2 on x86-64, scalar elsewhere) in the
//! same order, without fused multiply–adds, so both paths give the same bits (a test checks
//! it). A particle whose spring count is not a multiple of four pads its blocks with springs
//! to itself of zero stiffness: their length 0 is below [`MIN_LENGTH`], so they add nothing —
//! the guard of [`Spring::force`].

use crate::forces::spring::{MIN_LENGTH, Spring};
use crate::model::DistanceConstraint;
use glam::{Mat4, Vec4};
use std::collections::HashMap;
use std::ops::Range;

/// Position and velocity of one particle, as the gather loop reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(32))]
pub(crate) struct Phase {
    /// Position (m) in xyz; inverse mass w (1/kg) in w.
    pub x: Vec4,
    /// Velocity (m/s) in xyz; w unused (0).
    pub v: Vec4,
}

/// Four springs of particle 2m (lanes 0–3) and four of 2m + 1 (lanes 4–7).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct PairBlock<I> {
    /// The particle at the other end of each spring (the lane's own particle in a padding lane),
    /// as a [`LaneIndex`].
    other: [I; 8],
    /// Index of the lanes' spring parameters in [`SpringGather::params`].
    params: u32,
}

/// How a [`PairBlock`] names the particle at the other end of a lane's spring.
pub(crate) trait LaneIndex: Copy + std::fmt::Debug {
    /// Whether the index is relative to the pair's first record (else to the array's start).
    const RELATIVE: bool;
    /// The index of particle `q` in a block of pair `m`, if representable.
    fn encode(q: u32, m: usize) -> Option<Self>;
    /// Where particle q's record starts, in `f32`s from the pair's first record (relative) or
    /// from the array's start.
    fn floats(self) -> isize;
    /// The particle index q in a block of pair `m`.
    fn particle(self, m: usize) -> usize;
}

/// Relative index: (q − 2m) in 8-byte units, so that a grid up to ~4 000 columns wide (its
/// springs reach 2 rows) fits 16 bits and the address is one scaled-index load.
impl LaneIndex for i16 {
    const RELATIVE: bool = true;
    fn encode(q: u32, m: usize) -> Option<i16> {
        i16::try_from(4 * (q as i64 - 2 * m as i64)).ok()
    }
    #[inline(always)]
    fn floats(self) -> isize {
        2 * self as isize
    }
    #[inline(always)]
    fn particle(self, m: usize) -> usize {
        (2 * m as isize + self as isize / 4) as usize
    }
}

/// Absolute particle index, for models whose springs reach further in index.
impl LaneIndex for u32 {
    const RELATIVE: bool = false;
    fn encode(q: u32, _m: usize) -> Option<u32> {
        Some(q)
    }
    #[inline(always)]
    fn floats(self) -> isize {
        8 * self as isize
    }
    #[inline(always)]
    fn particle(self, _m: usize) -> usize {
        self as usize
    }
}

/// The blocks of every pair, with relative indices where every spring allows it.
#[derive(Clone, Debug)]
enum Blocks {
    /// 20 bytes per block.
    Near(Vec<PairBlock<i16>>),
    /// 36 bytes per block.
    Far(Vec<PairBlock<u32>>),
}

/// The spring parameters of the eight lanes of a [`PairBlock`]. Blocks with the same
/// parameters share one record (on a regular grid, nearly all blocks do), so the stream per
/// block is 20 bytes (36 with absolute indices) instead of 148.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(32))]
pub(crate) struct PairParams {
    /// Rest lengths L₀ (m).
    rest: [f32; 8],
    /// Stiffness when stretched (N/m).
    k_stretch: [f32; 8],
    /// Stiffness when compressed (N/m).
    k_compression: [f32; 8],
    /// Axial damping time τ = k_d/k (s).
    damping: [f32; 8],
}

/// Every particle pair's springs as [`PairBlock`]s: pair m's are
/// `blocks[offsets[m]..offsets[m + 1]]`.
#[derive(Clone, Debug)]
pub(crate) struct SpringGather {
    /// Number of particles.
    n: usize,
    offsets: Vec<u32>,
    blocks: Blocks,
    /// Distinct lane parameters, indexed by [`PairBlock::params`].
    params: Vec<PairParams>,
    /// Whether the 8-lane AVX2 kernel runs.
    avx2: bool,
}

impl SpringGather {
    /// The blocks of `n` particles for the given constraints and their springs (one spring per
    /// constraint, same order; every index below `n`). Each particle's springs keep the
    /// constraints' order.
    pub fn new(n: usize, constraints: &[DistanceConstraint], springs: &[Spring]) -> SpringGather {
        let mut per: Vec<Vec<(u32, Spring)>> = vec![Vec::new(); n];
        for (c, s) in constraints.iter().zip(springs) {
            per[c.i as usize].push((c.j, *s));
            per[c.j as usize].push((c.i, *s));
        }
        let mut offsets = Vec::with_capacity(n.div_ceil(2) + 1);
        let mut blocks = Vec::new();
        let mut params = Vec::new();
        let mut index: HashMap<[u32; 32], u32> = HashMap::new();
        offsets.push(0);
        let none = Vec::new();
        for m in 0..n.div_ceil(2) {
            let (a, b) = (2 * m, 2 * m + 1);
            let (la, lb) = (&per[a], per.get(b).unwrap_or(&none));
            let count = la.len().div_ceil(4).max(lb.len().div_ceil(4));
            for k in 0..count {
                // Lane l: spring 4k + l of a (l < 4) or 4k + l − 4 of b; its own particle.
                let lane = |l: usize| {
                    let (list, own) = if l < 4 { (la, a) } else { (lb, b.min(n - 1)) };
                    (list.get(4 * k + l % 4).copied(), own as u32)
                };
                let field = |f: fn(&Spring) -> f32| std::array::from_fn(|l| lane(l).0.map_or(0.0, |(_, s)| f(&s)));
                let lanes = PairParams {
                    rest: field(|s| s.rest_length),
                    k_stretch: field(|s| s.stiffness_stretch),
                    k_compression: field(|s| s.stiffness_compression),
                    damping: field(|s| s.damping),
                };
                let bits: [u32; 32] = std::array::from_fn(|k| {
                    [lanes.rest, lanes.k_stretch, lanes.k_compression, lanes.damping][k / 8][k % 8].to_bits()
                });
                let at = *index.entry(bits).or_insert_with(|| {
                    params.push(lanes);
                    params.len() as u32 - 1
                });
                blocks.push(PairBlock {
                    other: std::array::from_fn(|l| {
                        let (spring, own) = lane(l);
                        spring.map_or(own, |(q, _)| q)
                    }),
                    params: at,
                });
            }
            offsets.push(blocks.len() as u32);
        }
        let near: Option<Vec<PairBlock<i16>>> = blocks
            .iter()
            .zip(block_pair(&offsets))
            .map(|(b, m)| {
                let other = b.other.map(|q| i16::encode(q, m));
                other
                    .iter()
                    .all(Option::is_some)
                    .then(|| PairBlock { other: other.map(Option::unwrap), params: b.params })
            })
            .collect();
        let blocks = match near {
            Some(near) => Blocks::Near(near),
            None => Blocks::Far(blocks),
        };
        SpringGather { n, offsets, blocks, params, avx2: avx2_available() }
    }

    /// Number of particle pairs, ⌈n/2⌉.
    #[cfg(test)]
    pub fn pairs(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Calls `f(m, [f₂ₘ, f₂ₘ₊₁])` for every particle pair m in `pairs`, in order, with the sums
    /// of the spring forces (N in xyz, w = 0) on particles 2m and 2m + 1 (the second is zero
    /// when 2m + 1 = n), from the positions and velocities in `phase`. The loop runs inside
    /// the SIMD kernel, so `f` (the integrator's per-particle update) is compiled into it.
    ///
    /// # Panics
    /// If `phase` does not hold exactly one record per particle, or `pairs` reaches past
    /// ⌈n/2⌉.
    #[inline]
    pub fn for_each_pair<V: PairVisitor>(&self, pairs: Range<usize>, phase: &[Phase], f: &mut V) {
        assert_eq!(phase.len(), self.n, "one phase record per particle");
        assert!(pairs.end < self.offsets.len(), "pairs {pairs:?} of {}", self.offsets.len() - 1);
        match &self.blocks {
            Blocks::Near(blocks) => self.each_pair(blocks, pairs, phase, f),
            Blocks::Far(blocks) => self.each_pair(blocks, pairs, phase, f),
        }
    }

    #[inline(always)]
    fn each_pair<I: LaneIndex, V: PairVisitor>(
        &self,
        blocks: &[PairBlock<I>],
        pairs: Range<usize>,
        phase: &[Phase],
        f: &mut V,
    ) {
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: AVX2 was detected at run time; every `other` index names a particle below
            // n (built from constraints whose indices the model validated), every `params`
            // index is below params.len(), and `phase` has n records.
            unsafe { avx2::for_each_pair(self, blocks, pairs, phase, f) };
            return;
        }
        for m in pairs {
            let (blocks, own) = self.pair(blocks, m, phase);
            f.visit(m, [0, 1].map(|h| portable_forces(blocks, m, &self.params, h, own[h], phase)));
        }
    }

    /// The blocks and the two phase records of pair `m` (the second particle's is the first's
    /// when 2m + 1 = n).
    #[inline(always)]
    fn pair<'a, I>(&self, blocks: &'a [PairBlock<I>], m: usize, phase: &[Phase]) -> (&'a [PairBlock<I>], [Phase; 2]) {
        let blocks = &blocks[self.offsets[m] as usize..self.offsets[m + 1] as usize];
        (blocks, [phase[2 * m], phase[(2 * m + 1).min(self.n - 1)]])
    }

    /// Forces on particle pair `m` from the portable 4-lane path, whatever the CPU (tests).
    #[cfg(test)]
    fn pair_forces_portable(&self, m: usize, phase: &[Phase]) -> [Vec4; 2] {
        fn run<I: LaneIndex>(g: &SpringGather, b: &[PairBlock<I>], m: usize, phase: &[Phase]) -> [Vec4; 2] {
            let (blocks, own) = g.pair(b, m, phase);
            [0, 1].map(|h| portable_forces(blocks, m, &g.params, h, own[h], phase))
        }
        match &self.blocks {
            Blocks::Near(b) => run(self, b, m, phase),
            Blocks::Far(b) => run(self, b, m, phase),
        }
    }

    /// Whether the blocks use 16-bit relative indices (tests).
    #[cfg(test)]
    fn is_near(&self) -> bool {
        matches!(self.blocks, Blocks::Near(_))
    }
}

/// The pair each block belongs to, block by block, from the pairs' block offsets.
fn block_pair(offsets: &[u32]) -> impl Iterator<Item = usize> + '_ {
    offsets.windows(2).enumerate().flat_map(|(m, w)| std::iter::repeat_n(m, (w[1] - w[0]) as usize))
}

/// What [`SpringGather::for_each_pair`] hands each pair's forces to. Implementations mark
/// `visit` `#[inline(always)]`, so that it is compiled into the SIMD loop (a closure may be
/// left out of line, costing a call and register spills per pair).
pub(crate) trait PairVisitor {
    /// Receives the forces on particles 2m and 2m + 1 (N in xyz, w = 0).
    fn visit(&mut self, m: usize, forces: [Vec4; 2]);
}

impl<F: FnMut(usize, [Vec4; 2])> PairVisitor for F {
    #[inline(always)]
    fn visit(&mut self, m: usize, forces: [Vec4; 2]) {
        self(m, forces)
    }
}

/// Whether this CPU runs the AVX2 kernel.
fn avx2_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Lane sum in a fixed order, (l₀ + l₁) + (l₂ + l₃), shared by both paths.
#[inline(always)]
fn lane_sum(l: [f32; 4]) -> f32 {
    (l[0] + l[1]) + (l[2] + l[3])
}

/// The force on the particle of lanes 4h..4h + 4 of `blocks`, with 4-lane vectors.
#[inline]
fn portable_forces<I: LaneIndex>(
    blocks: &[PairBlock<I>],
    m: usize,
    params: &[PairParams],
    h: usize,
    me: Phase,
    phase: &[Phase],
) -> Vec4 {
    let lanes = |a: &[f32; 8]| Vec4::from_slice(&a[4 * h..4 * h + 4]);
    let (px, py, pz) = (Vec4::splat(me.x.x), Vec4::splat(me.x.y), Vec4::splat(me.x.z));
    let (pvx, pvy, pvz) = (Vec4::splat(me.v.x), Vec4::splat(me.v.y), Vec4::splat(me.v.z));
    let (mut fx, mut fy, mut fz) = (Vec4::ZERO, Vec4::ZERO, Vec4::ZERO);
    for b in blocks {
        let q: [Phase; 4] = std::array::from_fn(|l| phase[b.other[4 * h + l].particle(m)]);
        let c = &params[b.params as usize];
        let xq = Mat4::from_cols(q[0].x, q[1].x, q[2].x, q[3].x).transpose();
        let vq = Mat4::from_cols(q[0].v, q[1].v, q[2].v, q[3].v).transpose();
        let (dx, dy, dz) = (px - xq.x_axis, py - xq.y_axis, pz - xq.z_axis);
        let (dvx, dvy, dvz) = (pvx - vq.x_axis, pvy - vq.y_axis, pvz - vq.z_axis);
        let (rest, damping) = (lanes(&c.rest), lanes(&c.damping));
        let len2 = (dx * dx + dy * dy) + dz * dz;
        let len = len2.sqrt();
        // 1/L as L/L², so that the division does not wait for the square root.
        let inv = Vec4::select(len.cmpge(Vec4::splat(MIN_LENGTH)), len * (Vec4::ONE / len2), Vec4::ZERO);
        let k = Vec4::select(len.cmpge(rest), lanes(&c.k_stretch), lanes(&c.k_compression));
        // Δv·n = (Δv·Δx)/L; the force is Δx · s/L with s = −k(L − L₀) − τk(Δv·n).
        let along = ((dvx * dx + dvy * dy) + dvz * dz) * inv;
        let s = (Vec4::ZERO - k * (len - rest) - damping * k * along) * inv;
        fx += dx * s;
        fy += dy * s;
        fz += dz * s;
    }
    Vec4::new(lane_sum(fx.to_array()), lane_sum(fy.to_array()), lane_sum(fz.to_array()), 0.0)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The 8-lane kernel: [`super::portable_forces`] for both particles of a pair at once,
    //! operation for operation.
    use super::{LaneIndex, MIN_LENGTH, PairBlock, PairParams, PairVisitor, Phase, SpringGather};
    use glam::Vec4;
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// [`SpringGather::for_each_pair`] on the 8-lane kernel.
    ///
    /// # Safety
    /// The CPU must have AVX2; the indices of `g` must be valid for `phase` and its parameter
    /// table (true for a `SpringGather` built from a validated model, with n records).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn for_each_pair<I: LaneIndex, V: PairVisitor>(
        g: &SpringGather,
        blocks: &[PairBlock<I>],
        pairs: Range<usize>,
        phase: &[Phase],
        f: &mut V,
    ) {
        for m in pairs {
            let (blocks, own) = g.pair(blocks, m, phase);
            // SAFETY: forwarded from the caller.
            f.visit(m, unsafe { pair_forces(blocks, m, &g.params, own, phase) });
        }
    }

    /// # Safety
    /// The CPU must have AVX2, every `other` index of `blocks` must be below `phase.len()` and
    /// every `params` index below `params.len()`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn pair_forces<I: LaneIndex>(
        blocks: &[PairBlock<I>],
        m: usize,
        params: &[PairParams],
        own: [Phase; 2],
        phase: &[Phase],
    ) -> [Vec4; 2] {
        let pair = |a: f32, b: f32| _mm256_setr_m128(_mm_set1_ps(a), _mm_set1_ps(b));
        let (a, b) = (own[0], own[1]);
        let (px, py, pz) = (pair(a.x.x, b.x.x), pair(a.x.y, b.x.y), pair(a.x.z, b.x.z));
        let (pvx, pvy, pvz) = (pair(a.v.x, b.v.x), pair(a.v.y, b.v.y), pair(a.v.z, b.v.z));
        let (mut fx, mut fy, mut fz) = (_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps());
        let (zero, one, min_len) = (_mm256_setzero_ps(), _mm256_set1_ps(1.0), _mm256_set1_ps(MIN_LENGTH));
        // Where the lanes' indices count from: the pair's first record, or the array's start.
        let base = if I::RELATIVE { unsafe { phase.as_ptr().add(2 * m) } } else { phase.as_ptr() } as *const f32;
        for bl in blocks {
            // Neighbour k (lanes 0–3: particle 2m's springs) and k + 4 (2m + 1's) share a
            // 256-bit register: x half, then v half, loaded 128 bits at a time (the upper
            // half by a load-and-insert, which needs no shuffle port); then two in-lane 4×4
            // transposes give one vector per component, lanes in block order.
            let o = &bl.other;
            // SAFETY: indices below phase.len() (caller); a Phase is 8 consecutive f32.
            let halves = |k: usize, off: isize| unsafe {
                let lo = _mm_loadu_ps(base.offset(o[k].floats() + off));
                let hi = _mm_loadu_ps(base.offset(o[k + 4].floats() + off));
                _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(lo), hi)
            };
            let xyz = |off: isize| {
                let (a0, a1, a2, a3) = (halves(0, off), halves(1, off), halves(2, off), halves(3, off));
                let (t0, t1) = (_mm256_unpacklo_ps(a0, a1), _mm256_unpackhi_ps(a0, a1));
                let (t2, t3) = (_mm256_unpacklo_ps(a2, a3), _mm256_unpackhi_ps(a2, a3));
                (
                    _mm256_shuffle_ps::<0x44>(t0, t2),
                    _mm256_shuffle_ps::<0xEE>(t0, t2),
                    _mm256_shuffle_ps::<0x44>(t1, t3),
                )
            };
            let (qx, qy, qz) = xyz(0);
            let (qvx, qvy, qvz) = xyz(4);
            // SAFETY: index below params.len() (caller).
            let c = unsafe { params.get_unchecked(bl.params as usize) };
            let ld = |a: &[f32; 8]| unsafe { _mm256_loadu_ps(a.as_ptr()) };
            let (rest, damping) = (ld(&c.rest), ld(&c.damping));
            let (dx, dy, dz) = (_mm256_sub_ps(px, qx), _mm256_sub_ps(py, qy), _mm256_sub_ps(pz, qz));
            let (dvx, dvy, dvz) = (_mm256_sub_ps(pvx, qvx), _mm256_sub_ps(pvy, qvy), _mm256_sub_ps(pvz, qvz));
            let len2 =
                _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)), _mm256_mul_ps(dz, dz));
            let len = _mm256_sqrt_ps(len2);
            let valid = _mm256_cmp_ps::<_CMP_GE_OQ>(len, min_len);
            let inv = _mm256_and_ps(valid, _mm256_mul_ps(len, _mm256_div_ps(one, len2)));
            let stretched = _mm256_cmp_ps::<_CMP_GE_OQ>(len, rest);
            let k = _mm256_blendv_ps(ld(&c.k_compression), ld(&c.k_stretch), stretched);
            let dot =
                _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dvx, dx), _mm256_mul_ps(dvy, dy)), _mm256_mul_ps(dvz, dz));
            let along = _mm256_mul_ps(dot, inv);
            let elastic = _mm256_sub_ps(zero, _mm256_mul_ps(k, _mm256_sub_ps(len, rest)));
            let s = _mm256_mul_ps(_mm256_sub_ps(elastic, _mm256_mul_ps(_mm256_mul_ps(damping, k), along)), inv);
            fx = _mm256_add_ps(fx, _mm256_mul_ps(dx, s));
            fy = _mm256_add_ps(fy, _mm256_mul_ps(dy, s));
            fz = _mm256_add_ps(fz, _mm256_mul_ps(dz, s));
        }
        // Lane sums in the order of `lane_sum`: hadd pairs (l₀ + l₁, l₂ + l₃) of x and y, then
        // of z and 0, then adds the pairs; the low half is particle 2m, the high half 2m + 1.
        let xy = _mm256_hadd_ps(fx, fy);
        let z0 = _mm256_hadd_ps(fz, zero);
        let sums = _mm256_hadd_ps(xy, z0);
        let mut out = [Vec4::ZERO; 2];
        // SAFETY: `out` is two 16-byte vectors, 32 contiguous bytes.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr() as *mut f32, sums) };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    fn constraint(i: u32, j: u32, rest: f32) -> DistanceConstraint {
        DistanceConstraint {
            i,
            j,
            rest_length: rest,
            compliance_stretch: 0.01,
            compliance_compression: 0.02,
            damping: 0.1,
        }
    }

    /// The gathered forces equal the scattered sum of [`Spring::force`] (to f32 rounding),
    /// on a star of 6 springs (two blocks, one padded) plus coincident particles; with
    /// `far` particles appended after them, the last one tied to particle 1, so that the
    /// blocks need absolute indices.
    fn check_gather_equals_scatter(far: usize) {
        let mut x = vec![
            Vec3::ZERO,
            Vec3::new(1.0, 0.1, 0.0),
            Vec3::new(-0.7, 0.4, 0.2),
            Vec3::new(0.1, -1.2, 0.3),
            Vec3::new(0.0, 0.2, 0.9),
            Vec3::new(0.5, 0.5, -0.5),
            Vec3::new(-0.3, -0.3, -0.8),
            Vec3::new(-0.3, -0.3, -0.8),
        ];
        x.extend((0..far).map(|k| Vec3::new(0.3, 0.001 * k as f32, 2.0)));
        let v: Vec<Vec3> = (0..x.len()).map(|k| Vec3::new(k as f32 * 0.1, -0.2, 0.05 * k as f32)).collect();
        let mut cons: Vec<DistanceConstraint> = (1..7).map(|j| constraint(0, j, 0.8 + 0.05 * j as f32)).collect();
        cons.push(constraint(6, 7, 0.1));
        cons.push(constraint(1, 2, 2.0));
        if far > 0 {
            cons.push(constraint(1, x.len() as u32 - 1, 1.5));
        }
        let springs: Vec<Spring> = cons
            .iter()
            .map(|c| Spring {
                rest_length: c.rest_length,
                stiffness_stretch: 1.0 / c.compliance_stretch,
                stiffness_compression: 1.0 / c.compliance_compression,
                damping: c.damping,
            })
            .collect();
        let g = SpringGather::new(x.len(), &cons, &springs);
        assert_eq!(g.is_near(), far == 0);
        let phase: Vec<Phase> = x.iter().zip(&v).map(|(x, v)| Phase { x: x.extend(1.0), v: v.extend(0.0) }).collect();
        let mut want = vec![Vec3::ZERO; x.len()];
        for (c, s) in cons.iter().zip(&springs) {
            let (i, j) = (c.i as usize, c.j as usize);
            let f = s.force(x[i] - x[j], v[i] - v[j]);
            want[i] += f;
            want[j] -= f;
        }
        let mut forces = Vec::new();
        g.for_each_pair(0..g.pairs(), &phase, &mut |_, f: [Vec4; 2]| forces.extend(f.map(Vec4::truncate)));
        forces.truncate(x.len());
        let mut portable: Vec<Vec3> =
            (0..g.pairs()).flat_map(|m| g.pair_forces_portable(m, &phase)).map(Vec4::truncate).collect();
        portable.truncate(x.len());
        // The 8-lane and the 4-lane paths do the same IEEE operations in the same order.
        assert_eq!(forces, portable);
        for p in 0..x.len() {
            let got = forces[p];
            assert!((got - want[p]).length() <= 1e-5 * (1.0 + want[p].length()), "particle {p}: {got} vs {}", want[p]);
        }
        // Coincident particles 6 and 7: the spring between them has no direction, no force.
        assert!(want[7].length() == 0.0 && forces[7] == Vec3::ZERO);
        // Newton's third law, summed: the total internal force vanishes (to f32 rounding).
        let total: Vec3 = forces.iter().sum();
        let scale: f32 = forces.iter().map(|f| f.length()).sum();
        assert!(total.length() < 1e-6 * scale, "{total} of {scale}");
    }

    #[test]
    fn gather_equals_scatter_with_relative_indices() {
        check_gather_equals_scatter(0);
    }

    /// A spring 10 000 particles long in index does not fit 16-bit relative indices.
    #[test]
    fn gather_equals_scatter_with_absolute_indices() {
        check_gather_equals_scatter(10_000);
    }
}
