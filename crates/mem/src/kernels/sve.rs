//! AArch64 SVE kernels, written in inline assembly: stable Rust has no SVE intrinsics
//! or scalable vector types, but the assembler accepts SVE instructions in functions
//! compiled with the `sve` target feature.
//!
//! The vector length is whatever this CPU (and this thread's `prctl(PR_SVE_SET_VL)`)
//! has: 128 to 2048 bits. It is read at run time with `cntd` (f64 lanes per vector) and
//! never assumed. Every kernel has two phases in one `asm!` block:
//!
//! 1. a main loop over blocks of 4 vectors, all lanes active (`ptrue`), addresses
//!    advanced with `addvl` (4 vector lengths of bytes per block) and the
//!    `[base, #k, mul vl]` addressing form;
//! 2. a predicated tail: `whilelo` makes the predicate of the elements left (fewer than
//!    4 vectors), one vector per iteration with `incd`, until `whilelo` finds no active
//!    lane (`b.first` loops while the first lane is active).
//!
//! Loads are `ld1d`, plain stores `st1d`, non-temporal stores `stnt1d` (followed by a
//! `dmb ishst`, as the NEON kernels do after `stnp`). `scale` and `triad` broadcast the
//! scalar into a vector (`mov zN.d, xM`) and multiply with `fmul`; triad then adds with
//! `fadd` rather than fusing with `fmla`, so that every ISA produces bit-identical
//! arrays (as the other kernels do; tested). `read` keeps 4 vector accumulators and
//! reduces them with `faddv` at the end.
//!
//! Registers: z0-z8 and p0-p1 are used; z0-z8 are declared clobbered through their
//! low 128 bits (v0-v8: Rust has no operand class for z registers, and code compiled
//! without SVE keeps nothing in the upper bits), p0-p1 as `preg` clobbers.
//!
//! Every function is `unsafe`: the caller must have checked for SVE
//! (`is_aarch64_feature_detected!("sve")`) and that the pointers cover `n` elements.

use core::arch::asm;

/// f64 lanes per SVE vector on this CPU (`cntd`).
///
/// # Safety
/// SVE present.
#[target_feature(enable = "sve")]
pub unsafe fn lanes() -> usize {
    let n: usize;
    // SAFETY: `cntd` only reads the vector length; SVE is present (caller).
    unsafe {
        asm!("cntd {n}", n = out(reg) n, options(nomem, nostack, preserves_flags));
    }
    n
}

/// The vector length in bits (128..2048), read at run time.
///
/// # Safety
/// SVE present.
#[target_feature(enable = "sve")]
pub unsafe fn vector_bits() -> u32 {
    // SAFETY: as for `lanes`.
    (unsafe { lanes() } * 64) as u32
}

/// Blocks of 4 vectors and elements left over, for `n` elements.
#[target_feature(enable = "sve")]
unsafe fn blocks(n: usize) -> (usize, usize) {
    // SAFETY: SVE present (caller).
    let per = 4 * unsafe { lanes() };
    (n / per, n % per)
}

#[target_feature(enable = "sve")]
#[inline]
unsafe fn fence<const NT: bool>() {
    if NT {
        // SAFETY: a store barrier has no preconditions.
        unsafe { asm!("dmb ishst", options(nostack, preserves_flags)) };
    }
}

/// s = sum of a[..n].
///
/// # Safety
/// SVE present; `a` valid for `n` reads.
#[target_feature(enable = "sve")]
pub unsafe fn read(a: *const f64, n: usize) -> f64 {
    // SAFETY: SVE present (caller).
    let (nb, rem) = unsafe { blocks(n) };
    let bits: u64;
    // SAFETY: the main loop reads nb blocks of 4 vectors from a, the tail the rem
    // elements after them under a whilelo predicate: n elements in all, which the
    // caller guarantees are readable.
    unsafe {
        asm!(
            "mov z0.d, #0",
            "mov z1.d, #0",
            "mov z2.d, #0",
            "mov z3.d, #0",
            "ptrue p0.d",
            "cbz {nb}, 3f",
            "2:",
            "ld1d {{ z4.d }}, p0/z, [{a}]",
            "ld1d {{ z5.d }}, p0/z, [{a}, #1, mul vl]",
            "ld1d {{ z6.d }}, p0/z, [{a}, #2, mul vl]",
            "ld1d {{ z7.d }}, p0/z, [{a}, #3, mul vl]",
            "fadd z0.d, z0.d, z4.d",
            "fadd z1.d, z1.d, z5.d",
            "fadd z2.d, z2.d, z6.d",
            "fadd z3.d, z3.d, z7.d",
            "addvl {a}, {a}, #4",
            "subs {nb}, {nb}, #1",
            "b.ne 2b",
            "3:",
            "mov {j}, #0",
            "whilelo p1.d, {j}, {rem}",
            "b.none 5f",
            "4:",
            // Inactive lanes load as zero (/z), so an unpredicated add is exact.
            "ld1d {{ z4.d }}, p1/z, [{a}, {j}, lsl #3]",
            "fadd z0.d, z0.d, z4.d",
            "incd {j}",
            "whilelo p1.d, {j}, {rem}",
            "b.first 4b",
            "5:",
            "fadd z0.d, z0.d, z1.d",
            "fadd z2.d, z2.d, z3.d",
            "fadd z0.d, z0.d, z2.d",
            "faddv d0, p0, z0.d",
            "fmov {bits}, d0",
            a = inout(reg) a => _,
            nb = inout(reg) nb => _,
            rem = in(reg) rem,
            j = out(reg) _,
            bits = out(reg) bits,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("p0") _, out("p1") _,
            options(nostack, readonly),
        );
    }
    f64::from_bits(bits)
}

/// a[..n] = s.
///
/// # Safety
/// SVE present; `a` valid for `n` writes.
#[target_feature(enable = "sve")]
pub unsafe fn write<const NT: bool>(a: *mut f64, n: usize, s: f64) {
    // SAFETY: SVE present (caller).
    let (nb, rem) = unsafe { blocks(n) };
    macro_rules! go {
        ($st:literal) => {
            // SAFETY: nb blocks of 4 vectors then rem elements under a whilelo
            // predicate: exactly n elements from a, which the caller guarantees.
            unsafe {
                asm!(
                    "mov z0.d, {s}",
                    "ptrue p0.d",
                    "cbz {nb}, 3f",
                    "2:",
                    concat!($st, " {{ z0.d }}, p0, [{a}]"),
                    concat!($st, " {{ z0.d }}, p0, [{a}, #1, mul vl]"),
                    concat!($st, " {{ z0.d }}, p0, [{a}, #2, mul vl]"),
                    concat!($st, " {{ z0.d }}, p0, [{a}, #3, mul vl]"),
                    "addvl {a}, {a}, #4",
                    "subs {nb}, {nb}, #1",
                    "b.ne 2b",
                    "3:",
                    "mov {j}, #0",
                    "whilelo p1.d, {j}, {rem}",
                    "b.none 5f",
                    "4:",
                    concat!($st, " {{ z0.d }}, p1, [{a}, {j}, lsl #3]"),
                    "incd {j}",
                    "whilelo p1.d, {j}, {rem}",
                    "b.first 4b",
                    "5:",
                    a = inout(reg) a => _,
                    nb = inout(reg) nb => _,
                    rem = in(reg) rem,
                    s = in(reg) s.to_bits(),
                    j = out(reg) _,
                    out("v0") _,
                    out("p0") _, out("p1") _,
                    options(nostack),
                );
            }
        };
    }
    if NT {
        go!("stnt1d")
    } else {
        go!("st1d")
    }
    // SAFETY: SVE present (caller).
    unsafe { fence::<NT>() };
}

/// dst[..n] = src[..n].
///
/// # Safety
/// SVE present; both valid for `n` elements, not overlapping.
#[target_feature(enable = "sve")]
pub unsafe fn copy<const NT: bool>(src: *const f64, dst: *mut f64, n: usize) {
    // SAFETY: SVE present (caller).
    let (nb, rem) = unsafe { blocks(n) };
    macro_rules! go {
        ($st:literal) => {
            // SAFETY: n elements read from src and written to dst (nb blocks of 4
            // vectors, then rem under a whilelo predicate); the caller guarantees both.
            unsafe {
                asm!(
                    "ptrue p0.d",
                    "cbz {nb}, 3f",
                    "2:",
                    "ld1d {{ z0.d }}, p0/z, [{src}]",
                    "ld1d {{ z1.d }}, p0/z, [{src}, #1, mul vl]",
                    "ld1d {{ z2.d }}, p0/z, [{src}, #2, mul vl]",
                    "ld1d {{ z3.d }}, p0/z, [{src}, #3, mul vl]",
                    concat!($st, " {{ z0.d }}, p0, [{dst}]"),
                    concat!($st, " {{ z1.d }}, p0, [{dst}, #1, mul vl]"),
                    concat!($st, " {{ z2.d }}, p0, [{dst}, #2, mul vl]"),
                    concat!($st, " {{ z3.d }}, p0, [{dst}, #3, mul vl]"),
                    "addvl {src}, {src}, #4",
                    "addvl {dst}, {dst}, #4",
                    "subs {nb}, {nb}, #1",
                    "b.ne 2b",
                    "3:",
                    "mov {j}, #0",
                    "whilelo p1.d, {j}, {rem}",
                    "b.none 5f",
                    "4:",
                    "ld1d {{ z0.d }}, p1/z, [{src}, {j}, lsl #3]",
                    concat!($st, " {{ z0.d }}, p1, [{dst}, {j}, lsl #3]"),
                    "incd {j}",
                    "whilelo p1.d, {j}, {rem}",
                    "b.first 4b",
                    "5:",
                    src = inout(reg) src => _,
                    dst = inout(reg) dst => _,
                    nb = inout(reg) nb => _,
                    rem = in(reg) rem,
                    j = out(reg) _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("p0") _, out("p1") _,
                    options(nostack),
                );
            }
        };
    }
    if NT {
        go!("stnt1d")
    } else {
        go!("st1d")
    }
    // SAFETY: SVE present (caller).
    unsafe { fence::<NT>() };
}

/// dst[..n] = s * src[..n].
///
/// # Safety
/// As for copy.
#[target_feature(enable = "sve")]
pub unsafe fn scale<const NT: bool>(src: *const f64, dst: *mut f64, n: usize, s: f64) {
    // SAFETY: SVE present (caller).
    let (nb, rem) = unsafe { blocks(n) };
    macro_rules! go {
        ($st:literal) => {
            // SAFETY: as in copy: n elements of src and dst, guaranteed by the caller.
            unsafe {
                asm!(
                    "mov z8.d, {s}",
                    "ptrue p0.d",
                    "cbz {nb}, 3f",
                    "2:",
                    "ld1d {{ z0.d }}, p0/z, [{src}]",
                    "ld1d {{ z1.d }}, p0/z, [{src}, #1, mul vl]",
                    "ld1d {{ z2.d }}, p0/z, [{src}, #2, mul vl]",
                    "ld1d {{ z3.d }}, p0/z, [{src}, #3, mul vl]",
                    "fmul z0.d, z0.d, z8.d",
                    "fmul z1.d, z1.d, z8.d",
                    "fmul z2.d, z2.d, z8.d",
                    "fmul z3.d, z3.d, z8.d",
                    concat!($st, " {{ z0.d }}, p0, [{dst}]"),
                    concat!($st, " {{ z1.d }}, p0, [{dst}, #1, mul vl]"),
                    concat!($st, " {{ z2.d }}, p0, [{dst}, #2, mul vl]"),
                    concat!($st, " {{ z3.d }}, p0, [{dst}, #3, mul vl]"),
                    "addvl {src}, {src}, #4",
                    "addvl {dst}, {dst}, #4",
                    "subs {nb}, {nb}, #1",
                    "b.ne 2b",
                    "3:",
                    "mov {j}, #0",
                    "whilelo p1.d, {j}, {rem}",
                    "b.none 5f",
                    "4:",
                    "ld1d {{ z0.d }}, p1/z, [{src}, {j}, lsl #3]",
                    "fmul z0.d, z0.d, z8.d",
                    concat!($st, " {{ z0.d }}, p1, [{dst}, {j}, lsl #3]"),
                    "incd {j}",
                    "whilelo p1.d, {j}, {rem}",
                    "b.first 4b",
                    "5:",
                    src = inout(reg) src => _,
                    dst = inout(reg) dst => _,
                    nb = inout(reg) nb => _,
                    rem = in(reg) rem,
                    s = in(reg) s.to_bits(),
                    j = out(reg) _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v8") _,
                    out("p0") _, out("p1") _,
                    options(nostack),
                );
            }
        };
    }
    if NT {
        go!("stnt1d")
    } else {
        go!("st1d")
    }
    // SAFETY: SVE present (caller).
    unsafe { fence::<NT>() };
}

/// dst[..n] = x[..n] + y[..n].
///
/// # Safety
/// As for copy, three arrays.
#[target_feature(enable = "sve")]
pub unsafe fn add<const NT: bool>(x: *const f64, y: *const f64, dst: *mut f64, n: usize) {
    // SAFETY: SVE present (caller).
    let (nb, rem) = unsafe { blocks(n) };
    macro_rules! go {
        ($st:literal) => {
            // SAFETY: n elements of x, y and dst (nb blocks of 4 vectors, then rem
            // under a whilelo predicate), guaranteed by the caller.
            unsafe {
                asm!(
                    "ptrue p0.d",
                    "cbz {nb}, 3f",
                    "2:",
                    "ld1d {{ z0.d }}, p0/z, [{x}]",
                    "ld1d {{ z1.d }}, p0/z, [{x}, #1, mul vl]",
                    "ld1d {{ z2.d }}, p0/z, [{x}, #2, mul vl]",
                    "ld1d {{ z3.d }}, p0/z, [{x}, #3, mul vl]",
                    "ld1d {{ z4.d }}, p0/z, [{y}]",
                    "ld1d {{ z5.d }}, p0/z, [{y}, #1, mul vl]",
                    "ld1d {{ z6.d }}, p0/z, [{y}, #2, mul vl]",
                    "ld1d {{ z7.d }}, p0/z, [{y}, #3, mul vl]",
                    "fadd z0.d, z0.d, z4.d",
                    "fadd z1.d, z1.d, z5.d",
                    "fadd z2.d, z2.d, z6.d",
                    "fadd z3.d, z3.d, z7.d",
                    concat!($st, " {{ z0.d }}, p0, [{dst}]"),
                    concat!($st, " {{ z1.d }}, p0, [{dst}, #1, mul vl]"),
                    concat!($st, " {{ z2.d }}, p0, [{dst}, #2, mul vl]"),
                    concat!($st, " {{ z3.d }}, p0, [{dst}, #3, mul vl]"),
                    "addvl {x}, {x}, #4",
                    "addvl {y}, {y}, #4",
                    "addvl {dst}, {dst}, #4",
                    "subs {nb}, {nb}, #1",
                    "b.ne 2b",
                    "3:",
                    "mov {j}, #0",
                    "whilelo p1.d, {j}, {rem}",
                    "b.none 5f",
                    "4:",
                    "ld1d {{ z0.d }}, p1/z, [{x}, {j}, lsl #3]",
                    "ld1d {{ z4.d }}, p1/z, [{y}, {j}, lsl #3]",
                    "fadd z0.d, z0.d, z4.d",
                    concat!($st, " {{ z0.d }}, p1, [{dst}, {j}, lsl #3]"),
                    "incd {j}",
                    "whilelo p1.d, {j}, {rem}",
                    "b.first 4b",
                    "5:",
                    x = inout(reg) x => _,
                    y = inout(reg) y => _,
                    dst = inout(reg) dst => _,
                    nb = inout(reg) nb => _,
                    rem = in(reg) rem,
                    j = out(reg) _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v4") _, out("v5") _, out("v6") _, out("v7") _,
                    out("p0") _, out("p1") _,
                    options(nostack),
                );
            }
        };
    }
    if NT {
        go!("stnt1d")
    } else {
        go!("st1d")
    }
    // SAFETY: SVE present (caller).
    unsafe { fence::<NT>() };
}

/// dst[..n] = x[..n] + s * y[..n] (multiply then add, no fused multiply-add, so the
/// results are bit-identical to the scalar kernel).
///
/// # Safety
/// As for add.
#[target_feature(enable = "sve")]
pub unsafe fn triad<const NT: bool>(x: *const f64, y: *const f64, dst: *mut f64, n: usize, s: f64) {
    // SAFETY: SVE present (caller).
    let (nb, rem) = unsafe { blocks(n) };
    macro_rules! go {
        ($st:literal) => {
            // SAFETY: as in add: n elements of x, y and dst, guaranteed by the caller.
            unsafe {
                asm!(
                    "mov z8.d, {s}",
                    "ptrue p0.d",
                    "cbz {nb}, 3f",
                    "2:",
                    "ld1d {{ z0.d }}, p0/z, [{x}]",
                    "ld1d {{ z1.d }}, p0/z, [{x}, #1, mul vl]",
                    "ld1d {{ z2.d }}, p0/z, [{x}, #2, mul vl]",
                    "ld1d {{ z3.d }}, p0/z, [{x}, #3, mul vl]",
                    "ld1d {{ z4.d }}, p0/z, [{y}]",
                    "ld1d {{ z5.d }}, p0/z, [{y}, #1, mul vl]",
                    "ld1d {{ z6.d }}, p0/z, [{y}, #2, mul vl]",
                    "ld1d {{ z7.d }}, p0/z, [{y}, #3, mul vl]",
                    "fmul z4.d, z4.d, z8.d",
                    "fmul z5.d, z5.d, z8.d",
                    "fmul z6.d, z6.d, z8.d",
                    "fmul z7.d, z7.d, z8.d",
                    "fadd z0.d, z0.d, z4.d",
                    "fadd z1.d, z1.d, z5.d",
                    "fadd z2.d, z2.d, z6.d",
                    "fadd z3.d, z3.d, z7.d",
                    concat!($st, " {{ z0.d }}, p0, [{dst}]"),
                    concat!($st, " {{ z1.d }}, p0, [{dst}, #1, mul vl]"),
                    concat!($st, " {{ z2.d }}, p0, [{dst}, #2, mul vl]"),
                    concat!($st, " {{ z3.d }}, p0, [{dst}, #3, mul vl]"),
                    "addvl {x}, {x}, #4",
                    "addvl {y}, {y}, #4",
                    "addvl {dst}, {dst}, #4",
                    "subs {nb}, {nb}, #1",
                    "b.ne 2b",
                    "3:",
                    "mov {j}, #0",
                    "whilelo p1.d, {j}, {rem}",
                    "b.none 5f",
                    "4:",
                    "ld1d {{ z0.d }}, p1/z, [{x}, {j}, lsl #3]",
                    "ld1d {{ z4.d }}, p1/z, [{y}, {j}, lsl #3]",
                    "fmul z4.d, z4.d, z8.d",
                    "fadd z0.d, z0.d, z4.d",
                    concat!($st, " {{ z0.d }}, p1, [{dst}, {j}, lsl #3]"),
                    "incd {j}",
                    "whilelo p1.d, {j}, {rem}",
                    "b.first 4b",
                    "5:",
                    x = inout(reg) x => _,
                    y = inout(reg) y => _,
                    dst = inout(reg) dst => _,
                    nb = inout(reg) nb => _,
                    rem = in(reg) rem,
                    s = in(reg) s.to_bits(),
                    j = out(reg) _,
                    out("v0") _, out("v1") _, out("v2") _, out("v3") _,
                    out("v4") _, out("v5") _, out("v6") _, out("v7") _, out("v8") _,
                    out("p0") _, out("p1") _,
                    options(nostack),
                );
            }
        };
    }
    if NT {
        go!("stnt1d")
    } else {
        go!("st1d")
    }
    // SAFETY: SVE present (caller).
    unsafe { fence::<NT>() };
}
