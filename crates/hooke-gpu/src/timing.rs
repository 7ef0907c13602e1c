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

/// Queries a query set may hold (wgpu's `QUERY_SET_MAX_QUERIES`).
const MAX_QUERIES: u32 = 4096;

/// GPU timestamps between the stages of one frame, for
/// [`Solver::take_stage_times`](hooke::Solver::take_stage_times).
///
/// Needs `TIMESTAMP_QUERY` and `TIMESTAMP_QUERY_INSIDE_PASSES`. Armed, it stamps the next
/// frame recorded — one timestamp when the pass begins, one after the frame's set-up, one
/// after each stage of each substep and one at the end (normals, tangents, health) — and
/// resolves them; the frames after it are not stamped until the stamps are read, so timing
/// costs one read-back per reading and nothing per frame. A frame with more substeps than
/// the query set holds (over 680) has its last substeps counted as `other` (the last query is
/// kept for the end of the frame).
pub(crate) struct StageTimer {
    query_set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    staging: wgpu::Buffer,
    capacity: u32,
    /// The stage of the interval that ends at query k + 1, for the frame stamped.
    labels: Vec<Option<hooke::Stage>>,
    /// Substeps of the frame stamped; `None` while armed (no frame stamped yet).
    stamped: Option<u32>,
}

impl StageTimer {
    /// A timer for frames of `substeps` substeps.
    pub fn new(device: &wgpu::Device, substeps: u32) -> StageTimer {
        let capacity = (6 * substeps as u64 + 3).min(MAX_QUERIES as u64) as u32;
        let query_set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("hooke stage timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: capacity,
        });
        let size = capacity as u64 * 8;
        let buffer = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage, mapped_at_creation: false })
        };
        StageTimer {
            query_set,
            resolve: buffer(
                "hooke stage timestamp resolve",
                wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            ),
            staging: buffer(
                "hooke stage timestamp staging",
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
            capacity,
            labels: Vec::new(),
            stamped: None,
        }
    }

    /// Whether the next frame is to be stamped.
    pub fn armed(&self) -> bool {
        self.stamped.is_none()
    }

    /// Forgets the frame stamped and unread (one taken again from its start), so that the
    /// next frame is stamped in its place.
    pub fn rearm(&mut self) {
        self.labels.clear();
        self.stamped = None;
    }

    /// Writes the next timestamp into `pass`, ending an interval spent in `stage` (`None`:
    /// outside the stages; ignored for the first timestamp of the frame, which ends none).
    pub fn stamp(&mut self, pass: &mut wgpu::ComputePass<'_>, stage: Option<hooke::Stage>) {
        let k = self.labels.len() as u32;
        if k + 1 < self.capacity {
            pass.write_timestamp(&self.query_set, k);
            self.labels.push(stage);
        }
    }

    /// Writes the frame's last timestamp (the interval since the last one counts as `other`).
    pub fn stamp_end(&mut self, pass: &mut wgpu::ComputePass<'_>) {
        let k = self.labels.len() as u32;
        if k < self.capacity {
            pass.write_timestamp(&self.query_set, k);
            self.labels.push(None);
        }
    }

    /// Resolves the frame just stamped (`substeps` substeps) into the resolve buffer.
    pub fn resolve(&mut self, enc: &mut wgpu::CommandEncoder, substeps: u32) {
        let count = self.labels.len() as u32;
        if count > 0 {
            enc.resolve_query_set(&self.query_set, 0..count, &self.resolve, 0);
            self.stamped = Some(substeps);
        }
    }

    /// Waits for the stamped frame and returns its times; arms the timer again. `None` if no
    /// frame was stamped since the last reading.
    pub fn read(&mut self, ctx: &crate::GpuContext) -> Option<hooke::StageTimes> {
        let substeps = self.stamped.take()?;
        let count = self.labels.len();
        let bytes = crate::readback::read_back(ctx, &self.staging, &[(&self.resolve, count as u64 * 8)]);
        let s_per_tick = ctx.queue().get_timestamp_period() as f64 * 1e-9;
        let ticks: Vec<u64> = bytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).collect();
        let mut times = hooke::StageTimes { frames: 1, substeps, ..Default::default() };
        for (k, w) in ticks.windows(2).enumerate() {
            times.add(self.labels[k + 1], w[1].saturating_sub(w[0]) as f64 * s_per_tick);
        }
        self.labels.clear();
        Some(times)
    }
}
