//! The running simulation of the viewer: a scene, its solver on the CPU or the GPU, and what
//! the renderer draws from (the GPU solver's own buffers, or the CPU state uploaded).

use anyhow::{Context, Result};
use glam::Vec3;
use hooke::collision::Pose;
use hooke::{ClothMaterial, Solver, StageTimes, State};
use hooke_gpu::{GpuContext, GpuXpbdSolver};
use hooke_io::scene::Scene;
use hooke_render::{ClothBuffers, HostCloth};
use std::sync::Arc;
use std::time::Instant;

/// Where the scene is simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The CPU solvers; positions are uploaded for drawing.
    Cpu,
    /// The wgpu compute solver on the viewer's own device; drawn from its buffers.
    Gpu,
}

impl Backend {
    /// "CPU" or "GPU".
    pub fn label(self) -> &'static str {
        match self {
            Backend::Cpu => "CPU",
            Backend::Gpu => "GPU",
        }
    }
}

enum Runner {
    Cpu(Box<dyn Solver>),
    Gpu(Box<GpuXpbdSolver>),
}

/// A scene being simulated, frame by frame at the scene's frame rate.
pub struct Simulation {
    /// The scene (its model changes when a material is edited).
    pub scene: Scene,
    ctx: Arc<GpuContext>,
    runner: Runner,
    backend: Backend,
    host: HostCloth,
    /// Frames simulated since the start or the last reset.
    pub frame: u64,
    snapshot: Option<(State, u64)>,
    /// Wall time of the last frame's step (ms).
    pub step_ms: f64,
    /// The last error of a step (the simulation pauses on one).
    pub error: Option<String>,
    /// The particle being dragged and where it is pulled to (m): pinned there each frame.
    pub drag: Option<(u32, Vec3)>,
    /// Every pin released (the article's "cut / free fall"), until a reset.
    pub released: bool,
    /// Tearing and cutting ([`hooke_sim::Tearing`]): the scene's tear strains and cuts, and
    /// which particle of the scene's model each current particle comes from.
    tearing: hooke_sim::Tearing,
    /// The scene's model before any tear (a reset goes back to it).
    untorn: Arc<hooke::Model>,
    /// Counts topology changes (tears, cuts, resets after them): a renderer of the model
    /// is made again when it changes.
    generation: u64,
    /// Where the user has put each collider ([`Simulation::place_collider`]), overriding the
    /// scene's keyframes from then on, until a reset; indexed like the model's colliders.
    placed: Vec<Option<Pose>>,
    /// Whether the time per stage is being measured ([`Simulation::measure_stages`]).
    measuring: bool,
    /// Whether the solver measures them (see [`Simulation::measure_stages`]).
    able: bool,
    /// The last reading of the time per stage, and when it was taken.
    stage_times: Option<StageTimes>,
    last_reading: Option<Instant>,
}

/// How often the time per stage is read (s of wall time): on the GPU each reading maps a
/// buffer, so not every frame.
pub const STAGE_READING_INTERVAL: f64 = 0.5;

impl Simulation {
    /// The scene's solver on `backend`, on the device of `ctx`.
    ///
    /// # Errors
    /// When the solver cannot be made (a force-based method on the GPU, bad settings).
    pub fn new(scene: Scene, backend: Backend, ctx: Arc<GpuContext>) -> Result<Simulation> {
        let runner = make_runner(&scene, backend, &ctx)?;
        let host = HostCloth::new(&ctx, scene.model.clone());
        Ok(Simulation {
            tearing: hooke_sim::Tearing::for_scene(&scene),
            untorn: scene.model.clone(),
            generation: 0,
            scene,
            ctx,
            runner,
            backend,
            host,
            frame: 0,
            snapshot: None,
            step_ms: 0.0,
            error: None,
            drag: None,
            released: false,
            placed: Vec::new(),
            measuring: false,
            able: false,
            stage_times: None,
            last_reading: None,
        })
    }

    /// Starts or stops measuring the time spent in each stage of the substeps
    /// ([`hooke::Solver::measure_stages`]), read every [`STAGE_READING_INTERVAL`] seconds
    /// into [`Simulation::stage_times`]; kept across resets and solver changes. Returns
    /// whether the solver measures them (not the explicit integrators, whose stages are
    /// fused; not a GPU device without timestamps inside passes).
    pub fn measure_stages(&mut self, on: bool) -> bool {
        self.measuring = on;
        self.stage_times = None;
        self.last_reading = None;
        self.able = self.solver().measure_stages(on);
        self.able
    }

    /// Whether the time per stage is being measured: asked for and measurable by the solver.
    pub fn measuring_stages(&self) -> bool {
        self.measuring && self.able
    }

    /// The last reading of the time per stage: the seconds of the frames since the reading
    /// before (on the GPU, of one frame), or `None` while not measuring or before the first.
    pub fn stage_times(&self) -> Option<&StageTimes> {
        self.stage_times.as_ref()
    }

    /// How many buffers the solver's device has mapped for reading so far (state reads,
    /// health checks, picks).
    pub fn read_backs(&self) -> u64 {
        self.ctx.read_backs()
    }

    /// Where it runs.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The solver.
    pub fn solver(&mut self) -> &mut dyn Solver {
        match &mut self.runner {
            Runner::Cpu(s) => s.as_mut(),
            Runner::Gpu(s) => s.as_mut(),
        }
    }

    /// The solver's name.
    pub fn solver_name(&mut self) -> String {
        self.solver().info().name.to_string()
    }

    /// Simulates one frame (1/fps s); on an error the error is kept and returned.
    ///
    /// # Errors
    /// The solver's error (a blow-up, an invalid control).
    pub fn step(&mut self) -> Result<()> {
        let started = std::time::Instant::now();
        let dt = 1.0 / self.scene.fps;
        let t = self.solver().time();
        let mut control = self.tearing.control(self.scene.control_at(t));
        if self.released {
            control.release_all();
        }
        if let Some((particle, target)) = self.drag {
            control.pin_to(particle, target);
        }
        for (k, pose) in self.placed.iter().enumerate() {
            if let Some(pose) = pose {
                control.move_collider(k, *pose);
            }
        }
        let result = self.solver().step(&control, dt);
        self.step_ms = started.elapsed().as_secs_f64() * 1e3;
        match result {
            Ok(_) => {
                self.frame += 1;
                // The state is read back (on the GPU) only where a cut is due or the device's
                // tear check did not rule a tear out.
                let due = match &self.runner {
                    Runner::Cpu(s) => self.tearing.due(s.as_ref()),
                    Runner::Gpu(s) => self.tearing.due(s.as_ref()),
                };
                if due {
                    let mut st = self.state();
                    let solver: &mut dyn Solver = match &mut self.runner {
                        Runner::Cpu(s) => s.as_mut(),
                        Runner::Gpu(s) => s.as_mut(),
                    };
                    let tore = self.tearing.after_frame(solver, &mut st);
                    match tore {
                        Ok(Some(_)) => self.torn(),
                        Ok(None) => {}
                        Err(e) => {
                            self.error = Some(e.to_string());
                            return Err(e.into());
                        }
                    }
                }
                let due = self.last_reading.is_none_or(|t| t.elapsed().as_secs_f64() >= STAGE_READING_INTERVAL);
                if self.measuring && due {
                    self.last_reading = Some(Instant::now());
                    if let Some(t) = self.solver().take_stage_times() {
                        self.stage_times = Some(t);
                    }
                }
                Ok(())
            }
            Err(e) => {
                self.error = Some(e.to_string());
                Err(e.into())
            }
        }
    }

    /// Whether the simulation is still healthy: on the GPU, whose health record is read only
    /// every 10 s of simulated time while drawing, the state and the record are read now (a
    /// scripted run checks before it ends). The CPU checks every frame.
    ///
    /// # Errors
    /// The blow-up found, also kept as the simulation's error.
    pub fn check(&mut self) -> Result<()> {
        if let Runner::Gpu(s) = &mut self.runner {
            let mut st = State::from_model(&self.scene.model);
            if let Err(e) = s.try_read_state(&mut st) {
                self.error = Some(e.to_string());
                return Err(e.into());
            }
        }
        Ok(())
    }

    /// The current state (positions, velocities, time), read from the solver (on the GPU, a
    /// read-back).
    pub fn state(&mut self) -> State {
        let mut st = State::from_model(&self.scene.model);
        self.solver().read_state(&mut st);
        st
    }

    /// The nearest cloth triangle hit by the ray `origin + t·direction` at the current
    /// positions, with the particle at its nearest corner: on the GPU by its ray-cast kernel
    /// (8 bytes read back), on the CPU on the host — the same operations.
    pub fn pick(&mut self, origin: Vec3, direction: Vec3) -> Option<hooke::picking::Hit> {
        match &mut self.runner {
            Runner::Gpu(s) => s.pick(origin, direction),
            Runner::Cpu(s) => {
                let mut st = State::from_model(&self.scene.model);
                s.read_state(&mut st);
                hooke::picking::pick(&self.scene.model, &st.particle_position, origin, direction)
            }
        }
    }

    /// The nearest collider (not a plane) the ray `origin + t·direction` (unit direction)
    /// meets where the colliders are now ([`Simulation::collider_poses`]): its index and the
    /// distance t (m) — [`hooke::picking::pick_collider`], on the host, with no read-back.
    pub fn pick_collider(&mut self, origin: Vec3, direction: Vec3) -> Option<(usize, f32)> {
        let poses = self.collider_poses();
        hooke::picking::pick_collider(&self.scene.model, &poses, origin, direction)
    }

    /// Each collider's pose now: where the user put it ([`Simulation::place_collider`]), else
    /// where the scene's keyframes have it at the solver's time.
    pub fn collider_poses(&mut self) -> Vec<Pose> {
        let t = self.solver().time();
        let mut poses = self.scene.collider_poses_at(t);
        poses.resize(self.scene.model.colliders().len(), Pose::IDENTITY);
        for (pose, placed) in poses.iter_mut().zip(&self.placed) {
            if let Some(p) = placed {
                *pose = *p;
            }
        }
        poses
    }

    /// Moves collider `collider` to `pose` (relative to its rest placement) by the end of the
    /// next frame, and keeps it there until another placement or a reset. The solver sweeps
    /// it there over the frame's substeps, so the cloth is pushed, not passed through.
    pub fn place_collider(&mut self, collider: usize, pose: Pose) {
        if collider >= self.scene.model.colliders().len() || !pose.is_valid() {
            return;
        }
        if self.placed.len() <= collider {
            self.placed.resize(collider + 1, None);
        }
        self.placed[collider] = Some(pose);
    }

    /// Cuts the cloth with `blade` now ([`hooke::tearing::cut`]); returns what it did, if it
    /// cut anything. The model changes ([`Simulation::generation`]).
    ///
    /// # Errors
    /// When the torn model cannot be made or taken by the solver (nothing changes then).
    pub fn cut(&mut self, blade: &hooke::tearing::Cut) -> Result<Option<hooke_sim::TearCounts>> {
        let mut st = self.state();
        let mut tearing = self.tearing.clone();
        let counts = tearing.cut(self.solver(), &mut st, blade)?;
        if counts.is_some() {
            self.tearing = tearing;
            self.torn();
        }
        Ok(counts)
    }

    /// Counts the changes of the model's topology (tears, cuts, and the resets after them).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Takes the solver's torn model as the scene's; the snapshot (of other particles) is
    /// dropped, and so is a drag (its particle may have been split).
    fn torn(&mut self) {
        let model = self.solver().model().clone();
        self.host = HostCloth::new(&self.ctx, model.clone());
        self.scene.model = model;
        self.snapshot = None;
        self.drag = None;
        self.generation += 1;
    }

    /// Back to the scene's initial state, time 0.
    ///
    /// # Errors
    /// When the solver cannot be made again.
    pub fn reset(&mut self) -> Result<()> {
        if !Arc::ptr_eq(&self.scene.model, &self.untorn) && self.tearing.torn() {
            self.scene.model = self.untorn.clone();
            self.host = HostCloth::new(&self.ctx, self.untorn.clone());
            self.snapshot = None;
            self.generation += 1;
        }
        self.tearing = hooke_sim::Tearing::for_scene(&self.scene);
        self.runner = make_runner(&self.scene, self.backend, &self.ctx)?;
        let measuring = self.measuring;
        self.measure_stages(measuring);
        self.placed.clear();
        self.frame = 0;
        self.error = None;
        self.released = false;
        self.drag = None;
        Ok(())
    }

    /// Keeps the current state (and frame number) for [`Simulation::restore`].
    pub fn snapshot(&mut self) {
        let st = self.state();
        self.snapshot = Some((st, self.frame));
    }

    /// Whether a snapshot is kept.
    pub fn has_snapshot(&self) -> bool {
        self.snapshot.is_some()
    }

    /// Goes back to the kept snapshot, if any.
    ///
    /// # Errors
    /// When the solver refuses the state.
    pub fn restore(&mut self) -> Result<()> {
        if let Some((st, frame)) = self.snapshot.clone() {
            self.solver().write_state(&st)?;
            self.frame = frame;
            self.error = None;
        }
        Ok(())
    }

    /// Moves the simulation to `backend`, keeping its state.
    ///
    /// # Errors
    /// When the scene does not run there (force-based methods on the GPU).
    pub fn set_backend(&mut self, backend: Backend) -> Result<()> {
        if backend == self.backend {
            return Ok(());
        }
        self.restart(self.scene.clone(), backend)
    }

    /// Sets substeps and iterations per substep (XPBD/PBD; substeps only for force-based
    /// methods), keeping the state.
    ///
    /// # Errors
    /// When the solver refuses the settings (nothing changes then).
    pub fn set_budget(&mut self, substeps: u32, iterations: u32) -> Result<()> {
        let mut scene = self.scene.clone();
        scene.solver.set_substeps(substeps);
        scene.solver.set_iterations(iterations);
        self.restart(scene, self.backend)
    }

    /// Replaces the scene by one with the same particles (a model rebuilt with other
    /// constraints), keeping the state.
    ///
    /// # Errors
    /// When the particle count differs or the solver cannot be made.
    pub fn replace_scene(&mut self, scene: Scene) -> Result<()> {
        anyhow::ensure!(
            scene.model.particle_count() == self.scene.model.particle_count(),
            "the new scene has {} particles, the running one {}",
            scene.model.particle_count(),
            self.scene.model.particle_count()
        );
        self.restart(scene, self.backend)
    }

    /// Switches between XPBD and PBD, keeping the state.
    ///
    /// # Errors
    /// For a force-based scene, or when the solver refuses the settings (nothing changes then).
    pub fn set_method(&mut self, method: hooke::Method) -> Result<()> {
        let mut scene = self.scene.clone();
        if matches!(method, hooke::Method::Pbd { .. }) {
            // PBD has no multipliers to measure a residual by: "auto" becomes its minimum.
            let n = scene.solver.iterations();
            scene.solver.set_iterations(n);
        }
        match &mut scene.solver {
            hooke_io::scene::SolverChoice::Position(s) => s.method = method,
            hooke_io::scene::SolverChoice::Force(_) => anyhow::bail!("the scene runs a force-based integrator"),
        }
        self.restart(scene, self.backend)
    }

    /// Makes `scene`'s solver on `backend` and moves the current state into it; the
    /// simulation takes the new scene, backend and solver only if that succeeds.
    fn restart(&mut self, scene: Scene, backend: Backend) -> Result<()> {
        let st = self.state();
        let mut runner = make_runner(&scene, backend, &self.ctx)?;
        match &mut runner {
            Runner::Cpu(s) => s.write_state(&st)?,
            Runner::Gpu(s) => s.write_state(&st)?,
        }
        if !Arc::ptr_eq(&scene.model, &self.scene.model) {
            self.host = HostCloth::new(&self.ctx, scene.model.clone());
        }
        self.runner = runner;
        if !self.tearing.torn() {
            self.untorn = scene.model.clone();
        }
        self.scene = scene;
        self.backend = backend;
        let measuring = self.measuring;
        self.measure_stages(measuring);
        Ok(())
    }

    /// The method of a position-based scene.
    pub fn method(&self) -> Option<hooke::Method> {
        match self.scene.solver {
            hooke_io::scene::SolverChoice::Position(s) => Some(s.method),
            hooke_io::scene::SolverChoice::Force(_) => None,
        }
    }

    /// Gives every cloth `edit(material)`, live: the model changes, the state stays.
    ///
    /// # Errors
    /// When a value is out of range.
    pub fn edit_cloth_materials(&mut self, edit: impl Fn(&mut ClothMaterial)) -> Result<()> {
        let mut model = (*self.scene.model).clone();
        for (k, body) in self.scene.model.bodies().iter().enumerate() {
            if let hooke::BodyMaterial::Cloth(mut m) = body.material {
                edit(&mut m);
                model = model.with_cloth_material(k, m)?;
            }
        }
        let model = Arc::new(model);
        self.solver().notify_model_changed(model.clone())?;
        self.scene.model = model;
        Ok(())
    }

    /// Where the renderer finds the particles: the GPU solver's buffers, or the CPU state
    /// uploaded now.
    ///
    /// # Errors
    /// When the upload fails.
    pub fn cloth_buffers(&mut self) -> Result<ClothBuffers<'_>> {
        if let Runner::Cpu(s) = &mut self.runner {
            let mut st = State::from_model(&self.scene.model);
            s.read_state(&mut st);
            self.host.upload(&self.ctx, &st.particle_position)?;
        }
        Ok(match &self.runner {
            Runner::Gpu(s) => ClothBuffers {
                positions: s.position_buffer(),
                normals: s.normal_buffer(),
                triangles: s.triangle_buffer(),
            },
            Runner::Cpu(_) => self.host.buffers(),
        })
    }
}

fn make_runner(scene: &Scene, backend: Backend, ctx: &Arc<GpuContext>) -> Result<Runner> {
    Ok(match backend {
        Backend::Cpu => Runner::Cpu(hooke_sim::make_cpu_solver(scene)?),
        Backend::Gpu => {
            let mut scene = scene.clone();
            // No read-back per frame here (below), so no iterating to a tolerance
            // (`hooke_gpu::iterates_to_tolerance`): "auto" becomes its minimum.
            let n = scene.solver.iterations();
            scene.solver.set_iterations(n);
            let mut options = hooke_sim::SolverOptions::new(hooke_sim::Backend::Gpu);
            options.context = Some(ctx.clone());
            // The health record is read every 10 s of simulated time, not every frame: no
            // read-back while drawing (a blow-up shows within 10 s). A cloth that tears is
            // read after every frame: its 24 bytes carry the device's tear check, which spares
            // the read-back of the whole state where nothing can tear.
            options.health_interval = if hooke::tearing::lowest_breaking_strain(&scene.model).is_finite() {
                1
            } else {
                (10.0 * scene.fps).round().max(1.0) as u32
            };
            Runner::Gpu(Box::new(hooke_sim::make_gpu_solver(&scene, &options).context("the GPU backend")?))
        }
    })
}
