//! Which CPUs and which memory a run gets: thread counts and placement strategies,
//! computed from a [`Machine`] alone.
//!
//! Plans are pure functions of the machine description, so the plan for a 160-core,
//! 8-node machine is computed and checked on a 2-core VM (from hwloc XML fixtures or
//! synthetic topologies). A run is then given the plan's CPU list as its affinity and
//! the plan's memory policy before `exec`.
//!
//! - `compact` fills a core (all its hardware threads), then its cluster, NUMA node and
//!   package, in that order, before using the next one.
//! - `scatter` spreads threads round-robin over packages, then NUMA nodes inside each
//!   package, then clusters inside each node, one thread per core; SMT siblings are
//!   used only once every core has a thread.
//! - `numa-local` keeps the threads and the memory of the process on one NUMA node
//!   (CPUs of the node in compact order, memory bound to it).
//! - `none` sets no affinity and no memory policy (the operating system decides).

use numalab_schema::cpulist;
use numalab_schema::machine::Machine;
use numalab_topo::bind::MemPolicy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

pub use numalab_records::harness::{Placement, Span};

/// One point of a plan: a thread count and where its threads and memory go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacedPoint {
    /// Threads the program is told to use (`{threads}`).
    pub threads: usize,
    /// CPU affinity given to the process (sorted OS CPU ids), or None (`none` placement).
    pub cpus: Option<Vec<u32>>,
    /// Memory policy given to the process (None: the kernel's default, first touch).
    pub mem_policy: Option<MemPolicy>,
    /// The node for `{node}`: the numa-local node, else the node of the first CPU.
    pub node: Option<u32>,
    /// What the CPUs cover.
    pub span: Span,
    /// Topology boundaries this point sits on exactly ("one core", "one NUMA node"...).
    pub boundaries: Vec<String>,
}

impl PlacedPoint {
    /// The CPU list as text ("0-7"), "all" without affinity.
    pub fn cpus_text(&self) -> String {
        match &self.cpus {
            Some(c) => cpulist::format(c),
            None => "all".into(),
        }
    }
}

/// A plan error: a thread count or node that does not fit the machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

fn innermost_group(m: &Machine, pu: u32) -> Option<usize> {
    m.groups
        .iter()
        .enumerate()
        .filter(|(_, g)| g.cpus.contains(&pu))
        .max_by_key(|(_, g)| (g.level, std::cmp::Reverse(g.cpus.len())))
        .map(|(i, _)| i)
}

/// The cores in compact order: by package, then NUMA node, then hwloc order.
fn compact_cores(m: &Machine) -> Vec<usize> {
    let mut cores: Vec<usize> = (0..m.cores.len())
        .filter(|&c| !m.cores[c].pus.is_empty())
        .collect();
    let key = |c: usize| {
        let first = *m.cores[c].pus.iter().min().unwrap_or(&0);
        let pu = m.pu(first);
        (
            m.cores[c].package.unwrap_or(usize::MAX),
            pu.and_then(|p| p.numa_node).unwrap_or(u32::MAX),
        )
    };
    cores.sort_by_key(|&c| key(c));
    cores
}

fn sorted_pus(m: &Machine, core: usize) -> Vec<u32> {
    let mut p = m.cores[core].pus.clone();
    p.sort_unstable();
    p
}

/// Interleaves lists: the first element of each, then the second of each, ...
fn interleave<T: Clone>(lists: &[Vec<T>]) -> Vec<T> {
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..longest {
        for l in lists {
            if let Some(x) = l.get(i) {
                out.push(x.clone());
            }
        }
    }
    out
}

/// Groups `items` by `key`, keeping first-appearance order of keys and items.
fn group_by<T: Clone, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> Vec<Vec<T>> {
    let mut keys: Vec<K> = Vec::new();
    let mut groups: Vec<Vec<T>> = Vec::new();
    for it in items {
        let k = key(it);
        match keys.iter().position(|x| *x == k) {
            Some(i) => groups[i].push(it.clone()),
            None => {
                keys.push(k);
                groups.push(vec![it.clone()]);
            }
        }
    }
    groups
}

/// The order in which a strategy hands out PUs (every PU of the machine once;
/// `numa-local` and `none` use the compact order).
pub fn cpu_order(m: &Machine, placement: Placement) -> Vec<u32> {
    let cores = compact_cores(m);
    match placement {
        Placement::Compact | Placement::NumaLocal | Placement::None => {
            cores.iter().flat_map(|&c| sorted_pus(m, c)).collect()
        }
        Placement::Scatter => {
            let node_of = |c: &usize| {
                let first = *m.cores[*c].pus.iter().min().unwrap_or(&0);
                m.pu(first).and_then(|p| p.numa_node)
            };
            let group_of = |c: &usize| {
                let first = *m.cores[*c].pus.iter().min().unwrap_or(&0);
                innermost_group(m, first)
            };
            // package -> node -> cluster -> cores, each level interleaved.
            let by_package = group_by(&cores, |c| m.cores[*c].package);
            let package_orders: Vec<Vec<usize>> = by_package
                .iter()
                .map(|pkg| {
                    let by_node = group_by(pkg, node_of);
                    let node_orders: Vec<Vec<usize>> = by_node
                        .iter()
                        .map(|node| interleave(&group_by(node, group_of)))
                        .collect();
                    interleave(&node_orders)
                })
                .collect();
            let core_order = interleave(&package_orders);
            let smt = core_order
                .iter()
                .map(|&c| m.cores[c].pus.len())
                .max()
                .unwrap_or(1);
            let mut out = Vec::new();
            for level in 0..smt {
                for &c in &core_order {
                    if let Some(&p) = sorted_pus(m, c).get(level) {
                        out.push(p);
                    }
                }
            }
            out
        }
    }
}

/// What a set of CPUs covers on `m`.
pub fn span(m: &Machine, cpus: &[u32]) -> Span {
    let mut packages = BTreeSet::new();
    let mut nodes = BTreeSet::new();
    let mut clusters = BTreeSet::new();
    let mut cores = std::collections::BTreeMap::new();
    for &c in cpus {
        if let Some(pu) = m.pu(c) {
            if let Some(p) = pu.package {
                packages.insert(p);
            }
            if let Some(n) = pu.numa_node {
                nodes.insert(n);
            }
            if let Some(core) = pu.core {
                *cores.entry(core).or_insert(0usize) += 1;
            }
        }
        if let Some(g) = innermost_group(m, c) {
            clusters.insert(g);
        }
    }
    Span {
        packages: packages.into_iter().collect(),
        nodes: nodes.into_iter().collect(),
        clusters: clusters.len(),
        cores: cores.len(),
        shared_cores: cores.values().filter(|&&n| n > 1).count(),
    }
}

/// Domains whose CPUs equal `cpus` exactly, named ("one core", "one NUMA node"...).
fn boundaries(m: &Machine, cpus: &[u32]) -> Vec<String> {
    let mut set: Vec<u32> = cpus.to_vec();
    set.sort_unstable();
    let same = |other: &[u32]| {
        let mut o = other.to_vec();
        o.sort_unstable();
        o == set
    };
    let mut out = Vec::new();
    if m.cores.iter().any(|c| c.pus.len() > 1 && same(&c.pus)) {
        out.push("one core".to_string());
    }
    if m.groups.iter().any(|g| same(&g.cpus)) {
        out.push("one cluster".into());
    }
    if m.numa_nodes.len() > 1 && m.cpu_nodes().any(|n| same(&n.cpus)) {
        out.push("one NUMA node".into());
    }
    if m.packages.len() > 1 && m.packages.iter().any(|p| same(&p.cpus)) {
        out.push("one package".into());
    }
    if same(&m.pu_ids()) {
        out.push("all PUs".into());
    }
    out
}

/// The first NUMA node with CPUs, in compact order.
pub fn first_cpu_node(m: &Machine) -> Option<u32> {
    cpu_order(m, Placement::Compact)
        .first()
        .and_then(|&c| m.pu(c))
        .and_then(|p| p.numa_node)
}

fn node_cpus_compact(m: &Machine, node: u32) -> Vec<u32> {
    cpu_order(m, Placement::Compact)
        .into_iter()
        .filter(|&c| m.pu(c).and_then(|p| p.numa_node) == Some(node))
        .collect()
}

/// The default thread counts: 1, 2, 4, ... up to the PUs available to the strategy,
/// that maximum itself, and the sizes of the topology's domains (PUs of one core, one
/// cluster, one NUMA node, one package), ascending.
pub fn default_thread_counts(m: &Machine, placement: Placement, node: Option<u32>) -> Vec<usize> {
    let max = match placement {
        Placement::NumaLocal => node
            .or_else(|| first_cpu_node(m))
            .map(|n| node_cpus_compact(m, n).len())
            .unwrap_or(0),
        _ => m.pus.len(),
    };
    let mut out = BTreeSet::new();
    let mut t = 1;
    while t <= max {
        out.insert(t);
        t *= 2;
    }
    if max > 0 {
        out.insert(max);
    }
    let order = cpu_order(m, Placement::Compact);
    let first = order.first().copied();
    let size_of_first = |lists: Vec<&Vec<u32>>| -> Option<usize> {
        let f = first?;
        lists.into_iter().find(|l| l.contains(&f)).map(Vec::len)
    };
    let sizes = [
        size_of_first(m.cores.iter().map(|c| &c.pus).collect()),
        m.groups
            .iter()
            .filter(|g| first.is_some_and(|f| g.cpus.contains(&f)))
            .map(|g| g.cpus.len())
            .min(),
        size_of_first(m.cpu_nodes().map(|n| &n.cpus).collect()),
        size_of_first(m.packages.iter().map(|p| &p.cpus).collect()),
    ];
    for s in sizes.into_iter().flatten() {
        if s >= 1 && s <= max {
            out.insert(s);
        }
    }
    // Inside one package, the package boundary plus one of each further node also
    // matters for scatter and compact alike: covered by the node and package sizes.
    out.into_iter().collect()
}

/// Places `threads` threads with `placement` (and `node` for `numa-local`).
pub fn place(
    m: &Machine,
    placement: Placement,
    threads: usize,
    node: Option<u32>,
) -> Result<PlacedPoint, PlanError> {
    let pus = m.pus.len();
    if threads == 0 {
        return Err(PlanError(
            "0 threads: give thread counts of 1 or more".into(),
        ));
    }
    let (cpus, mem_policy, node) = match placement {
        Placement::NumaLocal => {
            let n = node.or_else(|| first_cpu_node(m)).ok_or_else(|| {
                PlanError("this machine description has no NUMA node with CPUs".into())
            })?;
            let have = node_cpus_compact(m, n);
            if have.is_empty() {
                return Err(PlanError(format!(
                    "NUMA node {n} has no CPUs (nodes with CPUs: {}); choose another --node",
                    cpulist::format(&m.cpu_nodes().map(|n| n.os_index).collect::<Vec<_>>())
                )));
            }
            if threads > have.len() {
                return Err(PlanError(format!(
                    "{threads} threads do not fit on NUMA node {n} ({} PUs): numa-local keeps a process on one node; use at most {} threads or --placement compact",
                    have.len(),
                    have.len()
                )));
            }
            let mut c = have[..threads].to_vec();
            c.sort_unstable();
            (Some(c), Some(MemPolicy::Bind(vec![n])), Some(n))
        }
        _ => {
            if threads > pus {
                return Err(PlanError(format!(
                    "{threads} threads is more than the {pus} PUs of this machine; use at most {pus} (see `numalab topo`)"
                )));
            }
            let order = cpu_order(m, placement);
            let mut c = order[..threads].to_vec();
            c.sort_unstable();
            let node = m.pu(order[0]).and_then(|p| p.numa_node);
            if placement == Placement::None {
                (None, None, node)
            } else {
                (Some(c), None, node)
            }
        }
    };
    let sp = match &cpus {
        Some(c) => span(m, c),
        None => span(m, &m.pu_ids()),
    };
    let b = match &cpus {
        Some(c) => boundaries(m, c),
        None => Vec::new(),
    };
    Ok(PlacedPoint {
        threads,
        cpus,
        mem_policy,
        node,
        span: sp,
        boundaries: b,
    })
}

/// Places every thread count; the first error (a count that does not fit) is returned
/// before anything runs.
pub fn place_all(
    m: &Machine,
    placement: Placement,
    threads: &[usize],
    node: Option<u32>,
) -> Result<Vec<PlacedPoint>, PlanError> {
    if let Some(n) = node {
        if m.node(n).is_none() {
            let have: Vec<u32> = m.numa_nodes.iter().map(|n| n.os_index).collect();
            return Err(PlanError(format!(
                "NUMA node {n} does not exist (nodes: {}); see `numalab topo`",
                cpulist::format(&have)
            )));
        }
    }
    let mut counts = threads.to_vec();
    counts.sort_unstable();
    counts.dedup();
    counts
        .into_iter()
        .map(|t| place(m, placement, t, node))
        .collect()
}

/// What changes in the topology between two points, in words, the most important
/// change first: "threads start running on package 1", "... on NUMA node 2",
/// "threads start sharing cores (SMT)", "threads spread over more clusters".
pub fn transition(before: &PlacedPoint, after: &PlacedPoint) -> Option<String> {
    let (b, a) = (&before.span, &after.span);
    if before.cpus.is_none() || after.cpus.is_none() {
        return None;
    }
    if let Some(p) = a.packages.iter().find(|p| !b.packages.contains(p)) {
        return Some(format!(
            "where threads start running on package {p} (after {} threads on package{} {})",
            before.threads,
            if b.packages.len() > 1 { "s" } else { "" },
            b.packages
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    if let Some(n) = a.nodes.iter().find(|n| !b.nodes.contains(n)) {
        return Some(format!(
            "where threads start running on NUMA node {n} (memory of other nodes becomes remote for some threads)"
        ));
    }
    if a.shared_cores > 0 && b.shared_cores == 0 {
        return Some("where threads start sharing cores (SMT siblings)".into());
    }
    if a.clusters > b.clusters && b.clusters > 0 {
        return Some(format!(
            "where threads spread from {} to {} clusters",
            b.clusters, a.clusters
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn altra() -> Machine {
        numalab_topo::synthetic("pack:2 numa:1 core:80 pu:1").unwrap()
    }

    #[test]
    fn compact_and_scatter_on_a_two_socket_160_core_machine() {
        let m = altra();
        let compact = cpu_order(&m, Placement::Compact);
        assert_eq!(compact, (0..160).collect::<Vec<u32>>());
        let scatter = cpu_order(&m, Placement::Scatter);
        // 0, 80, 1, 81, 2, 82, ...
        assert_eq!(&scatter[..6], &[0, 80, 1, 81, 2, 82]);
        assert_eq!(scatter.len(), 160);
        let p = place(&m, Placement::Scatter, 4, None).unwrap();
        assert_eq!(p.cpus, Some(vec![0, 1, 80, 81]));
        assert_eq!(p.span.packages, vec![0, 1]);
        let p = place(&m, Placement::Compact, 80, None).unwrap();
        assert_eq!(p.cpus_text(), "0-79");
        assert_eq!(p.boundaries, vec!["one NUMA node", "one package"]);
        let p = place(&m, Placement::Compact, 96, None).unwrap();
        assert_eq!(p.cpus_text(), "0-95");
        assert_eq!(p.span.packages, vec![0, 1]);
    }

    #[test]
    fn default_counts_include_the_boundaries() {
        let m = altra();
        assert_eq!(
            default_thread_counts(&m, Placement::Compact, None),
            vec![1, 2, 4, 8, 16, 32, 64, 80, 128, 160]
        );
        assert_eq!(
            default_thread_counts(&m, Placement::NumaLocal, Some(1)),
            vec![1, 2, 4, 8, 16, 32, 64, 80]
        );
    }

    #[test]
    fn transitions_name_the_package_and_smt() {
        let m = altra();
        let a = place(&m, Placement::Compact, 80, None).unwrap();
        let b = place(&m, Placement::Compact, 128, None).unwrap();
        let t = transition(&a, &b).unwrap();
        assert!(
            t.starts_with("where threads start running on package 1"),
            "{t}"
        );
        let smt = numalab_topo::synthetic("pack:1 core:4 pu:2").unwrap();
        let a = place(&smt, Placement::Scatter, 4, None).unwrap();
        let b = place(&smt, Placement::Scatter, 5, None).unwrap();
        assert_eq!(a.span.shared_cores, 0);
        assert_eq!(b.span.shared_cores, 1);
        assert!(transition(&a, &b).unwrap().contains("sharing cores"));
    }

    #[test]
    fn numa_local_stays_on_its_node_and_binds_memory() {
        let m = altra();
        let p = place(&m, Placement::NumaLocal, 8, Some(1)).unwrap();
        assert_eq!(p.cpus_text(), "80-87");
        assert_eq!(p.mem_policy, Some(MemPolicy::Bind(vec![1])));
        assert_eq!(p.node, Some(1));
        let e = place(&m, Placement::NumaLocal, 81, Some(1)).unwrap_err();
        assert!(e.0.contains("do not fit on NUMA node 1"), "{e}");
        let e = place_all(&m, Placement::NumaLocal, &[1], Some(7)).unwrap_err();
        assert!(e.0.contains("node 7 does not exist"), "{e}");
    }

    #[test]
    fn too_many_threads_is_an_error_naming_the_machine_size() {
        let m = altra();
        let e = place(&m, Placement::Compact, 161, None).unwrap_err();
        assert!(
            e.0.contains("161 threads") && e.0.contains("160 PUs"),
            "{e}"
        );
        assert!(place(&m, Placement::Compact, 0, None).is_err());
    }

    #[test]
    fn placement_names_round_trip() {
        for p in [
            Placement::Compact,
            Placement::Scatter,
            Placement::NumaLocal,
            Placement::None,
        ] {
            assert_eq!(p.name().parse::<Placement>().unwrap(), p);
        }
        assert!("spread"
            .parse::<Placement>()
            .unwrap_err()
            .contains("compact"));
    }
}
