//! Pipelines and dispatch: one [`Kernel`] per `.wgsl` file, compiled once per device
//! ([`Kernels`], cached by [`GpuContext`](crate::GpuContext)), and bound to one solver's
//! buffers as a [`Bound`] kernel.
//!
//! Every kernel file declares its storage buffers in `@group(0)` (one bind group per solver,
//! made when its buffers are), the per-substep [`Params`](crate::buffers::Params) in
//! `@group(1)` with a dynamic offset, and — the constraint sweeps only — a slot of their own
//! (the colour) in `@group(2)`, also with a dynamic offset. Dynamic offsets let a whole frame
//! (every substep, iteration and colour) be recorded into one compute pass with uniform values
//! that differ per dispatch, without push constants (an optional feature) and without a
//! submission per substep.
//!
//! Compiling the WGSL of all kernels takes far longer than making buffers and bind groups, so
//! it is done once per device: a material change, a rebuilt model or a second solver on the
//! same device reuses the pipelines.

use crate::buffers::{ColourSlot, Params};
use std::sync::Arc;

/// Threads per workgroup (`WORKGROUP` in `common.wgsl`).
pub(crate) const WORKGROUP: u32 = 64;
/// Largest workgroup count per dimension that every device supports.
const MAX_GROUPS: u32 = 65_535;

/// How a kernel file declares a storage buffer of `@group(0)`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Access {
    /// `var<storage, read>`.
    Read,
    /// `var<storage, read_write>`.
    ReadWrite,
}

/// A kernel file: its source, entry points, `@group(0)` storage bindings in binding order, and
/// whether it takes a slot at `@group(2)`.
#[derive(Debug)]
pub(crate) struct KernelSpec {
    pub name: &'static str,
    pub source: &'static str,
    pub entries: &'static [&'static str],
    pub access: &'static [Access],
    pub slot: bool,
}

/// The bind group layouts shared by all kernels.
pub(crate) struct SharedLayouts {
    /// `@group(1)`: [`Params`], dynamic offset.
    pub params: wgpu::BindGroupLayout,
    /// `@group(2)`: a 16-byte slot ([`ColourSlot`] and the like), dynamic offset.
    pub slot: wgpu::BindGroupLayout,
}

fn uniform_layout(device: &wgpu::Device, label: &str, size: u64) -> wgpu::BindGroupLayout {
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: true,
                min_binding_size: wgpu::BufferSize::new(size),
            },
            count: None,
        }],
    })
}

impl SharedLayouts {
    fn new(device: &wgpu::Device) -> SharedLayouts {
        SharedLayouts {
            params: uniform_layout(device, "hooke params", size_of::<Params>() as u64),
            slot: uniform_layout(device, "hooke slot", size_of::<ColourSlot>() as u64),
        }
    }

    /// A bind group for a dynamic-offset uniform binding of `size` bytes in `buffer`.
    pub fn uniform_group(
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        buffer: &wgpu::Buffer,
        size: u64,
    ) -> wgpu::BindGroup {
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: 0,
                    size: wgpu::BufferSize::new(size),
                }),
            }],
        })
    }
}

/// Creates a shader module from WGSL source.
pub(crate) fn module(device: &wgpu::Device, name: &str, source: &str) -> wgpu::ShaderModule {
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(name),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    })
}

/// The compiled pipelines of one kernel file.
pub(crate) struct Kernel {
    spec: &'static KernelSpec,
    pipelines: Vec<wgpu::ComputePipeline>,
    group_layout: wgpu::BindGroupLayout,
}

impl Kernel {
    fn compile(device: &wgpu::Device, spec: &'static KernelSpec, shared: &SharedLayouts) -> Kernel {
        let layout_entries: Vec<wgpu::BindGroupLayoutEntry> = spec
            .access
            .iter()
            .enumerate()
            .map(|(k, a)| wgpu::BindGroupLayoutEntry {
                binding: k as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: matches!(a, Access::Read) },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(spec.name),
            entries: &layout_entries,
        });
        let mut layouts = vec![Some(&group_layout), Some(&shared.params)];
        if spec.slot {
            layouts.push(Some(&shared.slot));
        }
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(spec.name),
            bind_group_layouts: &layouts,
            immediate_size: 0,
        });
        let module = module(device, spec.name, spec.source);
        // The tile sweeps (`tiles.wgsl`) take as many threads per workgroup as the device allows,
        // up to 1024: each thread of a tile sweeps fewer constraints one after another.
        let limits = device.limits();
        let tile_threads = tile_threads(&limits);
        let tile_constants = [("TILE_THREADS", tile_threads as f64)];
        // The local sweep (`local_sweep.wgsl`) as many threads (1024 measured fastest on an
        // H200: 256 worlds of a 64² cloth 5.61 ms a frame, 5.94 with 512, 8.19 with 256), and
        // tiles as large as the device's workgroup memory holds.
        let local_constants = [
            ("LOCAL_THREADS", tile_threads as f64),
            ("LOCAL_CAPACITY", crate::local_sweep::capacity(&limits).max(1) as f64),
        ];
        let pipelines = spec
            .entries
            .iter()
            .map(|&entry| {
                let constants: &[(&str, f64)] = match entry {
                    "solve_tiles" => &tile_constants,
                    "solve_local" => &local_constants,
                    _ => &[],
                };
                device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: Some(&layout),
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
                    cache: None,
                })
            })
            .collect();
        Kernel { spec, pipelines, group_layout }
    }

    /// Binds `buffers` (one per storage binding of the spec, in binding order) to `@group(0)`.
    pub fn bind(self: &Arc<Kernel>, device: &wgpu::Device, buffers: &[&wgpu::Buffer]) -> Bound {
        Bound { group: self.group(device, buffers), kernel: self.clone() }
    }

    /// A `@group(0)` bind group of `buffers` for these pipelines (for kernels that swap an
    /// input and an output buffer between dispatches: see [`Bound::run_group`]).
    pub fn group(&self, device: &wgpu::Device, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        assert_eq!(buffers.len(), self.spec.access.len(), "{}: one buffer per binding", self.spec.name);
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(k, b)| wgpu::BindGroupEntry { binding: k as u32, resource: b.as_entire_binding() })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(self.spec.name),
            layout: &self.group_layout,
            entries: &entries,
        })
    }
}

/// A kernel bound to one solver's buffers.
pub(crate) struct Bound {
    kernel: Arc<Kernel>,
    group: wgpu::BindGroup,
}

impl Bound {
    /// The kernel (for more bind groups of the same layout).
    pub fn kernel(&self) -> &Arc<Kernel> {
        &self.kernel
    }

    /// The `@group(0)` bind group it was bound with.
    pub fn group(&self) -> &wgpu::BindGroup {
        &self.group
    }

    /// Records entry point `entry` over `n` threads with the params slot `params`.
    pub fn run(&self, pass: &mut wgpu::ComputePass<'_>, entry: usize, params: (&wgpu::BindGroup, u32), n: u32) {
        self.run_groups(pass, entry, params, n.div_ceil(WORKGROUP));
    }

    /// As [`Bound::run`], over `groups` whole workgroups (of the entry point's own size)
    /// instead of a thread count.
    pub fn run_groups(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        entry: usize,
        params: (&wgpu::BindGroup, u32),
        groups: u32,
    ) {
        if groups == 0 {
            return;
        }
        pass.set_pipeline(&self.kernel.pipelines[entry]);
        pass.set_bind_group(0, &self.group, &[]);
        pass.set_bind_group(1, params.0, &[params.1]);
        dispatch_groups(pass, groups);
    }

    /// As [`Bound::run`], with the workgroup counts read by the device from `args` at `offset`
    /// (bytes; three u32: x, y, z), which an earlier dispatch may have written.
    pub fn run_indirect(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        entry: usize,
        params: (&wgpu::BindGroup, u32),
        args: &wgpu::Buffer,
        offset: u64,
    ) {
        pass.set_pipeline(&self.kernel.pipelines[entry]);
        pass.set_bind_group(0, &self.group, &[]);
        pass.set_bind_group(1, params.0, &[params.1]);
        pass.dispatch_workgroups_indirect(args, offset);
    }

    /// As [`Bound::run`], with `group` (from [`Kernel::group`]) as `@group(0)` and a slot bound
    /// to `@group(2)`.
    pub fn run_group(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        entry: usize,
        group: &wgpu::BindGroup,
        params: (&wgpu::BindGroup, u32),
        slot: (&wgpu::BindGroup, u32),
        n: u32,
    ) {
        if n == 0 {
            return;
        }
        self.bind_slot(pass, entry, group, params, slot);
        dispatch(pass, n);
    }

    /// As [`Bound::run_group`], over `groups` whole workgroups (one per tile of `tiles.wgsl`)
    /// instead of a thread count.
    pub fn run_workgroups(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        entry: usize,
        group: &wgpu::BindGroup,
        params: (&wgpu::BindGroup, u32),
        slot: (&wgpu::BindGroup, u32),
        groups: u32,
    ) {
        if groups == 0 {
            return;
        }
        self.bind_slot(pass, entry, group, params, slot);
        dispatch_groups(pass, groups);
    }

    /// Sets entry point `entry`'s pipeline and its three bind groups.
    fn bind_slot(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        entry: usize,
        group: &wgpu::BindGroup,
        params: (&wgpu::BindGroup, u32),
        slot: (&wgpu::BindGroup, u32),
    ) {
        pass.set_pipeline(&self.kernel.pipelines[entry]);
        pass.set_bind_group(0, group, &[]);
        pass.set_bind_group(1, params.0, &[params.1]);
        pass.set_bind_group(2, slot.0, &[slot.1]);
    }
}

/// Every kernel of the crate, compiled for one device.
pub(crate) struct Kernels {
    pub layouts: SharedLayouts,
    kernels: Vec<Arc<Kernel>>,
}

impl Kernels {
    /// Compiles every kernel of [`crate::shaders::KERNELS`] on `device`.
    pub fn compile(device: &wgpu::Device) -> Kernels {
        let layouts = SharedLayouts::new(device);
        let kernels =
            crate::shaders::KERNELS.iter().map(|spec| Arc::new(Kernel::compile(device, spec, &layouts))).collect();
        Kernels { layouts, kernels }
    }

    /// The compiled kernel of `spec` (found by file name).
    pub fn get(&self, spec: &KernelSpec) -> &Arc<Kernel> {
        self.kernels
            .iter()
            .find(|k| k.spec.name == spec.name)
            .unwrap_or_else(|| panic!("{} is not listed in shaders::KERNELS", spec.name))
    }
}

/// Threads per workgroup of the tile and local sweeps (`TILE_THREADS`, `LOCAL_THREADS`): as
/// many as the device allows, from 256 up to 1024.
pub(crate) fn tile_threads(limits: &wgpu::Limits) -> u32 {
    limits.max_compute_invocations_per_workgroup.min(limits.max_compute_workgroup_size_x).clamp(256, 1024)
}

/// Dispatches enough workgroups for `n` threads, spilling into y beyond 65 535 groups
/// (`thread_index` in `common.wgsl` undoes it).
fn dispatch(pass: &mut wgpu::ComputePass<'_>, n: u32) {
    dispatch_groups(pass, n.div_ceil(WORKGROUP));
}

/// Dispatches `groups` workgroups, spilling into y beyond 65 535 (then with x = 65 535
/// exactly, which `thread_index` in `common.wgsl` relies on).
fn dispatch_groups(pass: &mut wgpu::ComputePass<'_>, groups: u32) {
    let x = groups.min(MAX_GROUPS);
    let y = groups.div_ceil(x);
    pass.dispatch_workgroups(x, y, 1);
}
