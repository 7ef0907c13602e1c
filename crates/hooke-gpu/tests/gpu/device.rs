//! The device: every kernel compiles on it, it has no optional features, and how it rounds.

use crate::*;

#[test]
fn every_shader_compiles_on_the_device() {
    let ctx = gpu_or_skip!();
    let device = ctx.device();
    for (name, source, _) in shaders::ALL {
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let _module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(name),
            source: wgpu::ShaderSource::Wgsl((*source).into()),
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            panic!("{name}: {e}");
        }
    }
    // And a broken one is reported through the scope, not silently accepted.
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let _broken = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("broken.wgsl"),
        source: wgpu::ShaderSource::Wgsl("fn f() -> f32 { let x: u32 = 1u; return x; }".into()),
    });
    assert!(pollster::block_on(scope.pop()).is_some());
}

#[test]
fn the_device_uses_no_optional_features() {
    let ctx = gpu_or_skip!();
    assert_eq!(ctx.device().features(), wgpu::Features::empty());
}

/// How the device rounds the operations the kernels use, against the CPU: for random inputs,
/// the number of results of a·b + c (contracted into a fused multiply-add or not), a/b, √a and
/// a·b − c·d that differ from the CPU's correctly rounded ones. Prints them (lavapipe: all 0;
/// the H200: division and square root differ, by up to 2 units of rounding) and checks only
/// that the differences are rounding-sized.
#[test]
fn device_rounding_against_the_cpu() {
    let ctx = gpu_or_skip!();
    let r = rounding(&ctx);
    eprintln!(
        "{}: results differing from the CPU in {}: a·b+c {} ({} = fma), a/b {}, √a {}, a·b−c·d {} ({} = fma); \
         worst in units of rounding {:?}",
        ctx.describe(),
        r.samples,
        r.differ[0],
        r.fused[0],
        r.differ[1],
        r.differ[2],
        r.differ[3],
        r.fused[3],
        r.worst_ulp
    );
    assert!(r.worst_ulp.iter().all(|&u| u <= 4), "{:?}", r.worst_ulp);
}

/// See [`device_rounding_against_the_cpu`].
pub(crate) struct Rounding {
    samples: usize,
    differ: [usize; 4],
    fused: [usize; 4],
    worst_ulp: [u32; 4],
}

impl Rounding {
    /// Whether every operation rounded exactly as on the CPU.
    pub(crate) fn exact(&self) -> bool {
        self.differ.iter().all(|&d| d == 0)
    }
}

pub(crate) fn rounding(ctx: &GpuContext) -> Rounding {
    let r = measure_rounding(ctx);
    // Mesa's lavapipe rounds like the CPU (measured); if the probe ever says otherwise there,
    // the exactness checks that depend on it would be skipped silently: fail instead.
    if ctx.describe().contains("llvmpipe") {
        assert!(r.exact(), "lavapipe no longer rounds like the CPU: {}", ctx.describe());
    }
    r
}

fn measure_rounding(ctx: &GpuContext) -> Rounding {
    use wgpu::util::DeviceExt;
    let device = ctx.device();
    let n = 1 << 14;
    let mut seed = 7u32;
    let mut rnd = move || {
        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        (seed >> 8) as f32 / (1u32 << 24) as f32 + 0.25
    };
    let input: Vec<[f32; 4]> = (0..n).map(|_| [rnd(), rnd(), rnd() - 0.75, rnd()]).collect();
    let src = "@group(0) @binding(0) var<storage, read> v: array<vec4<f32>>;
        @group(0) @binding(1) var<storage, read_write> o: array<vec4<f32>>;
        @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
            let a = v[g.x];
            o[g.x] = vec4<f32>(a.x * a.y + a.z, a.x / a.y, sqrt(a.w), a.x * a.y - a.z * a.w);
        }";
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("rounding"),
        source: wgpu::ShaderSource::Wgsl(src.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let size = (n * 16) as u64;
    let src_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&input),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let out = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: src_buf.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: out.as_entire_binding() },
        ],
    });
    let mut enc = device.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups((n / 64) as u32, 1, 1);
    }
    enc.copy_buffer_to_buffer(&out, 0, &staging, 0, size);
    ctx.queue().submit([enc.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |r| r.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let got: Vec<[f32; 4]> = bytemuck::pod_collect_to_vec(&staging.get_mapped_range(..).unwrap());
    let (mut differ, mut fused, mut worst_ulp) = ([0usize; 4], [0usize; 4], [0u32; 4]);
    for (a, g) in input.iter().zip(&got) {
        let plain = [a[0] * a[1] + a[2], a[0] / a[1], a[3].sqrt(), a[0] * a[1] - a[2] * a[3]];
        let fma = [a[0].mul_add(a[1], a[2]), plain[1], plain[2], a[0].mul_add(a[1], -(a[2] * a[3]))];
        for k in 0..4 {
            if g[k] != plain[k] {
                differ[k] += 1;
                fused[k] += (g[k] == fma[k]) as usize;
                // In units of the rounding of the largest term, so that cancellation in a sum
                // does not inflate it.
                let scale = if k == 0 || k == 3 { (a[0] * a[1]).abs().max(plain[k].abs()) } else { plain[k].abs() };
                let ulp = ((g[k] - plain[k]).abs() / (scale * f32::EPSILON)).ceil() as u32;
                worst_ulp[k] = worst_ulp[k].max(ulp);
            }
        }
    }
    Rounding { samples: n, differ, fused, worst_ulp }
}
