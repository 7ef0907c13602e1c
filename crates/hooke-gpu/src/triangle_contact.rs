//! Contact of cloth triangles with colliders on the GPU (`triangle_contact.wgsl`): hooke's
//! [`hooke::collision::triangle_contact`] — each listed triangle's centroid and edge midpoints,
//! virtual particles, are pushed out of the colliders after the particles' own collision pass,
//! and every particle takes the mean of its share of the corrections around it. Two
//! dispatches per substep, the same operations as the CPU (bit-identical on lavapipe).

use crate::buffers::{self, Buffers};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};
use hooke::Model;
use hooke::collision::TriangleContact as Plan;
use rayon::prelude::*;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "triangle_contact.wgsl",
    source: crate::shaders::TRIANGLE_CONTACT,
    entries: &["push", "gather"],
    access: &[Read, ReadWrite, Read, Read, Read, Read, Read, ReadWrite],
    slot: false,
};

/// The kernels bound to a solver's buffers, for a model whose cloths have triangle contact.
pub(crate) struct TriangleContact {
    bound: Bound,
    slots: u32,
}

impl TriangleContact {
    /// The kernels of `model`'s triangle contact; `None` when no triangle takes part.
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers, model: &Model) -> Option<TriangleContact> {
        let plan = Plan::new(model);
        if plan.is_empty() {
            return None;
        }
        let slots = plan.triangles().len() as u32;
        let (offsets, entries) = plan.adjacency();
        // The slot count, then per slot the triangle's corners and the range of the colliders
        // of its world (that of its first corner, as on the CPU), filled in parallel.
        let mut contact = Vec::with_capacity(1 + 5 * slots as usize + offsets.len() + entries.len());
        contact.resize(1 + 5 * slots as usize, 0u32);
        contact[0] = slots;
        contact[1..].par_chunks_mut(5).zip(plan.triangles()).for_each(|(record, &t)| {
            let corners = model.triangles()[t as usize];
            let within = model.colliders_of_particle(corners[0] as usize);
            record.copy_from_slice(&[corners[0], corners[1], corners[2], within.start as u32, within.end as u32]);
        });
        contact.extend_from_slice(offsets);
        contact.extend_from_slice(entries);
        let contact = buffers::storage(device, "hooke triangle contact", &contact);
        let delta = buffers::zeroed(device, "hooke triangle contact corrections", 4 * slots as u64 * buffers::VEC4);
        let bound = kernels.get(&SPEC).bind(
            device,
            &[&b.position, &b.displacement, &b.radius, &b.colliders, &b.placements, &contact, &b.sdf, &delta],
        );
        Some(TriangleContact { bound, slots })
    }

    /// Records one substep's pass: the virtual particles' corrections, then the gather.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32) {
        self.bound.run(pass, 0, params, self.slots);
        self.bound.run(pass, 1, params, n);
    }
}
