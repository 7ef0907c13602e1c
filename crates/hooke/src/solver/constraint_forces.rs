//! Forces of the angle constraint sets (cloth hinges, rope joints) for the force-based
//! integrators.
//!
//! A constraint C(x₁ … x_N) of compliance α and damping time τ is, as a force, the potential
//! ½kC² with k = 1/α and a dashpot along its gradient (Macklin et al. 2016 §4: XPBD's
//! compliance is the inverse stiffness of this potential):
//!
//! fᵢ = −k (C + τ Ċ) ∇ᵢC,  Ċ = Σⱼ ∇ⱼC·vⱼ.
//!
//! The forces of one constraint sum to zero and have no torque (C is invariant under
//! translation and rotation), so momentum is conserved. The distance constraints are the
//! springs of `spring_gather.rs`; these sets are fewer (about 1.5 hinges per cloth particle,
//! one joint per rope particle) and are scattered colour by colour, in parallel within a
//! colour (no two constraints of a colour share a particle).
//!
//! The explicit integrators take these forces as they are, and
//! [`ForceSolver::stable_step`](super::ForceSolver::stable_step) includes their stability
//! limit; implicit Euler also puts their Gauss–Newton Jacobians in its linear system
//! ([`implicit_angles`](super::implicit_angles)), so a stiff hinge does not limit its step.

use crate::model::{ConstraintSet, ParticleConstraint};
use crate::solver::xpbd::Shared;
use glam::Vec3;
use rayon::prelude::*;

/// Constraints per parallel task.
const CHUNK: usize = 1024;

/// Adds the forces (N) of every constraint of `set` at positions `x` (m) and velocities `v`
/// (m/s), both indexed by particle, to `out` (one per particle).
pub(crate) fn add_set_forces<T: ParticleConstraint<N>, const N: usize>(
    set: &ConstraintSet<T>,
    x: &(impl Fn(usize) -> Vec3 + Sync),
    v: &(impl Fn(usize) -> Vec3 + Sync),
    out: &mut [Vec3],
    parallel: bool,
) {
    let out_ptr = Shared(out.as_mut_ptr());
    let out_ptr = &out_ptr;
    let one = |c: &T| {
        let Some((f, particles)) = constraint_force::<T, N>(c, x, v) else { return };
        for (k, p) in particles.into_iter().enumerate() {
            // SAFETY: the constraints of one colour touch disjoint particles (validated when
            // the model was built), and indices are in range; colours run one after another.
            unsafe { *out_ptr.0.add(p as usize) += f[k] };
        }
    };
    for range in set.colour_ranges() {
        let cons = &set.constraints()[range.start as usize..range.end as usize];
        if parallel && cons.len() >= 2 * CHUNK {
            cons.par_chunks(CHUNK).for_each(|cc| cc.iter().for_each(one));
        } else {
            cons.iter().for_each(one);
        }
    }
}

/// The forces fᵢ = −k (C + τ Ċ) ∇ᵢC (N) of one constraint on its particles; `None` where its
/// gradient is undefined or it is rigid (α = 0, which the solvers refuse beforehand).
#[inline]
pub(crate) fn constraint_force<T: ParticleConstraint<N>, const N: usize>(
    c: &T,
    x: &impl Fn(usize) -> Vec3,
    v: &impl Fn(usize) -> Vec3,
) -> Option<([Vec3; N], [u32; N])> {
    let particles = c.particles();
    let x0 = x(particles[0] as usize);
    let rel: [Vec3; N] = particles.map(|p| x(p as usize) - x0);
    let (value, grad) = c.evaluate(&rel)?;
    let alpha = c.compliance(value);
    if alpha <= 0.0 {
        return None;
    }
    let mut rate = 0.0;
    for k in 0..N {
        rate += grad[k].dot(v(particles[k] as usize));
    }
    let magnitude = -(value + c.damping() * rate) / alpha;
    Some((grad.map(|g| g * magnitude), particles))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClothGrid, ModelBuilder};

    /// The hinge forces of a folded sheet are minus the gradient of the energy ½kΣC² (central
    /// differences), and sum to zero.
    #[test]
    fn hinge_forces_are_the_energy_gradient() {
        let mut b = ModelBuilder::new();
        let mut grid = ClothGrid::new("c", 4, 5, 0.1);
        grid.material.bending_modulus = 2e-3;
        grid.material.damping = 0.0;
        b.add_cloth_grid(&grid).unwrap();
        let model = b.finalize().unwrap();
        let set = model.dihedral();
        assert!(!set.is_empty());
        let x: Vec<Vec3> = model
            .particle_position()
            .iter()
            .enumerate()
            .map(|(k, p)| *p + Vec3::new(0.0, 0.02 * ((k * 7) % 5) as f32 - 0.04, 0.0))
            .collect();
        let energy = |x: &[Vec3]| -> f64 {
            set.constraints()
                .iter()
                .map(|c| {
                    let rel = c.particles.map(|p| x[p as usize] - x[c.particles[0] as usize]);
                    let (value, _) = c.evaluate(&rel).unwrap();
                    0.5 * (value as f64).powi(2) / c.compliance as f64
                })
                .sum()
        };
        let mut f = vec![Vec3::ZERO; x.len()];
        add_set_forces(set, &|p| x[p], &|_| Vec3::ZERO, &mut f, false);
        let total: Vec3 = f.iter().copied().sum();
        assert!(total.length() < 1e-5 * f.iter().map(|g| g.length()).fold(0.0, f32::max), "{total}");
        let h = 1e-3;
        for p in [0usize, 6, 13] {
            for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
                let (mut plus, mut minus) = (x.clone(), x.clone());
                plus[p] += axis * h;
                minus[p] -= axis * h;
                let fd = -(energy(&plus) - energy(&minus)) / (2.0 * h as f64);
                let got = f[p].dot(axis) as f64;
                assert!((fd - got).abs() < 2e-2 * got.abs().max(1e-3), "particle {p}: {got} vs {fd}");
            }
        }
    }
}
