//! The wgpu instance, adapter, device and queue that solvers run on.

use crate::kernel::Kernels;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Errors of device creation and of building a GPU solver.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No adapter was found (no GPU, no software Vulkan driver such as Mesa's lavapipe).
    #[error("no GPU adapter: {0} (on Debian/Ubuntu, `apt-get install mesa-vulkan-drivers libvulkan1` gives a CPU one)")]
    NoAdapter(String),
    /// The adapter refused to create a device.
    #[error("could not create a device: {0}")]
    Device(String),
    /// wgpu reported a validation error while the solver's pipelines or buffers were created.
    #[error("wgpu validation: {0}")]
    Validation(String),
    /// A buffer the model needs is larger than the device allows.
    #[error("{what} needs {needed} bytes, but the device allows {limit}")]
    TooLarge {
        /// The buffer.
        what: &'static str,
        /// Bytes needed.
        needed: u64,
        /// The device's limit in bytes.
        limit: u64,
    },
    /// The settings or the model are invalid for the solver.
    #[error(transparent)]
    Solver(#[from] hooke::SolverError),
}

/// A wgpu device and its queue, shared (in an `Arc`) by every solver and renderer that uses it.
///
/// [`GpuContext::new`] reads the environment, so CI and developers can choose the backend and
/// the adapter without rebuilding: `WGPU_BACKEND` (e.g. `vulkan`, `gl`), `WGPU_ADAPTER_NAME`
/// (a substring of the adapter name) and `WGPU_POWER_PREF` (`low`/`high`). The device is
/// created with **no optional features** — no float atomics, no f64, no subgroups, no push
/// constants — so what runs on a software adapter runs on any WebGPU-class GPU (only
/// [`GpuContext::with_timestamps`], for benchmarks, adds `TIMESTAMP_QUERY`). Its limits are
/// the adapter's own, so that large models may use the large buffers a real GPU offers; the
/// kernels themselves stay within WebGPU's default limits (at most 7 storage buffers per stage,
/// 3 bind groups, 64-thread workgroups).
///
/// The context also owns what every solver on the device shares: the compiled kernels (made
/// on first use, then reused by every solver, material change and rebuild), and a count of
/// the read-backs solvers made ([`GpuContext::read_backs`]).
pub struct GpuContext {
    instance: wgpu::Instance,
    adapter: wgpu::Adapter,
    device: wgpu::Device,
    queue: wgpu::Queue,
    kernels: Mutex<Option<Arc<Kernels>>>,
    compilations: AtomicU32,
    read_backs: AtomicU64,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let info = self.adapter.get_info();
        f.debug_struct("GpuContext").field("adapter", &info.name).field("backend", &info.backend).finish()
    }
}

impl GpuContext {
    /// Creates an instance from the environment, picks an adapter with
    /// `wgpu::util::initialize_adapter_from_env_or_default` and opens a device; blocks.
    ///
    /// # Errors
    /// [`GpuError::NoAdapter`] or [`GpuError::Device`].
    pub fn new() -> Result<Arc<GpuContext>, GpuError> {
        pollster::block_on(Self::new_async()).map(Arc::new)
    }

    /// The asynchronous form of [`GpuContext::new`].
    ///
    /// # Errors
    /// As [`GpuContext::new`].
    pub async fn new_async() -> Result<GpuContext, GpuError> {
        Self::open(wgpu::Features::empty()).await
    }

    /// As [`GpuContext::new`], but with wgpu's `TIMESTAMP_QUERY` and
    /// `TIMESTAMP_QUERY_INSIDE_PASSES` features where the adapter offers them, for benchmarks
    /// that time frames or stages on the GPU
    /// ([`GpuXpbdSolver::time_frames`](crate::GpuXpbdSolver::time_frames),
    /// [`Solver::measure_stages`](hooke::Solver::measure_stages)); without them the
    /// device is the same feature-free one as [`GpuContext::new`]'s. The solver's kernels use
    /// no feature either way; [`GpuContext::has_timestamps`] says which one was made.
    ///
    /// # Errors
    /// As [`GpuContext::new`].
    pub fn with_timestamps() -> Result<Arc<GpuContext>, GpuError> {
        pollster::block_on(Self::open(Self::TIMESTAMPS)).map(Arc::new)
    }

    /// The optional features hooke can use, all for timing: `TIMESTAMP_QUERY` (frame times)
    /// and `TIMESTAMP_QUERY_INSIDE_PASSES` (stage times). A device made elsewhere — a
    /// viewer's — may ask for those of them its adapter offers.
    pub const TIMESTAMPS: wgpu::Features =
        wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);

    /// Whether the device can write GPU timestamps between the stages of a frame
    /// (`TIMESTAMP_QUERY` and `TIMESTAMP_QUERY_INSIDE_PASSES`), for
    /// [`Solver::measure_stages`](hooke::Solver::measure_stages).
    pub fn has_stage_timestamps(&self) -> bool {
        self.device.features().contains(Self::TIMESTAMPS)
    }

    /// Whether the device can write GPU timestamps (`TIMESTAMP_QUERY`; see
    /// [`GpuContext::with_timestamps`]).
    pub fn has_timestamps(&self) -> bool {
        self.device.features().contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// Opens a device with those of `wanted` that the adapter offers.
    async fn open(wanted: wgpu::Features) -> Result<GpuContext, GpuError> {
        // wgpu validates the arguments of indirect dispatches by default, in release builds too,
        // with a dispatch of its own before each; hooke's only indirect dispatches (the
        // particle contacts' list builds, `contact_lists.wgsl`) take arguments its own kernel
        // writes within the device's limits, so the check is left out here (the environment's
        // `WGPU_VALIDATION_INDIRECT_CALL=1` brings it back).
        let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
        descriptor.flags.remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
        let instance = wgpu::Instance::new(descriptor.with_env());
        let adapter = wgpu::util::initialize_adapter_from_env_or_default(&instance, None).await.map_err(|e| {
            // The environment that chose the adapter, where set: a misspelt backend reads as
            // none requested.
            let chosen: Vec<String> = ["WGPU_BACKEND", "WGPU_ADAPTER_NAME", "WGPU_POWER_PREF"]
                .iter()
                .filter_map(|k| std::env::var(k).ok().map(|v| format!("{k}={v:?}")))
                .collect();
            let by = if chosen.is_empty() { String::new() } else { format!(" (with {})", chosen.join(", ")) };
            GpuError::NoAdapter(format!("{e}{by}"))
        })?;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("hooke-gpu"),
                required_features: wanted & adapter.features(),
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::Device(e.to_string()))?;
        Ok(GpuContext::from_parts(instance, adapter, device, queue))
    }

    /// Wraps a device made elsewhere (e.g. by a viewer that also renders with it). The solver's
    /// kernels use no optional feature; the timing ones ([`GpuContext::TIMESTAMPS`]) are used
    /// where the device has them.
    pub fn from_parts(
        instance: wgpu::Instance,
        adapter: wgpu::Adapter,
        device: wgpu::Device,
        queue: wgpu::Queue,
    ) -> GpuContext {
        GpuContext {
            instance,
            adapter,
            device,
            queue,
            kernels: Mutex::new(None),
            compilations: AtomicU32::new(0),
            read_backs: AtomicU64::new(0),
        }
    }

    /// The kernels compiled for this device, compiled on the first call.
    ///
    /// # Errors
    /// [`GpuError::Validation`] if wgpu rejects a kernel (then the next call tries again).
    pub(crate) fn kernels(&self) -> Result<Arc<Kernels>, GpuError> {
        let mut cache = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = &*cache {
            return Ok(k.clone());
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let kernels = Arc::new(Kernels::compile(&self.device));
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Validation(e.to_string()));
        }
        self.compilations.fetch_add(1, Ordering::Relaxed);
        *cache = Some(kernels.clone());
        Ok(kernels)
    }

    /// How many times the kernels were compiled on this device: 1 once any solver was made,
    /// however many solvers, material changes and rebuilds followed.
    pub fn kernel_compilations(&self) -> u32 {
        self.compilations.load(Ordering::Relaxed)
    }

    /// How many buffers solvers on this device have mapped for reading (each a wait for the
    /// GPU): reads of positions, normals or tangents, health checks and frame timings.
    pub fn read_backs(&self) -> u64 {
        self.read_backs.load(Ordering::Relaxed)
    }

    /// Blocks until the device has finished all the work submitted to it (a benchmark's end
    /// of frames queued back to back; nothing is read).
    ///
    /// # Errors
    /// [`GpuError::Validation`] with wgpu's message if waiting fails (a lost device).
    pub fn wait_idle(&self) -> Result<(), GpuError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| GpuError::Validation(format!("waiting for the device: {e}")))
    }

    /// Counts one read-back (see [`GpuContext::read_backs`]).
    pub(crate) fn count_read_back(&self) {
        self.read_backs.fetch_add(1, Ordering::Relaxed);
    }

    /// The instance.
    pub fn instance(&self) -> &wgpu::Instance {
        &self.instance
    }

    /// The adapter.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The most loop iterations one shader invocation may run, in all its loops together, on
    /// this device, where the driver sets such a limit: Mesa's llvmpipe (lavapipe) ends the
    /// loops of an invocation after 65 535 iterations (`LP_MAX_TGSI_LOOP_ITERATIONS`) and
    /// carries on past them, so a longer loop silently stops short. `None` elsewhere. Kernels
    /// with loops that grow with the model (the direct rope solve) split their work to fit.
    pub fn loop_budget(&self) -> Option<u32> {
        let info = self.adapter.get_info();
        let llvmpipe = info.name.contains("llvmpipe") || info.driver.contains("llvmpipe");
        llvmpipe.then_some(65_535)
    }

    /// Whether the adapter is a software rasterizer running on the CPU (wgpu's
    /// `DeviceType::Cpu`: Mesa's lavapipe, SwiftShader, WARP), where some choices that pay on a
    /// GPU do not ([`LocalSweepMode::Auto`](crate::LocalSweepMode::Auto)).
    pub fn is_cpu(&self) -> bool {
        self.adapter.get_info().device_type == wgpu::DeviceType::Cpu
    }

    /// Adapter name, backend and device type, e.g. `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, Cpu)`.
    pub fn describe(&self) -> String {
        let i = self.adapter.get_info();
        format!("{} ({:?}, {:?})", i.name, i.backend, i.device_type)
    }
}
