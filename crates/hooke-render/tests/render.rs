//! The off-screen renderer on a real device (lavapipe in CI): what is drawn lies where the
//! camera projects it, the shading follows the normals, the two sides of the cloth differ,
//! the GPU solver's buffers draw the same picture as the CPU's state, and images round-trip
//! through PNG and APNG.

use glam::{Vec3, Vec4};
use hooke::{Model, Solver, State};
use hooke_gpu::GpuContext;
use hooke_render::{Camera, ClothBuffers, HostCloth, Palette, RenderSettings, Renderer};
use std::sync::{Arc, OnceLock};

/// One device per test binary, or a skip (a panic under `HOOKE_REQUIRE_GPU=1`).
fn gpu() -> Option<Arc<GpuContext>> {
    static GPU: OnceLock<Option<Arc<GpuContext>>> = OnceLock::new();
    GPU.get_or_init(|| match GpuContext::new() {
        Ok(ctx) => Some(ctx),
        Err(e) if std::env::var("HOOKE_REQUIRE_GPU").is_ok_and(|v| v == "1") => {
            panic!("HOOKE_REQUIRE_GPU=1 but {e}")
        }
        Err(e) => {
            eprintln!("skipped: no adapter ({e})");
            None
        }
    })
    .clone()
}

macro_rules! gpu_or_skip {
    () => {
        match gpu() {
            Some(g) => g,
            None => return,
        }
    };
}

/// The default scene with a fixed iteration count (the GPU decides "auto" per frame, the CPU
/// per substep), so that the CPU and the GPU compute the same positions.
fn default_scene() -> hooke_io::scene::Scene {
    let s = hooke_io::scene::DEFAULT_SCENE;
    let mut scene = hooke_io::scene::parse(s, "<built-in default scene>", "cloth_on_sphere", None, 1 << 30).unwrap();
    let n = scene.solver.iterations();
    scene.solver.set_iterations(n);
    scene
}

/// The default scene after `frames` frames on the CPU: model and positions.
fn simulate(frames: usize) -> (Arc<Model>, Vec<Vec3>, hooke_io::scene::Scene) {
    let scene = default_scene();
    let mut solver = hooke_sim::make_cpu_solver(&scene).unwrap();
    for _ in 0..frames {
        let control = scene.control_at(solver.time());
        solver.step(&control, 1.0 / scene.fps).unwrap();
    }
    let mut st = State::from_model(&scene.model);
    solver.read_state(&mut st);
    (scene.model.clone(), st.particle_position, scene)
}

const W: u32 = 320;
const H: u32 = 240;

fn cloth_only() -> RenderSettings {
    RenderSettings { width: W, height: H, samples: 1, colliders: false, ground: false, ..Default::default() }
}

fn background(p: &Palette) -> [u8; 3] {
    // The clear colour, linear → sRGB as the target stores it.
    let srgb = |c: f32| {
        let s = if c <= 0.003_130_8 { 12.92 * c } else { 1.055 * c.powf(1.0 / 2.4) - 0.055 };
        (s * 255.0).round() as u8
    };
    [srgb(p.background.x), srgb(p.background.y), srgb(p.background.z)]
}

fn differs(px: &[u8], bg: [u8; 3]) -> bool {
    (0..3).any(|c| px[c].abs_diff(bg[c]) > 2)
}

/// Pixels (x, y) not of the background colour.
fn drawn(rgba: &[u8], bg: [u8; 3]) -> Vec<(u32, u32)> {
    rgba.chunks_exact(4)
        .enumerate()
        .filter(|(_, px)| differs(px, bg))
        .map(|(k, _)| (k as u32 % W, k as u32 / W))
        .collect()
}

fn luminance(px: &[u8]) -> f64 {
    0.2126 * px[0] as f64 + 0.7152 * px[1] as f64 + 0.0722 * px[2] as f64
}

/// The cloth drawn alone covers exactly its particles' projected bounding box: the box of its
/// pixels matches the box of the particles projected by the camera's matrix within 2 pixels
/// on every side (the cloth's edges are straight lines between particles, so its silhouette
/// reaches the extreme particles and goes no farther).
#[test]
fn the_cloth_covers_its_projected_bounding_box() {
    let ctx = gpu_or_skip!();
    let (model, x, _) = simulate(60);
    let renderer = Renderer::new(ctx.clone(), model.clone(), cloth_only()).unwrap();
    let cloth = HostCloth::new(&ctx, model.clone());
    cloth.upload(&ctx, &x).unwrap();
    let camera = Camera::framing(&model, 0.6, 0.4, W as f32 / H as f32);
    renderer.draw(cloth.buffers(), &[], &camera);
    let rgba = renderer.read_rgba().unwrap();
    let px = drawn(&rgba, background(&renderer.settings().palette));
    assert!(px.len() > 1000, "only {} cloth pixels", px.len());
    assert_box_is_projected(&px, renderer.view_projection(&camera), &x);
}

/// The box of the pixels `px` is the box of `points` (m) projected by `vp`, within 2 pixels on
/// every side.
fn assert_box_is_projected(px: &[(u32, u32)], vp: glam::Mat4, points: &[Vec3]) {
    let (x0, x1) = (px.iter().map(|p| p.0).min().unwrap(), px.iter().map(|p| p.0).max().unwrap());
    let (y0, y1) = (px.iter().map(|p| p.1).min().unwrap(), px.iter().map(|p| p.1).max().unwrap());
    let (mut lo, mut hi) = (glam::Vec2::splat(f32::MAX), glam::Vec2::splat(f32::MIN));
    for p in points {
        let c = vp * Vec4::new(p.x, p.y, p.z, 1.0);
        let ndc = c.truncate() / c.w;
        let s = glam::Vec2::new((ndc.x + 1.0) * 0.5 * W as f32, (1.0 - ndc.y) * 0.5 * H as f32);
        lo = lo.min(s);
        hi = hi.max(s);
    }
    println!("pixels x {x0}..={x1}, y {y0}..={y1}; projected x {:.1}..{:.1}, y {:.1}..{:.1}", lo.x, hi.x, lo.y, hi.y);
    for (got, want) in [(x0 as f32, lo.x), (x1 as f32 + 1.0, hi.x), (y0 as f32, lo.y), (y1 as f32 + 1.0, hi.y)] {
        assert!((got - want).abs() <= 2.0, "pixel box side {got} against projected {want}");
    }
}

/// The shading follows the normals: over the cloth's pixels the brightness varies with a
/// standard deviation several times that of the same cloth drawn with one normal everywhere
/// (where only the specular highlight's view direction changes). The cloth is taken at 3 s,
/// draped and settled on the sphere: while it still swings (at 1 and 2 s) folds turn some of its
/// triangles' back sides, which have their own colour, to the camera, and one normal
/// everywhere is then not uniform (spread 14.8 and 5.2 against 0.0 at 1.5, 2.5, 3 and 4 s).
#[test]
fn the_shading_follows_the_normals() {
    let ctx = gpu_or_skip!();
    let (model, x, _) = simulate(180);
    let renderer = Renderer::new(ctx.clone(), model.clone(), cloth_only()).unwrap();
    let cloth = HostCloth::new(&ctx, model.clone());
    let camera = Camera::framing(&model, 0.6, 0.4, W as f32 / H as f32);
    let bg = background(&renderer.settings().palette);
    let spread = |normals: &[Vec3]| {
        cloth.upload_with_normals(&ctx, &x, normals).unwrap();
        renderer.draw(cloth.buffers(), &[], &camera);
        let rgba = renderer.read_rgba().unwrap();
        let l: Vec<f64> = rgba.chunks_exact(4).filter(|p| differs(p, bg)).map(luminance).collect();
        let mean = l.iter().sum::<f64>() / l.len() as f64;
        (l.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / l.len() as f64).sqrt()
    };
    let lit = spread(&hooke::surface::vertex_normals(&model, &x));
    let flat = spread(&vec![Vec3::Y; x.len()]);
    println!("brightness spread over the cloth: {lit:.2} with its normals, {flat:.2} with one normal");
    assert!(lit > 4.0 * flat && lit > 3.0, "shading does not follow the normals: {lit} against {flat}");
}

/// Two-sided lighting: a flat sheet seen from above and from below shows its two colours —
/// the front (blue) from one side and the back (orange) from the other.
#[test]
fn the_two_sides_of_the_cloth_have_their_own_colours() {
    let ctx = gpu_or_skip!();
    let (model, x, _) = simulate(0);
    let renderer = Renderer::new(ctx.clone(), model.clone(), cloth_only()).unwrap();
    let cloth = HostCloth::new(&ctx, model.clone());
    cloth.upload(&ctx, &x).unwrap();
    let bg = background(&renderer.settings().palette);
    let mean_colour = |elevation: f32| {
        renderer.draw(cloth.buffers(), &[], &Camera::framing(&model, 0.3, elevation, W as f32 / H as f32));
        let rgba = renderer.read_rgba().unwrap();
        let px: Vec<&[u8]> = rgba.chunks_exact(4).filter(|p| differs(p, bg)).collect();
        assert!(px.len() > 500, "{} cloth pixels", px.len());
        let sum = px.iter().fold([0.0f64; 3], |s, p| [s[0] + p[0] as f64, s[1] + p[1] as f64, s[2] + p[2] as f64]);
        sum.map(|v| v / px.len() as f64)
    };
    let (above, below) = (mean_colour(1.2), mean_colour(-1.2));
    println!("mean colour from above {above:?}, from below {below:?}");
    let blue = |c: [f64; 3]| c[2] > c[0] + 30.0;
    let orange = |c: [f64; 3]| c[0] > c[2] + 30.0;
    assert!((blue(above) && orange(below)) || (orange(above) && blue(below)), "{above:?} / {below:?}");
}

/// The colliders are drawn where they are: the sphere's centre projects onto a red pixel with
/// colliders on, and onto cloth or background with them off.
#[test]
fn the_sphere_is_drawn_where_it_is() {
    let ctx = gpu_or_skip!();
    let (model, x, _) = simulate(0);
    let camera = Camera::framing(&model, 0.6, 0.4, W as f32 / H as f32);
    let hooke::collision::Shape::Sphere { center, .. } = model.colliders()[0].shape else {
        panic!("the default scene's first collider is its sphere")
    };
    let pixel_at_centre = |colliders: bool| {
        let settings = RenderSettings { colliders, ..cloth_only() };
        let renderer = Renderer::new(ctx.clone(), model.clone(), settings).unwrap();
        let cloth = HostCloth::new(&ctx, model.clone());
        cloth.upload(&ctx, &x).unwrap();
        renderer.draw(cloth.buffers(), &[], &camera);
        let rgba = renderer.read_rgba().unwrap();
        let c = renderer.view_projection(&camera) * center.extend(1.0);
        let ndc = c.truncate() / c.w;
        let (px, py) = (((ndc.x + 1.0) * 0.5 * W as f32) as usize, ((1.0 - ndc.y) * 0.5 * H as f32) as usize);
        let k = 4 * (py * W as usize + px);
        [rgba[k], rgba[k + 1], rgba[k + 2]]
    };
    let (on, off) = (pixel_at_centre(true), pixel_at_centre(false));
    println!("pixel at the sphere's centre: {on:?} with colliders, {off:?} without");
    let red = |c: [u8; 3]| c[0] as i32 > c[1] as i32 + 60 && c[0] as i32 > c[2] as i32 + 60;
    assert!(red(on) && !red(off));
}

/// A mesh collider (a distance grid) is drawn as the mesh its grid was sampled from, where its
/// pose puts it: an octahedron of 0.3 m, turned by 30° about the vertical and moved 0.2 m,
/// covers its vertices' projected bounding box within 2 pixels on every side, in the
/// colliders' colour; the same grid given without its mesh draws nothing.
#[test]
fn a_mesh_collider_is_drawn_where_its_pose_puts_it() {
    use hooke::collision::{Collider, ColliderMesh, ColliderSurface, GridResolution, Pose, SdfGrid, Shape, SignMethod};
    let ctx = gpu_or_skip!();
    let centre = Vec3::new(0.0, 1.0, 0.0);
    let corners = [Vec3::X, -Vec3::X, Vec3::Y, -Vec3::Y, Vec3::Z, -Vec3::Z].map(|d| centre + d * 0.3);
    let mut triangles = Vec::new();
    for (a, b) in [(0u32, 2u32), (2, 1), (1, 3), (3, 0)] {
        triangles.push([a, b, 4]);
        triangles.push([b, a, 5]);
    }
    let (mesh, _) = ColliderMesh::new(&corners, &triangles, SignMethod::PseudoNormals).unwrap();
    let grid = Arc::new(SdfGrid::build(&mesh, GridResolution::Cells(16), None).unwrap());
    let surface = Arc::new(ColliderSurface::from_mesh(&mesh));
    // A small cloth far outside the picture (the renderer draws a model's cloth).
    let model = |with_surface: bool| {
        let mut b = hooke::model::ModelBuilder::new();
        let mut g = hooke::model::ClothGrid::new("cloth", 2, 2, 0.1);
        g.center = Vec3::new(50.0, 0.0, 0.0);
        b.add_cloth_grid(&g).unwrap();
        let collider = Collider::new("octahedron", Shape::Sdf(grid.clone()));
        b.add_collider(if with_surface { collider.with_surface(surface.clone()) } else { collider }).unwrap();
        Arc::new(b.finalize().unwrap())
    };
    let pose = Pose {
        translation: Vec3::new(0.2, -0.1, 0.0),
        rotation: glam::Quat::from_rotation_y(std::f32::consts::FRAC_PI_6),
    };
    let camera = Camera { eye: Vec3::new(0.4, 1.6, 2.5), target: centre, fov_y: 0.7, near: 0.1, far: 10.0 };
    let settings = RenderSettings { colliders: true, ..cloth_only() };
    let draw = |model: Arc<Model>| {
        let renderer = Renderer::new(ctx.clone(), model.clone(), settings).unwrap();
        let cloth = HostCloth::new(&ctx, model.clone());
        cloth.upload(&ctx, model.particle_position()).unwrap();
        renderer.draw(cloth.buffers(), &[pose], &camera);
        let rgba = renderer.read_rgba().unwrap();
        (drawn(&rgba, background(&renderer.settings().palette)), rgba, renderer.view_projection(&camera))
    };
    let (px, rgba, vp) = draw(model(true));
    assert!(px.len() > 1000, "only {} pixels of the mesh collider", px.len());
    let red = px.iter().filter(|&&(x, y)| {
        let k = 4 * (y * W + x) as usize;
        rgba[k] as i32 > rgba[k + 1] as i32 + 30 && rgba[k] as i32 > rgba[k + 2] as i32 + 30
    });
    assert!(red.count() > px.len() * 9 / 10, "the mesh collider is not drawn in the colliders' colour");
    let origin = model(true).colliders()[0].shape.origin();
    let placed = corners.map(|p| pose.rotation * (p - origin) + origin + pose.translation);
    assert_box_is_projected(&px, vp, &placed);
    let (none, _, _) = draw(model(false));
    assert!(none.is_empty(), "{} pixels drawn for a grid without its mesh", none.len());
}

/// The GPU solver's own buffers (positions and normals on the device, no copy) draw the same
/// picture as the CPU solver's state uploaded: Gauss–Seidel on lavapipe gives the CPU's
/// positions bit for bit, and the normals differ by rounding only, so fewer than 0.5 % of
/// the pixels differ by more than 8/255.
#[test]
fn the_gpu_solver_buffers_draw_what_the_cpu_state_draws() {
    let ctx = gpu_or_skip!();
    let frames = 30;
    let (model, x, scene) = simulate(frames);
    let mut options = hooke_sim::SolverOptions::new(hooke_sim::Backend::Gpu);
    options.context = Some(ctx.clone());
    let mut gpu = hooke_sim::make_gpu_solver(&scene, &options).unwrap();
    for _ in 0..frames {
        let control = scene.control_at(gpu.time());
        gpu.step(&control, 1.0 / scene.fps).unwrap();
    }
    let settings = RenderSettings { width: W, height: H, ..Default::default() };
    let renderer = Renderer::new(ctx.clone(), model.clone(), settings).unwrap();
    let camera = Camera::framing(&model, 0.6, 0.4, W as f32 / H as f32);
    let host = HostCloth::new(&ctx, model.clone());
    host.upload(&ctx, &x).unwrap();
    renderer.draw(host.buffers(), &[], &camera);
    let from_cpu = renderer.read_rgba().unwrap();
    let device = ClothBuffers {
        positions: gpu.position_buffer(),
        normals: gpu.normal_buffer(),
        triangles: gpu.triangle_buffer(),
    };
    renderer.draw(device, &[], &camera);
    let from_gpu = renderer.read_rgba().unwrap();
    let differing = from_cpu
        .chunks_exact(4)
        .zip(from_gpu.chunks_exact(4))
        .filter(|(a, b)| (0..3).any(|c| a[c].abs_diff(b[c]) > 8))
        .count();
    println!("{differing} of {} pixels differ by more than 8/255", W * H);
    assert!(differing * 200 < (W * H) as usize, "{differing} pixels differ");
    // And the cloth moved: the first frame's picture is not the same.
    let (m0, x0, _) = simulate(0);
    assert_eq!(m0.particle_count(), model.particle_count());
    host.upload(&ctx, &x0).unwrap();
    renderer.draw(host.buffers(), &[], &camera);
    let start = renderer.read_rgba().unwrap();
    let moved = start.chunks_exact(4).zip(from_gpu.chunks_exact(4)).filter(|(a, b)| a != b).count();
    assert!(moved * 20 > (W * H) as usize, "only {moved} pixels changed in {frames} frames");
}

/// A grid finer than the picture is drawn at a coarser level of detail that looks the same: a
/// 300 × 300 cloth, rippled, in a 320 × 240 picture (budget 19 200 triangles, its own 178 802)
/// is drawn at a stride above 1; the pixel box of the cloth is the full mesh's within a pixel,
/// the cloth covers the same pixels but for under 2 % of them, and its mean brightness is the
/// same within 3 %.
#[test]
fn a_fine_grid_drawn_at_a_coarser_detail_looks_the_same() {
    let ctx = gpu_or_skip!();
    let mut b = hooke::ModelBuilder::new();
    b.add_cloth_grid(&hooke::ClothGrid::new("fine", 300, 300, 1.0 / 299.0)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    // Ripples of 5 cm, wavelength 0.25 m, so the shading varies over the cloth.
    let x: Vec<Vec3> = model
        .particle_position()
        .iter()
        .map(|p| *p + Vec3::Y * 0.05 * (p.x * 25.0).sin() * (p.z * 25.0).cos())
        .collect();
    let camera = Camera::framing(&model, 0.6, 0.5, W as f32 / H as f32);
    let draw = |level_of_detail: bool| {
        let renderer =
            Renderer::new(ctx.clone(), model.clone(), RenderSettings { level_of_detail, ..cloth_only() }).unwrap();
        let cloth = HostCloth::new(&ctx, model.clone());
        cloth.upload(&ctx, &x).unwrap();
        renderer.draw(cloth.buffers(), &[], &camera);
        (renderer.cloth_stride(), renderer.read_rgba().unwrap(), background(&renderer.settings().palette))
    };
    let ((coarse_stride, coarse, bg), (full_stride, full, _)) = (draw(true), draw(false));
    assert!(coarse_stride > 1 && full_stride == 1, "strides {coarse_stride} and {full_stride}");
    let (a, b) = (drawn(&coarse, bg), drawn(&full, bg));
    let bounds = |px: &[(u32, u32)]| {
        let x = px.iter().map(|p| p.0);
        let y = px.iter().map(|p| p.1);
        [x.clone().min().unwrap(), x.max().unwrap(), y.clone().min().unwrap(), y.max().unwrap()]
    };
    let (ba, bb) = (bounds(&a), bounds(&b));
    println!("stride {coarse_stride}: box {ba:?} against {bb:?}; {} and {} cloth pixels", a.len(), b.len());
    assert!(ba.iter().zip(&bb).all(|(p, q)| p.abs_diff(*q) <= 1), "{ba:?} against {bb:?}");
    let covered = |rgba: &[u8]| rgba.chunks_exact(4).map(|p| differs(p, bg)).collect::<Vec<_>>();
    let mismatch = covered(&coarse).iter().zip(covered(&full)).filter(|(p, q)| **p != *q).count();
    assert!(mismatch * 50 < b.len(), "{mismatch} of {} pixels covered by one picture only", b.len());
    let mean = |rgba: &[u8]| {
        let l: Vec<f64> = rgba.chunks_exact(4).filter(|p| differs(p, bg)).map(luminance).collect();
        l.iter().sum::<f64>() / l.len() as f64
    };
    let (la, lb) = (mean(&coarse), mean(&full));
    assert!((la - lb).abs() < 0.03 * lb, "mean brightness {la:.1} against {lb:.1}");
}

/// Overlay lines join particles in the buffers each draw is given: set once, they follow the
/// cloth as it moves (drawn from the new positions with no new overlay), in their colour, over
/// the cloth; a segment naming a particle the model lacks is left out.
#[test]
fn overlay_lines_follow_the_particles() {
    let ctx = gpu_or_skip!();
    let (model, x0, _) = simulate(0);
    let (_, x1, _) = simulate(60);
    let mut renderer = Renderer::new(ctx.clone(), model.clone(), cloth_only()).unwrap();
    let magenta = Vec3::new(1.0, 0.0, 1.0);
    // Every structural constraint, and one to a particle that does not exist.
    let set = model.distance();
    let mut segments: Vec<(u32, u32, Vec3)> = set
        .constraints()
        .iter()
        .zip(set.families())
        .filter(|(_, f)| **f == hooke::ConstraintFamily::Structural)
        .map(|(c, _)| (c.i, c.j, magenta))
        .collect();
    segments.push((0, model.particle_count() as u32 + 5, magenta));
    renderer.set_overlay(&segments);
    let cloth = HostCloth::new(&ctx, model.clone());
    let camera = Camera::framing(&model, 0.6, 0.4, W as f32 / H as f32);
    let vp = renderer.view_projection(&camera);
    let pixel = |p: Vec3| {
        let c = vp * p.extend(1.0);
        let ndc = c.truncate() / c.w;
        (((ndc.x + 1.0) * 0.5 * W as f32) as i32, ((1.0 - ndc.y) * 0.5 * H as f32) as i32)
    };
    let is_magenta = |px: &[u8]| px[0] > 200 && px[1] < 60 && px[2] > 200;
    for (name, x) in [("start", &x0), ("after 60 frames", &x1)] {
        cloth.upload(&ctx, x).unwrap();
        renderer.draw(cloth.buffers(), &[], &camera);
        let rgba = renderer.read_rgba().unwrap();
        // The midpoint of each segment is on a magenta pixel (or beside one: lines are a pixel
        // wide and the midpoint may fall on the pixel's edge).
        let mut missed = 0;
        for &(i, j, _) in segments.iter().filter(|s| s.1 < model.particle_count() as u32) {
            let (px, py) = pixel((x[i as usize] + x[j as usize]) * 0.5);
            let near = (-1..=1).flat_map(|dy| (-1..=1).map(move |dx| (px + dx, py + dy))).any(|(u, v)| {
                (0..W as i32).contains(&u) && (0..H as i32).contains(&v) && {
                    let k = 4 * (v as usize * W as usize + u as usize);
                    is_magenta(&rgba[k..k + 4])
                }
            });
            missed += usize::from(!near);
        }
        let count = segments.len() - 1;
        println!("{name}: {missed} of {count} segment midpoints off the magenta lines");
        assert!(missed * 100 <= count, "{name}: {missed} of {count} midpoints off the lines");
    }
}

/// PNG and animated PNG round-trip: the decoded pixels are the ones written, the animation
/// holds its frames, and a file that cannot be written leaves nothing behind.
#[test]
fn images_round_trip_through_png_and_apng() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (7u32, 5u32);
    let a: Vec<u8> = (0..w * h * 4).map(|k| (k * 37 % 251) as u8).collect();
    let b: Vec<u8> = a.iter().map(|v| v.wrapping_add(90)).collect();
    let still = dir.path().join("still.png");
    hooke_render::write_png(&still, w, h, &a).unwrap();
    let decode = |path: &std::path::Path| {
        let mut reader =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap())).read_info().unwrap();
        let frames = reader.info().animation_control().map_or(1, |c| c.num_frames);
        let mut out = Vec::new();
        for _ in 0..frames {
            let mut buf = vec![0; reader.output_buffer_size().unwrap()];
            let info = reader.next_frame(&mut buf).unwrap();
            buf.truncate(info.buffer_size());
            out.push(buf);
        }
        out
    };
    assert_eq!(decode(&still), vec![a.clone()]);
    let anim = dir.path().join("anim.png");
    let mut writer = hooke_render::AnimationWriter::new(&anim, w, h, 2, (1, 30)).unwrap();
    writer.add(&a).unwrap();
    writer.add(&b).unwrap();
    assert!(writer.add(&a).is_err(), "a third frame of two");
    writer.finish().unwrap();
    assert_eq!(decode(&anim), vec![a.clone(), b]);
    // A wrong size and an unfinished animation are errors and leave no file.
    assert!(hooke_render::write_png(&dir.path().join("bad.png"), w + 1, h, &a).is_err());
    let short = dir.path().join("short.png");
    let mut writer = hooke_render::AnimationWriter::new(&short, w, h, 3, (1, 30)).unwrap();
    writer.add(&a).unwrap();
    assert!(writer.finish().is_err());
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "only the two finished files remain: {left:?}");
}
