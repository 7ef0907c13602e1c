//! Coulomb friction on the tangential displacement of a contact step (article §4.3).
//!
//! After a particle has been pushed out of a collider by the normal correction of depth d
//! (m) along the contact normal n, its tangential displacement over the substep, relative to
//! the collider's own motion, is Δxₜ = (I − nnᵀ)((x − x_prev) − Δx_collider). Coulomb's law in
//! position form (Müller et al. 2007; Macklin et al. 2014 "Unified particle physics", §6.1):
//!
//! * **static**: if ‖Δxₜ‖ < μₛ·d the contact sticks and the whole of Δxₜ is removed;
//! * **kinetic**: otherwise Δxₜ is scaled down by min(μₖ·d/‖Δxₜ‖, 1), i.e. the particle loses
//!   at most μₖ·d of tangential travel — the clamped form, which never reverses the motion.
//!
//! Since d is the distance the normal force moved the particle in the substep, μ·d is the
//! distance the friction force μ·F_n moves it in the same time: on an incline of angle θ this
//! gives exactly the sliding acceleration g(sin θ − μₖ cos θ), and sticking while tan θ < μₛ.

use glam::Vec3;

/// Static and kinetic friction coefficients (dimensionless, ≥ 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Friction {
    /// Static coefficient μₛ.
    pub static_coefficient: f32,
    /// Kinetic coefficient μₖ.
    pub kinetic_coefficient: f32,
}

impl Friction {
    /// No friction.
    pub const NONE: Friction = Friction { static_coefficient: 0.0, kinetic_coefficient: 0.0 };

    /// The position correction (m) that friction applies to a particle whose tangential
    /// displacement relative to the collider is `tangential` (m), after a normal correction of
    /// depth `depth` (m, ≥ 0) in the same substep. Returns the vector to *add* to the position.
    #[inline]
    pub fn correction(&self, tangential: Vec3, depth: f32) -> Vec3 {
        let len2 = tangential.length_squared();
        if len2 == 0.0 {
            return Vec3::ZERO;
        }
        let len = len2.sqrt();
        if len < self.static_coefficient * depth {
            -tangential
        } else {
            -tangential * (self.kinetic_coefficient * depth / len).min(1.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_locks_and_kinetic_clamps() {
        let f = Friction { static_coefficient: 0.5, kinetic_coefficient: 0.4 };
        let t = Vec3::new(0.004, 0.0, 0.0);
        // 4 mm against μₛ·d = 5 mm: locked.
        assert_eq!(f.correction(t, 0.01), -t);
        // 4 mm against μₛ·d = 2.5 mm: slides, losing μₖ·d = 2 mm.
        let c = f.correction(t, 0.005);
        assert!((c.x + 0.002).abs() < 1e-9);
        // Never more than the displacement itself.
        let f = Friction { static_coefficient: 0.0, kinetic_coefficient: 10.0 };
        assert_eq!(f.correction(t, 0.01), -t);
    }
}
