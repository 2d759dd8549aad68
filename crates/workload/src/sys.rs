//! The crate's system calls (getrusage(2), clock_gettime(2)) behind safe functions:
//! the only module of the crate with `unsafe`.

/// CPU time (user + system) of this whole process so far, in seconds.
pub(crate) fn process_cpu_s() -> f64 {
    // SAFETY: rusage is a plain C struct of integers and timevals, for which all zero
    // bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage through the pointer, and `ru` is a live one
    // we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU time of the calling thread so far, in seconds.
pub(crate) fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the pointer, and `ts` is a live
    // one we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}
