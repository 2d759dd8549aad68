//! Plain child processes (a `std::process::Command`, no supervisor, no placement) in
//! their own process group: signalled and killed as a group, waited for with a deadline
//! and a cancel flag, and run to completion with bounded captured output.
//!
//! [`crate::spawn`] is the supervisor for users' commands (gate, placement, `wait4`
//! accounting, cleanup even when numalab is SIGKILLed); this module is the small shared
//! core for the tools numalab runs itself (`ipmitool`, `srun`, `sbatch`, `scontrol`).

mod tail;

pub use tail::Tail;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often [`wait_until`] polls a running child.
pub const POLL: Duration = Duration::from_millis(50);

/// How often [`run_captured`] and [`kill_group`] look whether the child has exited.
const FAST_POLL: Duration = Duration::from_millis(5);

/// Puts the command's child in a new process group (its pid), so that the whole tree it
/// starts can be signalled at once.
pub fn own_group(cmd: &mut Command) {
    cmd.process_group(0);
}

/// Sends `sig` to the process group `pgid`; a group already gone is not an error, and
/// group ids 0 and 1 (ours, init's) are never signalled.
pub fn signal_group(pgid: u32, sig: i32) {
    let Ok(pgid) = i32::try_from(pgid) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

/// True once our child `pid` has exited, leaving it unreaped: a zombie keeps its pid
/// and process group id reserved, so the group can still be signalled safely.
pub fn exited_unreaped(pid: u32) -> std::io::Result<bool> {
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value; waitid(2) only writes into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid(2) on a child with a valid siginfo_t pointer; WNOWAIT leaves it
        // waitable.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            // SAFETY: after a successful waitid, si_pid is initialised (0 if no change).
            return Ok(unsafe { info.si_pid() } != 0);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Waits for `child` (reaping it) until `deadline` or until `stop` is set; `None` if it
/// is still running then.
pub fn wait_until(
    child: &mut Child,
    deadline: Instant,
    stop: Option<&AtomicBool>,
) -> std::io::Result<Option<ExitStatus>> {
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(Some(st));
        }
        let now = Instant::now();
        if now >= deadline || stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return Ok(None);
        }
        std::thread::sleep(POLL.min(deadline - now));
    }
}

/// Ends the child's whole process group: SIGTERM (launchers such as srun forward it to
/// their remote step), then SIGKILL once the child has exited or after `grace` (at once
/// when `grace` is zero); then reaps the child and returns its status. The child is
/// reaped only after the last signal, so its group id cannot have been reused.
pub fn kill_group(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    let pgid = child.id();
    if !grace.is_zero() {
        signal_group(pgid, libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while !exited_unreaped(pgid).unwrap_or(true) && Instant::now() < deadline {
            std::thread::sleep(FAST_POLL);
        }
    }
    signal_group(pgid, libc::SIGKILL);
    child.wait()
}

/// How [`run_captured`] bounds a run.
#[derive(Debug, Clone)]
pub struct Limits<'a> {
    /// The longest the program may run, from its start.
    pub timeout: Duration,
    /// At most this many bytes of stdout are kept (the rest is read and dropped, so the
    /// program never blocks on a full pipe).
    pub max_stdout: u64,
    /// At most this many bytes of stderr are kept.
    pub max_stderr: u64,
    /// After a time-out or cancel: how long the group has between SIGTERM and SIGKILL
    /// (zero: SIGKILL at once).
    pub kill_grace: Duration,
    /// Set from elsewhere (Ctrl-C) to stop the run; its group is then killed.
    pub cancel: Option<&'a AtomicBool>,
}

impl Limits<'_> {
    /// `timeout`, all output kept, SIGKILL at once, no cancel flag.
    pub fn new(timeout: Duration) -> Self {
        Limits {
            timeout,
            max_stdout: u64::MAX,
            max_stderr: u64::MAX,
            kill_grace: Duration::ZERO,
            cancel: None,
        }
    }
}

/// Why [`run_captured`] gave no output.
#[derive(Debug)]
pub enum RunError {
    /// The program does not exist.
    NotFound,
    /// Another spawn failure.
    Spawn(std::io::Error),
    /// Waiting for the program failed; its group was killed.
    Wait(std::io::Error),
    /// It did not finish within the time-out; its group was killed.
    Timeout,
    /// The cancel flag was set; its group was killed.
    Cancelled,
}

/// Runs `cmd` to completion in its own process group with stdout and stderr captured
/// (bounded by `limits`); stdin and the environment are as the caller set them on `cmd`.
///
/// On a time-out, cancel or wait failure the whole group is ended ([`kill_group`] with
/// `limits.kill_grace`) and the output dropped. After a normal exit, anything the
/// program left behind in its group (holding the pipes open) is SIGKILLed, so the run
/// ends when the program does. Any exit status is `Ok`: the caller judges it.
pub fn run_captured(mut cmd: Command, limits: &Limits<'_>) -> Result<Output, RunError> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    own_group(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            RunError::NotFound
        } else {
            RunError::Spawn(e)
        }
    })?;
    let (out_pipe, err_pipe) = (child.stdout.take(), child.stderr.take());
    let (max_out, max_err) = (limits.max_stdout, limits.max_stderr);
    let out_reader = std::thread::spawn(move || read_bounded(out_pipe, max_out));
    let err_reader = std::thread::spawn(move || read_bounded(err_pipe, max_err));
    if let Some(e) = wait_unreaped(&child, limits) {
        // The readers end when the group's last pipe holder dies; not waited for.
        let _ = kill_group(&mut child, limits.kill_grace);
        return Err(e);
    }
    // Exited but not reaped yet, so the group id is still ours: clear out leftovers.
    signal_group(child.id(), libc::SIGKILL);
    let status = child.wait().map_err(RunError::Wait)?;
    Ok(Output {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    })
}

/// Polls until the child has exited (leaving it unreaped: `None`) or the run must end
/// (the reason).
fn wait_unreaped(child: &Child, limits: &Limits<'_>) -> Option<RunError> {
    let started = Instant::now();
    loop {
        match exited_unreaped(child.id()) {
            Ok(true) => return None,
            Ok(false) => {}
            Err(e) => return Some(RunError::Wait(e)),
        }
        if limits.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Some(RunError::Cancelled);
        }
        if started.elapsed() >= limits.timeout {
            return Some(RunError::Timeout);
        }
        std::thread::sleep(FAST_POLL);
    }
}

/// Reads a pipe to its end, keeping the first `limit` bytes and dropping the rest.
fn read_bounded<R: Read>(pipe: Option<R>, limit: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(mut p) = pipe {
        let _ = p.by_ref().take(limit).read_to_end(&mut buf);
        // Drain the rest so the child never blocks on a full pipe.
        let _ = std::io::copy(&mut p, &mut std::io::sink());
    }
    buf
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet) within `within`,
/// looking every 50 ms: how a caller (and the tests) checks that a killed process
/// group really died.
pub fn process_gone(pid: i32, within: Duration) -> bool {
    let t0 = Instant::now();
    loop {
        let gone = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => s
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        };
        if gone {
            return true;
        }
        if t0.elapsed() > within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests;
