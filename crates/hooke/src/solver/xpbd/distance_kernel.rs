//! Distance-constraint projection kernels (article §3.2–3.3), shared by the XPBD and PBD modes.
//!
//! For C = ‖xᵢ − xⱼ‖ − L₀ at the current positions, with the direction n⁰ = (xᵢ⁰ − xⱼ⁰)/‖xᵢ⁰ − xⱼ⁰‖
//! of the pair at the start of the substep — or the current one if the pair turned by more
//! than 25° (the shared update's rule, see [`projection`](super::projection)) — and wᵢ, wⱼ the
//! inverse masses:
//!
//! * **XPBD** (Macklin, Müller & Chentanez 2016): α̃ = α/Δt², γ = τ/Δt (damping),
//!   Δλ = (−C − α̃λ − γ(‖xᵢ − xⱼ‖ − ‖xᵢ⁰ − xⱼ⁰‖)) / ((1+γ)(wᵢ+wⱼ) + α̃), λ += Δλ,
//!   xᵢ += wᵢ n⁰ Δλ, xⱼ −= wⱼ n⁰ Δλ, α the stretch compliance while λ < 0 and the compression
//!   one while λ > 0.
//! * **PBD** (Müller et al. 2007): Δλ = −s·C/(wᵢ+wⱼ) with the stiffness factor s ∈ [0, 1];
//!   its effective stiffness depends on the iteration count, 1 − (1 − s)ⁿ.
//!
//! Positions are read as (xᵢ⁰ − xⱼ⁰) + (dᵢ − dⱼ) (the precision note of
//! [`SolverState`](crate::solver::state::SolverState)); the damping term's change of length
//! needs ‖xᵢ⁰ − xⱼ⁰‖, which the direction at the start of the substep takes anyway, so it costs
//! no extra load.
//!
//! Each particle is one 32-byte [`Particle`] record (x⁰ with w, then d), so one constraint
//! touches two records. When both directions are undefined (‖x‖ → 0) the constraint is skipped
//! for that iteration (the article's guard against division by ~0).

use crate::model::DistanceConstraint;
use crate::solver::state::Particle;
use glam::{Mat4, Vec4};

/// Four constraints of one colour in structure-of-arrays form, one SIMD lane each, so that
/// [`project4`] loads each field with one aligned 16-byte load.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(16))]
pub(crate) struct Block4 {
    /// First particle of each lane.
    pub i: [u32; 4],
    /// Second particle of each lane.
    pub j: [u32; 4],
    /// Rest lengths (m).
    pub rest: Vec4,
    /// Compliances in stretch (m/N).
    pub compliance_stretch: Vec4,
    /// Compliances in compression (m/N).
    pub compliance_compression: Vec4,
    /// Damping times τ (s).
    pub damping: Vec4,
}

impl Block4 {
    /// Packs four constraints.
    pub fn new(c: &[DistanceConstraint; 4]) -> Block4 {
        Block4 {
            i: c.map(|c| c.i),
            j: c.map(|c| c.j),
            rest: Vec4::from_array(c.map(|c| c.rest_length)),
            compliance_stretch: Vec4::from_array(c.map(|c| c.compliance_stretch)),
            compliance_compression: Vec4::from_array(c.map(|c| c.compliance_compression)),
            damping: Vec4::from_array(c.map(|c| c.damping)),
        }
    }
}

/// Per-substep constants of a projection sweep.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sweep {
    /// 1/Δt of the substep (1/s).
    pub inv_h: f32,
    /// 1/Δt² of the substep (1/s²).
    pub inv_h2: f32,
    /// PBD stiffness factor s (only for PBD).
    pub pbd_stiffness: f32,
}

/// cos² of the largest turn of a pair within a substep for which its start direction is used
/// (cos 25° ≈ 0.906): beyond it the start direction no longer brings the pair back to length
/// (past 90° it pushes the wrong way), and the current one is used instead.
pub(crate) const COS2_TURN: f32 = 0.82;

/// Raw pointer that may cross threads. Sound only where the colouring guarantees that no two
/// threads touch the same particle.
#[derive(Clone, Copy)]
pub(crate) struct Shared<T>(pub *mut T);
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

/// Projects a run of constraints of one colour: `blocks` (four constraints each, their
/// multipliers in `block_lambda`, four per block) — two at a time on a CPU with AVX2
/// (eight lanes), one at a time otherwise — then `tail` one by one (multipliers in
/// `tail_lambda`). The eight-lane kernel, [`project4`] and [`project_one`] do the same IEEE
/// operations in the same order, so the result does not depend on how a colour is split into
/// blocks, nor on the CPU.
///
/// # Safety
/// `p` must be valid for every particle index in the constraints; the constraints must be of
/// one colour (no two share a particle); and no other thread may access the particles these
/// constraints touch during the call.
#[inline(always)]
pub(crate) unsafe fn project<const PBD: bool>(
    blocks: &[Block4],
    block_lambda: &mut [f32],
    tail: &[DistanceConstraint],
    tail_lambda: &mut [f32],
    p: Shared<Particle>,
    sweep: Sweep,
) {
    let mut blocks = blocks;
    let mut block_lambda = block_lambda;
    #[cfg(target_arch = "x86_64")]
    if super::lanes8::available() {
        let pairs = blocks.len() / 2;
        for (b, l) in blocks.chunks_exact(2).zip(block_lambda.chunks_exact_mut(8)) {
            // SAFETY: AVX2 is present; the rest is forwarded from the caller.
            unsafe { avx2::project8::<PBD>([&b[0], &b[1]], l.try_into().unwrap(), p.0, sweep) };
        }
        blocks = &blocks[2 * pairs..];
        block_lambda = &mut block_lambda[8 * pairs..];
    }
    for (b, l) in blocks.iter().zip(block_lambda.chunks_exact_mut(4)) {
        unsafe { project4::<PBD>(b, l.try_into().unwrap(), p.0, sweep) };
    }
    for (c, l) in tail.iter().zip(tail_lambda) {
        unsafe { project_one::<PBD>(c, l, p.0, sweep) };
    }
}

/// Projects one constraint. Same contract as [`project`].
///
/// With x⁰ = xᵢ⁰ − xⱼ⁰ (the pair at the start of the substep), Δ = dᵢ − dⱼ and x = x⁰ + Δ
/// (the pair now), C = ‖x‖ − L₀ and the direction u = x⁰ (or u = x if the pair turned by more
/// than 25°; see the module documentation), the XPBD update is computed as t = Δλ/‖u‖ =
/// −(C + α̃λ + γΔC)‖u‖ / (((1+γ)(wᵢ+wⱼ) + α̃)‖u‖²) with ΔC = C − (‖x⁰‖ − L₀) the change of
/// length over the substep, correction = u·t, λ += t‖u‖ — the formula of the shared update's
/// docs with both sides multiplied by ‖u‖, which needs one division.
/// The compliance is the stretch one while λ < 0 (tension), the compression one while
/// λ > 0, and at λ = 0 the one of the side C is on.
#[inline(always)]
pub(crate) unsafe fn project_one<const PBD: bool>(
    c: &DistanceConstraint,
    lambda: &mut f32,
    p: *mut Particle,
    sweep: Sweep,
) {
    let (pi, pj) = unsafe { (&mut *p.add(c.i as usize), &mut *p.add(c.j as usize)) };
    let (wi, wj) = (pi.x.w, pj.x.w);
    let wsum = wi + wj;
    let x0 = (pi.x - pj.x).truncate();
    let delta = (pi.d - pj.d).truncate();
    let x = x0 + delta;
    let l02 = x0.x * x0.x + x0.y * x0.y + x0.z * x0.z;
    let len2 = x.x * x.x + x.y * x.y + x.z * x.z;
    // The direction: the pair at the start of the substep, unless it has turned by more than
    // TURN since (or started at one point); then the pair now.
    let dot = x0.x * x.x + x0.y * x.y + x0.z * x.z;
    let start = l02 >= 1e-18 && dot > 0.0 && dot * dot >= COS2_TURN * (l02 * len2);
    let (u, u2) = if start { (x0, l02) } else { (x, len2) };
    if wsum == 0.0 || u2 < 1e-18 {
        return;
    }
    let len = len2.sqrt();
    let l0 = l02.sqrt();
    let ul = if start { l0 } else { len };
    let cval = len - c.rest_length;
    let t = if PBD {
        -(sweep.pbd_stiffness * cval) / (wsum * ul)
    } else {
        let side = if *lambda != 0.0 { -*lambda } else { cval };
        let alpha = c.compliance_for(side) * sweep.inv_h2;
        let gamma = if alpha > 0.0 { c.damping * sweep.inv_h } else { 0.0 };
        // The damping's rate: the change of length over the substep, C(x) − C(x⁰).
        let rate = cval - (l0 - c.rest_length);
        let numer = -(cval + alpha * *lambda + gamma * rate) * ul;
        let denom = ((1.0 + gamma) * wsum + alpha) * u2;
        let t = numer / denom;
        *lambda += t * ul;
        t
    };
    let corr = u * t;
    pi.d += (corr * wi).extend(0.0);
    pj.d -= (corr * wj).extend(0.0);
}

/// Projects four constraints of one colour in the four lanes of a SIMD register: particle
/// records are gathered and transposed to x/y/z/w lanes, the update of [`project_one`] is done
/// lane-wise, and the corrections are transposed back. Same contract as [`project`].
#[inline(always)]
pub(crate) unsafe fn project4<const PBD: bool>(c: &Block4, lambda: &mut [f32; 4], p: *mut Particle, sweep: Sweep) {
    let pi = c.i.map(|i| unsafe { p.add(i as usize) });
    let pj = c.j.map(|j| unsafe { p.add(j as usize) });
    let gather = |q: [*mut Particle; 4], d: bool| unsafe {
        let f = |k: usize| if d { (*q[k]).d } else { (*q[k]).x };
        Mat4::from_cols(f(0), f(1), f(2), f(3)).transpose()
    };
    let (xi, xj, di, dj) = (gather(pi, false), gather(pj, false), gather(pi, true), gather(pj, true));
    let (wi, wj) = (xi.w_axis, xj.w_axis);
    let wsum = wi + wj;
    let (x0x, x0y, x0z) = (xi.x_axis - xj.x_axis, xi.y_axis - xj.y_axis, xi.z_axis - xj.z_axis);
    let (ddx, ddy, ddz) = (di.x_axis - dj.x_axis, di.y_axis - dj.y_axis, di.z_axis - dj.z_axis);
    let (xx, xy, xz) = (x0x + ddx, x0y + ddy, x0z + ddz);
    let l02 = x0x * x0x + x0y * x0y + x0z * x0z;
    let len2 = xx * xx + xy * xy + xz * xz;
    let dot = x0x * xx + x0y * xy + x0z * xz;
    let start = l02.cmpge(Vec4::splat(1e-18))
        & dot.cmpgt(Vec4::ZERO)
        & (dot * dot).cmpge(Vec4::splat(COS2_TURN) * (l02 * len2));
    let (ux, uy, uz) = (Vec4::select(start, x0x, xx), Vec4::select(start, x0y, xy), Vec4::select(start, x0z, xz));
    let u2 = Vec4::select(start, l02, len2);
    let valid = wsum.cmpne(Vec4::ZERO) & u2.cmpge(Vec4::splat(1e-18));
    let len = len2.sqrt();
    let l0 = l02.sqrt();
    let ul = Vec4::select(start, l0, len);
    let cval = len - c.rest;
    let t = if PBD {
        -(Vec4::splat(sweep.pbd_stiffness) * cval) / (wsum * ul)
    } else {
        let lam = Vec4::from_array(*lambda);
        let tension = lam.cmplt(Vec4::ZERO) | (lam.cmpeq(Vec4::ZERO) & cval.cmpge(Vec4::ZERO));
        let alpha = Vec4::select(tension, c.compliance_stretch, c.compliance_compression) * sweep.inv_h2;
        let gamma = Vec4::select(alpha.cmpgt(Vec4::ZERO), c.damping * sweep.inv_h, Vec4::ZERO);
        let rate = cval - (l0 - c.rest);
        let numer = -(cval + alpha * lam + gamma * rate) * ul;
        let denom = ((Vec4::ONE + gamma) * wsum + alpha) * u2;
        let t = Vec4::select(valid, numer / denom, Vec4::ZERO);
        *lambda = Vec4::select(valid, lam + t * ul, lam).to_array();
        t
    };
    let t = Vec4::select(valid, t, Vec4::ZERO);
    let (cx, cy, cz) = (ux * t, uy * t, uz * t);
    let ci = Mat4::from_cols(cx * wi, cy * wi, cz * wi, Vec4::ZERO).transpose();
    let cj = Mat4::from_cols(cx * wj, cy * wj, cz * wj, Vec4::ZERO).transpose();
    for k in 0..4 {
        unsafe {
            (*pi[k]).d += ci.col(k);
            (*pj[k]).d -= cj.col(k);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The eight-lane kernel: [`super::project4`] on two blocks at once, operation for
    //! operation (comparisons with glam's SSE predicates, negation by the sign bit), so that
    //! it gives the same bits.
    use super::super::lanes8::{select256 as select, store_d8, transpose8};
    use super::{Block4, COS2_TURN, Particle, Sweep};
    use std::arch::x86_64::*;

    /// Four lanes of `a` then four of `b`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn join(a: glam::Vec4, b: glam::Vec4) -> __m256 {
        _mm256_set_m128(b.into(), a.into())
    }

    /// The sign flipped (glam's negation).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn neg(a: __m256) -> __m256 {
        _mm256_xor_ps(a, _mm256_set1_ps(-0.0))
    }

    /// [`super::project4`] on blocks `b[0]` (lanes 0–3) and `b[1]` (lanes 4–7), their
    /// multipliers in `lambda`.
    ///
    /// # Safety
    /// The CPU must have AVX2; as [`super::project`] for the particles.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn project8<const PBD: bool>(
        b: [&Block4; 2],
        lambda: &mut [f32; 8],
        p: *mut Particle,
        sweep: Sweep,
    ) {
        let index = |k: usize, first: bool| {
            let block = b[k / 4];
            if first { block.i[k % 4] } else { block.j[k % 4] }
        };
        let pi: [*mut Particle; 8] = std::array::from_fn(|k| unsafe { p.add(index(k, true) as usize) });
        let pj: [*mut Particle; 8] = std::array::from_fn(|k| unsafe { p.add(index(k, false) as usize) });
        // SAFETY: a particle record is 32 bytes, x⁰ (with w) then d.
        let load = |q: &[*mut Particle; 8]| {
            transpose8(std::array::from_fn(|k| unsafe { _mm256_loadu_ps(q[k] as *const f32) }))
        };
        let [xix, xiy, xiz, wi, dix, diy, diz, diw] = load(&pi);
        let [xjx, xjy, xjz, wj, djx, djy, djz, djw] = load(&pj);
        let wsum = _mm256_add_ps(wi, wj);
        let (x0x, x0y, x0z) = (_mm256_sub_ps(xix, xjx), _mm256_sub_ps(xiy, xjy), _mm256_sub_ps(xiz, xjz));
        let (ddx, ddy, ddz) = (_mm256_sub_ps(dix, djx), _mm256_sub_ps(diy, djy), _mm256_sub_ps(diz, djz));
        let (xx, xy, xz) = (_mm256_add_ps(x0x, ddx), _mm256_add_ps(x0y, ddy), _mm256_add_ps(x0z, ddz));
        let dot3 = |ax, ay, az, bx, by, bz| {
            _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(ax, bx), _mm256_mul_ps(ay, by)), _mm256_mul_ps(az, bz))
        };
        let l02 = dot3(x0x, x0y, x0z, x0x, x0y, x0z);
        let len2 = dot3(xx, xy, xz, xx, xy, xz);
        let dot = dot3(x0x, x0y, x0z, xx, xy, xz);
        let (zero, tiny) = (_mm256_setzero_ps(), _mm256_set1_ps(1e-18));
        let start = _mm256_and_ps(
            _mm256_and_ps(_mm256_cmp_ps::<_CMP_GE_OS>(l02, tiny), _mm256_cmp_ps::<_CMP_GT_OS>(dot, zero)),
            _mm256_cmp_ps::<_CMP_GE_OS>(
                _mm256_mul_ps(dot, dot),
                _mm256_mul_ps(_mm256_set1_ps(COS2_TURN), _mm256_mul_ps(l02, len2)),
            ),
        );
        let (ux, uy, uz) = (select(start, x0x, xx), select(start, x0y, xy), select(start, x0z, xz));
        let u2 = select(start, l02, len2);
        let valid = _mm256_and_ps(_mm256_cmp_ps::<_CMP_NEQ_UQ>(wsum, zero), _mm256_cmp_ps::<_CMP_GE_OS>(u2, tiny));
        let len = _mm256_sqrt_ps(len2);
        let l0 = _mm256_sqrt_ps(l02);
        let ul = select(start, l0, len);
        let rest = join(b[0].rest, b[1].rest);
        let cval = _mm256_sub_ps(len, rest);
        let t = if PBD {
            let s = _mm256_set1_ps(sweep.pbd_stiffness);
            _mm256_div_ps(neg(_mm256_mul_ps(s, cval)), _mm256_mul_ps(wsum, ul))
        } else {
            // SAFETY: eight floats.
            let lam = unsafe { _mm256_loadu_ps(lambda.as_ptr()) };
            let tension = _mm256_or_ps(
                _mm256_cmp_ps::<_CMP_LT_OS>(lam, zero),
                _mm256_and_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(lam, zero), _mm256_cmp_ps::<_CMP_GE_OS>(cval, zero)),
            );
            let alpha = _mm256_mul_ps(
                select(
                    tension,
                    join(b[0].compliance_stretch, b[1].compliance_stretch),
                    join(b[0].compliance_compression, b[1].compliance_compression),
                ),
                _mm256_set1_ps(sweep.inv_h2),
            );
            let damping = _mm256_mul_ps(join(b[0].damping, b[1].damping), _mm256_set1_ps(sweep.inv_h));
            let gamma = select(_mm256_cmp_ps::<_CMP_GT_OS>(alpha, zero), damping, zero);
            let rate = _mm256_sub_ps(cval, _mm256_sub_ps(l0, rest));
            let numer = _mm256_mul_ps(
                neg(_mm256_add_ps(_mm256_add_ps(cval, _mm256_mul_ps(alpha, lam)), _mm256_mul_ps(gamma, rate))),
                ul,
            );
            let denom =
                _mm256_mul_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_add_ps(_mm256_set1_ps(1.0), gamma), wsum), alpha), u2);
            let t = select(valid, _mm256_div_ps(numer, denom), zero);
            let updated = select(valid, _mm256_add_ps(lam, _mm256_mul_ps(t, ul)), lam);
            // SAFETY: eight floats.
            unsafe { _mm256_storeu_ps(lambda.as_mut_ptr(), updated) };
            t
        };
        let t = select(valid, t, zero);
        let (cx, cy, cz) = (_mm256_mul_ps(ux, t), _mm256_mul_ps(uy, t), _mm256_mul_ps(uz, t));
        // d += (c·w, 0) and d −= (c·w, 0), as glam's Vec4 adds: w + 0 and w − 0 in the last lane.
        let zero = _mm256_setzero_ps();
        let d = |q: &[*mut Particle; 8]| std::array::from_fn(|k| unsafe { (q[k] as *mut f32).add(4) });
        // SAFETY: forwarded from the caller; the lanes' particles are disjoint.
        unsafe {
            store_d8(
                d(&pi),
                _mm256_add_ps(dix, _mm256_mul_ps(cx, wi)),
                _mm256_add_ps(diy, _mm256_mul_ps(cy, wi)),
                _mm256_add_ps(diz, _mm256_mul_ps(cz, wi)),
                _mm256_add_ps(diw, zero),
            );
            store_d8(
                d(&pj),
                _mm256_sub_ps(djx, _mm256_mul_ps(cx, wj)),
                _mm256_sub_ps(djy, _mm256_mul_ps(cy, wj)),
                _mm256_sub_ps(djz, _mm256_mul_ps(cz, wj)),
                _mm256_sub_ps(djw, zero),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    fn sweep() -> Sweep {
        Sweep { inv_h: 60.0, inv_h2: 3600.0, pbd_stiffness: 1.0 }
    }

    fn rigid(i: u32, j: u32, rest: f32) -> DistanceConstraint {
        DistanceConstraint {
            i,
            j,
            rest_length: rest,
            compliance_stretch: 0.0,
            compliance_compression: 0.0,
            damping: 0.0,
        }
    }

    fn particle(x: Vec3, w: f32) -> Particle {
        Particle { x: x.extend(w), d: Vec4::ZERO }
    }

    /// Article §3.2: Δx₁ = −w₁/(w₁+w₂)(‖d‖−L₀)n, Δx₂ = +w₂/(w₁+w₂)(‖d‖−L₀)n.
    #[test]
    fn mass_weighted_symmetric_correction() {
        let mut p = vec![particle(Vec3::ZERO, 1.0), particle(Vec3::new(2.0, 0.0, 0.0), 3.0)];
        let mut l = 0.0;
        unsafe { project_one::<false>(&rigid(0, 1, 1.0), &mut l, p.as_mut_ptr(), sweep()) };
        // Stretched by 1 m: particle 0 moves +x by 1/4, particle 1 −x by 3/4.
        assert!((p[0].position().x - 0.25).abs() < 1e-6);
        assert!((p[1].position().x - 1.25).abs() < 1e-6);
        assert!(((p[1].position() - p[0].position()).length() - 1.0).abs() < 1e-6);
        // Momentum is conserved: Σ mᵢΔxᵢ = 0.
        assert!((p[0].d.x * 1.0 + p[1].d.x * (1.0 / 3.0)).abs() < 1e-6);
    }

    #[test]
    fn pinned_particle_never_moves() {
        let mut p = vec![particle(Vec3::ZERO, 0.0), particle(Vec3::new(0.3, 1.7, -0.2), 2.0)];
        let mut l = 0.0;
        let c = DistanceConstraint {
            compliance_stretch: 1e-4,
            compliance_compression: 1e-4,
            damping: 0.01,
            ..rigid(0, 1, 0.5)
        };
        for _ in 0..10 {
            unsafe { project_one::<false>(&c, &mut l, p.as_mut_ptr(), sweep()) };
        }
        assert_eq!(p[0].position(), Vec3::ZERO);
        // Both pinned: nothing moves at all.
        let mut q = vec![particle(Vec3::ZERO, 0.0), particle(Vec3::new(2.0, 0.0, 0.0), 0.0)];
        unsafe { project_one::<false>(&c, &mut l, q.as_mut_ptr(), sweep()) };
        assert_eq!(q[1].position().x, 2.0);
    }

    /// XPBD with compliance α = 1/k converges to Hooke's static extension m·g/k for a particle
    /// hanging from a pin, whatever the time step.
    #[test]
    fn xpbd_converges_to_hooke_extension() {
        let k = 100.0f32; // N/m
        let m = 0.5f32; // kg
        for h in [1.0 / 60.0, 1.0 / 600.0f32] {
            let s = Sweep { inv_h: 1.0 / h, inv_h2: 1.0 / (h * h), pbd_stiffness: 1.0 };
            let c =
                DistanceConstraint { compliance_stretch: 1.0 / k, compliance_compression: 1.0 / k, ..rigid(0, 1, 1.0) };
            let mut p = vec![particle(Vec3::ZERO, 0.0), particle(Vec3::new(0.0, -1.0, 0.0), 1.0 / m)];
            let mut v = Vec3::ZERO;
            for _ in 0..(60.0 / h) as usize {
                v = v * (-2.0f32 * h).exp() + Vec3::new(0.0, -9.81, 0.0) * h;
                p[1].d = (v * h).extend(0.0);
                let mut l = 0.0;
                unsafe { project_one::<false>(&c, &mut l, p.as_mut_ptr(), s) };
                v = p[1].d.truncate() / h;
                let d = p[1].d;
                p[1].x += d;
                p[1].d = Vec4::ZERO;
            }
            let stretch = -p[1].x.y - 1.0;
            let expected = m * 9.81 / k;
            assert!((stretch - expected).abs() < 1e-3 * expected, "h = {h}: stretch {stretch}, expected {expected}");
        }
    }

    /// The eight-lane (AVX2) kernel gives bit for bit the result of the four-lane one on each
    /// of its two blocks — multipliers included — for XPBD with damping, stretch and
    /// compression compliances and λ of both signs and zero, for PBD, and with pinned,
    /// coincident and turned pairs (skipped where the CPU has no AVX2, with the reason printed).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn eight_lanes_are_the_four_lane_kernel_bit_for_bit() {
        if !crate::solver::xpbd::lanes8::available() {
            println!("skipped: this CPU has no AVX2");
            return;
        }
        let mut seed = 987u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        for round in 0..400 {
            let mut a: Vec<Particle> = (0..16)
                .map(|k| Particle {
                    x: Vec4::new(
                        rnd(),
                        rnd(),
                        rnd(),
                        if k % 7 == 5 || (round % 7 == 0 && k < 2) { 0.0 } else { rnd() + 0.6 },
                    ),
                    // Large displacements now and then, so that some pairs turn past 25°.
                    d: Vec4::new(rnd(), rnd(), rnd(), 0.0) * if round % 3 == 0 { 1.0 } else { 0.01 },
                })
                .collect();
            if round % 5 == 0 {
                a[3] = a[2];
                a[12] = a[13];
            }
            let cons: [DistanceConstraint; 8] = std::array::from_fn(|k| DistanceConstraint {
                i: 2 * k as u32,
                j: 2 * k as u32 + 1,
                rest_length: rnd() + 0.6,
                compliance_stretch: if k % 4 == 0 { 0.0 } else { 1e-4 * (rnd() + 0.6) },
                compliance_compression: 1e-3 * (rnd() + 0.6),
                damping: if k % 3 == 2 { 0.0 } else { 1e-3 * (rnd() + 0.6) },
            });
            let blocks = [Block4::new(&cons[..4].try_into().unwrap()), Block4::new(&cons[4..].try_into().unwrap())];
            let lam0: [f32; 8] = std::array::from_fn(|k| if k % 5 == 1 { 0.0 } else { rnd() });
            let sw = Sweep { inv_h: 1200.0, inv_h2: 1.44e6, pbd_stiffness: 0.7 };
            let mut b = a.clone();
            let (mut la, mut lb) = (lam0, lam0);
            let (lb0, lb1) = lb.split_at_mut(4);
            unsafe {
                if round % 2 == 0 {
                    avx2::project8::<false>([&blocks[0], &blocks[1]], &mut la, a.as_mut_ptr(), sw);
                    project4::<false>(&blocks[0], lb0.try_into().unwrap(), b.as_mut_ptr(), sw);
                    project4::<false>(&blocks[1], lb1.try_into().unwrap(), b.as_mut_ptr(), sw);
                } else {
                    avx2::project8::<true>([&blocks[0], &blocks[1]], &mut la, a.as_mut_ptr(), sw);
                    project4::<true>(&blocks[0], lb0.try_into().unwrap(), b.as_mut_ptr(), sw);
                    project4::<true>(&blocks[1], lb1.try_into().unwrap(), b.as_mut_ptr(), sw);
                }
            }
            let bits = |v: Vec4| v.to_array().map(f32::to_bits);
            for k in 0..16 {
                assert_eq!(bits(a[k].d), bits(b[k].d), "round {round} particle {k}");
            }
            assert_eq!(la.map(f32::to_bits), lb.map(f32::to_bits), "round {round}");
        }
    }

    /// The four-lane kernel gives bit-for-bit the result of four scalar projections, for XPBD
    /// with damping and stretch/compression compliances, for PBD, and with degenerate lanes.
    #[test]
    fn simd_lanes_match_the_scalar_kernel() {
        let mut seed = 12345u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        for round in 0..200 {
            let mut a: Vec<Particle> = (0..8)
                .map(|k| Particle {
                    x: Vec4::new(
                        rnd(),
                        rnd(),
                        rnd(),
                        if k == 5 || (round % 7 == 0 && k < 2) { 0.0 } else { rnd() + 0.6 },
                    ),
                    d: Vec4::new(rnd() * 0.01, rnd() * 0.01, rnd() * 0.01, 0.0),
                })
                .collect();
            if round % 5 == 0 {
                a[3] = a[2]; // coincident pair: skipped by the guard
            }
            let cons: [DistanceConstraint; 4] = std::array::from_fn(|k| DistanceConstraint {
                i: 2 * k as u32,
                j: 2 * k as u32 + 1,
                rest_length: rnd() + 0.6,
                compliance_stretch: if k == 0 { 0.0 } else { 1e-4 * (rnd() + 0.6) },
                compliance_compression: 1e-3 * (rnd() + 0.6),
                damping: if k == 2 { 0.0 } else { 1e-3 * (rnd() + 0.6) },
            });
            let lam0 = [rnd(), rnd(), rnd(), rnd()];
            let sw = Sweep { inv_h: 1200.0, inv_h2: 1.44e6, pbd_stiffness: 0.7 };
            let mut b = a.clone();
            let (mut la, mut lb) = (lam0, lam0);
            unsafe {
                if round % 2 == 0 {
                    project4::<false>(&Block4::new(&cons), &mut la, a.as_mut_ptr(), sw);
                    for k in 0..4 {
                        project_one::<false>(&cons[k], &mut lb[k], b.as_mut_ptr(), sw);
                    }
                } else {
                    project4::<true>(&Block4::new(&cons), &mut la, a.as_mut_ptr(), sw);
                    for k in 0..4 {
                        project_one::<true>(&cons[k], &mut lb[k], b.as_mut_ptr(), sw);
                    }
                }
            }
            let bits = |v: Vec4| v.to_array().map(f32::to_bits);
            for k in 0..8 {
                assert_eq!(bits(a[k].d), bits(b[k].d), "round {round} particle {k}");
            }
            assert_eq!(la.map(f32::to_bits), lb.map(f32::to_bits), "round {round}");
        }
    }

    /// Finite-difference check of the gradient the kernel uses: ∇ᵢC = n, ∇ⱼC = −n.
    #[test]
    fn constraint_gradient_matches_finite_differences() {
        let xi = Vec3::new(0.3, -0.2, 0.9);
        let xj = Vec3::new(-0.5, 0.4, 0.1);
        let rest = 0.7;
        let cfun = |a: Vec3, b: Vec3| (a - b).length() - rest;
        let n = (xi - xj).normalize();
        let eps = 1e-3;
        for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
            let gi = (cfun(xi + axis * eps, xj) - cfun(xi - axis * eps, xj)) / (2.0 * eps);
            let gj = (cfun(xi, xj + axis * eps) - cfun(xi, xj - axis * eps)) / (2.0 * eps);
            assert!((gi - n.dot(axis)).abs() < 1e-3);
            assert!((gj + n.dot(axis)).abs() < 1e-3);
        }
        // One XPBD step from λ = 0 with α = 0 moves the pair onto C = 0 along that gradient.
        let mut p = vec![particle(xi, 1.0), particle(xj, 1.0)];
        let mut l = 0.0;
        unsafe { project_one::<false>(&rigid(0, 1, rest), &mut l, p.as_mut_ptr(), sweep()) };
        assert!(cfun(p[0].position(), p[1].position()).abs() < 1e-5);
        assert!(p[0].d.truncate().normalize().dot(n).abs() > 0.9999);
        // λ = −C/(w₁+w₂) for a rigid constraint.
        assert!((l + cfun(xi, xj) / 2.0).abs() < 1e-5);
    }
}
