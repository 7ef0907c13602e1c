//! Reading device buffers back to the host — the only place a solver waits for the GPU — and
//! turning the health record into the error it means.

use crate::buffers::HealthRecord;
use crate::context::GpuContext;
use glam::Vec3;
use hooke::{Model, SolverError, State};

/// Copies the first `bytes` of each `(buffer, bytes)` pair one after another into `staging`
/// (mappable, large enough) and reads them; counts one read-back on the context.
pub(crate) fn read_back(ctx: &GpuContext, staging: &wgpu::Buffer, parts: &[(&wgpu::Buffer, u64)]) -> Vec<u8> {
    let parts: Vec<_> = parts.iter().map(|&(buf, size)| (buf, 0, size)).collect();
    read_back_at(ctx, staging, &parts)
}

/// As [`read_back`], with `(buffer, offset, bytes)` triples (offsets and sizes multiples of 4).
pub(crate) fn read_back_at(ctx: &GpuContext, staging: &wgpu::Buffer, parts: &[(&wgpu::Buffer, u64, u64)]) -> Vec<u8> {
    let (device, queue) = (ctx.device(), ctx.queue());
    let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("hooke read") });
    let mut at = 0;
    for &(buf, offset, size) in parts {
        if size > 0 {
            enc.copy_buffer_to_buffer(buf, offset, staging, at, size);
        }
        at += size;
    }
    queue.submit([enc.finish()]);
    if at == 0 {
        return Vec::new();
    }
    map(ctx, staging, at)
}

/// Maps the first `size` bytes of `buffer` for reading, waits, copies them out and unmaps;
/// counts one read-back on the context.
pub(crate) fn map(ctx: &GpuContext, buffer: &wgpu::Buffer, size: u64) -> Vec<u8> {
    ctx.count_read_back();
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, 0..size, move |r| {
        let _ = tx.send(r);
    });
    ctx.device().poll(wgpu::PollType::wait_indefinitely()).expect("wgpu poll failed");
    rx.recv().expect("map callback dropped").expect("mapping a read-back buffer failed");
    let bytes = buffer.get_mapped_range(0..size).expect("read-back buffer not mapped").to_vec();
    buffer.unmap();
    bytes
}

/// The xyz of packed `vec4<f32>` records (the bytes need not be aligned).
pub(crate) fn vec3s(bytes: &[u8]) -> impl Iterator<Item = Vec3> + '_ {
    bytes.chunks_exact(16).map(|c| {
        let f = |k: usize| f32::from_le_bytes(c[4 * k..4 * k + 4].try_into().unwrap());
        Vec3::new(f(0), f(1), f(2))
    })
}

/// The blow-up a health record reports, if any: `state` (read back after the frame) supplies
/// the speed or strain for the message, `pinned` names the pinned particles (a pinned end did
/// not start a runaway strain), `time` is the start of the frame.
pub(crate) fn blow_up(
    model: &Model,
    h: HealthRecord,
    state: &State,
    pinned: &[u32],
    limits: (f32, f32),
    time: f64,
) -> Option<SolverError> {
    let (max_speed, max_strain) = limits;
    let body = |k: u32| model.body_of_particle(k).map(|b| format!(" of {:?}", b.name)).unwrap_or_default();
    let n = model.particle_count() as u32;
    let (particle, constraint, what) = if h.nonfinite != 0 {
        let k = n - h.nonfinite;
        (k, None, format!("particle {k}{} became non-finite", body(k)))
    } else if h.too_fast != 0 {
        let k = n - h.too_fast;
        let speed = state.particle_velocity.get(k as usize).map_or(f32::NAN, |v| v.length());
        (k, None, format!("particle {k}{} reached {speed:.4e} m/s (limit {max_speed} m/s)", body(k)))
    } else if h.overstrained != 0 {
        let set = model.distance();
        let k = set.len() - h.overstrained as usize;
        let c = set.constraints()[k];
        let x = &state.particle_position;
        let strain = match (x.get(c.i as usize), x.get(c.j as usize)) {
            (Some(a), Some(b)) => ((*a - *b).length() - c.rest_length) / c.rest_length,
            _ => f32::NAN,
        };
        let what = format!(
            "structural constraint {k} (particles {}–{}) reached strain {strain:.2} (limit {max_strain})",
            c.i, c.j
        );
        // Name the end that moves, as the CPU does: a pinned particle did not start it.
        let particle = if pinned.contains(&c.i) { c.j } else { c.i };
        (particle, Some(k), what)
    } else {
        return None;
    };
    Some(SolverError::BlowUp { time, particle, constraint, detail: what })
}
