//! Synthetic fleets built from a real bundle (tests/fixtures/bundles/vm-evaluate): its
//! envelope and its two-thread triad record, with the GB/s of each node set by hand.

use super::*;
use crate::load::{load, Loaded};
use numalab_schema::Bundle;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const TRIAD_ALL: &str = "mem.bandwidth.triad.all";

fn template() -> &'static Bundle {
    static T: OnceLock<Bundle> = OnceLock::new();
    T.get_or_init(|| {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/bundles/vm-evaluate/results.jsonl");
        let mut b = load(&p).unwrap().bundle;
        b.records
            .retain(|r| r.key == "mem/bandwidth/cpus-0-1/first-touch/t2/triad");
        assert_eq!(b.records.len(), 1);
        b
    })
}

/// A node's bundle: the triad of every thread at these GB/s (one per repetition).
fn bundle(host: &str, gbps: &[f64]) -> Bundle {
    let mut b = template().clone();
    b.envelope.host.hostname = Some(host.into());
    let r = &mut b.records[0];
    let bytes = r.data["stream_bytes_per_sample"].as_f64().unwrap();
    r.data["sample_ns"] = serde_json::json!(gbps.iter().map(|g| bytes / g).collect::<Vec<_>>());
    b
}

/// Three repetitions around `v` (v - 0.1, v, v + 0.1): median v, own spread 0.148.
fn reps(v: f64) -> Vec<f64> {
    vec![v - 0.1, v, v + 0.1]
}

fn node(name: &str, b: Bundle, state: &str) -> FleetNode {
    FleetNode {
        name: name.into(),
        path: PathBuf::new(),
        status: Some(NodeStatus {
            state: Some(state.into()),
            exit_code: Some(if state == "done" { 0 } else { 1 }),
            ..Default::default()
        }),
        facts: Some(NodeFacts::of(&Loaded::from_bundle(name, b))),
        problems: Vec::new(),
    }
}

fn fleet(nodes: Vec<FleetNode>) -> FleetInput {
    FleetInput {
        root: PathBuf::from("FLEET"),
        nodes,
    }
}

/// n1..n6 at 100, 100.2, 99.8, 102 (2% high), 100, 80 (20% low) GB/s.
const SIX: [f64; 6] = [100.0, 100.2, 99.8, 102.0, 100.0, 80.0];

/// The [`SIX`] nodes.
fn six() -> FleetInput {
    fleet(
        SIX.iter()
            .enumerate()
            .map(|(i, v)| {
                let n = format!("n{}", i + 1);
                node(&n, bundle(&n, &reps(*v)), "done")
            })
            .collect(),
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6 * b.abs().max(1.0)
}

#[test]
fn fleet_a_node_with_20_percent_less_bandwidth_is_flagged_and_a_2_percent_one_is_not() {
    let r = analyse(&six(), &Options::default());
    assert_eq!(r.version, FLEET_REPORT_VERSION);
    assert_eq!(r.groups.len(), 1);
    let g = &r.groups[0];
    assert!(g.judged);
    let f = g
        .figures
        .iter()
        .find(|f| f.figure.key.id == TRIAD_ALL)
        .unwrap();
    // Values 80, 99.8, 100, 100, 100.2, 102: median 100; deviations 20, 0.2, 0, 0,
    // 0.2, 2: MAD 0.2, sigma 1.4826 x 0.2 = 0.29652.
    assert!(close(f.median, 100.0), "{}", f.median);
    assert!(close(f.mad, 0.2), "{}", f.mad);
    assert!(close(f.sigma, 0.29652), "{}", f.sigma);
    // n4: z = 2 / 0.29652 = 6.745 (past 3.5) but 2% is under the 5% floor.
    let n4 = f.nodes.iter().find(|n| n.node == "n4").unwrap();
    assert!(close(n4.z.unwrap(), 2.0 / 0.29652));
    assert!(close(n4.deviation.unwrap(), 0.02));
    assert_eq!(n4.outlier, None);
    // n6: z = -20 / 0.29652 = -67.45, 20% low, own spread 0.148 << 20.
    let ours: Vec<&Outlier> = r.outliers.iter().collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
    let o = ours[0];
    assert_eq!(o.node, "n6");
    assert_eq!(o.direction, Direction::Worse);
    assert_eq!(o.figure.key.id, TRIAD_ALL);
    assert!(close(o.value, 80.0));
    assert!(close(o.median, 100.0));
    assert!(close(o.z.unwrap(), -20.0 / 0.29652), "{:?}", o.z);
    assert!(close(o.deviation_pct, -20.0), "{}", o.deviation_pct);
    assert!(close(o.own_spread.unwrap(), 1.4826 * 0.1));
    assert_eq!(o.samples.len(), 3);
    assert!(
        o.sentence.starts_with(
            "n6: memory bandwidth, all threads (triad) 80.00 GB/s, 20% below the group median 100.0 GB/s (MAD 0.297 GB/s, robust z -67.4; worse)"
        ),
        "{}",
        o.sentence
    );
    let row = r.nodes.iter().find(|n| n.node == "n6").unwrap();
    assert_eq!((row.worse, row.better), (1, 0));
    assert_eq!(r.headline[0].key.id, TRIAD_ALL);
    assert!(close(row.headline[0].unwrap(), 80.0));
}

#[test]
fn fleet_better_nodes_are_reported_after_worse_ones_and_latency_direction_counts() {
    let mut f = six();
    // n2 becomes 15% faster: values 80, 99.8, 100, 100, 102, 115: median 100, MAD 1
    // (deviations 20, 0.2, 0, 0, 2, 15 -> 0, 0, 0.2, 2, 15, 20: median 1.1).
    f.nodes[1] = node("n2", bundle("n2", &reps(115.0)), "done");
    let r = analyse(&f, &Options::default());
    let dirs: Vec<(&str, Direction)> = r
        .outliers
        .iter()
        .map(|o| (o.node.as_str(), o.direction))
        .collect();
    assert_eq!(dirs, [("n6", Direction::Worse), ("n2", Direction::Better)]);
    let g = &r.groups[0].figures[0];
    assert!(close(g.mad, 1.1), "{}", g.mad);
}

#[test]
fn fleet_mad_zero_falls_back_on_the_relative_floor() {
    // Four nodes exactly at 100, one at 96 (4%: under the floor), one at 90 (10%).
    let values = [100.0, 100.0, 100.0, 100.0, 96.0, 90.0];
    let f = fleet(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let n = format!("m{}", i + 1);
                node(&n, bundle(&n, &[*v, *v, *v]), "done")
            })
            .collect(),
    );
    let r = analyse(&f, &Options::default());
    let fig = &r.groups[0].figures[0];
    assert!(fig.mad_zero);
    assert_eq!(fig.mad, 0.0);
    assert!(fig.nodes.iter().all(|n| n.z.is_none()));
    assert_eq!(r.outliers.len(), 1, "{:?}", r.outliers);
    let o = &r.outliers[0];
    assert_eq!(o.node, "m6");
    assert!(close(o.deviation_pct, -10.0));
    assert!(
        o.sentence
            .contains("MAD 0: judged on the relative floor alone"),
        "{}",
        o.sentence
    );
}

#[test]
fn fleet_a_node_whose_own_repetitions_spread_widely_is_not_flagged() {
    let mut f = six();
    // n6's median is still 80, but its repetitions span 40..120: own spread
    // 1.4826 x 40 = 59.3, and 3 x 59.3 > 20.
    f.nodes[5] = node("n6", bundle("n6", &[40.0, 80.0, 120.0]), "done");
    let r = analyse(&f, &Options::default());
    assert!(r.outliers.is_empty(), "{:?}", r.outliers);
    let n6 = r.groups[0].figures[0]
        .nodes
        .iter()
        .find(|n| n.node == "n6")
        .unwrap();
    assert!(n6.note.as_deref().unwrap().contains("own spread"));
}

#[test]
fn fleet_two_fingerprints_are_never_mixed_and_a_group_of_two_is_too_few() {
    let mut nodes = six().nodes;
    // Two nodes of another machine (64 cores), far slower: they must neither move the
    // first group's median nor be judged against it.
    for (name, v) in [("big1", 50.0), ("big2", 52.0)] {
        let mut b = bundle(name, &reps(v));
        b.envelope.host.topology.as_mut().unwrap().summary.cores = 64;
        nodes.push(node(name, b, "done"));
    }
    let r = analyse(&fleet(nodes), &Options::default());
    assert_eq!(r.groups.len(), 2);
    let (a, b) = (&r.groups[0], &r.groups[1]);
    assert_ne!(a.fingerprint.fingerprint, b.fingerprint.fingerprint);
    assert_eq!(a.nodes.len(), 6);
    assert_eq!(b.nodes, ["big1", "big2"]);
    assert!(close(a.figures[0].median, 100.0));
    assert!(!b.judged);
    assert!(b.figures.is_empty());
    assert!(
        b.verdict.starts_with("too few nodes to judge (2 nodes"),
        "{}",
        b.verdict
    );
    assert!(
        b.differs_from.as_deref().unwrap().contains("cores 64 vs 2"),
        "{:?}",
        b.differs_from
    );
    assert!(r.outliers.iter().all(|o| o.group == a.id && o.node == "n6"));
    let text = render_text(&r);
    assert!(text.contains("too few nodes to judge"), "{text}");
}

#[test]
fn fleet_nodes_with_less_memory_are_a_group_of_their_own_though_the_hash_is_shared() {
    let mut nodes = six().nodes;
    // Two nodes of the same machine with 16 GiB less memory (a DIMM pair missing): the
    // fingerprint's hash leaves memory out, the grouping does not.
    for name in ["m1", "m2"] {
        let mut b = bundle(name, &reps(90.0));
        b.envelope.host.topology.as_mut().unwrap().summary.numa[0].memory_bytes -= 16 << 30;
        nodes.push(node(name, b, "done"));
    }
    let r = analyse(&fleet(nodes), &Options::default());
    assert_eq!(r.groups.len(), 2);
    let (a, b) = (&r.groups[0], &r.groups[1]);
    assert_eq!(a.fingerprint.fingerprint, b.fingerprint.fingerprint);
    assert_eq!(b.nodes, ["m1", "m2"]);
    assert_eq!(
        b.fingerprint.memory_gib.unwrap() + 16,
        a.fingerprint.memory_gib.unwrap()
    );
    assert!(a.key.contains(" GiB / ") && a.key != b.key, "{}", a.key);
    let d = b.differs_from.as_deref().unwrap();
    assert!(d.contains("memory") && d.contains("GiB vs"), "{d}");
    assert!(close(a.figures[0].median, 100.0));
    // Each node's own memory is in its row and in the node table.
    let row = |n: &str| r.nodes.iter().find(|x| x.node == n).unwrap();
    assert_eq!(row("m1").memory_gib, b.fingerprint.memory_gib);
    assert_eq!(row("n1").memory_gib, a.fingerprint.memory_gib);
    let text = render_text(&r);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("m1 "))
        .unwrap();
    let gib = b.fingerprint.memory_gib.unwrap().to_string();
    assert!(line.split_whitespace().any(|w| w == gib), "{line}");
}

#[test]
fn fleet_kernel_and_firmware_differences_are_pointed_out() {
    // The six nodes, n6 with an older kernel and firmware.
    let f = fleet(
        SIX.iter()
            .enumerate()
            .map(|(i, v)| {
                let n = format!("n{}", i + 1);
                let mut b = bundle(&n, &reps(*v));
                let host = &mut b.envelope.host;
                host.kernel = Some(if n == "n6" { "6.1.0-18" } else { "6.1.0-21" }.into());
                let infos = &mut host.topology.as_mut().unwrap().infos;
                infos.insert("DMIBIOSVendor".into(), "Acme".into());
                infos.insert(
                    "DMIBIOSVersion".into(),
                    if n == "n6" { "1.2" } else { "1.4" }.into(),
                );
                node(&n, b, "done")
            })
            .collect(),
    );
    let r = analyse(&f, &Options::default());
    let o = &r.outliers[0];
    assert_eq!(o.kernel.as_deref(), Some("6.1.0-18"));
    assert_eq!(o.kernel_others.as_deref(), Some("6.1.0-21"));
    assert_eq!(o.firmware.as_deref(), Some("Acme 1.2"));
    assert_eq!(o.firmware_others.as_deref(), Some("Acme 1.4"));
    assert!(
        o.sentence.ends_with(
            "kernel 6.1.0-18 (most of the group: 6.1.0-21), firmware Acme 1.2 (most of the group: Acme 1.4)"
        ),
        "{}",
        o.sentence
    );
}

#[test]
fn fleet_failed_node_is_listed_with_its_stderr() {
    let mut f = six();
    f.nodes.push(FleetNode {
        name: "n7".into(),
        path: PathBuf::new(),
        status: Some(NodeStatus {
            state: Some("timeout".into()),
            exit_code: None,
            duration_s: Some(3600.0),
            stderr_tail: Some("step mem.bandwidth\nkilled after 3600 s\n".into()),
            message: None,
        }),
        facts: None,
        problems: Vec::new(),
    });
    let r = analyse(&f, &Options::default());
    assert_eq!(r.failed.len(), 1);
    let x = &r.failed[0];
    assert_eq!((x.node.as_str(), x.state.as_str()), ("n7", "timeout"));
    assert!(!x.has_bundle);
    assert!(x
        .stderr_tail
        .as_deref()
        .unwrap()
        .contains("killed after 3600 s"));
    let row = r.nodes.iter().find(|n| n.node == "n7").unwrap();
    assert_eq!(row.group, None);
    let html = render_html(&r);
    assert!(html.contains("killed after 3600 s"));
    let text = render_text(&r);
    assert!(text.contains("n7: timeout"), "{text}");
}

#[test]
fn fleet_hostile_names_are_escaped_in_html_and_visible_on_a_terminal() {
    let mut f = six();
    let evil = "<script>alert(1)</script>";
    f.nodes[5].name = evil.into();
    f.nodes[0].status.as_mut().unwrap().state = Some("failed\u{1b}[2J".into());
    f.nodes[0].status.as_mut().unwrap().stderr_tail = Some("</pre><script>x()</script>".into());
    let r = analyse(&f, &Options::default());
    assert_eq!(r.outliers[0].node, evil);
    let html = render_html(&r);
    assert!(!html.contains("<script>"), "raw markup in the page");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains('\u{1b}'));
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    let text = render_text(&r);
    assert!(!text.contains('\u{1b}'));
    assert!(text.contains("\\x1b[2J"), "{text}");
}

#[test]
fn fleet_json_round_trips() {
    let mut f = six();
    f.nodes[1]
        .problems
        .push("results.jsonl: cut-off last line".into());
    let r = analyse(&f, &Options::default());
    let json = render_json(&r);
    let back: FleetReport = serde_json::from_str(&json).unwrap();
    // serde_json's default float parser may be 1 ulp off: numbers compared to 1e-12.
    fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
        use serde_json::Value as V;
        match (a, b) {
            (V::Number(x), V::Number(y)) => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                (x - y).abs() <= 1e-12 * x.abs().max(1.0)
            }
            (V::Array(x), V::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
            }
            (V::Object(x), V::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
            }
            _ => a == b,
        }
    }
    let (a, b) = (
        serde_json::to_value(&r).unwrap(),
        serde_json::to_value(&back).unwrap(),
    );
    assert!(same(&a, &b));
    assert_eq!(back.outliers[0].sentence, r.outliers[0].sentence);
    assert_eq!(back.nodes[1].problems, r.nodes[1].problems);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["version"], FLEET_REPORT_VERSION);
    assert_eq!(v["outliers"][0]["direction"], "worse");
}

/// Writes a bundle as a journal (`results.jsonl`).
fn write_journal(dir: &Path, b: &Bundle) {
    let mut env = serde_json::to_value(&b.envelope).unwrap();
    env["line"] = "envelope".into();
    let mut text = env.to_string() + "\n";
    for r in &b.records {
        let mut v = serde_json::to_value(r).unwrap();
        v["line"] = "record".into();
        text.push_str(&(v.to_string() + "\n"));
    }
    std::fs::write(dir.join("results.jsonl"), text).unwrap();
}

#[test]
fn fleet_folder_with_broken_nodes_loads_and_keeps_their_problems() {
    let d = tempfile::tempdir().unwrap();
    let nodes = d.path().join("nodes");
    for (i, v) in [100.0, 100.2, 99.8, 80.0].iter().enumerate() {
        let n = nodes.join(format!("n{}", i + 1));
        std::fs::create_dir_all(&n).unwrap();
        write_journal(&n, &bundle(&format!("n{}", i + 1), &reps(*v)));
        std::fs::write(
            n.join("status.json"),
            r#"{"state": "done", "exit_code": 0, "duration_s": 12.5, "future_field": [1, 2]}"#,
        )
        .unwrap();
    }
    // Garbage bundle, garbage status, a launch failure, a stray file.
    let bad = nodes.join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("results.jsonl"), "\u{1b}[31m not json\n").unwrap();
    std::fs::write(bad.join("status.json"), "{\"state\": 3}").unwrap();
    let lf = nodes.join("lf");
    std::fs::create_dir_all(&lf).unwrap();
    std::fs::write(
        lf.join("status.json"),
        r#"{"state": "launch-failed", "message": "ssh: connect to host lf port 22: No route to host"}"#,
    )
    .unwrap();
    std::fs::write(nodes.join("README"), "not a node").unwrap();
    let input = load_fleet(d.path()).unwrap();
    let names: Vec<&str> = input.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["bad", "lf", "n1", "n2", "n3", "n4"]);
    let bad = &input.nodes[0];
    assert!(bad.facts.is_none() && bad.status.is_none());
    assert_eq!(bad.problems.len(), 2, "{:?}", bad.problems);
    assert!(input.nodes[2].status.as_ref().unwrap().is_done());
    let r = analyse(&input, &Options::default());
    assert_eq!(r.outliers.len(), 1);
    assert_eq!(r.outliers[0].node, "n4");
    let failed: Vec<&str> = r.failed.iter().map(|f| f.node.as_str()).collect();
    assert_eq!(failed, ["bad", "lf"]);
    assert!(r.failed[1]
        .message
        .as_deref()
        .unwrap()
        .contains("No route to host"));
    let html = render_html(&r);
    assert!(!html.contains('\u{1b}'));
    assert!(load_fleet(&d.path().join("nowhere")).is_err());
}

#[test]
fn fleet_report_flags_become_options_or_are_refused_in_words() {
    let o = Options::from_flags(3.0, 10.0, 4).unwrap();
    assert_eq!(o.z_threshold, 3.0);
    assert!((o.relative_floor - 0.10).abs() < 1e-12);
    assert_eq!(o.min_nodes, 4);
    assert_eq!(o.own_noise_factor, Options::default().own_noise_factor);
    assert_eq!(
        Options::from_flags(0.0, 5.0, 3).unwrap_err(),
        "--z 0: give a positive number"
    );
    assert!(Options::from_flags(f64::INFINITY, 5.0, 3).is_err());
    assert_eq!(
        Options::from_flags(3.5, 100.0, 3).unwrap_err(),
        "--floor 100: give a percentage from 0 to 100"
    );
    assert_eq!(
        Options::from_flags(3.5, 5.0, 1).unwrap_err(),
        "--min-nodes must be at least 2 (a median and MAD need company)"
    );
}
