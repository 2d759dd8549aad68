//! The system calls this crate makes on its own mappings and threads (`madvise`,
//! `mlock`, `getpid`, `sched_getaffinity`), as safe functions: every `unsafe` block for
//! a system call is here.

use numalab_topo::bind::Region;

/// `madvise(advice)` over the whole of `region`; the call's return value (0 or -1, with
/// errno set).
pub(crate) fn madvise(region: &mut Region, advice: libc::c_int) -> libc::c_int {
    let len = region.len();
    // SAFETY: the range is exactly the live mapping `region` owns, borrowed mutably, so
    // no other reference sees it change; the advice values used here (populate, no huge
    // pages) do not change the bytes' values.
    unsafe { libc::madvise(region.as_mut_slice().as_mut_ptr().cast(), len, advice) }
}

/// `mlock` of the whole of `region`; the call's return value (0 or -1, with errno set).
pub(crate) fn mlock(region: &Region) -> libc::c_int {
    // SAFETY: the range is exactly the live mapping `region` owns; locking changes no
    // bytes.
    unsafe { libc::mlock(region.as_slice().as_ptr().cast(), region.len()) }
}

/// This process's id.
pub(crate) fn getpid() -> libc::pid_t {
    // SAFETY: getpid has no preconditions and cannot fail.
    unsafe { libc::getpid() }
}

/// `sched_getaffinity` of `pid` (0: the calling thread) into `mask`, one bit per CPU; the
/// call's return value (0 or -1, with errno set).
pub(crate) fn sched_getaffinity(pid: libc::pid_t, mask: &mut [u64]) -> libc::c_int {
    let bytes = std::mem::size_of_val(mask);
    // SAFETY: the kernel writes at most `bytes` bytes, the length of `mask`, which is
    // borrowed mutably; every bit pattern is a valid u64.
    unsafe { libc::sched_getaffinity(pid, bytes, mask.as_mut_ptr().cast()) }
}
