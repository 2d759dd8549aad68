//! The system calls the tests need (getpgrp(2)) behind a safe function: the only
//! module of the crate with `unsafe`, and only in test builds.

/// The process group of this process.
pub(crate) fn process_group() -> i32 {
    // SAFETY: getpgrp takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::getpgrp() }
}
