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
//! 1. **Forces.** Each triangle's aerodynamic force is computed once and gathered per particle;
//!    then each spring's force is scattered to its two particles (fᵢ += F, fⱼ −= F), colour by
//!    colour: within a colour no two springs share a particle, so a colour is split over
//!    threads without races, and the sum order is fixed, so the parallel result equals the
//!    sequential one bit for bit.
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
//! After every frame the state is checked for non-finite values, speeds above
//! [`ForceSettings::max_speed`] and structural strains above [`ForceSettings::max_strain`]. On
//! failure the frame is replayed sequentially from a snapshot with checks after each stage
//! (spring forces, aerodynamics, integration or linear solve, collisions) and
//! [`SolverError::BlowUp`] names the particle and, where one is at fault, the spring; the state
//! is left at the start of the frame.

use super::distance::Shared;
use super::health;
use super::implicit_euler::{ImplicitScratch, ImplicitStep};
use super::pcg::PcgSettings;
use super::{SolverError, SolverInfo, StepReport, check_state, explicit_euler, symplectic_euler, verlet};
use crate::collision::{self, ColliderStep};
use crate::forces::aerodynamics;
use crate::forces::spring::Spring;
use crate::model::DistanceConstraint;
use crate::{Control, Model, Solver, State};
use glam::Vec3;
use rayon::prelude::*;
use std::fmt;
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
}

impl Default for ForceSettings {
    /// Symplectic Euler with 16 substeps, no air damping, CG to 1e-6 in at most 200
    /// iterations, compression clamped, parallel, blow-up at 500 m/s or 1 000 % strain.
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

/// Particles per parallel task.
const PARTICLE_CHUNK: usize = 2048;
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
    /// The springs again with their particle indices, one 24-byte record each, in the model's
    /// colour order: what the force loop streams (the model's constraints are not read).
    edges: Vec<(u32, u32, Spring)>,
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
    /// Force of each spring on its particle i (N).
    spring_force: Vec<Vec3>,
    /// A third of each triangle's aerodynamic force (N).
    triangle_force: Vec<Vec3>,
    pinned: Vec<bool>,
    /// Pinned particles with their positions at the start of the frame and their targets.
    pin_start: Vec<(u32, Vec3, Vec3)>,
    implicit: Option<Box<ImplicitScratch>>,
    time: f64,
    snapshot: Option<Snapshot>,
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
        let n = model.particle_count();
        let (incidence_offsets, incidence) = incidence_of(n, model.constraints());
        let implicit = (settings.integrator == Integrator::ImplicitEuler)
            .then(|| Box::new(ImplicitScratch::new(&model, &incidence_offsets, &incidence)));
        Ok(ForceSolver {
            edges: model.constraints().iter().zip(&springs).map(|(c, s)| (c.i, c.j, *s)).collect(),
            springs,
            incidence_offsets,
            incidence,
            x: model.particle_position().to_vec(),
            v: model.particle_velocity().to_vec(),
            d: vec![Vec3::ZERO; n],
            d_h: 0.0,
            force: vec![Vec3::ZERO; n],
            spring_force: vec![Vec3::ZERO; model.constraints().len()],
            triangle_force: vec![Vec3::ZERO; model.triangles().len()],
            pinned: vec![false; n],
            pin_start: Vec::new(),
            implicit,
            time: 0.0,
            snapshot: None,
            settings,
            model,
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

    /// Fills `force` with the spring and aerodynamic forces (N, without gravity); with
    /// `record` also `spring_force` (one per spring, for locating a non-finite force).
    ///
    /// Springs are scattered (fᵢ += F, fⱼ −= F) colour by colour: within a colour no two
    /// springs share a particle, so a colour is split over threads without races and the sums
    /// are the same, bit for bit, as in the sequential sweep.
    fn accumulate_forces(&mut self, wind: Vec3, parallel: bool, record: bool) {
        let model = &*self.model;
        let (x, v) = (&self.x, &self.v);
        let air = model.air();
        let aero = air.is_active() && !model.triangles().is_empty();
        if aero {
            let tri = |t: &[u32; 3]| {
                let xs = t.map(|i| x[i as usize]);
                let vs = t.map(|i| v[i as usize]);
                aerodynamics::triangle_force(&air, xs, vs, wind) * (1.0 / 3.0)
            };
            if parallel && model.triangles().len() >= PARALLEL_MIN_ITEMS {
                model.triangles().par_iter().map(tri).collect_into_vec(&mut self.triangle_force);
            } else {
                self.triangle_force.clear();
                self.triangle_force.extend(model.triangles().iter().map(tri));
            }
            let tf = &self.triangle_force;
            let gather =
                |(p, f): (usize, &mut Vec3)| *f = model.particle_triangles(p).iter().map(|&t| tf[t as usize]).sum();
            if parallel && self.force.len() >= 2 * PARTICLE_CHUNK {
                self.force.par_iter_mut().enumerate().with_min_len(PARTICLE_CHUNK).for_each(gather);
            } else {
                self.force.iter_mut().enumerate().for_each(gather);
            }
        } else {
            self.force.iter_mut().for_each(|f| *f = Vec3::ZERO);
        }
        let out = Shared(self.force.as_mut_ptr());
        let out = &out;
        let scatter = |edges: &[(u32, u32, Spring)]| {
            for (i, j, s) in edges {
                let (i, j) = (*i as usize, *j as usize);
                let f = s.force(x[i] - x[j], v[i] - v[j]);
                // SAFETY: `out` points to `self.force`, one entry per particle, and the indices
                // were validated when the model was built; the callers only run springs of one
                // colour concurrently, and those touch disjoint particles.
                unsafe {
                    *out.0.add(i) += f;
                    *out.0.add(j) -= f;
                }
            }
        };
        let cons = model.constraints();
        for r in model.colour_ranges() {
            let r = r.start as usize..r.end as usize;
            let ee = &self.edges[r];
            if parallel && ee.len() >= PARALLEL_MIN_ITEMS {
                ee.par_chunks(PARTICLE_CHUNK).for_each(scatter);
            } else {
                scatter(ee);
            }
        }
        if record {
            self.spring_force.clear();
            self.spring_force.extend(cons.iter().zip(&self.springs).map(|(c, s)| {
                let (i, j) = (c.i as usize, c.j as usize);
                s.force(x[i] - x[j], v[i] - v[j])
            }));
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
        for sub in 0..s.substeps {
            let t0 = self.time + (sub as f64) * h as f64;
            let t1 = t0 + h as f64;
            if integrator == Integrator::ImplicitEuler && retain != 1.0 {
                for (v, &pinned) in self.v.iter_mut().zip(&self.pinned) {
                    if !pinned {
                        *v *= retain;
                    }
                }
            }
            // 1. Forces.
            self.accumulate_forces(control.wind_at(t0), parallel, trace);
            if trace {
                self.check_forces(t0)?;
            }
            // 2–3. Integrate, pins.
            let frac = (sub + 1) as f32 / s.substeps as f32;
            if integrator == Integrator::ImplicitEuler {
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
            } else {
                let (force, inv_mass, pinned) = (&self.force, model.particle_inv_mass(), &self.pinned);
                let advance = |start: usize, _x: &mut [Vec3], v: &mut [Vec3], d: &mut [Vec3]| -> u32 {
                    for k in 0..v.len() {
                        let p = start + k;
                        if pinned[p] {
                            continue;
                        }
                        let a = gravity + force[p] * inv_mass[p];
                        match integrator {
                            Integrator::ForwardEuler => (d[k], v[k]) = explicit_euler::step(v[k], a, h, retain),
                            Integrator::SymplecticEuler => (d[k], v[k]) = symplectic_euler::step(v[k], a, h, retain),
                            _ => d[k] = verlet::step(d[k], a, h, retain),
                        }
                    }
                    0
                };
                for_particles(parallel, &mut self.x, &mut self.v, &mut self.d, advance);
                if trace {
                    self.check_finite(t0, "the integration step")?;
                }
            }
            for &(p, start, target) in &self.pin_start {
                let p = p as usize;
                self.d[p] = start.lerp(target, frac) - self.x[p];
                self.v[p] = self.d[p] * inv_h;
            }
            // 4. Collide, then move.
            let steps: Vec<ColliderStep> = model.colliders().iter().map(|c| ColliderStep::new(c, t0, t1)).collect();
            let (colliders, radius, pinned) = (model.colliders(), model.particle_radius(), &self.pinned);
            let verlet = integrator == Integrator::Verlet;
            let finish = |start: usize, x: &mut [Vec3], v: &mut [Vec3], d: &mut [Vec3]| -> u32 {
                let mut touching = 0;
                for k in 0..x.len() {
                    let p = start + k;
                    if !pinned[p] && !colliders.is_empty() {
                        let before = d[k];
                        let depth = collision::resolve_particle(colliders, &steps, x[k], &mut d[k], radius[p]);
                        if depth > 0.0 {
                            touching += 1;
                            v[k] += (d[k] - before) * inv_h;
                        }
                    }
                    if verlet {
                        v[k] = verlet::velocity(d[k], inv_h);
                    }
                    x[k] += d[k];
                }
                touching
            };
            report.contacts = for_particles(parallel, &mut self.x, &mut self.v, &mut self.d, finish);
            if trace {
                self.check_finite(t0, "collision handling")?;
            }
        }
        self.time += frame_dt as f64;
        Ok(report)
    }

    fn check_forces(&self, time: f64) -> Result<(), SolverError> {
        if let Some(k) = self.spring_force.iter().position(|f| !f.is_finite()) {
            let c = self.model.constraints()[k];
            let fam = self.model.constraint_family()[k].name();
            let what = format!("in the force of {fam} spring {k} (particles {}–{})", c.i, c.j);
            return Err(self.blow_up(time, c.i, Some(k), what));
        }
        match self.force.iter().position(|f| !f.is_finite()) {
            Some(p) => Err(self.blow_up(time, p as u32, None, "in the aerodynamic forces".into())),
            None => Ok(()),
        }
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
        let parallel = self.settings.parallel && self.x.len() >= 2 * PARTICLE_CHUNK;
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

/// Runs `f(start, x, v, d)` over all particles, in parallel chunks or as one range, and sums
/// what it returns.
fn for_particles<F>(parallel: bool, x: &mut [Vec3], v: &mut [Vec3], d: &mut [Vec3], f: F) -> u32
where
    F: Fn(usize, &mut [Vec3], &mut [Vec3], &mut [Vec3]) -> u32 + Sync + Send,
{
    if parallel && x.len() >= 2 * PARTICLE_CHUNK {
        x.par_chunks_mut(PARTICLE_CHUNK)
            .zip(v.par_chunks_mut(PARTICLE_CHUNK))
            .zip(d.par_chunks_mut(PARTICLE_CHUNK))
            .enumerate()
            .map(|(k, ((x, v), d))| f(k * PARTICLE_CHUNK, x, v, d))
            .sum()
    } else {
        f(0, x, v, d)
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
