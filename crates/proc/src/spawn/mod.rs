//! fork/exec with placement, a gate, timeouts, and cleanup of the whole process tree.
//!
//! # The supervisor
//!
//! A process group is not a container: a child that calls `setsid` or `setpgid` leaves
//! it, and `PR_SET_PDEATHSIG` only reaches a direct child. So the process numalab forks
//! is a small *supervisor*, and the user's command is the supervisor's child:
//!
//! ```text
//! numalab ── supervisor (own process group, child subreaper, parent-death signal)
//!               └── command (own process group: placement, gate, exec) ── its tree
//! ```
//!
//! The supervisor never execs: it is a copy of numalab that makes only async-signal-safe
//! system calls on data prepared before `fork` (numalab is multi-threaded, so no
//! allocation, no locks, no formatting, no Rust I/O; it ends with `_exit`). It
//!
//! * closes every close-on-exec descriptor it inherited (numalab's own and those of
//!   other commands being started at the same time, which would otherwise be held open
//!   for as long as it lives), then forks the command and tells numalab its pid;
//! * is a child subreaper (`PR_SET_CHILD_SUBREAPER`): whatever the command's descendants
//!   do with sessions and groups, an orphan is reparented to the supervisor, so every
//!   remaining process of the tree is either its child or below a living child of it;
//! * waits in `sigtimedwait` (SIGCHLD, the stop signals) and reaps;
//! * when the command ends, SIGKILLs and reaps every remaining descendant
//!   ([`Outcome::leftovers_killed`]); when told to stop (SIGTERM from numalab on a
//!   timeout or Ctrl-C, or its parent died: `PR_SET_PDEATHSIG` = SIGHUP, checked with
//!   `getppid()` so that the exit of the numalab *thread* that spawned it is not taken
//!   for the death of numalab, and checked once at start for a parent that died before
//!   the call), it sends SIGTERM to the command's group, to each child and to each
//!   child's group (new orphans included, each once), waits [`Spec::kill_grace`], then
//!   SIGKILLs the same way until it has no child left (SIGUSR1 from numalab skips the
//!   grace: that is what dropping a [`Running`] does). Children are found in
//!   `/proc/self/task/<tid>/children` (or, when the kernel lacks that file, by reading the
//!   parent pid of every process in `/proc`), read with raw `open`/`read` into a stack
//!   buffer; the supervisor never signals its own group or numalab's;
//! * writes a fixed-size report to numalab: the command's raw wait status, when it was
//!   reaped (CLOCK_MONOTONIC), whether leftovers were killed, and
//!   `getrusage(RUSAGE_CHILDREN)`, then exits with the command's exit code (128 + signal
//!   if a signal ended it).
//!
//! numalab's side ([`Running::wait`]) sends the supervisor SIGTERM on a timeout or an
//! interrupt and, should the supervisor not be done [`Spec::kill_grace`] plus one second
//! later (a process stuck in the kernel), SIGKILL; it never waits on the command's
//! descendants itself. Only the supervisor is ever signalled by numalab, and it is
//! numalab's unreaped child, so its pid cannot have been reused.
//!
//! What numalab reports is the command's, as before: the exit code or signal (from the
//! report, exactly), wall time from fork (or release of the gate) to the reaping of the
//! command, and CPU time and peak RSS of the whole tree the supervisor reaped (the
//! command, what it reaped, and orphans reaped by the supervisor; the supervisor's own
//! few system calls are not included). Should the supervisor die without a report
//! (SIGKILL from outside), its own status and `wait4` figures are used instead, and
//! numalab kills the tree itself: it is a child subreaper too (from its first
//! [`spawn`]), so the supervisor's children come to it, and it kills and reaps those
//! that are the lost tree's ([`orphans`]).

mod child;
mod orphans;
pub(crate) mod sys;

use child::*;
use numalab_schema::{interrupt, Classify, ErrorClass};
use numalab_topo::bind::MemPolicy;
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use sys::mono_ns;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The program and its arguments (argv[0] is looked up in PATH unless it has a '/').
    pub argv: Vec<String>,
    /// Run `argv` joined with spaces through `/bin/sh -c` (only when the user asks).
    pub shell: bool,
    /// Environment variables to set on top of numalab's environment.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Kill the command's whole process tree after this long.
    pub timeout: Option<Duration>,
    /// CPU affinity of the child (OS CPU ids), set before exec.
    pub cpus: Option<Vec<u32>>,
    /// NUMA memory policy of the child (set_mempolicy before exec; inherited by threads).
    pub mem_policy: Option<MemPolicy>,
    /// Bytes of stdout and stderr tails to keep.
    pub tail_bytes: usize,
    /// Keep stdout whole up to this many bytes (for parsing a metric); 0 = tail only.
    pub keep_stdout_bytes: usize,
    /// Create the child stopped before exec until [`Running::release`] is called.
    pub gated: bool,
    /// Time between SIGTERM and SIGKILL when killing the tree (timeout, Ctrl-C, death of
    /// numalab).
    pub kill_grace: Duration,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            argv: Vec::new(),
            shell: false,
            env: Vec::new(),
            cwd: None,
            timeout: None,
            cpus: None,
            mem_policy: None,
            tail_bytes: 64 * 1024,
            keep_stdout_bytes: 0,
            gated: false,
            kill_grace: Duration::from_secs(2),
        }
    }
}

impl Spec {
    /// A spec for argv with defaults.
    pub fn new<S: Into<String>>(argv: impl IntoIterator<Item = S>) -> Self {
        Spec {
            argv: argv.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }
}

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// No command was given.
    #[error("no command given; put it after `--`, e.g. `numalab scale -- ./my-program --threads {{threads}}`")]
    EmptyCommand,
    /// The program does not exist.
    #[error("command not found: {program:?} (not a path and not in PATH); check the spelling or give its full path")]
    NotFound {
        /// The program.
        program: String,
    },
    /// exec failed (not executable, bad format...).
    #[error("cannot execute {program:?}: {detail}")]
    Exec {
        /// The program.
        program: String,
        /// The OS error.
        detail: String,
    },
    /// Placement could not be applied in the child.
    #[error("cannot apply {what} to {program:?}: {detail}; check the CPU/node list against `numalab topo`")]
    Placement {
        /// The program.
        program: String,
        /// "CPU affinity" or "memory policy".
        what: String,
        /// The OS error.
        detail: String,
    },
    /// A system call needed to start the child failed.
    #[error("cannot start {program:?}: {call} failed: {detail}")]
    System {
        /// The program.
        program: String,
        /// The call.
        call: String,
        /// The OS error.
        detail: String,
    },
}

impl Classify for ProcError {
    fn class(&self) -> ErrorClass {
        match self {
            ProcError::EmptyCommand => ErrorClass::Usage,
            ProcError::NotFound { .. } | ProcError::Exec { .. } => ErrorClass::Usage,
            ProcError::Placement { .. } => ErrorClass::Usage,
            ProcError::System { .. } => ErrorClass::Runtime,
        }
    }
}

pub use numalab_records::process::Outcome;

/// A started command, run under its supervisor (see the module documentation).
pub struct Running {
    /// The command's pid (also its process group id).
    pid: libc::pid_t,
    /// The supervisor's pid: numalab's child, the command's parent.
    supervisor: libc::pid_t,
    /// When the supervisor started (clock ticks since boot): what is younger and was
    /// below it can be told from numalab's other children if it is lost.
    supervisor_start: u64,
    program: String,
    argv: Vec<String>,
    gate: Option<OwnedFd>,
    err_pipe: Option<OwnedFd>,
    report: Option<OwnedFd>,
    stdout: Option<std::thread::JoinHandle<(String, Option<String>)>>,
    stderr: Option<std::thread::JoinHandle<(String, Option<String>)>>,
    timeout: Option<Duration>,
    grace: Duration,
    /// CLOCK_MONOTONIC at the start, ns.
    started: Option<u64>,
    /// The supervisor's wait status, rusage and when numalab reaped it, once reaped.
    reaped: Option<(libc::c_int, libc::rusage, u64)>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("pid", &self.pid)
            .field("supervisor", &self.supervisor)
            .field("argv", &self.argv)
            .finish()
    }
}

/// The system's error `errno` in words, without std's "(os error N)" ([`io_reason`](numalab_schema::text::io_reason)).
fn errno_text(errno: i32) -> String {
    numalab_schema::text::io_reason(&std::io::Error::from_raw_os_error(errno))
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn pipe_cloexec(program: &str) -> Result<(OwnedFd, OwnedFd), ProcError> {
    sys::pipe_cloexec().ok_or_else(|| ProcError::System {
        program: program.into(),
        call: "pipe2".into(),
        detail: errno_text(last_errno()),
    })
}

fn socketpair_cloexec(program: &str) -> Result<(OwnedFd, OwnedFd), ProcError> {
    sys::socketpair_cloexec().ok_or_else(|| ProcError::System {
        program: program.into(),
        call: "socketpair".into(),
        detail: errno_text(last_errno()),
    })
}

fn find_program(program: &str, env: &[(String, String)]) -> Option<PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        return p.exists().then(|| p.to_path_buf());
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| {
                    m.is_file()
                        && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
                })
                .unwrap_or(false)
        })
}

fn cstring(s: &str, program: &str) -> Result<CString, ProcError> {
    CString::new(s).map_err(|_| ProcError::Exec {
        program: program.into(),
        detail: format!("argument {s:?} contains a NUL byte"),
    })
}

const STAGE_AFFINITY: u8 = 1;
const STAGE_MEMPOLICY: u8 = 2;
const STAGE_EXEC: u8 = 3;
const STAGE_CHDIR: u8 = 4;
const STAGE_GATE: u8 = 5;
/// The supervisor could not fork the command.
const STAGE_FORK: u8 = 6;

/// Bytes of the supervisor's final report (see [`Report`]).
const REPORT_LEN: usize = 48;
/// How long numalab waits for the supervisor beyond the grace period before it SIGKILLs
/// the supervisor itself.
const SUPERVISOR_MARGIN: Duration = Duration::from_secs(1);

/// What the command's process needs between fork and exec, all prepared before fork.
struct Exec<'a> {
    cwd: Option<&'a CString>,
    cpuset: Option<&'a libc::cpu_set_t>,
    mode: libc::c_int,
    nodemask: &'a [libc::c_ulong],
    gated: bool,
    path: &'a CString,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
}

/// What the supervisor needs, all prepared before fork.
struct Supervisor {
    /// numalab's pid: `getppid()` differs from it once numalab is dead.
    parent: libc::pid_t,
    /// numalab's process group, never signalled.
    parent_pgrp: libc::pid_t,
    grace_ns: u64,
    out_w: RawFd,
    err_w: RawFd,
    status_w: RawFd,
    gate_r: RawFd,
    report_w: RawFd,
}

/// Starts a child as `spec` says. With `spec.gated`, call [`Running::release`] to let
/// it exec; otherwise it is already running.
pub fn spawn(spec: &Spec) -> Result<Running, ProcError> {
    if spec.argv.is_empty() || spec.argv[0].is_empty() {
        return Err(ProcError::EmptyCommand);
    }
    let argv: Vec<String> = if spec.shell {
        vec!["/bin/sh".into(), "-c".into(), spec.argv.join(" ")]
    } else {
        spec.argv.clone()
    };
    let program = argv[0].clone();
    let path = find_program(&program, &spec.env).ok_or_else(|| ProcError::NotFound {
        program: program.clone(),
    })?;

    // Everything the supervisor and the command need is prepared before fork: after
    // fork only async-signal-safe calls are allowed.
    let c_path = cstring(&path.to_string_lossy(), &program)?;
    let c_argv: Vec<CString> = argv
        .iter()
        .map(|a| cstring(a, &program))
        .collect::<Result<_, _>>()?;
    let mut c_argv_ptrs: Vec<*const libc::c_char> = c_argv.iter().map(|c| c.as_ptr()).collect();
    c_argv_ptrs.push(std::ptr::null());
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| !spec.env.iter().any(|(o, _)| o == k))
        .collect();
    env.extend(spec.env.iter().cloned());
    let c_env: Vec<CString> = env
        .iter()
        .map(|(k, v)| cstring(&format!("{k}={v}"), &program))
        .collect::<Result<_, _>>()?;
    let mut c_env_ptrs: Vec<*const libc::c_char> = c_env.iter().map(|c| c.as_ptr()).collect();
    c_env_ptrs.push(std::ptr::null());
    let c_cwd = match &spec.cwd {
        Some(d) => Some(cstring(&d.to_string_lossy(), &program)?),
        None => None,
    };

    let mut cpuset = sys::empty_cpu_set();
    if let Some(cpus) = &spec.cpus {
        if cpus.is_empty() {
            return Err(ProcError::Placement {
                program,
                what: "CPU affinity".into(),
                detail: "the CPU list is empty".into(),
            });
        }
        for &c in cpus {
            if c as usize >= libc::CPU_SETSIZE as usize {
                return Err(ProcError::Placement {
                    program,
                    what: "CPU affinity".into(),
                    detail: format!("CPU {c} is beyond what the kernel interface can address"),
                });
            }
            sys::cpu_set_add(&mut cpuset, c as usize);
        }
    }
    let (mode, nodes): (libc::c_int, Vec<u32>) = match &spec.mem_policy {
        None | Some(MemPolicy::FirstTouch) => (-1, vec![]),
        Some(MemPolicy::Bind(n)) => (2, n.clone()), // MPOL_BIND
        Some(MemPolicy::Interleave(n)) => (3, n.clone()), // MPOL_INTERLEAVE
        Some(MemPolicy::Preferred(n)) => (1, vec![*n]), // MPOL_PREFERRED
    };
    let mut nodemask: Vec<libc::c_ulong> = vec![0; 16]; // 1024 nodes
    for &n in &nodes {
        let n = n as usize;
        if n >= nodemask.len() * 64 {
            return Err(ProcError::Placement {
                program,
                what: "memory policy".into(),
                detail: format!("node {n} is out of range"),
            });
        }
        nodemask[n / 64] |= 1 << (n % 64);
    }
    if mode >= 0 && nodes.is_empty() {
        return Err(ProcError::Placement {
            program,
            what: "memory policy".into(),
            detail: "the node list is empty".into(),
        });
    }

    let (out_r, out_w) = pipe_cloexec(&program)?;
    let (err_r, err_w) = pipe_cloexec(&program)?;
    let (status_r, status_w) = pipe_cloexec(&program)?;
    // The gate is a socket pair, not a pipe: releasing a child that already died must
    // not raise SIGPIPE in numalab (send with MSG_NOSIGNAL).
    let (gate_r, gate_w) = socketpair_cloexec(&program)?;
    // The supervisor writes the command's pid, then its final report, on this pipe.
    let (report_r, report_w) = pipe_cloexec(&program)?;

    use std::os::fd::AsRawFd;
    let gated = spec.gated;
    let exec = Exec {
        cwd: c_cwd.as_ref(),
        cpuset: spec.cpus.is_some().then_some(&cpuset),
        mode,
        nodemask: &nodemask,
        gated,
        path: &c_path,
        argv: &c_argv_ptrs,
        envp: &c_env_ptrs,
    };
    let (parent, parent_pgrp) = sys::pid_and_pgrp();
    let sup = Supervisor {
        parent,
        parent_pgrp,
        grace_ns: u64::try_from(spec.kill_grace.as_nanos()).unwrap_or(u64::MAX),
        out_w: out_w.as_raw_fd(),
        err_w: err_w.as_raw_fd(),
        status_w: status_w.as_raw_fd(),
        gate_r: gate_r.as_raw_fd(),
        report_w: report_w.as_raw_fd(),
    };

    // No signal handler of numalab may run in the supervisor before it has set up its
    // own signal mask: block everything in this thread around fork.
    let old = sys::block_all_signals();
    // Wall time starts here for an ungated child: after fork it may run (even to the end)
    // before this thread is scheduled again, so a later timestamp would undercount.
    let before_fork = mono_ns();
    // Orphans of a supervisor killed from outside come to numalab, not to init.
    orphans::become_subreaper();
    let sup_pid = fork_supervisor(&sup, &exec);
    let fork_errno = last_errno();
    sys::restore_signals(&old);
    if sup_pid < 0 {
        return Err(ProcError::System {
            program,
            call: "fork".into(),
            detail: errno_text(fork_errno),
        });
    }
    drop(out_w);
    drop(err_w);
    drop(status_w);
    drop(gate_r);
    drop(report_w);

    // The supervisor sends the command's pid right after forking it, or exits.
    let mut pid_bytes = [0u8; 4];
    if read_full(report_r.as_raw_fd(), &mut pid_bytes) != pid_bytes.len() {
        let mut buf = Vec::new();
        let _ = std::fs::File::from(status_r).read_to_end(&mut buf);
        // Reaping our own child, the supervisor, which has exited or is exiting.
        let st = sys::waitpid_blocking(sup_pid);
        let detail = if buf.len() == 5 && buf[0] == STAGE_FORK {
            errno_text(i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]))
        } else {
            format!("the supervisor process ended before starting the command (wait status {st})")
        };
        return Err(ProcError::System {
            program,
            call: "fork".into(),
            detail,
        });
    }
    let pid = libc::pid_t::from_ne_bytes(pid_bytes);

    let tail = spec.tail_bytes.max(1);
    let keep = spec.keep_stdout_bytes;
    let stdout = std::thread::spawn(move || read_pipe(out_r, tail, keep));
    let stderr = std::thread::spawn(move || read_pipe(err_r, tail, 0));
    // Only a gated child reads the gate; an ungated one is never sent anything.
    let gate = if gated {
        Some(gate_w)
    } else {
        drop(gate_w);
        None
    };
    let mut running = Running {
        pid,
        supervisor: sup_pid,
        // Our unreaped child: its stat is there (0, everything is younger, if not).
        supervisor_start: orphans::stat(sup_pid).map_or(0, |s| s.start),
        program,
        argv,
        gate,
        err_pipe: Some(status_r),
        report: Some(report_r),
        stdout: Some(stdout),
        stderr: Some(stderr),
        timeout: spec.timeout,
        grace: spec.kill_grace,
        // A gated child cannot run before release(), which starts the clock.
        started: (!gated).then_some(before_fork),
        reaped: None,
    };
    if !gated {
        running.release()?;
    }
    Ok(running)
}

fn read_pipe(fd: OwnedFd, tail: usize, keep: usize) -> (String, Option<String>) {
    let mut file = std::fs::File::from(fd);
    let mut tail_buf: std::collections::VecDeque<u8> =
        std::collections::VecDeque::with_capacity(tail.min(1 << 20));
    let mut kept: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                if keep > 0 && kept.len() < keep {
                    let take = n.min(keep - kept.len());
                    kept.extend_from_slice(&chunk[..take]);
                }
                tail_buf.extend(&chunk[..n]);
                while tail_buf.len() > tail {
                    tail_buf.pop_front();
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    let tail_vec: Vec<u8> = tail_buf.into_iter().collect();
    (
        String::from_utf8_lossy(&tail_vec).into_owned(),
        (keep > 0).then(|| String::from_utf8_lossy(&kept).into_owned()),
    )
}

fn signal_name(sig: i32) -> String {
    let names = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGXCPU, "SIGXCPU"),
    ];
    names
        .iter()
        .find(|(n, _)| *n == sig)
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| format!("signal {sig}"))
}

impl Running {
    /// The command's process id (also its process group id): the process that execs
    /// the user's program, so performance counters and `/proc/<pid>` sampling attach to
    /// the program itself. Its parent is the supervisor, not numalab.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets a gated child exec and confirms that exec succeeded.
    pub fn release(&mut self) -> Result<(), ProcError> {
        // The clock starts before the gate opens: the supervisor stamps the end when it
        // reaps the command, which for `true` can come before this thread runs again,
        // and an end before the start would make the wall time 0.
        if self.started.is_none() {
            self.started = Some(mono_ns());
        }
        if let Some(gate) = self.gate.take() {
            // One byte on our socket end; MSG_NOSIGNAL turns a dead child into EPIPE
            // instead of a SIGPIPE for numalab.
            use std::os::fd::AsRawFd;
            sys::send_byte_nosignal(gate.as_raw_fd(), 1);
            drop(gate);
        }
        // The status pipe closes on exec (CLOEXEC) or carries (stage, errno).
        if let Some(status) = self.err_pipe.take() {
            let mut f = std::fs::File::from(status);
            let mut buf = Vec::new();
            let _ = f.read_to_end(&mut buf);
            if buf.len() == 5 {
                let errno = i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]);
                // The supervisor reaps the failed command and exits: reap it.
                self.reap_supervisor();
                let detail = errno_text(errno);
                let program = self.program.clone();
                return Err(match buf[0] {
                    STAGE_AFFINITY => ProcError::Placement {
                        program,
                        what: "CPU affinity".into(),
                        detail,
                    },
                    STAGE_MEMPOLICY => ProcError::Placement {
                        program,
                        what: "memory policy".into(),
                        detail,
                    },
                    STAGE_CHDIR => ProcError::Exec {
                        program,
                        detail: format!("cannot change to the working directory: {detail}"),
                    },
                    _ => ProcError::Exec { program, detail },
                });
            }
        }
        Ok(())
    }

    /// Signals the supervisor (numalab's unreaped child: the pid is still its own).
    fn signal_supervisor(&self, sig: i32) {
        if self.reaped.is_none() {
            // Our own unreaped child: its pid cannot have been reused.
            sys::kill(self.supervisor, sig);
        }
    }

    /// Blocks until the supervisor has ended, and reaps it.
    fn reap_supervisor(&mut self) {
        if self.reaped.is_some() {
            return;
        }
        let mut status = 0;
        let mut usage = sys::zeroed_rusage();
        loop {
            let rc = sys::wait4(self.supervisor, &mut status, &mut usage);
            if rc == self.supervisor {
                break;
            }
            if rc < 0 && last_errno() != libc::EINTR {
                status = -1;
                break;
            }
        }
        self.reaped = Some((status, usage, mono_ns()));
    }

    /// Waits for the end, enforcing the timeout and Ctrl-C; the supervisor ends the
    /// command's whole process tree (see the module documentation).
    pub fn wait(mut self) -> Outcome {
        if self.gate.is_some() {
            // Never released: release now so the child does not hang forever.
            let _ = self.release();
        }
        let started = self.started.unwrap_or_else(mono_ns);
        let mut timed_out = false;
        let mut interrupted = false;
        // numalab SIGKILLed a stuck supervisor itself (after a timeout or Ctrl-C).
        let mut killed = false;
        if self.reaped.is_none() {
            // A thread waits without reaping (WNOWAIT), so that the supervisor's pid stays
            // ours to signal until this thread reaps it.
            let sup = self.supervisor;
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || loop {
                // Waiting for our own child, leaving it waitable.
                let ended = sys::waitid_exited(sup, 0);
                if ended.is_some() || last_errno() != libc::EINTR {
                    let _ = tx.send(());
                    return;
                }
            });
            let grace = u64::try_from(self.grace.as_nanos()).unwrap_or(u64::MAX);
            let margin = SUPERVISOR_MARGIN.as_nanos() as u64;
            let timeout = self
                .timeout
                .map(|t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX));
            let mut term_sent: Option<u64> = None;
            loop {
                match rx.recv_timeout(Duration::from_millis(20)) {
                    Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
                let now = mono_ns();
                match term_sent {
                    None => {
                        if timeout.is_some_and(|t| now.saturating_sub(started) >= t) {
                            timed_out = true;
                        } else if interrupt::requested() {
                            interrupted = true;
                        }
                        if timed_out || interrupted {
                            // The supervisor sends SIGTERM to the tree, waits the grace
                            // period, then SIGKILLs.
                            self.signal_supervisor(libc::SIGTERM);
                            term_sent = Some(now);
                        }
                    }
                    Some(t) if !killed && now.saturating_sub(t) >= grace.saturating_add(margin) => {
                        // The supervisor is stuck (a descendant in uninterruptible sleep):
                        // do not wait for it any longer.
                        self.signal_supervisor(libc::SIGKILL);
                        killed = true;
                    }
                    Some(_) => {}
                }
            }
            self.reap_supervisor();
        }
        let (sup_status, sup_usage, reaped_at) = self
            .reaped
            .unwrap_or_else(|| (-1, sys::zeroed_rusage(), mono_ns()));
        let report = self.report.take().and_then(|fd| {
            use std::os::fd::AsRawFd;
            // The supervisor has exited, so its report is in the pipe or nowhere; do not
            // block on a write end some other process might still hold.
            sys::set_nonblocking(fd.as_raw_fd());
            let mut b = [0u8; REPORT_LEN];
            (read_full(fd.as_raw_fd(), &mut b) == REPORT_LEN).then(|| Report::decode(&b))
        });
        // No report: the supervisor was killed from outside (SIGKILL of numalab's helper)
        // and the command's tree is orphaned, still holding the output pipes. End its
        // process group (the command's pid is its id) and do not wait on the pipes past
        // a short grace: numalab never outlives --timeout because its helper died.
        let lost = report.is_none();
        if lost {
            self.kill_orphaned_group();
            orphans::kill_orphans(self.pid, self.supervisor_start, ORPHAN_PIPE_GRACE);
        }
        let join = |h: Option<std::thread::JoinHandle<(String, Option<String>)>>| {
            let h = h?;
            if lost {
                let deadline = mono_ns() + ORPHAN_PIPE_GRACE.as_nanos() as u64;
                while !h.is_finished() && mono_ns() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                if !h.is_finished() {
                    // A descendant that left the group still holds the pipe: leave the
                    // reader to end with it.
                    return None;
                }
            }
            h.join().ok()
        };
        let join = |h| join(h).unwrap_or_default();
        let (stdout_tail, stdout) = join(self.stdout.take());
        let (stderr_tail, _) = join(self.stderr.take());
        let tv = |t: libc::timeval| timeval_ns(t);
        let (status, ended, user_ns, sys_ns, max_rss_kib, leftovers) = match report {
            Some(r) => (
                r.status.unwrap_or(-1),
                if r.end_ns > 0 { r.end_ns } else { reaped_at },
                r.user_ns,
                r.sys_ns,
                r.max_rss_kib,
                r.leftovers,
            ),
            // No report: the supervisor was killed from outside (or by the fallback
            // above); its own status and figures are all there is.
            None => (
                sup_status,
                reaped_at,
                tv(sup_usage.ru_utime),
                tv(sup_usage.ru_stime),
                sup_usage.ru_maxrss.max(0) as u64,
                false,
            ),
        };
        let (exit_code, signal) = if status < 0 {
            (None, None)
        } else if libc::WIFEXITED(status) {
            (Some(libc::WEXITSTATUS(status)), None)
        } else if libc::WIFSIGNALED(status) {
            (None, Some(libc::WTERMSIG(status)))
        } else {
            (None, None)
        };
        Outcome {
            argv: self.argv.clone(),
            exit_code,
            signal,
            signal_name: signal.map(signal_name),
            timed_out,
            interrupted,
            wall_ns: ended.saturating_sub(started),
            user_cpu_ns: user_ns,
            sys_cpu_ns: sys_ns,
            max_rss_bytes: max_rss_kib.saturating_mul(1024),
            stdout_tail,
            stderr_tail,
            stdout,
            leftovers_killed: leftovers,
            supervisor_lost: lost && !killed,
        }
    }

    /// SIGKILLs the command's process group after its supervisor died without a report.
    /// The descendants that had left the group (`setsid`) come to numalab, a subreaper
    /// too, and are killed by [`orphans::kill_orphans`].
    fn kill_orphaned_group(&self) {
        if self.pid > 1 {
            // The command's group (its pid is the group id, set before exec): the
            // supervisor has just died, so the group is the command's own.
            sys::kill(-self.pid, libc::SIGKILL);
        }
    }
}

/// How long [`Running::wait`] waits for the command's output pipes to close after the
/// supervisor died without a report and the command's group was killed, and at most
/// for the orphans of its tree to be killed and reaped.
pub const ORPHAN_PIPE_GRACE: Duration = Duration::from_secs(1);

impl Drop for Running {
    fn drop(&mut self) {
        // A Running dropped without wait(): the supervisor SIGKILLs the whole tree at
        // once (no grace), and is reaped.
        if self.reaped.is_none() {
            self.signal_supervisor(libc::SIGUSR1);
            // Bounded like wait(): a descendant stuck in the kernel must not hang numalab.
            let deadline = mono_ns() + SUPERVISOR_MARGIN.as_nanos() as u64;
            loop {
                // Checking on our own child without reaping it.
                let ended =
                    sys::waitid_exited(self.supervisor, libc::WNOHANG).is_some_and(|p| p != 0);
                if ended {
                    break;
                }
                if mono_ns() >= deadline {
                    self.signal_supervisor(libc::SIGKILL);
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            self.reap_supervisor();
            // A supervisor killed (from outside or above) leaves its tree to numalab.
            orphans::kill_orphans(self.pid, self.supervisor_start, ORPHAN_PIPE_GRACE);
        }
    }
}

#[cfg(test)]
mod tests;
