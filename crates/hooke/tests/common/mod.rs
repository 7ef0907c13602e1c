//! Shared scene builders for the physics tests. Every mesh is generated here by code.
#![allow(dead_code)]

pub mod contact_cases;

use glam::{DVec3, Quat, Vec3};
use hooke::{
    Bending, ClothGrid, ClothMaterial, ClothMesh, Control, Model, ModelBuilder, Solver, XpbdSettings, XpbdSolver,
};
use std::sync::Arc;

/// A square cloth of side `size` (m) with `n × n` particles hanging in the x–y plane, row 0 on
/// top at y = 0, pinned along its whole top edge.
pub fn hanging_cloth(n: usize, size: f32, material: ClothMaterial) -> (Arc<hooke::Model>, Control) {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", n, n, size / (n - 1) as f32);
    g.rotation = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, -size / 2.0, 0.0);
    g.material = material;
    let id = b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    for c in 0..n {
        control.pin(model.bodies()[id.0].grid_index(0, c).unwrap());
    }
    (model, control)
}

/// A 1 m sheet of K = 1e4 N/m and 0.15 kg/m², 20 × 20, hanging in the x–y plane with its
/// centre 1 m up, held by its two top corners: stiff enough that 20 substeps × 1 iteration
/// without tethers leave several percent of residual strain.
pub fn stiff_sheet_by_two_corners() -> (Arc<hooke::Model>, Control) {
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("sheet", 20, 20, 1.0 / 19.0);
    g.rotation = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    g.material = ClothMaterial { areal_density: 0.15, stretch_stiffness: 1e4, ..ClothMaterial::default() };
    let id = b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(model.bodies()[id.0].grid_index(0, 0).unwrap());
    control.pin(model.bodies()[id.0].grid_index(0, 19).unwrap());
    (model, control)
}

/// A box collider 0.8 × 1 × 0.8 m standing on y = 0, tilted 20° about z, and a 20 × 20 velvet
/// (5 cm spacing, K = 4000 N/m, soft in compression and shear, 2 cm thick) 1.2 m up, about to
/// fall onto it.
pub struct VelvetOnTiltedBox {
    pub model: Arc<hooke::Model>,
    rotation: Quat,
    center: Vec3,
    half_extents: Vec3,
}

impl VelvetOnTiltedBox {
    pub fn new() -> VelvetOnTiltedBox {
        use hooke::collision::{Collider, Shape};
        let mut b = ModelBuilder::new();
        let mut g = ClothGrid::new("velvet", 20, 20, 0.05);
        g.center = Vec3::new(0.15, 1.2, 0.0);
        g.material = ClothMaterial {
            areal_density: 0.35,
            stretch_stiffness: 4000.0,
            compression_stiffness: 40.0,
            shear_stiffness: 400.0,
            bending_modulus: 5e-5,
            thickness: 0.02,
            ..ClothMaterial::default()
        };
        b.add_cloth_grid(&g).unwrap();
        let rotation = Quat::from_rotation_z(20f32.to_radians());
        let (center, half_extents) = (Vec3::new(0.0, 0.5, 0.0), Vec3::new(0.4, 0.5, 0.4));
        let shape = Shape::Box { center, half_extents, rotation };
        b.add_collider(Collider::new("box", shape).with_friction(0.2, 0.15)).unwrap();
        VelvetOnTiltedBox { model: Arc::new(b.finalize().unwrap()), rotation, center, half_extents }
    }

    /// How deep the collision sphere (radius 1 cm, half the thickness) of the deepest particle
    /// of `x` is inside the box (m; ≤ 0 when none is).
    pub fn deepest(&self, x: &[Vec3]) -> f32 {
        x.iter()
            .map(|p| {
                let local = self.rotation.inverse() * (*p - self.center);
                let outside = (local.abs() - self.half_extents).max(Vec3::ZERO).length();
                let inside = (local.abs() - self.half_extents).max_element().min(0.0);
                0.01 - (outside + inside)
            })
            .fold(f32::NEG_INFINITY, f32::max)
    }
}

/// Runs `frames` frames at `fps` and returns the solver.
pub fn run(
    model: &Arc<hooke::Model>,
    control: &Control,
    settings: XpbdSettings,
    frames: usize,
    fps: f32,
) -> XpbdSolver {
    let mut s = XpbdSolver::new(model.clone(), settings).unwrap();
    for _ in 0..frames {
        s.step(control, 1.0 / fps).unwrap();
    }
    s
}

/// Mean drop (m) of the bottom row of an `n × n` hanging cloth below its rest height.
pub fn bottom_sag(model: &hooke::Model, solver: &mut XpbdSolver, n: usize) -> f32 {
    let mut x = Vec::new();
    solver.read_positions(&mut x);
    let body = &model.bodies()[0];
    let mut sum = 0.0;
    for c in 0..n {
        let k = body.grid_index(n - 1, c).unwrap() as usize;
        sum += model.particle_position()[k].y - x[k].y;
    }
    sum / n as f32
}

/// An icosphere of radius `r` about `centre`: the icosahedron subdivided `levels` times, wound
/// outwards.
pub fn icosphere(r: f32, centre: Vec3, levels: u32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let t = (1.0 + 5f32.sqrt()) / 2.0;
    let mut p: Vec<Vec3> = [
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ]
    .iter()
    .map(|v| Vec3::from_array(*v).normalize())
    .collect();
    let mut f: Vec<[u32; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..levels {
        let mut mid = std::collections::HashMap::new();
        let mut next = Vec::new();
        for tri in &f {
            let mut m = [0u32; 3];
            for k in 0..3 {
                let (a, b) = (tri[k], tri[(k + 1) % 3]);
                m[k] = *mid.entry((a.min(b), a.max(b))).or_insert_with(|| {
                    p.push(((p[a as usize] + p[b as usize]) * 0.5).normalize());
                    p.len() as u32 - 1
                });
            }
            next.extend([[tri[0], m[0], m[2]], [tri[1], m[1], m[0]], [tri[2], m[2], m[1]], [m[0], m[1], m[2]]]);
        }
        f = next;
    }
    (p.into_iter().map(|v| centre + v * r).collect(), f)
}

/// A box from `lo` to `hi` as 12 outward triangles.
pub fn cube_mesh(lo: Vec3, hi: Vec3) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let p = (0..8)
        .map(|i| Vec3::new([lo.x, hi.x][i & 1], [lo.y, hi.y][(i >> 1) & 1], [lo.z, hi.z][(i >> 2) & 1]))
        .collect();
    let quads = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]];
    (p, quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect())
}

/// One scene of the worlds tests (CPU `tests/worlds.rs`, GPU `hooke-gpu/tests/gpu/worlds.rs`):
/// an n × n cloth grid of 5 cm spacing at y = 1 m (pinned at two corners, or free), maybe a
/// 10-particle rope pinned at one end, maybe a collider (μₛ = 0.3, μₖ = 0.2), with its own
/// gravity (m/s²) and wind (m/s).
#[derive(Clone)]
pub struct WorldSpec {
    pub gravity: Vec3,
    pub wind: Vec3,
    pub n: usize,
    /// Stretch stiffness K (N/m).
    pub stiffness: f32,
    pub pinned: bool,
    pub collider: Option<hooke::collision::Shape>,
    pub rope: bool,
    pub self_collision: bool,
}

impl Default for WorldSpec {
    fn default() -> Self {
        WorldSpec {
            gravity: Vec3::new(0.0, -9.81, 0.0),
            wind: Vec3::ZERO,
            n: 12,
            stiffness: 1000.0,
            pinned: true,
            collider: None,
            rope: false,
            self_collision: false,
        }
    }
}

/// The air of every world scene: drag 1, lift 0.2.
pub fn world_air() -> hooke::Air {
    hooke::Air { drag_coefficient: 1.0, lift_coefficient: 0.2, ..hooke::Air::default() }
}

/// Adds scene `s` (the k-th) to `b`; returns the particles to pin.
pub fn add_world_scene(b: &mut ModelBuilder, s: &WorldSpec, k: usize) -> Vec<u32> {
    let mut g = ClothGrid::new(format!("cloth{k}"), s.n, s.n, 0.05);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    g.material = ClothMaterial {
        stretch_stiffness: s.stiffness,
        self_collision: s.self_collision,
        thickness: 0.02,
        ..ClothMaterial::default()
    };
    b.add_cloth_grid(&g).unwrap();
    let first = b.particle_count() as u32 - (s.n * s.n) as u32;
    let mut pins = Vec::new();
    if s.pinned {
        pins = vec![first, first + s.n as u32 - 1];
    }
    if s.rope {
        b.add_rope(&hooke::Rope::straight(format!("rope{k}"), Vec3::new(-0.3, 1.2, 0.0), Vec3::new(0.3, 1.2, 0.0), 10))
            .unwrap();
        pins.push(b.particle_count() as u32 - 10);
    }
    if let Some(shape) = &s.collider {
        let c = hooke::collision::Collider::new(format!("collider{k}"), shape.clone()).with_friction(0.3, 0.2);
        b.add_collider(c).unwrap();
    }
    pins
}

/// Every scene of `specs` alone, each with its control, and all of them packed into one model
/// (world k is scene k) with its control.
pub fn worlds_alone_and_packed(specs: &[WorldSpec]) -> (Vec<(hooke::Model, Control)>, hooke::Model, Control) {
    let alone = specs
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let mut b = ModelBuilder::new();
            b.set_gravity(s.gravity).unwrap().set_air(world_air()).unwrap();
            let pins = add_world_scene(&mut b, s, k);
            let mut control = Control { wind: s.wind, ..Control::new() };
            pins.iter().for_each(|&p| {
                control.pin(p);
            });
            (b.finalize().unwrap(), control)
        })
        .collect();
    let mut b = ModelBuilder::new();
    b.set_air(world_air()).unwrap();
    let mut control = Control::new();
    for (k, s) in specs.iter().enumerate() {
        if k == 0 {
            b.set_gravity(s.gravity).unwrap();
            control.wind = s.wind;
        } else {
            b.add_world(s.gravity).unwrap();
            control.world_wind.push((s.wind, None));
        }
        for p in add_world_scene(&mut b, s, k) {
            control.pin(p);
        }
    }
    (alone, b.finalize().unwrap(), control)
}

/// A cylindrical patch of radius 0.3 m over 120°, 0.4 m long, `n × n` vertices, triangulated
/// with alternating diagonals, flexural rigidity `modulus` (N·m).
pub fn curved_sheet(n: usize, modulus: f32) -> ClothMesh {
    let (radius, span, length) = (0.3f32, 2.0 * std::f32::consts::FRAC_PI_3, 0.4f32);
    let mut positions = Vec::new();
    for i in 0..n {
        for j in 0..n {
            let phi = span * (j as f32 / (n - 1) as f32 - 0.5);
            let z = length * (i as f32 / (n - 1) as f32 - 0.5);
            positions.push(Vec3::new(radius * phi.sin(), 1.0 - radius * phi.cos(), z));
        }
    }
    let id = |i: usize, j: usize| (i * n + j) as u32;
    let mut triangles = Vec::new();
    for i in 0..n - 1 {
        for j in 0..n - 1 {
            let (a, b, c, d) = (id(i, j), id(i, j + 1), id(i + 1, j), id(i + 1, j + 1));
            if (i + j) % 2 == 0 {
                triangles.extend([[a, c, b], [b, c, d]]);
            } else {
                triangles.extend([[a, c, d], [a, d, b]]);
            }
        }
    }
    let mut mesh = ClothMesh::new("sheet", positions, triangles);
    mesh.material.bending_modulus = modulus;
    mesh
}

/// The centre of mass (m) of the particles at `x` (one per particle of `model`), in f64.
pub fn centre_of_mass(model: &Model, x: &[Vec3]) -> DVec3 {
    let m = model.particle_mass();
    x.iter().zip(m).map(|(p, &w)| p.as_dvec3() * w as f64).sum::<DVec3>() / model.total_mass()
}

/// The beam formula's tip droop wL⁴/(8EI) (m) of the horizontal cantilevered cable of
/// `hooke/tests/rope_solver.rs` (1 m, `n` particles, 0.1 kg/m, clamped by its first two) at
/// bending stiffness `ei` (N·m²): L is the free length plus half a segment, since the joint
/// at the clamp spreads its bending over the half segment on each side.
pub fn cantilevered_cable_beam_droop(n: usize, ei: f32) -> f32 {
    let segment = 1.0 / (n - 1) as f32;
    let l = 1.0 - segment + 0.5 * segment;
    0.1 * 9.81 * l.powi(4) / (8.0 * ei)
}

/// A strip of default cotton 0.4 m long beyond its clamp and 5 cm wide, cut into `n`
/// segments along its free length (`n` a multiple of 8; spacing 0.4/`n` m), at height 1 m,
/// its first 0.1 m (rows 0 to n/4) held, of bending model `bending` and modulus `modulus`
/// (N·m): the model, the pins and the particle at the middle of its tip.
pub fn clamped_strip(n: usize, bending: Bending, modulus: f32) -> (Arc<Model>, Control, usize) {
    let mut g = ClothGrid::new("strip", n + n / 4 + 1, n / 8 + 1, 0.4 / n as f32);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    g.bending = bending;
    g.material.bending_modulus = modulus;
    let mut b = ModelBuilder::new();
    let id = b.add_cloth_grid(&g).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let body = model.bodies()[id.0].clone();
    let mut control = Control::new();
    for r in 0..=n / 4 {
        for c in 0..g.columns {
            control.pin(body.grid_index(r, c).unwrap());
        }
    }
    let tip = body.grid_index(n + n / 4, g.columns / 2).unwrap() as usize;
    (model, control, tip)
}
