//! Pipelines and dispatch: one [`Stage`] per `.wgsl` file, one compute pipeline per entry point.
//!
//! Every kernel file declares its storage buffers in `@group(0)` (one bind group, made once,
//! since buffers never move), the per-substep [`Params`](crate::buffers::Params) in
//! `@group(1)` with a dynamic offset, and — the constraint sweep only — its colour in
//! `@group(2)`, also with a dynamic offset. Dynamic offsets let a whole frame (every substep,
//! iteration and colour) be recorded into one compute pass with uniform values that differ per
//! dispatch, without push constants (an optional feature) and without a submission per
//! substep.

use crate::buffers::{ColourSlot, Params};

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

/// The bind group layouts shared by all kernels.
pub(crate) struct SharedLayouts {
    /// `@group(1)`: [`Params`], dynamic offset.
    pub params: wgpu::BindGroupLayout,
    /// `@group(2)`: [`ColourSlot`], dynamic offset.
    pub colour: wgpu::BindGroupLayout,
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
    pub fn new(device: &wgpu::Device) -> SharedLayouts {
        SharedLayouts {
            params: uniform_layout(device, "hooke params", size_of::<Params>() as u64),
            colour: uniform_layout(device, "hooke colour", size_of::<ColourSlot>() as u64),
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

/// The pipelines of one kernel file with its bound storage buffers.
pub(crate) struct Stage {
    pipelines: Vec<(&'static str, wgpu::ComputePipeline)>,
    group_layout: wgpu::BindGroupLayout,
    group: wgpu::BindGroup,
}

impl Stage {
    /// Compiles `source` (a file of [`crate::shaders`]), makes one pipeline per entry point and
    /// binds the buffers of `bindings` to `@group(0)` in binding order, each declared with
    /// its access.
    pub fn new(
        device: &wgpu::Device,
        name: &str,
        source: &str,
        entries: &[&'static str],
        bindings: &[(Access, &wgpu::Buffer)],
        shared: &SharedLayouts,
        with_colour: bool,
    ) -> Stage {
        let layout_entries: Vec<wgpu::BindGroupLayoutEntry> = bindings
            .iter()
            .enumerate()
            .map(|(k, (a, _))| wgpu::BindGroupLayoutEntry {
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
        let group_layout = device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(name), entries: &layout_entries });
        let group = storage_group(device, name, &group_layout, bindings);
        let mut layouts = vec![Some(&group_layout), Some(&shared.params)];
        if with_colour {
            layouts.push(Some(&shared.colour));
        }
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(name),
            bind_group_layouts: &layouts,
            immediate_size: 0,
        });
        let module = module(device, name, source);
        let pipelines = entries
            .iter()
            .map(|&entry| {
                let p = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: Some(&layout),
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                });
                (entry, p)
            })
            .collect();
        Stage { pipelines, group_layout, group }
    }

    /// Another `@group(0)` for the same pipelines, with `bindings` in place of the ones given
    /// to [`Stage::new`] (same count and access): for kernels that swap an input and an output
    /// buffer between dispatches (ping-pong), run with [`Stage::run_group`].
    pub fn group(&self, device: &wgpu::Device, name: &str, bindings: &[(Access, &wgpu::Buffer)]) -> wgpu::BindGroup {
        storage_group(device, name, &self.group_layout, bindings)
    }

    /// As [`Stage::run`] with `group` (from [`Stage::group`]) as `@group(0)` and a colour-style
    /// slot bound to `@group(2)`.
    pub fn run_group(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        entry: usize,
        group: &wgpu::BindGroup,
        params: (&wgpu::BindGroup, u32),
        colour: (&wgpu::BindGroup, u32),
        n: u32,
    ) {
        if n == 0 {
            return;
        }
        pass.set_pipeline(&self.pipelines[entry].1);
        pass.set_bind_group(0, group, &[]);
        pass.set_bind_group(1, params.0, &[params.1]);
        pass.set_bind_group(2, colour.0, &[colour.1]);
        dispatch(pass, n);
    }

    /// Records entry point `entry` over `n` threads with the params slot at `params_offset`.
    pub fn run(&self, pass: &mut wgpu::ComputePass<'_>, entry: usize, params: (&wgpu::BindGroup, u32), n: u32) {
        if n == 0 {
            return;
        }
        pass.set_pipeline(&self.pipelines[entry].1);
        pass.set_bind_group(0, &self.group, &[]);
        pass.set_bind_group(1, params.0, &[params.1]);
        dispatch(pass, n);
    }

    /// As [`Stage::run`], with a colour slot bound to `@group(2)`.
    pub fn run_colour(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        entry: usize,
        params: (&wgpu::BindGroup, u32),
        colour: (&wgpu::BindGroup, u32),
        n: u32,
    ) {
        self.run_group(pass, entry, &self.group, params, colour, n);
    }
}

/// A bind group of storage buffers, in binding order.
fn storage_group(
    device: &wgpu::Device,
    name: &str,
    layout: &wgpu::BindGroupLayout,
    bindings: &[(Access, &wgpu::Buffer)],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = bindings
        .iter()
        .enumerate()
        .map(|(k, (_, b))| wgpu::BindGroupEntry { binding: k as u32, resource: b.as_entire_binding() })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(name), layout, entries: &entries })
}

/// Dispatches enough workgroups for `n` threads, spilling into y beyond 65 535 groups
/// (`thread_index` in `common.wgsl` undoes it).
fn dispatch(pass: &mut wgpu::ComputePass<'_>, n: u32) {
    let groups = n.div_ceil(WORKGROUP);
    let x = groups.min(MAX_GROUPS);
    let y = groups.div_ceil(x);
    pass.dispatch_workgroups(x, y, 1);
}
