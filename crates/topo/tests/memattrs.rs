//! Measured memory attributes exported as hwloc XML (src/memattrs.rs): written into
//! topologies of other machines (tests/fixtures/topology), read back with hwlocality's
//! memory attribute API from the exported file, and read by hwloc's own tools when the
//! `hwloc` package is installed.

use numalab_topo::load::{load, Loaded};
use numalab_topo::memattrs::{self, Attribute, MeasuredValue, Unit};
use numalab_topo::Input;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/topology")
        .join(name)
}

fn load_xml(path: &Path) -> Loaded {
    load(&Input::Xml(path.to_path_buf())).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn v(i: u32, t: u32, attribute: Attribute, value: f64, unit: Unit) -> MeasuredValue {
    MeasuredValue {
        initiator_node: i,
        target_node: t,
        attribute,
        value,
        unit,
        source: Some("synthetic".into()),
    }
}

/// The 2-node fixture (CPUs 0-7 on node 0, 8-15 on node 1): every pair of four
/// attributes.
fn two_node_values() -> Vec<MeasuredValue> {
    let mut out = Vec::new();
    for i in 0..2u32 {
        for t in 0..2u32 {
            let local = i == t;
            let gbps = if local { 12.345 } else { 7.5 } + f64::from(i) * 0.25;
            out.push(v(i, t, Attribute::Bandwidth, gbps, Unit::GBps));
            out.push(v(i, t, Attribute::ReadBandwidth, gbps * 1.2, Unit::GBps));
            out.push(v(i, t, Attribute::WriteBandwidth, 5000.4, Unit::MiBps));
            let ns = if local { 91.4 } else { 142.6 } + f64::from(t);
            out.push(v(i, t, Attribute::Latency, ns, Unit::Ns));
        }
    }
    out
}

fn node_cpus(i: u32) -> Vec<u32> {
    (i * 8..i * 8 + 8).collect()
}

fn expected(m: &MeasuredValue) -> u64 {
    let exact = match m.unit {
        Unit::GBps => m.value * 1e9 / 1_048_576.0,
        Unit::MiBps | Unit::Ns => m.value,
    };
    exact.round() as u64
}

#[test]
fn two_nodes_round_trip_through_hwloc_xml() {
    let loaded = load_xml(&fixture("32em64t-2n8c+dax+nvme+mic+dimms.xml"));
    let values = two_node_values();
    let export = memattrs::export_xml(&loaded, &values).unwrap();
    assert_eq!(export.values.len(), values.len());
    for (set, m) in export.values.iter().zip(&values) {
        assert_eq!(set.value, expected(m), "{set:?}");
        assert_eq!(set.initiator_cpus, node_cpus(m.initiator_node));
        assert_eq!(set.replaced, None, "the fixture has no memory attributes");
        assert_eq!(set.unit, m.attribute.hwloc_unit());
    }
    // 12.345 GB/s = 11,773.1 MiB/s.
    assert_eq!(export.values[0].value, 11773);

    // Load the exported file again with hwloc and read every value back.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("measured.xml");
    std::fs::write(&path, &export.xml).unwrap();
    let again = load_xml(&path);
    for m in &values {
        let got = memattrs::value(
            &again.topology,
            m.attribute,
            &node_cpus(m.initiator_node),
            m.target_node,
        )
        .unwrap();
        assert_eq!(got, Some(expected(m)), "{m:?}");
        // A subset of the initiator's CPUs gets the same value (hwloc's rule).
        let one = [m.initiator_node * 8 + 3];
        let got = memattrs::value(&again.topology, m.attribute, &one, m.target_node).unwrap();
        assert_eq!(got, Some(expected(m)), "{m:?} from one CPU");
    }
    // The initiators are exactly the nodes' cpusets, one per initiator node.
    for a in [
        Attribute::Bandwidth,
        Attribute::ReadBandwidth,
        Attribute::WriteBandwidth,
        Attribute::Latency,
    ] {
        for t in 0..2 {
            let mut inits = memattrs::initiators(&again.topology, a, t).unwrap();
            inits.sort();
            let want: Vec<(Vec<u32>, u64)> = (0..2)
                .map(|i| {
                    let m = values
                        .iter()
                        .find(|m| m.attribute == a && m.initiator_node == i && m.target_node == t)
                        .unwrap();
                    (node_cpus(i), expected(m))
                })
                .collect();
            assert_eq!(inits, want, "{a} -> node{t}");
        }
    }
    // Nothing else of the topology changed.
    let before = numalab_topo::describe::describe(&loaded);
    let after = numalab_topo::describe::describe(&again);
    assert_eq!(before.summary, after.summary);
    assert_eq!(before.numa_nodes, after.numa_nodes);
    assert_eq!(before.caches, after.caches);
    assert_eq!(before.distances, after.distances);
    // numalab's own description lists them.
    let bw = after
        .memory_attributes
        .iter()
        .find(|a| a.name == "Bandwidth")
        .expect("Bandwidth in the description");
    assert_eq!(bw.values.len(), 4);
}

#[test]
fn firmware_values_for_the_same_pair_are_replaced() {
    // HMAT-like values of the heteromem fixture: Bandwidth 22500 MiB/s from node 0's
    // CPUs to node 0, 90000 to its HBM node 7.
    let loaded = load_xml(&fixture("64intel64-heteromem.xml"));
    let node0: Vec<u32> = numalab_topo::describe::describe(&loaded)
        .node(0)
        .unwrap()
        .cpus
        .clone();
    assert_eq!(
        memattrs::value(&loaded.topology, Attribute::Bandwidth, &node0, 0).unwrap(),
        Some(22500)
    );
    let values = [
        v(0, 0, Attribute::Bandwidth, 20000.0, Unit::MiBps),
        v(0, 1, Attribute::Bandwidth, 10000.0, Unit::MiBps),
        v(0, 0, Attribute::Latency, 100.0, Unit::Ns),
    ];
    let export = memattrs::export_xml(&loaded, &values).unwrap();
    let replaced: Vec<Option<u64>> = export.values.iter().map(|s| s.replaced).collect();
    assert_eq!(replaced, vec![Some(22500), None, None]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replaced.xml");
    std::fs::write(&path, &export.xml).unwrap();
    let again = load_xml(&path);
    assert_eq!(
        memattrs::value(&again.topology, Attribute::Bandwidth, &node0, 0).unwrap(),
        Some(20000)
    );
    assert_eq!(
        memattrs::value(&again.topology, Attribute::Bandwidth, &node0, 1).unwrap(),
        Some(10000)
    );
    // The firmware value of a pair not measured stays.
    assert_eq!(
        memattrs::value(&again.topology, Attribute::Bandwidth, &node0, 7).unwrap(),
        Some(90000)
    );
    // One initiator per target: replaced, not added beside the old one.
    let inits = memattrs::initiators(&again.topology, Attribute::Bandwidth, 0).unwrap();
    assert_eq!(inits, vec![(node0.clone(), 20000)]);
}

#[test]
fn bad_values_are_refused_not_clamped() {
    let loaded = load_xml(&fixture("32em64t-2n8c+dax+nvme+mic+dimms.xml"));
    let err = |values: &[MeasuredValue]| {
        memattrs::export_xml(&loaded, values)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let e = err(&[v(0, 5, Attribute::Bandwidth, 1.0, Unit::GBps)]);
    assert!(
        e.contains("Bandwidth node0 -> node5: target NUMA node 5 is not in this topology (its nodes: 0, 1)"),
        "{e}"
    );
    let e = err(&[v(3, 0, Attribute::Latency, 80.0, Unit::Ns)]);
    assert!(e.contains("initiator NUMA node 3 is not in"), "{e}");
    let e = err(&[v(0, 1, Attribute::Bandwidth, 2e16, Unit::GBps)]);
    assert!(e.contains("more than hwloc's 64-bit values hold"), "{e}");
    let e = err(&[v(0, 1, Attribute::Latency, 0.2, Unit::Ns)]);
    assert!(e.contains("rounds to 0"), "{e}");
    let e = err(&[v(0, 1, Attribute::Latency, 2.0, Unit::GBps)]);
    assert!(e.contains("Latency is in ns, not GB/s"), "{e}");
    let e = err(&[
        v(0, 1, Attribute::Latency, 90.0, Unit::Ns),
        v(0, 1, Attribute::Latency, 91.0, Unit::Ns),
    ]);
    assert!(e.contains("two Latency values for node0 -> node1"), "{e}");
}

/// hwloc's own tools read the values: `lstopo-no-graphics --memattrs` and
/// `hwloc-info --best-memattr` (package `hwloc`, which `scripts/deps.sh --test`
/// installs: their absence fails the test).
#[test]
fn hwloc_tools_read_the_exported_values() {
    let tool = |name: &str| {
        std::process::Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    assert!(
        tool("lstopo-no-graphics") && tool("hwloc-info"),
        "lstopo-no-graphics and hwloc-info are needed: apt-get install hwloc (scripts/deps.sh --test does)"
    );
    let loaded = load_xml(&fixture("32em64t-2n8c+dax+nvme+mic+dimms.xml"));
    let values = two_node_values();
    let export = memattrs::export_xml(&loaded, &values).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("measured.xml");
    std::fs::write(&path, &export.xml).unwrap();
    let out = std::process::Command::new("lstopo-no-graphics")
        .args(["--memattrs", "-i"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // e.g. "  NUMANode L#0 = 11773 from cpuset 0x000000ff (Machine L#0)"
    for (name, attribute) in [
        ("Bandwidth", Attribute::Bandwidth),
        ("ReadBandwidth", Attribute::ReadBandwidth),
        ("WriteBandwidth", Attribute::WriteBandwidth),
        ("Latency", Attribute::Latency),
    ] {
        let section = text
            .split("Memory attribute #")
            .find(|s| s.contains(&format!(" name `{name}'")))
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"));
        for m in values.iter().filter(|m| m.attribute == attribute) {
            let cpuset = if m.initiator_node == 0 {
                "0x000000ff"
            } else {
                "0x0000ff00"
            };
            let line = format!(
                "NUMANode L#{} = {} from cpuset {cpuset}",
                m.target_node,
                expected(m)
            );
            assert!(section.contains(&line), "{line} not in:\n{section}");
        }
    }
    // hwloc's choice of the best target follows the values set: from PU 9 (node 1),
    // with every node considered, node 0 once it has the higher bandwidth, node 1
    // once node 1 has.
    for (to0, to1, best) in [(20.0, 10.0, 0), (10.0, 20.0, 1)] {
        let values = [
            v(1, 0, Attribute::Bandwidth, to0, Unit::GBps),
            v(1, 1, Attribute::Bandwidth, to1, Unit::GBps),
        ];
        let export = memattrs::export_xml(&loaded, &values).unwrap();
        let path = dir.path().join(format!("best-{best}.xml"));
        std::fs::write(&path, &export.xml).unwrap();
        let out = std::process::Command::new("hwloc-info")
            .arg("-i")
            .arg(&path)
            .args([
                "--local-memory-flags",
                "flag_all",
                "--best-memattr",
                "bandwidth",
                "pu:9",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}{err}");
        assert!(
            text.starts_with(&format!("NUMANode L#{best} = local memory")),
            "hwloc-info --best-memattr bandwidth pu:9 with {to0}/{to1} GB/s:\n{text}{err}"
        );
    }
}
