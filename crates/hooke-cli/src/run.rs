//! `hooke run`: simulate a scene and bake a cache, with per-frame diagnostics.

use anyhow::{Result, bail};
use hooke_io::cache::Format;
use hooke_io::scene::SolverChoice;
use hooke_sim::{Bake, BakeSettings};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Arguments of `hooke run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Scene file (TOML). Omitted: the built-in default scene (a cloth falling onto a sphere).
    scene: Option<PathBuf>,
    /// Number of frames (overrides the scene).
    #[arg(long, allow_negative_numbers = true)]
    frames: Option<usize>,
    /// Frames per second (overrides the scene).
    #[arg(long, allow_negative_numbers = true)]
    fps: Option<f32>,
    /// Output folder (default: the scene's `output.dir`, else `out/<scene name>`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Cache format: usda (default), obj or pc2.
    #[arg(long)]
    format: Option<String>,
    /// Worker threads (default: all cores; 1 runs the sequential path).
    #[arg(long, allow_negative_numbers = true)]
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
    /// Pack N copies of the scene file into one model of N worlds, solved together and baked
    /// as one scene (bodies and colliders named `w<k>_<name>`); each world's positions are
    /// bit for bit those of its scene run alone. With `--vary`, world k takes the k-th value
    /// of every varied key. `--worlds 1` without `--vary` runs the scene as it is (any scene,
    /// one that tears or is cut too).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    worlds: Option<usize>,
    /// `KEY=[V0, V1, …]`: a dotted scene key (as in a batch manifest's `set`) and one TOML value
    /// per world; repeatable, every list as long as the others and as --worlds (without
    /// --worlds, the lists' length is the number of worlds). `name` and `output` keys cannot
    /// vary.
    #[arg(long, value_name = "KEY=[VALUES]")]
    vary: Vec<String>,
}

/// The per-world key tables of `--worlds N --vary …`: N tables, world k's holding the k-th
/// value of every varied key.
fn world_sets(worlds: Option<usize>, vary: &[String]) -> Result<Vec<toml::Table>> {
    let mut lists = Vec::new();
    for v in vary {
        let Some((key, values)) = v.split_once('=') else { bail!("--vary {v:?}: expected KEY=[V0, V1, …]") };
        let key = key.trim();
        anyhow::ensure!(!key.is_empty(), "--vary {v:?}: the key is empty");
        anyhow::ensure!(
            key != "name" && !hooke_sim::batch::is_output_key(key),
            "--vary {key}: the worlds are baked as one scene, with one name and one output: this key cannot vary"
        );
        anyhow::ensure!(lists.iter().all(|(k, _)| k != key), "--vary {key}: given twice");
        let parsed: toml::Table = toml::from_str(&format!("v = {values}")).map_err(|e| {
            anyhow::anyhow!("--vary {key}: the values are not a TOML array: {}", e.to_string().trim_end())
        })?;
        let Some(toml::Value::Array(values)) = parsed.get("v") else {
            bail!("--vary {key}: the values must be a TOML array [V0, V1, …], one per world")
        };
        lists.push((key.to_string(), values.clone()));
    }
    let n = match (worlds, lists.first()) {
        (Some(n), _) => n,
        (None, Some((_, values))) => values.len(),
        (None, None) => 1,
    };
    let what = match (worlds, lists.first()) {
        (None, Some((key, _))) => format!("--vary {key}: give 1 to 65536 values (one per world)"),
        _ => "--worlds must be between 1 and 65536".to_string(),
    };
    anyhow::ensure!((1..=65_536).contains(&n), "{what}, got {n}");
    for (key, values) in &lists {
        anyhow::ensure!(values.len() == n, "--vary {key}: {} values for {n} worlds (give one per world)", values.len());
    }
    // Two worlds given the same value of every varied key would be the same run.
    if !lists.is_empty() {
        let worlds: Vec<toml::Value> =
            (0..n).map(|k| toml::Value::Array(lists.iter().map(|(_, values)| values[k].clone()).collect())).collect();
        if let Some((i, j)) = hooke_sim::batch::repeated(&worlds) {
            bail!(
                "--vary: worlds {j} and {i} get the same value of every varied key ({}): they would be the same run",
                lists.iter().map(|(key, values)| format!("{key} = {}", values[i])).collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok((0..n).map(|k| lists.iter().map(|(key, values)| (key.clone(), values[k].clone())).collect()).collect())
}

pub fn run(args: RunArgs) -> Result<()> {
    // The pool first: loading a scene may already use it (a mesh collider's grid).
    let threads = crate::set_threads(args.threads)?;
    let mut scene = match &args.scene {
        Some(path) => hooke_io::scene::load(path, crate::memory_limit())?,
        None => crate::presets::default_scene()?,
    };
    // One world without values to vary is the scene itself, run as it is (a scene that tears
    // or is cut too, which cannot be packed with others).
    let alone = args.worlds == Some(1) && args.vary.is_empty();
    if (args.worlds.is_some() || !args.vary.is_empty()) && !alone {
        let Some(path) = &args.scene else {
            bail!(
                "--worlds and --vary pack copies of a scene file: give one (the built-in default scene is not a file)"
            )
        };
        let sets = world_sets(args.worlds, &args.vary)?;
        // Each world's scene loaded on its own first: a bad key or value is named as the user
        // wrote it, with its world.
        for (k, set) in sets.iter().enumerate() {
            let world = hooke_sim::batch::load_scene(path, set, crate::memory_limit())
                .map_err(|e| anyhow::anyhow!("world {k} (--vary values number {k}): {e}"))?;
            if k == 0 {
                // The packed model sized from the first world before the others are loaded
                // (65 536 copies of a large scene took minutes and gigabytes to be refused).
                let m = &world.model;
                let constraints = m.distance().len() + m.dihedral().len() + m.rope_bending().len();
                let one = hooke::model::estimated_bytes(m.particle_count() as u128, constraints as u128);
                let all = one.saturating_mul(sets.len() as u128);
                anyhow::ensure!(
                    all <= crate::memory_limit() as u128,
                    "--worlds {}: {} copies of {} ({} particles and {constraints} constraints each, about {one} bytes) need \
                     about {all} bytes, more than the memory limit of {} bytes (the memory available)",
                    sets.len(),
                    sets.len(),
                    path.display(),
                    m.particle_count(),
                    crate::memory_limit()
                );
            }
        }
        let copies: Vec<(&Path, &toml::Table)> = sets.iter().map(|set| (path.as_path(), set)).collect();
        let name = format!("{}_{}worlds", scene.name, sets.len());
        let output = scene.output.clone();
        scene = hooke_sim::worlds::pack(&copies, crate::memory_limit())
            // (Most messages name the world already, with the scene's file.)
            .map_err(|(k, e)| {
                if e.contains(&format!("(world {k})")) { anyhow::anyhow!(e) } else { anyhow::anyhow!("world {k}: {e}") }
            })?
            .scene;
        scene.name = name;
        // The scene's cache format; its folder is the packed scene's own (out/<name>_<N>worlds).
        scene.output.format = output.format;
    }
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
        hooke_io::scene::check_fps(fps).map_err(|e| anyhow::anyhow!("--fps: {e}"))?;
        scene.fps = fps;
        hooke_io::scene::check_scene_step(&scene).map_err(|e| anyhow::anyhow!("--fps {fps}: {e}"))?;
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
    // A cache that cannot fit is refused before simulating, naming where the count came from.
    let counted = match args.frames {
        Some(f) => format!("--frames {f}"),
        None => format!(
            "{}: solver.frames = {}",
            args.scene.as_ref().map_or("the default scene".to_string(), |p| p.display().to_string()),
            scene.frames
        ),
    };
    hooke_sim::space::check(&dir, scene.frames, scene.model.particle_count())
        .map_err(|e| anyhow::anyhow!("{counted}: {e}"))?;
    scene.solver.set_parallel(threads > 1);
    // The picture's device is opened first, so a missing adapter costs no simulation time.
    let preview = match args.preview {
        true => {
            let ctx = hooke_gpu::GpuContext::new()
                .map_err(|e| anyhow::anyhow!("--preview needs a GPU adapter (lavapipe will do): {e}"))?;
            // And one the renderer can draw with (a downlevel fallback may not).
            crate::render::check_renderer(&ctx, &scene.model)
                .map_err(|e| anyhow::anyhow!("--preview: the GPU adapter cannot draw the picture: {e}"))?;
            Some(ctx)
        }
        false => None,
    };
    let mut options = crate::solver_options(args.backend, args.gpu_solve.solve(args.backend)?);
    options.tiles = args.gpu_solve.tiles(args.backend)?;
    options.local = args.gpu_solve.local(args.backend)?;
    options.contact_search = args.gpu_solve.contact_search(args.backend)?;
    let failed_dir = dir.join(hooke_sim::FAILED_FOLDER);
    let settings =
        BakeSettings { dir: dir.clone(), format, options, strict: args.strict, failed_dir: Some(failed_dir.clone()) };
    // A setting the solver refuses is the scene file's (or the default scene's) doing: name it.
    let source = args.scene.as_ref().map_or("the default scene".to_string(), |p| p.display().to_string());
    let bake = Bake::new(&mut scene, settings).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
    if let Some(note) = bake.note() {
        eprintln!("note: {note}");
    }
    let baked = {
        let scene = bake.scene();
        let model = &scene.model;
        println!(
            "scene {:?}: {}, {} in {}, {}; {} at {} fps, {} on {}, {} substeps × {}, {} thread(s), blow-up above {:.1} m/s",
            scene.name,
            crate::count(model.particle_count(), "particle", "particles"),
            crate::count(model.distance().constraints().len(), "constraint", "constraints"),
            crate::count(model.distance().colour_count(), "colour", "colours"),
            crate::count(model.colliders().len(), "collider", "colliders"),
            crate::count(scene.frames, "frame", "frames"),
            scene.fps,
            bake.solver_name(),
            bake.device(),
            scene.solver.substeps(),
            scene.solver.iterations_text(),
            threads,
            scene.solver.max_speed()
        );
        crate::report(scene);
        let progress = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(scene.frames as u64);
            bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} frames  {per_sec}  eta {eta}").unwrap());
            Some(bar)
        } else {
            None
        };
        let frames = scene.frames;
        let baked = bake.run(interrupted(), |frame, t| match &progress {
            Some(bar) => bar.inc(1),
            None if frames >= 10 && frame % (frames / 10) == 0 => {
                println!("frame {frame}/{frames} ({t:.1} s simulated)")
            }
            None => {}
        });
        if let Some(bar) = progress {
            bar.finish_and_clear();
        }
        baked?
    };
    let written = baked.frames_written;
    if written > 1 {
        println!(
            "{} ({:.2} s simulated) in {:.2} s: {:.2} ms/frame",
            crate::count(written - 1, "frame", "frames"),
            baked.time,
            baked.seconds,
            1e3 * baked.seconds / (written - 1) as f64
        );
    } else {
        println!("no frame completed ({:.2} s)", baked.seconds);
    }
    let (worst, first) = (&baked.worst, &baked.first);
    println!(
        "max stretch strain {:.4}, deepest penetration {:.3e} m, NaN count {}, final energy {:.4e} J (start {:.4e} J)",
        worst.max_stretch_strain,
        worst.max_penetration,
        worst.nan_count,
        worst.total_energy(),
        first.total_energy()
    );
    let torn = baked.torn;
    if torn.frames > 0 {
        println!(
            "tearing: {} broken and {} split in {}; {} particles at the end (from {})",
            crate::count(torn.broken, "constraint", "constraints"),
            crate::count(torn.split, "particle", "particles"),
            crate::count(torn.frames, "frame", "frames"),
            baked.model.particle_count(),
            scene.model.particle_count()
        );
    }
    if baked.contact_list_overflows > 0 {
        println!(
            "particle contacts: neighbour lists overflowed their {} candidates {} times (particles × substeps; those \
             particles took their contacts from the spatial hash's cells, none was dropped; per frame in \
             diagnostics.csv)",
            hooke_gpu::LIST_CAPACITY,
            baked.contact_list_overflows
        );
    }
    let (iterations, substeps, most) = baked.iterations;
    if let SolverChoice::Position(hooke::XpbdSettings { auto_iterations: Some(_), .. }) = scene.solver
        && substeps > 0
    {
        let (frames, attempts) = baked.iteration_retries;
        let again = if frames > 0 {
            format!(
                "; {} taken again with more iterations ({} in all: the GPU decides per frame)",
                crate::count(frames, "frame", "frames"),
                crate::count(attempts as usize, "attempt", "attempts")
            )
        } else {
            String::new()
        };
        println!(
            "iterations per substep: {:.2} on average, at most {most} ({} in all){again}",
            iterations as f64 / substeps as f64,
            iterations
        );
    }
    let (raised, most_substeps, retried) = baked.raised_substeps;
    if raised > 0 {
        println!(
            "substeps: the tension limit raised {} from {} to at most {most_substeps} (aiming at h·√(T(wᵢ + wⱼ)/L) ≤ 1 \
             for every rope segment and every constraint of a cloth under the global solve, and at turns of at most \
             sin φ = {} a substep for the latter; [solver] max_substeps caps it); {} taken again with more",
            crate::count(raised, "frame", "frames"),
            scene.solver.substeps(),
            hooke::solver::xpbd::stability::TURN_MARGIN,
            crate::count(retried, "frame", "frames")
        );
        if let SolverChoice::Position(x) = scene.solver
            && most_substeps >= x.max_substeps
        {
            eprintln!(
                "warning: the tension limit reached [solver] max_substeps = {}: a rope's or cloth's tension, or a \
                 cloth's turning, asked for more, and it may have zigzagged or left its constraints off their length \
                 (raise max_substeps)",
                x.max_substeps
            );
        }
    }
    let (lines, warnings) = baked.monitor.summary();
    for line in lines {
        println!("{line}");
    }
    for w in warnings {
        eprintln!("warning: {w}");
    }
    // A run cut short wrote into `failed/`, leaving `dir`'s earlier cache as it was.
    let written_dir = if baked.failure.is_some() { &failed_dir } else { &dir };
    let files = &baked.files;
    for f in files.iter().take(5) {
        println!("wrote {}", f.display());
    }
    if files.len() > 5 {
        println!("wrote {} in {}", crate::count(files.len() - 5, "more file", "more files"), written_dir.display());
    }
    println!("wrote {}", baked.diagnostics.display());
    let others = other_caches(written_dir, files);
    if !others.is_empty() {
        let shown: Vec<String> = others.iter().take(3).cloned().collect();
        eprintln!(
            "note: {} also holds {} that this run did not write ({}{}), from an earlier run with another format or \
             name; diagnostics.csv describes this run only",
            written_dir.display(),
            crate::count(others.len(), "cache file", "cache files"),
            shown.join(", "),
            if others.len() > 3 { ", …" } else { "" }
        );
    }
    if args.preview && baked.failure.is_none() {
        let path = dir.join("preview.png");
        let ctx = preview.as_ref().expect("opened before the run when --preview is given");
        crate::render::preview(ctx, &scene, &baked.model, &baked.positions, baked.time, &path)?;
        println!("wrote {}", path.display());
    }
    if let Some(failure) = baked.failure {
        // (Counted as the summary counts them: frame 0, the start, is not simulated.)
        let frames = match written - 1 {
            0 => "only frame 0, the start, was".to_string(),
            1 => "frames 0–1 (the start and 1 simulated frame) were".to_string(),
            k => format!("frames 0–{k} (the start and {k} simulated frames) were"),
        };
        // Whether `dir` holds a cache of this scene that the run left alone.
        let kept = files.iter().filter_map(|f| f.file_name()).any(|name| dir.join(name).is_file());
        let earlier =
            if kept { "the earlier run's cache there is left as it was" } else { "nothing there was changed" };
        bail!("{failure}; {frames} written to {}, not into {} ({earlier})", failed_dir.display(), dir.display());
    }
    if failed_dir.is_dir() {
        println!("note: {} holds the frames of an earlier run that was cut short", failed_dir.display());
    }
    Ok(())
}

/// The cache files (`.usda`, `.obj`, `.pc2`) in `dir` that are not among `written`, sorted
/// by name: an earlier run's, left beside this one's when the format or the scene's or a
/// body's name changed (a run removes only its own earlier frames).
fn other_caches(dir: &Path, written: &[PathBuf]) -> Vec<String> {
    let ours: std::collections::HashSet<&std::ffi::OsStr> = written.iter().filter_map(|f| f.file_name()).collect();
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut others: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| !ours.contains(n.as_os_str()))
        .filter_map(|n| n.to_str().map(str::to_string))
        .filter(|n| !n.starts_with('.') && [".usda", ".obj", ".pc2"].iter().any(|x| n.ends_with(x)))
        .collect();
    others.sort();
    others
}

/// A flag set by Ctrl-C or SIGTERM, for the whole process: a bake stops after its current
/// frame and finishes its cache with the frames done (in the output folder's `failed/`, as a
/// blow-up's), so that an interrupted run leaves complete files and no temporary ones. The
/// handler is installed on first use; if another is installed already (tests calling `run`
/// twice), the default action stays.
pub fn interrupted() -> &'static std::sync::atomic::AtomicBool {
    static FLAG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let _ = ctrlc::set_handler(|| FLAG.store(true, std::sync::atomic::Ordering::SeqCst));
    });
    &FLAG
}
