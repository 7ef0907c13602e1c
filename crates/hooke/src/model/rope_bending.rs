//! Bending of ropes: the angle between consecutive segments.
//!
//! For three consecutive particles x₀, x₁, x₂ with a = x₁ − x₀ and b = x₂ − x₁, the bending
//! angle is θ = atan2(‖â × b̂‖, â·b̂) ∈ [0, π], zero for a straight rope, and the constraint is
//! C = θ: a rope's natural shape is straight (the polyline a scene gives is where it starts,
//! not a curved rest shape). Its gradients are ∇₀θ = p/‖a‖, ∇₂θ = −q/‖b‖ and
//! ∇₁θ = −∇₀θ − ∇₂θ, with p the unit component of b̂ normal to â and q that of â normal to b̂;
//! at θ = 0 the direction of bending is undefined, and so is the gradient (then there is
//! nothing to correct).
//!
//! Unlike the i–i+2 bend spring, which only resists the shortening of the distance x₀–x₂ and
//! so has no stiffness at all against small bends of a straight rope (the distance changes to
//! second order), C = θ resists them to first order: a stiff cable held at one end stays
//! straight.
//!
//! **Stiffness.** A rod of bending stiffness EI (N·m², the material's `bending_modulus`)
//! stores ½EI∫κ² ds; with the curvature κ ≈ θ/l̄ over the length l̄ = (‖a‖ + ‖b‖)/2 at the
//! joint, ½EIθ²/l̄ per joint (the discrete elastic rods of Bergou et al. 2008). So each
//! constraint has the compliance α = l̄/EI (rad²/J).

use super::constraint::ParticleConstraint;
use glam::Vec3;

/// One rope bending constraint, 24 bytes: particles `[x₀, x₁, x₂]` (x₁ the joint), the
/// compliance α (rad²/J) and the damping time τ (s).
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct RopeBending {
    /// The three consecutive particles, the joint in the middle.
    pub particles: [u32; 3],
    /// Compliance α (rad²/J); 0 makes the joint rigid.
    pub compliance: f32,
    /// Damping time τ (s).
    pub damping: f32,
    /// Padding (0).
    pub _pad: u32,
}

/// The bending angle (rad) of three points given relative to x₀ and its gradients; zero
/// gradients when straight; `None` when a segment has no length.
#[inline]
pub fn bending_angle(x: &[Vec3; 3]) -> Option<(f32, [Vec3; 3])> {
    let (a, b) = (x[1] - x[0], x[2] - x[1]);
    let (la2, lb2) = (dot(a, a), dot(b, b));
    if !(la2 > 1e-18 && lb2 > 1e-18) {
        return None;
    }
    let (la, lb) = (la2.sqrt(), lb2.sqrt());
    let (ua, ub) = (a * (1.0 / la), b * (1.0 / lb));
    let c = dot(ua, ub);
    let s = cross(ua, ub);
    let sin = dot(s, s).sqrt();
    let theta = crate::angle::atan2(sin, c);
    if sin.is_nan() || sin <= 1e-7 {
        return Some((theta, [Vec3::ZERO; 3]));
    }
    let (p, q) = (ub - ua * c, ua - ub * c);
    let (p, q) = (p * (1.0 / dot(p, p).sqrt()), q * (1.0 / dot(q, q).sqrt()));
    let g0 = p * (1.0 / la);
    let g2 = -(q * (1.0 / lb));
    Some((theta, [g0, -g0 - g2, g2]))
}

/// a × b, written out so that the GPU computes the same.
#[inline(always)]
fn cross(a: Vec3, b: Vec3) -> Vec3 {
    Vec3::new(a.y * b.z - b.y * a.z, a.z * b.x - b.z * a.x, a.x * b.y - b.x * a.y)
}

/// a · b, left to right.
#[inline(always)]
fn dot(a: Vec3, b: Vec3) -> f32 {
    a.x * b.x + a.y * b.y + a.z * b.z
}

impl ParticleConstraint<3> for RopeBending {
    fn particles(&self) -> [u32; 3] {
        self.particles
    }

    fn with_particles(&self, particles: [u32; 3]) -> Self {
        Self { particles, ..*self }
    }

    fn evaluate(&self, x: &[Vec3; 3]) -> Option<(f32, [Vec3; 3])> {
        bending_angle(x)
    }

    fn compliance(&self, _c: f32) -> f32 {
        self.compliance
    }

    fn damping(&self) -> f32 {
        self.damping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gradients equal central finite differences of the angle; straight is θ = 0.
    #[test]
    fn rope_bending_gradients_match_finite_differences() {
        let cases = [
            [Vec3::ZERO, Vec3::new(1.0, 0.1, 0.0), Vec3::new(1.6, 0.9, 0.3)],
            [Vec3::ZERO, Vec3::new(0.5, 0.0, 0.0), Vec3::new(0.2, 0.4, -0.1)],
            [Vec3::ZERO, Vec3::new(0.3, -0.2, 0.4), Vec3::new(0.7, -0.1, 0.5)],
        ];
        for (k, x) in cases.iter().enumerate() {
            let (theta, grad) = bending_angle(x).unwrap();
            let h = 1e-3f32;
            for p in 0..3 {
                for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
                    let (mut plus, mut minus) = (*x, *x);
                    plus[p] += axis * h;
                    minus[p] += -axis * h;
                    let rel = |q: [Vec3; 3]| q.map(|v| v - q[0]);
                    let fd = (bending_angle(&rel(plus)).unwrap().0 - bending_angle(&rel(minus)).unwrap().0) / (2.0 * h);
                    assert!(
                        (fd - grad[p].dot(axis)).abs() < 2e-3,
                        "case {k} (θ = {theta}) particle {p}: fd {fd} vs {}",
                        grad[p].dot(axis)
                    );
                }
            }
        }
        let straight = [Vec3::ZERO, Vec3::X, Vec3::new(2.0, 0.0, 0.0)];
        assert_eq!(bending_angle(&straight).unwrap(), (0.0, [Vec3::ZERO; 3]));
    }
}
