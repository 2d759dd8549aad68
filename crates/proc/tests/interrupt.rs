//! Ctrl-C or SIGTERM to numalab (its interrupt flag) ends a command's whole process
//! tree, children that left the process group and ignore SIGTERM included, within the
//! grace period. A test binary of its own: the flag is process-wide.

use numalab_proc::{spawn, Spec};
use std::time::{Duration, Instant};

fn alive(pid: i32) -> bool {
    // A zombie is not alive for our purpose.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

#[test]
fn interrupt_ends_the_whole_tree_within_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("stubborn.pid");
    // A sleep in a session of its own that ignores SIGTERM: only SIGKILL after the
    // grace period ends it.
    let script = format!(
        "setsid sh -c 'trap \"\" TERM; exec sleep 301' >/dev/null 2>&1 & echo $! > {}; sleep 300",
        pidfile.display()
    );
    let mut spec = Spec::new(["/bin/sh", "-c", &script]);
    spec.kill_grace = Duration::from_millis(500);
    let running = spawn(&spec).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let stubborn: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the pid file was never written");
        std::thread::sleep(Duration::from_millis(10));
    };
    // Let the trap take effect before asking to stop.
    std::thread::sleep(Duration::from_millis(200));
    numalab_schema::interrupt::request();
    let t = Instant::now();
    let out = running.wait();
    let took = t.elapsed();
    let survived = alive(stubborn);
    if survived {
        // SAFETY: cleaning up the process this test started.
        unsafe { libc::kill(stubborn, libc::SIGKILL) };
    }
    assert!(out.interrupted, "{out:?}");
    // Grace (0.5 s) plus the supervisor's margin (1 s), and then some.
    assert!(took < Duration::from_secs(10), "wait took {took:?}");
    assert!(
        !survived,
        "the setsid'd sleep {stubborn} survived the interrupt"
    );
}
