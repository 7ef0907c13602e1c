//! The end-of-frame health check shared by the CPU solvers: non-finite values, runaway speed
//! and runaway strain (a simulation that blows up is reported, never written out).

use super::SolverError;
use crate::Model;
use crate::model::{ConstraintFamily, DistanceConstraint};
use glam::Vec3;
use rayon::prelude::*;

/// Limits beyond which a state counts as blown up.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Largest allowed particle speed (m/s).
    pub max_speed: f32,
    /// Largest allowed structural strain (dimensionless).
    pub max_strain: f32,
}

/// The first problem found: particle, constraint if any, and a sentence describing it.
pub(crate) type Problem = (u32, Option<usize>, String);

/// Looks for the first particle that is non-finite or faster than the limit, then for the first
/// structural constraint strained beyond the limit. `position(k)` is particle k's position,
/// `velocity` one velocity per particle, `pinned(k)` whether k is held (then the other end of a
/// strained constraint is named); `noun` names a constraint in the message ("constraint",
/// "spring").
pub(crate) fn check(
    model: &Model,
    position: impl Fn(usize) -> Vec3 + Sync,
    velocity: &[Vec3],
    pinned: impl Fn(u32) -> bool + Sync,
    limits: Limits,
    parallel: bool,
    noun: &str,
) -> Option<Problem> {
    let max_speed2 = limits.max_speed * limits.max_speed;
    let bad = |k: usize| -> Option<(usize, f32)> {
        let (x, v) = (position(k), velocity[k]);
        if !x.is_finite() || !v.is_finite() {
            return Some((k, f32::INFINITY));
        }
        let s2 = v.length_squared();
        // ‖v‖² may overflow for finite v: then report the largest component.
        let speed = if s2.is_finite() { s2.sqrt() } else { v.abs().max_element() };
        (s2 > max_speed2).then_some((k, speed))
    };
    let n = velocity.len();
    let first = if parallel { (0..n).into_par_iter().find_map_first(bad) } else { (0..n).find_map(bad) };
    if let Some((k, speed)) = first {
        let body = model.body_of_particle(k as u32).map(|b| format!(" of {:?}", b.name)).unwrap_or_default();
        let what = if speed.is_finite() {
            format!("particle {k}{body} reached {speed:.4e} m/s (limit {} m/s)", limits.max_speed)
        } else {
            format!("particle {k}{body} became non-finite")
        };
        return Some((k as u32, None, what));
    }
    let strain = |(k, (c, f)): (usize, (&DistanceConstraint, &ConstraintFamily))| -> Option<(usize, f32)> {
        if *f != ConstraintFamily::Structural {
            return None;
        }
        let e = ((position(c.i as usize) - position(c.j as usize)).length() - c.rest_length) / c.rest_length;
        (e > limits.max_strain).then_some((k, e))
    };
    let worst = if parallel {
        model
            .distance()
            .constraints()
            .par_iter()
            .zip(model.distance().families().par_iter())
            .enumerate()
            .find_map_first(strain)
    } else {
        model.distance().constraints().iter().zip(model.distance().families()).enumerate().find_map(strain)
    };
    worst.map(|(k, e)| {
        let c = model.distance().constraints()[k];
        let what = format!(
            "structural {noun} {k} (particles {}–{}) reached strain {e:.2} (limit {})",
            c.i, c.j, limits.max_strain
        );
        // Name the end that moves: a pinned particle did not start it.
        let particle = if pinned(c.i) { c.j } else { c.i };
        (particle, Some(k), what)
    })
}

/// The error for a non-finite value first seen at `particle` (and `constraint`, if known) at
/// time `time` (s); `what` says where ("in the prediction step", "while projecting …").
pub(crate) fn non_finite(
    model: &Model,
    time: f64,
    particle: u32,
    constraint: Option<usize>,
    what: String,
) -> SolverError {
    let body = model.body_of_particle(particle).map(|b| format!(" of {:?}", b.name)).unwrap_or_default();
    SolverError::BlowUp {
        time,
        particle,
        constraint,
        detail: format!("particle {particle}{body} became non-finite {what}"),
    }
}
