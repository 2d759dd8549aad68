//! AArch64 NEON kernels (128-bit, two f64 lanes), the same loop shapes as the x86
//! ones: 4 vectors per iteration, independent accumulators for `read`, and plain or
//! non-temporal stores. NEON has no non-temporal store intrinsic in Rust's `std::arch`,
//! so the streaming variant issues `stnp` (store pair, non-temporal hint) of two Q
//! registers through inline assembly, then a `dmb ishst`.
//!
//! SVE is not implemented: stable Rust has no SVE intrinsics or types.
//!
//! Every function is `unsafe`: the caller must have checked for NEON
//! (`is_aarch64_feature_detected!`) and that the pointers cover `n` elements.

use core::arch::aarch64::*;

/// f64 lanes per vector.
pub const LANES: usize = 2;
const U: usize = 4 * LANES;

/// Stores two vectors at p (4 f64).
#[target_feature(enable = "neon")]
#[inline]
unsafe fn st2<const NT: bool>(p: *mut f64, v0: float64x2_t, v1: float64x2_t) {
    // SAFETY: the caller guarantees 4 valid f64 slots at p.
    unsafe {
        if NT {
            core::arch::asm!(
                "stnp {a:q}, {b:q}, [{p}]",
                a = in(vreg) v0,
                b = in(vreg) v1,
                p = in(reg) p,
                options(nostack, preserves_flags)
            );
        } else {
            vst1q_f64(p, v0);
            vst1q_f64(p.add(LANES), v1);
        }
    }
}

#[target_feature(enable = "neon")]
#[inline]
unsafe fn fence<const NT: bool>() {
    if NT {
        // SAFETY: a store barrier has no preconditions.
        unsafe { core::arch::asm!("dmb ishst", options(nostack, preserves_flags)) };
    }
}

/// s = sum of a[..n].
///
/// # Safety
/// NEON present; `a` valid for `n` reads.
#[target_feature(enable = "neon")]
pub unsafe fn read(a: *const f64, n: usize) -> f64 {
    // SAFETY: indices stay below n.
    unsafe {
        let z = vdupq_n_f64(0.0);
        let (mut s0, mut s1, mut s2, mut s3) = (z, z, z, z);
        let mut i = 0;
        while i + U <= n {
            s0 = vaddq_f64(s0, vld1q_f64(a.add(i)));
            s1 = vaddq_f64(s1, vld1q_f64(a.add(i + LANES)));
            s2 = vaddq_f64(s2, vld1q_f64(a.add(i + 2 * LANES)));
            s3 = vaddq_f64(s3, vld1q_f64(a.add(i + 3 * LANES)));
            i += U;
        }
        let v = vaddq_f64(vaddq_f64(s0, s1), vaddq_f64(s2, s3));
        let mut s = vgetq_lane_f64::<0>(v) + vgetq_lane_f64::<1>(v);
        while i < n {
            s += *a.add(i);
            i += 1;
        }
        s
    }
}

/// a[..n] = s.
///
/// # Safety
/// NEON present; `a` valid for `n` writes.
#[target_feature(enable = "neon")]
pub unsafe fn write<const NT: bool>(a: *mut f64, n: usize, s: f64) {
    // SAFETY: indices stay below n.
    unsafe {
        let v = vdupq_n_f64(s);
        let mut i = 0;
        while i + U <= n {
            st2::<NT>(a.add(i), v, v);
            st2::<NT>(a.add(i + 2 * LANES), v, v);
            i += U;
        }
        while i < n {
            *a.add(i) = s;
            i += 1;
        }
        fence::<NT>();
    }
}

/// dst[..n] = src[..n].
///
/// # Safety
/// NEON present; both valid for `n` elements, not overlapping.
#[target_feature(enable = "neon")]
pub unsafe fn copy<const NT: bool>(src: *const f64, dst: *mut f64, n: usize) {
    // SAFETY: indices stay below n.
    unsafe {
        let mut i = 0;
        while i + U <= n {
            st2::<NT>(
                dst.add(i),
                vld1q_f64(src.add(i)),
                vld1q_f64(src.add(i + LANES)),
            );
            st2::<NT>(
                dst.add(i + 2 * LANES),
                vld1q_f64(src.add(i + 2 * LANES)),
                vld1q_f64(src.add(i + 3 * LANES)),
            );
            i += U;
        }
        while i < n {
            *dst.add(i) = *src.add(i);
            i += 1;
        }
        fence::<NT>();
    }
}

/// dst[..n] = s * src[..n].
///
/// # Safety
/// As for copy.
#[target_feature(enable = "neon")]
pub unsafe fn scale<const NT: bool>(src: *const f64, dst: *mut f64, n: usize, s: f64) {
    // SAFETY: indices stay below n.
    unsafe {
        let k = vdupq_n_f64(s);
        let mut i = 0;
        while i + U <= n {
            st2::<NT>(
                dst.add(i),
                vmulq_f64(k, vld1q_f64(src.add(i))),
                vmulq_f64(k, vld1q_f64(src.add(i + LANES))),
            );
            st2::<NT>(
                dst.add(i + 2 * LANES),
                vmulq_f64(k, vld1q_f64(src.add(i + 2 * LANES))),
                vmulq_f64(k, vld1q_f64(src.add(i + 3 * LANES))),
            );
            i += U;
        }
        while i < n {
            *dst.add(i) = s * *src.add(i);
            i += 1;
        }
        fence::<NT>();
    }
}

/// dst[..n] = x[..n] + y[..n].
///
/// # Safety
/// As for copy, three arrays.
#[target_feature(enable = "neon")]
pub unsafe fn add<const NT: bool>(x: *const f64, y: *const f64, dst: *mut f64, n: usize) {
    // SAFETY: indices stay below n.
    unsafe {
        let mut i = 0;
        while i + U <= n {
            let v = |j: usize| vaddq_f64(vld1q_f64(x.add(i + j)), vld1q_f64(y.add(i + j)));
            st2::<NT>(dst.add(i), v(0), v(LANES));
            st2::<NT>(dst.add(i + 2 * LANES), v(2 * LANES), v(3 * LANES));
            i += U;
        }
        while i < n {
            *dst.add(i) = *x.add(i) + *y.add(i);
            i += 1;
        }
        fence::<NT>();
    }
}

/// dst[..n] = x[..n] + s * y[..n] (multiply then add, no fused multiply-add, so the
/// results are bit-identical to the scalar kernel).
///
/// # Safety
/// As for add.
#[target_feature(enable = "neon")]
pub unsafe fn triad<const NT: bool>(x: *const f64, y: *const f64, dst: *mut f64, n: usize, s: f64) {
    // SAFETY: indices stay below n.
    unsafe {
        let k = vdupq_n_f64(s);
        let mut i = 0;
        while i + U <= n {
            let v = |j: usize| {
                vaddq_f64(
                    vld1q_f64(x.add(i + j)),
                    vmulq_f64(k, vld1q_f64(y.add(i + j))),
                )
            };
            st2::<NT>(dst.add(i), v(0), v(LANES));
            st2::<NT>(dst.add(i + 2 * LANES), v(2 * LANES), v(3 * LANES));
            i += U;
        }
        while i < n {
            *dst.add(i) = *x.add(i) + s * *y.add(i);
            i += 1;
        }
        fence::<NT>();
    }
}
