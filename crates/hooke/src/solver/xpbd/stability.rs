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
//! end reaches h·√(T(wᵢ + wⱼ)/L) = 1.6 in its first frames at 20 substeps and 4.9 at 1.4 s,
//! and its zigzag then grows about fivefold per frame until the run blows up (t = 1.45 s).
//! Without bending stiffness the same cable blows up in frame 4 when the count lets that
//! number reach 1.45 (and not while it stays at 1): where the analysis puts the limit.
//!
//! Cloth under Gauss–Seidel is left alone: its sweeps project each constraint at the
//! positions its neighbours have just moved, and sheets held at 20 % strain between pins
//! (`scenes/tear_pull.toml`, at numbers up to 4) have run without blowing up.
//!
//! # The rule
//!
//! The direct solver knows every segment's multiplier, and so its tension T = −λ/h² (N) while
//! stretched (λ < 0): it keeps the largest T(wᵢ + wⱼ)/L of a frame's substeps.
//! [`substeps_for_tension`] turns that into the substep count that keeps h·√(T(wᵢ + wⱼ)/L) at
//! most [`TENSION_MARGIN`] = 1 — a margin of √2 against the limit, for tension that grows
//! within the next frame — clamped to the settings' `substeps` from below and `max_substeps`
//! from above, and the next frame runs it. A frame whose own tension came above
//! [`RETRY_MARGIN`] (a load that jumped within it, or the first frame, which has no earlier one
//! to size it) is taken again from its start with the count that tension asks for. XPBD's
//! compliance is per substep (α̃ = α/h²), so the material does not change with the count; only
//! the cost does. The CPU solver applies the rule (not to a model of several worlds, whose
//! worlds would then share counts); the GPU solver runs its fixed count.
//!
//! What the rule does not cover: a 2 m cable of 201 particles of 1 g with 10 kg at its end,
//! swung from the horizontal, stretches uniformly (0.2–0.5 % along its length, 2.7 % at one
//! segment) at a fixed 40–130 substeps and stays within 0.08 % from 160 — with no zigzag
//! (neighbouring segments stay aligned within 0.1°), so not by this instability. It is not
//! explained.

/// The largest h·√(T(wᵢ + wⱼ)/L) the chosen substep count allows (the stability limit is √2).
pub const TENSION_MARGIN: f32 = 1.0;

/// A frame whose own last substep ends above this h·√(T(wᵢ + wⱼ)/L) is taken again with the
/// count its tension asks for (below the limit √2; the next frame's count keeps
/// [`TENSION_MARGIN`]).
pub const RETRY_MARGIN: f32 = 1.25;

/// The substeps a frame of `frame_dt` seconds needs so that h·√(rate2) ≤ [`TENSION_MARGIN`],
/// with `rate2` the largest T(wᵢ + wⱼ)/L (1/s²) of the frame, clamped to `substeps..=max_substeps`
/// (`substeps` when `max_substeps` is smaller).
pub fn substeps_for_tension(rate2: f32, frame_dt: f32, substeps: u32, max_substeps: u32) -> u32 {
    let need = (frame_dt * rate2.sqrt() / TENSION_MARGIN).ceil();
    let cap = max_substeps.max(substeps);
    if need.is_finite() && need > substeps as f32 { (need as u32).min(cap) } else { substeps }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_keeps_the_margin_within_its_bounds() {
        // 60 fps, ω = 5990 rad/s: h ≤ 1/5990 → 100 substeps.
        assert_eq!(substeps_for_tension(5990.0f32.powi(2), 1.0 / 60.0, 20, 1000), 100);
        assert_eq!(substeps_for_tension(5990.0f32.powi(2), 1.0 / 60.0, 20, 50), 50);
        assert_eq!(substeps_for_tension(100.0, 1.0 / 60.0, 20, 1000), 20);
        assert_eq!(substeps_for_tension(0.0, 1.0 / 60.0, 20, 1000), 20);
        assert_eq!(substeps_for_tension(f32::NAN, 1.0 / 60.0, 20, 1000), 20);
        assert_eq!(substeps_for_tension(f32::INFINITY, 1.0 / 60.0, 20, 1000), 20);
        assert_eq!(substeps_for_tension(1e12, 1.0 / 60.0, 40, 10), 40);
    }
}
