//! What runs after `fork`: the supervisor (see the parent module's documentation) and
//! the command's side up to `execve`, with the fixed-size report the supervisor sends
//! back. Only async-signal-safe system calls on data prepared before `fork` happen here.

use super::*;

/// Reads until `buf` is full or end of file; returns the bytes read.
pub(super) fn read_full(fd: RawFd, buf: &mut [u8]) -> usize {
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

pub(super) fn errno() -> i32 {
    // SAFETY: the thread's errno location is always valid.
    unsafe { *libc::__errno_location() }
}

/// Writes a (stage, errno) record on the status pipe.
pub(super) fn write_stage(status_w: RawFd, stage: u8, err: i32) {
    let mut buf = [0u8; 5];
    buf[0] = stage;
    buf[1..].copy_from_slice(&err.to_ne_bytes());
    // SAFETY: writing a buffer we own; a 5-byte write to a pipe is atomic.
    unsafe {
        libc::write(status_w, buf.as_ptr().cast(), buf.len());
    }
}

pub(super) fn write_all(fd: RawFd, buf: &[u8]) {
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
pub(super) fn proc_path(
    buf: &mut [u8; 64],
    prefix: &[u8],
    n: i32,
    suffix: &[u8],
) -> *const libc::c_char {
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
pub(super) fn for_each_number_in_file(
    path: *const libc::c_char,
    f: &mut dyn FnMut(libc::pid_t),
) -> bool {
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
pub(super) struct DirBuf([u8; 4096]);

/// Calls `f(number, directory fd)` for every entry of the directory at `path` whose name
/// is a decimal number (getdents64 into a stack buffer). False if it cannot be opened.
pub(super) fn for_each_numbered_entry(
    path: *const libc::c_char,
    f: &mut dyn FnMut(i32, RawFd),
) -> bool {
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
pub(super) fn for_each_child(me: libc::pid_t, f: &mut dyn FnMut(libc::pid_t)) {
    let mut path = [0u8; 64];
    let p = proc_path(&mut path, b"/proc/self/task/", me, b"/children");
    if !for_each_number_in_file(p, f) {
        // No children file (CONFIG_PROC_CHILDREN off).
        for_each_child_by_stat(me, f);
    }
}

/// Calls `f` with the pid of every process in `/proc` whose parent is `me`.
pub(super) fn for_each_child_by_stat(me: libc::pid_t, f: &mut dyn FnMut(libc::pid_t)) {
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
pub(super) fn close_inherited(keep: &[RawFd]) {
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
pub(super) struct Sent {
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
pub(super) fn signal_tree(
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
pub(super) fn group_exists(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// Reaps every child that has ended, noting the command's status and when it ended.
/// True while some child remains.
pub(super) fn reap(
    cmd: libc::pid_t,
    cmd_status: &mut Option<libc::c_int>,
    end_ns: &mut u64,
) -> bool {
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
pub(super) fn wait_signal(set: &libc::sigset_t, ns: u64) -> libc::c_int {
    // SAFETY: a zeroed timespec is valid; sigtimedwait reads it and the set we own.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        ts.tv_sec = (ns / 1_000_000_000) as libc::time_t;
        ts.tv_nsec = (ns % 1_000_000_000) as libc::c_long;
        libc::sigtimedwait(set, std::ptr::null_mut(), &ts)
    }
}

/// Forks the supervisor, which runs [`supervise`] and never returns here; in numalab,
/// the supervisor's pid, or -1 (errno set) when fork failed.
pub(super) fn fork_supervisor(s: &Supervisor, e: &Exec<'_>) -> libc::pid_t {
    // SAFETY: fork; the child below only makes async-signal-safe system calls on data
    // prepared before the fork and ends in _exit (the command's process in execve).
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: this is the freshly forked child; async-signal-safe calls only, and
        // every pointer in `s` and `e` was prepared before fork.
        unsafe { supervise(s, e) }
    }
    pid
}

/// The supervisor: see the module documentation.
///
/// # Safety
/// Call only in the child of `fork`, with everything `s` and `e` point to prepared
/// before the fork. Never returns.
pub(super) unsafe fn supervise(s: &Supervisor, e: &Exec<'_>) -> ! {
    const STOP_NONE: u8 = 0;
    const STOP_GRACEFUL: u8 = 1;
    const STOP_NOW: u8 = 2;
    // SAFETY: (whole body) async-signal-safe system calls on data prepared before fork.
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

pub(super) fn timeval_ns(t: libc::timeval) -> u64 {
    (t.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_usec.max(0) as u64 * 1000)
}

/// The supervisor's final message to numalab.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Report {
    /// The command's raw wait status (None: never reaped, cannot happen in practice).
    pub(super) status: Option<libc::c_int>,
    /// Descendants were still alive when the command ended, and were killed.
    pub(super) leftovers: bool,
    /// CLOCK_MONOTONIC when the command was reaped, ns.
    pub(super) end_ns: u64,
    /// RUSAGE_CHILDREN of the supervisor: the whole tree it reaped.
    pub(super) user_ns: u64,
    pub(super) sys_ns: u64,
    pub(super) max_rss_kib: u64,
}

impl Report {
    pub(super) fn encode(&self) -> [u8; REPORT_LEN] {
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

    pub(super) fn decode(b: &[u8; REPORT_LEN]) -> Report {
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
pub(super) unsafe fn command(s: &Supervisor, null: RawFd, e: &Exec<'_>) -> ! {
    let status_w = s.status_w;
    let fail = |stage: u8| -> ! {
        write_stage(status_w, stage, errno());
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(127) }
    };
    // SAFETY: (whole body) async-signal-safe calls on prepared data.
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
