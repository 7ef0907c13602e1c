//! `hooke render [SCENE]`: simulate a scene and draw it off-screen (`hooke-render`) — the last
//! frame as a PNG and, with `--every K`, every K-th frame as an animated PNG — on the CPU or
//! the GPU backend; on the GPU the cloth is drawn from the solver's own buffers.

use anyhow::{Context, Result, bail};
use hooke::{Solver, State};
use hooke_gpu::GpuContext;
use hooke_render::{AnimationWriter, Camera, HostCloth, RenderSettings, Renderer};
use std::path::{Path, PathBuf};

/// Arguments of `hooke render`.
#[derive(clap::Args)]
pub struct RenderArgs {
    /// Scene file (TOML). Omitted: the built-in default scene.
    scene: Option<PathBuf>,
    /// Number of frames to simulate (overrides the scene; 0 draws the initial state).
    #[arg(long)]
    frames: Option<usize>,
    /// Output folder (default: `out/<scene name>`): writes `<name>.png` (the last frame) and,
    /// with --every, `<name>.anim.png`.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write an animated PNG of every K-th frame (frame 0 included).
    #[arg(long)]
    every: Option<usize>,
    /// Image width in pixels.
    #[arg(long, default_value_t = 960)]
    width: u32,
    /// Image height in pixels.
    #[arg(long, default_value_t = 540)]
    height: u32,
    /// Samples per pixel (1 or 4).
    #[arg(long, default_value_t = 4)]
    samples: u32,
    /// Camera azimuth about the vertical (degrees; 0 looks along −z).
    #[arg(long, default_value_t = 35.0)]
    azimuth: f32,
    /// Camera elevation above the horizon (degrees).
    #[arg(long, default_value_t = 25.0)]
    elevation: f32,
    /// Turn the camera this many degrees about the scene over the run.
    #[arg(long, default_value_t = 0.0)]
    orbit: f32,
    /// Where to simulate: cpu, or gpu (XPBD/PBD scenes; drawn from the solver's buffers).
    #[arg(long, value_enum, default_value = "cpu")]
    backend: crate::Backend,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

pub fn render(args: RenderArgs) -> Result<()> {
    let threads = crate::set_threads(args.threads)?;
    let mut scene = match &args.scene {
        Some(path) => hooke_io::scene::load(path, crate::memory_limit())?,
        None => crate::presets::default_scene()?,
    };
    if let Some(f) = args.frames {
        scene.frames = f;
    }
    if args.every == Some(0) {
        bail!("--every must be ≥ 1");
    }
    for (name, v) in [("--azimuth", args.azimuth), ("--elevation", args.elevation), ("--orbit", args.orbit)] {
        anyhow::ensure!(v.is_finite(), "{name} must be a finite angle in degrees, got {v}");
    }
    anyhow::ensure!(
        args.elevation.abs() < 90.0,
        "--elevation must be between −90 and 90 degrees, got {}",
        args.elevation
    );
    let dir = args.out.clone().unwrap_or_else(|| Path::new("out").join(&scene.name));
    anyhow::ensure!(!dir.exists() || dir.is_dir(), "output directory {} exists and is not a directory", dir.display());
    scene.solver.set_parallel(threads > 1);
    let settings =
        RenderSettings { width: args.width, height: args.height, samples: args.samples, ..Default::default() };
    let ctx = GpuContext::new().context("the renderer needs a GPU adapter (lavapipe will do)")?;
    let model = scene.model.clone();
    let renderer = Renderer::new(ctx.clone(), model.clone(), settings)?;
    let mut cloth = match args.backend {
        crate::Backend::Cpu => Cloth::Host(hooke_sim::make_cpu_solver(&scene)?, HostCloth::new(&ctx, model.clone())),
        crate::Backend::Gpu => {
            let mut options = crate::solver_options(args.backend, hooke_gpu::GpuSolve::GaussSeidel);
            options.context = Some(ctx.clone());
            Cloth::Device(Box::new(hooke_sim::make_gpu_solver(&scene, &options)?))
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let still = dir.join(format!("{}.png", scene.name));
    let anim_path = dir.join(format!("{}.anim.png", scene.name));
    let mut animation = match args.every {
        Some(k) => {
            let frames = (scene.frames / k + 1) as u32;
            let delay = ((k as f32 / scene.fps * 1000.0).round().clamp(1.0, 65535.0) as u16, 1000);
            Some(AnimationWriter::new(&anim_path, args.width, args.height, frames, delay)?)
        }
        None => None,
    };
    let camera = Camera::framing(&model, args.azimuth.to_radians(), args.elevation.to_radians());
    let dt = 1.0 / scene.fps;
    let mut state = State::from_model(&model);
    let total = scene.frames.max(1) as f32;
    for frame in 0..=scene.frames {
        if frame > 0 {
            let control = scene.control_at(cloth.solver().time());
            cloth.solver().step(&control, dt).with_context(|| format!("frame {frame}"))?;
        }
        let last = frame == scene.frames;
        let sampled = args.every.is_some_and(|k| frame % k == 0);
        if !(last || sampled) {
            continue;
        }
        let poses = scene.collider_poses_at(cloth.solver().time());
        let camera = camera.orbited(args.orbit.to_radians() * frame as f32 / total);
        match &mut cloth {
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

/// Draws `positions` (m, one per particle) of `scene` at time `t` (s) from the default camera
/// into the PNG `path` (960 × 540): `hooke run --preview`.
pub fn preview(scene: &hooke_io::scene::Scene, positions: &[hooke::glam::Vec3], t: f64, path: &Path) -> Result<()> {
    let ctx = GpuContext::new().context("--preview needs a GPU adapter (lavapipe will do)")?;
    let settings = RenderSettings::default();
    let renderer = Renderer::new(ctx.clone(), scene.model.clone(), settings)?;
    let cloth = HostCloth::new(&ctx, scene.model.clone());
    cloth.upload(&ctx, positions)?;
    let camera = Camera::framing(&scene.model, 35f32.to_radians(), 25f32.to_radians());
    renderer.draw(cloth.buffers(), &scene.collider_poses_at(t), &camera);
    hooke_render::write_png(path, settings.width, settings.height, &renderer.read_rgba()?)?;
    Ok(())
}

/// The solver and where the renderer finds its particles.
enum Cloth {
    /// A CPU solver, its positions uploaded for each picture.
    Host(Box<dyn Solver>, HostCloth),
    /// The GPU solver, drawn from its own buffers.
    Device(Box<hooke_gpu::GpuXpbdSolver>),
}

impl Cloth {
    fn solver(&mut self) -> &mut dyn Solver {
        match self {
            Cloth::Host(s, _) => s.as_mut(),
            Cloth::Device(s) => s.as_mut(),
        }
    }
}
