//! The contacts stage: contacts between particles — cloth against itself, against other
//! cloths and ropes — found through a spatial hash and solved between the constraint sets and
//! the colliders. The slot is in every solver's substep; hooke does not fill it yet
//! (self-collision is planned), so it leaves the state unchanged.

use crate::solver::state::SolverState;

/// Solves the particle contacts of the substep; today there are none. Returns the number of
/// particles in contact (0).
#[inline]
pub(crate) fn solve(_state: &mut SolverState) -> u32 {
    0
}
