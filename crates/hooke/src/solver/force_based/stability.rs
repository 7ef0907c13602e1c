//! The stability limit of symplectic Euler and Verlet, h < 2/ω_max (article §2.1–2.3): see
//! [`ForceSolver::stable_step`](super::ForceSolver::stable_step).

use crate::Model;
use crate::forces::spring::Spring;
use glam::DVec3;

/// 2/ω_max (s), ω_max² estimated as the largest eigenvalue of W^½ K W^½ by power iteration:
/// see [`ForceSolver::stable_step`].
pub(crate) fn stable_step(model: &Model, springs: &[Spring]) -> f64 {
    let x = model.particle_position();
    let sqrt_w: Vec<f64> = model.particle_inv_mass().iter().map(|&w| (w as f64).sqrt()).collect();
    // (i, j, k, n) of every spring between particles that can move.
    let terms: Vec<(usize, usize, f64, DVec3)> = model
        .distance()
        .constraints()
        .iter()
        .zip(springs)
        .filter_map(|(c, s)| {
            let (i, j) = (c.i as usize, c.j as usize);
            let n = (x[i] - x[j]).as_dvec3().try_normalize()?;
            let k = s.stiffness_stretch.max(s.stiffness_compression) as f64;
            (sqrt_w[i] > 0.0 || sqrt_w[j] > 0.0).then_some((i, j, k, n))
        })
        .collect();
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
        for &(i, j, k, n) in &terms {
            let f = n * (k * n.dot(v[i] * sqrt_w[i] - v[j] * sqrt_w[j]));
            y[i] += f * sqrt_w[i];
            y[j] -= f * sqrt_w[j];
        }
        // Rayleigh quotient vᵀAv (v is a unit vector): a lower bound of λ_max.
        lambda = v.iter().zip(&y).map(|(a, b)| a.dot(*b)).sum::<f64>();
        v = y;
    }
    if lambda > 0.0 { 2.0 / lambda.sqrt() } else { f64::INFINITY }
}
