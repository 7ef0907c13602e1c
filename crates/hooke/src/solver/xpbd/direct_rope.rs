//! The direct rope solver: every constraint of a rope — its stretch segments, its bend springs
//! or joint angles — solved together, each iteration, by one banded linear system in O(n)
//! (in the spirit of Deul, Kugelstadt, Weiler & Bender 2018, "Direct position-based solver for
//! stiff rods", who solve a rod's constraints with a direct solver over its tree).
//!
//! # Why
//!
//! Gauss–Seidel projects one constraint at a time. Along a chain a correction travels one
//! segment per sweep, and a heavy particle at the end of light ones (a 500 kg weight on a
//! 0.1 kg/segment chain) is barely moved by each projection: a rigid chain stretches by tens of
//! percent at a few sweeps per substep, and a 200-segment cable sags far more than a
//! 20-segment one. XPBD's λ then carries a residual r = C + α̃λ ≠ 0, the excess strain.
//!
//! # The system
//!
//! For the m constraints C_k of a rope with gradients ∇C_k (taken, as in the shared update of
//! [`projection`](super::projection), at the start of the substep unless the constraint turned
//! by more than 25°), inverse masses W, α̃_k = α_k/h² and γ_k = τ_k/h, one linearised XPBD
//! step for all of them at once is
//!
//! (J W Jᵀ + D) Δλ = b,  D_k = α̃_k/(1 + γ_k),  b_k = (−C_k − α̃_k λ_k − γ_k ΔC_k)/(1 + γ_k),
//!
//! (each row of Macklin et al.'s damped update divided by 1 + γ_k, which keeps the matrix
//! symmetric), then λ += Δλ and d += W Jᵀ Δλ, with ΔC_k the damping's rate (a segment's change
//! of length over the substep, a joint's ∇C_k·d). A single constraint gives exactly the shared
//! update. PBD mode solves J W Jᵀ Δλ = −s C. Entry (k, l) of J W Jᵀ is
//! Σ_p w_p ∇_pC_k·∇_pC_l over the particles the two share, so it is non-zero only for
//! constraints within a few particles of each other: ordered by their first particle (segment
//! i, then joint i+1, …) the matrix is banded — bandwidth 1 (tridiagonal) for stretch alone, 3–4
//! with joints — and an LDLᵀ factorisation of the band costs O(m b²). The matrix is symmetric
//! positive semi-definite; a row whose particles are all pinned, or whose gradient vanishes (a
//! straight joint), is singular and is left out (Δλ = 0). The solve is in f32, in a fixed order,
//! so that the GPU kernel can reproduce it bit for bit.
//!
//! With the rope solved exactly (to linearisation) in every iteration, one iteration per
//! substep gives the rigid chain's length and the cable's catenary; Gauss–Seidel's residual is
//! gone, whatever the mass ratio.

use crate::model::{ConstraintSet, DistanceConstraint, ParticleConstraint, RopeBending};
use crate::solver::state::Particle;
use crate::{BodyKind, Model};
use glam::Vec3;

/// One row of a rope's system: a constraint of the distance set or of the joint set (the
/// index into [`Model::distance`] or [`Model::rope_bending`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// A distance constraint (a segment or a bend spring).
    Distance(u32),
    /// A rope joint.
    Joint(u32),
}

/// One rope's system: its rows in band order, the band width, and for each of its particles
/// the rows that touch it (with the particle's slot in the row's gradient). GPU backends
/// reproduce the solve from it.
#[derive(Clone, Debug)]
pub struct Chain {
    /// The rows, in band order.
    pub rows: Vec<Row>,
    /// The lower band width b: entry (k, l) of the matrix is zero for k − l > b; ≥ 1.
    pub bandwidth: usize,
    /// The rope's first particle (its particles are consecutive).
    pub first_particle: u32,
    /// CSR over the rope's particles (local index p): `touch[offsets[p]..offsets[p + 1]]`;
    /// one more entry than the rope has particles.
    pub offsets: Vec<u32>,
    /// (row, slot of the particle in the row's gradient: 0–2), rows in increasing order.
    pub touch: Vec<(u32, u8)>,
}

/// Scratch of one chain's solve.
#[derive(Clone, Debug, Default)]
struct Scratch {
    /// Gradient of each row on its (up to three) particles.
    grad: Vec<[Vec3; 3]>,
    /// The band of L (unit lower triangle) row-major: `band[k·b + j]` is L_{k, k−b+j}.
    band: Vec<f32>,
    diag: Vec<f32>,
    rhs: Vec<f32>,
}

/// The direct solver of every rope of a model. See the [module documentation](self).
#[derive(Clone, Debug, Default)]
pub struct RopeChains {
    chains: Vec<Chain>,
    scratch: Vec<Scratch>,
    /// The largest T(wᵢ + wⱼ)/L (1/s²) of a segment in tension since the last
    /// [`RopeChains::take_peak`], for the tension limit ([`super::stability`]).
    peak: f32,
}

/// The particles of a row (the third repeats the second for a distance constraint).
fn row_particles(
    row: Row,
    distance: &ConstraintSet<DistanceConstraint>,
    joints: &ConstraintSet<RopeBending>,
) -> ([u32; 3], usize) {
    match row {
        Row::Distance(k) => {
            let c = distance.constraints()[k as usize];
            ([c.i, c.j, c.j], 2)
        }
        Row::Joint(k) => (joints.constraints()[k as usize].particles, 3),
    }
}

impl RopeChains {
    /// The chains of every rope body of `model`, in body order.
    pub fn new(model: &Model) -> RopeChains {
        let (distance, joints) = (model.distance(), model.rope_bending());
        let mut chains = Vec::new();
        for body in model.bodies().iter().filter(|b| b.kind == BodyKind::Rope) {
            let range = body.particles.clone();
            let mut rows: Vec<(u32, u32, Row)> = Vec::new();
            for p in range.clone() {
                for &k in distance.particle_constraints(p as usize) {
                    let c = distance.constraints()[k as usize];
                    if c.i.min(c.j) == p {
                        rows.push((p, 0, Row::Distance(k)));
                    }
                }
                for &k in joints.particle_constraints(p as usize) {
                    let c = joints.constraints()[k as usize];
                    if c.particles.iter().min() == Some(&p) {
                        rows.push((p, 1, Row::Joint(k)));
                    }
                }
            }
            // By first particle, segments before joints, then by index: a fixed band order.
            rows.sort_by_key(|&(p, kind, row)| {
                (
                    p,
                    kind,
                    match row {
                        Row::Distance(k) | Row::Joint(k) => k,
                    },
                )
            });
            let rows: Vec<Row> = rows.into_iter().map(|(_, _, r)| r).collect();
            let n = range.len();
            let mut offsets = vec![0u32; n + 1];
            for &row in &rows {
                let (ps, count) = row_particles(row, distance, joints);
                for &p in &ps[..count] {
                    offsets[(p - range.start) as usize + 1] += 1;
                }
            }
            for p in 0..n {
                offsets[p + 1] += offsets[p];
            }
            let mut fill = offsets.clone();
            let mut touch = vec![(0u32, 0u8); offsets[n] as usize];
            for (r, &row) in rows.iter().enumerate() {
                let (ps, count) = row_particles(row, distance, joints);
                for (slot, &p) in ps[..count].iter().enumerate() {
                    let local = (p - range.start) as usize;
                    touch[fill[local] as usize] = (r as u32, slot as u8);
                    fill[local] += 1;
                }
            }
            let bandwidth = (0..n)
                .map(|p| {
                    let t = &touch[offsets[p] as usize..offsets[p + 1] as usize];
                    let (lo, hi) = t.iter().fold((u32::MAX, 0), |(lo, hi), &(r, _)| (lo.min(r), hi.max(r)));
                    if t.is_empty() { 0 } else { (hi - lo) as usize }
                })
                .max()
                .unwrap_or(0)
                .max(1);
            chains.push(Chain { rows, bandwidth, first_particle: range.start, offsets, touch });
        }
        let scratch = chains
            .iter()
            .map(|c| Scratch {
                grad: vec![[Vec3::ZERO; 3]; c.rows.len()],
                band: vec![0.0; c.rows.len() * c.bandwidth],
                diag: vec![0.0; c.rows.len()],
                rhs: vec![0.0; c.rows.len()],
            })
            .collect();
        RopeChains { chains, scratch, peak: 0.0 }
    }

    /// The largest T(wᵢ + wⱼ)/L (1/s²) of a rope segment in tension, T = −λ/h² (N), at the end
    /// of any solve since the last call (0 if none); resets it.
    pub(crate) fn take_peak(&mut self) -> f32 {
        std::mem::take(&mut self.peak)
    }

    /// Whether the model has no rope.
    pub fn is_empty(&self) -> bool {
        self.chains.is_empty()
    }

    /// The chains, one per rope.
    pub fn chains(&self) -> &[Chain] {
        &self.chains
    }

    /// One direct solve of every rope: λ (of the distance set in `lambda`, of the joints in
    /// `lambda_joint`) and the displacements updated. `sweep` as for the Gauss–Seidel sweeps;
    /// `pbd` for PBD mode.
    pub(crate) fn solve(
        &mut self,
        model: &Model,
        particles: &mut [Particle],
        lambda: &mut [f32],
        lambda_joint: &mut [f32],
        sweep: super::distance_kernel::Sweep,
        pbd: bool,
    ) {
        for (chain, scratch) in self.chains.iter().zip(&mut self.scratch) {
            let peak = solve_chain(chain, scratch, model, particles, lambda, lambda_joint, sweep, pbd);
            self.peak = self.peak.max(peak);
        }
    }
}

/// C, the gradients (start of the substep unless turned by more than 25°, the shared update's
/// rule), the compliance α, the damping time τ and the damping term's rate
/// ([`ParticleConstraint::damping_rate`]) of one row.
pub(super) fn evaluate<T: ParticleConstraint<N>, const N: usize>(
    c: &T,
    particles: &[Particle],
    lambda: f32,
) -> Option<(f32, [Vec3; 4], f32, f32, f32)> {
    let q: [Particle; N] = c.particles().map(|i| particles[i as usize]);
    let x0: [Vec3; N] = std::array::from_fn(|k| (q[k].x - q[0].x).truncate());
    let x: [Vec3; N] = std::array::from_fn(|k| ((q[k].x - q[0].x) + (q[k].d - q[0].d)).truncate());
    let (value, now) = c.evaluate(&x)?;
    let gradient = match c.gradient(&x0) {
        Some(start) => {
            let (mut dot, mut s2, mut n2) = (0.0, 0.0, 0.0);
            for k in 0..N {
                dot += start[k].dot(now[k]);
                s2 += start[k].length_squared();
                n2 += now[k].length_squared();
            }
            if dot > 0.0 && dot * dot >= super::distance_kernel::COS2_TURN * (s2 * n2) { start } else { now }
        }
        None => now,
    };
    let rate = c.damping_rate(value, &x0, &gradient, &q.map(|r| r.d.truncate()));
    let mut g = [Vec3::ZERO; 4];
    g[..N].copy_from_slice(&gradient);
    let side = if lambda != 0.0 { -lambda } else { value };
    Some((value, g, c.compliance(side), c.damping(), rate))
}

#[allow(clippy::too_many_arguments)]
fn solve_chain(
    chain: &Chain,
    s: &mut Scratch,
    model: &Model,
    particles: &mut [Particle],
    lambda: &mut [f32],
    lambda_joint: &mut [f32],
    sweep: super::distance_kernel::Sweep,
    pbd: bool,
) -> f32 {
    let (distance, joints) = (model.distance(), model.rope_bending());
    let b = chain.bandwidth;
    // Rows: gradients, the diagonal term D_k and the right-hand side b_k.
    for (r, &row) in chain.rows.iter().enumerate() {
        let (lam, eval) = match row {
            Row::Distance(k) => {
                let lam = lambda[k as usize];
                (lam, evaluate::<_, 2>(&distance.constraints()[k as usize], particles, lam))
            }
            Row::Joint(k) => {
                let lam = lambda_joint[k as usize];
                (lam, evaluate::<_, 3>(&joints.constraints()[k as usize], particles, lam))
            }
        };
        let Some((value, grad, alpha, tau, rate)) = eval else {
            s.grad[r] = [Vec3::ZERO; 3];
            s.diag[r] = 0.0;
            s.rhs[r] = 0.0;
            continue;
        };
        s.grad[r] = [grad[0], grad[1], grad[2]];
        if pbd {
            s.diag[r] = 0.0;
            s.rhs[r] = -(sweep.pbd_stiffness * value);
        } else {
            let alpha = alpha * sweep.inv_h2;
            let gamma = if alpha > 0.0 { tau * sweep.inv_h } else { 0.0 };
            let scale = 1.0 / (1.0 + gamma);
            s.diag[r] = alpha * scale;
            s.rhs[r] = (-value - alpha * lam - gamma * rate) * scale;
        }
    }
    // The matrix: D + J W Jᵀ, lower band in `band` (entry (k, l), l < k, at k·b + (l + b − k)),
    // the diagonal in `diag`, summed particle by particle.
    s.band.iter_mut().for_each(|v| *v = 0.0);
    let n = chain.offsets.len() - 1;
    for p in 0..n {
        let w = particles[chain.first_particle as usize + p].x.w;
        if w == 0.0 {
            continue;
        }
        let t = &chain.touch[chain.offsets[p] as usize..chain.offsets[p + 1] as usize];
        // `touch` lists a particle's rows in increasing order, so row ra > rb below.
        for (a, &(ra, sa)) in t.iter().enumerate() {
            let (ra, ga) = (ra as usize, s.grad[ra as usize][sa as usize]);
            s.diag[ra] += w * ga.dot(ga);
            let band_row = &mut s.band[ra * b..(ra + 1) * b];
            for &(rb, sb) in &t[..a] {
                let gb = s.grad[rb as usize][sb as usize];
                band_row[rb as usize + b - ra] += w * ga.dot(gb);
            }
        }
    }
    // LDLᵀ of the band and the three substitutions, unrolled for the band widths ropes have.
    match b {
        1 => factor_and_solve::<1>(bytemuck::cast_slice_mut(&mut s.band), &mut s.diag, &mut s.rhs),
        2 => factor_and_solve::<2>(bytemuck::cast_slice_mut(&mut s.band), &mut s.diag, &mut s.rhs),
        3 => factor_and_solve::<3>(bytemuck::cast_slice_mut(&mut s.band), &mut s.diag, &mut s.rhs),
        4 => factor_and_solve::<4>(bytemuck::cast_slice_mut(&mut s.band), &mut s.diag, &mut s.rhs),
        _ => factor_and_solve_any(b, &mut s.band, &mut s.diag, &mut s.rhs),
    }
    // λ += Δλ, d += W Jᵀ Δλ (particle by particle, rows in band order); the largest
    // T(wᵢ + wⱼ)/L of a segment for the tension limit.
    let mut peak = 0.0f32;
    if !pbd {
        for (r, &row) in chain.rows.iter().enumerate() {
            match row {
                Row::Distance(k) => {
                    let l = &mut lambda[k as usize];
                    *l += s.rhs[r];
                    if *l < 0.0 {
                        let c = &distance.constraints()[k as usize];
                        let w = particles[c.i as usize].x.w + particles[c.j as usize].x.w;
                        peak = peak.max(-*l * sweep.inv_h2 * w / c.rest_length);
                    }
                }
                Row::Joint(k) => lambda_joint[k as usize] += s.rhs[r],
            }
        }
    }
    for p in 0..n {
        let q = &mut particles[chain.first_particle as usize + p];
        let w = q.x.w;
        if w == 0.0 {
            continue;
        }
        let mut step = Vec3::ZERO;
        for &(r, slot) in &chain.touch[chain.offsets[p] as usize..chain.offsets[p + 1] as usize] {
            step += s.grad[r as usize][slot as usize] * s.rhs[r as usize];
        }
        q.d += (step * w).extend(0.0);
    }
    // An infinite tension asks for the most substeps; NaN (a broken state) is the health
    // check's to report.
    if peak.is_nan() { 0.0 } else { peak }
}

/// One row k of the LDLᵀ factorisation of a band of width `b` (any k): `band` row-major,
/// `band[k·b + j]` is L_{k, k−b+j} (A's entry before), `diag` d. Shared by both forms below
/// so that the first rows of the unrolled form are this, operation for operation.
#[inline]
fn factor_row(b: usize, k: usize, band: &mut [f32], diag: &mut [f32], rhs: &mut [f32]) {
    let lo = k.saturating_sub(b);
    for j in lo..k {
        // L_kj = (A_kj − Σ_{i<j} L_ki L_ji d_i) / d_j over the band.
        let mut v = band[k * b + (j + b - k)];
        for i in lo.max(j.saturating_sub(b))..j {
            v -= band[k * b + (i + b - k)] * band[j * b + (i + b - j)] * diag[i];
        }
        let l = if diag[j] > 0.0 { v / diag[j] } else { 0.0 };
        band[k * b + (j + b - k)] = l;
        diag[k] -= l * l * diag[j];
    }
    // A singular row (all its particles pinned, or no gradient): left out, Δλ_k = 0.
    if diag[k].is_nan() || diag[k] <= 1e-30 {
        diag[k] = 0.0;
        rhs[k] = 0.0;
    }
}

/// The banded solve (D + J W Jᵀ) Δλ = b for any band width `b`: LDLᵀ in place (`band` becomes
/// L's strict lower band, `diag` D), then forward (L y = b), diagonal (D z = y) and back
/// (Lᵀ Δλ = z) substitution; Δλ is left in `rhs`. The GPU kernel does these operations in
/// this order.
fn factor_and_solve_any(b: usize, band: &mut [f32], diag: &mut [f32], rhs: &mut [f32]) {
    let m = diag.len();
    for k in 0..m {
        factor_row(b, k, band, diag, rhs);
    }
    for k in 0..m {
        let mut v = rhs[k];
        for j in k.saturating_sub(b)..k {
            v -= band[k * b + (j + b - k)] * rhs[j];
        }
        rhs[k] = v;
    }
    for k in 0..m {
        rhs[k] = if diag[k] > 0.0 { rhs[k] / diag[k] } else { 0.0 };
    }
    for k in (0..m).rev() {
        let mut v = rhs[k];
        for j in k + 1..(k + b + 1).min(m) {
            v -= band[j * b + (k + b - j)] * rhs[j];
        }
        rhs[k] = v;
    }
}

/// [`factor_and_solve_any`] for a band width known at compile time, the same operations in
/// the same order (so the same bits): away from the ends every loop has B terms, unrolled and
/// without bounds checks. Ropes have B = 1 (stretch alone) to 4 (with joints).
fn factor_and_solve<const B: usize>(band: &mut [[f32; B]], diag: &mut [f32], rhs: &mut [f32]) {
    let m = diag.len();
    // The first rows as the general form does them, factor then forward substitution.
    for k in 0..m.min(B) {
        factor_row(B, k, band.as_flattened_mut(), diag, rhs);
    }
    for k in 0..m.min(B) {
        let mut v = rhs[k];
        for j in 0..k {
            v -= band[k][j + B - k] * rhs[j];
        }
        rhs[k] = v;
    }
    // Then each row's factorisation and its forward substitution together: two independent
    // chains of operations that the processor overlaps.
    for k in B..m {
        // Rows k − B + jj for jj < B; in L_kj's sum i runs over k − B..j.
        let mut row = band[k];
        let mut dk = diag[k];
        for jj in 0..B {
            let j = k - B + jj;
            let lj = band[j];
            let mut v = row[jj];
            for ii in 0..jj {
                v -= row[ii] * lj[ii + B - jj] * diag[k - B + ii];
            }
            let l = if diag[j] > 0.0 { v / diag[j] } else { 0.0 };
            row[jj] = l;
            dk -= l * l * diag[j];
        }
        band[k] = row;
        let mut v = rhs[k];
        if dk.is_nan() || dk <= 1e-30 {
            dk = 0.0;
            v = 0.0;
        }
        diag[k] = dk;
        for jj in 0..B {
            v -= row[jj] * rhs[k - B + jj];
        }
        rhs[k] = v;
    }
    // Diagonal and back substitution together, from the last row.
    for k in (0..m).rev() {
        let mut v = if diag[k] > 0.0 { rhs[k] / diag[k] } else { 0.0 };
        if k + B < m {
            for t in 0..B {
                v -= band[k + 1 + t][B - 1 - t] * rhs[k + 1 + t];
            }
        } else {
            for j in k + 1..m {
                v -= band[j][k + B - j] * rhs[j];
            }
        }
        rhs[k] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A symmetric positive definite band of width `b` over `m` rows (diagonally dominant),
    /// some rows made singular (zero) as pinned rows are, and a right-hand side.
    fn system(b: usize, m: usize, values: &[f32], singular: &[bool]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let mut band = vec![0.0; m * b];
        let mut diag = vec![0.0; m];
        let mut rhs = vec![0.0; m];
        let mut next = values.iter().cycle().copied();
        for k in 0..m {
            for j in k.saturating_sub(b)..k {
                if !singular[k] && !singular[j] {
                    band[k * b + (j + b - k)] = next.next().unwrap();
                }
            }
        }
        for k in 0..m {
            rhs[k] = next.next().unwrap() * 10.0;
            if singular[k] {
                continue;
            }
            // Row sums of |A_kl| over the band, both sides, plus a margin.
            let mut sum = 1.0 + next.next().unwrap().abs();
            for l in k.saturating_sub(b)..(k + b + 1).min(m) {
                if l < k {
                    sum += band[k * b + (l + b - k)].abs();
                } else if l > k {
                    sum += band[l * b + (k + b - l)].abs();
                }
            }
            diag[k] = sum;
        }
        (band, diag, rhs)
    }

    proptest! {
        /// The unrolled solve is the general one bit for bit (the GPU kernel reproduces the
        /// general one), and it solves the system: A Δλ = b to f32 precision.
        #[test]
        fn unrolled_band_solve_is_the_general_one_bit_for_bit(
            b in 1usize..=4,
            m in 1usize..40,
            values in proptest::collection::vec(-1.0f32..1.0, 64),
            singular in proptest::collection::vec(proptest::bool::weighted(0.1), 40),
        ) {
            let (band, diag, rhs) = system(b, m, &values, &singular);
            let (mut b1, mut d1, mut r1) = (band.clone(), diag.clone(), rhs.clone());
            factor_and_solve_any(b, &mut b1, &mut d1, &mut r1);
            let (mut b2, mut d2, mut r2) = (band.clone(), diag.clone(), rhs.clone());
            match b {
                1 => factor_and_solve::<1>(bytemuck::cast_slice_mut(&mut b2[..]), &mut d2, &mut r2),
                2 => factor_and_solve::<2>(bytemuck::cast_slice_mut(&mut b2[..]), &mut d2, &mut r2),
                3 => factor_and_solve::<3>(bytemuck::cast_slice_mut(&mut b2[..]), &mut d2, &mut r2),
                _ => factor_and_solve::<4>(bytemuck::cast_slice_mut(&mut b2[..]), &mut d2, &mut r2),
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&r1), bits(&r2));
            prop_assert_eq!(bits(&d1), bits(&d2));
            prop_assert_eq!(bits(&b1), bits(&b2));
            // The residual of A x = b over the rows that are not singular.
            for k in 0..m {
                if singular[k] {
                    prop_assert_eq!(r1[k], 0.0);
                    continue;
                }
                let mut ax = diag[k] * r1[k];
                for l in k.saturating_sub(b)..(k + b + 1).min(m) {
                    if l < k {
                        ax += band[k * b + (l + b - k)] * r1[l];
                    } else if l > k {
                        ax += band[l * b + (k + b - l)] * r1[l];
                    }
                }
                prop_assert!((ax - rhs[k]).abs() <= 1e-4 * (1.0 + rhs[k].abs()), "row {k}: {ax} against {}", rhs[k]);
            }
        }
    }
}
