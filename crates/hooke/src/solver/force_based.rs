//! Force-based solvers: mass–spring cloth integrated with forward Euler, symplectic Euler,
//! Verlet or implicit Euler (article §1.2–2.3), on the same [`Model`] as XPBD.
//!
//! # The mass–spring system
//!
//! Every [`DistanceConstraint`] of the model is a Hooke spring ([`Spring`], article §1.2–1.3)
//! between particles i and j with rest length L₀ (m), stiffness k = 1/α (N/m) from its
//! compliance α (m/N) — separately in stretch and in compression — and axial damping
//! k_d = τ k (N·s/m) with τ the constraint's `damping` time (s):
//!
//! fᵢ = −k(‖Δx‖ − L₀) Δx/‖Δx‖ − k_d ((vᵢ − vⱼ)·d̂) d̂ = −fⱼ,  Δx = xᵢ − xⱼ, d̂ = Δx/‖Δx‖.
//!
//! The damping acts only along the spring, so a rigid rotation is not damped (§1.3). A rigid
//! constraint (α = 0, k = ∞) has no force form: [`ForceSolver::new`] rejects it.
//!
//! The force on particle p of mass m_p (kg) is the sum of its springs, gravity m_p g and the
//! aerodynamic drag and lift of its triangles ([`aerodynamics`], a third of each triangle's
//! force per vertex, with the frame's [`Control::wind`]); its acceleration is
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
//!    [forward Euler](super::explicit_euler) x⁺ = x + h v, v⁺ = v + h a;
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
//! For the explicit integrators steps 1–4 run fused, particle by particle, in one pass that
//! reads the state at the start of the step and writes the next one into a second buffer
//! (the two are then swapped): one sweep over memory per substep.
//!
//! **Precision.** Positions are `f32`; the step's displacement d is kept apart from x (as in
//! the XPBD kernels) so that collisions and Verlet's implicit velocity never difference two
//! rounded positions; the implicit solve is in `f64`.
//!
//! **Shared update rules.** Each integrator's update is a small generic function
//! ([`explicit_euler::step`],
//! [`symplectic_euler::step`],
//! [`verlet::step`]) over [`Integrable`] — implemented for `f64`, `f32`,
//! `Vec3`, `DVec3`. The solver's particle loop calls them with `Vec3`/`f32`; the tests call the
//! same functions with `f64` to check, e.g., forward Euler's amplification √(1 + (ωh)²) to
//! 1e-9, which `f32` positions could not show.
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

use super::health;
use super::implicit_euler::{ImplicitScratch, ImplicitStep};
use super::pcg::PcgSettings;
use super::spring_gather::{PairVisitor, Phase, SpringGather};
use super::{SolverError, SolverInfo, StepReport, check_state, explicit_euler, symplectic_euler, verlet};
use crate::collision::{self, ColliderStep};
use crate::forces::aerodynamics;
use crate::forces::spring::Spring;
use crate::model::DistanceConstraint;
use crate::{Control, Model, Solver, State};
use glam::{DVec3, Vec3, Vec4};
use rayon::prelude::*;
use std::fmt;
use std::ops::Range;
use std::ops::{Add, Mul};
use std::str::FromStr;
use std::sync::Arc;

/// A value the integrator rules can advance: positions, velocities or displacements, with
/// `S` the scalar type of time. Implemented for `f64` and `f32` (reference tests), and for
/// `Vec3` and `DVec3` (the solvers), by the blanket impl.
pub trait Integrable<S>: Copy + Add<Output = Self> + Mul<S, Output = Self> {}

impl<T, S> Integrable<S> for T where T: Copy + Add<Output = T> + Mul<S, Output = T> {}

/// Velocity retention e^{−c h} of an air damping rate `rate` c (1/s) over a step of `h` (s):
/// the factor velocities are multiplied by each step, so the decay e^{−c t} does not depend on
/// the step.
#[inline]
pub fn velocity_retention(rate: f32, h: f32) -> f32 {
    (-rate * h).exp()
}

/// The time integrator of a [`ForceSolver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Integrator {
    /// Forward Euler, x⁺ = x + h v, v⁺ = v + h a (article §2.1); unstable for undamped
    /// oscillation at any step. See [`explicit_euler`].
    ForwardEuler,
    /// Symplectic Euler, v⁺ = v + h a, x⁺ = x + h v⁺; no energy drift, needs h < 2/ω_max. See
    /// [`symplectic_euler`].
    SymplecticEuler,
    /// Position Verlet with damping, x⁺ = x + (x − x⁻)(1 − damping) + a h² (article §2.3). See
    /// [`verlet`].
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
    fn validate(&self) -> Result<(), SolverError> {
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

/// One end of a spring, as seen from a particle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Incidence {
    /// Index of the spring (constraint).
    pub constraint: u32,
    /// The particle at the other end.
    pub other: u32,
    /// +1 if this particle is the spring's i (the spring force is on i), −1 if it is j.
    pub sign: f32,
}

/// Fewest particles per parallel task.
const MIN_PARTICLE_CHUNK: usize = 256;
/// Most particles per parallel task.
const MAX_PARTICLE_CHUNK: usize = 4096;
/// Below this many springs (or triangles) their loop runs on the calling thread.
const PARALLEL_MIN_ITEMS: usize = 4096;

/// A copy of the state at the start of a frame.
#[derive(Clone, Debug, Default)]
struct Snapshot {
    x: Vec<Vec3>,
    v: Vec<Vec3>,
    d: Vec<Vec3>,
    d_h: f32,
    dv: Vec<glam::DVec3>,
    time: f64,
}

/// The force-based CPU solver: mass–spring cloth with forward Euler, symplectic Euler, Verlet
/// or implicit Euler. See the [module documentation](self).
pub struct ForceSolver {
    model: Arc<Model>,
    settings: ForceSettings,
    /// One spring per model constraint.
    springs: Vec<Spring>,
    /// Each particle's springs in blocks of four: what the force loop streams.
    gather: SpringGather,
    /// Positions and velocities as the force loop reads them: `phase[0]` the current state,
    /// `phase[1]` the next one being written (explicit integrators), then swapped.
    phase: [Vec<Phase>; 2],
    /// Particle p's springs are `incidence[incidence_offsets[p]..incidence_offsets[p + 1]]`.
    incidence_offsets: Vec<u32>,
    incidence: Vec<Incidence>,
    x: Vec<Vec3>,
    v: Vec<Vec3>,
    /// Displacement of the current step (m); for Verlet also the previous one, x − x⁻.
    d: Vec<Vec3>,
    /// The step (s) that `d` was taken over (Verlet); 0 when d must be derived from v.
    d_h: f32,
    /// Force on particle p without gravity (N): springs and aerodynamics.
    force: Vec<Vec3>,
    /// A third of each triangle's aerodynamic force (N).
    triangle_force: Vec<Vec3>,
    pinned: Vec<bool>,
    /// Pinned particles with their positions at the start of the frame and their targets.
    pin_start: Vec<(u32, Vec3, Vec3)>,
    implicit: Option<Box<ImplicitScratch>>,
    time: f64,
    snapshot: Option<Snapshot>,
    /// 2/ω_max (s): see [`ForceSolver::stable_step`].
    stable_step: f64,
}

impl ForceSolver {
    /// A solver starting from the model's initial state.
    ///
    /// # Errors
    /// [`SolverError::InvalidSettings`] for zero substeps or CG iterations, a negative or
    /// non-finite air damping, a CG tolerance outside (0, 1), non-positive blow-up limits, or
    /// (setting `integrator`) a rigid constraint (compliance 0), which has no spring force; the
    /// message names the constraint, its family and particles.
    pub fn new(model: Arc<Model>, settings: ForceSettings) -> Result<ForceSolver, SolverError> {
        settings.validate()?;
        let springs = springs_of(&model)?;
        let limit = stable_step(&model, &springs);
        let n = model.particle_count();
        let (incidence_offsets, incidence) = incidence_of(n, model.constraints());
        let implicit = (settings.integrator == Integrator::ImplicitEuler)
            .then(|| Box::new(ImplicitScratch::new(&model, &incidence_offsets, &incidence)));
        Ok(ForceSolver {
            gather: SpringGather::new(n, model.constraints(), &springs),
            phase: [Vec::with_capacity(n), Vec::with_capacity(n)],
            springs,
            incidence_offsets,
            incidence,
            x: model.particle_position().to_vec(),
            v: model.particle_velocity().to_vec(),
            d: vec![Vec3::ZERO; n],
            d_h: 0.0,
            force: vec![Vec3::ZERO; n],
            triangle_force: vec![Vec3::ZERO; model.triangles().len()],
            pinned: vec![false; n],
            pin_start: Vec::new(),
            implicit,
            time: 0.0,
            snapshot: None,
            stable_step: limit,
            settings,
            model,
        })
    }

    /// The stability limit 2/ω_max (s) of symplectic Euler and Verlet on this model: the
    /// largest step h at which the stiffest vibration still oscillates instead of growing
    /// (article §2.1–2.3; for the undamped oscillator the step matrix has eigenvalues on the
    /// unit circle only while hω < 2). ω_max² is the largest eigenvalue of M⁻¹K, with K the
    /// stiffness matrix Σ k n nᵀ of the springs at the model's initial positions (the stiffer
    /// of stretch and compression), estimated by 40 steps of power iteration on the symmetric
    /// W^½ K W^½ (W = M⁻¹): the estimate approaches ω_max from below, so the limit it gives is
    /// never too strict. Damping and the transverse stiffness of stretched springs are left
    /// out. `f64::INFINITY` for a model without springs between free particles.
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
                 2/ω_max = {:.3e} s for the model's stiffest vibration (ω_max ≈ {:.3e} rad/s); use at least \
                 {needed} substeps, implicit Euler or XPBD",
                s.integrator,
                s.substeps,
                self.stable_step,
                2.0 / self.stable_step
            ),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &ForceSettings {
        &self.settings
    }

    /// Current velocities (m/s), one per particle, without copying. For Verlet this is
    /// (x⁺ − x)/h of the last step (see [`verlet`]).
    pub fn velocities(&self) -> &[Vec3] {
        &self.v
    }

    fn apply_pins(&mut self, control: &Control) -> Result<(), SolverError> {
        self.pinned.iter_mut().for_each(|p| *p = false);
        self.pin_start.clear();
        let n = self.x.len() as u32;
        for pin in &control.pins {
            if pin.particle >= n {
                return Err(SolverError::InvalidPin {
                    particle: pin.particle,
                    message: format!("there are only {n} particles"),
                });
            }
            let start = self.x[pin.particle as usize];
            let target = match pin.target {
                Some(t) if t.is_finite() => t,
                Some(t) => {
                    return Err(SolverError::InvalidPin {
                        particle: pin.particle,
                        message: format!("target {t} is not finite"),
                    });
                }
                None => start,
            };
            self.pinned[pin.particle as usize] = true;
            self.pin_start.push((pin.particle, start, target));
        }
        Ok(())
    }

    /// Copies `x` and `v` into `phase[0]`, the records the force loop reads.
    fn pack(&mut self) {
        let w = self.model.particle_inv_mass();
        let phase = &mut self.phase[0];
        phase.clear();
        phase.extend(self.x.iter().zip(&self.v).zip(w).map(|((x, v), &w)| Phase { x: x.extend(w), v: v.extend(0.0) }));
    }

    /// Fills `triangle_force` with a third of each triangle's aerodynamic force (N) for the
    /// state in `phase[0]`; returns whether aerodynamics are on.
    fn triangle_forces(&mut self, wind: Vec3, parallel: bool) -> bool {
        let model = &*self.model;
        let air = model.air();
        if !air.is_active() || model.triangles().is_empty() {
            return false;
        }
        let phase = &self.phase[0];
        let tri = |t: &[u32; 3]| {
            let xs = t.map(|i| phase[i as usize].x.truncate());
            let vs = t.map(|i| phase[i as usize].v.truncate());
            aerodynamics::triangle_force(&air, xs, vs, wind) * (1.0 / 3.0)
        };
        if parallel && model.triangles().len() >= PARALLEL_MIN_ITEMS {
            model.triangles().par_iter().map(tri).collect_into_vec(&mut self.triangle_force);
        } else {
            self.triangle_force.clear();
            self.triangle_force.extend(model.triangles().iter().map(tri));
        }
        true
    }

    /// Fills `force` with the spring and aerodynamic forces (N, without gravity) of the state in
    /// `x`, `v` (implicit Euler's force evaluation; the explicit integrators fuse it into their
    /// particle pass, [`ExplicitPass`]).
    fn accumulate_forces(&mut self, wind: Vec3, parallel: bool) {
        self.pack();
        let aero = self.triangle_forces(wind, parallel);
        let forces = Forces {
            model: &self.model,
            gather: &self.gather,
            phase: &self.phase[0],
            aero: aero.then_some(&self.triangle_force[..]),
        };
        let fill = |start: usize, out: &mut [Vec3]| {
            forces.for_each(start..start + out.len(), &mut |p: usize, f: Vec4| out[p - start] = f.truncate())
        };
        match particle_chunk(self.force.len(), parallel) {
            Some(c) => self.force.par_chunks_mut(c).enumerate().for_each(|(k, out)| fill(k * c, out)),
            None => fill(0, &mut self.force),
        }
    }

    /// One frame; with `trace` it runs sequentially and checks after every stage.
    fn frame(&mut self, control: &Control, frame_dt: f32, trace: bool) -> Result<StepReport, SolverError> {
        let s = self.settings;
        let h = frame_dt / s.substeps as f32;
        let inv_h = 1.0 / h;
        let retain = velocity_retention(s.air_damping, h);
        let parallel = s.parallel && !trace;
        let model = Arc::clone(&self.model);
        let gravity = model.gravity();
        let integrator = s.integrator;
        let explicit = integrator != Integrator::ImplicitEuler;
        let mut report = StepReport { substeps: s.substeps, iterations: 1, ..StepReport::default() };
        if integrator == Integrator::Verlet {
            // Time-corrected Verlet: keep d/h the velocity when the step changes.
            if self.d_h == 0.0 {
                self.d.iter_mut().zip(&self.v).for_each(|(d, v)| *d = *v * h);
            } else if self.d_h != h {
                let ratio = h / self.d_h;
                self.d.iter_mut().for_each(|d| *d *= ratio);
            }
            self.d_h = h;
        }
        if explicit {
            self.pack();
        }
        for sub in 0..s.substeps {
            let t0 = self.time + (sub as f64) * h as f64;
            let t1 = t0 + h as f64;
            let frac = (sub + 1) as f32 / s.substeps as f32;
            let steps: Vec<ColliderStep> = model.colliders().iter().map(|c| ColliderStep::new(c, t0, t1)).collect();
            if explicit {
                // 1–4 fused, particle by particle, from phase[0] into phase[1]; then the pins.
                let aero = self.triangle_forces(control.wind_at(t0), parallel);
                let [old, new] = &mut self.phase;
                let pass = ExplicitPass {
                    forces: Forces {
                        model: &model,
                        gather: &self.gather,
                        phase: old,
                        aero: aero.then_some(&self.triangle_force[..]),
                    },
                    pinned: &self.pinned,
                    steps: &steps,
                    integrator,
                    gravity: gravity.extend(0.0),
                    h,
                    inv_h,
                    retain,
                };
                new.resize(old.len(), Phase::default());
                report.contacts = match particle_chunk(old.len(), parallel) {
                    Some(c) => new
                        .par_chunks_mut(c)
                        .zip(self.d.par_chunks_mut(c))
                        .enumerate()
                        .map(|(k, (new, d))| pass.run(k * c, new, d))
                        .sum(),
                    None => pass.run(0, new, &mut self.d),
                };
                for &(p, start, target) in &self.pin_start {
                    let p = p as usize;
                    let x = old[p].x.truncate();
                    let d = start.lerp(target, frac) - x;
                    self.d[p] = d;
                    new[p] = Phase { x: (x + d).extend(old[p].x.w), v: (d * inv_h).extend(0.0) };
                }
                if trace && let Some(p) = new.iter().position(|q| !q.x.is_finite() || !q.v.is_finite()) {
                    return Err(self.diagnose(t0, p, aero));
                }
                self.phase.swap(0, 1);
                continue;
            }
            if retain != 1.0 {
                for (v, &pinned) in self.v.iter_mut().zip(&self.pinned) {
                    if !pinned {
                        *v *= retain;
                    }
                }
            }
            // 1. Forces.
            self.accumulate_forces(control.wind_at(t0), parallel);
            if trace && let Some(p) = self.force.iter().position(|f| !f.is_finite()) {
                return Err(self.diagnose(t0, p, model.air().is_active()));
            }
            // 2–3. Integrate, pins.
            let Some(scratch) = self.implicit.as_deref_mut() else {
                unreachable!("implicit scratch is made with the solver")
            };
            for &(p, start, target) in &self.pin_start {
                let p = p as usize;
                let goal_v = (start.lerp(target, frac) - self.x[p]) * inv_h;
                scratch.dv[p] = (goal_v - self.v[p]).as_dvec3();
            }
            let step = ImplicitStep {
                model: &model,
                springs: &self.springs,
                incidence_offsets: &self.incidence_offsets,
                incidence: &self.incidence,
                x: &self.x,
                v: &self.v,
                force: &self.force,
                pinned: &self.pinned,
                h,
                clamp_compression: s.clamp_compression,
                pcg: PcgSettings { tolerance: s.cg_tolerance, max_iterations: s.cg_max_iterations, parallel },
            };
            let pcg = scratch.solve(&step);
            report.linear_iterations = report.linear_iterations.max(pcg.iterations);
            report.linear_residual = if pcg.residual.is_nan() || report.linear_residual.is_nan() {
                f64::NAN
            } else {
                report.linear_residual.max(pcg.residual)
            };
            let dv = &scratch.dv;
            for (p, ((v, d), &pinned)) in self.v.iter_mut().zip(&mut self.d).zip(&self.pinned).enumerate() {
                if !pinned {
                    *v = (v.as_dvec3() + dv[p]).as_vec3();
                    *d = *v * h;
                }
            }
            if trace {
                self.check_finite(t0, "the linear solve of implicit Euler")?;
            }
            for &(p, start, target) in &self.pin_start {
                let p = p as usize;
                self.d[p] = start.lerp(target, frac) - self.x[p];
                self.v[p] = self.d[p] * inv_h;
            }
            // 4. Collide, then move.
            let (colliders, radius, pinned) = (model.colliders(), model.particle_radius(), &self.pinned);
            let mut touching = 0;
            for p in 0..self.x.len() {
                if !pinned[p] && !colliders.is_empty() {
                    let before = self.d[p];
                    if collision::resolve_particle(colliders, &steps, self.x[p], &mut self.d[p], radius[p]) > 0.0 {
                        touching += 1;
                        self.v[p] += (self.d[p] - before) * inv_h;
                    }
                }
                self.x[p] += self.d[p];
            }
            report.contacts = touching;
            if trace {
                self.check_finite(t0, "collision handling")?;
            }
        }
        if explicit {
            let phase = &self.phase[0];
            self.x.iter_mut().zip(&mut self.v).zip(phase).for_each(|((x, v), q)| {
                *x = q.x.truncate();
                *v = q.v.truncate();
            });
        }
        self.time += frame_dt as f64;
        Ok(report)
    }

    /// The blow-up error for particle `p`, found non-finite after a traced step from the state
    /// in `phase[0]`: names the first of its springs whose force is not finite, else its
    /// aerodynamic force, else the stage that followed.
    fn diagnose(&self, time: f64, p: usize, aero: bool) -> SolverError {
        let q = &self.phase[0];
        let range = self.incidence_offsets[p] as usize..self.incidence_offsets[p + 1] as usize;
        for inc in &self.incidence[range] {
            let k = inc.constraint as usize;
            let c = self.model.constraints()[k];
            let (i, j) = (c.i as usize, c.j as usize);
            let f = self.springs[k].force((q[i].x - q[j].x).truncate(), (q[i].v - q[j].v).truncate());
            if !f.is_finite() {
                let fam = self.model.constraint_family()[k].name();
                let what = format!("in the force of {fam} spring {k} (particles {}–{})", c.i, c.j);
                return self.blow_up(time, c.i, Some(k), what);
            }
        }
        let tf = &self.triangle_force;
        if aero && !self.model.particle_triangles(p).iter().all(|&t| tf[t as usize].is_finite()) {
            return self.blow_up(time, p as u32, None, "in the aerodynamic forces".into());
        }
        let stage = match self.settings.integrator {
            Integrator::ImplicitEuler => "the force evaluation",
            _ => "the integration step or collision handling",
        };
        self.blow_up(time, p as u32, None, format!("in {stage}"))
    }

    fn check_finite(&self, time: f64, stage: &str) -> Result<(), SolverError> {
        let bad = self
            .x
            .iter()
            .zip(&self.v)
            .zip(&self.d)
            .position(|((x, v), d)| !x.is_finite() || !v.is_finite() || !d.is_finite());
        match bad {
            Some(k) => Err(self.blow_up(time, k as u32, None, format!("in {stage}"))),
            None => Ok(()),
        }
    }

    fn blow_up(&self, time: f64, particle: u32, constraint: Option<usize>, what: String) -> SolverError {
        health::non_finite(&self.model, time, particle, constraint, what)
    }

    /// Looks for a runaway after a frame: non-finite values, speed or strain over the limits.
    /// Returns the particle, the constraint if any, and a description of the first problem.
    fn health(&self) -> Option<(u32, Option<usize>, String)> {
        let limits = health::Limits { max_speed: self.settings.max_speed, max_strain: self.settings.max_strain };
        let parallel = self.settings.parallel && self.x.len() >= 4096;
        let (x, pinned) = (&self.x, &self.pinned);
        health::check(&self.model, |k| x[k], &self.v, |p| pinned[p as usize], limits, parallel, "spring")
    }

    fn save(&mut self) -> Snapshot {
        let mut snap = self.snapshot.take().unwrap_or_default();
        snap.x.clone_from(&self.x);
        snap.v.clone_from(&self.v);
        snap.d.clone_from(&self.d);
        snap.d_h = self.d_h;
        snap.time = self.time;
        if let Some(s) = &self.implicit {
            snap.dv.clone_from(&s.dv);
        }
        snap
    }

    fn restore(&mut self, snap: &Snapshot) {
        self.x.clone_from(&snap.x);
        self.v.clone_from(&snap.v);
        self.d.clone_from(&snap.d);
        self.d_h = snap.d_h;
        self.time = snap.time;
        if let Some(s) = &mut self.implicit {
            s.dv.clone_from(&snap.dv);
        }
    }
}

/// 2/ω_max (s), ω_max² estimated as the largest eigenvalue of W^½ K W^½ by power iteration:
/// see [`ForceSolver::stable_step`].
fn stable_step(model: &Model, springs: &[Spring]) -> f64 {
    let x = model.particle_position();
    let sqrt_w: Vec<f64> = model.particle_inv_mass().iter().map(|&w| (w as f64).sqrt()).collect();
    // (i, j, k, n) of every spring between particles that can move.
    let terms: Vec<(usize, usize, f64, DVec3)> = model
        .constraints()
        .iter()
        .zip(springs)
        .filter_map(|(c, s)| {
            let (i, j) = (c.i as usize, c.j as usize);
            let n = (x[i] - x[j]).as_dvec3().try_normalize()?;
            let k = s.stiffness_stretch.max(s.stiffness_compression) as f64;
            (sqrt_w[i] > 0.0 || sqrt_w[j] > 0.0).then_some((i, j, k, n))
        })
        .collect();
    if terms.is_empty() {
        return f64::INFINITY;
    }
    // Start from a deterministic pseudo-random vector (it must not be orthogonal to the top
    // mode); the highest modes of a cloth alternate from particle to particle.
    let mut v: Vec<DVec3> = (0..x.len())
        .map(|p| {
            let r = |s: u64| {
                ((p as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(s as u32) % 1000) as f64 / 1000.0
            };
            let sign = if p % 2 == 0 { 1.0 } else { -1.0 };
            DVec3::new(sign * (0.5 + r(7)), -sign * (0.5 + r(19)), sign * (0.5 + r(31))) * sqrt_w[p]
        })
        .collect();
    let mut lambda = 0.0;
    for _ in 0..40 {
        let norm = v.iter().map(|a| a.length_squared()).sum::<f64>().sqrt();
        if norm == 0.0 {
            return f64::INFINITY;
        }
        v.iter_mut().for_each(|a| *a /= norm);
        let mut y = vec![DVec3::ZERO; x.len()];
        for &(i, j, k, n) in &terms {
            let f = n * (k * n.dot(v[i] * sqrt_w[i] - v[j] * sqrt_w[j]));
            y[i] += f * sqrt_w[i];
            y[j] -= f * sqrt_w[j];
        }
        // Rayleigh quotient vᵀAv (v is a unit vector): a lower bound of λ_max.
        lambda = v.iter().zip(&y).map(|(a, b)| a.dot(*b)).sum::<f64>();
        v = y;
    }
    if lambda > 0.0 { 2.0 / lambda.sqrt() } else { f64::INFINITY }
}

/// The springs of a model's constraints: k = 1/α in stretch and compression, τ = damping.
fn springs_of(model: &Model) -> Result<Vec<Spring>, SolverError> {
    let stiffness = |alpha: f32| if alpha > 0.0 { Some(1.0 / alpha).filter(|k: &f32| k.is_finite()) } else { None };
    model
        .constraints()
        .iter()
        .zip(model.constraint_family())
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

/// Particle → spring adjacency in CSR form, each particle's springs in constraint order.
fn incidence_of(n: usize, constraints: &[DistanceConstraint]) -> (Vec<u32>, Vec<Incidence>) {
    let mut offsets = vec![0u32; n + 1];
    for c in constraints {
        offsets[c.i as usize + 1] += 1;
        offsets[c.j as usize + 1] += 1;
    }
    for k in 0..n {
        offsets[k + 1] += offsets[k];
    }
    let mut fill = offsets.clone();
    let mut incidence = vec![Incidence { constraint: 0, other: 0, sign: 0.0 }; offsets[n] as usize];
    for (k, c) in constraints.iter().enumerate() {
        for (p, other, sign) in [(c.i, c.j, 1.0), (c.j, c.i, -1.0)] {
            incidence[fill[p as usize] as usize] = Incidence { constraint: k as u32, other, sign };
            fill[p as usize] += 1;
        }
    }
    (offsets, incidence)
}

/// The chunk of particles per parallel task, or `None` to run on the calling thread: about
/// four chunks per thread, at least [`MIN_PARTICLE_CHUNK`] particles each, an even number
/// (particles are evaluated in pairs, see [`SpringGather`]).
fn particle_chunk(n: usize, parallel: bool) -> Option<usize> {
    let threads = rayon::current_num_threads();
    (parallel && threads > 1 && n >= 2 * MIN_PARTICLE_CHUNK)
        .then(|| n.div_ceil(8 * threads).clamp(MIN_PARTICLE_CHUNK / 2, MAX_PARTICLE_CHUNK / 2) * 2)
}

/// Everything that acts on a particle besides gravity, for one state.
struct Forces<'a> {
    model: &'a Model,
    gather: &'a SpringGather,
    phase: &'a [Phase],
    /// A third of each triangle's aerodynamic force (N), if aerodynamics are on.
    aero: Option<&'a [Vec3]>,
}

impl Forces<'_> {
    /// Calls `f.visit(p, force)` for every particle p in `range` (which starts at an even
    /// index), in order, with its spring and aerodynamic force (N in xyz, w = 0).
    #[inline(always)]
    fn for_each<V: ParticleVisitor>(&self, range: Range<usize>, f: &mut V) {
        let pairs = range.start / 2..range.end.div_ceil(2);
        self.gather.for_each_pair(pairs, self.phase, &mut PerParticle { forces: self, end: range.end, inner: f });
    }

    /// The aerodynamic force on particle `p` (N in xyz, w = 0): its triangles' shares.
    #[inline(always)]
    fn aero(&self, p: usize) -> Vec4 {
        match self.aero {
            Some(tf) => self.model.particle_triangles(p).iter().map(|&t| tf[t as usize]).sum::<Vec3>().extend(0.0),
            None => Vec4::ZERO,
        }
    }
}

/// What [`Forces::for_each`] hands each particle's force to (`visit` is `#[inline(always)]` in
/// every implementation, so that it is compiled into the SIMD loop).
trait ParticleVisitor {
    /// Receives the force on particle `p` (N in xyz, w = 0; gravity not included).
    fn visit(&mut self, p: usize, force: Vec4);
}

impl<F: FnMut(usize, Vec4)> ParticleVisitor for F {
    #[inline(always)]
    fn visit(&mut self, p: usize, force: Vec4) {
        self(p, force)
    }
}

/// Splits a pair's spring forces into its particles and adds their aerodynamic forces.
struct PerParticle<'a, 'f, V> {
    forces: &'a Forces<'f>,
    /// One past the last particle to visit.
    end: usize,
    inner: &'a mut V,
}

impl<V: ParticleVisitor> PairVisitor for PerParticle<'_, '_, V> {
    #[inline(always)]
    fn visit(&mut self, m: usize, pair: [Vec4; 2]) {
        for (h, force) in pair.into_iter().enumerate() {
            let p = 2 * m + h;
            if p < self.end {
                self.inner.visit(p, force + self.forces.aero(p));
            }
        }
    }
}

/// The explicit step of particles `start..start + new.len()` (see [`ExplicitPass::run`]).
struct Advance<'a, 'f> {
    pass: &'a ExplicitPass<'f>,
    start: usize,
    new: &'a mut [Phase],
    d: &'a mut [Vec3],
    touching: u32,
}

impl ParticleVisitor for Advance<'_, '_> {
    #[inline(always)]
    fn visit(&mut self, p: usize, force: Vec4) {
        let k = p - self.start;
        self.touching += self.pass.advance(p, force, &mut self.new[k], &mut self.d[k]);
    }
}

/// One step of an explicit integrator for a range of particles: force, integration and
/// collisions of each particle in one go, reading the state at the start of the step and
/// writing the new one (pinned particles are copied; the caller moves them).
struct ExplicitPass<'a> {
    forces: Forces<'a>,
    pinned: &'a [bool],
    steps: &'a [ColliderStep],
    integrator: Integrator,
    /// Gravity (m/s²) in xyz, w = 0.
    gravity: Vec4,
    h: f32,
    inv_h: f32,
    retain: f32,
}

impl ExplicitPass<'_> {
    /// Advances particles `start..start + new.len()` into `new`; for Verlet also their step
    /// displacements in `d` (read as the previous step's). Returns how many touch a collider.
    /// `start` must be even.
    fn run(&self, start: usize, new: &mut [Phase], d: &mut [Vec3]) -> u32 {
        debug_assert!(start.is_multiple_of(2));
        let end = start + new.len();
        let mut advance = Advance { pass: self, start, new, d, touching: 0 };
        self.forces.for_each(start..end, &mut advance);
        advance.touching
    }

    /// Advances particle `p` under the force `f` (N in xyz, w = 0; gravity not included);
    /// returns 1 if it touches a collider. The update runs on (x, y, z, w) vectors: the w
    /// lanes of force, gravity and velocity are 0, so the position's w (the inverse mass) is
    /// kept exactly.
    #[inline(always)]
    fn advance(&self, p: usize, f: Vec4, new: &mut Phase, d: &mut Vec3) -> u32 {
        let old = self.forces.phase[p];
        if self.pinned[p] {
            *new = old;
            return 0;
        }
        let (h, inv_h, retain) = (self.h, self.inv_h, self.retain);
        let mut v = old.v;
        let a = self.gravity + f * old.x.w;
        let mut step = match self.integrator {
            Integrator::ForwardEuler => {
                let (d, v1) = explicit_euler::step(v, a, h, retain);
                v = v1;
                d
            }
            Integrator::SymplecticEuler => {
                let (d, v1) = symplectic_euler::step(v, a, h, retain);
                v = v1;
                d
            }
            _ => verlet::step(d.extend(0.0), a, h, retain),
        };
        let mut touching = 0;
        let colliders = self.forces.model.colliders();
        if !colliders.is_empty() {
            let mut moved = step.truncate();
            let radius = self.forces.model.particle_radius()[p];
            if collision::resolve_particle(colliders, self.steps, old.x.truncate(), &mut moved, radius) > 0.0 {
                touching = 1;
                v += (moved.extend(0.0) - step) * inv_h;
                step = moved.extend(0.0);
            }
        }
        if self.integrator == Integrator::Verlet {
            // Verlet's next step starts from this displacement; the Euler steps do not read it.
            v = verlet::velocity(step, inv_h);
            *d = step.truncate();
        }
        *new = Phase { x: old.x + step, v };
        touching
    }
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
        self.time
    }

    fn step(&mut self, control: &Control, frame_dt: f32) -> Result<StepReport, SolverError> {
        super::check_step_inputs(control, frame_dt)?;
        self.check_step(frame_dt)?;
        self.apply_pins(control)?;
        let snap = self.save();
        let report = self.frame(control, frame_dt, false)?;
        let Some((particle, constraint, what)) = self.health() else {
            self.snapshot = Some(snap);
            return Ok(report);
        };
        // Replay the frame sequentially with checks to find where it started.
        self.restore(&snap);
        let traced = self.frame(control, frame_dt, true);
        self.restore(&snap);
        self.snapshot = Some(snap);
        Err(match traced {
            Err(e) => e,
            Ok(_) => SolverError::BlowUp { time: self.time, particle, constraint, detail: what },
        })
    }

    fn read_positions(&mut self, out: &mut Vec<Vec3>) {
        out.clone_from(&self.x);
    }

    fn read_state(&mut self, out: &mut State) {
        out.particle_position.clone_from(&self.x);
        out.particle_velocity.clone_from(&self.v);
        out.time = self.time;
    }

    fn write_state(&mut self, state: &State) -> Result<(), SolverError> {
        check_state(&self.model, state)?;
        self.x.clone_from(&state.particle_position);
        self.v.clone_from(&state.particle_velocity);
        self.d.iter_mut().for_each(|d| *d = Vec3::ZERO);
        self.d_h = 0.0;
        if let Some(s) = &mut self.implicit {
            s.dv.iter_mut().for_each(|d| *d = glam::DVec3::ZERO);
        }
        self.time = state.time;
        Ok(())
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
