//! The time a solver spends in each [stage](super::stages) of its substeps — for a viewer's
//! "where does the frame go" panel and for profiling, switched on with
//! [`Solver::measure_stages`](super::Solver::measure_stages) and collected with
//! [`Solver::take_stage_times`](super::Solver::take_stage_times).
//!
//! The CPU solvers read the wall clock (`std::time::Instant`) between stages — about two clock
//! reads per stage and substep, about 50 ns, so a 20-substep frame pays about 6 µs (two more
//! per iteration with iterations to a tolerance, which project the colliders in each) — and
//! only while measuring. The GPU solver writes a GPU timestamp between the stages inside its frame's
//! compute pass (wgpu's `TIMESTAMP_QUERY_INSIDE_PASSES`) and reads them back on request.
//!
//! What each solver counts where:
//! - XPBD / PBD on the CPU: each stage as the [stage table](super::stages) lists it; the
//!   constraint stage includes the residual checks of `iterations = "auto"`, and the
//!   colliders stage the projections that iterations to a tolerance make after every
//!   iteration. Tether lengths,
//!   pins and collider placements set up before the first substep count as `other`.
//! - Implicit Euler: the aerodynamic forces are computed with the spring forces in one pass,
//!   so both count in `predict`, with the linear solve; there is no constraint stage.
//! - The explicit integrators fuse their stages into one pass per substep
//!   (`force_based/explicit_pass.rs`) and do not measure stages.
//! - The GPU: the time between the timestamps around each stage's dispatches; normals,
//!   tangents and the health check at the end of the frame count as `other`.

use super::Stage;
use std::time::Instant;

/// Seconds spent in each stage, summed over the substeps of the frames measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Seconds per stage, indexed like [`Stage::ORDER`] (use [`StageTimes::of`]).
    pub seconds: [f64; 6],
    /// Seconds outside the substeps' stages: the frame's set-up and, on the GPU, normals,
    /// tangents and the health check.
    pub other: f64,
    /// Frames measured.
    pub frames: u32,
    /// Substeps measured (over all the frames).
    pub substeps: u32,
}

impl StageTimes {
    /// Seconds spent in `stage`.
    pub fn of(&self, stage: Stage) -> f64 {
        self.seconds[stage.index()]
    }

    /// Seconds over every stage and `other`.
    pub fn total(&self) -> f64 {
        self.seconds.iter().sum::<f64>() + self.other
    }

    /// Adds `seconds` to `stage` (`None`: to `other`).
    pub fn add(&mut self, stage: Option<Stage>, seconds: f64) {
        match stage {
            Some(s) => self.seconds[s.index()] += seconds,
            None => self.other += seconds,
        }
    }

    /// Adds `other`'s times and counts to these.
    pub fn merge(&mut self, other: &StageTimes) {
        for (a, b) in self.seconds.iter_mut().zip(other.seconds) {
            *a += b;
        }
        self.other += other.other;
        self.frames += other.frames;
        self.substeps += other.substeps;
    }
}

/// A stopwatch that, when running, charges the time since its last lap to a stage.
pub(crate) struct Stopwatch(Option<Instant>);

impl Stopwatch {
    /// A running stopwatch if `on`, else one that does nothing.
    pub fn new(on: bool) -> Stopwatch {
        Stopwatch(on.then(Instant::now))
    }

    /// Charges the time since the last lap (or the start) to `stage` (`None`: `other`).
    pub fn lap(&mut self, times: &mut StageTimes, stage: Option<Stage>) {
        if let Some(last) = self.0 {
            let now = Instant::now();
            times.add(stage, (now - last).as_secs_f64());
            self.0 = Some(now);
        }
    }
}
