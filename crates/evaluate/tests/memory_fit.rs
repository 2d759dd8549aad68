//! `numalab evaluate` at the users' scale (issue 45 item 2): on 160-CPU machines with
//! modest memory per core (2 nodes of 384 MiB or 1.5 GiB, an Arm N1 shape, 8 nodes of
//! 384 MiB; 78% of each node free), every memory step's plans, quick and full, are
//! built without a refusal a smaller size would avoid: each fits the nodes (the plans'
//! own checks) and says what it reduced. The only refusals left are where no size that
//! reaches memory fits, and they say so.

use numalab_evaluate::plans;
use numalab_mem::budget::Budgets;
use numalab_schema::Machine;

const MIB: u64 = 1 << 20;

fn synthetic(desc: String) -> Machine {
    numalab_topo::synthetic(&desc).expect("synthetic machine")
}

fn shapes() -> Vec<(&'static str, Machine)> {
    vec![
        (
            "x86 2 x 1.5 GiB, 32 MiB L3",
            synthetic(format!(
                "pack:2 numa:1(memory={}) l3:1(size={}) core:80 pu:1",
                1536 * MIB,
                32 * MIB
            )),
        ),
        (
            "the wide guest: 2 x 384 MiB, private 4 MiB L2",
            synthetic(format!(
                "pack:2 numa:1(memory={}) l2:80(size={}) core:1 pu:1",
                384 * MIB,
                4 * MIB
            )),
        ),
        (
            "N1 2 x 384 MiB, private 1 MiB L2",
            synthetic(format!(
                "pack:2 numa:1(memory={}) l2:80(size={}) core:1 pu:1",
                384 * MIB,
                MIB
            )),
        ),
        (
            "8 x 384 MiB, 16 MiB L3 a node",
            synthetic(format!(
                "pack:2 numa:4(memory={}) l3:1(size={}) core:20 pu:1",
                384 * MIB,
                16 * MIB
            )),
        ),
    ]
}

fn budgets(m: &Machine) -> Budgets {
    let mut b = Budgets::uniform(m, 0);
    for n in &m.numa_nodes {
        b.nodes.get_mut(&n.os_index).unwrap().free_bytes = n.memory_bytes / 32 * 25;
    }
    b
}

#[test]
fn every_memory_step_plans_on_160_cpus_with_modest_memory() {
    type Steps = fn(
        &Machine,
        &Budgets,
        bool,
    ) -> Vec<Result<numalab_mem::probe::Probe, numalab_mem::MemError>>;
    let steps: [(&str, Steps); 4] = [
        ("bandwidth", plans::bandwidth),
        ("latency", plans::latency),
        ("loaded", plans::loaded),
        ("migrate", plans::migrate),
    ];
    for (shape, m) in shapes() {
        assert_eq!(m.pus.len(), 160, "{shape}");
        let b = budgets(&m);
        let mut reduced = 0;
        for quick in [true, false] {
            for (step, f) in steps {
                for p in f(&m, &b, quick) {
                    match p {
                        Ok(p) => {
                            reduced += p
                                .notes()
                                .iter()
                                .filter(|n| n.contains("reduced") || n.contains("clamped"))
                                .count()
                        }
                        // Loaded latency on 8 nodes of 384 MiB with a 16 MiB L3: the
                        // chase (8x the L3) and one generator (4x) do not fit together
                        // in half a node; the refusal says so.
                        Err(e) => {
                            let e = e.to_string();
                            assert!(
                                step == "loaded" && shape.starts_with("8 x"),
                                "{shape}, {step}, quick={quick}: {e}"
                            );
                            assert!(e.contains("smaller sets would time caches"), "{e}");
                        }
                    }
                }
            }
        }
        if shape.contains("384") {
            assert!(reduced > 0, "{shape}: no plan said it was reduced");
        }
    }
}

/// The full bandwidth sweep of 160 CPUs keeps every thread count, each at the one
/// working set every group fits in.
#[test]
fn the_full_bandwidth_sweep_keeps_every_thread_count() {
    let (_, m) = shapes().remove(1);
    let b = budgets(&m);
    let Ok(numalab_mem::probe::Probe::Bandwidth(p)) = plans::bandwidth(&m, &b, false).remove(0)
    else {
        panic!("a bandwidth plan");
    };
    let counts: Vec<usize> = p.groups.iter().map(|g| g.pus.len()).collect();
    assert_eq!(counts, plans::thread_sweep(160));
    assert!(
        p.options.working_set_bytes <= b.safe_bytes(0),
        "{:?}",
        p.notes
    );
}
