//! Blow-up detection (`health.wgsl`).
//!
//! At the end of each frame one kernel flags the first particle with a non-finite position or
//! velocity and the first faster than `max_speed`, and a second the first structural
//! constraint stretched beyond `max_strain` — hooke's CPU checks. The record is 16 bytes on the device and sticky:
//! it is read back only when needed (see [`crate::GpuXpbdSolver`]), so a frame costs one extra
//! dispatch but no synchronisation.

use crate::buffers::Buffers;
use crate::kernel::{Access, SharedLayouts, Stage};

/// The health kernel.
pub(crate) struct Health(Stage);

impl Health {
    pub fn new(device: &wgpu::Device, shared: &SharedLayouts, b: &Buffers) -> Health {
        use Access::*;
        Health(Stage::new(
            device,
            "health.wgsl",
            crate::shaders::HEALTH,
            &["check", "check_strain"],
            &[
                (Read, &b.position),
                (Read, &b.velocity),
                (ReadWrite, &b.health),
                (Read, &b.constraints),
                (Read, &b.structural),
            ],
            shared,
            false,
        ))
    }

    /// Records the checks of `n` particles and `structural` structural constraints.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32, structural: u32) {
        self.0.run(pass, 0, params, n);
        self.0.run(pass, 1, params, structural);
    }
}
