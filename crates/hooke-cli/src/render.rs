//! `hooke render [SCENE]`: simulate a scene and draw it off-screen (`hooke-render`) — the last
//! frame as a PNG and, with `--every K`, every K-th frame as an animated PNG — on the CPU or
//! the GPU backend; on the GPU the cloth is drawn from the solver's own buffers. Given a baked
//! `.usda` cache instead of a scene, it draws the cache's frames (its cloths and ropes; the
//! colliders are not in a cache).

use anyhow::{Context, Result, bail};
use hooke::{Solver, State};
use hooke_gpu::GpuContext;
use hooke_io::cache::UsdaCache;
use hooke_io::scene::SolverChoice;
use hooke_render::{AnimationWriter, Camera, HostCloth, RenderSettings, Renderer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Arguments of `hooke render`.
#[derive(clap::Args)]
pub struct RenderArgs {
    /// Scene file (TOML), or a `.usda` cache that `hooke run` baked. Omitted: the built-in
    /// default scene.
    scene: Option<PathBuf>,
    /// Number of frames to simulate (overrides the scene; 0 draws the initial state); of a
    /// cache, the frames to draw after its first (at most the cache's).
    #[arg(long, allow_negative_numbers = true)]
    frames: Option<usize>,
    /// Output folder (default: `out/<scene name>`): writes `<name>.png` (the last frame) and,
    /// with --every, `<name>.anim.png`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write an animated PNG of every K-th frame (frame 0 and the last frame included).
    #[arg(long, allow_negative_numbers = true)]
    every: Option<usize>,
    /// Image width in pixels.
    #[arg(long, default_value_t = 960, allow_negative_numbers = true)]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 540, allow_negative_numbers = true)]
    height: u32,
    /// Samples per pixel (1 or 4).
    #[arg(long, default_value_t = 4, allow_negative_numbers = true)]
    samples: u32,
    /// Camera azimuth about the vertical (degrees; 0 looks along −z).
    #[arg(long, default_value_t = 35.0, allow_negative_numbers = true)]
    azimuth: f32,
    /// Camera elevation above the horizon (degrees, strictly between −90 and 90; below 0 the
    /// camera looks from under the ground).
    #[arg(long, default_value_t = 25.0, allow_negative_numbers = true)]
    elevation: f32,
    /// Turn the camera this many degrees about the scene over the run.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    orbit: f32,
    /// Where to simulate: cpu, or gpu (XPBD/PBD scenes; drawn from the solver's buffers).
    /// (Default: cpu. Not for a cache, which is drawn as it was baked.)
    #[arg(long, value_enum)]
    backend: Option<crate::Backend>,
    /// Worker threads (default: all cores).
    #[arg(long, allow_negative_numbers = true)]
    threads: Option<usize>,
}

pub fn render(args: RenderArgs) -> Result<()> {
    let threads = crate::set_threads(args.threads)?;
    let cache = args.scene.as_deref().filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("usda")));
    let (mut scene, cache) = match (&args.scene, cache) {
        (_, Some(path)) => {
            let cache = hooke_io::cache::read_usda(path)?;
            (cache_scene(path, &cache)?, Some(cache))
        }
        (Some(path), None) => (hooke_io::scene::load(path, crate::memory_limit())?, None),
        (None, None) => (crate::presets::default_scene()?, None),
    };
    if let Some(f) = args.frames {
        scene.frames = f;
    }
    anyhow::ensure!(
        cache.is_none() || args.backend.is_none(),
        "--backend applies to a scene: a cache is drawn from its baked positions"
    );
    let backend = args.backend.unwrap_or(crate::Backend::Cpu);
    if let Some(c) = &cache {
        let available = c.frame_count() - 1;
        anyhow::ensure!(
            scene.frames <= available,
            "--frames {}: the cache {} has {available} frame{} after its first",
            scene.frames,
            c.path.display(),
            if available == 1 { "" } else { "s" }
        );
    }
    if args.every == Some(0) {
        bail!("--every must be ≥ 1");
    }
    for (name, v) in [("--azimuth", args.azimuth), ("--elevation", args.elevation), ("--orbit", args.orbit)] {
        anyhow::ensure!(
            v.is_finite() && v.abs() <= 1e6,
            "{name} must be a finite angle in degrees (at most 10⁶), got {v}"
        );
    }
    anyhow::ensure!(
        args.elevation.abs() < 90.0,
        "--elevation must be strictly between −90 and 90 degrees, got {} (as f32, the precision of the camera's angles)",
        args.elevation
    );
    for (name, v) in [("--width", args.width), ("--height", args.height)] {
        anyhow::ensure!((1..=8192).contains(&v), "{name} must be 1 to 8192 pixels, got {v}");
    }
    anyhow::ensure!(args.samples == 1 || args.samples == 4, "--samples must be 1 or 4, got {}", args.samples);
    // Frames of the animation: every K-th from 0, and the last.
    let pictures = args.every.map(|k| scene.frames / k + 1 + usize::from(scene.frames % k != 0));
    if let Some(n) = pictures {
        anyhow::ensure!(
            n <= 100_000,
            "--frames {} with --every {} makes {n} pictures; an animation holds at most 100000",
            scene.frames,
            args.every.unwrap_or(1)
        );
    }
    let dir = args.out.clone().unwrap_or_else(|| Path::new("out").join(&scene.name));
    anyhow::ensure!(!dir.exists() || dir.is_dir(), "output directory {} exists and is not a directory", dir.display());
    scene.solver.set_parallel(threads > 1);
    let settings =
        RenderSettings { width: args.width, height: args.height, samples: args.samples, ..Default::default() };
    let ctx = GpuContext::new().context("the renderer needs a GPU adapter (lavapipe will do)")?;
    let model = scene.model.clone();
    let mut renderer = Renderer::new(ctx.clone(), model.clone(), settings)?;
    // A scene that tears is read back every frame, torn between frames, and drawn torn.
    let mut tearing = hooke_sim::Tearing::for_scene(&scene);
    let mut cloth = match (&cache, backend) {
        (Some(c), _) => Cloth::Cache(c, HostCloth::new(&ctx, model.clone())),
        (None, crate::Backend::Cpu) => {
            Cloth::Host(hooke_sim::make_cpu_solver(&scene)?, HostCloth::new(&ctx, model.clone()))
        }
        (None, crate::Backend::Gpu) => {
            let mut options = crate::solver_options(backend, hooke_gpu::GpuSolve::GaussSeidel);
            options.context = Some(ctx.clone());
            Cloth::Device(Box::new(hooke_sim::make_gpu_solver(&scene, &options)?))
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let still = dir.join(format!("{}.png", scene.name));
    let anim_path = dir.join(format!("{}.anim.png", scene.name));
    // Checked before drawing: a picture that cannot be put in place must not leave the other
    // one written by a run that failed.
    for (path, wanted) in [(&still, true), (&anim_path, args.every.is_some())] {
        anyhow::ensure!(
            !(wanted && path.is_dir()),
            "cannot write {}: a folder is in the way (nothing written)",
            path.display()
        );
    }
    let mut animation = match (args.every, pictures) {
        (Some(k), Some(n)) => {
            Some(AnimationWriter::new(&anim_path, args.width, args.height, n as u32, frame_delay(k, scene.fps))?)
        }
        _ => None,
    };
    // Ctrl-C / SIGTERM: stop after the current frame; the unfinished animation is dropped
    // with its temporary file, and nothing is written.
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    }
    let aspect = args.width as f32 / args.height as f32;
    let camera = Camera::framing(&model, args.azimuth.to_radians(), args.elevation.to_radians(), aspect);
    let dt = 1.0 / scene.fps;
    let mut state = State::from_model(&model);
    let total = scene.frames.max(1) as f32;
    // A cache's topology drawn (per prim, how many of its later topologies hold).
    let mut topology = cache.as_ref().map(|c| cache_topology(c, 0));
    for frame in 0..=scene.frames {
        if interrupted.load(Ordering::SeqCst) {
            bail!("interrupted at frame {frame}: nothing written");
        }
        if let (true, Some(solver)) = (frame > 0, cloth.solver()) {
            let control = tearing.control(scene.control_at(solver.time()));
            solver.step(&control, dt).with_context(|| format!("frame {frame}"))?;
            if tearing.due(solver) {
                solver.read_state(&mut state);
                let tore = tearing.after_frame(solver, &mut state).with_context(|| format!("frame {frame}"))?;
                if tore.is_some() {
                    let model = solver.model().clone();
                    renderer = Renderer::new(ctx.clone(), model.clone(), settings)?;
                    if let Cloth::Host(_, buffers) = &mut cloth {
                        *buffers = HostCloth::new(&ctx, model);
                    }
                }
            }
        }
        let last = frame == scene.frames;
        let sampled = args.every.is_some_and(|k| frame % k == 0 || last);
        if !(last || sampled) {
            continue;
        }
        let time = cloth.solver().map_or(frame as f64 / scene.fps as f64, |s| s.time());
        let poses = scene.collider_poses_at(time);
        let camera = camera.orbited(args.orbit.to_radians() * frame as f32 / total);
        match &mut cloth {
            Cloth::Cache(c, buffers) => {
                // Where the cloth tore or was cut, the model of the frame's topology.
                let now = cache_topology(c, frame);
                if topology.as_ref() != Some(&now) {
                    let model = cache_model(&c.path, c, frame)?;
                    renderer = Renderer::new(ctx.clone(), model.clone(), settings)?;
                    *buffers = HostCloth::new(&ctx, model);
                    topology = Some(now);
                }
                buffers
                    .upload(&ctx, &c.positions(frame))
                    .with_context(|| format!("{}: frame {frame} (time {})", c.path.display(), c.times[frame]))?;
                renderer.draw(buffers.buffers(), &poses, &camera);
            }
            Cloth::Host(solver, buffers) => {
                solver.read_state(&mut state);
                buffers.upload(&ctx, &state.particle_position)?;
                renderer.draw(buffers.buffers(), &poses, &camera);
            }
            Cloth::Device(solver) => {
                let buffers = hooke_render::ClothBuffers {
                    positions: solver.position_buffer(),
                    normals: solver.normal_buffer(),
                    triangles: solver.triangle_buffer(),
                };
                renderer.draw(buffers, &poses, &camera);
            }
        }
        let rgba = renderer.read_rgba()?;
        if let (Some(a), true) = (animation.as_mut(), sampled) {
            a.add(&rgba)?;
        }
        if last {
            hooke_render::write_png(&still, args.width, args.height, &rgba)?;
        }
    }
    println!("wrote {}", still.display());
    if let Some(a) = animation {
        a.finish()?;
        println!("wrote {}", anim_path.display());
    }
    Ok(())
}

/// Whether the renderer can be made on `ctx` for `model` (made and dropped), so that a run
/// with `--preview` fails before it simulates, not after.
pub fn check_renderer(ctx: &Arc<GpuContext>, model: &Arc<hooke::Model>) -> Result<()> {
    Renderer::new(ctx.clone(), model.clone(), RenderSettings::default())?;
    Ok(())
}

/// Draws `positions` (m, one per particle of `model`: the scene's, or what tearing made of
/// it) of `scene` at time `t` (s) from the default camera into the PNG `path` (960 × 540):
/// `hooke run --preview`.
pub fn preview(
    ctx: &Arc<GpuContext>,
    scene: &hooke_io::scene::Scene,
    model: &Arc<hooke::Model>,
    positions: &[hooke::glam::Vec3],
    t: f64,
    path: &Path,
) -> Result<()> {
    let settings = RenderSettings::default();
    let renderer = Renderer::new(ctx.clone(), model.clone(), settings)?;
    let cloth = HostCloth::new(ctx, model.clone());
    cloth.upload(ctx, positions)?;
    let camera = Camera::framing(model, 35f32.to_radians(), 25f32.to_radians(), 960.0 / 540.0);
    renderer.draw(cloth.buffers(), &scene.collider_poses_at(t), &camera);
    hooke_render::write_png(path, settings.width, settings.height, &renderer.read_rgba()?)?;
    Ok(())
}

/// Where the particles come from and where the renderer finds them.
enum Cloth<'c> {
    /// A CPU solver, its positions uploaded for each picture.
    Host(Box<dyn Solver>, HostCloth),
    /// The GPU solver, drawn from its own buffers.
    Device(Box<hooke_gpu::GpuXpbdSolver>),
    /// A baked cache, each frame's positions uploaded.
    Cache(&'c UsdaCache, HostCloth),
}

impl Cloth<'_> {
    fn solver(&mut self) -> Option<&mut dyn Solver> {
        match self {
            Cloth::Host(s, _) => Some(s.as_mut()),
            Cloth::Device(s) => Some(s.as_mut()),
            Cloth::Cache(..) => None,
        }
    }
}

/// A model of `cache`'s prims at frame `frame`, with their topology then — each mesh a cloth,
/// each curve a rope, in file order, so the particles are the cache's points in order — and
/// no colliders.
fn cache_model(path: &Path, cache: &UsdaCache, frame: usize) -> Result<Arc<hooke::Model>> {
    let mut b = hooke::ModelBuilder::new();
    b.set_memory_limit(crate::memory_limit());
    let time = cache.times[frame];
    for prim in &cache.prims {
        let points = prim.frames[frame].clone();
        let added = match prim.triangles_at(time) {
            Some(t) => b.add_cloth_mesh(&hooke::ClothMesh::new(prim.name.clone(), points, t.to_vec())),
            None => {
                let n = points.len();
                b.add_rope(&hooke::Rope::polyline(prim.name.clone(), points, n))
            }
        };
        added.with_context(|| format!("{}: prim {:?} at time {time}", path.display(), prim.name))?;
    }
    Ok(Arc::new(b.finalize().with_context(|| format!("{}", path.display()))?))
}

/// Which topology each prim of `cache` has at frame `frame`: how many of its later ones hold.
fn cache_topology(cache: &UsdaCache, frame: usize) -> Vec<usize> {
    let time = cache.times[frame];
    cache.prims.iter().map(|p| p.later_triangles.partition_point(|(t, _)| *t <= time)).collect()
}

/// A scene to draw `cache` with: the model of its first frame ([`cache_model`]), the cache's
/// frame rate and all its frames; named after the file.
fn cache_scene(path: &Path, cache: &UsdaCache) -> Result<hooke_io::scene::Scene> {
    let model = cache_model(path, cache, 0)?;
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("cache").to_string();
    let mut scene = crate::presets::preset(name, model, SolverChoice::Position(hooke::XpbdSettings::default()), []);
    scene.fps = cache.fps;
    scene.frames = cache.frame_count() - 1;
    Ok(scene)
}

/// The display time of one animation frame, `k` simulated frames at `fps`, as the fraction
/// (numerator, denominator) of a second an APNG stores (16 bits each): exact where it fits
/// (k/fps in lowest terms for whole frame rates), else to the millisecond.
fn frame_delay(k: usize, fps: f32) -> (u16, u16) {
    if fps.fract() == 0.0 && fps <= 65535.0 {
        let (mut a, mut b) = (k as u64, fps as u64);
        let (mut x, mut y) = (a, b);
        while y != 0 {
            (x, y) = (y, x % y);
        }
        (a, b) = (a / x, b / x);
        if a <= 65535 && b <= 65535 {
            return (a as u16, b as u16);
        }
    }
    ((k as f64 / fps as f64 * 1000.0).round().clamp(1.0, 65535.0) as u16, 1000)
}
