//! [`GpuXpbdSolver`]: hooke's XPBD/PBD solver as WGSL compute kernels.

use crate::aerodynamics::Aerodynamics;
use crate::buffers::{
    self, Buffers, ColourSlot, GpuCollider, GpuConstraint, GpuPin, HealthRecord, Params, Placement, UNIFORM_SLOT,
};
use crate::collide::Collide;
use crate::context::{GpuContext, GpuError};
use crate::distance::Distance;
use crate::finish::Finish;
use crate::health::Health;
use crate::jacobi::Jacobi;
use crate::kernel::SharedLayouts;
use crate::normals::{self, Normals};
use crate::predict::Predict;
use crate::tangents::{self, Tangents};
use crate::timing::FrameTimer;
use glam::{Mat3, Vec3};
use hooke::collision::Shape;
use hooke::{
    ConstraintFamily, Control, Method, Model, Solver, SolverError, SolverInfo, State, StepReport, XpbdSettings,
};
use std::sync::Arc;

/// Settings of [`GpuXpbdSolver`]: the CPU solver's [`XpbdSettings`] plus what only the GPU has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuSettings {
    /// Substeps, iterations, method, air damping and blow-up limits, as on the CPU.
    /// `parallel` is ignored (the GPU is always parallel).
    pub xpbd: XpbdSettings,
    /// Read the 16-byte health record back after every frame (a synchronisation point), and
    /// on a blow-up restore the state of the start of the frame and return
    /// [`SolverError::BlowUp`] from [`Solver::step`] — the CPU solver's contract. When off,
    /// frames are only queued (no waiting: what an interactive viewer wants) and a blow-up is
    /// reported by the next read ([`GpuXpbdSolver::try_read_state`]) or, after any read, by
    /// the next step; the state is then not restored. On by default.
    pub check_every_frame: bool,
    /// Recompute vertex normals at the end of every frame (article §6), and the tangents of a
    /// model with UVs ([`GpuXpbdSolver::tangent_buffer`]). On by default.
    pub normals: bool,
    /// How each substep's distance constraints are solved. Colour Gauss–Seidel by default.
    pub solve: GpuSolve,
}

impl Default for GpuSettings {
    fn default() -> Self {
        GpuSettings {
            xpbd: XpbdSettings::default(),
            check_every_frame: true,
            normals: true,
            solve: GpuSolve::GaussSeidel,
        }
    }
}

/// The iteration that solves the distance constraints of a substep on the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum GpuSolve {
    /// Gauss–Seidel over colours: one dispatch per colour per iteration (12 for a cloth grid),
    /// each colour seeing the corrections of the previous ones — the CPU solver's order, and
    /// its result to f32 rounding.
    #[default]
    GaussSeidel,
    /// Jacobi: one dispatch over particles per iteration, every constraint's Δλ computed from
    /// the previous iterate and applied scaled by the relaxation ω (λ += ωΔλ, x += ω w∇C Δλ).
    /// It converges more slowly per iteration than Gauss–Seidel (a softer look at equal
    /// iterations) and ω = 1 may oscillate where many constraints share a particle; ω < 1
    /// damps that. See the `jacobi` module of the source for the derivation.
    Jacobi {
        /// Relaxation ω, dimensionless, in (0, 2].
        relaxation: f32,
    },
}

impl From<XpbdSettings> for GpuSettings {
    fn from(xpbd: XpbdSettings) -> Self {
        GpuSettings { xpbd, ..GpuSettings::default() }
    }
}

/// XPBD/PBD on the GPU. See the [crate documentation](crate).
///
/// The state lives on the device: [`GpuXpbdSolver::position_buffer`] (x, y, z, w per particle)
/// and [`GpuXpbdSolver::normal_buffer`] can be bound by a renderer directly, and nothing is
/// copied to the host unless a `read_*` method is called (or `check_every_frame` reads the
/// 16-byte health record).
pub struct GpuXpbdSolver {
    ctx: Arc<GpuContext>,
    model: Arc<Model>,
    settings: GpuSettings,
    b: Buffers,
    params_group: wgpu::BindGroup,
    colour_group: wgpu::BindGroup,
    predict: Predict,
    aerodynamics: Aerodynamics,
    distance: Distance,
    /// The Jacobi solve, when [`GpuSettings::solve`] asks for it.
    jacobi: Option<Jacobi>,
    collide: Collide,
    finish: Finish,
    normals: Normals,
    /// The tangent kernels, for a model with UVs and triangles.
    tangents: Option<Tangents>,
    health: Health,
    /// (start, count) of each colour.
    colours: Vec<(u32, u32)>,
    aero: bool,
    /// Number of structural constraints (checked for runaway strain).
    structural: u32,
    normal_scale: (f32, f32),
    tangent_scale: (f32, f32),
    time: f64,
    /// Particles pinned in the last frame (to name the free end of an overstrained constraint).
    pinned: Vec<u32>,
    /// A blow-up found by a read while `check_every_frame` is off, returned by the next step.
    pending: Option<SolverError>,
    params_bytes: Vec<u8>,
    /// GPU timestamps of frames, while [`GpuXpbdSolver::time_frames`] is collecting them.
    timer: Option<FrameTimer>,
}

/// Bytes of one `vec4<f32>` record.
const VEC4: u64 = 16;

impl GpuXpbdSolver {
    /// A solver on `ctx` starting from the model's initial state.
    ///
    /// # Errors
    /// [`GpuError::Solver`] for invalid settings, [`GpuError::TooLarge`] if a buffer exceeds
    /// the device's limits, [`GpuError::Validation`] if wgpu rejects a pipeline.
    pub fn new(ctx: Arc<GpuContext>, model: Arc<Model>, settings: impl Into<GpuSettings>) -> Result<Self, GpuError> {
        let settings: GpuSettings = settings.into();
        validate(&settings)?;
        let device = ctx.device();
        let n = model.particle_count();
        let limits = device.limits();
        let largest = [
            ("the particle positions", n as u64 * VEC4 * 2),
            ("the constraints", model.constraints().len() as u64 * size_of::<GpuConstraint>() as u64),
            ("the normal accumulator", n as u64 * 12),
            (
                "the Jacobi adjacency",
                match settings.solve {
                    GpuSolve::Jacobi { .. } => (n as u64 + 1 + 2 * model.constraints().len() as u64) * 4,
                    GpuSolve::GaussSeidel => 0,
                },
            ),
        ];
        for (what, needed) in largest {
            // (u32 indices address at most 2³² words.)
            let limit = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size).min(4 * u32::MAX as u64);
            if needed > limit {
                return Err(GpuError::TooLarge { what, needed, limit });
            }
        }
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);

        let inv_mass = model.particle_inv_mass();
        let position: Vec<[f32; 4]> =
            model.particle_position().iter().zip(inv_mass).map(|(x, &w)| x.extend(w).to_array()).collect();
        let velocity: Vec<[f32; 4]> = model.particle_velocity().iter().map(|v| v.extend(0.0).to_array()).collect();
        let constraints: Vec<GpuConstraint> = model
            .constraints()
            .iter()
            .map(|c| GpuConstraint {
                i: c.i,
                j: c.j,
                rest_length: c.rest_length,
                compliance_stretch: c.compliance_stretch,
                compliance_compression: c.compliance_compression,
                damping: c.damping,
            })
            .collect();
        let colliders: Vec<GpuCollider> = model.colliders().iter().map(gpu_collider).collect();
        let structural: Vec<u32> = (0..model.constraints().len() as u32)
            .filter(|&k| model.constraint_family()[k as usize] == ConstraintFamily::Structural)
            .collect();
        let triangles: Vec<u32> = model.triangles().iter().flatten().copied().collect();
        let mut offsets = Vec::with_capacity(n + 1);
        let mut around = Vec::new();
        offsets.push(0u32);
        for p in 0..n {
            around.extend_from_slice(model.particle_triangles(p));
            offsets.push(around.len() as u32);
        }
        // UVs of a model with triangles to take tangents of; empty otherwise.
        let uv = model.particle_uv().filter(|_| !model.triangles().is_empty()).unwrap_or(&[]);
        let substeps = settings.xpbd.substeps as u64;
        let colour_count = model.colour_count() as u64;
        let v4 = |count: usize| count as u64 * VEC4;
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hooke staging"),
            size: (2 * v4(n) + size_of::<HealthRecord>() as u64).max(16),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let uniform = |label: &str, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(UNIFORM_SLOT),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let snapshot = settings.check_every_frame.then(|| {
            (buffers::zeroed(device, "hooke snapshot x", v4(n)), buffers::zeroed(device, "hooke snapshot v", v4(n)))
        });
        let b = Buffers {
            position: buffers::storage_with(device, "hooke position", &position, wgpu::BufferUsages::VERTEX),
            displacement: buffers::zeroed(device, "hooke displacement", v4(n)),
            velocity: buffers::storage(device, "hooke velocity", &velocity),
            inv_mass: buffers::storage(device, "hooke inv_mass", inv_mass),
            radius: buffers::storage(device, "hooke radius", model.particle_radius()),
            force: buffers::zeroed(device, "hooke force", v4(n)),
            constraints: buffers::storage(device, "hooke constraints", &constraints),
            structural: buffers::storage(device, "hooke structural", &structural),
            lambda: buffers::zeroed(device, "hooke lambda", 4 * constraints.len() as u64),
            pins: buffers::zeroed(device, "hooke pins", n as u64 * size_of::<GpuPin>() as u64),
            colliders: buffers::storage(device, "hooke colliders", &colliders),
            placements: buffers::zeroed(
                device,
                "hooke placements",
                substeps * colliders.len().max(1) as u64 * size_of::<Placement>() as u64,
            ),
            triangles: buffers::storage(device, "hooke triangles", &triangles),
            triangle_force: buffers::zeroed(device, "hooke triangle force", v4(model.triangles().len())),
            particle_triangle_offsets: buffers::storage(device, "hooke particle triangle offsets", &offsets),
            particle_triangles: buffers::storage(device, "hooke particle triangles", &around),
            normal_accumulator: buffers::zeroed(device, "hooke normal accumulator", 12 * n as u64),
            normal: buffers::storage_with(device, "hooke normal", &vec![[0.0f32; 4]; n], wgpu::BufferUsages::VERTEX),
            uv: buffers::storage(device, "hooke uv", &tangents::device_uvs(uv)),
            tangent_accumulator: buffers::zeroed(device, "hooke tangent accumulator", 12 * uv.len() as u64),
            tangent: buffers::storage_with(
                device,
                "hooke tangent",
                &vec![[0.0f32; 4]; uv.len()],
                wgpu::BufferUsages::VERTEX,
            ),
            health: buffers::zeroed(device, "hooke health", size_of::<HealthRecord>() as u64),
            params: uniform("hooke params", substeps * UNIFORM_SLOT),
            colours: uniform("hooke colours", 2 * colour_count * UNIFORM_SLOT),
            snapshot,
            staging,
        };
        let shared = SharedLayouts::new(device);
        let params_group = SharedLayouts::uniform_group(device, &shared.params, &b.params, size_of::<Params>() as u64);
        let colour_group =
            SharedLayouts::uniform_group(device, &shared.colour, &b.colours, size_of::<ColourSlot>() as u64);
        let colours: Vec<(u32, u32)> = model.colour_ranges().iter().map(|r| (r.start, r.end - r.start)).collect();
        let mut slots = vec![0u8; (2 * colour_count * UNIFORM_SLOT) as usize];
        for (c, &(start, count)) in colours.iter().enumerate() {
            for first in 0..2u32 {
                let slot = ColourSlot { start, count, first: 1 - first, _pad: 0 };
                let at = (2 * c as u64 + first as u64) * UNIFORM_SLOT;
                slots[at as usize..at as usize + size_of::<ColourSlot>()].copy_from_slice(bytemuck::bytes_of(&slot));
            }
        }
        ctx.queue().write_buffer(&b.colours, 0, &slots);
        let air = model.air();
        let aero = air.density > 0.0
            && (air.drag_coefficient > 0.0 || air.lift_coefficient > 0.0)
            && !model.triangles().is_empty();
        let mut solver = GpuXpbdSolver {
            predict: Predict::new(device, &shared, &b),
            aerodynamics: Aerodynamics::new(device, &shared, &b),
            distance: Distance::new(device, &shared, &b),
            jacobi: match settings.solve {
                GpuSolve::GaussSeidel => None,
                GpuSolve::Jacobi { relaxation } => Some(Jacobi::new(device, &shared, &b, &model, relaxation)),
            },
            collide: Collide::new(device, &shared, &b),
            finish: Finish::new(device, &shared, &b),
            normals: Normals::new(device, &shared, &b),
            tangents: (!uv.is_empty()).then(|| Tangents::new(device, &shared, &b)),
            health: Health::new(device, &shared, &b),
            normal_scale: normals::fixed_point_scale(&model),
            tangent_scale: tangents::fixed_point_scale(&model),
            params_group,
            colour_group,
            colours,
            aero,
            structural: structural.len() as u32,
            time: 0.0,
            pinned: Vec::new(),
            pending: None,
            params_bytes: vec![0u8; (substeps * UNIFORM_SLOT) as usize],
            timer: None,
            b,
            settings,
            model,
            ctx: Arc::clone(&ctx),
        };
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Validation(e.to_string()));
        }
        // Normals of the initial state, so that the normal buffer is valid before the first step.
        solver.write_params(1.0 / 60.0, &Control::new(), 0);
        solver.submit_normals();
        Ok(solver)
    }

    /// The context the solver runs on.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// The settings.
    pub fn settings(&self) -> &GpuSettings {
        &self.settings
    }

    /// Particle positions on the device: one `vec4<f32>` (x, y, z, w) per particle, w the
    /// inverse mass (0 while pinned), with `VERTEX` and `STORAGE` usage — bind it as a vertex
    /// buffer (`Float32x4`, stride 16) indexed like the model's particles, or as a read-only
    /// storage buffer, for zero-copy rendering (article §5.4). Valid between steps; a step
    /// recorded after a draw is ordered after it by the queue.
    pub fn position_buffer(&self) -> &wgpu::Buffer {
        &self.b.position
    }

    /// Particle velocities on the device, one `vec4<f32>` per particle (w = 0).
    pub fn velocity_buffer(&self) -> &wgpu::Buffer {
        &self.b.velocity
    }

    /// Unit vertex normals on the device, one `vec4<f32>` per particle (w = 0; the zero vector
    /// for particles without triangles, such as rope particles), updated at the end of every
    /// frame when [`GpuSettings::normals`] is on; `VERTEX` and `STORAGE` usage like
    /// [`GpuXpbdSolver::position_buffer`].
    pub fn normal_buffer(&self) -> &wgpu::Buffer {
        &self.b.normal
    }

    /// Starts timing the next `frames` frames on the GPU: each frame's compute pass writes a
    /// timestamp when it begins and when it ends, and [`GpuXpbdSolver::read_frame_times`]
    /// returns their differences. Frames are still only queued, so timing adds no
    /// synchronisation. Returns `false` (and times nothing) if the device was not created with
    /// wgpu's `TIMESTAMP_QUERY` feature — see [`GpuContext::with_timestamps`]; restarts the
    /// count if already timing. A frame's pass holds all of its work except a 4-byte clear
    /// (and, with [`GpuSettings::check_every_frame`], the snapshot copies and the health
    /// read-back).
    pub fn time_frames(&mut self, frames: u32) -> bool {
        if !self.ctx.has_timestamps() {
            return false;
        }
        self.timer = Some(FrameTimer::new(self.ctx.device(), frames));
        true
    }

    /// Waits for the frames timed since [`GpuXpbdSolver::time_frames`] (at most the number
    /// asked for) and returns the GPU time of each in milliseconds, in order, from timestamps
    /// × `Queue::get_timestamp_period`; stops timing. `None` if no timing was started.
    pub fn read_frame_times(&mut self) -> Option<Vec<f64>> {
        let timer = self.timer.take()?;
        Some(timer.read(self.ctx.device(), self.ctx.queue()))
    }

    /// Unit vertex tangents on the device — the direction of increasing texture coordinate u,
    /// orthogonal to the normal (see [`hooke::surface::vertex_tangents`]) — one `vec4<f32>`
    /// per particle (w = 0; the zero vector for particles without UVs, such as rope
    /// particles), updated with the normals ([`GpuSettings::normals`]); `VERTEX` and
    /// `STORAGE` usage like [`GpuXpbdSolver::normal_buffer`]. `None` if the model has no UVs
    /// ([`hooke::Model::particle_uv`]) or no triangles.
    pub fn tangent_buffer(&self) -> Option<&wgpu::Buffer> {
        self.tangents.as_ref().map(|_| &self.b.tangent)
    }

    /// Copies the vertex tangents to `out` (a read-back); `out` is left empty if the model
    /// has none (see [`GpuXpbdSolver::tangent_buffer`]).
    pub fn read_tangents(&mut self, out: &mut Vec<Vec3>) {
        out.clear();
        if self.tangents.is_some() {
            let n = self.model.particle_count();
            let bytes = self.read_back(&[(&self.b.tangent, n as u64 * VEC4)]);
            out.extend(vec3s(&bytes));
        }
    }

    /// Copies the vertex normals to `out` (a read-back, for tests and caches).
    pub fn read_normals(&mut self, out: &mut Vec<Vec3>) {
        let n = self.model.particle_count();
        let bytes = self.read_back(&[(&self.b.normal, n as u64 * VEC4)]);
        out.clear();
        out.extend(vec3s(&bytes));
    }

    /// Copies positions, velocities and time into `out`, or reports a blow-up the device has
    /// recorded (a non-finite value or a particle faster than `max_speed`) instead of handing
    /// out garbage. `out` is filled in either case.
    ///
    /// # Errors
    /// [`SolverError::BlowUp`].
    pub fn try_read_state(&mut self, out: &mut State) -> Result<(), SolverError> {
        let n = self.model.particle_count();
        let bytes = self.read_back(&[
            (&self.b.position, n as u64 * VEC4),
            (&self.b.velocity, n as u64 * VEC4),
            (&self.b.health, size_of::<HealthRecord>() as u64),
        ]);
        let (x, rest) = bytes.split_at(n * VEC4 as usize);
        let (v, h) = rest.split_at(n * VEC4 as usize);
        out.particle_position.clear();
        out.particle_position.extend(vec3s(x));
        out.particle_velocity.clear();
        out.particle_velocity.extend(vec3s(v));
        out.time = self.time;
        let health: HealthRecord = bytemuck::pod_read_unaligned(h);
        match self.blow_up(health, out) {
            Some(e) => {
                self.pending = Some(e.clone());
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Positions only, with the same check as [`GpuXpbdSolver::try_read_state`].
    ///
    /// # Errors
    /// [`SolverError::BlowUp`].
    pub fn try_read_positions(&mut self, out: &mut Vec<Vec3>) -> Result<(), SolverError> {
        let mut s = State { particle_position: std::mem::take(out), particle_velocity: Vec::new(), time: 0.0 };
        let r = self.try_read_state(&mut s);
        *out = s.particle_position;
        r
    }

    /// Turns a health record into the error it means, if any; `state` (read back after the
    /// frame) supplies the speed or strain for the message.
    fn blow_up(&self, h: HealthRecord, state: &State) -> Option<SolverError> {
        let n = self.model.particle_count() as u32;
        let (particle, constraint, what) = if h.nonfinite != 0 {
            let k = n - h.nonfinite;
            (k, None, format!("particle {k}{} became non-finite", self.body_name(k)))
        } else if h.too_fast != 0 {
            let k = n - h.too_fast;
            let speed = state.particle_velocity.get(k as usize).map_or(f32::NAN, |v| v.length());
            let limit = self.settings.xpbd.max_speed;
            (k, None, format!("particle {k}{} reached {speed:.4e} m/s (limit {limit} m/s)", self.body_name(k)))
        } else if h.overstrained != 0 {
            let k = self.model.constraints().len() - h.overstrained as usize;
            let c = self.model.constraints()[k];
            let x = &state.particle_position;
            let strain = match (x.get(c.i as usize), x.get(c.j as usize)) {
                (Some(a), Some(b)) => ((*a - *b).length() - c.rest_length) / c.rest_length,
                _ => f32::NAN,
            };
            let what = format!(
                "structural constraint {k} (particles {}–{}) reached strain {strain:.2} (limit {})",
                c.i, c.j, self.settings.xpbd.max_strain
            );
            // Name the end that moves, as the CPU does: a pinned particle did not start it.
            let particle = if self.pinned.contains(&c.i) { c.j } else { c.i };
            (particle, Some(k), what)
        } else {
            return None;
        };
        Some(SolverError::BlowUp { time: self.time, particle, constraint, detail: what })
    }

    fn body_name(&self, k: u32) -> String {
        self.model.body_of_particle(k).map(|b| format!(" of {:?}", b.name)).unwrap_or_default()
    }

    /// Copies `(buffer, bytes)` pairs one after another into the staging buffer and reads them.
    fn read_back(&self, parts: &[(&wgpu::Buffer, u64)]) -> Vec<u8> {
        let (device, queue) = (self.ctx.device(), self.ctx.queue());
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke read") });
        let mut at = 0;
        for &(buf, size) in parts {
            if size > 0 {
                enc.copy_buffer_to_buffer(buf, 0, &self.b.staging, at, size);
            }
            at += size;
        }
        queue.submit([enc.finish()]);
        if at == 0 {
            return Vec::new();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        self.b.staging.map_async(wgpu::MapMode::Read, 0..at, move |r| {
            let _ = tx.send(r);
        });
        device.poll(wgpu::PollType::wait_indefinitely()).expect("wgpu poll failed");
        rx.recv().expect("map callback dropped").expect("mapping the staging buffer failed");
        let bytes = self.b.staging.get_mapped_range(0..at).expect("staging buffer not mapped").to_vec();
        self.b.staging.unmap();
        bytes
    }

    /// Fills every substep's [`Params`] slot and the collider placements for a frame of
    /// `frame_dt` seconds starting at `self.time`.
    fn write_params(&mut self, frame_dt: f32, control: &Control, pins: u32) {
        let s = self.settings.xpbd;
        let model = &*self.model;
        let h = frame_dt / s.substeps as f32;
        let air = model.air();
        let max_speed2 = s.max_speed * s.max_speed;
        let (method, pbd_stiffness) = match s.method {
            Method::Xpbd => (0, 1.0),
            Method::Pbd { stiffness } => (1, stiffness),
        };
        let mut placements = Vec::with_capacity(s.substeps as usize * model.colliders().len());
        for sub in 0..s.substeps {
            let p = Params {
                gravity: model.gravity().to_array(),
                h,
                wind: control.wind_at(self.time + sub as f64 * h as f64).to_array(),
                inv_h: 1.0 / h,
                inv_h2: 1.0 / (h * h),
                decay: (-s.air_damping * h).exp(),
                frac: (sub + 1) as f32 / s.substeps as f32,
                pbd_stiffness,
                particle_count: model.particle_count() as u32,
                pin_count: pins,
                collider_count: model.colliders().len() as u32,
                substep: sub,
                triangle_count: model.triangles().len() as u32,
                method,
                last_substep: (sub + 1 == s.substeps) as u32,
                max_speed2: if max_speed2.is_finite() { max_speed2 } else { f32::MAX },
                air_density: air.density,
                drag_coefficient: air.drag_coefficient,
                lift_coefficient: air.lift_coefficient,
                aero: self.aero as u32,
                normal_scale: self.normal_scale.0,
                normal_clamp: self.normal_scale.1,
                one_minus_frac: 1.0 - (sub + 1) as f32 / s.substeps as f32,
                zero: 0,
                max_strain: s.max_strain,
                structural_count: self.structural,
                tangent_scale: self.tangent_scale.0,
                tangent_clamp: self.tangent_scale.1,
            };
            let at = sub as usize * UNIFORM_SLOT as usize;
            self.params_bytes[at..at + size_of::<Params>()].copy_from_slice(bytemuck::bytes_of(&p));
            let t0 = self.time + (sub as f64) * h as f64;
            let t1 = t0 + h as f64;
            for c in model.colliders() {
                let a = c.motion.translation_at(t0);
                let b = c.motion.translation_at(t1);
                placements.push(Placement {
                    offset_end: b.extend(0.0).to_array(),
                    displacement: (b - a).extend(0.0).to_array(),
                });
            }
        }
        let queue = self.ctx.queue();
        queue.write_buffer(&self.b.params, 0, &self.params_bytes);
        if !placements.is_empty() {
            queue.write_buffer(&self.b.placements, 0, bytemuck::cast_slice(&placements));
        }
    }

    fn submit_normals(&mut self) {
        if self.model.triangles().is_empty() {
            return;
        }
        let device = self.ctx.device();
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke normals") });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            let n = self.model.particle_count() as u32;
            let triangles = self.model.triangles().len() as u32;
            self.normals.record(&mut pass, (&self.params_group, 0), n, triangles);
            if let Some(t) = &self.tangents {
                t.record(&mut pass, (&self.params_group, 0), n, triangles);
            }
        }
        self.ctx.queue().submit([enc.finish()]);
    }

    /// Validates the pins and uploads them (the last pin of a particle wins, as on the CPU).
    fn upload_pins(&mut self, control: &Control) -> Result<u32, SolverError> {
        let n = self.model.particle_count() as u32;
        let mut pins: Vec<GpuPin> = Vec::with_capacity(control.pins.len());
        for pin in &control.pins {
            if pin.particle >= n {
                return Err(SolverError::InvalidPin {
                    particle: pin.particle,
                    message: format!("there are only {n} particles"),
                });
            }
            let (has_target, target) = match pin.target {
                Some(t) if t.is_finite() => (1, t.extend(0.0).to_array()),
                Some(t) => {
                    return Err(SolverError::InvalidPin {
                        particle: pin.particle,
                        message: format!("target {t} is not finite"),
                    });
                }
                None => (0, [0.0; 4]),
            };
            let g = GpuPin { particle: pin.particle, has_target, _pad: [0; 2], target, start: [0.0; 4] };
            match pins.iter_mut().find(|p| p.particle == pin.particle) {
                Some(p) => *p = g,
                None => pins.push(g),
            }
        }
        if !pins.is_empty() {
            self.ctx.queue().write_buffer(&self.b.pins, 0, bytemuck::cast_slice(&pins));
        }
        self.pinned.clear();
        self.pinned.extend(pins.iter().map(|p| p.particle));
        Ok(pins.len() as u32)
    }

    /// Records one frame — every substep, iteration and colour — into one compute pass.
    fn record_frame(&self, enc: &mut wgpu::CommandEncoder, pins: u32) {
        let s = self.settings.xpbd;
        let model = &*self.model;
        let n = model.particle_count() as u32;
        let triangles = model.triangles().len() as u32;
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("hooke frame"),
            timestamp_writes: self.timer.as_ref().and_then(FrameTimer::writes),
        });
        let slot = |sub: u32| (&self.params_group, sub * UNIFORM_SLOT as u32);
        self.predict.begin_frame(&mut pass, slot(0), n, pins);
        for sub in 0..s.substeps {
            if self.aero {
                self.aerodynamics.record(&mut pass, slot(sub), n, triangles);
            }
            self.predict.substep(&mut pass, slot(sub), n, pins);
            match &self.jacobi {
                Some(jacobi) => jacobi.record(&mut pass, slot(sub), n, s.iterations),
                None => {
                    for it in 0..s.iterations {
                        for (c, &(_, count)) in self.colours.iter().enumerate() {
                            let colour_slot = (2 * c as u32 + (it > 0) as u32) * UNIFORM_SLOT as u32;
                            self.distance.record(&mut pass, slot(sub), (&self.colour_group, colour_slot), count);
                        }
                    }
                }
            }
            if !model.colliders().is_empty() {
                self.collide.record(&mut pass, slot(sub), n);
            }
            self.finish.record(&mut pass, slot(sub), n);
        }
        if self.settings.normals && triangles > 0 {
            self.normals.record(&mut pass, slot(0), n, triangles);
            if let Some(t) = &self.tangents {
                t.record(&mut pass, slot(0), n, triangles);
            }
        }
        self.health.record(&mut pass, slot(0), n, self.structural);
    }

    /// Restores the start-of-frame snapshot and clears the health record.
    fn restore_snapshot(&self) {
        let Some((x, v)) = &self.b.snapshot else { return };
        let size = self.model.particle_count() as u64 * VEC4;
        let mut enc =
            self.ctx.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke restore") });
        if size > 0 {
            enc.copy_buffer_to_buffer(x, 0, &self.b.position, 0, size);
            enc.copy_buffer_to_buffer(v, 0, &self.b.velocity, 0, size);
        }
        enc.clear_buffer(&self.b.displacement, 0, None);
        enc.clear_buffer(&self.b.health, 0, None);
        self.ctx.queue().submit([enc.finish()]);
    }
}

/// The xyz of packed `vec4<f32>` records (the bytes need not be aligned).
fn vec3s(bytes: &[u8]) -> impl Iterator<Item = Vec3> + '_ {
    bytes.chunks_exact(16).map(|c| {
        let f = |k: usize| f32::from_le_bytes(c[4 * k..4 * k + 4].try_into().unwrap());
        Vec3::new(f(0), f(1), f(2))
    })
}

/// The checks of `XpbdSettings::validate` (private in hooke), and the relaxation of
/// [`GpuSolve::Jacobi`].
fn validate(settings: &GpuSettings) -> Result<(), SolverError> {
    let bad = |setting, message: String| Err(SolverError::InvalidSettings { setting, message });
    if let GpuSolve::Jacobi { relaxation } = settings.solve
        && !(relaxation > 0.0 && relaxation <= 2.0)
    {
        return bad("relaxation", format!("the Jacobi relaxation ω must be in (0, 2], got {relaxation}"));
    }
    let s = &settings.xpbd;
    if s.substeps == 0 {
        return bad("substeps", "must be ≥ 1".into());
    }
    if s.iterations == 0 {
        return bad("iterations", "must be ≥ 1".into());
    }
    if !(s.air_damping.is_finite() && s.air_damping >= 0.0) {
        return bad("air_damping", format!("must be a finite rate ≥ 0 (1/s), got {}", s.air_damping));
    }
    if let Method::Pbd { stiffness } = s.method
        && !(0.0..=1.0).contains(&stiffness)
    {
        return bad("pbd_stiffness", format!("must be in [0, 1], got {stiffness}"));
    }
    if s.max_speed.is_nan() || s.max_speed <= 0.0 || s.max_strain.is_nan() || s.max_strain <= 0.0 {
        return bad("max_speed/max_strain", "must be > 0".into());
    }
    Ok(())
}

/// The device record of a collider.
fn gpu_collider(c: &hooke::collision::Collider) -> GpuCollider {
    let v = |x: Vec3| x.extend(0.0).to_array();
    let mut g = GpuCollider {
        static_friction: c.friction.static_coefficient,
        kinetic_friction: c.friction.kinetic_coefficient,
        ..GpuCollider::default()
    };
    match c.shape {
        Shape::Plane { point, normal } => {
            g.kind = 0;
            g.a = v(point);
            g.b = v(normal);
        }
        Shape::Sphere { center, radius } => {
            g.kind = 1;
            g.a = v(center);
            g.radius = radius;
        }
        Shape::Capsule { a, b, radius } => {
            g.kind = 2;
            g.a = v(a);
            g.b = v(b);
            g.radius = radius;
        }
        Shape::Box { center, half_extents, rotation } => {
            g.kind = 3;
            g.a = v(center);
            g.b = v(half_extents);
            let m = Mat3::from_quat(rotation);
            g.r = [v(m.x_axis), v(m.y_axis), v(m.z_axis)];
        }
    }
    g
}

impl Solver for GpuXpbdSolver {
    fn info(&self) -> SolverInfo {
        let name = match (self.settings.xpbd.method, self.settings.solve) {
            (Method::Xpbd, GpuSolve::GaussSeidel) => "xpbd-gpu",
            (Method::Pbd { .. }, GpuSolve::GaussSeidel) => "pbd-gpu",
            (Method::Xpbd, GpuSolve::Jacobi { .. }) => "xpbd-jacobi-gpu",
            (Method::Pbd { .. }, GpuSolve::Jacobi { .. }) => "pbd-jacobi-gpu",
        };
        SolverInfo {
            name: name.into(),
            substeps: self.settings.xpbd.substeps,
            iterations: self.settings.xpbd.iterations,
            parallel: true,
        }
    }

    fn model(&self) -> &Arc<Model> {
        &self.model
    }

    fn time(&self) -> f64 {
        self.time
    }

    fn step(&mut self, control: &Control, frame_dt: f32) -> Result<StepReport, SolverError> {
        if let Some(e) = &self.pending {
            return Err(e.clone());
        }
        hooke::solver::check_step_inputs(control, frame_dt)?;
        let pins = self.upload_pins(control)?;
        self.write_params(frame_dt, control, pins);
        let n = self.model.particle_count() as u64;
        let mut enc =
            self.ctx.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke step") });
        if let Some((x, v)) = &self.b.snapshot
            && n > 0
        {
            enc.copy_buffer_to_buffer(&self.b.position, 0, x, 0, n * VEC4);
            enc.copy_buffer_to_buffer(&self.b.velocity, 0, v, 0, n * VEC4);
        }
        // The contact counter (third word of the health record) counts this frame only.
        enc.clear_buffer(&self.b.health, 8, Some(4));
        self.record_frame(&mut enc, pins);
        if let Some(timer) = &mut self.timer {
            timer.resolve(&mut enc);
        }
        self.ctx.queue().submit([enc.finish()]);
        let s = self.settings.xpbd;
        let mut report = StepReport { substeps: s.substeps, iterations: s.iterations, ..StepReport::default() };
        if self.settings.check_every_frame {
            let bytes = self.read_back(&[(&self.b.health, size_of::<HealthRecord>() as u64)]);
            let health: HealthRecord = bytemuck::pod_read_unaligned(&bytes);
            if health.nonfinite != 0 || health.too_fast != 0 || health.overstrained != 0 {
                let mut st = State { particle_position: Vec::new(), particle_velocity: Vec::new(), time: 0.0 };
                let _ = self.try_read_state(&mut st);
                self.pending = None;
                let err = self.blow_up(health, &st);
                self.restore_snapshot();
                return Err(err.expect("a flagged record is a blow-up"));
            }
            report.contacts = health.contacts;
        }
        self.time += frame_dt as f64;
        Ok(report)
    }

    fn read_positions(&mut self, out: &mut Vec<Vec3>) {
        if let Err(e) = self.try_read_positions(out) {
            log::error!("hooke-gpu: {e}");
        }
    }

    fn read_state(&mut self, out: &mut State) {
        if let Err(e) = self.try_read_state(out) {
            log::error!("hooke-gpu: {e}");
        }
    }

    fn write_state(&mut self, state: &State) -> Result<(), SolverError> {
        let n = self.model.particle_count();
        if state.particle_position.len() != n || state.particle_velocity.len() != n {
            return Err(SolverError::StateMismatch(format!(
                "{} positions and {} velocities for {n} particles",
                state.particle_position.len(),
                state.particle_velocity.len()
            )));
        }
        if let Some(k) = state
            .particle_position
            .iter()
            .zip(&state.particle_velocity)
            .position(|(x, v)| !x.is_finite() || !v.is_finite())
        {
            return Err(SolverError::StateMismatch(format!("particle {k} is not finite")));
        }
        if !state.time.is_finite() {
            return Err(SolverError::StateMismatch("time is not finite".into()));
        }
        let x: Vec<[f32; 4]> = state
            .particle_position
            .iter()
            .zip(self.model.particle_inv_mass())
            .map(|(x, &w)| x.extend(w).to_array())
            .collect();
        let v: Vec<[f32; 4]> = state.particle_velocity.iter().map(|v| v.extend(0.0).to_array()).collect();
        let queue = self.ctx.queue();
        if n > 0 {
            queue.write_buffer(&self.b.position, 0, bytemuck::cast_slice(&x));
            queue.write_buffer(&self.b.velocity, 0, bytemuck::cast_slice(&v));
        }
        let mut enc =
            self.ctx.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke write") });
        enc.clear_buffer(&self.b.displacement, 0, None);
        enc.clear_buffer(&self.b.health, 0, None);
        queue.submit([enc.finish()]);
        self.pending = None;
        self.time = state.time;
        self.write_params(1.0 / 60.0, &Control::new(), 0);
        self.submit_normals();
        Ok(())
    }
}
