//! Distance constraints: the springs of the mass-spring model written as XPBD constraints.
//!
//! A distance constraint between particles *i* and *j* with rest length L₀ has the constraint
//! function C(x) = ‖xᵢ − xⱼ‖ − L₀ (article §3.2) and the gradients ∇ᵢC = n, ∇ⱼC = −n with
//! n = (xᵢ − xⱼ)/‖xᵢ − xⱼ‖. Its compliance α = 1/k (m/N) is the inverse of the spring stiffness
//! k (N/m) of the force-based model (article §1.2, §3.3); α = 0 makes it rigid. Stretch (C > 0)
//! and compression (C < 0) have separate compliances so that cloth can buckle easily while it
//! resists stretching (article §1.1).

use super::constraint::ParticleConstraint;
use bytemuck::{Pod, Zeroable};
use glam::Vec3;

/// One distance constraint, 24 bytes, as the solvers read it — on the GPU too: the record is
/// uploaded as is (`Constraint` in hooke-gpu's `common.wgsl`, same fields in the same order).
///
/// Units: `rest_length` in m; compliances in m/N (α = 1/k, 0 for a rigid constraint);
/// `damping` is the stiffness-proportional dashpot time τ = k_d/k in s (the axial damping of
/// article §1.3 written for XPBD, Macklin et al. 2016 eq. 26 with γ = τ/Δt).
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct DistanceConstraint {
    /// First particle index.
    pub i: u32,
    /// Second particle index.
    pub j: u32,
    /// Rest length L₀ (m), > 0.
    pub rest_length: f32,
    /// Compliance when stretched, C > 0 (m/N).
    pub compliance_stretch: f32,
    /// Compliance when compressed, C < 0 (m/N).
    pub compliance_compression: f32,
    /// Axial damping time τ = k_d/k (s); 0 disables damping.
    pub damping: f32,
}

impl DistanceConstraint {
    /// Compliance that applies to a constraint value `c` (m): stretch for c ≥ 0, else compression.
    #[inline(always)]
    pub fn compliance_for(&self, c: f32) -> f32 {
        if c >= 0.0 { self.compliance_stretch } else { self.compliance_compression }
    }

    /// Stiffness k = 1/α (N/m) for a constraint value `c`; `f32::INFINITY` when rigid.
    pub fn stiffness_for(&self, c: f32) -> f32 {
        let a = self.compliance_for(c);
        if a > 0.0 { 1.0 / a } else { f32::INFINITY }
    }
}

impl ParticleConstraint<2> for DistanceConstraint {
    fn particles(&self) -> [u32; 2] {
        [self.i, self.j]
    }

    fn with_particles(&self, [i, j]: [u32; 2]) -> Self {
        DistanceConstraint { i, j, ..*self }
    }

    /// C = ‖xᵢ − xⱼ‖ − L₀, ∇ᵢC = n = (xᵢ − xⱼ)/‖xᵢ − xⱼ‖, ∇ⱼC = −n; `None` below 1e-9 m.
    fn evaluate(&self, x: &[Vec3; 2]) -> Option<(f32, [Vec3; 2])> {
        let d = x[0] - x[1];
        let len = d.length();
        if len.is_nan() || len < 1e-9 {
            return None;
        }
        let n = d / len;
        Some((len - self.rest_length, [n, -n]))
    }

    fn compliance(&self, c: f32) -> f32 {
        self.compliance_for(c)
    }

    fn damping(&self) -> f32 {
        self.damping
    }

    /// C(x) − C(x⁰) = ‖xᵢ − xⱼ‖ − ‖xᵢ⁰ − xⱼ⁰‖: the change of length itself, which a rigid turn
    /// of the pair leaves at 0.
    fn damping_rate(&self, value: f32, start: &[Vec3; 2], _: &[Vec3; 2], _: &[Vec3; 2]) -> f32 {
        value - ((start[0] - start[1]).length() - self.rest_length)
    }
}
