//! Writes a picture of the whole viewer window, headless (egui_kittest on any wgpu adapter,
//! lavapipe included), after 120 frames of the default scene or of a demo — the README's
//! screenshots:
//!
//! ```sh
//! cargo run --release -p hooke-viewer --example screenshot -- docs/images/viewer.png
//! cargo run --release -p hooke-viewer --example screenshot -- docs/images/integrators.png integrators
//! ```

use egui_kittest::Harness;
use hooke_viewer::eframe::egui;
use hooke_viewer::{Backend, ViewerApp};

fn main() -> anyhow::Result<()> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "viewer.png".into());
    let demo = std::env::args().nth(2).map(|name| hooke_viewer::Demo::from_name(&name)).transpose()?;
    let scene = match demo {
        Some(d) => d.scene()?,
        None => {
            let text = hooke_io::scene::DEFAULT_SCENE;
            hooke_io::scene::parse(text, "<built-in default scene>", "cloth_on_sphere", None, 1 << 30)?
        }
    };
    let mut setup = egui_kittest::wgpu::default_wgpu_setup();
    hooke_viewer::ask_adapter_limits(&mut setup);
    let mut harness = Harness::builder()
        .with_size(egui::vec2(1100.0, 640.0))
        .with_step_dt(1.0 / 60.0)
        .wgpu_setup(setup)
        .build_eframe(move |cc| {
            let mut app = ViewerApp::new(cc, scene, Backend::Cpu).expect("the viewer");
            if let Some(d) = demo {
                app.set_demo(d);
            }
            app
        });
    harness.run_steps(120);
    if demo.is_none() {
        harness.key_press(egui::Key::H);
    }
    harness.run_steps(1);
    let image = harness.render().map_err(anyhow::Error::msg)?;
    hooke_render::write_png(std::path::Path::new(&out), image.width(), image.height(), image.as_raw())?;
    println!("wrote {out}");
    Ok(())
}
