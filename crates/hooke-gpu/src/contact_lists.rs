//! Verlet neighbour lists for the particle contacts on the GPU (`contact_lists.wgsl`): hooke's
//! [`hooke::collision::self_collision`] lists — each member's candidates within its contact
//! distance plus a skin s of [`SKIN_RADII`] collision radii, kept until a member has moved
//! [`LIST_REBUILD`] · s since they were built, both absolutely and relative to a reference
//! member (so a cloth falling as a whole keeps them) — so that most substeps neither build the
//! [spatial hash](crate::spatial_hash) nor walk its cells. A pair missing from the lists was at
//! least t + s apart at the build; while nobody has moved s/2 (or nobody s/2 relative to one
//! common shift) it cannot be closer than t, so the gather finds the contacts, and the
//! fixed-point sums the bits, of a hash built every substep.
//!
//! Every substep `check` (one thread per member) applies the optional speed clamp, writes the
//! member's position x⁰ + d for the list build and the gather, and flags the lists stale when
//! it has moved too far; `arm` (one thread) then writes the indirect arguments of the hash's
//! five build dispatches and of the list build: the full grids when the lists are stale,
//! empty ones otherwise (and after an overflow, below, the hash's alone). The decision never
//! leaves the device.
//!
//! A list holds at most [`LIST_CAPACITY`] candidates, stored entry-major (entry e of every
//! member side by side) so that a warp reads consecutive words. A member with more candidates
//! is counted (`StepReport::contact_list_overflows`) and gathers from the hash's cells
//! instead: nothing is dropped. A build that overflows, or lists stale within 4 substeps of
//! their build, mean a crowded or churning heap, where lists would be rebuilt (and overflow)
//! in most substeps and cost more than they save: for the next 20 substeps every member's
//! contacts come from the cells of a hash built in each, as without lists, and then lists are
//! built again; each further failure doubles the spell of cells (up to 640 substeps), and
//! lists that last bring it back to 20.
//!
//! The lists pay where the gather's cell walk sets the pace (large models); for small ones
//! their three extra dispatches per substep (`check`, `arm`, `lists`) cost more than they
//! save, so
//! [`ContactSearch::Auto`](crate::ContactSearch::Auto) turns them on from
//! [`AUTO_MEMBERS`] members.

use crate::buffers::Buffers;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};
#[cfg(doc)]
use hooke::collision::self_collision::{LIST_REBUILD, SKIN_RADII};

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "contact_lists.wgsl",
    source: crate::shaders::CONTACT_LISTS,
    entries: &["check", "arm"],
    access: &[Read, ReadWrite, Read, ReadWrite, Read, ReadWrite, ReadWrite],
    slot: false,
};

/// Candidates a member's list holds on the GPU.
pub const LIST_CAPACITY: u32 = 48;

/// Members from which [`ContactSearch::Auto`](crate::ContactSearch::Auto) uses lists.
pub const AUTO_MEMBERS: usize = 1 << 13;

/// The staleness check and the arming of the indirect build, bound to a solver's buffers.
pub(crate) struct ContactLists {
    bound: Bound,
}

impl ContactLists {
    /// Binds the kernels to the hash's buffers (`info`, `table`, `counters`), the contact
    /// kernel's `rest` and `work`, and the solver's positions and displacements.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        rest: &wgpu::Buffer,
        info: &wgpu::Buffer,
        table: &wgpu::Buffer,
        work: &wgpu::Buffer,
        counters: &wgpu::Buffer,
    ) -> ContactLists {
        let buffers = [&b.position, &b.displacement, rest, info, table, work, counters];
        ContactLists { bound: kernels.get(&SPEC).bind(device, &buffers) }
    }

    /// Records a substep's check over `members` members and the arming.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), members: u32) {
        self.bound.run(pass, 0, params, members);
        self.bound.run(pass, 1, params, 1);
    }
}
