//! The memory probes' plans of each step, on a machine and its nodes' memory budgets:
//! what `numalab evaluate` (quick or full) runs, with no size given by the user, so
//! every default is fitted to the nodes' memory (a note says what was reduced) rather
//! than refused. A plan the machine cannot do at all is an error, and the step is
//! skipped with it.

use numalab_mem::budget::Budgets;
use numalab_mem::probe::Probe;
use numalab_mem::MemError;
use numalab_schema::Machine;
use numalab_topo::bind::MemPolicy;

/// Thread counts of a full sweep: 1, 2, 4, ... and every PU.
pub fn thread_sweep(pus: usize) -> Vec<usize> {
    let mut t: Vec<usize> = std::iter::successors(Some(1usize), |x| Some(x * 2))
        .take_while(|x| *x < pus)
        .collect();
    t.push(pus.max(1));
    t
}

/// The bandwidth step: the thread sweep and the node matrix.
pub fn bandwidth(m: &Machine, b: &Budgets, quick: bool) -> Vec<Result<Probe, MemError>> {
    use numalab_mem::bandwidth::{plan, plan_matrix, quick_plan, Options};
    let plans = if quick {
        // The quick node matrix measures reading (what a node pair's links give one
        // way, as Intel MLC's matrix does) and the STREAM triad; copy and the
        // non-temporal write are in the thread sweep and in a full run's matrix.
        let mut matrix = Options::quick(m);
        matrix
            .kernels
            .retain(|k| matches!(k.name().as_str(), "read" | "triad"));
        vec![quick_plan(m, b), plan_matrix(m, b, &[], matrix)]
    } else {
        let cpus = m.pu_ids();
        vec![
            plan(
                m,
                b,
                &cpus,
                &thread_sweep(cpus.len()),
                &MemPolicy::FirstTouch,
                Options::defaults(m),
            ),
            plan_matrix(m, b, &[], Options::defaults(m)),
        ]
    };
    plans.into_iter().map(|p| p.map(Probe::Bandwidth)).collect()
}

/// The latency step: the curve of the first CPU and the node matrix.
pub fn latency(m: &Machine, b: &Budgets, quick: bool) -> Vec<Result<Probe, MemError>> {
    use numalab_mem::latency::{default_plan, fitted_plan_matrix, quick_plan, Options};
    use numalab_mem::PageRequest;
    // Memory latency as the field means it: every node pair, uniformly random over a
    // working set 8x the last-level cache, on huge pages (THP) so that the TLB's reach
    // covers it; and the local pairs again on base pages, whose difference is the
    // cost of page walks. The default working set is fitted to small nodes (the plan's
    // notes say so) rather than refused, as `numalab mem latency --matrix` does, so
    // that a machine with small nodes still gets its matrix.
    let matrix = |o: Options| {
        let huge = fitted_plan_matrix(m, b, &[PageRequest::Thp], None, o.clone());
        let base = fitted_plan_matrix(m, b, &[PageRequest::Base], None, o);
        huge.and_then(|mut h| {
            let mut base = base?;
            base.cells
                .retain(|c| c.matrix.is_some_and(|x| x.cpu_node == x.mem_node));
            h.cells.extend(base.cells);
            Ok(h)
        })
    };
    let plans = if quick {
        vec![quick_plan(m, b), matrix(Options::quick(m))]
    } else {
        vec![default_plan(m, b), matrix(Options::idle(m))]
    };
    plans.into_iter().map(|p| p.map(Probe::Latency)).collect()
}

/// The loaded-latency step: every CPU but the chaser generating traffic (as many as
/// fit the nodes' memory), the working sets fitted.
pub fn loaded(m: &Machine, b: &Budgets, quick: bool) -> Vec<Result<Probe, MemError>> {
    use numalab_mem::loaded::{fitted_plan, quick_plan, Fit, Options};
    let p = if quick || m.pu_ids().len() < 2 {
        quick_plan(m, b)
    } else {
        fitted_plan(
            m,
            b,
            &m.pu_ids(),
            None,
            &MemPolicy::FirstTouch,
            Options::defaults(m),
            Fit {
                chase: true,
                generators: true,
                generator_count: true,
            },
        )
    };
    vec![p.map(Probe::Loaded)]
}

/// The migration step: the nearest and farthest node pairs, the page counts clamped
/// to free memory.
pub fn migrate(m: &Machine, b: &Budgets, quick: bool) -> Vec<Result<Probe, MemError>> {
    use numalab_mem::migrate::{default_plan, quick_plan};
    let p = if quick {
        quick_plan(m, b)
    } else {
        default_plan(m, b)
    };
    vec![p.map(Probe::Migrate)]
}
