//! Dihedral bending of cloth: the angle between the two triangles of an interior edge.
//!
//! For an interior edge x₀–x₁ with wings x₂ (triangle x₀x₁x₂) and x₃ (triangle x₁x₀x₃), the
//! normals n₁ = e × (x₂ − x₀) and n₂ = (x₃ − x₀) × e with e = x₁ − x₀ point the same way when
//! the two triangles lie flat; the signed dihedral angle is
//! θ = atan2((n₁ × n₂)·ê, n₁·n₂) ∈ (−π, π], and the constraint is C = θ − θ₀ with θ₀ the angle
//! of the rest mesh, so a curved rest shape (a garment, a curled sheet) is kept. The gradients
//! are those of Bridson, Marino & Fedkiw 2003 ("Simulation of clothing with folds and
//! wrinkles", §4): ∇₂θ = ‖e‖ n₁/‖n₁‖², ∇₃θ = ‖e‖ n₂/‖n₂‖², and for the edge's ends the
//! combinations that make them sum to zero (translation invariance) — checked against finite
//! differences in the tests.
//!
//! **Why the dihedral angle** rather than the isometric bending model of Bergou et al. 2006:
//! the isometric model is a fixed quadratic form, cheap and exact for inextensible bending of
//! a *flat* rest shape near rest, but its energy is wrong for large rotations of a sheet
//! that stretches, and a curved rest shape needs extra terms; the dihedral angle is exact at
//! any deformation and takes any rest angle, at the price of a non-linear C (one atan2 per
//! constraint, [`crate::angle::atan2`]).
//!
//! **Stiffness.** A sheet of bending rigidity B (N·m, the material's `bending_modulus`) stores
//! ½B∫κ² dA; the discrete shell energy of Grinspun et al. 2003, ½ k (θ − θ₀)² per edge with
//! k = B‖e‖²/(A₁ + A₂) (A₁, A₂ the triangles' areas), converges to it under refinement (its
//! sum over a regular triangulated grid bent to a cylinder tends to ∫κ² dA). So each
//! constraint gets the compliance α = (A₁ + A₂)/(B‖e‖²) (rad²/J): resolution-independent, like
//! the springs' k = K·A/L².

use super::builder::SetParts;
use super::constraint::{ConstraintFamily, ParticleConstraint, compliance_from_stiffness};
use super::material::{ElementStiffness, hinge_stiffness};
use glam::Vec3;

/// One dihedral bending constraint, 28 bytes: particles `[x₀, x₁, x₂, x₃]` (the edge, then the
/// wing of each triangle), the rest angle θ₀ (rad), the compliance α (rad²/J) and the damping
/// time τ (s).
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct DihedralBending {
    /// The edge's two particles, then the wing of the triangle x₀x₁x₂ and of x₁x₀x₃.
    pub particles: [u32; 4],
    /// Rest angle θ₀ (rad, in (−π, π]).
    pub rest_angle: f32,
    /// Compliance α (rad²/J); 0 makes the edge rigid in bending.
    pub compliance: f32,
    /// Damping time τ (s).
    pub damping: f32,
}

/// The signed dihedral angle (rad) and its gradients, positions relative to x₀; `None` when a
/// triangle is degenerate.
#[inline]
pub fn dihedral_angle(x: &[Vec3; 4]) -> Option<(f32, [Vec3; 4])> {
    let (h, grad) = hinge(x)?;
    let m = cross(h.n1, h.n2);
    let theta = crate::angle::atan2(dot(m, h.e) * h.inv_le, dot(h.n1, h.n2));
    Some((theta, grad))
}

/// The gradients of [`dihedral_angle`] alone (the same bits), without the angle's atan2.
#[inline]
pub fn dihedral_gradient(x: &[Vec3; 4]) -> Option<[Vec3; 4]> {
    hinge(x).map(|(_, grad)| grad)
}

/// The hinge's triangle normals, edge and 1/‖e‖, which the angle needs beside the gradients.
struct Hinge {
    n1: Vec3,
    n2: Vec3,
    e: Vec3,
    inv_le: f32,
}

/// The gradients of the dihedral angle and the [`Hinge`] quantities; `None` when a triangle is
/// degenerate.
#[inline(always)]
fn hinge(x: &[Vec3; 4]) -> Option<(Hinge, [Vec3; 4])> {
    let e = x[1] - x[0];
    let (a, b) = (x[2] - x[0], x[3] - x[0]);
    let n1 = cross(e, a);
    let n2 = cross(b, e);
    let (l1, l2, le2) = (dot(n1, n1), dot(n2, n2), dot(e, e));
    if !(l1 > 1e-24 && l2 > 1e-24 && le2 > 1e-18) {
        return None;
    }
    let le = le2.sqrt();
    let inv_le = 1.0 / le;
    let (g1, g2) = (n1 * (1.0 / l1), n2 * (1.0 / l2));
    let grad2 = g1 * le;
    let grad3 = g2 * le;
    let (a1, b1) = (dot(a - e, e) * inv_le, dot(b - e, e) * inv_le);
    let (a0, b0) = (dot(a, e) * inv_le, dot(b, e) * inv_le);
    let grad0 = g1 * a1 + g2 * b1;
    let grad1 = -(g1 * a0) - g2 * b0;
    // Bridson's gradients are those of −θ for this orientation (the tests check the sign).
    Some((Hinge { n1, n2, e, inv_le }, [-grad0, -grad1, -grad2, -grad3]))
}

/// Adds a dihedral constraint for every interior edge of `triangles` (an edge shared by
/// exactly two triangles) to `out`, with rest angles from `positions`, the compliance of
/// flexural rigidity `modulus` (N·m) and damping time `damping` (s), coloured greedily.
/// Edges of three or more triangles (non-manifold) and hinges that are degenerate at rest get
/// none.
pub(crate) fn add_hinges(
    positions: &[Vec3],
    triangles: &[[u32; 3]],
    modulus: f32,
    damping: f32,
    out: &mut SetParts<DihedralBending, ElementStiffness>,
) {
    // (low, high, triangle, corner) for every directed edge corner → corner + 1, sorted so that
    // the sides of one edge are adjacent (a sort is much faster than a hash map at 10⁶ edges).
    let mut sides: Vec<(u32, u32, u32, u8)> = Vec::with_capacity(3 * triangles.len());
    for (t, tri) in triangles.iter().enumerate() {
        for k in 0..3 {
            let (u, v) = (tri[k], tri[(k + 1) % 3]);
            sides.push((u.min(v), u.max(v), t as u32, k as u8));
        }
    }
    sides.sort_unstable();
    let area = |t: u32| {
        let [a, b, c] = triangles[t as usize].map(|v| positions[v as usize]);
        0.5 * (b - a).cross(c - a).length()
    };
    let start = out.len();
    let mut k = 0;
    while k < sides.len() {
        let mut end = k + 1;
        while end < sides.len() && (sides[end].0, sides[end].1) == (sides[k].0, sides[k].1) {
            end += 1;
        }
        if end - k == 2 {
            let (t1, c1) = (sides[k].2, sides[k].3 as usize);
            let (t2, c2) = (sides[k + 1].2, sides[k + 1].3 as usize);
            let (a, b) = (triangles[t1 as usize], triangles[t2 as usize]);
            // The edge as triangle 1 runs it (x₀ → x₁), its wing, and the other's wing.
            let particles = [a[c1], a[(c1 + 1) % 3], a[(c1 + 2) % 3], b[(c2 + 2) % 3]];
            let x = particles.map(|p| positions[p as usize] - positions[particles[0] as usize]);
            if particles[2] != particles[3]
                && let Some((theta, _)) = dihedral_angle(&x)
            {
                let (sum, length) = (area(t1) + area(t2), x[1].length());
                let k = hinge_stiffness(modulus, sum, length);
                let c =
                    DihedralBending { particles, rest_angle: theta, compliance: compliance_from_stiffness(k), damping };
                out.push(c, ConstraintFamily::Bending, ElementStiffness::Hinge { area: sum, length }, 0);
            }
        }
        k = end;
    }
    let n = positions.len();
    let colours = super::colouring::greedy(n, &out.items[start..].iter().map(|c| c.particles).collect::<Vec<_>>());
    out.colours[start..].copy_from_slice(&colours);
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

impl ParticleConstraint<4> for DihedralBending {
    fn particles(&self) -> [u32; 4] {
        self.particles
    }

    fn with_particles(&self, particles: [u32; 4]) -> Self {
        Self { particles, ..*self }
    }

    /// C = θ − θ₀, wrapped to (−π, π].
    fn evaluate(&self, x: &[Vec3; 4]) -> Option<(f32, [Vec3; 4])> {
        let (theta, grad) = dihedral_angle(x)?;
        let mut c = theta - self.rest_angle;
        if c > std::f32::consts::PI {
            c -= std::f32::consts::TAU;
        } else if c <= -std::f32::consts::PI {
            c += std::f32::consts::TAU;
        }
        Some((c, grad))
    }

    fn gradient(&self, x: &[Vec3; 4]) -> Option<[Vec3; 4]> {
        dihedral_gradient(x)
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

    /// The gradient alone (what the solver evaluates at the start of a substep) is the angle's
    /// gradient bit for bit, degenerate hinges included.
    #[test]
    fn gradient_alone_matches_the_angle_bit_for_bit() {
        let mut seed = 7u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        for _ in 0..1000 {
            let x = [
                Vec3::ZERO,
                Vec3::new(rnd(), rnd(), rnd()),
                Vec3::new(rnd(), rnd(), rnd()),
                Vec3::new(rnd(), rnd(), rnd()),
            ];
            let full = dihedral_angle(&x).map(|(_, g)| g.map(|v| v.to_array().map(f32::to_bits)));
            let alone = dihedral_gradient(&x).map(|g| g.map(|v| v.to_array().map(f32::to_bits)));
            assert_eq!(full, alone, "{x:?}");
        }
        let flat = [Vec3::ZERO, Vec3::X, Vec3::X * 2.0, Vec3::Y];
        assert!(dihedral_gradient(&flat).is_none() && dihedral_angle(&flat).is_none());
    }

    /// The gradients equal central finite differences of the angle, for folds of either sign
    /// and a non-planar, irregular configuration.
    #[test]
    fn dihedral_gradients_match_finite_differences() {
        let cases = [
            [Vec3::ZERO, Vec3::new(1.0, 0.1, 0.0), Vec3::new(0.4, 0.2, 0.8), Vec3::new(0.6, -0.3, -0.9)],
            [Vec3::ZERO, Vec3::new(0.8, 0.0, 0.3), Vec3::new(0.2, 0.5, 0.7), Vec3::new(0.5, 0.6, -0.6)],
            [Vec3::ZERO, Vec3::new(0.0, 0.0, 1.0), Vec3::new(1.0, 0.2, 0.5), Vec3::new(-1.0, 0.3, 0.4)],
        ];
        for (k, x) in cases.iter().enumerate() {
            let (theta, grad) = dihedral_angle(x).unwrap();
            let h = 1e-3f32;
            for p in 0..4 {
                for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
                    let mut plus = *x;
                    let mut minus = *x;
                    plus[p] += axis * h;
                    minus[p] += -axis * h;
                    // Positions are taken relative to x₀, as the solver passes them.
                    let rel = |q: [Vec3; 4]| q.map(|v| v - q[0]);
                    let fd =
                        (dihedral_angle(&rel(plus)).unwrap().0 - dihedral_angle(&rel(minus)).unwrap().0) / (2.0 * h);
                    assert!(
                        (fd - grad[p].dot(axis)).abs() < 2e-3,
                        "case {k} (θ = {theta}) particle {p}: fd {fd} vs {}",
                        grad[p].dot(axis)
                    );
                }
            }
        }
        // Flat: θ = 0; folded up or down: opposite signs.
        let flat = [Vec3::ZERO, Vec3::X, Vec3::new(0.5, 0.0, 1.0), Vec3::new(0.5, 0.0, -1.0)];
        assert!(dihedral_angle(&flat).unwrap().0.abs() < 1e-6);
        let up = [Vec3::ZERO, Vec3::X, Vec3::new(0.5, 0.5, 1.0), Vec3::new(0.5, 0.5, -1.0)];
        let down = [Vec3::ZERO, Vec3::X, Vec3::new(0.5, -0.5, 1.0), Vec3::new(0.5, -0.5, -1.0)];
        let (u, d) = (dihedral_angle(&up).unwrap().0, dihedral_angle(&down).unwrap().0);
        assert!(u * d < 0.0 && (u + d).abs() < 1e-6, "{u} {d}");
    }
}
