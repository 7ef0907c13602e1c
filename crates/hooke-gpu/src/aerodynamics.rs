//! Aerodynamic force (`aerodynamics.wgsl`; article §1.4).
//!
//! Each triangle with unit normal n, area A and mean vertex velocity relative to the wind
//! v_rel feels the drag F_d = −½ρC_d A |v_rel·n|(v_rel·n) n and the lift
//! F_l = −½ρC_l A ((v_rel·n)/‖v_rel‖)(‖v_rel‖² n − (v_rel·n) v_rel) of hooke's
//! `forces::aerodynamics`; a third of it, and a third of the triangle's drag rate
//! κ = ½ρA(C_d|v_rel·n| + C_l‖v_rel‖), goes to each vertex. `triangle_forces` writes one share
//! per triangle (force in xyz, rate in w), `gather` sums the shares around each particle in the
//! model's order — a gather rather than a scatter with atomics, so it needs no float atomics
//! and sums in the same order as the CPU — and limits the sum f to f / (1 + h w Σκ/3), so that
//! the predict step's velocity change never carries a particle past the wind's velocity
//! (`forces::aerodynamics::limited_force`).

use crate::buffers::Buffers;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "aerodynamics.wgsl",
    source: crate::shaders::AERODYNAMICS,
    entries: &["triangle_forces", "gather"],
    access: &[Read, Read, Read, ReadWrite, Read, Read, ReadWrite, Read],
    slot: false,
};

/// The aerodynamic kernels.
pub(crate) struct Aerodynamics(Bound);

impl Aerodynamics {
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers) -> Aerodynamics {
        Aerodynamics(kernels.get(&SPEC).bind(
            device,
            &[
                &b.position,
                &b.velocity,
                &b.triangles,
                &b.triangle_force,
                &b.particle_triangle_offsets,
                &b.particle_triangles,
                &b.force,
                &b.worlds,
            ],
        ))
    }

    /// Records the force computation for one substep.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32, triangles: u32) {
        self.0.run(pass, 0, params, triangles);
        self.0.run(pass, 1, params, n);
    }
}
