//! x86-64 SIMD kernels: SSE2 (128-bit), AVX2 (256-bit) and AVX-512F (512-bit).
//!
//! One macro writes all three from the same loop shapes, so the ISAs differ only in
//! vector width: 4 vectors per iteration (independent accumulators for `read`, so the
//! add latency does not bound it), the iteration's loads before its stores (as
//! likwid-bench's kernels: load-store pairs made one-thread copy 2-3% slower on a
//! Zen 5, docs/benchmarks.md), unaligned loads, and stores that are plain or
//! non-temporal (`NT`, a const generic: the choice is made once, outside the loop).
//! Non-temporal stores need the destination aligned to the vector width, so a scalar
//! head runs until it is; a scalar tail finishes the rest; an `sfence` orders them.
//!
//! Every function is `unsafe`: the caller must have checked that the CPU has the
//! feature (`is_x86_feature_detected!`) and that the pointers cover `n` elements.

macro_rules! x86_kernels {
    ($name:ident, $feat:literal, $v:ty, $lanes:expr,
     $load:ident, $store:ident, $stream:ident, $set1:ident, $zero:ident, $add:ident, $mul:ident) => {
        /// Kernels for one vector width.
        pub mod $name {
            use core::arch::x86_64::*;

            /// f64 lanes per vector.
            pub const LANES: usize = $lanes;
            const U: usize = 4 * LANES;

            #[target_feature(enable = $feat)]
            #[inline]
            unsafe fn st<const NT: bool>(p: *mut f64, v: $v) {
                // SAFETY: the caller guarantees p is valid (and aligned when NT).
                unsafe {
                    if NT {
                        $stream(p, v)
                    } else {
                        $store(p, v)
                    }
                }
            }

            /// Elements to store one by one before `dst + head` is vector aligned.
            fn head(dst: *const f64, n: usize) -> usize {
                let misalign = (dst as usize) % (LANES * 8);
                if misalign == 0 || misalign % 8 != 0 {
                    0
                } else {
                    ((LANES * 8 - misalign) / 8).min(n)
                }
            }

            /// s = sum of a[..n].
            ///
            /// # Safety
            /// CPU feature present; `a` valid for `n` reads.
            #[target_feature(enable = $feat)]
            pub unsafe fn read(a: *const f64, n: usize) -> f64 {
                // SAFETY: i + U <= n in the loop; the tail stays below n.
                unsafe {
                    let (mut s0, mut s1, mut s2, mut s3) = ($zero(), $zero(), $zero(), $zero());
                    let mut i = 0;
                    while i + U <= n {
                        s0 = $add(s0, $load(a.add(i)));
                        s1 = $add(s1, $load(a.add(i + LANES)));
                        s2 = $add(s2, $load(a.add(i + 2 * LANES)));
                        s3 = $add(s3, $load(a.add(i + 3 * LANES)));
                        i += U;
                    }
                    let v = $add($add(s0, s1), $add(s2, s3));
                    let mut lanes = [0.0f64; LANES];
                    $store(lanes.as_mut_ptr(), v);
                    let mut s: f64 = lanes.iter().sum();
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
            /// CPU feature present; `a` valid for `n` writes.
            #[target_feature(enable = $feat)]
            pub unsafe fn write<const NT: bool>(a: *mut f64, n: usize, s: f64) {
                // SAFETY: indices stay below n; st is aligned after the head when NT.
                unsafe {
                    let mut i = if NT { head(a, n) } else { 0 };
                    for j in 0..i {
                        *a.add(j) = s;
                    }
                    let v = $set1(s);
                    while i + U <= n {
                        st::<NT>(a.add(i), v);
                        st::<NT>(a.add(i + LANES), v);
                        st::<NT>(a.add(i + 2 * LANES), v);
                        st::<NT>(a.add(i + 3 * LANES), v);
                        i += U;
                    }
                    while i < n {
                        *a.add(i) = s;
                        i += 1;
                    }
                    if NT {
                        _mm_sfence();
                    }
                }
            }

            /// dst[..n] = src[..n].
            ///
            /// # Safety
            /// CPU feature present; both valid for `n` elements, not overlapping.
            #[target_feature(enable = $feat)]
            pub unsafe fn copy<const NT: bool>(src: *const f64, dst: *mut f64, n: usize) {
                // SAFETY: as for write.
                unsafe {
                    let mut i = if NT { head(dst, n) } else { 0 };
                    for j in 0..i {
                        *dst.add(j) = *src.add(j);
                    }
                    while i + U <= n {
                        // Four loads, then four stores (not load-store pairs: the
                        // pointers may alias, so the compiler keeps the order given).
                        let v0 = $load(src.add(i));
                        let v1 = $load(src.add(i + LANES));
                        let v2 = $load(src.add(i + 2 * LANES));
                        let v3 = $load(src.add(i + 3 * LANES));
                        st::<NT>(dst.add(i), v0);
                        st::<NT>(dst.add(i + LANES), v1);
                        st::<NT>(dst.add(i + 2 * LANES), v2);
                        st::<NT>(dst.add(i + 3 * LANES), v3);
                        i += U;
                    }
                    while i < n {
                        *dst.add(i) = *src.add(i);
                        i += 1;
                    }
                    if NT {
                        _mm_sfence();
                    }
                }
            }

            /// dst[..n] = s * src[..n].
            ///
            /// # Safety
            /// As for copy.
            #[target_feature(enable = $feat)]
            pub unsafe fn scale<const NT: bool>(src: *const f64, dst: *mut f64, n: usize, s: f64) {
                // SAFETY: as for write.
                unsafe {
                    let mut i = if NT { head(dst, n) } else { 0 };
                    for j in 0..i {
                        *dst.add(j) = s * *src.add(j);
                    }
                    let k = $set1(s);
                    while i + U <= n {
                        let v0 = $mul(k, $load(src.add(i)));
                        let v1 = $mul(k, $load(src.add(i + LANES)));
                        let v2 = $mul(k, $load(src.add(i + 2 * LANES)));
                        let v3 = $mul(k, $load(src.add(i + 3 * LANES)));
                        st::<NT>(dst.add(i), v0);
                        st::<NT>(dst.add(i + LANES), v1);
                        st::<NT>(dst.add(i + 2 * LANES), v2);
                        st::<NT>(dst.add(i + 3 * LANES), v3);
                        i += U;
                    }
                    while i < n {
                        *dst.add(i) = s * *src.add(i);
                        i += 1;
                    }
                    if NT {
                        _mm_sfence();
                    }
                }
            }

            /// dst[..n] = x[..n] + y[..n].
            ///
            /// # Safety
            /// As for copy, three arrays.
            #[target_feature(enable = $feat)]
            pub unsafe fn add<const NT: bool>(
                x: *const f64,
                y: *const f64,
                dst: *mut f64,
                n: usize,
            ) {
                // SAFETY: as for write.
                unsafe {
                    let mut i = if NT { head(dst, n) } else { 0 };
                    for j in 0..i {
                        *dst.add(j) = *x.add(j) + *y.add(j);
                    }
                    while i + U <= n {
                        let v0 = $add($load(x.add(i)), $load(y.add(i)));
                        let v1 = $add($load(x.add(i + LANES)), $load(y.add(i + LANES)));
                        let v2 = $add($load(x.add(i + 2 * LANES)), $load(y.add(i + 2 * LANES)));
                        let v3 = $add($load(x.add(i + 3 * LANES)), $load(y.add(i + 3 * LANES)));
                        st::<NT>(dst.add(i), v0);
                        st::<NT>(dst.add(i + LANES), v1);
                        st::<NT>(dst.add(i + 2 * LANES), v2);
                        st::<NT>(dst.add(i + 3 * LANES), v3);
                        i += U;
                    }
                    while i < n {
                        *dst.add(i) = *x.add(i) + *y.add(i);
                        i += 1;
                    }
                    if NT {
                        _mm_sfence();
                    }
                }
            }

            /// dst[..n] = x[..n] + s * y[..n] (multiply then add, no FMA, so results
            /// are bit-identical to the scalar kernel).
            ///
            /// # Safety
            /// As for add.
            #[target_feature(enable = $feat)]
            pub unsafe fn triad<const NT: bool>(
                x: *const f64,
                y: *const f64,
                dst: *mut f64,
                n: usize,
                s: f64,
            ) {
                // SAFETY: as for write.
                unsafe {
                    let mut i = if NT { head(dst, n) } else { 0 };
                    for j in 0..i {
                        *dst.add(j) = *x.add(j) + s * *y.add(j);
                    }
                    let k = $set1(s);
                    while i + U <= n {
                        let v0 = $add($load(x.add(i)), $mul(k, $load(y.add(i))));
                        let v1 = $add($load(x.add(i + LANES)), $mul(k, $load(y.add(i + LANES))));
                        let v2 = $add(
                            $load(x.add(i + 2 * LANES)),
                            $mul(k, $load(y.add(i + 2 * LANES))),
                        );
                        let v3 = $add(
                            $load(x.add(i + 3 * LANES)),
                            $mul(k, $load(y.add(i + 3 * LANES))),
                        );
                        st::<NT>(dst.add(i), v0);
                        st::<NT>(dst.add(i + LANES), v1);
                        st::<NT>(dst.add(i + 2 * LANES), v2);
                        st::<NT>(dst.add(i + 3 * LANES), v3);
                        i += U;
                    }
                    while i < n {
                        *dst.add(i) = *x.add(i) + s * *y.add(i);
                        i += 1;
                    }
                    if NT {
                        _mm_sfence();
                    }
                }
            }
        }
    };
}

x86_kernels!(
    sse2,
    "sse2",
    __m128d,
    2,
    _mm_loadu_pd,
    _mm_storeu_pd,
    _mm_stream_pd,
    _mm_set1_pd,
    _mm_setzero_pd,
    _mm_add_pd,
    _mm_mul_pd
);
x86_kernels!(
    avx2,
    "avx,avx2",
    __m256d,
    4,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_stream_pd,
    _mm256_set1_pd,
    _mm256_setzero_pd,
    _mm256_add_pd,
    _mm256_mul_pd
);
x86_kernels!(
    avx512,
    "avx512f",
    __m512d,
    8,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_stream_pd,
    _mm512_set1_pd,
    _mm512_setzero_pd,
    _mm512_add_pd,
    _mm512_mul_pd
);
