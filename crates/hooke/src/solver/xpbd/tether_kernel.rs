//! The tethers' projection ([`crate::tethers::project`]) eight tethers at a time on a CPU with
//! AVX2, one tether per lane.
//!
//! Each tether moves only its own (free) particle and reads its pins, which no tether moves,
//! so eight tethers projected together are eight projected one after another. Every lane does
//! the scalar projection's IEEE operations in its order, its branches turned into selections,
//! so the result is the scalar one bit for bit (test `eight_lanes_are_the_scalar_tethers_bit_for_bit`)
//! and hence still the GPU kernel's (`tether.wgsl`). The particle and pin records are read as
//! rows and transposed, and the displacements written back as rows
//! ([`store_d8`](super::lanes8::store_d8)), as the constraint kernels do.
//!
//! On a 256² grid with bend springs hanging from its top row (every particle tethered to its
//! two nearest pins), one thread on an AMD EPYC: the tethers cost 9.6–10.7 ms of a 45 ms frame
//! projected one at a time, 6.9–7.0 ms eight at a time (medians; `docs/BENCHMARKS.md`).

use crate::solver::state::Particle;
use crate::tethers::Tether;

/// Projects every tether of `tethers` once: eight at a time where the CPU has AVX2, the rest
/// one by one.
///
/// # Safety
/// `p` must be valid for every particle index of `tethers`; the tethers' particles must be
/// distinct and none of them a pin of any tether of the call; no other thread may access the
/// tethers' particles during the call, nor write their pins.
pub(crate) unsafe fn project_all(tethers: &[Tether], p: *mut Particle) {
    let mut rest = tethers;
    #[cfg(target_arch = "x86_64")]
    if super::lanes8::available() {
        let eights = tethers.len() / 8 * 8;
        for t in tethers[..eights].chunks_exact(8) {
            let t: &[Tether; 8] = t.try_into().unwrap();
            if t.iter().all(|t| t.count >= 1) {
                // SAFETY: AVX2 is present; the rest is forwarded from the caller.
                unsafe { avx2::project8(t, p) };
            } else {
                t.iter().for_each(|t| unsafe { project_one(t, p) });
            }
        }
        rest = &tethers[eights..];
    }
    rest.iter().for_each(|t| unsafe { project_one(t, p) });
}

/// [`crate::tethers::project`] on the particle records.
///
/// # Safety
/// As [`project_all`], for `t`.
#[inline]
unsafe fn project_one(t: &Tether, p: *mut Particle) {
    // SAFETY: as the caller promised.
    unsafe {
        let x0 = |q: u32| (*p.add(q as usize)).x.truncate();
        let d = |q: u32| (*p.add(q as usize)).d.truncate();
        let new = crate::tethers::project(t, x0, d);
        (*p.add(t.particle as usize)).d = new.extend(0.0);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::super::distance_kernel::COS2_TURN;
    use super::super::lanes8::{select256 as select, store_d8, transpose8};
    use super::{Particle, Tether};
    use std::arch::x86_64::*;

    /// x·x' + y·y' + z·z', left to right (glam's `Vec3::dot`).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn dot(a: [__m256; 3], b: [__m256; 3]) -> __m256 {
        _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(a[0], b[0]), _mm256_mul_ps(a[1], b[1])), _mm256_mul_ps(a[2], b[2]))
    }

    /// Projects the eight tethers `t` (each with one or two pins), as eight calls of
    /// [`crate::tethers::project`] would.
    ///
    /// # Safety
    /// The CPU must have AVX2; as [`super::project_all`] for the particles.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn project8(t: &[Tether; 8], p: *mut Particle) {
        // SAFETY: the indices are valid particles, as the caller promised; a record is 32
        // bytes, x⁰ and w, then d.
        let rows = |q: [u32; 8]| transpose8(q.map(|i| unsafe { _mm256_loadu_ps(p.add(i as usize) as *const f32) }));
        let [xx, xy, xz, _, mut dx, mut dy, mut dz, _] = rows(std::array::from_fn(|l| t[l].particle));
        let zero = _mm256_setzero_ps();
        for k in 0..2 {
            // A tether of one pin has no second: its lane reads the first and is masked off.
            let pin = std::array::from_fn(|l| if (k as u32) < t[l].count { t[l].pins[k] } else { t[l].pins[0] });
            let [qx, qy, qz, _, qdx, qdy, qdz, _] = rows(pin);
            let m = |l: usize| if (k as u32) < t[l].count { -1 } else { 0 };
            let used = _mm256_castsi256_ps(_mm256_setr_epi32(m(0), m(1), m(2), m(3), m(4), m(5), m(6), m(7)));
            let length = _mm256_setr_ps(
                t[0].length[k],
                t[1].length[k],
                t[2].length[k],
                t[3].length[k],
                t[4].length[k],
                t[5].length[k],
                t[6].length[k],
                t[7].length[k],
            );
            let start = [_mm256_sub_ps(xx, qx), _mm256_sub_ps(xy, qy), _mm256_sub_ps(xz, qz)];
            let v = [
                _mm256_add_ps(start[0], _mm256_sub_ps(dx, qdx)),
                _mm256_add_ps(start[1], _mm256_sub_ps(dy, qdy)),
                _mm256_add_ps(start[2], _mm256_sub_ps(dz, qdz)),
            ];
            let (s2, v2) = (dot(start, start), dot(v, v));
            let dist = _mm256_sqrt_ps(v2);
            let excess = _mm256_sub_ps(dist, length);
            let moves = _mm256_and_ps(
                used,
                _mm256_and_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(excess, zero), _mm256_cmp_ps::<_CMP_GT_OQ>(dist, zero)),
            );
            let along = dot(start, v);
            let keep = _mm256_and_ps(
                _mm256_and_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(s2, zero), _mm256_cmp_ps::<_CMP_GT_OQ>(along, zero)),
                _mm256_cmp_ps::<_CMP_GE_OQ>(
                    _mm256_mul_ps(along, along),
                    _mm256_mul_ps(_mm256_set1_ps(COS2_TURN), _mm256_mul_ps(s2, v2)),
                ),
            );
            let u = [select(keep, start[0], v[0]), select(keep, start[1], v[1]), select(keep, start[2], v[2])];
            let f = _mm256_div_ps(excess, _mm256_sqrt_ps(select(keep, s2, v2)));
            dx = select(moves, _mm256_sub_ps(dx, _mm256_mul_ps(u[0], f)), dx);
            dy = select(moves, _mm256_sub_ps(dy, _mm256_mul_ps(u[1], f)), dy);
            dz = select(moves, _mm256_sub_ps(dz, _mm256_mul_ps(u[2], f)), dz);
        }
        // SAFETY: the tethers' particles are distinct and no one else's, as the caller promised.
        unsafe { store_d8(t.map(|t| (p.add(t.particle as usize) as *mut f32).add(4)), dx, dy, dz, zero) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec4;

    /// Random tethers (one or two pins, slack and taut, turned past 25° in the substep, a
    /// particle on its pin) projected eight at a time give, bit for bit, the displacements of
    /// the scalar projection, tether by tether; skipped, with the reason printed, on a CPU
    /// without AVX2.
    #[test]
    fn eight_lanes_are_the_scalar_tethers_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if !super::super::lanes8::available() {
            println!("skipped: this CPU has no AVX2");
            return;
        }
        let mut seed = 17u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let (mut moved, mut turned, mut second) = (0, 0, 0);
        for round in 0..400 {
            // Particles 0–3 are pins; tethers on particles 4 … 4 + n − 1.
            let n = 8 + round % 11;
            let mut particles: Vec<Particle> = (0..4 + n)
                .map(|k| Particle {
                    x: Vec4::new(rnd(), rnd(), rnd(), if k < 4 { 0.0 } else { 1.0 }),
                    d: Vec4::new(rnd(), rnd(), rnd(), 0.0) * if round % 3 == 0 { 0.5 } else { 0.02 },
                })
                .collect();
            if round % 5 == 0 {
                // A particle exactly on its pin at the start of the substep.
                particles[4].x = particles[0].x.truncate().extend(1.0);
            }
            let tethers: Vec<Tether> = (0..n as u32)
                .map(|l| {
                    let count = 1 + (l + round as u32) % 2;
                    let pins = [(l + round as u32) % 4, (l + 1 + round as u32) % 4];
                    let length = [0.6 * (rnd() + 0.5), 0.6 * (rnd() + 0.5)];
                    Tether { particle: 4 + l, count, pins: if count == 1 { [pins[0], u32::MAX] } else { pins }, length }
                })
                .collect();
            let mut together = particles.clone();
            unsafe { project_all(&tethers, together.as_mut_ptr()) };
            let mut alone = particles.clone();
            for t in &tethers {
                unsafe { project_one(t, alone.as_mut_ptr()) };
            }
            for k in 0..particles.len() {
                assert_eq!(
                    together[k].d.to_array().map(f32::to_bits),
                    alone[k].d.to_array().map(f32::to_bits),
                    "round {round} particle {k}"
                );
                assert_eq!(together[k].x.to_array().map(f32::to_bits), particles[k].x.to_array().map(f32::to_bits));
            }
            // Count what was exercised: tethers that moved their particle, along the current
            // direction (turned), and by their second pin.
            for t in &tethers {
                let (i, d) = (t.particle as usize, alone[t.particle as usize].d);
                if d != particles[i].d {
                    moved += 1;
                }
                for k in 0..t.count.min(2) as usize {
                    let q = t.pins[k] as usize;
                    let start = (particles[i].x - particles[q].x).truncate();
                    let v = start + (particles[i].d - particles[q].d).truncate();
                    if v.length() > t.length[k] {
                        second += usize::from(k == 1);
                        let dot = start.dot(v);
                        if dot <= 0.0
                            || dot * dot
                                < super::super::distance_kernel::COS2_TURN * start.length_squared() * v.length_squared()
                        {
                            turned += 1;
                        }
                    }
                }
            }
        }
        println!(
            "{moved} tethers moved their particle, {turned} along the current direction, {second} by a second pin"
        );
        assert!(moved > 500 && turned > 100 && second > 200, "{moved} {turned} {second}");
    }
}
