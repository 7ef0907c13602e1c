//! Particle contacts (self-collision) on the GPU (`self_collision.wgsl`): hooke's
//! [`hooke::collision::self_collision`], one Jacobi pass per substep between the constraint
//! sets and the colliders (iterating to a tolerance, one between the iterations too,
//! [`SelfCollision::record_between`]). The [spatial hash](crate::spatial_hash) is rebuilt from the current
//! positions (with [neighbour lists](crate::contact_lists), only when they are stale), then one
//! thread per member sums its own correction over the candidates of its list or the hash's
//! cells (no
//! float atomics; each pair's terms computed by the CPU's operations, summed in the CPU's fixed
//! point, whose result does not depend on the order: bit-identical on a device without fused
//! multiply-add, such as lavapipe), then a second dispatch adds the corrections to the
//! displacements.

use crate::buffers::{self, Buffers};
use crate::contact_lists::{AUTO_MEMBERS, LIST_CAPACITY};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};
use crate::solver::ContactSearch;
use crate::spatial_hash::{ListRequest, SpatialHash, work_bytes};
use hooke::Model;
use hooke::collision::self_collision::contact_radii;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "self_collision.wgsl",
    source: crate::shaders::SELF_COLLISION,
    entries: &["gather", "apply", "gather_all"],
    access: &[Read, ReadWrite, Read, ReadWrite, Read, Read, ReadWrite, ReadWrite],
    slot: false,
};

/// Threads per member of the all-pairs gather (`SLICES` in the shader).
const SLICES: u32 = 16;

/// Threads per workgroup of the all-pairs gather (`ALL_PAIRS_GROUP` in the shader).
const ALL_PAIRS_GROUP: u32 = 256;

/// Members up to which [`ContactSearch::Auto`] tests all pairs instead of building the hash.
pub const ALL_PAIRS_MEMBERS: usize = 4096;

/// The contact kernels bound to a solver's buffers, with the hash they query.
pub(crate) struct SelfCollision {
    hash: SpatialHash,
    bound: Bound,
    /// The same kernels counting their contacts into a record of their own that nothing
    /// reads: the passes between the iterations of a substep when they iterate to a
    /// tolerance, so that the health record counts the contacts stage's only.
    bound_between: Bound,
    /// Every pair tested (`gather_all`): the hash's table holds the members and its
    /// constants, but is never built.
    all_pairs: bool,
    /// Each particle's tag: its body, and in the high bits its contact count of the last
    /// substep (which the next substep's pushes are shared out by).
    tag: wgpu::Buffer,
    /// The tags at the start of the frame ([`SelfCollision::save`]).
    saved_tag: wgpu::Buffer,
}

impl SelfCollision {
    /// Most bodies a model with self-collision may have on the GPU (the body index takes 20
    /// bits of a particle's tag).
    pub const MAX_BODIES: usize = 1 << 20;

    /// The contacts of `model`; `None` when no body has self-collision on. The model must have
    /// at most [`SelfCollision::MAX_BODIES`] bodies ([`check_bodies`]).
    ///
    /// `search` says where the contacts find their candidates ([`ContactSearch`]); lists too
    /// large for one storage binding of the device are left out (logged), and so is the
    /// all-pairs test where a body has the speed clamp: the cells instead, with the same
    /// contacts. `software`: the adapter is a software rasterizer
    /// ([`GpuContext::is_cpu`](crate::GpuContext::is_cpu)), where [`ContactSearch::Auto`]
    /// always takes the lists.
    pub fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        model: &Model,
        search: ContactSearch,
        software: bool,
    ) -> Option<SelfCollision> {
        let (members, max_radius) = hooke::collision::self_collision::members(model);
        if members.is_empty() {
            return None;
        }
        // Per body: its self-contacts' friction and its world (a whole number, exact in f32 up
        // to 2²⁴ worlds), whose particles are the only ones it meets.
        let mut bodies: Vec<[f32; 4]> = model
            .bodies()
            .iter()
            .map(|body| {
                let f = hooke::collision::self_collision::self_friction(body);
                [f.static_coefficient, f.kinetic_coefficient, 0.0, 0.0]
            })
            .collect();
        for (k, world) in model.worlds().iter().enumerate() {
            for body in &mut bodies[world.bodies.start as usize..world.bodies.end as usize] {
                body[2] = k as f32;
            }
        }
        // The speed clamp rides in the top bit of each member's index.
        let flagged: Vec<u32> = members
            .iter()
            .map(|&p| {
                let body = model.body_of_particle(p).expect("a member belongs to a body");
                p | if hooke::collision::self_collision::speed_clamp(body) { 1 << 31 } else { 0 }
            })
            .collect();
        // Rest position and collision radius of every particle; its body (the contact counts
        // of the last substep start at 0, in the high 12 bits).
        let rest: Vec<[f32; 4]> =
            model.particle_position().iter().zip(contact_radii(model)).map(|(x, r)| [x.x, x.y, x.z, r]).collect();
        let mut tag = vec![0u32; model.particle_count()];
        for (k, body) in model.bodies().iter().enumerate() {
            for p in body.particles.clone() {
                tag[p as usize] = k as u32;
            }
        }
        let n = model.particle_count();
        let clamped = flagged.iter().any(|&f| f >> 31 != 0);
        let mut use_lists = match search {
            ContactSearch::Auto => software || members.len() >= AUTO_MEMBERS,
            ContactSearch::Lists => true,
            ContactSearch::Cells | ContactSearch::AllPairs => false,
        };
        let all_pairs = match search {
            ContactSearch::Auto => !software && members.len() <= ALL_PAIRS_MEMBERS && !clamped,
            ContactSearch::AllPairs if clamped => {
                log::warn!(
                    "hooke-gpu: a body has the speed clamp, which the hash's build applies; the particle contacts \
                     come from the hash's cells, not all pairs"
                );
                false
            }
            ContactSearch::AllPairs => true,
            ContactSearch::Lists | ContactSearch::Cells => false,
        };
        let table_bytes = 4 * (2 * members.len() as u64 + 1) * (1 + LIST_CAPACITY as u64);
        let limit = device.limits().max_storage_buffer_binding_size;
        if use_lists && (table_bytes > limit || work_bytes(members.len(), n, true) > limit) {
            log::warn!(
                "hooke-gpu: the particle contacts' neighbour lists of {} members exceed the device's {limit}-byte \
                 storage binding; the contacts come from the hash's cells",
                members.len()
            );
            use_lists = false;
        }
        let list_request = use_lists.then(|| ListRequest { capacity: LIST_CAPACITY, particle_body: &tag });
        let rest = buffers::storage(device, "hooke contact rest", &rest);
        let correction = buffers::zeroed(device, "hooke contact work", work_bytes(members.len(), n, use_lists));
        let hash =
            SpatialHash::new(kernels, device, b, &flagged, max_radius, &bodies, &rest, &correction, list_request);
        let tag = buffers::storage(device, "hooke contact tag", &tag);
        let bound = kernels.get(&SPEC).bind(
            device,
            &[&b.position, &b.displacement, &rest, &tag, &hash.info, &hash.table, &correction, &b.health],
        );
        let scratch = buffers::zeroed(
            device,
            "hooke particle contacts between iterations",
            size_of::<buffers::HealthRecord>() as u64,
        );
        let bound_between = kernels
            .get(&SPEC)
            .bind(device, &[&b.position, &b.displacement, &rest, &tag, &hash.info, &hash.table, &correction, &scratch]);
        let saved_tag = buffers::zeroed(device, "hooke contact tag at the frame's start", tag.size());
        Some(SelfCollision { hash, bound, bound_between, all_pairs, tag, saved_tag })
    }

    /// Records a copy of the tags (the contact counts of the last substep), with the frame's
    /// snapshot of positions and velocities, so that a frame taken again
    /// ([`SelfCollision::restore`]) shares its first substep's pushes out as the first attempt
    /// did.
    pub fn save(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.copy_buffer_to_buffer(&self.tag, 0, &self.saved_tag, 0, self.tag.size());
    }

    /// Records the tags' copy back ([`SelfCollision::save`]).
    pub fn restore(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.copy_buffer_to_buffer(&self.saved_tag, 0, &self.tag, 0, self.tag.size());
    }

    /// Where these contacts find their candidates: [`ContactSearch::AllPairs`],
    /// [`ContactSearch::Lists`] or [`ContactSearch::Cells`] (never `Auto`).
    pub fn search(&self) -> ContactSearch {
        if self.all_pairs {
            ContactSearch::AllPairs
        } else if self.hash.tallies().is_some() {
            ContactSearch::Lists
        } else {
            ContactSearch::Cells
        }
    }

    /// The buffer and byte offset of the neighbour lists' tallies (list builds, then members
    /// whose list overflowed: two u32 summed since these contacts were made); `None` without
    /// lists.
    pub fn list_tallies(&self) -> Option<(&wgpu::Buffer, u64)> {
        self.hash.tallies().map(|at| (&self.hash.counters, at))
    }

    /// Records the contacts of one substep: the hash's build (with lists: their check, and the
    /// build when they are stale) and the gather, or the all-pairs gather; then the apply.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32)) {
        self.record_with(&self.bound, pass, params);
    }

    /// [`SelfCollision::record`] between the iterations of a substep (iterating to a
    /// tolerance): the same passes, their contacts not counted in the health record.
    pub fn record_between(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32)) {
        self.record_with(&self.bound_between, pass, params);
    }

    fn record_with(&self, bound: &Bound, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32)) {
        let m = self.hash.constants.member_count;
        if self.all_pairs {
            bound.run_groups(pass, 2, params, m.div_ceil(ALL_PAIRS_GROUP / SLICES));
        } else {
            self.hash.record(pass, params);
            bound.run(pass, 0, params, m);
        }
        bound.run(pass, 1, params, m);
    }
}

/// Refuses a model with self-collision and more bodies than the GPU's contact kernels can tell
/// apart ([`SelfCollision::MAX_BODIES`]).
pub(crate) fn check_bodies(model: &Model) -> Result<(), hooke::SolverError> {
    let on = model.bodies().iter().any(|b| b.self_collision());
    if on && model.bodies().len() > SelfCollision::MAX_BODIES {
        return Err(hooke::SolverError::InvalidSettings {
            setting: "backend",
            message: format!(
                "the model has {} bodies and self-collision: the GPU tells at most {} bodies apart; use the CPU backend",
                model.bodies().len(),
                SelfCollision::MAX_BODIES
            ),
        });
    }
    Ok(())
}
