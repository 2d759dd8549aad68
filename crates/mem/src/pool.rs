//! Pinned worker threads, and memory placed where a probe asks for it.
//!
//! Each worker pins itself to one PU through the [`Placer`] before doing anything
//! else, maps its own memory, sets the NUMA policy on it, and only then first-touches
//! it, so that the pages are allocated by the thread that will use them, on the node
//! the policy names. It then asks the kernel where the pages really are; the per-node
//! page counts go into the record and a mismatch becomes a warning.
//!
//! Workers meet at barriers. Setup failures are collected before the first barrier
//! and every worker leaves together, so one failing worker cannot leave the others
//! waiting forever.

use crate::{MemError, PageRequest, PagesObtained, Placement, Placer};
use numalab_schema::Machine;
use numalab_topo::bind::{MemPolicy, PagePlacement, Region};
use std::sync::{Barrier, Mutex};

/// Runs one pinned thread per entry of `pus`: `setup(i)` on every worker, then, if
/// every setup succeeded, `body(i, &mut state, &barrier)` on every worker. The body may
/// use the barrier, but every worker must call `wait` the same number of times.
/// Returns the bodies' results in worker order, or the first setup error.
pub fn run_pinned<S, T, FS, FB>(
    placer: &dyn Placer,
    pus: &[u32],
    setup: FS,
    body: FB,
) -> Result<Vec<T>, MemError>
where
    S: Send,
    T: Send,
    FS: Fn(usize) -> Result<S, MemError> + Sync,
    FB: Fn(usize, &mut S, &Barrier) -> T + Sync,
{
    let n = pus.len();
    if n == 0 {
        return Err(MemError::Usage("no CPUs to run on".into()));
    }
    let barrier = Barrier::new(n);
    let first_error: Mutex<Option<MemError>> = Mutex::new(None);
    let results: Vec<Option<T>> = std::thread::scope(|scope| {
        let handles: Vec<_> = pus
            .iter()
            .enumerate()
            .map(|(i, &pu)| {
                let (barrier, first_error, setup, body) = (&barrier, &first_error, &setup, &body);
                std::thread::Builder::new()
                    .name(format!("numalab-mem-{i}"))
                    .spawn_scoped(scope, move || {
                        let state = placer
                            .pin_current_thread(pu)
                            .map_err(MemError::from)
                            .and_then(|_| setup(i));
                        let mut state = match state {
                            Ok(s) => Some(s),
                            Err(e) => {
                                let mut g = first_error.lock().unwrap();
                                if g.is_none() {
                                    *g = Some(e);
                                }
                                None
                            }
                        };
                        barrier.wait();
                        if first_error.lock().unwrap().is_some() {
                            return None;
                        }
                        let s = state.as_mut().expect("setup succeeded");
                        Some(body(i, s, barrier))
                    })
                    .expect("spawn a worker thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(None))
            .collect()
    });
    if let Some(e) = first_error.into_inner().unwrap() {
        return Err(e);
    }
    if results.iter().any(Option::is_none) {
        return Err(MemError::Runtime("a worker thread panicked".into()));
    }
    Ok(results.into_iter().map(|r| r.expect("checked")).collect())
}

/// Memory of one worker: a mapped region, policy set, first touched by the calling
/// thread, and its placement as the kernel reports it.
pub struct Placed {
    /// The memory.
    pub region: Region,
    /// Pages per node.
    pub pages: PagePlacement,
    /// The pages obtained.
    pub obtained: PagesObtained,
}

/// Maps `bytes`, applies `policy`, fills it with `fill` (as f64) from the calling
/// thread (the first touch), then queries where its pages are.
pub fn place(
    placer: &dyn Placer,
    bytes: u64,
    pages: PageRequest,
    policy: &MemPolicy,
    fill: f64,
) -> Result<Placed, MemError> {
    let mut region = Region::new(bytes as usize, pages.page_kind())?;
    if *policy != MemPolicy::FirstTouch {
        placer.bind_region(&region, policy)?;
    }
    for v in region.as_mut_typed::<f64>() {
        *v = fill;
    }
    let nodes = placer.page_nodes(&region)?;
    let placement = PagePlacement::from_page_nodes(&nodes);
    let obtained = PagesObtained::describe(
        pages,
        region.page_bytes() as u64,
        region.thp_bytes(),
        region.len() as u64,
    );
    Ok(Placed {
        region,
        pages: placement,
        obtained,
    })
}

/// The nodes pages should be on under `policy` when first touched from `pu`.
pub fn expected_nodes(machine: &Machine, policy: &MemPolicy, pu: u32) -> Vec<u32> {
    match policy {
        MemPolicy::Bind(n) | MemPolicy::Interleave(n) => n.clone(),
        MemPolicy::Preferred(n) => vec![*n],
        MemPolicy::FirstTouch => machine
            .pu(pu)
            .and_then(|p| p.numa_node)
            .into_iter()
            .collect(),
    }
}

/// The distinct nodes of some PUs.
pub fn nodes_of(machine: &Machine, pus: &[u32]) -> Vec<u32> {
    let mut v: Vec<u32> = pus
        .iter()
        .filter_map(|p| machine.pu(*p).and_then(|p| p.numa_node))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Builds the placement record of a measurement from its workers' page counts.
pub fn placement(
    machine: &Machine,
    placer: &dyn Placer,
    pus: &[u32],
    policy: &MemPolicy,
    per_worker: &[PagePlacement],
) -> Placement {
    let mut expected: Vec<u32> = pus
        .iter()
        .flat_map(|&p| expected_nodes(machine, policy, p))
        .collect();
    expected.sort_unstable();
    expected.dedup();
    let mut per_node = std::collections::BTreeMap::new();
    let mut absent = 0;
    let mut on_expected = 0u64;
    let mut present = 0u64;
    for (w, p) in per_worker.iter().enumerate() {
        absent += p.not_present;
        // First touch is judged per worker (its own node); other policies globally.
        let want = match (policy, pus.get(w)) {
            (MemPolicy::FirstTouch, Some(&pu)) => expected_nodes(machine, policy, pu),
            _ => expected.clone(),
        };
        for &(n, c) in &p.pages_per_node {
            *per_node.entry(n).or_insert(0u64) += c;
            present += c;
            if want.contains(&n) {
                on_expected += c;
            }
        }
    }
    Placement {
        backend: placer.backend().to_string(),
        cpus: pus.to_vec(),
        cpu_nodes: nodes_of(machine, pus),
        policy: policy.clone(),
        expected_nodes: expected,
        pages_per_node: per_node.into_iter().collect(),
        pages_not_present: absent,
        fraction_expected: if present == 0 {
            0.0
        } else {
            on_expected as f64 / present as f64
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::bind::{base_page_size, HwlocPlacer};

    #[test]
    fn setup_errors_release_every_worker() {
        let placer = HwlocPlacer::new().unwrap();
        let pus = numalab_topo::live().unwrap().pu_ids();
        let pus: Vec<u32> = pus.iter().cycle().take(3).copied().collect();
        let r = run_pinned(
            &placer,
            &pus,
            |i| {
                if i == 1 {
                    Err(MemError::Runtime("worker 1 failed".into()))
                } else {
                    Ok(i)
                }
            },
            |_, s, b| {
                b.wait();
                *s
            },
        );
        assert!(r.unwrap_err().to_string().contains("worker 1 failed"));
    }

    #[test]
    fn workers_are_pinned_and_memory_is_where_the_kernel_says() {
        let machine = numalab_topo::live().unwrap();
        let placer = HwlocPlacer::new().unwrap();
        let pus = machine.pu_ids();
        let node = machine.pu(pus[0]).unwrap().numa_node.unwrap();
        let policy = MemPolicy::Bind(vec![node]);
        let out = run_pinned(
            &placer,
            &pus,
            |_| {
                place(
                    &placer,
                    64 * base_page_size() as u64,
                    PageRequest::Base,
                    &policy,
                    1.5,
                )
            },
            |i, placed, b| {
                b.wait();
                // The CPU we run on is the one we were pinned to.
                let cpu = crate::sys::current_cpu();
                assert_eq!(cpu as u32, pus[i]);
                assert!(placed.region.as_typed::<f64>().iter().all(|&v| v == 1.5));
                placed.pages.clone()
            },
        )
        .unwrap();
        let p = placement(&machine, &placer, &pus, &policy, &out);
        assert_eq!(p.pages_not_present, 0);
        assert_eq!(p.fraction_expected, 1.0);
        assert!(p.warning().is_none());
        assert_eq!(p.pages_per_node, vec![(node, 64 * pus.len() as u64)]);
    }

    /// A node matrix whose cells each got part of their pages elsewhere: the terminal
    /// shows the first cell's warning, then one line with how many more, the three
    /// lowest shares and the remedy (issue 45 item 3).
    #[test]
    fn mismatches_of_many_cells_fold_into_one_line_with_the_worst_three() {
        let mut fold = numalab_schema::fold::Fold::default();
        let mut shown = Vec::new();
        for (cell, on) in [95u64, 60, 88, 41, 97, 73, 52].into_iter().enumerate() {
            let p = Placement {
                backend: "fake".into(),
                cpus: vec![0],
                cpu_nodes: vec![0],
                policy: MemPolicy::Bind(vec![1]),
                expected_nodes: vec![1],
                pages_per_node: vec![(0, 100 - on), (1, on)],
                pages_not_present: 0,
                fraction_expected: on as f64 / 100.0,
            };
            let w = p.warning().unwrap();
            if fold.note(&format!("mem/latency/matrix/cell{cell}"), &w) {
                shown.push(w);
            }
        }
        assert_eq!(shown.len(), 1);
        let folded = fold.folded();
        assert_eq!(folded.len(), 1);
        let m = &folded[0].message;
        assert!(m.contains("6 more records had this warning"), "{m}");
        let at = |s: &str| m.find(s).unwrap_or_else(|| panic!("{s} in {m}"));
        assert!(at("cell3: only 41.0%") < at("cell6: only 52.0%"));
        assert!(at("cell6: only 52.0%") < at("cell1: only 60.0%"));
        assert!(!m.contains("73.0%") && !m.contains("97.0%"), "{m}");
    }

    #[test]
    fn a_mismatch_is_a_warning() {
        let p = Placement {
            backend: "fake".into(),
            cpus: vec![0],
            cpu_nodes: vec![0],
            policy: MemPolicy::Bind(vec![1]),
            expected_nodes: vec![1],
            pages_per_node: vec![(0, 30), (1, 70)],
            pages_not_present: 0,
            fraction_expected: 0.7,
        };
        let w = p.warning().unwrap();
        assert_eq!(w.code, "placement_mismatch");
        assert!(
            w.message.contains("70.0%") && w.message.contains("node 0: 30"),
            "{w}"
        );
    }
}
