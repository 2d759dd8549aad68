//! The clock's system calls (clock_gettime(2), clock_getres(2)) behind safe functions:
//! the only module of the crate with `unsafe`.

/// What `clock` shows now (clock_gettime(2)); inlined so that a timed read costs what
/// the call itself costs.
#[inline(always)]
pub(crate) fn gettime(clock: libc::clockid_t) -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the pointer, and `ts` is a live
    // timespec we own.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    ts
}

/// The resolution of `clock` (clock_getres(2)).
pub(crate) fn getres(clock: libc::clockid_t) -> libc::timespec {
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec through the pointer, and `res` is a live
    // timespec we own.
    unsafe {
        libc::clock_getres(clock, &mut res);
    }
    res
}
