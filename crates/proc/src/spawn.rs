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
//! (SIGKILL from outside), its own status and `wait4` figures are used instead.

use numalab_schema::{interrupt, Classify, ErrorClass};
use numalab_topo::bind::MemPolicy;
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

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

fn errno_text(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn pipe_cloexec(program: &str) -> Result<(OwnedFd, OwnedFd), ProcError> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(ProcError::System {
            program: program.into(),
            call: "pipe2".into(),
            detail: errno_text(last_errno()),
        });
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn socketpair_cloexec(program: &str) -> Result<(OwnedFd, OwnedFd), ProcError> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: socketpair writes two descriptors into the array we own.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(ProcError::System {
            program: program.into(),
            call: "socketpair".into(),
            detail: errno_text(last_errno()),
        });
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
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

/// CLOCK_MONOTONIC (the clock of [`std::time::Instant`]) in ns; async-signal-safe.
fn mono_ns() -> u64 {
    // SAFETY: a zeroed timespec is a valid out-parameter for clock_gettime.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

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

    // SAFETY: a zeroed cpu_set_t is the empty set.
    let mut cpuset: libc::cpu_set_t = unsafe { std::mem::zeroed() };
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
            // SAFETY: c is below CPU_SETSIZE.
            unsafe { libc::CPU_SET(c as usize, &mut cpuset) };
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
    let sup = Supervisor {
        // SAFETY: getpid and getpgrp cannot fail.
        parent: unsafe { libc::getpid() },
        // SAFETY: as above.
        parent_pgrp: unsafe { libc::getpgrp() },
        grace_ns: u64::try_from(spec.kill_grace.as_nanos()).unwrap_or(u64::MAX),
        out_w: out_w.as_raw_fd(),
        err_w: err_w.as_raw_fd(),
        status_w: status_w.as_raw_fd(),
        gate_r: gate_r.as_raw_fd(),
        report_w: report_w.as_raw_fd(),
    };

    // No signal handler of numalab may run in the supervisor before it has set up its
    // own signal mask: block everything in this thread around fork.
    // SAFETY: sigset_t values we own; pthread_sigmask on the calling thread.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    // Wall time starts here for an ungated child: after fork it may run (even to the end)
    // before this thread is scheduled again, so a later timestamp would undercount.
    let before_fork = mono_ns();
    // SAFETY: fork; the child below only makes async-signal-safe system calls on data
    // prepared before the fork and ends in _exit (the command's process in execve).
    let sup_pid = unsafe { libc::fork() };
    if sup_pid == 0 {
        // SAFETY: async-signal-safe calls only; every pointer was prepared before fork.
        unsafe { supervise(&sup, &exec) }
    }
    let fork_errno = last_errno();
    // SAFETY: restoring this thread's mask.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
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
        let mut st = 0;
        // SAFETY: reaping our own child, the supervisor, which has exited or is exiting.
        unsafe {
            libc::waitpid(sup_pid, &mut st, 0);
        }
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

/// Reads until `buf` is full or end of file; returns the bytes read.
fn read_full(fd: RawFd, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the unfilled part of a buffer we own.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n == 0 || last_errno() != libc::EINTR {
            break;
        }
    }
    got
}

// ---------------------------------------------------------------------------------
// Between fork and exit/exec: async-signal-safe helpers. No allocation, no panics (every
// index is checked), no locks, no Rust I/O.
// ---------------------------------------------------------------------------------

fn errno() -> i32 {
    // SAFETY: the thread's errno location is always valid.
    unsafe { *libc::__errno_location() }
}

/// Writes a (stage, errno) record on the status pipe.
fn write_stage(status_w: RawFd, stage: u8, err: i32) {
    let mut buf = [0u8; 5];
    buf[0] = stage;
    buf[1..].copy_from_slice(&err.to_ne_bytes());
    // SAFETY: writing a buffer we own; a 5-byte write to a pipe is atomic.
    unsafe {
        libc::write(status_w, buf.as_ptr().cast(), buf.len());
    }
}

fn write_all(fd: RawFd, buf: &[u8]) {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: writing the rest of a buffer we own.
        let n = unsafe { libc::write(fd, buf[done..].as_ptr().cast(), buf.len() - done) };
        if n > 0 {
            done += n as usize;
        } else if n == 0 || errno() != libc::EINTR {
            return;
        }
    }
}

/// `prefix`, the decimal `n`, `suffix` and a NUL in `buf`; a pointer to it for `open`.
fn proc_path(buf: &mut [u8; 64], prefix: &[u8], n: i32, suffix: &[u8]) -> *const libc::c_char {
    let mut digits = [0u8; 10];
    let mut k = digits.len();
    let mut v = n.max(0) as u32;
    loop {
        k -= 1;
        digits[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 || k == 0 {
            break;
        }
    }
    let mut len = 0;
    for &b in prefix.iter().chain(&digits[k..]).chain(suffix) {
        if len + 1 >= buf.len() {
            break;
        }
        buf[len] = b;
        len += 1;
    }
    buf[len] = 0;
    buf.as_ptr().cast()
}

/// Calls `f` with every positive decimal number in the file at `path` (read with raw
/// system calls into a stack buffer). False if the file cannot be opened.
fn for_each_number_in_file(path: *const libc::c_char, f: &mut dyn FnMut(libc::pid_t)) -> bool {
    // SAFETY: path is NUL-terminated.
    let fd = unsafe { libc::open(path, libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 1024];
    let mut cur: i64 = -1;
    let emit = |cur: &mut i64, f: &mut dyn FnMut(libc::pid_t)| {
        if *cur > 0 && *cur <= i64::from(i32::MAX) {
            f(*cur as libc::pid_t);
        }
        *cur = -1;
    };
    loop {
        // SAFETY: reading into a buffer we own.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        for &b in buf.iter().take(n as usize) {
            if b.is_ascii_digit() {
                cur = cur
                    .max(0)
                    .saturating_mul(10)
                    .saturating_add(i64::from(b - b'0'));
            } else {
                emit(&mut cur, f);
            }
        }
    }
    emit(&mut cur, f);
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(fd) };
    true
}

#[repr(C, align(8))]
struct DirBuf([u8; 4096]);

/// Calls `f(number, directory fd)` for every entry of the directory at `path` whose name
/// is a decimal number (getdents64 into a stack buffer). False if it cannot be opened.
fn for_each_numbered_entry(path: *const libc::c_char, f: &mut dyn FnMut(i32, RawFd)) -> bool {
    // SAFETY: path is NUL-terminated.
    let dfd = unsafe { libc::open(path, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if dfd < 0 {
        return false;
    }
    let mut buf = DirBuf([0; 4096]);
    loop {
        // SAFETY: getdents64 fills the buffer we own, at most its length.
        let n =
            unsafe { libc::syscall(libc::SYS_getdents64, dfd, buf.0.as_mut_ptr(), buf.0.len()) };
        if n <= 0 {
            break;
        }
        let n = (n as usize).min(buf.0.len());
        let mut off = 0;
        // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name (NUL-ended).
        while off + 20 <= n {
            let reclen = usize::from(u16::from_ne_bytes([buf.0[off + 16], buf.0[off + 17]]));
            if reclen < 20 || off + reclen > n {
                break;
            }
            let mut v: i64 = 0;
            let mut digits = 0;
            for &b in &buf.0[off + 19..off + reclen] {
                if b == 0 {
                    break;
                }
                if !b.is_ascii_digit() || v > i64::from(i32::MAX) {
                    digits = 0;
                    break;
                }
                v = v * 10 + i64::from(b - b'0');
                digits += 1;
            }
            if digits > 0 && v <= i64::from(i32::MAX) {
                f(v as i32, dfd);
            }
            off += reclen;
        }
    }
    // SAFETY: closing the descriptor opened above.
    unsafe { libc::close(dfd) };
    true
}

/// Calls `f` with the pid of every child of the (single-threaded) calling process.
fn for_each_child(me: libc::pid_t, f: &mut dyn FnMut(libc::pid_t)) {
    let mut path = [0u8; 64];
    let p = proc_path(&mut path, b"/proc/self/task/", me, b"/children");
    if !for_each_number_in_file(p, f) {
        // No children file (CONFIG_PROC_CHILDREN off).
        for_each_child_by_stat(me, f);
    }
}

/// Calls `f` with the pid of every process in `/proc` whose parent is `me`.
fn for_each_child_by_stat(me: libc::pid_t, f: &mut dyn FnMut(libc::pid_t)) {
    for_each_numbered_entry(c"/proc".as_ptr(), &mut |pid, _| {
        let mut path = [0u8; 64];
        let p = proc_path(&mut path, b"/proc/", pid, b"/stat");
        // SAFETY: p is NUL-terminated.
        let fd = unsafe { libc::open(p, libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return;
        }
        let mut stat = [0u8; 512];
        // SAFETY: reading into a buffer we own.
        let n = unsafe { libc::read(fd, stat.as_mut_ptr().cast(), stat.len()) };
        // SAFETY: closing the descriptor opened above.
        unsafe { libc::close(fd) };
        if n <= 0 {
            return;
        }
        let stat = &stat[..(n as usize).min(stat.len())];
        // "pid (comm) S ppid ...": comm may hold anything, so start after the last ')'.
        let Some(close) = stat.iter().rposition(|&b| b == b')') else {
            return;
        };
        let mut fields = stat[close + 1..]
            .split(|&b| b == b' ')
            .filter(|s| !s.is_empty());
        let _state = fields.next();
        let Some(ppid) = fields.next() else {
            return;
        };
        let mut v: i64 = 0;
        for &b in ppid {
            if !b.is_ascii_digit() || v > i64::from(i32::MAX) {
                return;
            }
            v = v * 10 + i64::from(b - b'0');
        }
        if v == i64::from(me) {
            f(pid);
        }
    });
}

/// Closes every close-on-exec descriptor above 2 but those in `keep`: the supervisor
/// never execs, and must not hold numalab's descriptors (the pipes of other commands
/// being started at the same time among them) for as long as it lives. Descriptors
/// without close-on-exec are left alone: the command inherits those, as before.
fn close_inherited(keep: &[RawFd]) {
    let mut close_one = |fd: RawFd, dirfd: RawFd| {
        if fd <= 2 || fd == dirfd || keep.contains(&fd) {
            return;
        }
        // SAFETY: fcntl/close on a descriptor number; harmless if it is not open.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC != 0 {
                libc::close(fd);
            }
        }
    };
    if !for_each_numbered_entry(c"/proc/self/fd".as_ptr(), &mut close_one) {
        // No /proc: try the numbers up to the descriptor limit (at most 65536).
        // SAFETY: a zeroed rlimit is a valid out-parameter.
        let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: getrlimit writes the struct we own.
        let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } == 0 {
            rl.rlim_cur.min(65536) as RawFd
        } else {
            1024
        };
        for fd in 3..max {
            close_one(fd, -1);
        }
    }
}

/// Pids and groups (negative) already sent SIGTERM, so that each gets it once.
struct Sent {
    ids: [libc::pid_t; 512],
    n: usize,
}

impl Sent {
    /// True the first time `id` is seen (always true once the table is full).
    fn first(&mut self, id: libc::pid_t) -> bool {
        if self.ids[..self.n].contains(&id) {
            return false;
        }
        if self.n < self.ids.len() {
            self.ids[self.n] = id;
            self.n += 1;
        }
        true
    }
}

/// Sends `sig` to the command's group and the command (while it is unreaped, so its
/// pid is still its own; once reaped, to its group while the group has members, which
/// keep the id in use), to every child and to every child's group (except the
/// supervisor's own group and numalab's).
fn signal_tree(
    sig: libc::c_int,
    cmd: libc::pid_t,
    cmd_reaped: bool,
    me: libc::pid_t,
    never: [libc::pid_t; 2],
    mut sent: Option<&mut Sent>,
) {
    let mut hit = |id: libc::pid_t| {
        if let Some(s) = sent.as_deref_mut() {
            if !s.first(id) {
                return;
            }
        }
        // SAFETY: kill on a pid or group of our own descendants.
        unsafe { libc::kill(id, sig) };
    };
    if !cmd_reaped {
        hit(-cmd);
        hit(cmd);
    } else if group_exists(cmd) {
        // Members of the command's group that are not our children: only without
        // PR_SET_CHILD_SUBREAPER (e.g. under qemu-user), which would have made them so.
        hit(-cmd);
    }
    for_each_child(me, &mut |c| {
        // SAFETY: getpgid on our own child (alive or zombie: its pid is not reused).
        let pg = unsafe { libc::getpgid(c) };
        if pg > 1 && !never.contains(&pg) {
            hit(-pg);
        }
        hit(c);
    });
}

/// Whether the process group `pgid` has members.
fn group_exists(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// Reaps every child that has ended, noting the command's status and when it ended.
/// True while some child remains.
fn reap(cmd: libc::pid_t, cmd_status: &mut Option<libc::c_int>, end_ns: &mut u64) -> bool {
    loop {
        let mut st = 0;
        // SAFETY: waitpid with a status we own.
        let r = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
        if r > 0 {
            if r == cmd {
                *cmd_status = Some(st);
                *end_ns = mono_ns();
            }
        } else if r == 0 {
            return true;
        } else if errno() != libc::EINTR {
            return false; // ECHILD: nothing left
        }
    }
}

/// Waits up to `ns` for one of the signals in `set`; the signal, or -1.
fn wait_signal(set: &libc::sigset_t, ns: u64) -> libc::c_int {
    // SAFETY: a zeroed timespec is valid; sigtimedwait reads it and the set we own.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        ts.tv_sec = (ns / 1_000_000_000) as libc::time_t;
        ts.tv_nsec = (ns % 1_000_000_000) as libc::c_long;
        libc::sigtimedwait(set, std::ptr::null_mut(), &ts)
    }
}

/// The supervisor: see the module documentation.
///
/// # Safety
/// Call only in the child of `fork`, with everything `s` and `e` point to prepared
/// before the fork. Never returns.
unsafe fn supervise(s: &Supervisor, e: &Exec<'_>) -> ! {
    const STOP_NONE: u8 = 0;
    const STOP_GRACEFUL: u8 = 1;
    const STOP_NOW: u8 = 2;
    // SAFETY (whole body): async-signal-safe system calls on data prepared before fork.
    unsafe {
        // Stop signals and SIGCHLD are blocked and taken with sigtimedwait.
        let mut waitset: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut waitset);
        for sig in [
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGUSR1,
            libc::SIGCHLD,
        ] {
            libc::sigaddset(&mut waitset, sig);
        }
        libc::sigprocmask(libc::SIG_SETMASK, &waitset, std::ptr::null_mut());
        // Writing the report after numalab died must not kill the supervisor.
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        // Children must stay waitable (SIG_IGN would reap them automatically).
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        // Out of numalab's group: `kill -9 -PGID` of numalab's job must leave the
        // supervisor alive to clean up; terminal signals go to numalab, which decides.
        libc::setpgid(0, 0);
        let me = libc::getpid();
        let never = [libc::getpgrp(), s.parent_pgrp];
        let (sighup, zero): (libc::c_ulong, libc::c_ulong) = (libc::SIGHUP as libc::c_ulong, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, sighup, zero, zero, zero);
        if libc::getppid() != s.parent {
            // numalab died before the parent-death signal was armed: start nothing.
            libc::_exit(126);
        }
        let one: libc::c_ulong = 1;
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, one, zero, zero, zero);
        close_inherited(&[s.out_w, s.err_w, s.status_w, s.gate_r, s.report_w]);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);

        let cmd = libc::fork();
        if cmd < 0 {
            write_stage(s.status_w, STAGE_FORK, errno());
            libc::_exit(127);
        }
        if cmd == 0 {
            libc::close(s.report_w);
            command(s, null, e);
        }
        // Also set here, so that the group exists before anyone signals it.
        libc::setpgid(cmd, cmd);
        write_all(s.report_w, &cmd.to_ne_bytes());
        // The command's descriptors are the command's; the supervisor's stdio is
        // /dev/null so that it never holds numalab's (a pipe someone waits on).
        for fd in [s.status_w, s.gate_r, s.out_w, s.err_w] {
            libc::close(fd);
        }
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 2 {
                libc::close(null);
            }
        }

        let mut cmd_status: Option<libc::c_int> = None;
        let mut end_ns = 0u64;
        let mut stop = STOP_NONE;
        let mut leftovers = false;
        loop {
            let others = reap(cmd, &mut cmd_status, &mut end_ns);
            if cmd_status.is_some() {
                leftovers = others || group_exists(cmd);
                break;
            }
            match wait_signal(&waitset, 5_000_000_000) {
                libc::SIGTERM | libc::SIGINT => stop = STOP_GRACEFUL,
                libc::SIGUSR1 => stop = STOP_NOW,
                // SIGHUP (parent-death signal, also sent when only the numalab thread
                // that forked us ends), SIGCHLD, or a periodic check.
                _ if libc::getppid() != s.parent => stop = STOP_GRACEFUL,
                _ => {}
            }
            if stop != STOP_NONE {
                break;
            }
        }
        if stop == STOP_GRACEFUL {
            let mut sent = Sent {
                ids: [0; 512],
                n: 0,
            };
            signal_tree(
                libc::SIGTERM,
                cmd,
                cmd_status.is_some(),
                me,
                never,
                Some(&mut sent),
            );
            let deadline = mono_ns().saturating_add(s.grace_ns);
            while reap(cmd, &mut cmd_status, &mut end_ns) {
                let now = mono_ns();
                if now >= deadline {
                    break;
                }
                if wait_signal(&waitset, (deadline - now).min(50_000_000)) == libc::SIGUSR1 {
                    break;
                }
                // Orphans of the processes that ended meanwhile are our children now.
                signal_tree(
                    libc::SIGTERM,
                    cmd,
                    cmd_status.is_some(),
                    me,
                    never,
                    Some(&mut sent),
                );
            }
        }
        // Whatever is left: SIGKILL until no child remains (each round reaches the
        // orphans of the previous one).
        loop {
            signal_tree(libc::SIGKILL, cmd, cmd_status.is_some(), me, never, None);
            if !reap(cmd, &mut cmd_status, &mut end_ns) {
                break;
            }
            wait_signal(&waitset, 20_000_000);
        }

        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        let report = Report {
            status: cmd_status,
            leftovers,
            end_ns,
            user_ns: timeval_ns(ru.ru_utime),
            sys_ns: timeval_ns(ru.ru_stime),
            max_rss_kib: ru.ru_maxrss.max(0) as u64,
        };
        write_all(s.report_w, &report.encode());
        let code = match cmd_status {
            Some(st) if libc::WIFEXITED(st) => libc::WEXITSTATUS(st),
            Some(st) if libc::WIFSIGNALED(st) => 128 + libc::WTERMSIG(st),
            _ => 127,
        };
        libc::_exit(code)
    }
}

fn timeval_ns(t: libc::timeval) -> u64 {
    (t.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_usec.max(0) as u64 * 1000)
}

/// The supervisor's final message to numalab.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Report {
    /// The command's raw wait status (None: never reaped, cannot happen in practice).
    status: Option<libc::c_int>,
    /// Descendants were still alive when the command ended, and were killed.
    leftovers: bool,
    /// CLOCK_MONOTONIC when the command was reaped, ns.
    end_ns: u64,
    /// RUSAGE_CHILDREN of the supervisor: the whole tree it reaped.
    user_ns: u64,
    sys_ns: u64,
    max_rss_kib: u64,
}

impl Report {
    fn encode(&self) -> [u8; REPORT_LEN] {
        let mut b = [0u8; REPORT_LEN];
        let flags: u32 = u32::from(self.status.is_some()) | (u32::from(self.leftovers) << 1);
        b[0..4].copy_from_slice(&self.status.unwrap_or(0).to_ne_bytes());
        b[4..8].copy_from_slice(&flags.to_ne_bytes());
        b[8..16].copy_from_slice(&self.end_ns.to_ne_bytes());
        b[16..24].copy_from_slice(&self.user_ns.to_ne_bytes());
        b[24..32].copy_from_slice(&self.sys_ns.to_ne_bytes());
        b[32..40].copy_from_slice(&self.max_rss_kib.to_ne_bytes());
        b
    }

    fn decode(b: &[u8; REPORT_LEN]) -> Report {
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_ne_bytes(w)
        };
        let flags = u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
        Report {
            status: (flags & 1 != 0).then(|| libc::c_int::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            leftovers: flags & 2 != 0,
            end_ns: u64_at(8),
            user_ns: u64_at(16),
            sys_ns: u64_at(24),
            max_rss_kib: u64_at(32),
        }
    }
}

/// The command's process: placement, the gate, exec.
///
/// # Safety
/// Call only in the child of `fork` (of the supervisor). Never returns.
unsafe fn command(s: &Supervisor, null: RawFd, e: &Exec<'_>) -> ! {
    let status_w = s.status_w;
    let fail = |stage: u8| -> ! {
        write_stage(status_w, stage, errno());
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(127) }
    };
    // SAFETY (whole body): async-signal-safe calls on prepared data.
    unsafe {
        libc::setpgid(0, 0);
        if null >= 0 {
            libc::dup2(null, 0);
        }
        libc::dup2(s.out_w, 1);
        libc::dup2(s.err_w, 2);
        // Default signal dispositions and an empty mask for the program.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGPIPE, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_DFL);
        }
        if let Some(dir) = e.cwd {
            if libc::chdir(dir.as_ptr()) != 0 {
                fail(STAGE_CHDIR);
            }
        }
        if let Some(set) = e.cpuset {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                fail(STAGE_AFFINITY);
            }
        }
        if e.mode >= 0 {
            let rc = libc::syscall(
                libc::SYS_set_mempolicy,
                e.mode as libc::c_long,
                e.nodemask.as_ptr(),
                (e.nodemask.len() * 64 + 1) as libc::c_ulong,
            );
            if rc != 0 {
                fail(STAGE_MEMPOLICY);
            }
        }
        if e.gated {
            let mut b = [0u8; 1];
            if libc::read(s.gate_r, b.as_mut_ptr().cast(), 1) != 1 {
                // The parent went away without releasing us.
                fail(STAGE_GATE);
            }
        }
        libc::execve(e.path.as_ptr(), e.argv.as_ptr(), e.envp.as_ptr());
        fail(STAGE_EXEC)
    }
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
            let b = [1u8];
            // SAFETY: sending one byte on our socket end; MSG_NOSIGNAL turns a dead
            // child into EPIPE instead of a SIGPIPE for numalab.
            unsafe {
                use std::os::fd::AsRawFd;
                libc::send(gate.as_raw_fd(), b.as_ptr().cast(), 1, libc::MSG_NOSIGNAL);
            }
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
            // SAFETY: signalling our own unreaped child.
            unsafe {
                libc::kill(self.supervisor, sig);
            }
        }
    }

    /// Blocks until the supervisor has ended, and reaps it.
    fn reap_supervisor(&mut self) {
        if self.reaped.is_some() {
            return;
        }
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: waiting for our own child with valid out-parameters.
            let rc = unsafe { libc::wait4(self.supervisor, &mut status, 0, &mut usage) };
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
        if self.reaped.is_none() {
            // A thread waits without reaping (WNOWAIT), so that the supervisor's pid stays
            // ours to signal until this thread reaps it.
            let sup = self.supervisor;
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || loop {
                // SAFETY: a zeroed siginfo_t is a valid out-parameter.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                // SAFETY: waiting for our own child, leaving it waitable.
                let rc = unsafe {
                    libc::waitid(
                        libc::P_PID,
                        sup as libc::id_t,
                        &mut info,
                        libc::WEXITED | libc::WNOWAIT,
                    )
                };
                if rc == 0 || last_errno() != libc::EINTR {
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
            let mut killed = false;
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
        let (sup_status, sup_usage, reaped_at) = self.reaped.unwrap_or_else(|| {
            // SAFETY: zeroed rusage.
            (-1, unsafe { std::mem::zeroed() }, mono_ns())
        });
        let report = self.report.take().and_then(|fd| {
            use std::os::fd::AsRawFd;
            // The supervisor has exited, so its report is in the pipe or nowhere; do not
            // block on a write end some other process might still hold.
            // SAFETY: fcntl on our own descriptor.
            unsafe {
                let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
            let mut b = [0u8; REPORT_LEN];
            (read_full(fd.as_raw_fd(), &mut b) == REPORT_LEN).then(|| Report::decode(&b))
        });
        let join = |h: Option<std::thread::JoinHandle<(String, Option<String>)>>| {
            h.and_then(|h| h.join().ok()).unwrap_or_default()
        };
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
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A Running dropped without wait(): the supervisor SIGKILLs the whole tree at
        // once (no grace), and is reaped.
        if self.reaped.is_none() {
            self.signal_supervisor(libc::SIGUSR1);
            // Bounded like wait(): a descendant stuck in the kernel must not hang numalab.
            let deadline = mono_ns() + SUPERVISOR_MARGIN.as_nanos() as u64;
            loop {
                // SAFETY: checking on our own child without reaping it.
                let ended = unsafe {
                    let mut info: libc::siginfo_t = std::mem::zeroed();
                    libc::waitid(
                        libc::P_PID,
                        self.supervisor as libc::id_t,
                        &mut info,
                        libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
                    ) == 0
                        && info.si_pid() != 0
                };
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_survives_the_pipe() {
        let r = Report {
            status: Some(0x0900),
            leftovers: true,
            end_ns: 123_456_789_012,
            user_ns: 5,
            sys_ns: 6,
            max_rss_kib: 7,
        };
        assert_eq!(Report::decode(&r.encode()), r);
        let none = Report {
            status: None,
            leftovers: false,
            ..r
        };
        assert_eq!(Report::decode(&none.encode()), none);
    }

    #[test]
    fn proc_paths_are_built_without_formatting() {
        let mut buf = [0u8; 64];
        let p = proc_path(&mut buf, b"/proc/self/task/", 4_194_304, b"/children");
        // SAFETY: proc_path NUL-terminates the buffer p points into.
        let s = unsafe { std::ffi::CStr::from_ptr(p) };
        assert_eq!(s.to_str().unwrap(), "/proc/self/task/4194304/children");
        let p = proc_path(&mut buf, b"/proc/", 0, b"/stat");
        // SAFETY: as above.
        let s = unsafe { std::ffi::CStr::from_ptr(p) };
        assert_eq!(s.to_str().unwrap(), "/proc/0/stat");
    }

    #[test]
    fn numbers_are_read_from_a_file_in_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("children");
        // More than one read buffer of numbers, as a children file with many orphans.
        let want: Vec<i32> = (1..2000).map(|k| k * 7919).collect();
        let text: Vec<String> = want.iter().map(|n| n.to_string()).collect();
        std::fs::write(&path, text.join(" ") + " ").unwrap();
        let c = CString::new(path.to_str().unwrap()).unwrap();
        let mut got = Vec::new();
        assert!(for_each_number_in_file(c.as_ptr(), &mut |n| got.push(n)));
        assert_eq!(got, want);
        let missing = CString::new(dir.path().join("nope").to_str().unwrap()).unwrap();
        assert!(!for_each_number_in_file(missing.as_ptr(), &mut |_| {}));
    }

    #[test]
    fn children_are_found_without_the_children_file() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let me = std::process::id() as libc::pid_t;
        let mut found = Vec::new();
        for_each_child_by_stat(me, &mut |p| found.push(p));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found.contains(&(child.id() as libc::pid_t)), "{found:?}");
    }
}
