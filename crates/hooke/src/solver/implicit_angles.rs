//! The angle sets (cloth hinges, rope joints) in implicit Euler's linear system.
//!
//! An angle constraint C(x₁ … x_N) of compliance α and damping time τ is the potential
//! ½kC² (k = 1/α, J/rad²) with a dashpot along ∇C ([`constraint_forces`](super::constraint_forces)):
//! fᵢ = −k (C + τĊ) ∇ᵢC. Its Jacobians, in the Gauss–Newton form that drops the curvature
//! term −kC∇²C (so that they are negative semidefinite at any deformation, as a linear solve
//! by conjugate gradients needs), are
//!
//! Kᵢⱼ = ∂fᵢ/∂xⱼ ≈ −k ∇ᵢC ∇ⱼCᵀ,  Dᵢⱼ = ∂fᵢ/∂vⱼ = −kτ ∇ᵢC ∇ⱼCᵀ.
//!
//! In Baraff & Witkin's system (M − hD − h²K) Δv = h (f + hKv) (see
//! [`implicit_euler`](super::implicit_euler)) each constraint adds the blocks
//! (h² + hτ) k ∇ᵢC ∇ⱼCᵀ to A for every pair of its particles (i = j included), and
//! −h² k Ċ ∇ᵢC to bᵢ, with Ċ = Σⱼ ∇ⱼC·vⱼ. The force f itself stays the exact one. Without these
//! terms a stiff hinge is integrated explicitly and blows up beyond its own stability limit
//! (a clamped strip of bending modulus 0.5 N·m at 40 substeps of 1/60 s did, in 4 frames);
//! with them the step is stable at any h for the linearised system, and a static load reaches
//! the same equilibrium at any resolution (tested on a cantilevered strip at 16, 32 and 64
//! segments).
//!
//! The matrix pattern gets a block for each pair of particles of a constraint (a hinge's two
//! wings are not joined by any spring); [`AngleBlocks::slots`] holds, per constraint, where
//! each of its N² blocks sits in the matrix's value array. The blocks are added constraint by
//! constraint on one thread: about 1.5 hinges per cloth particle, 16 blocks each, a small part
//! of a step next to the conjugate-gradient solve.

use super::pcg::BlockCsr;
use super::state::Particle;
use crate::Model;
use crate::model::{ConstraintSet, ParticleConstraint};
use glam::{DMat3, DVec3, Vec3};

/// Where the angle constraints' blocks sit in the system matrix.
pub(crate) struct AngleBlocks {
    /// For each hinge of the model's dihedral set, its 16 blocks' indices into
    /// [`BlockCsr::values`], row-major over its particles (a, b).
    dihedral: Vec<u32>,
    /// The same for each joint of the rope-bending set, 9 per joint.
    rope: Vec<u32>,
}

impl AngleBlocks {
    /// The pairs of particles that share an angle constraint, for the matrix pattern.
    pub fn pairs(model: &Model) -> impl Iterator<Item = (u32, u32)> + '_ {
        fn of<T: ParticleConstraint<N>, const N: usize>(set: &ConstraintSet<T>) -> impl Iterator<Item = (u32, u32)> {
            set.constraints().iter().flat_map(|c| {
                let p = c.particles();
                (0..N).flat_map(move |a| (a + 1..N).map(move |b| (p[a], p[b])))
            })
        }
        of(model.dihedral()).chain(of(model.rope_bending()))
    }

    /// The blocks' positions in `matrix`, whose pattern holds [`AngleBlocks::pairs`].
    pub fn new(model: &Model, matrix: &BlockCsr) -> AngleBlocks {
        AngleBlocks { dihedral: slots(model.dihedral(), matrix), rope: slots(model.rope_bending(), matrix) }
    }

    /// Adds every angle constraint's blocks to `values` (the matrix's value array) and its
    /// h²Kv term to `rhs` (one per particle), at positions `x` (m) and velocities `v` (m/s)
    /// for a step of `h` seconds.
    pub fn add(&self, model: &Model, x: &[Particle], v: &[Vec3], h: f64, values: &mut [DMat3], rhs: &mut [DVec3]) {
        add_set(model.dihedral(), &self.dihedral, x, v, h, values, rhs);
        add_set(model.rope_bending(), &self.rope, x, v, h, values, rhs);
    }
}

fn slots<T: ParticleConstraint<N>, const N: usize>(set: &ConstraintSet<T>, matrix: &BlockCsr) -> Vec<u32> {
    let offsets = matrix.row_offsets();
    let mut out = Vec::with_capacity(set.len() * N * N);
    for c in set.constraints() {
        let p = c.particles();
        for a in p {
            for b in p {
                // The pattern was built from `AngleBlocks::pairs`, so every pair is stored.
                let within = matrix.position_in_row(a as usize, b).unwrap_or(0);
                out.push(offsets[a as usize] + within as u32);
            }
        }
    }
    out
}

fn add_set<T: ParticleConstraint<N>, const N: usize>(
    set: &ConstraintSet<T>,
    slots: &[u32],
    x: &[Particle],
    v: &[Vec3],
    h: f64,
    values: &mut [DMat3],
    rhs: &mut [DVec3],
) {
    for (c, slot) in set.constraints().iter().zip(slots.chunks_exact(N * N)) {
        let p = c.particles();
        let x0 = x[p[0] as usize].x.truncate();
        let rel = p.map(|q| x[q as usize].x.truncate() - x0);
        let Some((value, grad)) = c.evaluate(&rel) else { continue };
        let alpha = c.compliance(value) as f64;
        if alpha <= 0.0 {
            continue; // rigid: refused by the force-based solvers beforehand
        }
        let k = 1.0 / alpha;
        let g = grad.map(|g| g.as_dvec3());
        let rate: f64 = (0..N).map(|a| g[a].dot(v[p[a] as usize].as_dvec3())).sum();
        let scale = (h * h + h * c.damping() as f64) * k;
        for a in 0..N {
            rhs[p[a] as usize] -= g[a] * (h * h * k * rate);
            for b in 0..N {
                let outer = DMat3::from_cols(g[a] * g[b].x, g[a] * g[b].y, g[a] * g[b].z);
                values[slot[a * N + b] as usize] += outer * scale;
            }
        }
    }
}
