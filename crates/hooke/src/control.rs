//! Per-frame inputs: wind and pins.
//!
//! Pins are not part of the immutable [`Model`]: a pinned particle is given zero inverse mass
//! (w = 0, article §3.2) by the solver for as long as its pin is in the `Control`, so pins can
//! be added, moved or released (the article's "cut" button) between frames.

use crate::Model;
use glam::Vec3;

/// A pin: particle `particle` is held kinematically.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pin {
    /// Particle index.
    pub particle: u32,
    /// Where the particle should be at the end of the frame (m). `None` keeps it where it is.
    /// A target is reached by moving linearly over the frame's substeps.
    pub target: Option<Vec3>,
}

/// Inputs to one frame of simulation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Control {
    /// Wind velocity (m/s), used by the aerodynamic force (article §1.4).
    pub wind: Vec3,
    /// Active pins.
    pub pins: Vec<Pin>,
}

impl Control {
    /// No wind, no pins.
    pub fn new() -> Control {
        Control::default()
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
}
