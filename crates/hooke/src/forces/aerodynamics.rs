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
//! Each solver splits the force equally over the three vertices.
//!
//! # A step that cannot overshoot the wind
//!
//! Drag is a stiff damping: it pulls the relative normal speed u = v_rel·n of a triangle to 0
//! as du/dt = −k|u|u with k = ½ρC_d A/m (1/m), m the mass it moves. Applied explicitly for a
//! step h — Δu = −hk|u|u, which is what v ← v + h f/m does — it carries u past zero when
//! hk|u| > 1 and diverges when hk|u| > 2. A 0.03 kg/m² silk in a 10 m/s wind at one 60 Hz
//! step has hk|u| = 3.4: it left the wind at 36 m/s after one frame and blew up.
//!
//! The equation has an exact solution (separable; e.g. Taylor, *Classical Mechanics*, 2005,
//! §2.4, horizontal motion with quadratic air resistance): from u at t = 0,
//!
//!   u(t) = u / (1 + k|u| t),
//!
//! (its derivative −k|u|u/(1 + k|u|t)² is −k|u(t)|u(t)), which tends to 0 and never crosses
//! it. Over a step, u⁺ = u/(1 + hk|u|): the explicit velocity change scaled by 1/(1 + hk|u|),
//! i.e. the force applied as F/(1 + hk|u|). This is also backward Euler with the factor |u|
//! taken at the start of the step (u⁺ = u − hk|u|u⁺), so the update is the semi-implicit one
//! and agrees with the explicit one to first order in h: 1/(1 + x) = 1 − x + O(x²).
//!
//! **Per particle.** [`triangle_air`] gives each triangle's force and its *drag rate*
//! κ = ½ρA(C_d|u| + C_l‖v_rel‖) (kg/s; for drag alone ‖F‖ = κ|u|). A particle of inverse
//! mass w (1/kg; from here on w is an inverse mass, not the wind) receives a third of the
//! force and of the rate of each of its triangles, f = Σ F_t/3 and c = Σ κ_t/3, and
//! [`limited_force`] applies
//!
//!   Δv = h w f / (1 + h w c).
//!
//! The rates are summed before dividing because the velocity changes of a particle's
//! triangles add: a particle in six triangles, each share limited on its own with the
//! particle's w, would receive up to six times the change that brings it to the wind (test
//! `limited_drag_of_a_shared_particle_never_overshoots`: 5.7×). With the summed rate, for drag
//! alone (C_l = 0), at any h:
//!
//! * ‖Δv‖ ≤ h w Σ(κ_t/3)|u_t| / (1 + h w c) = ū · hwc/(1 + hwc) < ū, where
//!   ū = Σκ_t|u_t| / Σκ_t ≤ max_t |u_t| is the rate-weighted mean relative normal speed of
//!   the particle's triangles: one step never changes a particle's velocity by as much as
//!   the relative normal speed of the triangles that pull it.
//! * Where the triangles move with the particle (v̄_t = v, as in a sheet moving as one),
//!   u_t = n_t·r with r the particle's velocity relative to the wind, and f = −D r with
//!   D = Σ(κ_t/3) n_t n_tᵀ, symmetric positive semidefinite with trace c, so its eigenvalues λ
//!   lie in [0, c]. The step maps r to (I − hwD/(1 + hwc)) r, whose eigenvalues
//!   1 − hwλ/(1 + hwc) lie in [1/(1 + hwc), 1]:
//!   every component of r along an eigenvector of D shrinks but keeps its sign, so the
//!   particle is never carried past the wind's velocity, ‖r⁺‖ ≤ ‖r‖ and r⁺·r > 0. For a flat
//!   sheet (every n_t = n) D = c nnᵀ and u⁺ = u/(1 + hwc), the exact solution above with
//!   k = w Σ ½ρC_d A_t/3.
//!
//! **Lift** is perpendicular to v_rel: it turns the relative wind toward the face's plane,
//! shrinking the normal part u at the rate k C_l ‖v_rel‖ sin²θ and growing the tangential part
//! t so that ‖v_rel‖ does not change (θ the angle between v_rel and n). Explicit steps
//! overshoot it too (near edge-on wind u crosses zero once hkC_l‖v_rel‖ > 1, and the
//! tangential growth is unbounded in h), so its rate C_l‖v_rel‖ — an upper bound of both — is
//! part of κ and lift takes the same factor.
//! For one triangle with x = hkC_d|u| and L = hkC_l‖v_rel‖ the step gives
//! u⁺ = u(1 + L cos²θ)/(1 + x + L), of the sign of u, and t⁺ = t(1 + L cos²θ/(1 + x + L)) ≤ 2t;
//! ‖v_rel‖ can grow by at most √(5/4) in one step (the largest of
//! cos⁶θ + sin²θ(1 + cos²θ)² as L → ∞), and only while v_rel still turns into the plane,
//! where lift vanishes (test `limited_lift_keeps_the_normal_speed_and_bounds_the_speed`).
//! With C_l = 0 (the default) the rate is the drag's alone.
//!
//! **Cost.** Where a constraint or a pin holds a particle still (a flag standing in the wind),
//! the solve undoes the step's velocity change, so the force the cloth feels is the limited
//! F/(1 + hwc): weaker by the fraction hwc ≈ hk|u|, first order in h like the step's other
//! splitting errors. For a flag the normal wind settles where drag balances gravity,
//! |u| ≈ √(g/k), so hwc ≈ h√(gk): 1 % for 0.03 kg/m² silk at 20 substeps of a 60 Hz frame.
//! A sheet pinned on all four edges facing a 10 m/s wind has hwc = hk|u| ≈ 17 % (silk) or
//! 2.5 % (0.2 kg/m²) at 20 substeps; there XPBD's own stiffness error at 20 substeps is larger
//! (a 1 m silk sheet of 200 N/m: mean displacement 0.0824 m with explicit drag, 0.0781 m
//! limited, 0.0626 m with either at 400 substeps). Likewise gravity is explicit while the drag
//! is limited, so a sheet falling flat settles where k v² = g(1 + hkv), at
//! v ≈ v_t + gh/2 rather than at v_t = √(g/k): 0.3 % fast at 20 substeps of a 60 Hz frame,
//! 6.7 % at one, for 0.1 kg/m² (test `limited_drag_converges_to_the_quadratic_drag`).
//!
//! Every solver applies the force this way: XPBD and the explicit integrators in their
//! predict step, implicit Euler in its right-hand side (the force is not differentiated);
//! the GPU kernels (`aerodynamics.wgsl`) do the same operations in the same order.

use crate::model::Air;
use glam::Vec3;

/// The air's action on one triangle: its force and its drag rate (see the
/// [module documentation](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TriangleAir {
    /// Drag plus lift (N).
    pub force: Vec3,
    /// The drag rate κ = ½ρA(C_d|v_rel·n| + C_l‖v_rel‖) (kg/s): how fast the force grows with
    /// the relative velocity, the mass-weighted rate at which it would bring the triangle to
    /// the wind's velocity. Always ≥ 0.
    pub rate: f32,
}

/// Aerodynamic force, drag plus lift (N), on the triangle with vertices `x` (m) moving with
/// velocities `v` (m/s) in a wind of velocity `wind` (m/s). See the
/// [module documentation](self) for the formulas. Zero for a degenerate triangle or when the
/// triangle moves with the wind.
///
/// This is the force itself, as in the article; the solvers apply it through
/// [`triangle_air`] and [`limited_force`], which keep a step from overshooting the wind.
#[inline]
pub fn triangle_force(air: &Air, x: [Vec3; 3], v: [Vec3; 3], wind: Vec3) -> Vec3 {
    triangle_air(air, x, v, wind).force
}

/// The force of [`triangle_force`] together with the triangle's drag rate κ (kg/s) of the
/// [module documentation](self). Both are zero for a degenerate triangle.
#[inline]
pub fn triangle_air(air: &Air, x: [Vec3; 3], v: [Vec3; 3], wind: Vec3) -> TriangleAir {
    let cross = (x[1] - x[0]).cross(x[2] - x[0]);
    let len = cross.length();
    if len <= 1e-20 {
        return TriangleAir::default();
    }
    let n = cross / len;
    let area = 0.5 * len;
    let v_rel = (v[0] + v[1] + v[2]) * (1.0 / 3.0) - wind;
    let vn = v_rel.dot(n);
    let k = 0.5 * air.density * area;
    let q = -k;
    let drag = n * (q * air.drag_coefficient * vn.abs() * vn);
    let drag_rate = air.drag_coefficient * vn.abs();
    if air.lift_coefficient == 0.0 {
        return TriangleAir { force: drag, rate: k * drag_rate };
    }
    let speed2 = v_rel.length_squared();
    if speed2.is_nan() || speed2 <= 1e-20 {
        return TriangleAir { force: drag, rate: k * drag_rate };
    }
    let speed = speed2.sqrt();
    let lift = (n * speed2 - v_rel * vn) * (q * air.lift_coefficient * vn / speed);
    TriangleAir { force: drag + lift, rate: k * (drag_rate + air.lift_coefficient * speed) }
}

/// The aerodynamic force (N) to apply to a particle of inverse mass `w` (1/kg) for a step of
/// `h` (s), from the sum `force` (N) of its triangles' shares and the sum `rate` (kg/s) of
/// their drag rates: force / (1 + h w rate), the semi-implicit update of the
/// [module documentation](self). Its velocity change h w force / (1 + h w rate) never carries
/// the particle's velocity relative to the wind past zero, at any step. Equal to `force` for a
/// pinned particle (w = 0).
#[inline(always)]
pub fn limited_force(force: Vec3, rate: f32, h: f32, w: f32) -> Vec3 {
    force / (1.0 + h * w * rate)
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
