//! The system calls the tests need (mkfifo(3)) behind a safe function: the only module
//! of the crate with `unsafe`, and only in test builds.

use std::ffi::CStr;

/// Makes a FIFO at `path` with permissions `mode`; returns mkfifo's result (0 on
/// success, -1 with errno set).
pub(crate) fn mkfifo(path: &CStr, mode: libc::mode_t) -> libc::c_int {
    // SAFETY: a CStr is a valid NUL-terminated string, live for the call; mkfifo only
    // reads it.
    unsafe { libc::mkfifo(path.as_ptr(), mode) }
}
