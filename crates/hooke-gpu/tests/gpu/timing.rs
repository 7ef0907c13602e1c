//! GPU frame timestamps.

use crate::*;

/// GPU frame timing: the default context has no timestamps, so `time_frames` refuses; a
/// context from `with_timestamps` (when the adapter offers `TIMESTAMP_QUERY`) times exactly
/// the frames asked for, each with a positive GPU time, and together no longer than the wall
/// time from the first submission to the read-back.
#[test]
fn frame_timestamps() {
    let ctx = gpu_or_skip!();
    let (model, control) = contact_free_scene();
    let quiet = GpuSettings { xpbd: settings(), health_interval: 0, ..GpuSettings::default() };
    let mut plain = GpuXpbdSolver::new(ctx.clone(), model.clone(), quiet).unwrap();
    assert!(!plain.time_frames(4));
    assert!(plain.read_frame_times().is_none());
    let timed_ctx = GpuContext::with_timestamps().unwrap();
    if !timed_ctx.has_timestamps() {
        eprintln!("skipped: {} offers no TIMESTAMP_QUERY", timed_ctx.describe());
        return;
    }
    assert!(timed_ctx.device().features().contains(wgpu::Features::TIMESTAMP_QUERY));
    assert_eq!(timed_ctx.device().features() - GpuContext::TIMESTAMPS, wgpu::Features::empty());
    let mut gpu = GpuXpbdSolver::new(timed_ctx.clone(), model.clone(), quiet).unwrap();
    gpu.step(&control, 1.0 / 60.0).unwrap();
    let _ = state_of(&mut gpu);
    assert!(gpu.time_frames(4));
    let t = Instant::now();
    for _ in 0..6 {
        gpu.step(&control, 1.0 / 60.0).unwrap();
    }
    let times = gpu.read_frame_times().unwrap();
    let wall = t.elapsed().as_secs_f64() * 1e3;
    eprintln!("GPU ms per frame {times:?}, wall {wall:.3} ms for 6 frames");
    assert_eq!(times.len(), 4);
    assert!(times.iter().all(|&ms| ms > 0.0 && ms.is_finite()), "{times:?}");
    assert!(times.iter().sum::<f64>() <= wall, "{times:?} vs {wall} ms");
    assert!(gpu.read_frame_times().is_none(), "timing stops after a read");
}

/// GPU stage timing: the default context cannot (`measure_stages` says so); a context with
/// timestamps inside passes stamps one frame per reading — 10 substeps counted, each stage
/// with dispatches charged, the constraint stage (4 iterations) more than the prediction, the
/// whole no longer than the wall time — reads back once per reading and has nothing more to
/// give until another frame is stepped; and the timestamps change no position.
#[test]
fn stage_timestamps() {
    let ctx = gpu_or_skip!();
    let (model, control, _) = sphere_scene();
    let s = XpbdSettings { substeps: 10, iterations: 4, ..settings() };
    let quiet = GpuSettings { xpbd: s, health_interval: 0, ..GpuSettings::default() };
    let mut plain = GpuXpbdSolver::new(ctx.clone(), model.clone(), quiet).unwrap();
    assert!(!plain.measure_stages(true), "the default context has no timestamps");
    assert!(plain.take_stage_times().is_none());
    let timed_ctx = GpuContext::with_timestamps().unwrap();
    if !timed_ctx.has_stage_timestamps() {
        eprintln!("skipped: {} offers no timestamps inside passes", timed_ctx.describe());
        return;
    }
    let mut gpu = GpuXpbdSolver::new(timed_ctx.clone(), model.clone(), quiet).unwrap();
    assert!(gpu.measure_stages(true));
    assert!(gpu.take_stage_times().is_none(), "nothing stamped yet");
    let t = Instant::now();
    for _ in 0..3 {
        gpu.step(&control, 1.0 / 60.0).unwrap();
        plain.step(&control, 1.0 / 60.0).unwrap();
    }
    let before = gpu.read_backs();
    let times = gpu.take_stage_times().expect("a frame was stamped");
    let wall = t.elapsed().as_secs_f64();
    eprintln!("{times:?}, wall {wall:.6} s for 3 frames on each of two solvers");
    assert_eq!(gpu.read_backs(), before + 1);
    assert_eq!((times.frames, times.substeps), (1, 10));
    for stage in [Stage::Predict, Stage::Constraints, Stage::Colliders, Stage::Finish] {
        assert!(times.of(stage) > 0.0, "{} not charged: {times:?}", stage.name());
    }
    assert!(times.of(Stage::Constraints) > times.of(Stage::Predict), "{times:?}");
    assert!(times.total() > 0.0 && times.total() <= wall, "{times:?}");
    assert!(gpu.take_stage_times().is_none(), "one frame per reading");
    gpu.step(&control, 1.0 / 60.0).unwrap();
    plain.step(&control, 1.0 / 60.0).unwrap();
    assert!(gpu.take_stage_times().is_some(), "armed again after a reading");
    assert_eq!(state_of(&mut gpu).particle_position, state_of(&mut plain).particle_position);
}
