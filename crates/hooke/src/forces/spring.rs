//! Hooke springs with axial damping, written as forces (article §1.2–1.3), and their Jacobians
//! for implicit integration (Baraff & Witkin 1998, "Large steps in cloth simulation", §5).
//!
//! For a spring between particles i and j with Δx = xᵢ − xⱼ, length L = ‖Δx‖, unit direction
//! n = Δx/L, rest length L₀ and stiffness k (N/m):
//!
//! * energy E = ½k(L − L₀)² (J);
//! * force on i: fᵢ = −k(L − L₀)n − k_d((vᵢ − vⱼ)·n)n, and fⱼ = −fᵢ. The damping term acts only
//!   along the spring, so a rigid rotation of the pair is not damped (article §1.3).
//! * stiffness Jacobian ∂fᵢ/∂xᵢ = −k[nnᵀ + (1 − L₀/L)(I − nnᵀ)] = −∂fᵢ/∂xⱼ; under compression
//!   (L < L₀) the transverse term is negative and can make the system matrix indefinite, so
//!   it may be clamped to 0 (`clamp_compression` of [`Spring::jacobian`], Choi & Ko 2002).
//! * damping Jacobian ∂fᵢ/∂vᵢ = −k_d nnᵀ = −∂fᵢ/∂vⱼ.
//!
//! L is guarded from below by [`MIN_LENGTH`]: two particles at the same place exert no force
//! (the direction is undefined), instead of dividing by ~0 (article §1.2).

use glam::{DMat3, DVec3, Vec3};

/// Below this length (m) a spring has no defined direction and exerts no force.
pub const MIN_LENGTH: f32 = 1e-6;

/// A spring as the force-based integrators see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spring {
    /// Rest length L₀ (m).
    pub rest_length: f32,
    /// Stiffness when stretched (N/m), finite.
    pub stiffness_stretch: f32,
    /// Stiffness when compressed (N/m), finite.
    pub stiffness_compression: f32,
    /// Axial damping time τ = k_d/k (s).
    pub damping: f32,
}

impl Spring {
    /// Stiffness k (N/m) at length `len` (m).
    #[inline]
    pub fn stiffness_at(&self, len: f32) -> f32 {
        if len >= self.rest_length { self.stiffness_stretch } else { self.stiffness_compression }
    }

    /// Potential energy ½k(L − L₀)² (J) for Δx = xᵢ − xⱼ.
    pub fn energy(&self, dx: Vec3) -> f64 {
        let len = dx.length();
        let e = (len - self.rest_length) as f64;
        0.5 * self.stiffness_at(len) as f64 * e * e
    }

    /// Force on particle i (N) for Δx = xᵢ − xⱼ and Δv = vᵢ − vⱼ; the force on j is its negative.
    #[inline]
    pub fn force(&self, dx: Vec3, dv: Vec3) -> Vec3 {
        let len = dx.length();
        if len < MIN_LENGTH {
            return Vec3::ZERO;
        }
        // One reciprocal instead of three divisions.
        let n = dx * (1.0 / len);
        let k = self.stiffness_at(len);
        let kd = self.damping * k;
        n * (-k * (len - self.rest_length) - kd * dv.dot(n))
    }

    /// Jacobians of the force on i, in f64: see [`SpringJacobian`].
    pub fn jacobian(&self, dx: Vec3, clamp_compression: bool) -> SpringJacobian {
        let dx = dx.as_dvec3();
        let len = dx.length();
        if len < MIN_LENGTH as f64 {
            return SpringJacobian { dfdx: DMat3::ZERO, dfdv: DMat3::ZERO };
        }
        let n = dx / len;
        let k = self.stiffness_at(len as f32) as f64;
        let kd = self.damping as f64 * k;
        let nn = outer(n, n);
        let mut transverse = 1.0 - self.rest_length as f64 / len;
        if clamp_compression {
            transverse = transverse.max(0.0);
        }
        let dfdx = -(nn + (DMat3::IDENTITY - nn) * transverse) * k;
        SpringJacobian { dfdx, dfdv: -nn * kd }
    }
}

/// ∂fᵢ/∂xᵢ (N/m) and ∂fᵢ/∂vᵢ (N·s/m) of one spring; the blocks for j and the cross terms follow
/// by sign: ∂fᵢ/∂xⱼ = ∂fⱼ/∂xᵢ = −dfdx, ∂fⱼ/∂xⱼ = dfdx (likewise for v). Both are symmetric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpringJacobian {
    /// ∂fᵢ/∂xᵢ (N/m).
    pub dfdx: DMat3,
    /// ∂fᵢ/∂vᵢ (N·s/m).
    pub dfdv: DMat3,
}

/// Outer product a bᵀ.
#[inline]
pub fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Spring = Spring { rest_length: 0.8, stiffness_stretch: 120.0, stiffness_compression: 40.0, damping: 0.05 };

    /// The force is minus the gradient of the energy (central differences), stretched and
    /// compressed; damping adds −k_d(Δv·n)n.
    #[test]
    fn force_is_minus_energy_gradient() {
        for dx in [Vec3::new(0.7, 0.4, -0.2), Vec3::new(0.3, -0.2, 0.1)] {
            let f = S.force(dx, Vec3::ZERO);
            let h = 1e-3f32;
            let g = Vec3::new(
                (S.energy(dx + Vec3::X * h) - S.energy(dx - Vec3::X * h)) as f32,
                (S.energy(dx + Vec3::Y * h) - S.energy(dx - Vec3::Y * h)) as f32,
                (S.energy(dx + Vec3::Z * h) - S.energy(dx - Vec3::Z * h)) as f32,
            ) / (2.0 * h);
            assert!((f + g).length() < 1e-3 * (1.0 + g.length()), "{f} vs {g}");
            let dv = Vec3::new(0.3, -1.0, 0.5);
            let n = dx.normalize();
            let k = S.stiffness_at(dx.length());
            let damped = S.force(dx, dv) - f;
            assert!((damped + n * (S.damping * k * dv.dot(n))).length() < 1e-5);
        }
        assert_eq!(S.force(Vec3::ZERO, Vec3::X), Vec3::ZERO);
    }

    /// The Jacobian blocks match finite differences of the force.
    #[test]
    fn jacobians_match_finite_differences() {
        for dx in [Vec3::new(0.7, 0.4, -0.2), Vec3::new(0.3, -0.2, 0.1)] {
            let j = S.jacobian(dx, false);
            let h = 1e-3f32;
            for (c, axis) in [Vec3::X, Vec3::Y, Vec3::Z].into_iter().enumerate() {
                let fd = (S.force(dx + axis * h, Vec3::ZERO) - S.force(dx - axis * h, Vec3::ZERO)) / (2.0 * h);
                assert!((j.dfdx.col(c).as_vec3() - fd).length() < 2e-2, "x column {c}: {} vs {fd}", j.dfdx.col(c));
                // The damping force is linear in Δv: a large step has no truncation error.
                let fdv = (S.force(dx, axis * 0.1) - S.force(dx, -axis * 0.1)) / 0.2;
                assert!((j.dfdv.col(c).as_vec3() - fdv).length() < 1e-3, "v column {c}: {} vs {fdv}", j.dfdv.col(c));
            }
            // Symmetric.
            assert!((j.dfdx - j.dfdx.transpose()).abs().to_cols_array().iter().all(|&e| e < 1e-12));
        }
        // Clamping removes the negative transverse stiffness under compression.
        let j = S.jacobian(Vec3::new(0.3, 0.0, 0.0), true);
        assert_eq!(j.dfdx.y_axis.y, 0.0);
        let j = S.jacobian(Vec3::new(0.3, 0.0, 0.0), false);
        assert!(j.dfdx.y_axis.y > 0.0);
    }
}
