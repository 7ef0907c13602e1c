//! `hooke run`: simulate a scene and bake a cache, with per-frame diagnostics.

use anyhow::{Context, Result, bail};
use hooke::Diagnostics;
use hooke::diagnostics::{BodyConvergence, ConstraintResiduals, pinned_particles};
use hooke_io::cache::{self, CacheSpec, Format};
use hooke_io::scene::SolverChoice;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `hooke run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Scene file (TOML). Omitted: the built-in default scene (a cloth falling onto a sphere).
    scene: Option<PathBuf>,
    /// Number of frames (overrides the scene).
    #[arg(long)]
    frames: Option<usize>,
    /// Frames per second (overrides the scene).
    #[arg(long)]
    fps: Option<f32>,
    /// Output folder (default: the scene's `output.dir`, else `out/<scene name>`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Cache format: usda (default), obj or pc2.
    #[arg(long)]
    format: Option<String>,
    /// Worker threads (default: all cores; 1 runs the sequential path).
    #[arg(long)]
    threads: Option<usize>,
    /// Where to simulate: cpu, or gpu (wgpu compute; XPBD/PBD scenes).
    #[arg(long, value_enum, default_value = "cpu")]
    backend: crate::Backend,
    #[command(flatten)]
    gpu_solve: crate::GpuSolveArgs,
    /// Fail (non-zero exit, no cache written) as soon as a body's residual stretch strain
    /// away from its pins exceeds the scene's `residual_tolerance`, instead of warning.
    #[arg(long)]
    strict: bool,
    /// Self-collision on or off for every body (overrides each body's `self_collision`).
    #[arg(long)]
    self_collision: Option<bool>,
    /// Contact of cloth triangles with colliders on or off for every cloth (overrides each
    /// cloth's `triangle_contact`).
    #[arg(long)]
    triangle_contact: Option<bool>,
    /// Also draw the last frame into `preview.png` in the output folder (needs a GPU adapter;
    /// lavapipe will do).
    #[arg(long)]
    preview: bool,
}

pub fn run(args: RunArgs) -> Result<()> {
    // The pool first: loading a scene may already use it (a mesh collider's grid).
    let threads = crate::set_threads(args.threads)?;
    let mut scene = match &args.scene {
        Some(path) => hooke_io::scene::load(path, crate::memory_limit())?,
        None => crate::presets::default_scene()?,
    };
    if let Some(on) = args.self_collision {
        crate::set_self_collision(&mut scene, on)?;
    }
    if let Some(on) = args.triangle_contact {
        crate::set_triangle_contact(&mut scene, on)?;
    }
    if let Some(f) = args.frames {
        anyhow::ensure!(f >= 1, "--frames must be ≥ 1, got {f}");
        scene.frames = f;
    }
    if let Some(fps) = args.fps {
        if !(fps.is_finite() && fps > 0.0) {
            bail!("--fps: the frame rate must be finite and > 0, got {fps}");
        }
        scene.fps = fps;
    }
    let format: Format = match args.format.as_deref().or(scene.output.format.as_deref()) {
        Some(f) => f.parse().map_err(|e| anyhow::anyhow!("--format (or [output] format): {e}"))?,
        None => Format::default(),
    };
    let dir = args
        .out
        .clone()
        .or_else(|| scene.output.dir.as_ref().map(PathBuf::from))
        .unwrap_or_else(|| Path::new("out").join(&scene.name));
    // Checked before simulating, so a typo costs no simulation time.
    anyhow::ensure!(
        !dir.exists() || dir.is_dir(),
        "output directory {} (--out or [output] dir) exists and is not a directory",
        dir.display()
    );
    scene.solver.set_parallel(threads > 1);
    // The picture's device is opened first, so a missing adapter costs no simulation time.
    let preview = match args.preview {
        true => Some(
            hooke_gpu::GpuContext::new()
                .map_err(|e| anyhow::anyhow!("--preview needs a GPU adapter (lavapipe will do): {e}"))?,
        ),
        false => None,
    };
    let mut model = scene.model.clone();
    // Tearing changes the particles: a format of fixed vertex count cannot follow it.
    let mut tearing = hooke_sim::Tearing::for_scene(&scene);
    anyhow::ensure!(
        !(tearing.active() && format == Format::Pc2),
        "scene {:?} tears (a cloth has a tear_strain, or the scene a [[cut]]) and PC2 holds a fixed vertex count: write --format usda or obj",
        scene.name
    );
    let options = crate::solver_options(args.backend, args.gpu_solve.solve(args.backend)?);
    let hooke_sim::MadeSolver { mut solver, device } = hooke_sim::make_solver(&scene, &options)?;
    let dt = 1.0 / scene.fps;
    let auto = matches!(scene.solver, SolverChoice::Position(hooke::XpbdSettings { auto_iterations: Some(_), .. }));
    if auto && options.backend == hooke_sim::Backend::Gpu {
        // The GPU does not read back a residual per iteration: it runs the fixed minimum.
        scene.solver.set_iterations(scene.solver.iterations());
        eprintln!(
            "note: iterations = \"auto\" is for the CPU; the GPU runs a fixed {} per substep and the residual \
             is reported below",
            crate::count(scene.solver.iterations() as usize, "iteration", "iterations")
        );
    }

    println!(
        "scene {:?}: {} particles, {} constraints in {} colours, {}; {} at {} fps, {} on {}, {} substeps × {}, {} thread(s), blow-up above {:.1} m/s",
        scene.name,
        model.particle_count(),
        model.distance().constraints().len(),
        model.distance().colour_count(),
        crate::count(model.colliders().len(), "collider", "colliders"),
        crate::count(scene.frames, "frame", "frames"),
        scene.fps,
        solver.info().name,
        device,
        scene.solver.substeps(),
        scene.solver.iterations_text(),
        threads,
        scene.solver.max_speed()
    );
    crate::report(&scene);
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
    let mut x = Vec::new();
    let mut state = hooke::State::from_model(&model);
    solver.read_state(&mut state);
    let first = Diagnostics::measure(
        &model,
        &state.particle_position,
        &state.particle_velocity,
        0.0,
        &scene.collider_poses_at(0.0),
    );
    // The convergence monitor: per body, strains and (XPBD) residuals, every frame.
    let mut monitor = Monitor::new(&scene, &solver.info().name);
    let mut pinned = Vec::new();
    let mut residuals = ConstraintResiduals::default();
    let mut bodies = Vec::new();
    pinned_particles(&model, &scene.control_at(0.0), &mut pinned);
    BodyConvergence::measure(&model, &state.particle_position, &pinned, None, &mut bodies);
    monitor.record(0, 0.0, &bodies);
    writer.write_frame(0, &state.particle_position)?;
    csv.row(0, &first, [0; 4], &bodies)?;

    let progress = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(scene.frames as u64);
        bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} frames  {per_sec}  eta {eta}").unwrap());
        Some(bar)
    } else {
        None
    };
    // Ctrl-C / SIGTERM: stop after the current frame and finish the cache with the frames
    // done, so an interrupted run leaves complete files and no temporary ones.
    let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        // A second handler cannot be installed (e.g. in tests calling run twice): then the
        // default action stays, which is acceptable.
        let _ = ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    }
    let started = Instant::now();
    let mut worst = first;
    let mut failure = None;
    let mut written = 1usize;
    // Frames that tore, constraints broken and particles split.
    let mut torn = (0usize, 0usize, 0usize);
    // Iterations over all substeps, the substeps, and the most in one substep.
    let (mut iterations, mut substeps, mut most) = (0u64, 0u64, 0u32);
    for frame in 1..=scene.frames {
        if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            failure = Some((frame, anyhow::anyhow!("interrupted")));
            break;
        }
        let control = tearing.control(scene.control_at(solver.time()));
        match solver.step(&control, dt) {
            Ok(report) => {
                iterations += report.total_iterations as u64;
                substeps += report.substeps as u64;
                most = most.max(report.iterations);
                solver.read_state(&mut state);
                // Tearing: what broke in this frame breaks now; the frame is written torn.
                let tear =
                    tearing.after_frame(solver.as_mut(), &mut state).with_context(|| format!("frame {frame}"))?;
                if tear.is_some() {
                    model = solver.model().clone();
                    writer
                        .set_model(&model)
                        .with_context(|| format!("frame {frame}: the cache cannot follow the tear"))?;
                }
                let tear = tear.unwrap_or_default();
                if tear.broken + tear.split > 0 {
                    torn = (torn.0 + 1, torn.1 + tear.broken as usize, torn.2 + tear.split as usize);
                }
                let t = solver.time();
                let poses = scene.collider_poses_at(t);
                let d = Diagnostics::measure(&model, &state.particle_position, &state.particle_velocity, t, &poses);
                pinned_particles(&model, &control, &mut pinned);
                let measured = solver.constraint_residuals(&mut residuals).then_some(&residuals);
                BodyConvergence::measure(&model, &state.particle_position, &pinned, measured, &mut bodies);
                monitor.record(frame, t, &bodies);
                if args.strict
                    && let Some(k) = monitor.over_tolerance(&bodies)
                {
                    // Nothing of this run stays: the atomic caches are dropped unfinished; an
                    // OBJ sequence's complete frames are removed.
                    if format == Format::Obj {
                        for f in writer.finish().unwrap_or_default() {
                            let _ = std::fs::remove_file(f);
                        }
                    } else {
                        drop(writer);
                    }
                    drop(csv);
                    let when = format!("frame {frame}, t = {t:.3} s");
                    bail!(
                        "{} Stopped by --strict; no cache was written.",
                        monitor.exceeded(k, bodies[k].residual(), &when)
                    );
                }
                worst.max_stretch_strain = worst.max_stretch_strain.max(d.max_stretch_strain);
                worst.max_penetration = worst.max_penetration.max(d.max_penetration);
                worst.nan_count = worst.nan_count.max(d.nan_count);
                x.clone_from(&state.particle_position);
                writer.write_frame(frame, &x)?;
                csv.row(frame, &d, [report.contacts, report.particle_contacts, tear.broken, tear.split], &bodies)?;
                written += 1;
                worst.time = d.time;
                worst.kinetic_energy = d.kinetic_energy;
                worst.gravity_energy = d.gravity_energy;
                worst.elastic_energy = d.elastic_energy;
            }
            Err(e) => {
                let speed = matches!(&e, hooke::SolverError::BlowUp { detail, .. } if detail.contains(" m/s (limit "));
                let e = match speed {
                    true => anyhow::anyhow!(
                        "{e} (if that speed is real, set [solver] max_speed above it: unless the scene sets it, \
                         the limit is derived from the scene's size, gravity, wind and collider motion)"
                    ),
                    false => e.into(),
                };
                failure = Some((frame, e));
                break;
            }
        }
        match &progress {
            Some(bar) => bar.inc(1),
            None if scene.frames >= 10 && frame % (scene.frames / 10) == 0 => {
                println!("frame {frame}/{} ({:.1} s simulated)", scene.frames, solver.time())
            }
            None => {}
        }
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let files = writer.finish()?;
    let csv_path = csv.finish()?;
    let steps = written.saturating_sub(1).max(1);
    println!(
        "{} ({:.2} s simulated) in {:.2} s: {:.2} ms/frame",
        crate::count(written - 1, "frame", "frames"),
        solver.time(),
        elapsed,
        1e3 * elapsed / steps as f64
    );
    println!(
        "max stretch strain {:.4}, deepest penetration {:.3e} m, NaN count {}, final energy {:.4e} J (start {:.4e} J)",
        worst.max_stretch_strain,
        worst.max_penetration,
        worst.nan_count,
        worst.total_energy(),
        first.total_energy()
    );
    if torn.0 > 0 {
        println!(
            "tearing: {} constraints broken and {} particles split in {}; {} particles at the end (from {})",
            torn.1,
            torn.2,
            crate::count(torn.0, "frame", "frames"),
            model.particle_count(),
            scene.model.particle_count()
        );
    }
    if let SolverChoice::Position(hooke::XpbdSettings { auto_iterations: Some(_), .. }) = scene.solver
        && substeps > 0
    {
        println!(
            "iterations per substep: {:.2} on average, at most {most} ({} in all)",
            iterations as f64 / substeps as f64,
            iterations
        );
    }
    monitor.summarise();
    for f in files.iter().take(5) {
        println!("wrote {}", f.display());
    }
    if files.len() > 5 {
        println!("wrote {} more files in {}", files.len() - 5, dir.display());
    }
    println!("wrote {}", csv_path.display());
    if args.preview && failure.is_none() {
        let path = dir.join("preview.png");
        let ctx = preview.as_ref().expect("opened before the run when --preview is given");
        crate::render::preview(ctx, &scene, &model, &state.particle_position, solver.time(), &path)?;
        println!("wrote {}", path.display());
    }
    if let Some((frame, e)) = failure {
        if written == 1 {
            bail!("frame {frame}: {e}; the frame before it (0) was written");
        }
        bail!("frame {frame}: {e}; the {written} frames before it (0–{}) were written", written - 1);
    }
    Ok(())
}

/// Per-frame diagnostics as CSV, written to a temporary file and renamed when finished.
struct CsvWriter {
    tmp: PathBuf,
    path: PathBuf,
    out: Option<std::io::BufWriter<std::fs::File>>,
    /// Whether a body has self-collision (else `self_penetration_m` is left empty).
    self_collision: bool,
}

impl CsvWriter {
    /// Creates the file with its header: the global columns, then six per body (`names`).
    fn create(path: &Path, names: &[&str]) -> Result<CsvWriter> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        // The naming of hooke-io's temporary files (`.<name>.tmp-<pid>-<seq>`), so that a killed
        // run's leftover is swept like theirs; created exclusively, never through a planted link.
        // A leftover under this very name can only be from a dead process that had our pid.
        let tmp = dir.join(format!(".diagnostics.csv.tmp-{}-0", std::process::id()));
        let open = || std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp);
        let f = match open() {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::remove_file(&tmp).and_then(|()| open()),
            other => other,
        }
        .with_context(|| format!("creating {}", tmp.display()))?;
        let mut out = std::io::BufWriter::new(f);
        write!(
            out,
            "frame,time_s,max_stretch_strain,total_energy_j,kinetic_energy_j,gravity_energy_j,elastic_energy_j,max_penetration_m,nan_count,max_speed_m_per_s,contacts,max_residual_strain,particle_contacts,self_penetration_m,broken_constraints,split_particles"
        )?;
        for name in names {
            for q in BODY_COLUMNS {
                write!(out, ",{}", csv_field(&format!("{name}:{q}")))?;
            }
        }
        writeln!(out)?;
        Ok(CsvWriter { tmp, path: path.to_path_buf(), out: Some(out), self_collision: false })
    }

    /// One frame's row; `counts` are the contacts with colliders, the particle contacts, and
    /// the constraints broken and particles split by tearing after the frame.
    fn row(&mut self, frame: usize, d: &Diagnostics, counts: [u32; 4], bodies: &[BodyConvergence]) -> Result<()> {
        let out = self.out.as_mut().expect("open until finish");
        let worst = bodies.iter().map(BodyConvergence::residual).fold(f32::NAN, f32::max);
        let [contacts, particle_contacts, broken, split] = counts;
        let penetration = if self.self_collision { d.self_penetration } else { f32::NAN };
        let mut tail = format!("{},{particle_contacts},{},{broken},{split}", cell(worst), cell(penetration));
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
        .with_context(|| format!("writing {}", self.tmp.display()))
    }

    fn finish(mut self) -> Result<PathBuf> {
        let out = self.out.take().expect("open until finish");
        out.into_inner().map_err(|e| e.into_error()).with_context(|| format!("writing {}", self.tmp.display()))?;
        std::fs::rename(&self.tmp, &self.path).with_context(|| format!("renaming to {}", self.path.display()))?;
        Ok(self.path.clone())
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

/// A strain as a percentage.
fn percent(v: f32) -> String {
    format!("{:.2} %", 100.0 * v)
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

/// The convergence monitor of a run: each body's worst and latest measurement, the frame of
/// its worst residual, and the summary lines and warnings they make.
struct Monitor {
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
    /// Field-wise maximum over the frames, per body.
    worst: Vec<BodyConvergence>,
    /// The latest frame's, per body.
    last: Vec<BodyConvergence>,
    /// Frame and time (s) of the largest monitored residual, per body.
    worst_at: Vec<(usize, f64)>,
}

impl Monitor {
    fn new(scene: &hooke_io::scene::Scene, solver: &str) -> Monitor {
        let bodies = scene.model.bodies();
        Monitor {
            labels: bodies
                .iter()
                .map(|b| format!("{} {:?}", if b.is_cloth() { "cloth" } else { "rope" }, b.name))
                .collect(),
            pinned: bodies.iter().map(|b| scene.pins.iter().any(|p| b.particles.contains(&p.pin.particle))).collect(),
            tethers_off: matches!(scene.solver, hooke_io::scene::SolverChoice::Position(s) if !s.tethers),
            tolerance: scene.residual_tolerance,
            solver: solver.to_string(),
            substeps: scene.solver.substeps(),
            iterations: scene.solver.iterations(),
            worst: vec![BodyConvergence::default(); bodies.len()],
            last: vec![BodyConvergence::default(); bodies.len()],
            worst_at: vec![(0, 0.0); bodies.len()],
        }
    }

    fn record(&mut self, frame: usize, time: f64, bodies: &[BodyConvergence]) {
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
    fn over_tolerance(&self, bodies: &[BodyConvergence]) -> Option<usize> {
        bodies.iter().position(|b| b.residual() > self.tolerance)
    }

    /// What would help body `k` converge.
    fn advice(&self, k: usize) -> String {
        let tethers = if self.pinned[k] && self.tethers_off {
            ", or tethers, long-range attachments to its pins ([solver] tethers = true, now false)"
        } else {
            ""
        };
        format!(
            "More substeps ([solver] substeps, now {}; the most effective for their cost) or iterations \
             ([solver] iterations, now {}) reduce it{tethers}",
            self.substeps, self.iterations
        )
    }

    /// Body `k`'s monitored residual `value` over the tolerance, in words; `when` says at
    /// which frame.
    fn exceeded(&self, k: usize, value: f32, when: &str) -> String {
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

    /// Prints each body's strains and residuals over the run, and a warning for each body
    /// whose residual exceeded the tolerance.
    fn summarise(&self) {
        for (k, label) in self.labels.iter().enumerate() {
            let (w, last) = (&self.worst[k], &self.last[k]);
            let mut line = format!("{label}: strain up to {} away from the pins", maybe(w.strain));
            if !w.strain_at_pins.is_nan() {
                line += &format!(", {} at them", percent(w.strain_at_pins));
            }
            if w.residual().is_nan() {
                line += &format!("; residual not measured ({} has no constraint multipliers)", self.solver);
            } else {
                let (frame, t) = self.worst_at[k];
                line += &format!(
                    "; residual stretch strain up to {} (frame {frame}, t = {t:.3} s), {} at the end \
                     (stiffness-dominated {}, compliance-dominated {}, at the pins {})",
                    percent(w.residual()),
                    percent(last.residual()),
                    maybe(w.residual_stiff),
                    maybe(w.residual_compliant),
                    maybe(w.residual_at_pins)
                );
            }
            println!("{line}");
            if w.residual() > self.tolerance {
                let (frame, t) = self.worst_at[k];
                let when = format!("frame {frame}, t = {t:.3} s; {} at the last frame", percent(last.residual()));
                eprintln!("warning: {}", self.exceeded(k, w.residual(), &when));
            }
        }
    }
}

/// A percentage, or "none" for NaN.
fn maybe(v: f32) -> String {
    if v.is_nan() { "none".into() } else { percent(v) }
}
