//! End of a substep (`finish.wgsl`; article §3.1 step 3): v ← d/h, x⁰ ← x⁰ + d, d ← 0.
//!
//! The velocity comes from the displacement d, not from the difference of two rounded
//! positions, which is what keeps small substeps accurate in f32 (hooke's precision note).

use crate::buffers::Buffers;
use crate::kernel::{Access, SharedLayouts, Stage};

/// The finishing kernel.
pub(crate) struct Finish(Stage);

impl Finish {
    pub fn new(device: &wgpu::Device, shared: &SharedLayouts, b: &Buffers) -> Finish {
        use Access::*;
        Finish(Stage::new(
            device,
            "finish.wgsl",
            crate::shaders::FINISH,
            &["finish"],
            &[(ReadWrite, &b.position), (ReadWrite, &b.displacement), (ReadWrite, &b.velocity)],
            shared,
            false,
        ))
    }

    /// Records the end of one substep.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32) {
        self.0.run(pass, 0, params, n);
    }
}
