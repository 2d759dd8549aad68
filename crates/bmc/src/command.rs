//! Runs an external program (`ipmitool`) without a shell, in its own process group,
//! with a time limit, bounded output, and a cancel flag; on time-out or cancel the
//! whole group is killed, so no helper it started outlives it.

use crate::error::BmcError;
use crate::secret::{scrub, Secret};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// At most this much of a program's stdout is kept (1 MiB).
const MAX_STDOUT: u64 = 1 << 20;
/// At most this much of a program's stderr is kept.
const MAX_STDERR: u64 = 64 << 10;

/// What one run produced.
pub(crate) struct Output {
    pub stdout: String,
}

/// One program invocation.
pub(crate) struct Invocation<'a> {
    pub program: &'a std::path::Path,
    pub args: Vec<String>,
    /// Environment variables set for the child only.
    pub env: Vec<(&'static str, &'a Secret)>,
    /// Environment variables removed from the child's environment.
    pub env_remove: Vec<&'static str>,
    /// The command in words, without credentials, for errors.
    pub what: String,
    /// Text to remove from any error message.
    pub secrets: Vec<&'a Secret>,
    pub timeout: Duration,
}

/// Runs it; a zero exit gives its stdout, anything else an error with the scrubbed stderr.
pub(crate) fn run(inv: &Invocation<'_>, cancel: &AtomicBool) -> Result<Output, BmcError> {
    let mut cmd = Command::new(inv.program);
    cmd.args(&inv.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for name in &inv.env_remove {
        cmd.env_remove(name);
    }
    for (name, value) in &inv.env {
        cmd.env(name, value.expose());
    }
    let program = inv.program.display().to_string();
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            BmcError::ToolMissing {
                program: program.clone(),
            }
        } else {
            BmcError::Spawn {
                program: program.clone(),
                problem: e.to_string(),
            }
        }
    })?;
    let pgid = child.id() as libc::pid_t;
    let out_pipe = child.stdout.take();
    let err_pipe = child.stderr.take();
    let out_reader = std::thread::spawn(move || read_bounded(out_pipe, MAX_STDOUT));
    let err_reader = std::thread::spawn(move || read_bounded(err_pipe, MAX_STDERR));

    let started = Instant::now();
    let pid = child.id() as libc::id_t;
    let mut ended_by: Option<BmcError> = None;
    loop {
        match exited_unreaped(pid) {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => {
                ended_by = Some(BmcError::Spawn {
                    program: program.clone(),
                    problem: format!("waiting for it: {e}"),
                });
                break;
            }
        }
        if cancel.load(Ordering::Relaxed) {
            ended_by = Some(BmcError::Cancelled);
            break;
        }
        if started.elapsed() >= inv.timeout {
            ended_by = Some(BmcError::Timeout {
                what: inv.what.clone(),
                timeout_ms: inv.timeout.as_millis() as u64,
            });
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // Kill the whole group: after a time-out the program and anything it started; after
    // a normal exit, any helper left behind holding the pipes open. The leader is not
    // reaped yet, so the group id cannot have been reused.
    // SAFETY: kill(2) with a negative pid signals the process group we created with
    // process_group(0) above; it touches no memory of ours.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let status = child.wait();
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    if let Some(e) = ended_by {
        return Err(e);
    }
    let status = status.map_err(|e| BmcError::Spawn {
        program: program.clone(),
        problem: format!("waiting for it: {e}"),
    })?;
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    if !status.success() {
        let text = String::from_utf8_lossy(&stderr);
        let text = scrub(text.trim(), &inv.secrets);
        let mut text: String = text.lines().collect::<Vec<_>>().join(" / ");
        if text.len() > 600 {
            let mut cut = 600;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str(" ...");
        }
        if text.is_empty() {
            text = "no error output".into();
        }
        return Err(BmcError::ToolFailed {
            what: inv.what.clone(),
            status: match status.code() {
                Some(c) => format!("exit code {c}"),
                None => "killed by a signal".into(),
            },
            stderr: text,
        });
    }
    Ok(Output { stdout })
}

/// True once the child has exited, leaving it unreaped (a zombie keeps its process
/// group id reserved until [`std::process::Child::wait`]).
fn exited_unreaped(pid: libc::id_t) -> std::io::Result<bool> {
    // SAFETY: an all-zero siginfo_t is a valid value; waitid(2) only writes into it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: waitid(2) on our own child with a valid siginfo_t pointer.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid,
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

fn read_bounded<R: Read>(pipe: Option<R>, limit: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(p) = pipe {
        let mut p = p;
        let _ = p.by_ref().take(limit).read_to_end(&mut buf);
        // Drain the rest so the child never blocks on a full pipe.
        let _ = std::io::copy(&mut p, &mut std::io::sink());
    }
    buf
}
