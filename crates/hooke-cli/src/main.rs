//! `hooke`: run, validate and benchmark cloth and rope scenes.
// `hooke bench`'s JSON record is one `serde_json::json!` of many keys.
#![recursion_limit = "256"]

mod batch;
mod bench;
mod compare;
mod presets;
mod render;
mod run;
mod sdf;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "hooke",
    version,
    about = "Cloth and rope simulation: XPBD/PBD, collisions, friction; bakes caches for Blender, Houdini and Maya"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a scene and write a cache (default: the built-in cloth-on-sphere scene).
    Run(run::RunArgs),
    /// Bake the samples of a manifest (scenes with parameter overrides, sweeps) into a dataset
    /// folder with a JSON Lines index; `--shard i/n` (or a Slurm job array's task) runs one
    /// slice, `--resume` skips what is complete.
    Batch(batch::BatchArgs),
    /// Check a scene file (or a batch manifest and its samples) without running it.
    Validate {
        /// Scene file (TOML), or a batch manifest (TOML with `[[sample]]`/`[[sweep]]`, or
        /// `.jsonl`: every sample's scene is loaded with its keys set).
        scene: PathBuf,
    },
    /// Time a scene or a preset (`default`, `demo:N`, `tear:N`, `cut:N`, `grid:N`, `sheet:N`, `warp-cloth:N`,
    /// `newton-hanging:WxH`, `pile:N`, `stack:N`, `capsules:N`) and print ms/frame beside the accuracy reached.
    Bench(bench::BenchArgs),
    /// Compare solvers: `hooke compare integrators` writes CSV and PNG plots.
    Compare(compare::CompareArgs),
    /// Build a mesh collider's signed distance grid and cache it beside the mesh (as a scene's
    /// `shape = "mesh"` collider does at load), printing the build time.
    Sdf(sdf::SdfArgs),
    /// Simulate a scene and draw it off-screen: the last frame as PNG, optionally an animated
    /// PNG of every K-th frame (works on a software Vulkan such as lavapipe).
    Render(render::RenderArgs),
    /// Open a scene in the interactive viewer (default: the built-in default scene).
    View(ViewArgs),
}

/// Arguments of `hooke view`.
#[derive(clap::Args)]
struct ViewArgs {
    /// Scene file (TOML). Omitted: the built-in default scene.
    scene: Option<std::path::PathBuf>,
    /// Where to simulate: cpu, or gpu (XPBD/PBD scenes; drawn from the solver's buffers).
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// Close the window after this many frames (scripted runs).
    #[arg(long, allow_negative_numbers = true)]
    frames: Option<u64>,
    /// Open one of the article's demos instead of a scene: topology, integrators, pbd-rope, coloring or cloth.
    #[arg(long, conflicts_with = "scene")]
    demo: Option<String>,
}

fn view(args: ViewArgs) -> Result<()> {
    let demo = args.demo.as_deref().map(hooke_viewer::Demo::from_name).transpose()?;
    let scene = match (&args.scene, demo) {
        (_, Some(d)) => d.scene()?,
        (Some(path), None) => hooke_io::scene::load(path, memory_limit())?,
        (None, None) => presets::default_scene()?,
    };
    let backend = match args.backend {
        Backend::Cpu => hooke_viewer::Backend::Cpu,
        Backend::Gpu => hooke_viewer::Backend::Gpu,
    };
    hooke_viewer::run(scene, demo, backend, args.frames)
}

/// Raises the soft limit of open files to the hard limit: a cache keeps a few files open per
/// body until it is complete, and packed worlds or a batch's pack have hundreds of bodies (600
/// worlds of one cloth in USD passed the usual soft limit of 1024).
fn raise_open_file_limit() {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: plain system calls on a local struct.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
                limit.rlim_cur = limit.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
    }
}

fn main() -> ExitCode {
    // A closed pipe ends the process quietly, as it does `cat` (`hooke batch M --dry-run | head`),
    // instead of the panic of a failed print. Rust ignores SIGPIPE by default.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // A file that grows past `ulimit -f` fails its write (EFBIG), whose error path removes the
    // temporary file and names it, instead of the process being killed with its temporary
    // files left behind.
    #[cfg(unix)]
    // SAFETY: as above, one signal's disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    raise_open_file_limit();
    let cli = Cli::parse();
    let result: Result<()> = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Batch(args) => batch::batch(args),
        Command::Validate { scene } => validate(&scene),
        Command::Bench(args) => bench::bench(args),
        Command::Compare(args) => compare::compare(args),
        Command::Sdf(args) => sdf::sdf(args),
        Command::Render(args) => render::render(args),
        Command::View(args) => view(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", message(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes, joined by ": " — each cause only if the text so far does not
/// already hold it (many of the library errors print their cause in their own message).
fn message(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.is_empty() {
            text = part;
        } else if !text.contains(&part) {
            text = format!("{text}: {part}");
        }
    }
    text
}

fn validate(path: &std::path::Path) -> Result<()> {
    if batch::is_manifest(path) {
        return batch::validate(path);
    }
    let scene = hooke_io::scene::load(path, memory_limit())?;
    let m = &scene.model;
    println!(
        "{}: ok — scene {:?}: {}, {} particles, {} constraints in {} colours, {}, {}; {} at {} fps, {} solver, {} substeps × {}",
        path.display(),
        scene.name,
        count(m.bodies().len(), "body", "bodies"),
        m.particle_count(),
        m.distance().constraints().len(),
        m.distance().colour_count(),
        count(m.colliders().len(), "collider", "colliders"),
        count(scene.pins.len(), "pin", "pins"),
        count(scene.frames, "frame", "frames"),
        scene.fps,
        hooke_sim::make_cpu_solver(&scene).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?.info().name,
        scene.solver.substeps(),
        scene.solver.iterations_text()
    );
    report(&scene);
    Ok(())
}

/// `n` and the noun in the right number: "1 frame", "2 frames", "0 frames".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Prints what loading a scene did that its file does not show — the vertices welded in each
/// mesh cloth — and its warnings (on standard error, as `warning: …`).
pub fn report(scene: &hooke_io::scene::Scene) {
    for (body, map) in scene.model.bodies().iter().zip(&scene.vertex_maps) {
        if let Some(map) = map {
            let how = match map.weld_tolerance {
                Some(t) => format!("{} welded within {t:.3e} (file units)", count(map.welded(), "vertex", "vertices")),
                None => "welding off".to_string(),
            };
            println!(
                "cloth {:?}: mesh of {}, {how}: {}",
                body.name,
                count(map.vertex_count(), "vertex", "vertices"),
                count(map.particle_count(), "particle", "particles")
            );
        }
    }
    for w in &scene.warnings {
        eprintln!("warning: {w}");
    }
}

/// Turns self-collision on or off for every body of `scene` (`--self-collision`).
///
/// # Errors
/// A body whose material cannot collide (a cloth of thickness 0, a rope of radius 0), named.
/// Turns the triangles' contact with colliders on or off for every cloth (`--triangle-contact`).
pub fn set_triangle_contact(scene: &mut hooke_io::scene::Scene, on: bool) -> Result<()> {
    let mut model = (*scene.model).clone();
    for (k, body) in scene.model.bodies().iter().enumerate() {
        if let hooke::BodyMaterial::Cloth(m) = body.material {
            model = model
                .with_cloth_material(k, hooke::ClothMaterial { triangle_contact: on, ..m })
                .map_err(|e| anyhow::anyhow!("--triangle-contact {on}: {e}"))?;
        }
    }
    scene.model = std::sync::Arc::new(model);
    Ok(())
}

pub fn set_self_collision(scene: &mut hooke_io::scene::Scene, on: bool) -> Result<()> {
    let mut model = (*scene.model).clone();
    for (k, body) in scene.model.bodies().iter().enumerate() {
        model = match body.material {
            hooke::BodyMaterial::Cloth(m) => {
                model.with_cloth_material(k, hooke::ClothMaterial { self_collision: on, ..m })
            }
            hooke::BodyMaterial::Rope(m) => {
                model.with_rope_material(k, hooke::RopeMaterial { self_collision: on, ..m })
            }
        }
        .map_err(|e| anyhow::anyhow!("--self-collision {on}: {e}"))?;
    }
    for concern in hooke::collision::self_collision::concerns(&model) {
        if let hooke::collision::self_collision::SelfCollisionConcern::ThinnerThanSpacing {
            body,
            contact_distance,
            spacing,
        } = concern
        {
            eprintln!(
                "warning: --self-collision true: {:?} has a contact distance of {contact_distance} m (its thickness, or \
                 twice a rope's radius) below its particle spacing of {spacing:.4} m: a particle can pass between two \
                 particles of a layer",
                model.bodies()[body].name
            );
        }
    }
    scene.model = std::sync::Arc::new(model);
    Ok(())
}

/// Memory a model may use: the machine's available memory (Linux), else 16 GiB.
pub fn memory_limit() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(hooke::model::DEFAULT_MEMORY_LIMIT)
}

/// Where a solver runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The CPU solvers of the `hooke` crate.
    Cpu,
    /// The wgpu compute backend (`hooke-gpu`, XPBD/PBD only).
    Gpu,
}

/// How the GPU solves each substep's distance constraints (`--gpu-solve`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GpuSolveKind {
    /// Gauss–Seidel over colours: one dispatch per colour and iteration; the CPU's result.
    GaussSeidel,
    /// Jacobi: one dispatch per iteration, relaxed by ω (`--relaxation`) and accelerated by
    /// Chebyshev (`--spectral-radius`), both chosen from the model unless given.
    Jacobi,
}

/// The GPU constraint-solve options shared by `run` and `bench`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct GpuSolveArgs {
    /// With --backend gpu: how each substep's constraints are solved, gauss-seidel (one
    /// dispatch per colour) or jacobi (one dispatch per iteration, Chebyshev-accelerated).
    #[arg(long, value_enum, default_value = "gauss-seidel")]
    gpu_solve: GpuSolveKind,
    /// Jacobi relaxation ω in (0, 2] (default: chosen from the spectrum of the model's
    /// constraints at the substep, 0.29–0.46 for a stiff cloth grid, ≈ 0.9 for a soft one).
    /// A stiff cloth grid diverges above ≈ 0.5.
    #[arg(long, allow_negative_numbers = true)]
    relaxation: Option<f32>,
    /// Chebyshev spectral radius ρ in [0, 1) of the Jacobi solve (default: from the same
    /// spectrum); 0 turns the acceleration off.
    #[arg(long, allow_negative_numbers = true)]
    spectral_radius: Option<f32>,
    /// With --backend gpu and Gauss–Seidel: sweep each body's constraints in a workgroup of
    /// its own, every colour in one dispatch (the same result; faster for many small bodies
    /// or worlds, slower for one large cloth).
    #[arg(long)]
    gpu_tiles: bool,
    /// With --backend gpu and Gauss–Seidel: run all the iterations of a substep in workgroup
    /// memory, one workgroup per body and one dispatch per substep (bodies of at most 4 096
    /// particles on NVIDIA's 48 KiB, 2 730 on lavapipe): auto (where it pays: on a hardware GPU,
    /// every body of at most 2 304 particles, or at least 32 larger ones; never on a software
    /// adapter such as lavapipe), always (wherever it applies) or never (colour by colour). The
    /// same result either way.
    #[arg(long, value_enum, default_value = "auto")]
    gpu_local: GpuLocalArg,
    /// With --backend gpu: where the particle contacts (self-collision) find their
    /// candidates: auto (all pairs up to 4 096 colliding particles, neighbour lists from
    /// 8 192, the hash's cells between; always lists on a software adapter such as lavapipe),
    /// lists (rebuilt from the spatial hash only when a particle has moved far enough), cells
    /// (the hash's, rebuilt every substep) or all-pairs (every pair tested, no hash). The same
    /// contacts and result either way.
    #[arg(long, visible_alias = "contact-lists", value_enum, default_value = "auto")]
    pub contact_search: ContactSearchArg,
}

/// `--gpu-local`: [`hooke_gpu::LocalSweepMode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum GpuLocalArg {
    /// Where it pays.
    Auto,
    /// Wherever it applies.
    Always,
    /// Colour by colour.
    Never,
}

/// `--contact-search`: [`hooke_gpu::ContactSearch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ContactSearchArg {
    /// All pairs for small models, lists for large ones, cells between (always lists on a
    /// software adapter such as lavapipe).
    Auto,
    /// Always neighbour lists.
    #[value(alias = "always")]
    Lists,
    /// The hash's cells every substep.
    #[value(alias = "never")]
    Cells,
    /// Every pair tested, no hash.
    AllPairs,
}

impl ContactSearchArg {
    /// The library's mode.
    pub fn mode(self) -> hooke_gpu::ContactSearch {
        match self {
            ContactSearchArg::Auto => hooke_gpu::ContactSearch::Auto,
            ContactSearchArg::Lists => hooke_gpu::ContactSearch::Lists,
            ContactSearchArg::Cells => hooke_gpu::ContactSearch::Cells,
            ContactSearchArg::AllPairs => hooke_gpu::ContactSearch::AllPairs,
        }
    }
}

impl GpuSolveArgs {
    /// Whether `--gpu-tiles` is on, checked against `backend` and the solve.
    ///
    /// # Errors
    /// `--gpu-tiles` on the CPU or with `--gpu-solve jacobi`.
    pub fn tiles(&self, backend: Backend) -> Result<bool> {
        if self.gpu_tiles && (backend == Backend::Cpu || self.gpu_solve == GpuSolveKind::Jacobi) {
            anyhow::bail!("--gpu-tiles needs --backend gpu and the Gauss–Seidel solve");
        }
        Ok(self.gpu_tiles)
    }

    /// When the GPU sweeps a substep in workgroup memory (`--gpu-local`), checked against
    /// `backend` and the solve.
    ///
    /// # Errors
    /// `--gpu-local always` or `never` on the CPU or with `--gpu-solve jacobi`.
    pub fn local(&self, backend: Backend) -> Result<hooke_gpu::LocalSweepMode> {
        if self.gpu_local != GpuLocalArg::Auto && (backend == Backend::Cpu || self.gpu_solve == GpuSolveKind::Jacobi) {
            anyhow::bail!("--gpu-local always|never needs --backend gpu and the Gauss–Seidel solve");
        }
        Ok(match self.gpu_local {
            GpuLocalArg::Auto => hooke_gpu::LocalSweepMode::Auto,
            GpuLocalArg::Always => hooke_gpu::LocalSweepMode::Always,
            GpuLocalArg::Never => hooke_gpu::LocalSweepMode::Never,
        })
    }

    /// Where the GPU's particle contacts find their candidates (`--contact-search`), checked
    /// against `backend`.
    ///
    /// # Errors
    /// `--contact-search` other than auto on the CPU (its contacts use the CPU's own
    /// neighbour lists; the option would be ignored).
    pub fn contact_search(&self, backend: Backend) -> Result<hooke_gpu::ContactSearch> {
        if self.contact_search != ContactSearchArg::Auto && backend == Backend::Cpu {
            anyhow::bail!(
                "--contact-search lists|cells|all-pairs needs --backend gpu (the CPU's particle contacts have their own \
                 neighbour lists)"
            );
        }
        Ok(self.contact_search.mode())
    }

    /// The solve these options ask for on `backend`.
    ///
    /// # Errors
    /// `--gpu-solve jacobi` or `--relaxation` on the CPU, `--relaxation` without
    /// `--gpu-solve jacobi` or outside (0, 2].
    pub fn solve(&self, backend: Backend) -> Result<hooke_gpu::GpuSolve> {
        let jacobi = self.gpu_solve == GpuSolveKind::Jacobi;
        let tuned = self.relaxation.is_some() || self.spectral_radius.is_some();
        if backend == Backend::Cpu && (jacobi || tuned) {
            anyhow::bail!(
                "--gpu-solve jacobi, --relaxation and --spectral-radius need --backend gpu (the CPU solves by Gauss–Seidel)"
            );
        }
        if !jacobi && tuned {
            anyhow::bail!("--relaxation and --spectral-radius apply to --gpu-solve jacobi only");
        }
        if let Some(w) = self.relaxation
            && !(w > 0.0 && w <= 2.0)
        {
            anyhow::bail!("--relaxation: the Jacobi relaxation ω must be in (0, 2], got {w}");
        }
        if let Some(rho) = self.spectral_radius
            && !(0.0..1.0).contains(&rho)
        {
            anyhow::bail!("--spectral-radius: the Chebyshev spectral radius ρ must be in [0, 1), got {rho}");
        }
        Ok(match self.gpu_solve {
            GpuSolveKind::GaussSeidel => hooke_gpu::GpuSolve::GaussSeidel,
            GpuSolveKind::Jacobi => {
                hooke_gpu::GpuSolve::Jacobi { relaxation: self.relaxation, spectral_radius: self.spectral_radius }
            }
        })
    }
}

/// The factory options for `backend` and the GPU solve asked for.
pub fn solver_options(backend: Backend, gpu_solve: hooke_gpu::GpuSolve) -> hooke_sim::SolverOptions {
    let mut options = hooke_sim::SolverOptions::new(match backend {
        Backend::Cpu => hooke_sim::Backend::Cpu,
        Backend::Gpu => hooke_sim::Backend::Gpu,
    });
    options.gpu_solve = gpu_solve;
    options
}

/// Builds the global rayon pool (`threads` workers, all cores by default), every thread that
/// simulates flushing subnormal floats to zero (see `hooke::fp`); returns the thread count.
pub fn set_threads(threads: Option<usize>) -> Result<usize> {
    if let Some(n) = threads {
        const MAX: usize = 1024;
        anyhow::ensure!((1..=MAX).contains(&n), "--threads must be between 1 and {MAX}, got {n}");
    }
    Ok(hooke::fp::thread_pool(threads, true)?)
}

#[cfg(test)]
mod tests {
    use super::message;

    /// An error whose own text already holds its cause's.
    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "tearing: {}", self.0)
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    /// Each cause once: `{:#}` would print "frame 3: tearing: no vt: no vt".
    #[test]
    fn causes_already_in_the_message_are_not_repeated() {
        let e = anyhow::Error::new(Outer(std::io::Error::other("no vt"))).context("frame 3");
        assert_eq!(format!("{e:#}"), "frame 3: tearing: no vt: no vt");
        assert_eq!(message(&e), "frame 3: tearing: no vt");
        let plain = anyhow::Error::new(std::io::Error::other("disk full")).context("writing out/a.usda");
        assert_eq!(message(&plain), "writing out/a.usda: disk full");
    }
}
