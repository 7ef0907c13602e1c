//! [`GpuXpbdSolver`]: hooke's XPBD/PBD solver as WGSL compute kernels.

use crate::aerodynamics::Aerodynamics;
use crate::buffers::{self, Buffers, ColourSlot, GpuPin, HealthRecord, Params, Placement, UNIFORM_SLOT, VEC4};
use crate::chebyshev;
use crate::collide::Collide;
use crate::context::{GpuContext, GpuError};
use crate::finish::Finish;
use crate::global_cloth::GlobalCloth;
use crate::health::Health;
use crate::jacobi::Jacobi;
use crate::kernel::{Kernels, SharedLayouts};
use crate::local_sweep::LocalSweep;
use crate::normals::{self, Normals};
use crate::predict::Predict;
use crate::raycast::Raycast;
use crate::readback;
use crate::rope_solver::RopeSolver;
use crate::self_collision::SelfCollision;
use crate::set_sweep::{SetSweep, tile_table};
use crate::tangents::{self, Tangents};
use crate::tethers::Tethers;
use crate::timing::{FrameTimer, StageTimer};
use crate::triangle_contact::TriangleContact;
use glam::Vec3;
use hooke::collision::Pose;
use hooke::diagnostics::ConstraintResiduals;
use hooke::solver::xpbd::stability;
use hooke::solver::{SubstepPlan, check_same_topology, check_state};
use hooke::{
    Control, Method, Model, Solver, SolverError, SolverInfo, Stage, StageTimes, State, StepReport, XpbdSettings,
};
use std::sync::Arc;
use wgpu::util::DeviceExt;

/// Settings of [`GpuXpbdSolver`]: the CPU solver's [`XpbdSettings`] plus what only the GPU has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuSettings {
    /// Substeps, iterations, method, air damping and blow-up limits, as on the CPU.
    /// `parallel` is ignored (the GPU is always parallel).
    pub xpbd: XpbdSettings,
    /// Read the 16-byte health record back every this many frames of [`Solver::step`] (a
    /// synchronisation point each time); 0 never (only reads report a blow-up). With 1 — the
    /// default, the CPU solver's contract — a blow-up restores the state of the start of the
    /// frame and is returned by the step that caused it. With more, steps only queue frames
    /// in between (what an interactive viewer wants); a blow-up is then reported by the step
    /// that reads it, or by the next read ([`GpuXpbdSolver::try_read_state`]), and the state is
    /// not restored. [`GpuXpbdSolver::encode_frame`] never reads anything.
    pub health_interval: u32,
    /// Recompute vertex normals at the end of every frame (article §6), and the tangents of a
    /// model with UVs ([`GpuXpbdSolver::tangent_buffer`]). On by default.
    pub normals: bool,
    /// How each substep's distance constraints are solved. Colour Gauss–Seidel by default.
    pub solve: GpuSolve,
    /// Gauss–Seidel only: sweep each body's constraints in a workgroup of its own, every colour
    /// in one dispatch per constraint set and iteration (`tiles.wgsl`), instead of one dispatch
    /// per colour for the whole model. The same result bit for bit; faster where dispatches set
    /// the pace (many small bodies, worlds of small cloths), slower for one large body, whose
    /// colours then run on one workgroup. Off by default.
    pub tiles: bool,
    /// Gauss–Seidel only: whether to run all the iterations of each substep — distance
    /// constraints, hinges and tethers — in one dispatch, one workgroup per body, on
    /// displacements held in workgroup memory (`local_sweep.wgsl`), where every body fits
    /// (4 096 particles in 48 KiB of it) and the model has no rope joints or direct-solved
    /// ropes. The same result bit for bit, with one dispatch per substep instead of one per
    /// colour and iteration. [`LocalSweepMode::Auto`] by default;
    /// [`GpuXpbdSolver::uses_local_sweep`] says whether it was used. Never while iterating to
    /// a tolerance ([`iterates_to_tolerance`]), whose count changes from frame to frame.
    pub local: LocalSweepMode,
    /// Where the particle contacts (self-collision) find their candidates
    /// ([`ContactSearch`]); the contacts, and the bits, are the same either way.
    /// [`ContactSearch::Auto`] by default.
    pub contact_search: ContactSearch,
}

/// When the GPU sweeps each substep's constraints in workgroup memory
/// ([`GpuSettings::local`]). One workgroup per body runs on one multiprocessor: the sweep pays
/// where the dispatches it saves outweigh a large body's colours being swept by one workgroup.
/// Measured on an H200 (`docs/BENCHMARKS.md`, GPU time per frame at 20 substeps): a 32² cloth
/// alone 0.95 ms against 1.41 colour by colour, 48² 1.37 against 1.44, 64² slower (1.81
/// against 1.48); 256 worlds of 64² 5.16 ms against 7.79, 32 of them 1.99 against 2.05, 16
/// 1.90 against 1.71. Tuned on that device, applied on every GPU; on a software adapter
/// (wgpu's `DeviceType::Cpu`: Mesa's lavapipe, SwiftShader, WARP), whose workgroup barriers
/// are emulated, it never pays and `Auto` sweeps colour by colour (lavapipe, 2 threads:
/// `cloth_on_sphere`'s constraints 86 ms per frame against 229 in workgroup memory).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LocalSweepMode {
    /// Where it applies and every body has at most [`LOCAL_SMALL_BODY`](crate::LOCAL_SMALL_BODY)
    /// particles, or at least [`LOCAL_MANY_BODIES`](crate::LOCAL_MANY_BODIES) bodies have
    /// more; never on a software adapter ([`GpuContext::is_cpu`](crate::GpuContext::is_cpu)).
    #[default]
    Auto,
    /// Wherever it applies: XPBD or PBD with Gauss–Seidel and a fixed iteration count (not
    /// [`iterates_to_tolerance`]), no rope joints, every body within
    /// the workgroup memory, and, on a device with a loop budget
    /// ([`GpuContext::loop_budget`](crate::GpuContext::loop_budget)), every thread's share of
    /// a substep within it.
    Always,
    /// Never: colour by colour.
    Never,
}

/// Where the GPU's particle contacts find their candidates: in Verlet neighbour lists, rebuilt
/// from the spatial hash only when a particle has moved far enough to need it (the CPU
/// solver's skin and threshold; see `hooke::collision::self_collision`), in the hash's cells,
/// rebuilt every substep, or among all pairs of colliding particles. All find the same
/// contacts and give the same bits. They differ in cost: the lists pay for large models (the
/// cell walks are what costs there) and cost more for small ones (three more dispatches per
/// substep, where dispatches set the pace); all pairs take one dispatch per substep instead of
/// the hash's four or five and pay for small models, whose n² pair tests are few.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContactSearch {
    /// Lists from [`AUTO_MEMBERS`](crate::AUTO_MEMBERS) particles in self-collision, all pairs
    /// up to [`ALL_PAIRS_MEMBERS`](crate::ALL_PAIRS_MEMBERS) (unless a body has the speed
    /// clamp, which the hash's build applies), the cells between. On a software adapter
    /// ([`GpuContext::is_cpu`](crate::GpuContext::is_cpu): lavapipe, SwiftShader, WARP), where
    /// n² pair tests are the CPU's own work, always the lists: on lavapipe (2 cores) a 20 × 20
    /// cloth folding onto itself spends 19 ms a frame in its contact stage with lists, 45 with
    /// the cells and 281 with all pairs.
    #[default]
    Auto,
    /// Always lists (where they fit in the device's storage bindings).
    Lists,
    /// The hash's cells, rebuilt every substep.
    Cells,
    /// Every pair of colliding particles tested, with no hash (n² tests: for small models). A
    /// model whose bodies have the speed clamp uses the cells instead.
    AllPairs,
}

impl Default for GpuSettings {
    fn default() -> Self {
        GpuSettings {
            xpbd: XpbdSettings::default(),
            health_interval: 1,
            normals: true,
            solve: GpuSolve::GaussSeidel,
            tiles: false,
            local: LocalSweepMode::Auto,
            contact_search: ContactSearch::Auto,
        }
    }
}

impl GpuSettings {
    /// Checks the settings: [`XpbdSettings::validate`] (the CPU solver's rules, upper bounds
    /// included), a Jacobi relaxation in (0, 2], and the global cloth solve
    /// ([`hooke::ClothSolver::Global`], [`crate::global_cloth`]) only with Gauss–Seidel.
    ///
    /// # Errors
    /// [`SolverError::InvalidSettings`] naming the setting.
    pub fn validate(&self) -> Result<(), SolverError> {
        if let GpuSolve::Jacobi { relaxation, spectral_radius } = self.solve {
            if let Some(w) = relaxation
                && !(w > 0.0 && w <= 2.0)
            {
                return Err(SolverError::InvalidSettings {
                    setting: "relaxation",
                    message: format!("the Jacobi relaxation ω must be in (0, 2], got {w}"),
                });
            }
            if let Some(rho) = spectral_radius
                && !((0.0..1.0).contains(&rho))
            {
                return Err(SolverError::InvalidSettings {
                    setting: "spectral_radius",
                    message: format!("the Chebyshev spectral radius ρ must be in [0, 1), got {rho}"),
                });
            }
        }
        if self.xpbd.cloth_solver.is_global() && matches!(self.solve, GpuSolve::Jacobi { .. }) {
            return Err(SolverError::InvalidSettings {
                setting: "cloth_solver",
                message: "the global cloth solve goes with the Gauss–Seidel colours, not the Jacobi solve (use \"gauss-seidel\" for one of the two)".into(),
            });
        }
        self.xpbd.validate()
    }
}

/// The iteration that solves the distance constraints of a substep on the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum GpuSolve {
    /// Gauss–Seidel over colours: one dispatch per colour per iteration (12 for a cloth grid),
    /// each colour seeing the corrections of the previous ones — the CPU solver's order, and
    /// its result to f32 rounding.
    #[default]
    GaussSeidel,
    /// Jacobi: one dispatch over particles per iteration, every constraint's Δλ computed from
    /// the previous iterate and applied scaled by the relaxation ω (λ += ωΔλ, x += ω w∇C Δλ),
    /// accelerated by Chebyshev's semi-iterative method (Wang 2015) with spectral radius ρ.
    /// Plain Jacobi converges more slowly per iteration than Gauss–Seidel, and ω = 1 diverges
    /// where many constraints share a particle (a stiff cloth grid needs ω < 0.5). Both parameters
    /// are chosen from the model's constraint graph when `None` ([`GpuSolve::jacobi`]); see
    /// the `jacobi` and `chebyshev` modules of the source for the derivation.
    Jacobi {
        /// Relaxation ω, dimensionless, in (0, 2]; `None`: (1 + ρ)/(1.1 μ_hi) from the
        /// spectrum of the model's constraint system at the substep
        /// ([`chebyshev::Spectrum::parameters`]).
        relaxation: Option<f32>,
        /// Chebyshev spectral radius ρ in [0, 1); 0 turns the acceleration off (plain relaxed
        /// Jacobi); `None`: the spectral radius of the relaxed iteration from the same
        /// estimate, capped so that no mode is over-corrected by more than ¼ after the
        /// substep's iterations (0 where a given ω does not allow that).
        spectral_radius: Option<f32>,
    },
}

impl GpuSolve {
    /// Jacobi with Chebyshev acceleration, ω and ρ chosen from the model.
    pub const fn jacobi() -> GpuSolve {
        GpuSolve::Jacobi { relaxation: None, spectral_radius: None }
    }

    /// Plain relaxed Jacobi with relaxation ω, no acceleration.
    pub const fn plain_jacobi(relaxation: f32) -> GpuSolve {
        GpuSolve::Jacobi { relaxation: Some(relaxation), spectral_radius: Some(0.0) }
    }

    /// The Jacobi relaxation ω and Chebyshev spectral radius ρ this solve uses on `model`
    /// with `settings` at substep `h` (s; `None`: the stiff limit α̃ = γ = 0, the widest
    /// spectrum, which overestimates ρ for a compliant material):
    /// those given, the others from the estimated spectrum of the model's constraint system
    /// ([`chebyshev::estimate`], computed only when one is `None`; without the ropes'
    /// constraints when the direct rope solver takes them). `None` for Gauss–Seidel.
    pub fn jacobi_parameters(&self, model: &Model, settings: &XpbdSettings, h: Option<f32>) -> Option<(f32, f32)> {
        let GpuSolve::Jacobi { relaxation, spectral_radius } = *self else { return None };
        if let (Some(w), Some(rho)) = (relaxation, spectral_radius) {
            return Some((w, rho));
        }
        // PBD ignores compliance (Δλ = −sC/(wᵢ+wⱼ)): its spectrum is the stiff limit's.
        let h = if matches!(settings.method, Method::Pbd { .. }) { None } else { h };
        let spectrum = chebyshev::estimate(model, direct_ropes(model, settings), h);
        Some(spectrum.parameters(settings.iterations, relaxation, spectral_radius))
    }
}

/// Whether a GPU solver of `model` with `settings` applies the tension limit on the substep
/// to its ropes and globally solved cloths, as the CPU solver does
/// ([`hooke::solver::xpbd::stability`]): XPBD with ropes under the direct solver or cloths
/// under the global cloth solve (which also reports the turn limit's rate),
/// `max_substeps` above `substeps`, one world, and the health record
/// read after every frame ([`GpuSettings::health_interval`] = 1: the frame's tension is read
/// with it, and a frame taken again is restored from the snapshot that interval keeps); not
/// with self-collision, whose contact counts on the device a retaken frame would not restore.
/// The counts, and so the bits, are then the CPU's (on lavapipe).
pub fn applies_tension_limit(model: &Model, settings: &GpuSettings) -> bool {
    let s = &settings.xpbd;
    s.max_substeps > s.substeps
        && s.method == Method::Xpbd
        && (direct_ropes(model, s) || global_cloths(model, s))
        && model.worlds().len() == 1
        && settings.health_interval == 1
        && hooke::collision::self_collision::members(model).0.is_empty()
}

/// Whether a GPU solver with `settings` iterates to the tolerance of
/// [`XpbdSettings::auto_iterations`]: XPBD with colour Gauss–Seidel (the Jacobi solve's
/// weights are made for a fixed count) and the health record read after every frame
/// ([`GpuSettings::health_interval`] = 1, whose snapshot lets a frame be taken again).
///
/// The GPU decides per frame, not per substep as the CPU does (deciding after each iteration
/// would cost a read-back per iteration): every substep of a frame runs the same count, the
/// frame's residual — the convergence monitor's, |C + α̃λ + γΔC|/L₀ of the structural
/// constraints after its last substep ([`Solver::constraint_residuals`]) — is read back, and
/// a frame above the tolerance is taken again from its start with twice the count, up to
/// `max_iterations`. The next frame starts from the count the last one kept, an eighth lower
/// (at least one) where that frame came within half the tolerance (on an H200 this cost
/// 64.5 s over five example scenes, against 68.1 s lowering by a quarter after two such
/// frames in a row and 109 s after eight, which also left the flag at 3.9 % once the cap was
/// reached; `docs/BENCHMARKS.md`). Between the
/// iterations of a substep the particle contacts (self-collision) are resolved and the
/// colliders projected, as on the CPU (there after every iteration, each until a pass
/// touches nothing); at one iteration a substep is bit for bit the fixed count's. Not with the local sweep ([`GpuSettings::local`]), whose table holds a
/// fixed count: iterating to a tolerance sweeps colour by colour. Otherwise the GPU runs the
/// fixed count [`XpbdSettings::iterations`] and the monitor reports the residual it leaves.
pub fn iterates_to_tolerance(settings: &GpuSettings) -> bool {
    settings.xpbd.auto_iterations.is_some()
        && settings.xpbd.method == Method::Xpbd
        && settings.solve == GpuSolve::GaussSeidel
        && settings.health_interval == 1
}

/// The fixed-point scales of the normals' and the tangents' sums
/// ([`normals::fixed_point_scale_at`], [`tangents::fixed_point_scale_at`]), their passes over the
/// triangles made side by side and the largest valence found once.
fn fixed_point_scales(model: &Model) -> ((f32, f32), (f32, f32)) {
    let valence = normals::largest_valence(model);
    rayon::join(|| normals::fixed_point_scale_at(model, valence), || tangents::fixed_point_scale_at(model, valence))
}

/// The strain at which the device's tear check flags a distance constraint: the model's lowest
/// breaking strain less a margin of 10⁻⁴ (10⁻⁴ of it above a strain of 1) — far more than the
/// few ulp by which the device's square root and division may differ from the host's; ∞ when
/// nothing tears.
fn tear_flag_strain(model: &Model) -> f32 {
    let lowest = hooke::tearing::lowest_breaking_strain(model);
    if lowest.is_finite() { lowest - 1e-4 * lowest.max(1.0) } else { f32::INFINITY }
}

/// The largest residual stretch strain of `model`'s structural distance constraints in
/// `residuals` (the quantity XPBD's iterations to a tolerance measure on the CPU); 0 when none
/// is finite.
fn max_structural(model: &Model, residuals: &ConstraintResiduals) -> f32 {
    let families = model.distance().families();
    residuals
        .strain
        .iter()
        .zip(families)
        .filter(|(r, f)| **f == hooke::ConstraintFamily::Structural && r.is_finite())
        .fold(0.0, |m, (r, _)| m.max(*r))
}

/// Whether the global cloth solve takes cloths of the model under `settings`.
fn global_cloths(model: &Model, settings: &XpbdSettings) -> bool {
    settings.cloth_solver.is_global() && model.bodies().iter().any(|body| body.kind != hooke::BodyKind::Rope)
}

/// Whether the direct rope solver takes the model's ropes under `settings`.
fn direct_ropes(model: &Model, settings: &XpbdSettings) -> bool {
    settings.rope_solver == hooke::RopeSolver::Direct
        && model.bodies().iter().any(|body| body.kind == hooke::BodyKind::Rope)
}

impl From<XpbdSettings> for GpuSettings {
    fn from(xpbd: XpbdSettings) -> Self {
        GpuSettings { xpbd, ..GpuSettings::default() }
    }
}

/// The kernels bound to one solver's buffers, and its uniform bind groups.
struct Bindings {
    params_group: wgpu::BindGroup,
    colour_group: wgpu::BindGroup,
    predict: Predict,
    aerodynamics: Aerodynamics,
    /// The constraint sets' Gauss–Seidel sweeps: distance, cloth hinges, rope joints.
    distance: SetSweep,
    dihedral: SetSweep,
    rope_bending: SetSweep,
    /// The Jacobi solve of the distance set, when [`GpuSettings::solve`] asks for it.
    jacobi: Option<Jacobi>,
    /// The direct rope solver, for a model with ropes under [`hooke::RopeSolver::Direct`].
    ropes: Option<RopeSolver>,
    /// The global cloth solve, under [`hooke::ClothSolver::Global`] or `GlobalWithHinges`.
    global_cloth: Option<GlobalCloth>,
    /// The tethers, when [`XpbdSettings::tethers`] is on.
    tethers: Option<Tethers>,
    /// The local sweep of every iteration of a substep, where it applies
    /// ([`GpuSettings::local`]); then `distance`, `dihedral` and `tethers` are not recorded.
    local: Option<LocalSweep>,
    /// The particle contacts, for a model with self-collision.
    self_collision: Option<SelfCollision>,
    collide: Collide,
    /// The colliders projected between the iterations of a substep, when they iterate to a
    /// tolerance ([`iterates_to_tolerance`]) and the model has colliders.
    collide_between: Option<Collide>,
    /// The cloth triangles' virtual particles, for a model whose cloths have triangle contact.
    triangle_contact: Option<TriangleContact>,
    finish: Finish,
    normals: Normals,
    /// The tangent kernels, for a model with UVs and triangles.
    tangents: Option<Tangents>,
    raycast: Raycast,
    health: Health,
}

impl Bindings {
    fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        model: &Model,
        settings: &GpuSettings,
        loop_budget: Option<u32>,
        cpu_adapter: bool,
    ) -> Bindings {
        let layouts = &kernels.layouts;
        let has_uv = model.particle_uv().is_some() && !model.triangles().is_empty();
        let direct = direct_ropes(model, &settings.xpbd);
        let jacobi = matches!(settings.solve, GpuSolve::Jacobi { .. })
            .then(|| Jacobi::new(kernels, device, b, model, settings.solve, settings.xpbd.iterations, direct));
        let alternate = jacobi.as_ref().map(|j| &j.displacement);
        let ropes = if direct { RopeSolver::new(kernels, device, b, model, alternate, loop_budget) } else { None };
        let tethers =
            settings.xpbd.tethers.then(|| Tethers::new(kernels, device, b, model.particle_count(), alternate));
        let [distance, dihedral, rope_bending] = set_colours(model);
        let swept = hooke::solver::solver_swept_colours(model, settings.xpbd);
        let global = settings.xpbd.cloth_solver.is_global();
        let global_hinges = settings.xpbd.cloth_solver == hooke::ClothSolver::GlobalWithHinges;
        let global_cloth =
            global.then(|| GlobalCloth::new(kernels, device, b, model, &swept, global_hinges, loop_budget)).flatten();
        let joints = ropes.is_none();
        // Tile-local sweeps with Gauss–Seidel only (the Jacobi solve has its own iteration).
        let tiled = settings.tiles && jacobi.is_none();
        let sweep = |spec,
                     records,
                     lambda,
                     colours: (Vec<(u32, u32)>, u32),
                     swept: &dyn Fn(usize) -> bool,
                     tiles: Option<Vec<[u32; 2]>>| {
            let (position, displacement) = (&b.position, &b.displacement);
            let (kernel, (colours, first)) = (kernels.get(spec), colours);
            let tiles = tiles.filter(|_| tiled);
            SetSweep::new(
                kernel,
                device,
                position,
                displacement,
                records,
                lambda,
                alternate,
                colours,
                first,
                swept,
                tiles,
            )
        };
        let auto = iterates_to_tolerance(settings);
        let local = (settings.local != LocalSweepMode::Never
            && jacobi.is_none()
            && ropes.is_none()
            && global_cloth.is_none()
            && !auto)
            .then(|| {
                let limits = device.limits();
                let fit = (crate::local_sweep::capacity(&limits), crate::kernel::tile_threads(&limits), loop_budget);
                crate::local_sweep::table(model, |c| swept[c], settings.xpbd.iterations, fit)
            })
            .flatten()
            .filter(|_| settings.local == LocalSweepMode::Always || crate::local_sweep::pays(model, cpu_adapter))
            .map(|table| LocalSweep::new(kernels, device, b, table, tethers.as_ref().map(Tethers::records)));
        Bindings {
            local,
            params_group: SharedLayouts::uniform_group(device, &layouts.params, &b.params, size_of::<Params>() as u64),
            colour_group: SharedLayouts::uniform_group(
                device,
                &layouts.slot,
                &b.colours,
                size_of::<ColourSlot>() as u64,
            ),
            predict: Predict::new(kernels, device, b),
            aerodynamics: Aerodynamics::new(kernels, device, b),
            distance: sweep(
                &crate::distance::SPEC,
                &b.constraints,
                &b.lambda,
                distance,
                &|c| swept[c],
                tiled.then(|| tile_table(model.distance(), |c| swept[c])).flatten(),
            ),
            dihedral: sweep(
                &crate::dihedral::SPEC,
                &b.dihedral,
                &b.lambda_dihedral,
                dihedral,
                &|_| !global_hinges,
                tiled.then(|| tile_table(model.dihedral(), |_| !global_hinges)).flatten(),
            ),
            rope_bending: sweep(
                &crate::rope_bending::SPEC,
                &b.rope_bending,
                &b.lambda_rope_bending,
                rope_bending,
                &|_| joints,
                tiled.then(|| tile_table(model.rope_bending(), |_| joints)).flatten(),
            ),
            jacobi,
            ropes,
            global_cloth,
            tethers,
            self_collision: SelfCollision::new(kernels, device, b, model, settings.contact_search, cpu_adapter),
            collide: Collide::new(kernels, device, b),
            collide_between: (auto && !model.colliders().is_empty())
                .then(|| Collide::between_iterations(kernels, device, b)),
            triangle_contact: TriangleContact::new(kernels, device, b, model),
            finish: Finish::new(kernels, device, b),
            normals: Normals::new(kernels, device, b),
            tangents: has_uv.then(|| Tangents::new(kernels, device, b)),
            raycast: Raycast::new(kernels, device, b),
            health: Health::new(kernels, device, b),
        }
    }
}

/// XPBD/PBD on the GPU. See the [crate documentation](crate).
///
/// The state lives on the device: [`GpuXpbdSolver::position_buffer`] (x, y, z, w per particle)
/// and [`GpuXpbdSolver::normal_buffer`] can be bound by a renderer directly, and nothing is
/// copied to the host unless a `read_*` method is called (or the health record is read, see
/// [`GpuSettings::health_interval`]). [`GpuXpbdSolver::encode_frame`] records a frame into a
/// command encoder of the caller's (a renderer's frame), [`Solver::step`] into its own.
pub struct GpuXpbdSolver {
    ctx: Arc<GpuContext>,
    kernels: Arc<Kernels>,
    model: Arc<Model>,
    settings: GpuSettings,
    b: Buffers,
    k: Bindings,
    /// Number of structural constraints (checked for runaway strain).
    structural: u32,
    /// The strain at which the tear check flags a distance constraint (the lowest breaking
    /// strain of a cloth that tears, less 10⁻⁴; ∞ when nothing tears), and whether the last
    /// frame's health record had the flag set ([`Solver::tear_check`]).
    tear_flag_strain: f32,
    tear_flag: Option<bool>,
    normal_scale: (f32, f32),
    tangent_scale: (f32, f32),
    time: f64,
    /// Each collider's pose at the end of the last frame.
    collider_pose: Vec<Pose>,
    /// Particles pinned in the last frame (to name the free end of an overstrained constraint).
    pinned: Vec<u32>,
    /// A blow-up found by a read that did not restore the state, returned by the next step.
    pending: Option<SolverError>,
    /// Frames stepped since the health record was last read.
    unchecked: u32,
    /// The start (s) of the first of those frames: with a health interval over one frame, a
    /// blow-up began in a step from then on, not necessarily in the last frame.
    unchecked_since: f64,
    /// The neighbour lists' tallies (builds, members overflowed) at the last read.
    list_tally: [u32; 2],
    /// GPU timestamps of frames, while [`GpuXpbdSolver::time_frames`] is collecting them.
    timer: Option<FrameTimer>,
    /// GPU timestamps between stages, while measuring them ([`Solver::measure_stages`]).
    stage_timer: Option<StageTimer>,
    /// Buffers this solver mapped for reading (see [`GpuXpbdSolver::read_backs`]).
    read_backs: std::cell::Cell<u64>,
    /// 1/h² (1/s²) of the last substep of the last frame recorded, while the λ buffer holds
    /// its multipliers (for [`Solver::constraint_residuals`]).
    residual_inv_h2: Option<f32>,
    /// Mappable buffer for [`Solver::constraint_residuals`]' read-back (positions, velocities
    /// and λ), made on the first call.
    residual_staging: Option<wgpu::Buffer>,
    /// Whether the tension limit applies ([`applies_tension_limit`]).
    tension_limit: bool,
    /// The most substeps a frame may take: what the per-substep buffers hold.
    capacity: u32,
    /// The last frame's largest T(wᵢ + wⱼ)/L (1/s²) of a rope segment or globally solved cloth
    /// constraint (or the turn limit's rate of the latter), which sizes the next
    /// frame's substeps; `None` before the first frame and after a new state or model.
    tension_peak: Option<f32>,
    /// Constraint iterations per substep of the next frame: [`XpbdSettings::iterations`], or
    /// the count a solver iterating to a tolerance has come to ([`iterates_to_tolerance`]).
    iterations: u32,
    /// The residuals of the current state, once read back (the step iterating to a tolerance
    /// reads them; [`Solver::constraint_residuals`] then costs no second read-back).
    residuals: Option<ConstraintResiduals>,
}

impl GpuXpbdSolver {
    /// A solver on `ctx` starting from the model's initial state. The kernels are compiled on
    /// the context's first solver and shared by the others.
    ///
    /// # Errors
    /// [`GpuError::Solver`] for invalid settings ([`GpuSettings::validate`]),
    /// [`GpuError::TooLarge`] if a buffer exceeds the device's limits, [`GpuError::Validation`]
    /// if wgpu rejects a pipeline or a binding.
    pub fn new(ctx: Arc<GpuContext>, model: Arc<Model>, settings: impl Into<GpuSettings>) -> Result<Self, GpuError> {
        let settings: GpuSettings = settings.into();
        settings.validate()?;
        check_worlds(&model, &settings)?;
        check_global_cloth(&ctx, &model, &settings)?;
        crate::self_collision::check_bodies(&model)?;
        let kernels = ctx.kernels()?;
        let device = ctx.device();
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let tension_limit = applies_tension_limit(&model, &settings);
        let capacity = substep_capacity(&settings, tension_limit);
        let b = Buffers::new(
            device,
            &model,
            capacity,
            settings.health_interval == 1,
            matches!(settings.solve, GpuSolve::Jacobi { .. }),
            None,
            None,
        )?;
        let k = Bindings::new(&kernels, device, &b, &model, &settings, ctx.loop_budget(), ctx.is_cpu());
        write_colour_slots(ctx.queue(), &b, &model);
        let (normal_scale, tangent_scale) = fixed_point_scales(&model);
        let mut solver = GpuXpbdSolver {
            structural: b.structural_count,
            tear_flag_strain: tear_flag_strain(&model),
            tear_flag: None,
            normal_scale,
            tangent_scale,
            time: 0.0,
            collider_pose: vec![Pose::IDENTITY; model.colliders().len()],
            pinned: Vec::new(),
            pending: None,
            unchecked: 0,
            unchecked_since: 0.0,
            list_tally: [0; 2],
            timer: None,
            stage_timer: None,
            read_backs: std::cell::Cell::new(0),
            residual_inv_h2: None,
            residual_staging: None,
            tension_limit,
            capacity,
            tension_peak: None,
            iterations: settings.xpbd.iterations,
            residuals: None,
            b,
            k,
            kernels,
            settings,
            model,
            ctx,
        };
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Validation(e.to_string()));
        }
        // Normals of the initial state, so that the normal buffer is valid before the first step.
        solver.submit_normals();
        Ok(solver)
    }

    /// The context the solver runs on.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// How many times this solver has mapped a buffer for reading — waited for the GPU — since
    /// it was made: every `read_*` and `try_read_*`, every health check of
    /// [`Solver::step`] ([`GpuSettings::health_interval`]), every
    /// [`GpuXpbdSolver::read_frame_times`] and every [`Solver::constraint_residuals`]. [`GpuXpbdSolver::encode_frame`] adds nothing.
    pub fn read_backs(&self) -> u64 {
        self.read_backs.get()
    }

    /// Reads `parts` back through the staging buffer, counting the read-back.
    fn read(&self, parts: &[(&wgpu::Buffer, u64)]) -> Vec<u8> {
        self.read_backs.set(self.read_backs.get() + 1);
        readback::read_back(&self.ctx, &self.b.staging, parts)
    }

    /// Makes the buffers and bind groups of `model` anew (the compiled kernels are kept) with
    /// `state` in them; with `copied`, `model` was torn from the solver's model and the
    /// constraint records the tear kept are copied from the old buffers on the device.
    fn rebuild_from(
        &mut self,
        model: Arc<Model>,
        state: &State,
        copied: Option<&hooke::tearing::CopiedRuns>,
    ) -> Result<(), SolverError> {
        check_state(&model, state)?;
        check_worlds(&model, &self.settings)?;
        check_global_cloth(&self.ctx, &model, &self.settings)?;
        crate::self_collision::check_bodies(&model)?;
        let device = self.ctx.device();
        let jacobi = matches!(self.settings.solve, GpuSolve::Jacobi { .. });
        let tension_limit = applies_tension_limit(&model, &self.settings);
        let capacity = substep_capacity(&self.settings, tension_limit);
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke patch") });
        let before = copied.map(|copied| buffers::Before {
            buffers: &self.b,
            model: &self.model,
            copied,
            encoder: &mut encoder,
        });
        let snapshot = self.settings.health_interval == 1;
        let b = Buffers::new(device, &model, capacity, snapshot, jacobi, Some(state), before)
            .map_err(|e| SolverError::InvalidSettings { setting: "model", message: e.to_string() })?;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let k =
            Bindings::new(&self.kernels, device, &b, &model, &self.settings, self.ctx.loop_budget(), self.ctx.is_cpu());
        // (An encoder's errors come with `finish`: inside the scope, so that the solver is
        // left as it was on one.)
        let copies = encoder.finish();
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(SolverError::InvalidSettings { setting: "model", message: format!("wgpu validation: {e}") });
        }
        // The copies from the old buffers, before anything uses the new ones (the old ones
        // live on until the copies are done).
        self.ctx.queue().submit([copies]);
        self.k = k;
        self.list_tally = [0; 2];
        write_colour_slots(self.ctx.queue(), &b, &model);
        self.b = b;
        self.structural = self.b.structural_count;
        (self.tear_flag_strain, self.tear_flag) = (tear_flag_strain(&model), None);
        (self.normal_scale, self.tangent_scale) = fixed_point_scales(&model);
        // The colliders go on from where they are, when the model keeps them.
        if self.collider_pose.len() != model.colliders().len() {
            self.collider_pose = vec![Pose::IDENTITY; model.colliders().len()];
        }
        self.pinned.clear();
        self.unchecked = 0;
        self.residual_staging = None;
        (self.tension_limit, self.capacity, self.tension_peak) = (tension_limit, capacity, None);
        self.model = model;
        // The iterations a tolerance asked for go on (a tear changes the cloth, not how
        // hard it is to converge).
        let iterations = self.iterations;
        self.state_written(state);
        self.iterations = iterations;
        Ok(())
    }

    /// After `state`'s positions and velocities are in the buffers: clears the displacements
    /// and the health record, forgets what the last frame left (a pending blow-up, the
    /// residuals, the rope tension, the iterations a tolerance asked for), takes the state's
    /// time and computes its normals.
    fn state_written(&mut self, state: &State) {
        let mut enc =
            self.ctx.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke write") });
        enc.clear_buffer(&self.b.displacement, 0, None);
        enc.clear_buffer(&self.b.health, 0, None);
        self.ctx.queue().submit([enc.finish()]);
        self.pending = None;
        self.residual_inv_h2 = None;
        self.residuals = None;
        self.tension_peak = None;
        // Iterating to a tolerance, a written state starts from the settings' count, as a
        // new solver does.
        self.iterations = self.settings.xpbd.iterations;
        self.time = state.time;
        self.submit_normals();
    }

    /// As [`GpuXpbdSolver::read`], with (buffer, byte offset, bytes) parts.
    fn read_at(&self, parts: &[(&wgpu::Buffer, u64, u64)]) -> Vec<u8> {
        self.read_backs.set(self.read_backs.get() + 1);
        readback::read_back_at(&self.ctx, &self.b.staging, parts)
    }

    /// Where the particle contacts find their candidates, as [`GpuSettings::contact_search`]
    /// resolved for this model: [`ContactSearch::AllPairs`], [`ContactSearch::Lists`] or
    /// [`ContactSearch::Cells`]; `None` when no body has self-collision.
    pub fn contact_search(&self) -> Option<ContactSearch> {
        self.k.self_collision.as_ref().map(SelfCollision::search)
    }

    /// The Jacobi relaxation ω and Chebyshev spectral radius ρ in use (those of
    /// [`GpuSolve::jacobi_parameters`] at the last frame's substep); `None` under
    /// Gauss–Seidel and before the first frame.
    pub fn jacobi_parameters(&self) -> Option<(f32, f32)> {
        self.k.jacobi.as_ref().and_then(|j| j.parameters).map(|(p, _)| p)
    }

    /// The settings this solver was made with.
    pub fn settings(&self) -> &GpuSettings {
        &self.settings
    }

    /// Particle positions on the device: one `vec4<f32>` (x, y, z, w) per particle, w the
    /// inverse mass (0 while pinned), with `VERTEX` and `STORAGE` usage — bind it as a vertex
    /// buffer (`Float32x4`, stride 16) indexed like the model's particles, or as a read-only
    /// storage buffer, for zero-copy rendering (article §5.4). Valid between frames; a frame
    /// recorded after a draw is ordered after it by the queue.
    pub fn position_buffer(&self) -> &wgpu::Buffer {
        &self.b.position
    }

    /// Particle velocities on the device, one `vec4<f32>` per particle (w = 0).
    pub fn velocity_buffer(&self) -> &wgpu::Buffer {
        &self.b.velocity
    }

    /// Unit vertex normals on the device, one `vec4<f32>` per particle (w = 0; the zero vector
    /// for particles without triangles, such as rope particles), updated at the end of every
    /// frame when [`GpuSettings::normals`] is on; `VERTEX` and `STORAGE` usage like
    /// [`GpuXpbdSolver::position_buffer`].
    pub fn normal_buffer(&self) -> &wgpu::Buffer {
        &self.b.normal
    }

    /// The model's triangles on the device, three `u32` particle indices each
    /// ([`Model::triangles`]), with `INDEX` usage: draw the cloth with it as a `Uint32` index
    /// buffer over [`GpuXpbdSolver::position_buffer`] and [`GpuXpbdSolver::normal_buffer`]
    /// (3 × the triangle count indices; 16 zero bytes for a model without triangles).
    pub fn triangle_buffer(&self) -> &wgpu::Buffer {
        &self.b.triangles
    }

    /// Whether some constraint set is swept tile by tile ([`GpuSettings::tiles`] on, a tile
    /// table that could be made, and no local sweep in its place).
    pub fn uses_tiles(&self) -> bool {
        self.k.local.is_none() && (self.k.distance.tiled() || self.k.dihedral.tiled() || self.k.rope_bending.tiled())
    }

    /// Whether the tension limit on the substep applies to this solver's ropes
    /// ([`applies_tension_limit`]).
    pub fn applies_tension_limit(&self) -> bool {
        self.tension_limit
    }

    /// Whether each substep's constraints are swept in workgroup memory
    /// ([`GpuSettings::local`], applicable to the model and, with
    /// [`LocalSweepMode::Auto`], paying for it).
    pub fn uses_local_sweep(&self) -> bool {
        self.k.local.is_some()
    }

    /// Starts timing the next `frames` frames on the GPU: each frame's compute pass writes a
    /// timestamp when it begins and when it ends, and [`GpuXpbdSolver::read_frame_times`]
    /// returns their differences. Frames are still only queued, so timing adds no
    /// synchronisation. Returns `false` (and times nothing) if the device was not created with
    /// wgpu's `TIMESTAMP_QUERY` feature — see [`GpuContext::with_timestamps`]; restarts the
    /// count if already timing. A frame's pass holds all of its work except the uploads of its
    /// constants and a 4-byte clear (and, with a health check after every frame, the snapshot
    /// copies and the read-back).
    pub fn time_frames(&mut self, frames: u32) -> bool {
        if !self.ctx.has_timestamps() {
            return false;
        }
        self.timer = Some(FrameTimer::new(self.ctx.device(), frames));
        true
    }

    /// Waits for the frames timed since [`GpuXpbdSolver::time_frames`] (at most the number
    /// asked for) and returns the GPU time of each in milliseconds, in order, from timestamps
    /// × `Queue::get_timestamp_period`; stops timing. `None` if no timing was started.
    pub fn read_frame_times(&mut self) -> Option<Vec<f64>> {
        let timer = self.timer.take()?;
        self.read_backs.set(self.read_backs.get() + 1);
        Some(timer.read(&self.ctx))
    }

    /// Unit vertex tangents on the device — the direction of increasing texture coordinate u,
    /// orthogonal to the normal (see [`hooke::surface::vertex_tangents`]) — one `vec4<f32>`
    /// per particle (w = 0; the zero vector for particles without UVs, such as rope
    /// particles), updated with the normals ([`GpuSettings::normals`]); `VERTEX` and
    /// `STORAGE` usage like [`GpuXpbdSolver::normal_buffer`]. `None` if the model has no UVs
    /// ([`hooke::Model::particle_uv`]) or no triangles.
    pub fn tangent_buffer(&self) -> Option<&wgpu::Buffer> {
        self.k.tangents.as_ref().map(|_| &self.b.tangent)
    }

    /// Copies the vertex tangents to `out` (a read-back); `out` is left empty if the model
    /// has none (see [`GpuXpbdSolver::tangent_buffer`]).
    pub fn read_tangents(&mut self, out: &mut Vec<Vec3>) {
        out.clear();
        if self.k.tangents.is_some() {
            let n = self.model.particle_count();
            let bytes = self.read(&[(&self.b.tangent, n as u64 * VEC4)]);
            out.extend(readback::vec3s(&bytes));
        }
    }

    /// The nearest cloth triangle hit by the ray `origin + t·direction` (m; t ≥ 0) at the
    /// current positions, and the particle at its corner nearest the hit — what
    /// [`hooke::picking::pick`] finds on the host, by the same operations (a viewer's mouse
    /// pick). Two dispatches over the triangles and a read-back of 8 bytes; `None` on a miss.
    pub fn pick(&mut self, origin: Vec3, direction: Vec3) -> Option<hooke::picking::Hit> {
        let triangles = self.model.triangles().len() as u32;
        if triangles == 0 {
            return None;
        }
        let (device, queue) = (self.ctx.device(), self.ctx.queue());
        let ray = [origin.extend(0.0).to_array(), direction.extend(0.0).to_array()];
        queue.write_buffer(&self.k.raycast.ray, 0, bytemuck::cast_slice(&ray));
        queue.write_buffer(&self.k.raycast.hit, 0, bytemuck::cast_slice(&[u32::MAX; 2]));
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke pick") });
        let plan = SubstepPlan::new(&self.model, &Control::new(), self.time, 1.0, 1, 0.0, &self.collider_pose)
            .expect("a valid plan of an empty control");
        upload(device, &mut enc, &self.b.params, &self.params_bytes(&plan, 0));
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            self.k.raycast.record(&mut pass, (&self.k.params_group, 0), triangles);
        }
        queue.submit([enc.finish()]);
        let bytes = self.read(&[(&self.k.raycast.hit, 8)]);
        let word = |k: usize| u32::from_le_bytes([bytes[k], bytes[k + 1], bytes[k + 2], bytes[k + 3]]);
        let (distance, code) = (word(0), word(4));
        if code == u32::MAX {
            return None;
        }
        let (triangle, corner) = (code >> 2, code & 3);
        let particle = self.model.triangles()[triangle as usize][corner as usize];
        Some(hooke::picking::Hit { distance: f32::from_bits(distance), triangle, corner, particle })
    }

    /// Copies the vertex normals to `out` (a read-back, for tests and caches).
    pub fn read_normals(&mut self, out: &mut Vec<Vec3>) {
        let n = self.model.particle_count();
        let bytes = self.read(&[(&self.b.normal, n as u64 * VEC4)]);
        out.clear();
        out.extend(readback::vec3s(&bytes));
    }

    /// Copies positions, velocities and time into `out`, or reports a blow-up the device has
    /// recorded (a non-finite value, a particle faster than `max_speed` or a structural strain
    /// over `max_strain`) instead of handing out garbage. `out` is filled in either case.
    ///
    /// # Errors
    /// [`SolverError::BlowUp`].
    pub fn try_read_state(&mut self, out: &mut State) -> Result<(), SolverError> {
        let n = self.model.particle_count();
        let bytes = self.read(&[
            (&self.b.position, n as u64 * VEC4),
            (&self.b.velocity, n as u64 * VEC4),
            (&self.b.health, size_of::<HealthRecord>() as u64),
        ]);
        let (x, rest) = bytes.split_at(n * VEC4 as usize);
        let (v, h) = rest.split_at(n * VEC4 as usize);
        out.particle_position.clear();
        out.particle_position.extend(readback::vec3s(x));
        out.particle_velocity.clear();
        out.particle_velocity.extend(readback::vec3s(v));
        out.time = self.time;
        match self.blow_up(bytemuck::pod_read_unaligned(h), out) {
            Some(e) => {
                self.pending = Some(e.clone());
                Err(e)
            }
            None => {
                // Read, and healthy: a later blow-up began after this.
                self.unchecked = 0;
                Ok(())
            }
        }
    }

    /// Positions only, with the same check as [`GpuXpbdSolver::try_read_state`].
    ///
    /// # Errors
    /// [`SolverError::BlowUp`].
    pub fn try_read_positions(&mut self, out: &mut Vec<Vec3>) -> Result<(), SolverError> {
        let mut s = State { particle_position: std::mem::take(out), particle_velocity: Vec::new(), time: 0.0 };
        let r = self.try_read_state(&mut s);
        *out = s.particle_position;
        r
    }

    fn blow_up(&self, h: HealthRecord, state: &State) -> Option<SolverError> {
        let limits = (self.settings.xpbd.max_speed, self.settings.xpbd.max_strain);
        if self.unchecked > 0 {
            // Frames stepped since the record was last read: the runaway began in one of them.
            let mut e = readback::blow_up(&self.model, h, state, &self.pinned, limits, self.unchecked_since)?;
            if let SolverError::BlowUp { detail, .. } = &mut e {
                detail.push_str(&unchecked_range(self.settings.health_interval, self.unchecked_since, self.time));
            }
            return Some(e);
        }
        readback::blow_up(&self.model, h, state, &self.pinned, limits, self.time)
    }

    /// Records one frame of `frame_dt` seconds under `control` into `encoder` — the uploads of
    /// its constants (substeps, pins, collider placements), every substep, iteration and colour
    /// in one compute pass, then normals, tangents and the health check — and advances the
    /// solver's time. Nothing is read back and nothing is submitted: the frame runs when the
    /// caller submits `encoder`, ordered with whatever else it holds (a render pass that draws
    /// [`GpuXpbdSolver::position_buffer`] after it, say). Several frames may be recorded into
    /// one encoder. A blow-up is flagged in the health record, reported by the next read.
    ///
    /// # Errors
    /// [`SolverError::InvalidTimeStep`], [`SolverError::InvalidPin`],
    /// [`SolverError::InvalidSettings`] (a non-finite wind), [`SolverError::InvalidCollider`],
    /// or a blow-up reported by an earlier read and not yet cleared by
    /// [`Solver::write_state`]. Nothing is recorded on error.
    ///
    /// The frame runs the settings' substeps, and the iterations per substep the last
    /// [`Solver::step`] kept ([`iterates_to_tolerance`]; the settings' count otherwise): the
    /// tension limit and iterating to a tolerance, which need the frame's tension or
    /// residual read back, apply to [`Solver::step`] only.
    pub fn encode_frame(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        control: &Control,
        frame_dt: f32,
    ) -> Result<(), SolverError> {
        let (substeps, iterations) = (self.settings.xpbd.substeps, self.iterations);
        self.encode_frame_with(encoder, control, frame_dt, substeps, iterations).map(|_| ())
    }

    /// [`GpuXpbdSolver::encode_frame`] with `substeps` substeps (at most the buffers'
    /// capacity, [`substep_capacity`]) of `iterations` iterations; returns the frame's
    /// substep length h (s).
    fn encode_frame_with(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        control: &Control,
        frame_dt: f32,
        substeps: u32,
        iterations: u32,
    ) -> Result<f32, SolverError> {
        // The tear check's flag is read after the frame, by `step`.
        self.tear_flag = None;
        if let Some(e) = &self.pending {
            return Err(e.clone());
        }
        self.residuals = None;
        let s = self.settings.xpbd;
        let plan =
            SubstepPlan::new(&self.model, control, self.time, frame_dt, substeps, s.air_damping, &self.collider_pose)?;
        let pins: Vec<GpuPin> = plan
            .pins
            .iter()
            .map(|p| GpuPin {
                particle: p.particle,
                has_target: p.target.is_some() as u32,
                _pad: [0; 2],
                goal: p.target.map_or([0.0; 4], |t| t.extend(0.0).to_array()),
                start: [0.0; 4],
            })
            .collect();
        let device = self.ctx.device();
        upload(device, encoder, &self.b.params, &self.params_bytes(&plan, pins.len() as u32));
        let colliders = self.model.colliders();
        let placements: Vec<Placement> = plan
            .colliders
            .iter()
            .enumerate()
            .map(|(k, p)| Placement::new(p, &colliders[k % colliders.len()].shape))
            .collect();
        upload(device, encoder, &self.b.placements, bytemuck::cast_slice(&placements));
        if self.model.worlds().len() > 1 {
            let worlds = crate::worlds::records(&self.model, substeps, Some(&plan));
            upload(device, encoder, &self.b.worlds, bytemuck::cast_slice(&worlds));
        }
        upload(device, encoder, &self.b.pins, bytemuck::cast_slice(&pins));
        if let Some(tethers) = &mut self.k.tethers {
            let particles: Vec<u32> = plan.pins.iter().map(|p| p.particle).collect();
            tethers.update(device, encoder, &self.model, &particles);
        }
        if let Some(jacobi) = &mut self.k.jacobi {
            jacobi.update(device, encoder, &self.model, &self.settings.xpbd, plan.h);
        }
        let n = self.model.particle_count() as u64;
        if let Some((x, v)) = &self.b.snapshot
            && n > 0
        {
            encoder.copy_buffer_to_buffer(&self.b.position, 0, x, 0, n * VEC4);
            encoder.copy_buffer_to_buffer(&self.b.velocity, 0, v, 0, n * VEC4);
            if let Some(contacts) = &self.k.self_collision {
                contacts.save(encoder);
            }
        }
        // The contact counters (third and fifth words of the health record) and the tear flag
        // (sixth) are this frame's only.
        encoder.clear_buffer(&self.b.health, 8, Some(4));
        encoder.clear_buffer(&self.b.health, 16, Some(8));
        let mut stage_timer = self.stage_timer.take();
        let mut armed = stage_timer.as_mut().filter(|t| t.armed());
        if self.k.ropes.is_some() {
            // The frame's largest rope tension starts from 0.
            encoder.clear_buffer(&self.b.tension, 0, None);
        }
        self.record_frame(encoder, pins.len() as u32, substeps, iterations, armed.as_deref_mut());
        if let Some(t) = armed {
            t.resolve(encoder, substeps);
        }
        self.stage_timer = stage_timer;
        if let Some(timer) = &mut self.timer {
            timer.resolve(encoder);
        }
        self.time += frame_dt as f64;
        self.residual_inv_h2 = Some(plan.inv_h2);
        self.collider_pose.clone_from(&plan.collider_end);
        self.pinned.clear();
        self.pinned.extend(plan.pins.iter().map(|p| p.particle));
        Ok(plan.h)
    }

    /// Every substep's [`Params`] slot of `plan`, [`UNIFORM_SLOT`] apart.
    fn params_bytes(&self, plan: &SubstepPlan, pins: u32) -> Vec<u8> {
        let s = self.settings.xpbd;
        let model = &*self.model;
        let air = model.air();
        let max_speed2 = s.max_speed * s.max_speed;
        let (method, pbd_stiffness) = match s.method {
            Method::Xpbd => (0, 1.0),
            Method::Pbd { stiffness } => (1, stiffness),
        };
        let aero = air.is_active() && !model.triangles().is_empty();
        let mut bytes = vec![0u8; plan.slots.len() * UNIFORM_SLOT as usize];
        for (sub, slot) in plan.slots.iter().enumerate() {
            let p = Params {
                gravity: model.gravity().to_array(),
                h: plan.h,
                wind: slot.wind.to_array(),
                inv_h: plan.inv_h,
                inv_h2: plan.inv_h2,
                decay: plan.decay,
                frac: slot.frac,
                pbd_stiffness,
                particle_count: model.particle_count() as u32,
                pin_count: pins,
                collider_count: model.colliders().len() as u32,
                substep: sub as u32,
                triangle_count: model.triangles().len() as u32,
                method,
                last_substep: (sub + 1 == plan.slots.len()) as u32,
                max_speed2: if max_speed2.is_finite() { max_speed2 } else { f32::MAX },
                air_density: air.density,
                drag_coefficient: air.drag_coefficient,
                lift_coefficient: air.lift_coefficient,
                aero: aero as u32,
                normal_scale: self.normal_scale.0,
                normal_clamp: self.normal_scale.1,
                one_minus_frac: slot.one_minus_frac,
                zero: 0,
                max_strain: s.max_strain,
                structural_count: self.structural,
                tangent_scale: self.tangent_scale.0,
                tangent_clamp: self.tangent_scale.1,
                world_count: model.worlds().len() as u32,
                tear_flag_strain: self.tear_flag_strain,
                _pad: [0; 2],
            };
            let at = sub * UNIFORM_SLOT as usize;
            bytes[at..at + size_of::<Params>()].copy_from_slice(bytemuck::bytes_of(&p));
        }
        bytes
    }

    /// Records one frame — every substep, iteration and colour — into one compute pass
    /// (the stages of `hooke::solver::stages`, in their order), with a timestamp between the
    /// stages when `stages` is given.
    fn record_frame(
        &self,
        enc: &mut wgpu::CommandEncoder,
        pins: u32,
        substeps: u32,
        iterations: u32,
        mut stages: Option<&mut StageTimer>,
    ) {
        let s = XpbdSettings { substeps, iterations, ..self.settings.xpbd };
        let auto = iterates_to_tolerance(&self.settings);
        let model = &*self.model;
        let n = model.particle_count() as u32;
        let triangles = model.triangles().len() as u32;
        let aero = model.air().is_active() && triangles > 0;
        let k = &self.k;
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("hooke frame"),
            timestamp_writes: self.timer.as_ref().and_then(FrameTimer::writes),
        });
        let slot = |sub: u32| (&k.params_group, sub * UNIFORM_SLOT as u32);
        let mut stamp = |pass: &mut wgpu::ComputePass<'_>, stage: Option<Stage>| {
            if let Some(t) = stages.as_deref_mut() {
                t.stamp(pass, stage);
            }
        };
        stamp(&mut pass, None);
        k.predict.begin_frame(&mut pass, slot(0), n, pins);
        stamp(&mut pass, None);
        for sub in 0..s.substeps {
            // Aerodynamics.
            if aero {
                k.aerodynamics.record(&mut pass, slot(sub), n, triangles);
            }
            stamp(&mut pass, Some(Stage::Aerodynamics));
            // Predict (from the second substep on, without aerodynamics, done with the last
            // substep's finish).
            if sub == 0 || aero {
                k.predict.substep(&mut pass, slot(sub), n, pins);
            }
            stamp(&mut pass, Some(Stage::Predict));
            // Constraint sets: the distance set (colour by colour, or Jacobi), then the angle
            // sets colour by colour, every iteration.
            if let Some(local) = &k.local {
                local.record(&mut pass, slot(sub));
            }
            for it in (0..s.iterations).filter(|_| k.local.is_none()) {
                // Where the displacements are after this iteration's distance solve (Jacobi
                // writes the second buffer on even iterations).
                let alternate = match &k.jacobi {
                    Some(jacobi) => {
                        jacobi.record_iteration(&mut pass, slot(sub), n, it);
                        it % 2 == 0
                    }
                    None => {
                        k.distance.record(&mut pass, slot(sub), &k.colour_group, it == 0, false);
                        false
                    }
                };
                for set in [&k.dihedral, &k.rope_bending] {
                    if !set.is_empty() {
                        set.record(&mut pass, slot(sub), &k.colour_group, it == 0, alternate);
                    }
                }
                if let Some(cloths) = &k.global_cloth {
                    cloths.record(&mut pass, slot(sub), it == 0);
                }
                if let Some(ropes) = &k.ropes {
                    ropes.record(&mut pass, slot(sub), it == 0, alternate);
                }
                if let Some(tethers) = &k.tethers {
                    tethers.record(&mut pass, slot(sub), alternate);
                }
                // Iterating to a tolerance, the particle contacts and the colliders between the
                // iterations (their stages follow the last), as the CPU resolves them.
                if auto && it + 1 < s.iterations {
                    if let Some(contacts) = &k.self_collision {
                        contacts.record_between(&mut pass, slot(sub));
                    }
                    if let Some(collide) = &k.collide_between {
                        collide.record(&mut pass, slot(sub), n);
                        if let Some(t) = &k.triangle_contact {
                            t.record(&mut pass, slot(sub), n);
                        }
                    }
                }
            }
            if let Some(jacobi) = &k.jacobi {
                jacobi.finish(&mut pass, slot(sub), n, s.iterations);
            }
            stamp(&mut pass, Some(Stage::Constraints));
            // Particle contacts.
            if let Some(contacts) = &k.self_collision {
                contacts.record(&mut pass, slot(sub));
            }
            stamp(&mut pass, Some(Stage::Contacts));
            // Colliders.
            if !model.colliders().is_empty() {
                k.collide.record(&mut pass, slot(sub), n);
                if let Some(t) = &k.triangle_contact {
                    t.record(&mut pass, slot(sub), n);
                }
            }
            stamp(&mut pass, Some(Stage::Colliders));
            // Finish.
            if sub + 1 < s.substeps && !aero {
                k.predict.finish_and_substep(&mut pass, slot(sub + 1), n, pins);
            } else {
                k.finish.record(&mut pass, slot(sub), n);
            }
            stamp(&mut pass, Some(Stage::Finish));
        }
        if self.settings.normals && triangles > 0 {
            k.normals.record(&mut pass, slot(0), n, triangles);
            if let Some(t) = &k.tangents {
                t.record(&mut pass, slot(0), n, triangles);
            }
        }
        let tearing = if self.tear_flag_strain.is_finite() { self.model.distance().len() as u32 } else { 0 };
        k.health.record(&mut pass, slot(0), n, self.structural, tearing);
        if let Some(t) = stages {
            t.stamp_end(&mut pass);
        }
    }

    /// Recomputes normals (and tangents) of the current state on the device.
    fn submit_normals(&mut self) {
        let triangles = self.model.triangles().len() as u32;
        if triangles == 0 {
            return;
        }
        let device = self.ctx.device();
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke normals") });
        let plan = SubstepPlan::new(&self.model, &Control::new(), self.time, 1.0, 1, 0.0, &self.collider_pose)
            .expect("a valid plan of an empty control");
        upload(device, &mut enc, &self.b.params, &self.params_bytes(&plan, 0));
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            let n = self.model.particle_count() as u32;
            self.k.normals.record(&mut pass, (&self.k.params_group, 0), n, triangles);
            if let Some(t) = &self.k.tangents {
                t.record(&mut pass, (&self.k.params_group, 0), n, triangles);
            }
        }
        self.ctx.queue().submit([enc.finish()]);
    }

    /// The residuals of the current state ([`Solver::constraint_residuals`]), read back on
    /// the first call after a frame and kept until the state changes.
    fn read_residuals(&mut self) -> Option<&ConstraintResiduals> {
        if self.pending.is_some() {
            return None;
        }
        if self.residuals.is_none() {
            let mut out = ConstraintResiduals::default();
            if !self.measure_residuals(&mut out) {
                return None;
            }
            self.residuals = Some(out);
        }
        self.residuals.as_ref()
    }

    /// Reads positions, velocities and the last substep's λ back and computes the residuals
    /// into `out`; `false` when there is nothing to measure (see [`Solver::constraint_residuals`]).
    fn measure_residuals(&mut self, out: &mut ConstraintResiduals) -> bool {
        let Some(inv_h2) = self.residual_inv_h2 else { return false };
        if self.settings.xpbd.method != Method::Xpbd || self.pending.is_some() {
            return false;
        }
        let n = self.model.particle_count() as u64;
        let m = self.model.distance().len() as u64;
        let lambda = match &self.k.jacobi {
            Some(j) => j.final_lambda(&self.b, self.settings.xpbd.iterations),
            None => &self.b.lambda,
        };
        let size = (2 * n * VEC4 + 4 * m).max(16);
        if self.residual_staging.as_ref().is_none_or(|s| s.size() < size) {
            self.residual_staging = Some(self.ctx.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("hooke residual staging"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        let staging = self.residual_staging.as_ref().expect("made above");
        self.read_backs.set(self.read_backs.get() + 1);
        let bytes = readback::read_back(
            &self.ctx,
            staging,
            &[(&self.b.position, n * VEC4), (&self.b.velocity, n * VEC4), (lambda, 4 * m)],
        );
        let (x, rest) = bytes.split_at((n * VEC4) as usize);
        let (v, l) = rest.split_at((n * VEC4) as usize);
        let word = |c: &[u8]| f32::from_le_bytes(c.try_into().expect("4 bytes"));
        let x: Vec<[f32; 4]> =
            x.chunks_exact(16).map(|c| std::array::from_fn(|k| word(&c[4 * k..4 * k + 4]))).collect();
        let v: Vec<Vec3> = readback::vec3s(v).collect();
        let lambda: Vec<f32> = l.chunks_exact(4).map(word).collect();
        let (position, inv_mass) = (|k: usize| Vec3::new(x[k][0], x[k][1], x[k][2]), |k: usize| x[k][3]);
        hooke::diagnostics::distance_residuals(&self.model, position, inv_mass, &v, &lambda, inv_h2, out);
        true
    }

    /// Prepares the frame that started at `time` with the colliders at `poses` to be taken
    /// again: its snapshot restored, the clock and colliders put back.
    fn take_again(&mut self, time: f64, poses: &[Pose]) {
        self.restore_snapshot();
        self.time = time;
        self.collider_pose.clear();
        self.collider_pose.extend_from_slice(poses);
        self.residual_inv_h2 = None;
        self.residuals = None;
        if let Some(t) = &mut self.stage_timer {
            t.rearm();
        }
    }

    /// Restores the start-of-frame snapshot and clears the health record.
    fn restore_snapshot(&self) {
        let Some((x, v)) = &self.b.snapshot else { return };
        let size = self.model.particle_count() as u64 * VEC4;
        let mut enc =
            self.ctx.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke restore") });
        if size > 0 {
            enc.copy_buffer_to_buffer(x, 0, &self.b.position, 0, size);
            enc.copy_buffer_to_buffer(v, 0, &self.b.velocity, 0, size);
            if let Some(contacts) = &self.k.self_collision {
                contacts.restore(&mut enc);
            }
        }
        enc.clear_buffer(&self.b.displacement, 0, None);
        enc.clear_buffer(&self.b.health, 0, None);
        self.ctx.queue().submit([enc.finish()]);
    }
}

/// The most substeps a frame may take: the settings' count, or up to `max_substeps` with the
/// tension limit.
fn substep_capacity(settings: &GpuSettings, tension_limit: bool) -> u32 {
    let s = &settings.xpbd;
    if tension_limit { s.max_substeps.max(s.substeps) } else { s.substeps }
}

/// Records a copy of `bytes` into `dst` at offset 0 through a buffer made for it, so that the
/// value belongs to this point of the encoder (frames recorded back to back each get their own).
pub(crate) fn upload(device: &wgpu::Device, enc: &mut wgpu::CommandEncoder, dst: &wgpu::Buffer, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let src = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("hooke upload"),
        contents: bytes,
        usage: wgpu::BufferUsages::COPY_SRC,
    });
    enc.copy_buffer_to_buffer(&src, 0, dst, 0, bytes.len() as u64);
}

/// The global cloth solve's refusals: the CPU's ([`hooke::solver::xpbd::global_cloth::refusal`])
/// and the GPU's own ([`crate::global_cloth`]: a band too wide, a loop budget too short, a
/// scratch larger than the device binds).
fn check_global_cloth(ctx: &GpuContext, model: &Model, settings: &GpuSettings) -> Result<(), SolverError> {
    let s = &settings.xpbd;
    let message = hooke::solver::xpbd::global_cloth::refusal(model, s.method, s.cloth_solver).or_else(|| {
        let hinges = s.cloth_solver == hooke::ClothSolver::GlobalWithHinges;
        s.cloth_solver.is_global().then(|| {
            let swept = hooke::solver::solver_swept_colours(model, *s);
            let max_binding = ctx.device().limits().max_storage_buffer_binding_size;
            crate::global_cloth::refusal(model, &swept, hinges, ctx.loop_budget(), max_binding)
        })?
    });
    let message = message.or_else(|| {
        let wanted = global_cloths(model, s) && s.max_substeps > s.substeps;
        let members = hooke::collision::self_collision::members(model).0;
        (wanted && !members.is_empty()).then(|| {
            "the global cloth solve needs the tension limit on the substeps, which the GPU does not apply with \
             self-collision (a frame taken again would not restore its contact counts); turn self_collision off, set \
             max_substeps = substeps, or use the CPU"
                .to_string()
        })
    });
    match message {
        Some(message) => Err(SolverError::InvalidSettings { setting: "cloth_solver", message }),
        None => Ok(()),
    }
}

/// Refuses what would make one world's result depend on another's in a model of several: the
/// Jacobi solve's relaxation ω and spectral radius ρ estimated from the whole model's spectrum,
/// and iterations to a tolerance (the residual is the whole model's; the CPU refuses it too).
fn check_worlds(model: &Model, settings: &GpuSettings) -> Result<(), SolverError> {
    let worlds = model.worlds().len();
    if worlds > 1 && settings.xpbd.auto_iterations.is_some() {
        // As on the CPU: a residual over every world would let one world's iterations depend
        // on another.
        return Err(SolverError::InvalidSettings {
            setting: "iterations",
            message: format!(
                "\"auto\" measures the residual over the whole model; a model of {worlds} worlds needs a fixed count"
            ),
        });
    }
    if worlds > 1
        && let GpuSolve::Jacobi { relaxation, spectral_radius } = settings.solve
        && (relaxation.is_none() || spectral_radius.is_none())
    {
        return Err(SolverError::InvalidSettings {
            setting: "solve",
            message: format!(
                "the Jacobi solve estimates its relaxation ω and spectral radius ρ from the whole model; a model of \
                 {worlds} worlds needs both given, or Gauss–Seidel"
            ),
        });
    }
    Ok(())
}

/// The (start, count) of each colour of the distance set, the hinges and the rope joints, each
/// with the index of its first colour slot pair: the sets' colours are numbered one after the
/// other.
fn set_colours(model: &Model) -> [(Vec<(u32, u32)>, u32); 3] {
    let ranges = |r: &[std::ops::Range<u32>]| r.iter().map(|r| (r.start, r.end - r.start)).collect::<Vec<_>>();
    let distance = ranges(model.distance().colour_ranges());
    let dihedral = ranges(model.dihedral().colour_ranges());
    let rope = ranges(model.rope_bending().colour_ranges());
    let (d, h) = (distance.len() as u32, dihedral.len() as u32);
    [(distance, 0), (dihedral, d), (rope, d + h)]
}

/// Fills the colour slots of every set's colours, in [`set_colours`] order: for colour c, slot
/// 2c (first iteration of a substep: λ from 0) and 2c + 1 (later iterations).
fn write_colour_slots(queue: &wgpu::Queue, b: &Buffers, model: &Model) {
    let colours: Vec<(u32, u32)> = set_colours(model).into_iter().flat_map(|(c, _)| c).collect();
    let mut slots = vec![0u8; (2 * colours.len() as u64 * UNIFORM_SLOT) as usize];
    for (c, &(start, count)) in colours.iter().enumerate() {
        for first in 0..2u32 {
            let slot = ColourSlot { start, count, first: 1 - first, _pad: 0 };
            let at = (2 * c as u64 + first as u64) * UNIFORM_SLOT;
            slots[at as usize..at as usize + size_of::<ColourSlot>()].copy_from_slice(bytemuck::bytes_of(&slot));
        }
    }
    if !slots.is_empty() {
        queue.write_buffer(&b.colours, 0, &slots);
    }
}

impl Solver for GpuXpbdSolver {
    fn info(&self) -> SolverInfo {
        let name = match (self.settings.xpbd.method, self.settings.solve) {
            (Method::Xpbd, GpuSolve::GaussSeidel) => "xpbd-gpu",
            (Method::Pbd { .. }, GpuSolve::GaussSeidel) => "pbd-gpu",
            (Method::Xpbd, GpuSolve::Jacobi { .. }) => "xpbd-jacobi-gpu",
            (Method::Pbd { .. }, GpuSolve::Jacobi { .. }) => "pbd-jacobi-gpu",
        };
        SolverInfo {
            name: name.into(),
            substeps: self.settings.xpbd.substeps,
            iterations: self.settings.xpbd.iterations,
            parallel: true,
        }
    }

    fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// Needs wgpu's `TIMESTAMP_QUERY` and `TIMESTAMP_QUERY_INSIDE_PASSES` on the device
    /// ([`GpuContext::has_stage_timestamps`]); `false` without them.
    fn measure_stages(&mut self, on: bool) -> bool {
        if !self.ctx.has_stage_timestamps() {
            return false;
        }
        self.stage_timer = on.then(|| StageTimer::new(self.ctx.device(), self.settings.xpbd.substeps));
        true
    }

    /// The times of the one frame stamped since the last call (a read-back), or `None` when
    /// none was.
    fn take_stage_times(&mut self) -> Option<StageTimes> {
        let timer = self.stage_timer.as_mut()?;
        let times = timer.read(&self.ctx)?;
        self.read_backs.set(self.read_backs.get() + 1);
        Some(times)
    }

    fn contact_list_totals(&mut self) -> Option<(u64, u64)> {
        let (counters, at) = self.k.self_collision.as_ref()?.list_tallies()?;
        let bytes = self.read_at(&[(counters, at, 8)]);
        let tally: [u32; 2] = bytemuck::pod_read_unaligned(&bytes);
        Some((tally[0] as u64, tally[1] as u64))
    }

    fn time(&self) -> f64 {
        self.time
    }

    /// Encodes a frame ([`GpuXpbdSolver::encode_frame`]) into an encoder of its own, submits it,
    /// and reads the health record back when [`GpuSettings::health_interval`] frames have been
    /// stepped since the last read. Iterating to a tolerance ([`iterates_to_tolerance`]), it
    /// also reads the frame's residuals back and takes the frame again from its start with
    /// more iterations while they exceed the tolerance (the report's counts are those of the
    /// attempt kept).
    fn step(&mut self, control: &Control, frame_dt: f32) -> Result<StepReport, SolverError> {
        let (time, poses) = (self.time, self.collider_pose.clone());
        let s = self.settings.xpbd;
        // The count from the last frame's tension (see `applies_tension_limit`), as the CPU.
        let mut substeps = match self.tension_peak {
            Some(rate2) if self.tension_limit => {
                stability::substeps_for_tension(rate2, frame_dt, s.substeps, s.max_substeps)
            }
            _ => s.substeps,
        };
        self.tension_peak = None;
        self.tear_flag = None;
        let (mut retries, mut iteration_retries) = (0, 0);
        let tally_start = self.list_tally;
        let auto = s.auto_iterations.filter(|_| iterates_to_tolerance(&self.settings));
        let mut iterations = self.iterations;
        loop {
            let mut enc =
                self.ctx.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke step") });
            let h = self.encode_frame_with(&mut enc, control, frame_dt, substeps, iterations)?;
            self.ctx.queue().submit([enc.finish()]);
            let mut report = StepReport {
                substeps,
                iterations,
                total_iterations: substeps * iterations,
                retries,
                iteration_retries,
                ..StepReport::default()
            };
            if self.unchecked == 0 {
                self.unchecked_since = time;
            }
            self.unchecked += 1;
            let interval = self.settings.health_interval;
            if interval == 0 || self.unchecked < interval {
                return Ok(report);
            }
            self.unchecked = 0;
            let record = size_of::<HealthRecord>();
            let tallies = self.k.self_collision.as_ref().and_then(SelfCollision::list_tallies);
            let mut parts = vec![(&self.b.health, 0, record as u64)];
            if let Some((counters, at)) = tallies {
                parts.push((counters, at, 8));
            }
            if self.tension_limit {
                parts.push((&self.b.tension, 0, 4));
            }
            let bytes = self.read_at(&parts);
            let health: HealthRecord = bytemuck::pod_read_unaligned(&bytes[..record]);
            let mut at = record;
            if tallies.is_some() {
                let tally: [u32; 2] = bytemuck::pod_read_unaligned(&bytes[at..at + 8]);
                // Every attempt's builds and overflows (those of a frame taken again too), as
                // the device's totals count them.
                report.contact_list_builds = tally[0].wrapping_sub(tally_start[0]);
                report.contact_list_overflows = tally[1].wrapping_sub(tally_start[1]);
                self.list_tally = tally;
                at += 8;
            }
            if self.tension_limit {
                // The frame's tension: the largest of any rope segment or globally solved cloth
                // constraint in any of its substeps (or the cloth's turn rate).
                let rate2 = f32::from_bits(bytemuck::pod_read_unaligned::<u32>(&bytes[at..at + 4]));
                self.tension_peak = Some(rate2);
                // A frame whose tension came above the retry bound is taken again with the
                // count that tension asks for, from the snapshot of its start.
                let need = stability::substeps_for_tension(rate2, frame_dt, s.substeps, s.max_substeps);
                if h * rate2.sqrt() > stability::RETRY_MARGIN && need > substeps {
                    substeps = need;
                    retries += 1;
                    self.take_again(time, &poses);
                    continue;
                }
            }
            if health.nonfinite != 0 || health.too_fast != 0 || health.overstrained != 0 {
                let mut st = State { particle_position: Vec::new(), particle_velocity: Vec::new(), time: 0.0 };
                let mut err = self.try_read_state(&mut st).expect_err("a flagged record is a blow-up");
                // The time of the error is the start of the frame just stepped; with a longer
                // interval the runaway may have begun in one of the frames before, and the error
                // says from when (the viewer reads every 10 s: it named the last frame's start).
                if let SolverError::BlowUp { time: t, detail, .. } = &mut err {
                    *t = time;
                    if interval > 1 {
                        *t = self.unchecked_since;
                        detail.push_str(&unchecked_range(interval, self.unchecked_since, time + frame_dt as f64));
                    }
                }
                self.residual_inv_h2 = None;
                self.residuals = None;
                self.tension_peak = None;
                if self.b.snapshot.is_some() {
                    self.pending = None;
                    self.restore_snapshot();
                    self.time = time;
                    self.collider_pose = poses;
                } else {
                    self.pending = Some(err.clone());
                }
                return Err(err);
            }
            report.contacts = health.contacts;
            report.particle_contacts = health.particle_contacts;
            self.tear_flag = self.tear_flag_strain.is_finite().then_some(health.tear != 0);
            if let Some(a) = auto {
                let model = self.model.clone();
                let residual = self.read_residuals().map_or(0.0, |r| max_structural(&model, r));
                if residual > a.tolerance && iterations < a.max_iterations {
                    // Taken again with twice the count, from the start of the frame.
                    iterations = (2 * iterations).min(a.max_iterations);
                    iteration_retries += 1;
                    self.take_again(time, &poses);
                    continue;
                }
                // The next frame starts from this count, an eighth lower after a frame within
                // half the tolerance.
                self.iterations = if residual <= 0.5 * a.tolerance {
                    (iterations - (iterations / 8).max(1)).max(s.iterations)
                } else {
                    iterations
                };
            }
            return Ok(report);
        }
    }

    fn read_positions(&mut self, out: &mut Vec<Vec3>) {
        if let Err(e) = self.try_read_positions(out) {
            log::error!("hooke-gpu: {e}");
        }
    }

    fn read_state(&mut self, out: &mut State) {
        if let Err(e) = self.try_read_state(out) {
            log::error!("hooke-gpu: {e}");
        }
    }

    fn write_state(&mut self, state: &State) -> Result<(), SolverError> {
        check_state(&self.model, state)?;
        self.tear_flag = None;
        let x = buffers::position_records(&state.particle_position, self.model.particle_inv_mass());
        let v = buffers::velocity_records(&state.particle_velocity);
        let queue = self.ctx.queue();
        if !x.is_empty() {
            queue.write_buffer(&self.b.position, 0, bytemuck::cast_slice(&x));
            queue.write_buffer(&self.b.velocity, 0, bytemuck::cast_slice(&v));
        }
        self.state_written(state);
        Ok(())
    }

    /// Uploads the new parameters (compliances, damping, masses, radii, friction) into the
    /// existing buffers; gravity and air go with each frame's constants. No pipeline is
    /// compiled, and no bind group is made except the particle contacts' (when a body has
    /// self-collision on).
    fn notify_model_changed(&mut self, model: Arc<Model>) -> Result<(), SolverError> {
        check_same_topology(&self.model, &model)?;
        crate::self_collision::check_bodies(&model)?;
        // A material made rigid under the global cloth solve: refused before anything is uploaded.
        let s = &self.settings.xpbd;
        if let Some(message) = hooke::solver::xpbd::global_cloth::refusal(&model, s.method, s.cloth_solver) {
            return Err(SolverError::InvalidSettings { setting: "cloth_solver", message });
        }
        self.residual_inv_h2 = None;
        self.residuals = None;
        self.b.update_parameters(self.ctx.queue(), &model);
        if let Some(ropes) = &self.k.ropes {
            ropes.update_parameters(self.ctx.queue(), &model);
        }
        if let Some(cloths) = &self.k.global_cloth {
            cloths.update_parameters(self.ctx.queue(), &model);
        }
        if let Some(jacobi) = &mut self.k.jacobi {
            // The spectrum depends on the compliances and masses: estimate it again.
            jacobi.parameters = None;
        }
        if let Some(tethers) = &mut self.k.tethers {
            tethers.invalidate();
        }
        // A tear energy's breaking strain depends on the stiffness.
        (self.tear_flag_strain, self.tear_flag) = (tear_flag_strain(&model), None);
        // Self-collision may have been switched, and its friction changed: its buffers and
        // bind groups are made anew (the only ones a material change makes).
        self.k.self_collision = SelfCollision::new(
            &self.kernels,
            self.ctx.device(),
            &self.b,
            &model,
            self.settings.contact_search,
            self.ctx.is_cpu(),
        );
        self.list_tally = [0; 2];
        // Self-collision switched on or off decides the tension limit (within the substeps the
        // buffers were made for).
        self.tension_limit =
            applies_tension_limit(&model, &self.settings) && self.capacity >= substep_capacity(&self.settings, true);
        self.tension_peak = None;
        self.model = model;
        Ok(())
    }

    /// Makes the buffers and bind groups of `model` anew (the compiled kernels are kept) and
    /// loads `state`.
    fn rebuild(&mut self, model: Arc<Model>, state: &State) -> Result<(), SolverError> {
        self.rebuild_from(model, state, None)
    }

    /// As `rebuild`, keeping the tethers' search (the next frame searches only where the tear
    /// cut paths) and copying the constraint records the tear kept from the old buffers on
    /// the device ([`crate::patch`]).
    fn rebuild_torn(
        &mut self,
        model: Arc<Model>,
        parent: &[u32],
        copied: &hooke::tearing::CopiedRuns,
        state: &State,
    ) -> Result<(), SolverError> {
        hooke::solver::check_parent(&model, parent, self.model.particle_count())?;
        let mut cache = self.k.tethers.as_mut().map(Tethers::take_cache);
        // The tethers' search after the tear, which the next frame would make, made on the
        // host beside the rebuild, where the tear changed something.
        let old = self.model.clone();
        let from = hooke::tethers::TornFrom { old: &old, copied: &copied.distance };
        let mut rebuild = || self.rebuild_from(model.clone(), state, Some(copied));
        let (result, prepared) = match &mut cache {
            Some(c) => c.prepare_beside(&model, parent, Some(from), rebuild),
            None => (rebuild(), None),
        };
        if let (Some(tethers), Some(cache)) = (&mut self.k.tethers, cache) {
            match result {
                Ok(()) => tethers.carry(cache, parent, prepared),
                // The solver is unchanged on error, its tethers' search too.
                Err(_) => tethers.put_back(cache),
            }
        }
        result
    }

    /// The frames run on the device; the host only encodes and waits.
    fn solves_off_host(&self) -> bool {
        true
    }

    /// From the health record of the last frame, read after it (see the trait's method): the
    /// device tests every distance constraint against the model's lowest breaking strain
    /// less 10⁻⁴ at the end of each frame (`check_tear` in `health.wgsl`).
    fn tear_check(&self) -> Option<bool> {
        self.tear_flag
    }

    /// Reads positions (with the inverse masses the last substep used), velocities and the
    /// last substep's λ back in one read-back and computes the residuals on the host with
    /// [`hooke::diagnostics::distance_residuals`], the CPU solver's function: equal states
    /// give equal residuals. `false` without a frame since the last state, model or blow-up,
    /// for PBD, or while a blow-up is pending.
    fn constraint_residuals(&mut self, out: &mut ConstraintResiduals) -> bool {
        out.clear();
        let Some(r) = self.read_residuals() else { return false };
        out.strain.extend_from_slice(&r.strain);
        out.compliance_dominated.extend_from_slice(&r.compliance_dominated);
        true
    }
}

/// What a blow-up's message adds where the health record was not read after every frame: the
/// frames in which the runaway may have begun.
fn unchecked_range(interval: u32, since: f64, end: f64) -> String {
    format!(
        " (the health record is read every {interval} frames: the step where it began is one of those from t = \
         {since:.4} s to the end of the frame at t = {end:.4} s)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The global cloth solve goes with the Gauss–Seidel colours: the GPU's settings refuse it
    /// with the Jacobi solve, naming the setting.
    #[test]
    fn the_global_cloth_solve_is_refused_with_the_jacobi_solve() {
        let mut s = GpuSettings::default();
        assert!(s.validate().is_ok());
        for solver in [hooke::ClothSolver::Global, hooke::ClothSolver::GlobalWithHinges] {
            s.xpbd.cloth_solver = solver;
            s.solve = GpuSolve::GaussSeidel;
            assert!(s.validate().is_ok(), "{solver:?} with Gauss–Seidel");
            s.solve = GpuSolve::jacobi();
            match s.validate() {
                Err(SolverError::InvalidSettings { setting, .. }) => assert_eq!(setting, "cloth_solver"),
                other => panic!("expected {solver:?} refused with Jacobi, got {other:?}"),
            }
        }
    }
}
