//! Real processes on this machine: exit codes, signals, timeouts that kill a whole group
//! (grandchildren included), output tails, placement applied before exec, the gate.

use numalab_proc::{spawn, ProcError, Spec};
use numalab_topo::bind::MemPolicy;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn sh(script: &str) -> Spec {
    Spec::new(["/bin/sh", "-c", script])
}

fn alive(pid: i32) -> bool {
    // A zombie is not alive for our purpose.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s.split_whitespace().nth(2).is_none_or(|state| state != "Z"),
        Err(_) => false,
    }
}

#[test]
fn exit_codes_and_signals_are_recorded() {
    let ok = spawn(&Spec::new(["true"])).unwrap().wait();
    assert!(ok.success());
    assert_eq!(ok.describe(), "exited successfully");
    let bad = spawn(&sh("exit 3")).unwrap().wait();
    assert_eq!(bad.exit_code, Some(3));
    assert!(!bad.success());
    assert_eq!(bad.describe(), "exited with status 3");
    let seg = spawn(&sh("kill -SEGV $$")).unwrap().wait();
    assert_eq!(seg.signal_name.as_deref(), Some("SIGSEGV"));
    assert_eq!(seg.exit_code, None);
    assert!(seg.describe().contains("SIGSEGV"));
}

#[test]
fn missing_and_empty_commands_are_clear_errors() {
    let err = spawn(&Spec::new(["no-such-program-numalab"])).unwrap_err();
    assert!(matches!(err, ProcError::NotFound { .. }));
    assert!(err.to_string().contains("no-such-program-numalab"));
    assert!(matches!(
        spawn(&Spec::new(Vec::<String>::new())).unwrap_err(),
        ProcError::EmptyCommand
    ));
    let dir = tempfile::tempdir().unwrap();
    let notexec = dir.path().join("data.txt");
    std::fs::write(&notexec, "hello").unwrap();
    let err = spawn(&Spec::new([notexec.to_str().unwrap()])).unwrap_err();
    assert!(matches!(err, ProcError::Exec { .. }), "{err}");
    // The OS error in words (issue 50), not std's "Permission denied (os error 13)".
    let text = err.to_string();
    assert!(text.ends_with(": permission denied"), "{text}");
    assert!(!text.contains("os error"), "{text}");
}

#[test]
fn timeout_kills_the_whole_group_including_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let script = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    let mut spec = sh(&script);
    spec.timeout = Some(Duration::from_millis(300));
    spec.kill_grace = Duration::from_millis(200);
    let out = spawn(&spec).unwrap().wait();
    assert!(out.timed_out, "{out:?}");
    assert!(!out.success());
    let grandchild: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(grandchild), "grandchild {grandchild} survived");
}

#[test]
fn background_leftovers_are_killed_when_the_main_process_exits() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("bg.pid");
    // The main process exits at once, leaving a background child in its group.
    let script = format!(
        "sleep 300 >/dev/null 2>&1 & echo $! > {}",
        pidfile.display()
    );
    let out = spawn(&sh(&script)).unwrap().wait();
    assert!(out.success());
    assert!(out.leftovers_killed);
    let bg: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(bg), "background process {bg} survived");
}

#[test]
fn output_tails_and_whole_stdout() {
    let mut spec =
        sh("i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done; echo oops >&2");
    spec.tail_bytes = 20;
    spec.keep_stdout_bytes = 1 << 20;
    let out = spawn(&spec).unwrap().wait();
    assert!(
        out.stdout_tail.ends_with("line1999\n"),
        "{:?}",
        out.stdout_tail
    );
    assert!(out.stdout_tail.len() <= 20);
    assert_eq!(out.stderr_tail, "oops\n");
    let all = out.stdout.unwrap();
    assert!(all.starts_with("line0\nline1\n"));
    assert_eq!(all.lines().count(), 2000);
}

#[test]
fn environment_shell_and_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = Spec::new(["echo $NUMALAB_TEST_VAR; pwd"]);
    spec.shell = true;
    spec.env
        .push(("NUMALAB_TEST_VAR".into(), "hello-42".into()));
    spec.cwd = Some(dir.path().to_path_buf());
    let out = spawn(&spec).unwrap().wait();
    let canon = dir.path().canonicalize().unwrap();
    assert_eq!(out.stdout_tail, format!("hello-42\n{}\n", canon.display()));
}

#[test]
fn cpu_affinity_and_memory_policy_apply_before_exec() {
    let cpus = numalab_schema::cpulist::parse(
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .unwrap()
            .trim(),
    )
    .unwrap();
    let last = *cpus.last().unwrap();
    let mut spec = Spec::new(["grep", "Cpus_allowed_list", "/proc/self/status"]);
    spec.cpus = Some(vec![last]);
    let out = spawn(&spec).unwrap().wait();
    assert_eq!(
        out.stdout_tail.split_whitespace().last(),
        Some(last.to_string().as_str()),
        "{}",
        out.stdout_tail
    );

    // The child's default policy shows up in numa_maps ("interleave:0" on this node).
    let mut spec = Spec::new(["cat", "/proc/self/numa_maps"]);
    spec.mem_policy = Some(MemPolicy::Interleave(vec![0]));
    let out = spawn(&spec).unwrap().wait();
    assert!(
        out.stdout_tail.contains("interleave:0"),
        "{}",
        out.stdout_tail
    );

    // A CPU that does not exist is refused by the kernel and reported as placement.
    let mut spec = Spec::new(["true"]);
    spec.cpus = Some(vec![1000]);
    let err = spawn(&spec).unwrap_err();
    assert!(matches!(err, ProcError::Placement { .. }), "{err}");
}

#[test]
fn gated_child_waits_for_release() {
    let mut spec = Spec::new(["echo", "started"]);
    spec.gated = true;
    let mut running = spawn(&spec).unwrap();
    let pid = running.pid();
    std::thread::sleep(Duration::from_millis(100));
    // Not exec'd yet: the child is still a copy of this test binary.
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert_eq!(exe, std::env::current_exe().unwrap());
    running.release().unwrap();
    let out = running.wait();
    assert_eq!(out.stdout_tail, "started\n");
}

#[test]
fn cpu_time_is_measured() {
    // A busy shell loop keeps one CPU busy; the busiest of three runs is asserted, as
    // the other tests running beside it on a 2-vCPU machine can take the CPU from one
    // run (a CPU time not measured at all fails every run).
    let mut busiest = 0.0f64;
    for _ in 0..3 {
        let out = spawn(&sh("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"))
            .unwrap()
            .wait();
        assert!(out.user_cpu_ns > 0, "{out:?}");
        assert!(out.max_rss_bytes > 0);
        busiest = busiest.max(out.cpus_busy());
        if busiest > 0.3 {
            break;
        }
    }
    assert!(busiest > 0.3, "{busiest}");
}

/// Regression: releasing a gated child that already died (here: its placement failed
/// before the gate) raised SIGPIPE and killed numalab, whose SIGPIPE is SIG_DFL.
#[test]
fn releasing_a_dead_gated_child_does_not_raise_sigpipe() {
    // SAFETY: test process; restores the default disposition as the numalab binary does.
    let old = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let mut spec = Spec::new(["true"]);
    spec.gated = true;
    spec.cpus = Some(vec![1000]); // refused by the kernel: the child exits before the gate
    let mut running = spawn(&spec).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let err = running.release().unwrap_err();
    assert!(matches!(err, ProcError::Placement { .. }), "{err}");
    // SAFETY: restoring what was there.
    unsafe { libc::signal(libc::SIGPIPE, old) };
}

/// Regression: wall time started after the parent was scheduled again, so a short child
/// that ran to completion meanwhile showed more CPU time than wall time.
#[test]
fn wall_time_covers_cpu_time() {
    for _ in 0..20 {
        let out = spawn(&sh("i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done"))
            .unwrap()
            .wait();
        let cpu = out.user_cpu_ns + out.sys_cpu_ns;
        // CPU accounting and the clock differ by at most a scheduler tick (4 ms at HZ=250).
        assert!(
            out.wall_ns + 4_000_000 >= cpu,
            "wall {} ns < cpu {} ns",
            out.wall_ns,
            cpu
        );
    }
}

// The supervisor: a command's whole process tree ends with it, whatever the tree does
// with sessions and process groups, and whatever happens to numalab.

/// Polls up to `within` for `pid` to be gone (or a zombie).
fn ends_within(pid: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The number in `path`, once a shell has written it (polls up to 10 s).
fn pid_in(path: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The parent pid of `pid`.
fn ppid(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    after.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Kills what a failing test leaves behind: the listed processes, checked by name (a
/// `sleep`, or a shell running one) so that a reused pid is never hit, and the process
/// groups of those among them that lead one.
struct KillSleepsOnDrop(Vec<i32>);

impl Drop for KillSleepsOnDrop {
    fn drop(&mut self) {
        for &pid in &self.0 {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let ours =
                cmdline.starts_with(b"sleep\0") || cmdline.windows(9).any(|w| w == b"sleep 300");
            if alive(pid) && ours {
                // SAFETY: kill on a process (and its group) we just checked.
                unsafe {
                    if libc::getpgid(pid) == pid {
                        libc::kill(-pid, libc::SIGKILL);
                    }
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

#[test]
fn timeout_ends_children_that_left_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    // The escaped sleep keeps the stdout pipe open, too.
    let mut spec = sh(&format!(
        "setsid sleep 301 & echo $! > {}; sleep 300",
        pidfile.display()
    ));
    spec.timeout = Some(Duration::from_secs(1));
    spec.kill_grace = Duration::from_millis(500);
    let t = Instant::now();
    let out = spawn(&spec).unwrap().wait();
    let took = t.elapsed();
    let escaped = pid_in(&pidfile);
    let _cleanup = KillSleepsOnDrop(vec![escaped]);
    assert!(out.timed_out, "{out:?}");
    assert!(took < Duration::from_secs(15), "wait took {took:?}");
    assert!(
        ends_within(escaped, Duration::from_secs(3)),
        "the setsid'd sleep {escaped} survived the timeout"
    );
}

#[test]
fn timeout_ends_escaped_children_that_closed_their_output() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    // In a session of its own and holding none of the command's pipes: only the
    // supervisor can find it.
    let mut spec = sh(&format!(
        "setsid sleep 301 >/dev/null 2>&1 & echo $! > {}; sleep 300",
        pidfile.display()
    ));
    spec.timeout = Some(Duration::from_millis(500));
    spec.kill_grace = Duration::from_millis(500);
    let out = spawn(&spec).unwrap().wait();
    let escaped = pid_in(&pidfile);
    let _cleanup = KillSleepsOnDrop(vec![escaped]);
    assert!(out.timed_out, "{out:?}");
    assert!(
        ends_within(escaped, Duration::from_secs(3)),
        "the setsid'd sleep {escaped} survived the timeout"
    );
}

#[test]
fn leftovers_outside_the_group_are_killed_when_the_main_process_exits() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("daemon.pid");
    // The pause lets setsid take effect before the main process exits.
    let out = spawn(&sh(&format!(
        "setsid sleep 301 >/dev/null 2>&1 & echo $! > {}; sleep 0.3",
        pidfile.display()
    )))
    .unwrap()
    .wait();
    let daemon = pid_in(&pidfile);
    let _cleanup = KillSleepsOnDrop(vec![daemon]);
    assert!(out.success(), "{out:?}");
    assert!(out.leftovers_killed);
    assert!(
        ends_within(daemon, Duration::from_secs(3)),
        "the setsid'd sleep {daemon} outlived its command"
    );
}

#[test]
fn a_dropped_command_takes_its_whole_tree_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    let running = spawn(&sh(&format!(
        "setsid sleep 301 >/dev/null 2>&1 & echo $! > {}; sleep 300",
        pidfile.display()
    )))
    .unwrap();
    let escaped = pid_in(&pidfile);
    let _cleanup = KillSleepsOnDrop(vec![escaped, running.pid()]);
    let cmd = running.pid();
    drop(running);
    assert!(ends_within(cmd, Duration::from_secs(3)));
    assert!(
        ends_within(escaped, Duration::from_secs(3)),
        "the setsid'd sleep {escaped} outlived the dropped command"
    );
}

const HELPER_DIR: &str = "NUMALAB_PROC_TEST_DOOMED_PARENT_DIR";

/// Not a test of its own: the body of the parent process that
/// `killing_numalab_with_sigkill_ends_the_whole_tree` starts (this test binary, run
/// again with [`HELPER_DIR`] set) and kills. Without the variable it does nothing.
#[test]
fn doomed_parent_helper() {
    let Some(dir) = std::env::var_os(HELPER_DIR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let mut spec = sh(&format!(
        "setsid sleep 301 & echo $! > {d}/setsid.pid; sleep 302 & echo $! > {d}/bg.pid; sleep 300",
        d = dir.display()
    ));
    spec.kill_grace = Duration::from_millis(500);
    let running = spawn(&spec).unwrap();
    std::fs::write(dir.join("cmd.tmp"), running.pid().to_string()).unwrap();
    std::fs::rename(dir.join("cmd.tmp"), dir.join("cmd.pid")).unwrap();
    // Waits until killed.
    let _ = running.wait();
}

#[test]
fn killing_numalab_with_sigkill_ends_the_whole_tree() {
    let dir = tempfile::tempdir().unwrap();
    let mut parent = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "doomed_parent_helper", "--test-threads", "1"])
        .env(HELPER_DIR, dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let cmd = pid_in(&dir.path().join("cmd.pid"));
    let escaped = pid_in(&dir.path().join("setsid.pid"));
    let bg = pid_in(&dir.path().join("bg.pid"));
    let mut tree = vec![cmd, escaped, bg];
    let supervisor = ppid(cmd);
    if supervisor != parent.id() as i32 {
        tree.push(supervisor);
    }
    let _cleanup = KillSleepsOnDrop(tree.clone());
    for &pid in &tree {
        assert!(alive(pid), "{pid} is not running before the kill");
    }
    parent.kill().unwrap(); // SIGKILL: no destructor, no handler runs in numalab
    parent.wait().unwrap();
    for pid in tree {
        assert!(
            ends_within(pid, Duration::from_secs(10)),
            "{pid} survived the SIGKILL of its numalab"
        );
    }
}

/// Whether no process has the id `pid` any more (not even a zombie): `kill(pid, 0)`
/// fails with ESRCH.
fn gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == -1 && *libc::__errno_location() == libc::ESRCH }
}

/// Issue 50: SIGKILL of the supervisor (numalab's helper between it and the command)
/// left a descendant that had called `setsid` running, and its children: only the
/// supervisor tracked them. numalab, a child subreaper while it runs commands, gets
/// them when the supervisor dies, and kills and reaps every one before `wait` returns.
#[test]
fn a_killed_supervisor_leaves_no_escaped_descendant_behind() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    // The command's tree: the shell (the command's group), a `setsid` shell in a
    // session of its own and its `sleep` (which stays in that session), a background
    // `sleep` in the command's group.
    let mut spec = sh(&format!(
        "setsid sh -c 'sleep 303 & echo $! > {d}/inner.pid; sleep 301' & echo $! > {d}/setsid.pid; sleep 302 & echo $! > {d}/bg.pid; sleep 300"
    ));
    spec.timeout = Some(Duration::from_secs(120));
    let running = spawn(&spec).unwrap();
    let cmd = running.pid();
    let escaped = pid_in(&dir.path().join("setsid.pid"));
    let inner = pid_in(&dir.path().join("inner.pid"));
    let bg = pid_in(&dir.path().join("bg.pid"));
    let supervisor = ppid(cmd);
    let tree = [cmd, escaped, inner, bg];
    let _cleanup = KillSleepsOnDrop(tree.to_vec());
    // SAFETY: getsid on processes of this test's tree.
    let (sid, own) = unsafe { (libc::getsid(escaped), libc::getsid(0)) };
    assert_eq!(
        sid, escaped,
        "the setsid'd shell leads a session of its own"
    );
    assert_ne!(sid, own);
    assert_ne!(
        supervisor,
        std::process::id() as i32,
        "the command runs under a supervisor"
    );
    // SAFETY: SIGKILL of the supervisor this test's spawn started.
    unsafe { libc::kill(supervisor, libc::SIGKILL) };
    let started = Instant::now();
    let outcome = running.wait();
    assert!(outcome.supervisor_lost, "{outcome:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "wait took {:?} after the supervisor was killed",
        started.elapsed()
    );
    // Killed and reaped: no such process, not even a zombie, right after wait.
    let left: Vec<i32> = tree.iter().copied().filter(|&p| !gone(p)).collect();
    assert!(
        left.is_empty(),
        "left after the supervisor's SIGKILL: {left:?}"
    );
}

#[test]
fn statuses_and_output_come_through_the_supervisor_exactly() {
    let out = spawn(&sh("echo to-stdout; echo to-stderr >&2; exit 3"))
        .unwrap()
        .wait();
    assert_eq!((out.exit_code, out.signal), (Some(3), None), "{out:?}");
    assert_eq!(out.stdout_tail, "to-stdout\n");
    assert_eq!(out.stderr_tail, "to-stderr\n");
    assert!(!out.leftovers_killed);

    let out = spawn(&sh("echo before; kill -KILL $$")).unwrap().wait();
    assert_eq!((out.exit_code, out.signal), (None, Some(9)), "{out:?}");
    assert_eq!(out.signal_name.as_deref(), Some("SIGKILL"));
    assert!(!out.timed_out && !out.interrupted);
    assert_eq!(out.stdout_tail, "before\n");

    // An exit code that looks like a signal is still an exit code.
    let out = spawn(&sh("exit 137")).unwrap().wait();
    assert_eq!((out.exit_code, out.signal), (Some(137), None), "{out:?}");
    let out = spawn(&sh("kill -TERM $$")).unwrap().wait();
    assert_eq!((out.exit_code, out.signal), (None, Some(15)), "{out:?}");
}

#[test]
fn pid_is_the_commands_own_under_the_supervisor() {
    let mut spec = sh("echo $$");
    spec.gated = true;
    let mut running = spawn(&spec).unwrap();
    let pid = running.pid();
    let supervisor = ppid(pid);
    assert_ne!(supervisor, std::process::id() as i32);
    assert_eq!(ppid(supervisor), std::process::id() as i32);
    running.release().unwrap();
    let out = running.wait();
    assert_eq!(out.stdout_tail, format!("{pid}\n"));
    assert!(!alive(supervisor));
}

#[test]
fn the_supervisor_holds_none_of_numalabs_descriptors() {
    use std::os::fd::AsRawFd;
    let (reader, writer) = std::io::pipe().unwrap();
    let ours = std::fs::read_link(format!("/proc/self/fd/{}", writer.as_raw_fd())).unwrap();
    let mut spec = Spec::new(["true"]);
    spec.gated = true;
    let mut running = spawn(&spec).unwrap();
    let supervisor = ppid(running.pid());
    let fds = |pid: i32| -> Vec<(i32, PathBuf)> {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .filter_map(|e| {
                let e = e.ok()?;
                let fd = e.file_name().to_str()?.parse().ok()?;
                Some((fd, std::fs::read_link(e.path()).ok()?))
            })
            .collect()
    };
    // Its stdio is /dev/null once the command is started (poll: spawn returns as soon
    // as the command's pid is known).
    let deadline = Instant::now() + Duration::from_secs(5);
    let held = loop {
        let held = fds(supervisor);
        let stdio_null = (0..3).all(|k| {
            held.iter()
                .any(|(fd, p)| *fd == k && p == Path::new("/dev/null"))
        });
        if stdio_null || Instant::now() >= deadline {
            break held;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    for k in 0..3 {
        assert!(
            held.iter()
                .any(|(fd, p)| *fd == k && p == Path::new("/dev/null")),
            "{held:?}"
        );
    }
    assert!(held.iter().all(|(_, p)| *p != ours), "{held:?}");
    running.release().unwrap();
    assert!(running.wait().success());
    drop((reader, writer));
}

/// The parent-death signal fires when the *thread* that forked the supervisor ends; that
/// must not be taken for the death of numalab.
#[test]
fn a_command_outlives_the_thread_that_started_it() {
    let running = std::thread::spawn(|| spawn(&sh("sleep 0.5; echo done")).unwrap())
        .join()
        .unwrap();
    let out = running.wait();
    assert!(out.success(), "{out:?}");
    assert_eq!(out.stdout_tail, "done\n");
}

#[test]
fn a_released_command_never_ends_before_it_started() {
    // Found in CI under load: the supervisor stamps the end when it reaps the command,
    // and the start was stamped after opening the gate, so a `true` that finished
    // before numalab's thread ran again got a wall time of 0 (and perf's DURATION_TIME
    // a division by zero). The clock now starts before the gate opens.
    for _ in 0..100 {
        let mut spec = Spec::new(["true"]);
        spec.gated = true;
        let mut running = spawn(&spec).unwrap();
        running.release().unwrap();
        let out = running.wait();
        assert_eq!(out.exit_code, Some(0));
        assert!(out.wall_ns > 0, "{out:?}");
    }
}
