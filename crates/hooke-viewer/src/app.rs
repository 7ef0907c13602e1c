//! The viewer's window: the 3D view (hooke-render's off-screen image shown as an egui
//! texture, on the device the solver runs on) and a panel of controls.

use crate::demos::Demo;
use crate::integrators::IntegratorsDemo;
use crate::orbit::Orbit;
use crate::sim::{Backend, Simulation};
use anyhow::{Context, Result};
use eframe::egui;
use eframe::egui_wgpu;
use glam::Vec3;
use hooke::Stage;
use hooke_gpu::GpuContext;
use hooke_io::scene::Scene;
use hooke_render::{Camera, RenderSettings, Renderer};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

/// The keyboard shortcuts, as listed in the help panel.
pub const SHORTCUTS: &[(&str, &str)] = &[
    ("Space", "play / pause"),
    ("S or →", "one frame"),
    ("R", "reset to the start"),
    ("K", "keep a snapshot"),
    ("L", "go back to the snapshot"),
    ("G", "switch CPU / GPU"),
    ("P", "screenshot (PNG in screenshots/)"),
    ("H or F1", "this help"),
    ("drag on the cloth", "pull a particle"),
    ("drag on a collider", "move it (it stays; R puts it back)"),
    ("Shift + drag", "cut the cloth along the stroke (R mends it)"),
    ("C", "cut the cloth straight across its middle"),
    ("drag elsewhere", "turn the camera"),
    ("right or middle drag", "pan"),
    ("scroll", "zoom"),
];

/// The viewer application (an [`eframe::App`]).
pub struct ViewerApp {
    /// The solver's side of eframe's device, made once (its kernels compile once).
    ctx: Arc<GpuContext>,
    sim: Simulation,
    renderer: Renderer,
    render_state: egui_wgpu::RenderState,
    texture: Option<egui::TextureId>,
    orbit: Orbit,
    playing: bool,
    show_help: bool,
    /// The time per stage shown (and measured).
    show_stages: bool,
    /// Wall-clock duration of the last UI frames (s).
    frame_times: VecDeque<f64>,
    last_frame: Option<std::time::Instant>,
    draw_ms: f64,
    substeps: u32,
    iterations: u32,
    stretch_stiffness: f32,
    bending_modulus: f32,
    damping: f32,
    message: String,
    screenshots: u32,
    /// Close the window once this many frames are simulated (`hooke view --frames N`).
    quit_after: Option<u64>,
    /// Where a scripted run (`quit_after`) puts the error that stopped its simulation before
    /// closing the window, for [`crate::run`] to return.
    failure: Option<std::sync::Arc<std::sync::Mutex<Option<String>>>>,
    /// Where the 3D view was last laid out (points).
    view_rect: egui::Rect,
    /// While dragging a particle or a collider: the plane it moves in (a point and the
    /// camera's forward).
    drag_plane: Option<(Vec3, Vec3)>,
    /// While dragging a collider: which, and its pose when grabbed.
    collider_drag: Option<(usize, hooke::collision::Pose)>,
    /// While cutting (Shift + drag): the stroke's points (m) on the plane facing the camera
    /// through the view's centre.
    knife: Option<Vec<Vec3>>,
    /// The simulation's model generation the renderer was made for.
    generation: u64,
    /// The demo shown, if any (its own controls appear in the panel).
    demo: Option<Demo>,
    /// The `integrators` demo's runs, while it is shown (in place of the 3D view).
    integrators: Option<IntegratorsDemo>,
    /// The `topology` demo's families on or off: structural, shear, bending.
    families: [bool; 3],
    /// The `coloring` demo's lit colour and the UI frames it has been lit.
    pass: (usize, u32),
    /// The constraints drawn over the view, as (particle, particle, linear RGB).
    overlay: Vec<(u32, u32, Vec3)>,
    /// The overlay the renderer holds.
    overlay_drawn: Vec<(u32, u32, Vec3)>,
}

impl ViewerApp {
    /// The viewer of `scene` on `backend`, on eframe's wgpu device (which the GPU solver shares).
    ///
    /// # Errors
    /// Without eframe's wgpu renderer, or when the scene's solver or the renderer cannot be made.
    pub fn new(cc: &eframe::CreationContext<'_>, scene: Scene, backend: Backend) -> Result<ViewerApp> {
        let rs = cc.wgpu_render_state.clone().context("the viewer needs eframe's wgpu renderer")?;
        let ctx = Arc::new(GpuContext::from_parts(
            rs.instance.clone(),
            rs.adapter.clone(),
            rs.device.clone(),
            rs.queue.clone(),
        ));
        let model = scene.model.clone();
        let settings = RenderSettings { width: 640, height: 480, ..Default::default() };
        let renderer = Renderer::new(ctx.clone(), model.clone(), settings)?;
        let orbit = Orbit::from_camera(&Camera::framing(&model, 35f32.to_radians(), 25f32.to_radians(), 1.6));
        let (substeps, iterations) = (scene.solver.substeps(), scene.solver.iterations());
        let cloth = model.bodies().iter().find_map(|b| match b.material {
            hooke::BodyMaterial::Cloth(m) => Some(m),
            _ => None,
        });
        let m = cloth.unwrap_or_default();
        let sim = Simulation::new(scene, backend, ctx.clone())?;
        Ok(ViewerApp {
            ctx,
            sim,
            renderer,
            render_state: rs,
            texture: None,
            orbit,
            playing: true,
            show_help: false,
            show_stages: false,
            frame_times: VecDeque::new(),
            last_frame: None,
            draw_ms: 0.0,
            substeps,
            iterations,
            stretch_stiffness: m.stretch_stiffness,
            bending_modulus: m.bending_modulus,
            damping: m.damping,
            message: String::new(),
            screenshots: 0,
            quit_after: None,
            failure: None,
            view_rect: egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1.0, 1.0)),
            drag_plane: None,
            collider_drag: None,
            knife: None,
            generation: 0,
            demo: None,
            integrators: None,
            families: [true; 3],
            pass: (0, 0),
            overlay: Vec::new(),
            overlay_drawn: Vec::new(),
        })
    }

    /// Shows `scene` instead, on the same device and backend (the camera reframed, the
    /// sliders reset from the scene); `demo` names the demo it is, for its own controls.
    ///
    /// # Errors
    /// When the scene's solver or the renderer cannot be made (the current one stays).
    pub fn load(&mut self, scene: Scene, demo: Option<Demo>) -> Result<()> {
        let ctx = self.ctx.clone();
        let model = scene.model.clone();
        let settings = *self.renderer.settings();
        let renderer = Renderer::new(ctx.clone(), model.clone(), settings)?;
        let backend = match (self.sim.backend(), &scene.solver) {
            (Backend::Gpu, hooke_io::scene::SolverChoice::Position(_)) => Backend::Gpu,
            _ => Backend::Cpu,
        };
        let sim = Simulation::new(scene, backend, ctx)?;
        self.orbit = Orbit::from_camera(&Camera::framing(&model, 35f32.to_radians(), 25f32.to_radians(), 1.6));
        (self.substeps, self.iterations) = (sim.scene.solver.substeps(), sim.scene.solver.iterations());
        if let Some(hooke::BodyMaterial::Cloth(m)) = model.bodies().first().map(|b| b.material) {
            (self.stretch_stiffness, self.bending_modulus, self.damping) =
                (m.stretch_stiffness, m.bending_modulus, m.damping);
        }
        self.sim = sim;
        self.renderer = renderer;
        self.generation = self.sim.generation();
        self.knife = None;
        self.overlay_drawn.clear();
        // The texture is registered again for the new renderer's image.
        if let Some(id) = self.texture.take() {
            self.render_state.renderer.write().free_texture(&id);
        }
        self.demo = None;
        self.integrators = None;
        if let Some(d) = demo {
            self.set_demo(d);
        }
        self.drag_plane = None;
        self.message = format!("loaded {}", self.sim.scene.name);
        Ok(())
    }

    /// The demo shown, if any.
    pub fn demo(&self) -> Option<Demo> {
        self.demo
    }

    /// Marks the scene shown as `demo` (its controls appear in the panel; `integrators`
    /// shows its runs in place of the 3D view).
    pub fn set_demo(&mut self, demo: Demo) {
        self.demo = Some(demo);
        self.families = [true; 3];
        self.pass = (0, 0);
        self.integrators = match demo {
            Demo::Integrators => IntegratorsDemo::new(100.0, 0.01).ok(),
            _ => None,
        };
    }

    /// The `integrators` demo's runs, while it is shown.
    pub fn integrators(&self) -> Option<&IntegratorsDemo> {
        self.integrators.as_ref()
    }

    /// The constraints drawn over the view at the last frame (particle pairs and colours).
    pub fn overlay(&self) -> &[(u32, u32, Vec3)] {
        &self.overlay
    }

    /// The `coloring` demo's lit colour (an index into the distance set's colours).
    pub fn lit_colour(&self) -> usize {
        self.pass.0
    }

    /// Switches a family of the `topology` demo (0 structural, 1 shear, 2 bending) on or off:
    /// the model is rebuilt without it, the state kept.
    ///
    /// # Errors
    /// When the scene cannot be rebuilt.
    pub fn set_family(&mut self, family: usize, on: bool) -> Result<()> {
        let mut families = self.families;
        families[family.min(2)] = on;
        let text = crate::demos::topology_scene(families);
        let scene = hooke_io::scene::parse(&text, "<demo topology>", "topology", None, 1 << 30)?;
        self.sim.replace_scene(scene)?;
        self.families = families;
        Ok(())
    }

    /// The constraints to draw over the view for the demo shown: by family (topology), or by
    /// colour with the lit pass bright and the others dim (coloring).
    fn update_overlay(&mut self) {
        self.overlay.clear();
        let model = self.sim.scene.model.clone();
        let set = model.distance();
        match self.demo {
            Some(Demo::Topology) => {
                // Bend springs first, structural last: a bend spring spans two structural
                // edges, so the structural lines are drawn over it and stay visible.
                use hooke::ConstraintFamily::*;
                for wanted in [BendSpring, Shear, Structural] {
                    for (c, family) in set.constraints().iter().zip(set.families()) {
                        if *family != wanted {
                            continue;
                        }
                        let colour = match family {
                            Structural => Vec3::new(0.95, 0.8, 0.1),
                            Shear => Vec3::new(0.1, 0.75, 0.25),
                            _ => Vec3::new(0.2, 0.4, 1.0),
                        };
                        self.overlay.push((c.i, c.j, colour));
                    }
                }
            }
            Some(Demo::Coloring) => {
                let colours = set.colour_ranges().len().max(1);
                self.pass.1 += 1;
                if self.playing && self.pass.1 >= 30 {
                    self.pass = ((self.pass.0 + 1) % colours, 0);
                }
                self.pass.0 %= colours;
                for (k, range) in set.colour_ranges().iter().enumerate() {
                    let colour = if k == self.pass.0 { COLOURS[k % COLOURS.len()] } else { Vec3::splat(0.25) };
                    for c in &set.constraints()[range.start as usize..range.end as usize] {
                        self.overlay.push((c.i, c.j, colour));
                    }
                }
            }
            _ => {}
        }
        // The lines follow the particles in the buffers the view is drawn from (no read-back);
        // the buffers are remade only when the lines or their colours change.
        if self.overlay != self.overlay_drawn {
            self.renderer.set_overlay(&self.overlay);
            self.overlay_drawn.clone_from(&self.overlay);
        }
    }

    /// Back to the start: the simulation, or the `integrators` demo's runs while it is shown.
    fn reset(&mut self) -> Result<()> {
        match &mut self.integrators {
            Some(demo) => {
                *demo = IntegratorsDemo::new(demo.stiffness, demo.dt)?;
                Ok(())
            }
            None => self.sim.reset(),
        }
    }

    /// One frame: a step of the `integrators` demo's runs while it is shown, else of the
    /// simulation.
    fn advance(&mut self) -> Result<()> {
        match &mut self.integrators {
            Some(demo) => {
                demo.step();
                Ok(())
            }
            None => self.sim.step(),
        }
    }

    /// Closes the window once `frames` frames are simulated (for scripted runs and smoke
    /// tests) — or as soon as the simulation stops on an error, which it then puts in
    /// `failure` (where one is given) instead of waiting for frames that will not come.
    pub fn quit_after(&mut self, frames: u64, failure: Option<std::sync::Arc<std::sync::Mutex<Option<String>>>>) {
        self.quit_after = Some(frames);
        self.failure = failure;
    }

    /// The ray (origin, unit direction; m) under the point `pos` of the 3D view.
    pub fn ray_at(&self, pos: egui::Pos2) -> (Vec3, Vec3) {
        let r = self.view_rect;
        let vp = self.orbit.camera().view_projection(r.width() / r.height().max(1.0));
        let inv = vp.inverse();
        let ndc =
            glam::Vec2::new(2.0 * (pos.x - r.min.x) / r.width() - 1.0, 1.0 - 2.0 * (pos.y - r.min.y) / r.height());
        let near = inv.project_point3(ndc.extend(0.0));
        let far = inv.project_point3(ndc.extend(1.0));
        (near, (far - near).normalize_or(Vec3::NEG_Z))
    }

    /// Where the point `x` (m) appears in the 3D view, or `None` behind the camera.
    pub fn screen_position(&self, x: Vec3) -> Option<egui::Pos2> {
        let r = self.view_rect;
        let c = self.orbit.camera().view_projection(r.width() / r.height().max(1.0)) * x.extend(1.0);
        (c.w > 0.0).then(|| {
            let ndc = c.truncate() / c.w;
            egui::pos2(r.min.x + (ndc.x + 1.0) * 0.5 * r.width(), r.min.y + (1.0 - ndc.y) * 0.5 * r.height())
        })
    }

    /// The status line (the last action or error).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The particle being dragged and where it is pulled to (m).
    pub fn dragged(&self) -> Option<(u32, Vec3)> {
        self.sim.drag
    }

    /// Frames simulated since the start (or the last reset); for the `integrators` demo, its
    /// steps.
    pub fn frame(&self) -> u64 {
        match &self.integrators {
            Some(demo) => demo.steps,
            None => self.sim.frame,
        }
    }

    /// The simulation.
    pub fn simulation(&mut self) -> &mut Simulation {
        &mut self.sim
    }

    /// Whether the simulation is playing.
    pub fn playing(&self) -> bool {
        self.playing
    }

    /// The last image drawn, read back as RGBA (rows from the top), and its size.
    ///
    /// # Errors
    /// When the read-back fails.
    pub fn read_image(&self) -> Result<(u32, u32, Vec<u8>)> {
        let s = self.renderer.settings();
        Ok((s.width, s.height, self.renderer.read_rgba()?))
    }

    fn report<T>(&mut self, what: &str, r: Result<T>) {
        match r {
            Ok(_) => self.message = what.to_string(),
            Err(e) => {
                self.message = format!("{what}: {e:#}");
                self.playing = false;
            }
        }
    }

    fn keys(&mut self, ctx: &egui::Context) {
        use egui::Key;
        let pressed = |k| ctx.input(|i| i.key_pressed(k));
        if ctx.egui_wants_keyboard_input() {
            return;
        }
        if pressed(Key::Space) {
            self.playing = !self.playing;
        }
        if pressed(Key::S) || pressed(Key::ArrowRight) {
            self.playing = false;
            let r = self.advance();
            self.report("one frame", r);
        }
        if pressed(Key::R) {
            let r = self.reset();
            self.report("reset", r);
        }
        if pressed(Key::K) {
            self.sim.snapshot();
            self.message = format!("snapshot at frame {}", self.sim.frame);
        }
        if pressed(Key::L) {
            let r = self.sim.restore();
            self.report("restored the snapshot", r);
        }
        if pressed(Key::G) {
            let other = if self.sim.backend() == Backend::Cpu { Backend::Gpu } else { Backend::Cpu };
            let r = self.sim.set_backend(other);
            self.report(&format!("backend {}", other.label()), r);
        }
        if pressed(Key::P) {
            self.take_screenshot();
        }
        if pressed(Key::C) {
            self.cut_across();
        }
        if pressed(Key::H) || pressed(Key::F1) {
            self.show_help = !self.show_help;
        }
    }

    fn take_screenshot(&mut self) {
        match self.screenshot() {
            Ok(path) => self.message = format!("wrote {}", path.display()),
            Err(e) => self.message = format!("screenshot: {e:#}"),
        }
    }

    /// Writes the view to `screenshots/<scene>-<n>.png`.
    fn screenshot(&mut self) -> Result<PathBuf> {
        let (w, h, rgba) = self.read_image()?;
        std::fs::create_dir_all("screenshots")?;
        self.screenshots += 1;
        let path = PathBuf::from(format!("screenshots/{}-{}.png", self.sim.scene.name, self.screenshots));
        hooke_render::write_png(&path, w, h, &rgba)?;
        Ok(path)
    }

    fn controls(&mut self, ui: &mut egui::Ui) {
        if let Some(demo) = &self.integrators {
            ui.heading("hooke — integrators (§2.3)");
            ui.label(format!("step {} (t = {:.2} s)", demo.steps, demo.steps as f32 * demo.dt));
        } else {
            ui.heading(format!("hooke — {}", self.sim.scene.name));
        }
        let m = &self.sim.scene.model;
        ui.label(format!(
            "{} particles, {} constraints, {} triangles",
            m.particle_count(),
            m.constraint_count(),
            m.triangles().len()
        ));
        ui.separator();
        ui.horizontal(|ui| {
            if ui.button(if self.playing { "Pause" } else { "Play" }).clicked() {
                self.playing = !self.playing;
            }
            if ui.button("Step").clicked() {
                self.playing = false;
                let r = self.advance();
                self.report("one frame", r);
            }
            if ui.button("Reset").clicked() {
                let r = self.reset();
                self.report("reset", r);
            }
        });
        ui.horizontal(|ui| {
            if ui.button("Snapshot").clicked() {
                self.sim.snapshot();
                self.message = format!("snapshot at frame {}", self.sim.frame);
            }
            if ui.add_enabled(self.sim.has_snapshot(), egui::Button::new("Restore")).clicked() {
                let r = self.sim.restore();
                self.report("restored the snapshot", r);
            }
            if ui.button("Screenshot").clicked() {
                self.take_screenshot();
            }
        });
        ui.horizontal(|ui| {
            ui.label("Backend:");
            for b in [Backend::Cpu, Backend::Gpu] {
                if ui.selectable_label(self.sim.backend() == b, b.label()).clicked() && self.sim.backend() != b {
                    let r = self.sim.set_backend(b);
                    self.report(&format!("backend {}", b.label()), r);
                }
            }
        });
        let name = self.sim.solver_name();
        ui.label(format!("solver: {name}"));
        ui.separator();
        ui.horizontal(|ui| {
            ui.label("Demos:");
            for d in Demo::ALL {
                if ui.selectable_label(self.demo == Some(d), d.name()).clicked() {
                    let r = d.scene().and_then(|scene| self.load(scene, Some(d)));
                    if let Err(e) = r {
                        self.message = format!("demo {}: {e:#}", d.name());
                    }
                }
            }
        });
        if self.integrators.is_none() && ui.button("Cut across the middle (C)").clicked() {
            self.cut_across();
        }
        match self.demo {
            Some(Demo::Cloth) if ui.add_enabled(!self.sim.released, egui::Button::new("Cut / free fall")).clicked() => {
                self.sim.released = true;
                self.message = "every pin released".into();
            }
            Some(Demo::Topology) => {
                ui.label("Springs drawn by family; switch one off and drag the cloth:");
                for (k, (name, colour)) in
                    [("structural", "yellow"), ("shear", "green"), ("bending", "blue")].into_iter().enumerate()
                {
                    let mut on = self.families[k];
                    if ui.checkbox(&mut on, format!("{name} ({colour})")).changed() {
                        let r = self.set_family(k, on);
                        self.report(&format!("{name} {}", if on { "on" } else { "off" }), r);
                    }
                }
            }
            Some(Demo::Coloring) => {
                let set = self.sim.scene.model.distance();
                let colours = set.colour_ranges().len();
                let lit = set.colour_ranges().get(self.pass.0).map_or(0, |r| r.len());
                ui.label(format!(
                    "pass {} of {colours}: {lit} constraints, no two sharing a particle, solved together",
                    self.pass.0 + 1
                ));
            }
            Some(Demo::PbdRope) => {
                ui.label("PBD: stiffness depends on the iterations; XPBD: on the material only");
            }
            _ => {}
        }
        if self.integrators.is_none() {
            ui.separator();
            ui.label("Solver");
            if let Some(method) = self.sim.method() {
                // PBD's stiffness factor: the pbd-rope demo's, else full projection.
                let stiffness = match self.demo {
                    Some(Demo::PbdRope) => crate::demos::PBD_ROPE_STIFFNESS,
                    _ => 1.0,
                };
                ui.horizontal(|ui| {
                    for (label, m) in [("XPBD", hooke::Method::Xpbd), ("PBD", hooke::Method::Pbd { stiffness })] {
                        let on = std::mem::discriminant(&method) == std::mem::discriminant(&m);
                        if ui.selectable_label(on, label).clicked() && !on {
                            let r = self.sim.set_method(m);
                            self.report(label, r);
                        }
                    }
                });
            }
            let mut changed = ui.add(egui::Slider::new(&mut self.substeps, 1..=200).text("substeps")).changed();
            changed |= ui.add(egui::Slider::new(&mut self.iterations, 1..=100).text("iterations")).changed();
            if changed {
                let r = self.sim.set_budget(self.substeps, self.iterations);
                self.report("budget", r);
            }
            let has_cloth = self.sim.scene.model.bodies().iter().any(|b| b.is_cloth());
            if has_cloth {
                ui.separator();
                ui.label("Cloth material (every cloth)");
                let mut edit = false;
                edit |= ui
                    .add(
                        egui::Slider::new(&mut self.stretch_stiffness, 10.0..=1e6)
                            .logarithmic(true)
                            .text("stretch K (N/m)"),
                    )
                    .changed();
                edit |= ui
                    .add(
                        egui::Slider::new(&mut self.bending_modulus, 1e-7..=1.0)
                            .logarithmic(true)
                            .text("bending B (N·m)"),
                    )
                    .changed();
                edit |= ui.add(egui::Slider::new(&mut self.damping, 0.0..=0.1).text("damping τ (s)")).changed();
                if edit {
                    let (k, b, d) = (self.stretch_stiffness, self.bending_modulus, self.damping);
                    let r = self.sim.edit_cloth_materials(|m| {
                        m.stretch_stiffness = k;
                        m.bending_modulus = b;
                        m.damping = d;
                    });
                    self.report("material", r);
                }
            }
            ui.separator();
            ui.label("Wind (m/s)");
            let wind = &mut self.sim.scene.wind;
            ui.add(egui::Slider::new(&mut wind.x, -30.0..=30.0).text("x"));
            ui.add(egui::Slider::new(&mut wind.z, -30.0..=30.0).text("z"));
        }
        ui.separator();
        let fps = if self.frame_times.is_empty() {
            0.0
        } else {
            self.frame_times.len() as f64 / self.frame_times.iter().sum::<f64>()
        };
        if self.integrators.is_none() {
            ui.label(format!("frame {} (t = {:.2} s)", self.sim.frame, self.sim.frame as f32 / self.sim.scene.fps));
        }
        ui.label(format!("{fps:.0} FPS; step {:.2} ms, draw {:.2} ms (CPU side)", self.sim.step_ms, self.draw_ms));
        if ui.checkbox(&mut self.show_stages, "Time per stage").changed() {
            self.sim.measure_stages(self.show_stages);
        }
        if self.show_stages {
            self.stage_table(ui);
        }
        if let Some(e) = &self.sim.error {
            ui.colored_label(egui::Color32::RED, format!("stopped: {e}"));
        }
        if !self.message.is_empty() {
            ui.label(&self.message);
        }
        ui.separator();
        ui.checkbox(&mut self.show_help, "Keyboard and mouse (H)");
        if self.show_help {
            egui::Grid::new("shortcuts").show(ui, |ui| {
                for (key, what) in SHORTCUTS {
                    ui.monospace(*key);
                    ui.label(*what);
                    ui.end_row();
                }
            });
        }
    }

    /// Starts a drag at `pointer` (points): of the particle under it ([`Simulation::pick`]) or
    /// of the collider under it ([`Simulation::pick_collider`]), whichever is nearer; with
    /// neither, the drag turns the camera.
    pub fn grab(&mut self, pointer: egui::Pos2) {
        let (o, d) = self.ray_at(pointer);
        self.message = format!("nothing under the pointer at {pointer:?}");
        let particle = self.sim.pick(o, d);
        let collider = self.sim.pick_collider(o, d);
        match (particle, collider) {
            (Some(hit), c) if c.is_none_or(|(_, t)| hit.distance <= t) => {
                let point = o + d * hit.distance;
                self.drag_plane = Some((point, d));
                self.sim.drag = Some((hit.particle, point));
                self.message = format!("dragging particle {}", hit.particle);
            }
            (_, Some((k, t))) => {
                let pose = self.sim.collider_poses()[k];
                self.drag_plane = Some((o + d * t, d));
                self.collider_drag = Some((k, pose));
                self.message = format!("dragging collider {:?}", self.sim.scene.model.colliders()[k].name);
            }
            _ => {}
        }
    }

    /// Adds the point under `pointer` (points) to the knife's stroke: where its ray meets the
    /// plane facing the camera through the view's centre.
    fn stroke(&mut self, pointer: egui::Pos2) {
        let (o, d) = self.ray_at(pointer);
        let camera = self.orbit.camera();
        let forward = (camera.target - camera.eye).normalize_or_zero();
        let along = d.dot(forward);
        if let (Some(points), true) = (&mut self.knife, along.abs() > 1e-6) {
            let p = o + d * ((camera.target - o).dot(forward) / along);
            if points.last().is_none_or(|q: &Vec3| (*q - p).length() > 1e-4) {
                points.push(p);
            }
        }
    }

    /// Cuts the cloth along the stroke `points` (m), the blade extending along the camera's
    /// view direction ([`Simulation::cut`]).
    pub fn cut_along(&mut self, points: Vec<Vec3>) {
        if points.len() < 2 {
            return;
        }
        let camera = self.orbit.camera();
        let blade = hooke::tearing::Cut { points, direction: camera.target - camera.eye };
        let r = self.sim.cut(&blade);
        self.message = match r {
            Ok(Some(c)) => format!("cut: {} constraints broken, {} particles split", c.broken, c.split),
            Ok(None) => "the cut crossed no cloth".into(),
            Err(e) => format!("cut: {e:#}"),
        };
    }

    /// Cuts the cloth straight across, through the centre of its particles, along the view's
    /// horizontal (the blade along the view direction).
    pub fn cut_across(&mut self) {
        let x = self.sim.state().particle_position;
        if x.is_empty() {
            return;
        }
        let centre = x.iter().copied().sum::<Vec3>() / x.len() as f32;
        let (lo, hi) = x.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
        let reach = (hi - lo).length().max(1e-3);
        let camera = self.orbit.camera();
        let forward = (camera.target - camera.eye).normalize_or(Vec3::NEG_Z);
        let right = forward.cross(Vec3::Y).normalize_or(Vec3::X);
        self.cut_along(vec![centre - right * reach, centre + right * reach]);
    }

    /// Makes the renderer again for the simulation's model (after a tear, a cut or a reset
    /// that changed it), keeping its size and settings.
    fn remake_renderer(&mut self) {
        let settings = *self.renderer.settings();
        match Renderer::new(self.ctx.clone(), self.sim.scene.model.clone(), settings) {
            Ok(r) => {
                self.renderer = r;
                self.overlay_drawn.clear();
                if let Some(id) = self.texture.take() {
                    self.render_state.renderer.write().free_texture(&id);
                }
            }
            Err(e) => self.message = format!("drawing: {e}"),
        }
        self.generation = self.sim.generation();
    }

    /// The collider being dragged, if any (its index into the model's colliders).
    pub fn dragged_collider(&self) -> Option<usize> {
        self.collider_drag.map(|(k, _)| k)
    }

    /// The last reading of the time per stage: ms per frame and share of each stage.
    fn stage_table(&mut self, ui: &mut egui::Ui) {
        let gpu = self.sim.backend() == Backend::Gpu;
        if !self.sim.measuring_stages() {
            ui.label(if gpu {
                "not measured: the device has no timestamps inside passes"
            } else {
                "not measured: the explicit integrators run their stages as one fused pass"
            });
            return;
        }
        let Some(t) = self.sim.stage_times().copied() else {
            ui.label("measuring…");
            return;
        };
        let frames = t.frames.max(1) as f64;
        let total = t.total().max(f64::MIN_POSITIVE);
        ui.label(if gpu { "GPU time per frame (timestamps)" } else { "wall time per frame" });
        egui::Grid::new("stages").striped(true).show(ui, |ui| {
            let rows = Stage::ORDER.iter().map(|s| (s.name(), t.of(*s))).chain([("other", t.other)]);
            for (name, seconds) in rows {
                ui.label(name);
                ui.monospace(format!("{:8.3} ms", seconds / frames * 1e3));
                ui.monospace(format!("{:5.1} %", 100.0 * seconds / total));
                ui.end_row();
            }
            ui.strong("total");
            ui.monospace(format!("{:8.3} ms", total / frames * 1e3));
            ui.end_row();
        });
    }

    fn view(&mut self, ui: &mut egui::Ui) {
        let rect = ui.available_rect_before_wrap();
        self.view_rect = rect;
        let response = ui.allocate_rect(rect, egui::Sense::click_and_drag());
        // A primary drag that starts on the cloth pulls the particle under the pointer (the
        // nearest corner of the triangle hit), one that starts on a collider moves it, either
        // in the plane facing the camera; elsewhere it turns the camera.
        let shift = ui.input(|i| i.modifiers.shift);
        if response.drag_started_by(egui::PointerButton::Primary)
            && let Some(origin) = ui.input(|i| i.pointer.press_origin())
        {
            if shift {
                self.knife = Some(Vec::new());
                self.stroke(origin);
            } else {
                self.grab(origin);
            }
        }
        if let (Some(_), true, Some(pos)) =
            (&self.knife, response.dragged_by(egui::PointerButton::Primary), response.interact_pointer_pos())
        {
            self.stroke(pos);
        } else if response.dragged_by(egui::PointerButton::Primary) {
            match (self.drag_plane, response.interact_pointer_pos()) {
                (Some((point, normal)), Some(pos)) => {
                    let (o, d) = self.ray_at(pos);
                    let along = d.dot(normal);
                    if along.abs() > 1e-6 {
                        let to = o + d * ((point - o).dot(normal) / along);
                        if let Some(drag) = &mut self.sim.drag {
                            drag.1 = to;
                        }
                        if let Some((k, grabbed)) = self.collider_drag {
                            let pose =
                                hooke::collision::Pose { translation: grabbed.translation + (to - point), ..grabbed };
                            self.sim.place_collider(k, pose);
                        }
                    }
                }
                _ => {
                    let d = response.drag_delta();
                    self.orbit.rotate(d.x, d.y);
                }
            }
        }
        if response.drag_stopped() {
            self.drag_plane = None;
            self.sim.drag = None;
            self.collider_drag = None;
            if let Some(points) = self.knife.take() {
                self.cut_along(points);
            }
        }
        if response.dragged_by(egui::PointerButton::Secondary) || response.dragged_by(egui::PointerButton::Middle) {
            let d = response.drag_delta();
            self.orbit.pan(d.x, d.y, rect.height());
        }
        if response.hovered() {
            let scroll = ui.input(|i| i.smooth_scroll_delta.y);
            if scroll != 0.0 {
                self.orbit.zoom(scroll / 50.0);
            }
        }
        if self.generation != self.sim.generation() {
            self.remake_renderer();
        }
        let ppp = ui.ctx().pixels_per_point();
        let (w, h) = ((rect.width() * ppp).round() as u32, (rect.height() * ppp).round() as u32);
        let resized = (w.max(1), h.max(1)) != (self.renderer.settings().width, self.renderer.settings().height);
        self.renderer.resize(w, h);
        self.update_overlay();
        let started = std::time::Instant::now();
        let poses = self.sim.collider_poses();
        match self.sim.cloth_buffers() {
            Ok(buffers) => self.renderer.draw(buffers, &poses, &self.orbit.camera()),
            Err(e) => self.message = format!("drawing: {e:#}"),
        }
        self.draw_ms = started.elapsed().as_secs_f64() * 1e3;
        let device = &self.render_state.device;
        let mut egui_renderer = self.render_state.renderer.write();
        let id = match self.texture {
            Some(id) => {
                if resized {
                    egui_renderer.update_egui_texture_from_wgpu_texture(
                        device,
                        self.renderer.ui_view(),
                        wgpu::FilterMode::Linear,
                        id,
                    );
                }
                id
            }
            None => egui_renderer.register_native_texture(device, self.renderer.ui_view(), wgpu::FilterMode::Linear),
        };
        drop(egui_renderer);
        self.texture = Some(id);
        let uv = egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0));
        ui.painter().image(id, rect, uv, egui::Color32::WHITE);
    }
}

impl eframe::App for ViewerApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let now = std::time::Instant::now();
        if let Some(last) = self.last_frame {
            self.frame_times.push_back(now.duration_since(last).as_secs_f64());
            if self.frame_times.len() > 60 {
                self.frame_times.pop_front();
            }
        }
        self.last_frame = Some(now);
        let ctx = ui.ctx().clone();
        self.keys(&ctx);
        if self.playing
            && let Err(e) = self.advance()
        {
            self.playing = false;
            if self.quit_after.is_some() {
                // A scripted run: the frames asked for will not come.
                if let Some(slot) = &self.failure {
                    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("the simulation stopped: {e:#}"));
                }
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            }
        }
        egui::Panel::left("controls").resizable(true).default_size(300.0).show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| self.controls(ui));
        });
        match &mut self.integrators {
            Some(demo) => {
                egui::CentralPanel::default_margins().show(ui, |ui| demo.ui(ui));
            }
            None => {
                egui::CentralPanel::no_frame().show(ui, |ui| self.view(ui));
            }
        }
        if self.playing {
            ctx.request_repaint();
        }
        if self.quit_after.is_some_and(|n| self.frame() >= n) {
            // A scripted run ends with the health checked: on the GPU the record is read only
            // every 10 s of simulated time while drawing (a run of 5 frames that blew up
            // ended as if all was well).
            if self.integrators.is_none()
                && let Err(e) = self.sim.check()
                && let Some(slot) = &self.failure
            {
                *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("the simulation stopped: {e:#}"));
            }
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
        }
    }
}

/// The colours of the `coloring` demo's passes (linear RGB): red and black first, the rope's
/// two colours, as in the article's red/black schedule.
const COLOURS: [Vec3; 8] = [
    Vec3::new(0.9, 0.05, 0.05),
    Vec3::new(0.02, 0.02, 0.02),
    Vec3::new(0.1, 0.45, 1.0),
    Vec3::new(0.1, 0.8, 0.2),
    Vec3::new(1.0, 0.75, 0.05),
    Vec3::new(0.75, 0.2, 0.9),
    Vec3::new(0.05, 0.8, 0.8),
    Vec3::new(1.0, 0.45, 0.1),
];
