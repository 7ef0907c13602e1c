//! [`SubstepPlan`]: everything about a frame's substeps that does not depend on the particles,
//! computed once per frame — on the host, by every solver, the GPU's included (it uploads it).
//!
//! A frame of Δt seconds starting at time t is split into n substeps of h = Δt/n
//! (Macklin et al. 2019, "Small steps in physics simulation"). Substep s runs from
//! t₀ = t + s·h to t₁ = t₀ + h and needs:
//!
//! * h, 1/h, 1/h² (the constraint compliance α̃ = α/h²) and the air damping factor e^{−c h};
//! * the wind at t₀ (steady wind plus gust, [`Control::wind_at`]);
//! * the fraction (s + 1)/n of the frame done at its end, by which pinned particles move
//!   linearly from where they were at the start of the frame to their targets;
//! * each collider's [`ColliderPlacement`]: keyframed colliders sampled at t₀ and t₁, a
//!   collider given a pose moved the fraction s/n → (s + 1)/n of the way from its pose at the
//!   end of the last frame, resting colliders at rest.
//!
//! The plan also resolves the frame's pins — the one place where pins are validated and where
//! the last pin given for a particle wins.

use super::SolverError;
use super::integrate::velocity_retention;
use crate::collision::{ColliderPlacement, Pose};
use crate::control::ColliderMotion;
use crate::{Control, Model};
use glam::Vec3;

/// A pin as the solvers apply it: a particle held kinematically, moving to `target` (m) by the
/// end of the frame, or staying where it is (`None`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PinPath {
    /// Particle index, below the particle count.
    pub particle: u32,
    /// Finite target position (m), or `None` to hold the particle where it is.
    pub target: Option<Vec3>,
}

/// What one substep needs. See the [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubstepSlot {
    /// Time at the start of the substep (s).
    pub t0: f64,
    /// Wind velocity at t₀ (m/s).
    pub wind: Vec3,
    /// Fraction of the frame done at the end of the substep, (s + 1)/n.
    pub frac: f32,
    /// 1 − `frac`, computed once here so that every solver uses the same rounding.
    pub one_minus_frac: f32,
}

/// The plan of one frame. See the [module documentation](self).
#[derive(Clone, Debug, PartialEq)]
pub struct SubstepPlan {
    /// Time at the start of the frame (s).
    pub time: f64,
    /// Frame time step Δt (s).
    pub frame_dt: f32,
    /// Substep h = Δt/n (s).
    pub h: f32,
    /// 1/h (1/s).
    pub inv_h: f32,
    /// 1/h² (1/s²).
    pub inv_h2: f32,
    /// Velocity retention per substep, e^{−c h} for the air damping rate c.
    pub decay: f32,
    /// One slot per substep.
    pub slots: Vec<SubstepSlot>,
    /// Collider placements, substep by substep: substep s's are
    /// `colliders[s·k..(s + 1)·k]` for k colliders.
    pub colliders: Vec<ColliderPlacement>,
    /// Every collider's pose at the end of the frame (the start of the next one's).
    pub collider_end: Vec<Pose>,
    /// The frame's pins, one per pinned particle (the last one given wins), in the order of
    /// their last appearance.
    pub pins: Vec<PinPath>,
    /// Wind (m/s) per world at each substep's t₀, for a model of several worlds: substep s's
    /// are `world_wind[s·w..(s + 1)·w]` for w worlds; empty for one world (then each slot's
    /// `wind`).
    pub world_wind: Vec<Vec3>,
}

impl SubstepPlan {
    /// The plan of a frame of `frame_dt` seconds in `substeps` substeps, starting at `time`,
    /// for `model` under `control`, with air damping rate `air_damping` (1/s). `collider_start`
    /// holds each collider's pose at the end of the previous frame ([`SubstepPlan::collider_end`]
    /// of that frame; all [`Pose::IDENTITY`] at first).
    ///
    /// # Errors
    /// [`SolverError::InvalidTimeStep`] for a frame step that is not finite and > 0,
    /// [`SolverError::InvalidSettings`] for a non-finite wind or gust,
    /// [`SolverError::InvalidPin`] for a pin on a particle that does not exist or with a
    /// non-finite target, [`SolverError::InvalidCollider`] for a placement of a collider that
    /// does not exist or a non-finite pose.
    pub fn new(
        model: &Model,
        control: &Control,
        time: f64,
        frame_dt: f32,
        substeps: u32,
        air_damping: f32,
        collider_start: &[Pose],
    ) -> Result<SubstepPlan, SolverError> {
        super::check_step_inputs(control, frame_dt)?;
        let pins = resolve_pins(control, model.particle_count())?;
        let k = model.colliders().len();
        if control.colliders.len() > k {
            return Err(SolverError::InvalidCollider {
                collider: control.colliders.len() - 1,
                message: format!("is given a motion, but the model has {k} colliders"),
            });
        }
        for (c, m) in control.colliders.iter().enumerate() {
            if let ColliderMotion::Pose(p) = m
                && !p.is_valid()
            {
                return Err(SolverError::InvalidCollider {
                    collider: c,
                    message: format!("pose {p:?} is not finite or its rotation is not a unit quaternion"),
                });
            }
        }
        let h = frame_dt / substeps as f32;
        let worlds = model.worlds().len();
        let mut world_wind = Vec::with_capacity(if worlds > 1 { worlds * substeps as usize } else { 0 });
        let mut slots = Vec::with_capacity(substeps as usize);
        let mut colliders = Vec::with_capacity(substeps as usize * k);
        for sub in 0..substeps {
            let t0 = time + (sub as f64) * h as f64;
            let t1 = t0 + h as f64;
            let frac = (sub + 1) as f32 / substeps as f32;
            slots.push(SubstepSlot { t0, wind: control.wind_at(t0), frac, one_minus_frac: 1.0 - frac });
            if worlds > 1 {
                world_wind.extend((0..worlds).map(|w| control.world_wind_at(w, t0)));
            }
            for c in 0..k {
                let start = collider_start.get(c).copied().unwrap_or(Pose::IDENTITY);
                colliders.push(match control.collider_motion(c) {
                    ColliderMotion::Rest => ColliderPlacement::REST,
                    ColliderMotion::Keyframed(m) => ColliderPlacement::between(&m.pose_at(t0), &m.pose_at(t1)),
                    ColliderMotion::Pose(end) => {
                        let a = start.interpolate(end, sub as f32 / substeps as f32);
                        ColliderPlacement::between(&a, &start.interpolate(end, frac))
                    }
                });
            }
        }
        let frame_end = time + frame_dt as f64;
        let collider_end = (0..k)
            .map(|c| match control.collider_motion(c) {
                ColliderMotion::Rest => Pose::IDENTITY,
                ColliderMotion::Keyframed(m) => m.pose_at(frame_end),
                ColliderMotion::Pose(end) => *end,
            })
            .collect();
        Ok(SubstepPlan {
            time,
            frame_dt,
            h,
            inv_h: 1.0 / h,
            inv_h2: 1.0 / (h * h),
            decay: velocity_retention(air_damping, h),
            slots,
            colliders,
            collider_end,
            pins,
            world_wind,
        })
    }

    /// The wind (m/s) of each world at the start of substep `sub`: one per world.
    pub fn winds(&self, sub: u32) -> &[Vec3] {
        if self.world_wind.is_empty() {
            std::slice::from_ref(&self.slots[sub as usize].wind)
        } else {
            let w = self.world_wind.len() / self.slots.len();
            &self.world_wind[sub as usize * w..(sub as usize + 1) * w]
        }
    }

    /// Number of substeps.
    pub fn substeps(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The collider placements of substep `sub`, one per collider.
    pub fn placements(&self, sub: u32) -> &[ColliderPlacement] {
        let k = self.collider_end.len();
        &self.colliders[sub as usize * k..(sub as usize + 1) * k]
    }
}

/// The pins of `control` for a model of `particle_count` particles: each validated, one per
/// particle (the last one given wins), in the order of their last appearance.
///
/// # Errors
/// [`SolverError::InvalidPin`] for a particle that does not exist or a non-finite target.
pub fn resolve_pins(control: &Control, particle_count: usize) -> Result<Vec<PinPath>, SolverError> {
    let n = particle_count;
    for pin in &control.pins {
        if pin.particle as usize >= n {
            return Err(SolverError::InvalidPin {
                particle: pin.particle,
                message: format!("there are only {n} particles"),
            });
        }
        if let Some(t) = pin.target
            && !t.is_finite()
        {
            return Err(SolverError::InvalidPin {
                particle: pin.particle,
                message: format!("target {t} is not finite"),
            });
        }
    }
    let mut seen = std::collections::HashSet::with_capacity(control.pins.len());
    let mut pins: Vec<PinPath> = control
        .pins
        .iter()
        .rev()
        .filter(|p| seen.insert(p.particle))
        .map(|p| PinPath { particle: p.particle, target: p.target })
        .collect();
    pins.reverse();
    Ok(pins)
}
