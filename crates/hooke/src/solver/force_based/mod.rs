//! Force-based solvers: mass–spring cloth integrated with forward Euler, symplectic Euler,
//! Verlet or implicit Euler (article §1.2–2.3), on the same [`Model`] as XPBD.
//!
//! # The mass–spring system
//!
//! Every [`DistanceConstraint`](crate::model::DistanceConstraint) of the model is a Hooke
//! spring ([`Spring`], article §1.2–1.3) between particles i and j with rest length L₀ (m),
//! stiffness k = 1/α (N/m) from its compliance α (m/N) — separately in stretch and in
//! compression — and axial damping k_d = τ k (N·s/m) with τ the constraint's `damping` time
//! (s):
//!
//! fᵢ = −k(‖Δx‖ − L₀) Δx/‖Δx‖ − k_d ((vᵢ − vⱼ)·d̂) d̂ = −fⱼ,  Δx = xᵢ − xⱼ, d̂ = Δx/‖Δx‖.
//!
//! The damping acts only along the spring, so a rigid rotation is not damped (§1.3). A rigid
//! constraint (α = 0, k = ∞) has no force form: [`ForceSolver::new`] rejects it.
//!
//! The force on particle p of mass m_p (kg) is the sum of its springs, gravity m_p g and the
//! aerodynamic drag and lift of its triangles ([`aerodynamics`](crate::forces::aerodynamics), a
//! third of each triangle's force per vertex, with the frame's [`Control::wind`], limited for
//! the step h so that it never carries a particle past the wind:
//! [`limited_force`](crate::forces::aerodynamics::limited_force)); its acceleration is
//! a_p = g + f_p/m_p. An air damping rate c (1/s, [`ForceSettings::air_damping`]) multiplies
//! velocities by e^{−c h} per step of h seconds, so the decay e^{−c t} does not depend on the
//! frame rate.
//!
//! # One substep
//!
//! A frame of Δt is split into `substeps` steps of h = Δt/substeps. Each step:
//!
//! 1. **Forces.** Each triangle's aerodynamic force is computed once; then every particle
//!    gathers its springs' forces and its triangles' shares (`solver/spring_gather.rs`:
//!    each spring is evaluated from both ends, eight lanes at a time, so no two threads write
//!    the same particle and the sums do not depend on the number of threads).
//! 2. **Integrate** with the chosen [`Integrator`]:
//!    [forward Euler](super::forward_euler) x⁺ = x + h v, v⁺ = v + h a;
//!    [symplectic Euler](super::symplectic_euler) v⁺ = v + h a, x⁺ = x + h v⁺;
//!    [Verlet](super::verlet) x⁺ = x + (x − x⁻)e^{−c h} + a h²;
//!    [implicit Euler](super::implicit_euler) (M − h ∂f/∂v − h² ∂f/∂x) Δv = h (f + h ∂f/∂x v),
//!    solved by [filtered PCG](super::pcg).
//! 3. **Pins.** A pinned particle (w = 0) follows its target linearly over the frame's
//!    substeps, as in XPBD; its velocity is its displacement over h (implicit Euler prescribes
//!    that Δv through the filter of Baraff & Witkin §5.3).
//! 4. **Collide.** Each particle's displacement d of the step is pushed out of the colliders and
//!    reduced by Coulomb friction ([`crate::collision`]); the velocity then gets the same
//!    correction, v += Δd/h, so that it stays consistent with the corrected position (for Verlet
//!    v = d/h anyway).
//!
//! These are the [stages](super::stages) every solver runs (forces and integration are its
//! predict stage, step 4 its colliders stage, and x ← x + d its finish). For the explicit
//! integrators steps 1–4 run fused, particle by particle, in one pass that reads the state at
//! the start of the step and writes the next one into a second buffer (the two are then
//! swapped): one sweep over memory per substep ([`explicit_pass`]).
//!
//! **Precision.** Positions are `f32`; the step's displacement d is kept apart from x (as in
//! the XPBD kernels) so that collisions and Verlet's implicit velocity never difference two
//! rounded positions; the implicit solve is in `f64`.
//!
//! **Shared update rules.** Each integrator's update is a small generic function
//! ([`forward_euler::step`](super::forward_euler::step),
//! [`symplectic_euler::step`](super::symplectic_euler::step),
//! [`verlet::step`](super::verlet::step)) over [`Integrable`](super::integrate::Integrable) —
//! implemented for `f64`, `f32`, `Vec3`, `DVec3`. The solver's particle loop calls them with
//! `Vec3`/`f32`; the tests call the same functions with `f64` to check, e.g., forward Euler's
//! amplification √(1 + (ωh)²) to 1e-9, which `f32` positions could not show.
//!
//! # Failure
//!
//! Symplectic Euler and Verlet are stable only while hω_max < 2 for the stiffest vibration of
//! the model; [`ForceSolver::stable_step`] estimates 2/ω_max and a step beyond it is refused
//! ([`ForceSolver::check_step`]) before anything moves, unless
//! [`ForceSettings::check_stability`] is off.
//!
//! After every frame the state is checked for non-finite values, speeds above
//! [`ForceSettings::max_speed`] and structural strains above [`ForceSettings::max_strain`]. On
//! failure the frame is replayed sequentially from a snapshot with checks after each stage
//! (spring forces, aerodynamics, integration or linear solve, collisions) and
//! [`SolverError::BlowUp`] names the particle and, where one is at fault, the spring; the state
//! is left at the start of the frame.

pub(crate) mod explicit_pass;
mod stability;

use super::constraint_forces;
use super::health;
use super::implicit_euler::{ImplicitScratch, Tally};
use super::plan::SubstepPlan;
use super::spring_gather::{Phase, SpringGather};
use super::stage_times::{StageTimes, Stopwatch};
use super::stages::{self, Stage, predict::PinMove};
use super::state::SolverState;
use super::{SolverError, SolverInfo, StepReport, check_state};
use crate::collision::TriangleContact;
use crate::collision::self_collision::SelfCollision;
use crate::collision::{ColliderBroadPhase, Pose};
use crate::forces::spring::Spring;
use crate::{Control, Model, Solver, State};
use explicit_pass::{ExplicitPass, Forces, particle_chunk};
use glam::{Vec3, Vec4};
use rayon::prelude::*;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// The time integrator of a [`ForceSolver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Integrator {
    /// Forward Euler, x⁺ = x + h v, v⁺ = v + h a (article §2.1); unstable for undamped
    /// oscillation at any step. See [`forward_euler`](super::forward_euler).
    ForwardEuler,
    /// Symplectic Euler, v⁺ = v + h a, x⁺ = x + h v⁺; no energy drift, needs h < 2/ω_max. See
    /// [`symplectic_euler`](super::symplectic_euler).
    SymplecticEuler,
    /// Position Verlet with damping, x⁺ = x + (x − x⁻)(1 − damping) + a h² (article §2.3). See
    /// [`verlet`](super::verlet).
    Verlet,
    /// Linearised backward Euler of Baraff & Witkin 1998 (article §2.2), stable at large steps.
    /// See [`implicit_euler`](super::implicit_euler).
    ImplicitEuler,
}

impl Integrator {
    /// Every integrator, in the order of the article.
    pub const ALL: [Integrator; 4] =
        [Integrator::ForwardEuler, Integrator::SymplecticEuler, Integrator::Verlet, Integrator::ImplicitEuler];

    /// The name used in scene files and on the command line: `forward-euler`,
    /// `symplectic-euler`, `verlet` or `implicit-euler`.
    pub fn name(self) -> &'static str {
        match self {
            Integrator::ForwardEuler => "forward-euler",
            Integrator::SymplecticEuler => "symplectic-euler",
            Integrator::Verlet => "verlet",
            Integrator::ImplicitEuler => "implicit-euler",
        }
    }

    /// The solver name reported by [`Solver::info`]: the integrator's name followed by `-cpu`.
    pub fn solver_name(self) -> &'static str {
        match self {
            Integrator::ForwardEuler => "forward-euler-cpu",
            Integrator::SymplecticEuler => "symplectic-euler-cpu",
            Integrator::Verlet => "verlet-cpu",
            Integrator::ImplicitEuler => "implicit-euler-cpu",
        }
    }
}

impl fmt::Display for Integrator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Integrator {
    type Err = SolverError;

    /// Parses one of the names of [`Integrator::name`].
    ///
    /// # Errors
    /// [`SolverError::InvalidSettings`] (setting `integrator`) for any other string.
    fn from_str(s: &str) -> Result<Integrator, SolverError> {
        Integrator::ALL.into_iter().find(|i| i.name() == s).ok_or_else(|| SolverError::InvalidSettings {
            setting: "integrator",
            message: format!(
                "unknown integrator {s:?}; expected one of {}",
                Integrator::ALL.map(Integrator::name).join(", ")
            ),
        })
    }
}

/// Numerical settings of [`ForceSolver`]. Physical parameters (masses, stiffnesses, air)
/// live on the [`Model`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForceSettings {
    /// The time integrator.
    pub integrator: Integrator,
    /// Steps per frame, ≥ 1; the step is h = frame Δt / substeps.
    pub substeps: u32,
    /// Air damping rate c (1/s), finite and ≥ 0: velocities decay as e^{−c t}.
    pub air_damping: f32,
    /// Relative residual ‖S(b − AΔv)‖/‖S(b − Az)‖ at which conjugate gradient stops (implicit
    /// Euler only); in (0, 1).
    pub cg_tolerance: f64,
    /// Conjugate-gradient iteration limit per step, ≥ 1 (implicit Euler only). Reaching it is
    /// not an error: the residual reached is reported in [`StepReport::linear_residual`].
    pub cg_max_iterations: u32,
    /// Drop the negative transverse stiffness of compressed springs from ∂f/∂x (implicit Euler
    /// only; Choi & Ko 2002), which keeps the system matrix positive definite.
    pub clamp_compression: bool,
    /// Use the rayon thread pool for springs, particles and the linear solve on large models.
    pub parallel: bool,
    /// A particle faster than this (m/s) is reported as a blow-up; > 0.
    pub max_speed: f32,
    /// A structural strain (‖Δx‖ − L₀)/L₀ larger than this (dimensionless) is reported as a
    /// blow-up; > 0.
    pub max_strain: f32,
    /// Refuse a step beyond the stability limit of symplectic Euler and Verlet, h ω_max < 2
    /// (see [`ForceSolver::stable_step`]), with [`SolverError::InvalidSettings`] instead of
    /// running away. Off only to demonstrate the instability.
    pub check_stability: bool,
}

impl Default for ForceSettings {
    /// Symplectic Euler with 16 substeps, no air damping, CG to 1e-6 in at most 200
    /// iterations, compression clamped, parallel, blow-up at 500 m/s or 1 000 % strain,
    /// steps beyond the stability limit refused.
    fn default() -> Self {
        ForceSettings {
            integrator: Integrator::SymplecticEuler,
            substeps: 16,
            air_damping: 0.0,
            cg_tolerance: 1e-6,
            cg_max_iterations: 200,
            clamp_compression: true,
            parallel: true,
            max_speed: 500.0,
            max_strain: 10.0,
            check_stability: true,
        }
    }
}

impl ForceSettings {
    /// Checks the settings: 1–100 000 substeps, a finite air damping rate ≥ 0, a CG tolerance
    /// in (0, 1), at least one CG iteration and blow-up limits > 0.
    ///
    /// # Errors
    /// [`SolverError::InvalidSettings`] naming the setting.
    pub fn validate(&self) -> Result<(), SolverError> {
        let bad = |setting, message: String| Err(SolverError::InvalidSettings { setting, message });
        if !(1..=100_000).contains(&self.substeps) {
            return bad("substeps", format!("must be between 1 and 100000, got {}", self.substeps));
        }
        if !(self.air_damping.is_finite() && self.air_damping >= 0.0) {
            return bad("air_damping", format!("must be a finite rate ≥ 0 (1/s), got {}", self.air_damping));
        }
        if !(self.cg_tolerance > 0.0 && self.cg_tolerance < 1.0) {
            return bad("cg_tolerance", format!("must be a relative residual in (0, 1), got {}", self.cg_tolerance));
        }
        if self.cg_max_iterations == 0 {
            return bad("cg_max_iterations", "must be ≥ 1".into());
        }
        if self.max_speed.is_nan() || self.max_speed <= 0.0 || self.max_strain.is_nan() || self.max_strain <= 0.0 {
            return bad("max_speed/max_strain", "must be > 0".into());
        }
        Ok(())
    }
}

/// Fewest particles per parallel task.
const MIN_PARTICLE_CHUNK: usize = 256;
/// Most particles per parallel task.
const MAX_PARTICLE_CHUNK: usize = 4096;

/// A copy of the state at the start of a frame.
#[derive(Clone, Debug, Default)]
pub(in crate::solver) struct Snapshot {
    state: SolverState,
    step: Vec<Vec3>,
    step_h: f32,
    dv: Vec<glam::DVec3>,
    collider_pose: Vec<Pose>,
}

/// The force-based CPU solver: mass–spring cloth with forward Euler, symplectic Euler, Verlet
/// or implicit Euler. See the [module documentation](self).
pub struct ForceSolver {
    pub(in crate::solver) model: Arc<Model>,
    pub(in crate::solver) settings: ForceSettings,
    /// One spring per distance constraint of the model.
    pub(in crate::solver) springs: Vec<Spring>,
    /// Each particle's springs in blocks of four: what the force loop streams.
    pub(in crate::solver) gather: SpringGather,
    /// Positions and velocities as the force loop reads them: `phase[0]` the current state,
    /// `phase[1]` the next one being written (explicit integrators), then swapped.
    pub(in crate::solver) phase: [Vec<Phase>; 2],
    /// Positions (x⁰, w = 0 while pinned), the substep's displacement d, velocities and time.
    pub(in crate::solver) state: SolverState,
    /// Verlet's last step displacement x − x⁻ (m), per particle.
    pub(in crate::solver) step: Vec<Vec3>,
    /// The step (s) that `step` was taken over (Verlet); 0 when it must be derived from v.
    pub(in crate::solver) step_h: f32,
    /// Force on particle p without gravity (N): springs and aerodynamics.
    pub(in crate::solver) force: Vec<Vec3>,
    /// A third of each triangle's aerodynamic force (N, xyz) and drag rate (kg/s, w).
    pub(in crate::solver) triangle_force: Vec<Vec4>,
    /// Force of the angle sets (cloth hinges, rope joints) per particle (N); empty for a model
    /// without them.
    pub(in crate::solver) angle_force: Vec<Vec3>,
    pub(in crate::solver) pinned: Vec<bool>,
    pub(in crate::solver) implicit: Option<Box<ImplicitScratch>>,
    /// The particle contacts (self-collision; implicit Euler only).
    pub(in crate::solver) self_collision: SelfCollision,
    /// The cloth triangles' virtual particles against the colliders (implicit Euler only: the
    /// explicit integrators' fused pass has particles alone).
    pub(in crate::solver) triangle_contact: TriangleContact,
    /// Each collider's pose at the end of the last frame.
    collider_pose: Vec<Pose>,
    snapshot: Option<Snapshot>,
    /// 2/ω_max (s): see [`ForceSolver::stable_step`].
    stable_step: f64,
    /// The stage times collected while measuring (implicit Euler only; see
    /// [`Solver::measure_stages`]).
    stage_times: Option<StageTimes>,
}

impl ForceSolver {
    /// A solver starting from the model's initial state.
    ///
    /// # Errors
    /// [`SolverError::InvalidSettings`] for settings out of range
    /// ([`ForceSettings::validate`]), or (setting `integrator`) a rigid constraint (compliance
    /// 0), which has no spring force; the message names the constraint, its family and
    /// particles.
    pub fn new(model: Arc<Model>, settings: ForceSettings) -> Result<ForceSolver, SolverError> {
        settings.validate()?;
        super::one_world(&model, "the force-based integrators")?;
        let springs = springs_of(&model)?;
        check_angle_compliance(&model)?;
        let self_collision = self_collision_of(&model, settings.integrator)?;
        let limit = stability::stable_step(&model, &springs);
        let angles = !model.dihedral().is_empty() || !model.rope_bending().is_empty();
        let n = model.particle_count();
        let implicit =
            (settings.integrator == Integrator::ImplicitEuler).then(|| Box::new(ImplicitScratch::new(&model)));
        Ok(ForceSolver {
            gather: SpringGather::new(n, model.distance().constraints(), &springs),
            phase: [Vec::with_capacity(n), Vec::with_capacity(n)],
            springs,
            state: SolverState::from_model(&model),
            step: vec![Vec3::ZERO; n],
            step_h: 0.0,
            force: vec![Vec3::ZERO; n],
            triangle_force: vec![Vec4::ZERO; model.triangles().len()],
            angle_force: if angles { vec![Vec3::ZERO; n] } else { Vec::new() },
            pinned: vec![false; n],
            implicit,
            self_collision,
            triangle_contact: TriangleContact::new(&model),
            collider_pose: vec![Pose::IDENTITY; model.colliders().len()],
            snapshot: None,
            stable_step: limit,
            stage_times: None,
            settings,
            model,
        })
    }

    /// The stability limit (s) of symplectic Euler and Verlet on this model: the largest step h
    /// at which the stiffest vibration still oscillates instead of growing (article §2.1–2.3;
    /// for the undamped oscillator the step matrix has eigenvalues on the unit circle only
    /// while hω < 2). ω_max² is the largest eigenvalue of M⁻¹K, with K the stiffness matrix
    /// Σ k n nᵀ of the springs and angle constraints at the model's initial positions (the
    /// stiffer of stretch and compression), estimated by 40 steps of power iteration on the
    /// symmetric W^½ K W^½ (W = M⁻¹): the estimate approaches ω_max from below, so h₀ = 2/ω_max
    /// is never too strict. The axial damping −τk(Δv·n)n lowers it to √(τ² + h₀²) − τ, τ the
    /// largest damping time (s) of the model's springs and angles (the mode's damping rate
    /// τω²; the derivation is at `stability::damped_limit`): at τ = 10⁻³ s a stiff cloth
    /// whose undamped limit is 0.28 ms needs 7× the substeps. The transverse stiffness of
    /// stretched springs is left out. `f64::INFINITY` for a model without springs between free
    /// particles.
    pub fn stable_step(&self) -> f64 {
        self.stable_step
    }

    /// Checks a frame of `frame_dt` seconds against [`stable_step`](Self::stable_step) when the
    /// integrator is symplectic Euler or Verlet and `check_stability` is on; a step up to 10 %
    /// over the estimate passes (pins can lower ω_max a little below the estimate).
    ///
    /// # Errors
    /// [`SolverError::InvalidSettings`] (setting `substeps`) naming the step, the limit and the
    /// substeps needed.
    pub fn check_step(&self, frame_dt: f32) -> Result<(), SolverError> {
        let s = &self.settings;
        if !s.check_stability || !matches!(s.integrator, Integrator::SymplecticEuler | Integrator::Verlet) {
            return Ok(());
        }
        let h = frame_dt as f64 / s.substeps as f64;
        if h <= 1.1 * self.stable_step {
            return Ok(());
        }
        let needed = (frame_dt as f64 / self.stable_step).ceil();
        Err(SolverError::InvalidSettings {
            setting: "substeps",
            message: format!(
                "{} is unstable at this step: h = {h:.3e} s ({} substeps of a {frame_dt} s frame) exceeds \
                 the limit {:.3e} s of the model's stiffest vibration (2/ω_max less for the springs' damping); \
                 use at least {needed} substeps, implicit Euler or XPBD",
                s.integrator, s.substeps, self.stable_step,
            ),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &ForceSettings {
        &self.settings
    }

    /// Implicit Euler only: the velocity change Δv (m/s, f64, one per particle) of the last
    /// substep's linear solve — on pinned particles the prescribed values — for checking the
    /// solve against an independent assembly of (M − h ∂f/∂v − h² ∂f/∂x) Δv = h (f + h ∂f/∂x v).
    /// `None` for the other integrators.
    pub fn implicit_velocity_change(&self) -> Option<&[glam::DVec3]> {
        self.implicit.as_ref().map(|s| &s.dv[..])
    }

    /// The force on each particle (N, one per particle) of the last force evaluation of
    /// implicit Euler — springs and aerodynamics, without gravity — the f of its last system.
    /// Empty for the explicit integrators, which fuse the force into their particle pass.
    pub fn implicit_forces(&self) -> &[Vec3] {
        if self.implicit.is_some() { &self.force } else { &[] }
    }

    /// Current velocities (m/s), one per particle, without copying. For Verlet this is
    /// (x⁺ − x)/h of the last step (see [`verlet`](super::verlet)).
    pub fn velocities(&self) -> &[Vec3] {
        &self.state.velocity
    }

    /// Sets w = 0 and the pinned flag on the plan's pins; returns their paths.
    fn begin_pins(&mut self, plan: &SubstepPlan) -> Vec<PinMove> {
        self.state.reset_inverse_masses(&self.model);
        self.pinned.iter_mut().for_each(|p| *p = false);
        for pin in &plan.pins {
            self.pinned[pin.particle as usize] = true;
        }
        stages::predict::begin_pins(&mut self.state, &plan.pins)
    }

    /// Copies positions and velocities into `phase[0]`, the records the force loop reads.
    pub(in crate::solver) fn pack(&mut self) {
        let phase = &mut self.phase[0];
        phase.clear();
        phase.extend(
            self.state.particles.iter().zip(&self.state.velocity).map(|(p, v)| Phase { x: p.x, v: v.extend(0.0) }),
        );
    }

    /// Fills `triangle_force` with a third of each triangle's aerodynamic force (N) and drag
    /// rate (kg/s) for the state in `phase[0]`; returns whether aerodynamics are on.
    pub(in crate::solver) fn triangle_forces(&mut self, wind: Vec3, parallel: bool) -> bool {
        let model = &*self.model;
        if !model.air().is_active() || model.triangles().is_empty() {
            return false;
        }
        let phase = &self.phase[0];
        let (x, v) = (|k: usize| phase[k].x.truncate(), |k: usize| phase[k].v.truncate());
        stages::aerodynamics::triangle_forces(
            model,
            std::slice::from_ref(&wind),
            x,
            v,
            &mut self.triangle_force,
            parallel,
        );
        true
    }

    /// Fills `angle_force` with the forces of the angle sets for the state in `phase[0]`;
    /// returns whether the model has any.
    pub(in crate::solver) fn angle_forces(&mut self, parallel: bool) -> bool {
        if self.angle_force.is_empty() {
            return false;
        }
        let phase = &self.phase[0];
        let (x, v) = (|k: usize| phase[k].x.truncate(), |k: usize| phase[k].v.truncate());
        self.angle_force.iter_mut().for_each(|f| *f = Vec3::ZERO);
        let model = &*self.model;
        constraint_forces::add_set_forces(model.dihedral(), &x, &v, &mut self.angle_force, parallel);
        constraint_forces::add_set_forces(model.rope_bending(), &x, &v, &mut self.angle_force, parallel);
        true
    }

    /// One frame of the plan; with `trace` it runs sequentially and checks after every stage.
    fn frame(&mut self, plan: &SubstepPlan, trace: bool) -> Result<StepReport, SolverError> {
        let s = self.settings;
        let parallel = s.parallel && !trace;
        let pins = self.begin_pins(plan);
        let mut report = StepReport { substeps: s.substeps, iterations: 1, ..StepReport::default() };
        let list_builds = self.self_collision.list_builds().0;
        if s.integrator == Integrator::ImplicitEuler {
            let times = StageTimes { frames: 1, substeps: s.substeps, ..StageTimes::default() };
            let watch = Stopwatch::new(self.stage_times.is_some() && !trace);
            let mut tally = Tally { report, times, watch };
            tally.watch.lap(&mut tally.times, None);
            for sub in 0..plan.substeps() {
                self.implicit_substep(plan, sub, &pins, parallel, trace, &mut tally)?;
            }
            report = tally.report;
            if let (Some(total), false) = (&mut self.stage_times, trace) {
                total.merge(&tally.times);
            }
        } else {
            self.explicit_frame(plan, &pins, parallel, trace, &mut report)?;
        }
        report.contact_list_builds = (self.self_collision.list_builds().0 - list_builds) as u32;
        self.state.time += plan.frame_dt as f64;
        self.collider_pose.clone_from(&plan.collider_end);
        Ok(report)
    }

    /// The substeps of an explicit integrator, each one fused pass (see [`explicit_pass`]).
    fn explicit_frame(
        &mut self,
        plan: &SubstepPlan,
        pins: &[PinMove],
        parallel: bool,
        trace: bool,
        report: &mut StepReport,
    ) -> Result<(), SolverError> {
        let h = plan.h;
        let inv_h = plan.inv_h;
        let model = Arc::clone(&self.model);
        if self.settings.integrator == Integrator::Verlet {
            // Time-corrected Verlet: keep d/h the velocity when the step changes.
            if self.step_h == 0.0 {
                self.step.iter_mut().zip(&self.state.velocity).for_each(|(d, v)| *d = *v * h);
            } else if self.step_h != h {
                let ratio = h / self.step_h;
                self.step.iter_mut().for_each(|d| *d *= ratio);
            }
            self.step_h = h;
        }
        self.pack();
        for (sub, slot) in plan.slots.iter().enumerate() {
            let aero = self.triangle_forces(slot.wind, parallel);
            let angles = self.angle_forces(parallel);
            let [old, new] = &mut self.phase;
            let broad = ColliderBroadPhase::new(model.colliders(), plan.placements(sub as u32));
            let pass = ExplicitPass {
                forces: Forces {
                    model: &model,
                    gather: &self.gather,
                    phase: old,
                    aero: aero.then_some(&self.triangle_force[..]),
                    h,
                    angles: angles.then_some(&self.angle_force[..]),
                },
                pinned: &self.pinned,
                placements: plan.placements(sub as u32),
                broad: &broad,
                integrator: self.settings.integrator,
                gravity: model.gravity().extend(0.0),
                h,
                inv_h,
                retain: plan.decay,
            };
            new.resize(old.len(), Phase::default());
            report.contacts = match particle_chunk(old.len(), parallel) {
                Some(c) => new
                    .par_chunks_mut(c)
                    .zip(self.step.par_chunks_mut(c))
                    .enumerate()
                    .map(|(k, (new, d))| pass.run(k * c, new, d))
                    .sum(),
                None => pass.run(0, new, &mut self.step),
            };
            for pin in pins {
                let p = pin.particle as usize;
                let x = old[p].x.truncate();
                let d = pin.start.lerp(pin.target, slot.frac) - x;
                self.step[p] = d;
                new[p] = Phase { x: (x + d).extend(old[p].x.w), v: (d * inv_h).extend(0.0) };
            }
            if trace && let Some(p) = new.iter().position(|q| !q.x.is_finite() || !q.v.is_finite()) {
                return Err(self.diagnose(slot.t0, p, aero));
            }
            self.phase.swap(0, 1);
        }
        let phase = &self.phase[0];
        for ((p, v), q) in self.state.particles.iter_mut().zip(&mut self.state.velocity).zip(phase) {
            p.x = q.x;
            *v = q.v.truncate();
        }
        Ok(())
    }

    /// The blow-up error for particle `p`, found non-finite after a traced step from the state
    /// in `phase[0]`: names the first of its springs whose force is not finite, else its
    /// aerodynamic force, else the stage that followed.
    pub(in crate::solver) fn diagnose(&self, time: f64, p: usize, aero: bool) -> SolverError {
        let q = &self.phase[0];
        let set = self.model.distance();
        for &k in set.particle_constraints(p) {
            let k = k as usize;
            let c = set.constraints()[k];
            let (i, j) = (c.i as usize, c.j as usize);
            let f = self.springs[k].force((q[i].x - q[j].x).truncate(), (q[i].v - q[j].v).truncate());
            if !f.is_finite() {
                let fam = set.families()[k].name();
                let what = format!("in the force of {fam} spring {k} (particles {}–{})", c.i, c.j);
                return self.blow_up(time, c.i, Some(k), what);
            }
        }
        let tf = &self.triangle_force;
        if aero && !self.model.particle_triangles(p).iter().all(|&t| tf[t as usize].is_finite()) {
            return self.blow_up(time, p as u32, None, "in the aerodynamic forces".into());
        }
        if self.angle_force.get(p).is_some_and(|f| !f.is_finite()) {
            return self.blow_up(time, p as u32, None, "in the bending forces".into());
        }
        let stage = match self.settings.integrator {
            Integrator::ImplicitEuler => "the force evaluation",
            _ => "the integration step or collision handling",
        };
        self.blow_up(time, p as u32, None, format!("in {stage}"))
    }

    pub(in crate::solver) fn check_finite(&self, time: f64, stage: Stage) -> Result<(), SolverError> {
        match self.state.first_non_finite() {
            Some(k) => Err(self.blow_up(time, k as u32, None, format!("in {}", stage.describe()))),
            None => Ok(()),
        }
    }

    pub(in crate::solver) fn blow_up(
        &self,
        time: f64,
        particle: u32,
        constraint: Option<usize>,
        what: String,
    ) -> SolverError {
        health::non_finite(&self.model, time, particle, constraint, what)
    }

    /// Looks for a runaway after a frame: non-finite values, speed or strain over the limits.
    /// Returns the particle, the constraint if any, and a description of the first problem.
    fn health(&self) -> Option<(u32, Option<usize>, String)> {
        let limits = health::Limits { max_speed: self.settings.max_speed, max_strain: self.settings.max_strain };
        let parallel = self.settings.parallel && self.state.particles.len() >= 4096;
        let (p, pinned) = (&self.state.particles, &self.pinned);
        health::check(
            &self.model,
            |k| p[k].position(),
            &self.state.velocity,
            |q| pinned[q as usize],
            limits,
            parallel,
            "spring",
        )
    }

    fn save(&mut self) -> Snapshot {
        let mut snap = self.snapshot.take().unwrap_or_default();
        snap.state.clone_from(&self.state);
        snap.step.clone_from(&self.step);
        snap.step_h = self.step_h;
        snap.collider_pose.clone_from(&self.collider_pose);
        if let Some(s) = &self.implicit {
            snap.dv.clone_from(&s.dv);
        }
        snap
    }

    fn restore(&mut self, snap: &Snapshot) {
        self.state.clone_from(&snap.state);
        self.step.clone_from(&snap.step);
        self.step_h = snap.step_h;
        self.collider_pose.clone_from(&snap.collider_pose);
        if let Some(s) = &mut self.implicit {
            s.dv.clone_from(&snap.dv);
        }
    }
}

/// Refuses rigid angle constraints (α = 0), which have no force form.
/// The particle contacts of `model`; an error for an explicit integrator, whose fused
/// particle pass has no contacts stage.
fn self_collision_of(model: &Model, integrator: Integrator) -> Result<SelfCollision, SolverError> {
    let contacts = SelfCollision::new(model);
    if contacts.is_active() && integrator != Integrator::ImplicitEuler {
        let body = model.bodies().iter().find(|b| b.self_collision());
        return Err(SolverError::InvalidSettings {
            setting: "integrator",
            message: format!(
                "body {:?} has self_collision on, which {} does not support; use XPBD, PBD or implicit Euler",
                body.map_or("?", |b| &b.name),
                integrator.name()
            ),
        });
    }
    Ok(contacts)
}

fn check_angle_compliance(model: &Model) -> Result<(), SolverError> {
    let rigid = |what: &str, k: usize, particles: &[u32]| SolverError::InvalidSettings {
        setting: "integrator",
        message: format!(
            "bending {what} {k} (particles {particles:?}) is rigid (bending_modulus = inf): a force-based \
             integrator needs a finite bending stiffness; give the material a finite bending_modulus or use XPBD"
        ),
    };
    if let Some(k) = model.dihedral().constraints().iter().position(|c| c.compliance <= 0.0) {
        return Err(rigid("hinge", k, &model.dihedral().constraints()[k].particles));
    }
    if let Some(k) = model.rope_bending().constraints().iter().position(|c| c.compliance <= 0.0) {
        return Err(rigid("joint", k, &model.rope_bending().constraints()[k].particles));
    }
    Ok(())
}

/// The springs of a model's constraints: k = 1/α in stretch and compression, τ = damping.
fn springs_of(model: &Model) -> Result<Vec<Spring>, SolverError> {
    let stiffness = |alpha: f32| if alpha > 0.0 { Some(1.0 / alpha).filter(|k: &f32| k.is_finite()) } else { None };
    model
        .distance()
        .constraints()
        .iter()
        .zip(model.distance().families())
        .enumerate()
        .map(|(k, (c, f))| match (stiffness(c.compliance_stretch), stiffness(c.compliance_compression)) {
            (Some(ks), Some(kc)) => Ok(Spring {
                rest_length: c.rest_length,
                stiffness_stretch: ks,
                stiffness_compression: kc,
                damping: c.damping,
            }),
            _ => Err(SolverError::InvalidSettings {
                setting: "integrator",
                message: format!(
                    "{} constraint {k} (particles {}–{}) is rigid or too stiff (compliance {} m/N in stretch, {} m/N \
                     in compression): a force-based integrator needs a finite stiffness k = 1/α in both; give the \
                     material a finite stiffness or use XPBD",
                    f.name(),
                    c.i,
                    c.j,
                    c.compliance_stretch,
                    c.compliance_compression
                ),
            }),
        })
        .collect()
}

impl Solver for ForceSolver {
    /// Name `forward-euler-cpu`, `symplectic-euler-cpu`, `verlet-cpu` or `implicit-euler-cpu`;
    /// one iteration per substep (one force evaluation, or one linearised solve whose CG
    /// iterations are reported in [`StepReport::linear_iterations`]).
    fn info(&self) -> SolverInfo {
        SolverInfo {
            name: self.settings.integrator.solver_name().into(),
            substeps: self.settings.substeps,
            iterations: 1,
            parallel: self.settings.parallel,
        }
    }

    fn model(&self) -> &Arc<Model> {
        &self.model
    }

    fn time(&self) -> f64 {
        self.state.time
    }

    fn step(&mut self, control: &Control, frame_dt: f32) -> Result<StepReport, SolverError> {
        let s = &self.settings;
        let plan = SubstepPlan::new(
            &self.model,
            control,
            self.state.time,
            frame_dt,
            s.substeps,
            s.air_damping,
            &self.collider_pose,
        )?;
        self.check_step(frame_dt)?;
        let snap = self.save();
        let report = self.frame(&plan, false)?;
        let Some((particle, constraint, what)) = self.health() else {
            self.snapshot = Some(snap);
            return Ok(report);
        };
        // Replay the frame sequentially with checks to find where it started.
        self.restore(&snap);
        let traced = self.frame(&plan, true);
        self.restore(&snap);
        self.snapshot = Some(snap);
        Err(match traced {
            Err(e) => e,
            Ok(_) => SolverError::BlowUp { time: self.state.time, particle, constraint, detail: what },
        })
    }

    fn read_positions(&mut self, out: &mut Vec<Vec3>) {
        self.state.read_positions(out);
    }

    fn read_state(&mut self, out: &mut State) {
        self.state.read(out);
    }

    fn write_state(&mut self, state: &State) -> Result<(), SolverError> {
        check_state(&self.model, state)?;
        self.state.write(state);
        self.step.iter_mut().for_each(|d| *d = Vec3::ZERO);
        self.step_h = 0.0;
        if let Some(s) = &mut self.implicit {
            s.dv.iter_mut().for_each(|d| *d = glam::DVec3::ZERO);
        }
        Ok(())
    }

    fn notify_model_changed(&mut self, model: Arc<Model>) -> Result<(), SolverError> {
        super::check_same_topology(&self.model, &model)?;
        let springs = springs_of(&model)?;
        self.stable_step = stability::stable_step(&model, &springs);
        self.gather = SpringGather::new(model.particle_count(), model.distance().constraints(), &springs);
        self.springs = springs;
        self.self_collision = self_collision_of(&model, self.settings.integrator)?;
        self.triangle_contact = TriangleContact::new(&model);
        if let Some(s) = &mut self.implicit {
            // The pattern is the same; the warm start carries over.
            let dv = std::mem::take(&mut s.dv);
            **s = ImplicitScratch::new(&model);
            s.dv = dv;
        }
        self.state.reset_inverse_masses(&model);
        self.model = model;
        Ok(())
    }

    fn rebuild(&mut self, model: Arc<Model>, state: &State) -> Result<(), SolverError> {
        check_state(&model, state)?;
        let mut fresh = ForceSolver::new(model, self.settings)?;
        fresh.write_state(state)?;
        // The colliders go on from where they are, when the model keeps them.
        if fresh.collider_pose.len() == self.collider_pose.len() {
            fresh.collider_pose.clone_from(&self.collider_pose);
        }
        fresh.stage_times = self.stage_times.take();
        *self = fresh;
        Ok(())
    }

    /// Implicit Euler only: the explicit integrators fuse their stages into one pass.
    fn measure_stages(&mut self, on: bool) -> bool {
        let able = self.settings.integrator == Integrator::ImplicitEuler;
        self.stage_times = (on && able).then(StageTimes::default);
        able
    }

    fn take_stage_times(&mut self) -> Option<StageTimes> {
        let times = self.stage_times.as_mut()?;
        (times.frames > 0).then(|| std::mem::take(times))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrator_names_round_trip() {
        for i in Integrator::ALL {
            assert_eq!(i.name().parse::<Integrator>().unwrap(), i);
            assert_eq!(i.to_string(), i.name());
            assert_eq!(i.solver_name(), format!("{}-cpu", i.name()));
        }
        let e = "rk4".parse::<Integrator>().unwrap_err().to_string();
        assert!(e.contains("rk4") && e.contains("implicit-euler"), "{e}");
    }
}
