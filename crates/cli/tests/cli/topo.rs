//! `numalab topo`: how Arm machines are named; measured memory attributes exported as
//! hwloc XML (`--memattrs-from`).

use crate::common::{assert_ok, fixture, numalab, p, refused, stdout};
use numalab_topo::memattrs::{self, Attribute};
use numalab_topo::Input;
use std::path::Path;

/// The Kunpeng 920 snapshot, text and JSON: its CPU named from the MIDR table.
#[test]
fn kunpeng_snapshot_is_named() {
    let path = fixture("topology", "128arm-2pa2n8cluster4co.tar.bz2");
    let out = numalab(&["topo", "--input", &path]);
    assert_ok(&out);
    // The whole summary, deliberately: a change here is a change users see.
    assert_eq!(
        stdout(&out),
        "HiSilicon TSV110 / Kunpeng 920 (MIDR 0x481fd010, r1p0), aarch64, Linux 5.15.0-rc1-00005-g4c1b4a4d90b6-dirty, hwloc 2.9.0
2 packages x 64 cores, 1 thread/core (128 PUs)
4 NUMA nodes: 0 = CPUs 0-31 (125.6 GiB), 1 = CPUs 32-63 (126 GiB), 2 = CPUs 64-95 (126 GiB), 3 = CPUs 96-127 (125 GiB)
L1d 64 KiB per core, L1i 64 KiB per core, L2 512 KiB per core, L3 32 MiB per NUMA node
distances (SLIT) 10/16/25/32/33
pages 4 KiB; huge pages 64 KiB (0 reserved), 2 MiB (0 reserved), 32 MiB (0 reserved), 1 GiB (0 reserved)
"
    );
    let out = numalab(&["topo", "--input", &path, "--json"]);
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cpu = &v["cpu"];
    assert_eq!(
        cpu["model_name"],
        "HiSilicon TSV110 / Kunpeng 920 (MIDR 0x481fd010, r1p0)"
    );
    assert_eq!(cpu["vendor"], "HiSilicon");
    assert_eq!(cpu["architecture"], "aarch64");
    assert_eq!(
        (
            &cpu["implementer"],
            &cpu["part"],
            &cpu["variant"],
            &cpu["revision"]
        ),
        (
            &serde_json::json!(0x48),
            &serde_json::json!(0xd01),
            &serde_json::json!(1),
            &serde_json::json!(0)
        )
    );
}

/// The topology of an exported file, loaded again with hwloc.
fn reload(path: &Path) -> numalab_topo::load::Loaded {
    numalab_topo::load::load(&Input::Xml(path.to_path_buf())).unwrap()
}

/// GB/s (10^9 bytes/s) in hwloc's MiB/s, rounded.
fn mib(gbps: f64) -> u64 {
    (gbps * 1e9 / 1_048_576.0).round() as u64
}

/// The hand-made two-node bundle (triad matrix, idle latency matrix) on the topology it
/// records: every pair set, read back from the exported XML.
#[test]
fn memattrs_from_a_two_node_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let xml = tmp.path().join("measured.xml");
    let topo = fixture("topology", "32em64t-2n8c+dax+nvme+mic+dimms.xml");
    let bundle = fixture("bundles", "two-node-handmade");
    let args = [
        "topo",
        "--input",
        &topo,
        "--memattrs-from",
        &bundle,
        "--export-xml",
        p(&xml),
    ];
    let out = numalab(&args);
    assert_ok(&out);
    let text = stdout(&out);
    assert!(
        text.contains("Bandwidth node0 -> node1: 13,351 MiB/s (measured, mem.bandwidth triad, 8 threads, median 14.0 GB/s)\n"),
        "{text}"
    );
    assert!(
        text.contains("Latency node1 -> node1: 92 ns (measured, mem.latency idle, "),
        "{text}"
    );
    assert_eq!(text.lines().count(), 8, "{text}");
    let loaded = reload(&xml);
    let cpus = |n: u32| -> Vec<u32> { (n * 8..n * 8 + 8).collect() };
    for (i, t, gbps, ns) in [
        (0, 0, 40.0, 92),
        (0, 1, 14.0, 138),
        (1, 0, 14.0, 138),
        (1, 1, 40.0, 92),
    ] {
        let bw = memattrs::value(&loaded.topology, Attribute::Bandwidth, &cpus(i), t).unwrap();
        assert_eq!(bw, Some(mib(gbps)), "node{i} -> node{t}");
        let lat = memattrs::value(&loaded.topology, Attribute::Latency, &cpus(i), t).unwrap();
        assert_eq!(lat, Some(ns), "node{i} -> node{t}");
    }
    // --json: what was set, for scripts.
    let out = numalab(&[&args[..], &["--json"]].concat());
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let values = v["values"].as_array().unwrap();
    assert_eq!(values.len(), 8);
    assert_eq!(values[1]["attribute"], "Bandwidth");
    assert_eq!(values[1]["initiator_node"], 0);
    assert_eq!(values[1]["target_node"], 1);
    assert_eq!(values[1]["value"], mib(14.0));
    assert_eq!(values[1]["unit"], "MiB/s");
    assert_eq!(values[1]["initiator_cpus"], serde_json::json!(cpus(0)));
}

/// A real (small) bandwidth and latency matrix of this machine, exported with this
/// machine's topology and read back.
#[test]
fn memattrs_from_a_matrix_measured_here() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = numalab(&[
        "mem",
        "bandwidth",
        "--matrix",
        "--quick",
        "--kernel",
        "read",
        "--out",
        p(&dir),
    ]);
    assert_ok(&out);
    let out = numalab(&["mem", "latency", "--matrix", "--quick", "--out", p(&dir)]);
    assert_ok(&out);
    let xml = tmp.path().join("here.xml");
    let out = numalab(&[
        "topo",
        "--memattrs-from",
        p(&dir),
        "--export-xml",
        p(&xml),
        "--json",
    ]);
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let values = v["values"].as_array().unwrap();
    let machine = numalab_topo::live().unwrap();
    let nodes = machine.numa_nodes.len();
    // Bandwidth and ReadBandwidth (read kernel) and Latency for every node pair.
    assert_eq!(values.len(), 3 * nodes * nodes, "{values:?}");
    let loaded = reload(&xml);
    for s in values {
        let attribute = Attribute::from_name(s["attribute"].as_str().unwrap()).unwrap();
        let init = s["initiator_node"].as_u64().unwrap() as u32;
        let target = s["target_node"].as_u64().unwrap() as u32;
        let cpus = &machine.node(init).unwrap().cpus;
        assert_eq!(s["initiator_cpus"], serde_json::json!(cpus));
        let got = memattrs::value(&loaded.topology, attribute, cpus, target).unwrap();
        assert_eq!(got, s["value"].as_u64(), "{s}");
        assert!(got.unwrap() > 0);
    }
    // The same machine description as a plain export, besides the attributes.
    let plain = tmp.path().join("plain.xml");
    assert_ok(&numalab(&["topo", "--export-xml", p(&plain)]));
    let a = numalab_topo::describe::describe(&loaded);
    let b = numalab_topo::describe::describe(&reload(&plain));
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.numa_nodes, b.numa_nodes);
}

/// What is refused, each with one line that says what to do.
#[test]
fn memattrs_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let xml = tmp.path().join("x.xml");
    let handmade = fixture("bundles", "two-node-handmade");
    let two_node = fixture("topology", "32em64t-2n8c+dax+nvme+mic+dimms.xml");
    // Without --export-xml.
    refused(
        &["topo", "--memattrs-from", &handmade],
        2,
        "needs --export-xml FILE",
    );
    // --input with --export-xml alone is still refused.
    refused(
        &["topo", "--input", &two_node, "--export-xml", p(&xml)],
        2,
        "cannot be used with --input",
    );
    // A bundle without matrices.
    refused(
        &[
            "topo",
            "--input",
            &two_node,
            "--memattrs-from",
            &fixture("bundles", "vm-scale"),
            "--export-xml",
            p(&xml),
        ],
        3,
        "run `numalab mem bandwidth --matrix --out DIR` first",
    );
    // Another machine: both named, and the node the topology lacks.
    let four = fixture("topology", "llnl-cascade-lake-ap-snl-hwloc1.xml");
    let out = refused(
        &[
            "topo",
            "--input",
            &four,
            "--memattrs-from",
            &handmade,
            "--export-xml",
            p(&xml),
        ],
        3,
        "was measured on a machine with 2 NUMA node(s) (0, 1) and 16 CPU(s)",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("but {four} has 4 NUMA node(s) (0, 1, 2, 3)")),
        "{err}"
    );
    let one = fixture("topology", "llnl-knl-quad-cache-hwloc1.xml");
    let out = refused(
        &[
            "topo",
            "--input",
            &one,
            "--memattrs-from",
            &handmade,
            "--export-xml",
            p(&xml),
        ],
        3,
        "its node(s) 1 are not in",
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(&one));
    assert!(!xml.exists(), "nothing written on a refusal");
}
