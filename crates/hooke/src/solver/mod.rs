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
//!   [forward Euler](forward_euler), [symplectic Euler](symplectic_euler), [Verlet](verlet)
//!   or [implicit Euler](implicit_euler) with a [preconditioned conjugate gradient](pcg)
//!   (article §1.2–2.3).
//!
//! # One frame, one pipeline
//!
//! Every solver — these two and the GPU's — runs the same [stages](stages) in the same order
//! in every substep, from one [`SubstepPlan`] computed at the start of the frame:
//!
//! aerodynamics → predict → constraint sets (each in colour order) → contacts → colliders →
//! finish.
//!
//! See [`stages`] for what each stage does in each solver.
//!
//! # Changes between frames
//!
//! [`Control`] changes freely between frames (pins, wind, collider placements). A model with
//! new parameters and the same topology goes to [`Solver::notify_model_changed`], which keeps
//! the state; a model with another topology to [`Solver::rebuild`] with the state to go on
//! from.

mod constraint_forces;
pub mod force_based;
pub mod forward_euler;
mod health;
mod implicit_angles;
pub mod implicit_euler;
pub mod integrate;
pub mod pcg;
pub mod plan;
mod spring_gather;
pub mod stage_times;
pub mod stages;
pub(crate) mod state;
pub mod symplectic_euler;
pub mod verlet;
pub mod xpbd;

pub use force_based::{ForceSettings, ForceSolver, Integrator};
pub use plan::{PinPath, SubstepPlan, SubstepSlot};
pub use stage_times::StageTimes;
pub use stages::Stage;
pub use xpbd::{
    AutoIterations, ClothSolver, Method, RopeSolver, XpbdSettings, XpbdSolver, solver_swept_colours, swept_colours,
};

use crate::{Control, Model, State};
use glam::Vec3;
use std::sync::Arc;

/// What a solver did in one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Substeps taken.
    pub substeps: u32,
    /// Constraint iterations per substep: the most any substep took (with
    /// [`AutoIterations`](crate::AutoIterations) they vary).
    pub iterations: u32,
    /// Constraint iterations summed over the frame's substeps (0 for solvers that do not
    /// count them).
    pub total_iterations: u32,
    /// Particles in contact with a collider in the last substep: directly, or (on the CPU)
    /// through their triangles' virtual particles ([`crate::collision::triangle_contact`]);
    /// the GPU counts direct contacts only. With iterations to a tolerance, which project the
    /// colliders between the iterations too, on the CPU the most in any one projection of that
    /// substep, on the GPU those of its colliders stage.
    pub contacts: u32,
    /// Particles in contact with another particle (self-collision) in the last substep. With
    /// iterations to a tolerance, which resolve the particle contacts between the iterations
    /// too, on the CPU the most in any one pass of that substep, on the GPU those of its
    /// contacts stage.
    pub particle_contacts: u32,
    /// Substeps of the frame that rebuilt the particle contacts' neighbour lists (through the
    /// spatial hash; the others reused them, with the same result — see
    /// [`crate::collision::self_collision`]); counted by the CPU solvers (XPBD, PBD and
    /// implicit Euler) and by the GPU's where it keeps lists (hooke-gpu's `ContactSearch`;
    /// without them it builds its hash every substep and reports 0), 0 without
    /// self-collision.
    pub contact_list_builds: u32,
    /// Members whose neighbour list overflowed its capacity, summed over the frame's
    /// substeps: they gathered their contacts from the hash's cells instead (none is lost),
    /// and the substeps that follow take every contact from the cells for a spell before
    /// lists are tried again (hooke-gpu's `contact_lists`). Only the GPU's lists have a
    /// capacity; 0 on the CPU.
    pub contact_list_overflows: u32,
    /// Linear-solver iterations (e.g. conjugate gradient) of the substep that needed most;
    /// 0 for solvers without a linear solve.
    pub linear_iterations: u32,
    /// Largest relative residual ‖b − Ax‖/‖b‖ the linear solver ended with in the frame; 0
    /// for solvers without a linear solve.
    pub linear_residual: f64,
    /// Times the frame was taken again from its start with more substeps by the tension limit
    /// ([`crate::solver::xpbd::stability`]; XPBD on the CPU and the GPU); the other counts are
    /// those of the attempt kept, except, on the GPU, the neighbour lists' builds and
    /// overflows, which count every attempt's (as [`Solver::contact_list_totals`] does).
    pub retries: u32,
    /// Times the frame was taken again from its start with more iterations per substep: the
    /// GPU iterating to a tolerance decides per frame (hooke-gpu's `iterates_to_tolerance`);
    /// 0 on the CPU, which decides per substep.
    pub iteration_retries: u32,
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
    #[error("invalid frame time step {0} s: it must be finite and at least 1e-9 s")]
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
    #[error("simulation blew up in the step from t = {time:.4} s: {detail}")]
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
    /// A model given to [`Solver::notify_model_changed`] has another topology than the
    /// solver's (use [`Solver::rebuild`]).
    #[error("the new model's topology differs from the solver's ({0}); use rebuild")]
    TopologyChanged(String),
    /// A collider placement in the [`Control`] is not usable.
    #[error("collider {collider}: {message}")]
    InvalidCollider {
        /// Index of the collider in the model.
        collider: usize,
        /// What is wrong.
        message: String,
    },
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
    /// Takes `model` — the solver's model with new parameters (materials, masses, gravity,
    /// air; see [`Model::with_cloth_material`]) and the same topology — from the next frame
    /// on, keeping positions, velocities and time: no jump, no rebuild.
    ///
    /// # Errors
    /// [`SolverError::TopologyChanged`] if `model` does not have the same topology
    /// ([`Model::same_topology`]); [`SolverError::InvalidSettings`] where the new parameters
    /// do not suit the solver (a rigid constraint for a force-based integrator). The solver is
    /// unchanged on error.
    fn notify_model_changed(&mut self, model: Arc<Model>) -> Result<(), SolverError>;
    /// Replaces the model by `model`, of any topology (a body added, constraints removed,
    /// particles split), and continues from `state`, which must fit the new model: the
    /// solver's internal arrays (and device buffers) are made anew, its settings kept.
    ///
    /// # Errors
    /// As the solver's constructor for `model`, and [`SolverError::StateMismatch`] for a
    /// state that does not fit it. The solver is unchanged on error.
    fn rebuild(&mut self, model: Arc<Model>, state: &State) -> Result<(), SolverError>;
    /// As [`Solver::rebuild`], for `model` made by a tear or cut from the solver's model
    /// ([`crate::tearing::tear`]): `parent` (length: `model`'s particle count) gives each of
    /// its particles the particle of the solver's model it comes from
    /// ([`Torn::parent`](crate::tearing::Torn::parent)), so that what the tear leaves valid is
    /// kept (the XPBD solvers' tethers are searched again only where the tear cut their
    /// paths). `copied` ([`Torn::copied`](crate::tearing::Torn::copied)) names the runs of
    /// constraint records the tear copied unchanged from the solver's model: the GPU solver
    /// copies those on the device instead of uploading them, after comparing them with its
    /// model's records (runs that do not match are uploaded, so a wrong `copied` costs time,
    /// not correctness; [`CopiedRuns::default`](crate::tearing::CopiedRuns) uploads
    /// everything). The default rebuilds.
    ///
    /// # Errors
    /// As [`Solver::rebuild`], and [`SolverError::StateMismatch`] if `parent` does not fit
    /// (another length, an index beyond the solver's particle count).
    fn rebuild_torn(
        &mut self,
        model: Arc<Model>,
        parent: &[u32],
        copied: &crate::tearing::CopiedRuns,
        state: &State,
    ) -> Result<(), SolverError> {
        let _ = copied;
        check_parent(&model, parent, self.model().particle_count())?;
        self.rebuild(model, state)
    }
    /// Whether this solver's frames run off the host's cores (on a device), so that work the
    /// host does while a frame is being solved costs the frame nothing: a run's tearing makes
    /// a torn model on a thread beside the next frame there, and at once elsewhere. `false`
    /// (the default) for the CPU solvers.
    fn solves_off_host(&self) -> bool {
        false
    }
    /// The residual of every distance constraint's XPBD equation after the last substep of the
    /// last frame — |C + α̃λ + γΔC|/L₀ and whether the constraint is compliance-dominated,
    /// see [`diagnostics`](crate::diagnostics) — into `out`; returns whether there is one.
    /// `false` (and `out` emptied) for solvers without multipliers (PBD, the force-based
    /// integrators: the default), and before the first frame or after a blow-up, a state
    /// written, a model changed or rebuilt. A GPU solver reads its state back for it (one
    /// read-back per call, none otherwise).
    fn constraint_residuals(&mut self, out: &mut crate::diagnostics::ConstraintResiduals) -> bool {
        out.clear();
        false
    }
    /// Whether a tear may be due after the last frame, as far as this solver could tell
    /// without reading its state back: `Some(false)` when every distance constraint was
    /// below the lowest breaking strain of a cloth that tears
    /// ([`tearing::lowest_breaking_strain`](crate::tearing::lowest_breaking_strain), less
    /// 10⁻⁴) at the end of the frame, so that [`tearing::strained`](crate::tearing::strained)
    /// would find nothing; `Some(true)` when some constraint came that close (the state must
    /// be read and checked: the bound is one for every body and family, so it may be set
    /// where nothing tears); `None` (the default) when the solver did not check — the CPU
    /// solvers, whose state is at hand, a model where nothing tears, a frame not stepped yet,
    /// a state written, a model rebuilt or its materials changed since, or a GPU solver that
    /// did not read its health record after this frame (`health_interval` above 1, a frame
    /// encoded by `encode_frame` rather than stepped).
    fn tear_check(&self) -> Option<bool> {
        None
    }
    /// Starts (`on`) or stops measuring the time spent in each stage of the substeps
    /// ([`stage_times`]); returns whether this solver measures them (`false`, the default, for
    /// solvers that cannot: the explicit integrators, whose stages are fused). Starting
    /// discards what was collected.
    fn measure_stages(&mut self, on: bool) -> bool {
        let _ = on;
        false
    }
    /// The time spent in each stage since measuring started or since the last call, which
    /// starts a new collection; `None` when not measuring or nothing was measured yet. A GPU
    /// solver reads its timestamps back for it (one read-back per call that returns some).
    fn take_stage_times(&mut self) -> Option<StageTimes> {
        None
    }
    /// The particle contacts' neighbour-list builds and overflowed member lists, summed since
    /// the solver was made or its contacts were remade (a material change, a rebuild): the
    /// totals of [`StepReport::contact_list_builds`] and
    /// [`StepReport::contact_list_overflows`], for a caller of a solver that fills those only
    /// in some reports (a GPU solver fills them where it reads its health record). `None`
    /// (the default) where every report carries them, as on the CPU, or without lists. A GPU
    /// solver reads them back (one read-back per call).
    fn contact_list_totals(&mut self) -> Option<(u64, u64)> {
        None
    }
}

/// Checks a tear's `parent` map ([`Solver::rebuild_torn`]): one entry per particle of `model`,
/// each below `before`, the particle count of the model torn.
pub fn check_parent(model: &Model, parent: &[u32], before: usize) -> Result<(), SolverError> {
    if parent.len() != model.particle_count() {
        return Err(SolverError::StateMismatch(format!(
            "the tear's parent map has {} entries for {} particles",
            parent.len(),
            model.particle_count()
        )));
    }
    if let Some(p) = parent.iter().position(|&q| q as usize >= before) {
        return Err(SolverError::StateMismatch(format!(
            "the tear's parent map gives particle {p} the particle {}, beyond the {before} before the tear",
            parent[p]
        )));
    }
    Ok(())
}

/// Refuses a model of several worlds for `solver`, which solves one.
pub(crate) fn one_world(model: &Model, solver: &str) -> Result<(), SolverError> {
    match model.worlds().len() {
        1 => Ok(()),
        n => Err(SolverError::InvalidSettings {
            setting: "worlds",
            message: format!("the model has {n} worlds and {solver} solve one: use XPBD or PBD"),
        }),
    }
}

/// The shortest frame time step (s) a solver takes: XPBD divides compliances by the square of
/// the substep, which for shorter frames (at up to a thousand substeps) would leave the range
/// of f32 — a step of 10⁻³⁸ s turned a valid model into NaN in its first projection.
pub const MIN_FRAME_DT: f32 = 1e-9;

/// Checks the inputs of [`Solver::step`]: a finite frame time step of at least
/// [`MIN_FRAME_DT`] and a finite wind (and gust). Every solver calls it first.
///
/// # Errors
/// [`SolverError::InvalidTimeStep`] or [`SolverError::InvalidSettings`] naming the wind.
pub fn check_step_inputs(control: &Control, frame_dt: f32) -> Result<(), SolverError> {
    if !(frame_dt.is_finite() && frame_dt >= MIN_FRAME_DT) {
        return Err(SolverError::InvalidTimeStep(frame_dt));
    }
    control.validate_wind().map_err(|message| SolverError::InvalidSettings { setting: "wind", message })
}

/// Checks that a state fits a model: one finite position and velocity per particle and a
/// finite time. Every solver's [`Solver::write_state`] calls it.
///
/// # Errors
/// [`SolverError::StateMismatch`] naming the first problem.
pub fn check_state(model: &Model, state: &State) -> Result<(), SolverError> {
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

/// Checks that `model` can replace `current` in [`Solver::notify_model_changed`].
///
/// # Errors
/// [`SolverError::TopologyChanged`].
pub fn check_same_topology(current: &Model, model: &Model) -> Result<(), SolverError> {
    if current.same_topology(model) {
        Ok(())
    } else {
        Err(SolverError::TopologyChanged(format!(
            "{} particles and {} constraints, the solver has {} and {}",
            model.particle_count(),
            model.constraint_count(),
            current.particle_count(),
            current.constraint_count()
        )))
    }
}
