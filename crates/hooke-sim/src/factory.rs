//! The scene-to-solver factory.

use hooke::Solver;
use hooke_gpu::{ContactSearch, GpuContext, GpuSettings, GpuSolve, GpuXpbdSolver, LocalSweepMode};
use hooke_io::scene::{Scene, SolverChoice};
use std::sync::Arc;

/// Where a solver runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// The CPU solvers of the `hooke` crate (every method).
    #[default]
    Cpu,
    /// The wgpu compute backend of `hooke-gpu` (XPBD and PBD).
    Gpu,
}

impl Backend {
    /// `cpu` or `gpu`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
        }
    }
}

/// How to make a scene's solver.
#[derive(Clone, Debug)]
pub struct SolverOptions {
    /// Where it runs.
    pub backend: Backend,
    /// GPU: how each substep's constraints are solved (ignored on the CPU).
    pub gpu_solve: GpuSolve,
    /// GPU: frames between reads of the health record ([`GpuSettings::health_interval`]):
    /// 1 makes a blow-up an error of the step that caused it, as on the CPU.
    pub health_interval: u32,
    /// GPU: open a device with timestamp queries where the adapter has them (benchmarks).
    pub timestamps: bool,
    /// GPU: the context to run on (a viewer's device); `None` opens one.
    pub context: Option<Arc<GpuContext>>,
    /// GPU, Gauss–Seidel: sweep each body in a workgroup of its own ([`GpuSettings::tiles`]).
    pub tiles: bool,
    /// GPU, Gauss–Seidel: when every iteration of a substep runs in workgroup memory
    /// ([`GpuSettings::local`]).
    pub local: LocalSweepMode,
    /// GPU: where the particle contacts find their candidates
    /// ([`GpuSettings::contact_search`]).
    pub contact_search: ContactSearch,
}

impl SolverOptions {
    /// Defaults for `backend`: Gauss–Seidel on the GPU, health read after every frame, no
    /// timestamps, a device of its own.
    pub fn new(backend: Backend) -> SolverOptions {
        SolverOptions {
            backend,
            gpu_solve: GpuSolve::GaussSeidel,
            health_interval: 1,
            timestamps: false,
            context: None,
            tiles: false,
            local: LocalSweepMode::Auto,
            contact_search: ContactSearch::Auto,
        }
    }
}

/// A solver made by [`make_solver`], with a description of where it runs.
pub struct MadeSolver {
    /// The solver.
    pub solver: Box<dyn Solver>,
    /// `cpu`, or the GPU adapter's description.
    pub device: String,
}

/// Errors of [`make_solver`].
#[derive(Debug, thiserror::Error)]
pub enum FactoryError {
    /// The solver rejected its settings or the model.
    #[error(transparent)]
    Solver(#[from] hooke::SolverError),
    /// No GPU, or the GPU solver could not be made.
    #[error(transparent)]
    Gpu(#[from] hooke_gpu::GpuError),
    /// The scene's method does not run on the backend asked for.
    #[error("{0}")]
    Unsupported(String),
}

/// The scene's solver, as its `[solver]` section and `options` ask.
///
/// # Errors
/// [`FactoryError::Solver`] for settings the solver rejects (or, for force-based integrators,
/// a rigid constraint); [`FactoryError::Unsupported`] for a force-based method on the GPU;
/// [`FactoryError::Gpu`] when no device can be opened or the model does not fit it.
pub fn make_solver(scene: &Scene, options: &SolverOptions) -> Result<MadeSolver, FactoryError> {
    match options.backend {
        Backend::Cpu => Ok(MadeSolver { solver: make_cpu_solver(scene)?, device: "cpu".into() }),
        Backend::Gpu => {
            let solver = make_gpu_solver(scene, options)?;
            let device = solver.context().describe();
            Ok(MadeSolver { solver: Box::new(solver), device })
        }
    }
}

/// The scene's solver on the CPU, as [`make_solver`] makes it for [`Backend::Cpu`].
///
/// # Errors
/// [`FactoryError::Solver`] for settings the solver rejects, or a rigid constraint for a
/// force-based integrator.
pub fn make_cpu_solver(scene: &Scene) -> Result<Box<dyn Solver>, FactoryError> {
    Ok(match scene.solver {
        SolverChoice::Position(s) => Box::new(hooke::XpbdSolver::new(scene.model.clone(), s)?),
        SolverChoice::Force(s) => Box::new(hooke::ForceSolver::new(scene.model.clone(), s)?),
    })
}

/// The scene's solver on the GPU, as [`make_solver`] makes it for [`Backend::Gpu`], with its
/// GPU-only methods (buffers for rendering, frame timing).
///
/// # Errors
/// As [`make_solver`].
pub fn make_gpu_solver(scene: &Scene, options: &SolverOptions) -> Result<GpuXpbdSolver, FactoryError> {
    let SolverChoice::Position(xpbd) = scene.solver else {
        return Err(FactoryError::Unsupported(
            "the GPU runs XPBD and PBD only; this scene uses a force-based integrator".into(),
        ));
    };
    let ctx = match &options.context {
        Some(ctx) => ctx.clone(),
        None if options.timestamps => GpuContext::with_timestamps()?,
        None => GpuContext::new()?,
    };
    Ok(GpuXpbdSolver::new(ctx, scene.model.clone(), gpu_settings(xpbd, options))?)
}

/// The GPU solver's settings for a scene's `xpbd` settings and `options`, as
/// [`make_gpu_solver`] makes them.
pub fn gpu_settings(xpbd: hooke::XpbdSettings, options: &SolverOptions) -> GpuSettings {
    GpuSettings {
        xpbd,
        health_interval: options.health_interval,
        normals: true,
        solve: options.gpu_solve,
        tiles: options.tiles,
        local: options.local,
        contact_search: options.contact_search,
    }
}
