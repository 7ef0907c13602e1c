//! The spatial hash of the particle contacts on the GPU (`spatial_hash.wgsl`), rebuilt every
//! substep: hooke's [`hooke::collision::spatial_hash`] with cells one contact distance wide
//! (the CPU's are two: on the CPU fewer buckets per query paid off, on the GPU fewer
//! candidates do).
//!
//! Five dispatches (four for a table of at most 16 blocks): apply the optional speed clamp and
//! count the members per bucket (atomic increments of integers); an exclusive prefix sum in
//! three (blocks of 512, the block totals in one workgroup, the add-back, which also clears the
//! counts for the next build; a small table's add-back sums the block totals itself); and the
//! scatter (atomic cursors, so in any order), which also writes each entry's point (position
//! and radius) in the table's order, for the contact kernel to stream through. The order inside
//! a bucket is not canonical, and need not be: the contact kernel sums in fixed point.

use crate::buffers::{self, Buffers};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels};
use bytemuck::{Pod, Zeroable};
use hooke::collision::spatial_hash::table_size;

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "spatial_hash.wgsl",
    source: crate::shaders::SPATIAL_HASH,
    entries: &["count", "scan_blocks", "scan_top", "scan_add", "scatter"],
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
/// body (static, kinetic).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct HashInfo {
    pub table_size: u32,
    pub member_count: u32,
    pub inv_cell: f32,
    pub max_radius: f32,
    pub block_count: u32,
    pub depenetration_speed: f32,
    pub _pad: [u32; 2],
}

/// The hash's buffers and its bound build kernels.
pub(crate) struct SpatialHash {
    bound: Bound,
    /// [`HashInfo`] and the friction of each body.
    pub info: wgpu::Buffer,
    /// start[T + 1], entries[M], members[M].
    pub table: wgpu::Buffer,
    pub constants: HashInfo,
}

impl SpatialHash {
    /// The hash of `members` (increasing particle indices, not empty; the top bit set where
    /// the body has the speed clamp) with cells of [`CELL_RADII`]·`max_radius` (m);
    /// `bodies` holds per body [μₛ, μₖ, world, 0] for the contact kernel; `rest` (rest position
    /// and radius per particle) and `work` (M corrections, then M entry points) are shared
    /// with the contact kernel.
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
    ) -> SpatialHash {
        let m = members.len() as u32;
        let t = table_size(members.len());
        let blocks = (t + 1).div_ceil(BLOCK);
        // Cells one contact distance wide: half the CPU's, so a query reads about 2.5× fewer
        // candidates (the fixed-point sum makes the order irrelevant).
        let cell = CELL_RADII * max_radius;
        let constants = HashInfo {
            table_size: t,
            member_count: m,
            inv_cell: 1.0 / cell,
            max_radius,
            block_count: blocks,
            depenetration_speed: hooke::collision::DEPENETRATION_SPEED,
            _pad: [0; 2],
        };
        let mut info: Vec<u8> = bytemuck::bytes_of(&constants).to_vec();
        info.extend_from_slice(bytemuck::cast_slice(bodies));
        let info = buffers::storage(device, "hooke hash info", &info);
        let mut table = vec![0u32; (t + 1 + m) as usize];
        table.extend_from_slice(members);
        let table = buffers::storage(device, "hooke hash table", &table);
        let counters = buffers::storage(device, "hooke hash counters", &vec![0u32; (2 * t + 1) as usize]);
        let scratch = buffers::zeroed(device, "hooke hash scratch", (4 * (2 * blocks + m)) as u64);
        let buffers = [&b.position, &b.displacement, &info, &counters, &table, &scratch, rest, work];
        let bound = kernels.get(&SPEC).bind(device, &buffers);
        SpatialHash { bound, info, table, constants }
    }

    /// Records the build of the substep's table from the current positions x⁰ + d.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32)) {
        let c = &self.constants;
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
