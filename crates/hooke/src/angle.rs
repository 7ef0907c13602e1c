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

/// [`atan_unit`] in four lanes, operation for operation (both branches computed, one kept).
#[inline(always)]
fn atan_unit4(a: glam::Vec4) -> glam::Vec4 {
    use glam::Vec4;
    let big = a.cmpgt(Vec4::splat(0.414_213_57));
    let x = Vec4::select(big, (a - Vec4::ONE) / (a + Vec4::ONE), a);
    let offset = Vec4::select(big, Vec4::splat(std::f32::consts::FRAC_PI_4), Vec4::ZERO);
    let z = x * x;
    let p = (((Vec4::splat(0.080_537_445) * z - Vec4::splat(0.138_776_86)) * z + Vec4::splat(0.199_777_1)) * z
        - Vec4::splat(0.333_329_5))
        * z;
    offset + (p * x + x)
}

/// [`atan2`] of four points at once (one per lane), with the same bits in every lane: the
/// scalar function's operations, its branches turned into selections.
#[inline(always)]
pub(crate) fn atan2_4(y: glam::Vec4, x: glam::Vec4) -> glam::Vec4 {
    use glam::Vec4;
    let (ax, ay) = (x.abs(), y.abs());
    let origin = ax.cmpeq(Vec4::ZERO) & ay.cmpeq(Vec4::ZERO);
    let small = ay.cmple(ax);
    let u = atan_unit4(Vec4::select(small, ay, ax) / Vec4::select(small, ax, ay));
    let a = Vec4::select(small, u, Vec4::splat(std::f32::consts::FRAC_PI_2) - u);
    let a = Vec4::select(x.cmplt(Vec4::ZERO), Vec4::splat(std::f32::consts::PI) - a, a);
    let a = Vec4::select(y.cmplt(Vec4::ZERO), -a, a);
    Vec4::select(origin, Vec4::ZERO, a)
}

/// [`atan_unit4`] in eight lanes (see [`atan2_8`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn atan_unit8(a: crate::solver::xpbd::lanes8::F8) -> crate::solver::xpbd::lanes8::F8 {
    use crate::solver::xpbd::lanes8::F8;
    let big = a.cmpgt(F8::splat(0.414_213_57));
    let x = F8::select(big, (a - F8::splat(1.0)) / (a + F8::splat(1.0)), a);
    let offset = F8::select(big, F8::splat(std::f32::consts::FRAC_PI_4), F8::splat(0.0));
    let z = x * x;
    let p = (((F8::splat(0.080_537_445) * z - F8::splat(0.138_776_86)) * z + F8::splat(0.199_777_1)) * z
        - F8::splat(0.333_329_5))
        * z;
    offset + (p * x + x)
}

/// [`atan2_4`] in eight lanes (AVX2), operation for operation: the scalar [`atan2`]'s bits in
/// every lane. Only inside code compiled with AVX2 enabled, on a CPU that has it (the rule of
/// the eight-lane arithmetic the solver uses).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn atan2_8(
    y: crate::solver::xpbd::lanes8::F8,
    x: crate::solver::xpbd::lanes8::F8,
) -> crate::solver::xpbd::lanes8::F8 {
    use crate::solver::xpbd::lanes8::F8;
    let (ax, ay) = (x.abs(), y.abs());
    let zero = F8::splat(0.0);
    let origin = ax.cmpeq(zero) & ay.cmpeq(zero);
    let small = ay.cmple(ax);
    let u = atan_unit8(F8::select(small, ay, ax) / F8::select(small, ax, ay));
    let a = F8::select(small, u, F8::splat(std::f32::consts::FRAC_PI_2) - u);
    let a = F8::select(x.cmplt(zero), F8::splat(std::f32::consts::PI) - a, a);
    let a = F8::select(y.cmplt(zero), -a, a);
    F8::select(origin, zero, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The four-lane arctangent is the scalar one bit for bit, on points all round the
    /// plane at many scales, on the axes, at the origin (both signs of zero), and for
    /// infinities and NaN.
    #[test]
    fn four_lanes_are_the_scalar_atan2_bit_for_bit() {
        let mut seed = 7u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let special = [0.0, -0.0, 1.0, -1.0, 0.414_213_57, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-30, -3e20];
        let mut points: Vec<(f32, f32)> = special.iter().flat_map(|&y| special.iter().map(move |&x| (y, x))).collect();
        for k in 0..20_000 {
            let scale = 10f32.powi(k % 13 - 6);
            points.push((rnd() * scale, rnd() * scale));
        }
        for chunk in points.chunks_exact(4) {
            let y = glam::Vec4::from_array(std::array::from_fn(|l| chunk[l].0));
            let x = glam::Vec4::from_array(std::array::from_fn(|l| chunk[l].1));
            let four = atan2_4(y, x).to_array();
            for l in 0..4 {
                let one = atan2(chunk[l].0, chunk[l].1);
                assert_eq!(four[l].to_bits(), one.to_bits(), "atan2({}, {})", chunk[l].0, chunk[l].1);
            }
        }
    }

    /// The eight-lane arctangent is the scalar one bit for bit, on the points of the
    /// four-lane test (skipped, with the reason printed, on a CPU without AVX2).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn eight_lanes_are_the_scalar_atan2_bit_for_bit() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            println!("skipped: this CPU has no AVX2");
            return;
        }
        #[target_feature(enable = "avx2")]
        fn eight(y: [f32; 8], x: [f32; 8]) -> [f32; 8] {
            use crate::solver::xpbd::lanes8::F8;
            atan2_8(F8::from_array(y), F8::from_array(x)).to_array()
        }
        let mut seed = 17u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 - 0.5
        };
        let special = [0.0, -0.0, 1.0, -1.0, 0.414_213_57, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-30, -3e20];
        let mut points: Vec<(f32, f32)> = special.iter().flat_map(|&y| special.iter().map(move |&x| (y, x))).collect();
        for k in 0..20_000 {
            let scale = 10f32.powi(k % 13 - 6);
            points.push((rnd() * scale, rnd() * scale));
        }
        for chunk in points.chunks_exact(8) {
            // SAFETY: AVX2 is present (checked above).
            let got = unsafe { eight(std::array::from_fn(|l| chunk[l].0), std::array::from_fn(|l| chunk[l].1)) };
            for l in 0..8 {
                let one = atan2(chunk[l].0, chunk[l].1);
                assert_eq!(got[l].to_bits(), one.to_bits(), "atan2({}, {})", chunk[l].0, chunk[l].1);
            }
        }
    }

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
