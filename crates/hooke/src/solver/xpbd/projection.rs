//! The one XPBD update every constraint type shares (Macklin, Müller & Chentanez 2016,
//! eq. 18 with the damping of eq. 26; article §3.2–3.3), and the colour-by-colour sweep of a
//! [`ConstraintSet`].
//!
//! For a constraint C(x₁ … x_N) with inverse masses wᵢ, compliance α and damping time τ, in
//! a substep of h seconds with α̃ = α/h² and γ = τ/h (γ = 0 for a rigid constraint), and
//! dᵢ = xᵢ − xᵢ⁰ the displacements of the substep so far:
//!
//! Δλ = (−C − α̃λ − γ ΔC) / ((1 + γ) Σᵢ wᵢ‖∇ᵢC⁰‖² + α̃),  λ += Δλ,  dᵢ += wᵢ ∇ᵢC⁰ Δλ,
//!
//! with C evaluated at the current positions xᵢ⁰ + dᵢ, the gradients ∇ᵢC⁰ at the positions
//! xᵢ⁰ of the start of the substep, and ΔC the damping's rate, how far C has moved in the
//! substep ([`ParticleConstraint::damping_rate`](crate::model::ParticleConstraint::damping_rate)).
//!
//! # The damping's rate: the change of C, not its linearisation
//!
//! Macklin et al. take ΔC = Σᵢ ∇ᵢC·dᵢ, C's change to first order. With the gradients at the
//! start of the substep (below) that reads a pair turning rigidly by φ as an approach of
//! |r|(1 − cos φ), and the dashpot resists it by stretching the pair, by about (τ/h)·φ²/2 of
//! its length: a sheet spinning at 400 rad/s kept 1.36 % residual strain at 20 substeps under
//! the global solve (0.04 % undamped), and the torn flaps of `scenes/tear_pull.toml`, whipping
//! at 30–40 m/s, 1.35 % at the turn limit's 448 substeps. A distance constraint therefore takes
//! the change of its length itself, ΔC = ‖xᵢ − xⱼ‖ − ‖xᵢ⁰ − xⱼ⁰‖, which a turn leaves at 0 (the
//! same length the distance kernels already compute, so it costs them nothing): the spinning sheet keeps
//! 0.04 % damped, and `tear_pull` 0.03 % in half the time. Angles (hinges, rope joints) keep
//! the linearised rate. The fixed point is unchanged otherwise: (1 + γ)C + α̃λ = γC(x⁰), the
//! backward-Euler step of a Kelvin–Voigt element, which also shows what damping costs a fixed
//! iteration count — it relaxes the error the last substep left over τ instead of at once
//! (`docs/BENCHMARKS.md`, "Axial damping and convergence"). λ starts from 0 in each substep and accumulates over its
//! iterations. PBD (Müller et al. 2007) is the rigid case without λ, scaled by the stiffness
//! factor s: Δλ = −s C / Σᵢ wᵢ‖∇ᵢC⁰‖². The distance constraint's SIMD kernel
//! (`distance_kernel.rs`) is this update specialised and rearranged for speed; a test checks
//! that the two agree.
//!
//! # Gradients at the start of the substep: angular momentum
//!
//! The substep's velocity is v = (x − x⁰)/h, so the angular momentum after it is
//! L = Σ mᵢ xᵢ × vᵢ = Σ mᵢ xᵢ⁰ × vᵢ: an impulse Jᵢ = mᵢ Δdᵢ/h changes L by xᵢ⁰ × Jᵢ — its lever
//! arm is the start position. A constraint's corrections sum to zero and their torques cancel
//! exactly when they act along lines through the particles' start positions, which is what the
//! gradient of a translation- and rotation-invariant C at x⁰ gives; along the gradient at the
//! current positions (textbook PBD) each projection adds a torque ∝ λ (xᵢⱼ⁰ × dᵢⱼ), and with a
//! fixed, chiral Gauss–Seidel order those torques sum to a steady drive: a cloth hung from one
//! corner turned at 5–17°/s for ever against air damping, at any iteration or substep count.
//! Evaluating the gradients at x⁰ and C at x is the SHAKE algorithm of molecular dynamics
//! (Ryckaert, Ciccotti & Berendsen 1977, with constraint forces along the old bond vectors),
//! which conserves linear and angular momentum exactly; it converges like the textbook update
//! while the element turns little within one substep. It does not when the element has turned
//! far (past 90° the start direction pushes the wrong way: a fine 256² cloth far from
//! converged blew up), so a constraint whose particles turned by more than 25° in the substep
//! (or that was degenerate at its start) is projected along its current gradients, as in
//! textbook PBD: exact conservation where motion is resolved, robustness where it is not.
//!
//! # Which compliance: the sign of λ
//!
//! A constraint softer in compression than in stretch (cloth buckles but resists stretch) has
//! a compliance α(·) that jumps at C = 0. Choosing it by the sign of C at each iteration makes
//! α̃λ — λ accumulated under the other side's α — jump whenever C crosses zero, and the
//! iteration then pumps energy: a curtain hanging at rest jittered at 40 and more iterations.
//! The side is therefore chosen by the sign of the accumulated force λ (tension while λ < 0,
//! compression while λ > 0; the side of C only while λ = 0), which makes α̃(λ)λ continuous and
//! monotone in λ, and the fixed point C + α̃(λ)λ = 0 the same equilibrium.

use super::distance_kernel::{COS2_TURN, Shared, Sweep};
use crate::model::{ConstraintSet, ParticleConstraint};
use crate::solver::state::Particle;
use glam::Vec3;
use rayon::prelude::*;

/// Constraints per parallel task of the generic sweep.
const CHUNK: usize = 1024;

/// Projects one constraint with the shared update (see the [module documentation](self)).
///
/// # Safety
/// `p` must be valid for every particle index of `c`, and no other thread may access those
/// particles during the call.
#[inline(always)]
pub(crate) unsafe fn project<T: ParticleConstraint<N>, const N: usize, const PBD: bool>(
    c: &T,
    lambda: &mut f32,
    p: *mut Particle,
    sweep: Sweep,
) {
    let records: [*mut Particle; N] = c.particles().map(|i| unsafe { p.add(i as usize) });
    let q: [Particle; N] = records.map(|r| unsafe { *r });
    // Positions relative to the first particle, at the start of the substep and now, as
    // (x⁰ − x₁⁰) + (d − d₁).
    let x0: [Vec3; N] = std::array::from_fn(|k| (q[k].x - q[0].x).truncate());
    let x: [Vec3; N] = std::array::from_fn(|k| ((q[k].x - q[0].x) + (q[k].d - q[0].d)).truncate());
    let Some((value, now)) = c.evaluate(&x) else { return };
    // The gradients at the start of the substep, unless the constraint's particles have turned
    // by more than 25° since (or it was degenerate then): then the current ones.
    let gradient = match c.gradient(&x0) {
        Some(start) => {
            let (mut dot, mut s2, mut n2) = (0.0, 0.0, 0.0);
            for k in 0..N {
                dot += start[k].dot(now[k]);
                s2 += start[k].length_squared();
                n2 += now[k].length_squared();
            }
            if dot > 0.0 && dot * dot >= COS2_TURN * (s2 * n2) { start } else { now }
        }
        None => now,
    };
    let w: [f32; N] = q.map(|r| r.x.w);
    let mut weight = 0.0;
    for k in 0..N {
        weight += w[k] * gradient[k].length_squared();
    }
    if weight == 0.0 {
        return;
    }
    let delta = if PBD {
        -(sweep.pbd_stiffness * value) / weight
    } else {
        let side = if *lambda != 0.0 { -*lambda } else { value };
        let alpha = c.compliance(side) * sweep.inv_h2;
        let gamma = if alpha > 0.0 { c.damping() * sweep.inv_h } else { 0.0 };
        let rate = c.damping_rate(value, &x0, &gradient, &q.map(|r| r.d.truncate()));
        let delta = (-value - alpha * *lambda - gamma * rate) / ((1.0 + gamma) * weight + alpha);
        *lambda += delta;
        delta
    };
    for k in 0..N {
        unsafe { (*records[k]).d += (gradient[k] * (w[k] * delta)).extend(0.0) };
    }
}

/// One Gauss–Seidel sweep over `set`, colour after colour, with the shared update; the
/// constraints of one colour in parallel chunks when `parallel` (no two share a particle, so
/// the result is that of the sequential sweep). `lambda` has one multiplier per constraint.
pub(crate) fn sweep_set<T: ParticleConstraint<N>, const N: usize, const PBD: bool>(
    set: &ConstraintSet<T>,
    lambda: &mut [f32],
    particles: &mut [Particle],
    sweep: Sweep,
    parallel: bool,
) {
    let p = Shared(particles.as_mut_ptr());
    let p = &p;
    for range in set.colour_ranges() {
        let r = range.start as usize..range.end as usize;
        let cons = &set.constraints()[r.clone()];
        let lam = &mut lambda[r];
        if parallel && cons.len() >= 2 * CHUNK {
            cons.par_chunks(CHUNK).zip(lam.par_chunks_mut(CHUNK)).for_each(|(cc, ll)| {
                for (c, l) in cc.iter().zip(ll) {
                    // SAFETY: the constraints of one colour touch disjoint particles (the set's
                    // colouring was validated when the model was built); indices are in range.
                    unsafe { project::<T, N, PBD>(c, l, p.0, sweep) };
                }
            });
        } else {
            for (c, l) in cons.iter().zip(lam) {
                // SAFETY: sequential; indices were validated when the model was built.
                unsafe { project::<T, N, PBD>(c, l, p.0, sweep) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::distance_kernel;
    use super::*;
    use crate::model::{DistanceConstraint, ModelBuilder, Rope};
    use glam::Vec4;

    /// The shared update and the distance constraint's own kernel give the same corrections and
    /// multipliers (to rounding: the kernel rearranges the arithmetic), for XPBD with stretch
    /// and compression compliances and damping, for rigid constraints and for PBD.
    #[test]
    fn shared_update_matches_the_distance_kernel() {
        let mut seed = 7u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let sweep = Sweep { inv_h: 1200.0, inv_h2: 1.44e6, pbd_stiffness: 0.7 };
        for round in 0..400 {
            let a: Vec<Particle> = (0..2)
                .map(|k| Particle {
                    x: Vec4::new(rnd(), rnd(), rnd(), if round % 9 == 0 && k == 0 { 0.0 } else { rnd() + 0.6 }),
                    d: Vec4::new(rnd() * 0.01, rnd() * 0.01, rnd() * 0.01, 0.0),
                })
                .collect();
            let c = DistanceConstraint {
                i: 0,
                j: 1,
                rest_length: rnd() + 0.6,
                compliance_stretch: if round % 4 == 0 { 0.0 } else { 1e-4 * (rnd() + 0.6) },
                compliance_compression: 1e-3 * (rnd() + 0.6),
                damping: if round % 3 == 0 { 0.0 } else { 1e-3 * (rnd() + 0.6) },
            };
            let lam0 = rnd();
            let (mut generic, mut kernel) = (a.clone(), a.clone());
            let (mut lg, mut lk) = (lam0, lam0);
            unsafe {
                if round % 2 == 0 {
                    project::<DistanceConstraint, 2, false>(&c, &mut lg, generic.as_mut_ptr(), sweep);
                    distance_kernel::project_one::<false>(&c, &mut lk, kernel.as_mut_ptr(), sweep);
                } else {
                    project::<DistanceConstraint, 2, true>(&c, &mut lg, generic.as_mut_ptr(), sweep);
                    distance_kernel::project_one::<true>(&c, &mut lk, kernel.as_mut_ptr(), sweep);
                }
            }
            let scale = (a[0].x - a[1].x).truncate().length();
            for k in 0..2 {
                let diff = (generic[k].d - kernel[k].d).length();
                assert!(diff <= 2e-6 * scale.max(1e-3), "round {round} particle {k}: {diff}");
            }
            let scale = lam0.abs() + (lk - lam0).abs();
            assert!((lg - lk).abs() <= 1e-5 * scale.max(1e-3), "round {round}: λ {lg} vs {lk}");
        }
    }

    /// Sweeps of a rope's rigid segments with the shared update are the distance kernel's
    /// sweeps (same colour order, corrections equal to rounding), reduce the violation (slowly:
    /// Gauss–Seidel along a chain), and leave the pinned end where it is.
    #[test]
    fn generic_sweep_projects_a_whole_set() {
        let mut b = ModelBuilder::new();
        let mut rope = Rope::straight("r", Vec3::ZERO, Vec3::new(1.0, 0.0, 0.0), 11);
        rope.material.stretch_stiffness = f32::INFINITY;
        rope.material.compression_stiffness = f32::INFINITY;
        rope.bending = crate::Bending::None;
        b.add_rope(&rope).unwrap();
        let model = b.finalize().unwrap();
        let set = model.distance();
        let mut particles: Vec<Particle> = model
            .particle_position()
            .iter()
            .enumerate()
            .map(|(k, x)| Particle {
                x: x.extend(if k == 0 { 0.0 } else { 1.0 }),
                d: Vec4::new(0.01 * k as f32, -0.02 * (k % 3) as f32, 0.0, 0.0),
            })
            .collect();
        let mut reference = particles.clone();
        let before = particles.clone();
        let (mut lambda, mut lambda_ref) = (vec![0.0; set.len()], vec![0.0; set.len()]);
        let sweep = Sweep { inv_h: 60.0, inv_h2: 3600.0, pbd_stiffness: 1.0 };
        let violation = |p: &[Particle]| {
            set.constraints()
                .iter()
                .map(|c| ((p[c.i as usize].position() - p[c.j as usize].position()).length() - c.rest_length).abs())
                .fold(0.0f32, f32::max)
        };
        let mut first = 0.0;
        for it in 0..20 {
            sweep_set::<DistanceConstraint, 2, false>(set, &mut lambda, &mut particles, sweep, false);
            for (c, l) in set.constraints().iter().zip(&mut lambda_ref) {
                unsafe { distance_kernel::project_one::<false>(c, l, reference.as_mut_ptr(), sweep) };
            }
            if it == 0 {
                first = violation(&particles);
            }
        }
        assert!(violation(&particles) < 0.8 * first, "{} after {first}", violation(&particles));
        for (a, b) in particles.iter().zip(&reference) {
            assert!((a.d - b.d).length() < 1e-6, "{:?} vs {:?}", a.d, b.d);
        }
        assert_eq!(particles[0].d, before[0].d);
    }
}
