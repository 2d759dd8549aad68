//! Tests of the process-group core: time-out, cancel, bounded capture, leftovers.

use super::*;

fn sh(script: &str) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", script]).stdin(Stdio::null());
    c
}

/// The pid a script printed on its first stdout line.
fn first_pid(out: &[u8]) -> i32 {
    String::from_utf8_lossy(out)
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .expect("a pid on the first line")
}

#[test]
fn tail_keeps_the_end() {
    let t = Tail::new(16);
    for i in 0..100 {
        t.push(format!("line {i}\n").as_bytes());
    }
    let s = t.text();
    assert!(s.len() <= 16, "{s:?}");
    assert!(s.ends_with("line 99\n"), "{s:?}");
    assert!(s.starts_with("line"), "{s:?}");
}

#[test]
fn output_timeout_kills() {
    let t0 = Instant::now();
    assert!(matches!(
        run_captured(sh("sleep 30"), &Limits::new(Duration::from_millis(300))),
        Err(RunError::Timeout)
    ));
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert!(matches!(
        run_captured(
            Command::new("/nonexistent/x"),
            &Limits::new(Duration::from_secs(1))
        ),
        Err(RunError::NotFound)
    ));
}

#[test]
fn timeout_kills_the_whole_group_after_the_grace() {
    // The grandchild ignores SIGTERM: only the SIGKILL after the grace ends it.
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!(
        "sh -c 'trap \"\" TERM; echo $$ > {}; exec sleep 30' & wait",
        pidfile.display()
    );
    let limits = Limits {
        kill_grace: Duration::from_millis(200),
        ..Limits::new(Duration::from_millis(500))
    };
    let t0 = Instant::now();
    assert!(matches!(
        run_captured(sh(&script), &limits),
        Err(RunError::Timeout)
    ));
    assert!(t0.elapsed() < Duration::from_secs(10));
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(process_gone(pid, Duration::from_secs(5)), "pid {pid} left");
}

#[test]
fn cancel_stops_the_run() {
    let cancel = AtomicBool::new(true);
    let limits = Limits {
        cancel: Some(&cancel),
        ..Limits::new(Duration::from_secs(30))
    };
    let t0 = Instant::now();
    assert!(matches!(
        run_captured(sh("sleep 30"), &limits),
        Err(RunError::Cancelled)
    ));
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn capture_is_bounded_and_never_blocks_the_program() {
    // 1 MiB on each stream, far more than a pipe buffer and than is kept.
    let script = "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2; exit 3";
    let limits = Limits {
        max_stdout: 1000,
        max_stderr: 10,
        ..Limits::new(Duration::from_secs(30))
    };
    let out = run_captured(sh(script), &limits).unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stdout.len(), 1000);
    assert_eq!(out.stderr.len(), 10);
    let all = run_captured(
        sh("echo out; echo err >&2"),
        &Limits::new(Duration::from_secs(30)),
    )
    .unwrap();
    assert!(all.status.success());
    assert_eq!(all.stdout, b"out\n");
    assert_eq!(all.stderr, b"err\n");
}

#[test]
fn leftovers_are_killed_after_a_normal_exit() {
    // The background sleep holds stdout open; the run still ends with the shell.
    let t0 = Instant::now();
    let out = run_captured(
        sh("sleep 30 & echo $!"),
        &Limits::new(Duration::from_secs(20)),
    )
    .unwrap();
    assert!(out.status.success());
    assert!(t0.elapsed() < Duration::from_secs(10));
    let pid = first_pid(&out.stdout);
    assert!(process_gone(pid, Duration::from_secs(5)), "pid {pid} left");
}

#[test]
fn kill_group_ends_a_spawned_tree() {
    let mut c = sh("sleep 30 & echo $!; wait");
    c.stdout(Stdio::piped());
    own_group(&mut c);
    let mut child = c.spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let pid = first_pid(line.as_bytes());
    assert!(wait_until(
        &mut child,
        Instant::now() + Duration::from_millis(100),
        None
    )
    .unwrap()
    .is_none());
    let st = kill_group(&mut child, Duration::from_secs(1)).unwrap();
    assert!(!st.success());
    assert!(process_gone(pid, Duration::from_secs(5)), "pid {pid} left");
}
