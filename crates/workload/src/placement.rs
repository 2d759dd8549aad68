//! Where the client threads run and where the graph lives.
//!
//! The experiment this workload exists for (shared versus private read-only data on a
//! multi-socket machine) is a question of placement, so placement is explicit and
//! verified:
//!
//! - threads: `compact` fills one NUMA node's cores before the next; `scatter` deals
//!   cores to the NUMA nodes in turn. Both use one PU per core first and SMT siblings
//!   last. Each client is pinned to its PU through the [`Placer`].
//! - data: `shared-first-touch` builds one copy of the graph from the first client's
//!   PU under the default policy (the pathological case: on a multi-socket machine every
//!   client on the other socket reads remote memory); `shared-interleaved` spreads one
//!   copy page by page over all NUMA nodes; `replicated` builds one copy per NUMA node
//!   that runs clients, bound to that node and first-touched by a thread pinned there,
//!   and each client reads its own node's copy.
//!
//! After building, the kernel is asked where every page of every copy actually is
//! (`move_pages` query through [`Placer::page_nodes`]) and the counts are recorded, so
//! a result never claims a placement it did not get. Before copying, the sizes are
//! checked against each node's free memory.

use crate::graph::{GraphRef, OwnedGraph};
use crate::WorkloadError;
use numalab_schema::{Machine, Warning};
use numalab_topo::bind::{MemPolicy, PageKind, PagePlacement, Placer, Region};
use numalab_topo::system::SysRoot;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use numalab_records::workload::{CopyReport, CpuOrder, Mode};

/// A PU a client runs on, and its NUMA node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// PU OS index.
    pub pu: u32,
    /// NUMA node OS index of that PU.
    pub node: u32,
}

/// Every PU of the machine in the order clients take them.
pub fn cpu_order(machine: &Machine, order: CpuOrder) -> Vec<Slot> {
    // Per node: the first PU of each core, then second PUs, and so on (SMT last).
    let mut per_node: BTreeMap<u32, Vec<Vec<u32>>> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for core in &machine.cores {
        let mut pus = core.pus.clone();
        pus.sort_unstable();
        for (level, &pu) in pus.iter().enumerate() {
            let node = machine.pu(pu).and_then(|p| p.numa_node).unwrap_or(0);
            let levels = per_node.entry(node).or_default();
            if levels.len() <= level {
                levels.resize(level + 1, Vec::new());
            }
            levels[level].push(pu);
            seen.insert(pu);
        }
    }
    // PUs without a core (should not happen with hwloc) go last on their node.
    for p in &machine.pus {
        if !seen.contains(&p.os_index) {
            let node = p.numa_node.unwrap_or(0);
            let levels = per_node.entry(node).or_default();
            if levels.is_empty() {
                levels.push(Vec::new());
            }
            levels[0].push(p.os_index);
        }
    }
    let max_level = per_node.values().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for level in 0..max_level {
        match order {
            CpuOrder::Compact => {
                for (&node, levels) in &per_node {
                    if let Some(l) = levels.get(level) {
                        out.extend(l.iter().map(|&pu| Slot { pu, node }));
                    }
                }
            }
            CpuOrder::Scatter => {
                let lists: Vec<(u32, &[u32])> = per_node
                    .iter()
                    .filter_map(|(&n, ls)| ls.get(level).map(|l| (n, l.as_slice())))
                    .collect();
                let longest = lists.iter().map(|(_, l)| l.len()).max().unwrap_or(0);
                for i in 0..longest {
                    for &(node, l) in &lists {
                        if let Some(&pu) = l.get(i) {
                            out.push(Slot { pu, node });
                        }
                    }
                }
            }
        }
    }
    out
}

/// One placed copy of the graph.
#[derive(Debug)]
pub struct PlacedGraph {
    width: u32,
    offsets: Region,
    offsets_len: usize,
    adj: Region,
    adj_len: usize,
}

impl PlacedGraph {
    /// A view of the copy.
    pub fn view(&self) -> GraphRef<'_> {
        GraphRef::new(
            self.width,
            &self.offsets.as_typed::<u32>()[..self.offsets_len],
            &self.adj.as_typed::<u32>()[..self.adj_len],
        )
    }

    fn regions(&self) -> [&Region; 2] {
        [&self.offsets, &self.adj]
    }
}

/// The graph, placed.
#[derive(Debug)]
pub struct Placement {
    /// The copies.
    pub copies: Vec<PlacedGraph>,
    /// For each client, the index of the copy it reads.
    pub copy_of_client: Vec<usize>,
    /// Where each copy's pages are.
    pub reports: Vec<CopyReport>,
    /// Placement problems found (e.g. pages not where they were asked to be).
    pub warnings: Vec<Warning>,
}

impl Placement {
    /// Pages per node summed over every copy.
    pub fn pages_per_node(&self) -> Vec<(u32, u64)> {
        let mut m: BTreeMap<u32, u64> = BTreeMap::new();
        for r in &self.reports {
            for &(n, c) in &r.pages_per_node {
                *m.entry(n).or_default() += c;
            }
        }
        m.into_iter().collect()
    }
}

/// What the copies will need, per node, for the memory check.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPlan {
    /// (node, bytes that must be on it), for copies bound to a node.
    pub bound: Vec<(u32, u64)>,
    /// Bytes needed in total (all copies, the generated graph, per-client state).
    pub total_bytes: u64,
}

/// The NUMA nodes that hold memory (interleave targets).
pub fn memory_nodes(machine: &Machine) -> Vec<u32> {
    let mut v: Vec<u32> = machine
        .numa_nodes
        .iter()
        .filter(|n| n.memory_bytes > 0)
        .map(|n| n.os_index)
        .collect();
    if v.is_empty() {
        v = machine.numa_nodes.iter().map(|n| n.os_index).collect();
    }
    if v.is_empty() {
        v.push(0);
    }
    v
}

/// The nodes that get a copy: one shared copy, or one per node running clients.
fn copy_nodes(mode: Mode, clients: &[Slot]) -> Vec<Option<u32>> {
    match mode {
        Mode::Replicated => {
            let mut nodes: Vec<u32> = clients.iter().map(|s| s.node).collect();
            nodes.sort_unstable();
            nodes.dedup();
            nodes.into_iter().map(Some).collect()
        }
        _ => vec![None],
    }
}

/// Checks that the copies and the clients' state fit in memory before anything is
/// allocated. `state_bytes` is one client's search state.
pub fn check_memory(
    mode: Mode,
    graph_bytes: u64,
    state_bytes: u64,
    clients: &[Slot],
    sys: &SysRoot,
) -> Result<Vec<Warning>, WorkloadError> {
    let mut warnings = Vec::new();
    let copies = copy_nodes(mode, clients);
    let total = graph_bytes * (copies.len() as u64 + 1) + state_bytes * clients.len() as u64;
    let fmt = numalab_schema::units::bytes;
    if mode == Mode::Replicated {
        for node in copies.iter().flatten() {
            let clients_here = clients.iter().filter(|s| s.node == *node).count() as u64;
            let need = graph_bytes + state_bytes * clients_here;
            match sys.node_free_bytes(*node) {
                Some(free) if free < need + need / 10 => {
                    return Err(WorkloadError::Memory(format!(
                        "replicated mode needs {} on NUMA node {node} (a {} copy of the graph and the state of {clients_here} clients) but the node has {} free; use --mode shared-interleaved, a smaller --graph-nodes, or fewer --threads",
                        fmt(need),
                        fmt(graph_bytes),
                        fmt(free)
                    )))
                }
                Some(_) => {}
                None => warnings.push(
                    Warning::new(
                        "memory_unchecked",
                        format!("free memory of NUMA node {node} is unknown (no sysfs node meminfo); the replica was not checked against it"),
                    ),
                ),
            }
        }
    }
    match sys.mem_available_bytes() {
        Some(avail) if avail < total => Err(WorkloadError::Memory(format!(
            "the run needs about {} ({} graph copies, the generated graph, and {} of search state for each of {} clients) but only {} is available; use a smaller --graph-nodes or fewer --threads",
            fmt(total),
            copies.len(),
            fmt(state_bytes),
            clients.len(),
            fmt(avail)
        ))),
        Some(_) => Ok(warnings),
        None => {
            warnings.push(Warning::new(
                "memory_unchecked",
                "MemAvailable is unknown (no /proc/meminfo); the run's memory need was not checked",
            ));
            Ok(warnings)
        }
    }
}

fn copy_into(src: &[u32], region: &mut Region) {
    region.as_mut_typed::<u32>()[..src.len()].copy_from_slice(src);
}

/// Builds the copies for `mode`, each written by a thread pinned where the mode says,
/// then asks the kernel where the pages are.
pub fn place(
    graph: &OwnedGraph,
    mode: Mode,
    clients: &[Slot],
    machine: &Machine,
    placer: &dyn Placer,
    page_kind: PageKind,
) -> Result<Placement, WorkloadError> {
    assert!(!clients.is_empty(), "at least one client");
    let all_nodes = memory_nodes(machine);
    let nodes = copy_nodes(mode, clients);
    let mut copies = Vec::new();
    let mut reports = Vec::new();
    let mut warnings = Vec::new();
    for for_node in nodes {
        // The builder: the first client on that node, or the first client.
        let builder = match for_node {
            Some(n) => *clients
                .iter()
                .find(|s| s.node == n)
                .expect("node has a client"),
            None => clients[0],
        };
        let (policy, expected) = match (mode, for_node) {
            (Mode::SharedFirstTouch, _) => (MemPolicy::FirstTouch, vec![builder.node]),
            (Mode::SharedInterleaved, _) => {
                (MemPolicy::Interleave(all_nodes.clone()), all_nodes.clone())
            }
            (Mode::Replicated, Some(n)) => (MemPolicy::Bind(vec![n]), vec![n]),
            (Mode::Replicated, None) => unreachable!("replicated copies have a node"),
        };
        let built = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name(format!("numalab-wl-build-{}", builder.pu))
                .spawn_scoped(
                    s,
                    || -> Result<(PlacedGraph, Option<String>), WorkloadError> {
                        placer.pin_current_thread(builder.pu)?;
                        let mut offsets = Region::new(graph.offsets.len() * 4, page_kind)?;
                        let mut adj = Region::new(graph.adj.len() * 4, page_kind)?;
                        let mut unset = None;
                        for r in [&offsets, &adj] {
                            match placer.bind_region(r, &policy) {
                                Ok(()) => {}
                                // First touch is the kernel's default: if the policy cannot
                                // be set explicitly, the default still applies.
                                Err(e) if policy == MemPolicy::FirstTouch => {
                                    unset = Some(e.to_string())
                                }
                                Err(e) => return Err(e.into()),
                            }
                        }
                        copy_into(&graph.offsets, &mut offsets);
                        copy_into(&graph.adj, &mut adj);
                        Ok((
                            PlacedGraph {
                                width: graph.width,
                                offsets,
                                offsets_len: graph.offsets.len(),
                                adj,
                                adj_len: graph.adj.len(),
                            },
                            unset,
                        ))
                    },
                )
                .map_err(|e| WorkloadError::Runtime(format!("cannot start a thread: {e}")))?
                .join()
                .map_err(|_| {
                    WorkloadError::Runtime("the thread building a graph copy panicked".into())
                })?
        });
        let (built, unset) = built?;
        if let Some(e) = unset {
            warnings.push(Warning::new(
                "policy_not_set",
                format!("{mode}: the first-touch policy could not be set explicitly ({e}); the process's default policy applied"),
            ).with_remedy("if numalab runs under `numactl`, the pages follow numactl's policy; see pages_per_node"));
        }
        let mut nodes_of_pages = Vec::new();
        let mut page_bytes = 0;
        let mut located = true;
        for r in built.regions() {
            page_bytes = r.page_bytes() as u64;
            match placer.page_nodes(r) {
                Ok(n) => nodes_of_pages.extend(n),
                Err(e) => {
                    if located {
                        warnings.push(
                            Warning::new(
                                "placement_unverified",
                                format!("{mode}: the kernel could not say where the graph's pages are ({e}); the placement is not verified"),
                            )
                            .with_remedy("move_pages must be allowed (no seccomp filter, a NUMA kernel); see `numalab doctor`"),
                        );
                    }
                    located = false;
                }
            }
        }
        let pages = (built.regions().iter().map(|r| r.pages()).sum::<usize>()) as u64;
        let counts = if located {
            PagePlacement::from_page_nodes(&nodes_of_pages)
        } else {
            PagePlacement::default()
        };
        let fraction = located.then(|| counts.fraction_on(&expected));
        if fraction.is_some_and(|f| f < 0.99) {
            warnings.push(
                Warning::new(
                    "placement_mismatch",
                    format!(
                        "{mode}: only {:.1}% of the graph copy{} is on node(s) {} as asked ({:?} pages per node)",
                        fraction.unwrap_or(0.0) * 100.0,
                        for_node.map(|n| format!(" for node {n}")).unwrap_or_default(),
                        numalab_schema::cpulist::format(&expected),
                        counts.pages_per_node
                    ),
                )
                .with_remedy("the node may be short of free memory, or a cgroup cpuset/mems limit or NUMA balancing moved pages; see `numalab doctor`"),
            );
        }
        if located && mode == Mode::SharedInterleaved && expected.len() > 1 {
            let present: u64 = counts.pages_per_node.iter().map(|(_, c)| c).sum();
            let fair = present as f64 / expected.len() as f64;
            for n in &expected {
                let got = counts
                    .pages_per_node
                    .iter()
                    .find(|(m, _)| m == n)
                    .map_or(0, |(_, c)| *c);
                if (got as f64) < 0.5 * fair {
                    warnings.push(Warning::new(
                        "placement_uneven",
                        format!("shared-interleaved: node {n} holds {got} pages of the graph, under half its fair share ({fair:.0})"),
                    ));
                }
            }
        }
        let readers = clients
            .iter()
            .enumerate()
            .filter(|(_, s)| for_node.is_none_or(|n| s.node == n))
            .map(|(i, _)| i)
            .collect();
        reports.push(CopyReport {
            for_node,
            policy: policy.to_string(),
            built_on_pu: builder.pu,
            bytes: graph.bytes(),
            pages,
            page_bytes,
            pages_per_node: counts.pages_per_node.clone(),
            not_present: counts.not_present,
            expected_nodes: expected,
            fraction_on_expected: fraction,
            readers,
        });
        copies.push(built);
    }
    let copy_of_client = clients
        .iter()
        .map(|s| {
            reports
                .iter()
                .position(|r| r.for_node.is_none_or(|n| n == s.node))
                .expect("every client has a copy")
        })
        .collect();
    Ok(Placement {
        copies,
        copy_of_client,
        reports,
        warnings,
    })
}
