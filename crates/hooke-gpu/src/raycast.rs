//! Picking on the device (`raycast.wgsl`): the nearest cloth triangle a ray hits, found by two
//! dispatches over the triangles and read back as 8 bytes — on mouse-down only, never per
//! frame. The same operations as `hooke::picking::pick` in the same order, so the CPU and the
//! GPU pick the same particle (tested on lavapipe).

use crate::buffers::Buffers;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "raycast.wgsl",
    source: crate::shaders::RAYCAST,
    entries: &["nearest", "which"],
    access: &[Read, Read, Read, ReadWrite],
    slot: false,
};

/// The ray-cast kernels and their two small buffers.
pub(crate) struct Raycast {
    bound: Bound,
    /// Origin and direction, two `vec4<f32>`.
    pub ray: wgpu::Buffer,
    /// Distance bits and triangle·4 + corner, two `u32`.
    pub hit: wgpu::Buffer,
}

impl Raycast {
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers) -> Raycast {
        let ray = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hooke ray"),
            size: 32,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let hit = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hooke ray hit"),
            size: 8,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let bound = kernels.get(&SPEC).bind(device, &[&b.position, &b.triangles, &ray, &hit]);
        Raycast { bound, ray, hit }
    }

    /// Records both passes over `triangles` triangles.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), triangles: u32) {
        self.bound.run(pass, 0, params, triangles);
        self.bound.run(pass, 1, params, triangles);
    }
}
