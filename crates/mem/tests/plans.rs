//! Plans for machines we do not have, built from hwloc XML fixtures and executed with
//! the fake placer: every node pair of a 2-node and an 8-node machine, memory-only
//! nodes as matrix columns, node pairs for migration by SLIT distance, and the
//! refusals that must come before anything runs.
//!
//! The fake placer pins nothing and places nothing: it answers page queries as a
//! well-behaved kernel would. These tests prove the plans, keys, resumption and the
//! placement bookkeeping per cell, not the kernel's NUMA behaviour (the QEMU
//! multi-node guest does that).

use numalab_mem::bandwidth::{self, BandwidthRecord};
use numalab_mem::budget::Budgets;
use numalab_mem::kernels::Kernel;
use numalab_mem::latency::{self, LatencyRecord};
use numalab_mem::migrate::{self, Method, MigrateRecord, PairChoice};
use numalab_mem::{PageRequest, Sink};
use numalab_schema::{Classify, ErrorClass, Machine, Record};
use numalab_topo::bind::{FakePlacer, MemPolicy};
use std::collections::BTreeSet;
use std::path::Path;

fn fixture(name: &str) -> Machine {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/topology")
        .join(name);
    numalab_topo::machine(&numalab_topo::Input::detect(&p).unwrap()).unwrap()
}

const TWO_NODES: &str = "32em64t-2n8c+dax+nvme+mic+dimms.xml";
const EIGHT_NODES: &str = "llnl-epyc-dual-sock-hwloc1.xml";
const MEMORY_ONLY: &str = "llnl-knl-snc4-flat-hwloc1.xml";

fn small_bandwidth(machine: &Machine) -> bandwidth::Options {
    let mut o = bandwidth::Options::defaults(machine);
    o.kernels = vec![
        Kernel::parse("triad").unwrap(),
        Kernel::parse("copy-nt").unwrap(),
    ];
    o.working_set_bytes = 256 << 10;
    o.reps = 2;
    o.min_sample_ns = 100_000.0;
    o
}

fn roomy(machine: &Machine) -> Budgets {
    Budgets::uniform(machine, 64 << 30)
}

#[test]
fn two_node_bandwidth_matrix_runs_every_pair_with_its_placement() {
    let m = fixture(TWO_NODES);
    let plan = bandwidth::plan_matrix(&m, &roomy(&m), &[2], small_bandwidth(&m)).unwrap();
    assert_eq!(plan.groups.len(), 4);
    let placer = FakePlacer::for_machine(&m);
    let mut recs: Vec<Record> = Vec::new();
    let out = bandwidth::run(&plan, &m, &placer, &mut recs);
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    assert_eq!(out.written, 8);
    let keys: BTreeSet<&str> = recs.iter().map(|r| r.key.as_str()).collect();
    assert!(keys.contains("mem/bandwidth/matrix/cpu-node0/mem-node1/t2/triad"));
    assert!(keys.contains("mem/bandwidth/matrix/cpu-node1/mem-node0/t2/copy-nt"));
    assert_eq!(keys.len(), 8);
    for r in &recs {
        let b: BandwidthRecord = r.decode().unwrap().unwrap();
        let cell = b.matrix.unwrap();
        assert_eq!(b.threads, 2);
        assert_eq!(b.placement.backend, "fake");
        assert_eq!(b.placement.cpu_nodes, vec![cell.cpu_node]);
        assert_eq!(b.placement.policy, MemPolicy::Bind(vec![cell.mem_node]));
        assert_eq!(b.placement.expected_nodes, vec![cell.mem_node]);
        assert_eq!(b.placement.pages_per_node.len(), 1);
        assert_eq!(b.placement.pages_per_node[0].0, cell.mem_node);
        assert_eq!(b.placement.fraction_expected, 1.0);
        // The threads of row i are node i's first PUs.
        let node_cpus = &m.node(cell.cpu_node).unwrap().cpus;
        assert_eq!(b.placement.cpus, node_cpus[..2].to_vec());
        assert!(r.warnings.iter().all(|w| w.code != "placement_mismatch"));
        assert!(b.bandwidth_gbps.median.is_finite() && b.bandwidth_gbps.median > 0.0);
    }
    // The fake placer was asked to pin every worker of every cell.
    assert_eq!(placer.pins.lock().unwrap().len(), 4 * 2);
}

/// Records written so far, as a resumed journal would have them.
struct Resume {
    have: Vec<Record>,
}

impl Sink for Resume {
    fn done(&self, key: &str) -> bool {
        self.have.iter().any(|r| r.key == key)
    }
    fn push(&mut self, record: Record) -> Result<(), numalab_mem::SinkError> {
        self.have.push(record);
        Ok(())
    }
}

#[test]
fn eight_node_matrices_have_64_cells_and_resume_cell_by_cell() {
    let m = fixture(EIGHT_NODES);
    assert_eq!(m.numa_nodes.len(), 8);
    let mut opts = small_bandwidth(&m);
    opts.kernels = vec![Kernel::parse("triad").unwrap()];
    let plan = bandwidth::plan_matrix(&m, &roomy(&m), &[1], opts).unwrap();
    assert_eq!(plan.groups.len(), 64);
    let keys = plan.keys();
    assert_eq!(
        keys.iter().collect::<BTreeSet<_>>().len(),
        64,
        "keys are unique"
    );
    let placer = FakePlacer::for_machine(&m);
    // A run that already has the first 10 cells measures only the other 54.
    let mut first: Vec<Record> = Vec::new();
    let mut part = plan.clone();
    part.groups.truncate(10);
    bandwidth::run(&part, &m, &placer, &mut first);
    let mut sink = Resume { have: first };
    let out = bandwidth::run(&plan, &m, &placer, &mut sink);
    assert_eq!(out.skipped, 10);
    assert_eq!(out.written, 54);
    let got: BTreeSet<&str> = sink.have.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(got, keys.iter().map(String::as_str).collect());
    for r in &sink.have {
        let b: BandwidthRecord = r.decode().unwrap().unwrap();
        let c = b.matrix.unwrap();
        assert_eq!(b.placement.pages_per_node[0].0, c.mem_node);
        assert_eq!(b.placement.cpu_nodes, vec![c.cpu_node]);
    }

    // The idle-latency matrix: one point per pair.
    let mut lo = latency::Options::defaults(&m);
    lo.batches = 5;
    lo.batch_ns = 2000.0;
    let lplan = latency::plan_matrix(&m, &roomy(&m), &[PageRequest::Base], 64 << 10, lo).unwrap();
    assert_eq!(lplan.cells.len(), 64);
    let mut recs: Vec<Record> = Vec::new();
    let out = latency::run(&lplan, &m, &placer, &mut recs);
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    assert_eq!(recs.len(), 64);
    for r in &recs {
        let l: LatencyRecord = r.decode().unwrap().unwrap();
        let c = l.matrix.unwrap();
        assert_eq!(l.placement.pages_per_node, vec![(c.mem_node, 16)]);
        assert_eq!(m.pu(l.cpu).unwrap().numa_node, Some(c.cpu_node));
        assert_eq!(l.points.len(), 1);
        assert!(l.points[0].latency_ns.median > 0.0);
    }
}

#[test]
fn memory_only_nodes_are_columns_not_rows() {
    // KNL in SNC-4 flat mode: 4 DDR nodes with the cores, 4 MCDRAM nodes without.
    let m = fixture(MEMORY_ONLY);
    let rows: Vec<u32> = bandwidth::cpu_nodes(&m).iter().map(|r| r.0).collect();
    assert_eq!(rows, vec![0, 1, 2, 3]);
    assert_eq!(bandwidth::memory_nodes(&m), (0..8).collect::<Vec<_>>());
    let mut opts = small_bandwidth(&m);
    opts.kernels = vec![Kernel::parse("read").unwrap()];
    let plan = bandwidth::plan_matrix(&m, &roomy(&m), &[1], opts).unwrap();
    assert_eq!(plan.groups.len(), 32);
    let placer = FakePlacer::for_machine(&m);
    let mut recs: Vec<Record> = Vec::new();
    let out = bandwidth::run(&plan, &m, &placer, &mut recs);
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    let to_mcdram = recs
        .iter()
        .filter_map(|r| r.decode::<BandwidthRecord>()?.ok())
        .filter(|b| b.matrix.unwrap().mem_node >= 4)
        .count();
    assert_eq!(to_mcdram, 16);
}

#[test]
fn migration_pairs_follow_the_slit_and_every_cell_says_where_pages_went() {
    let m = fixture(EIGHT_NODES);
    let (pairs, _) = migrate::pairs(&m, &PairChoice::NearestFarthest, None).unwrap();
    assert_eq!(pairs.len(), 2);
    let d: Vec<u64> = pairs.iter().map(|p| p.distance.unwrap()).collect();
    assert_eq!(pairs[0].role, "nearest");
    assert_eq!(pairs[1].role, "farthest");
    let slit = m.slit().unwrap();
    let all: Vec<u64> = slit
        .values
        .iter()
        .enumerate()
        .flat_map(|(i, row)| {
            row.iter()
                .enumerate()
                .filter(move |(j, _)| *j != i)
                .map(|(_, v)| *v)
        })
        .collect();
    assert_eq!(d[0], *all.iter().min().unwrap());
    assert_eq!(d[1], *all.iter().max().unwrap());
    // The mover sits on the target node.
    assert_eq!(m.pu(pairs[1].cpu).unwrap().numa_node, Some(pairs[1].dst));
    let (every, _) = migrate::pairs(&m, &PairChoice::All, None).unwrap();
    assert_eq!(every.len(), 56);

    // Run two tiny cells per pair and method with the fake placer.
    let mut opts = migrate::Options::defaults();
    opts.unit_bytes = vec![64 << 10];
    opts.counts = vec![2, 4];
    opts.reps = 2;
    opts.link_peak_gbps = Some(20.0);
    let plan = migrate::plan(
        &m,
        &roomy(&m),
        &PairChoice::NearestFarthest,
        None,
        opts,
        true,
    )
    .unwrap();
    assert_eq!(plan.cells.len(), 4);
    let placer = FakePlacer::for_machine(&m);
    let mut recs: Vec<Record> = Vec::new();
    let out = migrate::run(&plan, &m, &roomy(&m), &placer, &mut recs);
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    assert_eq!(recs.len(), 4);
    for r in &recs {
        let g: MigrateRecord = r.decode().unwrap().unwrap();
        assert!(!g.same_node);
        assert_eq!(g.source.pages_per_node, vec![(g.src_node, g.base_pages)]);
        assert_eq!(g.methods.len(), 3);
        for mr in &g.methods {
            assert_eq!(mr.pages_on_target, g.base_pages, "{:?}", mr.method);
            assert!(mr.pages_not_moved.is_empty());
            assert_eq!(
                mr.destination.pages_per_node,
                vec![(g.dst_node, g.base_pages)]
            );
            assert!(mr.data_verified);
            let t = mr.throughput_gbps.as_ref().unwrap();
            assert!(t.median > 0.0 && t.median.is_finite());
            assert!((mr.percent_of_reference.unwrap() - 100.0 * t.median / 20.0).abs() < 1e-9);
        }
        assert!(g.winner.is_some());
        assert_eq!(g.reference.kind, "link_peak");
        assert!(g.why.contains("wins at"));
    }
    assert_eq!(
        migrate::conclude(
            &recs
                .iter()
                .map(|r| r.decode().unwrap().unwrap())
                .collect::<Vec<_>>()
        )
        .len(),
        2
    );
}

#[test]
fn refusals_come_before_anything_runs() {
    let m = fixture(TWO_NODES);
    let small = Budgets::uniform(&m, 1 << 30);
    // Too large for half of a node's free memory.
    let mut o = small_bandwidth(&m);
    o.working_set_bytes = 1 << 30;
    o.size_given = true;
    let e = bandwidth::plan(&m, &small, &[0, 1], &[2], &MemPolicy::Bind(vec![1]), o).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Usage);
    assert!(
        e.to_string().contains("node 1") && e.to_string().contains("--size"),
        "{e}"
    );
    // More threads than PUs.
    let e = bandwidth::plan(
        &m,
        &small,
        &[0, 1],
        &[3],
        &MemPolicy::FirstTouch,
        small_bandwidth(&m),
    )
    .unwrap_err();
    assert!(e.to_string().contains("more threads than PUs"), "{e}");
    // A node that does not exist.
    let e = bandwidth::plan(
        &m,
        &small,
        &[0],
        &[1],
        &MemPolicy::Bind(vec![7]),
        small_bandwidth(&m),
    )
    .unwrap_err();
    assert!(e.to_string().contains("NUMA node 7 does not exist"), "{e}");
    let e = migrate::pairs(&m, &PairChoice::Explicit(0, 9), None).unwrap_err();
    assert!(e.to_string().contains("NUMA node 9 does not exist"), "{e}");
    // An explicit migration size that does not fit the target is refused; the default
    // sweep is clamped instead, and says so.
    let mut mo = migrate::Options::defaults();
    mo.counts = vec![1 << 17];
    mo.unit_bytes = vec![64 << 10];
    let e = migrate::plan(&m, &small, &PairChoice::Explicit(0, 1), None, mo, true).unwrap_err();
    assert!(e.to_string().contains("--max-pages"), "{e}");
    let plan = migrate::plan(
        &m,
        &small,
        &PairChoice::Explicit(0, 1),
        None,
        migrate::Options::defaults(),
        false,
    )
    .unwrap();
    let note = plan.clamp_note.clone().unwrap();
    assert!(note.contains("clamped"), "{note}");
    // 25% of 1 GiB = 256 MiB per node: 64 KiB pages stop at 2^12 (256 MiB).
    let max64 = plan
        .cells
        .iter()
        .filter(|c| c.unit_bytes == 64 << 10)
        .map(|c| c.pages)
        .max();
    assert_eq!(max64, Some(1 << 12));
    assert!(plan.notes.iter().any(|n| n.contains("clamped")));
    // Latency: a CPU that does not exist.
    let e = latency::plan(
        &m,
        &small,
        &[99],
        &MemPolicy::FirstTouch,
        &[PageRequest::Base],
        vec![4096],
        latency::Options::defaults(&m),
    )
    .unwrap_err();
    assert!(e.to_string().contains("CPU 99 does not exist"), "{e}");
    let _ = Method::ALL;
}

#[test]
fn one_node_machines_migrate_node_0_to_itself_as_a_baseline() {
    let m = fixture("AMD-19h-Zen3-2xEpyc-7763.xml");
    let (pairs, notes) = migrate::pairs(&m, &PairChoice::NearestFarthest, None).unwrap();
    assert_eq!(pairs.len(), 1);
    assert_eq!((pairs[0].src, pairs[0].dst), (0, 0));
    assert_eq!(pairs[0].role, "same-node baseline");
    assert!(notes[0].contains("sanity baseline"));
}

#[test]
fn quick_plans_for_evaluate_build_on_every_fixture_shape() {
    for name in [
        TWO_NODES,
        EIGHT_NODES,
        MEMORY_ONLY,
        "AMD-19h-Zen4-2xEpyc-9654.xml",
    ] {
        let m = fixture(name);
        let b = roomy(&m);
        let bw = bandwidth::quick_plan(&m, &b).unwrap();
        assert_eq!(bw.groups.len(), 2, "{name}: one thread and all PUs");
        assert_eq!(bw.groups[1].pus.len(), m.pus.len());
        let lat = latency::quick_plan(&m, &b).unwrap();
        assert_eq!(lat.cells.len(), 2, "{name}: base and THP");
        assert!(lat.cells[0].sizes.len() >= 13);
        numalab_mem::loaded::quick_plan(&m, &b).unwrap();
        let mig = migrate::quick_plan(&m, &b).unwrap();
        assert!(!mig.cells.is_empty());
        assert!(
            mig.clamp_note.is_none(),
            "{name}: 64 GiB free is enough for the quick sweep"
        );
    }
}
