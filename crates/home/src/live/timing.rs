//! The timed primitives: fences around clock reads, the user-mode cache flush, one
//! flushed batch and one timed load, and the clock's calibration; the lines of a live
//! buffer they run on ([`LiveLine`]). Every `unsafe` block of the timed accesses is here.

use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Keeps later instructions from starting before this point (after reading the clock).
#[inline(always)]
pub(crate) fn fence_start() {
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence has no memory-safety preconditions (SSE2 is baseline on x86-64).
    unsafe {
        core::arch::x86_64::_mm_lfence();
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: an instruction barrier has no memory-safety effects.
    unsafe {
        core::arch::asm!("isb", options(nostack, preserves_flags));
    }
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// Waits until earlier loads have completed (before reading the clock).
#[inline(always)]
pub(crate) fn fence_end() {
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in fence_start.
    unsafe {
        core::arch::x86_64::_mm_lfence();
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a data barrier has no memory-safety effects.
    unsafe {
        core::arch::asm!("dsb ish", options(nostack, preserves_flags));
    }
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// A buffer of real memory borrowed mutably for `'a`, whose lines the timed accesses
/// below reach by address.
#[derive(Clone, Copy)]
pub(crate) struct LiveBuffer<'a> {
    base: *mut u8,
    len: usize,
    _buf: PhantomData<&'a mut [u8]>,
}

impl<'a> LiveBuffer<'a> {
    /// The buffer `buf`.
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        LiveBuffer {
            base: buf.as_mut_ptr(),
            len: buf.len(),
            _buf: PhantomData,
        }
    }

    /// The buffer of `len` bytes at `base`.
    ///
    /// # Safety
    /// `base..base + len` must be memory that stays mapped, readable and writable, during
    /// `'a`, and that no Rust reference reaches during `'a`.
    pub(crate) unsafe fn from_raw(base: *mut u8, len: usize) -> Self {
        LiveBuffer {
            base,
            len,
            _buf: PhantomData,
        }
    }

    /// The line at byte address `addr`: None unless the 8 bytes at `addr` lie inside the
    /// buffer and `addr` is 8-byte aligned.
    pub(crate) fn line(self, addr: usize) -> Option<LiveLine<'a>> {
        let off = addr.checked_sub(self.base as usize)?;
        (addr.is_multiple_of(8) && off.checked_add(8)? <= self.len).then(|| LiveLine {
            p: self.base.wrapping_add(off),
            _buf: PhantomData,
        })
    }
}

/// The start of a line of a [`LiveBuffer`]: 8-byte aligned, with 8 bytes of the buffer
/// at it, for as long as the buffer is borrowed.
#[derive(Clone, Copy)]
pub(crate) struct LiveLine<'a> {
    p: *mut u8,
    _buf: PhantomData<&'a mut [u8]>,
}

// SAFETY: a LiveLine is an address in a buffer borrowed for 'a, reached only through the
// volatile u64 accesses and flushes below. Threads that share lines order their writes
// and reads with atomics (the forwarded handshake) or only read them (flushed reads, the
// affinity kernel), so sending or sharing one between threads adds no data race.
unsafe impl Send for LiveLine<'_> {}
// SAFETY: as for Send.
unsafe impl Sync for LiveLine<'_> {}

impl LiveLine<'_> {
    /// Writes back and invalidates the line from every cache, and waits for it.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[inline(always)]
    pub(crate) fn flush(self) {
        // SAFETY: p points into the live buffer (LiveBuffer::line checked it).
        unsafe { flush_line(self.p) }
    }

    /// A volatile load of the line's first u64.
    #[inline(always)]
    pub(crate) fn read(self) -> u64 {
        // SAFETY: p is 8-byte aligned with 8 bytes of the live buffer at it
        // (LiveBuffer::line checked both); every bit pattern is a valid u64.
        unsafe { std::ptr::read_volatile(self.p.cast::<u64>()) }
    }

    /// A volatile store of `v` to the line's first u64.
    #[inline(always)]
    pub(crate) fn write(self, v: u64) {
        // SAFETY: as in `read`; the buffer is borrowed mutably for the line's lifetime,
        // so no reference elsewhere sees the bytes change.
        unsafe { std::ptr::write_volatile(self.p.cast::<u64>(), v) }
    }

    /// Nanoseconds per flush+fence+load of the line, over `k` dependent iterations.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[inline(always)]
    pub(crate) fn flushed_batch_ns(self, k: u32, zero: usize) -> f64 {
        // SAFETY: p is 8-byte aligned and inside the live buffer (LiveBuffer::line).
        unsafe { flushed_batch_ns(self.p, k, zero) }
    }

    /// Nanoseconds of one load of the line, clock reads and fences included.
    #[inline(always)]
    pub(crate) fn timed_read_ns(self) -> f64 {
        // SAFETY: p is 8-byte aligned and inside the live buffer (LiveBuffer::line).
        unsafe { timed_read_ns(self.p) }
    }
}

/// Writes back and invalidates the line at `p` from every cache, and waits for it.
///
/// # Safety
/// `p` must point into a mapped, readable page.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
unsafe fn flush_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: p is mapped (caller's contract); mfence has no preconditions.
    unsafe {
        core::arch::x86_64::_mm_clflush(p);
        core::arch::x86_64::_mm_mfence();
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: p is mapped (caller's contract); Linux enables DC CIVAC at EL0
    // (SCTLR_EL1.UCI).
    unsafe {
        core::arch::asm!("dc civac, {a}", "dsb ish", a = in(reg) p, options(nostack, preserves_flags));
    }
}

/// Nanoseconds per flush+fence+load of the line at `p`, over `k` dependent iterations.
///
/// # Safety
/// `p` must be 8-byte aligned and point into a mapped, readable page.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
unsafe fn flushed_batch_ns(p: *const u8, k: u32, zero: usize) -> f64 {
    let mut addr = p;
    let mut acc = 0u64;
    // One untimed round: the TLB entry of the page is warm for the batch.
    // SAFETY: p is mapped and aligned (caller's contract).
    unsafe {
        flush_line(addr);
        acc ^= std::ptr::read_volatile(addr.cast::<u64>());
    }
    let t0 = Instant::now();
    fence_start();
    for _ in 0..k {
        // SAFETY: addr == p: `zero` is 0 at run time, which the compiler cannot know,
        // so each flush waits for the previous load's value.
        unsafe {
            flush_line(addr);
            let v = std::ptr::read_volatile(addr.cast::<u64>());
            acc = acc.wrapping_add(v);
            addr = p.wrapping_add(v as usize & zero);
        }
    }
    fence_end();
    let dt = t0.elapsed();
    std::hint::black_box(acc);
    dt.as_nanos() as f64 / f64::from(k)
}

/// Nanoseconds of one load of the line at `p`, clock reads and fences included.
///
/// # Safety
/// `p` must be 8-byte aligned and point into a mapped, readable page.
#[inline(always)]
unsafe fn timed_read_ns(p: *const u8) -> f64 {
    let t0 = Instant::now();
    fence_start();
    // SAFETY: caller's contract.
    let v = unsafe { std::ptr::read_volatile(p.cast::<u64>()) };
    fence_end();
    let dt = t0.elapsed();
    std::hint::black_box(v);
    dt.as_nanos() as f64
}

/// The clock's cost around a timed read (median, ns) and its resolution (smallest
/// non-zero step seen, ns).
pub(super) fn timer_calibration() -> (f64, f64) {
    let mut d: Vec<f64> = (0..301)
        .map(|_| {
            let t0 = Instant::now();
            fence_start();
            fence_end();
            t0.elapsed().as_nanos() as f64
        })
        .collect();
    let (overhead, _) = crate::probe::median_and_sigma(&mut d);
    let mut resolution = f64::INFINITY;
    let mut last = Instant::now();
    for _ in 0..2000 {
        let now = Instant::now();
        let step = now.duration_since(last).as_nanos() as f64;
        if step > 0.0 {
            resolution = resolution.min(step);
        }
        last = now;
    }
    (overhead, resolution)
}
