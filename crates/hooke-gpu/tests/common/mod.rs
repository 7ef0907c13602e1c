//! What the GPU test binaries share: one device per binary, or a skip.

use hooke_gpu::GpuContext;
use std::sync::{Arc, Once, OnceLock};

/// One device per test binary, shared by the tests (libtest runs them on several threads).
/// `None` (with a printed reason) when there is no adapter; a panic with an install hint
/// instead when `HOOKE_REQUIRE_GPU=1` (CI).
pub fn gpu() -> Option<Arc<GpuContext>> {
    static GPU: OnceLock<Option<Arc<GpuContext>>> = OnceLock::new();
    GPU.get_or_init(|| {
        let _ = env_logger::builder().is_test(true).try_init();
        match GpuContext::new() {
            Ok(ctx) => {
                eprintln!("adapter: {}", ctx.describe());
                Some(ctx)
            }
            Err(e) if std::env::var("HOOKE_REQUIRE_GPU").is_ok_and(|v| v == "1") => panic!(
                "HOOKE_REQUIRE_GPU=1 but {e}\nInstall a software Vulkan driver: \
                 `apt-get install -y mesa-vulkan-drivers libvulkan1` and run with \
                 VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json WGPU_BACKEND=vulkan"
            ),
            Err(e) => {
                eprintln!("skipped: no adapter ({e})");
                None
            }
        }
    })
    .clone()
}

/// As [`gpu`], with lavapipe's work run on the thread that submits it (`LP_NUM_THREADS=0`,
/// Mesa's documented switch) unless the variable is set already; it concerns only llvmpipe
/// and lavapipe. For a test binary whose dispatches are small (the GPU binary's 10² cloths
/// and 12-particle ropes): by default llvmpipe hands every dispatch to a pool of worker
/// threads and wakes and waits on them, which there costs more than the work. On this 2-core
/// machine a 10² grid's GPU frame (10 substeps × 5 iterations) took 113 ms with the pool and
/// 25 ms without, with the same bits (`hooke bench grid:10 --backend gpu --substeps 10
/// --iterations 5`), and the GPU binary 750 s against 1 082 s (2026-12-07). A binary that runs
/// one larger cloth at a time (the bunny drop, the golden trajectories) is slower without the
/// pool (100 s against 75 s, 220 s against 184 s) and uses [`gpu`].
#[allow(dead_code)]
pub fn gpu_without_lavapipe_threads() -> Option<Arc<GpuContext>> {
    static SET: Once = Once::new();
    SET.call_once(|| {
        if std::env::var_os("LP_NUM_THREADS").is_none() {
            // SAFETY: before the first device is made (every caller passes through this
            // `Once` before `gpu`, which loads Mesa), and the other test threads read the
            // environment through std, whose lock `set_var` takes too.
            unsafe { std::env::set_var("LP_NUM_THREADS", "0") };
        }
    });
    gpu()
}

/// The shared device, or return from the test (skipped) when there is none.
#[allow(unused_macros)]
macro_rules! gpu_or_skip {
    () => {
        match common::gpu() {
            Some(g) => g,
            None => return,
        }
    };
}
