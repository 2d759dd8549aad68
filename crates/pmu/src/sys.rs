//! The crate's plain system calls (clock_gettime(2), getuid(2)) behind safe
//! functions: the only module of the crate with `unsafe` (perf_event_open itself goes
//! through the `perf-event2` crate).

/// CPU time of the calling thread so far (CLOCK_THREAD_CPUTIME_ID), in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the pointer, and `ts` is a live
    // one we own.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The real user id of this process.
pub(crate) fn uid() -> u32 {
    // SAFETY: getuid takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::getuid() }
}
