//! Facts asserted on real topologies from other machines (tests/fixtures/topology, see
//! PROVENANCE.md there), and on the live machine against /sys.

use numalab_schema::machine::{CacheKind, Machine};
use numalab_topo::{machine, Input, TopoError};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/topology")
        .join(name)
}

fn load(name: &str) -> Machine {
    let p = fixture(name);
    let input = Input::detect(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
    machine(&input).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_xml_fixture_loads() {
    let dir = fixture("");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.ends_with(".xml") || name.contains("hwloc3-format") {
            continue;
        }
        let m = load(&name);
        assert!(!m.pus.is_empty(), "{name}: no PUs");
        assert!(!m.numa_nodes.is_empty(), "{name}: no NUMA nodes");
        assert_eq!(m.summary.pus, m.pus.len());
        // Every PU belongs to exactly one core.
        let in_cores: usize = m.cores.iter().map(|c| c.pus.len()).sum();
        assert_eq!(in_cores, m.pus.len(), "{name}");
        // The JSON form round-trips.
        let json = serde_json::to_string(&m).unwrap();
        let back: Machine = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m, "{name}");
        n += 1;
    }
    assert!(n >= 24, "only {n} XML fixtures found");
}

#[test]
fn knl_snc4_flat_has_four_mcdram_nodes() {
    let m = load("llnl-knl-snc4-flat-hwloc1.xml");
    assert_eq!((m.packages.len(), m.cores.len(), m.pus.len()), (1, 68, 272));
    assert_eq!(m.numa_nodes.len(), 8);
    let mcdram: Vec<u32> = m
        .numa_nodes
        .iter()
        .filter(|n| n.subtype.as_deref() == Some("MCDRAM"))
        .map(|n| n.os_index)
        .collect();
    assert_eq!(mcdram, vec![4, 5, 6, 7]);
    // MCDRAM node 4 is local to the same quadrant as DRAM node 0.
    assert_eq!(m.node(4).unwrap().cpus, m.node(0).unwrap().cpus);
    assert_eq!(m.node(4).unwrap().memory_bytes, 4 << 30);
    // 4 hardware threads per core.
    assert!(m.cores.iter().all(|c| c.pus.len() == 4));
    assert_eq!(m.pu(0).unwrap().siblings, vec![68, 136, 204]);
}

#[test]
fn twenty_four_nodes_and_their_slit() {
    let m = load("192em64t-24n8c2t.xml");
    assert_eq!(m.numa_nodes.len(), 24);
    let slit = m.slit().expect("SLIT");
    assert_eq!(slit.nodes.len(), 24);
    assert_eq!(slit.values.len(), 24);
    assert!(slit.values.iter().all(|r| r.len() == 24));
    for i in 0..24 {
        assert_eq!(slit.values[i][i], 10);
    }
    assert_eq!(m.pus.len(), 384);
}

#[test]
fn heteromem_has_hbm_dram_and_bandwidth() {
    let m = load("64intel64-heteromem.xml");
    let kinds: std::collections::BTreeSet<&str> = m
        .numa_nodes
        .iter()
        .filter_map(|n| n.subtype.as_deref())
        .collect();
    assert!(kinds.contains("HBM") && kinds.contains("DRAM"), "{kinds:?}");
    let bw = m
        .memory_attributes
        .iter()
        .find(|a| a.name == "Bandwidth")
        .expect("bandwidth attribute");
    assert!(bw.higher_is_better);
    assert!(bw
        .values
        .iter()
        .all(|v| v.initiator_cpus.is_some() && v.value > 0));
    // An HBM node has more bandwidth than the DRAM node of the same CPUs.
    let hbm = m.node(7).unwrap();
    let dram = m.node(0).unwrap();
    assert_eq!(hbm.cpus, dram.cpus);
    let value = |node: u32| {
        bw.values
            .iter()
            .filter(|v| v.target_node == node)
            .map(|v| v.value)
            .max()
            .unwrap()
    };
    assert!(value(7) > value(0), "HBM {} vs DRAM {}", value(7), value(0));
}

#[test]
fn kunpeng_snapshot_archive() {
    let m = load("128arm-2pa2n8cluster4co.tar.bz2");
    assert_eq!(
        (m.packages.len(), m.numa_nodes.len(), m.cores.len()),
        (2, 4, 128)
    );
    // 4-core clusters.
    let clusters: Vec<_> = m
        .groups
        .iter()
        .filter(|g| g.subtype.as_deref() == Some("Cluster"))
        .collect();
    assert_eq!(clusters.len(), 32);
    assert!(clusters.iter().all(|g| g.cpus.len() == 4));
    // HiSilicon (0x48) TSV110 (0xd01), from the snapshot's /proc/cpuinfo, not from this machine.
    assert_eq!(m.cpu.implementer, Some(0x48));
    assert_eq!(m.cpu.part, Some(0xd01));
    assert_eq!(m.cpu.vendor.as_deref(), Some("HiSilicon"));
    assert_eq!((m.cpu.variant, m.cpu.revision), (Some(1), Some(0)));
    // Named from numalab's MIDR table (the kernel's cpuinfo has no model name on Arm).
    assert_eq!(
        m.cpu.model_name.as_deref(),
        Some("HiSilicon TSV110 / Kunpeng 920 (MIDR 0x481fd010, r1p0)")
    );
    assert_eq!(m.cpu.family, None);
    let slit = m.slit().unwrap();
    assert_eq!(slit.values[0], vec![10, 16, 32, 33]);
    assert_eq!(
        m.software.kernel.as_deref(),
        Some("5.15.0-rc1-00005-g4c1b4a4d90b6-dirty")
    );
}

#[test]
fn snapshot_folder_loads_like_the_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let file = std::fs::File::open(fixture("128arm-2pa2n8cluster4co.tar.bz2")).unwrap();
    tar::Archive::new(bzip2::read::BzDecoder::new(file))
        .unpack(tmp.path())
        .unwrap();
    let dir = tmp.path().join("128arm-2pa2n8cluster4co");
    let a = machine(&Input::SnapshotDir(dir)).unwrap();
    let b = load("128arm-2pa2n8cluster4co.tar.bz2");
    assert_eq!(a.topology_hash(), b.topology_hash());
}

#[test]
fn dgx_gb10_has_two_cpu_kinds() {
    let m = load("nvidia-dgx-gb10.xml");
    assert_eq!(m.cpu_kinds.len(), 2);
    let a: Vec<u32> = m.cpu_kinds[0].cpus.clone();
    let b: Vec<u32> = m.cpu_kinds[1].cpus.clone();
    assert_eq!(a.len() + b.len(), 20);
    assert_ne!(m.cpu_kinds[0].efficiency, m.cpu_kinds[1].efficiency);
    // Cores know their kind on hybrid machines.
    assert!(m.cores.iter().all(|c| c.kind.is_some()));
}

#[test]
fn arm_cpus_with_two_core_kinds_name_both() {
    // From hwloc's CPU kinds (the XML) and from the snapshot's /proc/cpuinfo.
    let both = "10 x Arm Cortex-A725 (MIDR 0x410fd871, r0p1) + 10 x Arm Cortex-X925 (MIDR 0x410fd851, r0p1)";
    for f in ["nvidia-dgx-gb10.xml", "nvidia-dgx-gb10.tar.bz2"] {
        let m = load(f);
        assert_eq!(m.cpu.model_name.as_deref(), Some(both), "{f}");
        assert_eq!(m.cpu.vendor.as_deref(), Some("Arm"), "{f}");
    }
}

#[test]
fn memory_side_caches_and_memory_only_nodes() {
    let m = load("memorysidecaches.xml");
    assert!(m.caches.iter().any(|c| c.kind == CacheKind::MemorySide));
    let m = load("fakeheteromemtiers.tar.bz2");
    let nvm = m
        .numa_nodes
        .iter()
        .filter(|n| n.subtype.as_deref() == Some("NVM"))
        .count();
    assert_eq!(nvm, 3);
}

#[test]
fn memory_only_nodes_are_told_apart_like_linux_does() {
    // hwloc gives a memory-only node the cpuset of its locality (kept in `cpus`); Linux
    // lists each CPU under one node only. Expected: the snapshot's own
    // sys/devices/system/node/node*/cpulist (nodes 0-2 have CPUs, 4, 6, 8, 9 none).
    let m = load("fakeheteromemtiers.tar.bz2");
    let nodes: Vec<(u32, bool)> = m
        .numa_nodes
        .iter()
        .map(|n| (n.os_index, n.has_cpus))
        .collect();
    assert_eq!(
        nodes,
        vec![
            (0, true),
            (1, true),
            (2, true),
            (4, false),
            (6, false),
            (8, false),
            (9, false)
        ]
    );
    assert_eq!(m.node(8).unwrap().cpus, vec![0, 1], "locality kept");
    assert_eq!(m.pu(0).unwrap().numa_node, Some(0));
    assert_eq!(m.pu(5).unwrap().numa_node, Some(2));
    // Xeon Phi in flat mode: the MCDRAM node has no CPUs of its own.
    let m = load("llnl-knl-quad-flat-hwloc1.xml");
    assert_eq!(
        m.cpu_nodes().map(|n| n.os_index).collect::<Vec<_>>(),
        vec![0]
    );
    assert!(m.pus.iter().all(|p| p.numa_node == Some(0)));
}

#[test]
fn topology_hash_is_structural() {
    let a = load("Intel-Skylake-2xXeon6140.xml");
    let mut b = a.clone();
    b.source = numalab_schema::machine::MachineSource::Live;
    b.software.hostname = Some("elsewhere".into());
    // Node memory changes with hot-plug and ballooning (VMs): not structure.
    b.numa_nodes[0].memory_bytes += 1 << 30;
    assert_eq!(a.topology_hash(), b.topology_hash());
    b.pus.pop();
    assert_ne!(a.topology_hash(), b.topology_hash());
}

#[test]
fn bad_inputs_give_one_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, content: &[u8]| {
        let p = tmp.path().join(name);
        std::fs::write(&p, content).unwrap();
        p
    };
    let cases: Vec<(PathBuf, &str)> = vec![
        (tmp.path().join("missing.xml"), "no such file"),
        (write("empty.xml", b""), "the file is empty"),
        (write("text.xml", b"hello world"), "not XML"),
        (write("other.xml", b"<?xml version=\"1.0\"?><html></html>"), "no <topology>"),
        (
            write("trunc.xml", b"<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\""),
            "truncated",
        ),
        (
            write("broken.xml", b"<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Bogus\"></object></topology>"),
            "malformed",
        ),
        (fixture("AMD-19h-Zen3-2xEpyc-7763.hwloc3-format.xml"), "hwloc 3.x"),
        (write("empty.tar.bz2", b""), "archive is empty"),
        (write("junk.tar.gz", b"\x1f\x8bnot really gzip"), "cannot unpack"),
    ];
    for (path, expected) in cases {
        let err = Input::detect(&path).and_then(|i| machine(&i)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(expected), "{}: {msg}", path.display());
        assert!(
            msg.contains(&path.display().to_string()),
            "error does not name the input: {msg}"
        );
        assert!(!msg.contains('\n'), "one line: {msg}");
        assert!(matches!(
            err,
            TopoError::Unreadable { .. } | TopoError::BadInput { .. } | TopoError::Hwloc { .. }
        ));
    }
    // An empty folder and an archive holding no snapshot.
    let empty_dir = tmp.path().join("emptydir");
    std::fs::create_dir(&empty_dir).unwrap();
    let err = machine(&Input::detect(&empty_dir).unwrap()).unwrap_err();
    assert!(err.to_string().contains("not a sysfs snapshot"), "{err}");
    let tarball = tmp.path().join("nosnap.tar.gz");
    {
        let f = std::fs::File::create(&tarball).unwrap();
        let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        let mut t = tar::Builder::new(gz);
        let data = b"hello";
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        t.append_data(&mut h, "readme.txt", &data[..]).unwrap();
        t.into_inner().unwrap().finish().unwrap();
    }
    let err = machine(&Input::detect(&tarball).unwrap()).unwrap_err();
    assert!(err.to_string().contains("not a sysfs snapshot"), "{err}");
}

#[test]
fn live_machine_matches_sysfs() {
    let m = numalab_topo::live().unwrap();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = numalab_schema::cpulist::parse(online.trim()).unwrap();
    assert_eq!(m.pu_ids(), online);
    let mut nodes: Vec<u32> = std::fs::read_dir("/sys/devices/system/node")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("node")?
                .parse()
                .ok()
        })
        .collect();
    nodes.sort_unstable();
    let mut ours: Vec<u32> = m.numa_nodes.iter().map(|n| n.os_index).collect();
    ours.sort_unstable();
    assert_eq!(ours, nodes);
    for n in &m.numa_nodes {
        let list = std::fs::read_to_string(format!(
            "/sys/devices/system/node/node{}/cpulist",
            n.os_index
        ))
        .unwrap();
        let list = if list.trim().is_empty() {
            vec![]
        } else {
            numalab_schema::cpulist::parse(list.trim()).unwrap()
        };
        assert_eq!(n.cpus, list, "node {}", n.os_index);
        // hwloc's node memory is the kernel's MemTotal for the node.
        let meminfo = std::fs::read_to_string(format!(
            "/sys/devices/system/node/node{}/meminfo",
            n.os_index
        ))
        .unwrap();
        let kb: u64 = meminfo
            .lines()
            .find(|l| l.contains("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert_eq!(n.memory_bytes, kb * 1024, "node {}", n.os_index);
    }
    // L1d line size as the kernel reports it.
    let line: u32 =
        std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    let l1 = m
        .caches
        .iter()
        .find(|c| c.level == 1 && c.kind == CacheKind::Data)
        .unwrap();
    assert_eq!(l1.line_bytes, Some(line));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(m.software.kernel.as_deref(), Some(kernel.trim()));
}

#[test]
fn memory_policies_parse_against_a_machine() {
    use numalab_schema::memory::MemPolicy;
    use numalab_topo::select::parse_policy;
    let m = load("llnl-epyc-dual-sock-hwloc1.xml");
    assert_eq!(parse_policy("Local", &m).unwrap(), MemPolicy::FirstTouch);
    assert_eq!(
        parse_policy("bind:3", &m).unwrap(),
        MemPolicy::Bind(vec![3])
    );
    assert_eq!(
        parse_policy("interleave:all", &m).unwrap(),
        MemPolicy::Interleave((0..8).collect())
    );
    assert_eq!(
        parse_policy("preferred:7", &m).unwrap(),
        MemPolicy::Preferred(7)
    );
    let e = parse_policy("bind:0-1", &m).unwrap_err().to_string();
    assert_eq!(e, "--policy \"bind:0-1\": give exactly one node");
    let e = parse_policy("interleave:9", &m).unwrap_err().to_string();
    assert!(
        e.starts_with("--policy \"interleave:9\": NUMA node 9 does not exist"),
        "{e}"
    );
    let e = parse_policy("sideways", &m).unwrap_err().to_string();
    assert!(e.contains("use first-touch, bind:N"), "{e}");
}

#[test]
fn cpu_selections_resolve_against_a_machine() {
    use numalab_topo::select::{resolve_nodes, CpuSelection};
    let m = load("llnl-epyc-dual-sock-hwloc1.xml");
    let sel = |s: &str| CpuSelection::parse(s).unwrap().resolve(&m);
    assert_eq!(
        sel("node:1").unwrap(),
        numalab_schema::cpulist::parse("8-15,72-79").unwrap()
    );
    assert_eq!(sel("package:1").unwrap().len(), 64);
    assert_eq!(sel("core:0").unwrap(), vec![0, 64]);
    assert_eq!(sel("0-3,node:7").unwrap().len(), 4 + 16);
    assert_eq!(sel("all").unwrap().len(), 128);
    assert!(sel("200")
        .unwrap_err()
        .to_string()
        .contains("does not exist"));
    assert!(sel("node:9")
        .unwrap_err()
        .to_string()
        .contains("NUMA node 9 does not exist"));
    assert!(sel("package:2")
        .unwrap_err()
        .to_string()
        .contains("package 2"));
    assert!(CpuSelection::parse("socket:1")
        .unwrap_err()
        .to_string()
        .contains("unknown prefix"));
    assert!(CpuSelection::parse("").is_err());
    assert_eq!(resolve_nodes("all", &m).unwrap().len(), 8);
    assert!(resolve_nodes("8", &m).is_err());
    let knl = load("llnl-knl-snc4-flat-hwloc1.xml");
    assert_eq!(
        CpuSelection::parse("node:4")
            .unwrap()
            .resolve(&knl)
            .unwrap()
            .len(),
        72
    );
}

#[test]
fn summary_and_tree_render_big_machines() {
    let m = load("128arm-2pa2n8cluster4co.tar.bz2");
    let s = numalab_topo::render::summary(&m);
    assert!(
        s.contains("2 packages x 64 cores, 1 thread/core (128 PUs)"),
        "{s}"
    );
    assert!(s.contains("4 NUMA nodes: 0 = CPUs 0-31"), "{s}");
    assert!(s.contains("distances (SLIT) 10/16/25/32/33"), "{s}");
    let t = numalab_topo::render::tree(&m);
    assert!(t.contains("8 x Group(Cluster)"), "{t}");
    assert!(t.contains("NUMA 0"), "{t}");
    assert!(t.lines().count() < 40, "the tree is not condensed:\n{t}");
}

#[test]
fn synthetic_machines_are_described() {
    let m = numalab_topo::synthetic("pack:2 numa:1 core:80 pu:1").unwrap();
    assert_eq!(
        (
            m.summary.packages,
            m.summary.numa_nodes,
            m.summary.cores,
            m.summary.pus
        ),
        (2, 2, 160, 160)
    );
    assert_eq!(m.numa_nodes[1].cpus, (80..160).collect::<Vec<u32>>());
    assert!(matches!(
        m.source,
        numalab_schema::machine::MachineSource::Model { .. }
    ));
    let err = numalab_topo::synthetic("pack:two").unwrap_err();
    assert!(err.to_string().contains("synthetic"), "{err}");
}
