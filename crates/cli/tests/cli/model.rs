//! `numalab model`: exit codes and messages for bad input, the JSON contracts of `show`
//! and `run` (read with independent structs), resuming from a journal, the SVG.

use crate::common::{self, assert_ok, fixture, numalab, p, refused, RecordJson};

#[test]
fn error_table() {
    // (args, exit code, text expected on stderr)
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["model", "show", "nosuch"], 3, "no such preset"),
        (
            vec!["model", "show", "mesh:nosuch"],
            3,
            "no variant 'nosuch'",
        ),
        (
            vec!["model", "show", "mesh", "--set", "noc.colz=3"],
            2,
            "unknown field `colz`",
        ),
        (
            vec!["model", "show", "mesh", "--set", "nocc.cols=3"],
            2,
            "unknown key 'nocc'",
        ),
        (
            vec!["model", "show", "mesh", "--set", "noc.cols"],
            2,
            "expected KEY=VALUE",
        ),
        (
            vec!["model", "show", "neoverse-v1-64", "--set", "cores.count=63"],
            3,
            "cores.count = 63",
        ),
        (
            vec!["model", "show", "/nonexistent/p.toml"],
            3,
            "cannot read preset file",
        ),
        (
            vec!["model", "run", "mesh", "--experiment", "nope"],
            2,
            "invalid value",
        ),
        (
            vec![
                "model",
                "run",
                "mesh",
                "--experiment",
                "uniform",
                "--jobs",
                "0",
            ],
            2,
            "--jobs must be at least 1",
        ),
        (
            vec![
                "model",
                "run",
                "knl-7210",
                "--experiment",
                "latency-heatmap",
                "--target",
                "slice:99",
            ],
            2,
            "slice 99 does not exist",
        ),
        (
            vec![
                "model",
                "run",
                "knl-7210",
                "--experiment",
                "latency-heatmap",
                "--target",
                "tile:1",
            ],
            2,
            "expected slice:N or mc:N",
        ),
        (
            vec!["model", "run", "knl-7210", "--experiment", "transpose"],
            2,
            "square mesh",
        ),
        (
            vec![
                "model",
                "run",
                "mesh",
                "--experiment",
                "stream-triad",
                "--cores",
                "70",
            ],
            2,
            "core 70 does not exist",
        ),
        (
            vec![
                "model",
                "run",
                "mesh",
                "--experiment",
                "stream-triad",
                "--data-node",
                "5",
            ],
            2,
            "node 5 does not exist",
        ),
        (
            vec![
                "model",
                "run",
                "mesh",
                "--experiment",
                "uniform",
                "--loads",
                "x",
            ],
            2,
            "--loads x",
        ),
    ];
    for (args, code, text) in cases {
        refused(&args, code, text);
    }
}

#[derive(serde::Deserialize)]
struct ShowJson {
    preset: String,
    variants_applied: Vec<String>,
    values: Vec<ValueJson>,
    resolved: ResolvedJson,
}

#[derive(serde::Deserialize)]
struct ValueJson {
    key: String,
    source: String,
}

#[derive(serde::Deserialize)]
struct ResolvedJson {
    cores: usize,
    numa_nodes: Vec<serde_json::Value>,
}

#[test]
fn show_json_lists_every_value_with_its_source() {
    let out = numalab(&[
        "model",
        "show",
        "knl-7210:snc4",
        "--set",
        "cores.max_outstanding=20",
        "--json",
    ]);
    assert_ok(&out);
    let s: ShowJson = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s.preset, "knl-7210:snc4");
    assert_eq!(s.variants_applied, vec!["snc4"]);
    assert_eq!(s.resolved.cores, 64);
    assert_eq!(s.resolved.numa_nodes.len(), 8);
    assert!(s.values.len() > 30);
    for v in &s.values {
        assert!(
            !v.source.is_empty() && v.source != "(no source)",
            "{}",
            v.key
        );
    }
    let mo = s
        .values
        .iter()
        .find(|v| v.key == "cores.max_outstanding")
        .unwrap();
    assert_eq!(mo.source, "command line --set");
    let routing = s.values.iter().find(|v| v.key == "noc.routing").unwrap();
    assert!(routing.source.contains("YX"), "{}", routing.source);
}

/// The bundle contract, read independently of numalab's types.
#[derive(serde::Deserialize)]
struct BundleJson {
    envelope: EnvelopeJson,
    records: Vec<RecordJson>,
}
#[derive(serde::Deserialize)]
struct EnvelopeJson {
    origin: String,
    host: HostJson,
}
#[derive(serde::Deserialize)]
struct HostJson {
    topology: TopologyJson,
}
#[derive(serde::Deserialize)]
struct TopologyJson {
    source: serde_json::Value,
    summary: serde_json::Value,
}

#[test]
fn run_json_is_a_modeled_bundle() {
    let out = numalab(&[
        "model",
        "run",
        "neoverse-v1-64",
        "--experiment",
        "stream-triad",
        "--data-node",
        "0,3",
        "--engine",
        "check",
        "--cycles",
        "4000",
        "--json",
    ]);
    assert_ok(&out);
    let b: BundleJson = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(b.envelope.origin, "modeled");
    assert_eq!(b.envelope.host.topology.source["kind"], "model");
    assert_eq!(b.envelope.host.topology.source["preset"], "neoverse-v1-64");
    assert_eq!(b.envelope.host.topology.summary["cores"], 64);
    assert_eq!(b.envelope.host.topology.summary["numa_nodes"], 4);
    let kinds: Vec<&str> = b.records.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "model.stream_triad").count(),
        4
    );
    assert_eq!(kinds.iter().filter(|k| **k == "model.check").count(), 2);
    for r in &b.records {
        assert_eq!(r.origin, "modeled");
        assert!(r.key.starts_with("model/"));
    }
    let t = b
        .records
        .iter()
        .find(|r| r.kind == "model.stream_triad")
        .unwrap();
    assert!(t.data["bandwidth_gbps"].as_f64().unwrap() > 10.0);
    assert_eq!(t.data["vns"].as_array().unwrap().len(), 4);
}

/// `--engine check` on synthetic traffic: the analytic, input-queued and output-queued
/// engines side by side, in JSON and in the text table.
#[test]
fn check_puts_the_three_engines_side_by_side() {
    let args = |json: bool| {
        let mut a = vec![
            "model",
            "run",
            "mesh",
            "--set",
            "noc.cols=4",
            "--set",
            "noc.rows=4",
            "--experiment",
            "uniform",
            "--engine",
            "check",
            "--loads",
            "0.3,0.9",
            "--cycles",
            "2000",
            "--warmup",
            "200",
        ];
        if json {
            a.push("--json");
        }
        numalab(&a)
    };
    let out = args(true);
    assert_ok(&out);
    let b: BundleJson = serde_json::from_slice(&out.stdout).unwrap();
    let engines: Vec<&str> = b
        .records
        .iter()
        .filter(|r| r.kind == "model.traffic")
        .map(|r| r.data["engine"].as_str().unwrap())
        .collect();
    assert_eq!(engines, ["analytic", "des", "des-output-queued"]);
    let c = b.records.iter().find(|r| r.kind == "model.check").unwrap();
    assert_eq!(c.data["router"], "input-queued");
    assert_eq!(c.data["other_router"], "output-queued");
    let m = &c.data["metrics"][1];
    assert!(
        m["name"].as_str().unwrap().contains("90% of saturation"),
        "{m}"
    );
    assert!(m["other_router_des"].as_f64().unwrap() > 0.0);
    let text = String::from_utf8(args(false).stdout).unwrap();
    assert!(text.contains("discrete-event output-queued"), "{text}");
    assert!(text.contains("analytic input-queued"), "{text}");
}

#[test]
fn rerun_with_the_same_out_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    let d = dir.to_str().unwrap();
    let args = [
        "model",
        "run",
        "mesh",
        "--experiment",
        "uniform",
        "--loads",
        "0.2,0.5",
        "--out",
        d,
    ];
    let first = numalab(&args);
    assert_ok(&first);
    let journal = common::journal(&dir);
    assert_eq!(journal.lines().count(), 2, "{journal}");
    let second = numalab(&args);
    assert!(second.status.success());
    let again = common::journal(&dir);
    assert_eq!(again, journal, "a rerun adds nothing already there");
    // The table is printed from the journal's records.
    assert!(String::from_utf8_lossy(&second.stdout).contains("uniform traffic on mesh"));
}

#[test]
fn heatmap_svg_and_table() {
    let tmp = tempfile::tempdir().unwrap();
    let svg = tmp.path().join("knl.svg");
    let out = numalab(&[
        "model",
        "run",
        "knl-7210",
        "--experiment",
        "latency-heatmap",
        "--target",
        "slice:0",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("spread 32.0 cycles"), "{stdout}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    assert!(text.contains("heatmap to slice:0"));
    assert_eq!(text.matches("<title>core ").count(), 64);
}

#[test]
fn list_names_every_preset() {
    let out = numalab(&["model", "list"]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    for p in [
        "mesh",
        "neoverse-v1-64",
        "knl-7210",
        "altra-q80",
        "altra-q80-2s",
    ] {
        assert!(s.contains(p), "{p}");
    }
}

#[test]
fn calibrate_refuses_what_it_cannot_fit() {
    let vm = fixture("bundles", "vm-quick-run-1");
    let policy = fixture("bundles", "vm-policy");
    let tmp = tempfile::tempdir().unwrap();
    // (args, exit code, text expected on stderr)
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["model", "calibrate", &vm, "--preset", "mesh:slc-node"],
            3,
            "has 1 NUMA node(s), preset mesh:slc-node has 4",
        ),
        (
            vec!["model", "calibrate", &policy, "--preset", "mesh"],
            3,
            "no record to calibrate to (found 1 harness.policy, 12 harness.run)",
        ),
        (
            vec!["model", "calibrate", "/nonexistent/run", "--preset", "mesh"],
            3,
            "/nonexistent/run",
        ),
        (
            vec![
                "model",
                "calibrate",
                &vm,
                "--preset",
                "mesh",
                "--save",
                p(tmp.path()),
            ],
            2,
            "this is a folder",
        ),
        (vec!["model", "calibrate", &vm], 2, "--preset"),
        (vec!["model", "calibrate", "--preset", "mesh"], 2, "BUNDLE"),
    ];
    for (args, code, text) in cases {
        refused(&args, code, text);
    }
}

#[test]
fn calibrate_saves_a_preset_that_show_and_run_load() {
    // The real two-CPU VM bundle against the one-node mesh: memory latency, router and
    // the depth of outstanding requests are fitted; the file must load and say so.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("vm.toml");
    let out_dir = tmp.path().join("out");
    let vm = fixture("bundles", "vm-quick-run-1");
    let args = [
        "model",
        "calibrate",
        &vm,
        "--preset",
        "mesh",
        "--save",
        p(&file),
        "--out",
        p(&out_dir),
    ];
    let out = numalab(&args);
    assert_ok(&out);
    let text = common::stdout(&out);
    assert!(text.contains("RMS residual mem.latency"), "{text}");
    assert!(text.contains("not-identifiable"), "{text}");
    // The record landed in the --out folder.
    let line = common::journal(&out_dir)
        .lines()
        .find(|l| l.contains("\"model.calibration\""))
        .expect("a model.calibration record")
        .to_string();
    let rec: serde_json::Value = serde_json::from_str(&line).unwrap();
    let params = rec["data"]["parameters"].as_array().unwrap();
    let mem = params
        .iter()
        .find(|p| p["key"] == "memory.ddr.latency_ns")
        .unwrap();
    assert_eq!(mem["status"], "fitted");
    let saved = mem["saved"].as_f64().unwrap();
    assert_eq!(rec["data"]["preset_file"], p(&file));
    // The measured idle latency is 148 ns; the mesh starts at 60 ns of DRAM.
    let fig = rec["data"]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "mem.latency")
        .unwrap();
    assert!(fig["residual"].as_f64().unwrap().abs() < 2.0, "{fig}");
    assert!(fig["modeled_before"].as_f64().unwrap() < 100.0, "{fig}");
    // `model show FILE` loads it, with the fitted value and its source.
    let shown: serde_json::Value = common::json(&numalab(&["model", "show", p(&file), "--json"]));
    let v = shown["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["key"] == "memory.ddr.latency_ns")
        .unwrap();
    assert_eq!(v["value"].as_str().unwrap().parse::<f64>().unwrap(), saved);
    assert!(
        v["source"].as_str().unwrap().starts_with("calibrated on"),
        "{v}"
    );
    assert_eq!(shown["name"], "mesh-calibrated");
    // And a what-if runs on it: twice the channels.
    let run = numalab(&[
        "model",
        "run",
        p(&file),
        "--experiment",
        "stream-triad",
        "--set",
        "memory.ddr.channels_per_controller=4",
        "--json",
    ]);
    assert_ok(&run);
    // --json prints the bundle with the record.
    let b: serde_json::Value = common::json(&numalab(&[
        "model",
        "calibrate",
        &vm,
        "--preset",
        "mesh",
        "--json",
    ]));
    assert!(b["records"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["kind"] == "model.calibration"));
}
