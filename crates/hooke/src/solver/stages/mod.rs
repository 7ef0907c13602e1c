//! The stages of a substep, in the one order every solver runs them.
//!
//! | stage | XPBD / PBD | explicit integrators | implicit Euler | GPU |
//! |---|---|---|---|---|
//! | [`Aerodynamics`](Stage::Aerodynamics) | drag and lift per triangle, gathered per particle and limited so that no step overshoots the wind ([`aerodynamics`]) | the same | the same | `aerodynamics.wgsl` |
//! | [`Predict`](Stage::Predict) | v ← v e^{−ch} + h(g + w f), d ← h v; pins moved ([`predict`]) | forces and the integrator's step (fused, see below) | forces, then the linearised solve for Δv | `predict.wgsl` |
//! | [`Constraints`](Stage::Constraints) | each constraint set, colour by colour, `iterations` times (Gauss–Seidel) | — (springs are forces) | — | one dispatch per colour, or Jacobi |
//! | [`Contacts`](Stage::Contacts) | particle contacts (self-collision): one Jacobi pass over the pairs the spatial hash finds ([`contacts`]) | — (the fused pass has no slot: a model with self-collision is refused) | as XPBD, velocity corrected | `spatial_hash.wgsl` (hash build), `self_collision.wgsl` (gather, apply) |
//! | [`Colliders`](Stage::Colliders) | projection out of colliders, Coulomb friction ([`colliders`]); then the cloth triangles' virtual particles (`collision::triangle_contact`) | the same, velocity corrected by Δd/h (particles only) | the same, velocity corrected | `collide.wgsl`, `triangle_contact.wgsl` |
//! | [`Finish`](Stage::Finish) | v ← d/h, x⁰ ← x⁰ + d, d ← 0 ([`finish`]) | x ← x + d | x ← x + d | `finish.wgsl` |
//!
//! Everything a stage needs that does not depend on the particles — h, 1/h, 1/h², e^{−ch}, the
//! wind, the pins' path, the colliders' placements — comes from the frame's
//! [`SubstepPlan`](super::SubstepPlan).
//!
//! **Fusion.** The explicit integrators (forward and symplectic Euler, Verlet) run
//! aerodynamics' gather, predict, colliders and finish as one pass over the particles —
//! particle by particle, reading the state at the start of the substep and writing the next
//! one into a second buffer — because the spring forces of a particle need only the old
//! positions of its neighbours. It is the same sequence of operations per particle as the
//! separate stages, done in one sweep over memory instead of four (see
//! `force_based/explicit_pass.rs`).
//!
//! When a frame blows up, the CPU solvers replay it sequentially and check the state after
//! every stage (and every constraint), and report the first stage that produced a non-finite
//! value by its [`Stage::describe`].

pub(crate) mod aerodynamics;
pub(crate) mod colliders;
pub(crate) mod contacts;
pub(crate) mod finish;
pub(crate) mod predict;

use rayon::prelude::*;

/// A stage of a substep. See the [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Aerodynamic drag and lift per triangle (article §1.4).
    Aerodynamics,
    /// External forces and the integration step; pinned particles follow their targets.
    Predict,
    /// Constraint sets, each colour by colour (article §3, §5.2).
    Constraints,
    /// Contacts between particles (self-collision).
    Contacts,
    /// Collisions with colliders and friction (article §4).
    Colliders,
    /// Velocities and positions of the substep's end. (The CPU's XPBD/PBD solver finishes a
    /// substep in the next one's prediction pass where no stage comes between them — without
    /// aerodynamics, and but for the frame's last substep —, so its stage times count that
    /// work under Predict.)
    Finish,
}

impl Stage {
    /// Every stage, in the order of a substep.
    pub const ORDER: [Stage; 6] =
        [Stage::Aerodynamics, Stage::Predict, Stage::Constraints, Stage::Contacts, Stage::Colliders, Stage::Finish];

    /// The stage's place in [`Stage::ORDER`] (0 to 5).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Short name: `aerodynamics`, `predict`, `constraints`, `contacts`, `colliders`, `finish`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Aerodynamics => "aerodynamics",
            Stage::Predict => "predict",
            Stage::Constraints => "constraints",
            Stage::Contacts => "contacts",
            Stage::Colliders => "colliders",
            Stage::Finish => "finish",
        }
    }

    /// What the stage does, as blow-up reports say it ("in …").
    pub fn describe(self) -> &'static str {
        match self {
            Stage::Aerodynamics => "the aerodynamic forces",
            Stage::Predict => "the prediction step (gravity and external forces)",
            Stage::Constraints => "the constraint projection",
            Stage::Contacts => "the particle contacts",
            Stage::Colliders => "collision handling",
            Stage::Finish => "the end of the substep",
        }
    }
}

/// Values per parallel task of [`zero`].
const ZERO_CHUNK: usize = 1 << 15;

/// Sets `values` (the multipliers λ of a set, say) to zero, in parallel chunks when `parallel`
/// and there are at least two: one thread zeroing the 7 MB of a 512² cloth's multipliers at
/// every substep was a sequential part of the frame that many threads waited on.
pub(crate) fn zero(values: &mut [f32], parallel: bool) {
    if parallel && values.len() >= 2 * ZERO_CHUNK {
        values.par_chunks_mut(ZERO_CHUNK).for_each(|c| c.fill(0.0));
    } else {
        values.fill(0.0);
    }
}

/// Particles per parallel task of the particle stages.
pub(crate) const PARTICLE_CHUNK: usize = 2048;

/// Runs `f(start, a, b)` over two per-particle slices of equal length, in parallel chunks of
/// [`PARTICLE_CHUNK`] (when `parallel` and there are at least two chunks) or as one range, and
/// sums what it returns. The result does not depend on the split.
pub(crate) fn for_particles<A: Send, B: Send, F>(parallel: bool, a: &mut [A], b: &mut [B], f: F) -> u32
where
    F: Fn(usize, &mut [A], &mut [B]) -> u32 + Sync + Send,
{
    if parallel && a.len() >= 2 * PARTICLE_CHUNK {
        a.par_chunks_mut(PARTICLE_CHUNK)
            .zip(b.par_chunks_mut(PARTICLE_CHUNK))
            .enumerate()
            .map(|(k, (a, b))| f(k * PARTICLE_CHUNK, a, b))
            .sum()
    } else {
        f(0, a, b)
    }
}
