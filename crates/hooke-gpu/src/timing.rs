//! GPU timestamps around each frame's compute pass, for benchmarks
//! ([`GpuXpbdSolver::time_frames`](crate::GpuXpbdSolver::time_frames)).
//!
//! Needs wgpu's `TIMESTAMP_QUERY` feature, which only [`GpuContext::with_timestamps`]
//! (crate::GpuContext::with_timestamps) requests. A frame is one compute pass (see the crate
//! documentation); its `timestamp_writes` put a timestamp into query 0 when the pass begins and
//! into query 1 when it ends. After the pass the two are resolved into the frame's own
//! 256-byte slot of a resolve buffer (resolve offsets must be multiples of
//! `QUERY_RESOLVE_BUFFER_ALIGNMENT`), so the two queries are reused by every frame and frames
//! can be queued back to back without a read-back in between. The ticks are converted to time
//! with `Queue::get_timestamp_period` (ns per tick).

/// Bytes between two frames' resolved timestamps.
const STRIDE: u64 = wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT;

/// Frame timestamps being collected.
pub(crate) struct FrameTimer {
    query_set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    staging: wgpu::Buffer,
    capacity: u32,
    count: u32,
}

impl FrameTimer {
    /// A timer for up to `frames` frames (≥ 1) on a device with `TIMESTAMP_QUERY`.
    pub fn new(device: &wgpu::Device, frames: u32) -> FrameTimer {
        let frames = frames.max(1);
        let query_set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("hooke frame timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let size = frames as u64 * STRIDE;
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hooke timestamp resolve"),
            size,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("hooke timestamp staging"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        FrameTimer { query_set, resolve, staging, capacity: frames, count: 0 }
    }

    /// The timestamp writes of the next frame's pass, or `None` once `frames` have been timed.
    pub fn writes(&self) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        (self.count < self.capacity).then_some(wgpu::ComputePassTimestampWrites {
            query_set: &self.query_set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        })
    }

    /// Resolves the frame just recorded (after a pass that used [`FrameTimer::writes`]).
    pub fn resolve(&mut self, enc: &mut wgpu::CommandEncoder) {
        if self.count < self.capacity {
            enc.resolve_query_set(&self.query_set, 0..2, &self.resolve, self.count as u64 * STRIDE);
            self.count += 1;
        }
    }

    /// Waits for the timed frames and returns the GPU time of each (ms). A frame whose end
    /// tick precedes its start (a counter that wrapped or was reset) counts as 0.
    pub fn read(&self, ctx: &crate::GpuContext) -> Vec<f64> {
        if self.count == 0 {
            return Vec::new();
        }
        let size = self.count as u64 * STRIDE;
        let bytes = crate::readback::read_back(ctx, &self.staging, &[(&self.resolve, size)]);
        let ns_per_tick = ctx.queue().get_timestamp_period() as f64;
        bytes
            .chunks_exact(STRIDE as usize)
            .map(|slot| {
                let tick = |k: usize| u64::from_le_bytes(slot[8 * k..8 * k + 8].try_into().unwrap());
                tick(1).saturating_sub(tick(0)) as f64 * ns_per_tick * 1e-6
            })
            .collect()
    }
}
