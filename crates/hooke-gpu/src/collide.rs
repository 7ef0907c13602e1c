//! Collisions and friction (`collide.wgsl`; article §4.2–4.3, §5.3 "Collision").
//!
//! After the constraint sweeps of a substep each free particle of radius r is tested against
//! every collider's signed distance φ (plane, sphere, capsule, oriented box; φ > 0 outside).
//! Where φ(x) < r it is moved out along the normal by the depth r − φ — the projection of the
//! inequality constraint φ(x) − r ≥ 0 — and its tangential displacement relative to the
//! collider, Δxₜ, is reduced by Coulomb friction: removed entirely if ‖Δxₜ‖ < μₛ·depth
//! (static), otherwise shortened by at most μₖ·depth (kinetic, clamped so it never reverses).
//!
//! Keyframed collider motion is evaluated on the CPU (`Motion::translation_at` at the start and
//! end of each substep, in f64 time) and uploaded once per frame as one placement per
//! (substep, collider); the kernel picks its substep's row. The box uses a rotation matrix
//! where the CPU uses a quaternion, so box contacts agree with the CPU to rounding only.

use crate::buffers::Buffers;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "collide.wgsl",
    source: crate::shaders::COLLIDE,
    entries: &["collide"],
    access: &[Read, ReadWrite, Read, Read, Read, ReadWrite, Read, Read],
    slot: false,
};

/// The collision kernel.
pub(crate) struct Collide(Bound);

impl Collide {
    /// The colliders stage: its contacts of the last substep are counted in the health record.
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers) -> Collide {
        Collide::counting_into(kernels, device, b, &b.health)
    }

    /// The projection between the iterations of a substep when they iterate to a tolerance
    /// (`XpbdSettings::auto_iterations`): the same kernel, counting its contacts into a record
    /// of its own that nothing reads, so that the health record counts the colliders stage's
    /// contacts only.
    pub fn between_iterations(kernels: &Kernels, device: &wgpu::Device, b: &Buffers) -> Collide {
        let scratch = crate::buffers::zeroed(
            device,
            "hooke contacts between iterations",
            size_of::<crate::buffers::HealthRecord>() as u64,
        );
        Collide::counting_into(kernels, device, b, &scratch)
    }

    fn counting_into(kernels: &Kernels, device: &wgpu::Device, b: &Buffers, health: &wgpu::Buffer) -> Collide {
        Collide(kernels.get(&SPEC).bind(
            device,
            &[&b.position, &b.displacement, &b.radius, &b.colliders, &b.placements, health, &b.sdf, &b.worlds],
        ))
    }

    /// Records the collision pass of one substep.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32) {
        self.0.run(pass, 0, params, n);
    }
}
