//! Eight f32 lanes (AVX2's 256-bit registers) with the semantics of glam's four-lane `Vec4` on
//! SSE: the same IEEE operations lane by lane, comparisons with the same predicates (ordered
//! and signalling for <, ≤, >, ≥; unordered for ≠), negation by the sign bit and selection by
//! bit masks. A kernel written with [`F8`] in the operation order of its four-lane twin gives
//! the twin's bits in every lane; the eight-lane kernels rely on that.
//!
//! The operators are `#[inline(always)]` functions written lane by lane on arrays: inlined
//! into a function compiled with `#[target_feature(enable = "avx2")]` (called on a CPU that has
//! AVX2, checked by [`available`]), the compiler makes each one a single 256-bit instruction.
//! (Operators around the intrinsics do not work: an operator method cannot carry the target
//! feature, and the intrinsics were then left as calls — a hinge kernel 13 % slower than the
//! four-lane one.) Elsewhere they are correct, only slow. Rust never fuses a multiply and an
//! add, so either way each lane rounds as the scalar code does.

use std::arch::x86_64::*;
use std::ops::{Add, BitAnd, Div, Mul, Neg, Sub};

/// Whether this CPU runs the eight-lane kernels (AVX2).
#[inline(always)]
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Eight f32 lanes. Each operation is written lane by lane on an array: inlined into a
/// function compiled for AVX2, the compiler turns it into one 256-bit instruction (the
/// intrinsics themselves are not inlined into operator methods, which cannot carry the
/// target feature), and lane by lane it is the same IEEE operation either way.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub(crate) struct F8(pub [f32; 8]);

/// Eight lane masks (all bits set where true), as glam's `BVec4A`.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub(crate) struct M8(pub [u32; 8]);

macro_rules! binary {
    ($trait:ident, $method:ident, $op:tt) => {
        impl $trait for F8 {
            type Output = F8;
            #[inline(always)]
            fn $method(self, o: F8) -> F8 {
                F8(std::array::from_fn(|l| self.0[l] $op o.0[l]))
            }
        }
    };
}
binary!(Add, add, +);
binary!(Sub, sub, -);
binary!(Mul, mul, *);
binary!(Div, div, /);

impl Neg for F8 {
    type Output = F8;
    /// The sign bit flipped, as glam negates.
    #[inline(always)]
    fn neg(self) -> F8 {
        F8(self.0.map(|v| f32::from_bits(v.to_bits() ^ 0x8000_0000)))
    }
}

impl BitAnd for M8 {
    type Output = M8;
    #[inline(always)]
    fn bitand(self, o: M8) -> M8 {
        M8(std::array::from_fn(|l| self.0[l] & o.0[l]))
    }
}

macro_rules! compare {
    ($method:ident, $op:tt) => {
        #[inline(always)]
        pub(crate) fn $method(self, o: F8) -> M8 {
            M8(std::array::from_fn(|l| if self.0[l] $op o.0[l] { u32::MAX } else { 0 }))
        }
    };
}

impl F8 {
    #[inline(always)]
    pub(crate) fn splat(v: f32) -> F8 {
        F8([v; 8])
    }

    /// The lanes of an AVX register.
    #[inline(always)]
    pub(crate) fn from_m256(v: __m256) -> F8 {
        // SAFETY: both are 8 f32s.
        F8(unsafe { std::mem::transmute::<__m256, [f32; 8]>(v) })
    }

    /// The lanes as an AVX register.
    #[inline(always)]
    pub(crate) fn m256(self) -> __m256 {
        // SAFETY: both are 8 f32s.
        unsafe { std::mem::transmute::<[f32; 8], __m256>(self.0) }
    }

    #[inline(always)]
    pub(crate) fn from_array(v: [f32; 8]) -> F8 {
        F8(v)
    }

    #[cfg(test)]
    #[inline(always)]
    pub(crate) fn to_array(self) -> [f32; 8] {
        self.0
    }

    #[inline(always)]
    pub(crate) fn sqrt(self) -> F8 {
        F8(self.0.map(f32::sqrt))
    }

    /// The sign bit cleared.
    #[inline(always)]
    pub(crate) fn abs(self) -> F8 {
        F8(self.0.map(|v| f32::from_bits(v.to_bits() & 0x7fff_ffff)))
    }

    // Rust's comparisons are IEEE's: false with a NaN for <, ≤, >, ≥ and ==, true for ≠ —
    // the predicates glam's SSE comparisons use.
    compare!(cmpgt, >);
    compare!(cmpge, >=);
    compare!(cmplt, <);
    compare!(cmple, <=);
    compare!(cmpeq, ==);
    compare!(cmpne, !=);

    /// `a` where `mask` is set, `b` elsewhere (glam's `Vec4::select`).
    #[inline(always)]
    pub(crate) fn select(mask: M8, a: F8, b: F8) -> F8 {
        F8(std::array::from_fn(|l| f32::from_bits((a.0[l].to_bits() & mask.0[l]) | (b.0[l].to_bits() & !mask.0[l]))))
    }
}

impl M8 {
    /// The lanes' truth as the low eight bits.
    #[inline(always)]
    pub(crate) fn bits(self) -> u32 {
        self.0.iter().enumerate().fold(0, |b, (l, &m)| b | ((m >> 31) << l))
    }
}

/// The eight columns of eight 8-float rows (a row is one particle record: x⁰, w, d).
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}

/// `a` where `mask` is set, `b` elsewhere, on AVX registers (glam's `Vec4::select`, eight lanes).
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) fn select256(mask: __m256, a: __m256, b: __m256) -> __m256 {
    _mm256_or_ps(_mm256_andnot_ps(mask, b), _mm256_and_ps(a, mask))
}

/// Writes the displacement halves (d: x, y, z, w; the last 16 bytes of a particle record) of
/// eight records from their four columns, one record per lane: [`transpose8`]'s d columns put
/// back as rows, four unpacks, four shuffles and eight 16-byte stores where a lane-by-lane
/// write took about eight instructions a record.
///
/// # Safety
/// Each of `d` must point to a record's d half (16-byte aligned: records are 32-byte
/// aligned), valid for writes, with no other thread accessing it; the eight are distinct.
#[inline]
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn store_d8(d: [*mut f32; 8], x: __m256, y: __m256, z: __m256, w: __m256) {
    let t0 = _mm256_unpacklo_ps(x, y);
    let t1 = _mm256_unpackhi_ps(x, y);
    let t2 = _mm256_unpacklo_ps(z, w);
    let t3 = _mm256_unpackhi_ps(z, w);
    // Row i holds lane i in its low half and lane i + 4 in its high half.
    let rows = [
        _mm256_shuffle_ps::<0x44>(t0, t2),
        _mm256_shuffle_ps::<0xEE>(t0, t2),
        _mm256_shuffle_ps::<0x44>(t1, t3),
        _mm256_shuffle_ps::<0xEE>(t1, t3),
    ];
    for (i, r) in rows.into_iter().enumerate() {
        // SAFETY: as the caller promised.
        unsafe {
            _mm_store_ps(d[i], _mm256_castps256_ps128(r));
            _mm_store_ps(d[i + 4], _mm256_extractf128_ps::<1>(r));
        }
    }
}

macro_rules! forward {
    ($($name:ident),*) => {
        $(
            #[inline(always)]
            fn $name(self, o: F8) -> M8 {
                F8::$name(self, o)
            }
        )*
    };
}

impl super::lanes::Lanes for F8 {
    type Mask = M8;
    #[inline(always)]
    fn splat(v: f32) -> F8 {
        F8::splat(v)
    }
    #[inline(always)]
    fn sqrt(self) -> F8 {
        F8::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> F8 {
        F8::abs(self)
    }
    forward!(cmpgt, cmpge, cmplt, cmple, cmpeq, cmpne);
    #[inline(always)]
    fn select(mask: M8, a: F8, b: F8) -> F8 {
        F8::select(mask, a, b)
    }
    #[inline(always)]
    fn any(mask: M8) -> bool {
        mask.bits() != 0
    }
}
