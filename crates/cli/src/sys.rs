//! The binary's process-wide system calls (signal(2)) behind safe functions: the only
//! module of the crate with `unsafe`.

/// Restores the default disposition of SIGPIPE, so that writing to a closed pipe
/// (`numalab topo | head`) ends the process quietly like other Unix tools instead of
/// a failed write panicking in println!. Meant for the start of `main`, before any
/// thread starts.
pub fn default_sigpipe() {
    // SAFETY: SIG_DFL installs no handler, so no code of ours runs in signal context;
    // signal(2) only changes the process's disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
