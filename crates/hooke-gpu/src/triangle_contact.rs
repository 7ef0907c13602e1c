//! Contact of cloth triangles with colliders on the GPU (`triangle_contact.wgsl`): hooke's
//! [`hooke::collision::triangle_contact`] — each listed triangle's centroid and edge midpoints,
//! virtual particles, are pushed out of the colliders after the particles' own collision pass,
//! and every particle takes the mean of its share of the corrections around it. Two
//! dispatches per substep, the same operations as the CPU (bit-identical on lavapipe).
//!
//! Where every triangle of a model of one world takes part (the usual case), the kernels read
//! the model's own triangles and its lists of the triangles around each particle, which the
//! solver's buffers already hold for the normals (`push_all`, `triangle_gather.wgsl`): nothing
//! is made or uploaded for the contact, which matters at a tear's rebuild (at 512² the
//! records and lists were 17.6 MB made on the host). Otherwise the listed triangles' records
//! and lists are made on the host ([`hooke::collision::TriangleContact`]).

use crate::buffers::{self, Buffers};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};
use hooke::Model;
use hooke::collision::TriangleContact as Plan;
use rayon::prelude::*;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "triangle_contact.wgsl",
    source: crate::shaders::TRIANGLE_CONTACT,
    entries: &["push", "gather", "push_all"],
    access: &[Read, ReadWrite, Read, Read, Read, Read, Read, ReadWrite],
    slot: false,
};

/// `triangle_gather.wgsl`'s pipeline and bindings, in binding order.
pub(crate) const GATHER: KernelSpec = KernelSpec {
    name: "triangle_gather.wgsl",
    source: crate::shaders::TRIANGLE_GATHER,
    entries: &["gather_all"],
    access: &[Read, ReadWrite, Read, Read, Read, Read],
    slot: false,
};

/// The kernels bound to a solver's buffers, for a model whose cloths have triangle contact.
pub(crate) struct TriangleContact {
    bound: Bound,
    slots: u32,
    /// The gather through the model's own lists, where every triangle takes part (then
    /// `bound` pushes with `push_all`).
    every: Option<Bound>,
}

impl TriangleContact {
    /// The kernels of `model`'s triangle contact; `None` when no triangle takes part.
    pub fn new(kernels: &Kernels, device: &wgpu::Device, b: &Buffers, model: &Model) -> Option<TriangleContact> {
        if Plan::takes_every_triangle(model) && model.worlds().len() == 1 {
            let delta = buffers::zeroed(
                device,
                "hooke triangle contact corrections",
                4 * model.triangles().len() as u64 * buffers::VEC4,
            );
            let bound = kernels.get(&SPEC).bind(
                device,
                &[&b.position, &b.displacement, &b.radius, &b.colliders, &b.placements, &b.triangles, &b.sdf, &delta],
            );
            let every = kernels.get(&GATHER).bind(
                device,
                &[
                    &b.position,
                    &b.displacement,
                    &b.triangles,
                    &delta,
                    &b.particle_triangle_offsets,
                    &b.particle_triangles,
                ],
            );
            return Some(TriangleContact { bound, slots: model.triangles().len() as u32, every: Some(every) });
        }
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
        Some(TriangleContact { bound, slots, every: None })
    }

    /// Records one substep's pass: the virtual particles' corrections, then the gather.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), n: u32) {
        match &self.every {
            Some(gather) => {
                self.bound.run(pass, 2, params, self.slots);
                gather.run(pass, 0, params, n);
            }
            None => {
                self.bound.run(pass, 0, params, self.slots);
                self.bound.run(pass, 1, params, n);
            }
        }
    }
}
