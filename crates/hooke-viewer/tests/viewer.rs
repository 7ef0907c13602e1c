//! The viewer headless (egui_kittest on lavapipe, through the same eframe creation path as
//! the window): it plays a scene frame for frame as the solver alone does, and its keys and
//! controls do what the help panel says.

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use hooke::State;
use hooke_viewer::eframe::egui;
use hooke_viewer::{Backend, ViewerApp};

fn default_scene() -> hooke_io::scene::Scene {
    let s = hooke_io::scene::DEFAULT_SCENE;
    hooke_io::scene::parse(s, "<built-in default scene>", "cloth_on_sphere", None, 1 << 30).unwrap()
}

/// A harness with the viewer of the default scene on `backend`, or `None` (skipped) without an
/// adapter, unless `HOOKE_REQUIRE_GPU=1`.
fn viewer(backend: Backend) -> Option<Harness<'static, ViewerApp>> {
    viewer_of(default_scene(), backend)
}

/// Runs lavapipe's work on the thread that submits it (`LP_NUM_THREADS=0`, Mesa's documented
/// switch; it concerns only llvmpipe and lavapipe) unless the variable is set: the viewer's
/// headless frames are small, and llvmpipe's pool of worker threads costs more to wake than
/// their work (this binary 93–101 s against 121–128 s with the pool on this 2-core machine, 2026-12-07; see
/// `hooke-gpu/tests/common`'s `gpu_without_lavapipe_threads`). Called before every device
/// this binary makes.
fn lavapipe_without_threads() {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        if std::env::var_os("LP_NUM_THREADS").is_none() {
            // SAFETY: every test passes through this `Once` before it makes a device (which
            // loads Mesa and starts its threads), and the other test threads read the
            // environment through std, whose lock `set_var` takes too.
            unsafe { std::env::set_var("LP_NUM_THREADS", "0") };
        }
    });
}

/// A harness with the viewer of `scene` on `backend`, or `None` as [`viewer`].
fn viewer_of(scene: hooke_io::scene::Scene, backend: Backend) -> Option<Harness<'static, ViewerApp>> {
    lavapipe_without_threads();
    if hooke_gpu::GpuContext::new().is_err() {
        assert!(
            std::env::var("HOOKE_REQUIRE_GPU").is_ok_and(|v| v != "1") || std::env::var("HOOKE_REQUIRE_GPU").is_err(),
            "HOOKE_REQUIRE_GPU=1 but no adapter"
        );
        eprintln!("skipped: no adapter");
        return None;
    }
    let mut setup = egui_kittest::wgpu::default_wgpu_setup();
    hooke_viewer::ask_adapter_limits(&mut setup);
    let harness = Harness::builder()
        .with_size(egui::vec2(900.0, 600.0))
        .with_step_dt(1.0 / 60.0)
        .wgpu_setup(setup)
        .build_eframe(move |cc| ViewerApp::new(cc, scene.clone(), backend).unwrap());
    Some(harness)
}

/// Positions of the default scene after `frames` frames of its own CPU solver.
fn solver_alone(frames: usize) -> Vec<glam::Vec3> {
    let scene = default_scene();
    let mut solver = hooke_sim::make_cpu_solver(&scene).unwrap();
    for _ in 0..frames {
        let control = scene.control_at(solver.time());
        solver.step(&control, 1.0 / scene.fps).unwrap();
    }
    let mut st = State::from_model(&scene.model);
    solver.read_state(&mut st);
    st.particle_position
}

/// 120 UI frames play 120 simulation frames, and the viewer's cloth is then where the scene's
/// solver alone puts it after as many frames, bit for bit (the harness runs a few UI passes of
/// its own when it is built; they play frames too); the view shows the cloth (pixels of the
/// cloth's blue).
#[test]
fn the_viewer_plays_the_scene_as_the_solver_does() {
    let Some(mut h) = viewer(Backend::Cpu) else { return };
    let start = h.state().frame();
    h.run_steps(120);
    let frames = h.state().frame();
    assert_eq!(frames, start + 120);
    let x = h.state_mut().simulation().state().particle_position;
    assert!(x == solver_alone(frames as usize), "the viewer's state differs from the solver's");
    let (w, hgt, rgba) = h.state().read_image().unwrap();
    let blue = rgba.chunks_exact(4).filter(|p| p[2] as i32 > p[0] as i32 + 60).count();
    println!("view {w} × {hgt}: {blue} cloth-blue pixels");
    assert!(blue > 500, "{blue} cloth pixels");
}

/// Space pauses (no frame advances over 10 UI frames), S steps one frame, K keeps a snapshot
/// and L goes back to it, R resets to frame 0, G moves the run to the GPU, where it goes on.
#[test]
fn keys_pause_step_snapshot_reset_and_switch_backend() {
    let Some(mut h) = viewer(Backend::Cpu) else { return };
    h.run_steps(5);
    h.key_press(egui::Key::Space);
    h.run_steps(1);
    let paused_at = h.state().frame();
    assert!(!h.state().playing());
    h.run_steps(10);
    assert_eq!(h.state().frame(), paused_at, "paused, yet frames advanced");
    h.key_press(egui::Key::S);
    h.run_steps(1);
    assert_eq!(h.state().frame(), paused_at + 1);
    h.key_press(egui::Key::K);
    h.run_steps(1);
    let kept = h.state_mut().simulation().state();
    h.key_press(egui::Key::S);
    h.run_steps(1);
    h.key_press(egui::Key::S);
    h.run_steps(1);
    assert_eq!(h.state().frame(), paused_at + 3);
    h.key_press(egui::Key::L);
    h.run_steps(1);
    assert_eq!(h.state().frame(), paused_at + 1);
    assert!(h.state_mut().simulation().state().particle_position == kept.particle_position);
    h.key_press(egui::Key::R);
    h.run_steps(1);
    assert_eq!(h.state().frame(), 0);
    h.key_press(egui::Key::G);
    h.run_steps(1);
    assert_eq!(h.state_mut().simulation().backend(), Backend::Gpu);
    h.key_press(egui::Key::Space);
    h.run_steps(10);
    assert!(h.state().frame() >= 9, "the GPU run did not go on: frame {}", h.state().frame());
}

/// A live material change (stretch stiffness ×10 through the panel's path) keeps the state: no
/// particle jumps, and the run goes on; so does switching the method to PBD in the panel.
#[test]
fn a_live_material_change_keeps_the_state() {
    let Some(mut h) = viewer(Backend::Cpu) else { return };
    h.run_steps(30);
    let start = h.state().frame();
    let before = h.state_mut().simulation().state();
    h.state_mut().simulation().edit_cloth_materials(|m| m.stretch_stiffness *= 10.0).unwrap();
    let after = h.state_mut().simulation().state();
    assert!(before.particle_position == after.particle_position);
    h.run_steps(10);
    assert_eq!(h.state().frame(), start + 10);
    // The panel's method switch: XPBD → PBD, keeping the state, and the run goes on.
    h.key_press(egui::Key::Space);
    h.run_steps(1);
    let before = h.state_mut().simulation().state();
    h.get_by_label("PBD").click();
    h.run_steps(1);
    assert!(matches!(h.state_mut().simulation().method(), Some(hooke::Method::Pbd { .. })));
    assert!(h.state_mut().simulation().state().particle_position == before.particle_position);
    h.key_press(egui::Key::Space);
    h.run_steps(5);
    assert!(h.state().frame() >= start + 15);
}

/// A scripted drag (press on the cloth, move the pointer, hold): the particle under the pointer
/// is picked — the one `hooke::picking::pick` finds on the same ray — and follows the pointer:
/// after a few frames it is within 1 cm of the pulled-to point, which lies where the pointer
/// is; on release it is let go. On the CPU and on the GPU (whose pick is its ray-cast kernel).
#[test]
fn a_scripted_drag_pulls_the_picked_particle_to_the_pointer() {
    for backend in [Backend::Cpu, Backend::Gpu] {
        let Some(mut h) = viewer(backend) else { return };
        h.run_steps(30);
        // Paused while the pointer goes down, so that the cloth is where the test looks.
        h.key_press(egui::Key::Space);
        h.run_steps(1);
        // Press over the middle of the cloth: the centroid of a triangle there (a ray through a
        // vertex may slip between its triangles by rounding).
        let st = h.state_mut().simulation().state();
        let model = h.state_mut().simulation().scene.model.clone();
        let t = model.triangles()[model.triangles().len() / 2];
        let centroid = t.iter().map(|&k| st.particle_position[k as usize]).sum::<glam::Vec3>() / 3.0;
        let press = h.state().screen_position(centroid).expect("the cloth is in view");
        let (o, d) = h.state().ray_at(press);
        let expected = hooke::picking::pick(&model, &st.particle_position, o, d).expect("the ray hits the cloth");
        let to = press + egui::vec2(40.0, -60.0);
        h.event(egui::Event::PointerMoved(press));
        h.event(egui::Event::PointerButton {
            pos: press,
            button: egui::PointerButton::Primary,
            pressed: true,
            modifiers: egui::Modifiers::NONE,
        });
        h.run_steps(1);
        for k in 1..=10 {
            h.event(egui::Event::PointerMoved(press + (to - press) * (k as f32 / 10.0)));
            h.run_steps(1);
        }
        h.key_press(egui::Key::Space);
        h.run_steps(5);
        println!("status: {:?}, press at {press:?}", h.state().message());
        let (particle, target) = h.state().dragged().expect("a particle is being dragged");
        assert_eq!(particle, expected.particle, "{backend:?}: picked another particle");
        let x = h.state_mut().simulation().state().particle_position[particle as usize];
        let (_, ray) = h.state().ray_at(to);
        let (eye, _) = h.state().ray_at(to);
        let off_ray = ((target - eye) - ray * (target - eye).dot(ray)).length();
        println!(
            "{backend:?}: particle {particle} at {x}, pulled to {target}, |x − target| = {:.2e} m",
            (x - target).length()
        );
        assert!(
            (x - target).length() < 0.01,
            "{backend:?}: the particle is {} m from its target",
            (x - target).length()
        );
        assert!(off_ray < 1e-3, "{backend:?}: the target is {off_ray} m off the pointer's ray");
        h.event(egui::Event::PointerButton {
            pos: to,
            button: egui::PointerButton::Primary,
            pressed: false,
            modifiers: egui::Modifiers::NONE,
        });
        h.run_steps(2);
        assert!(h.state().dragged().is_none(), "{backend:?}: still dragging after release");
    }
}

/// Each demo opens headless, plays 120 frames without error, and shows its own controls.
#[test]
fn every_demo_opens_and_plays_120_frames() {
    for demo in hooke_viewer::Demo::ALL {
        lavapipe_without_threads();
        if hooke_gpu::GpuContext::new().is_err() {
            return;
        }
        let mut setup = egui_kittest::wgpu::default_wgpu_setup();
        hooke_viewer::ask_adapter_limits(&mut setup);
        let mut h = Harness::builder()
            .with_size(egui::vec2(900.0, 600.0))
            .with_step_dt(1.0 / 60.0)
            .wgpu_setup(setup)
            .build_eframe(move |cc| {
                let mut app = ViewerApp::new(cc, demo.scene().unwrap(), Backend::Cpu).unwrap();
                app.set_demo(demo);
                app
            });
        let start = h.state().frame();
        h.run_steps(120);
        assert_eq!(h.state().frame(), start + 120, "{demo:?}");
        assert!(h.state_mut().simulation().error.is_none(), "{demo:?}: {:?}", h.state_mut().simulation().error);
        assert_eq!(h.state().demo(), Some(demo));
        if demo == hooke_viewer::Demo::Cloth {
            // "Cut / free fall" releases the pins: the pinned corners, held until now, fall.
            let pinned: Vec<u32> = h.state_mut().simulation().scene.pins.iter().map(|p| p.pin.particle).collect();
            let before = h.state_mut().simulation().state().particle_position;
            h.get_by_label("Cut / free fall").click();
            h.run_steps(30);
            let after = h.state_mut().simulation().state().particle_position;
            for p in pinned {
                let drop = before[p as usize].y - after[p as usize].y;
                assert!(drop > 0.1, "pinned particle {p} fell only {drop} m after the cut");
            }
        }
    }
}

/// The `pbd-rope` demo shows what the article says (§3.1, §3.3): under PBD the rope's stretch
/// depends on the iterations per frame — at 1 it hangs measurably longer than at 20 — and
/// under XPBD the stretch, set by the material (EA = 20 N), is the same within 5 % at 1 and 20
/// iterations. Measured after 5 s of damped hanging.
#[test]
fn the_pbd_rope_demo_stiffens_with_iterations_only_under_pbd() {
    let stretch = |method: hooke::Method, iterations: u32| {
        let mut scene = hooke_viewer::Demo::PbdRope.scene().unwrap();
        scene.solver.set_iterations(iterations);
        if let hooke_io::scene::SolverChoice::Position(s) = &mut scene.solver {
            s.method = method;
        }
        let mut solver = hooke_sim::make_cpu_solver(&scene).unwrap();
        for _ in 0..300 {
            let control = scene.control_at(solver.time());
            solver.step(&control, 1.0 / scene.fps).unwrap();
        }
        let mut st = State::from_model(&scene.model);
        solver.read_state(&mut st);
        let x = &st.particle_position;
        (x[x.len() - 1] - x[0]).length() - 1.1
    };
    let pbd = hooke::Method::Pbd { stiffness: hooke_viewer::demos::PBD_ROPE_STIFFNESS };
    let (p1, p20) = (stretch(pbd, 1), stretch(pbd, 20));
    let (x1, x20) = (stretch(hooke::Method::Xpbd, 1), stretch(hooke::Method::Xpbd, 20));
    println!("rope stretch (m): PBD {p1:.4} at 1 iteration, {p20:.4} at 20; XPBD {x1:.4} at 1, {x20:.4} at 20");
    assert!(p1 > 2.0 * p20 && p1 - p20 > 0.01, "PBD: {p1} at 1 iteration against {p20} at 20");
    assert!((x1 - x20).abs() < 0.05 * x20, "XPBD: {x1} at 1 iteration against {x20} at 20");
    // The material's own stretch under its weight: ∫ρg(L − s)/EA ds = ρgL²/2EA over the rest length.
    let elastic = 0.1 * 9.81 * 1.1 * 1.1 / (2.0 * 20.0);
    assert!((x20 - elastic).abs() < 0.15 * elastic, "XPBD stretch {x20} against the elastic {elastic}");
}

/// Drawing needs no read-back: 100 frames of the cloth demo on the GPU backend map no buffer;
/// a pick maps exactly one (its 8 bytes).
#[test]
fn the_gpu_cloth_demo_maps_no_buffer_but_the_pick() {
    let Some(mut h) = viewer(Backend::Gpu) else { return };
    h.state_mut().set_demo(hooke_viewer::Demo::Cloth);
    h.run_steps(2);
    let start = h.state_mut().simulation().read_backs();
    let frame = h.state().frame();
    h.run_steps(100);
    assert_eq!(h.state().frame(), frame + 100);
    assert_eq!(h.state_mut().simulation().read_backs(), start, "buffers were mapped while playing");
    let (o, d) = h.state().ray_at(h.state().screen_position(glam::Vec3::new(0.0, 1.5, 0.0)).unwrap());
    let _ = h.state_mut().simulation().pick(o, d);
    assert_eq!(h.state_mut().simulation().read_backs(), start + 1, "a pick maps one buffer");
}

/// The topology and coloring demos draw their constraints from the solver's position buffer:
/// 100 frames of each on the GPU map no buffer, while the coloring demo lights its colours in
/// turn (its overlay changes, yet nothing is read back).
#[test]
fn the_gpu_overlay_demos_map_no_buffer() {
    let Some(mut h) = viewer(Backend::Gpu) else { return };
    for demo in [hooke_viewer::Demo::Topology, hooke_viewer::Demo::Coloring] {
        h.state_mut().load(demo.scene().unwrap(), Some(demo)).unwrap();
        h.run_steps(2);
        assert_eq!(h.state_mut().simulation().backend(), Backend::Gpu);
        let start = h.state_mut().simulation().read_backs();
        let lit = h.state().lit_colour();
        h.run_steps(100);
        assert!(!h.state().overlay().is_empty(), "{demo:?} draws no constraints");
        assert_eq!(h.state_mut().simulation().read_backs(), start, "{demo:?}: buffers were mapped while playing");
        if demo == hooke_viewer::Demo::Coloring {
            assert_ne!(h.state().lit_colour(), lit, "the lit colour did not change in 100 frames");
        }
    }
}

/// The `integrators` demo shows §2.3's result after 120 steps of ωΔt = 0.1 (k = 100 N/m,
/// m = 1 kg, Δt = 10 ms): forward Euler's energy has grown by (1 + ω²Δt²)^120 = 3.30 and
/// implicit Euler's shrunk by its inverse, 0.30 (each within 3 %), while symplectic Euler's
/// and Verlet's stay within 6 % of the start at every step (their energy oscillates by about
/// ωΔt/2).
#[test]
fn the_integrators_demo_shows_growth_decay_and_bounded_energy() {
    let Some(mut h) = viewer(Backend::Cpu) else { return };
    h.state_mut().set_demo(hooke_viewer::Demo::Integrators);
    let start = h.state().frame();
    assert_eq!(start, 0);
    h.run_steps(120);
    let demo = h.state().integrators().expect("the integrators demo is shown");
    assert_eq!(demo.steps, 120);
    let ratio = |i| demo.energy_ratio(i).unwrap();
    let (fe, se, ve, ie) = (
        ratio(hooke::Integrator::ForwardEuler),
        ratio(hooke::Integrator::SymplecticEuler),
        ratio(hooke::Integrator::Verlet),
        ratio(hooke::Integrator::ImplicitEuler),
    );
    println!("energy after 120 steps / start: forward {fe:.3}, symplectic {se:.3}, Verlet {ve:.3}, implicit {ie:.3}");
    let grow = 1.01f64.powi(120);
    assert!((fe / grow - 1.0).abs() < 0.03, "forward Euler {fe} against {grow}");
    assert!((ie * grow - 1.0).abs() < 0.03, "implicit Euler {ie} against {}", 1.0 / grow);
    // Bounded at every step, not only the last.
    for run in &demo.runs {
        if matches!(run.integrator, hooke::Integrator::SymplecticEuler | hooke::Integrator::Verlet) {
            let e0 = run.energy[0][1];
            let worst = run.energy.iter().map(|e| (e[1] / e0 - 1.0).abs()).fold(0.0, f64::max);
            println!("{}: largest energy deviation {worst:.4}", run.integrator.name());
            assert!(worst < 0.06, "{}: energy strayed by {worst}", run.integrator.name());
        }
    }
    assert!((se - 1.0).abs() < 0.06 && (ve - 1.0).abs() < 0.06, "symplectic {se}, Verlet {ve}");
}

/// The `topology` demo draws every spring of the 5×5 cloth by family — 40 structural, 32
/// shear and 30 bend springs — and switching a family off rebuilds the model without it (the
/// overlay loses exactly those); without its structural springs the hanging cloth comes apart
/// (measured: its lowest particle at −18.9 m after 3 s against 0.81 m): shear and bend springs
/// join each particle only to particles of its own checkerboard colour, so the half not holding
/// the pinned corners falls freely — what the structural family holds together.
#[test]
fn the_topology_demo_draws_and_removes_each_family() {
    use hooke::ConstraintFamily::*;
    let Some(mut h) = viewer(Backend::Cpu) else { return };
    let scene = hooke_viewer::Demo::Topology.scene().unwrap();
    h.state_mut().load(scene, Some(hooke_viewer::Demo::Topology)).unwrap();
    h.run_steps(2);
    let count = |h: &Harness<'static, ViewerApp>, f: hooke::ConstraintFamily| {
        let app = h.state();
        let colour = match f {
            Structural => glam::Vec3::new(0.95, 0.8, 0.1),
            Shear => glam::Vec3::new(0.1, 0.75, 0.25),
            _ => glam::Vec3::new(0.2, 0.4, 1.0),
        };
        app.overlay().iter().filter(|o| o.2 == colour).count()
    };
    assert_eq!((count(&h, Structural), count(&h, Shear), count(&h, BendSpring)), (40, 32, 30));
    h.state_mut().set_family(1, false).unwrap();
    h.run_steps(2);
    assert_eq!((count(&h, Structural), count(&h, Shear), count(&h, BendSpring)), (40, 0, 30));
    // The sag of the lowest particle after 3 s, with and without the structural family.
    let lowest = |families: [bool; 3]| {
        let text = hooke_viewer::demos::topology_scene(families);
        let scene = hooke_io::scene::parse(&text, "t", "topology", None, 1 << 30).unwrap();
        let mut solver = hooke_sim::make_cpu_solver(&scene).unwrap();
        for _ in 0..180 {
            let control = scene.control_at(solver.time());
            solver.step(&control, 1.0 / scene.fps).unwrap();
        }
        let mut st = State::from_model(&scene.model);
        solver.read_state(&mut st);
        st.particle_position.iter().map(|p| p.y).fold(f32::MAX, f32::min)
    };
    let (with, without) = (lowest([true; 3]), lowest([false, true, true]));
    println!("lowest particle after 3 s: {with:.4} m with structural springs, {without:.4} m without");
    assert!(without < with - 0.01, "without structural springs the cloth should hang lower");
}

/// The `coloring` demo lights its colours one pass after another; the constraints lit
/// together share no particle (what makes them solvable in parallel), and the rope's
/// constraints take exactly two colours — the article's red/black schedule.
#[test]
fn the_coloring_demo_lights_independent_sets_in_turn() {
    let Some(mut h) = viewer(Backend::Cpu) else { return };
    let scene = hooke_viewer::Demo::Coloring.scene().unwrap();
    let model = scene.model.clone();
    h.state_mut().load(scene, Some(hooke_viewer::Demo::Coloring)).unwrap();
    let colours = model.distance().colour_ranges().len();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..(31 * colours + 2) {
        h.run_steps(1);
        let lit = h.state().lit_colour();
        seen.insert(lit);
        let range = model.distance().colour_ranges()[lit].clone();
        let mut used = std::collections::HashSet::new();
        for c in &model.distance().constraints()[range.start as usize..range.end as usize] {
            assert!(used.insert(c.i) && used.insert(c.j), "colour {lit}: particle shared");
        }
    }
    assert_eq!(seen.len(), colours, "every colour is lit in turn");
    let rope = model.body("rope").unwrap().particles.clone();
    let rope_colours: std::collections::BTreeSet<usize> = model
        .distance()
        .colour_ranges()
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            model.distance().constraints()[r.start as usize..r.end as usize].iter().any(|c| rope.contains(&c.i))
        })
        .map(|(k, _)| k)
        .collect();
    assert_eq!(rope_colours.len(), 2, "the rope's colours: {rope_colours:?}");
}

/// "Time per stage" in the panel measures the solver's stages and lists them: on the CPU
/// (wall time) the constraint stage and the colliders are charged and the rows are shown; after
/// G the GPU (timestamps, one frame per reading) goes on measuring; unticked, it stops.
#[test]
fn the_panel_shows_the_time_per_stage() {
    let Some(mut h) = viewer(Backend::Cpu) else { return };
    h.run_steps(2);
    assert!(h.state_mut().simulation().stage_times().is_none());
    h.get_by_label("Time per stage").click();
    // Readings come every 0.5 s of wall time: run until one has come.
    let started = std::time::Instant::now();
    while h.state_mut().simulation().stage_times().is_none() && started.elapsed().as_secs() < 60 {
        h.run_steps(5);
    }
    let t = *h.state_mut().simulation().stage_times().expect("a reading on the CPU");
    println!("CPU: {t:?}");
    assert!(t.frames >= 1 && t.of(hooke::Stage::Constraints) > 0.0 && t.of(hooke::Stage::Colliders) > 0.0);
    h.run_steps(1);
    h.get_by_label("constraints");
    h.get_by_label("wall time per frame");
    h.key_press(egui::Key::G);
    h.run_steps(1);
    assert_eq!(h.state_mut().simulation().backend(), Backend::Gpu);
    if !h.state_mut().simulation().measuring_stages() {
        eprintln!("the adapter offers no timestamps inside passes: GPU part skipped");
        return;
    }
    let started = std::time::Instant::now();
    while h.state_mut().simulation().stage_times().is_none() && started.elapsed().as_secs() < 60 {
        h.run_steps(5);
    }
    let t = *h.state_mut().simulation().stage_times().expect("a reading on the GPU");
    println!("GPU: {t:?}");
    assert!(t.frames == 1 && t.substeps == 20 && t.of(hooke::Stage::Constraints) > 0.0);
    h.run_steps(1);
    h.get_by_label("GPU time per frame (timestamps)");
    h.get_by_label("Time per stage").click();
    h.run_steps(1);
    assert!(!h.state_mut().simulation().measuring_stages());
    assert!(h.state_mut().simulation().stage_times().is_none());
}

/// A cloth hung by two corners and, beside it, a sphere the test drags into it.
const SPHERE_BESIDE_CLOTH: &str = r#"
name = "sphere_beside_cloth"
[solver]
substeps = 20
iterations = 4
frames = 600
[materials.cotton]
density = 0.2
stretch_stiffness = 5000.0
bending_modulus = 1e-5
thickness = 0.01
[[cloth]]
name = "cloth"
material = "cotton"
rows = 12
columns = 12
spacing = 0.05
center = [0.0, 1.5, 0.0]
pin_cells = [[0, 0], [0, -1]]
[[collider]]
name = "ground"
shape = "plane"
point = [0.0, 0.0, 0.0]
normal = [0.0, 1.0, 0.0]
[[collider]]
name = "ball"
shape = "sphere"
center = [0.75, 1.15, -0.55]
radius = 0.2
"#;

/// A drag that starts on a collider moves it in the plane facing the camera through the point
/// grabbed — by exactly the pointer's travel on that plane, within 1 mm — and it stays where it
/// is let go; dragged into the hanging cloth, the sphere pushes it: particles touch the sphere
/// and none is inside it by more than 1 mm. A reset puts the sphere back. On the CPU and the
/// GPU.
#[test]
fn a_dragged_collider_moves_and_pushes_the_cloth() {
    for backend in [Backend::Cpu, Backend::Gpu] {
        let scene =
            hooke_io::scene::parse(SPHERE_BESIDE_CLOTH, "<test>", "sphere_beside_cloth", None, 1 << 30).unwrap();
        let Some(mut h) = viewer_of(scene, backend) else { return };
        h.run_steps(90);
        let centre = glam::Vec3::new(0.75, 1.15, -0.55);
        let press = h.state().screen_position(centre).expect("the sphere is in view");
        let to = h.state().screen_position(centre - glam::Vec3::new(1.0, 0.0, 0.0)).unwrap();
        // Where the drag should take it: the pointer's travel on the plane facing the camera
        // through the point grabbed.
        let (o0, d0) = h.state().ray_at(press);
        let model = h.state_mut().simulation().scene.model.clone();
        let (k, t) = hooke::picking::pick_collider(&model, &[], o0, d0).expect("the ray meets the sphere");
        assert_eq!(k, 1);
        let grabbed = o0 + d0 * t;
        let (o1, d1) = h.state().ray_at(to);
        let expected = o1 + d1 * ((grabbed - o1).dot(d0) / d1.dot(d0)) - grabbed;
        h.event(egui::Event::PointerMoved(press));
        h.event(egui::Event::PointerButton {
            pos: press,
            button: egui::PointerButton::Primary,
            pressed: true,
            modifiers: egui::Modifiers::NONE,
        });
        h.run_steps(1);
        for k in 1..=30 {
            h.event(egui::Event::PointerMoved(press + (to - press) * (k as f32 / 30.0)));
            h.run_steps(1);
        }
        println!("{backend:?}: {:?}", h.state().message());
        assert_eq!(h.state().dragged_collider(), Some(1), "the sphere is not being dragged");
        assert!(h.state().dragged().is_none(), "a particle was grabbed");
        h.event(egui::Event::PointerButton {
            pos: to,
            button: egui::PointerButton::Primary,
            pressed: false,
            modifiers: egui::Modifiers::NONE,
        });
        h.run_steps(60);
        assert!(h.state().dragged_collider().is_none());
        let pose = h.state_mut().simulation().collider_poses()[1];
        println!("the sphere moved by {} (expected {expected})", pose.translation);
        assert!((pose.translation - expected).length() < 1e-3, "{} against {expected}", pose.translation);
        let c = centre + pose.translation;
        let x = h.state_mut().simulation().state().particle_position;
        let gaps: Vec<f32> = x.iter().map(|p| (*p - c).length() - 0.2).collect();
        let deepest = gaps.iter().copied().fold(f32::MAX, f32::min);
        let touching = gaps.iter().filter(|g| **g < 0.01).count();
        println!("{touching} particles within 1 cm of the sphere; the nearest at {deepest:.4} m");
        assert!(touching >= 3, "the sphere does not touch the cloth");
        assert!(deepest > -1e-3, "a particle is {deepest} m inside the sphere");
        h.key_press(egui::Key::R);
        h.run_steps(1);
        assert_eq!(h.state_mut().simulation().collider_poses()[1], hooke::collision::Pose::IDENTITY);
    }
}

/// A hanging cloth for the knife.
const HANGING_CLOTH: &str = r#"
name = "hanging"
[solver]
substeps = 20
iterations = 8
frames = 600
[[cloth]]
name = "curtain"
rows = 16
columns = 16
spacing = 0.04
rotation = [90.0, 0.0, 0.0]
center = [0.0, 1.5, 0.0]
pin_rows = [0]
"#;

/// Shift + drag across a hanging cloth cuts it along the stroke: the model gains particles
/// (split where the cut runs), the lower part falls — 1 s later its lowest particle is more
/// than 1 m below where it hung — while the top row stays pinned; R mends it (the scene's model
/// and particle count come back); the panel's "Cut across the middle" cuts it again. On the CPU
/// and the GPU.
#[test]
fn shift_drag_cuts_the_cloth() {
    for backend in [Backend::Cpu, Backend::Gpu] {
        let scene = hooke_io::scene::parse(HANGING_CLOTH, "<test>", "hanging", None, 1 << 30).unwrap();
        let particles = scene.model.particle_count();
        let Some(mut h) = viewer_of(scene, backend) else { return };
        h.run_steps(30);
        let before = h.state_mut().simulation().state().particle_position;
        let low = |x: &[glam::Vec3]| x.iter().map(|p| p.y).fold(f32::MAX, f32::min);
        let top = |x: &[glam::Vec3]| x.iter().map(|p| p.y).fold(f32::MIN, f32::max);
        let middle = (low(&before) + top(&before)) / 2.0;
        let from = h.state().screen_position(glam::Vec3::new(-0.6, middle, 0.0)).unwrap();
        let to = h.state().screen_position(glam::Vec3::new(0.6, middle, 0.0)).unwrap();
        h.event(egui::Event::ModifiersChanged(egui::Modifiers::SHIFT));
        h.event(egui::Event::PointerMoved(from));
        h.event(egui::Event::PointerButton {
            pos: from,
            button: egui::PointerButton::Primary,
            pressed: true,
            modifiers: egui::Modifiers::SHIFT,
        });
        h.run_steps(1);
        for k in 1..=10 {
            h.event(egui::Event::PointerMoved(from + (to - from) * (k as f32 / 10.0)));
            h.run_steps(1);
        }
        h.event(egui::Event::PointerButton {
            pos: to,
            button: egui::PointerButton::Primary,
            pressed: false,
            modifiers: egui::Modifiers::SHIFT,
        });
        h.event(egui::Event::ModifiersChanged(egui::Modifiers::NONE));
        h.run_steps(1);
        println!("{backend:?}: {}", h.state().message());
        let cut = h.state_mut().simulation().scene.model.particle_count();
        assert!(cut > particles, "{backend:?}: no particle was split ({cut})");
        h.run_steps(60);
        let after = h.state_mut().simulation().state().particle_position;
        println!("{backend:?}: lowest {} → {}, top {} → {}", low(&before), low(&after), top(&before), top(&after));
        assert!(low(&after) < low(&before) - 1.0, "{backend:?}: the lower part did not fall");
        assert!((top(&after) - top(&before)).abs() < 0.01, "{backend:?}: the top row moved");
        h.key_press(egui::Key::R);
        h.run_steps(2);
        assert_eq!(h.state_mut().simulation().scene.model.particle_count(), particles, "{backend:?}: R did not mend");
        // The panel's button cuts it straight across.
        h.run_steps(30);
        h.get_by_label("Cut across the middle (C)").click();
        h.run_steps(1);
        println!("{backend:?}: {}", h.state().message());
        assert!(
            h.state_mut().simulation().scene.model.particle_count() > particles,
            "{backend:?}: the button cut nothing"
        );
    }
}

/// A scripted GPU run (`hooke view --frames N`) that blows up is reported when it ends, with
/// the frames in which the runaway began: the viewer reads the GPU's health record only every
/// 10 s of simulated time while drawing, and a 5-frame run whose pins flew off to 10³⁰ m ended
/// as if all was well (a longer one named the start of its last frame, t = 9.98 s, where the
/// CPU names 0.0167 s).
#[test]
fn a_scripted_gpu_run_that_blew_up_is_reported_when_it_ends() {
    let scene = "[solver]\nsubsteps = 5\niterations = 2\n[[cloth]]\nname = \"c\"\nrows = 5\ncolumns = 5\nspacing = 0.1\n\
                 center = [0.0, 1.0, 0.0]\npin_rows = []\n[[cloth.pin_groups]]\nrows = [0]\n\
                 keyframes = [{ time = 0.0 }, { time = 1.0, translation = [1e9, 0.0, 0.0] }]\n";
    let mut scene = hooke_io::scene::parse(scene, "flung.toml", "flung", None, 1 << 30).unwrap();
    // Flung to 10³⁰ m through the library (a scene file is refused beyond 10⁹ m since
    // 2026-12-06): squared distances overflow f32 and the particles become non-finite.
    let keys =
        [(0.0, 0.0), (1.0, 1e30)].map(|(t, x)| hooke::collision::Keyframe::translation(t, hooke::glam::Vec3::X * x));
    let flung = std::sync::Arc::new(hooke::collision::Motion::new(keys.to_vec()).unwrap());
    for p in &mut scene.pins {
        let (_, from) = p.motion.clone().expect("the pin group moves");
        p.motion = Some((flung.clone(), from));
    }
    let Some(mut h) = viewer_of(scene, Backend::Gpu) else { return };
    let failure = std::sync::Arc::new(std::sync::Mutex::new(None));
    h.state_mut().quit_after(5, Some(failure.clone()));
    h.run_steps(10);
    let message = failure.lock().unwrap().clone().expect("the blow-up is reported");
    assert!(
        message.contains("became non-finite")
            && message.contains("the health record is read every 600 frames")
            && message.contains("from t = 0.0000 s"),
        "{message}"
    );
}
