//! The solver contract, and the solvers.
//!
//! Every solver — position-based or force-based, CPU or GPU — implements [`Solver`]: it is
//! created from an `Arc<Model>` and its own settings, advances by one frame at a time (its
//! substeps and iterations inside), reads the frame's [`Control`], and hands out positions and
//! velocities only when asked, so a GPU solver can keep its state on the device.
//!
//! Physical parameters live on the [`Model`]; numerical knobs (substeps, iterations, method)
//! live in each solver's settings.
//!
//! * [`XpbdSolver`] ([`xpbd`]): position-based, XPBD or PBD (article §3).
//! * [`ForceSolver`] ([`force_based`]): the same model as a mass–spring system, integrated with
//!   [forward Euler](explicit_euler), [symplectic Euler](symplectic_euler), [Verlet](verlet)
//!   or [implicit Euler](implicit_euler) with a [preconditioned conjugate gradient](pcg)
//!   (article §1.2–2.3).

mod distance;
pub mod explicit_euler;
pub mod force_based;
mod health;
pub mod implicit_euler;
pub mod pcg;
mod spring_gather;
pub mod symplectic_euler;
pub mod verlet;
pub mod xpbd;

pub use force_based::{ForceSettings, ForceSolver, Integrator};
pub use xpbd::{Method, XpbdSettings, XpbdSolver};

use crate::{Control, Model, State};
use glam::Vec3;
use std::sync::Arc;

/// What a solver did in one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Substeps taken.
    pub substeps: u32,
    /// Constraint iterations per substep.
    pub iterations: u32,
    /// Particles in contact with a collider in the last substep.
    pub contacts: u32,
    /// Linear-solver iterations (e.g. conjugate gradient) of the substep that needed most;
    /// 0 for solvers without a linear solve.
    pub linear_iterations: u32,
    /// Largest relative residual ‖b − Ax‖/‖b‖ the linear solver ended with in the frame; 0
    /// for solvers without a linear solve.
    pub linear_residual: f64,
}

/// Static description of a configured solver, for reports and benchmarks.
#[derive(Clone, Debug, PartialEq)]
pub struct SolverInfo {
    /// Solver name, e.g. `xpbd-cpu`.
    pub name: String,
    /// Substeps per frame.
    pub substeps: u32,
    /// Iterations per substep.
    pub iterations: u32,
    /// Whether it runs in parallel.
    pub parallel: bool,
}

/// Errors of solver construction and stepping.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolverError {
    /// A solver setting is out of range.
    #[error("solver setting {setting}: {message}")]
    InvalidSettings {
        /// The setting's name.
        setting: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The frame time step is not finite and > 0.
    #[error("invalid frame time step {0} s: it must be finite and > 0")]
    InvalidTimeStep(f32),
    /// A pin names a particle that does not exist or a non-finite target.
    #[error("pin on particle {particle}: {message}")]
    InvalidPin {
        /// Particle index of the pin.
        particle: u32,
        /// What is wrong.
        message: String,
    },
    /// The simulation produced a non-finite value or ran away. The solver's state is left at
    /// the start of the failed frame.
    #[error("simulation blew up at t = {time:.4} s: {detail}")]
    BlowUp {
        /// Time (s) at the start of the failed frame, or of the substep in which the CPU
        /// solvers' traced replay of the frame found the problem.
        time: f64,
        /// The particle where it was first seen.
        particle: u32,
        /// The constraint being projected when it was first seen, if any.
        constraint: Option<usize>,
        /// A sentence saying what happened where.
        detail: String,
    },
    /// A state loaded with [`Solver::write_state`] does not fit the model.
    #[error("state does not match the model: {0}")]
    StateMismatch(String),
}

/// The solver contract. See the [module documentation](self).
pub trait Solver: Send {
    /// Name and settings.
    fn info(&self) -> SolverInfo;
    /// The model being simulated.
    fn model(&self) -> &Arc<Model>;
    /// Simulated time (s).
    fn time(&self) -> f64;
    /// Advances by one frame of `frame_dt` seconds under `control`.
    ///
    /// # Errors
    /// [`SolverError::InvalidTimeStep`], [`SolverError::InvalidPin`], or
    /// [`SolverError::BlowUp`] (then the state stays at the start of the frame).
    fn step(&mut self, control: &Control, frame_dt: f32) -> Result<StepReport, SolverError>;
    /// Copies the particle positions (m) into `out` (resized to the particle count).
    fn read_positions(&mut self, out: &mut Vec<Vec3>);
    /// Copies the whole state into `out`.
    fn read_state(&mut self, out: &mut State);
    /// Replaces the state.
    ///
    /// # Errors
    /// [`SolverError::StateMismatch`] if the lengths differ from the particle count or a value
    /// is not finite.
    fn write_state(&mut self, state: &State) -> Result<(), SolverError>;
}

/// Checks the inputs of [`Solver::step`]: a finite frame time step > 0 and a finite wind (and
/// gust). Every solver calls it first.
///
/// # Errors
/// [`SolverError::InvalidTimeStep`] or [`SolverError::InvalidSettings`] naming the wind.
pub fn check_step_inputs(control: &Control, frame_dt: f32) -> Result<(), SolverError> {
    if !(frame_dt.is_finite() && frame_dt > 0.0) {
        return Err(SolverError::InvalidTimeStep(frame_dt));
    }
    control.validate_wind().map_err(|message| SolverError::InvalidSettings { setting: "wind", message })
}

/// Checks that a state fits a model.
pub(crate) fn check_state(model: &Model, state: &State) -> Result<(), SolverError> {
    let n = model.particle_count();
    if state.particle_position.len() != n || state.particle_velocity.len() != n {
        return Err(SolverError::StateMismatch(format!(
            "{} positions and {} velocities for {n} particles",
            state.particle_position.len(),
            state.particle_velocity.len()
        )));
    }
    if let Some(k) =
        state.particle_position.iter().zip(&state.particle_velocity).position(|(x, v)| !x.is_finite() || !v.is_finite())
    {
        return Err(SolverError::StateMismatch(format!("particle {k} is not finite")));
    }
    if !state.time.is_finite() {
        return Err(SolverError::StateMismatch("time is not finite".into()));
    }
    Ok(())
}
