//! XPBD and PBD on the CPU (article §3).
//!
//! One frame of Δt_frame is split into `substeps` substeps of h = Δt_frame/substeps (Macklin et
//! al. 2019, "Small steps in physics simulation"). Each substep:
//!
//! 1. **Predict**: v ← v·e^{−c·h} + h·(g + w·f_ext), x⁰ ← x, x ← x + h·v, where c is the air
//!    damping rate (1/s) and f_ext the aerodynamic force; pinned particles (w = 0) follow their
//!    targets instead.
//! 2. **Project**: λ ← 0, then `iterations` Gauss–Seidel sweeps over the constraint colours in
//!    a fixed order; within a colour no two constraints share a particle, so a colour is
//!    projected in parallel (rayon) with exactly the result of the sequential sweep.
//! 3. **Collide**: each particle is pushed out of every collider and Coulomb friction is
//!    applied to its tangential displacement (see [`crate::collision`]).
//! 4. **Velocity**: v ← (x − x⁰)/h.
//!
//! λ is accumulated over the iterations of one substep and reset at the next (not per
//! iteration), which is what makes XPBD's stiffness independent of the iteration count and
//! of the time step. PBD mode ([`Method::Pbd`]) drops λ and scales each correction by a
//! stiffness factor s ∈ [0, 1], so its stiffness depends on iterations and substeps.
//!
//! After every frame the state is checked for non-finite values, runaway speed and runaway
//! strain. On failure the frame is replayed sequentially from a snapshot, checking after each
//! stage and each constraint, to report where the blow-up started; the state is then left at
//! the start of the frame.

use super::distance::{self, Block4, Particle, Shared, Sweep};
use super::health;
use super::{SolverError, SolverInfo, StepReport, check_state};
use crate::collision::{self, ColliderStep};
use crate::forces::aerodynamics;
use crate::model::DistanceConstraint;
use crate::{Control, Model, Solver, State};
use glam::{Vec3, Vec4};
use rayon::prelude::*;
use std::sync::Arc;

/// Position-based method.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// Extended PBD with compliance (Macklin et al. 2016). Stiffness from the material.
    Xpbd,
    /// Classic PBD (Müller et al. 2007): constraints are rigid and each correction is scaled
    /// by `stiffness` ∈ [0, 1]; the result depends on iterations and substeps.
    Pbd {
        /// Stiffness factor s ∈ [0, 1].
        stiffness: f32,
    },
}

/// Numerical settings of [`XpbdSolver`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XpbdSettings {
    /// Substeps per frame, ≥ 1.
    pub substeps: u32,
    /// Gauss–Seidel iterations per substep, ≥ 1.
    pub iterations: u32,
    /// XPBD or PBD.
    pub method: Method,
    /// Global air damping rate c (1/s), ≥ 0: velocities decay as e^{−c·t}.
    pub air_damping: f32,
    /// Run colours and particle loops on the rayon thread pool.
    pub parallel: bool,
    /// A particle faster than this (m/s) is reported as a blow-up.
    pub max_speed: f32,
    /// A structural strain larger than this (dimensionless) is reported as a blow-up.
    pub max_strain: f32,
}

impl Default for XpbdSettings {
    /// 20 substeps × 1 iteration of XPBD, air damping 0.05/s, parallel, blow-up at 500 m/s or
    /// 1 000 % strain.
    fn default() -> Self {
        XpbdSettings {
            substeps: 20,
            iterations: 1,
            method: Method::Xpbd,
            air_damping: 0.05,
            parallel: true,
            max_speed: 500.0,
            max_strain: 10.0,
        }
    }
}

impl XpbdSettings {
    fn validate(&self) -> Result<(), SolverError> {
        let bad = |setting, message: String| Err(SolverError::InvalidSettings { setting, message });
        if !(1..=100_000).contains(&self.substeps) {
            return bad("substeps", format!("must be between 1 and 100000, got {}", self.substeps));
        }
        if !(1..=10_000).contains(&self.iterations) {
            return bad("iterations", format!("must be between 1 and 10000, got {}", self.iterations));
        }
        if !(self.air_damping.is_finite() && self.air_damping >= 0.0) {
            return bad("air_damping", format!("must be a finite rate ≥ 0 (1/s), got {}", self.air_damping));
        }
        if let Method::Pbd { stiffness } = self.method
            && !(0.0..=1.0).contains(&stiffness)
        {
            return bad("pbd_stiffness", format!("must be in [0, 1], got {stiffness}"));
        }
        if self.max_speed.is_nan() || self.max_speed <= 0.0 || self.max_strain.is_nan() || self.max_strain <= 0.0 {
            return bad("max_speed/max_strain", "must be > 0".into());
        }
        Ok(())
    }
}

/// Particles per parallel task.
const PARTICLE_CHUNK: usize = 2048;
/// Blocks of four constraints per parallel task.
const BLOCK_CHUNK: usize = 512;

/// The CPU XPBD/PBD solver. See the [module documentation](self).
pub struct XpbdSolver {
    model: Arc<Model>,
    settings: XpbdSettings,
    /// Positions with effective inverse masses, and substep displacements.
    p: Vec<Particle>,
    v: Vec<Vec3>,
    lambda: Vec<f32>,
    /// The model's constraints in blocks of four, per colour: colour k's blocks are
    /// `blocks[block_ranges[k]]`, covering its constraints but the last `len % 4`.
    blocks: Vec<Block4>,
    block_ranges: Vec<std::ops::Range<usize>>,
    /// External force per particle (N), from aerodynamics.
    force: Vec<Vec3>,
    triangle_force: Vec<Vec3>,
    /// Pinned particles with their positions at the start of the frame and their targets.
    pin_start: Vec<(u32, Vec3, Vec3)>,
    time: f64,
    snapshot: Option<(Vec<Particle>, Vec<Vec3>, f64)>,
}

impl XpbdSolver {
    /// A solver starting from the model's initial state.
    ///
    /// # Errors
    /// [`SolverError::InvalidSettings`] for zero substeps or iterations, a negative damping
    /// rate or a PBD stiffness outside [0, 1].
    pub fn new(model: Arc<Model>, settings: XpbdSettings) -> Result<XpbdSolver, SolverError> {
        settings.validate()?;
        let n = model.particle_count();
        let p = model
            .particle_position()
            .iter()
            .zip(model.particle_inv_mass())
            .map(|(x, &w)| Particle { x: x.extend(w), d: Vec4::ZERO })
            .collect();
        let mut blocks = Vec::with_capacity(model.constraints().len() / 4);
        let mut block_ranges = Vec::with_capacity(model.colour_count());
        for r in model.colour_ranges() {
            let start = blocks.len();
            let cons = &model.constraints()[r.start as usize..r.end as usize];
            blocks.extend(cons.chunks_exact(4).map(|c| Block4::new(c.try_into().unwrap())));
            block_ranges.push(start..blocks.len());
        }
        Ok(XpbdSolver {
            blocks,
            block_ranges,
            p,
            v: model.particle_velocity().to_vec(),
            lambda: vec![0.0; model.constraints().len()],
            force: vec![Vec3::ZERO; n],
            triangle_force: vec![Vec3::ZERO; model.triangles().len()],
            pin_start: Vec::new(),
            time: 0.0,
            snapshot: None,
            settings,
            model,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &XpbdSettings {
        &self.settings
    }

    /// Current positions (m), without copying.
    pub fn positions(&self) -> impl ExactSizeIterator<Item = Vec3> + '_ {
        self.p.iter().map(|p| p.position())
    }

    /// Current velocities (m/s), without copying.
    pub fn velocities(&self) -> &[Vec3] {
        &self.v
    }

    fn apply_pins(&mut self, control: &Control) -> Result<(), SolverError> {
        let inv = self.model.particle_inv_mass();
        for (p, &w) in self.p.iter_mut().zip(inv) {
            p.x.w = w;
        }
        self.pin_start.clear();
        let n = self.p.len() as u32;
        for pin in &control.pins {
            if pin.particle >= n {
                return Err(SolverError::InvalidPin {
                    particle: pin.particle,
                    message: format!("there are only {n} particles"),
                });
            }
            let p = &mut self.p[pin.particle as usize];
            p.x.w = 0.0;
            let start = p.position();
            let target = match pin.target {
                Some(t) if t.is_finite() => t,
                Some(t) => {
                    return Err(SolverError::InvalidPin {
                        particle: pin.particle,
                        message: format!("target {t} is not finite"),
                    });
                }
                None => start,
            };
            self.pin_start.push((pin.particle, start, target));
        }
        Ok(())
    }

    fn aerodynamic_forces(&mut self, wind: Vec3) {
        let model = &*self.model;
        let air = model.air();
        let (p, v) = (&self.p, &self.v);
        let tri = |t: &[u32; 3]| {
            let xs = t.map(|i| p[i as usize].position());
            let vs = t.map(|i| v[i as usize]);
            aerodynamics::triangle_force(&air, xs, vs, wind) * (1.0 / 3.0)
        };
        let parallel = self.settings.parallel && self.p.len() >= 2 * PARTICLE_CHUNK;
        if parallel {
            model.triangles().par_iter().map(tri).collect_into_vec(&mut self.triangle_force);
        } else {
            self.triangle_force.clear();
            self.triangle_force.extend(model.triangles().iter().map(tri));
        }
        let tf = &self.triangle_force;
        let gather = |(k, f): (usize, &mut Vec3)| {
            *f = model.particle_triangles(k).iter().map(|&t| tf[t as usize]).sum();
        };
        if parallel {
            self.force.par_iter_mut().enumerate().for_each(gather);
        } else {
            self.force.iter_mut().enumerate().for_each(gather);
        }
    }

    /// One frame; with `trace` it runs sequentially and checks after every stage.
    fn frame(&mut self, control: &Control, frame_dt: f32, trace: bool) -> Result<StepReport, SolverError> {
        let s = self.settings;
        let h = frame_dt / s.substeps as f32;
        let pbd_stiffness = if let Method::Pbd { stiffness } = s.method { stiffness } else { 1.0 };
        let sweep = Sweep { inv_h: 1.0 / h, inv_h2: 1.0 / (h * h), pbd_stiffness };
        let parallel = s.parallel && !trace;
        let model = Arc::clone(&self.model);
        let gravity = model.gravity();
        let decay = (-s.air_damping * h).exp();
        let aero = model.air().is_active() && !model.triangles().is_empty();
        let mut contacts = 0u32;
        for sub in 0..s.substeps {
            let t0 = self.time + (sub as f64) * h as f64;
            let t1 = t0 + h as f64;
            if aero {
                self.aerodynamic_forces(control.wind_at(t0));
            }
            // 1. Predict: d = h·v after the velocity update.
            let force = &self.force;
            let predict = |start: usize, p: &mut [Particle], v: &mut [Vec3]| {
                for k in 0..p.len() {
                    let w = p[k].x.w;
                    if w > 0.0 {
                        let a = if aero { gravity + force[start + k] * w } else { gravity };
                        v[k] = v[k] * decay + a * h;
                        p[k].d = (v[k] * h).extend(0.0);
                    } else {
                        p[k].d = Vec4::ZERO;
                    }
                }
                0
            };
            for_particles(parallel, &mut self.p, &mut self.v, predict);
            let frac = (sub + 1) as f32 / s.substeps as f32;
            for &(k, start, target) in &self.pin_start {
                let q = &mut self.p[k as usize];
                q.d = (start.lerp(target, frac) - q.x.truncate()).extend(0.0);
            }
            if trace {
                self.check_finite(t0, "the prediction step (gravity and external forces)")?;
            }
            // 2. Project.
            self.lambda.iter_mut().for_each(|l| *l = 0.0);
            for _ in 0..s.iterations {
                for (range, blocks) in model.colour_ranges().iter().zip(&self.block_ranges) {
                    let r = range.start as usize..range.end as usize;
                    let cons = &model.constraints()[r.clone()];
                    let lam = &mut self.lambda[r.clone()];
                    let blocks = &self.blocks[blocks.clone()];
                    let pp = Shared(self.p.as_mut_ptr());
                    let pp = &pp;
                    if trace {
                        for (k, (c, l)) in cons.iter().zip(lam.iter_mut()).enumerate() {
                            // SAFETY: sequential; indices were validated when the model was built.
                            unsafe { project_one_dispatch(s.method, c, l, pp.0, sweep) };
                            for q in [c.i, c.j] {
                                if !self.p[q as usize].d.is_finite() {
                                    let ci = r.start + k;
                                    let fam = model.constraint_family()[ci];
                                    let what = format!(
                                        "while projecting {} constraint {ci} (particles {}–{})",
                                        fam.name(),
                                        c.i,
                                        c.j
                                    );
                                    return Err(self.blow_up(t0, q, Some(ci), what));
                                }
                            }
                        }
                        continue;
                    }
                    let (block_lam, tail_lam) = lam.split_at_mut(4 * blocks.len());
                    let tail = &cons[4 * blocks.len()..];
                    if parallel && blocks.len() >= 2 * BLOCK_CHUNK {
                        blocks.par_chunks(BLOCK_CHUNK).zip(block_lam.par_chunks_mut(4 * BLOCK_CHUNK)).for_each(
                            |(bb, ll)| {
                                // SAFETY: all constraints of one colour touch disjoint particles
                                // (colouring::validate ran in ModelBuilder::finalize), so the chunks
                                // of this colour never touch the same particle.
                                unsafe { project_dispatch(s.method, bb, ll, &[], &mut [], *pp, sweep) }
                            },
                        );
                        // SAFETY: as above; the parallel chunks have finished.
                        unsafe { project_dispatch(s.method, &[], &mut [], tail, tail_lam, *pp, sweep) };
                    } else {
                        // SAFETY: sequential; indices were validated when the model was built.
                        unsafe { project_dispatch(s.method, blocks, block_lam, tail, tail_lam, *pp, sweep) };
                    }
                }
            }
            // 3. Collide, 4. velocity and position.
            let steps: Vec<ColliderStep> = model.colliders().iter().map(|c| ColliderStep::new(c, t0, t1)).collect();
            let colliders = model.colliders();
            let radius = model.particle_radius();
            let inv_h = sweep.inv_h;
            let finish = |start: usize, p: &mut [Particle], v: &mut [Vec3]| -> u32 {
                let mut touching = 0;
                for k in 0..p.len() {
                    let q = &mut p[k];
                    let x0 = q.x.truncate();
                    let mut d = q.d.truncate();
                    if q.x.w > 0.0 && !colliders.is_empty() {
                        let depth = collision::resolve_particle(colliders, &steps, x0, &mut d, radius[start + k]);
                        touching += (depth > 0.0) as u32;
                    }
                    v[k] = d * inv_h;
                    q.x = (x0 + d).extend(q.x.w);
                    q.d = Vec4::ZERO;
                }
                touching
            };
            contacts = for_particles(parallel, &mut self.p, &mut self.v, finish);
            if trace {
                self.check_finite(t0, "collision handling")?;
            }
        }
        self.time += frame_dt as f64;
        Ok(StepReport { substeps: s.substeps, iterations: s.iterations, contacts, ..StepReport::default() })
    }

    fn check_finite(&self, time: f64, stage: &str) -> Result<(), SolverError> {
        match self.p.iter().zip(&self.v).position(|(p, v)| !p.x.is_finite() || !p.d.is_finite() || !v.is_finite()) {
            Some(k) => Err(self.blow_up(time, k as u32, None, format!("in {stage}"))),
            None => Ok(()),
        }
    }

    fn blow_up(&self, time: f64, particle: u32, constraint: Option<usize>, what: String) -> SolverError {
        health::non_finite(&self.model, time, particle, constraint, what)
    }

    /// Looks for a runaway after a frame: non-finite values, speed or strain over the limits.
    /// Returns the particle, the constraint if any, and a description of the first problem.
    fn health(&self) -> Option<(u32, Option<usize>, String)> {
        let limits = health::Limits { max_speed: self.settings.max_speed, max_strain: self.settings.max_strain };
        let p = &self.p;
        health::check(
            &self.model,
            |k| p[k].position(),
            &self.v,
            |k| p[k as usize].x.w == 0.0,
            limits,
            self.settings.parallel,
            "constraint",
        )
    }
}

/// Dispatches to the XPBD or PBD kernel.
///
/// # Safety
/// As [`distance::project`].
#[inline(always)]
unsafe fn project_dispatch(
    method: Method,
    blocks: &[Block4],
    block_lam: &mut [f32],
    tail: &[DistanceConstraint],
    tail_lam: &mut [f32],
    p: Shared<Particle>,
    sweep: Sweep,
) {
    unsafe {
        match method {
            Method::Xpbd => distance::project::<false>(blocks, block_lam, tail, tail_lam, p, sweep),
            Method::Pbd { .. } => distance::project::<true>(blocks, block_lam, tail, tail_lam, p, sweep),
        }
    }
}

/// Dispatches one constraint to the XPBD or PBD kernel.
///
/// # Safety
/// As [`distance::project_one`].
unsafe fn project_one_dispatch(method: Method, c: &DistanceConstraint, lam: &mut f32, p: *mut Particle, sweep: Sweep) {
    unsafe {
        match method {
            Method::Xpbd => distance::project_one::<false>(c, lam, p, sweep),
            Method::Pbd { .. } => distance::project_one::<true>(c, lam, p, sweep),
        }
    }
}

/// Runs `f(start, particles, velocities)` over all particles, in parallel chunks or as one
/// range, and sums what it returns.
fn for_particles<F>(parallel: bool, p: &mut [Particle], v: &mut [Vec3], f: F) -> u32
where
    F: Fn(usize, &mut [Particle], &mut [Vec3]) -> u32 + Sync + Send,
{
    if parallel && p.len() >= 2 * PARTICLE_CHUNK {
        p.par_chunks_mut(PARTICLE_CHUNK)
            .zip(v.par_chunks_mut(PARTICLE_CHUNK))
            .enumerate()
            .map(|(k, (p, v))| f(k * PARTICLE_CHUNK, p, v))
            .sum()
    } else {
        f(0, p, v)
    }
}

impl Solver for XpbdSolver {
    fn info(&self) -> SolverInfo {
        let name = match self.settings.method {
            Method::Xpbd => "xpbd-cpu",
            Method::Pbd { .. } => "pbd-cpu",
        };
        SolverInfo {
            name: name.into(),
            substeps: self.settings.substeps,
            iterations: self.settings.iterations,
            parallel: self.settings.parallel,
        }
    }

    fn model(&self) -> &Arc<Model> {
        &self.model
    }

    fn time(&self) -> f64 {
        self.time
    }

    fn step(&mut self, control: &Control, frame_dt: f32) -> Result<StepReport, SolverError> {
        super::check_step_inputs(control, frame_dt)?;
        self.apply_pins(control)?;
        let mut snap = self.snapshot.take().unwrap_or_default();
        snap.0.clone_from(&self.p);
        snap.1.clone_from(&self.v);
        snap.2 = self.time;
        let report = self.frame(control, frame_dt, false)?;
        let Some((particle, constraint, what)) = self.health() else {
            self.snapshot = Some(snap);
            return Ok(report);
        };
        // Replay the frame sequentially with checks to find where it started.
        self.p.clone_from(&snap.0);
        self.v.clone_from(&snap.1);
        self.time = snap.2;
        let traced = self.frame(control, frame_dt, true);
        self.p.clone_from(&snap.0);
        self.v.clone_from(&snap.1);
        self.time = snap.2;
        self.snapshot = Some(snap);
        Err(match traced {
            Err(e) => e,
            Ok(_) => SolverError::BlowUp { time: self.time, particle, constraint, detail: what },
        })
    }

    fn read_positions(&mut self, out: &mut Vec<Vec3>) {
        out.clear();
        out.extend(self.p.iter().map(|p| p.position()));
    }

    fn read_state(&mut self, out: &mut State) {
        self.read_positions(&mut out.particle_position);
        out.particle_velocity.clone_from(&self.v);
        out.time = self.time;
    }

    fn write_state(&mut self, state: &State) -> Result<(), SolverError> {
        check_state(&self.model, state)?;
        for (p, q) in self.p.iter_mut().zip(&state.particle_position) {
            p.x = q.extend(p.x.w);
            p.d = Vec4::ZERO;
        }
        self.v.clone_from(&state.particle_velocity);
        self.time = state.time;
        Ok(())
    }
}
