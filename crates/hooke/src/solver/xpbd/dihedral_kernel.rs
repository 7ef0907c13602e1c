//! The dihedral-bending sweep four or eight hinges at a time: the shared XPBD/PBD update of
//! [`projection`](super::projection) for [`DihedralBending`], with each of its operations done
//! on four hinges of one colour at once (one SIMD lane each, glam's `Vec4`), or on eight on a
//! CPU with AVX2. The update is written once over [`Lanes`] (`update`); the four- and
//! eight-lane kernels differ only in how they read and write the particle records.
//!
//! The hinges of one colour share no particle, so solving four together is solving them one
//! after another. Every lane does the scalar path's operations in its order — IEEE additions,
//! multiplications, divisions and square roots, which SIMD rounds as scalar code does, and
//! the same arctangent in every lane ([`atan2`](crate::angle::atan2), four at a time) — so the result is the scalar sweep's bit
//! for bit (test `four_lanes_are_the_scalar_update_bit_for_bit`), and hence still the GPU
//! kernel's (`dihedral.wgsl`). A colour's last hinges that do not fill a block of four go
//! through the scalar update.
//!
//! On a 256² sheet the angle evaluation and the gradients were about 40 % of a frame on one
//! thread (`perf`), scalar code bound by the latency of its chains of dependent operations;
//! four independent hinges per instruction fill those chains. Eight lanes made a one-thread
//! 256² frame another 1.3–1.4× faster (`docs/BENCHMARKS.md`).

use super::distance_kernel::{COS2_TURN, Shared, Sweep};
use super::lanes::Lanes;
use super::projection::project;
use crate::model::{ConstraintSet, DihedralBending};
use crate::solver::state::Particle;
use glam::Vec4;

/// Hinges per parallel task (a multiple of 8).
const CHUNK: usize = 1024;

/// A 3-vector of lanes: the x, y and z of several hinges' points, one hinge per lane.
#[derive(Clone, Copy)]
struct V3<L> {
    x: L,
    y: L,
    z: L,
}

impl<L: Lanes> V3<L> {
    #[inline(always)]
    fn sub(self, o: V3<L>) -> V3<L> {
        V3 { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
    }

    #[inline(always)]
    fn add(self, o: V3<L>) -> V3<L> {
        V3 { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }

    #[inline(always)]
    fn neg(self) -> V3<L> {
        V3 { x: -self.x, y: -self.y, z: -self.z }
    }

    #[inline(always)]
    fn scale(self, s: L) -> V3<L> {
        V3 { x: self.x * s, y: self.y * s, z: self.z * s }
    }

    /// x·x' + y·y' + z·z', left to right (glam's `Vec3::dot`).
    #[inline(always)]
    fn dot(self, o: V3<L>) -> L {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    /// a × b in the operand order of `dihedral.rs`'s `cross`.
    #[inline(always)]
    fn cross(a: V3<L>, b: V3<L>) -> V3<L> {
        V3 { x: a.y * b.z - b.y * a.z, y: a.z * b.x - b.z * a.x, z: a.x * b.y - b.x * a.y }
    }

    #[inline(always)]
    fn select(mask: L::Mask, a: V3<L>, b: V3<L>) -> V3<L> {
        V3 { x: L::select(mask, a.x, b.x), y: L::select(mask, a.y, b.y), z: L::select(mask, a.z, b.z) }
    }
}

/// `dihedral.rs`'s `hinge` in lanes: the gradients of the angle, the normals, the edge,
/// 1/‖e‖, and which lanes are not degenerate.
struct Hinge<L: Lanes> {
    n1: V3<L>,
    n2: V3<L>,
    e: V3<L>,
    inv_le: L,
    ok: L::Mask,
    grad: [V3<L>; 4],
}

#[inline(always)]
fn hinge<L: Lanes>(x: &[V3<L>; 4]) -> Hinge<L> {
    let one = L::splat(1.0);
    let e = x[1].sub(x[0]);
    let (a, b) = (x[2].sub(x[0]), x[3].sub(x[0]));
    let n1 = V3::cross(e, a);
    let n2 = V3::cross(b, e);
    let (l1, l2, le2) = (n1.dot(n1), n2.dot(n2), e.dot(e));
    let ok = l1.cmpgt(L::splat(1e-24)) & l2.cmpgt(L::splat(1e-24)) & le2.cmpgt(L::splat(1e-18));
    let le = le2.sqrt();
    let inv_le = one / le;
    let (g1, g2) = (n1.scale(one / l1), n2.scale(one / l2));
    let grad2 = g1.scale(le);
    let grad3 = g2.scale(le);
    let (a1, b1) = (a.sub(e).dot(e) * inv_le, b.sub(e).dot(e) * inv_le);
    let (a0, b0) = (a.dot(e) * inv_le, b.dot(e) * inv_le);
    let grad0 = g1.scale(a1).add(g2.scale(b1));
    let grad1 = g1.scale(a0).neg().sub(g2.scale(b0));
    Hinge { n1, n2, e, inv_le, ok, grad: [grad0.neg(), grad1.neg(), grad2.neg(), grad3.neg()] }
}

/// What one hinge of each lane reads: its points at the start of the substep (x⁰), their
/// displacements (d) and inverse masses (w), its rest angle, compliance, damping and λ.
struct HingeLanes<L> {
    start: [V3<L>; 4],
    moved: [V3<L>; 4],
    w: [L; 4],
    rest: L,
    compliance: L,
    damping: L,
    lambda: L,
}

/// The shared update ([`project`]) of one hinge per lane: the lanes that move (a mask), their
/// new λ and their points' new displacements; `None` when no lane moves.
#[inline(always)]
fn update<L: Lanes, const PBD: bool>(h: &HingeLanes<L>, sweep: Sweep) -> Option<(L::Mask, L, [V3<L>; 4])> {
    let (start, moved, w) = (&h.start, &h.moved, &h.w);
    // Relative to the first particle: x⁰ = (x⁰ − x₁⁰), x = (x⁰ − x₁⁰) + (d − d₁); the first
    // is the origin, +0 exactly where the positions are finite (where they are not, the
    // run has blown up), so it is written as 0 and the operations with it fold away.
    let zero = L::splat(0.0);
    let origin = V3 { x: zero, y: zero, z: zero };
    let x0: [V3<L>; 4] = std::array::from_fn(|k| if k == 0 { origin } else { start[k].sub(start[0]) });
    let x: [V3<L>; 4] = std::array::from_fn(|k| if k == 0 { origin } else { x0[k].add(moved[k].sub(moved[0])) });
    let now = hinge(&x);
    // C = θ − θ₀, wrapped to (−π, π].
    let (sin, cos) = (V3::cross(now.n1, now.n2).dot(now.e) * now.inv_le, now.n1.dot(now.n2));
    let theta = crate::angle::atan2_lanes(sin, cos);
    let v = theta - h.rest;
    let (pi, tau) = (L::splat(std::f32::consts::PI), L::splat(std::f32::consts::TAU));
    let value = L::select(v.cmpgt(pi), v - tau, L::select(v.cmple(-pi), v + tau, v));
    // The gradients at the start of the substep unless the hinge turned by more than 25° (or
    // was degenerate then).
    let then = hinge(&x0);
    let (mut dot, mut s2, mut n2) = (zero, zero, zero);
    for k in 0..4 {
        dot = dot + then.grad[k].dot(now.grad[k]);
        s2 = s2 + then.grad[k].dot(then.grad[k]);
        n2 = n2 + now.grad[k].dot(now.grad[k]);
    }
    let keep = then.ok & dot.cmpgt(zero) & (dot * dot).cmpge(L::splat(COS2_TURN) * (s2 * n2));
    let gradient: [V3<L>; 4] = std::array::from_fn(|k| V3::select(keep, then.grad[k], now.grad[k]));
    let mut weight = zero;
    for k in 0..4 {
        weight = weight + w[k] * gradient[k].dot(gradient[k]);
    }
    let active = now.ok & weight.cmpne(zero);
    if !L::any(active) {
        return None;
    }
    let lam = h.lambda;
    let delta = if PBD {
        -(L::splat(sweep.pbd_stiffness) * value) / weight
    } else {
        let alpha = h.compliance * L::splat(sweep.inv_h2);
        let gamma = L::select(alpha.cmpgt(zero), h.damping * L::splat(sweep.inv_h), zero);
        let mut rate = zero;
        for k in 0..4 {
            rate = rate + gradient[k].dot(moved[k]);
        }
        (-value - alpha * lam - gamma * rate) / ((L::splat(1.0) + gamma) * weight + alpha)
    };
    let d: [V3<L>; 4] = std::array::from_fn(|k| moved[k].add(gradient[k].scale(w[k] * delta)));
    Some((active, lam + delta, d))
}

/// Projects the four hinges `c` (of one colour) with the shared update, as four calls of
/// [`project`] would.
///
/// # Safety
/// `p` must be valid for every particle index of `c`, no two hinges of `c` may share a
/// particle, and no other thread may access those particles during the call.
#[inline(always)]
unsafe fn project4<const PBD: bool>(c: &[DihedralBending], lambda: &mut [f32], p: *mut Particle, sweep: Sweep) {
    debug_assert!(c.len() == 4 && lambda.len() == 4);
    let records: [[*mut Particle; 4]; 4] =
        std::array::from_fn(|l| c[l].particles.map(|i| unsafe { p.add(i as usize) }));
    // Point k of the four hinges, x⁰, w and d, one lane per hinge, read straight from the
    // records (the copy of the sixteen records it replaces was 7 % of a 256² frame on one
    // thread in `perf`; frames 1.10–1.17× faster without it).
    // SAFETY (every read): the records are valid, as the caller promised.
    let q = |l: usize, k: usize| -> &Particle { unsafe { &*records[l][k] } };
    let lanes = |f: &dyn Fn(&Particle) -> f32, k: usize| Vec4::new(f(q(0, k)), f(q(1, k)), f(q(2, k)), f(q(3, k)));
    let of = |f: fn(&DihedralBending) -> f32| Vec4::new(f(&c[0]), f(&c[1]), f(&c[2]), f(&c[3]));
    let h = HingeLanes {
        start: std::array::from_fn(|k| V3 {
            x: lanes(&|r| r.x.x, k),
            y: lanes(&|r| r.x.y, k),
            z: lanes(&|r| r.x.z, k),
        }),
        moved: std::array::from_fn(|k| V3 {
            x: lanes(&|r| r.d.x, k),
            y: lanes(&|r| r.d.y, k),
            z: lanes(&|r| r.d.z, k),
        }),
        w: std::array::from_fn(|k| lanes(&|r| r.x.w, k)),
        rest: of(|h| h.rest_angle),
        compliance: of(|h| h.compliance),
        damping: of(|h| h.damping),
        lambda: Vec4::from_slice(lambda),
    };
    let Some((active, updated, d)) = update::<Vec4, PBD>(&h, sweep) else { return };
    for l in 0..4 {
        if !active.test(l) {
            continue;
        }
        if !PBD {
            lambda[l] = updated[l];
        }
        for k in 0..4 {
            // SAFETY: as the caller promised; the lanes' particles are disjoint.
            let r = unsafe { &mut *records[l][k] };
            r.d = Vec4::new(d[k].x[l], d[k].y[l], d[k].z[l], r.d.w + 0.0);
        }
    }
}

/// The hinges `c` with multipliers `lambda`: eight at a time on a CPU with AVX2, then four at
/// a time, and the rest one by one. Every path does the scalar update's operations in its
/// order, so the result does not depend on how a colour is split nor on the CPU.
///
/// # Safety
/// As [`project4`], for all of `c`.
unsafe fn project_all<const PBD: bool>(c: &[DihedralBending], lambda: &mut [f32], p: *mut Particle, sweep: Sweep) {
    let (mut c, mut lambda) = (c, lambda);
    #[cfg(target_arch = "x86_64")]
    if super::lanes8::available() {
        let eights = c.len() / 8 * 8;
        let (head, rest) = c.split_at(eights);
        let (head_lambda, rest_lambda) = lambda.split_at_mut(eights);
        for (cc, ll) in head.chunks_exact(8).zip(head_lambda.chunks_exact_mut(8)) {
            // SAFETY: AVX2 is present; the rest is forwarded from the caller.
            unsafe { avx2::project8::<PBD>(cc.try_into().unwrap(), ll.try_into().unwrap(), p, sweep) };
        }
        (c, lambda) = (rest, rest_lambda);
    }
    let blocks = c.len() / 4 * 4;
    for (cc, ll) in c[..blocks].chunks_exact(4).zip(lambda[..blocks].chunks_exact_mut(4)) {
        unsafe { project4::<PBD>(cc, ll, p, sweep) };
    }
    for (c, l) in c[blocks..].iter().zip(&mut lambda[blocks..]) {
        unsafe { project::<DihedralBending, 4, PBD>(c, l, p, sweep) };
    }
}

/// One Gauss–Seidel sweep over the hinges `set`, colour after colour (the sweep of
/// [`projection::sweep_set`](super::projection::sweep_set), four hinges at a time); the hinges
/// of one colour in parallel chunks when `parallel`. `lambda` has one multiplier per hinge.
pub(crate) fn sweep_hinges<const PBD: bool>(
    set: &ConstraintSet<DihedralBending>,
    lambda: &mut [f32],
    particles: &mut [Particle],
    sweep: Sweep,
    parallel: bool,
) {
    let ranges: Vec<std::ops::Range<usize>> =
        set.colour_ranges().iter().map(|r| r.start as usize..r.end as usize).collect();
    let sizes: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
    let (p, lam) = (Shared(particles.as_mut_ptr()), Shared(lambda.as_mut_ptr()));
    let (p, lam) = (&p, &lam);
    // Eight hinges: the eight-lane kernel's width.
    super::team::sweep_colours(&sizes, parallel, CHUNK, 8, |c, units, _| {
        let r = ranges[c].start + units.start..ranges[c].start + units.end;
        // SAFETY: the hinges of one colour touch disjoint particles (the colouring was
        // validated when the model was built), and the calls of one colour get disjoint
        // hinges and multipliers (`team::sweep_colours`); indices are in range.
        unsafe {
            let ll = std::slice::from_raw_parts_mut(lam.0.add(r.start), r.len());
            project_all::<PBD>(&set.constraints()[r], ll, p.0, sweep);
        }
    });
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The eight-lane hinge kernel: [`super::update`] in [`F8`] lanes, so that it gives the
    //! four-lane kernel's bits. A hinge's four particle records are read as rows and
    //! transposed ([`transpose8`]) instead of gathered float by float.

    use super::super::lanes8::{F8, store_d8, transpose8};
    use super::{DihedralBending, HingeLanes, Particle, Sweep, V3, update};
    use std::arch::x86_64::*;

    /// Projects the eight hinges `c` (of one colour) with the shared update, as eight calls
    /// of [`super::project`] would.
    ///
    /// # Safety
    /// The CPU must have AVX2; as [`super::project4`] for the particles.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn project8<const PBD: bool>(
        c: &[DihedralBending; 8],
        lambda: &mut [f32; 8],
        p: *mut Particle,
        sweep: Sweep,
    ) {
        let records: [[*mut Particle; 4]; 8] =
            std::array::from_fn(|l| c[l].particles.map(|i| unsafe { p.add(i as usize) }));
        // Point k of the eight hinges: its eight records (x⁰, w, d; 32 bytes each) as rows,
        // transposed into x⁰x, x⁰y, x⁰z, w, dx, dy, dz, dw.
        // SAFETY: the records are valid, as the caller promised.
        let columns: [[F8; 8]; 4] = std::array::from_fn(|k| {
            transpose8(std::array::from_fn(|l| unsafe { _mm256_loadu_ps(records[l][k] as *const f32) }))
                .map(F8::from_m256)
        });
        let of = |f: fn(&DihedralBending) -> f32| F8::from_array(std::array::from_fn(|l| f(&c[l])));
        let h = HingeLanes {
            start: std::array::from_fn(|k| V3 { x: columns[k][0], y: columns[k][1], z: columns[k][2] }),
            moved: std::array::from_fn(|k| V3 { x: columns[k][4], y: columns[k][5], z: columns[k][6] }),
            w: std::array::from_fn(|k| columns[k][3]),
            rest: of(|h| h.rest_angle),
            compliance: of(|h| h.compliance),
            damping: of(|h| h.damping),
            lambda: F8::from_array(*lambda),
        };
        let Some((active, updated, d)) = update::<F8, PBD>(&h, sweep) else { return };
        // The lanes that do not move keep their records' bits and multipliers; a moved
        // record's last lane is d.w + 0 (glam's Vec4 written by the scalar path).
        if !PBD {
            // SAFETY: eight floats.
            unsafe { _mm256_storeu_ps(lambda.as_mut_ptr(), F8::select(active, updated, h.lambda).m256()) };
        }
        for k in 0..4 {
            let (moved, w) = (&h.moved[k], columns[k][7]);
            let dx = F8::select(active, d[k].x, moved.x);
            let dy = F8::select(active, d[k].y, moved.y);
            let dz = F8::select(active, d[k].z, moved.z);
            let dw = F8::select(active, w + F8::splat(0.0), w);
            // SAFETY: as the caller promised; the lanes' particles are disjoint.
            unsafe {
                store_d8(
                    std::array::from_fn(|l| (records[l][k] as *mut f32).add(4)),
                    dx.m256(),
                    dy.m256(),
                    dz.m256(),
                    dw.m256(),
                )
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lanes` random hinges projected together by `wide` give, bit for bit, the corrections
    /// and multipliers of as many scalar projections — XPBD (rigid, compliant, damped) and
    /// PBD, with pinned particles, degenerate hinges (a collapsed triangle, now or at the
    /// start) and hinges that turned past 25° in the substep.
    fn lanes_are_the_scalar_update_bit_for_bit(
        lanes: usize,
        seed: u32,
        wide: impl Fn(bool, &[DihedralBending], &mut [f32], *mut Particle, Sweep),
    ) {
        let mut seed = seed;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let sweep = Sweep { inv_h: 1200.0, inv_h2: 1.44e6, pbd_stiffness: 0.7 };
        let n = 4 * lanes;
        let mut turned = 0;
        for round in 0..500 {
            // Hinge l joins particles 4l … 4l + 3.
            let mut particles: Vec<Particle> = (0..n)
                .map(|k| Particle {
                    x: Vec4::new(rnd(), rnd(), rnd(), if (round + k) % 11 == 0 { 0.0 } else { rnd() + 0.6 }),
                    d: Vec4::new(rnd(), rnd(), rnd(), 0.0) * if round % 3 == 0 { 0.3 } else { 0.01 },
                })
                .collect();
            if round % 7 == 0 {
                // A wing on the edge: degenerate at the start.
                particles[2].x = particles[1].x.truncate().extend(particles[2].x.w);
            }
            if round % 13 == 0 {
                // Degenerate now: the wing moved onto the edge's start.
                particles[6].d = (particles[4].position() - particles[6].x.truncate()).extend(0.0);
            }
            if lanes > 4 && round % 17 == 0 {
                // A lane of the second half degenerate now as well.
                particles[22].d = (particles[20].position() - particles[22].x.truncate()).extend(0.0);
            }
            let hinges: Vec<DihedralBending> = (0..lanes as u32)
                .map(|l| DihedralBending {
                    particles: [4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3],
                    rest_angle: 3.0 * rnd(),
                    compliance: if round % 5 == 0 { 0.0 } else { 1e-3 * (rnd() + 0.6) },
                    damping: if round % 4 == 0 { 0.0 } else { 1e-3 * (rnd() + 0.6) },
                })
                .collect();
            let lambda0: Vec<f32> = (0..lanes).map(|_| rnd()).collect();
            let (mut together, mut scalar) = (particles.clone(), particles.clone());
            let (mut lw, mut ls) = (lambda0.clone(), lambda0.clone());
            let pbd = round % 2 == 1;
            wide(pbd, &hinges, &mut lw, together.as_mut_ptr(), sweep);
            for (c, l) in hinges.iter().zip(&mut ls) {
                unsafe {
                    if pbd {
                        project::<DihedralBending, 4, true>(c, l, scalar.as_mut_ptr(), sweep);
                    } else {
                        project::<DihedralBending, 4, false>(c, l, scalar.as_mut_ptr(), sweep);
                    }
                }
            }
            for k in 0..n {
                assert_eq!(
                    together[k].d.to_array().map(f32::to_bits),
                    scalar[k].d.to_array().map(f32::to_bits),
                    "round {round} particle {k}"
                );
            }
            assert_eq!(
                lw.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                ls.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "round {round}"
            );
            // Count the hinges whose update took the current gradients (turned or degenerate at
            // the start), so that both branches are exercised.
            for l in 0..lanes {
                let rel = |k: usize, moved: bool| {
                    let a = &particles[4 * l + k];
                    let o = &particles[4 * l];
                    let x = (a.x - o.x).truncate();
                    if moved { x + (a.d - o.d).truncate() } else { x }
                };
                let start = crate::model::dihedral_angle(&std::array::from_fn(|k| rel(k, false))).map(|(_, g)| g);
                let now = crate::model::dihedral_angle(&std::array::from_fn(|k| rel(k, true)));
                if let (Some(s), Some((_, n))) = (start, now) {
                    let dot: f32 = (0..4).map(|k| s[k].dot(n[k])).sum();
                    if dot <= 0.0 {
                        turned += 1;
                    }
                } else if now.is_some() {
                    turned += 1;
                }
            }
        }
        assert!(turned > 50 * lanes / 4, "only {turned} hinges took the current gradients");
    }

    /// Four hinges at once ([`project4`]) are the scalar update bit for bit.
    #[test]
    fn four_lanes_are_the_scalar_update_bit_for_bit() {
        lanes_are_the_scalar_update_bit_for_bit(4, 11, |pbd, c, l, p, sweep| unsafe {
            if pbd { project4::<true>(c, l, p, sweep) } else { project4::<false>(c, l, p, sweep) }
        });
    }

    /// Eight hinges at once (the AVX2 kernel) are the scalar update bit for bit (skipped,
    /// with the reason printed, on a CPU without AVX2).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn eight_lanes_are_the_scalar_update_bit_for_bit() {
        if !crate::solver::xpbd::lanes8::available() {
            println!("skipped: this CPU has no AVX2");
            return;
        }
        lanes_are_the_scalar_update_bit_for_bit(8, 29, |pbd, c, l, p, sweep| unsafe {
            let (c, l) = (c.try_into().unwrap(), l.try_into().unwrap());
            if pbd { avx2::project8::<true>(c, l, p, sweep) } else { avx2::project8::<false>(c, l, p, sweep) }
        });
    }
}
