//! `hooke bench`: median ms per frame of a scene or preset.

use anyhow::Result;
use hooke::Solver;
use std::time::Instant;

/// Arguments of `hooke bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Scene file, `default`, or a preset: `demo:N` (the default scene, the viewer's `cloth`
    /// demo, with an N×N cloth), `tear:N` (`scenes/tear_sheet.toml` with an N×N sheet; torn
    /// only with `--tearing`), `cut:N` (`scenes/cut_cloth.toml` with an N×N cloth, cut after
    /// the second frame with `--tearing`), `grid:N` (an N×N, 1 m cloth hanging from one edge, XPBD),
    /// `sheet:N` (an N×N, 1 m sheet of K = 1e4 N/m hanging from its top row, XPBD),
    /// `warp-cloth:N` (NVIDIA Warp's cloth benchmark, symplectic Euler),
    /// `newton-hanging:WxH` (Newton's cloth_hanging example, XPBD 10 × 10), `pile:N` (an
    /// N×N, 1 m cloth with self-collision dropped edge-first onto the ground, XPBD; it heaps
    /// up from N ≈ 100, coarser cloths fall over flat), `stack:N` (four N×N cloths with
    /// self-collision falling flat onto each other, XPBD) or `capsules:N` (an N×N, 2 m cloth
    /// falling onto 100 capsules above the ground, XPBD: the broad phase's case).
    #[arg(default_value = "default")]
    scene: String,
    /// Timed frames.
    #[arg(long, default_value_t = 60, allow_negative_numbers = true)]
    frames: usize,
    /// Untimed warm-up frames.
    #[arg(long, default_value_t = 10, allow_negative_numbers = true)]
    warmup: usize,
    /// Substeps per frame (overrides the scene).
    #[arg(long, allow_negative_numbers = true)]
    substeps: Option<u32>,
    /// Iterations per substep (overrides the scene).
    #[arg(long, allow_negative_numbers = true)]
    iterations: Option<u32>,
    /// Iterate each substep to half the residual tolerance, at most this many iterations
    /// (XPBD; on the GPU with --tearing only, as frames are otherwise queued without a
    /// read-back; overrides the scene's iterations).
    #[arg(long, allow_negative_numbers = true)]
    auto_iterations: Option<u32>,
    /// Tethers on or off (XPBD/PBD; overrides the scene).
    #[arg(long)]
    tethers: Option<bool>,
    /// Self-collision on or off for every body (overrides each body's `self_collision`).
    #[arg(long)]
    self_collision: Option<bool>,
    /// Contact of cloth triangles with colliders on or off for every cloth (overrides each
    /// cloth's `triangle_contact`).
    #[arg(long)]
    triangle_contact: Option<bool>,
    /// Use implicit Euler instead of the scene's solver (same substeps; for quality-per-cost
    /// comparisons).
    #[arg(long)]
    implicit: bool,
    /// Test every collider against every particle instead of through the colliders' broad
    /// phase (XPBD on the CPU; same result, for comparing the cost).
    #[arg(long)]
    no_broad_phase: bool,
    /// Worker threads (default: all cores; 1 runs the sequential path).
    #[arg(long, allow_negative_numbers = true)]
    threads: Option<usize>,
    /// Where to simulate: cpu, or gpu (wgpu compute; XPBD/PBD scenes). On the GPU the frames
    /// are queued without waiting and timed as one block ending in a read-back, so the figure
    /// is a mean, not a median.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: crate::Backend,
    #[command(flatten)]
    gpu_solve: crate::GpuSolveArgs,
    /// GPU only: after the solver-alone frames, time as many again with the cloth drawn after
    /// each frame from the solver's own buffers (hooke-render: an off-screen WxH image, 4×
    /// MSAA, the colliders and ground, no read-back and no CPU copy), and report the drawing's
    /// share of the frame. Grids with more triangles than a quarter of the pixels are drawn at
    /// a coarser level of detail unless --full-detail.
    #[arg(long, value_name = "WxH")]
    draw: Option<String>,
    /// Draw every triangle of fine grids (--draw), with no level of detail.
    #[arg(long, requires = "draw")]
    full_detail: bool,
    /// Samples per pixel of --draw's picture (1 or 4).
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, requires = "draw")]
    samples: u32,
    /// Tear as the scene says (tear strains and energies, scripted cuts) after every timed frame: the state
    /// is read back where a tear may be due (on the GPU, where its own check does not rule one
    /// out), checked, and torn as a run tears it (with --tear-overlap, a tear found after one
    /// frame is taken after the next); the report gives the solve's time per frame, the check's, and
    /// each tear event's (the torn model taken and the solver rebuilt on it). Without it a
    /// scene's tearing is ignored.
    #[arg(long)]
    tearing: bool,
    /// With --tearing: make each tear by strain beside the next frame and take it after that
    /// frame (a scene's `[solver] tear_overlap = true`): on a GPU the host's tear is made while
    /// the device solves, and the tear takes effect one frame late.
    #[arg(long, requires = "tearing")]
    tear_overlap: bool,
    /// Pack this many copies of the scene file into one model of worlds (`hooke batch
    /// --worlds`'s packing) and time a frame of all of them together. Scene files only, not
    /// presets.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    worlds: usize,
    /// After the timed frames, time each stage of more frames and report ms per frame per
    /// stage: on the GPU 10 frames with timestamps inside the compute pass (where the adapter
    /// offers them), on the CPU as many frames as timed with the wall clock read between the
    /// stages (XPBD, PBD, implicit Euler; not with --tearing; XPBD/PBD count the finish of each
    /// substep but a frame's last under predict, the pass that does both). The end strain and
    /// residual are then measured after those frames.
    #[arg(long)]
    stages: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The mean of `v`, or `None` when it is empty.
fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// `--draw WxH`: the picture's width and height in pixels.
fn picture_size(text: &str) -> Result<(u32, u32)> {
    let bad = || anyhow::anyhow!("--draw {text:?}: expected WxH in pixels, each 1 to 8192 (e.g. 1280x800)");
    let (w, h) = text.split_once('x').ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    anyhow::ensure!((1..=8192).contains(&w) && (1..=8192).contains(&h), bad());
    Ok((w, h))
}

/// Most timed (and warm-up) frames: a benchmark keeps a time per frame.
const MAX_FRAMES: usize = 1_000_000;

pub fn bench(args: BenchArgs) -> Result<()> {
    anyhow::ensure!(
        (1..=MAX_FRAMES).contains(&args.frames),
        "--frames must be between 1 and {MAX_FRAMES}, got {}",
        args.frames
    );
    anyhow::ensure!(args.warmup <= MAX_FRAMES, "--warmup must be at most {MAX_FRAMES}, got {}", args.warmup);
    let draw = args.draw.as_deref().map(picture_size).transpose()?;
    // The scene file's own range for `solver.substeps` (0 was taken, and the step check then
    // spoke of a substep of inf s).
    if let Some(s) = args.substeps {
        anyhow::ensure!((1..=100_000).contains(&s), "--substeps must be between 1 and 100000, got {s}");
    }
    anyhow::ensure!(args.samples == 1 || args.samples == 4, "--samples must be 1 or 4, got {}", args.samples);
    anyhow::ensure!(
        draw.is_none() || args.backend == crate::Backend::Gpu,
        "--draw needs --backend gpu (it draws from the GPU solver's buffers)"
    );
    // Options of the other backend, refused rather than ignored.
    let (local, contact_search) = (args.gpu_solve.local(args.backend)?, args.gpu_solve.contact_search(args.backend)?);
    anyhow::ensure!(
        !(args.no_broad_phase && args.backend == crate::Backend::Gpu),
        "--no-broad-phase applies to the CPU solver's colliders (the GPU solver has no such switch)"
    );
    // The pool first: loading a scene may already use it (a mesh collider's grid).
    anyhow::ensure!(
        !(args.stages && args.tearing),
        "--stages cannot be combined with --tearing (a tear rebuilds the solver mid-run)"
    );
    let threads = crate::set_threads(args.threads)?;
    let mut scene = crate::presets::resolve(&args.scene)?;
    anyhow::ensure!((1..=65_536).contains(&args.worlds), "--worlds must be between 1 and 65536, got {}", args.worlds);
    if args.worlds > 1 {
        let path = std::path::Path::new(&args.scene);
        anyhow::ensure!(
            path.is_file(),
            "--worlds packs copies of a scene file, and {:?} is a preset; write the scene to a file",
            args.scene
        );
        // --substeps and --iterations apply before packing (a scene that iterates "auto" can
        // then be packed).
        let mut set = toml::Table::new();
        if let Some(s) = args.substeps {
            set.insert("solver.substeps".into(), (s as i64).into());
        }
        if let Some(i) = args.iterations {
            set.insert("solver.iterations".into(), (i as i64).into());
        }
        let copies = vec![(path, &set); args.worlds];
        let name = format!("{}_{}worlds", scene.name, args.worlds);
        scene = hooke_sim::worlds::pack(&copies, crate::memory_limit())
            .map_err(|(_, e)| anyhow::anyhow!("--worlds {}: {e}", args.worlds))?
            .scene;
        scene.name = name;
    }
    if let Some(on) = args.self_collision {
        crate::set_self_collision(&mut scene, on)?;
    }
    if let Some(on) = args.triangle_contact {
        crate::set_triangle_contact(&mut scene, on)?;
    }
    // Flags of the position-based solvers, which a force-based integrator has no use for
    // (they were ignored without a word).
    let force = args.implicit || matches!(scene.solver, hooke_io::scene::SolverChoice::Force(_));
    for (given, flag) in [
        (args.iterations.is_some(), "--iterations"),
        (args.auto_iterations.is_some(), "--auto-iterations"),
        (args.tethers.is_some(), "--tethers"),
        (args.no_broad_phase, "--no-broad-phase"),
    ] {
        anyhow::ensure!(
            !(force && given),
            "{flag} applies to XPBD and PBD (the iterations, tethers and colliders' broad phase of a constraint solve), and this run uses a \
             force-based integrator ({}): leave it out",
            match &scene.solver {
                _ if args.implicit => "--implicit".to_string(),
                hooke_io::scene::SolverChoice::Force(f) => format!("the scene's {:?}", f.integrator),
                hooke_io::scene::SolverChoice::Position(_) => "XPBD".to_string(),
            }
        );
    }
    if let Some(s) = args.substeps {
        scene.solver.set_substeps(s);
        hooke_io::scene::check_scene_step(&scene).map_err(|e| anyhow::anyhow!("--substeps {s}: {e}"))?;
    }
    if let Some(i) = args.iterations {
        scene.solver.set_iterations(i);
    }
    if let hooke_io::scene::SolverChoice::Position(s) = &mut scene.solver {
        s.collider_broad_phase = !args.no_broad_phase;
        if let Some(max_iterations) = args.auto_iterations {
            anyhow::ensure!(
                (1..=10_000).contains(&max_iterations),
                "--auto-iterations must be between 1 and 10000, got {max_iterations}"
            );
            let tolerance = hooke_io::scene::auto_tolerance(scene.residual_tolerance);
            s.auto_iterations = Some(hooke::AutoIterations { tolerance, max_iterations });
            s.iterations = 1;
        }
        if let Some(t) = args.tethers {
            s.tethers = t;
        }
    }
    if args.implicit {
        let d = hooke::ForceSettings::default();
        let settings = hooke::ForceSettings {
            integrator: hooke::Integrator::ImplicitEuler,
            substeps: scene.solver.substeps(),
            air_damping: match scene.solver {
                hooke_io::scene::SolverChoice::Position(s) => s.air_damping,
                hooke_io::scene::SolverChoice::Force(s) => s.air_damping,
            },
            max_speed: scene.solver.max_speed(),
            ..d
        };
        scene.solver = hooke_io::scene::SolverChoice::Force(settings);
    }
    scene.solver.set_parallel(threads > 1);
    let model = scene.model.clone();
    let gpu = args.backend == crate::Backend::Gpu;
    let solve = args.gpu_solve.solve(args.backend)?;
    let tiles = args.gpu_solve.tiles(args.backend)?;
    if gpu
        && !args.tearing
        && let hooke_io::scene::SolverChoice::Position(hooke::XpbdSettings { auto_iterations: Some(_), .. }) =
            scene.solver
    {
        // Frames queued back to back, with no read-back: the GPU cannot take one again with
        // more iterations (`hooke_gpu::iterates_to_tolerance`), so the fixed minimum, said.
        let n = scene.solver.iterations();
        scene.solver.set_iterations(n);
        eprintln!(
            "note: iterations = \"auto\": hooke bench queues the GPU's frames without reading them back, so it \
             times a fixed {n} per substep (with --tearing, or in hooke run, the GPU's Gauss–Seidel solve iterates to \
             the tolerance)"
        );
    }
    let dt = 1.0 / scene.fps;
    let mut state = hooke::State::from_model(&model);
    let mut times = Vec::with_capacity(args.frames);
    // GPU time per frame from timestamps: None on the CPU or where the device has none.
    let mut gpu_times: Option<Vec<f64>> = None;
    // GPU: the host's time per timed frame making its control and recording and submitting
    // it (s): frames are queued, so the wall figure is the larger of this and the device's.
    let mut host_per_frame = None;
    // GPU: the wall time per timed frame until the device had finished them all, before the
    // final read-back of the state (s).
    let mut device_done = None;
    // Iterations and substeps of the timed CPU frames (with auto iterations they vary).
    let (mut iteration_count, mut substep_count, mut list_builds) = (0u64, 0u64, 0u64);
    let mut list_overflows = 0u64;
    // Whether the GPU's particle contacts kept neighbour lists.
    let mut gpu_lists = false;
    // The GPU's particle contacts as resolved for the model (all pairs, lists or cells).
    let mut gpu_search: Option<hooke_gpu::ContactSearch> = None;
    // Whether the GPU ran each substep's iterations in workgroup memory (`--gpu-local`; not
    // known, so false, on the --tearing path, whose solver is behind the Solver trait).
    let mut gpu_local = false;
    // The Jacobi relaxation ω and Chebyshev ρ in use (GPU Jacobi only).
    let mut jacobi = None;
    // Mean wall time per frame (s) with the cloth drawn after each frame (--draw).
    let mut drawn = None;
    // Mean GPU time per frame of each stage (--stages), and of the rest of the frame (s).
    let mut stage_times: Option<hooke::StageTimes> = None;
    // The renderer's level of detail of cloth grids (--draw): the stride of rows and columns.
    let mut stride = 1;
    // With --tearing: the time of each frame's check (read-back and strains) when nothing
    // tore, and of each tear event (check, tear and rebuild), in s.
    let mut tearing = args.tearing.then(|| {
        let mut t = hooke_sim::Tearing::for_scene(&scene);
        if args.tear_overlap {
            t.set_overlap(true);
        }
        t
    });
    let (mut checks, mut events, mut rebuilds) = (Vec::new(), Vec::new(), Vec::new());
    // The wall time of each timed frame that follows a tear (s): it pays for whatever the
    // solver makes lazily for the torn model (the tethers, where the pins are not those the
    // rebuild made them for ahead), which the event does not.
    let mut after_tear = Vec::new();
    let (mut tear_broken, mut tear_split) = (0u64, 0u64);
    // For each timed tear event by strain (not a scripted cut): the residual stretch strain the
    // frame's solve left away from the pins, largest over the bodies that tore, measured after
    // the check and before the tear and left out of the event's time (NaN where the solver
    // has no multipliers): a tear made over the scene's tolerance may be the solve's error.
    let mut tear_residuals: Vec<f32> = Vec::new();
    // With --tearing: the time of each check that found a tear without taking one (the tear
    // is taken after the next frame), in s.
    let mut found: Vec<f64> = Vec::new();
    // Timed frames whose state was read back for the tear check (on the GPU, those its
    // device-side check did not rule out).
    let mut checked = 0usize;
    // Tear events in the warm-up frames (untimed).
    let mut warmup_tears = 0usize;
    let (solver, device): (Box<dyn hooke::Solver>, String) = if let Some(tearing) = &mut tearing {
        let mut options = crate::solver_options(args.backend, solve);
        options.tiles = tiles;
        options.local = local;
        options.contact_search = contact_search;
        let hooke_sim::MadeSolver { mut solver, device } = hooke_sim::make_solver(&scene, &options)?;
        for _ in 0..args.warmup {
            let control = tearing.control(scene.control_at(solver.time()));
            solver.step(&control, dt)?;
            if tearing.due(solver.as_ref()) {
                solver.read_state(&mut state);
                warmup_tears += usize::from(tearing.after_frame(solver.as_mut(), &mut state)?.is_some());
            }
        }
        let mut tore_last = false;
        for _ in 0..args.frames {
            let control = tearing.control(scene.control_at(solver.time()));
            let t = Instant::now();
            let report = solver.step(&control, dt)?;
            let due = tearing.due(solver.as_ref());
            if due {
                solver.read_state(&mut state);
                checked += 1;
            }
            times.push(t.elapsed().as_secs_f64());
            if tore_last {
                after_tear.push(t.elapsed().as_secs_f64());
            }
            iteration_count += report.total_iterations as u64;
            substep_count += report.substeps as u64;
            list_builds += report.contact_list_builds as u64;
            list_overflows += report.contact_list_overflows as u64;
            if !due {
                tore_last = false;
                continue;
            }
            let t = Instant::now();
            // The solve's residual where it tears, before the tear drops its multipliers.
            let (mut solved, mut measuring) = (f32::NAN, std::time::Duration::ZERO);
            let tore = tearing.after_frame_observed(solver.as_mut(), &mut state, &mut |s, st, bodies| {
                let t = Instant::now();
                solved = residual_of(s, &control, st, bodies);
                measuring = t.elapsed();
            })?;
            let elapsed = (t.elapsed() - measuring).as_secs_f64();
            tore_last = tore.is_some();
            match tore {
                // Found, to be taken after the next frame (`hooke_sim::Tearing`).
                None if tearing.waiting() => found.push(elapsed),
                Some(c) => {
                    events.push(elapsed);
                    if !tearing.strained_bodies().is_empty() {
                        tear_residuals.push(solved);
                    }
                    rebuilds.push(tearing.last_rebuild().as_secs_f64());
                    (tear_broken, tear_split) = (tear_broken + c.broken as u64, tear_split + c.split as u64);
                }
                None => checks.push(elapsed),
            }
        }
        if gpu && solver.contact_list_totals().is_some() {
            gpu_lists = true;
        }
        // The end state (the last frame's may not have been read for the check).
        solver.read_state(&mut state);
        (solver, device)
    } else if gpu {
        let mut options = crate::solver_options(args.backend, solve);
        options.tiles = tiles;
        options.local = local;
        options.contact_search = contact_search;
        options.health_interval = 0;
        options.timestamps = true;
        let mut solver = hooke_sim::make_gpu_solver(&scene, &options)?;
        let device = solver.context().describe();
        // A tension limit (direct-solved ropes, global cloth solves) needs each frame's health
        // record read back to raise the substeps: queued frames run the fixed count, said.
        let read_back = hooke_gpu::GpuSettings { health_interval: 1, ..*solver.settings() };
        if !solver.applies_tension_limit() && hooke_gpu::applies_tension_limit(&model, &read_back) {
            eprintln!(
                "note: max_substeps = {}: hooke bench queues the GPU's frames without reading them back, so it times the \
                 scene's fixed {} substeps a frame (with --tearing, or in hooke run, the tension limit raises them where \
                 a rope or a globally solved cloth needs more)",
                read_back.xpbd.max_substeps, read_back.xpbd.substeps
            );
        }
        for _ in 0..args.warmup {
            solver.step(&scene.control_at(solver.time()), dt)?;
        }
        // Drain the warm-up, then queue all timed frames and wait once at the end. Frames are
        // not checked one by one (that would wait for each); the device records a blow-up and
        // `try_read_state` reports it, as the CPU's step would.
        solver.try_read_state(&mut state)?;
        let lists_before = hooke::Solver::contact_list_totals(&mut solver);
        let timed = solver.time_frames(u32::try_from(args.frames).unwrap_or(u32::MAX));
        let t = Instant::now();
        let mut host = std::time::Duration::ZERO;
        for _ in 0..args.frames {
            let h = Instant::now();
            let report = solver.step(&scene.control_at(solver.time()), dt)?;
            host += h.elapsed();
            substep_count += report.substeps as u64;
        }
        host_per_frame = Some(host.as_secs_f64() / args.frames as f64);
        // The device done with every frame, then the state read back (the accuracy's).
        solver.context().wait_idle()?;
        device_done = Some(t.elapsed().as_secs_f64() / args.frames as f64);
        solver.try_read_state(&mut state)?;
        times.push(t.elapsed().as_secs_f64() / args.frames as f64);
        if let (Some(a), Some(b)) = (lists_before, hooke::Solver::contact_list_totals(&mut solver)) {
            (list_builds, list_overflows, gpu_lists) = (b.0 - a.0, b.1 - a.1, true);
        }
        gpu_search = solver.contact_search();
        gpu_local = solver.uses_local_sweep();
        jacobi = solver.jacobi_parameters();
        if timed {
            gpu_times = solver.read_frame_times().filter(|t| !t.is_empty());
        }
        if args.stages && hooke::Solver::measure_stages(&mut solver, true) {
            let mut sum = hooke::StageTimes::default();
            for _ in 0..10 {
                solver.step(&scene.control_at(solver.time()), dt)?;
                if let Some(t) = hooke::Solver::take_stage_times(&mut solver) {
                    sum.seconds.iter_mut().zip(t.seconds).for_each(|(a, b)| *a += b);
                    sum.other += t.other;
                    sum.frames += t.frames;
                }
            }
            hooke::Solver::measure_stages(&mut solver, false);
            solver.try_read_state(&mut state)?;
            stage_times = (sum.frames > 0).then_some(sum);
        }
        if let Some((width, height)) = draw {
            let settings = hooke_render::RenderSettings {
                width,
                height,
                samples: args.samples,
                level_of_detail: !args.full_detail,
                ..Default::default()
            };
            let renderer = hooke_render::Renderer::new(solver.context().clone(), model.clone(), settings)?;
            let camera = hooke_render::Camera::framing(
                &model,
                35f32.to_radians(),
                25f32.to_radians(),
                width as f32 / height as f32,
            );
            stride = renderer.cloth_stride();
            let t = Instant::now();
            for _ in 0..args.frames {
                solver.step(&scene.control_at(solver.time()), dt)?;
                let buffers = hooke_render::ClothBuffers {
                    positions: solver.position_buffer(),
                    normals: solver.normal_buffer(),
                    triangles: solver.triangle_buffer(),
                };
                renderer.draw(buffers, &scene.collider_poses_at(solver.time()), &camera);
            }
            solver.try_read_state(&mut state)?;
            drawn = Some(t.elapsed().as_secs_f64() / args.frames as f64);
        }
        (Box::new(solver), device)
    } else {
        let hooke_sim::MadeSolver { mut solver, device } =
            hooke_sim::make_solver(&scene, &crate::solver_options(args.backend, solve))?;
        for _ in 0..args.warmup {
            solver.step(&scene.control_at(solver.time()), dt)?;
        }
        for _ in 0..args.frames {
            let control = scene.control_at(solver.time());
            let t = Instant::now();
            let report = solver.step(&control, dt)?;
            times.push(t.elapsed().as_secs_f64());
            iteration_count += report.total_iterations as u64;
            substep_count += report.substeps as u64;
            list_builds += report.contact_list_builds as u64;
            list_overflows += report.contact_list_overflows as u64;
        }
        // Stage times (--stages): the same number of frames again with the wall clock read
        // between the stages, after the timed frames so that
        // their times are not touched.
        if args.stages && solver.measure_stages(true) {
            for _ in 0..args.frames {
                solver.step(&scene.control_at(solver.time()), dt)?;
            }
            stage_times = solver.take_stage_times().filter(|t| t.frames > 0);
            solver.measure_stages(false);
        }
        solver.read_state(&mut state);
        (solver, device)
    };
    // The model the run ended with (tearing changes it).
    let model = solver.model().clone();
    // (mean, median, min) of the GPU times, in ms.
    let gpu_stats = gpu_times.map(|mut t| {
        let mean = t.iter().sum::<f64>() / t.len() as f64;
        t.sort_by(f64::total_cmp);
        (mean, t[t.len() / 2], t[0])
    });
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let poses = scene.collider_poses_at(solver.time());
    let d =
        hooke::Diagnostics::measure(&model, &state.particle_position, &state.particle_velocity, solver.time(), &poses);
    anyhow::ensure!(
        d.nan_count == 0,
        "simulation blew up: {} of {} particles are not finite after the timed frames",
        d.nan_count,
        model.particle_count()
    );
    // Strain away from the pins and the residual the solver leaves, at the end (largest over the
    // bodies; the residual is NaN where the solver has none).
    let mut solver = solver;
    let (mut residuals, mut pinned, mut bodies) =
        (hooke::diagnostics::ConstraintResiduals::default(), Vec::new(), Vec::new());
    let measured = solver.constraint_residuals(&mut residuals).then_some(&residuals);
    let control = match &tearing {
        Some(t) => t.control(scene.control_at(solver.time())),
        None => scene.control_at(solver.time()),
    };
    hooke::diagnostics::pinned_particles(&model, &control, &mut pinned);
    hooke::diagnostics::BodyConvergence::measure(&model, &state.particle_position, &pinned, measured, &mut bodies);
    let strain_away = bodies.iter().map(|b| b.strain).filter(|v| !v.is_nan()).fold(0.0f32, f32::max);
    let residual = bodies.iter().map(|b| b.residual()).filter(|v| !v.is_nan()).fold(f32::NAN, f32::max);
    // The deepest overlap of two particles that are not neighbours at rest, over every body
    // (self-collision on or off), as a fraction of their contact distance.
    let all: Vec<u32> = (0..model.particle_count() as u32).collect();
    let overlap = hooke::collision::deepest_overlap(&model, &state.particle_position, &all);
    let overlap_fraction = overlap.map_or(0.0, |o| o.depth() / o.contact_distance);
    let n = model.particle_count() as f64;
    // Every constraint the solver projects: distance constraints, hinges (angle bending of
    // cloth) and rope joints (angle bending of ropes); the tethers, one per free particle of a
    // pinned body, are not counted (as the peers leave out their pin limits).
    let (distance, hinges, joints) = (
        model.distance().constraints().len(),
        model.dihedral().constraints().len(),
        model.rope_bending().constraints().len(),
    );
    let c = (distance + hinges + joints) as f64;
    // Substeps per timed frame: the scene's, or more where the tension limit raised them.
    let sub = if substep_count > 0 && args.frames > 0 {
        substep_count as f64 / args.frames as f64
    } else {
        scene.solver.substeps() as f64
    };
    let it = if iteration_count > 0 {
        iteration_count as f64 / substep_count as f64
    } else {
        scene.solver.iterations() as f64
    };
    let ns_per_ci = median * 1e9 / (c * sub * it);
    let json = serde_json::json!({
        "scene": scene.name,
        "backend": if gpu { "gpu" } else { "cpu" },
        "device": device,
        "timing": if gpu && !args.tearing { "mean over frames queued back to back, ending in one read-back" } else { "median of per-frame wall times" },
        "solver": solver.info().name,
        "gpu_tiles": tiles,
        "gpu_local": gpu_local,
        "relaxation": jacobi.map(|(w, _)| w),
        "spectral_radius": jacobi.map(|(_, rho)| rho),
        "threads": threads,
        "worlds": scene.model.worlds().len(),
        "particles": scene.model.particle_count(),
        "constraints": distance + hinges + joints,
        "distance_constraints": distance,
        "hinges": hinges,
        "rope_joints": joints,
        "colours": scene.model.distance().colour_count(),
        "substeps": scene.solver.substeps(),
        "iterations": scene.solver.iterations(),
        "iterations_text": scene.solver.iterations_text(),
        "iterations_mean": it,
        "frames": args.frames,
        "warmup": args.warmup,
        "ms_per_frame_median": median * 1e3,
        "ms_per_frame_min": times[0] * 1e3,
        "gpu_timestamps": if !gpu { "n/a (cpu)" } else if gpu_stats.is_some() { "each frame's compute pass" } else { "unavailable (the adapter offers no TIMESTAMP_QUERY)" },
        "gpu_ms_per_frame_mean": gpu_stats.map(|s| s.0),
        "gpu_ms_per_frame_median": gpu_stats.map(|s| s.1),
        "gpu_ms_per_frame_min": gpu_stats.map(|s| s.2),
        "host_ms_per_frame": host_per_frame.map(|s| s * 1e3),
        "ms_per_frame_before_read_back": device_done.map(|s| s * 1e3),
        "particle_substeps_per_s": n * sub / median,
        "constraint_solves_per_s": c * sub * it / median,
        "ns_per_constraint_iteration": ns_per_ci,
        "max_stretch_strain_end": d.max_stretch_strain,
        "strain_away_from_pins_end": strain_away,
        "residual_strain_end": if residual.is_nan() { None } else { Some(residual) },
        "nan_count_end": d.nan_count,
        "deepest_overlap_end_m": overlap.map_or(0.0, |o| o.depth()),
        "deepest_overlap_end_fraction": overlap_fraction,
        "max_penetration_end_m": d.max_penetration,
        "draw": draw.map(|(w, h)| format!("{w}x{h}")),
        "draw_samples": draw.map(|_| args.samples),
        "draw_stride": draw.map(|_| stride),
        "ms_per_frame_drawn": drawn.map(|t| t * 1e3),
        "drawing_share": drawn.map(|t| 1.0 - median / t),
        "stage_ms_per_frame": stage_times.map(|t| {
            let mut m = serde_json::Map::new();
            for stage in hooke::Stage::ORDER {
                m.insert(stage.name().into(), (t.of(stage) * 1e3 / t.frames as f64).into());
            }
            m.insert("other".into(), (t.other * 1e3 / t.frames as f64).into());
            m
        }),
    });
    // Of the tear events by strain: how many followed a solve over the tolerance, and the
    // largest residual measured before one (None where the solver measured none).
    let tear_over = tear_residuals.iter().filter(|&&r| r > scene.residual_tolerance).count();
    let tear_most = tear_residuals.iter().copied().filter(|r| !r.is_nan()).reduce(f32::max);
    let tear_max = events.iter().copied().fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))));
    let tearing_json = serde_json::json!({
        "on": args.tearing,
        "overlap": tearing.as_ref().is_some_and(|t| t.overlap()),
        "events": events.len(),
        "warmup_events": warmup_tears,
        "broken_constraints": tear_broken,
        "split_particles": tear_split,
        "check_ms_mean": mean(&checks).map(|t| t * 1e3),
        "frames_read_back": checked,
        "event_ms_mean": mean(&events).map(|t| t * 1e3),
        "event_ms_max": tear_max.map(|t| t * 1e3),
        // Each event in the order they came (the first pays for memory the later ones reuse).
        "event_ms": events.iter().map(|t| t * 1e3).collect::<Vec<_>>(),
        "event_rebuild_ms": rebuilds.iter().map(|t| t * 1e3).collect::<Vec<_>>(),
        "event_rebuild_ms_mean": mean(&rebuilds).map(|t| t * 1e3),
        "frame_after_tear_ms_mean": mean(&after_tear).map(|t| t * 1e3),
        // Checks that found a tear and took none (it is taken after the next frame).
        "found_only": found.len(),
        "found_only_ms_mean": mean(&found).map(|t| t * 1e3),
        "events_over_tolerance": tear_most.map(|_| tear_over),
        "residual_before_events_max": tear_most,
        "particles_end": model.particle_count(),
    });
    let mut json = json;
    json["tearing"] = tearing_json;
    json["substeps_mean"] = sub.into();
    json["contact_list_builds"] = list_builds.into();
    json["contact_list_overflows"] = list_overflows.into();
    // Where the GPU's particle contacts found their candidates (null on the CPU, without
    // self-collision, or with --tearing, whose solver is not asked).
    json["contact_search"] = match gpu_search {
        Some(hooke_gpu::ContactSearch::AllPairs) => "all-pairs".into(),
        Some(hooke_gpu::ContactSearch::Lists) => "lists".into(),
        Some(hooke_gpu::ContactSearch::Cells) => "cells".into(),
        Some(hooke_gpu::ContactSearch::Auto) | None => serde_json::Value::Null,
    };
    if args.json {
        println!("{json}");
    } else {
        let timestamps = match gpu_stats {
            // With --tearing the frames are timed by the wall clock (each one is read back).
            _ if !gpu || args.tearing => String::new(),
            Some((mean, median, min)) => format!(
                "\n  GPU timestamps: mean {mean:.3} ms/frame (median {median:.3}, min {min:.3}) in the frames' compute passes; wall {:.3} ms/frame before the final read-back of the state; the host {:.3} ms/frame making, recording and submitting them",
                device_done.unwrap_or(0.0) * 1e3,
                host_per_frame.unwrap_or(0.0) * 1e3
            ),
            None => {
                "\n  GPU timestamps: unavailable (the adapter offers no TIMESTAMP_QUERY); wall-clock figure only".into()
            }
        };
        let overlap = tearing.as_ref().is_some_and(|t| t.overlap());
        let tear_text = if args.tearing {
            let per_event = match mean(&events) {
                Some(m) => format!(
                    "a tear event ({}) {:.3} ms mean, {:.3} ms max, of which the solver's rebuild (with the tethers' search beside it) {:.3} ms mean; the frame after a tear {} mean{}",
                    if overlap {
                        "--tear-overlap: the torn model found after the frame before taken — made beside this frame on a GPU, at that check on the CPU — the solver rebuilt on it, and the check after it, which may find the next tear and, on the CPU, make it"
                    } else {
                        "check, tear, solver rebuilt"
                    },
                    m * 1e3,
                    events.iter().copied().fold(f64::NAN, f64::max) * 1e3,
                    mean(&rebuilds).unwrap_or(0.0) * 1e3,
                    mean(&after_tear).map_or("—".to_string(), |t| format!("{:.3} ms", t * 1e3)),
                    match mean(&found) {
                        Some(f) => format!(
                            "; {} found a tear without taking one, {:.3} ms mean",
                            crate::count(found.len(), "other check", "other checks"),
                            f * 1e3
                        ),
                        None => String::new(),
                    }
                ),
                None if warmup_tears > 0 => format!(
                    "nothing tore in the timed frames: {} in the {} warm-up frames, untimed (--warmup 0 times {})",
                    crate::count(warmup_tears, "tear event", "tear events"),
                    args.warmup,
                    if warmup_tears == 1 { "it" } else { "them" }
                ),
                None => "nothing tore in the timed frames".into(),
            };
            let unconverged = match tear_most {
                Some(most) if tear_over > 0 => format!(
                    "; {tear_over} of them by strain after a solve that left more residual strain than the tolerance ({:.2} %; up to {:.2} % away from the pins in the bodies that tore — tears that may be the solve's error, not the material's{})",
                    100.0 * scene.residual_tolerance,
                    100.0 * most,
                    if overlap {
                        "; with --tear-overlap the solve measured is the frame in flight's, not the one that found the tear"
                    } else {
                        ""
                    }
                ),
                Some(most) => {
                    format!(
                        "; every one by strain after a solve within the tolerance (residual up to {:.2} % away from the pins in the bodies that tore)",
                        100.0 * most
                    )
                }
                None => String::new(),
            };
            format!(
                "  tearing: {}{unconverged} ({} broken, {} split; {} particles at the end, from {}); state read back and checked after {checked} of {} timed frames{}; check (strains) {}; {per_event} (the frame times above are the solve and, where checked, the read-back; GPU timestamps are not taken with --tearing)",
                crate::count(events.len(), "tear event", "tear events"),
                crate::count(tear_broken as usize, "constraint", "constraints"),
                crate::count(tear_split as usize, "particle", "particles"),
                model.particle_count(),
                scene.model.particle_count(),
                times.len(),
                if checked < times.len() { " (the others ruled out by the solver's own tear check)" } else { "" },
                mean(&checks).map_or("not timed: no frame checked without a tear".to_string(), |c| format!(
                    "{:.3} ms per frame checked without a tear",
                    c * 1e3
                )),
            )
        } else {
            String::new()
        };
        let drawn_text = match (drawn, draw) {
            (Some(t), Some((w, h))) => format!(
                "\n  drawn after each frame ({w}×{h}, {} sample(s) per pixel, {}, from the solver's buffers): {:.3} ms/frame ({:.0} FPS) against {:.3} ms ({:.0} FPS) for the solver alone: drawing {:.1} % of the frame",
                args.samples,
                if stride == 1 {
                    "every triangle".to_string()
                } else {
                    format!("grids at stride {stride} (every {stride}-th row and column)")
                },
                t * 1e3,
                1.0 / t,
                median * 1e3,
                1.0 / median,
                100.0 * (1.0 - median / t)
            ),
            _ => String::new(),
        };
        let jacobi_text = match jacobi {
            Some((w, rho)) if rho > 0.0 => format!(" [Jacobi ω = {w:.3}, Chebyshev ρ = {rho:.4}]"),
            Some((w, _)) => format!(" [Jacobi ω = {w:.3}, no Chebyshev]"),
            None if gpu_local => " [local sweeps in workgroup memory]".to_string(),
            None if tiles => " [tile-local sweeps]".to_string(),
            None => String::new(),
        };
        println!(
            "{}{} ({}){} on {}: {} particles, {} constraints ({}), {} substeps{} × {} ({:.2} per substep), {} thread(s)\n  {} {:.3} ms/frame{} over {}; {:.3e} particle-substeps/s; {:.2} ns per constraint·iteration; end strain {:.4} ({:.2} % away from the pins, residual {}); deepest overlap of non-neighbours {:.1} % of their contact distance; deepest penetration into a collider {:.2e} m{}{}",
            scene.name,
            match scene.model.worlds().len() {
                1 => String::new(),
                w => format!(", {w} worlds"),
            },
            solver.info().name,
            jacobi_text,
            device,
            scene.model.particle_count(),
            distance + hinges + joints,
            {
                let colours = crate::count(scene.model.distance().colour_count(), "colour", "colours");
                let (h, j) =
                    (crate::count(hinges, "hinge", "hinges"), crate::count(joints, "rope joint", "rope joints"));
                match (hinges, joints) {
                    (0, 0) => colours,
                    (_, 0) => format!("{distance} distance in {colours}, {h}"),
                    (0, _) => format!("{distance} distance in {colours}, {j}"),
                    _ => format!("{distance} distance in {colours}, {h}, {j}"),
                }
            },
            scene.solver.substeps(),
            if sub > scene.solver.substeps() as f64 + 1e-9 {
                format!(" ({sub:.1} per frame on average: raised by the tension limit)")
            } else {
                String::new()
            },
            scene.solver.iterations_text(),
            it,
            threads,
            match (gpu, args.tearing) {
                (true, false) => "mean (frames queued back to back)",
                (true, true) => "median (each frame waited for; read back where the tear check asks)",
                _ => "median",
            },
            median * 1e3,
            if gpu { String::new() } else { format!(" (min {:.3})", times[0] * 1e3) },
            crate::count(args.frames, "frame", "frames"),
            n * sub / median,
            ns_per_ci,
            d.max_stretch_strain,
            100.0 * strain_away,
            if residual.is_nan() { "not measured".to_string() } else { format!("{:.2} %", 100.0 * residual) },
            100.0 * overlap_fraction,
            d.max_penetration,
            timestamps,
            drawn_text
        );
        if !hooke::collision::self_collision::members(&scene.model).0.is_empty() {
            if gpu_search == Some(hooke_gpu::ContactSearch::AllPairs) {
                println!("  particle contacts: all pairs tested, no hash (no neighbour lists)");
            } else if gpu && !gpu_lists {
                println!("  particle contacts: the spatial hash's cells, rebuilt every substep (no neighbour lists)");
            } else {
                println!(
                    "  particle contacts: neighbour lists rebuilt in {list_builds} of the {substep_count} timed substeps (reused in the others, with the same result); {list_overflows} member lists overflowed (those members used the hash's cells)"
                );
            }
        }
        if args.stages {
            match stage_times {
                Some(t) => {
                    let per = |s: f64| s * 1e3 / t.frames as f64;
                    let list: Vec<String> =
                        hooke::Stage::ORDER.iter().map(|&st| format!("{} {:.3}", st.name(), per(t.of(st)))).collect();
                    println!(
                        "  stages ({}, ms per frame over {} frames): {}; rest of the frame {:.3}",
                        if gpu { "GPU timestamps" } else { "wall clock between the stages" },
                        t.frames,
                        list.join(", "),
                        per(t.other)
                    );
                }
                None => println!("  stages: not measured (this solver or device does not time its stages)"),
            }
        }
        if args.tearing {
            println!("{tear_text}");
        }
    }
    Ok(())
}

/// The largest residual stretch strain away from the pins that the solver's last substep left
/// in `bodies` (indices into its current model's bodies), with the pins of `control` (the
/// frame's, as the run's monitor takes them); NaN where the solver has no multipliers.
fn residual_of(
    solver: &mut dyn hooke::Solver,
    control: &hooke::Control,
    state: &hooke::State,
    bodies: &[usize],
) -> f32 {
    let mut residuals = hooke::diagnostics::ConstraintResiduals::default();
    if !solver.constraint_residuals(&mut residuals) {
        return f32::NAN;
    }
    let model = solver.model().clone();
    let (mut pinned, mut all) = (Vec::new(), Vec::new());
    hooke::diagnostics::pinned_particles(&model, control, &mut pinned);
    hooke::diagnostics::BodyConvergence::measure(&model, &state.particle_position, &pinned, Some(&residuals), &mut all);
    bodies.iter().filter_map(|&k| all.get(k)).map(|b| b.residual()).filter(|v| !v.is_nan()).fold(f32::NAN, f32::max)
}
