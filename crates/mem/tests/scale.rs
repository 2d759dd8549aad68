//! The default plans at the users' scale (issue 45 item 2): 160 CPUs on 2 nodes of
//! 384 MiB or 1.5 GiB, and 8 nodes of 384 MiB, built as hwloc synthetic machines with
//! their caches, with budgets of 78% of each node free. Every probe's default plan (no
//! size given, as `numalab mem ...` without options and `numalab evaluate` plan them)
//! fits each node's safe share and says what it reduced; a size the user named beyond
//! that share is still refused with the figures and the option that sets it.

use numalab_mem::bandwidth;
use numalab_mem::budget::Budgets;
use numalab_mem::request::{Bandwidth, Latency, Loaded, Migrate};
use numalab_schema::Machine;

const MIB: u64 = 1 << 20;

/// An x86 two-socket server: 2 x 80 cores, one 32 MiB L3 per socket, `node` bytes a
/// node.
fn x86(node: u64) -> Machine {
    numalab_topo::synthetic(&format!(
        "pack:2 numa:1(memory={node}) l3:1(size={}) core:80 pu:1",
        32 * MIB
    ))
    .expect("synthetic machine")
}

/// An Arm server of the N1 kind: 2 x 80 cores with a private 1 MiB L2 each.
fn n1(node: u64) -> Machine {
    numalab_topo::synthetic(&format!(
        "pack:2 numa:1(memory={node}) l2:80(size={}) core:1 pu:1",
        MIB
    ))
    .expect("synthetic machine")
}

/// Eight nodes of 20 cores, 4 per socket, a 16 MiB L3 per node.
fn eight(node: u64) -> Machine {
    numalab_topo::synthetic(&format!(
        "pack:2 numa:4(memory={node}) l3:1(size={}) core:20 pu:1",
        16 * MIB
    ))
    .expect("synthetic machine")
}

/// 78% of every node free (300 MiB of 384 MiB).
fn budgets(m: &Machine) -> Budgets {
    let mut b = Budgets::uniform(m, 0);
    for n in &m.numa_nodes {
        b.nodes.get_mut(&n.os_index).unwrap().free_bytes = n.memory_bytes / 32 * 25;
    }
    b
}

fn shapes() -> Vec<(&'static str, Machine)> {
    vec![
        ("x86 2 x 384 MiB", x86(384 * MIB)),
        ("x86 2 x 1.5 GiB", x86(1536 * MIB)),
        ("N1 2 x 384 MiB", n1(384 * MIB)),
        ("8 x 384 MiB", eight(384 * MIB)),
    ]
}

#[test]
fn the_synthetic_machines_have_the_users_shape() {
    let m = x86(384 * MIB);
    assert_eq!((m.pus.len(), m.numa_nodes.len()), (160, 2));
    assert_eq!(m.numa_nodes[1].memory_bytes, 384 * MIB);
    assert_eq!(numalab_mem::llc_of_cpu(&m, 0).0, 32 * MIB);
    assert_eq!(numalab_mem::llc_of_cpu(&n1(MIB), 5).0, MIB);
    assert_eq!(eight(384 * MIB).numa_nodes.len(), 8);
}

/// Bytes per node a bandwidth group maps, all its workers.
fn bandwidth_need(m: &Machine, p: &bandwidth::Plan) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    for g in &p.groups {
        let per = bandwidth::per_worker_bytes(&p.options, g.pus.len());
        let mut need = std::collections::BTreeMap::new();
        for &pu in &g.pus {
            for n in numalab_mem::pool::expected_nodes(m, &g.policy, pu) {
                *need.entry(n).or_insert(0u64) += per;
            }
        }
        out.extend(need);
    }
    out
}

#[test]
fn default_bandwidth_plans_fit_every_node_and_say_what_they_reduced() {
    for (shape, m) in shapes() {
        let b = budgets(&m);
        for (quick, matrix) in [(true, false), (false, false), (true, true), (false, true)] {
            let r = Bandwidth {
                cpus: "all".into(),
                policy: "first-touch".into(),
                quick,
                matrix,
                ..Bandwidth::default()
            };
            let p = r
                .parse()
                .unwrap()
                .plan(&m, &b)
                .unwrap_or_else(|e| panic!("{shape} quick={quick} matrix={matrix}: {e}"));
            for (node, bytes) in bandwidth_need(&m, &p) {
                assert!(
                    bytes <= b.safe_bytes(node),
                    "{shape}: {bytes} on node {node}"
                );
            }
            let wanted = bandwidth::default_working_set(numalab_mem::llc_bytes(&m).0);
            if p.options.working_set_bytes < wanted {
                assert!(
                    p.notes.iter().any(|n| n.contains("working set reduced")),
                    "{shape}: {:?}",
                    p.notes
                );
            }
        }
    }
    // The 384 MiB nodes must shrink (12 x 64 MiB of L3 is 768 MiB); 150 MiB fits
    // half of 300 MiB free.
    let m = x86(384 * MIB);
    let p = bandwidth::quick_plan(&m, &budgets(&m)).unwrap();
    assert!(p.options.working_set_bytes <= 153 * MIB, "{:?}", p.notes);
    assert!(p.notes.iter().any(|n| n.contains("cache-influenced")));
}

#[test]
fn default_latency_sweeps_end_where_the_nodes_have_room_with_a_note() {
    for (shape, m) in shapes() {
        let b = budgets(&m);
        for quick in [false, true] {
            let r = Latency {
                page_kinds: "base,thp".into(),
                min: "4KiB".into(),
                order: "global".into(),
                policy: "first-touch".into(),
                quick,
                ..Latency::default()
            };
            let p = r
                .parse()
                .unwrap()
                .plan(&m, &b)
                .unwrap_or_else(|e| panic!("{shape} quick={quick}: {e}"));
            let fn_plan = if quick {
                numalab_mem::latency::quick_plan(&m, &b)
            } else {
                numalab_mem::latency::default_plan(&m, &b)
            };
            // `mem latency` without options is evaluate's plan.
            assert_eq!(p, fn_plan.unwrap(), "{shape}");
            let node = m.pus[0].numa_node.unwrap();
            for c in &p.cells {
                let max = *c.sizes.last().unwrap();
                assert!(max <= b.safe_bytes(node), "{shape}: {max}");
                assert!(c.sizes.windows(2).all(|w| w[0] < w[1]), "{:?}", c.sizes);
            }
        }
    }
    // 8 x 32 MiB = 256 MiB wanted; 50% of 300 MiB free is 150 MiB (whole huge pages),
    // still past twice the L3. (It was refused.)
    let m = x86(384 * MIB);
    let p = numalab_mem::latency::default_plan(&m, &budgets(&m)).unwrap();
    assert_eq!(*p.cells[0].sizes.last().unwrap(), 150 * MIB);
    let note = p
        .notes
        .iter()
        .find(|n| n.contains("largest working set reduced"))
        .expect("a note");
    assert!(
        note.contains("from the default 256 MiB to 150 MiB: 50% of the free memory of node 0")
            && note.contains("4.7x the last-level cache (32 MiB), past it, in memory"),
        "{note}"
    );
    // With 100 MiB free (50 MiB safe) the end is 50 MiB, under twice the L3: said.
    let p = numalab_mem::latency::default_plan(&m, &Budgets::uniform(&m, 100 * MIB)).unwrap();
    assert_eq!(*p.cells[0].sizes.last().unwrap(), 50 * MIB);
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("its last points are the cache's")),
        "{:?}",
        p.notes
    );
    // Room enough: the default, no note.
    let m = x86(1536 * MIB);
    let p = numalab_mem::latency::default_plan(&m, &budgets(&m)).unwrap();
    assert_eq!(*p.cells[0].sizes.last().unwrap(), 256 * MIB);
    assert!(
        !p.notes.iter().any(|n| n.contains("reduced")),
        "{:?}",
        p.notes
    );
}

#[test]
fn default_matrices_loaded_and_migration_plans_fit() {
    for (shape, m) in shapes() {
        let b = budgets(&m);
        let matrix = Latency {
            page_kinds: "base,thp".into(),
            min: "4KiB".into(),
            order: "global".into(),
            policy: "first-touch".into(),
            matrix: true,
            pages: Some("thp".into()),
            ..Latency::default()
        };
        match matrix.parse().unwrap().plan(&m, &b) {
            Ok(p) => {
                let want = numalab_mem::latency::default_idle_size(&m);
                let size = p.cells[0].sizes[0];
                assert!(size <= b.safe_bytes(0), "{shape}: {size}");
                if size < want {
                    assert!(
                        p.notes.iter().any(|n| n.contains("working set reduced")),
                        "{shape}: {:?}",
                        p.notes
                    );
                }
            }
            // Only where a chase that reaches memory (8x the 32 MiB L3) cannot fit
            // the node, and the refusal says why it was not made smaller.
            Err(e) => {
                let e = e.to_string();
                assert!(shape.starts_with("x86 2 x 384"), "{shape}: {e}");
                assert!(e.contains("--size (at most 150 MiB)"), "{e}");
                assert!(
                    e.contains("not made smaller than 8x the largest last-level cache a CPU sees (256 MiB, 8x 32 MiB)"),
                    "{e}"
                );
            }
        }
        for quick in [false, true] {
            let loaded = Loaded {
                cpus: "all".into(),
                traffic: "read".into(),
                policy: "first-touch".into(),
                quick,
                ..Loaded::default()
            };
            match loaded.parse().unwrap().plan(&m, &b) {
                Ok(p) => assert!(!p.generators.is_empty(), "{shape}"),
                // The chase 8x past the L3 and one generator 4x past its own do
                // not fit together in half a node of 384 MiB with a 16 or 32 MiB L3.
                Err(e) => {
                    let e = e.to_string();
                    assert!(
                        shape.starts_with("x86 2 x 384") || shape.starts_with("8 x"),
                        "{shape}: {e}"
                    );
                    assert!(e.contains("smaller sets would time caches"), "{e}");
                    assert!(
                        e.contains("--size / --traffic-size (at most 150 MiB)"),
                        "{e}"
                    );
                }
            }
            let migrate = Migrate {
                quick,
                ..Migrate::default()
            };
            let p = migrate
                .parse()
                .unwrap()
                .plan(&m, &b)
                .unwrap_or_else(|e| panic!("{shape} migrate quick={quick}: {e}"));
            for c in &p.cells {
                let pair = &p.pairs[c.pair];
                for n in [pair.src, pair.dst] {
                    assert!(c.unit_bytes * c.pages <= b.sweep_bytes(n), "{shape}: {c:?}");
                }
            }
            if !quick && shape.contains("384") {
                assert!(p.clamp_note.is_some(), "{shape}");
            }
        }
    }
}

/// Eight nodes of 384 MiB with a 16 MiB L3: 25% of a node (75 MiB) is below the
/// 128 MiB a chase needs to reach memory, but half a node (150 MiB, what a --size may
/// take) holds it: the default matrix runs at 128 MiB with a note, not refused.
#[test]
fn the_idle_matrix_takes_the_smallest_chase_that_reaches_memory_when_it_fits() {
    let m = eight(384 * MIB);
    let b = budgets(&m);
    let nodes: Vec<u32> = m.numa_nodes.iter().map(|n| n.os_index).collect();
    let (size, note) = numalab_mem::latency::fitted_idle_size(&m, &b, &nodes);
    assert_eq!(size, 128 * MIB);
    let note = note.expect("a note");
    assert!(
        note.contains(
            "from the default 256 MiB to 128 MiB, 8x the largest last-level cache (16 MiB)"
        ),
        "{note}"
    );
    // With less free (100 MiB: 50 MiB safe) it is refused, and the refusal says why.
    let tight = Budgets::uniform(&m, 100 * MIB);
    let e = numalab_mem::latency::fitted_plan_matrix(
        &m,
        &tight,
        &[numalab_mem::PageRequest::Thp],
        None,
        numalab_mem::latency::Options::idle(&m),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("(at most 50 MiB); the default is not made smaller than 8x"),
        "{e}"
    );
}

/// A node with 40 MiB free (10 MiB for a default): 256 pages of 64 KiB (16 MiB a side)
/// do not fit; the default sweep starts lower instead of being refused.
#[test]
fn a_migration_sweep_starts_lower_where_its_first_count_does_not_fit() {
    let m = x86(384 * MIB);
    let b = Budgets::uniform(&m, 40 * MIB);
    let p = numalab_mem::migrate::default_plan(&m, &b).unwrap();
    assert_eq!(p.options.counts[0], 128, "{:?}", p.options.counts);
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("default sweep started at 128 pages instead of 256")),
        "{:?}",
        p.notes
    );
    for c in &p.cells {
        assert!(c.unit_bytes * c.pages <= b.sweep_bytes(0), "{c:?}");
    }
    assert!(p
        .cells
        .iter()
        .any(|c| c.unit_bytes == 64 << 10 && c.pages == 128));
    // Not even one page: the refusal, with the figures.
    assert!(numalab_mem::migrate::default_plan(&m, &Budgets::uniform(&m, 4096)).is_err());
}

#[test]
fn sizes_the_user_names_are_refused_with_the_reason() {
    let m = x86(384 * MIB);
    let b = budgets(&m);
    let e = Bandwidth {
        cpus: "all".into(),
        policy: "first-touch".into(),
        size: Some("1GiB".into()),
        ..Bandwidth::default()
    }
    .parse()
    .unwrap()
    .plan(&m, &b)
    .unwrap_err()
    .to_string();
    assert!(e.contains("--size (at most 150 MiB)"), "{e}");
    let latency = |max: Option<&str>, matrix: bool| Latency {
        page_kinds: "base,thp".into(),
        min: "4KiB".into(),
        order: "global".into(),
        policy: "first-touch".into(),
        max: max.filter(|_| !matrix).map(String::from),
        size: max.filter(|_| matrix).map(String::from),
        matrix,
        ..Latency::default()
    };
    let e = latency(Some("1GiB"), false)
        .parse()
        .unwrap()
        .plan(&m, &b)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("needs 1 GiB on NUMA node 0") && e.contains("--max (at most 150 MiB)"),
        "{e}"
    );
    let e = latency(Some("1GiB"), true)
        .parse()
        .unwrap()
        .plan(&m, &b)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--size (at most 150 MiB)"), "{e}");
    // A named --max that fits is taken as given, not fitted to the default's 25%.
    let p = latency(Some("100MiB"), false)
        .parse()
        .unwrap()
        .plan(&m, &b)
        .unwrap();
    assert_eq!(*p.cells[0].sizes.last().unwrap(), 100 * MIB);
    assert!(
        !p.notes.iter().any(|n| n.contains("reduced")),
        "{:?}",
        p.notes
    );
    let e = Loaded {
        cpus: "all".into(),
        traffic: "read".into(),
        policy: "first-touch".into(),
        size: Some("1GiB".into()),
        ..Loaded::default()
    }
    .parse()
    .unwrap()
    .plan(&m, &b)
    .unwrap_err()
    .to_string();
    assert!(e.contains("--size"), "{e}");
    let e = Migrate {
        max_pages: Some(1 << 20),
        ..Migrate::default()
    }
    .parse()
    .unwrap()
    .plan(&m, &b)
    .unwrap_err()
    .to_string();
    assert!(e.contains("--max-pages (at most"), "{e}");
}
