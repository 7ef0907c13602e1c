//! The arctangent every solver uses for angles, on the CPU and on the GPU alike.
//!
//! Angle constraints (dihedral bending of cloth, bending of ropes) measure angles with
//! atan2. The standard library's `f32::atan2` and a GPU's `atan2` builtin are not required to
//! round alike (WGSL leaves its precision to the implementation), which would break hooke's
//! bit-for-bit agreement between the CPU and the GPU. [`atan2`] is therefore written out: the
//! Cephes single-precision arctangent (Moshier 1989: range reduction at tan(π/8), a degree-9
//! odd polynomial) on |y|/|x| or |x|/|y|, then the quadrant — plain multiplies, adds and one
//! division, the same operations in the same order in Rust and in WGSL (`common.wgsl`).
//! Its error is below 4·10⁻⁷ rad over the whole plane — under two units in the last place of π
//! (test `atan2_matches_the_standard_library`).

/// atan(a) for a ∈ [0, 1] (radians).
#[inline(always)]
fn atan_unit(a: f32) -> f32 {
    // tan(π/8) = √2 − 1: above it, atan(a) = π/4 + atan((a − 1)/(a + 1)).
    let (x, offset) = if a > 0.414_213_57 { ((a - 1.0) / (a + 1.0), std::f32::consts::FRAC_PI_4) } else { (a, 0.0) };
    let z = x * x;
    let p = (((0.080_537_445 * z - 0.138_776_86) * z + 0.199_777_1) * z - 0.333_329_5) * z;
    offset + (p * x + x)
}

/// The angle of the point (x, y) from the +x axis, in (−π, π] radians; 0 at the origin.
#[inline]
pub fn atan2(y: f32, x: f32) -> f32 {
    let (ax, ay) = (x.abs(), y.abs());
    if ax == 0.0 && ay == 0.0 {
        return 0.0;
    }
    let a = if ay <= ax { atan_unit(ay / ax) } else { std::f32::consts::FRAC_PI_2 - atan_unit(ax / ay) };
    let a = if x < 0.0 { std::f32::consts::PI - a } else { a };
    if y < 0.0 { -a } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atan2_matches_the_standard_library() {
        let mut worst = 0.0f64;
        for i in 0..2000 {
            let t = i as f64 / 2000.0 * std::f64::consts::TAU - std::f64::consts::PI;
            for r in [1e-3f64, 0.7, 1.0, 12.0] {
                let (x, y) = ((r * t.cos()) as f32, (r * t.sin()) as f32);
                let exact = (y as f64).atan2(x as f64);
                worst = worst.max((atan2(y, x) as f64 - exact).abs());
            }
        }
        assert!(worst < 4e-7, "{worst}");
        assert_eq!(atan2(0.0, 0.0), 0.0);
        assert_eq!(atan2(0.0, -1.0), std::f32::consts::PI);
        assert_eq!(atan2(1.0, 0.0), std::f32::consts::FRAC_PI_2);
    }
}
