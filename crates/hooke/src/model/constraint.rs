//! The constraint abstraction: an N-particle constraint C(x₁ … x_N) = 0 with its gradients,
//! compliance and damping, as XPBD solves it (article §3.2–3.3; Macklin, Müller & Chentanez
//! 2016).
//!
//! Every constraint type implements [`ParticleConstraint<N>`]: which particles it joins, its
//! value C and gradients ∇ᵢC at given positions, its compliance α (the inverse of a stiffness,
//! 0 for a rigid constraint) and its damping time τ. The solver needs nothing else: one
//! shared update (in `solver/xpbd/projection.rs`),
//!
//! Δλ = (−C − α̃λ − γ ΔC) / ((1 + γ) Σᵢ wᵢ‖∇ᵢC⁰‖² + α̃),  xᵢ += wᵢ ∇ᵢC⁰ Δλ,
//!
//! with α̃ = α/h², γ = τ/h, w the inverse masses, C at the current positions, its gradients
//! ∇C⁰ at the positions of the start of the substep (which conserves angular momentum; see
//! that file) and ΔC the change of C over the substep so far
//! ([`ParticleConstraint::damping_rate`]), projects any type. The model keeps one
//! [`ConstraintSet`](super::ConstraintSet) per type, coloured over its particle tuples
//! ([`colouring`](super::colouring)), so every set is solved in parallel colour by colour.
//! A type with a hot loop (the distance constraint) may add its own kernel, which must agree
//! with the shared update (a test checks it).

use glam::Vec3;

/// What a constraint stands for (article §1.1), for reports, strain checks and materials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConstraintFamily {
    /// Graph distance 1: grid neighbours, rope segments i–i+1, mesh edges. Carries stretch.
    Structural,
    /// Both diagonals of a grid cell: resists in-plane shear.
    Shear,
    /// A *bend spring*: a distance constraint across two edges — distance 2 along a grid
    /// axis, rope i–i+2, or the two opposite vertices of an interior mesh edge — that resists
    /// out-of-plane bending by resisting the shortening of that distance. Not an angle: it
    /// cannot tell a fold from a compression and holds no rest curvature.
    BendSpring,
    /// An angle: the dihedral angle of two adjacent cloth triangles
    /// ([`DihedralBending`](super::DihedralBending)) or the angle at a rope joint
    /// ([`RopeBending`](super::RopeBending)).
    Bending,
}

impl ConstraintFamily {
    /// Name used in reports: `structural`, `shear`, `bend spring` or `bending`.
    pub fn name(self) -> &'static str {
        match self {
            ConstraintFamily::Structural => "structural",
            ConstraintFamily::Shear => "shear",
            ConstraintFamily::BendSpring => "bend spring",
            ConstraintFamily::Bending => "bending",
        }
    }
}

/// An N-particle constraint, as the XPBD solver projects it. See the [module
/// documentation](self).
///
/// Units depend on the type: C is in the constraint's own unit (m for a distance, rad for an
/// angle), ∇C in that unit per metre, the compliance α in that unit squared per joule
/// (m/N for a distance), so that α̃λ has the unit of C.
pub trait ParticleConstraint<const N: usize>: Copy + Send + Sync + 'static {
    /// The particles it joins (indices into the model's particles), all different.
    fn particles(&self) -> [u32; N];

    /// The same constraint on other particles (for renumbering when a body is appended to a
    /// model).
    fn with_particles(&self, particles: [u32; N]) -> Self;

    /// C and the gradients ∇ᵢC (one per particle, same order as [`particles`](Self::particles))
    /// at the positions `x`, given **relative to the first particle** (`x[0]` is the zero
    /// vector; constraints are translation-invariant, and relative positions keep the f32
    /// precision of nearby particles far from the origin). `None` where the gradient is
    /// undefined (coincident particles): the solver skips the constraint for that iteration.
    fn evaluate(&self, x: &[Vec3; N]) -> Option<(f32, [Vec3; N])>;

    /// The gradients ∇C of [`ParticleConstraint::evaluate`] alone, bit for bit the same; the
    /// solver needs only them at the start of a substep. The default evaluates C too; a
    /// constraint whose C costs more than its gradient (the dihedral angle's atan2) skips it.
    fn gradient(&self, x: &[Vec3; N]) -> Option<[Vec3; N]> {
        self.evaluate(x).map(|(_, g)| g)
    }

    /// Compliance α ≥ 0 on the side `c` of the constraint (0 = rigid): c ≥ 0 is the stretch
    /// side, c < 0 the compression side, and the two may differ. The solver passes the sign
    /// of the constraint's force — −λ once λ ≠ 0 — and C only while λ = 0 (see the shared
    /// update's file for why).
    fn compliance(&self, c: f32) -> f32;

    /// Stiffness-proportional damping time τ (s) ≥ 0, γ = τ/h in the update.
    fn damping(&self) -> f32;

    /// The damping term's rate: how far C has moved since the start of the substep, in C's
    /// unit, from C's `value` now, the positions `start` at the start of the substep (relative
    /// to the first particle, as [`evaluate`](Self::evaluate) takes them), the update's
    /// `gradient` and the particles' `displacement`s xᵢ − xᵢ⁰ (m). The default is the
    /// linearised Σᵢ ∇ᵢC·(xᵢ − xᵢ⁰) of Macklin et al. 2016 (eq. 26), which reads an element
    /// that turns by φ within the substep as a change of C of second order in φ; a constraint
    /// whose C is cheap at the start positions returns the change itself, C(x) − C(x⁰), which a
    /// rigid turn leaves at 0 (the distance constraint; see `solver/xpbd/projection.rs`).
    fn damping_rate(&self, value: f32, start: &[Vec3; N], gradient: &[Vec3; N], displacement: &[Vec3; N]) -> f32 {
        let _ = (value, start);
        let mut rate = 0.0;
        for k in 0..N {
            rate += gradient[k].dot(displacement[k]);
        }
        rate
    }
}

/// Converts a stiffness k (N/m, may be `+inf`) to a compliance α = 1/k (m/N, 0 when rigid).
pub fn compliance_from_stiffness(k: f32) -> f32 {
    if k.is_infinite() { 0.0 } else { 1.0 / k }
}
