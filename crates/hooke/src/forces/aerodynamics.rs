//! Aerodynamic force on cloth triangles: pressure drag (article §1.4) and lift.
//!
//! A triangle with vertices x₀, x₁, x₂ has the unit normal n = (x₁−x₀)×(x₂−x₀)/‖…‖ and the
//! area A = ½‖(x₁−x₀)×(x₂−x₀)‖ (m²). It moves with the mean velocity v̄ of its vertices through
//! a wind of velocity w, so the air meets it with the relative velocity v_rel = v̄ − w (m/s).
//! With the air density ρ (kg/m³) and the dimensionless coefficients C_d and C_l of
//! [`Air`]:
//!
//! * **Drag** (pressure on the face, along the normal; article §1.4):
//!
//!   F_d = −½ ρ C_d A |v_rel·n| (v_rel·n) n.
//!
//!   Keeping the sign of v_rel·n (instead of squaring it) makes wind on the front and on the
//!   back push in opposite directions; only the normal component acts, so cloth moving edge-on
//!   through the air feels no drag. Its magnitude is ½ρC_d A‖v_rel‖² cos²θ.
//!
//! * **Lift** (perpendicular to the relative wind, in the plane of v_rel and n):
//!
//!   F_l = −½ ρ C_l A ((v_rel·n)/‖v_rel‖) (‖v_rel‖² n − (v_rel·n) v_rel),
//!
//!   whose magnitude is ½ρ C_l A ‖v_rel‖² cosθ sinθ with cosθ = |v̂_rel·n| (θ the angle between
//!   the relative wind and the normal), largest at θ = 45° and zero for face-on (θ = 0) and
//!   edge-on (θ = 90°) wind. It points to the side the face is pushed toward, away from the
//!   wind's component along the face: a plate tilted nose-up in a horizontal wind is lifted
//!   up. Written this way it needs no division by sinθ and is smooth everywhere.
//!
//! Both forces are unchanged when n is replaced by −n (each is even in n), so the two faces of
//! a triangle behave symmetrically: the winding of a triangle never matters.
//!
//! Sources: the drag is the article's §1.4 model. The lift direction (n rotated toward the
//! plane of v_rel, i.e. (v_rel × n) × v_rel) and its cosθ·sinθ dependence follow NVIDIA
//! NvCloth's wind model (`applyWind` in `NvCloth/src/SwSolverKernel.cpp`, after Keckeisen et al.
//! 2004, "Modelling effects of wind fields in cloth animations", WSCG, who split the air force
//! on cloth into drag and lift). NvCloth leaves its direction vector unnormalised (length
//! ‖v‖ sinθ), which gives cosθ·sin²θ; here the direction is a unit vector, so the magnitude is
//! the flat-plate form ½ρC_l A‖v‖² cosθ sinθ = ¼ρC_l A‖v‖² sin 2θ.
//!
//! Each solver splits the force equally over the three vertices. Both forces are evaluated
//! explicitly (the implicit solver does not differentiate them).

use crate::model::Air;
use glam::Vec3;

/// Aerodynamic force, drag plus lift (N), on the triangle with vertices `x` (m) moving with
/// velocities `v` (m/s) in a wind of velocity `wind` (m/s). See the
/// [module documentation](self) for the formulas. Zero for a degenerate triangle or when the
/// triangle moves with the wind.
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
    let q = -0.5 * air.density * area;
    let drag = n * (q * air.drag_coefficient * vn.abs() * vn);
    if air.lift_coefficient == 0.0 {
        return drag;
    }
    let speed2 = v_rel.length_squared();
    if speed2.is_nan() || speed2 <= 1e-20 {
        return drag;
    }
    let speed = speed2.sqrt();
    let lift = (n * speed2 - v_rel * vn) * (q * air.lift_coefficient * vn / speed);
    drag + lift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn face_on_wind_gives_dynamic_pressure_times_area() {
        let air = Air { density: 1.2, drag_coefficient: 1.5, ..Air::default() };
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

    /// A plate tilted nose-up by α in a horizontal wind is lifted up with
    /// ½ρC_l A‖v‖² cos θ sin θ (θ = 90° − α), perpendicular to the wind; face-on and edge-on
    /// wind give no lift.
    #[test]
    fn lift_is_perpendicular_to_the_wind_and_lifts_a_tilted_plate() {
        let air = Air { density: 1.2, drag_coefficient: 0.0, lift_coefficient: 0.8 };
        let alpha = 20f32.to_radians();
        // Plate spanned by the chord (−cos α, sin α, 0) (leading edge upwind, raised) and z.
        let chord = Vec3::new(-alpha.cos(), alpha.sin(), 0.0);
        let x = [Vec3::ZERO, chord, Vec3::Z];
        let area = 0.5 * chord.cross(Vec3::Z).length();
        let wind = Vec3::new(5.0, 0.0, 0.0);
        let f = triangle_force(&air, x, [Vec3::ZERO; 3], wind);
        let theta = std::f32::consts::FRAC_PI_2 - alpha;
        let expected = 0.5 * 1.2 * 0.8 * area * 25.0 * theta.cos() * theta.sin();
        assert!((f - Vec3::Y * expected).length() < 1e-5 * expected, "{f} vs {expected}");
        // Face-on (θ = 0) and edge-on (θ = 90°) wind: no lift.
        let n = chord.cross(Vec3::Z).normalize();
        assert!(triangle_force(&air, x, [Vec3::ZERO; 3], n * 5.0).length() < 1e-5);
        assert!(triangle_force(&air, x, [Vec3::ZERO; 3], chord * 5.0).length() < 1e-5);
    }
}
