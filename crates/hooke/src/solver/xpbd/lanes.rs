//! Lanes of f32 for the kernels that solve several constraints of a colour at once: glam's
//! `Vec4` (four lanes, SSE or NEON) and, on x86-64 with AVX2, [`F8`](super::lanes8::F8) (eight).
//! A kernel written once over [`Lanes`] does the same IEEE operations in the same order at
//! either width, so both give the scalar update's bits in every lane (the hinge kernel's tests
//! check it at both widths).

use glam::{BVec4A, Vec4};
use std::ops::{Add, BitAnd, Div, Mul, Neg, Sub};

/// f32 lanes with IEEE arithmetic lane by lane, comparisons to lane masks (SSE's predicates:
/// ordered for less, greater and equal, unordered for not equal), selection by mask and
/// negation by the sign bit.
pub(crate) trait Lanes:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    /// One truth value per lane.
    type Mask: Copy + BitAnd<Output = Self::Mask>;
    /// Every lane `v`.
    fn splat(v: f32) -> Self;
    /// √ per lane.
    fn sqrt(self) -> Self;
    /// |x| per lane (the sign bit cleared).
    fn abs(self) -> Self;
    fn cmpgt(self, o: Self) -> Self::Mask;
    fn cmpge(self, o: Self) -> Self::Mask;
    fn cmplt(self, o: Self) -> Self::Mask;
    fn cmple(self, o: Self) -> Self::Mask;
    fn cmpeq(self, o: Self) -> Self::Mask;
    fn cmpne(self, o: Self) -> Self::Mask;
    /// `a` where `mask` holds, `b` elsewhere.
    fn select(mask: Self::Mask, a: Self, b: Self) -> Self;
    /// Whether any lane of `mask` holds.
    fn any(mask: Self::Mask) -> bool;
}

impl Lanes for Vec4 {
    type Mask = BVec4A;
    #[inline(always)]
    fn splat(v: f32) -> Self {
        Vec4::splat(v)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        Vec4::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        Vec4::abs(self)
    }
    #[inline(always)]
    fn cmpgt(self, o: Self) -> BVec4A {
        Vec4::cmpgt(self, o)
    }
    #[inline(always)]
    fn cmpge(self, o: Self) -> BVec4A {
        Vec4::cmpge(self, o)
    }
    #[inline(always)]
    fn cmplt(self, o: Self) -> BVec4A {
        Vec4::cmplt(self, o)
    }
    #[inline(always)]
    fn cmple(self, o: Self) -> BVec4A {
        Vec4::cmple(self, o)
    }
    #[inline(always)]
    fn cmpeq(self, o: Self) -> BVec4A {
        Vec4::cmpeq(self, o)
    }
    #[inline(always)]
    fn cmpne(self, o: Self) -> BVec4A {
        Vec4::cmpne(self, o)
    }
    #[inline(always)]
    fn select(mask: BVec4A, a: Self, b: Self) -> Self {
        Vec4::select(mask, a, b)
    }
    #[inline(always)]
    fn any(mask: BVec4A) -> bool {
        mask.any()
    }
}
