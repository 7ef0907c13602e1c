//! What a renderer reads: normals, tangents, and the position and normal buffers.

use crate::*;

/// Article §6: normals from fixed-point atomics are unit length and equal to the CPU's
/// area-weighted normals of the same (deformed) positions.
#[test]
fn normals_match_cpu_area_weighted_normals() {
    let ctx = gpu_or_skip!();
    let (model, control, _) = sphere_scene();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    // Before any step the normals are those of the flat cloth: +y.
    let mut n = Vec::new();
    gpu.read_normals(&mut n);
    assert!(n.iter().all(|v| (*v - Vec3::Y).length() < 1e-6), "{:?}", n[0]);
    for _ in 0..40 {
        gpu.step(&control, 1.0 / 60.0).unwrap();
    }
    let mut x = Vec::new();
    gpu.read_positions(&mut x);
    gpu.read_normals(&mut n);
    let expected = cpu_normals(&model, &x);
    let worst = n.iter().zip(&expected).map(|(a, b)| (*a - *b).length()).fold(0.0, f32::max);
    let unit = n.iter().map(|v| (v.length() - 1.0).abs()).fold(0.0, f32::max);
    let bent = expected.iter().map(|v| v.dot(Vec3::Y)).fold(1.0, f32::min);
    eprintln!("normals: max |n_gpu − n_cpu| = {worst:.3e}, max |‖n‖ − 1| = {unit:.3e}, min n·y = {bent:.3}");
    assert!(bent < 0.9, "the mesh is not deformed enough to test normals");
    assert!(unit < 1e-5, "{unit}");
    assert!(worst < 1e-3, "{worst}");
}

/// UV tangents: on the flat, undeformed grid (rotated, before any step) every tangent is the
/// grid's u (column) direction; on the cloth deformed over the sphere they are unit length,
/// orthogonal to the GPU normals (|t·n| < 10⁻³) and equal to the CPU reference
/// (`hooke::surface::vertex_tangents` of the same positions) within 10⁻³. A rope has none.
#[test]
fn tangents_match_the_cpu_reference() {
    let ctx = gpu_or_skip!();
    // Flat and rotated: u is the grid's local x.
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 9, 7, 0.05);
    g.rotation = Quat::from_rotation_y(0.6) * Quat::from_rotation_x(0.4);
    b.add_cloth_grid(&g).unwrap();
    let flat = Arc::new(b.finalize().unwrap());
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), flat.clone(), settings()).unwrap();
    let mut t = Vec::new();
    gpu.read_tangents(&mut t);
    let u = g.rotation * Vec3::X;
    let worst = t.iter().map(|t| (*t - u).length()).fold(0.0, f32::max);
    eprintln!("flat grid: max |t − u| = {worst:.3e}");
    assert_eq!(t.len(), flat.particle_count());
    assert!(worst < 1e-5, "{worst}");
    // Deformed.
    let (model, control, _) = sphere_scene();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    for _ in 0..40 {
        gpu.step(&control, 1.0 / 60.0).unwrap();
    }
    let (mut x, mut n) = (Vec::new(), Vec::new());
    gpu.read_positions(&mut x);
    gpu.read_normals(&mut n);
    gpu.read_tangents(&mut t);
    let expected = hooke::surface::vertex_tangents(&model, &x, &hooke::surface::vertex_normals(&model, &x));
    let unit = t.iter().map(|v| (v.length() - 1.0).abs()).fold(0.0, f32::max);
    let ortho = t.iter().zip(&n).map(|(t, n)| t.dot(*n).abs()).fold(0.0, f32::max);
    let worst = t.iter().zip(&expected).map(|(a, b)| (*a - *b).length()).fold(0.0, f32::max);
    // How far the tangents turned from the flat grid's u = x direction: the test means
    // something only if they did.
    let turned = expected.iter().map(|v| v.dot(Vec3::X)).fold(1.0, f32::min);
    eprintln!(
        "deformed: max |t_gpu − t_cpu| = {worst:.3e}, max |‖t‖ − 1| = {unit:.3e}, max |t·n| = {ortho:.3e}, min t·x = {turned:.3}"
    );
    assert!(turned < 0.9, "the mesh is not deformed enough to test tangents");
    assert!(unit < 1e-5, "{unit}");
    assert!(ortho < 1e-3, "{ortho}");
    assert!(worst < 1e-3, "{worst}");
    // A rope has no UVs, so no tangents.
    let mut b = ModelBuilder::new();
    b.add_rope(&Rope::straight("rope", Vec3::ZERO, Vec3::X, 8)).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), Arc::new(b.finalize().unwrap()), settings()).unwrap();
    assert!(gpu.tangent_buffer().is_none());
    gpu.read_tangents(&mut t);
    assert!(t.is_empty());
}

/// The device buffers a renderer binds: 16 bytes per particle, vertex and storage usage, and
/// the positions in them are those `read_positions` returns.
#[test]
fn position_and_normal_buffers_are_bindable_for_rendering() {
    let ctx = gpu_or_skip!();
    let (model, control) = contact_free_scene();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    gpu.step(&control, 1.0 / 60.0).unwrap();
    let n = model.particle_count() as u64;
    for buf in [gpu.position_buffer(), gpu.normal_buffer()] {
        assert_eq!(buf.size(), 16 * n);
        assert!(buf.usage().contains(wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::STORAGE));
    }
    // Copy the raw records as a renderer would see them.
    let device = ctx.device();
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16 * n,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut enc = device.create_command_encoder(&Default::default());
    enc.copy_buffer_to_buffer(gpu.position_buffer(), 0, &staging, 0, 16 * n);
    ctx.queue().submit([enc.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |r| r.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let raw: Vec<[f32; 4]> = bytemuck::pod_collect_to_vec(&staging.get_mapped_range(..).unwrap());
    let mut x = Vec::new();
    gpu.read_positions(&mut x);
    for (k, (r, p)) in raw.iter().zip(&x).enumerate() {
        assert_eq!(Vec3::new(r[0], r[1], r[2]), *p);
        let expected_w = if control.is_pinned(k as u32) { 0.0 } else { model.particle_inv_mass()[k] };
        assert_eq!(r[3], expected_w, "w of particle {k}");
    }
}

/// Picking: on a cloth deformed over the sphere, 400 rays from a camera above through a grid of
/// points over the cloth (most hit, some miss past its edges) give on the GPU exactly what
/// `hooke::picking::pick` gives on the host — the same triangle, corner and particle, and the
/// same distance bit for bit — and the hit point lies on the ray within 10⁻⁵ m of the picked
/// triangle's plane.
#[test]
fn gpu_picking_matches_the_cpu() {
    let ctx = gpu_or_skip!();
    let (model, control, _) = sphere_scene();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    for _ in 0..40 {
        gpu.step(&control, 1.0 / 60.0).unwrap();
    }
    let mut x = Vec::new();
    gpu.read_positions(&mut x);
    let (lo, hi) = x.iter().fold((Vec3::MAX, Vec3::MIN), |(a, b), p| (a.min(*p), b.max(*p)));
    let eye = Vec3::new((lo.x + hi.x) * 0.5, hi.y + 1.0, (lo.z + hi.z) * 0.5);
    let (mut hits, mut misses) = (0, 0);
    for i in 0..20 {
        for j in 0..20 {
            let s = |k: usize, a: f32, b: f32| a + (b - a) * (k as f32 / 19.0 * 1.2 - 0.1);
            let target = Vec3::new(s(i, lo.x, hi.x), lo.y, s(j, lo.z, hi.z));
            let dir = (target - eye).normalize();
            let cpu = hooke::picking::pick(&model, &x, eye, dir);
            let on_gpu = gpu.pick(eye, dir);
            assert_eq!(
                cpu.map(|h| (h.triangle, h.corner, h.particle)),
                on_gpu.map(|h| (h.triangle, h.corner, h.particle))
            );
            assert_eq!(cpu.map(|h| h.distance.to_bits()), on_gpu.map(|h| h.distance.to_bits()));
            match cpu {
                Some(h) => {
                    hits += 1;
                    let t = model.triangles()[h.triangle as usize].map(|k| x[k as usize]);
                    let n = (t[1] - t[0]).cross(t[2] - t[0]).normalize();
                    let p = eye + dir * h.distance;
                    assert!((p - t[0]).dot(n).abs() < 1e-5, "hit point off the triangle's plane");
                }
                None => misses += 1,
            }
        }
    }
    eprintln!("picking: {hits} hits, {misses} misses, GPU = CPU");
    assert!(hits > 200 && misses > 10, "{hits} hits, {misses} misses");
}
