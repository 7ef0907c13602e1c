//! Aerodynamic force on cloth triangles (article §1.4).
//!
//! For a triangle with unit normal n, area A and velocity v_rel = v̄ − w relative to the wind w
//! (v̄ the mean of its three vertex velocities), the pressure force is
//!
//! F = −½ ρ C_d A |v_rel·n| (v_rel·n) n
//!
//! Keeping the sign of v_rel·n (instead of squaring it) makes wind on the front and on the back
//! push in opposite directions; only the normal component acts, so cloth moving edge-on through
//! the air feels nothing. The force is split equally over the three vertices.

use crate::model::Air;
use glam::Vec3;

/// Aerodynamic force (N) on the triangle with vertices `x` (m) moving with velocities `v`
/// (m/s) in a wind of velocity `wind` (m/s). Zero for a degenerate triangle.
#[inline]
pub fn triangle_force(air: &Air, x: [Vec3; 3], v: [Vec3; 3], wind: Vec3) -> Vec3 {
    let cross = (x[1] - x[0]).cross(x[2] - x[0]);
    let len = cross.length();
    if len <= 1e-20 {
        return Vec3::ZERO;
    }
    let n = cross / len;
    let area = 0.5 * len;
    let v_rel = (v[0] + v[1] + v[2]) * (1.0 / 3.0) - wind;
    let vn = v_rel.dot(n);
    n * (-0.5 * air.density * air.drag_coefficient * area * vn.abs() * vn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn face_on_wind_gives_dynamic_pressure_times_area() {
        let air = Air { density: 1.2, drag_coefficient: 1.5 };
        // Right triangle of area 0.5 m² in the x–y plane, normal +z.
        let x = [Vec3::ZERO, Vec3::X, Vec3::Y];
        let v = [Vec3::ZERO; 3];
        // Wind along −z hits the front face: force along −z.
        let f = triangle_force(&air, x, v, Vec3::new(0.0, 0.0, -4.0));
        assert!((f - Vec3::new(0.0, 0.0, -0.5 * 1.2 * 1.5 * 0.5 * 16.0)).length() < 1e-5);
        // Wind on the back pushes the other way, with the same magnitude.
        let g = triangle_force(&air, x, v, Vec3::new(0.0, 0.0, 4.0));
        assert!((f + g).length() < 1e-5);
        // Edge-on wind does nothing; an oblique wind acts through its normal part only.
        assert!(triangle_force(&air, x, v, Vec3::new(3.0, 0.0, 0.0)).length() < 1e-6);
        let h = triangle_force(&air, x, v, Vec3::new(3.0, 0.0, -4.0));
        assert!((h - f).length() < 1e-5);
    }
}
