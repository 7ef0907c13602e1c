//! Baking a scene: simulated frame by frame into a cache (`.usda`, OBJ sequence or PC2) and
//! `diagnostics.csv`, with the convergence monitor, tearing, `--strict` and blow-up handling of
//! `hooke run` — one loop for the command line, `hooke batch` and the Python bindings.
//!
//! Nothing half-written is left: the caches and the CSV are written to temporary files and
//! renamed when finished. A run that blows up ([`hooke::SolverError::BlowUp`]), meets a tear
//! it cannot make ([`TearError`]) or is interrupted stops there and keeps the frames before
//! it, reported as [`Baked::failure`] —
//! in [`BakeSettings::failed_dir`] where one is given, so that an earlier, complete cache of
//! the same scene is not replaced by a cut-short one; a run stopped by
//! [`BakeSettings::strict`] keeps nothing.

use crate::{MadeSolver, SolverOptions, TearCounts, TearError, Tearing, make_solver};
use glam::Vec3;
use hooke::diagnostics::{BodyConvergence, ConstraintResiduals, pinned_particles};
use hooke::{Diagnostics, Model, Solver, SolverError};
use hooke_io::cache::{self, CacheError, CacheSpec, Format};
use hooke_io::scene::{Scene, SolverChoice};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// How to bake a scene.
#[derive(Clone, Debug)]
pub struct BakeSettings {
    /// Output folder, created if missing: the cache and `diagnostics.csv` go there (those of
    /// a run cut short into [`BakeSettings::failed_dir`], where one is given).
    pub dir: PathBuf,
    /// Cache format.
    pub format: Format,
    /// Where and how the solver runs.
    pub options: SolverOptions,
    /// Stop with [`BakeError::Strict`], keeping no cache, as soon as a body's residual stretch
    /// strain away from its pins exceeds the scene's `residual_tolerance`.
    pub strict: bool,
    /// Where a run that stops early (a blow-up, a tear it cannot make, an interruption) puts the frames before it
    /// and their `diagnostics.csv`, created if missing: a subfolder of `dir` (the renames
    /// cross into it), so that a cut-short cache never takes the place of an earlier, complete
    /// one in `dir` ([`FAILED_FOLDER`] for `hooke run`). `None`: in `dir`, as a finished run
    /// (a batch's sample folders, which hold nothing earlier).
    pub failed_dir: Option<PathBuf>,
}

/// The subfolder of the output folder where `hooke run` and the Python bindings' `bake` put
/// the frames of a run that stopped early ([`BakeSettings::failed_dir`]).
pub const FAILED_FOLDER: &str = "failed";

/// Why a bake stopped without a result. A blow-up is not one of these: it is a result, with
/// the frames before it written ([`Baked::failure`]).
#[derive(Debug, thiserror::Error)]
pub enum BakeError {
    /// The solver could not be made.
    #[error(transparent)]
    Factory(#[from] crate::FactoryError),
    /// The scene cannot be baked as asked (a tearing scene to PC2, an output path that is not
    /// a folder).
    #[error("{0}")]
    Invalid(String),
    /// The cache could not be written.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// `diagnostics.csv` could not be written.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A run cut short (a blow-up, an interruption) whose frames could not be written into
    /// [`BakeSettings::failed_dir`]: why it stopped, and what failed. Some of its files may be
    /// there; `dir` is left as it was.
    #[error("{0}")]
    CutShort(String),
    /// Stopped by [`BakeSettings::strict`]: the message names the body, its residual and what
    /// would help. Nothing was kept.
    #[error("{0} Stopped by --strict; no cache was written.")]
    Strict(String),
}

/// Why a bake stopped before its last frame, with the frames before it written.
#[derive(Debug)]
pub struct Failure {
    /// The frame that could not be made.
    pub frame: usize,
    /// The solver's error (a blow-up names the particle and what it reached).
    pub error: Option<SolverError>,
    /// The tear that could not be made after the frame (a body without texture coordinates,
    /// say): the frame is not written.
    pub tear: Option<TearError>,
    /// Stopped by the caller's flag (Ctrl-C) rather than by the solver.
    pub interrupted: bool,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.error, &self.tear) {
            (Some(e), _) => write!(f, "frame {}: {e}{}", self.frame, speed_limit_hint(e)),
            (None, Some(e)) => write!(f, "frame {}: {e}", self.frame),
            (None, None) => write!(f, "frame {}: interrupted", self.frame),
        }
    }
}

/// What to add to the message of `e` where it is a particle past the blow-up speed limit: how to
/// raise the limit, if that speed is real (a long free fall, a fast throw); empty otherwise.
pub fn speed_limit_hint(e: &SolverError) -> &'static str {
    match e {
        SolverError::BlowUp { detail, .. } if detail.contains(" m/s (limit ") => {
            " (if that speed is real, set [solver] max_speed above it: unless the scene sets it, the limit is \
             derived from the scene's size, gravity, wind and collider motion)"
        }
        _ => "",
    }
}

/// What tearing did over a bake.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TornTotals {
    /// Frames after which something tore.
    pub frames: usize,
    /// Constraints broken.
    pub broken: usize,
    /// Particles split.
    pub split: usize,
}

/// The result of a bake.
pub struct Baked {
    /// Frames written, frame 0 (the initial state) included.
    pub frames_written: usize,
    /// Frame 0's diagnostics.
    pub first: Diagnostics,
    /// Over the frames written: the largest stretch strain, penetration (m) and NaN count; the
    /// energies (J) and time (s) of the last frame.
    pub worst: Diagnostics,
    /// The convergence monitor: each body's strains and residuals over the run.
    pub monitor: ConvergenceMonitor,
    /// What tearing did.
    pub torn: TornTotals,
    /// Iterations over all substeps, substeps, and the most iterations in one substep.
    pub iterations: (u64, u64, u32),
    /// Frames taken again from their start with more iterations per substep, and the attempts
    /// taken again in all (the GPU iterating to a tolerance decides per frame,
    /// `hooke_gpu::iterates_to_tolerance`; 0 on the CPU).
    pub iteration_retries: (usize, u64),
    /// Frames whose substeps the tension limit raised above the scene's, the most substeps of
    /// one frame, and the frames it took again from their start
    /// (`hooke::solver::xpbd::stability`).
    pub raised_substeps: (usize, u32, usize),
    /// Members whose neighbour list overflowed, summed over the substeps (the GPU's particle
    /// contacts; those members took their contacts from the hash's cells instead, none lost).
    pub contact_list_overflows: u64,
    /// The cache's files.
    pub files: Vec<PathBuf>,
    /// `diagnostics.csv`.
    pub diagnostics: PathBuf,
    /// Wall-clock time of the frames (s).
    pub seconds: f64,
    /// Simulated time reached (s).
    pub time: f64,
    /// The model at the end (torn, where the scene tears).
    pub model: std::sync::Arc<Model>,
    /// Particle positions at the end (m), one per particle of [`Baked::model`].
    pub positions: Vec<Vec3>,
    /// Why it stopped early, if it did. (After a tear that could not be made, [`Baked::time`]
    /// is that frame's end, which is not written, and a cut made earlier in the same frame
    /// may have changed the model the positions are of.)
    pub failure: Option<Failure>,
}

/// A bake ready to run: the scene's solver made and frame 0 measured, so that its caller can
/// say what it runs before it does ([`Bake::solver_name`], [`Bake::device`]).
pub struct Bake<'s> {
    scene: &'s Scene,
    settings: BakeSettings,
    solver: Box<dyn Solver>,
    device: String,
    note: Option<String>,
}

/// Whether `scene` can be written as `format`: a scene that tears (a cloth with a
/// `tear_strain` or `tear_energy`, or a `[[cut]]`) changes its vertex count, which PC2 cannot
/// hold.
///
/// # Errors
/// [`BakeError::Invalid`] naming the scene for a tearing scene written to PC2.
pub fn check_format(scene: &Scene, format: Format) -> Result<(), BakeError> {
    if Tearing::for_scene(scene).active() && format == Format::Pc2 {
        return Err(BakeError::Invalid(format!(
            "scene {:?} tears (a cloth has a tear_strain or tear_energy, or the scene a [[cut]]) and PC2 holds a fixed vertex \
             count: write --format usda or obj",
            scene.name
        )));
    }
    Ok(())
}

impl<'s> Bake<'s> {
    /// Makes `scene`'s solver as `settings` ask.
    ///
    /// # Errors
    /// [`BakeError::Factory`] if the solver cannot be made, [`BakeError::Invalid`] for a tearing
    /// scene written to PC2 or an output path that exists and is not a folder.
    pub fn new(scene: &'s mut Scene, settings: BakeSettings) -> Result<Bake<'s>, BakeError> {
        if settings.dir.exists() && !settings.dir.is_dir() {
            return Err(BakeError::Invalid(format!(
                "output directory {} exists and is not a directory",
                settings.dir.display()
            )));
        }
        check_format(scene, settings.format)?;
        let MadeSolver { solver, device } = make_solver(scene, &settings.options)?;
        let mut note = None;
        if let SolverChoice::Position(x @ hooke::XpbdSettings { auto_iterations: Some(_), .. }) = scene.solver
            && settings.options.backend == crate::Backend::Gpu
            && !hooke_gpu::iterates_to_tolerance(&crate::factory::gpu_settings(x, &settings.options))
        {
            // The Jacobi solve, or a health record not read every frame: the fixed minimum.
            scene.solver.set_iterations(scene.solver.iterations());
            let n = scene.solver.iterations();
            note = Some(format!(
                "iterations = \"auto\" needs the GPU's Gauss–Seidel solve with its health read every frame; this \
                 run has {n} iteration{} per substep and the residual is reported below",
                if n == 1 { "" } else { "s" }
            ));
        }
        // The tension limit raises a rope's substeps for a scene run alone, on the CPU and on
        // the GPU where it reads every frame's health (`hooke_gpu::applies_tension_limit`); a
        // model of several worlds, and the GPU otherwise, run the fixed count: say which ropes
        // ask for more.
        let gpu = settings.options.backend == crate::Backend::Gpu;
        let packed = scene.model.worlds().len() > 1;
        let gpu_limit = |x: hooke::XpbdSettings| {
            let s = hooke_gpu::GpuSettings {
                xpbd: x,
                health_interval: settings.options.health_interval,
                ..hooke_gpu::GpuSettings::default()
            };
            hooke_gpu::applies_tension_limit(&scene.model, &s)
        };
        if (gpu || packed)
            && let SolverChoice::Position(x) = scene.solver
            && x.method == hooke::Method::Xpbd
            && x.rope_solver == hooke::RopeSolver::Direct
            && (packed || !gpu_limit(x))
        {
            let (runs, risk, remedy) = if gpu && !packed {
                (
                    "the GPU does not apply the limit here (self-collision, or health not read every frame)",
                    "there",
                    ", or run it on the CPU",
                )
            } else {
                ("a model of several worlds keeps its count", "packed, and differs from its run alone", "")
            };
            for (b, need) in hooke::solver::xpbd::stability::rope_weight_substeps(&scene.model, 1.0 / scene.fps) {
                if need > x.substeps {
                    let text = format!(
                        "rope {:?} needs about {need} substeps per frame by the tension limit when it hangs by its own \
                         weight (more when it swings), and {runs} (it runs {}): it may zigzag and blow up {risk}; set \
                         [solver] substeps = {need} or more{remedy}",
                        scene.model.bodies()[b].name,
                        x.substeps,
                    );
                    note = Some(match note {
                        Some(n) => format!("{n}; {text}"),
                        None => text,
                    });
                }
            }
        }
        let scene: &'s Scene = scene;
        Ok(Bake { scene, settings, solver, device, note })
    }

    /// The scene being baked (with "auto" iterations fixed where the GPU cannot iterate to a
    /// tolerance, see [`Bake::note`]).
    pub fn scene(&self) -> &Scene {
        self.scene
    }

    /// The solver's name (`XPBD`, `implicit Euler`, …).
    pub fn solver_name(&self) -> String {
        self.solver.info().name.to_string()
    }

    /// `cpu`, or the GPU adapter's description.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// A note on how the settings were adapted to the backend (auto iterations on the GPU
    /// where it cannot iterate to a tolerance), and
    /// on the ropes whose weight asks for more substeps than the GPU or a model of several
    /// worlds runs (the tension limit raises them only on the CPU, for a scene run alone).
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// Runs every frame of the scene. `stop`, when set (by a Ctrl-C handler, say), ends the
    /// bake after the current frame, with the frames done written; `on_frame(frame, time)` is
    /// called after each frame (a progress bar).
    ///
    /// # Errors
    /// [`BakeError`] for files that cannot be written, a torn model the cache cannot follow,
    /// and a [`BakeSettings::strict`] stop; a blow-up or a tear that cannot be made is returned
    /// in [`Baked::failure`] instead.
    pub fn run(mut self, stop: &AtomicBool, mut on_frame: impl FnMut(usize, f64)) -> Result<Baked, BakeError> {
        let scene = self.scene;
        let dir = self.settings.dir.clone();
        let format = self.settings.format;
        let mut model = scene.model.clone();
        let mut tearing = Tearing::for_scene(scene);
        let dt = 1.0 / scene.fps;
        // Mesh cloths are written in their files' vertex order (welded vertices repeated).
        let spec = CacheSpec {
            dir: &dir,
            scene_name: &scene.name,
            fps: scene.fps,
            model: &model,
            vertex_maps: &scene.vertex_maps,
        };
        let mut writer = cache::create(format, &spec)?;
        let names: Vec<&str> = model.bodies().iter().map(|b| b.name.as_str()).collect();
        let mut csv = CsvWriter::create(&dir.join("diagnostics.csv"), &names)?;
        // The self-penetration is measured over the bodies with self-collision: empty without any.
        csv.self_collision = model.bodies().iter().any(|b| b.self_collision());
        let mut state = hooke::State::from_model(&model);
        let solver = self.solver.as_mut();
        solver.read_state(&mut state);
        let first = Diagnostics::measure(
            &model,
            &state.particle_position,
            &state.particle_velocity,
            0.0,
            &scene.collider_poses_at(0.0),
        );
        let mut monitor = ConvergenceMonitor::new(scene, &solver.info().name);
        let mut pinned = Vec::new();
        let mut residuals = ConstraintResiduals::default();
        let mut bodies = Vec::new();
        // A tearing frame's bodies as solved, before the tear.
        let mut solved = Vec::new();
        pinned_particles(&model, &scene.control_at(0.0), &mut pinned);
        BodyConvergence::measure(&model, &state.particle_position, &pinned, None, &mut bodies);
        monitor.record(0, 0.0, &bodies);
        writer.write_frame(0, &state.particle_position)?;
        csv.row(0, &first, [Some(0); 5], &bodies)?;

        let started = Instant::now();
        let mut worst = first;
        let mut failure = None;
        let mut written = 1usize;
        let mut torn = TornTotals::default();
        let mut contact_list_overflows = 0u64;
        let (mut iterations, mut substeps, mut most) = (0u64, 0u64, 0u32);
        let (mut raised, mut most_substeps, mut retried) = (0usize, 0u32, 0usize);
        let mut iteration_retries = (0usize, 0u64);
        for frame in 1..=scene.frames {
            if stop.load(Ordering::SeqCst) {
                failure = Some(Failure { frame, error: None, tear: None, interrupted: true });
                break;
            }
            let control = tearing.control(scene.control_at(solver.time()));
            let report = match solver.step(&control, dt) {
                Ok(report) => report,
                Err(e) => {
                    failure = Some(Failure { frame, error: Some(e), tear: None, interrupted: false });
                    break;
                }
            };
            iterations += report.total_iterations as u64;
            substeps += report.substeps as u64;
            most = most.max(report.iterations);
            retried += (report.retries > 0) as usize;
            iteration_retries.0 += (report.iteration_retries > 0) as usize;
            iteration_retries.1 += u64::from(report.iteration_retries);
            if report.substeps > scene.solver.substeps() {
                raised += 1;
                most_substeps = most_substeps.max(report.substeps);
            }
            solver.read_state(&mut state);
            // A frame that tears is measured before it tears, on the model it was solved on:
            // the solver of the torn model has no multipliers before its next substep.
            let solved_on = tearing.active() && solver.constraint_residuals(&mut residuals);
            if solved_on {
                pinned_particles(&model, &control, &mut pinned);
                BodyConvergence::measure(&model, &state.particle_position, &pinned, Some(&residuals), &mut solved);
            }
            // Tearing: what broke in this frame breaks now; the frame is written torn.
            // (Nothing to do where the solver ruled a tear out and no cut is due.)
            let tear = if tearing.due(solver) {
                match tearing.after_frame(solver, &mut state) {
                    Ok(tear) => tear,
                    Err(source) => {
                        // As a blow-up: the frames before it are kept (in `failed_dir`).
                        failure = Some(Failure { frame, error: None, tear: Some(source), interrupted: false });
                        break;
                    }
                }
            } else {
                None
            };
            let rebuilt = tear.is_some();
            // (A tear whose broken constraints its flaps all made again, at their present
            // lengths, broke nothing: diagnostics.csv counts 0 for it, and so does the monitor.)
            if rebuilt && solved_on && tear.is_some_and(|t| t.broken + t.split > 0) {
                for &k in tearing.strained_bodies() {
                    monitor.tore(k, frame, &solved[k]);
                }
            }
            if rebuilt {
                model = solver.model().clone();
                if let Err(e) = writer.set_model(&model) {
                    let e = CacheError::Invalid(format!(
                        "frame {frame}: the cache cannot follow the tear: {e}; no cache was written"
                    ));
                    return Err(discard(writer, csv, e.into()));
                }
            }
            let tear: TearCounts = tear.unwrap_or_default();
            if tear.broken + tear.split > 0 {
                torn.frames += 1;
                torn.broken += tear.broken as usize;
                torn.split += tear.split as usize;
            }
            let t = solver.time();
            let poses = scene.collider_poses_at(t);
            let d = Diagnostics::measure(&model, &state.particle_position, &state.particle_velocity, t, &poses);
            if solved_on && !rebuilt {
                // Nothing tore: the measurement before is this frame's (one read-back of the
                // multipliers on the GPU, not two).
                bodies.clone_from(&solved);
            } else {
                pinned_particles(&model, &control, &mut pinned);
                let measured = solver.constraint_residuals(&mut residuals).then_some(&residuals);
                BodyConvergence::measure(&model, &state.particle_position, &pinned, measured, &mut bodies);
                if measured.is_some() || tear.broken + tear.split == 0 {
                    // Measured after the tear, or nothing to say.
                } else if solved_on {
                    // The residuals of the frame's solve (its strains are the torn cloth's).
                    for (b, s) in bodies.iter_mut().zip(&solved) {
                        b.residual_stiff = s.residual_stiff;
                        b.residual_compliant = s.residual_compliant;
                        b.residual_at_pins = s.residual_at_pins;
                        b.residual_rms = s.residual_rms;
                    }
                } else {
                    monitor.torn_frame_unmeasured();
                }
            }
            monitor.record(frame, t, &bodies);
            if self.settings.strict
                && let Some(k) = monitor.over_tolerance(&bodies)
            {
                let when = format!("frame {frame}, t = {t:.3} s");
                let e = BakeError::Strict(monitor.exceeded(k, bodies[k].residual(), &when));
                return Err(discard(writer, csv, e));
            }
            worst.max_stretch_strain = worst.max_stretch_strain.max(d.max_stretch_strain);
            worst.max_penetration = worst.max_penetration.max(d.max_penetration);
            worst.nan_count = worst.nan_count.max(d.nan_count);
            writer.write_frame(frame, &state.particle_position)?;
            contact_list_overflows += u64::from(report.contact_list_overflows);
            let counts =
                [report.contacts, report.particle_contacts, tear.broken, tear.split, report.contact_list_overflows]
                    .map(Some);
            csv.row(frame, &d, counts, &bodies)?;
            written += 1;
            worst.time = d.time;
            worst.kinetic_energy = d.kinetic_energy;
            worst.gravity_energy = d.gravity_energy;
            worst.elastic_energy = d.elastic_energy;
            on_frame(frame, t);
        }
        let seconds = started.elapsed().as_secs_f64();
        let (files, diagnostics) = match (&failure, &self.settings.failed_dir) {
            (Some(f), Some(failed)) => {
                // Kept apart; should that fail, the report still says why the run stopped.
                let kept = std::fs::create_dir_all(failed)
                    .map_err(|source| BakeError::Io { path: failed.clone(), source })
                    .and_then(|()| {
                        writer.redirect(failed);
                        csv.redirect(failed);
                        Ok((writer.finish()?, csv.finish()?))
                    });
                kept.map_err(|e| {
                    BakeError::CutShort(format!(
                        "{f}; its {} could not all be kept in {}: {e}",
                        frames(written),
                        failed.display()
                    ))
                })?
            }
            _ => (writer.finish()?, csv.finish()?),
        };
        Ok(Baked {
            frames_written: written,
            first,
            worst,
            monitor,
            torn,
            iterations: (iterations, substeps, most),
            iteration_retries,
            raised_substeps: (raised, most_substeps, retried),
            contact_list_overflows,
            files,
            diagnostics,
            seconds,
            time: solver.time(),
            model,
            positions: state.particle_position,
            failure,
        })
    }
}

/// Ends a bake that stopped with `error` (a `--strict` stop, a torn model the cache cannot follow) so
/// that nothing of it stays: the cache (a USD or PC2 file, or an OBJ sequence's frames, still
/// under their temporary names) and `diagnostics.csv` are dropped unfinished, leaving the
/// folder's earlier ones as they were. Returns `error`.
fn discard(writer: Box<dyn cache::CacheWriter>, csv: CsvWriter, error: BakeError) -> BakeError {
    drop(csv);
    drop(writer);
    error
}

/// Per-frame diagnostics as CSV, written to a temporary file and renamed when finished.
pub(crate) struct CsvWriter {
    tmp: PathBuf,
    path: PathBuf,
    out: Option<std::io::BufWriter<std::fs::File>>,
    /// Whether a body has self-collision (else `self_penetration_m` is left empty).
    pub(crate) self_collision: bool,
}

impl CsvWriter {
    /// Creates the file with its header: the global columns, then six per body (`names`).
    pub(crate) fn create(path: &Path, names: &[&str]) -> Result<CsvWriter, BakeError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| BakeError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        // Refused before anything is simulated or written (the rename at the end would fail).
        if path.is_dir() {
            return Err(BakeError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other("a folder is in the way of the diagnostics file"),
            });
        }
        // The naming of hooke-io's temporary files (`.<name>.tmp-<pid>-<seq>`), so that a killed
        // run's leftover is swept like theirs; created exclusively, never through a planted link.
        // A leftover under this very name can only be from a dead process that had our pid.
        let tmp = dir.join(format!(".diagnostics.csv.tmp-{}-0", std::process::id()));
        let open = || std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp);
        let f = match open() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::remove_file(&tmp).and_then(|()| open()),
            other => other,
        }
        .map_err(io(&tmp))?;
        let mut out = std::io::BufWriter::new(f);
        let mut header = String::from(
            "frame,time_s,max_stretch_strain,total_energy_j,kinetic_energy_j,gravity_energy_j,elastic_energy_j,max_penetration_m,nan_count,max_speed_m_per_s,contacts,max_residual_strain,particle_contacts,self_penetration_m,broken_constraints,split_particles,contact_list_overflows",
        );
        for name in names {
            for q in BODY_COLUMNS {
                header.push(',');
                header.push_str(&csv_field(&format!("{name}:{q}")));
            }
        }
        writeln!(out, "{header}").map_err(io(&tmp))?;
        Ok(CsvWriter { tmp, path: path.to_path_buf(), out: Some(out), self_collision: false })
    }

    /// One frame's row; `counts` are the contacts with colliders, the particle contacts, the
    /// constraints broken and particles split by tearing after the frame, and the particle
    /// contacts' neighbour lists that overflowed (`None`: not known, an empty cell).
    pub(crate) fn row(
        &mut self,
        frame: usize,
        d: &Diagnostics,
        counts: [Option<u32>; 5],
        bodies: &[BodyConvergence],
    ) -> Result<(), BakeError> {
        let out = self.out.as_mut().expect("open until finish");
        let worst = bodies.iter().map(BodyConvergence::residual).fold(f32::NAN, f32::max);
        let [contacts, particle_contacts, broken, split, overflows] =
            counts.map(|c| c.map_or(String::new(), |c| c.to_string()));
        let penetration = if self.self_collision { d.self_penetration } else { f32::NAN };
        let mut tail =
            format!("{},{particle_contacts},{},{broken},{split},{overflows}", cell(worst), cell(penetration));
        for b in bodies {
            for v in
                [b.strain, b.strain_at_pins, b.residual_stiff, b.residual_compliant, b.residual_at_pins, b.residual_rms]
            {
                tail.push(',');
                tail.push_str(&cell(v));
            }
        }
        writeln!(
            out,
            "{frame},{},{},{},{},{},{},{},{},{},{contacts},{tail}",
            d.time,
            d.max_stretch_strain,
            d.total_energy(),
            d.kinetic_energy,
            d.gravity_energy,
            d.elastic_energy,
            d.max_penetration,
            d.nan_count,
            d.max_speed
        )
        .map_err(|source| BakeError::Io { path: self.tmp.clone(), source })
    }

    /// Makes [`CsvWriter::finish`] rename the file into `dir` (on the same file system).
    pub(crate) fn redirect(&mut self, dir: &Path) {
        self.path = dir.join("diagnostics.csv");
    }

    pub(crate) fn finish(mut self) -> Result<PathBuf, BakeError> {
        let out = self.out.take().expect("open until finish");
        // (Whatever fails, the temporary file goes.)
        let done = out
            .into_inner()
            .map_err(|e| BakeError::Io { path: self.tmp.clone(), source: e.into_error() })
            .and_then(|_| {
                std::fs::rename(&self.tmp, &self.path)
                    .map_err(|source| BakeError::Io { path: self.path.clone(), source })
            });
        if done.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        done.map(|()| self.path.clone())
    }
}

impl Drop for CsvWriter {
    fn drop(&mut self) {
        if self.out.is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// The per-body columns of `diagnostics.csv`, each written `<body>:<name>` (see
/// [`BodyConvergence`]).
const BODY_COLUMNS: [&str; 6] =
    ["strain", "strain_at_pins", "residual_stiff", "residual_compliant", "residual_at_pins", "residual_rms"];

/// A CSV cell: the number, or nothing for NaN (not measured).
fn cell(v: f32) -> String {
    if v.is_nan() { String::new() } else { v.to_string() }
}

/// A CSV header field, quoted (RFC 4180) if it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// A strain as a percentage: two decimals, or three significant digits in scientific notation
/// from 10⁶ % on (a blown-up run's strain of 10⁹ would otherwise print as a dozen digits).
fn percent(v: f32) -> String {
    let p = 100.0 * v;
    if p.abs() >= 1e6 { format!("{p:.2e} %") } else { format!("{p:.2} %") }
}

/// A percentage, or "none" for NaN.
fn maybe(v: f32) -> String {
    if v.is_nan() { "none".into() } else { percent(v) }
}

/// NaN-aware field-wise maximum of two measurements.
fn max_of(a: &BodyConvergence, b: &BodyConvergence) -> BodyConvergence {
    BodyConvergence {
        strain: a.strain.max(b.strain),
        strain_at_pins: a.strain_at_pins.max(b.strain_at_pins),
        residual_stiff: a.residual_stiff.max(b.residual_stiff),
        residual_compliant: a.residual_compliant.max(b.residual_compliant),
        residual_at_pins: a.residual_at_pins.max(b.residual_at_pins),
        residual_rms: a.residual_rms.max(b.residual_rms),
    }
}

/// The convergence monitor of a run (issue #9, item 4): each body's worst and latest
/// measurement ([`BodyConvergence`]), the frame of its worst residual, and the summary lines
/// and warnings they make.
pub struct ConvergenceMonitor {
    /// `cloth "name"` / `rope "name"`, per body.
    labels: Vec<String>,
    /// Whether the scene pins any particle of the body (then tethers would help).
    pinned: Vec<bool>,
    /// Whether the solver is a position-based one with tethers off (`[solver] tethers = false`).
    tethers_off: bool,
    tolerance: f32,
    solver: String,
    substeps: u32,
    iterations: u32,
    /// The most iterations per substep when they are `"auto"`.
    auto_cap: Option<u32>,
    /// Field-wise maximum over the frames, per body.
    worst: Vec<BodyConvergence>,
    /// The latest frame's, per body.
    last: Vec<BodyConvergence>,
    /// Frame and time (s) of the largest monitored residual, per body.
    worst_at: Vec<(usize, f64)>,
    /// Frames whose residuals could not be measured because a tear gave the solver a new
    /// model (its multipliers start again at the next substep).
    torn_unmeasured: usize,
    /// Whether the solver has multipliers (XPBD), so that it measures residuals at all.
    multipliers: bool,
    /// Per body: its material's axial damping time τ (s) and τ/h at the configured substep h
    /// (0 where the solver's position update has no damping term: PBD, force-based).
    damping: Vec<(f32, f32)>,
    /// Per body: whether it has no distance constraint (structural and shear off, no bend
    /// springs), so that it has no stretch residual to measure.
    no_stretch: Vec<bool>,
    /// Per body: its breaking strain, the lowest strain at which its structural or shear
    /// constraints break (its material's `tear_strain`, or the strain at which it holds its
    /// `tear_energy`); infinite for a body that does not tear.
    tear_strain: Vec<f32>,
    /// Per body: the frames it tore by strain while its residual, measured before the tear,
    /// was over the tolerance.
    torn_over: Vec<TornOver>,
}

/// The frames in which a body tore while its solve had not converged.
#[derive(Clone, Copy, Debug, Default)]
struct TornOver {
    /// How many frames.
    frames: usize,
    /// The first and the last of them.
    first: usize,
    last: usize,
    /// The largest residual stretch strain in them.
    residual: f32,
}

/// The damping ratio τ/h above which the monitor's advice names the axial damping: from there
/// the residual at a fixed budget is at least 1.5 × the undamped one (see
/// [`ConvergenceMonitor`]'s advice).
const DAMPING_ADVICE_RATIO: f32 = 0.5;

/// The damping ratio τ/h from which the advice no longer calls more substeps the most
/// effective for their cost: on a stiff hanging sheet at τ/h ≈ 4.8, 80 × 1 and 40 × 2 left the
/// same residual (0.10 and 0.11 %; docs/BENCHMARKS.md, "Axial damping and convergence").
const DAMPING_EVEN_RATIO: f32 = 4.0;

/// "1 frame", "3 frames".
fn frames(n: usize) -> String {
    if n == 1 { "1 frame".into() } else { format!("{n} frames") }
}

impl ConvergenceMonitor {
    /// A monitor for `scene`'s bodies, solved by the solver named `solver`.
    pub fn new(scene: &Scene, solver: &str) -> ConvergenceMonitor {
        let bodies = scene.model.bodies();
        let xpbd = matches!(
            scene.solver,
            SolverChoice::Position(hooke::XpbdSettings { method: hooke::solver::xpbd::Method::Xpbd, .. })
        );
        ConvergenceMonitor {
            labels: bodies
                .iter()
                .map(|b| format!("{} {:?}", if b.is_cloth() { "cloth" } else { "rope" }, b.name))
                .collect(),
            pinned: bodies.iter().map(|b| scene.pins.iter().any(|p| b.particles.contains(&p.pin.particle))).collect(),
            tethers_off: matches!(scene.solver, SolverChoice::Position(s) if !s.tethers),
            tolerance: scene.residual_tolerance,
            solver: solver.to_string(),
            substeps: scene.solver.substeps(),
            iterations: scene.solver.iterations(),
            auto_cap: match scene.solver {
                SolverChoice::Position(hooke::XpbdSettings { auto_iterations: Some(a), .. }) => Some(a.max_iterations),
                _ => None,
            },
            worst: vec![BodyConvergence::default(); bodies.len()],
            last: vec![BodyConvergence::default(); bodies.len()],
            worst_at: vec![(0, 0.0); bodies.len()],
            torn_unmeasured: 0,
            multipliers: xpbd,
            damping: bodies
                .iter()
                .map(|b| {
                    let tau = match &b.material {
                        hooke::BodyMaterial::Cloth(m) => m.damping,
                        hooke::BodyMaterial::Rope(m) => m.damping,
                    };
                    let ratio = tau * scene.fps * scene.solver.substeps() as f32;
                    if xpbd && ratio.is_finite() { (tau, ratio) } else { (tau, 0.0) }
                })
                .collect(),
            no_stretch: {
                let set = scene.model.distance();
                let mut none = vec![true; bodies.len()];
                for b in (0..set.len()).filter_map(|k| set.body_of(k)) {
                    none[b] = false;
                }
                none
            },
            tear_strain: bodies
                .iter()
                .map(|b| match &b.material {
                    hooke::BodyMaterial::Cloth(m) => m
                        .breaking_strain(hooke::ConstraintFamily::Structural)
                        .min(m.breaking_strain(hooke::ConstraintFamily::Shear)),
                    hooke::BodyMaterial::Rope(_) => f32::INFINITY,
                })
                .collect(),
            torn_over: vec![TornOver::default(); bodies.len()],
        }
    }

    /// Notes that body `k` tore by strain in `frame`, its residuals measured before the tear
    /// (`solved`, the solve of that frame): a tear made while the residual is over the
    /// tolerance is named in the body's warning, as one that may be the solve's error.
    pub fn tore(&mut self, k: usize, frame: usize, solved: &BodyConvergence) {
        let residual = solved.residual();
        if residual > self.tolerance {
            let t = &mut self.torn_over[k];
            if t.frames == 0 {
                t.first = frame;
            }
            t.frames += 1;
            t.last = frame;
            t.residual = t.residual.max(residual);
        }
    }

    /// Notes a frame whose residuals were not measured because it tore (the solver was
    /// rebuilt on the torn model, without multipliers until its next substep). Only XPBD has
    /// multipliers: for other solvers this does nothing.
    pub fn torn_frame_unmeasured(&mut self) {
        if self.multipliers {
            self.torn_unmeasured += 1;
        }
    }

    /// Records one frame's measurement of every body (`bodies`, indexed like the model's).
    pub fn record(&mut self, frame: usize, time: f64, bodies: &[BodyConvergence]) {
        for (k, b) in bodies.iter().enumerate() {
            if b.residual() > self.worst[k].residual() || (self.worst[k].residual().is_nan() && !b.residual().is_nan())
            {
                self.worst_at[k] = (frame, time);
            }
            self.worst[k] = max_of(&self.worst[k], b);
            self.last[k] = *b;
        }
    }

    /// The first body whose monitored residual exceeds the tolerance.
    pub fn over_tolerance(&self, bodies: &[BodyConvergence]) -> Option<usize> {
        bodies.iter().position(|b| b.residual() > self.tolerance)
    }

    /// The largest monitored residual stretch strain of any body over the run (NaN where the
    /// solver measures none).
    pub fn worst_residual(&self) -> f32 {
        self.worst.iter().map(BodyConvergence::residual).fold(f32::NAN, f32::max)
    }

    /// The bodies whose residual exceeded the tolerance at some frame, by index.
    pub fn unconverged(&self) -> Vec<usize> {
        (0..self.worst.len()).filter(|&k| self.worst[k].residual() > self.tolerance).collect()
    }

    /// What would help body `k` converge.
    fn advice(&self, k: usize) -> String {
        let tethers = if self.pinned[k] && self.tethers_off {
            ", or tethers, long-range attachments to its pins ([solver] tethers = true, now false)"
        } else {
            ""
        };
        let iterations = match self.auto_cap {
            Some(cap) => {
                format!(
                    "[solver] iterations, now \"auto\" with at most {cap} per substep: raise [solver] \
                     max_iterations if substeps reach it"
                )
            }
            None => format!("[solver] iterations, now {}", self.iterations),
        };
        // XPBD's damped update (Macklin et al. 2016, eq. 26) closes only 1/(1 + τ/h) of the
        // error a substep leaves (the dashpot takes it for strain and relaxes it over τ), so at
        // a fixed budget the residual settles at about (1 + τ/h) × the undamped one, and more
        // substeps, which raise τ/h, reduce it only about in proportion to h once τ/h ≫ 1
        // (docs/BENCHMARKS.md, "Axial damping and convergence").
        let (tau, ratio) = self.damping[k];
        let (substeps, damping) = if ratio >= DAMPING_ADVICE_RATIO {
            let cost = if ratio >= DAMPING_EVEN_RATIO { "" } else { "; the most effective for their cost" };
            let clause = format!(
                ". Its material's axial damping holds it up: τ = {tau:e} s is τ/h = {ratio:.2} of a substep, and each \
                 substep closes only 1/(1 + τ/h) of the error the one before it left, so the residual is about \
                 {:.1} × what it would be undamped; a smaller damping time (the material's `damping`) reduces it \
                 by up to that factor, and more substeps, which raise τ/h, help less than they would undamped",
                1.0 + ratio
            );
            (cost, clause)
        } else {
            ("; the most effective for their cost", String::new())
        };
        format!(
            "More substeps ([solver] substeps, now {}{substeps}) or iterations ({iterations}) reduce it{tethers}{damping}",
            self.substeps
        )
    }

    /// Body `k`'s monitored residual `value` over the tolerance, in words; `when` says at
    /// which frame.
    pub fn exceeded(&self, k: usize, value: f32, when: &str) -> String {
        format!(
            "{} did not converge: its residual stretch strain reached {} away from its pins ({when}), over the \
             tolerance of {} ([solver] residual_tolerance = {}): it is stretched that much beyond what its \
             material allows. {}.",
            self.labels[k],
            percent(value),
            percent(self.tolerance),
            self.tolerance,
            self.advice(k)
        )
    }

    /// Each body's strains and residuals over the run, one line per body, and a warning for
    /// each body whose residual exceeded the tolerance: `(lines, warnings)`.
    pub fn summary(&self) -> (Vec<String>, Vec<String>) {
        let (mut lines, mut warnings) = (Vec::new(), Vec::new());
        for (k, label) in self.labels.iter().enumerate() {
            let (w, last) = (&self.worst[k], &self.last[k]);
            let mut line = format!("{label}: strain up to {} away from the pins", maybe(w.strain));
            if !w.strain_at_pins.is_nan() {
                line += &format!(", {} at them", percent(w.strain_at_pins));
            }
            if w.residual().is_nan() && self.no_stretch[k] {
                line += "; residual not measured (it has no stretch constraints)";
            } else if w.residual().is_nan() && self.torn_unmeasured > 0 {
                line += &format!(
                    "; residual not measured ({} tore, and the solver of a torn model has no multipliers before its \
                     next substep)",
                    frames(self.torn_unmeasured)
                );
            } else if w.residual().is_nan() && self.multipliers {
                line += "; residual not measured (no frame was solved to the end)";
            } else if w.residual().is_nan() {
                line += &format!("; residual not measured ({} has no constraint multipliers)", self.solver);
            } else {
                let (frame, t) = self.worst_at[k];
                // The last frame is not measured when it tore before its solve could be
                // measured (a solver without multipliers before the tear: none under XPBD).
                let end = if last.residual().is_nan() { "not measured".to_string() } else { percent(last.residual()) };
                line += &format!(
                    "; residual stretch strain up to {} (frame {frame}, t = {t:.3} s), {end} at the end \
                     (stiffness-dominated {}, compliance-dominated {}, at the pins {})",
                    percent(w.residual()),
                    maybe(w.residual_stiff),
                    maybe(w.residual_compliant),
                    maybe(w.residual_at_pins)
                );
                if self.torn_unmeasured > 0 {
                    line += &format!(
                        "; not measured in the {} that tore (the solver of a torn model has no multipliers before \
                         its next substep)",
                        frames(self.torn_unmeasured)
                    );
                }
            }
            lines.push(line);
            if w.residual() > self.tolerance {
                let (frame, t) = self.worst_at[k];
                let end = if last.residual().is_nan() { "not measured".to_string() } else { percent(last.residual()) };
                let when = format!("frame {frame}, t = {t:.3} s; {end} at the last frame");
                let mut warning = self.exceeded(k, w.residual(), &when);
                let torn = self.torn_over[k];
                if torn.frames > 0 {
                    let which = if torn.frames == 1 {
                        format!("at frame {}", torn.first)
                    } else {
                        format!("first at frame {}, last at frame {}", torn.first, torn.last)
                    };
                    warning += &format!(
                        " The cloth tore in {} ({which}) while its residual was over the tolerance (up to {} away from \
                         its pins in those frames, against its breaking strain of {}): a tear made while the solve \
                         leaves that much strain may be the solve's error rather than the material's, and where and \
                         when the cloth tears can change once it converges.",
                        frames(torn.frames),
                        percent(torn.residual),
                        percent(self.tear_strain[k])
                    );
                }
                warnings.push(warning);
            }
        }
        (lines, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strains print with two decimals up to 10⁶ %, in scientific notation beyond (a blown-up
    /// strain of 7.5e9 was printed as "749999616000.00 %").
    #[test]
    fn huge_strains_print_in_scientific_notation() {
        assert_eq!(percent(0.0123), "1.23 %");
        assert_eq!(percent(9_999.0), "999900.00 %");
        assert_eq!(percent(7.5e9), "7.50e11 %");
        assert_eq!(maybe(f32::NAN), "none");
    }

    /// A body's warning names the frames it tore while its residual was over the tolerance,
    /// and only those: a tear in a frame the solve had converged is not named, nor a body that
    /// did not tear in a frame over the tolerance, and a body that never passed the tolerance
    /// gets no warning at all.
    #[test]
    fn tears_are_named_only_where_the_residual_was_over_the_tolerance() {
        let text = "[materials.paper]\ntear_strain = 0.15\n[[cloth]]\nname = \"sheet\"\nmaterial = \"paper\"\n\
                    rows = 4\ncolumns = 4\nspacing = 0.1\n[[cloth]]\nname = \"flag\"\nmaterial = \"paper\"\n\
                    rows = 4\ncolumns = 4\nspacing = 0.1\ncenter = [5.0, 0.0, 0.0]\n";
        let scene = hooke_io::scene::parse(text, "sheets.toml", "sheets", None, 1 << 30).unwrap();
        let mut monitor = ConvergenceMonitor::new(&scene, "xpbd-cpu");
        let at =
            |residual: f32| BodyConvergence { residual_stiff: residual, residual_compliant: 0.0, ..Default::default() };
        // The sheet tore at frame 3 converged (1 %), at frames 5 and 8 over the 2 % tolerance;
        // the flag, over the tolerance at frame 6, tore only at frame 3, converged.
        for (frame, residual, tore) in
            [(3, 0.01, true), (4, 0.01, false), (5, 0.30, true), (6, 0.25, false), (8, 0.20, true)]
        {
            monitor.record(frame, frame as f64 / 60.0, &[at(residual), at(if frame == 6 { 0.05 } else { 0.01 })]);
            if tore {
                monitor.tore(0, frame, &at(residual));
            }
            if frame == 3 {
                monitor.tore(1, frame, &at(0.01));
            }
        }
        let (_, warnings) = monitor.summary();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].starts_with("cloth \"sheet\"")
                && warnings[0].contains(
                    "The cloth tore in 2 frames (first at frame 5, last at frame 8) while its residual was over the \
                     tolerance (up to 30.00 % away from its pins in those frames, against its breaking strain of 15.00 %)"
                ),
            "{}",
            warnings[0]
        );
        assert!(warnings[1].starts_with("cloth \"flag\"") && !warnings[1].contains("tore"), "{}", warnings[1]);
        // Converged throughout: no warning, tears or not.
        let mut monitor = ConvergenceMonitor::new(&scene, "xpbd-cpu");
        monitor.record(1, 1.0 / 60.0, &[at(0.01), at(0.01)]);
        monitor.tore(0, 1, &at(0.01));
        assert!(monitor.summary().1.is_empty());
    }
}
