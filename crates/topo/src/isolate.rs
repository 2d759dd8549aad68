//! Topology files from other machines are first loaded in a child process, so that what
//! hwloc cannot survive does not take numalab down: a 7-line hwloc XML whose Machine has
//! a PU and a NUMA node with the same cpuset crashes hwloc 2.9 (SIGSEGV, lstopo too), a
//! snapshot whose `sys/devices/system/node` points back at `sys` trips its assertion
//! (SIGABRT), and a snapshot file that is a FIFO blocks its read forever. The child is
//! this same program, started again with the input in its environment; it loads and
//! describes the input and exits. If it crashes, is killed, or does not finish within
//! [`DEADLINE`], the parent refuses the input with a [`TopoError::BadInput`] (exit 3)
//! and never loads it itself (Ctrl-C or SIGTERM: [`TopoError::Interrupted`], exit 130); if it ends, the parent
//! loads the input in-process (hwloc's loads are deterministic).
//!
//! A binary opts in by calling [`crate::child_entry`] first thing in `main`; processes that did
//! not (test binaries, other programs using this crate) load in-process as before.

use crate::TopoError;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a child may take to load an input.
pub const DEADLINE: Duration = Duration::from_secs(60);

const KIND: &str = "NUMALAB_TOPO_CHECK_KIND";
const PATH: &str = "NUMALAB_TOPO_CHECK_PATH";

static ENABLED: AtomicBool = AtomicBool::new(false);

/// What a child checks: an hwloc XML file or a snapshot folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An hwloc XML file.
    Xml,
    /// A snapshot folder (an archive is checked as its unpacked folder).
    SnapshotDir,
}

/// In a child started to check an input, runs `load` on it and exits (0 whatever the
/// load said: the parent repeats the load and reports its errors itself); otherwise
/// enables the isolation for this process and returns. The binary calls
/// [`crate::child_entry`], which loads and describes.
pub fn child_entry_with(load: impl FnOnce(Kind, std::path::PathBuf)) {
    let (Some(kind), Some(path)) = (std::env::var_os(KIND), std::env::var_os(PATH)) else {
        ENABLED.store(true, Ordering::Relaxed);
        return;
    };
    let kind = match kind.to_str() {
        Some("xml") => Kind::Xml,
        _ => Kind::SnapshotDir,
    };
    load(kind, std::path::PathBuf::from(path));
    std::process::exit(0);
}

/// Whether this process checks inputs in a child.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Loads `path` (an XML file or a snapshot folder, as it will be loaded) in a child and
/// says whether the child survived it; `shown` names the input in errors (an archive's
/// own path when `path` is its unpacked copy). Does nothing where isolation is not
/// enabled.
pub fn check(kind: Kind, path: &Path, shown: &Path) -> Result<(), TopoError> {
    if !enabled() {
        return Ok(());
    }
    let kind = match kind {
        Kind::Xml => "xml",
        Kind::SnapshotDir => "dir",
    };
    let bad = |reason: String| TopoError::BadInput {
        path: shown.to_path_buf(),
        reason,
    };
    let Ok(exe) = std::env::current_exe() else {
        // Nothing to start: load in-process, as without isolation.
        return Ok(());
    };
    let mut child = Command::new(exe)
        .env(KIND, kind)
        .env(PATH, path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            bad(format!(
                "cannot start the process that checks it ({})",
                numalab_schema::input::io_reason(&e)
            ))
        })?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                use std::os::unix::process::ExitStatusExt;
                return match (status.code(), status.signal()) {
                    (Some(0), _) => Ok(()),
                    (_, Some(sig)) => Err(bad(format!(
                        "hwloc crashed reading it ({}): it is malformed in a way hwloc does not check (numalab went on; lstopo would crash too); \
                         export the topology again on that machine (`lstopo FILE.xml`, `numalab topo --export-xml FILE`) or take a new snapshot with `hwloc-gather-topology`",
                        signal_name(sig)
                    ))),
                    (Some(code), None) => Err(bad(format!(
                        "describing it failed (the checking process exited {code}); report this with the file"
                    ))),
                    (None, None) => Err(bad("the checking process ended without a status".into())),
                };
            }
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(bad(format!(
                    "cannot wait for the process that checks it ({})",
                    numalab_schema::input::io_reason(&e)
                )));
            }
        }
        let interrupted = numalab_schema::interrupt::requested();
        if interrupted || start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            if interrupted {
                return Err(CHECK_INTERRUPTED.into());
            }
            return Err(bad(format!(
                "reading it did not finish within {} s (a FIFO, a device or a link to one inside?); give a plain snapshot",
                DEADLINE.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What [`check`] returns when Ctrl-C or SIGTERM stops it (the child is killed).
pub const CHECK_INTERRUPTED: numalab_schema::interrupt::Interrupted =
    numalab_schema::interrupt::Interrupted {
        during: "checking the topology input",
        left: "nothing was loaded",
    };

fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGKILL => "SIGKILL",
        _ => return format!("signal {sig}"),
    };
    format!("{name}, signal {sig}")
}
