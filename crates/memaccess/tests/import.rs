//! The importer and the analysis on the constructed `perf script` file
//! (tests/fixtures/graphwalk.script, see its README). The expected answers are computed
//! here from the same table the file was written from, not by the library.

use numalab_memaccess::{import, looks_like, parse_regions, Error, ImportOptions, ThresholdSpec};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const FIXTURE: &str = include_str!("fixtures/graphwalk.script");
const EXE: &str = "/opt/graphwalk/bin/graphwalk";

#[derive(Clone, Copy, PartialEq)]
enum K {
    L1,
    L3,
    Lram,
    Rram,
    Hitm,
    Store,
}

/// (cpu, addr, kind, weight, phys, symbol or region, mapping).
type Row = (u32, u64, K, u64, u64, &'static str, &'static str);

const ANON: &str = "anon 0x7f0000000000-0x7f0010000000";

fn table() -> Vec<Row> {
    use K::*;
    vec![
        (
            0,
            0x7f0000001000,
            Rram,
            400,
            0x48000000,
            "graph.edges",
            ANON,
        ),
        (
            0,
            0x7f0000002040,
            Rram,
            380,
            0x48001040,
            "graph.edges",
            ANON,
        ),
        (
            1,
            0x7f0000003080,
            Rram,
            350,
            0x48002080,
            "graph.edges",
            ANON,
        ),
        (
            1,
            0x7f00000040c0,
            Lram,
            300,
            0x10003000,
            "graph.edges",
            ANON,
        ),
        (2, 0x7f0000005000, L3, 90, 0x10004000, "graph.edges", ANON),
        (2, 0x7f0000006000, L3, 80, 0x10005000, "graph.edges", ANON),
        (
            3,
            0x7f0000007000,
            Rram,
            320,
            0x48006000,
            "graph.edges",
            ANON,
        ),
        (
            3,
            0x7f0000008000,
            Lram,
            260,
            0x10007000,
            "graph.edges",
            ANON,
        ),
        (
            0,
            0x7f0000009000,
            Rram,
            500,
            0x48008000,
            "graph.edges",
            ANON,
        ),
        (
            1,
            0x7f000000a000,
            Rram,
            410,
            0x48009000,
            "graph.edges",
            ANON,
        ),
        (2, 0x7f0004000100, L3, 70, 0x1000a100, "graph.nodes", ANON),
        (
            2,
            0x7f0004000200,
            Lram,
            240,
            0x1000b200,
            "graph.nodes",
            ANON,
        ),
        (
            3,
            0x7f0004000300,
            Rram,
            360,
            0x4800c300,
            "graph.nodes",
            ANON,
        ),
        (0, 0x555555559100, L1, 35, 0x1000d100, "", "[heap]"),
        (1, 0x555555559140, L3, 45, 0x1000d140, "", "[heap]"),
        (2, 0x555555559180, Lram, 220, 0x1000d180, "", "[heap]"),
        (3, 0x5555555591c0, Rram, 330, 0x4800d1c0, "", "[heap]"),
        (1, 0x555555559040, Store, 0, 0x1000d040, "", "[heap]"),
        (1, 0x555555559040, Store, 0, 0x1000d040, "", "[heap]"),
        (2, 0x555555559048, Store, 0, 0x1000d048, "", "[heap]"),
        (2, 0x555555559048, Store, 0, 0x1000d048, "", "[heap]"),
        (3, 0x555555559050, Hitm, 150, 0x1000d050, "", "[heap]"),
        (1, 0x555555559080, Store, 0, 0x1000d080, "", "[heap]"),
        (2, 0x555555559080, Store, 0, 0x1000d080, "", "[heap]"),
        (5, 0x5555555590c0, Store, 0, 0x1000d0c0, "", "[heap]"),
        (5, 0x5555555590c8, Store, 0, 0x1000d0c8, "", "[heap]"),
        (6, 0x7fffffffe100, L1, 31, 0x1000e100, "", "[stack]"),
        (6, 0x7fffffffe140, L1, 33, 0x1000e140, "", "[stack]"),
        (7, 0x555555556010, L1, 32, 0x1000f010, "", EXE),
        (7, 0x600000000000, L3, 50, 0, "", "[unmapped]"),
    ]
}

const REGIONS: &str =
    "# name start len\ngraph.edges 0x7f0000000000 64M\ngraph.nodes 0x7f0004000000 0x1000000\n";

fn is_load(k: K) -> bool {
    k != K::Store
}

fn opts(threshold: ThresholdSpec) -> ImportOptions {
    ImportOptions {
        path: Some("graphwalk.script".into()),
        regions: parse_regions(REGIONS).unwrap(),
        read_symbols: false,
        analysis: numalab_memaccess::AnalysisOptions {
            threshold,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn the_fixture_is_recognised_and_perf_stat_is_not() {
    assert!(looks_like(FIXTURE));
    assert!(!looks_like(
        "# started on Mon\n1234,,cycles,1000,100.00,,\n5678,,instructions,1000,100.00,,\n"
    ));
    assert!(!looks_like(
        "{\"counter-value\" : \"1234\", \"unit\" : \"\", \"event\" : \"cycles\"}\n"
    ));
}

#[test]
fn samples_are_read_field_by_field() {
    let data = numalab_memaccess::script::parse(FIXTURE).unwrap();
    let t = table();
    assert_eq!(data.samples.len(), t.len());
    assert_eq!(data.mappings.len(), 5);
    assert!(data.has_phys_addr && data.has_ip && data.has_time);
    assert_eq!(
        data.events,
        vec![
            "cpu/mem-loads,ldlat=30/P".to_string(),
            "cpu/mem-stores/P".into()
        ]
    );
    for (s, r) in data.samples.iter().zip(&t) {
        assert_eq!(s.pid, 4242);
        assert_eq!(s.tid, 4242 + r.0 % 4);
        assert_eq!(s.cpu, r.0);
        assert_eq!(s.addr, r.1);
        assert_eq!(s.weight, r.3);
        assert_eq!(s.phys_addr, (r.4 != 0).then_some(r.4));
        assert_eq!(
            s.data_src.op() == numalab_memaccess::datasrc::Op::Load,
            is_load(r.2)
        );
        assert_eq!(s.data_src.remote_node(), r.2 == K::Rram);
        assert_eq!(s.data_src.hitm(), r.2 == K::Hitm);
    }
    // A symbol with spaces and parentheses, before " (dso)".
    let at = data.samples[13].code.unwrap();
    assert_eq!(
        data.code_names[at as usize],
        "std::vector<int, std::allocator<int> >::at(unsigned long) const"
    );
    assert_eq!(data.samples[29].code, None, "[unknown] is no symbol");
    let m = &data.mappings[1];
    assert_eq!(
        (
            m.start,
            m.len,
            m.pgoff,
            m.dev_ino,
            m.prot.as_deref(),
            m.path.as_str()
        ),
        (
            0x555555556000,
            0x1000,
            0x2000,
            Some((8, 1, 131090)),
            Some("rw-p"),
            EXE
        )
    );
    assert_eq!(data.samples[0].time_ns, Some(8_123_400_142_000));
}

/// Expected (samples, loads, stores, slow, remote, slow remote) per key.
fn expected(
    t: &[Row],
    key: impl Fn(&Row) -> Option<&'static str>,
    thr: u64,
) -> BTreeMap<&'static str, [u64; 6]> {
    let mut m: BTreeMap<&str, [u64; 6]> = BTreeMap::new();
    for r in t {
        let Some(k) = key(r) else { continue };
        let e = m.entry(k).or_default();
        let slow = is_load(r.2) && r.3 > 0 && r.3 >= thr;
        let remote = r.2 == K::Rram;
        e[0] += 1;
        e[1] += is_load(r.2) as u64;
        e[2] += (!is_load(r.2)) as u64;
        e[3] += slow as u64;
        e[4] += remote as u64;
        e[5] += (slow && remote) as u64;
    }
    m
}

fn check_rows(
    rows: &[numalab_records::memaccess::RegionRow],
    exp: &BTreeMap<&str, [u64; 6]>,
    total: u64,
    slow_total: u64,
) {
    assert_eq!(
        rows.len(),
        exp.len(),
        "{:?}",
        rows.iter().map(|r| &r.name).collect::<Vec<_>>()
    );
    for (name, e) in exp {
        let r = rows
            .iter()
            .find(|r| r.name == *name)
            .unwrap_or_else(|| panic!("no row {name}"));
        assert_eq!(
            [r.samples, r.loads, r.stores, r.slow_loads, r.remote],
            [e[0], e[1], e[2], e[3], e[4]],
            "{name}"
        );
        assert!(
            close(r.samples_pct, e[0] as f64 * 100.0 / total as f64),
            "{name}"
        );
        assert!(
            close(
                r.slow_loads_pct,
                if slow_total == 0 {
                    0.0
                } else {
                    e[3] as f64 * 100.0 / slow_total as f64
                }
            ),
            "{name}"
        );
        assert!(
            close(r.remote_pct, e[4] as f64 * 100.0 / e[0] as f64),
            "{name}"
        );
        match r.slow_remote_pct {
            Some(p) => assert!(close(p, e[5] as f64 * 100.0 / e[3] as f64), "{name}"),
            None => assert_eq!(e[3], 0, "{name}"),
        }
    }
    // Most samples first.
    assert!(rows.windows(2).all(|w| w[0].samples >= w[1].samples));
}

#[test]
fn shares_slow_loads_and_remote_fractions_with_a_given_threshold() {
    let rec = import(FIXTURE, &opts(ThresholdSpec::Value(300.0))).unwrap();
    let t = table();
    let total = t.len() as u64;
    let slow_total = t.iter().filter(|r| is_load(r.2) && r.3 >= 300).count() as u64;
    assert_eq!(slow_total, 9);
    assert_eq!(rec.samples, total);
    assert_eq!(rec.loads, t.iter().filter(|r| is_load(r.2)).count() as u64);
    assert_eq!(
        rec.stores,
        t.iter().filter(|r| !is_load(r.2)).count() as u64
    );
    assert_eq!(rec.slow_loads, slow_total);
    assert_eq!(
        rec.remote,
        t.iter().filter(|r| r.2 == K::Rram).count() as u64
    );
    assert_eq!(rec.threshold.how, "given");
    assert_eq!(rec.threshold.value, 300.0);
    check_rows(
        &rec.mappings,
        &expected(&t, |r| Some(r.6), 300),
        total,
        slow_total,
    );
    check_rows(
        &rec.symbols,
        &expected(&t, |r| (!r.5.is_empty()).then_some(r.5), 300),
        total,
        slow_total,
    );
    let kinds: BTreeMap<&str, &str> = rec
        .mappings
        .iter()
        .map(|r| (r.name.as_str(), r.kind.as_str()))
        .collect();
    assert_eq!(kinds[ANON], "anonymous");
    assert_eq!(kinds["[heap]"], "heap");
    assert_eq!(kinds["[stack]"], "stack");
    assert_eq!(kinds[EXE], "file");
    assert_eq!(kinds["[unmapped]"], "unmapped");
    // 7 of 9 slow loads in graph.edges, 6 of those 7 remote.
    let f = &rec.findings[0];
    assert_eq!(
        f, "78% of slow loads (latency >= 300 cycles) hit graph.edges, 86% of them remote per the PMU.",
        "{:#?}", rec.findings
    );
    assert!(
        rec.notes.iter().any(|n| n.contains("as given")),
        "{:?}",
        rec.notes
    );
}

#[test]
fn the_default_threshold_is_the_90th_percentile_of_load_latencies() {
    let rec = import(FIXTURE, &opts(ThresholdSpec::default())).unwrap();
    let mut w: Vec<u64> = table()
        .iter()
        .filter(|r| is_load(r.2))
        .map(|r| r.3)
        .collect();
    w.sort_unstable();
    let rank = (0.9 * w.len() as f64).ceil() as usize;
    let p90 = w[rank - 1];
    assert_eq!(rec.threshold.how, "percentile");
    assert_eq!(rec.threshold.percentile, Some(90.0));
    assert_eq!(rec.threshold.value, p90 as f64);
    assert_eq!(
        rec.slow_loads,
        w.iter().filter(|&&x| x >= p90).count() as u64
    );
    assert!(rec.notes[0].contains("90th percentile"), "{}", rec.notes[0]);
}

fn bin(w: u64) -> u32 {
    // floor(log2 w), with 0 and 1 in bin 0.
    let mut k = 0;
    while (2u64 << k) <= w {
        k += 1;
    }
    k
}

fn check_histograms(
    rec: &numalab_records::memaccess::MemAccessRecord,
    label_of: impl Fn(&Row) -> String,
) {
    let t = table();
    let loads: Vec<&Row> = t.iter().filter(|r| is_load(r.2)).collect();
    let kmin = loads.iter().map(|r| bin(r.3)).min().unwrap();
    let kmax = loads.iter().map(|r| bin(r.3)).max().unwrap();
    let mut edges: Vec<f64> = (kmin..=kmax)
        .map(|k| if k == 0 { 0.0 } else { (1u64 << k) as f64 })
        .collect();
    edges.push((1u64 << (kmax + 1)) as f64);
    assert_eq!(rec.bin_edges, edges);
    let mut exp: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for r in &loads {
        let v = exp
            .entry(label_of(r))
            .or_insert_with(|| vec![0; (kmax - kmin + 1) as usize]);
        v[(bin(r.3) - kmin) as usize] += 1;
    }
    let got: BTreeMap<String, Vec<u64>> = rec
        .node_histograms
        .iter()
        .map(|h| (h.label.clone(), h.counts.clone()))
        .collect();
    assert_eq!(got, exp);
    for h in &rec.node_histograms {
        assert_eq!(h.loads, h.counts.iter().sum::<u64>());
    }
}

#[test]
fn histograms_per_pmu_class_when_nodes_cannot_be_asked() {
    let rec = import(FIXTURE, &opts(ThresholdSpec::Value(300.0))).unwrap();
    check_histograms(&rec, |r| {
        if r.2 == K::Rram {
            "remote per the PMU".into()
        } else {
            "local per the PMU".into()
        }
    });
    assert!(rec
        .node_histograms
        .iter()
        .all(|h| h.how == "PMU remote bit" && h.node.is_none()));
    assert_eq!(rec.node_methods, vec![("PMU remote bit".to_string(), 22)]);
    assert!(rec
        .notes
        .iter()
        .any(|n| n.contains("Physical addresses were sampled but not mapped")));
}

/// A sysfs tree with 128 MiB memory blocks: blocks 0-7 on node 0, 8-15 on node 1.
fn sysfs_two_nodes() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let mem = d.path().join("devices/system/memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(mem.join("block_size_bytes"), "8000000\n").unwrap();
    for b in 0..16u32 {
        let node = d.path().join(format!("devices/system/node/node{}", b / 8));
        std::fs::create_dir_all(node.join(format!("memory{b}"))).unwrap();
    }
    d
}

#[test]
fn histograms_per_node_from_physical_addresses_on_the_same_machine() {
    let sys = sysfs_two_nodes();
    let mut o = opts(ThresholdSpec::Value(300.0));
    o.same_machine = true;
    o.sysfs_root = sys.path().to_path_buf();
    let rec = import(FIXTURE, &o).unwrap();
    check_histograms(&rec, |r| {
        if r.4 == 0 {
            // No physical address: only the PMU's word.
            if r.2 == K::Rram {
                "remote per the PMU"
            } else {
                "local per the PMU"
            }
            .into()
        } else {
            format!("node {}", r.4 / (1 << 30))
        }
    });
    let n1 = rec
        .node_histograms
        .iter()
        .find(|h| h.label == "node 1")
        .unwrap();
    assert_eq!(n1.how, "phys_addr + sysfs memory blocks");
    assert_eq!(n1.node, Some(1));
    assert_eq!(
        rec.node_methods,
        vec![
            ("phys_addr + sysfs memory blocks".to_string(), 21),
            ("PMU remote bit".to_string(), 1)
        ]
    );
    assert!(rec
        .findings
        .iter()
        .any(|f| f.starts_with("Loads by the node of their page: node 0")));
}

#[test]
fn false_sharing_lines_as_perf_c2c_lists_them() {
    let rec = import(FIXTURE, &opts(ThresholdSpec::default())).unwrap();
    // Independently: lines with writers (stores, HITM loads) from >= 2 CPUs at >= 2 offsets.
    let t = table();
    let mut lines: BTreeMap<u64, (BTreeSet<u32>, BTreeSet<u64>)> = BTreeMap::new();
    for r in &t {
        if r.2 == K::Store || r.2 == K::Hitm {
            let e = lines.entry(r.1 & !63).or_default();
            e.0.insert(r.0);
            e.1.insert(r.1 & 63);
        }
    }
    let want: Vec<String> = lines
        .iter()
        .filter(|(_, (c, o))| c.len() >= 2 && o.len() >= 2)
        .map(|(l, _)| format!("0x{l:x}"))
        .collect();
    assert_eq!(want, vec!["0x555555559040".to_string()]);
    let got: Vec<&str> = rec.false_sharing.iter().map(|l| l.line.as_str()).collect();
    assert_eq!(got, want);
    let l = &rec.false_sharing[0];
    assert_eq!(
        (l.pid, l.line_bytes, l.region.as_str()),
        (4242, 64, "[heap]")
    );
    assert_eq!((l.samples, l.stores, l.hitm), (5, 4, 1));
    assert_eq!(l.cpus, vec![1, 2, 3]);
    let offs: Vec<(u32, Vec<u32>, u64, u64, u64)> = l
        .offsets
        .iter()
        .map(|o| (o.offset, o.cpus.clone(), o.stores, o.loads, o.hitm))
        .collect();
    assert_eq!(
        offs,
        vec![
            (0, vec![1], 2, 0, 0),
            (8, vec![2], 2, 0, 0),
            (16, vec![3], 0, 1, 1)
        ]
    );
    assert_eq!(l.offsets[0].code, vec!["update_counters".to_string()]);
    assert_eq!(l.offsets[2].code, vec!["read_counters".to_string()]);
    assert!(rec.findings.iter().any(|f| f.starts_with(
        "Cache line 0x555555559040 ([heap], pid 4242) is written or HITM-loaded from CPUs 1, 2, 3 at offsets 0x0, 0x8, 0x10"
    )), "{:#?}", rec.findings);
}

#[test]
fn the_record_round_trips_through_json() {
    let rec = import(FIXTURE, &opts(ThresholdSpec::default())).unwrap();
    let j = serde_json::to_string(&rec).unwrap();
    let back: numalab_records::memaccess::MemAccessRecord = serde_json::from_str(&j).unwrap();
    assert_eq!(back, rec);
    use numalab_schema::RecordKind;
    assert_eq!(
        numalab_records::memaccess::MemAccessRecord::KIND,
        "pmu.memaccess"
    );
}

fn line_of(e: &Error) -> usize {
    match e {
        Error::Line { line, .. } => *line,
        other => panic!("not a line error: {other}"),
    }
}

#[test]
fn a_cut_short_last_line_is_one_error_naming_its_line() {
    let lines: Vec<&str> = FIXTURE.lines().collect();
    let last = lines.len() - 1; // index of the EXIT line; the last sample is before it
    let sample = lines[last - 1];
    let cut = sample.find("BLK").unwrap() + 8;
    let mut text = lines[..last - 1].join("\n");
    text.push('\n');
    text.push_str(&sample[..cut]);
    let e = import(&text, &opts(ThresholdSpec::default())).unwrap_err();
    assert_eq!(line_of(&e), last);
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("graphwalk.script: line {last}: ")),
        "{msg}"
    );
    assert!(msg.contains("weight"), "{msg}");
    assert!(!msg.contains('\n'));
}

#[test]
fn malformed_lines_are_named_and_nothing_panics() {
    let mut lines: Vec<String> = FIXTURE.lines().map(str::to_string).collect();
    lines.insert(9, "this is not perf output".into());
    let e = import(&lines.join("\n"), &opts(ThresholdSpec::default())).unwrap_err();
    assert_eq!(line_of(&e), 10);
    assert!(e.to_string().contains("no data_src field"), "{e}");

    let bad_mmap = "  x  1/1 [000] 1.000000: PERF_RECORD_MMAP2 1/1: [0x1000(0x1000) @ 0";
    let e = import(bad_mmap, &opts(ThresholdSpec::default())).unwrap_err();
    assert_eq!(line_of(&e), 1);
    assert!(e.to_string().contains("PERF_RECORD_MMAP2"), "{e}");

    let no_cpu = "graphwalk  4242/4242  8123.400142: ev:     7f0000001000    113a29402042 |OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A   400";
    let e = import(no_cpu, &opts(ThresholdSpec::default())).unwrap_err();
    assert!(e.to_string().contains("CPU"), "{e}");

    let e = import("", &opts(ThresholdSpec::default())).unwrap_err();
    assert!(matches!(e, Error::Empty { .. }), "{e}");

    // Every prefix of every kind of line: an answer or an error, never a panic.
    for l in FIXTURE
        .lines()
        .take(8)
        .chain(FIXTURE.lines().skip(19).take(2))
    {
        let mut cuts: Vec<usize> = (0..=l.len()).filter(|&i| l.is_char_boundary(i)).collect();
        cuts.dedup();
        for c in cuts {
            let _ = numalab_memaccess::script::parse(&l[..c]);
        }
    }
}

#[test]
fn minimal_fields_and_call_chains() {
    // perf script -F pid,cpu,addr,data_src,weight
    let minimal = " 4242 [003]     7f0000001000    113a29402042 |OP LOAD|LVL Remote RAM (1 hop) hit|SNP Miss|TLB L1 or L2 hit|LCK No|BLK  N/A             400\n";
    let d = numalab_memaccess::script::parse(minimal).unwrap();
    assert_eq!(d.samples.len(), 1);
    let s = &d.samples[0];
    assert_eq!(
        (s.pid, s.tid, s.cpu, s.addr, s.weight, s.ip),
        (4242, 4242, 3, 0x7f0000001000, 400, None)
    );
    assert_eq!(d.events, vec!["(event not printed)".to_string()]);

    // perf record -g: the ip and symbol on the following lines.
    let chain = "       graphwalk  4242/4242  [000]  8123.400142: cpu/mem-loads,ldlat=30/P:     7f0000001000    113a29402042 |OP LOAD|LVL Remote RAM (1 hop) hit|SNP Miss|TLB L1 or L2 hit|LCK No|BLK  N/A             400\n\t    555555555120 walk_edges+0x10 (/opt/graphwalk/bin/graphwalk)\n\t    555555555300 main+0x20 (/opt/graphwalk/bin/graphwalk)\n\n       graphwalk  4242/4242  [001]  8123.400143: cpu/mem-loads,ldlat=30/P:     7f0000002000    113a29402042 |OP LOAD|LVL Remote RAM (1 hop) hit|SNP Miss|TLB L1 or L2 hit|LCK No|BLK  N/A             300\n\t    555555555124 walk_edges+0x14 (/opt/graphwalk/bin/graphwalk)\n";
    let d = numalab_memaccess::script::parse(chain).unwrap();
    assert_eq!(d.samples.len(), 2);
    assert_eq!(d.samples[0].ip, Some(0x555555555120));
    assert_eq!(
        d.code_names[d.samples[0].code.unwrap() as usize],
        "walk_edges"
    );
    assert_eq!(d.samples[1].ip, Some(0x555555555124));
    assert_eq!(d.samples[1].cpu, 1);
}

#[test]
fn regions_are_parsed_with_line_numbers_in_errors() {
    let r = parse_regions(REGIONS).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!((r[0].start, r[0].len), (0x7f0000000000, 64 << 20));
    assert_eq!(
        (r[1].start, r[1].len, r[1].pid),
        (0x7f0004000000, 0x1000000, None)
    );
    let e = parse_regions("a 0x1000 4096\nb 0x2000\n").unwrap_err();
    assert!(e.starts_with("line 2:"), "{e}");
    let e = parse_regions("a zz 4096 7\n").unwrap_err();
    assert!(e.contains("start"), "{e}");
    assert_eq!(parse_regions("a 0x10 16 77\n").unwrap()[0].pid, Some(77));
}

#[test]
fn missing_files_leave_symbols_to_mappings_with_a_note() {
    let mut o = opts(ThresholdSpec::default());
    o.read_symbols = true;
    o.regions.clear();
    let rec = import(FIXTURE, &o).unwrap();
    assert!(rec.symbols.is_empty());
    assert!(!Path::new(EXE).exists());
    assert!(
        rec.notes
            .iter()
            .any(|n| n.contains("Data symbols not read") && n.contains(EXE)),
        "{:?}",
        rec.notes
    );
}

#[test]
fn ibs_samples_of_non_memory_ops_are_left_out_and_said() {
    // AMD IBS op samples every op; those that are no load or store carry mem_op NA and
    // no address.
    let na = 0x1u64 | 0x1 << 5 | 0x1 << 19 | 0x1 << 24 | 0x1 << 26 | 0xf << 33 | 0x1 << 40;
    let text = format!(
        "       graphwalk  4242/4242  [000]  8123.400142:        ibs_op//:     7f0000001000    113a29402042 |OP LOAD|LVL Remote RAM (1 hop) hit|SNP Miss|TLB L1 or L2 hit|LCK No|BLK  N/A             400\n       graphwalk  4242/4242  [000]  8123.400143:        ibs_op//:                0 {na:16x} |OP N/A|LVL N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A               0\n"
    );
    let rec = import(&text, &ImportOptions::default()).unwrap();
    assert_eq!(rec.samples, 1);
    assert!(
        rec.facility.starts_with("imported (AMD IBS op"),
        "{}",
        rec.facility
    );
    assert!(
        rec.notes
            .iter()
            .any(|n| n.starts_with("1 samples were no memory operation")),
        "{:?}",
        rec.notes
    );
}
