//! # hooke-viewer — an interactive window on a hooke scene
//!
//! A native window (eframe/egui on wgpu) that plays a scene live: the 3D view is
//! [`hooke_render`]'s off-screen image shown as an egui texture, drawn on the same wgpu device
//! the GPU solver runs on — eframe creates the device with the adapter's own limits and
//! hooke-gpu's context is made from eframe's render state ([`hooke_gpu::GpuContext::from_parts`]),
//! so a GPU run is drawn from the solver's buffers with no copy and no read-back per frame (its
//! health record is read once per 10 s of simulated time). Controls: play, pause, single
//! step, reset, snapshot and restore, the CPU or GPU backend, substeps and iterations, the
//! cloth's stretch stiffness, bending modulus and damping (live, through
//! [`hooke::Solver::notify_model_changed`]), the wind, frame time and FPS, the time per
//! solver stage ([`hooke::Solver::measure_stages`]: wall time on the CPU, GPU timestamps on the
//! GPU, read twice a second while shown), a screenshot, and
//! an orbit camera; a drag on the cloth pulls the particle under the pointer
//! ([`Simulation::pick`]: the GPU's ray-cast kernel or [`hooke::picking`], the same
//! operations; the particle is pinned to the pointer through a `Control` target); a drag on a
//! collider moves it ([`Simulation::pick_collider`], sphere tracing its signed distance on the
//! host; [`Simulation::place_collider`] moves it through `Control::move_collider`, so the
//! solver sweeps it and pushes the cloth); a scene whose cloth has a tear strain or tear energy tears as it
//! plays, Shift + drag cuts the cloth along the stroke and C straight across
//! ([`Simulation::cut`], `hooke::tearing`; the renderer is made again for the torn model; a
//! scene that tears reads its state back after a frame only where a cut is due or the solver
//! could not rule a tear out — on the GPU, a check of every constraint on the device, read with
//! the health record after each frame); the keyboard shortcuts are in
//! [`app::SHORTCUTS`].
#![warn(missing_docs)]

pub mod app;
pub mod demos;
pub mod integrators;
pub mod orbit;
pub mod sim;

pub use app::ViewerApp;
pub use demos::Demo;
pub use sim::{Backend, Simulation};

use eframe::egui_wgpu;
use hooke_io::scene::Scene;
use std::sync::Arc;

pub use eframe;

/// eframe's options for the viewer: a 1280 × 800 window on wgpu, the device asked for with
/// the adapter's own limits ([`ask_adapter_limits`]).
pub fn native_options(title: &str) -> eframe::NativeOptions {
    let mut options = eframe::NativeOptions {
        viewport: eframe::egui::ViewportBuilder::default().with_inner_size([1280.0, 800.0]).with_title(title),
        ..Default::default()
    };
    ask_adapter_limits(&mut options.wgpu_options.wgpu_setup);
    options
}

/// Makes `setup` ask for the adapter's own limits, as hooke-gpu does (egui's default asks for
/// wgpu's defaults, with which the solver's kernels — more storage buffers per stage — or
/// large models do not fit), and for the timestamp features the adapter offers
/// ([`hooke_gpu::GpuContext::TIMESTAMPS`]), with which the panel shows the GPU time per stage.
pub fn ask_adapter_limits(setup: &mut egui_wgpu::WgpuSetup) {
    if let egui_wgpu::WgpuSetup::CreateNew(setup) = setup {
        setup.device_descriptor = Arc::new(|adapter| wgpu::DeviceDescriptor {
            label: Some("hooke viewer"),
            required_features: adapter.features() & hooke_gpu::GpuContext::TIMESTAMPS,
            required_limits: adapter.limits(),
            ..Default::default()
        });
    }
}

/// `message` without the source file and line that winit's OS errors carry ("os error at
/// /root/.cargo/registry/…/mod.rs:788: Failed to open …" becomes "Failed to open …").
fn without_source_path(message: &str) -> String {
    const AT: &str = "os error at ";
    let Some(i) = message.find(AT) else { return message.to_string() };
    let rest = &message[i + AT.len()..];
    match rest.find(".rs:").and_then(|j| rest[j..].find(": ").map(|k| j + k + 2)) {
        Some(k) => format!("{}{}", &message[..i], &rest[k..]),
        None => message.to_string(),
    }
}

/// Opens the viewer window on `scene` and returns when it is closed — or, with `frames`, once
/// that many frames are simulated, or the simulation stops on an error before.
///
/// # Errors
/// When no window or wgpu device can be made, or the scene's solver cannot be made; with
/// `frames`, the error that stopped the simulation before it (a blow-up, a tear that could not
/// be made).
pub fn run(scene: Scene, demo: Option<Demo>, backend: Backend, frames: Option<u64>) -> anyhow::Result<()> {
    let title = format!("hooke — {}", scene.name);
    let failure = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = failure.clone();
    eframe::run_native(
        &title,
        native_options(&title),
        Box::new(move |cc| {
            let mut app = ViewerApp::new(cc, scene, backend)
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { format!("{e:#}").into() })?;
            if let Some(n) = frames {
                app.quit_after(n, Some(slot));
            }
            if let Some(d) = demo {
                app.set_demo(d);
            }
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| {
        // Without a display (a server, CI) say how to get one, or how to do without.
        // (A variable set to nothing counts as unset, as winit takes it.)
        let set = |v: &str| std::env::var_os(v).is_some_and(|s| !s.is_empty());
        let headless =
            cfg!(target_os = "linux") && ["DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET"].iter().all(|v| !set(v));
        let hint = if headless {
            " (no display: run the viewer under a virtual one, `xvfb-run -a hooke view …`, or draw pictures \
             without a window with `hooke render`)"
                .to_string()
        } else {
            let hint = "run under a virtual display, `xvfb-run -a hooke view …`, or draw pictures without a window \
                        with `hooke render`";
            match std::env::var_os("DISPLAY") {
                Some(d) if e.to_string().contains("X server") => {
                    format!(" (DISPLAY={:?}: no X server answers there; check DISPLAY, or {hint})", d.to_string_lossy())
                }
                _ if e.to_string().contains("wayland") => format!(" (no Wayland compositor answers; {hint})"),
                _ => String::new(),
            }
        };
        anyhow::anyhow!("the viewer window: {}{hint}", without_source_path(&e.to_string()))
    })?;
    match failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        Some(e) => anyhow::bail!("{e}"),
        None => Ok(()),
    }
}
