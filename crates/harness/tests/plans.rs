//! Placement plans computed for real topologies of other machines (hwloc fixtures in
//! tests/fixtures/topology, see PROVENANCE.md there), checked by hand against
//! `lstopo --input FILE`.

use numalab_harness::plan::{cpu_order, default_thread_counts, place, transition, Placement};
use numalab_schema::Machine;
use numalab_topo::{machine, Input};
use std::path::Path;

fn load(name: &str) -> Machine {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/topology")
        .join(name);
    machine(&Input::detect(&p).unwrap()).unwrap()
}

fn cpus(m: &Machine, p: Placement, t: usize) -> String {
    place(m, p, t, None).unwrap().cpus_text()
}

/// Kunpeng 920: 2 packages x 2 NUMA nodes x 8 clusters x 4 cores, CPUs numbered
/// 0-31 (node 0), 32-63 (node 1), 64-95 (node 2), 96-127 (node 3).
#[test]
fn kunpeng_compact_and_scatter() {
    let m = load("128arm-2pa2n8cluster4co.tar.bz2");
    assert_eq!(cpus(&m, Placement::Compact, 4), "0-3");
    assert_eq!(cpus(&m, Placement::Compact, 33), "0-32");
    // Scatter: package 0 node 0 cluster 0, package 1 node 2, package 0 node 1,
    // package 1 node 3, then the second cluster of each node.
    let order = cpu_order(&m, Placement::Scatter);
    assert_eq!(&order[..8], &[0, 64, 32, 96, 4, 68, 36, 100]);
    assert_eq!(cpus(&m, Placement::Scatter, 8), "0,4,32,36,64,68,96,100");
    let mut all = order.clone();
    all.sort_unstable();
    assert_eq!(all, (0..128).collect::<Vec<u32>>());
    // Default counts: powers of two plus cluster (4), node (32), package (64).
    assert_eq!(
        default_thread_counts(&m, Placement::Compact, None),
        vec![1, 2, 4, 8, 16, 32, 64, 128]
    );
    let p4 = place(&m, Placement::Compact, 4, None).unwrap();
    assert_eq!(p4.boundaries, vec!["one cluster"]);
    let p32 = place(&m, Placement::Compact, 32, None).unwrap();
    let p64 = place(&m, Placement::Compact, 64, None).unwrap();
    let p128 = place(&m, Placement::Compact, 128, None).unwrap();
    assert_eq!(p32.boundaries, vec!["one NUMA node"]);
    assert_eq!(p64.boundaries, vec!["one package"]);
    assert!(transition(&p32, &p64).unwrap().contains("NUMA node 1"));
    assert!(transition(&p64, &p128).unwrap().contains("package 1"));
    // numa-local on node 2: its own CPUs and memory.
    let local = place(&m, Placement::NumaLocal, 8, Some(2)).unwrap();
    assert_eq!(local.cpus_text(), "64-71");
}

/// 2 x Xeon Gold 6140 (18 cores, 2 threads each): package 0 has the even CPUs, package
/// 1 the odd ones; core 0 is PUs 0 and 36, core 1 is PUs 2 and 38.
#[test]
fn skylake_smt_compact_fills_a_core_scatter_uses_siblings_last() {
    let m = load("Intel-Skylake-2xXeon6140.xml");
    assert_eq!(m.pus.len(), 72);
    assert_eq!(cpus(&m, Placement::Compact, 2), "0,36");
    assert_eq!(cpus(&m, Placement::Compact, 4), "0,2,36,38");
    assert_eq!(cpus(&m, Placement::Scatter, 4), "0-3");
    // 36 threads scattered: one per core on both packages, no sibling yet.
    let p36 = place(&m, Placement::Scatter, 36, None).unwrap();
    assert_eq!(p36.cpus_text(), "0-35");
    assert_eq!(p36.span.shared_cores, 0);
    let p37 = place(&m, Placement::Scatter, 37, None).unwrap();
    assert_eq!(p37.span.shared_cores, 1);
    // Compact 36 threads = package 0 with its siblings.
    let c36 = place(&m, Placement::Compact, 36, None).unwrap();
    assert_eq!(c36.span.packages, vec![0]);
    assert_eq!(c36.boundaries, vec!["one package"]);
    assert_eq!(
        place(&m, Placement::Compact, 2, None).unwrap().boundaries,
        vec!["one core"]
    );
    assert_eq!(
        default_thread_counts(&m, Placement::Compact, None),
        vec![1, 2, 4, 8, 16, 32, 36, 64, 72]
    );
}
