//! fork/exec with placement, a gate, timeouts and process-group cleanup.

use numalab_schema::{interrupt, Classify, ErrorClass};
use numalab_topo::bind::MemPolicy;
use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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
    /// Kill the whole process group after this long.
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
    /// Time between SIGTERM and SIGKILL when killing the group.
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
    /// User CPU time of the child and its reaped descendants, ns.
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
    /// Processes of the group still alive after the main process exited were killed.
    pub leftovers_killed: bool,
}

impl Outcome {
    /// Exited with code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.interrupted
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
        if self.timed_out {
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

/// A started child.
pub struct Running {
    pid: libc::pid_t,
    program: String,
    argv: Vec<String>,
    gate: Option<OwnedFd>,
    err_pipe: Option<OwnedFd>,
    stdout: Option<std::thread::JoinHandle<(String, Option<String>)>>,
    stderr: Option<std::thread::JoinHandle<(String, Option<String>)>>,
    timeout: Option<Duration>,
    grace: Duration,
    started: Option<Instant>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("pid", &self.pid)
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

    // Everything the child needs is prepared before fork: after fork only
    // async-signal-safe calls are allowed.
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
    let devnull = CString::new("/dev/null").expect("static");

    // Reap orphaned grandchildren ourselves so that none is left behind.
    // SAFETY: prctl with an integer argument.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }

    use std::os::fd::AsRawFd;
    let fds = (
        out_w.as_raw_fd(),
        err_w.as_raw_fd(),
        status_w.as_raw_fd(),
        gate_r.as_raw_fd(),
    );
    let gated = spec.gated;
    let set_cpus = spec.cpus.is_some();

    // Wall time starts here for an ungated child: after fork it may run (even to the end)
    // before this thread is scheduled again, so a later timestamp would undercount.
    let before_fork = Instant::now();
    // SAFETY: fork; the child below only makes async-signal-safe system calls on data
    // prepared before the fork, then execs or _exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(ProcError::System {
            program,
            call: "fork".into(),
            detail: errno_text(last_errno()),
        });
    }
    if pid == 0 {
        // Child.
        // SAFETY: async-signal-safe calls only; every pointer was prepared before fork.
        unsafe {
            child(
                fds,
                &devnull,
                c_cwd.as_ref(),
                if set_cpus { Some(&cpuset) } else { None },
                mode,
                &nodemask,
                gated,
                &c_path,
                &c_argv_ptrs,
                &c_env_ptrs,
            )
        }
    }
    // Parent: the child's group is its own (also set by the child, to avoid a race).
    // SAFETY: setpgid on our own child.
    unsafe {
        libc::setpgid(pid, pid);
    }
    drop(out_w);
    drop(err_w);
    drop(status_w);
    drop(gate_r);

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
        program,
        argv,
        gate,
        err_pipe: Some(status_r),
        stdout: Some(stdout),
        stderr: Some(stderr),
        timeout: spec.timeout,
        grace: spec.kill_grace,
        // A gated child cannot run before release(), which starts the clock.
        started: (!gated).then_some(before_fork),
    };
    if !gated {
        running.release()?;
    }
    Ok(running)
}

#[allow(clippy::too_many_arguments)]
unsafe fn child(
    fds: (RawFd, RawFd, RawFd, RawFd),
    devnull: &CString,
    cwd: Option<&CString>,
    cpuset: Option<&libc::cpu_set_t>,
    mode: libc::c_int,
    nodemask: &[libc::c_ulong],
    gated: bool,
    path: &CString,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> ! {
    let (out_w, err_w, status_w, gate_r) = fds;
    let fail = |stage: u8| -> ! {
        // SAFETY: errno location, write and _exit are async-signal-safe.
        unsafe {
            let errno = *libc::__errno_location();
            let mut buf = [0u8; 5];
            buf[0] = stage;
            buf[1..].copy_from_slice(&errno.to_ne_bytes());
            libc::write(status_w, buf.as_ptr().cast(), buf.len());
            libc::_exit(127);
        }
    };
    // SAFETY (whole body): async-signal-safe calls on prepared data.
    unsafe {
        libc::setpgid(0, 0);
        let null = libc::open(devnull.as_ptr(), libc::O_RDONLY);
        if null >= 0 {
            libc::dup2(null, 0);
        }
        libc::dup2(out_w, 1);
        libc::dup2(err_w, 2);
        // Default signal dispositions and an empty mask for the program.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGPIPE, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_DFL);
        }
        if let Some(dir) = cwd {
            if libc::chdir(dir.as_ptr()) != 0 {
                fail(STAGE_CHDIR);
            }
        }
        if let Some(set) = cpuset {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                fail(STAGE_AFFINITY);
            }
        }
        if mode >= 0 {
            let rc = libc::syscall(
                libc::SYS_set_mempolicy,
                mode as libc::c_long,
                nodemask.as_ptr(),
                (nodemask.len() * 64 + 1) as libc::c_ulong,
            );
            if rc != 0 {
                fail(STAGE_MEMPOLICY);
            }
        }
        if gated {
            let mut b = [0u8; 1];
            if libc::read(gate_r, b.as_mut_ptr().cast(), 1) != 1 {
                // The parent went away without releasing us.
                fail(STAGE_GATE);
            }
        }
        libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
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
    /// The child's process id (also its process group id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets a gated child exec and confirms that exec succeeded.
    pub fn release(&mut self) -> Result<(), ProcError> {
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
        if self.started.is_none() {
            self.started = Some(Instant::now());
        }
        // The status pipe closes on exec (CLOEXEC) or carries (stage, errno).
        if let Some(status) = self.err_pipe.take() {
            let mut f = std::fs::File::from(status);
            let mut buf = Vec::new();
            let _ = f.read_to_end(&mut buf);
            if buf.len() == 5 {
                let errno = i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]);
                // Reap the failed child.
                let mut st = 0;
                // SAFETY: waiting for our own child.
                unsafe {
                    libc::waitpid(self.pid, &mut st, 0);
                }
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

    fn kill_group(&self, sig: i32) {
        // SAFETY: signalling our child's process group.
        unsafe {
            libc::kill(-self.pid, sig);
        }
    }

    /// Waits for the end, enforcing the timeout and Ctrl-C, and cleans up the group.
    pub fn wait(mut self) -> Outcome {
        if self.gate.is_some() {
            // Never released: release now so the child does not hang forever.
            let _ = self.release();
        }
        let started = self.started.unwrap_or_else(Instant::now);
        let pid = self.pid;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut status = 0;
            // SAFETY: a zeroed rusage is a valid out-parameter.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            loop {
                // SAFETY: waiting for our own child with valid out-parameters.
                let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
                if rc == pid {
                    let _ = tx.send((status, usage, Instant::now()));
                    return;
                }
                if rc < 0 && last_errno() != libc::EINTR {
                    let _ = tx.send((-1, usage, Instant::now()));
                    return;
                }
            }
        });
        let mut timed_out = false;
        let mut interrupted = false;
        let mut term_sent: Option<Instant> = None;
        let (status, usage, ended) = loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(v) => break v,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // SAFETY: zeroed rusage.
                    break (-1, unsafe { std::mem::zeroed() }, Instant::now());
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if term_sent.is_none() {
                if self.timeout.is_some_and(|t| started.elapsed() >= t) {
                    timed_out = true;
                } else if interrupt::requested() {
                    interrupted = true;
                }
                if timed_out || interrupted {
                    self.kill_group(libc::SIGTERM);
                    term_sent = Some(Instant::now());
                }
            } else if term_sent.is_some_and(|t| t.elapsed() >= self.grace) {
                self.kill_group(libc::SIGKILL);
            }
        };
        let wall_ns = ended.duration_since(started).as_nanos() as u64;
        // Anything left in the group (background grandchildren) is killed and reaped.
        // SAFETY: probing and signalling our child's group.
        let leftovers = unsafe { libc::kill(-pid, 0) } == 0;
        if leftovers {
            self.kill_group(libc::SIGKILL);
            let deadline = Instant::now() + Duration::from_secs(2);
            while Instant::now() < deadline {
                let mut st = 0;
                // SAFETY: reaping members of our child's group (we are their subreaper).
                let rc = unsafe { libc::waitpid(-pid, &mut st, libc::WNOHANG) };
                // SAFETY: probing the group.
                if rc <= 0 && unsafe { libc::kill(-pid, 0) } != 0 {
                    break;
                }
                if rc == 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        let join = |h: Option<std::thread::JoinHandle<(String, Option<String>)>>| {
            h.and_then(|h| h.join().ok()).unwrap_or_default()
        };
        let (stdout_tail, stdout) = join(self.stdout.take());
        let (stderr_tail, _) = join(self.stderr.take());
        let (exit_code, signal) = if status < 0 {
            (None, None)
        } else if libc::WIFEXITED(status) {
            (Some(libc::WEXITSTATUS(status)), None)
        } else if libc::WIFSIGNALED(status) {
            (None, Some(libc::WTERMSIG(status)))
        } else {
            (None, None)
        };
        let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
        Outcome {
            argv: self.argv.clone(),
            exit_code,
            signal,
            signal_name: signal.map(signal_name),
            timed_out,
            interrupted,
            wall_ns,
            user_cpu_ns: tv(usage.ru_utime),
            sys_cpu_ns: tv(usage.ru_stime),
            max_rss_bytes: usage.ru_maxrss as u64 * 1024,
            stdout_tail,
            stderr_tail,
            stdout,
            leftovers_killed: leftovers,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A Running dropped without wait(): make sure nothing is left behind.
        if self.stdout.is_some() {
            self.kill_group(libc::SIGKILL);
            let mut st = 0;
            // SAFETY: reaping our own child.
            unsafe {
                libc::waitpid(self.pid, &mut st, 0);
            }
        }
    }
}
