//! End of a substep (`finish.wgsl`; article §3.1 step 3): v ← d/h, x⁰ ← x⁰ + d, d ← 0.
//!
//! The velocity comes from the displacement d, not from the difference of two rounded
//! positions, which is what keeps small substeps accurate in f32 (hooke's precision note).

use crate::buffers::Buffers;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "finish.wgsl",
    source: crate::shaders::FINISH,
    entries: &["finish"],
    access: &[ReadWrite, ReadWrite, ReadWrite],
    slot: false,
};

/// The finishing kernel.
pub(crate) struct Finish(Bound);

impl Finish {
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers) -> Finish {
        Finish(kernels.get(&SPEC).bind(device, &[&b.position, &b.displacement, &b.velocity]))
    }

    /// Records the end of one substep.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32) {
        self.0.run(pass, 0, params, n);
    }
}
