//! Prediction and pins (`predict.wgsl`; article §3.1 step 1, §5.3 "Integrate").
//!
//! Per frame, `reset_w` gives every particle its model inverse mass back and `pin_begin` sets
//! w = 0 on each pinned particle (article §3.2: a pinned particle has infinite mass and is
//! never moved by a constraint), recording where it starts. Per substep of length h:
//!
//! * `predict`: v ← v·e^{−c h} + h (g + w f_ext) and d ← h v for free particles (c the air
//!   damping rate, f_ext the limited aerodynamic force of `aerodynamics.wgsl`); d ← 0 for
//!   pinned ones;
//! * `pin_predict`: a pinned particle follows its target linearly over the frame,
//!   d = lerp(x_start, x_target, (s+1)/n) − x⁰.
//!
//! Where no pass comes between the end of one substep and the prediction of the next (no
//! aerodynamics), `finish_predict` does both in one pass over the particles — `finish.wgsl`'s
//! v = d/h, x⁰ ← x⁰ + d, then `predict` — with the same operations, so the same bits, and one
//! read and write of every particle's records fewer per substep.

use crate::buffers::Buffers;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "predict.wgsl",
    source: crate::shaders::PREDICT,
    entries: &["reset_w", "pin_begin", "predict", "pin_predict", "finish_predict"],
    access: &[ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite, Read, Read],
    slot: false,
};

/// The prediction kernels.
pub(crate) struct Predict(Bound);

impl Predict {
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers) -> Predict {
        Predict(
            kernels
                .get(&SPEC)
                .bind(device, &[&b.position, &b.displacement, &b.velocity, &b.inv_mass, &b.pins, &b.force, &b.worlds]),
        )
    }

    /// Start of a frame: masses back, pins on.
    pub fn begin_frame(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32, pins: u32) {
        self.0.run(pass, 0, params, n);
        self.0.run(pass, 1, params, pins);
    }

    /// Start of a substep: velocities and displacements predicted, pins moved.
    pub fn substep(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32, pins: u32) {
        self.0.run(pass, 2, params, n);
        self.0.run(pass, 3, params, pins);
    }

    /// End of a substep and start of the next (`params` the next one's slot): the finish and
    /// [`Predict::substep`] in one pass over the particles, then the pins moved.
    pub fn finish_and_substep(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        params: (&wgpu::BindGroup, u32),
        n: u32,
        pins: u32,
    ) {
        self.0.run(pass, 4, params, n);
        self.0.run(pass, 3, params, pins);
    }
}
