//! `numalab mem`: the error table (exit codes and messages for bad input, all refused
//! before anything runs), and a small real run of every probe on this machine whose
//! JSON is read with independent structs and checked for sanity (finite positive
//! bandwidth, latency rising from an L1-sized to a DRAM-sized working set, placement
//! recorded) but never for specific figures.

use crate::common::{self, live_cpus, numalab, refused, RecordJson};
use serde::Deserialize;
use std::process::Output;

#[test]
fn error_table() {
    let arch_isa = if cfg!(target_arch = "x86_64") {
        "neon"
    } else {
        "avx2"
    };
    let mut cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["mem"], 2, "Usage"),
        (
            vec!["mem", "bandwidth", "--kernel", "stream"],
            2,
            "unknown kernel \"stream\"",
        ),
        (
            vec!["mem", "bandwidth", "--kernel", "read-nt"],
            2,
            "no non-temporal variant",
        ),
        (
            vec!["mem", "bandwidth", "--threads", "999"],
            2,
            "more threads than PUs",
        ),
        (vec!["mem", "bandwidth", "--threads", "0"], 2, "at least 1"),
        (
            vec!["mem", "bandwidth", "--cpus", "999"],
            2,
            "CPU 999 does not exist",
        ),
        (
            vec!["mem", "bandwidth", "--policy", "bind:77"],
            2,
            "NUMA node 77 does not exist",
        ),
        (
            vec!["mem", "bandwidth", "--policy", "sideways"],
            2,
            "use first-touch",
        ),
        (
            vec!["mem", "bandwidth", "--size", "1TiB"],
            2,
            "more than 50% of what it can give",
        ),
        (
            vec!["mem", "bandwidth", "--size", "12Q"],
            2,
            "unknown size suffix",
        ),
        (vec!["mem", "bandwidth", "--isa", "sve2"], 2, "unknown ISA"),
        (
            vec!["mem", "bandwidth", "--isa", arch_isa],
            4,
            "this CPU cannot run",
        ),
        (
            vec!["mem", "bandwidth", "--matrix", "--cpus", "0"],
            2,
            "cannot be used with",
        ),
        (
            vec!["mem", "bandwidth", "--pages", "giant"],
            2,
            "use base, thp, hugetlb",
        ),
        (
            vec!["mem", "latency", "--min", "1MiB", "--max", "4KiB"],
            2,
            "larger than --max",
        ),
        (
            vec!["mem", "latency", "--order", "zigzag"],
            2,
            "use page or global",
        ),
        (
            vec!["mem", "latency", "--cpus", "node:42"],
            2,
            "NUMA node 42 does not exist",
        ),
        (
            vec!["mem", "latency", "--pages", "hugetlb:3MiB"],
            2,
            "not a huge page size",
        ),
        (
            vec!["mem", "latency", "--pages", "hugetlb:512MiB"],
            4,
            "no such huge page size",
        ),
        (vec!["mem", "latency", "--max", "1TiB"], 2, "--max"),
        (vec!["mem", "loaded", "--cpus", "0"], 2, "at least 2 CPUs"),
        (
            vec!["mem", "loaded", "--traffic", "write"],
            2,
            "use read or rw",
        ),
        (
            vec!["mem", "loaded", "--delays", "idle,soon"],
            2,
            "not a delay",
        ),
        (
            vec!["mem", "migrate", "--from", "0", "--to", "5"],
            2,
            "NUMA node 5 does not exist",
        ),
        (vec!["mem", "migrate", "--from", "0"], 2, "--to"),
        (
            vec!["mem", "migrate", "--max-pages", "100000000"],
            2,
            "--max-pages",
        ),
        (
            vec!["mem", "migrate", "--max-pages", "0"],
            2,
            "1 page or more",
        ),
        (vec!["mem", "migrate", "--link-peak=-3"], 2, "positive GB/s"),
        (
            vec!["mem", "migrate", "--methods", "dma"],
            2,
            "unknown method",
        ),
        (
            vec!["mem", "migrate", "--unit", "6000"],
            2,
            "multiple of the base page",
        ),
        (
            vec![
                "mem",
                "migrate",
                "--min-pages",
                "1024",
                "--max-pages",
                "256",
            ],
            2,
            "larger than",
        ),
    ];
    // SVE is known everywhere, runnable only where the CPU has it.
    if !cfg!(target_arch = "aarch64") {
        cases.push((
            vec!["mem", "bandwidth", "--isa", "sve"],
            4,
            "this CPU cannot run sve code",
        ));
    }
    for (args, code, text) in cases {
        let out = refused(&args, code, text);
        // Refused before measuring: no table on stdout.
        assert!(
            out.stdout.is_empty(),
            "{args:?} printed {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

// Independent readers of the documented JSON.

#[derive(Deserialize)]
struct Bundle {
    schema_version: u32,
    envelope: Envelope,
    records: Vec<RecordJson>,
}

#[derive(Deserialize)]
struct Envelope {
    host: Host,
}

#[derive(Deserialize)]
struct Host {
    topology_hash: String,
}

#[derive(Deserialize)]
struct Summary {
    median: f64,
    min: f64,
    max: f64,
    p90: f64,
    p99: f64,
}

#[derive(Deserialize)]
struct Placement {
    cpus: Vec<u32>,
    cpu_nodes: Vec<u32>,
    pages_per_node: Vec<(u32, u64)>,
    fraction_expected: f64,
}

#[derive(Deserialize)]
struct Timer {
    check: serde_json::Value,
}

#[derive(Deserialize)]
struct Bandwidth {
    kernel: String,
    isa: String,
    variant: serde_json::Value,
    threads: usize,
    placement: Placement,
    pages: serde_json::Value,
    working_set_bytes: u64,
    sample_ns: Vec<f64>,
    bandwidth_gbps: Summary,
    actual_bandwidth_gbps: Summary,
    timer: Timer,
    vector_bits: u32,
    verified: bool,
    verification: Verification,
}

#[derive(Deserialize)]
struct Verification {
    elements_checked: u64,
    checksum: f64,
    expected_checksum: f64,
    tolerance: f64,
}

/// The bundle, its measurement records only: a run whose cells repeated a warning (a
/// noisy cell under load) also carries one `warnings.folded` record, which must then
/// name what it folded, and is taken out here so that the tests count cells.
fn bundle(out: &Output) -> Bundle {
    let mut b: Bundle = common::json(out);
    assert_eq!(b.schema_version, 1);
    assert_eq!(b.envelope.host.topology_hash.len(), 16);
    let (folded, cells): (Vec<RecordJson>, Vec<RecordJson>) = b
        .records
        .into_iter()
        .partition(|r| r.kind == "warnings.folded");
    assert!(
        folded.len() <= 1,
        "{} warnings.folded records",
        folded.len()
    );
    for f in &folded {
        let codes = f.data["codes"]
            .as_array()
            .expect("warnings.folded has codes");
        assert!(!codes.is_empty() && codes.iter().all(|c| c["messages"].as_u64() > Some(1)));
    }
    b.records = cells;
    b
}

#[test]
fn bandwidth_runs_for_real_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().display().to_string();
    let args = [
        "mem",
        "bandwidth",
        "--kernel",
        "read,copy,triad,write-nt",
        "--threads",
        "1",
        "--cpus",
        "0",
        "--size",
        "48MiB",
        "--reps",
        "3",
        "--json",
        "--out",
        &out_dir,
    ];
    let b = bundle(&numalab(&args));
    assert_eq!(b.records.len(), 5);
    // The memory configuration: a theoretical peak, or why there is none (this VM has
    // no SMBIOS tables), never a guess.
    let cfg: Vec<&RecordJson> = b
        .records
        .iter()
        .filter(|r| r.kind == "memconfig.smbios")
        .collect();
    assert_eq!(cfg.len(), 1);
    let system = &cfg[0].data["system"];
    match system["gbps"].as_f64() {
        Some(g) => assert!(g > 0.0 && system["reason"].is_null(), "{system}"),
        None => assert!(
            system["reason"].as_str().is_some_and(|r| r.len() > 10),
            "{system}"
        ),
    }
    for r in b.records.iter().filter(|r| r.kind != "memconfig.smbios") {
        assert_eq!(r.kind, "mem.bandwidth");
        let d: Bandwidth = serde_json::from_value(r.data.clone()).unwrap();
        assert!(
            r.key.starts_with("mem/bandwidth/cpus-0/first-touch/t1/"),
            "{}",
            r.key
        );
        assert!(r.key.ends_with(&d.kernel));
        assert_eq!(d.threads, 1);
        assert_eq!(d.placement.cpus, vec![0]);
        assert_eq!(d.placement.fraction_expected, 1.0);
        assert!(!d.placement.pages_per_node.is_empty());
        assert!(!d.placement.cpu_nodes.is_empty());
        assert_eq!(d.sample_ns.len(), 3);
        assert!(d.working_set_bytes > 40 << 20 && d.working_set_bytes <= 48 << 20);
        for s in [&d.bandwidth_gbps, &d.actual_bandwidth_gbps] {
            assert!(s.median.is_finite() && s.median > 0.0, "{}", r.key);
            assert!(s.min <= s.median && s.median <= s.max);
        }
        // Write-allocate: plain stores move more than STREAM counts; NT stores do not.
        if d.kernel == "copy" || d.kernel == "triad" {
            assert!(d.actual_bandwidth_gbps.median > d.bandwidth_gbps.median);
        } else {
            assert_eq!(d.actual_bandwidth_gbps.median, d.bandwidth_gbps.median);
        }
        assert!(!d.isa.is_empty());
        // No --isa: the ISA that ran is the fastest of the trial, which lists every
        // vector ISA this CPU has, and the reason names it.
        assert_eq!(d.variant["how"], "trial", "{}", d.variant);
        let trial = d.variant["trial"].as_array().unwrap();
        assert!(!trial.is_empty());
        let fastest = trial
            .iter()
            .map(|t| t["gbps"].as_f64().unwrap())
            .fold(f64::NEG_INFINITY, f64::max);
        let ran = trial
            .iter()
            .find(|t| t["isa"] == d.isa.as_str())
            .expect("the ISA that ran was a candidate");
        assert_eq!(ran["gbps"].as_f64().unwrap(), fastest, "{}", d.variant);
        assert!(trial.iter().all(|t| t["gbps"].as_f64().unwrap() > 0.0));
        assert!(d.variant["reason"].as_str().unwrap().contains(&d.isa));
        // The result check: every element of every array of each thread.
        assert!(d.verified, "{}", r.key);
        assert!(
            d.vector_bits >= 64 && d.vector_bits <= 2048,
            "{}",
            d.vector_bits
        );
        let arrays = match d.kernel.as_str() {
            "read" | "write-nt" => 1,
            "copy" => 2,
            _ => 3,
        };
        assert_eq!(
            d.verification.elements_checked * 8,
            d.working_set_bytes,
            "{}: {arrays} arrays",
            r.key
        );
        assert!(
            (d.verification.checksum - d.verification.expected_checksum).abs()
                <= d.verification.tolerance * d.verification.expected_checksum.abs()
        );
        assert!(d.pages.get("obtained").is_some());
        assert!(d.timer.check.get("read_overhead_ns").is_some());
    }
    // A second run with the same journal measures nothing again.
    let again = numalab(&args);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("4 result(s) were already in the journal"),
        "{stderr}"
    );
    let b2: Bundle = serde_json::from_slice(&again.stdout).unwrap();
    assert!(b2.records.is_empty());
    // The human table.
    let human = numalab(&[
        "mem",
        "bandwidth",
        "--kernel",
        "triad",
        "--size",
        "32MiB",
        "--reps",
        "2",
    ]);
    let text = String::from_utf8_lossy(&human.stdout);
    common::assert_ok(&human);
    assert!(text.contains("triad") && text.contains("GB/s"), "{text}");
    assert!(
        text.contains("results verified: every kernel's arrays matched the closed-form values"),
        "{text}"
    );
    assert!(text.contains("of peak"), "{text}");
}

#[derive(Deserialize)]
struct Latency {
    cpu: u32,
    placement: Placement,
    pages: serde_json::Value,
    points: Vec<Point>,
    levels: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
struct Point {
    working_set_bytes: u64,
    sample_ns: Vec<f64>,
    latency_ns: Summary,
}

#[test]
fn latency_rises_from_l1_to_dram() {
    let b = bundle(&numalab(&[
        "mem",
        "latency",
        "--page-kinds",
        "base,thp",
        "--min",
        "4KiB",
        "--max",
        "128MiB",
        "--per-octave",
        "1",
        "--batches",
        "15",
        "--json",
    ]));
    assert_eq!(b.records.len(), 2);
    for r in &b.records {
        assert_eq!(r.kind, "mem.latency");
        let l: Latency = serde_json::from_value(r.data.clone()).unwrap();
        assert_eq!(l.placement.cpus, vec![l.cpu]);
        assert_eq!(l.points.len(), 16);
        for p in &l.points {
            assert_eq!(p.sample_ns.len(), 15);
            let s = &p.latency_ns;
            assert!(s.median.is_finite() && s.median > 0.0);
            assert!(s.median <= s.p90 && s.p90 <= s.p99);
        }
        let l1 = l.points[0].latency_ns.median;
        let dram = l.points.last().unwrap().latency_ns.median;
        assert_eq!(l.points.last().unwrap().working_set_bytes, 128 << 20);
        assert!(
            dram > 3.0 * l1,
            "{}: 4 KiB {l1} ns, 128 MiB {dram} ns",
            r.key
        );
        assert!(!l.levels.is_empty(), "{}: no plateau found", r.key);
        assert!(l.pages.get("obtained").is_some());
    }
}

#[derive(Deserialize)]
struct Loaded {
    chaser_cpu: u32,
    generator_cpus: Vec<u32>,
    points: Vec<LoadedPoint>,
}

#[derive(Deserialize)]
struct LoadedPoint {
    delay_ns: Option<u64>,
    traffic_gbps: f64,
    latency_ns: Summary,
}

#[test]
fn loaded_latency_runs_from_idle_to_saturation() {
    let pus = live_cpus();
    if pus < 2 {
        eprintln!("skipped: loaded latency needs 2 CPUs, this machine has {pus}");
        return;
    }
    let b = bundle(&numalab(&[
        "mem",
        "loaded",
        "--size",
        "64MiB",
        "--traffic-size",
        "32MiB",
        "--delays",
        "idle,2000,0",
        // 150 ms a point: at 60 ms a generator starved by the tests running beside this
        // one (2 CPUs) once moved no byte in its point (0 GB/s, twice at load 15).
        "--point-ms",
        "150",
        "--json",
    ]));
    // The loaded-latency record and the memory configuration its traffic is a share of.
    assert_eq!(b.records.len(), 2);
    assert_eq!(b.records[0].kind, "memconfig.smbios");
    assert_eq!(b.records[1].kind, "mem.loaded");
    let l: Loaded = serde_json::from_value(b.records[1].data.clone()).unwrap();
    assert!(!l.generator_cpus.contains(&l.chaser_cpu));
    assert_eq!(l.points.len(), 3);
    assert_eq!(l.points[0].delay_ns, None);
    assert_eq!(l.points[0].traffic_gbps, 0.0);
    for p in &l.points[1..] {
        assert!(p.traffic_gbps.is_finite() && p.traffic_gbps > 0.0);
    }
    // Unthrottled traffic is heavier than throttled traffic.
    assert!(l.points[2].traffic_gbps > l.points[1].traffic_gbps);
    for p in &l.points {
        assert!(p.latency_ns.median > 0.0 && p.latency_ns.median.is_finite());
    }
}

#[derive(Deserialize)]
struct Migrate {
    src_node: u32,
    dst_node: u32,
    same_node: bool,
    pages: u64,
    base_pages: u64,
    bytes: u64,
    methods: Vec<MethodResult>,
    winner: Option<String>,
    why: String,
    reference: Reference,
}

#[derive(Deserialize)]
struct MethodResult {
    method: String,
    throughput_gbps: Option<Summary>,
    percent_of_reference: Option<f64>,
    pages_on_target: u64,
    data_verified: bool,
    note: Option<String>,
}

#[derive(Deserialize)]
struct Reference {
    kind: String,
    gbps: f64,
}

#[test]
fn migrate_runs_the_local_baseline_with_every_method() {
    let b = bundle(&numalab(&[
        "mem",
        "migrate",
        "--min-pages",
        "256",
        "--max-pages",
        "512",
        "--reps",
        "1",
        "--json",
    ]));
    // Two units (64 KiB and the base page) x two counts, one pair on one node.
    let units = if numalab_page_size() == 64 << 10 {
        1
    } else {
        2
    };
    assert_eq!(b.records.len(), 2 * units);
    for r in &b.records {
        assert_eq!(r.kind, "mem.migrate");
        let g: Migrate = serde_json::from_value(r.data.clone()).unwrap();
        assert!(r.key.starts_with("mem/migrate/node"), "{}", r.key);
        assert_eq!(g.reference.kind, "local_copy");
        assert!(g.reference.gbps > 0.0 && g.reference.gbps.is_finite());
        assert_eq!(g.bytes, g.base_pages * numalab_page_size());
        assert!(g.pages == 256 || g.pages == 512);
        let names: Vec<&str> = g.methods.iter().map(|m| m.method.as_str()).collect();
        assert_eq!(names, vec!["memcpy", "move_pages", "stream_copy"]);
        for m in &g.methods {
            assert!(m.data_verified, "{}", m.method);
            assert_eq!(m.pages_on_target, g.base_pages, "{}", m.method);
            let moved_nothing = g.same_node && m.method == "move_pages";
            assert_eq!(m.throughput_gbps.is_none(), moved_nothing);
            assert_eq!(m.note.is_some(), moved_nothing);
            if let Some(t) = &m.throughput_gbps {
                assert!(t.median > 0.0 && t.median.is_finite());
                assert!(m.percent_of_reference.unwrap() > 0.0);
            }
        }
        if g.src_node == g.dst_node {
            assert!(g.same_node);
        }
        assert!(g.winner.is_some());
        assert!(g.why.contains("wins at"), "{}", g.why);
    }
}

fn numalab_page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }) as u64
}
