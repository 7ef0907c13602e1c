//! The contact scenes of issue #10, run by any solver: the CPU tests run them under XPBD and
//! implicit Euler (`tests/self_collision.rs`, `tests/collision_matrix.rs`), the GPU tests under
//! the GPU's XPBD and compare with the CPU's bits (`hooke-gpu/tests/gpu/contacts.rs`). Each
//! returns what its test asserts, and the final positions (m, one per particle) for the
//! comparison.

use glam::{Quat, Vec3};
use hooke::collision::{
    Collider, ColliderMesh, GridResolution, Keyframe, Motion, SdfGrid, Shape, SignMethod, deepest_overlap,
};
use hooke::{ClothGrid, Control, Model, ModelBuilder, Rope, Solver, State, XpbdSettings};
use std::sync::Arc;

/// Makes the solver of a scene from its model and XPBD settings (a solver of another method
/// takes what applies: the substeps).
pub type Make<'a> = &'a dyn Fn(&Arc<Model>, XpbdSettings) -> Box<dyn Solver>;

/// The solver's state now.
pub fn state(s: &mut dyn Solver, model: &Model) -> State {
    let mut st = State::from_model(model);
    s.read_state(&mut st);
    st
}

/// The closest approach of two particles of `among` that are not neighbours at rest, as a
/// fraction of their contact distance (1 when none is closer).
pub fn closest(model: &Model, x: &[Vec3], among: &[u32]) -> f32 {
    deepest_overlap(model, x, among).map_or(1.0, |o| o.distance / o.contact_distance)
}

/// Every particle of `model`.
pub fn all(model: &Model) -> Vec<u32> {
    (0..model.particle_count() as u32).collect()
}

pub const FOLD_THICKNESS: f32 = 0.03;

/// A 10 × 20 cloth of spacing 2 cm and thickness 3 cm lying on a ground plane with friction,
/// folded in half: its first row is carried over the fold line (z = 0) on a half circle in
/// 1 s and laid one thickness above the last row, released at 1.2 s, and left to settle for
/// the rest of `frames` frames of 1/60 s (the CPU tests run 150, to 2.5 s; the GPU tests 96, to
/// 1.6 s). Returns the closest approach of two particles that are not neighbours at rest (as
/// a fraction of the thickness), the largest speed at the end (m/s) and the positions.
pub fn fold(self_collision: bool, frames: usize, make: Make) -> (f32, f32, Vec<Vec3>) {
    let mut g = ClothGrid::new("cloth", 20, 10, 0.02);
    g.center = Vec3::new(0.0, 0.5 * FOLD_THICKNESS, 0.0);
    g.material.thickness = FOLD_THICKNESS;
    g.material.self_collision = self_collision;
    let mut b = ModelBuilder::new();
    let id = b.add_cloth_grid(&g).unwrap();
    let ground = Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y };
    b.add_collider(Collider::new("ground", ground).with_friction(0.6, 0.5)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let body = model.bodies()[id.0].clone();
    let mut s = make(&model, XpbdSettings::default());
    let mut control = Control::new();
    let row0: Vec<u32> = (0..10).map(|c| body.grid_index(0, c).unwrap()).collect();
    let rest: Vec<Vec3> = row0.iter().map(|&p| model.particle_position()[p as usize]).collect();
    let (radius, y0) = (-rest[0].z, rest[0].y);
    let fps = 60.0;
    for frame in 1..=frames {
        let t = frame as f32 / fps;
        if t <= 1.0 {
            let phi = std::f32::consts::PI * t;
            for (&p, x) in row0.iter().zip(&rest) {
                let target = Vec3::new(x.x, y0 + radius * phi.sin() + FOLD_THICKNESS * t, -radius * phi.cos());
                control.pin_to(p, target);
            }
        } else if t > 1.2 {
            control.release_all();
        }
        s.step(&control, 1.0 / fps).unwrap();
    }
    let st = state(s.as_mut(), &model);
    let among: Vec<u32> = body.particles.clone().collect();
    let speed = st.particle_velocity.iter().map(|v| v.length()).fold(0.0f32, f32::max);
    (closest(&model, &st.particle_position, &among), speed, st.particle_position)
}

/// Two 10 × 10 cloths of thickness 1 cm, one lying on the ground and one lying on it 1 cm
/// above, with self-collision on, for 2.5 s. Returns the largest speed (m/s) of any particle
/// at any frame after 0.5 s, the closest approach at the end (fraction of the thickness) and
/// the positions.
pub fn resting_layers(make: Make) -> (f32, f32, Vec<Vec3>) {
    let thickness = 0.01;
    let mut b = ModelBuilder::new();
    for (k, y) in [0.5 * thickness, 1.5 * thickness].into_iter().enumerate() {
        let mut g = ClothGrid::new(format!("layer{k}"), 10, 10, 0.01);
        g.center = Vec3::new(0.0, y, 0.0);
        g.material.thickness = thickness;
        g.material.self_collision = true;
        b.add_cloth_grid(&g).unwrap();
    }
    b.add_collider(
        Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y }).with_friction(0.6, 0.5),
    )
    .unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut s = make(&model, XpbdSettings::default());
    let mut fastest = 0.0f32;
    for frame in 0..150 {
        s.step(&Control::new(), 1.0 / 60.0).unwrap();
        if frame >= 30 {
            let st = state(s.as_mut(), &model);
            fastest = st.particle_velocity.iter().map(|v| v.length()).fold(fastest, f32::max);
        }
    }
    let st = state(s.as_mut(), &model);
    (fastest, closest(&model, &st.particle_position, &all(&model)), st.particle_position)
}

/// Two 12 × 12 cloths built overlapping (0.3 of their 2 cm thickness apart, no gravity), with
/// self-collision on from the start (`switch_at` None) or switched on at frame `switch_at` by
/// a material change, for `frames` frames of 1/60 s (the CPU tests run 120, the GPU tests 60).
/// Returns the closest approach at the end (fraction of the
/// thickness), the largest speed at any frame (m/s) and the positions.
pub fn overlapping_layers(switch_at: Option<usize>, frames: usize, make: Make) -> (f32, f32, Vec<Vec3>) {
    let thickness = 0.02;
    let build = |on: bool| {
        let mut b = ModelBuilder::new();
        b.set_gravity(Vec3::ZERO).unwrap();
        for (k, y) in [0.0, 0.3 * thickness].into_iter().enumerate() {
            let mut g = ClothGrid::new(format!("layer{k}"), 12, 12, 0.015);
            g.center = Vec3::new(0.003 * k as f32, y, 0.0);
            g.material.thickness = thickness;
            g.material.self_collision = on;
            b.add_cloth_grid(&g).unwrap();
        }
        Arc::new(b.finalize().unwrap())
    };
    let model = build(switch_at.is_none());
    let mut s = make(&model, XpbdSettings::default());
    let mut fastest = 0.0f32;
    for frame in 0..frames {
        if Some(frame) == switch_at {
            let mut m = (*model).clone();
            for body in 0..2 {
                let hooke::BodyMaterial::Cloth(mut mat) = m.bodies()[body].material else { unreachable!() };
                mat.self_collision = true;
                m = m.with_cloth_material(body, mat).unwrap();
            }
            s.notify_model_changed(Arc::new(m)).unwrap();
        }
        s.step(&Control::new(), 1.0 / 60.0).unwrap();
        let st = state(s.as_mut(), &model);
        fastest = st.particle_velocity.iter().map(|v| v.length()).fold(fastest, f32::max);
    }
    let st = state(s.as_mut(), &model);
    let on = build(true);
    (closest(&on, &st.particle_position, &all(&on)), fastest, st.particle_position)
}

/// Two identical 10 × 10 cloths 4 cm thick built at the same place (every particle on its
/// twin) above a ground plane, for `frames` frames of 1/60 s (the CPU test runs 90, the GPU
/// test 60). Returns the closest approach at the end (fraction of
/// the thickness) and the positions.
pub fn coincident_cloths(frames: usize, make: Make) -> (f32, Vec<Vec3>) {
    let mut b = ModelBuilder::new();
    for k in 0..2 {
        let mut g = ClothGrid::new(format!("c{k}"), 10, 10, 0.03);
        g.center = Vec3::new(0.0, 0.5, 0.0);
        g.material.thickness = 0.04;
        g.material.self_collision = true;
        b.add_cloth_grid(&g).unwrap();
    }
    b.add_collider(Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y })).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut s = make(&model, XpbdSettings::default());
    for _ in 0..frames {
        s.step(&Control::new(), 1.0 / 60.0).unwrap();
    }
    let st = state(s.as_mut(), &model);
    (closest(&model, &st.particle_position, &all(&model)), st.particle_position)
}

/// Two light ropes (radius 1 cm, 20 g/m) dropped crosswise onto a 15 × 15 cloth held at its
/// corners (spacing 2 cm, thickness 3 cm, K = 2e4 N/m), all with self-collision `on`, for `frames` frames of 1/60 s (the CPU test runs 120,
/// the GPU test 60).
/// Returns how far the ropes' lowest particle lies above the cloth's lowest point (m), the
/// closest approach of any two particles (fraction of their contact distance) and the
/// positions.
pub fn ropes_on_cloth(on: bool, frames: usize, make: Make) -> (f32, f32, Vec<Vec3>) {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 15, 15, 0.02);
    g.center = Vec3::new(0.0, 0.5, 0.0);
    g.material.thickness = 0.03;
    g.material.stretch_stiffness = 2e4;
    g.material.self_collision = on;
    let cloth = b.add_cloth_grid(&g).unwrap();
    for (k, (a, e, y)) in [
        (Vec3::new(-0.12, 0.0, 0.0), Vec3::new(0.12, 0.0, 0.0), 0.55f32),
        (Vec3::new(0.0, 0.0, -0.12), Vec3::new(0.0, 0.0, 0.12), 0.6),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = Rope::straight(format!("rope{k}"), a + Vec3::Y * y, e + Vec3::Y * y, 13);
        r.material.radius = 0.01;
        r.material.linear_density = 0.02;
        r.material.self_collision = on;
        b.add_rope(&r).unwrap();
    }
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    let body = &model.bodies()[cloth.0];
    for (r, c) in [(0, 0), (0, 14), (14, 0), (14, 14)] {
        control.pin(body.grid_index(r, c).unwrap());
    }
    let mut s = make(&model, XpbdSettings::default());
    for _ in 0..frames {
        s.step(&control, 1.0 / 60.0).unwrap();
    }
    let st = state(s.as_mut(), &model);
    let cloth_low = body.particles.clone().map(|p| st.particle_position[p as usize].y).fold(f32::INFINITY, f32::min);
    let rope_low = model.bodies()[1..]
        .iter()
        .flat_map(|b| b.particles.clone())
        .map(|p| st.particle_position[p as usize].y)
        .fold(f32::INFINITY, f32::min);
    (rope_low - cloth_low, closest(&model, &st.particle_position, &all(&model)), st.particle_position)
}

/// Two 2-particle ropes of radius 1 cm, one particle of each placed at the contact distance
/// t = 2 cm plus `eps` (m), no gravity, one substep: returns the correction that substep
/// applies to their distance (m).
pub fn pair_correction(eps: f32, make: Make) -> f32 {
    let radius = 0.01;
    let t = 2.0 * radius;
    let mut b = ModelBuilder::new();
    b.set_gravity(Vec3::ZERO).unwrap();
    for (k, x) in [0.0f32, t + eps].into_iter().enumerate() {
        let mut r = Rope::straight(format!("r{k}"), Vec3::new(x, 0.0, 0.0), Vec3::new(x, 1.0, 0.0), 2);
        r.material.radius = radius;
        r.material.self_collision = true;
        b.add_rope(&r).unwrap();
    }
    let model = Arc::new(b.finalize().unwrap());
    let settings = XpbdSettings { substeps: 1, air_damping: 0.0, ..XpbdSettings::default() };
    let mut s = make(&model, settings);
    s.step(&Control::new(), 1.0 / 60.0).unwrap();
    let st = state(s.as_mut(), &model);
    (st.particle_position[2].x - st.particle_position[0].x) - (t + eps)
}

/// Checks that [`pair_correction`] is continuous across the contact distance: for ε from
/// −2·10⁻⁴ to 2·10⁻⁴ m it is 0 for ε ≥ 0 and −ε below (within 10⁻⁶ m), and between
/// neighbouring ε it changes by no more than the change of ε plus 10⁻⁶ m. Returns the
/// corrections.
pub fn check_pair_correction_is_continuous(make: Make) -> Vec<f32> {
    let steps = 80;
    let eps: Vec<f32> = (0..=steps).map(|k| 2e-4 * (2.0 * k as f32 / steps as f32 - 1.0)).collect();
    let c: Vec<f32> = eps.iter().map(|&e| pair_correction(e, make)).collect();
    for k in 0..steps {
        let jump = (c[k + 1] - c[k]).abs();
        assert!(
            jump <= (eps[k + 1] - eps[k]).abs() + 1e-6,
            "correction jumps by {jump} m between ε = {} and {} m",
            eps[k],
            eps[k + 1]
        );
    }
    for (&e, &ck) in eps.iter().zip(&c) {
        if e >= 0.0 {
            assert!(ck.abs() < 1e-7, "a pair {e} m outside contact was moved by {ck} m");
        } else {
            assert!((ck - (-e)).abs() < 1e-6, "a pair {e} m inside contact was separated by {ck} m, not {}", -e);
        }
    }
    println!("contact correction at ε = −2e-4: {:.3e} m; at 0: {:.1e} m", c[0], c[steps / 2]);
    c
}

/// A 16 × 16 cloth of 0.45 m, 2 cm thick, dropped from 0.3 m above the top of `shape` (which
/// sits on a ground plane at y = 0 when it is not the plane itself), for `frames` frames of
/// 1/60 s (it lands within the first 15); returns the deepest penetration (m) into any
/// collider at the end, the largest during the last half of the frames, and the positions.
pub fn drop_onto(shape: Shape, top: f32, self_collision: bool, frames: usize, make: Make) -> (f32, f32, Vec<Vec3>) {
    let thickness = 0.02;
    let mut g = ClothGrid::new("cloth", 16, 16, 0.03);
    g.center = Vec3::new(0.01, top + 0.3, -0.02);
    g.material.thickness = thickness;
    g.material.self_collision = self_collision;
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&g).unwrap();
    let plane = matches!(shape, Shape::Plane { .. });
    b.add_collider(Collider::new("shape", shape).with_friction(0.5, 0.4)).unwrap();
    if !plane {
        b.add_collider(Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y })).unwrap();
    }
    let model = Arc::new(b.finalize().unwrap());
    let mut s = make(&model, XpbdSettings::default());
    let mut x = Vec::new();
    let mut worst = 0.0f32;
    for frame in 0..frames {
        s.step(&Control::new(), 1.0 / 60.0).unwrap();
        if frame >= frames / 2 {
            s.read_positions(&mut x);
            worst = worst.max(hooke::diagnostics::max_penetration(&model, &x, &[]));
        }
    }
    s.read_positions(&mut x);
    (hooke::diagnostics::max_penetration(&model, &x, &[]), worst, x)
}

/// The signed distance grid of a triangle mesh, `resolution` cells along its longest side.
pub fn mesh_shape((positions, triangles): (Vec<Vec3>, Vec<[u32; 3]>), resolution: u32) -> Shape {
    let (mesh, _) = ColliderMesh::new(&positions, &triangles, SignMethod::PseudoNormals).unwrap();
    Shape::Sdf(Arc::new(SdfGrid::build(&mesh, GridResolution::Cells(resolution), None).unwrap()))
}

/// The colliders of the collision matrix, each with the height of its top (m): a plane, a
/// sphere, a capsule, a box turned about y, and a sphere and a box given as triangle meshes
/// (signed distance grids; the grid's depth is exact at the box's faces and within 10⁻⁴ m of
/// the sphere's surface at these resolutions).
pub fn matrix_shapes() -> Vec<(&'static str, Shape, f32)> {
    let box_mesh = super::cube_mesh(Vec3::new(-0.12, 0.0, -0.12), Vec3::new(0.12, 0.2, 0.12));
    let box_mesh = (box_mesh.0.iter().map(|&p| Quat::from_rotation_y(0.3) * p).collect(), box_mesh.1);
    vec![
        ("plane", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y }, 0.0),
        ("sphere", Shape::Sphere { center: Vec3::new(0.0, 0.2, 0.0), radius: 0.2 }, 0.4),
        ("capsule", Shape::Capsule { a: Vec3::new(-0.3, 0.1, 0.0), b: Vec3::new(0.3, 0.1, 0.0), radius: 0.1 }, 0.2),
        (
            "box",
            Shape::Box {
                center: Vec3::new(0.0, 0.1, 0.0),
                half_extents: Vec3::new(0.12, 0.1, 0.12),
                rotation: Quat::from_rotation_y(0.3),
            },
            0.2,
        ),
        ("mesh sphere", mesh_shape(super::icosphere(0.2, Vec3::new(0.0, 0.2, 0.0), 4), 48), 0.4),
        ("mesh box", mesh_shape(box_mesh, 24), 0.2),
    ]
}

/// A 5 × 5 patch lying on a box that accelerates sideways at `a` (m/s², from rest, keyed at
/// every substep so the acceleration is uniform), μₛ = 0.4, μₖ = 0.3, for 1 s at 20 substeps
/// × 2 iterations: returns how far the patch slipped behind the box (m) and the positions.
pub fn slip(a: f32, make: Make) -> (f32, Vec<Vec3>) {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("patch", 5, 5, 0.02);
    g.material.thickness = 0.004;
    g.center = Vec3::new(0.0, 0.002, 0.0);
    b.add_cloth_grid(&g).unwrap();
    // 10 m long, so the patch is still on it after slipping for a second.
    let shape = Shape::Box {
        center: Vec3::new(0.0, -0.5, 0.0),
        half_extents: Vec3::new(5.0, 0.5, 0.5),
        rotation: Quat::IDENTITY,
    };
    b.add_collider(Collider::new("box", shape).with_friction(0.4, 0.3)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let substeps = 20;
    let h = 1.0 / (60.0 * substeps as f32);
    let keys = (0..=60 * substeps)
        .map(|k| {
            let t = k as f32 * h;
            Keyframe::translation(t, Vec3::new(0.5 * a * t * t, 0.0, 0.0))
        })
        .collect();
    let motion = Arc::new(Motion::new(keys).unwrap());
    let mut control = Control::new();
    control.animate_collider(0, motion);
    let settings = XpbdSettings { substeps, iterations: 2, air_damping: 0.0, ..XpbdSettings::default() };
    let mut s = make(&model, settings);
    for _ in 0..60 {
        s.step(&control, 1.0 / 60.0).unwrap();
    }
    let st = state(s.as_mut(), &model);
    let moved = st.particle_position.iter().map(|p| p.x).sum::<f32>() / st.particle_position.len() as f32;
    (0.5 * a - moved, st.particle_position)
}

/// A 10 × 10 cloth (1 cm thick) thrown at 20 m/s at a board 1 mm thick, face on (`tilt` 0°) or
/// tilted, at `substeps` substeps, for 10 frames. Returns the lowest height (m) of any
/// particle above the board's mid-plane, along its normal, at any frame, and the positions.
pub fn thrown_at_board(tilt_degrees: f32, substeps: u32, make: Make) -> (f32, Vec<Vec3>) {
    let mut g = ClothGrid::new("cloth", 10, 10, 0.03);
    g.center = Vec3::new(0.0, 1.3, 0.0);
    g.velocity = Vec3::new(0.0, -20.0, 0.0);
    g.material.thickness = 0.01;
    let mut b = ModelBuilder::new();
    b.add_cloth_grid(&g).unwrap();
    let rotation = Quat::from_rotation_z(tilt_degrees.to_radians());
    // 6 m wide: the tilted board's cloth slides ≈ 1.7 m in the 10 frames.
    let board = Shape::Box { center: Vec3::new(0.0, 1.0, 0.0), half_extents: Vec3::new(3.0, 0.0005, 3.0), rotation };
    b.add_collider(Collider::new("board", board)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut s = make(&model, XpbdSettings { substeps, ..XpbdSettings::default() });
    let normal = rotation * Vec3::Y;
    let (mut x, mut lowest) = (Vec::new(), f32::INFINITY);
    for _ in 0..10 {
        s.step(&Control::new(), 1.0 / 60.0).unwrap();
        s.read_positions(&mut x);
        let low = x.iter().map(|p| (*p - Vec3::new(0.0, 1.0, 0.0)).dot(normal)).fold(f32::INFINITY, f32::min);
        lowest = lowest.min(low);
    }
    (lowest, x)
}

/// An 8 × 8 cloth 2 cm above a ground plane, moving at 1 000 m/s along it without gravity or
/// drag, one frame at 10 substeps (1.67 m a substep, 83 times its clearance). Returns the
/// slowest particle's speed along x (m/s), the frame's contacts and the positions.
pub fn glide_past_plane(make: Make) -> (f32, u32, Vec<Vec3>) {
    let mut b = ModelBuilder::new();
    b.set_gravity(Vec3::ZERO).unwrap();
    let mut g = ClothGrid::new("cloth", 8, 8, 0.05);
    g.center = Vec3::new(0.0, 0.02, 0.0);
    g.velocity = Vec3::new(1000.0, 0.0, 0.0);
    b.add_cloth_grid(&g).unwrap();
    b.add_collider(Collider::new("ground", Shape::Plane { point: Vec3::ZERO, normal: Vec3::Y })).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let settings = XpbdSettings {
        substeps: 10,
        iterations: 2,
        air_damping: 0.0,
        max_speed: f32::INFINITY,
        ..XpbdSettings::default()
    };
    let mut s = make(&model, settings);
    let report = s.step(&Control::new(), 1.0 / 60.0).unwrap();
    let mut st = State::from_model(&model);
    s.read_state(&mut st);
    let slowest = st.particle_velocity.iter().map(|v| v.x).fold(f32::INFINITY, f32::min);
    (slowest, report.contacts, st.particle_position)
}

/// A 12 × 12 cloth (0.4 kg/m², K = 1e4 N/m, 2.5 cm thick) dropped from 0.3 m onto a 20 × 20
/// net (0.2 kg/m², K = 1e4 N/m) held by its four corners, both with self-collision, 2 cm
/// spacing, iterating each substep to 1 % (at most `cap` iterations) — `frames` frames of
/// 1/60 s (32 reach the second landing, frame 29). Returns the dropped cloth's largest monitored residual
/// stretch strain over the frames (the net's own reaches the cap at its impact, frame 15).
pub fn drop_onto_net(frames: usize, cap: u32, make: Make) -> f32 {
    use hooke::diagnostics::{BodyConvergence, ConstraintResiduals, pinned_particles};
    let mut b = ModelBuilder::new();
    let mut layer = |name: &str, n: usize, y: f32, density: f32| {
        let mut g = ClothGrid::new(name, n, n, 0.02);
        g.center = Vec3::new(if n == 12 { 0.02 } else { 0.0 }, y, if n == 12 { 0.01 } else { 0.0 });
        g.material.areal_density = density;
        g.material.stretch_stiffness = 1e4;
        g.material.thickness = 0.025;
        g.material.self_collision = true;
        b.add_cloth_grid(&g).unwrap()
    };
    let net = layer("net", 20, 1.0, 0.2);
    layer("top", 12, 1.3, 0.4);
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    for (r, c) in [(0, 0), (0, 19), (19, 0), (19, 19)] {
        control.pin(model.bodies()[net.0].grid_index(r, c).unwrap());
    }
    let auto = hooke::AutoIterations { tolerance: 0.01, max_iterations: cap };
    let mut s = make(&model, XpbdSettings { auto_iterations: Some(auto), ..XpbdSettings::default() });
    let (mut r, mut x, mut pinned, mut bodies) = (ConstraintResiduals::default(), Vec::new(), Vec::new(), Vec::new());
    let mut worst = 0.0f32;
    for _ in 0..frames {
        s.step(&control, 1.0 / 60.0).unwrap();
        assert!(s.constraint_residuals(&mut r));
        s.read_positions(&mut x);
        pinned_particles(&model, &control, &mut pinned);
        BodyConvergence::measure(&model, &x, &pinned, Some(&r), &mut bodies);
        worst = worst.max(bodies[1].residual());
    }
    worst
}
