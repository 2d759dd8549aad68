//! Real processes on this machine: exit codes, signals, timeouts that kill a whole group
//! (grandchildren included), output tails, placement applied before exec, the gate.

use numalab_proc::{spawn, ProcError, Spec};
use numalab_topo::bind::MemPolicy;
use std::time::Duration;

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
    let out = spawn(&sh("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"))
        .unwrap()
        .wait();
    assert!(out.user_cpu_ns > 0, "{out:?}");
    assert!(out.cpus_busy() > 0.3, "{}", out.cpus_busy());
    assert!(out.max_rss_bytes > 0);
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
