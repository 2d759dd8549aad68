//! numalab's side of the system calls around the supervisor (descriptor pairs, the
//! monotonic clock, CPU sets, the signal mask around `fork`, signalling and waiting for
//! the supervisor), as safe functions: with [`super::child`] (what runs after `fork`),
//! the only home of `unsafe` in this crate.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// A pair of fresh close-on-exec descriptors written by `make` into an array we own, or
/// None (errno set) when it fails.
fn fd_pair(make: impl FnOnce(*mut libc::c_int) -> libc::c_int) -> Option<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    if make(fds.as_mut_ptr()) != 0 {
        return None;
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Some(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `pipe2(O_CLOEXEC)`: (read end, write end), or None with errno set.
pub(super) fn pipe_cloexec() -> Option<(OwnedFd, OwnedFd)> {
    // SAFETY: pipe2 writes two descriptors into the array of two fd_pair owns.
    fd_pair(|fds| unsafe { libc::pipe2(fds, libc::O_CLOEXEC) })
}

/// A close-on-exec UNIX stream socket pair, or None with errno set.
pub(super) fn socketpair_cloexec() -> Option<(OwnedFd, OwnedFd)> {
    fd_pair(|fds| {
        // SAFETY: socketpair writes two descriptors into the array of two fd_pair owns.
        unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds,
            )
        }
    })
}

/// CLOCK_MONOTONIC (the clock of [`std::time::Instant`]) in ns; async-signal-safe.
pub(super) fn mono_ns() -> u64 {
    // SAFETY: a zeroed timespec is a valid out-parameter for clock_gettime.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// The empty CPU set.
pub(super) fn empty_cpu_set() -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is the empty set (plain bits).
    unsafe { std::mem::zeroed() }
}

/// Adds CPU `c` to `set`.
///
/// # Panics
/// When `c` is not below `CPU_SETSIZE`.
pub(super) fn cpu_set_add(set: &mut libc::cpu_set_t, c: usize) {
    assert!(c < libc::CPU_SETSIZE as usize, "CPU {c} beyond CPU_SETSIZE");
    // SAFETY: c is below CPU_SETSIZE (asserted), so the bit lies inside `set`.
    unsafe { libc::CPU_SET(c, set) };
}

/// This process's id and process group id.
pub(super) fn pid_and_pgrp() -> (libc::pid_t, libc::pid_t) {
    // SAFETY: getpid and getpgrp have no preconditions and cannot fail.
    unsafe { (libc::getpid(), libc::getpgrp()) }
}

/// Blocks every signal in the calling thread; returns the mask it had.
pub(super) fn block_all_signals() -> libc::sigset_t {
    // SAFETY: sigset_t values we own, zeroed (then filled by sigfillset);
    // pthread_sigmask on the calling thread reads `all` and writes `old`.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    }
}

/// Restores the calling thread's signal mask to `old` (from [`block_all_signals`]).
pub(super) fn restore_signals(old: &libc::sigset_t) {
    // SAFETY: pthread_sigmask on the calling thread, reading the mask we own.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut());
    }
}

/// Blocks until child `pid` has ended and reaps it; its wait status.
pub(super) fn waitpid_blocking(pid: libc::pid_t) -> libc::c_int {
    let mut st = 0;
    // SAFETY: waitpid writes the status we own.
    unsafe {
        libc::waitpid(pid, &mut st, 0);
    }
    st
}

/// `wait4(pid, status, 0, usage)`: reaps child `pid`, with its resource usage.
pub(super) fn wait4(
    pid: libc::pid_t,
    status: &mut libc::c_int,
    usage: &mut libc::rusage,
) -> libc::pid_t {
    // SAFETY: wait4 writes the status and rusage we borrow mutably.
    unsafe { libc::wait4(pid, status, 0, usage) }
}

/// A zeroed rusage (every figure 0).
pub(super) fn zeroed_rusage() -> libc::rusage {
    // SAFETY: rusage is plain numbers; all zeros is a valid value.
    unsafe { std::mem::zeroed() }
}

/// `waitid(P_PID, pid, WEXITED | WNOWAIT | extra)`: Some(si_pid) when the call succeeds
/// (si_pid 0: nothing has ended, with WNOHANG), None when it fails (errno set). The
/// child stays waitable.
pub(super) fn waitid_exited(pid: libc::pid_t, extra: libc::c_int) -> Option<libc::pid_t> {
    // SAFETY: a zeroed siginfo_t is a valid out-parameter; waitid writes it; si_pid
    // reads the field waitid fills for WEXITED (0 when nothing was waitable).
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT | extra,
        );
        if rc == 0 {
            Some(info.si_pid())
        } else {
            None
        }
    }
}

/// Sends signal `sig` to process `pid`.
pub(super) fn kill(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Sends one byte on socket `fd` with MSG_NOSIGNAL (a closed peer gives EPIPE, not
/// SIGPIPE).
pub(super) fn send_byte_nosignal(fd: RawFd, b: u8) {
    let b = [b];
    // SAFETY: send reads one byte of the array we own.
    unsafe {
        libc::send(fd, b.as_ptr().cast(), 1, libc::MSG_NOSIGNAL);
    }
}

/// Makes descriptor `fd` non-blocking.
pub(super) fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor number reads and sets flags only.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
}

/// The effective user id of this process (0: root, who may signal and trace anything).
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, touches no memory of ours and cannot fail.
    unsafe { libc::geteuid() }
}

/// Makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`): orphans among its
/// descendants are reparented to it instead of to init. False where it is refused
/// (qemu-user, kernels before 3.4).
pub(super) fn set_child_subreaper() -> bool {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes a flag, touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// This process's session id.
pub(super) fn own_session() -> libc::pid_t {
    // SAFETY: getsid(0) has no preconditions.
    unsafe { libc::getsid(0) }
}

/// Reaps child `pid` if it has ended, without blocking.
pub(super) fn reap_nohang(pid: libc::pid_t) {
    let mut st = 0;
    // SAFETY: waitpid writes the status we own.
    unsafe {
        libc::waitpid(pid, &mut st, libc::WNOHANG);
    }
}
