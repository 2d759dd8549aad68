//! `fleet run` with the Local launcher: the real agent behind a fake numalab, nodes that
//! succeed, fail, hang, never start the agent, or have no numalab; resume and restart.

mod common;

use std::time::{Duration, Instant};

use numalab_fleet::{read_status, run_fleet, FleetRunOptions, LauncherKind, NodeState};

fn options(fleet: &std::path::Path, numalab: &std::path::Path, nodes: &str) -> FleetRunOptions {
    let mut o = FleetRunOptions::new(fleet, numalab, "0.0.test");
    o.launcher = LauncherKind::Local;
    o.nodes = Some(nodes.into());
    o.parallel = 4;
    o.timeout = Duration::from_secs(3);
    o.kill_margin = Duration::from_secs(2);
    o
}

#[test]
fn done_failed_hang_wedge_and_resume() {
    let state = tempfile::tempdir().unwrap();
    let fleet = tempfile::tempdir().unwrap();
    let numalab = common::fake_numalab(state.path());
    let o = options(fleet.path(), &numalab, "ok1,fail1,hang1,wedge1,ok2");

    let t0 = Instant::now();
    let s = run_fleet(&o, &()).unwrap();
    let took = t0.elapsed();
    // hang1: 3 s then killed by the agent; wedge1: 3 + 2 s then its group killed (+5 s grace at most).
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_eq!(
        (s.done, s.failed, s.timeout, s.launch_failed),
        (2, 1, 2, 0),
        "{s:#?}"
    );
    let names: Vec<&str> = s.nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(names, ["ok1", "fail1", "hang1", "wedge1", "ok2"]);

    common::assert_gathered(fleet.path(), "ok1");
    common::assert_gathered(fleet.path(), "ok2");
    let ok = read_status(fleet.path(), "ok1").unwrap();
    // The command's stdout went to stderr, so it reached the tail and not the frames.
    assert!(
        ok.stderr_tail.contains("this line is the command's stdout"),
        "{}",
        ok.stderr_tail
    );
    assert_eq!(ok.launcher_command[1..3], ["fleet", "node"]);

    let fail = read_status(fleet.path(), "fail1").unwrap();
    assert_eq!(fail.state, NodeState::Failed);
    assert_eq!(fail.exit_code, Some(1));
    assert!(
        fail.stderr_tail
            .contains("the bandwidth step failed on fail1"),
        "{}",
        fail.stderr_tail
    );
    assert!(
        fail.message.contains("the bandwidth step failed on fail1"),
        "{}",
        fail.message
    );

    let hang = read_status(fleet.path(), "hang1").unwrap();
    assert_eq!(hang.state, NodeState::Timeout, "{hang:#?}");
    assert!(hang.message.contains("timeout"), "{}", hang.message);
    let gc = common::grandchild(state.path(), "hang1");
    assert!(
        numalab_fleet::process_gone(gc, Duration::from_secs(5)),
        "hang1's grandchild {gc} survived"
    );

    let wedge = read_status(fleet.path(), "wedge1").unwrap();
    assert_eq!(wedge.state, NodeState::Timeout, "{wedge:#?}");
    assert!(
        wedge
            .message
            .contains("the launcher's process group was killed"),
        "{}",
        wedge.message
    );
    let gc = common::grandchild(state.path(), "wedge");
    assert!(
        numalab_fleet::process_gone(gc, Duration::from_secs(5)),
        "wedge1's grandchild {gc} survived"
    );

    let mut first = common::launches(state.path());
    first.sort();
    assert_eq!(first, ["fail1", "hang1", "ok1", "ok2"]);

    // Rerun: only the nodes not done run again.
    std::fs::write(state.path().join("fixed"), b"").unwrap();
    std::fs::remove_file(state.path().join("launches")).unwrap();
    let s = run_fleet(&o, &()).unwrap();
    assert_eq!((s.done, s.resumed), (4, 2), "{s:#?}");
    let mut again = common::launches(state.path());
    again.sort();
    assert_eq!(again, ["fail1", "hang1"]);
    assert_eq!(read_status(fleet.path(), "fail1").unwrap().attempt, 2);
    common::assert_gathered(fleet.path(), "fail1");

    // Another command is refused; --restart moves the old nodes aside.
    let mut other = o.clone();
    other.command = vec!["mem".into(), "bandwidth".into()];
    let e = run_fleet(&other, &()).unwrap_err().to_string();
    assert!(
        e.contains("--restart") && e.contains("evaluate --quick"),
        "{e}"
    );
    other.restart = true;
    other.nodes = Some("ok3".into());
    let s = run_fleet(&other, &()).unwrap();
    assert_eq!(s.done, 1);
    let aside = std::fs::read_dir(fleet.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("nodes.previous-")
        })
        .count();
    assert_eq!(aside, 1);
    let m = numalab_fleet::read_manifest(fleet.path()).unwrap().unwrap();
    assert_eq!(m.command, ["mem", "bandwidth"]);
    assert_eq!(m.nodes, ["ok3"]);
}

#[test]
fn cancel_stops_running_nodes() {
    let state = tempfile::tempdir().unwrap();
    let fleet = tempfile::tempdir().unwrap();
    let numalab = common::fake_numalab(state.path());
    let mut o = options(fleet.path(), &numalab, "hang1,ok1");
    o.parallel = 1;
    o.timeout = Duration::from_secs(600);
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    o.cancel = Some(cancel.clone());
    let t0 = Instant::now();
    let s = std::thread::scope(|sc| {
        let run = sc.spawn(|| run_fleet(&o, &()));
        // Wait (bounded) until the hanging node's command runs, then cancel.
        let gc = state.path().join("hang1.grandchild");
        while !gc.exists() && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
        }
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        run.join().unwrap().unwrap()
    });
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    assert!(s.interrupted, "{s:#?}");
    assert_eq!(s.nodes.len(), 1, "ok1 never started: {s:#?}");
    let st = read_status(fleet.path(), "hang1").unwrap();
    assert_eq!(st.state, NodeState::Failed);
    assert!(st.message.starts_with("interrupted"), "{}", st.message);
    let gc = common::grandchild(state.path(), "hang1");
    assert!(
        numalab_fleet::process_gone(gc, Duration::from_secs(10)),
        "grandchild {gc} survived"
    );
    assert!(read_status(fleet.path(), "ok1").is_none());
}

#[test]
fn missing_numalab_is_named() {
    let fleet = tempfile::tempdir().unwrap();
    let missing = fleet.path().join("no/such/numalab");
    let o = options(fleet.path(), &missing, "x1");
    let s = run_fleet(&o, &()).unwrap();
    assert_eq!(s.launch_failed, 1, "{s:#?}");
    let st = read_status(fleet.path(), "x1").unwrap();
    assert_eq!(
        st.message,
        format!(
            "numalab is not at {} on node x1: install it at the same path on every node",
            missing.display()
        )
    );
}

#[test]
fn shared_folder() {
    let state = tempfile::tempdir().unwrap();
    let fleet = tempfile::tempdir().unwrap();
    let shared = tempfile::tempdir().unwrap();
    let numalab = common::fake_numalab(state.path());
    let mut o = options(fleet.path(), &numalab, "ok1");
    o.shared = Some(shared.path().to_path_buf());
    let s = run_fleet(&o, &()).unwrap();
    assert_eq!(s.done, 1, "{s:#?}");
    common::assert_gathered(fleet.path(), "ok1");
    assert!(shared.path().join("ok1/results.jsonl").is_file());
}

/// The lines a run says beside its bar.
#[derive(Default)]
struct Said(std::sync::Mutex<Vec<String>>);

impl numalab_fleet::Progress for Said {
    fn node_problem(&self, line: &str) {
        self.0.lock().unwrap().push(line.to_string());
    }
}

/// numalab missing on 6 nodes is one line at once and one at the end (how many more
/// nodes, the next three, what to do), not 6; a node that failed otherwise is its own
/// line.
#[test]
fn the_same_problem_on_many_nodes_is_said_once_then_folded() {
    let state = tempfile::tempdir().unwrap();
    let fleet = tempfile::tempdir().unwrap();
    let missing = fleet.path().join("no/such/numalab");
    let mut o = options(fleet.path(), &missing, "x1,x2,x3,x4,x5,x6");
    o.parallel = 1;
    let said = Said::default();
    let s = run_fleet(&o, &said).unwrap();
    assert_eq!(s.launch_failed, 6, "{s:#?}");
    let lines = said.0.into_inner().unwrap();
    let not_at = |n: &str| format!("numalab is not at {} on node {n}", missing.display());
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(
        lines[0],
        format!(
            "x1: launch-failed: {}: install it at the same path on every node",
            not_at("x1")
        )
    );
    let folded = &lines[1];
    assert!(
        folded.starts_with(
            "launch-failed: 5 more nodes had this (6 in all; the first is above); the next: x2: "
        ),
        "{folded}"
    );
    let at = |n: &str| folded.find(&format!("{n}: {}", not_at(n)));
    assert!(at("x2") < at("x3") && at("x3") < at("x4"), "{folded}");
    assert_eq!((at("x5"), at("x6")), (None, None), "{folded}");
    assert!(
        folded.ends_with("(see the node's status.json for the launcher's words; run the same command again to retry the nodes not done)"),
        "{folded}"
    );
    // Another state is said on its own.
    let numalab = common::fake_numalab(state.path());
    let o = options(fleet.path(), &numalab, "fail1,fail2");
    let mut o = o;
    o.restart = true;
    o.parallel = 1;
    let said = Said::default();
    let s = run_fleet(&o, &said).unwrap();
    assert_eq!(s.failed, 2, "{s:#?}");
    let lines = said.0.into_inner().unwrap();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines[0].starts_with("fail1: failed: "), "{}", lines[0]);
    assert!(
        lines[1].starts_with(
            "failed: 1 more node had this (2 in all; the first is above); the next: fail2: "
        ),
        "{}",
        lines[1]
    );
}
