//! Tearing in a run: after each frame, break what the tear strain or tear energy says is broken
//! ([`hooke::tearing`]), move the solver onto the torn model and keep the scene's pins on the
//! particles they were on (and on every copy a pinned particle was split into).
//!
//! # One frame in flight (`[solver] tear_overlap`)
//!
//! By default a tear by strain found after frame n is taken at once, before frame n + 1. With
//! overlap on ([`Tearing::set_overlap`], a scene's `[solver] tear_overlap = true`) it is taken
//! after frame n + 1: the torn model is made from frame n's positions — on a thread of the
//! host while a device solves frame n + 1 ([`Solver::solves_off_host`]), at once on the CPU
//! (the frame's solve would share the cores) — and after frame n + 1 the solver is moved onto
//! it with that frame's state mapped onto it. On a GPU a tear event then costs the frame's
//! path only the solver's rebuild, not the host's tear. The CPU's and the GPU's runs tear
//! alike either way (the same frames, the same bits). The price: the constraints that broke
//! still act in frame n + 1, so a tear takes effect one frame after the strain that makes it,
//! and where the solve does not converge the strain builds further meanwhile (a 128² sheet at
//! 20 × 8 peaked at 42 % strain before a tear, against 22 % at once). (Masking the broken
//! constraints for that frame instead was tried: a constraint that a flap makes again at its
//! present length — a corner left hanging — then stretched freely in the masked frame, broke
//! again at once against its new length, and so on: that sheet reached 289 % strain in ten
//! frames.) Scripted cuts are made at once; a tear found after a run's last frame is not
//! taken; a waiting tear is dropped — and found again by the next check if its constraints
//! are still past their breaking strain — when the solver's model changes (a material edit, a
//! reset) or a state no later than the one it was found at is written (a snapshot restored).

use hooke::tearing::{self, Cut, Torn};
use hooke::{Control, Model, ModelError, Solver, SolverError, State};
use std::sync::Arc;

/// A tear found after a frame, waiting to be taken after the next.
#[derive(Debug)]
struct Pending {
    /// The solver's model when the tear was found (the tear is of that model).
    model: Arc<Model>,
    /// The torn model, being made on a thread or made already.
    torn: Making,
    /// The bodies (indices into the model's bodies, increasing) that tear.
    bodies: Vec<usize>,
    /// The time (s) of the state it was found at.
    time: f64,
}

#[derive(Debug)]
enum Making {
    Beside(std::thread::JoinHandle<Result<Option<Torn>, ModelError>>),
    Made(Box<Result<Option<Torn>, ModelError>>),
}

impl Making {
    fn take(self) -> Result<Option<Torn>, ModelError> {
        match self {
            Making::Made(torn) => *torn,
            Making::Beside(thread) => thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        }
    }
}

/// A run's tearing: which particle of the scene's model each current particle comes from.
/// (A clone does not take a tear that waits for the next frame: the clone finds it again,
/// by strain, after the next frame.)
#[derive(Debug)]
pub struct Tearing {
    /// For each particle of the current model, its particle in the scene's model.
    origin: Vec<u32>,
    /// Whether some cloth of the scene tears (a finite tear strain or tear energy).
    active: bool,
    /// Scripted cuts by time (s), earliest first, and how many have been made.
    cuts: Vec<(f64, Cut)>,
    cut: usize,
    /// Whether a tear or cut has changed the model.
    torn: bool,
    /// Time spent moving the solver onto torn models in the last `after_frame` or `cut`.
    rebuild: std::time::Duration,
    /// The bodies (indices into the model's bodies) that the last `after_frame` tore by
    /// strain, in increasing order.
    strained: Vec<usize>,
    /// A tear found after the last frame, to be taken after the next.
    pending: Option<Pending>,
    /// Whether a tear by strain is made beside the next frame and taken after it.
    overlap: bool,
}

impl Clone for Tearing {
    fn clone(&self) -> Tearing {
        Tearing {
            origin: self.origin.clone(),
            active: self.active,
            cuts: self.cuts.clone(),
            cut: self.cut,
            torn: self.torn,
            rebuild: self.rebuild,
            strained: self.strained.clone(),
            pending: None,
            overlap: self.overlap,
        }
    }
}

/// Why a tear could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum TearError {
    /// The torn model could not be made (a body without texture coordinates, say).
    #[error("tearing: {0}")]
    Model(#[from] ModelError),
    /// The solver did not take the torn model.
    #[error("tearing: {0}")]
    Solver(#[from] SolverError),
}

/// What [`Tearing::after_frame_observed`] calls before a tear by strain: the solver as the frame
/// left it, the state, and the bodies that will tear (indices into the model's bodies,
/// increasing).
pub type BeforeTear<'a> = dyn FnMut(&mut dyn Solver, &State, &[usize]) + 'a;

/// What one tear did, for the diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TearCounts {
    /// Constraints removed (broken, or spanning a crack).
    pub broken: u32,
    /// Particles added by splitting.
    pub split: u32,
}

/// Adds `c` to the running `total` of a call.
fn add(total: &mut Option<TearCounts>, c: TearCounts) {
    let t = total.get_or_insert_default();
    (t.broken, t.split) = (t.broken + c.broken, t.split + c.split);
}

impl Tearing {
    /// The tearing of a run of `model` (the scene's model, as the solver starts with it).
    pub fn new(model: &Model) -> Tearing {
        let active = model.bodies().iter().any(|b| match b.material {
            hooke::BodyMaterial::Cloth(m) => m.tears(),
            hooke::BodyMaterial::Rope(_) => false,
        });
        Tearing {
            origin: (0..model.particle_count() as u32).collect(),
            active,
            cuts: Vec::new(),
            cut: 0,
            torn: false,
            rebuild: std::time::Duration::ZERO,
            strained: Vec::new(),
            pending: None,
            overlap: false,
        }
    }

    /// The tearing of a run of `scene`: its tear strains and energies, and its scripted cuts.
    pub fn for_scene(scene: &hooke_io::scene::Scene) -> Tearing {
        Tearing { cuts: scene.cuts.clone(), overlap: scene.tear_overlap, ..Tearing::new(&scene.model) }
    }

    /// Makes each tear by strain beside the next frame and takes it after that frame (`on`),
    /// or takes it at once (the default); see the [module documentation](self). A tear waiting
    /// when overlap is turned off is taken after the next frame still.
    pub fn set_overlap(&mut self, on: bool) {
        self.overlap = on;
    }

    /// Whether tears by strain are made beside the next frame ([`Tearing::set_overlap`]).
    pub fn overlap(&self) -> bool {
        self.overlap
    }

    /// Whether the scene can tear (by strain, or by a scripted cut).
    pub fn active(&self) -> bool {
        self.active || !self.cuts.is_empty()
    }

    /// Whether the model has changed since the start (a tear or a cut).
    pub fn torn(&self) -> bool {
        self.torn
    }

    /// The wall time that the last [`Tearing::after_frame`] or [`Tearing::cut`] spent in the
    /// solver's `rebuild` (the rest of a tear event is the check and the torn model made on
    /// the host); zero when nothing tore.
    pub fn last_rebuild(&self) -> std::time::Duration {
        self.rebuild
    }

    /// The bodies (indices into the model's bodies, increasing) that the last
    /// [`Tearing::after_frame`] tore because a constraint passed its breaking strain (not by a
    /// scripted cut); empty when nothing tore so.
    pub fn strained_bodies(&self) -> &[usize] {
        &self.strained
    }

    /// `control` — made for the scene's particles — for the current particles: each pin on
    /// every particle that comes from the pinned one.
    pub fn control(&self, control: Control) -> Control {
        if !self.torn() {
            return control;
        }
        let by_particle: std::collections::HashMap<u32, &hooke::Pin> =
            control.pins.iter().map(|p| (p.particle, p)).collect();
        let mut out = Control { pins: Vec::new(), ..control.clone() };
        for (k, &o) in self.origin.iter().enumerate() {
            if let Some(pin) = by_particle.get(&o) {
                out.pins.push(hooke::Pin { particle: k as u32, ..**pin });
            }
        }
        out
    }

    /// Whether [`Tearing::after_frame`] has anything to do after the frame `solver` has just
    /// stepped: a tear found after the frame before waits to be taken, a scripted cut is due
    /// by its time, or a cloth tears and the solver cannot rule a tear out without its state
    /// ([`Solver::tear_check`]: a GPU solver tests every constraint on the device at the end of
    /// the frame). When `false`, `after_frame` would find nothing, and the state need not be
    /// read back for it.
    pub fn due(&self, solver: &dyn Solver) -> bool {
        let cut = self.cuts.get(self.cut).is_some_and(|(time, _)| *time <= solver.time() + 1e-9);
        self.pending.is_some() || cut || (self.active && solver.tear_check() != Some(false))
    }

    /// Whether a tear found after the last frame waits to be taken after the next
    /// (see the [module documentation](self)).
    pub fn waiting(&self) -> bool {
        self.pending.is_some()
    }

    /// After a frame: takes the tear found after the frame before, if one waits; makes the
    /// scripted cuts due by the state's time; and tears what the tear strain or tear energy
    /// breaks at `state` (the solver's state after the frame) — with overlap on, after the next
    /// frame (see the [module documentation](self)). On a tear or cut taken, `solver` is moved
    /// onto the torn model with `state` mapped onto it (written back into `state`). Returns
    /// what the tears and cuts taken in this call did, if any.
    ///
    /// # Errors
    /// The model's or the solver's error if the torn model cannot be made or taken.
    pub fn after_frame(&mut self, solver: &mut dyn Solver, state: &mut State) -> Result<Option<TearCounts>, TearError> {
        self.after_frame_observed(solver, state, &mut |_, _, _| {})
    }

    /// [`Tearing::after_frame`], calling `before_tear` before a tear by strain is taken, with the
    /// solver as the frame left it (its multipliers still those of the frame's last substep, unless
    /// a scripted cut due in the same frame rebuilt it first), the state, and the bodies that tear,
    /// by index in increasing order. Not called when no tear by strain is to be taken, nor for
    /// cuts. (With overlap on, a tear is taken at the start of the call after the frame that
    /// followed the one that found it: `before_tear` sees that later frame's solve, not the one
    /// whose strains made the tear.)
    ///
    /// # Errors
    /// As [`Tearing::after_frame`].
    pub fn after_frame_observed(
        &mut self,
        solver: &mut dyn Solver,
        state: &mut State,
        before_tear: &mut BeforeTear<'_>,
    ) -> Result<Option<TearCounts>, TearError> {
        self.rebuild = std::time::Duration::ZERO;
        self.strained.clear();
        // (A state only later than the one the tear was found at: a frame has been stepped.)
        let mut total = self.take_waiting(solver, state, true, before_tear)?;
        while let Some((time, blade)) = self.cuts.get(self.cut).cloned()
            && time <= state.time + 1e-9
        {
            self.cut += 1;
            if let Some(c) = self.cut_now(solver, state, &blade)? {
                add(&mut total, c);
            }
        }
        if self.active {
            let model = solver.model().clone();
            let broken = tearing::strained(&model, &state.particle_position);
            if broken.is_empty() {
                return Ok(total);
            }
            let set = model.distance();
            let mut bodies: Vec<usize> = broken.iter().filter_map(|&k| set.body_of(k as usize)).collect();
            bodies.sort_unstable();
            bodies.dedup();
            if !self.overlap {
                before_tear(solver, state, &bodies);
                if let Some(c) = self.apply(solver, state, &model, &broken)? {
                    add(&mut total, c);
                    self.strained.extend(bodies);
                    self.strained.sort_unstable();
                    self.strained.dedup();
                }
                return Ok(total);
            }
            // Taken after the next frame; made beside it where that frame runs on a device.
            let positions = state.particle_position.clone();
            let of = model.clone();
            let torn = if solver.solves_off_host() {
                // (The thread flushes subnormals as its caller does, so that it tears as the
                // CPU's run does, bit for bit.)
                let flush = hooke::fp::flushes_subnormals();
                Making::Beside(std::thread::spawn(move || {
                    if flush {
                        hooke::fp::flush_subnormals();
                    }
                    tearing::tear(&of, &positions, &broken)
                }))
            } else {
                Making::Made(Box::new(tearing::tear(&of, &positions, &broken)))
            };
            self.pending = Some(Pending { model, torn, bodies, time: state.time });
        }
        Ok(total)
    }

    /// Cuts with `blade` now (a scripted or interactive cut), as [`Tearing::after_frame`] does
    /// for a tear.
    ///
    /// # Errors
    /// As [`Tearing::after_frame`].
    pub fn cut(
        &mut self,
        solver: &mut dyn Solver,
        state: &mut State,
        blade: &Cut,
    ) -> Result<Option<TearCounts>, TearError> {
        self.rebuild = std::time::Duration::ZERO;
        self.strained.clear();
        // A tear waiting for the next frame is taken first (at the state it was found at too:
        // a cut between frames).
        let mut total = self.take_waiting(solver, state, false, &mut |_, _, _| {})?;
        if let Some(c) = self.cut_now(solver, state, blade)? {
            add(&mut total, c);
        }
        Ok(total)
    }

    /// Takes the tear waiting for the next frame, if there is one and it still fits: the
    /// solver's model is the one it was found on, and `state` is later than the state it was
    /// found at (`later`) or not earlier. Otherwise it is dropped — a material edit, a reset, a
    /// snapshot restored — and its constraints are found again by the next check if still
    /// broken. `before_tear` is called before it is taken.
    fn take_waiting(
        &mut self,
        solver: &mut dyn Solver,
        state: &mut State,
        later: bool,
        before_tear: &mut BeforeTear<'_>,
    ) -> Result<Option<TearCounts>, TearError> {
        let Some(pending) = self.pending.take() else { return Ok(None) };
        let fits = if later { state.time > pending.time } else { state.time >= pending.time };
        if !Arc::ptr_eq(solver.model(), &pending.model) || !fits {
            return Ok(None);
        }
        before_tear(solver, state, &pending.bodies);
        let counts = self.take(solver, state, pending.torn.take()?)?;
        if counts.is_some() {
            self.strained = pending.bodies;
        }
        Ok(counts)
    }

    fn cut_now(
        &mut self,
        solver: &mut dyn Solver,
        state: &mut State,
        blade: &Cut,
    ) -> Result<Option<TearCounts>, TearError> {
        let model = solver.model().clone();
        let broken = tearing::cut(&model, &state.particle_position, blade);
        self.apply(solver, state, &model, &broken)
    }

    fn apply(
        &mut self,
        solver: &mut dyn Solver,
        state: &mut State,
        model: &Model,
        broken: &[u32],
    ) -> Result<Option<TearCounts>, TearError> {
        let torn = tearing::tear(model, &state.particle_position, broken)?;
        self.take(solver, state, torn)
    }

    /// Moves `solver` onto `torn` (a tear of its model), with `state` mapped onto it.
    fn take(
        &mut self,
        solver: &mut dyn Solver,
        state: &mut State,
        torn: Option<Torn>,
    ) -> Result<Option<TearCounts>, TearError> {
        let Some(torn) = torn else { return Ok(None) };
        // (A tear still waiting was of the model replaced now: dropped.)
        self.pending = None;
        let next = torn.state(state);
        let start = std::time::Instant::now();
        solver.rebuild_torn(Arc::new(torn.model), &torn.parent, &torn.copied, &next)?;
        self.rebuild += start.elapsed();
        self.origin = torn.parent.iter().map(|&p| self.origin[p as usize]).collect();
        self.torn = true;
        *state = next;
        Ok(Some(TearCounts { broken: torn.broken, split: torn.split }))
    }
}
