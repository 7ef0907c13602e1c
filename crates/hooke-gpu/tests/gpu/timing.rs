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
    assert_eq!(timed_ctx.device().features(), wgpu::Features::TIMESTAMP_QUERY);
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
