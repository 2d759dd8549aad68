//! Scalar kernels: one 8-byte load or store per element, on every architecture.
//!
//! Volatile accesses keep the compiler from vectorising these loops (it would otherwise
//! turn them into SSE2 on x86-64 and the "scalar" figure would be a SIMD one in
//! disguise). Four accumulators keep `read` from being bound by the add latency.
//! Non-temporal stores exist in scalar form only on x86-64 (`movnti`).

use std::ptr::{read_volatile as ld, write_volatile as sto};

/// s = sum of a.
pub fn read(a: &[f64]) -> f64 {
    let p = a.as_ptr();
    let n = a.len();
    let (mut s0, mut s1, mut s2, mut s3) = (0.0, 0.0, 0.0, 0.0);
    let mut i = 0;
    // SAFETY: all indices are below n = a.len().
    unsafe {
        while i + 4 <= n {
            s0 += ld(p.add(i));
            s1 += ld(p.add(i + 1));
            s2 += ld(p.add(i + 2));
            s3 += ld(p.add(i + 3));
            i += 4;
        }
        while i < n {
            s0 += ld(p.add(i));
            i += 1;
        }
    }
    (s0 + s1) + (s2 + s3)
}

#[inline(always)]
fn store<const NT: bool>(p: *mut f64, v: f64) {
    #[cfg(target_arch = "x86_64")]
    if NT {
        // SAFETY: p is a valid, 8-byte aligned f64 slot (the callers index in bounds);
        // movnti is part of SSE2, which every x86-64 CPU has.
        unsafe { core::arch::x86_64::_mm_stream_si64(p.cast::<i64>(), v.to_bits() as i64) };
        return;
    }
    // SAFETY: as above.
    unsafe { sto(p, v) }
}

#[inline(always)]
fn fence<const NT: bool>() {
    #[cfg(target_arch = "x86_64")]
    if NT {
        // SAFETY: sfence has no preconditions (SSE, baseline on x86-64).
        unsafe { core::arch::x86_64::_mm_sfence() };
    }
}

/// Whether scalar non-temporal stores exist on this architecture.
pub const HAS_NT: bool = cfg!(target_arch = "x86_64");

/// a = s.
pub fn write<const NT: bool>(a: &mut [f64], s: f64) {
    let p = a.as_mut_ptr();
    for i in 0..a.len() {
        // SAFETY: i < len.
        store::<NT>(unsafe { p.add(i) }, s);
    }
    fence::<NT>();
}

/// dst = src (equal lengths, checked by the caller).
pub fn copy<const NT: bool>(src: &[f64], dst: &mut [f64]) {
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    for i in 0..dst.len().min(src.len()) {
        // SAFETY: i is below both lengths.
        unsafe { store::<NT>(d.add(i), ld(s.add(i))) };
    }
    fence::<NT>();
}

/// dst = k * src.
pub fn scale<const NT: bool>(src: &[f64], dst: &mut [f64], k: f64) {
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    for i in 0..dst.len().min(src.len()) {
        // SAFETY: i is below both lengths.
        unsafe { store::<NT>(d.add(i), k * ld(s.add(i))) };
    }
    fence::<NT>();
}

/// dst = x + y.
pub fn add<const NT: bool>(x: &[f64], y: &[f64], dst: &mut [f64]) {
    let (x, y, d, n) = (
        x.as_ptr(),
        y.as_ptr(),
        dst.as_mut_ptr(),
        dst.len().min(x.len()).min(y.len()),
    );
    for i in 0..n {
        // SAFETY: i is below every length.
        unsafe { store::<NT>(d.add(i), ld(x.add(i)) + ld(y.add(i))) };
    }
    fence::<NT>();
}

/// dst = x + k * y.
pub fn triad<const NT: bool>(x: &[f64], y: &[f64], dst: &mut [f64], k: f64) {
    let (x, y, d, n) = (
        x.as_ptr(),
        y.as_ptr(),
        dst.as_mut_ptr(),
        dst.len().min(x.len()).min(y.len()),
    );
    for i in 0..n {
        // SAFETY: i is below every length.
        unsafe { store::<NT>(d.add(i), ld(x.add(i)) + k * ld(y.add(i))) };
    }
    fence::<NT>();
}
