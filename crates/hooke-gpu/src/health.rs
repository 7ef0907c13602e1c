//! Blow-up detection (`health.wgsl`).
//!
//! At the end of each frame one kernel flags the first particle with a non-finite position or
//! velocity and the first faster than `max_speed`, and a second the first structural
//! constraint stretched beyond `max_strain` — hooke's CPU checks. The record is 16 bytes on the device and sticky:
//! it is read back only when needed (see [`crate::GpuXpbdSolver`]), so a frame costs one extra
//! dispatch but no synchronisation.

use crate::buffers::Buffers;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "health.wgsl",
    source: crate::shaders::HEALTH,
    entries: &["check", "check_strain", "check_tear"],
    access: &[Read, Read, ReadWrite, Read, Read],
    slot: false,
};

/// The health kernel.
pub(crate) struct Health(Bound);

impl Health {
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers) -> Health {
        Health(kernels.get(&SPEC).bind(device, &[&b.position, &b.velocity, &b.health, &b.constraints, &b.structural]))
    }

    /// Records the checks of `n` particles and `structural` structural constraints, and the
    /// tear check of `tearing` distance constraints (the model's count where a cloth tears,
    /// else 0).
    pub fn record(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        params: (&wgpu::BindGroup, u32),
        n: u32,
        structural: u32,
        tearing: u32,
    ) {
        self.0.run(pass, 0, params, n);
        self.0.run(pass, 1, params, structural);
        if tearing > 0 {
            self.0.run(pass, 2, params, tearing);
        }
    }
}
