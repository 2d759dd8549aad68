//! `numalab workload run`, run for real (short, small graph): the JSON contract read
//! with independent structs, the metric line other harnesses parse, resuming, Ctrl-C,
//! and the error table. Structure and sanity only, never wall-clock figures.

use crate::common::{self, assert_ok, numalab, refused, WarningJson};
use std::process::{Command, Stdio};

const SHORT: [&str; 10] = [
    "workload",
    "run",
    "--threads",
    "1",
    "--duration",
    "1",
    "--warmup",
    "0.2",
    "--graph-nodes",
    "20k",
];

/// The documented parts of a `workload run --json` bundle, read without numalab's types.
#[derive(serde::Deserialize)]
struct BundleJson {
    schema_version: u32,
    envelope: EnvelopeJson,
    records: Vec<RecordJson>,
}

#[derive(serde::Deserialize)]
struct EnvelopeJson {
    config: serde_json::Value,
}

#[derive(serde::Deserialize)]
struct RecordJson {
    key: String,
    kind: String,
    data: RunJson,
    #[serde(default)]
    warnings: Vec<WarningJson>,
}

#[derive(serde::Deserialize)]
struct RunJson {
    threads: usize,
    placement: String,
    mode: String,
    requests: u64,
    requests_per_s: f64,
    requests_per_s_per_thread: f64,
    measured_s: f64,
    latency: LatencyJson,
    cpu_utilization: f64,
    pages_per_node: Vec<(u32, u64)>,
    power_watts: Option<f64>,
    power_unavailable_reason: Option<String>,
    interrupted: bool,
    graph: GraphJson,
    memory: MemoryJson,
}

#[derive(serde::Deserialize)]
struct LatencyJson {
    p50_ns: IntervalJson,
    p95_ns: IntervalJson,
    p99_ns: IntervalJson,
}

#[derive(serde::Deserialize)]
struct IntervalJson {
    estimate: f64,
    low: f64,
    high: f64,
    seed: u64,
}

#[derive(serde::Deserialize)]
struct GraphJson {
    nodes: u32,
    fingerprint: String,
}

#[derive(serde::Deserialize)]
struct MemoryJson {
    numa_nodes: usize,
    modes_equivalent_here: bool,
}

#[test]
fn json_bundle_contract() {
    let mut args = SHORT.to_vec();
    args.extend([
        "--mode",
        "shared-interleaved",
        "--placement",
        "scatter",
        "--json",
    ]);
    let out = numalab(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let b: BundleJson = serde_json::from_slice(&out.stdout).expect("one JSON bundle on stdout");
    assert_eq!(b.schema_version, 1);
    assert_eq!(b.envelope.config["mode"], "shared-interleaved");
    assert_eq!(b.records.len(), 1);
    let r = &b.records[0];
    assert_eq!(r.kind, "workload.run");
    assert!(
        r.key
            .starts_with("workload/run/shared-interleaved/scatter/t1/"),
        "{}",
        r.key
    );
    let d = &r.data;
    assert_eq!(
        (d.threads, d.placement.as_str(), d.mode.as_str()),
        (1, "scatter", "shared-interleaved")
    );
    assert!(d.requests > 0 && !d.interrupted);
    assert!((d.requests_per_s - d.requests as f64 / d.measured_s).abs() < 1e-9);
    assert_eq!(d.requests_per_s_per_thread, d.requests_per_s);
    for iv in [&d.latency.p50_ns, &d.latency.p95_ns, &d.latency.p99_ns] {
        assert!(iv.low <= iv.estimate && iv.estimate <= iv.high);
        assert_ne!(iv.seed, 0);
    }
    assert!(d.latency.p50_ns.estimate <= d.latency.p99_ns.estimate);
    assert!(d.cpu_utilization > 0.0);
    assert!(!d.pages_per_node.is_empty());
    assert_ne!(
        d.power_watts.is_some(),
        d.power_unavailable_reason.is_some()
    );
    assert_eq!(d.graph.nodes, 20_000);
    assert_eq!(d.graph.fingerprint.len(), 16);
    let single = d.memory.numa_nodes == 1;
    assert_eq!(d.memory.modes_equivalent_here, single);
    assert_eq!(
        r.warnings.iter().any(|w| w.code == "single_numa_node"),
        single
    );
    // With --json, warnings travel in the bundle, not on stderr.
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn metric_line_and_human_output() {
    let mut args = SHORT.to_vec();
    args.push("--metric-line");
    let out = numalab(&args);
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one line on stdout: {stdout}");
    let fields: std::collections::HashMap<&str, &str> = lines[0]
        .split(' ')
        .map(|kv| kv.split_once('=').expect("key=value"))
        .collect();
    let rps: f64 = fields["requests_per_s"].parse().unwrap();
    assert!(rps > 0.0, "{stdout}");
    assert_eq!(fields["threads"], "1");
    assert_eq!(fields["interrupted"], "false");
    for k in [
        "requests_per_s_per_thread",
        "latency_p50_ns",
        "latency_p99_ns",
        "cpu_utilization",
    ] {
        let _: f64 = fields[k]
            .parse()
            .unwrap_or_else(|_| panic!("{k} in {stdout}"));
    }

    let out = numalab(&SHORT);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "requests/s",
        "p50",
        "p99",
        "pages per NUMA node",
        "power",
        "per thread",
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
}

#[test]
fn a_rerun_into_the_same_folder_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let mut args = SHORT.to_vec();
    args.extend(["--out", dir.to_str().unwrap(), "--metric-line"]);
    let first = numalab(&args);
    assert_ok(&first);
    let again = numalab(&args);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already in"));
    // The metric line is repeated from the journal, unchanged.
    assert_eq!(first.stdout, again.stdout);
    let journal = common::journal(&dir);
    assert_eq!(
        journal
            .lines()
            .filter(|l| l.contains("\"workload.run\""))
            .count(),
        1
    );
}

#[test]
fn ctrl_c_keeps_the_partial_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args([
            "workload",
            "run",
            "--threads",
            "1",
            "--duration",
            "60",
            "--warmup",
            "0.2",
            "--graph-nodes",
            "20k",
            "--json",
            "--out",
        ])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the journal exists (the run has started), then some more.
    let t = std::time::Instant::now();
    while !dir.join("results.jsonl").exists() && t.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_secs(3));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("partial result was kept"), "{stderr}");
    let b: serde_json::Value = serde_json::from_slice(&out.stdout).expect("bundle printed");
    let d = &b["records"][0]["data"];
    assert_eq!(d["interrupted"], true);
    assert!(d["measured_s"].as_f64().unwrap() < 60.0);
    let journal = common::journal(&dir);
    assert!(
        journal.contains("\"interrupted\":true"),
        "the journal kept the partial record"
    );
}

#[test]
fn error_table() {
    let n = common::online_pus();
    let too_many = (n + 1).to_string();
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["workload", "run", "--threads", "0"], 2, "--threads 0"),
        (vec!["workload", "run", "--threads", &too_many], 2, "PUs"),
        (vec!["workload", "run", "--mix", "1.5"], 2, "--mix"),
        (vec!["workload", "run", "--duration", "0"], 2, "--duration"),
        (
            vec!["workload", "run", "--graph-nodes", "3"],
            2,
            "--graph-nodes",
        ),
        (
            vec!["workload", "run", "--graph-nodes", "lots"],
            2,
            "not a node count",
        ),
        (
            vec!["workload", "run", "--mode", "private"],
            2,
            "invalid value",
        ),
        (
            vec!["workload", "run", "--placement", "spread"],
            2,
            "invalid value",
        ),
        (
            vec!["workload", "run", "--json", "--metric-line"],
            2,
            "cannot be used with",
        ),
        (vec!["workload"], 2, "Usage"),
    ];
    for (args, code, text) in cases {
        refused(&args, code, text);
    }
}
