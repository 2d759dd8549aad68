//! `numalab c2c` end to end: a real run on this machine, imports of published matrices,
//! resume, exports, and the documented JSON contract read with independent structs.

use crate::common::{self, bundle, journal, live_cpus, numalab, refused, BundleJson};

fn fixture(name: &str) -> String {
    common::fixture("c2c", name)
}

/// The documented contract (docs/c2c.md), independent of numalab's types.
#[derive(serde::Deserialize)]
struct MatrixJson {
    cpus: Vec<u32>,
    matrix_ns: Vec<Vec<Option<f64>>>,
    groups: Vec<Vec<GroupJson>>,
    home_node_policy: Option<String>,
    topology_comparison: Vec<String>,
}

#[derive(serde::Deserialize)]
struct GroupJson {
    cpus: Vec<u32>,
    intra_ns: Option<f64>,
    inter_ns: Option<f64>,
}

#[derive(serde::Deserialize)]
struct PairJson {
    first: u32,
    second: u32,
    variant: String,
    home_node: Option<u32>,
    latency_ns: f64,
    summary: SummaryJson,
    samples_ns: Vec<f64>,
}

#[derive(serde::Deserialize)]
struct SummaryJson {
    min: f64,
    p10: f64,
    median: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

fn matrix_of(b: &BundleJson) -> MatrixJson {
    let r = b
        .records
        .iter()
        .find(|r| r.kind == "c2c.matrix")
        .expect("a c2c.matrix record");
    serde_json::from_value(r.data.clone()).expect("the documented c2c.matrix fields")
}

#[test]
fn real_run_on_two_cpus_measures_one_pair() {
    if live_cpus() < 2 {
        eprintln!("skipped: fewer than 2 CPUs");
        return;
    }
    let out = numalab(&[
        "c2c",
        "--cpus",
        "0-1",
        "--samples",
        "20",
        "--round-trips",
        "200",
        "--json",
    ]);
    let b = bundle(&out);
    let pairs: Vec<PairJson> = b
        .records
        .iter()
        .filter(|r| r.kind == "c2c.pair")
        .map(|r| serde_json::from_value(r.data.clone()).unwrap())
        .collect();
    assert_eq!(pairs.len(), 1);
    let p = &pairs[0];
    assert_eq!((p.first, p.second, p.variant.as_str()), (1, 0, "cas"));
    assert!(p.latency_ns.is_finite() && p.latency_ns > 0.0);
    assert_eq!(p.samples_ns.len(), 20);
    let s = &p.summary;
    assert!(s.min <= s.p10 && s.p10 <= s.median && s.median <= s.p90);
    assert!(s.p90 <= s.p99 && s.p99 <= s.max);
    assert_eq!(p.latency_ns, s.median);
    assert!(p.home_node.is_some());
    let m = matrix_of(&b);
    assert_eq!(m.cpus, vec![0, 1]);
    assert_eq!(
        m.matrix_ns,
        vec![
            vec![None, Some(p.latency_ns)],
            vec![Some(p.latency_ns), None]
        ]
    );
    assert!(m.groups.is_empty(), "2 CPUs cannot show groups");
    assert_eq!(m.home_node_policy.as_deref(), Some("first-cpu-node"));
    assert!(b.records.iter().all(|r| r.origin == "measured"));
}

#[test]
fn flag_variant_and_home_node_are_recorded() {
    if live_cpus() < 2 {
        return;
    }
    let out = numalab(&[
        "c2c",
        "--cpus",
        "0-1",
        "--variant",
        "flag",
        "--home-node",
        "0",
        "--samples",
        "5",
        "--round-trips",
        "100",
        "--json",
    ]);
    let b = bundle(&out);
    let r = b.records.iter().find(|r| r.kind == "c2c.pair").unwrap();
    assert_eq!(r.key, "c2c/flag/node0/1-0");
    let p: PairJson = serde_json::from_value(r.data.clone()).unwrap();
    assert_eq!((p.variant.as_str(), p.home_node), ("flag", Some(0)));
    assert_eq!(matrix_of(&b).home_node_policy.as_deref(), Some("node:0"));
}

#[test]
fn a_rerun_with_the_same_out_resumes_instead_of_measuring_again() {
    if live_cpus() < 2 {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().display().to_string();
    let args = [
        "c2c",
        "--cpus",
        "0-1",
        "--samples",
        "5",
        "--round-trips",
        "100",
        "--out",
        &dir,
    ];
    let first = numalab(&args);
    common::assert_ok(&first);
    let second = numalab(&args);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{err}");
    assert!(
        !err.contains("pairs to measure"),
        "nothing left to measure: {err}"
    );
    let journal = journal(tmp.path());
    assert_eq!(journal.matches("\"kind\":\"c2c.pair\"").count(), 1);
    assert_eq!(journal.matches("\"kind\":\"c2c.matrix\"").count(), 1);
    // The human output of the resumed run still shows the pair.
    assert!(String::from_utf8_lossy(&second.stdout).contains("CPU 1 <-> CPU 0"));
}

#[test]
fn imported_epyc_matrix_gives_the_documented_json() {
    let out = numalab(&["c2c", "--input", &fixture("amd-epyc-7773x.csv"), "--json"]);
    let b = bundle(&out);
    assert!(b.records.iter().all(|r| r.origin == "imported"));
    let m = matrix_of(&b);
    assert_eq!(m.cpus, (0..128).collect::<Vec<u32>>());
    assert_eq!(m.matrix_ns.len(), 128);
    for (i, row) in m.matrix_ns.iter().enumerate() {
        assert_eq!(row.len(), 128);
        assert_eq!(row[i], None);
        for (j, v) in row.iter().enumerate() {
            assert_eq!(*v, m.matrix_ns[j][i]);
        }
    }
    // Finest level: SMT siblings at +64; next: 8 CCDs of 16 PUs.
    assert_eq!(m.groups.len(), 2);
    assert_eq!(m.groups[0].len(), 64);
    assert!(m.groups[0]
        .iter()
        .all(|g| g.cpus.len() == 2 && g.cpus[1] == g.cpus[0] + 64));
    assert_eq!(m.groups[1].len(), 8);
    for g in &m.groups[1] {
        assert_eq!(g.cpus.len(), 16);
        assert!(g.intra_ns.unwrap() < g.inter_ns.unwrap());
    }
    assert!(m.topology_comparison.is_empty());
}

#[test]
fn import_with_a_topology_compares_and_exports() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("out.csv");
    let svg = tmp.path().join("out.svg");
    let topo = common::fixture_path("topology", "128arm-2pa2n8cluster4co.tar.bz2");
    // A 64-CPU Kunpeng matrix against a 128-CPU Kunpeng snapshot: CPUs 0-63 are one
    // package with 2 NUMA nodes of 32 and clusters of 4 there.
    let out = numalab(&[
        "c2c",
        "--input",
        &fixture("hisilicon-kunpeng-920-6426-2.6ghz.csv"),
        "--topology",
        &topo.display().to_string(),
        "--export-csv",
        &csv.display().to_string(),
        "--svg",
        &svg.display().to_string(),
        "--order",
        "group",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    common::assert_ok(&out);
    // The dies are the NUMA nodes (and L3 caches) of the snapshot. hwloc's 4-core
    // clusters are no step in this file (cluster 1 sees 38 ns everywhere in its die,
    // itself included): no level claims them, and the spread inside a die is reported
    // as a gradient.
    assert!(stdout.contains("L3 caches = NUMA nodes"), "{stdout}");
    assert!(!stdout.contains("like hwloc's clusters"), "{stdout}");
    assert!(
        stdout.contains("no discrete level inside the groups of level 1: latency spreads from"),
        "{stdout}"
    );
    let back = std::fs::read_to_string(&csv).unwrap();
    let orig = std::fs::read_to_string(fixture("hisilicon-kunpeng-920-6426-2.6ghz.csv")).unwrap();
    assert_eq!(back.lines().count(), 64);
    // Same numbers (formatting may differ in the last digit).
    let nums = |t: &str| -> Vec<f64> {
        t.split([',', '\n'])
            .filter(|f| !f.trim().is_empty())
            .map(|f| f.trim().parse().unwrap())
            .collect()
    };
    assert_eq!(nums(&back), nums(&orig));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

#[test]
fn errors_name_the_input_and_never_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.csv");
    std::fs::write(&bad, ",,\n1,,\n").unwrap();
    let bad = bad.display().to_string();
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["c2c", "--input", "/nonexistent/m.csv"],
            3,
            "/nonexistent/m.csv",
        ),
        (vec!["c2c", "--input", &bad], 3, "line 1 has 3 fields"),
        (vec!["c2c", "--cpus", "0"], 2, "at least 2"),
        (
            vec!["c2c", "--cpus", "0-1", "--home-node", "99"],
            2,
            "--home-node 99",
        ),
        (vec!["c2c", "--topology", "x.xml"], 2, "--input"),
        (vec!["c2c", "--variant", "xchg"], 2, "invalid value"),
        (vec!["c2c", "--samples", "0"], 2, "invalid value"),
    ];
    for (args, code, text) in cases {
        refused(&args, code, text);
    }
}
