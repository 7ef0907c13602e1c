//! Triangle meshes of the colliders and the ground, built on the host for each picture (a few
//! thousand vertices): positions and normals as `[f32; 4]` (the normal's w is the material,
//! see `scene.wgsl`), and `u32` indices.

use glam::{Quat, Vec3};
use hooke::Model;
use hooke::collision::{Pose, Shape};

/// Material of collider vertices in `scene.wgsl`.
const COLLIDER: f32 = 1.0;
/// Material of ground vertices in `scene.wgsl`.
const GROUND: f32 = 2.0;

/// Vertices and triangles in the layout of the scene pipeline.
#[derive(Clone, Debug, Default)]
pub struct HostMesh {
    /// Positions (m), w = 1.
    pub positions: Vec<[f32; 4]>,
    /// Unit normals, w = the material.
    pub normals: Vec<[f32; 4]>,
    /// Three indices per triangle, counter-clockwise seen from outside.
    pub indices: Vec<u32>,
}

impl HostMesh {
    fn vertex(&mut self, p: Vec3, n: Vec3, material: f32) -> u32 {
        self.positions.push(p.extend(1.0).to_array());
        self.normals.push(n.extend(material).to_array());
        self.positions.len() as u32 - 1
    }

    /// A grid of `rows × columns` vertices from `at(u, v)` → (position, normal), u, v ∈ [0, 1],
    /// joined by triangles.
    fn surface(&mut self, rows: u32, columns: u32, material: f32, at: impl Fn(f32, f32) -> (Vec3, Vec3)) {
        let first = self.positions.len() as u32;
        for r in 0..rows {
            for c in 0..columns {
                let (p, n) = at(c as f32 / (columns - 1) as f32, r as f32 / (rows - 1) as f32);
                self.vertex(p, n, material);
            }
        }
        for r in 0..rows - 1 {
            for c in 0..columns - 1 {
                let k = first + r * columns + c;
                self.indices.extend([k, k + columns, k + 1, k + 1, k + columns, k + columns + 1]);
            }
        }
    }
}

/// The model's colliders at `poses` (one per collider) and, for each plane, a square of ground
/// `extent` metres wide around the point nearest `centre`. A distance grid (a mesh collider)
/// is drawn as the triangles of its [`surface`](hooke::collision::Collider::surface), with
/// area-weighted vertex normals; one given without a surface is not drawn.
pub fn colliders(model: &Model, poses: &[Pose], centre: Vec3, extent: f32) -> HostMesh {
    let mut mesh = HostMesh::default();
    for (k, c) in model.colliders().iter().enumerate() {
        let pose = poses.get(k).copied().unwrap_or(Pose::IDENTITY);
        let origin = c.shape.origin();
        let place = |p: Vec3| pose.rotation * (p - origin) + origin + pose.translation;
        let turn = |n: Vec3| pose.rotation * n;
        match c.shape {
            Shape::Plane { point, normal } => {
                let normal = turn(normal).normalize_or(Vec3::Y);
                let point = place(point);
                let middle = centre - normal * (centre - point).dot(normal);
                let tangent = normal.any_orthonormal_vector();
                let bitangent = normal.cross(tangent);
                mesh.surface(2, 2, GROUND, |u, v| {
                    let p = middle + (tangent * (u - 0.5) + bitangent * (v - 0.5)) * extent;
                    (p, normal)
                });
            }
            Shape::Sphere { center, radius } => {
                sphere(&mut mesh, Quat::IDENTITY, |n| (place(center + n * radius), turn(n)))
            }
            Shape::Capsule { a, b, radius } => {
                let axis = (b - a).normalize_or(Vec3::Y);
                let frame = Quat::from_rotation_arc(Vec3::Y, axis);
                // The upper half of a sphere moved to b, the lower half to a.
                let mid = (a + b) * 0.5;
                let half = (b - a) * 0.5;
                sphere(&mut mesh, frame, |n| {
                    let end = if n.dot(axis) >= 0.0 { half } else { -half };
                    (place(mid + end + n * radius), turn(n))
                });
            }
            Shape::Box { center, half_extents, rotation } => {
                for axis in 0..3 {
                    for sign in [-1.0f32, 1.0] {
                        let mut n = Vec3::ZERO;
                        n[axis] = sign;
                        let (u_axis, v_axis) = ((axis + 1) % 3, (axis + 2) % 3);
                        let (first, second) = if sign > 0.0 { (u_axis, v_axis) } else { (v_axis, u_axis) };
                        mesh.surface(2, 2, COLLIDER, |u, v| {
                            let mut local = n * half_extents;
                            local[first] = (2.0 * u - 1.0) * half_extents[first];
                            local[second] = (2.0 * v - 1.0) * half_extents[second];
                            (place(center + rotation * local), turn(rotation * n))
                        });
                    }
                }
            }
            Shape::Sdf(_) => {
                if let Some(surface) = &c.surface {
                    let first = mesh.positions.len() as u32;
                    for (&p, n) in surface.positions().iter().zip(surface.vertex_normals()) {
                        mesh.vertex(place(p), turn(n), COLLIDER);
                    }
                    mesh.indices.extend(surface.triangles().iter().flatten().map(|&v| first + v));
                }
            }
        }
    }
    mesh
}

/// A sphere of 32 × 17 vertices with its poles along `frame`'s y axis: `at(n)` gives the
/// (position, normal) of the vertex whose unit normal at rest is `n`.
fn sphere(mesh: &mut HostMesh, frame: Quat, at: impl Fn(Vec3) -> (Vec3, Vec3)) {
    mesh.surface(17, 32, COLLIDER, |u, v| {
        let (phi, theta) = (u * std::f32::consts::TAU, v * std::f32::consts::PI);
        at(frame * Vec3::new(theta.sin() * phi.cos(), -theta.cos(), -theta.sin() * phi.sin()))
    });
}
