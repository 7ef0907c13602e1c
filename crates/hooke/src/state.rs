//! The time-varying state of a simulation, as a plain host-side copy.

use crate::Model;
use glam::Vec3;

/// Particle positions and velocities at one instant.
///
/// Solvers keep their own (possibly device-side) copy; [`Solver::read_state`](crate::Solver::read_state)
/// fills a `State`, and [`Solver::write_state`](crate::Solver::write_state) loads one.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    /// Positions (m), one per particle.
    pub particle_position: Vec<Vec3>,
    /// Velocities (m/s), one per particle.
    pub particle_velocity: Vec<Vec3>,
    /// Simulated time (s).
    pub time: f64,
}

impl State {
    /// The model's initial state at time 0.
    pub fn from_model(model: &Model) -> State {
        State {
            particle_position: model.particle_position().to_vec(),
            particle_velocity: model.particle_velocity().to_vec(),
            time: 0.0,
        }
    }
}
