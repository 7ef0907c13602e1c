//! What the GPU test binaries share: one device per binary, or a skip.

use hooke_gpu::GpuContext;
use std::sync::{Arc, OnceLock};

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
