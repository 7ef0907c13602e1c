//! The contacts stage: contacts between particles — a cloth against itself, against other
//! cloths and ropes — found through a spatial hash and solved between the constraint sets and
//! the colliders, as one Jacobi pass per substep (see [`crate::collision::self_collision`]);
//! iterating to a tolerance ([`crate::AutoIterations`]), one after each iteration too.

use super::colliders::Velocity;
use crate::Model;
use crate::collision::self_collision::SelfCollision;
use crate::solver::state::SolverState;

/// Solves the particle contacts of the substep of `h` seconds; returns the number of
/// particles in contact with another.
#[inline]
pub(crate) fn solve(
    model: &Model,
    contacts: &mut SelfCollision,
    state: &mut SolverState,
    h: f32,
    velocity: Velocity,
    parallel: bool,
) -> u32 {
    if !contacts.is_active() {
        return 0;
    }
    let inv_h = match velocity {
        Velocity::FromDisplacement => None,
        Velocity::Correct { inv_h } => Some(inv_h),
    };
    contacts.solve(model, &mut state.particles, &mut state.velocity, h, inv_h, parallel).particles
}
