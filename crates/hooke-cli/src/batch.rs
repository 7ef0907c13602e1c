//! `hooke batch MANIFEST`: bake every sample of a manifest (or one shard of it) into a
//! dataset folder with a JSON Lines index; see [`hooke_sim::batch`] for the manifest.

use anyhow::{Context, Result, bail};
use hooke_sim::batch::{BatchSettings, Manifest, Shard, Status, run_shard, write_index};
use std::path::PathBuf;

/// Arguments of `hooke batch`.
#[derive(clap::Args)]
pub struct BatchArgs {
    /// The manifest: TOML with `[[sample]]` and `[[sweep]]` entries, or JSON Lines (`.jsonl`).
    manifest: PathBuf,
    /// Output folder (default: the manifest's `out`, relative to the manifest, else
    /// `out/<manifest stem>` relative to the current folder, as `hooke run`'s).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run only shard i of n (the samples whose number is i modulo n). Default: the task of a
    /// Slurm job array (`SLURM_ARRAY_TASK_ID` − `SLURM_ARRAY_TASK_MIN` of
    /// `SLURM_ARRAY_TASK_COUNT`), else every sample.
    // (Parsed here, so that a value such as `-1/2` is answered by what a shard is, and an
    // option after `--shard` is refused as its value rather than taken.)
    #[arg(long, allow_hyphen_values = true, value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Skip the samples already complete in the output folder (a killed or failed shard
    /// started again). Without it, complete samples of the shard are an error.
    #[arg(long)]
    resume: bool,
    /// Only write `index.jsonl` from the samples complete in the output folder (after the
    /// shards of a job array have finished). Simulates nothing, so not with --dry-run or
    /// --resume.
    #[arg(long, conflicts_with_all = ["dry_run", "resume"])]
    index_only: bool,
    /// List the shard's samples and their keys, and load each one's scene with its keys set
    /// (so that a bad key or value is reported), but simulate nothing.
    #[arg(long)]
    dry_run: bool,
    /// Worker threads (default: all cores).
    #[arg(long, allow_negative_numbers = true)]
    threads: Option<usize>,
    /// Samples baked at the same time, each on one thread (default 1: one sample at a time on
    /// every thread). Small scenes keep about one core busy each: give the number of cores.
    /// Not with --worlds > 1 (on the GPU, --jobs > 1 turns the default packing off).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    jobs: usize,
    /// Pack up to this many samples into one model of worlds, solved together by the same
    /// sweeps (1: each alone). Each sample's results are bit for bit its own run's. Consecutive
    /// samples that share their `[solver]` and `[air]` are packed together, up to 2²⁰
    /// particles a pack; a sample that tears or iterates "auto" runs alone. Default: 256 on the
    /// GPU (what fills the device with small scenes) unless --jobs > 1 or a Jacobi solve
    /// estimates its parameters, 1 on the CPU (where --jobs is faster).
    #[arg(long, allow_negative_numbers = true)]
    worlds: Option<usize>,
    /// Where to simulate: cpu, or gpu (XPBD/PBD scenes; packed into worlds by default).
    #[arg(long, value_enum, default_value = "cpu")]
    backend: crate::Backend,
    #[command(flatten)]
    gpu_solve: crate::GpuSolveArgs,
}

/// Whether `path` holds a batch manifest rather than a scene: a `.jsonl` file, or TOML with
/// `[[sample]]` or `[[sweep]]` entries (keys no scene has). A file that is not TOML is left to
/// the scene loader, which reports where it fails.
///
/// Only a regular file is looked into (a pipe read here would be empty for the scene loader),
/// and one longer than a scene may be (64 MiB) is taken for a manifest (which may be 256 MiB).
pub fn is_manifest(path: &std::path::Path) -> bool {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("jsonl")) {
        return true;
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() > hooke_io::scene::MAX_SCENE_FILE => return true,
        Ok(m) if m.is_file() => {}
        _ => return false,
    }
    let Ok(text) = hooke_io::scene::read_text(path) else { return false };
    let entries = |t: &toml::Table, key: &str| t.get(key).is_some_and(toml::Value::is_array);
    toml::from_str::<toml::Table>(&text).is_ok_and(|t| entries(&t, "sample") || entries(&t, "sweep"))
}

/// `hooke validate MANIFEST`: reads the manifest and loads every sample's scene with its keys
/// set, as `hooke batch --dry-run` does, and says how many samples it makes.
///
/// # Errors
/// The manifest's error (naming the file and the entry), or the first sample whose scene
/// does not load (naming the sample, the key and what is wrong).
pub fn validate(path: &std::path::Path) -> Result<()> {
    let manifest = Manifest::read(path)?;
    // The scenes' warnings, each once, with the first sample that gave it and how many others.
    let mut warnings: Vec<(String, usize, usize)> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for s in &manifest.samples {
        let scene = s.load(crate::memory_limit())?;
        hooke_sim::batch::check_sample_format(s, &scene, manifest.format)?;
        for w in scene.warnings {
            match at.get(&w) {
                Some(&k) => warnings[k].2 += 1,
                None => {
                    at.insert(w.clone(), warnings.len());
                    warnings.push((w, s.index, 0));
                }
            }
        }
    }
    for (w, first, more) in &warnings {
        let others = match more {
            0 => String::new(),
            n => format!(" and {}", crate::count(*n, "other", "others")),
        };
        eprintln!("warning: sample {first}{others}: {w}");
    }
    println!(
        "{}: ok — batch manifest of {}, every scene loaded with its keys set; {} caches into {} (`hooke batch {}` bakes them)",
        path.display(),
        crate::count(manifest.samples.len(), "sample", "samples"),
        manifest.format,
        manifest.out.display(),
        path.display()
    );
    Ok(())
}

pub fn batch(args: BatchArgs) -> Result<()> {
    crate::set_threads(args.threads)?;
    let manifest = Manifest::read(&args.manifest)?;
    let out = args.out.clone().unwrap_or_else(|| manifest.out.clone());
    if args.index_only {
        let (path, records) = write_index(&out, Some(&manifest))?;
        println!(
            "wrote {}: {} of {} samples complete ({} failed)",
            path.display(),
            records.len(),
            manifest.samples.len(),
            records.iter().filter(|r| r.status == Status::Failed).count()
        );
        return Ok(());
    }
    let shard = match args.shard {
        Some(s) => s,
        None => match Shard::from_slurm(|k| std::env::var(k).ok()).map_err(|e| anyhow::anyhow!("{e}"))? {
            Some(s) => {
                println!("shard {s}, from the Slurm job array's task");
                s
            }
            None => Shard::ALL,
        },
    };
    anyhow::ensure!((1..=1024).contains(&args.jobs), "--jobs must be between 1 and 1024, got {}", args.jobs);
    let (solve, tiles) = (args.gpu_solve.solve(args.backend)?, args.gpu_solve.tiles(args.backend)?);
    let (local, contact_search) = (args.gpu_solve.local(args.backend)?, args.gpu_solve.contact_search(args.backend)?);
    // Jacobi's ω or ρ left to be estimated would be the whole pack's: no packing then.
    let estimated = matches!(
        solve,
        hooke_gpu::GpuSolve::Jacobi { relaxation, spectral_radius } if relaxation.is_none() || spectral_radius.is_none()
    );
    let gpu = args.backend == crate::Backend::Gpu;
    let worlds = match args.worlds {
        Some(w) => w,
        None if gpu && args.jobs == 1 && !estimated => 256,
        None => 1,
    };
    anyhow::ensure!((1..=65_536).contains(&worlds), "--worlds must be between 1 and 65536, got {worlds}");
    anyhow::ensure!(worlds == 1 || args.jobs == 1, "--worlds and --jobs do not go together: a pack uses every thread");
    anyhow::ensure!(
        worlds == 1 || !(gpu && estimated),
        "--worlds {worlds} packs samples into one model, over which --gpu-solve jacobi would estimate its relaxation and \
         spectral radius: give both (--relaxation, --spectral-radius), or run each sample alone (--worlds 1)"
    );
    let mine = manifest.shard(shard).count();
    if args.dry_run {
        let samples: Vec<_> = manifest.shard(shard).collect();
        let mut particles = Vec::with_capacity(samples.len());
        for s in &samples {
            println!("{} {} {}", s.id(), s.scene, serde_json::to_string(&s.set).unwrap_or_default());
            let scene = s.load(crate::memory_limit())?;
            // What the run refuses for this sample before any runs.
            hooke_sim::batch::check_sample_format(s, &scene, manifest.format)?;
            particles.push(scene.model.particle_count());
        }
        let mut packed = String::new();
        if worlds > 1 {
            // The packs the run would make, made (and dropped) here.
            let packs = hooke_sim::batch::pack_groups(&samples, &particles, worlds)?;
            for pack in packs.iter().filter(|p| p.len() > 1) {
                let inputs: Vec<_> = pack.iter().map(|s| (s.path.as_path(), &s.set)).collect();
                hooke_sim::worlds::pack(&inputs, crate::memory_limit())
                    .map_err(|(k, e)| anyhow::anyhow!("sample {}: {e}", pack[k].index))?;
            }
            let alone = packs.iter().filter(|p| p.len() == 1).count();
            packed = format!(
                ", in {} of up to {worlds} worlds ({alone} alone)",
                crate::count(packs.len() - alone, "pack", "packs")
            );
        }
        println!(
            "{} of {} in shard {shard}, every scene loaded{packed}",
            crate::count(mine, "sample", "samples"),
            manifest.samples.len()
        );
        return Ok(());
    }
    println!(
        "{}: {}, {mine} in shard {shard}, into {} ({} on {})",
        args.manifest.display(),
        crate::count(manifest.samples.len(), "sample", "samples"),
        out.display(),
        manifest.format,
        match args.backend {
            crate::Backend::Cpu => "cpu",
            crate::Backend::Gpu => "gpu",
        }
    );
    let mut options = crate::solver_options(args.backend, solve);
    options.tiles = tiles;
    options.local = local;
    options.contact_search = contact_search;
    if args.backend == crate::Backend::Gpu {
        // One device for every sample: its kernels are compiled once.
        options.context = Some(hooke_gpu::GpuContext::new().map_err(|e| anyhow::anyhow!("--backend gpu: {e}"))?);
    }
    let settings = BatchSettings {
        out: out.clone(),
        shard,
        resume: args.resume,
        options,
        memory_limit: crate::memory_limit(),
        jobs: args.jobs,
        worlds,
    };
    let mut n = 0;
    let summary = run_shard(&manifest, &settings, crate::run::interrupted(), |r| {
        n += 1;
        let residual = r.max_residual_strain.map(|v| format!("{:.2} %", 100.0 * v)).unwrap_or("none".into());
        let what = match (&r.status, &r.reason) {
            (Status::Ok, _) => "ok".to_string(),
            (Status::Failed, Some(reason)) => format!("FAILED: {reason}"),
            (Status::Failed, None) => "FAILED".to_string(),
        };
        println!(
            "sample {} ({n}): {} frames in {:.2} s, residual strain {residual}, penetration {:.2e} m: {what}",
            r.sample,
            r.frames.saturating_sub(1),
            r.seconds,
            r.max_penetration_m
        );
    })
    .with_context(|| format!("shard {shard} of {}", args.manifest.display()))?;
    let (index, records) = write_index(&out, Some(&manifest))?;
    println!(
        "shard {shard}: {} — {} run and passed, {} failed, {} complete already; {} lists {} of {} samples",
        crate::count(summary.samples, "sample", "samples"),
        summary.ok,
        summary.failed.len(),
        summary.skipped,
        index.display(),
        records.len(),
        manifest.samples.len()
    );
    for r in &summary.failed {
        eprintln!("warning: sample {} failed: {}", r.sample, r.reason.as_deref().unwrap_or("(no reason)"));
    }
    if records.len() < manifest.samples.len() && shard.count > 1 {
        let out_flag = match &args.out {
            Some(o) => format!(" --out {}", o.display()),
            None => String::new(),
        };
        println!(
            "when every shard is done, `hooke batch {}{out_flag} --index-only` lists them all",
            args.manifest.display()
        );
    }
    if summary.samples == 0 {
        // A job array larger than the manifest: this task has nothing to do, which is not an
        // error.
        println!("shard {shard} has no samples: the manifest has {} (fewer than the shards)", manifest.samples.len());
    }
    if summary.ok == 0 && !summary.failed.is_empty() {
        bail!("every sample this run made failed ({}): see the warnings above", summary.failed.len());
    }
    Ok(())
}
