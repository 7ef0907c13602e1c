//! The tension limit on the substep: how many substeps a frame of a rope needs so that its
//! tension cannot drive a zigzag instability.
//!
//! # Why
//!
//! XPBD solves each constraint along its gradient (at the start of the substep, see
//! [`projection`](super::projection)) and so treats the force along a constraint implicitly —
//! any stiffness, any compliance, is stable. The *turning* of that force is not: a segment
//! under tension T pulls its particles back into line when one of them moves sideways, with
//! the geometric stiffness T/L (N/m), and the direct rope solver's one linearised solve per
//! iteration leaves that stiffness out of its system (Tournier, Nesme, Gilles & Faure 2015,
//! "Stable constrained dynamics", show the instability it causes in stiff chains under
//! load). For the sideways motion of a chain the update is then explicit, and its stiffest
//! mode — particles zigzagging, each pulled by its two neighbours, with
//! ω² = 4T/(mL) = 2T(wᵢ + wⱼ)/L — is stable only while ωh < 2, that is
//!
//! h · √(T (wᵢ + wⱼ) / L) < √2.
//!
//! Ropes at ordinary loads are inside this. A fine, stiff cable carrying its own weight is
//! not: a 50 m cable of 10 000 particles (0.2 kg/m, EA = 10⁶ N) released horizontally from one
//! end reaches h·√(T(wᵢ + wⱼ)/L) = 1.6 in its first frames at 20 substeps and 4.9 at
//! t = 1.40 s, and its zigzag then grows about fivefold per frame until the run blows up
//! (t = 1.45 s). Without bending stiffness it blows up sooner at 20 substeps (t = 0.42 s); with
//! the count chosen each frame to keep that number under 1.41 it blew up in frame 4, where
//! the number reached 1.45, and with the count keeping it under 1 it falls its 3 s: where the
//! analysis puts the limit.
//!
//! Cloth under Gauss–Seidel is left alone: its sweeps project each constraint at the
//! positions its neighbours have just moved, and sheets held at 20 % strain between pins
//! (`scenes/tear_pull.toml`, at numbers up to 4) have run without blowing up. Cloth under the
//! global solve ([`super::global_cloth`]) is not: its one linearised solve per iteration is the
//! direct rope solver's, and `tear_pull` under it blew up at its first tear (number ≈ 5) until
//! the rule below covered it.
//!
//! # The rule
//!
//! The direct solver knows every segment's multiplier (and every bend spring's, which it
//! solves with them), and so its tension T = −λ/h² (N) while stretched (λ < 0): it keeps the
//! largest T(wᵢ + wⱼ)/L of a frame's substeps; the global cloth solve keeps the same over every
//! distance constraint of its cloths. When it raises the count, the whole model takes
//! it — a cloth in a scene with such a rope too.
//! [`substeps_for_tension`] turns that into the substep count that keeps h·√(T(wᵢ + wⱼ)/L) at
//! most [`TENSION_MARGIN`] = 1 — a margin of √2 against the limit, for tension that grows
//! within the next frame — clamped to the settings' `substeps` from below and `max_substeps`
//! from above, and the next frame runs it. A frame whose own tension came above
//! [`RETRY_MARGIN`] (a load that jumped within it, or the first frame, which has no earlier one
//! to size it) is taken again from its start with the count that tension asks for. XPBD's
//! compliance is per substep (α̃ = α/h²), so the material does not change with the count; only
//! the cost does. The CPU solver applies the rule (not to a model of several worlds, whose
//! worlds would then share counts); the GPU solver too where it reads every frame's health
//! record, which carries the frame's tension (`hooke_gpu::applies_tension_limit`: not with
//! self-collision), with the CPU's counts and bits; otherwise it runs its fixed count.
//!
//! # The turn limit (cloth under the global solve)
//!
//! The same count also bounds how far a constraint of a globally solved cloth turns in one
//! substep. The solve takes each constraint's gradient along its pair's direction at the start
//! of the substep (as every XPBD update here does) and linearises its one solve per iteration
//! there, so a pair that turns by φ is solved along a direction φ off its own. It was first
//! made for the damping: with the rate ∇C·Δx along that start direction, a pair turning by φ
//! read as approaching by |r|(1 − cos φ) and the damping stretched it by about (τ/h)·φ²/2 — a
//! 3 × 3 paper sheet spinning in its plane at 400 rad/s kept 1.36 % residual strain at 20
//! substeps, and `scenes/tear_pull.toml`'s torn flaps, whipping at 30–40 m/s, 2–4 % in those
//! frames at any iteration count. The damping's rate is now the change of the pair's length
//! ([`projection`](super::projection)), which a turn leaves alone (the sheet: 0.04 %, as
//! undamped), and the limit stays for the linearisation: `tear_pull` keeps 0.03 % residual with
//! it and 0.21 % without, in about the same time. The global solve reports, with its tension,
//! the largest sin²φ/(h·[`TURN_MARGIN`])² of a frame's substeps (φ the largest turn of a
//! distance constraint's pair since the start of its substep, h the substep): keeping
//! h·√(rate) ≤ 1 keeps sin φ ≤ [`TURN_MARGIN`] = 0.1 (about 6°), and a frame whose pairs turned
//! by more than 1.25 × that is taken again, by the rule above. Ropes under the direct solver
//! are not covered (the whipping end of `scenes/falling_cable.toml` keeps 0.08 %).
//!
//! What the rule does not cover: a 2 m cable of 201 particles of 1 g with 10 kg at its end,
//! swung from the horizontal, stretches uniformly (0.2–0.5 % along its length, 2.7 % at one
//! segment) at a fixed 40–130 substeps and stays within 0.08 % from 160 — with no zigzag
//! (neighbouring segments stay aligned within 0.1°), so not by this instability. It is not
//! explained.

use crate::model::{BodyKind, ConstraintFamily, Model};

/// The largest h·√(T(wᵢ + wⱼ)/L) the chosen substep count allows (the stability limit is √2).
pub const TENSION_MARGIN: f32 = 1.0;

/// The largest sin φ of the turn φ of a globally solved cloth's distance constraint within
/// one substep that the chosen count allows (the turn limit, see the module documentation).
pub const TURN_MARGIN: f32 = 0.1;

/// A frame whose largest h·√(T(wᵢ + wⱼ)/L) over its substeps came above this is taken again
/// with the count its tension asks for (below the limit √2; the next frame's count keeps
/// [`TENSION_MARGIN`]).
pub const RETRY_MARGIN: f32 = 1.25;

/// The substeps a frame of `frame_dt` seconds needs so that h·√(rate2) ≤ [`TENSION_MARGIN`],
/// with `rate2` the largest T(wᵢ + wⱼ)/L (1/s²) of the frame, clamped to `substeps..=max_substeps`
/// (`substeps` when `max_substeps` is smaller): an infinite `rate2` gets the cap, NaN (a broken
/// state, which the health check reports) `substeps`.
pub fn substeps_for_tension(rate2: f32, frame_dt: f32, substeps: u32, max_substeps: u32) -> u32 {
    let need = (frame_dt * rate2.sqrt() / TENSION_MARGIN).ceil();
    let cap = max_substeps.max(substeps);
    if need.is_nan() || need <= substeps as f32 {
        substeps
    } else if need >= cap as f32 {
        cap
    } else {
        need as u32
    }
}

/// For each rope of `model` (index into [`Model::bodies`]), the substeps a frame of `frame_dt`
/// seconds needs by the tension limit when the rope hangs at rest from one end: T its whole
/// weight (N, point masses included, under its world's gravity), wᵢ + wⱼ twice the median
/// inverse mass (1/kg) of its particles (a typical segment's), L its shortest segment (m). An
/// estimate made before a run, for a solver that does not apply the limit (the GPU's): a rope
/// that swings or is pulled taut carries more.
pub fn rope_weight_substeps(model: &Model, frame_dt: f32) -> Vec<(usize, u32)> {
    let set = model.distance();
    let mut out = Vec::new();
    for (b, body) in model.bodies().iter().enumerate() {
        if body.kind != BodyKind::Rope || body.particles.is_empty() {
            continue;
        }
        let range = body.particles.start as usize..body.particles.end as usize;
        let mass: f32 = model.particle_mass()[range.clone()].iter().filter(|m| m.is_finite()).sum();
        let mut inverse: Vec<f32> = model.particle_mass()[range.clone()]
            .iter()
            .filter(|m| m.is_finite() && **m > 0.0)
            .map(|m| 1.0 / m)
            .collect();
        inverse.sort_by(f32::total_cmp);
        let w = inverse.get(inverse.len() / 2).copied().unwrap_or(0.0);
        let g = model.worlds()[model.world_of_particle(range.start) as usize].gravity.length();
        let shortest = set
            .constraints()
            .iter()
            .zip(set.families())
            .filter(|(c, f)| **f == ConstraintFamily::Structural && range.contains(&(c.i as usize)))
            .map(|(c, _)| c.rest_length)
            .fold(f32::INFINITY, f32::min);
        out.push((b, substeps_for_tension(mass * g * 2.0 * w / shortest, frame_dt, 1, u32::MAX)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 50 m cable of `scenes/falling_cable.toml` (10 000 particles, 0.2 kg/m): 98 N over 5 mm
    /// segments of 1 g needs ⌈(1/60)·√(98.1 · 2000 / 0.005)⌉ = 105 substeps at 60 fps; a light
    /// rope of 1 m and 20 particles 2; cloth is not listed.
    #[test]
    fn a_hanging_ropes_weight_sets_its_substeps() {
        use crate::model::{ClothGrid, ModelBuilder, Rope};
        use glam::Vec3;
        let mut b = ModelBuilder::new();
        let mut cable = Rope::straight("cable", Vec3::ZERO, Vec3::new(50.0, 0.0, 0.0), 10_001);
        cable.material.linear_density = 0.2;
        b.add_rope(&cable).unwrap();
        b.add_rope(&Rope::straight("light", Vec3::new(0.0, 1.0, 0.0), Vec3::new(1.0, 1.0, 0.0), 20)).unwrap();
        b.add_cloth_grid(&ClothGrid::new("cloth", 4, 4, 0.1)).unwrap();
        let model = b.finalize().unwrap();
        let need = rope_weight_substeps(&model, 1.0 / 60.0);
        let expected = ((1.0f64 / 60.0) * (0.2 * 50.0 * 9.81 * 2.0 / (0.2 * 0.005) / 0.005f64).sqrt()).ceil() as u32;
        assert_eq!(need, vec![(0, expected), (1, 2)]);
        assert_eq!(expected, 105);
    }

    #[test]
    fn the_count_keeps_the_margin_within_its_bounds() {
        // 60 fps, √(T(wᵢ + wⱼ)/L) = 5990 1/s: h ≤ 1/5990 → 100 substeps.
        assert_eq!(substeps_for_tension(5990.0f32.powi(2), 1.0 / 60.0, 20, 1000), 100);
        assert_eq!(substeps_for_tension(5990.0f32.powi(2), 1.0 / 60.0, 20, 50), 50);
        assert_eq!(substeps_for_tension(100.0, 1.0 / 60.0, 20, 1000), 20);
        assert_eq!(substeps_for_tension(0.0, 1.0 / 60.0, 20, 1000), 20);
        assert_eq!(substeps_for_tension(f32::NAN, 1.0 / 60.0, 20, 1000), 20);
        assert_eq!(substeps_for_tension(f32::INFINITY, 1.0 / 60.0, 20, 1000), 1000);
        assert_eq!(substeps_for_tension(1e12, 1.0 / 60.0, 40, 10), 40);
    }
}
