//! XPBD and PBD on the CPU (article §3).
//!
//! One frame of Δt_frame is split into `substeps` substeps of h = Δt_frame/substeps (Macklin et
//! al. 2019, "Small steps in physics simulation"), planned once per frame
//! ([`SubstepPlan`]) — more where the tension of a rope, or the tension or turning of a
//! globally solved cloth, asks for them ([`stability`]). Each
//! substep runs the [stages](super::stages) in order:
//!
//! 1. **Aerodynamics**: drag and lift per triangle, f_ext per particle (if the air is active),
//!    limited so that no step overshoots the wind
//!    ([`limited_force`](crate::forces::aerodynamics::limited_force)).
//! 2. **Predict**: v ← v·e^{−c·h} + h·(g + w·f_ext), x⁰ ← x, x ← x + h·v, where c is the air
//!    damping rate (1/s); pinned particles (w = 0) follow their targets instead.
//! 3. **Constraints**: λ ← 0, then `iterations` Gauss–Seidel sweeps over each constraint set's
//!    colours in a fixed order; within a colour no two constraints share a particle, so a
//!    colour is projected in parallel (rayon) with exactly the result of the sequential sweep.
//! 4. **Contacts**: particle contacts (self-collision), one Jacobi pass through the spatial hash.
//! 5. **Colliders**: each particle is pushed out of every collider and Coulomb friction is
//!    applied to its tangential displacement (see [`crate::collision`]).
//! 6. **Finish**: v ← (x − x⁰)/h, x⁰ ← x.
//!
//! λ is accumulated over the iterations of one substep and reset at the next (not per
//! iteration), which is what makes XPBD's stiffness independent of the iteration count and
//! of the time step. PBD mode ([`Method::Pbd`]) drops λ and scales each correction by a
//! stiffness factor s ∈ [0, 1], so its stiffness depends on iterations and substeps.
//!
//! After every frame the state is checked for non-finite values, runaway speed and runaway
//! strain. On failure the frame is replayed sequentially from a snapshot, checking after each
//! stage and each constraint, to report where the blow-up started; the state is then left at
//! the start of the frame.

mod dihedral_kernel;
pub mod direct_rope;
pub(crate) mod distance_kernel;
pub mod global_cloth;
pub(crate) mod lanes;
#[cfg(target_arch = "x86_64")]
pub(crate) mod lanes8;
mod projection;
pub mod stability;
mod team;
mod tether_kernel;

use super::health;
use super::plan::SubstepPlan;
use super::stage_times::{StageTimes, Stopwatch};
use super::stages::{self, Stage, colliders::Velocity, predict::PinMove};
use super::state::SolverState;
use super::{SolverError, SolverInfo, StepReport, check_parent, check_state};
use crate::collision::Pose;
use crate::collision::TriangleContact;
use crate::collision::self_collision::SelfCollision;
use crate::model::{ConstraintFamily, DistanceConstraint};
use crate::{Control, Model, Solver, State};
pub(crate) use distance_kernel::Shared;
use distance_kernel::{Block4, Sweep};
use glam::{Vec3, Vec4};
use rayon::prelude::*;
use std::sync::Arc;

/// Position-based method.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// Extended PBD with compliance (Macklin et al. 2016). Stiffness from the material.
    Xpbd,
    /// Classic PBD (Müller et al. 2007): constraints are rigid and each correction is scaled
    /// by `stiffness` ∈ [0, 1]; the result depends on iterations and substeps.
    Pbd {
        /// Stiffness factor s ∈ [0, 1].
        stiffness: f32,
    },
}

/// How the constraints of ropes are solved in each iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RopeSolver {
    /// Every constraint of a rope together, by one banded linear system per rope (the direct
    /// rope solver, `solver/xpbd/direct_rope.rs`): rigid ropes stay rigid at any mass ratio.
    /// The default.
    #[default]
    Direct,
    /// Gauss–Seidel over colours, like cloth.
    GaussSeidel,
}

impl RopeSolver {
    /// The scene-file word: `direct` or `gauss-seidel`.
    pub fn name(self) -> &'static str {
        match self {
            RopeSolver::Direct => "direct",
            RopeSolver::GaussSeidel => "gauss-seidel",
        }
    }
}

/// How the constraints of cloths (structural, shear, bend springs, hinges) are solved in each
/// iteration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClothSolver {
    /// Gauss–Seidel over colours. The default.
    #[default]
    GaussSeidel,
    /// Every distance constraint of a cloth together, on XPBD's linearised system
    /// ([`global_cloth`]; conjugate gradients, or a sparse Cholesky factorisation where they
    /// would cost more): a sheet held stretched converges in a few iterations per substep; the
    /// hinges are swept by Gauss–Seidel before it in each iteration. On the GPU for cloths
    /// whose banded order is narrow enough (strips, ribbons; `hooke-gpu`'s `global_cloth`).
    Global,
    /// As [`ClothSolver::Global`], with the hinges (angle bending) in the same system: a stiff
    /// cantilever then reaches its equilibrium at any resolution. Where hinges turn fast (a
    /// torn flap's recoil) their linearisation is poor: `scenes/tear_pull.toml` reached 4.9 %
    /// residual strain with them in the system against 2.2 % without. On the GPU as
    /// [`ClothSolver::Global`].
    GlobalWithHinges,
}

impl ClothSolver {
    /// The scene-file word: `gauss-seidel` or `global`.
    pub fn name(self) -> &'static str {
        match self {
            ClothSolver::GaussSeidel => "gauss-seidel",
            ClothSolver::Global => "global",
            ClothSolver::GlobalWithHinges => "global-hinges",
        }
    }

    /// Whether the cloths are solved globally ([`ClothSolver::Global`] or
    /// [`ClothSolver::GlobalWithHinges`]).
    pub fn is_global(self) -> bool {
        self != ClothSolver::GaussSeidel
    }
}

/// Numerical settings of [`XpbdSolver`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XpbdSettings {
    /// Substeps per frame, ≥ 1: the count of every frame unless the tension limit asks for
    /// more ([`XpbdSettings::max_substeps`]).
    pub substeps: u32,
    /// The most substeps the tension limit may split a frame into ([`stability`]: XPBD raises
    /// a frame's count above [`XpbdSettings::substeps`] when the tension of a rope under the
    /// direct solver or of a cloth under the global solve would make it unstable, and where a
    /// globally solved cloth's pairs turn by more than sin φ = 0.1 a substep), ≤ 100 000. At
    /// or below `substeps`: every frame has exactly `substeps`. The GPU solver applies it where it reads the health record of
    /// every frame and has no self-collision (`hooke_gpu::applies_tension_limit`), and keeps
    /// per-substep buffers for this many substeps there.
    pub max_substeps: u32,
    /// Gauss–Seidel iterations per substep, ≥ 1.
    pub iterations: u32,
    /// XPBD or PBD.
    pub method: Method,
    /// Global air damping rate c (1/s), ≥ 0: velocities decay as e^{−c·t}.
    pub air_damping: f32,
    /// Run colours and particle loops on the rayon thread pool.
    pub parallel: bool,
    /// A particle faster than this (m/s) is reported as a blow-up.
    pub max_speed: f32,
    /// A structural strain larger than this (dimensionless) is reported as a blow-up.
    pub max_strain: f32,
    /// How ropes are solved (direct by default).
    pub rope_solver: RopeSolver,
    /// How the distance constraints of cloths are solved (Gauss–Seidel by default).
    pub cloth_solver: ClothSolver,
    /// Long-range attachments from every free particle of a pinned body to its two nearest
    /// pins ([`crate::tethers`]), rebuilt when the pins change. On by default.
    pub tethers: bool,
    /// Iterate each substep until the residual reaches a tolerance (XPBD; the GPU solver
    /// decides per frame, taking a frame above it again with more iterations — hooke-gpu's
    /// `iterates_to_tolerance` says where; elsewhere it runs the fixed count
    /// [`XpbdSettings::iterations`] and the run reports the residual it leaves); `None` (the
    /// default): exactly [`XpbdSettings::iterations`].
    pub auto_iterations: Option<AutoIterations>,
    /// Test only the colliders near each particle ([`ColliderBroadPhase`](crate::collision::ColliderBroadPhase));
    /// off tests every collider against every particle, with the same result (for
    /// benchmarks). On by default.
    pub collider_broad_phase: bool,
}

/// Iterations to a tolerance: after each iteration (from the [`XpbdSettings::iterations`]-th
/// on) the solver measures the largest residual stretch strain |C + α̃λ + γΔC|/L₀ of the
/// structural distance constraints — the quantity the convergence monitor reports
/// ([`crate::diagnostics`]) — and stops once it is at most `tolerance`, or after
/// `max_iterations`. The particle contacts (self-collision) are resolved and the colliders
/// projected after every iteration as well (and once more in their stages), so the residual
/// measured is that of the cloth as the contacts and colliders leave it and the next
/// iteration sees them (each until a pass touches nothing, for the rest of the substep);
/// friction is taken in each pass from that pass's push (so tangential drift that later
/// iterations add is held only by the friction of their smaller pushes). With colliders or
/// particle contacts, one iteration to a loose tolerance is therefore not bit for bit the
/// fixed count of one. Each pass of the particle contacts updates the per-particle contact
/// counts by which the next pass shares its pushes out (see [`crate::collision::self_collision`]), and the neighbour lists count their
/// age in passes: between the iterations they are those of the last pass, not of the last
/// substep (a pass that finds no contact leaves counts of 0 for the stage's pass).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoIterations {
    /// Target residual stretch strain (dimensionless, 0.01 = 1 %), > 0.
    pub tolerance: f32,
    /// Most iterations per substep, ≥ [`XpbdSettings::iterations`].
    pub max_iterations: u32,
}

impl Default for XpbdSettings {
    /// 20 substeps (up to 1 000 where the tension limit needs them) × 1 iteration of XPBD,
    /// air damping 0.05/s, parallel, blow-up at 500 m/s or 1 000 % strain, ropes by the direct
    /// solver, tethers on, the colliders' broad phase on.
    fn default() -> Self {
        XpbdSettings {
            substeps: 20,
            max_substeps: DEFAULT_MAX_SUBSTEPS,
            iterations: 1,
            method: Method::Xpbd,
            air_damping: 0.05,
            parallel: true,
            max_speed: 500.0,
            max_strain: 10.0,
            rope_solver: RopeSolver::Direct,
            cloth_solver: ClothSolver::GaussSeidel,
            tethers: true,
            auto_iterations: None,
            collider_broad_phase: true,
        }
    }
}

/// The default [`XpbdSettings::max_substeps`].
pub const DEFAULT_MAX_SUBSTEPS: u32 = 1000;

impl XpbdSettings {
    /// Checks the settings: 1–100 000 substeps, `max_substeps` at most 100 000, 1–10 000
    /// iterations, a finite air damping rate ≥ 0, a PBD stiffness in [0, 1] and positive
    /// blow-up limits. Every solver that takes
    /// these settings, on the CPU and on the GPU, calls it.
    ///
    /// # Errors
    /// [`SolverError::InvalidSettings`] naming the setting.
    pub fn validate(&self) -> Result<(), SolverError> {
        let bad = |setting, message: String| Err(SolverError::InvalidSettings { setting, message });
        if !(1..=100_000).contains(&self.substeps) {
            return bad("substeps", format!("must be between 1 and 100000, got {}", self.substeps));
        }
        if self.max_substeps > 100_000 {
            return bad("max_substeps", format!("must be at most 100000, got {}", self.max_substeps));
        }
        if !(1..=10_000).contains(&self.iterations) {
            return bad("iterations", format!("must be between 1 and 10000, got {}", self.iterations));
        }
        if !(self.air_damping.is_finite() && self.air_damping >= 0.0) {
            return bad("air_damping", format!("must be a finite rate ≥ 0 (1/s), got {}", self.air_damping));
        }
        if let Method::Pbd { stiffness } = self.method
            && !(0.0..=1.0).contains(&stiffness)
        {
            return bad("pbd_stiffness", format!("must be in [0, 1], got {stiffness}"));
        }
        if self.max_speed.is_nan() || self.max_speed <= 0.0 || self.max_strain.is_nan() || self.max_strain <= 0.0 {
            return bad("max_speed/max_strain", "must be > 0".into());
        }
        if let Some(a) = self.auto_iterations {
            if !(a.tolerance.is_finite() && a.tolerance > 0.0) {
                return bad(
                    "iterations",
                    format!("the auto tolerance must be a finite strain > 0, got {}", a.tolerance),
                );
            }
            if !(self.iterations..=10_000).contains(&a.max_iterations) {
                return bad(
                    "max_iterations",
                    format!("must be between iterations ({}) and 10000, got {}", self.iterations, a.max_iterations),
                );
            }
            if self.method != Method::Xpbd {
                return bad("iterations", "iterating to a tolerance needs XPBD's multipliers (method = xpbd)".into());
            }
        }
        Ok(())
    }
}

/// Blocks of four constraints per parallel task.
const BLOCK_CHUNK: usize = 512;

/// The distance set in blocks of four, per colour, for the SIMD kernel.
struct DistanceBlocks {
    /// Colour k's blocks are `blocks[ranges[k]]`, covering its constraints but the last
    /// `len % 4`.
    blocks: Vec<Block4>,
    ranges: Vec<std::ops::Range<usize>>,
}

impl DistanceBlocks {
    fn new(model: &Model) -> DistanceBlocks {
        let set = model.distance();
        let mut blocks = Vec::with_capacity(set.len() / 4);
        let mut ranges = Vec::with_capacity(set.colour_count());
        for r in set.colour_ranges() {
            let start = blocks.len();
            let cons = &set.constraints()[r.start as usize..r.end as usize];
            // (In parallel: a torn model of a million constraints lays them out anew.)
            blocks.par_extend(cons.par_chunks_exact(4).map(|c| Block4::new(c.try_into().unwrap())));
            ranges.push(start..blocks.len());
        }
        DistanceBlocks { blocks, ranges }
    }
}

/// What a frame leaves behind besides the state: the colliders' poses at its end.
#[derive(Clone, Debug, Default)]
struct Snapshot {
    state: SolverState,
    collider_pose: Vec<Pose>,
}

/// The CPU XPBD/PBD solver. See the [module documentation](self).
pub struct XpbdSolver {
    model: Arc<Model>,
    settings: XpbdSettings,
    state: SolverState,
    /// λ of each distance constraint.
    lambda: Vec<f32>,
    /// λ of each dihedral bending constraint.
    lambda_dihedral: Vec<f32>,
    /// λ of each rope bending constraint.
    lambda_rope_bending: Vec<f32>,
    distance: DistanceBlocks,
    /// The ropes' direct solver (empty with [`RopeSolver::GaussSeidel`] or without ropes).
    ropes: direct_rope::RopeChains,
    /// The cloths' global solve (empty with [`ClothSolver::GaussSeidel`] or without cloths).
    cloths: global_cloth::ClothSystems,
    /// Whether each colour of the distance set is solved by Gauss–Seidel (not a rope colour
    /// under the direct solver).
    swept: Vec<bool>,
    /// The tethers of the current pins, and the search behind them — searched when the pins
    /// change, updated after a tear.
    tethers: Vec<crate::tethers::Tether>,
    tether_cache: crate::tethers::TetherCache,
    /// The particle contacts (self-collision) and their scratch.
    self_collision: SelfCollision,
    triangle_contact: TriangleContact,
    /// External force per particle (N), from aerodynamics.
    force: Vec<Vec3>,
    /// A third of each triangle's aerodynamic force (N, xyz) and drag rate (kg/s, w).
    triangle_force: Vec<Vec4>,
    /// Each collider's pose at the end of the last frame.
    collider_pose: Vec<Pose>,
    snapshot: Option<Snapshot>,
    /// 1/h² (1/s²) of the last substep of the last good frame, while `lambda` holds its
    /// multipliers (for [`Solver::constraint_residuals`]).
    residual_inv_h2: Option<f32>,
    /// The stage times collected while measuring ([`Solver::measure_stages`]).
    stage_times: Option<StageTimes>,
    /// The largest T(wᵢ + wⱼ)/L (1/s²) of the last frame, or turn limit's rate of a globally
    /// solved cloth, for the next frame's substeps ([`stability`]); `None` before the first
    /// frame and after a new state or model.
    tension_peak: Option<f32>,
}

impl XpbdSolver {
    /// A solver starting from the model's initial state.
    ///
    /// # Errors
    /// [`SolverError::InvalidSettings`] for settings out of range ([`XpbdSettings::validate`]),
    /// `"auto"` iterations over several worlds, and the global cloth solve where it cannot run
    /// ([`global_cloth::refusal`]: PBD, a rigid cloth constraint, several worlds).
    pub fn new(model: Arc<Model>, settings: XpbdSettings) -> Result<XpbdSolver, SolverError> {
        settings.validate()?;
        if model.worlds().len() > 1 && settings.auto_iterations.is_some() {
            // A residual over every world would let one world's iterations depend on another.
            return Err(SolverError::InvalidSettings {
                setting: "iterations",
                message: format!(
                    "\"auto\" measures the residual over the whole model; a model of {} worlds needs a fixed count",
                    model.worlds().len()
                ),
            });
        }
        if let Some(message) = global_cloth::refusal(&model, settings.method, settings.cloth_solver) {
            return Err(SolverError::InvalidSettings { setting: "cloth_solver", message });
        }
        let n = model.particle_count();
        Ok(XpbdSolver {
            state: SolverState::from_model(&model),
            lambda: vec![0.0; model.distance().len()],
            lambda_dihedral: vec![0.0; model.dihedral().len()],
            lambda_rope_bending: vec![0.0; model.rope_bending().len()],
            distance: DistanceBlocks::new(&model),
            ropes: match settings.rope_solver {
                RopeSolver::Direct => direct_rope::RopeChains::new(&model),
                RopeSolver::GaussSeidel => direct_rope::RopeChains::default(),
            },
            cloths: cloth_systems(&model, settings),
            swept: solver_swept_colours(&model, settings),
            tethers: Vec::new(),
            tether_cache: Default::default(),
            self_collision: SelfCollision::new(&model),
            triangle_contact: TriangleContact::new(&model),
            force: vec![Vec3::ZERO; n],
            triangle_force: vec![Vec4::ZERO; model.triangles().len()],
            collider_pose: vec![Pose::IDENTITY; model.colliders().len()],
            snapshot: None,
            residual_inv_h2: None,
            stage_times: None,
            tension_peak: None,
            settings,
            model,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &XpbdSettings {
        &self.settings
    }

    /// Current positions (m), without copying.
    pub fn positions(&self) -> impl ExactSizeIterator<Item = Vec3> + '_ {
        self.state.particles.iter().map(|p| p.position())
    }

    /// Current velocities (m/s), without copying.
    pub fn velocities(&self) -> &[Vec3] {
        &self.state.velocity
    }

    /// The substep constants of the constraint kernels.
    fn sweep(&self, plan: &SubstepPlan) -> Sweep {
        let pbd_stiffness = if let Method::Pbd { stiffness } = self.settings.method { stiffness } else { 1.0 };
        Sweep { inv_h: plan.inv_h, inv_h2: plan.inv_h2, pbd_stiffness }
    }

    /// One frame of the plan; with `trace` it runs sequentially and checks after every stage
    /// and every constraint.
    fn frame(&mut self, plan: &SubstepPlan, trace: bool) -> Result<StepReport, SolverError> {
        let s = self.settings;
        let sweep = self.sweep(plan);
        let parallel = s.parallel && !trace;
        let model = Arc::clone(&self.model);
        let aero = model.air().is_active() && !model.triangles().is_empty();
        self.state.reset_inverse_masses(&model);
        let mut times = StageTimes { frames: 1, substeps: plan.substeps(), ..StageTimes::default() };
        let mut watch = Stopwatch::new(self.stage_times.is_some() && !trace);
        let pins: Vec<PinMove> = stages::predict::begin_pins(&mut self.state, &plan.pins);
        if s.tethers {
            self.update_tethers(plan);
        }
        watch.lap(&mut times, None);
        let (mut contacts, mut particle_contacts) = (0u32, 0u32);
        let (mut most_iterations, mut total_iterations) = (0u32, 0u32);
        let list_builds = self.self_collision.list_builds().0;
        // The last substep's finish, when it is left to this substep's prediction.
        let mut unfinished: Option<f32> = None;
        for (sub, slot) in plan.slots.iter().enumerate() {
            let t0 = slot.t0;
            let check = |solver: &Self, stage: Stage| match trace {
                true => solver.check_finite(t0, stage),
                false => Ok(()),
            };
            // 1. Aerodynamics.
            if aero {
                let (p, v) = (&self.state.particles, &self.state.velocity);
                stages::aerodynamics::triangle_forces(
                    &model,
                    plan.winds(sub as u32),
                    |k| p[k].position(),
                    |k| v[k],
                    &mut self.triangle_force,
                    parallel,
                );
                let w = |k: usize| p[k].x.w;
                stages::aerodynamics::gather(&model, &self.triangle_force, &mut self.force, plan.h, w, parallel);
                if trace && let Some(k) = self.force.iter().position(|f| !f.is_finite()) {
                    let what = format!("in {}", Stage::Aerodynamics.describe());
                    return Err(self.blow_up(t0, k as u32, None, what));
                }
                watch.lap(&mut times, Some(Stage::Aerodynamics));
            }
            // 2. Predict.
            let force = aero.then_some(&self.force[..]);
            stages::predict::predict(&mut self.state, force, &model, plan.h, plan.decay, unfinished.take(), parallel);
            stages::predict::move_pins(&mut self.state, &pins, slot.frac);
            check(self, Stage::Predict)?;
            watch.lap(&mut times, Some(Stage::Predict));
            // 3. Constraint sets.
            stages::zero(&mut self.lambda, parallel);
            stages::zero(&mut self.lambda_dihedral, parallel);
            stages::zero(&mut self.lambda_rope_bending, parallel);
            let mut done = 0;
            // The most particles touching a collider in one projection of this substep.
            let mut substep_contacts = 0;
            // Whether to project the colliders after the next iteration (to a tolerance).
            let mut project_colliders = !model.colliders().is_empty();
            // Iterating to a tolerance, the particle contacts (self-collision) are resolved
            // between the iterations too, until a pass finds none.
            let mut resolve_contacts = true;
            let mut substep_particle_contacts = 0;
            loop {
                self.project_distance(sweep, parallel, if trace { Some(t0) } else { None })?;
                // Under the global solve the hinges it leaves out are swept before it, so that
                // the distance constraints end the iteration as it solved them: swept after it,
                // a torn flap's hinge (sharply folded, of particles of a few micrograms) pulled
                // a constraint of `tear_pull` 2.5 % off its length at the end of a substep whose
                // solve had left every one within 0.04 %.
                self.project_bending(sweep, parallel);
                if !self.cloths.is_empty() {
                    let pbd = matches!(s.method, Method::Pbd { .. });
                    let (ps, l, lh) = (&mut self.state.particles, &mut self.lambda, &mut self.lambda_dihedral);
                    self.cloths.solve(&model, ps, l, lh, sweep, pbd, parallel);
                }
                if !self.ropes.is_empty() {
                    let pbd = matches!(s.method, Method::Pbd { .. });
                    let (ps, l, lj) = (&mut self.state.particles, &mut self.lambda, &mut self.lambda_rope_bending);
                    self.ropes.solve(&model, ps, l, lj, sweep, pbd);
                }
                project_tethers(&self.tethers, &mut self.state.particles, parallel);
                check(self, Stage::Constraints)?;
                done += 1;
                let more = match s.auto_iterations {
                    None => done < s.iterations,
                    Some(a) => {
                        // The particle contacts first, in the stages' order (a pass that
                        // finds none ends them for the substep; the contacts stage still runs):
                        // their pushes after the last iteration alone stretched what the
                        // iterations had converged, as the colliders' did (below).
                        if resolve_contacts && self.self_collision.is_active() {
                            watch.lap(&mut times, Some(Stage::Constraints));
                            let touching = stages::contacts::solve(
                                &model,
                                &mut self.self_collision,
                                &mut self.state,
                                plan.h,
                                Velocity::FromDisplacement,
                                parallel,
                            );
                            substep_particle_contacts = substep_particle_contacts.max(touching);
                            resolve_contacts = touching > 0;
                            check(self, Stage::Contacts)?;
                            watch.lap(&mut times, Some(Stage::Contacts));
                        }
                        // Iterating to a tolerance, the colliders are projected after every
                        // iteration too, so that the next one sees them and the residual
                        // measured is that of the cloth as the colliders leave it: projected
                        // only after the last iteration, they stretch the cloth that the
                        // iterations had converged (issue #9: `curtain_box` 7.0 % residual,
                        // `cloth_on_bunny` 22 %). Friction is taken in each projection, from
                        // that projection's push: the first, at the substep's full depth, holds
                        // as before; drift that later iterations add is held only by the
                        // friction of their smaller pushes.
                        // A projection that touches nothing ends them for the substep (the
                        // colliders stage still runs): a cloth clear of every collider pays
                        // one projection per substep, not one per iteration.
                        if project_colliders {
                            watch.lap(&mut times, Some(Stage::Constraints));
                            let placements = plan.placements(sub as u32);
                            let broad = self.settings.collider_broad_phase;
                            let triangles = &mut self.triangle_contact;
                            let touching = stages::colliders::resolve(
                                &model,
                                &mut self.state,
                                placements,
                                broad,
                                triangles,
                                Velocity::FromDisplacement,
                                parallel,
                            );
                            substep_contacts = substep_contacts.max(touching);
                            project_colliders = touching > 0;
                            check(self, Stage::Colliders)?;
                            watch.lap(&mut times, Some(Stage::Colliders));
                        }
                        done < s.iterations
                            || (done < a.max_iterations
                                && max_stretch_residual(&model, &self.state.particles, &self.lambda, plan, parallel)
                                    > a.tolerance)
                    }
                };
                if !more {
                    break;
                }
            }
            most_iterations = most_iterations.max(done);
            total_iterations += done;
            watch.lap(&mut times, Some(Stage::Constraints));
            // 4. Contacts.
            let velocity = Velocity::FromDisplacement;
            particle_contacts = substep_particle_contacts.max(stages::contacts::solve(
                &model,
                &mut self.self_collision,
                &mut self.state,
                plan.h,
                velocity,
                parallel,
            ));
            check(self, Stage::Contacts)?;
            watch.lap(&mut times, Some(Stage::Contacts));
            // 5. Colliders.
            let placements = plan.placements(sub as u32);
            let velocity = Velocity::FromDisplacement;
            let broad = self.settings.collider_broad_phase;
            let triangles = &mut self.triangle_contact;
            contacts = substep_contacts.max(stages::colliders::resolve(
                &model,
                &mut self.state,
                placements,
                broad,
                triangles,
                velocity,
                parallel,
            ));
            check(self, Stage::Colliders)?;
            watch.lap(&mut times, Some(Stage::Colliders));
            // 6. Finish — in the next substep's prediction pass where no stage comes between
            // them (one pass over the particles fewer; its time is then counted in Predict).
            if trace || aero || sub + 1 == plan.slots.len() {
                stages::finish::velocity_from_displacement(&mut self.state, plan.inv_h, parallel);
            } else {
                unfinished = Some(plan.inv_h);
            }
            watch.lap(&mut times, Some(Stage::Finish));
        }
        if let (Some(total), false) = (&mut self.stage_times, trace) {
            total.merge(&times);
        }
        self.state.time += plan.frame_dt as f64;
        self.collider_pose.clone_from(&plan.collider_end);
        Ok(StepReport {
            substeps: plan.substeps(),
            iterations: most_iterations,
            total_iterations,
            contacts,
            particle_contacts,
            contact_list_builds: (self.self_collision.list_builds().0 - list_builds) as u32,
            ..StepReport::default()
        })
    }

    /// One Gauss–Seidel sweep of the distance set, colour by colour. With `trace` (the time
    /// of the substep) constraints are projected one by one and checked.
    fn project_distance(&mut self, sweep: Sweep, parallel: bool, trace: Option<f64>) -> Result<(), SolverError> {
        let model = Arc::clone(&self.model);
        let set = model.distance();
        let method = self.settings.method;
        // The swept colours: their constraints, and their blocks of four.
        let colours: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = set
            .colour_ranges()
            .iter()
            .zip(&self.distance.ranges)
            .zip(&self.swept)
            .filter(|(_, swept)| **swept)
            .map(|((range, blocks), _)| (range.start as usize..range.end as usize, blocks.clone()))
            .collect();
        if let Some(t0) = trace {
            for (r, _) in &colours {
                for ci in r.clone() {
                    let c = &set.constraints()[ci];
                    let pp = Shared(self.state.particles.as_mut_ptr());
                    // SAFETY: sequential; indices were validated when the model was built.
                    unsafe { project_one_dispatch(method, c, &mut self.lambda[ci], pp.0, sweep) };
                    for q in [c.i, c.j] {
                        if !self.state.particles[q as usize].d.is_finite() {
                            let fam = set.families()[ci];
                            let what =
                                format!("while projecting {} constraint {ci} (particles {}–{})", fam.name(), c.i, c.j);
                            return Err(self.blow_up(t0, q, Some(ci), what));
                        }
                    }
                }
            }
            return Ok(());
        }
        let sizes: Vec<usize> = colours.iter().map(|(_, blocks)| blocks.len()).collect();
        let pp = Shared(self.state.particles.as_mut_ptr());
        let lam = Shared(self.lambda.as_mut_ptr());
        let (pp, lam, all_blocks) = (&pp, &lam, &self.distance.blocks);
        // Two blocks of four: the eight-lane kernel's width.
        team::sweep_colours(&sizes, parallel, BLOCK_CHUNK, 2, |c, units, last| {
            let (range, blocks) = &colours[c];
            let cons = &set.constraints()[range.clone()];
            let in_blocks = 4 * blocks.len();
            let blocks = &all_blocks[blocks.clone()][units.clone()];
            // SAFETY: all constraints of one colour touch disjoint particles
            // (colouring::validate ran in ModelBuilder::finalize), and the calls of one
            // colour get disjoint blocks and multipliers (`team::sweep_colours`); indices were
            // validated when the model was built.
            unsafe {
                let block_lam =
                    std::slice::from_raw_parts_mut(lam.0.add(range.start + 4 * units.start), 4 * units.len());
                let (tail, tail_lam): (&[DistanceConstraint], &mut [f32]) = if last {
                    let tail = &cons[in_blocks..];
                    (tail, std::slice::from_raw_parts_mut(lam.0.add(range.start + in_blocks), tail.len()))
                } else {
                    (&[], &mut [])
                };
                project_dispatch(method, blocks, block_lam, tail, tail_lam, *pp, sweep);
            }
        });
        Ok(())
    }

    /// Rebuilds the tethers when the plan's pins differ from those they were built for, or
    /// the model was torn or its materials changed since.
    fn update_tethers(&mut self, plan: &SubstepPlan) {
        let pins: Vec<u32> = plan.pins.iter().map(|p| p.particle).collect();
        if let Some(tethers) = self.tether_cache.update(&self.model, &pins) {
            self.tethers = tethers;
        }
    }

    /// The current tethers (empty when off or without pins), rebuilt from the pins of the last
    /// frame stepped.
    pub fn tethers(&self) -> &[crate::tethers::Tether] {
        &self.tethers
    }

    /// One Gauss–Seidel sweep of the angle sets (cloth hinges, rope joints) with the shared
    /// update.
    fn project_bending(&mut self, sweep: Sweep, parallel: bool) {
        let model = &*self.model;
        let particles = &mut self.state.particles;
        // Every rope joint belongs to a rope: with the direct rope solver they are solved there.
        let joints = self.ropes.is_empty();
        let (hinge_lambda, joint_lambda) = (&mut self.lambda_dihedral, &mut self.lambda_rope_bending);
        // Under the global cloth solve the hinges are solved there.
        let hinges = self.cloths.hinge_count() < model.dihedral().len();
        match self.settings.method {
            Method::Xpbd => {
                if hinges {
                    dihedral_kernel::sweep_hinges::<false>(model.dihedral(), hinge_lambda, particles, sweep, parallel);
                }
                if joints {
                    projection::sweep_set::<_, 3, false>(
                        model.rope_bending(),
                        joint_lambda,
                        particles,
                        sweep,
                        parallel,
                    );
                }
            }
            Method::Pbd { .. } => {
                if hinges {
                    dihedral_kernel::sweep_hinges::<true>(model.dihedral(), hinge_lambda, particles, sweep, parallel);
                }
                if joints {
                    projection::sweep_set::<_, 3, true>(model.rope_bending(), joint_lambda, particles, sweep, parallel);
                }
            }
        }
    }

    fn check_finite(&self, time: f64, stage: Stage) -> Result<(), SolverError> {
        match self.state.first_non_finite() {
            Some(k) => Err(self.blow_up(time, k as u32, None, format!("in {}", stage.describe()))),
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
        let p = &self.state.particles;
        health::check(
            &self.model,
            |k| p[k].position(),
            &self.state.velocity,
            |k| p[k as usize].x.w == 0.0,
            limits,
            self.settings.parallel,
            "constraint",
        )
    }
}

/// Tethers per parallel task.
const TETHER_CHUNK: usize = 2048;

/// The largest residual stretch strain |C + α̃λ + γΔC|/L₀ of the structural distance
/// constraints (the monitor's measure, with the velocity Δx/h of the substep so far), for
/// [`AutoIterations`]. Constraints with both ends held are skipped.
fn max_stretch_residual(
    model: &Model,
    particles: &[super::state::Particle],
    lambda: &[f32],
    plan: &SubstepPlan,
    parallel: bool,
) -> f32 {
    let set = model.distance();
    let one = |(k, (c, f)): (usize, (&DistanceConstraint, &ConstraintFamily))| -> f32 {
        if *f != ConstraintFamily::Structural {
            return 0.0;
        }
        let (a, b) = (&particles[c.i as usize], &particles[c.j as usize]);
        if a.x.w + b.x.w == 0.0 {
            return 0.0;
        }
        let d = a.position() - b.position();
        let len = d.length();
        if len.is_nan() || len < 1e-9 {
            return 0.0;
        }
        let velocity = (a.d - b.d).truncate() * plan.inv_h;
        crate::diagnostics::residual_strain(c, lambda[k], d, len, velocity, plan.inv_h2).0
    };
    let items = set.constraints().iter().zip(set.families()).enumerate();
    if parallel && set.len() >= 4 * RESIDUAL_CHUNK {
        let (cons, fams) = (set.constraints(), set.families());
        cons.par_chunks(RESIDUAL_CHUNK)
            .zip(fams.par_chunks(RESIDUAL_CHUNK))
            .enumerate()
            .map(|(chunk, (c, f))| {
                c.iter().zip(f).enumerate().map(|(k, cf)| one((chunk * RESIDUAL_CHUNK + k, cf))).fold(0.0, f32::max)
            })
            .reduce(|| 0.0, f32::max)
    } else {
        items.map(one).fold(0.0, f32::max)
    }
}

/// Constraints per parallel task of [`max_stretch_residual`].
const RESIDUAL_CHUNK: usize = 2048;

/// Projects every tether once ([`crate::tethers::project`], eight at a time where the CPU
/// has AVX2: [`tether_kernel`]); each moves only its own particle and reads pinned ones, so
/// any split over threads gives the same result.
fn project_tethers(tethers: &[crate::tethers::Tether], particles: &mut [super::state::Particle], parallel: bool) {
    if tethers.is_empty() {
        return;
    }
    let p = distance_kernel::Shared(particles.as_mut_ptr());
    let p = &p;
    // SAFETY: each tether writes only its own particle (tethers are one per particle) and
    // reads pinned particles, which no tether writes; indices are in range.
    let some = |c: &[crate::tethers::Tether]| unsafe { tether_kernel::project_all(c, p.0) };
    if parallel && tethers.len() >= 2 * TETHER_CHUNK {
        tethers.par_chunks(TETHER_CHUNK).for_each(some);
    } else {
        some(tethers);
    }
}

/// Whether each colour of the model's distance set is swept by Gauss–Seidel: all but the
/// ropes' colours under the direct rope solver (ropes have colours of their own).
pub fn swept_colours(model: &Model, rope_solver: RopeSolver) -> Vec<bool> {
    let set = model.distance();
    set.colour_ranges()
        .iter()
        .map(|r| {
            let rope = set.body_of(r.start as usize).is_some_and(|b| model.bodies()[b].kind == crate::BodyKind::Rope);
            !(rope && rope_solver == RopeSolver::Direct)
        })
        .collect()
}

/// [`swept_colours`] less the cloths' colours under the global cloth solve: which colours of
/// the distance set (one flag per colour) a solver with `settings` sweeps by Gauss–Seidel.
/// The GPU solver uses it to leave the same colours to its own global solve.
pub fn solver_swept_colours(model: &Model, settings: XpbdSettings) -> Vec<bool> {
    let set = model.distance();
    let mut swept = swept_colours(model, settings.rope_solver);
    if settings.cloth_solver.is_global() {
        // Only colours of cloth constraints alone (a torn cloth's flap constraints may share a
        // colour with a rope's; such a colour stays swept, and the global systems leave out
        // the constraints of swept colours).
        let cloth = |k: u32| set.body_of(k as usize).is_some_and(|b| model.bodies()[b].kind != crate::BodyKind::Rope);
        for (s, r) in swept.iter_mut().zip(set.colour_ranges()) {
            if r.clone().all(cloth) {
                *s = false;
            }
        }
    }
    swept
}

/// The global cloth systems under [`ClothSolver::Global`], none otherwise.
fn cloth_systems(model: &Model, settings: XpbdSettings) -> global_cloth::ClothSystems {
    match settings.cloth_solver {
        ClothSolver::Global => global_cloth::ClothSystems::new(model, &solver_swept_colours(model, settings), false),
        ClothSolver::GlobalWithHinges => {
            global_cloth::ClothSystems::new(model, &solver_swept_colours(model, settings), true)
        }
        ClothSolver::GaussSeidel => global_cloth::ClothSystems::default(),
    }
}

/// Dispatches to the XPBD or PBD kernel.
///
/// # Safety
/// As [`distance_kernel::project`].
#[inline(always)]
unsafe fn project_dispatch(
    method: Method,
    blocks: &[Block4],
    block_lam: &mut [f32],
    tail: &[DistanceConstraint],
    tail_lam: &mut [f32],
    p: Shared<super::state::Particle>,
    sweep: Sweep,
) {
    unsafe {
        match method {
            Method::Xpbd => distance_kernel::project::<false>(blocks, block_lam, tail, tail_lam, p, sweep),
            Method::Pbd { .. } => distance_kernel::project::<true>(blocks, block_lam, tail, tail_lam, p, sweep),
        }
    }
}

/// Dispatches one constraint to the XPBD or PBD kernel.
///
/// # Safety
/// As [`distance_kernel::project_one`].
unsafe fn project_one_dispatch(
    method: Method,
    c: &DistanceConstraint,
    lam: &mut f32,
    p: *mut super::state::Particle,
    sweep: Sweep,
) {
    unsafe {
        match method {
            Method::Xpbd => distance_kernel::project_one::<false>(c, lam, p, sweep),
            Method::Pbd { .. } => distance_kernel::project_one::<true>(c, lam, p, sweep),
        }
    }
}

impl Solver for XpbdSolver {
    fn info(&self) -> SolverInfo {
        let name = match self.settings.method {
            Method::Xpbd => "xpbd-cpu",
            Method::Pbd { .. } => "pbd-cpu",
        };
        SolverInfo {
            name: name.into(),
            substeps: self.settings.substeps,
            iterations: self.settings.iterations,
            parallel: self.settings.parallel,
        }
    }

    fn model(&self) -> &Arc<Model> {
        &self.model
    }

    fn time(&self) -> f64 {
        self.state.time
    }

    fn measure_stages(&mut self, on: bool) -> bool {
        self.stage_times = on.then(StageTimes::default);
        true
    }

    fn take_stage_times(&mut self) -> Option<StageTimes> {
        let times = self.stage_times.as_mut()?;
        (times.frames > 0).then(|| std::mem::take(times))
    }

    fn step(&mut self, control: &Control, frame_dt: f32) -> Result<StepReport, SolverError> {
        let s = self.settings;
        // The tension limit (see `stability`) of the ropes under the direct solver and the
        // cloths under the global solve (their multipliers give the tension), and the turn
        // limit of the latter. A model of several worlds keeps its count, so that no
        // world's steps depend on another's.
        let adaptive = s.max_substeps > s.substeps
            && s.method == Method::Xpbd
            && !(self.ropes.is_empty() && self.cloths.is_empty())
            && self.model.worlds().len() == 1;
        // The count from the last frame's tension (none before the first frame, after a new
        // state or model).
        let mut substeps = match self.tension_peak {
            Some(rate2) if adaptive => stability::substeps_for_tension(rate2, frame_dt, s.substeps, s.max_substeps),
            _ => s.substeps,
        };
        let plan_of = |solver: &Self, substeps: u32| {
            SubstepPlan::new(
                &solver.model,
                control,
                solver.state.time,
                frame_dt,
                substeps,
                s.air_damping,
                &solver.collider_pose,
            )
        };
        // The plan first: a step refused for its input (a pin, a time step) changes nothing.
        let mut plan = plan_of(self, substeps)?;
        self.tension_peak = None;
        let mut snap = self.snapshot.take().unwrap_or_default();
        snap.state.clone_from(&self.state);
        snap.collider_pose.clone_from(&self.collider_pose);
        self.residual_inv_h2 = None;
        // What a retry restores besides the state: the particle contacts' counts of the last
        // substep (which the next one reads) and the stage times (the attempt kept is measured).
        let keep = adaptive.then(|| (self.self_collision.counts().to_vec(), self.stage_times));
        let spells = self.cloths.spells();
        let mut retries = 0;
        let mut report = loop {
            self.ropes.take_peak();
            self.cloths.take_peak();
            let report = self.frame(&plan, false)?;
            if let Some((counts, times)) = &keep {
                // The frame's tension (and cloths' turning): the largest of any rope segment or
                // globally solved constraint in any of its substeps.
                let rate2 = self.ropes.take_peak().max(self.cloths.take_peak());
                self.tension_peak = Some(rate2);
                // A frame whose tension came above the retry bound (the first frame, which had
                // no earlier one to size it; a load that jumped within it) is taken again with
                // the count that tension asks for.
                let need = stability::substeps_for_tension(rate2, frame_dt, s.substeps, s.max_substeps);
                let over = plan.h * rate2.sqrt() > stability::RETRY_MARGIN;
                if over && need > substeps {
                    substeps = need;
                    retries += 1;
                    self.state.clone_from(&snap.state);
                    self.collider_pose.clone_from(&snap.collider_pose);
                    self.self_collision.restore_counts(counts);
                    self.cloths.set_spells(&spells);
                    self.stage_times = *times;
                    plan = plan_of(self, substeps)?;
                    continue;
                }
            }
            break report;
        };
        report.retries = retries;
        let mut watch = Stopwatch::new(self.stage_times.is_some());
        let health = self.health();
        if let Some(times) = &mut self.stage_times {
            watch.lap(times, None);
        }
        let Some((particle, constraint, what)) = health else {
            self.snapshot = Some(snap);
            self.residual_inv_h2 = Some(plan.inv_h2);
            return Ok(report);
        };
        // Replay the frame sequentially with checks to find where it started.
        self.state.clone_from(&snap.state);
        self.cloths.set_spells(&spells);
        let traced = self.frame(&plan, true);
        self.state.clone_from(&snap.state);
        self.cloths.set_spells(&spells);
        self.collider_pose.clone_from(&snap.collider_pose);
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
        self.residual_inv_h2 = None;
        self.tension_peak = None;
        // A written state continues as a new solver would from it.
        self.cloths.set_spells(&[]);
        Ok(())
    }

    fn notify_model_changed(&mut self, model: Arc<Model>) -> Result<(), SolverError> {
        super::check_same_topology(&self.model, &model)?;
        if let Some(message) = global_cloth::refusal(&model, self.settings.method, self.settings.cloth_solver) {
            return Err(SolverError::InvalidSettings { setting: "cloth_solver", message });
        }
        self.residual_inv_h2 = None;
        self.tension_peak = None;
        self.distance = DistanceBlocks::new(&model);
        self.ropes = match self.settings.rope_solver {
            RopeSolver::Direct => direct_rope::RopeChains::new(&model),
            RopeSolver::GaussSeidel => direct_rope::RopeChains::default(),
        };
        self.cloths = cloth_systems(&model, self.settings);
        // A material change may change the tethers' slack.
        self.tether_cache.material_changed();
        // A material change may switch self-collision on or off.
        self.self_collision = SelfCollision::new(&model);
        self.triangle_contact = TriangleContact::new(&model);
        self.state.reset_inverse_masses(&model);
        self.model = model;
        Ok(())
    }

    fn rebuild(&mut self, model: Arc<Model>, state: &State) -> Result<(), SolverError> {
        check_state(&model, state)?;
        let mut fresh = XpbdSolver::new(model, self.settings)?;
        fresh.write_state(state)?;
        // The colliders go on from where they are (a collider moved frame by frame must not
        // sweep back from rest), when the model keeps them.
        if fresh.collider_pose.len() == self.collider_pose.len() {
            fresh.collider_pose.clone_from(&self.collider_pose);
        }
        fresh.stage_times = self.stage_times.take();
        *self = fresh;
        Ok(())
    }

    /// As `rebuild`, keeping the tethers' search: the next frame searches only where the tear
    /// cut paths. (The copied runs serve a device's buffers; the CPU's arrays are the model's.)
    fn rebuild_torn(
        &mut self,
        model: Arc<Model>,
        parent: &[u32],
        copied: &crate::tearing::CopiedRuns,
        state: &State,
    ) -> Result<(), SolverError> {
        check_parent(&model, parent, self.model.particle_count())?;
        let mut cache = std::mem::take(&mut self.tether_cache);
        // The tethers' search after the tear, which the next frame would make, made beside
        // the rebuild, where the tear changed something.
        let old = self.model.clone();
        let from = crate::tethers::TornFrom { old: &old, copied: &copied.distance };
        let (rebuilt, prepared) =
            cache.prepare_beside(&model, parent, Some(from), || self.rebuild(model.clone(), state));
        self.tether_cache = cache;
        rebuilt?;
        self.tether_cache.torn_prepared(parent, prepared);
        Ok(())
    }

    /// From the state and multipliers the last substep left (XPBD only; PBD has no λ).
    fn constraint_residuals(&mut self, out: &mut crate::diagnostics::ConstraintResiduals) -> bool {
        let (Method::Xpbd, Some(inv_h2)) = (self.settings.method, self.residual_inv_h2) else {
            out.clear();
            return false;
        };
        let p = &self.state.particles;
        let (x, w) = (|k: usize| p[k].position(), |k: usize| p[k].x.w);
        crate::diagnostics::distance_residuals(&self.model, x, w, &self.state.velocity, &self.lambda, inv_h2, out);
        true
    }
}
