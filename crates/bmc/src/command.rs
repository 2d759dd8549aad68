//! Runs an external program (`ipmitool`) without a shell, through
//! [`numalab_proc::group::run_captured`]: its own process group, a time limit, bounded
//! output and a cancel flag (on time-out or cancel the whole group is killed, so no
//! helper it started outlives it); turns the result into BMC errors with credentials
//! scrubbed.

use crate::error::BmcError;
use crate::secret::{scrub, Secret};
use numalab_proc::group::{run_captured, Limits, RunError};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

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
    cmd.args(&inv.args).stdin(Stdio::null());
    for name in &inv.env_remove {
        cmd.env_remove(name);
    }
    for (name, value) in &inv.env {
        cmd.env(name, value.expose());
    }
    let program = inv.program.display().to_string();
    let limits = Limits {
        max_stdout: MAX_STDOUT,
        max_stderr: MAX_STDERR,
        cancel: Some(cancel),
        ..Limits::new(inv.timeout)
    };
    let out = run_captured(cmd, &limits).map_err(|e| match e {
        RunError::NotFound => BmcError::ToolMissing {
            program: program.clone(),
        },
        RunError::Spawn(e) => BmcError::Spawn {
            program: program.clone(),
            problem: e.to_string(),
        },
        RunError::Wait(e) => BmcError::Spawn {
            program: program.clone(),
            problem: format!("waiting for it: {e}"),
        },
        RunError::Cancelled => BmcError::Cancelled,
        RunError::Timeout => BmcError::Timeout {
            what: inv.what.clone(),
            timeout_ms: inv.timeout.as_millis() as u64,
        },
    })?;
    let status = out.status;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
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
