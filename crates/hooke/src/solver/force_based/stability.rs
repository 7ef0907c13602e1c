//! The stability limit of symplectic Euler and Verlet, h < 2/ω_max undamped (article
//! §2.1–2.3), less with the springs' damping: see
//! [`ForceSolver::stable_step`](super::ForceSolver::stable_step).

use crate::Model;
use crate::forces::spring::Spring;
use crate::model::{ConstraintSet, ParticleConstraint, RopeBending};
use glam::{DVec3, Vec3};

/// One stiffness term k ∇C ∇Cᵀ: the gradient ∇ᵢC on each particle i, k, and the term's
/// damping time τ (s; its damping matrix is τ k ∇C ∇Cᵀ).
type Term = (Vec<(usize, DVec3)>, f64, f64);

/// The terms of an angle set at the model's rest positions. A straight rope joint has no
/// gradient (θ = 0 is a cusp); its stiffness for a small bend is that of the gradient of a
/// slightly bent joint, taken in a direction normal to the first segment.
fn angle_terms<T: ParticleConstraint<N>, const N: usize>(
    set: &ConstraintSet<T>,
    x: &[Vec3],
    bent: impl Fn(&T, &[Vec3; N]) -> Option<[Vec3; N]>,
) -> Vec<Term> {
    set.constraints()
        .iter()
        .filter_map(|c| {
            let p = c.particles();
            let rel: [Vec3; N] = p.map(|i| x[i as usize] - x[p[0] as usize]);
            let (value, mut grad) = c.evaluate(&rel)?;
            if grad.iter().all(|g| *g == Vec3::ZERO) {
                grad = bent(c, &rel)?;
            }
            let alpha = c.compliance(value);
            (alpha > 0.0).then(|| {
                ((0..N).map(|k| (p[k] as usize, grad[k].as_dvec3())).collect(), 1.0 / alpha as f64, c.damping() as f64)
            })
        })
        .collect()
}

/// The gradient of a rope joint bent slightly in a direction normal to its first segment.
fn bent_joint(_: &RopeBending, x: &[Vec3; 3]) -> Option<[Vec3; 3]> {
    let (a, b) = (x[1] - x[0], x[2] - x[1]);
    let u = a.normalize().any_orthonormal_vector();
    let (g0, g2) = (u / a.length(), -u / b.length());
    (g0.is_finite() && g2.is_finite()).then_some([g0, -g0 - g2, g2])
}

/// The largest stable step (s): h₀ = 2/ω_max undamped, ω_max² estimated as the largest
/// eigenvalue of W^½ K W^½ by power iteration, and with τ the largest damping time of a term,
/// √(τ² + h₀²) − τ: see [`ForceSolver::stable_step`].
pub(crate) fn stable_step(model: &Model, springs: &[Spring]) -> f64 {
    let x = model.particle_position();
    let sqrt_w: Vec<f64> = model.particle_inv_mass().iter().map(|&w| (w as f64).sqrt()).collect();
    // Every spring (∇C = ±n) and angle constraint between particles that can move.
    let mut terms: Vec<Term> = model
        .distance()
        .constraints()
        .iter()
        .zip(springs)
        .filter_map(|(c, s)| {
            let (i, j) = (c.i as usize, c.j as usize);
            let n = (x[i] - x[j]).as_dvec3().try_normalize()?;
            let k = s.stiffness_stretch.max(s.stiffness_compression) as f64;
            Some((vec![(i, n), (j, -n)], k, s.damping as f64))
        })
        .collect();
    terms.extend(angle_terms(model.dihedral(), x, |_, _| None));
    terms.extend(angle_terms(model.rope_bending(), x, bent_joint));
    terms.retain(|(grad, _, _)| grad.iter().any(|&(i, _)| sqrt_w[i] > 0.0));
    if terms.is_empty() {
        return f64::INFINITY;
    }
    // Start from a deterministic pseudo-random vector (it must not be orthogonal to the top
    // mode); the highest modes of a cloth alternate from particle to particle.
    let mut v: Vec<DVec3> = (0..x.len())
        .map(|p| {
            let r = |s: u64| {
                ((p as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(s as u32) % 1000) as f64 / 1000.0
            };
            let sign = if p % 2 == 0 { 1.0 } else { -1.0 };
            DVec3::new(sign * (0.5 + r(7)), -sign * (0.5 + r(19)), sign * (0.5 + r(31))) * sqrt_w[p]
        })
        .collect();
    let mut lambda = 0.0;
    for _ in 0..40 {
        let norm = v.iter().map(|a| a.length_squared()).sum::<f64>().sqrt();
        if norm == 0.0 {
            return f64::INFINITY;
        }
        v.iter_mut().for_each(|a| *a /= norm);
        let mut y = vec![DVec3::ZERO; x.len()];
        for (grad, k, _) in &terms {
            let rate: f64 = grad.iter().map(|&(i, g)| g.dot(v[i] * sqrt_w[i])).sum();
            for &(i, g) in grad {
                y[i] += g * (k * rate * sqrt_w[i]);
            }
        }
        // Rayleigh quotient vᵀAv (v is a unit vector): a lower bound of λ_max.
        lambda = v.iter().zip(&y).map(|(a, b)| a.dot(*b)).sum::<f64>();
        v = y;
    }
    if lambda <= 0.0 {
        return f64::INFINITY;
    }
    let undamped = 2.0 / lambda.sqrt();
    let tau = terms.iter().map(|t| t.2).fold(0.0, f64::max);
    damped_limit(undamped, tau)
}

/// The stability limit of symplectic Euler on ẍ = −ω²x − τω²ẋ (a mode of stiffness K and
/// damping τK), h₀ = 2/ω its undamped limit and τ ≥ 0 (s). The step maps (x, v) by
/// v' = (1 − hτω²)v − hω²x, x' = x + hv', a matrix of determinant 1 − hτω² and trace
/// 2 − hτω² − h²ω²; by the Jury conditions both eigenvalues lie inside the unit circle while
/// 0 < hτω² < 2 and h²ω² + 2hτω² < 4 — the second the stricter: h(h + 2τ) < h₀², so
/// h < √(τ² + h₀²) − τ. Damping lowers the limit: 1.3× at τ = h₀/4, 10× at τ = 5h₀.
pub(crate) fn damped_limit(undamped: f64, tau: f64) -> f64 {
    if tau <= 0.0 {
        return undamped;
    }
    // (√(τ² + h₀²) − τ written without the cancellation: h₀²/(√(τ² + h₀²) + τ).)
    undamped * undamped / ((tau * tau + undamped * undamped).sqrt() + tau)
}
