//! Every memory latency is one kind of measurement, named in its record: the same
//! order on every page kind and in every probe that reports memory latency.

use numalab_mem::budget::Budgets;
use numalab_mem::chase::{Order, BLOCK_BYTES};
use numalab_mem::latency::{self, LatencyRecord, Load, Locality};
use numalab_mem::loaded;
use numalab_mem::PageRequest;
use numalab_schema::Record;
use numalab_topo::bind::{HwlocPlacer, MemPolicy};

#[test]
fn every_memory_latency_probe_chases_in_one_order() {
    // The curve, the node matrix and the loaded-latency probe chase every line in
    // uniformly random order over the working set: one name, one measurement (the
    // matrix used to chase in pages, two lines apart, and gave a third of the curve's
    // figure on this VM).
    let m = numalab_topo::live().unwrap();
    let curve = latency::Options::defaults(&m);
    let idle = latency::Options::idle(&m);
    let quick = latency::Options::quick(&m);
    let under_load = loaded::Options::defaults(&m);
    for (what, order, stride) in [
        ("curve", curve.order, curve.stride_bytes),
        ("matrix", idle.order, idle.stride_bytes),
        ("quick", quick.order, quick.stride_bytes),
        ("loaded", under_load.order, under_load.stride_bytes),
    ] {
        assert_eq!(order, Order::Global, "{what}");
        assert_eq!(stride, curve.stride_bytes, "{what}: every line");
    }
}

fn run(pages: PageRequest, order: Order) -> LatencyRecord {
    let m = numalab_topo::live().unwrap();
    let placer = HwlocPlacer::new().unwrap();
    let mut opts = latency::Options::quick(&m);
    opts.order = order;
    opts.batches = 5;
    opts.batch_ns = 2000.0;
    let cpu = m.pu_ids()[0];
    let plan = latency::plan(
        &m,
        &Budgets::live(&m),
        &[cpu],
        &MemPolicy::FirstTouch,
        &[pages],
        vec![8 << 20],
        opts,
    )
    .unwrap();
    let mut recs: Vec<Record> = Vec::new();
    let out = latency::run(&plan, &m, &placer, &mut recs);
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    recs[0].decode().unwrap().unwrap()
}

#[test]
fn base_and_huge_pages_are_chased_in_the_same_order_and_say_so() {
    for order in [Order::PageLocal, Order::Global] {
        let base = run(PageRequest::Base, order);
        let thp = run(PageRequest::Thp, order);
        // The kind is written into the record, not only derived.
        let (kb, kt) = (base.kind.clone().unwrap(), thp.kind.clone().unwrap());
        assert_eq!(kb.load, Load::Idle);
        assert_eq!(kb.order, order);
        assert_eq!(
            kb.locality,
            Locality::Local,
            "first touch by the chasing CPU"
        );
        assert_eq!(kb.pages, "base");
        // The page order's blocks are 4 KiB on both page kinds (they used to be the
        // page size: 2 MiB on THP, so "THP against base" compared two orders).
        let block = (order == Order::PageLocal).then_some(BLOCK_BYTES);
        assert_eq!(kb.block_bytes, block);
        assert_eq!(kt.block_bytes, block);
        assert!(kb.same_but_pages(&kt), "{kb:?} {kt:?}");
        // The last-level cache the figure is set against, from hwloc.
        let (llc, assumed) = numalab_mem::llc_of_cpu(&numalab_topo::live().unwrap(), base.cpu);
        assert_eq!(kb.llc_bytes, assumed.is_none().then_some(llc));
        let label = kb.label(8 << 20);
        assert!(label.starts_with("idle, random "), "{label}");
        assert!(label.ends_with(", base pages, local"), "{label}");
        // And in the JSON a reader sees.
        let json = serde_json::to_value(&base).unwrap();
        assert_eq!(json["kind"]["order"], order.name());
        assert_eq!(json["kind"]["load"], "idle");
    }
}
