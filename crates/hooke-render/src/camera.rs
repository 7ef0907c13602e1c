//! A perspective camera that looks at a model's bodies and colliders.

use glam::{Mat4, Vec3};
use hooke::Model;

/// A right-handed perspective camera, y up; distances in m, angles in rad.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Where the camera is (m).
    pub eye: Vec3,
    /// The point it looks at (m).
    pub target: Vec3,
    /// Vertical field of view (rad), in (0, π).
    pub fov_y: f32,
    /// Near and far clipping distances (m), 0 < near < far.
    pub near: f32,
    /// Far clipping distance (m).
    pub far: f32,
}

impl Camera {
    /// A camera at `azimuth` (rad, about the vertical, 0 looking along −z) and `elevation`
    /// (rad above the horizon) that frames, in an image of `aspect` = width / height, the
    /// sphere around [`scene_bounds`] (the model's particles at their initial positions, its
    /// bounded colliders and the ground under them), with a 40° vertical field of view.
    pub fn framing(model: &Model, azimuth: f32, elevation: f32, aspect: f32) -> Camera {
        let (lo, hi) = scene_bounds(model);
        let centre = (lo + hi) * 0.5;
        let radius = ((hi - lo).length() * 0.5).max(1e-3);
        let fov_y = 40f32.to_radians();
        // The narrower of the two angles of view holds the sphere.
        let half_x = ((0.5 * fov_y).tan() * aspect.clamp(1e-3, 1e3)).atan();
        let half = half_x.min(0.5 * fov_y);
        let distance = 1.15 * radius / half.sin();
        let direction = Vec3::new(elevation.cos() * azimuth.sin(), elevation.sin(), elevation.cos() * azimuth.cos());
        Camera {
            eye: centre + direction * distance,
            target: centre,
            fov_y,
            near: distance * 0.01,
            far: distance + 6.0 * radius,
        }
    }

    /// The same camera turned by `angle` (rad) about the vertical through its target.
    pub fn orbited(&self, angle: f32) -> Camera {
        let turn = glam::Quat::from_rotation_y(angle);
        Camera { eye: self.target + turn * (self.eye - self.target), ..*self }
    }

    /// Clip-space transform (view, then projection with depth in [0, 1]) for an image of
    /// `aspect` = width / height.
    pub fn view_projection(&self, aspect: f32) -> Mat4 {
        let forward = (self.target - self.eye).normalize_or(Vec3::NEG_Z);
        // Looking straight up or down: take z as "up" instead of y.
        let up = if forward.cross(Vec3::Y).length_squared() < 1e-6 { Vec3::Z } else { Vec3::Y };
        let view = glam::camera::rh::view::look_at_mat4(self.eye, self.target, up);
        // wgpu's clip space: depth in [0, 1], y up (glam's "directx" convention).
        glam::camera::rh::proj::directx::perspective(self.fov_y, aspect, self.near, self.far) * view
    }
}

/// The box (lower, upper corner, m) around the model's particles (at their initial
/// positions), its bounded colliders and, for each plane, the point of the plane under the
/// centre of the rest — where a falling cloth lands.
pub fn scene_bounds(model: &Model) -> (Vec3, Vec3) {
    let mut lo = Vec3::splat(f32::INFINITY);
    let mut hi = Vec3::splat(f32::NEG_INFINITY);
    for &p in model.particle_position() {
        lo = lo.min(p);
        hi = hi.max(p);
    }
    for c in model.colliders() {
        if let Some(r) = c.shape.bounding_radius() {
            let o = c.shape.origin();
            lo = lo.min(o - Vec3::splat(r));
            hi = hi.max(o + Vec3::splat(r));
        }
    }
    if !lo.is_finite() || !hi.is_finite() {
        (lo, hi) = (Vec3::splat(-1.0), Vec3::splat(1.0));
    }
    let centre = (lo + hi) * 0.5;
    for c in model.colliders() {
        if let hooke::collision::Shape::Plane { point, normal } = c.shape {
            let n = normal.normalize_or(Vec3::Y);
            let under = centre - n * (centre - point).dot(n);
            (lo, hi) = (lo.min(under), hi.max(under));
        }
    }
    (lo, hi)
}
