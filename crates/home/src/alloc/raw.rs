//! Typed values in a pool's plain bytes: the element types a pool may hold
//! ([`LineValue`]) and the checked reads and writes of one at a byte offset. Every
//! `unsafe` of the allocator is here.

#![allow(unsafe_code)]

/// Element types [`super::Scattered`] can store in pool memory: plain values without
/// padding bytes.
///
/// # Safety
/// Implement only for `Copy` types with no padding bytes (every byte of a value is
/// initialised) for which every pattern of `size_of::<Self>()` initialised bytes is a
/// valid value (numbers and arrays of them: no `bool`, `char`, enums or references):
/// the pool is plain bytes, which must stay initialised for whoever reads the pool
/// after the [`super::Scattered`] view is gone, and a value is read back from whatever
/// bytes its slot holds.
pub unsafe trait LineValue: Copy + 'static {}

macro_rules! line_values {
    ($($t:ty),*) => {
        // SAFETY: primitive numbers have no padding, and every bit pattern of their size
        // is a valid number.
        $(unsafe impl LineValue for $t {})*
    };
}
line_values!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
// SAFETY: an array of padding-free elements has no padding, and it is valid whenever
// each element is, which every bit pattern of a LineValue element is.
unsafe impl<T: LineValue, const N: usize> LineValue for [T; N] {}

/// The `size_of::<T>()` bytes of `pool` at byte `off` (as a range checked against the
/// pool), after checking that they are aligned for `T`.
///
/// # Panics
/// When the bytes do not lie inside `pool` or are not aligned for `T` (the callers check
/// both before: [`super::Scattered::gather`] refuses such pools and lines).
fn slot<T: LineValue>(pool: &[u8], off: usize) -> std::ops::Range<usize> {
    let end = off
        .checked_add(std::mem::size_of::<T>())
        .filter(|&end| end <= pool.len())
        .unwrap_or_else(|| {
            panic!(
                "a value at byte {off} does not fit a pool of {} bytes",
                pool.len()
            )
        });
    assert!(
        pool[off..end].as_ptr().cast::<T>().is_aligned(),
        "byte {off} of the pool at {:p} is not aligned for {}",
        pool.as_ptr(),
        std::any::type_name::<T>()
    );
    off..end
}

/// The `T` at byte `off` of `pool`.
///
/// # Panics
/// When the value does not lie inside `pool` or is not aligned for `T`.
pub(super) fn read<T: LineValue>(pool: &[u8], off: usize) -> T {
    let bytes = &pool[slot::<T>(pool, off)];
    // SAFETY: `bytes` is exactly `size_of::<T>()` initialised bytes of the borrowed pool
    // (a `&[u8]`), checked aligned for T by `slot`; every pattern of such bytes is a
    // valid T (LineValue's contract).
    unsafe { bytes.as_ptr().cast::<T>().read() }
}

/// Writes `v` at byte `off` of `pool`.
///
/// # Panics
/// When the value does not lie inside `pool` or is not aligned for `T`.
pub(super) fn write<T: LineValue>(pool: &mut [u8], off: usize, v: T) {
    let range = slot::<T>(pool, off);
    let bytes = &mut pool[range];
    // SAFETY: `bytes` is exactly `size_of::<T>()` bytes of the mutably borrowed pool,
    // checked aligned for T by `slot`; T has no padding (LineValue), so the pool's bytes
    // stay initialised.
    unsafe { bytes.as_mut_ptr().cast::<T>().write(v) }
}

/// `values`' memory as its bytes (the tests' pools, aligned for their element type).
#[cfg(test)]
pub(super) fn bytes_of_mut<T: LineValue>(values: &mut [T]) -> &mut [u8] {
    let n = std::mem::size_of_val(values);
    // SAFETY: the same memory, mutably borrowed for the same lifetime, seen as its `n`
    // bytes: u8 has alignment 1, the bytes are initialised (T has no padding), and any
    // bytes written through the view leave valid T values (LineValue's contract).
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), n) }
}
