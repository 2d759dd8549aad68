//! How a user command run by numalab ended (`numalab_proc` runs it under a supervisor
//! and fills this in); carried by the records of profiles, scaling runs and sweeps.

use serde::{Deserialize, Serialize};

/// How a run ended, with what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The command as run.
    pub argv: Vec<String>,
    /// Exit code, if it exited.
    pub exit_code: Option<i32>,
    /// Signal number, if a signal ended it.
    pub signal: Option<i32>,
    /// Signal name ("SIGSEGV"), if a signal ended it.
    pub signal_name: Option<String>,
    /// Killed because the timeout passed.
    pub timed_out: bool,
    /// Killed because numalab was asked to stop (Ctrl-C).
    pub interrupted: bool,
    /// Wall time from fork (or, for a gated child, from the release of the gate) to
    /// exit, ns.
    pub wall_ns: u64,
    /// User CPU time of the command and all its descendants (those it reaped and the
    /// orphans the supervisor reaped), ns.
    pub user_cpu_ns: u64,
    /// System CPU time, ns.
    pub sys_cpu_ns: u64,
    /// Peak resident memory, bytes.
    pub max_rss_bytes: u64,
    /// Last bytes of stdout.
    pub stdout_tail: String,
    /// Last bytes of stderr.
    pub stderr_tail: String,
    /// Whole stdout (up to `keep_stdout_bytes`), when asked for.
    #[serde(skip)]
    pub stdout: Option<String>,
    /// Descendants still alive after the main process exited (in its process group or
    /// not) were killed.
    pub leftovers_killed: bool,
    /// numalab's helper process (the supervisor) was killed from outside before the
    /// command ended: the command's process group was killed, and the figures are the
    /// helper's, not the command's. Absent (false) in older records.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub supervisor_lost: bool,
}

impl Outcome {
    /// Exited with code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.interrupted && !self.supervisor_lost
    }

    /// CPU time over wall time: how many CPUs the program kept busy on average.
    pub fn cpus_busy(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            (self.user_cpu_ns + self.sys_cpu_ns) as f64 / self.wall_ns as f64
        }
    }

    /// How it ended, in words.
    pub fn describe(&self) -> String {
        if self.supervisor_lost {
            "was cut short: numalab's helper process that ran it was killed from outside, so numalab killed the command's process group; run it again".into()
        } else if self.timed_out {
            format!(
                "timed out after {:.1} s and was killed",
                self.wall_ns as f64 / 1e9
            )
        } else if self.interrupted {
            "was stopped by Ctrl-C".into()
        } else if let Some(name) = &self.signal_name {
            format!("was killed by {name}")
        } else {
            match self.exit_code {
                Some(0) => "exited successfully".into(),
                Some(c) => format!("exited with status {c}"),
                None => "ended in an unknown way".into(),
            }
        }
    }
}
