//! The spatial hash of the particle contacts on the GPU (`spatial_hash.wgsl`), rebuilt every
//! substep (with [neighbour lists](crate::contact_lists), only in the substeps that rebuild
//! them): hooke's [`hooke::collision::spatial_hash`] with cells one contact distance wide
//! (the CPU's are two: on the CPU fewer buckets per query paid off, on the GPU fewer
//! candidates do).
//!
//! Five dispatches (four for a table of at most 16 blocks): apply the optional speed clamp and
//! count the members per bucket (atomic increments of integers); an exclusive prefix sum in
//! three (blocks of 512, the block totals in one workgroup, the add-back, which also clears the
//! counts for the next build; a small table's add-back sums the block totals itself); and the
//! scatter (atomic cursors, so in any order), which also writes each entry's point (position
//! and radius) in the table's order, for the contact kernel to stream through. The order inside
//! a bucket is not canonical, and need not be: the contact kernel sums in fixed point. With
//! neighbour lists a sixth dispatch, `lists`, fills each member's list from the table.

use crate::buffers::{self, Buffers};
use crate::contact_lists::ContactLists;
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};
use bytemuck::{Pod, Zeroable};
use hooke::collision::spatial_hash::table_size;
use std::mem::offset_of;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "spatial_hash.wgsl",
    source: crate::shaders::SPATIAL_HASH,
    entries: &["count", "scan_blocks", "scan_top", "scan_add", "scatter", "lists"],
    access: &[Read, ReadWrite, Read, ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite],
    slot: false,
};

/// The GPU's cell size in units of the largest collision radius (one contact distance; the
/// CPU's cells, for its neighbour lists, are 6: `hooke::collision::self_collision::CELL_RADII`
/// plus twice the lists' skin).
pub(crate) const CELL_RADII: f32 = 2.0;

/// Tables of at most this many blocks skip the block-totals scan (`SMALL_BLOCKS` in the
/// shader): one dispatch fewer per substep for cloths of up to ≈ 4 000 particles.
const SMALL_BLOCKS: u32 = 16;

/// Counts per block of the prefix sum (`BLOCK` in the shader).
const BLOCK: u32 = 512;

/// The hash's constants; `HashInfo` in `common.wgsl`, followed there by the friction of each
/// body (static, kinetic). With neighbour lists, `args` holds the indirect arguments of the
/// build's six dispatches (x, y, z workgroups each), written by the device every substep.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct HashInfo {
    pub table_size: u32,
    pub member_count: u32,
    pub inv_cell: f32,
    pub max_radius: f32,
    pub block_count: u32,
    pub depenetration_speed: f32,
    /// The lists' skin s (m).
    pub skin: f32,
    /// (LIST_REBUILD · s)² (m²): how far a member may move before the lists are rebuilt.
    pub rebuild_limit2: f32,
    /// Candidates a member's list holds; 0 without lists.
    pub list_capacity: u32,
    /// Set by the device in substeps whose contacts come from the cells although there are
    /// lists (a spell after a build overflowed or lists went stale too soon).
    pub cells_mode: u32,
    pub _pad: [u32; 2],
    pub args: [u32; 20],
}

/// The neighbour lists asked of [`SpatialHash::new`].
pub(crate) struct ListRequest<'a> {
    /// Candidates per member.
    pub capacity: u32,
    /// The body of every particle (N).
    pub particle_body: &'a [u32],
}

/// The hash's buffers and its bound build kernels.
pub(crate) struct SpatialHash {
    bound: Bound,
    /// With neighbour lists: their staleness check and the arming of the indirect build.
    lists: Option<ContactLists>,
    /// [`HashInfo`] and the friction of each body.
    pub info: wgpu::Buffer,
    /// count[T + 1], cursor[T], then the lists' flags and tallies ([`SpatialHash::tallies`]).
    pub counters: wgpu::Buffer,
    /// start[T + 1], entries[M], members[M]; with lists, length[M] and lists[capacity·M].
    pub table: wgpu::Buffer,
    pub constants: HashInfo,
}

/// Bytes of the work buffer [`SpatialHash::new`] wants for `members` members of
/// `particle_count` particles: M corrections and M entry points; with lists, M positions at
/// the last build and N current positions.
pub(crate) fn work_bytes(members: usize, particle_count: usize, lists: bool) -> u64 {
    let vec4s = if lists { 3 * members + particle_count } else { 2 * members };
    (vec4s * 16) as u64
}

impl SpatialHash {
    /// The hash of `members` (increasing particle indices, not empty; the top bit set where
    /// the body has the speed clamp) with cells of [`CELL_RADII`]·`max_radius` (m), and
    /// neighbour lists if asked ([`ListRequest`]); `bodies` holds per body [μₛ, μₖ, world, 0] for the contact kernel; `rest`
    /// (rest position and radius per particle) and `work` (of [`work_bytes`]) are shared with
    /// the contact kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        members: &[u32],
        max_radius: f32,
        bodies: &[[f32; 4]],
        rest: &wgpu::Buffer,
        work: &wgpu::Buffer,
        lists: Option<ListRequest<'_>>,
    ) -> SpatialHash {
        use hooke::collision::self_collision::{LIST_REBUILD, SKIN_RADII};
        let m = members.len() as u32;
        let t = table_size(members.len());
        let blocks = (t + 1).div_ceil(BLOCK);
        // Cells one contact distance wide: half the CPU's, so a query reads about 2.5× fewer
        // candidates (the fixed-point sum makes the order irrelevant); a list build's query,
        // a skin wider, walks 3–4 of them per axis.
        let cell = CELL_RADII * max_radius;
        let skin = SKIN_RADII * max_radius;
        let constants = HashInfo {
            table_size: t,
            member_count: m,
            inv_cell: 1.0 / cell,
            max_radius,
            block_count: blocks,
            depenetration_speed: hooke::collision::DEPENETRATION_SPEED,
            skin,
            rebuild_limit2: (LIST_REBUILD * skin).powi(2),
            list_capacity: lists.as_ref().map_or(0, |l| l.capacity),
            cells_mode: 0,
            _pad: [0; 2],
            args: [0; 20],
        };
        let mut info: Vec<u8> = bytemuck::bytes_of(&constants).to_vec();
        info.extend_from_slice(bytemuck::cast_slice(bodies));
        let info = buffers::storage_with(device, "hooke hash info", &info, wgpu::BufferUsages::INDIRECT);
        let mut table = vec![0u32; (t + 1 + m) as usize];
        table.extend_from_slice(members);
        if let Some(l) = &lists {
            table.resize(table.len() + (m as usize) * (1 + l.capacity as usize), 0);
        }
        let table = buffers::storage(device, "hooke hash table", &table);
        // The counts and cursors; then the lists' flags (STALE: 8, no lists yet; OVERFLOW),
        // tallies (builds, members overflowed), substeps left in cells, the lists' age (none
        // yet: as old as can be) and the next spell of cells (0: the shortest).
        let mut counters = vec![0u32; (2 * t + 1) as usize];
        counters.extend_from_slice(&[8, 0, 0, 0, 0, u32::MAX, 0]);
        let counters = buffers::storage(device, "hooke hash counters", &counters);
        let mut scratch = vec![0u32; (2 * blocks + m) as usize];
        if let Some(l) = &lists {
            scratch.extend_from_slice(l.particle_body);
        }
        let scratch = buffers::storage(device, "hooke hash scratch", &scratch);
        let buffers = [&b.position, &b.displacement, &info, &counters, &table, &scratch, rest, work];
        let bound = kernels.get(&SPEC).bind(device, &buffers);
        let lists = lists.map(|_| ContactLists::new(kernels, device, b, rest, &info, &table, work, &counters));
        SpatialHash { bound, lists, info, counters, table, constants }
    }

    /// Where the lists' tallies — list builds, then members whose list overflowed, two u32
    /// summed since the hash was made — lie in [`SpatialHash::counters`] (bytes); `None`
    /// without lists.
    pub fn tallies(&self) -> Option<u64> {
        self.lists.as_ref().map(|_| 4 * (2 * self.constants.table_size as u64 + 1 + 2))
    }

    /// Records the build of the substep's table from the current positions x⁰ + d; with
    /// neighbour lists, their staleness check, then the table's build and the lists' through
    /// indirect dispatches that the check leaves empty while the lists are fresh.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32)) {
        let c = &self.constants;
        if let Some(lists) = &self.lists {
            lists.record(pass, params, c.member_count);
            let args = |slot: u64| offset_of!(HashInfo, args) as u64 + 12 * slot;
            for entry in 0..6 {
                // scan_top only runs for large tables (its arguments say so too).
                if entry == 2 && c.block_count <= SMALL_BLOCKS {
                    continue;
                }
                self.bound.run_indirect(pass, entry, params, &self.info, args(entry as u64));
            }
            return;
        }
        self.bound.run(pass, 0, params, c.member_count);
        self.bound.run(pass, 1, params, c.block_count * crate::kernel::WORKGROUP);
        // A small table's add-back sums its few block totals itself.
        if c.block_count > SMALL_BLOCKS {
            self.bound.run(pass, 2, params, crate::kernel::WORKGROUP);
        }
        self.bound.run(pass, 3, params, c.table_size + 1);
        self.bound.run(pass, 4, params, c.member_count);
    }
}
