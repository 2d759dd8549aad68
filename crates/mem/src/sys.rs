//! The crate's own system calls outside the kernels: what the tests ask of the OS
//! (the CPU a thread runs on), behind safe functions. With [`crate::kernels`] and
//! [`crate::chase`] it is the only module allowed `unsafe`.

/// The CPU the calling thread runs on now (sched_getcpu(3)).
pub(crate) fn current_cpu() -> i32 {
    // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
    unsafe { libc::sched_getcpu() }
}
