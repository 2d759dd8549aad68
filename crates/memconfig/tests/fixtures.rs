//! The parser and the peak rules against the shipped SMBIOS fixtures (constructed from
//! DSP0134, see tests/fixtures/smbios/README.md) and sysfs NUMA trees. Expected figures
//! are computed by hand here: channels x MT/s x 10^6 x 64 bits / 8.

use numalab_memconfig::synth::{self, NodeSpec};
use numalab_memconfig::{read, MemConfig};
use std::fs;
use std::path::{Path, PathBuf};

const GIB: u64 = 1 << 30;
const BLOCK: u64 = 2 * GIB;

fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/smbios")
        .join(name)
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// A temporary root holding a shipped fixture's files and a NUMA tree.
fn root_with_nodes(name: &str, nodes: &[NodeSpec]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture_dir(name).join("sys"), &dir.path().join("sys"));
    synth::write_nodes(dir.path(), BLOCK, nodes).unwrap();
    dir
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-6 * b.abs())
}

fn assert_peak(m: &MemConfig, expected: f64) {
    assert!(
        close(m.peak(), expected),
        "peak {:?} != {expected}: {}\n{:#?}",
        m.peak(),
        m.summary(),
        m.notes
    );
}

/// Block numbers of `[start, end)` bytes.
fn blocks(start: u64, end: u64) -> std::ops::Range<u64> {
    start / BLOCK..end / BLOCK
}

#[test]
fn fixtures_match_their_generator() {
    for f in synth::fixtures() {
        for (rel, bytes) in synth::files(&f) {
            let p = fixture_dir(f.name).join(&rel);
            let on_disk = fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(
                on_disk == bytes,
                "{} differs from its description: run `cargo run -p numalab-memconfig --example gen_fixtures`",
                p.display()
            );
        }
    }
}

#[test]
fn altra_single_socket_8_channels_ddr4_3200() {
    let m = read(&fixture_dir("altra-1s-ddr4-3200"));
    assert_peak(&m, 8.0 * 3200e6 * 8.0);
    assert!(close(m.peak_gbps(), 204.8));
    assert_eq!(m.source.kind, "table");
    assert_eq!(m.source.version.as_deref(), Some("3.3.0"));
    assert_eq!((m.slots, m.populated), (16, 8));
    assert_eq!(m.channels.len(), 8);
    // "DIMM 1" does not name a channel: one DIMM per channel, said.
    assert!(m.channels.iter().all(|c| c.assumed));
    assert!(
        m.assumptions
            .iter()
            .any(|a| a.contains("one DIMM per channel assumed")),
        "{:?}",
        m.assumptions
    );
    let d = m.devices.iter().find(|d| d.locator == "DIMM 1").unwrap();
    assert_eq!(d.size_bytes, Some(32 * GIB));
    assert_eq!(d.memory_type, "DDR4");
    assert_eq!(
        (d.total_width_bits, d.data_width_bits),
        (Some(72), Some(64))
    );
    assert_eq!(m.arrays[0].ranges[0].start, 0x8000_0000);
    assert_eq!(m.arrays[0].ranges[0].len(), 256 * GIB);
    let s = m.socket(0).unwrap();
    assert_eq!(s.method, "single_processor");
    assert!(close(s.peak.bytes_per_s, 8.0 * 3200e6 * 8.0));
    assert_eq!(
        m.summary(),
        "8 channels DDR4-3200 (8 of 16 slots) (1 DIMM per channel assumed), 204.8 GB/s peak, 1 socket"
    );
    // No node tree under this root.
    assert!(m.nodes.is_empty());
    assert!(m.nodes_reason.as_deref().unwrap().contains("node"));
}

#[test]
fn genoa_12_channels_ddr5_4800() {
    let m = read(&fixture_dir("genoa-1s-ddr5-4800"));
    assert_peak(&m, 12.0 * 4800e6 * 8.0);
    assert!(close(m.peak_gbps(), 460.8));
    assert_eq!(m.channels.len(), 12);
    assert!(m.channels.iter().all(|c| !c.assumed));
    let labels: Vec<&str> = m.channels.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L"]
    );
    let c = &m.channels[0];
    assert_eq!(c.speed_mts, Some(4800));
    assert_eq!(c.speed_source, "configured");
    assert_eq!(c.data_width_bits, Some(64));
    assert!(close(c.peak.bytes_per_s, 4800e6 * 64.0 / 8.0));
    let d = &m.devices[0];
    assert_eq!(d.memory_type, "DDR5");
    assert_eq!(
        (d.total_width_bits, d.data_width_bits),
        (Some(80), Some(64))
    );
    assert_eq!(d.socket_label.as_deref(), Some("P0"));
    let s = m.socket(0).unwrap();
    assert_eq!((s.method.as_str(), s.channels), ("locators", 12));
    assert_eq!(
        m.summary(),
        "12 channels DDR5-4800 (12 of 12 slots), 460.8 GB/s peak, 1 socket"
    );
    assert!(m.assumptions.is_empty(), "{:?}", m.assumptions);
}

#[test]
fn intel_half_populated_counts_channels_with_a_dimm() {
    let m = read(&fixture_dir("intel-2s-half-ddr4-2933"));
    // Socket 0: A1+A2 (one channel), B1, C1 -> 3 channels; socket 1: A1, B1, C1, D1 -> 4.
    assert_peak(&m, 7.0 * 2933e6 * 8.0);
    assert_eq!((m.slots, m.populated), (16, 8));
    assert_eq!(m.channels.len(), 7);
    let s0 = m.socket(0).unwrap();
    let s1 = m.socket(1).unwrap();
    assert_eq!(
        (s0.label.as_deref(), s1.label.as_deref()),
        (Some("P1"), Some("P2"))
    );
    assert_eq!((s0.slots, s0.populated, s0.channels), (8, 4, 3));
    assert_eq!((s1.slots, s1.populated, s1.channels), (8, 4, 4));
    assert!(close(s0.peak.bytes_per_s, 3.0 * 2933e6 * 8.0));
    assert!(close(s1.peak.bytes_per_s, 4.0 * 2933e6 * 8.0));
    let a = m
        .channels
        .iter()
        .find(|c| c.id == "socket 0 channel A")
        .unwrap();
    assert_eq!(a.devices, ["P1-DIMMA1", "P1-DIMMA2"]);
    // 32 GiB needs the extended size field; type 20 ranges are attached.
    let d = m.devices.iter().find(|d| d.locator == "P2-DIMMD1").unwrap();
    assert_eq!(d.size_bytes, Some(32 * GIB));
    assert_eq!(d.mappings[0].range.start, 128 * GIB);
    assert_eq!(d.mappings[0].interleave_position, Some(4));
    assert_eq!(
        m.summary(),
        "7 channels DDR4-2933 (8 of 16 slots), 164.2 GB/s peak, 2 sockets"
    );
}

#[test]
fn two_dimms_per_channel_do_not_double_the_peak() {
    let m = read(&fixture_dir("ws-1s-2dpc-ddr4-2666"));
    assert_eq!(m.source.kind, "entries");
    assert_eq!(m.source.version, None);
    // 4 channels at the configured 2666, not 8 DIMMs, not the rated 2933.
    assert_peak(&m, 4.0 * 2666e6 * 8.0);
    assert_eq!(m.channels.len(), 4);
    assert!(m.channels.iter().all(|c| c.devices.len() == 2));
    assert!(m.channels.iter().all(|c| c.speed_source == "configured"));
    assert_eq!(m.devices[0].speed_mts, Some(2933));
    assert_eq!(m.devices[0].configured_speed_mts, Some(2666));
    assert_eq!(m.socket(0).unwrap().method, "locators");
}

#[test]
fn qemu_default_tables_give_no_peak() {
    let m = read(&fixture_dir("qemu-default"));
    assert_eq!(m.peak(), None);
    let why = m.unknown_reason().unwrap();
    assert!(why.contains("DIMM 0") && why.contains("no speed"), "{why}");
    assert!(why.contains("QEMU"), "{why}");
    assert_eq!((m.slots, m.populated), (1, 1));
    assert!(m.notes.iter().any(|n| n.contains("virtual machine")));
    assert!(m.summary().contains("peak unknown"), "{}", m.summary());

    // `-smbios type=17,speed=4800`: a speed, but still no data width (type RAM).
    let f = synth::Fixture {
        name: "qemu-speed",
        description: "",
        machine: synth::qemu(4800),
        form: synth::Form::Tables,
        truncate_at: None,
    };
    let dir = tempfile::tempdir().unwrap();
    synth::write(&f, dir.path()).unwrap();
    let m = read(dir.path());
    assert_eq!(m.peak(), None);
    assert_eq!(m.devices[0].configured_speed_mts, Some(4800));
    let why = m.unknown_reason().unwrap();
    assert!(
        why.contains("no data width") && !why.contains("no speed"),
        "{why}"
    );
}

#[test]
fn truncated_table_gives_no_peak() {
    let m = read(&fixture_dir("genoa-truncated"));
    assert_eq!(m.peak(), None);
    let why = m.unknown_reason().unwrap();
    assert!(why.contains("truncated"), "{why}");
    assert!(
        m.notes.iter().any(|n| n.contains("truncated")),
        "{:?}",
        m.notes
    );
    assert_eq!(m.devices.len(), 5);
    assert_eq!(m.source.skipped, 1);
}

#[test]
fn garbage_table_file_gives_no_peak() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("sys/firmware/dmi/tables");
    fs::create_dir_all(&t).unwrap();
    fs::write(t.join("DMI"), b"\x11\x02garbage\xff\xff\x00").unwrap();
    fs::write(t.join("smbios_entry_point"), b"_SM3_").unwrap();
    let m = read(dir.path());
    assert_eq!(m.peak(), None);
    assert!(
        m.notes.iter().any(|n| n.contains("entry point")),
        "{:?}",
        m.notes
    );
    assert!(
        m.notes.iter().any(|n| n.contains("corrupt")),
        "{:?}",
        m.notes
    );
}

#[test]
fn empty_dmi_folder_gives_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("sys/firmware/dmi")).unwrap();
    let m = read(dir.path());
    assert_eq!(m.peak(), None);
    assert!(m
        .unknown_reason()
        .unwrap()
        .contains("neither tables/DMI nor entries"));
}

#[test]
fn record_round_trips_through_json() {
    let m = read(&fixture_dir("intel-2s-half-ddr4-2933"));
    let s = serde_json::to_string(&m).unwrap();
    let back: MemConfig = serde_json::from_str(&s).unwrap();
    assert_eq!(back, m);
}

// --- NUMA nodes ---------------------------------------------------------------

fn genoa_nps(nodes: usize) -> Vec<NodeSpec> {
    // 768 GiB at [0, 2 GiB) and [4 GiB, 770 GiB), split in address order.
    let per = 768 * GIB / nodes as u64;
    (0..nodes)
        .map(|k| {
            let (lo, hi) = (k as u64 * per, (k as u64 + 1) * per);
            // Offset into the address space: the first 2 GiB are below the hole.
            let addr = |x: u64| if x < 2 * GIB { x } else { x + 2 * GIB };
            let mut b = Vec::new();
            if lo < 2 * GIB {
                b.push(blocks(lo, 2 * GIB.min(hi)));
            }
            b.push(blocks(addr(lo.max(2 * GIB)), addr(hi)));
            NodeSpec {
                node: k as u32,
                blocks: b,
                cpus: (k as u32 * 24)..(k as u32 + 1) * 24,
                package: 0,
            }
        })
        .collect()
}

#[test]
fn genoa_nps2_splits_the_socket_evenly() {
    let dir = root_with_nodes("genoa-1s-ddr5-4800", &genoa_nps(2));
    let m = read(dir.path());
    assert_peak(&m, 12.0 * 4800e6 * 8.0);
    for n in 0..2 {
        let np = m.node(n).unwrap();
        assert_eq!(np.method, "split_evenly_assumed");
        assert_eq!(np.channels, Some(6.0));
        assert!(close(np.peak.bytes_per_s, 12.0 * 4800e6 * 8.0 / 2.0));
        assert_eq!(np.memory_bytes, Some(384 * GIB));
    }
    assert!(
        m.assumptions.iter().any(|a| a.contains("split evenly")),
        "{:?}",
        m.assumptions
    );
}

#[test]
fn genoa_nps1_maps_the_array_range() {
    let dir = root_with_nodes("genoa-1s-ddr5-4800", &genoa_nps(1));
    let m = read(dir.path());
    let np = m.node(0).unwrap();
    assert_eq!(np.method, "array_address_ranges");
    assert!(close(np.peak.bytes_per_s, 12.0 * 4800e6 * 8.0));
}

fn intel_nodes(per_socket: u32) -> Vec<NodeSpec> {
    let per = 128 * GIB / u64::from(per_socket);
    (0..2 * per_socket)
        .map(|k| {
            let s = k / per_socket;
            let lo = u64::from(k) * per;
            NodeSpec {
                node: k,
                blocks: vec![blocks(lo, lo + per)],
                cpus: k * 10..(k + 1) * 10,
                package: s,
            }
        })
        .collect()
}

#[test]
fn intel_device_ranges_map_channels_to_nodes_exactly() {
    let mut nodes = intel_nodes(1);
    // A memory-only node (CXL expander, say) that no DIMM maps into.
    nodes.push(NodeSpec {
        node: 2,
        blocks: vec![blocks(256 * GIB, 288 * GIB)],
        cpus: 0..0,
        package: 0,
    });
    let dir = root_with_nodes("intel-2s-half-ddr4-2933", &nodes);
    let m = read(dir.path());
    let (n0, n1, n2) = (m.node(0).unwrap(), m.node(1).unwrap(), m.node(2).unwrap());
    assert_eq!(n0.method, "device_address_ranges");
    assert_eq!(n1.method, "device_address_ranges");
    assert!(close(n0.peak.bytes_per_s, 3.0 * 2933e6 * 8.0));
    assert!(close(n1.peak.bytes_per_s, 4.0 * 2933e6 * 8.0));
    assert_eq!((n0.channels, n1.channels), (Some(3.0), Some(4.0)));
    assert_eq!(n2.peak.bytes_per_s, None);
    assert!(n2.peak.reason.as_deref().unwrap().contains("memory-only"));
    assert_eq!((n0.socket, n1.socket), (Some(0), Some(1)));
}

#[test]
fn intel_sub_numa_clustering_splits_each_socket() {
    // SNC2: each device's range spans both nodes of its socket, so the ranges cannot
    // say which node a channel serves: split evenly.
    let dir = root_with_nodes("intel-2s-half-ddr4-2933", &intel_nodes(2));
    let m = read(dir.path());
    for (n, ch) in [(0, 3.0), (1, 3.0), (2, 4.0), (3, 4.0)] {
        let np = m.node(n).unwrap();
        assert_eq!(np.method, "split_evenly_assumed", "node {n}");
        assert_eq!(np.channels, Some(ch / 2.0));
        assert!(
            close(np.peak.bytes_per_s, ch * 2933e6 * 8.0 / 2.0),
            "node {n}"
        );
    }
    assert!(
        m.assumptions
            .iter()
            .any(|a| a.contains("socket 0's 3 channel(s) split evenly")
                && a.contains("do not divide")),
        "{:?}",
        m.assumptions
    );
}

#[test]
fn intel_without_type_20_uses_the_array_ranges() {
    let mut machine = synth::intel_2s_half();
    machine.device_maps.clear();
    let f = synth::Fixture {
        name: "intel-no-t20",
        description: "",
        machine,
        form: synth::Form::Tables,
        truncate_at: None,
    };
    let dir = tempfile::tempdir().unwrap();
    synth::write(&f, dir.path()).unwrap();
    synth::write_nodes(dir.path(), BLOCK, &intel_nodes(1)).unwrap();
    let m = read(dir.path());
    let (n0, n1) = (m.node(0).unwrap(), m.node(1).unwrap());
    assert_eq!(n0.method, "array_address_ranges");
    assert!(close(n0.peak.bytes_per_s, 3.0 * 2933e6 * 8.0));
    assert!(close(n1.peak.bytes_per_s, 4.0 * 2933e6 * 8.0));
}

#[test]
fn nodes_without_a_system_peak_are_unknown_with_the_reason() {
    let dir = root_with_nodes(
        "qemu-default",
        &[NodeSpec {
            node: 0,
            blocks: vec![blocks(0, 2 * GIB), blocks(4 * GIB, 10 * GIB)],
            cpus: 0..2,
            package: 0,
        }],
    );
    let m = read(dir.path());
    let np = m.node(0).unwrap();
    assert_eq!(np.method, "unknown");
    assert!(np
        .peak
        .reason
        .as_deref()
        .unwrap()
        .contains("system peak unknown"));
}

#[test]
fn altra_memory_arrays_give_sockets_on_two_sockets() {
    // Mt. Jade dual socket: socket 0's slots say "DIMM n", socket 1's "Socket 1 DIMM n";
    // one array per socket.
    let mut m0 = synth::altra_1s();
    let mut second = synth::altra_1s();
    for d in &mut second.dimms {
        d.handle += 0x100;
        d.array = 0x0021;
        d.locator = format!("Socket 1 {}", d.locator);
    }
    m0.arrays.push(synth::Array {
        handle: 0x0021,
        ..m0.arrays[0].clone()
    });
    m0.dimms.extend(second.dimms);
    m0.processors.push(synth::Processor {
        handle: 0x0005,
        designation: "CPU 1".into(),
        populated: true,
    });
    let cfg = numalab_memconfig::from_table(Some(&m0.entry_point()), &m0.table());
    assert!(close(cfg.peak(), 16.0 * 3200e6 * 8.0));
    assert_eq!(cfg.sockets.len(), 2);
    assert_eq!(cfg.sockets[1].method, "memory_arrays");
    assert!(close(cfg.sockets[1].peak.bytes_per_s, 8.0 * 3200e6 * 8.0));
    assert!(cfg.assumptions.iter().any(|a| a.contains("one per socket")));
}
