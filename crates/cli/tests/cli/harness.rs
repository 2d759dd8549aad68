//! `numalab scale|policy|sweep` through the real binary: bad input gets one clear line
//! and the documented exit code before anything runs; real studies write their records
//! (read back with independent structs), tables and SVG charts.

use crate::common::{assert_ok, journal, numalab, refused, BundleJson, RecordJson};

#[test]
fn bad_input_is_refused_before_the_study_starts() {
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["scale", "--metric", "regex:rps=[0-9]+", "--", "true"],
            2,
            "capture group",
        ),
        (
            vec!["scale", "--metric", "speed", "--", "true"],
            2,
            "use wall",
        ),
        (
            vec!["scale", "--threads", "100000", "--", "true"],
            2,
            "more than the",
        ),
        (
            vec!["scale", "--threads", "x", "--", "true"],
            2,
            "--threads",
        ),
        (
            vec!["scale", "--placement", "spread", "--", "true"],
            2,
            "unknown placement",
        ),
        (
            vec!["scale", "--", "numalab-no-such-program"],
            2,
            "command not found",
        ),
        (
            vec!["scale", "--", "echo", "{thread}"],
            2,
            "unknown placeholder {thread}",
        ),
        (
            vec!["scale", "--repeat", "0", "--", "true"],
            2,
            "--repeat 0",
        ),
        (
            vec!["scale", "--env", "NOEQUALS", "--", "true"],
            2,
            "NAME=VALUE",
        ),
        (vec!["scale"], 2, "required"),
        (vec!["policy", "--node", "99", "--", "true"], 2, "node 99"),
        (
            vec!["policy", "--policies", "fancy", "--", "true"],
            2,
            "unknown policy",
        ),
        (
            vec!["sweep", "--param", "X=1,2", "--", "true"],
            2,
            "{X} appears neither",
        ),
        (vec!["sweep", "--param", "X", "--", "true"], 2, "NAME=V1,V2"),
    ];
    for (args, code, text) in cases {
        refused(&args, code, text);
    }
}

#[test]
fn a_metric_that_never_matches_shows_the_output_and_keeps_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = numalab(&[
        "scale",
        "--metric",
        "regex:rps=([0-9]+)",
        "--out",
        out_dir.to_str().unwrap(),
        "--",
        "echo",
        "nothing-useful-here",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nothing-useful-here"), "{stderr}");
    let journal = journal(&out_dir);
    assert_eq!(
        journal.lines().count(),
        2,
        "envelope + the failed pilot run"
    );
}

#[test]
fn scale_json_contract_table_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("scale.svg");
    let out = numalab(&[
        "scale",
        "--repeat",
        "2",
        "--threads",
        "1",
        "--metric",
        "regex:requests_per_s=([0-9.]+)",
        "--json",
        "--svg",
        svg.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "echo requests_per_s=$((100*{threads}))",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let b: BundleJson = serde_json::from_slice(&out.stdout).unwrap();
    let runs: Vec<&RecordJson> = b
        .records
        .iter()
        .filter(|r| r.kind == "harness.run")
        .collect();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].data["metric_value"], 100.0);
    assert_eq!(runs[0].data["threads"], 1);
    assert!(runs[0].data["outcome"]["wall_ns"].as_u64().unwrap() > 0);
    let summary = b
        .records
        .iter()
        .find(|r| r.kind == "harness.scale")
        .unwrap();
    assert_eq!(
        summary.data["points"][0]["stats"]["throughput"]["estimate"],
        100.0
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("speedup of sh -c echo"));
    assert!(svg.trim_end().ends_with("</svg>"));
}

#[test]
fn policy_and_sweep_print_their_tables() {
    let out = numalab(&[
        "policy",
        "--repeat",
        "1",
        "--sample-interval",
        "20",
        "--",
        "sh",
        "-c",
        "x=$(seq 1 5000); sleep 0.2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for p in ["local", "interleave", "bind", "preferred", "recommendation"] {
        assert!(stdout.contains(p), "{p}: {stdout}");
    }
    let out = numalab(&[
        "sweep",
        "--repeat",
        "2",
        "--param",
        "N=1,3",
        "--metric",
        "regex:rate=([0-9]+)",
        "--",
        "echo",
        "rate={N}",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("best: N=3 at 3.00x"), "{stdout}");
}

#[test]
fn failed_runs_give_the_partial_exit_code() {
    // Some runs failed, others measured: partial (5).
    let out = numalab(&[
        "scale",
        "--repeat",
        "1",
        "--threads",
        "1,2",
        "--",
        "sh",
        "-c",
        "test {threads} = 1 || exit 3",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stdout.contains("exited with status 3"), "{stdout}");
    // Every run failed: nothing was measured, a failure (1), not "partial".
    let out = numalab(&[
        "scale",
        "--repeat",
        "1",
        "--threads",
        "1",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("every run failed (1 of 1)"), "{stderr}");
}

#[test]
fn sweep_attaches_a_profile_to_each_point() {
    let out = numalab(&[
        "sweep",
        "--param",
        "N=10,20",
        "--repeat",
        "2",
        "--profile",
        "--json",
        "--",
        "sh",
        "-c",
        "i=0; while [ $i -lt {N} ]; do i=$((i+1)); done",
    ]);
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let records = v["records"].as_array().unwrap();
    let profiles: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["kind"] == "pmu.profile")
        .collect();
    assert_eq!(profiles.len(), 2, "one profile per value");
    // Each profile counted the point's own command (software events work everywhere).
    for p in &profiles {
        let key = p["key"].as_str().unwrap();
        assert!(key.starts_with("sweep/") && key.ends_with("/hook"), "{key}");
        let argv = serde_json::to_string(&p["data"]).unwrap();
        assert!(
            argv.contains("while"),
            "the profile is not of the swept command"
        );
    }
}

/// A command that starts a child in a session of its own (`setsid`) and then hangs: the
/// timeout ends the whole tree, the escaped child included, and numalab does not wait
/// for it (the run would otherwise last 300 s).
#[test]
fn a_timeout_ends_children_that_left_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    let script = format!(
        "setsid sleep 301 & echo $! > {}; sleep 300",
        pidfile.display()
    );
    let started = std::time::Instant::now();
    let out = numalab(&[
        "scale",
        "--threads",
        "1",
        "--repeat",
        "1",
        "--timeout",
        "2",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let escaped: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Gone, or a zombie nobody reaped yet (never running).
    let running = || {
        std::fs::read_to_string(format!("/proc/{escaped}/stat")).is_ok_and(|s| {
            let state = s
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            state.is_some_and(|st| st != "Z")
        })
    };
    let still_running = running();
    if still_running {
        // SAFETY: cleaning up the process this test started.
        unsafe { libc::kill(escaped, libc::SIGKILL) };
    }
    assert!(
        took < std::time::Duration::from_secs(15),
        "took {took:?}: {stderr}"
    );
    assert!(
        !still_running,
        "the setsid'd sleep {escaped} survived: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
