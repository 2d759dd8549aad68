//! Thread order and data placement: real on this machine (pages located by the kernel),
//! and as plans on big machines described by hwloc fixtures (fake placer: the plan is
//! checked, not the hardware).

use super::{fixture_machine, graph};
use numalab_topo::bind::{FakePlacer, HwlocPlacer, MemPolicy, PageKind, Placer, Region};
use numalab_topo::system::SysRoot;
use numalab_topo::TopoError;
use numalab_workload::placement::{check_memory, cpu_order, memory_nodes, place, Slot};
use numalab_workload::{CpuOrder, Mode, WorkloadError};

#[test]
fn compact_fills_a_node_scatter_deals_nodes_smt_last() {
    let m = fixture_machine("192em64t-24n8c2t.xml");
    let compact = cpu_order(&m, CpuOrder::Compact);
    let scatter = cpu_order(&m, CpuOrder::Scatter);
    assert_eq!(compact.len(), 384);
    assert_eq!(scatter.len(), 384);
    let core_of = |pu: u32| m.pu(pu).unwrap().core;
    // One PU per core before any SMT sibling.
    let firsts: std::collections::HashSet<_> =
        compact[..192].iter().map(|s| core_of(s.pu)).collect();
    assert_eq!(
        firsts.len(),
        192,
        "compact: first 192 clients on distinct cores"
    );
    let firsts: std::collections::HashSet<_> =
        scatter[..192].iter().map(|s| core_of(s.pu)).collect();
    assert_eq!(
        firsts.len(),
        192,
        "scatter: first 192 clients on distinct cores"
    );
    // Compact: the first 8 clients share one node; scatter: 24 clients on 24 nodes.
    assert!(compact[..8].iter().all(|s| s.node == compact[0].node));
    let nodes: std::collections::HashSet<u32> = scatter[..24].iter().map(|s| s.node).collect();
    assert_eq!(nodes.len(), 24);
    // Every slot's node is the PU's node.
    for s in compact.iter().chain(&scatter) {
        assert_eq!(m.pu(s.pu).unwrap().numa_node, Some(s.node));
    }
}

#[test]
fn every_mode_places_pages_where_asked_on_this_machine() {
    let machine = numalab_topo::live().unwrap();
    let placer = HwlocPlacer::new().unwrap();
    let g = graph(21, 60_000);
    let clients: Vec<Slot> = cpu_order(&machine, CpuOrder::Compact)
        .into_iter()
        .take(2)
        .collect();
    for mode in Mode::ALL {
        let p = place(&g, mode, &clients, &machine, &placer, PageKind::Base).unwrap();
        // The copies hold the generated graph, byte for byte.
        for c in &p.copies {
            assert_eq!(c.view().fingerprint(), g.fingerprint());
        }
        let nodes: std::collections::BTreeSet<u32> = clients.iter().map(|s| s.node).collect();
        let expected_copies = if mode == Mode::Replicated {
            nodes.len()
        } else {
            1
        };
        assert_eq!(p.copies.len(), expected_copies, "{mode}");
        for (i, s) in clients.iter().enumerate() {
            let r = &p.reports[p.copy_of_client[i]];
            if mode == Mode::Replicated {
                assert_eq!(r.for_node, Some(s.node));
            }
            assert!(r.readers.contains(&i));
        }
        for r in &p.reports {
            // Every page was touched and the kernel located it.
            assert_eq!(r.not_present, 0, "{mode}: {r:?}");
            let located: u64 = r.pages_per_node.iter().map(|(_, c)| c).sum();
            assert_eq!(located, r.pages);
            assert!(r.pages * r.page_bytes >= r.bytes);
            for (n, _) in &r.pages_per_node {
                assert!(machine.numa_nodes.iter().any(|x| x.os_index == *n));
            }
            assert!(
                r.fraction_on_expected.unwrap() > 0.99,
                "{mode}: {:?} of pages on {:?} ({:?})",
                r.fraction_on_expected,
                r.expected_nodes,
                r.pages_per_node
            );
            match mode {
                Mode::SharedFirstTouch => {
                    assert_eq!(r.policy, "first-touch");
                    assert_eq!(r.expected_nodes, vec![clients[0].node]);
                }
                Mode::SharedInterleaved => {
                    assert!(r.policy.starts_with("interleave:"));
                    assert_eq!(r.expected_nodes, memory_nodes(&machine));
                }
                Mode::Replicated => assert!(r.policy.starts_with("bind:")),
            }
        }
        assert!(p.warnings.is_empty(), "{mode}: {:?}", p.warnings);
        let total: u64 = p.pages_per_node().iter().map(|(_, c)| c).sum();
        assert_eq!(total, p.reports.iter().map(|r| r.pages).sum::<u64>());
    }
}

#[test]
fn replicated_plan_on_an_eight_node_machine() {
    // A fake placer on a 4-socket, 8-node Opteron: checks the plan (one copy per node
    // with clients, bound there, built by a client of that node, read by its clients),
    // not the hardware.
    let m = fixture_machine("64amd64-4p2n4ca2co.xml");
    let placer = FakePlacer::for_machine(&m);
    let g = graph(22, 5_000);
    let clients: Vec<Slot> = cpu_order(&m, CpuOrder::Scatter)
        .into_iter()
        .take(12)
        .collect();
    let nodes: std::collections::BTreeSet<u32> = clients.iter().map(|s| s.node).collect();
    assert_eq!(
        nodes.len(),
        8,
        "scatter spreads 12 clients over the 8 nodes"
    );
    let p = place(&g, Mode::Replicated, &clients, &m, &placer, PageKind::Base).unwrap();
    assert_eq!(p.copies.len(), 8);
    for r in &p.reports {
        let n = r.for_node.unwrap();
        assert_eq!(r.policy, MemPolicy::Bind(vec![n]).to_string());
        assert_eq!(r.pages_per_node, vec![(n, r.pages)]);
        assert_eq!(m.pu(r.built_on_pu).unwrap().numa_node, Some(n));
        for &c in &r.readers {
            assert_eq!(clients[c].node, n);
        }
    }
    for (i, s) in clients.iter().enumerate() {
        assert_eq!(p.reports[p.copy_of_client[i]].for_node, Some(s.node));
    }
    // The builders pinned themselves to a PU of their node.
    assert_eq!(placer.pins.lock().unwrap().len(), 8);
    let interleaved = place(
        &g,
        Mode::SharedInterleaved,
        &clients,
        &m,
        &placer,
        PageKind::Base,
    )
    .unwrap();
    assert_eq!(interleaved.copies.len(), 1);
    let r = &interleaved.reports[0];
    assert_eq!(
        r.pages_per_node.len(),
        8,
        "pages on all 8 nodes: {:?}",
        r.pages_per_node
    );
    assert_eq!(interleaved.copy_of_client, vec![0; 12]);
}

use numalab_testkit::write;

#[test]
fn memory_is_checked_before_replicating() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "proc/meminfo",
        "MemTotal: 100000000 kB\nMemAvailable: 90000000 kB\n",
    );
    write(
        root,
        "sys/devices/system/node/node0/meminfo",
        "Node 0 MemFree: 8000000 kB\n",
    );
    write(
        root,
        "sys/devices/system/node/node1/meminfo",
        "Node 1 MemFree: 100000 kB\n",
    );
    let sys = SysRoot::at(root);
    let clients = [Slot { pu: 0, node: 0 }, Slot { pu: 8, node: 1 }];
    let gib = 1u64 << 30;
    // 1 GiB graph: node 0 (7.6 GiB free) fits it, node 1 (98 MiB free) does not.
    let err = check_memory(Mode::Replicated, gib, 1 << 20, &clients, &sys).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, WorkloadError::Memory(_)));
    assert!(
        msg.contains("NUMA node 1") && msg.contains("shared-interleaved"),
        "{msg}"
    );
    // Shared modes only need the total.
    assert!(
        check_memory(Mode::SharedInterleaved, gib, 1 << 20, &clients, &sys)
            .unwrap()
            .is_empty()
    );
    // ...which must fit in MemAvailable.
    let err = check_memory(Mode::SharedFirstTouch, 60 * gib, 1 << 20, &clients, &sys).unwrap_err();
    assert!(err.to_string().contains("available"), "{err}");
    // Unknown free memory is said, not assumed.
    let empty = tempfile::tempdir().unwrap();
    let w = check_memory(
        Mode::Replicated,
        gib,
        0,
        &clients,
        &SysRoot::at(empty.path()),
    )
    .unwrap();
    assert!(
        w.iter().all(|w| w.code == "memory_unchecked") && w.len() == 3,
        "{w:?}"
    );
}

/// A machine whose kernel refuses page queries and explicit first-touch policies (a
/// container with a seccomp filter, a kernel without NUMA).
struct Refusing(FakePlacer);

impl Placer for Refusing {
    fn pin_current_thread(&self, pu: u32) -> Result<(), TopoError> {
        self.0.pin_current_thread(pu)
    }
    fn pin_current_thread_to_set(&self, pus: &[u32]) -> Result<(), TopoError> {
        self.0.pin_current_thread_to_set(pus)
    }
    fn bind_region(&self, _: &Region, policy: &MemPolicy) -> Result<(), TopoError> {
        Err(TopoError::Binding {
            call: format!("set_mempolicy({policy})"),
            detail: "Function not implemented".into(),
            remedy: "a NUMA kernel".into(),
            unsupported: true,
        })
    }
    fn page_nodes(&self, _: &Region) -> Result<Vec<Option<u32>>, TopoError> {
        Err(TopoError::Binding {
            call: "move_pages(query)".into(),
            detail: "Operation not permitted".into(),
            remedy: "allow move_pages".into(),
            unsupported: true,
        })
    }
    fn move_region(&self, r: &Region, n: u32) -> Result<Vec<Result<u32, i32>>, TopoError> {
        self.0.move_region(r, n)
    }
    fn backend(&self) -> &'static str {
        "refusing"
    }
}

#[test]
fn unverifiable_placement_is_said_not_claimed() {
    let m = fixture_machine("64amd64-4p2n4ca2co.xml");
    let placer = Refusing(FakePlacer::for_machine(&m));
    let g = graph(23, 3_000);
    let clients: Vec<Slot> = cpu_order(&m, CpuOrder::Compact)
        .into_iter()
        .take(2)
        .collect();
    // First touch is the default anyway: the copy is built, with warnings.
    let p = place(
        &g,
        Mode::SharedFirstTouch,
        &clients,
        &m,
        &placer,
        PageKind::Base,
    )
    .unwrap();
    let codes: Vec<&str> = p.warnings.iter().map(|w| w.code.as_str()).collect();
    assert_eq!(codes, vec!["policy_not_set", "placement_unverified"]);
    let r = &p.reports[0];
    assert_eq!(r.fraction_on_expected, None);
    assert!(r.pages_per_node.is_empty());
    assert!(r.pages > 0);
    assert_eq!(p.copies[0].view().fingerprint(), g.fingerprint());
    // Interleave and bind cannot be had without the kernel: an error, not a pretence.
    let err = place(
        &g,
        Mode::SharedInterleaved,
        &clients,
        &m,
        &placer,
        PageKind::Base,
    )
    .unwrap_err();
    assert!(err.to_string().contains("set_mempolicy"), "{err}");
}
