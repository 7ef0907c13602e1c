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

use crate::solver::xpbd::lanes::Lanes;

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

/// [`atan_unit`] in lanes, operation for operation (both branches computed, one kept).
#[inline(always)]
fn atan_unit_lanes<L: Lanes>(a: L) -> L {
    let big = a.cmpgt(L::splat(0.414_213_57));
    let x = L::select(big, (a - L::splat(1.0)) / (a + L::splat(1.0)), a);
    let offset = L::select(big, L::splat(std::f32::consts::FRAC_PI_4), L::splat(0.0));
    let z = x * x;
    let p = (((L::splat(0.080_537_445) * z - L::splat(0.138_776_86)) * z + L::splat(0.199_777_1)) * z
        - L::splat(0.333_329_5))
        * z;
    offset + (p * x + x)
}

/// [`atan2`] of several points at once (one per lane: four in a `Vec4`, eight in AVX2's
/// lanes), with the same bits in every lane: the scalar function's operations, its branches
/// turned into selections.
#[inline(always)]
pub(crate) fn atan2_lanes<L: Lanes>(y: L, x: L) -> L {
    let (ax, ay) = (x.abs(), y.abs());
    let zero = L::splat(0.0);
    let origin = ax.cmpeq(zero) & ay.cmpeq(zero);
    let small = ay.cmple(ax);
    let u = atan_unit_lanes(L::select(small, ay, ax) / L::select(small, ax, ay));
    let a = L::select(small, u, L::splat(std::f32::consts::FRAC_PI_2) - u);
    let a = L::select(x.cmplt(zero), L::splat(std::f32::consts::PI) - a, a);
    let a = L::select(y.cmplt(zero), -a, a);
    L::select(origin, zero, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points (y, x) all round the plane at many scales (from a seed), on the axes, at the
    /// origin (both signs of zero), and with infinities and NaN.
    fn test_points(seed: u32) -> Vec<(f32, f32)> {
        let mut seed = seed;
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
        points
    }

    /// The four-lane arctangent is the scalar one bit for bit, on points all round the
    /// plane at many scales, on the axes, at the origin (both signs of zero), and for
    /// infinities and NaN.
    #[test]
    fn four_lanes_are_the_scalar_atan2_bit_for_bit() {
        let points = test_points(7);
        for chunk in points.chunks_exact(4) {
            let y = glam::Vec4::from_array(std::array::from_fn(|l| chunk[l].0));
            let x = glam::Vec4::from_array(std::array::from_fn(|l| chunk[l].1));
            let four = atan2_lanes(y, x).to_array();
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
            atan2_lanes(F8::from_array(y), F8::from_array(x)).to_array()
        }
        let points = test_points(17);
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
