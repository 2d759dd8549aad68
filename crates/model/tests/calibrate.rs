//! Calibration against bundles generated from a known preset: the records a measurement
//! would write (templates from a real bundle, `tests/fixtures/bundles/vm-quick-run-1`,
//! with the figures replaced by the model's, plus Gaussian noise of a stated size), fitted
//! from the unaltered preset; the altered parameters must come back.

use numalab_model::calibrate::{self, predict};
use numalab_model::latency::{self, Placement};
use numalab_model::{machine, Model};
use numalab_records::c2c::{MatrixRecord, SquareMatrix};
use numalab_records::mem::{BandwidthRecord, LatencyRecord, MatrixCell};
use numalab_records::model::{CalibratedParameter, Calibration};
use numalab_schema::journal::read_bundle;
use numalab_schema::record::{Bundle, Origin, Record};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use std::path::Path;

/// Noise added to each generated figure.
#[derive(Clone, Copy)]
struct Noise {
    /// Standard deviation of each memory latency figure, ns.
    mem_ns: f64,
    /// Standard deviation of each core-to-core cell, ns.
    c2c_ns: f64,
    /// Relative standard deviation of each bandwidth figure.
    bw: f64,
}

fn template() -> Bundle {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bundles/vm-quick-run-1");
    read_bundle(&dir).expect("the fixture bundle reads").0
}

fn gauss(rng: &mut Xoshiro256PlusPlus) -> f64 {
    // Box-Muller.
    let u: f64 = rng.random::<f64>().max(1e-300);
    let v: f64 = rng.random::<f64>();
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// A bundle of what `truth` would measure: idle latency matrix cells for `pairs`, the
/// core-to-core matrix over the cores of `c2c_nodes`, triad bandwidth of every node in
/// `bw_nodes` with all its cores.
fn synthetic(
    truth: &Model,
    pairs: &[(u32, u32)],
    c2c_nodes: &[u32],
    bw_nodes: &[u32],
    noise: Noise,
    seed: u64,
) -> Bundle {
    let t = template();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let lat0: LatencyRecord = t.records_of::<LatencyRecord>()[0].1.clone();
    let c2c0: MatrixRecord = t.records_of::<MatrixRecord>()[0].1.clone();
    let bw0: BandwidthRecord = t
        .records_of::<BandwidthRecord>()
        .into_iter()
        .find(|(_, b)| b.kernel.name() == "triad")
        .expect("a triad record")
        .1;
    let mut envelope = t.envelope.clone();
    envelope.host = machine::host(truth);
    let mut records = Vec::new();
    for &(c, m) in pairs {
        let ns = predict::mem_latency(truth, c, m).unwrap().ns + noise.mem_ns * gauss(&mut rng);
        let mut r = lat0.clone();
        r.matrix = Some(MatrixCell {
            cpu_node: c,
            mem_node: m,
        });
        r.cpu = truth.nodes[c as usize].cores[0] as u32;
        let mut p = r.points.last().unwrap().clone();
        p.working_set_bytes = 1 << 30;
        p.latency_ns.median = ns;
        r.points = vec![p];
        if let Some(k) = r.kind.as_mut() {
            k.llc_bytes = Some(truth.spec.slc.bytes);
        }
        records.push(Record::new(
            format!("mem/latency/matrix/cpu-node{c}/mem-node{m}/thp"),
            Origin::Measured,
            &r,
        ));
    }
    if !c2c_nodes.is_empty() {
        // PU of core c (first thread) is c, as machine::describe numbers them.
        let cores: Vec<usize> = c2c_nodes
            .iter()
            .flat_map(|&n| truth.nodes[n as usize].cores.clone())
            .collect();
        let p = Placement {
            cores: cores.iter().map(|&c| truth.cores[c].stop).collect(),
            targets: Vec::new(),
        };
        let m = latency::core_to_core_matrix(truth, &p, None);
        let n = cores.len();
        let mut rows = vec![vec![None; n]; n];
        for i in 0..n {
            for j in 0..i {
                let v = truth.ns((m[i][j] + m[j][i]) / 2.0) + noise.c2c_ns * gauss(&mut rng);
                rows[i][j] = Some(v);
                rows[j][i] = Some(v);
            }
        }
        let mut r = c2c0.clone();
        r.cpus = cores.iter().map(|&c| c as u32).collect();
        r.matrix_ns = SquareMatrix::from_rows(&rows).unwrap();
        records.push(Record::new(
            "c2c/matrix/cas/first-cpu-node",
            Origin::Measured,
            &r,
        ));
    }
    for &node in bw_nodes {
        let cores = truth.nodes[node as usize].cores.len();
        // Triad: 2 reads, 1 write and its write-allocate read.
        let gbps =
            predict::bandwidth(truth, node, cores, 3, 1) * (1.0 + noise.bw * gauss(&mut rng));
        let mut r = bw0.clone();
        r.threads = cores;
        r.matrix = Some(MatrixCell {
            cpu_node: node,
            mem_node: node,
        });
        r.actual_bandwidth_gbps.median = gbps;
        records.push(Record::new(
            format!("mem/bandwidth/matrix/cpu-node{node}/mem-node{node}/t{cores}/triad"),
            Origin::Measured,
            &r,
        ));
    }
    Bundle {
        schema_version: t.schema_version,
        envelope,
        records,
    }
}

fn param<'a>(c: &'a Calibration, key: &str) -> &'a CalibratedParameter {
    c.parameters
        .iter()
        .find(|p| p.key == key)
        .unwrap_or_else(|| panic!("no parameter {key}: {:?}", c.parameters))
}

fn sets(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const TRUTH: &[&str] = &[
    "noc.router_cycles=3",
    "slc.lookup_cycles=20",
    "socket.link_latency_ns=120",
    "memory.ddr.latency_ns=85",
    "memory.ddr.channel_gbps=19.2",
];

const NOISE: Noise = Noise {
    mem_ns: 1.0,
    c2c_ns: 5.0,
    bw: 0.02,
};

/// Every (CPU node, memory node) pair of a model.
fn all_pairs(m: &Model) -> Vec<(u32, u32)> {
    let n = m.nodes.len() as u32;
    (0..n).flat_map(|a| (0..n).map(move |b| (a, b))).collect()
}

#[test]
fn altered_two_socket_altra_in_quadrant_mode_is_recovered() {
    // Quadrant mode: 4 nodes per socket, 8 in all, so 64 memory latencies and 36
    // core-to-core node pairs between near and far nodes.
    let preset = "altra-q80-2s:quadrant";
    let truth = Model::load(preset, &sets(TRUTH)).unwrap();
    let nodes: Vec<u32> = (0..truth.nodes.len() as u32).collect();
    let mut worst = Vec::new();
    // Several noise draws: the tolerance must hold for each, not for a lucky one.
    for seed in 1..=3 {
        let b = synthetic(&truth, &all_pairs(&truth), &nodes, &nodes, NOISE, seed);
        let c = calibrate::calibrate(preset, &[], &[("synthetic".into(), b)]).unwrap();
        for (key, want) in [
            ("noc.router_cycles", 3.0),
            ("slc.lookup_cycles", 20.0),
            ("socket.link_latency_ns", 120.0),
            ("memory.ddr.latency_ns", 85.0),
            ("memory.ddr.channel_gbps", 19.2),
        ] {
            let p = param(&c, key);
            assert_eq!(p.status, "fitted", "{key}: {p:?}");
            let se = p.std_error.expect("many more figures than parameters");
            let err = (p.value - want).abs();
            worst.push((key, err, se));
            // Tolerance: 4 standard errors of the fit (Gaussian noise and some 90
            // residual degrees of freedom: a miss beyond 4 s.e. has odds below 1e-4
            // per parameter), and a stated bound: half a cycle per hop (so rounding
            // gives the true integer), 2 cycles (1 ns) of lookup, 2 ns on the ns
            // latencies (1 ns noise on each memory figure), 3% on bandwidth (2% noise
            // on each of 8 figures).
            let bound = match key {
                "noc.router_cycles" => 0.5,
                "slc.lookup_cycles" => 2.0,
                "memory.ddr.channel_gbps" => 0.03 * want,
                _ => 2.0,
            };
            assert!(
                err <= 4.0 * se && err < bound,
                "seed {seed} {key}: fitted {} +- {se}, true {want}",
                p.value
            );
        }
        assert_eq!(param(&c, "noc.router_cycles").saved, 3.0);
        // The fit explains the figures to about the noise.
        for r in &c.rms {
            assert!(r.rms < r.rms_before / 5.0, "{r:?}");
            match r.kind.as_str() {
                "mem.latency" => assert!(r.rms < 2.5, "{r:?}"),
                "c2c" => assert!(r.rms < 1.5, "{r:?}"),
                _ => assert!(r.rms_percent < 5.0, "{r:?}"),
            }
        }
    }
    eprintln!("(key, |error|, s.e.): {worst:?}");
}

#[test]
fn one_node_per_socket_leaves_the_hop_cost_loose_and_says_so() {
    // Two nodes (one per socket): 4 memory latencies and 3 core-to-core node pairs
    // hardly differ in hop count, so 1 ns of noise moves the per-hop cost by a cycle or
    // more. The standard error must say so rather than claim quadrant-mode precision.
    let truth = Model::load("altra-q80-2s", &sets(TRUTH)).unwrap();
    for seed in 1..=2 {
        let b = synthetic(&truth, &all_pairs(&truth), &[0, 1], &[0, 1], NOISE, seed);
        let c = calibrate::calibrate("altra-q80-2s", &[], &[("two".into(), b)]).unwrap();
        let r = param(&c, "noc.router_cycles");
        assert_eq!(r.status, "fitted");
        assert!(r.std_error.unwrap() > 0.5, "{r:?}");
        assert!(
            c.notes.iter().any(|n| n.contains("degrees of freedom")),
            "{:?}",
            c.notes
        );
        for r in &c.rms {
            assert!(r.rms < r.rms_before, "{r:?}");
        }
    }
}

#[test]
fn the_saved_preset_loads_and_reproduces_the_fit() {
    let truth = Model::load("altra-q80-2s", &sets(TRUTH)).unwrap();
    let b = synthetic(
        &truth,
        &[(0, 0), (0, 1), (1, 0), (1, 1)],
        &[0, 1],
        &[0, 1],
        NOISE,
        7,
    );
    let c = calibrate::calibrate("altra-q80-2s", &[], &[("synthetic".into(), b)]).unwrap();
    let text = calibrate::preset_text(&c, "2026-01-01T00:00:00Z").unwrap();
    assert!(
        text.starts_with("# Calibrated by `numalab model calibrate`"),
        "{text}"
    );
    let dir = std::env::temp_dir().join(format!("numalab-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mine.toml");
    std::fs::write(&file, &text).unwrap();
    let m = Model::load(file.to_str().unwrap(), &[]).unwrap();
    let again = Model::load("altra-q80-2s", &c.calibrated_sets).unwrap();
    assert_eq!(m.spec.noc, again.spec.noc);
    assert_eq!(m.spec.memory, again.spec.memory);
    assert_eq!(m.spec.socket, again.spec.socket);
    assert_eq!(m.spec.slc, again.spec.slc);
    assert_eq!(m.spec.name, "altra-q80-2s-calibrated");
    assert!(m.sources["noc.router_cycles"].contains("calibrated on 2026-01-01"));
    // The residual table is the saved preset's.
    for f in &c.figures {
        let v = match f.kind.as_str() {
            "mem.latency" => predict::mem_latency(&m, f.cpu_node, f.mem_node).unwrap().ns,
            "c2c" => predict::c2c(&m, f.cpu_node, f.mem_node).unwrap().ns,
            _ => continue,
        };
        assert!((v - f.modeled).abs() < 1e-9, "{f:?}: {v}");
    }
    // The base's variants stay available through `base`.
    Model::load(&format!("{}:quadrant", file.to_str().unwrap()), &[]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn latency_terms_predict_a_changed_model() {
    // The linear split the fit relies on: base value + changes x counts = the model's
    // own value with the changed parameters.
    let base = Model::load("altra-q80-2s", &[]).unwrap();
    let changed = Model::load("altra-q80-2s", &sets(&TRUTH[..4])).unwrap();
    let clock = base.spec.noc.clock_ghz;
    for (c, m) in [(0, 0), (0, 1)] {
        let t = predict::mem_latency(&base, c, m).unwrap();
        let want = predict::mem_latency(&changed, c, m).unwrap().ns;
        let got = t.ns + t.hops * 2.0 / clock + t.lookups * 8.0 / clock - 30.0 * t.crossings
            + 15.0 * t.pool_reads[base.main_pool];
        assert!((got - want).abs() < 1e-6, "mem {c}->{m}: {got} vs {want}");
        let t = predict::c2c(&base, c, m).unwrap();
        let want = predict::c2c(&changed, c, m).unwrap().ns;
        let got = t.ns + t.hops * 2.0 / clock + t.lookups * 8.0 / clock - 30.0 * t.crossings;
        assert!((got - want).abs() < 1e-6, "c2c {c}-{m}: {got} vs {want}");
    }
}

#[test]
fn one_node_memory_latency_alone_fits_memory_and_flags_the_rest() {
    // A single node, one memory latency and no core-to-core matrix: memory latency,
    // router and lookup all move that one figure the same way.
    let truth = Model::load("mesh", &sets(&["memory.ddr.latency_ns=90"])).unwrap();
    let b = synthetic(&truth, &[(0, 0)], &[], &[], NOISE, 3);
    let c = calibrate::calibrate("mesh", &[], &[("one".into(), b)]).unwrap();
    let mem = param(&c, "memory.ddr.latency_ns");
    assert_eq!(mem.status, "fitted");
    assert!((mem.value - 90.0).abs() < 4.0, "{mem:?}");
    assert!(mem.std_error.is_none(), "one figure, one parameter");
    // The mesh preset's routers are input-queued: they never charge
    // noc.router_cycles, which is reported as not used rather than fitted.
    let r = param(&c, "noc.router_cycles");
    assert_eq!(r.status, "not-used", "{r:?}");
    assert!(r.note.as_deref().unwrap().contains("input-queued"), "{r:?}");
    assert_eq!((r.value, r.saved), (r.start, r.start));
    assert!(c
        .calibrated_sets
        .iter()
        .all(|s| !s.starts_with("noc.router_cycles")));
    let p = param(&c, "slc.lookup_cycles");
    assert_eq!(p.status, "not-identifiable", "{p:?}");
    assert!(
        p.note.as_deref().unwrap().contains("memory.ddr.latency_ns"),
        "{p:?}"
    );
    assert_eq!(p.saved, p.start);
    assert_eq!(param(&c, "memory.ddr.channel_gbps").status, "no-data");
    // A one-socket preset has no socket parameter at all.
    assert!(c.parameters.iter().all(|p| !p.key.starts_with("socket.")));
}

#[test]
fn socket_link_without_cross_socket_figures_is_not_invented() {
    let truth = Model::load("altra-q80-2s", &sets(TRUTH)).unwrap();
    let b = synthetic(&truth, &[(0, 0), (1, 1)], &[0], &[], NOISE, 5);
    let c = calibrate::calibrate("altra-q80-2s", &[], &[("local".into(), b)]).unwrap();
    let s = param(&c, "socket.link_latency_ns");
    assert_eq!(s.status, "no-data", "{s:?}");
    assert_eq!(s.saved, 150.0);
    assert!(!c.calibrated_sets.iter().any(|k| k.starts_with("socket.")));
}

#[test]
fn a_node_count_that_differs_is_refused() {
    let truth = Model::load("altra-q80-2s", &[]).unwrap();
    let b = synthetic(&truth, &[(0, 0), (0, 1)], &[], &[], NOISE, 1);
    let e = calibrate::calibrate("altra-q80", &[], &[("two-node".into(), b)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("two-node"), "{e}");
    assert!(e.contains("2 NUMA node(s), preset altra-q80 has 1"), "{e}");
    assert!(e.contains("numa.split"), "{e}");
}

#[test]
fn a_bundle_without_usable_records_is_refused() {
    let truth = Model::load("mesh", &[]).unwrap();
    let mut b = synthetic(&truth, &[(0, 0)], &[], &[], NOISE, 1);
    // The only latency is a cache figure (4 MiB, below 2x the 64 MiB SLC).
    let mut r: LatencyRecord = b.records[0].decode().unwrap().unwrap();
    r.points[0].working_set_bytes = 4 << 20;
    b.records = vec![Record::new("mem/latency/small", Origin::Measured, &r)];
    let e = calibrate::calibrate("mesh", &[], &[("small".into(), b)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no record to calibrate to (found 1 mem.latency)"),
        "{e}"
    );
    assert!(e.contains("a cache figure"), "{e}");
    let mut empty = template();
    empty.records.clear();
    let e = calibrate::calibrate("mesh", &[], &[("empty".into(), empty)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("found no records"), "{e}");
}

#[test]
fn core_limited_bandwidth_fits_the_outstanding_depth_not_the_channels() {
    // Two threads on the 8 x 8 mesh cannot load its 8 channels: the model's bandwidth
    // is outstanding requests over latency, so the depth is what the figure sets.
    let truth = Model::load("mesh", &sets(&["cores.max_outstanding=40"])).unwrap();
    let mut b = synthetic(&truth, &[(0, 0)], &[0], &[0], NOISE, 11);
    let gbps = predict::bandwidth(&truth, 0, 2, 3, 1);
    for r in b.records.iter_mut() {
        if let Some(Ok(mut bw)) = r.decode::<BandwidthRecord>() {
            bw.threads = 2;
            bw.actual_bandwidth_gbps.median = gbps;
            *r = Record::new(r.key.clone(), Origin::Measured, &bw);
        }
    }
    let c = calibrate::calibrate("mesh", &[], &[("two-threads".into(), b)]).unwrap();
    let ch = param(&c, "memory.ddr.channel_gbps");
    assert_eq!(ch.status, "not-identifiable", "{ch:?}");
    let o = param(&c, "cores.max_outstanding");
    assert_eq!(o.status, "fitted", "{o:?}");
    // Latencies are fitted to 1 ns noise, and bandwidth is outstanding over latency:
    // within 2 of 40 (5%).
    assert!((o.saved - 40.0).abs() <= 2.0, "{o:?}");
    let bw = c
        .figures
        .iter()
        .find(|f| f.kind == "mem.bandwidth")
        .unwrap();
    assert!(bw.residual_percent.abs() < 5.0, "{bw:?}");
}

/// `noc.router_cycles` is fitted where the configured router charges it (output-queued)
/// and not where it does not (input-queued: each router costs its pipeline's stages in
/// both engines): there its row says `not-used`, the text shows no fitted value, and
/// the calibrated preset does not set it.
#[test]
fn router_cycles_is_fitted_only_for_the_router_that_charges_it() {
    let truth = Model::load("neoverse-v1-64", &sets(&["noc.router_cycles=3"])).unwrap();
    let nodes: Vec<u32> = (0..truth.nodes.len() as u32).collect();
    let b = synthetic(&truth, &all_pairs(&truth), &nodes, &[], NOISE, 2);
    let fit = |extra: &[&str]| {
        calibrate::calibrate("neoverse-v1-64", &sets(extra), &[("s".into(), b.clone())]).unwrap()
    };
    let oq = fit(&[]);
    let r = param(&oq, "noc.router_cycles");
    assert_eq!(r.status, "fitted", "{r:?}");
    assert!((r.value - 3.0).abs() < 1.0, "{r:?}");
    let iq = fit(&["noc.router=input-queued"]);
    let r = param(&iq, "noc.router_cycles");
    assert_eq!(r.status, "not-used", "{r:?}");
    assert_eq!((r.value, r.saved), (1.0, 1.0));
    assert!(r.note.as_deref().unwrap().contains("= 3 cycles"), "{r:?}");
    assert!(iq
        .calibrated_sets
        .iter()
        .all(|s| !s.starts_with("noc.router_cycles")));
    let text = calibrate::report::render(&iq, &|s| s.to_string());
    let line = text
        .lines()
        .find(|l| l.starts_with("noc.router_cycles"))
        .unwrap();
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols[1..5], ["1", "-", "-", "1"], "{line}");
    assert!(line.contains("not-used"), "{line}");
    // The other latency parameters are still fitted.
    assert_eq!(param(&iq, "slc.lookup_cycles").status, "fitted");
}
