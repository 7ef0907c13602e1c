//! Tearing in a run: after each frame, break what the tear strain or tear energy says is broken
//! ([`hooke::tearing`]), move the solver onto the torn model and keep the scene's pins on the
//! particles they were on (and on every copy a pinned particle was split into).

use hooke::tearing::{self, Cut};
use hooke::{Control, Model, ModelError, Solver, SolverError, State};
use std::sync::Arc;

/// A run's tearing: which particle of the scene's model each current particle comes from.
#[derive(Clone, Debug)]
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
        }
    }

    /// The tearing of a run of `scene`: its tear strains and energies, and its scripted cuts.
    pub fn for_scene(scene: &hooke_io::scene::Scene) -> Tearing {
        Tearing { cuts: scene.cuts.clone(), ..Tearing::new(&scene.model) }
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
    /// stepped: a scripted cut is due by its time, or a cloth tears and the solver cannot rule
    /// a tear out without its state ([`Solver::tear_check`]: a GPU solver tests every
    /// constraint on the device at the end of the frame). When `false`, `after_frame` would
    /// find nothing, and the state need not be read back for it.
    pub fn due(&self, solver: &dyn Solver) -> bool {
        let cut = self.cuts.get(self.cut).is_some_and(|(time, _)| *time <= solver.time() + 1e-9);
        cut || (self.active && solver.tear_check() != Some(false))
    }

    /// After a frame: tears what the tear strain or tear energy breaks at `state` (the solver's state after
    /// the frame) and, on a tear, moves `solver` onto the torn model with `state` mapped onto
    /// it (written back into `state`). Returns what the tear did, if anything tore.
    ///
    /// # Errors
    /// The model's or the solver's error if the torn model cannot be made or taken.
    /// Scripted cuts due by the state's time are made first.
    pub fn after_frame(&mut self, solver: &mut dyn Solver, state: &mut State) -> Result<Option<TearCounts>, TearError> {
        self.after_frame_observed(solver, state, &mut |_, _, _| {})
    }

    /// [`Tearing::after_frame`], calling `before_tear` once constraints are found past their
    /// breaking strain and before they are torn, with the solver as the frame left it (its
    /// multipliers still those of the frame's last substep, unless a scripted cut due in the
    /// same frame rebuilt it first), the state, and the bodies that will tear, by index in
    /// increasing order. Not called when nothing passes its breaking strain, nor for cuts.
    ///
    /// # Errors
    /// As [`Tearing::after_frame`].
    pub fn after_frame_observed(
        &mut self,
        solver: &mut dyn Solver,
        state: &mut State,
        before_tear: &mut BeforeTear<'_>,
    ) -> Result<Option<TearCounts>, TearError> {
        let mut total: Option<TearCounts> = None;
        self.rebuild = std::time::Duration::ZERO;
        self.strained.clear();
        while let Some((time, blade)) = self.cuts.get(self.cut).cloned()
            && time <= state.time + 1e-9
        {
            self.cut += 1;
            if let Some(c) = self.cut_now(solver, state, &blade)? {
                let t = total.get_or_insert_default();
                (t.broken, t.split) = (t.broken + c.broken, t.split + c.split);
            }
        }
        if self.active {
            let model = solver.model().clone();
            let broken = tearing::strained(&model, &state.particle_position);
            let set = model.distance();
            let mut bodies: Vec<usize> = broken.iter().filter_map(|&k| set.body_of(k as usize)).collect();
            bodies.sort_unstable();
            bodies.dedup();
            if !bodies.is_empty() {
                before_tear(solver, state, &bodies);
            }
            if let Some(c) = self.apply(solver, state, &model, &broken)? {
                let t = total.get_or_insert_default();
                (t.broken, t.split) = (t.broken + c.broken, t.split + c.split);
                self.strained = bodies;
            }
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
        self.cut_now(solver, state, blade)
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
        let Some(torn) = tearing::tear(model, &state.particle_position, broken)? else { return Ok(None) };
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
