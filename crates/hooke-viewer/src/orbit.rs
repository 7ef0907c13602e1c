//! An orbit camera: turn about a target with the primary mouse button, pan with the secondary
//! (or middle) button, zoom with the scroll wheel.

use glam::Vec3;
use hooke_render::Camera;

/// Where the camera looks from: angles (rad) about a target, at a distance (m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Orbit {
    /// The point looked at (m).
    pub target: Vec3,
    /// Distance from the target (m), > 0.
    pub distance: f32,
    /// Angle about the vertical (rad); 0 looks along −z.
    pub azimuth: f32,
    /// Angle above the horizon (rad), within ±85°.
    pub elevation: f32,
    /// The scene's size (m), for the clipping planes.
    radius: f32,
}

impl Orbit {
    /// The orbit of a camera made by [`Camera::framing`].
    pub fn from_camera(c: &Camera) -> Orbit {
        let d = c.eye - c.target;
        let distance = d.length().max(1e-3);
        Orbit {
            target: c.target,
            distance,
            azimuth: d.x.atan2(d.z),
            elevation: (d.y / distance).clamp(-1.0, 1.0).asin(),
            radius: distance * (0.5 * c.fov_y).sin() / 1.15,
        }
    }

    /// The camera of this orbit.
    pub fn camera(&self) -> Camera {
        let dir = Vec3::new(
            self.elevation.cos() * self.azimuth.sin(),
            self.elevation.sin(),
            self.elevation.cos() * self.azimuth.cos(),
        );
        Camera {
            eye: self.target + dir * self.distance,
            target: self.target,
            fov_y: 40f32.to_radians(),
            near: self.distance * 0.01,
            far: self.distance + 8.0 * self.radius,
        }
    }

    /// Turns by a mouse drag of (dx, dy) pixels.
    pub fn rotate(&mut self, dx: f32, dy: f32) {
        self.azimuth -= dx * 0.008;
        self.elevation = (self.elevation + dy * 0.008).clamp(-85f32.to_radians(), 85f32.to_radians());
    }

    /// Moves the target across the view by a drag of (dx, dy) pixels in a view `height` pixels
    /// tall.
    pub fn pan(&mut self, dx: f32, dy: f32, height: f32) {
        let c = self.camera();
        let forward = (c.target - c.eye).normalize_or(Vec3::NEG_Z);
        let right = forward.cross(Vec3::Y).normalize_or(Vec3::X);
        let up = right.cross(forward);
        let metres_per_pixel = 2.0 * self.distance * (0.5 * c.fov_y).tan() / height.max(1.0);
        self.target += (-right * dx + up * dy) * metres_per_pixel;
    }

    /// Zooms by `steps` wheel steps (positive: closer).
    pub fn zoom(&mut self, steps: f32) {
        self.distance = (self.distance * 0.9f32.powf(steps)).clamp(1e-3, 1e5);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An orbit made from a camera gives that camera back.
    #[test]
    fn from_camera_round_trips() {
        let c = Camera {
            eye: Vec3::new(1.0, 2.0, 3.0),
            target: Vec3::new(0.5, 0.2, -0.1),
            fov_y: 0.7,
            near: 0.1,
            far: 50.0,
        };
        let o = Orbit::from_camera(&c);
        assert!((o.camera().eye - c.eye).length() < 1e-5, "{:?} {:?}", o.camera().eye, c.eye);
    }
}
