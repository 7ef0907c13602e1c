//! Writes a picture of the whole viewer window, headless (egui_kittest on any wgpu adapter,
//! lavapipe included), after 120 frames of the default scene — the README's screenshot:
//!
//! ```sh
//! cargo run --release -p hooke-viewer --example screenshot -- docs/images/viewer.png
//! ```

use egui_kittest::Harness;
use hooke_viewer::eframe::egui;
use hooke_viewer::{Backend, ViewerApp};

fn main() -> anyhow::Result<()> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "viewer.png".into());
    let text = hooke_io::scene::DEFAULT_SCENE;
    let scene = hooke_io::scene::parse(text, "<built-in default scene>", "cloth_on_sphere", None, 1 << 30)?;
    let mut setup = egui_kittest::wgpu::default_wgpu_setup();
    hooke_viewer::ask_adapter_limits(&mut setup);
    let mut harness = Harness::builder()
        .with_size(egui::vec2(1100.0, 640.0))
        .with_step_dt(1.0 / 60.0)
        .wgpu_setup(setup)
        .build_eframe(move |cc| ViewerApp::new(cc, scene, Backend::Cpu).expect("the viewer"));
    harness.run_steps(120);
    harness.key_press(egui::Key::H);
    harness.run_steps(1);
    let image = harness.render().map_err(anyhow::Error::msg)?;
    hooke_render::write_png(std::path::Path::new(&out), image.width(), image.height(), image.as_raw())?;
    println!("wrote {out}");
    Ok(())
}
