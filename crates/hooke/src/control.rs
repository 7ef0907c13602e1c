//! Per-frame inputs: wind, pins and where the colliders are.
//!
//! Pins are not part of the immutable [`Model`]: a pinned particle is given zero inverse mass
//! (w = 0, article §3.2) by the solver for as long as its pin is in the `Control`, so pins can
//! be added, moved or released (the article's "cut" button) between frames. Colliders keep
//! their shape in the model; their placement — at rest, keyframed, or set frame by frame (a
//! viewer dragging one) — is given here ([`ColliderMotion`]).

use crate::Model;
use crate::collision::{Motion, Pose};
use glam::Vec3;
use std::sync::Arc;

/// A pin: particle `particle` is held kinematically.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pin {
    /// Particle index.
    pub particle: u32,
    /// Where the particle should be at the end of the frame (m). `None` keeps it where it is.
    /// A target is reached by moving linearly over the frame's substeps.
    pub target: Option<Vec3>,
}

/// A periodic gust added to the steady wind: amplitude·sin(2π t / period).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gust {
    /// Peak gust velocity (m/s), added to and subtracted from the steady wind.
    pub amplitude: Vec3,
    /// Period (s), > 0.
    pub period: f32,
}

/// How a collider moves during a frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ColliderMotion {
    /// At its rest placement in the model. A collider switched to `Rest` from another motion
    /// is back at rest at the start of the frame (no interpolation); give it a
    /// [`Pose`](ColliderMotion::Pose) of [`Pose::IDENTITY`] to move it back over a frame.
    #[default]
    Rest,
    /// Along keyframes, sampled by the solver at the start and end of every substep.
    Keyframed(Arc<Motion>),
    /// To this pose by the end of the frame, moving linearly (and turning spherically) from
    /// where it was at the end of the previous frame — what a viewer sets while dragging.
    Pose(Pose),
}

/// Inputs to one frame of simulation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Control {
    /// Steady wind velocity (m/s), used by the aerodynamic force (article §1.4).
    pub wind: Vec3,
    /// Optional gusts on top of the steady wind; solvers evaluate them every substep.
    pub gust: Option<Gust>,
    /// Active pins.
    pub pins: Vec<Pin>,
    /// How each collider moves, indexed like [`Model::colliders`]; colliders beyond the end
    /// of the list are at rest.
    pub colliders: Vec<ColliderMotion>,
    /// In a model of several worlds ([`Model::worlds`]), the steady wind (m/s) and gust of
    /// worlds 1, 2, …: entry k − 1 for world k. Worlds beyond the end of the list blow as
    /// world 0 does ([`Control::wind`], [`Control::gust`]).
    pub world_wind: Vec<(Vec3, Option<Gust>)>,
}

impl Control {
    /// No wind, no pins.
    pub fn new() -> Control {
        Control::default()
    }

    /// Wind velocity (m/s) at time `t` (s): the steady wind plus the gust, if any.
    pub fn wind_at(&self, t: f64) -> Vec3 {
        gusty(self.wind, self.gust, t)
    }

    /// Wind velocity (m/s) of world `world` at time `t` (s) (see [`Control::world_wind`]).
    pub fn world_wind_at(&self, world: usize, t: f64) -> Vec3 {
        match world.checked_sub(1).and_then(|k| self.world_wind.get(k)) {
            Some(&(wind, gust)) => gusty(wind, gust, t),
            None => self.wind_at(t),
        }
    }

    /// Checks the wind and gust are finite (and the gust period > 0); the message names the
    /// offending value.
    pub fn validate_wind(&self) -> Result<(), String> {
        let worlds = std::iter::once((self.wind, self.gust)).chain(self.world_wind.iter().copied());
        for (k, (wind, gust)) in worlds.enumerate() {
            let of = if k == 0 { String::new() } else { format!(" of world {k}") };
            if !wind.is_finite() {
                return Err(format!("wind{of} must be finite, got {wind}"));
            }
            if let Some(g) = gust
                && !(g.amplitude.is_finite() && g.period.is_finite() && g.period > 0.0)
            {
                return Err(format!("gust{of} must have a finite amplitude and a period > 0 s, got {g:?}"));
            }
        }
        Ok(())
    }

    /// Pins particle `particle` where it is.
    pub fn pin(&mut self, particle: u32) -> &mut Self {
        self.pins.retain(|p| p.particle != particle);
        self.pins.push(Pin { particle, target: None });
        self
    }

    /// Pins particle `particle` and moves it to `target` (m) by the end of the next frame.
    pub fn pin_to(&mut self, particle: u32, target: Vec3) -> &mut Self {
        self.pins.retain(|p| p.particle != particle);
        self.pins.push(Pin { particle, target: Some(target) });
        self
    }

    /// Pins every particle whose initial position satisfies `predicate`; returns how many.
    pub fn pin_where(&mut self, model: &Model, mut predicate: impl FnMut(Vec3) -> bool) -> usize {
        let mut count = 0;
        for (k, &x) in model.particle_position().iter().enumerate() {
            if predicate(x) {
                self.pin(k as u32);
                count += 1;
            }
        }
        count
    }

    /// Releases the pin on `particle`, if any.
    pub fn release(&mut self, particle: u32) -> &mut Self {
        self.pins.retain(|p| p.particle != particle);
        self
    }

    /// Releases every pin (the article's "cut / free fall").
    pub fn release_all(&mut self) -> &mut Self {
        self.pins.clear();
        self
    }

    /// Whether `particle` is pinned.
    pub fn is_pinned(&self, particle: u32) -> bool {
        self.pins.iter().any(|p| p.particle == particle)
    }

    /// How collider `collider` moves this frame.
    pub fn collider_motion(&self, collider: usize) -> &ColliderMotion {
        const REST: ColliderMotion = ColliderMotion::Rest;
        self.colliders.get(collider).unwrap_or(&REST)
    }

    /// Moves collider `collider` to `pose` by the end of the next frame.
    pub fn move_collider(&mut self, collider: usize, pose: Pose) -> &mut Self {
        self.set_collider_motion(collider, ColliderMotion::Pose(pose))
    }

    /// Moves collider `collider` along `motion` (keyframes in scene time).
    pub fn animate_collider(&mut self, collider: usize, motion: Arc<Motion>) -> &mut Self {
        self.set_collider_motion(collider, ColliderMotion::Keyframed(motion))
    }

    /// Sets how collider `collider` moves.
    pub fn set_collider_motion(&mut self, collider: usize, motion: ColliderMotion) -> &mut Self {
        if self.colliders.len() <= collider {
            self.colliders.resize(collider + 1, ColliderMotion::Rest);
        }
        self.colliders[collider] = motion;
        self
    }
}

/// `wind` plus the gust `gust` at time `t` (s).
fn gusty(wind: Vec3, gust: Option<Gust>, t: f64) -> Vec3 {
    match gust {
        Some(g) if g.period > 0.0 => wind + g.amplitude * (std::f64::consts::TAU * t / g.period as f64).sin() as f32,
        _ => wind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gusts_add_a_sine_to_the_steady_wind() {
        let mut c = Control { wind: Vec3::new(5.0, 0.0, 0.0), ..Control::default() };
        assert_eq!(c.wind_at(1.3), c.wind);
        c.gust = Some(Gust { amplitude: Vec3::new(2.0, 0.0, 1.0), period: 2.0 });
        assert!((c.wind_at(0.5) - Vec3::new(7.0, 0.0, 1.0)).length() < 1e-6); // a quarter period: peak
        assert!((c.wind_at(1.0) - c.wind).length() < 1e-5);
        assert!((c.wind_at(1.5) - Vec3::new(3.0, 0.0, -1.0)).length() < 1e-5);
        assert!(c.validate_wind().is_ok());
        c.gust = Some(Gust { amplitude: Vec3::X, period: 0.0 });
        assert!(c.validate_wind().is_err());
    }
}
