//! Long-range attachments on the GPU (`tethers.wgsl`): hooke's [`hooke::tethers`], one thread
//! per tethered particle, after the constraint sets in every iteration. The tethers are built
//! on the host (`hooke::tethers::TetherCache`) when the set of pins changes, updated after a
//! tear where it cut their paths, and uploaded into the frame's command encoder, so frames
//! recorded back to back each get their own.

use crate::buffers::{self, Buffers, ColourSlot, UNIFORM_SLOT};
use crate::kernel::{Access::*, Bound, KernelSpec, Kernels, SharedLayouts};
use hooke::tethers::{Prepared, Tether, TetherCache};

/// The file's pipelines and bindings, in binding order.
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "tethers.wgsl",
    source: crate::shaders::TETHERS,
    entries: &["solve"],
    access: &[Read, ReadWrite, Read],
    slot: true,
};

/// The tether kernel bound to a solver's buffers, with room for one record per particle.
pub(crate) struct Tethers {
    bound: Bound,
    alternate: Option<wgpu::BindGroup>,
    records: wgpu::Buffer,
    slot: wgpu::Buffer,
    slot_group: wgpu::BindGroup,
    /// Tethered particles of the last upload.
    count: u32,
    /// The search behind the tethers uploaded, kept across a tear.
    cache: TetherCache,
}

impl Tethers {
    pub fn new(
        kernels: &Kernels,
        device: &wgpu::Device,
        b: &Buffers,
        n: usize,
        alternate: Option<&wgpu::Buffer>,
    ) -> Tethers {
        let records = buffers::zeroed(device, "hooke tethers", (n.max(1) * size_of::<Tether>()) as u64);
        let kernel = kernels.get(&SPEC);
        let bound = kernel.bind(device, &[&b.position, &b.displacement, &records]);
        let alternate = alternate.map(|d| kernel.group(device, &[&b.position, d, &records]));
        let slot = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hooke tether slot"),
            size: UNIFORM_SLOT,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let slot_group =
            SharedLayouts::uniform_group(device, &kernels.layouts.slot, &slot, size_of::<ColourSlot>() as u64);
        Tethers { bound, alternate, records, slot, slot_group, count: 0, cache: TetherCache::default() }
    }

    /// Rebuilds and uploads (into `encoder`) the tethers of `pins` if they differ from the
    /// last ones (other pins, a tear or a material change since).
    pub fn update(
        &mut self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        model: &hooke::Model,
        pins: &[u32],
    ) {
        let Some(tethers) = self.cache.update(model, pins) else { return };
        // The local sweep (`local_sweep.wgsl`) finds a body's records by bisection.
        debug_assert!(tethers.windows(2).all(|w| w[0].particle < w[1].particle), "tethers sorted by particle");
        crate::solver::upload(device, encoder, &self.records, bytemuck::cast_slice(&tethers));
        let slot = ColourSlot { start: 0, count: tethers.len() as u32, first: 0, _pad: 0 };
        crate::solver::upload(device, encoder, &self.slot, bytemuck::bytes_of(&slot));
        self.count = tethers.len() as u32;
    }

    /// The search behind the tethers, to carry across a rebuild ([`Tethers::carry`]).
    pub fn take_cache(&mut self) -> TetherCache {
        std::mem::take(&mut self.cache)
    }

    /// Puts back what [`Tethers::take_cache`] took (a rebuild that failed).
    pub fn put_back(&mut self, cache: TetherCache) {
        self.cache = cache;
    }

    /// Takes the search of the solver's tethers before a tear whose `parent` map made this
    /// solver's model: the next frame searches only where the tear cut paths, or takes
    /// `prepared` ([`TetherCache::prepare`]) if it asks for its pins.
    pub fn carry(&mut self, mut cache: TetherCache, parent: &[u32], prepared: Option<Prepared>) {
        cache.torn_prepared(parent, prepared);
        self.cache = cache;
    }

    /// The records' buffer and the slot group holding their count (for the local sweep).
    pub fn records(&self) -> (&wgpu::Buffer, &wgpu::BindGroup) {
        (&self.records, &self.slot_group)
    }

    /// After a material change: the next frame measures the tethers' lengths again (the
    /// slack depends on the material) from the search it has, without searching anew.
    pub fn invalidate(&mut self) {
        self.cache.material_changed();
    }

    /// Records one projection of every tether, on the main displacement buffer or the
    /// alternate one.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>, params: (&wgpu::BindGroup, u32), on_alternate: bool) {
        let group = match (&self.alternate, on_alternate) {
            (Some(g), true) => g,
            _ => self.bound.group(),
        };
        self.bound.run_group(pass, 0, group, params, (&self.slot_group, 0), self.count);
    }
}
