//! Checks and facts every memory probe's plan shares: which nodes have memory or CPUs,
//! whether a policy's nodes exist, whether threads fit a CPU selection, whether a
//! hugetlbfs pool has room, and the warning when the pages obtained are not the kind
//! asked for. (Bandwidth, latency, loaded latency and migration all use them; none of
//! those modules depends on another for them.)

use crate::MemError;
use numalab_records::mem::{PageRequest, PagesObtained};
use numalab_schema::{cpulist, units, Machine, Warning};
use numalab_topo::bind::MemPolicy;
use std::collections::BTreeMap;

/// Checks a thread count against a CPU list.
pub fn check_threads(threads: usize, cpus: &[u32], what: &str) -> Result<(), MemError> {
    if threads == 0 {
        return Err(MemError::Usage("--threads must be at least 1".into()));
    }
    if threads > cpus.len() {
        return Err(MemError::Usage(format!(
            "--threads {threads}: more threads than PUs in {what} ({} PUs: {}); numalab runs one thread per PU",
            cpus.len(),
            cpulist::format(cpus)
        )));
    }
    Ok(())
}

/// Checks that the nodes a policy names exist and have memory.
pub fn check_policy_nodes(machine: &Machine, policy: &MemPolicy) -> Result<(), MemError> {
    let nodes: Vec<u32> = match policy {
        MemPolicy::Bind(n) | MemPolicy::Interleave(n) => n.clone(),
        MemPolicy::Preferred(n) => vec![*n],
        MemPolicy::FirstTouch => return Ok(()),
    };
    for n in nodes {
        memory_node(machine, n)?;
    }
    Ok(())
}

/// Nodes that can hold data: nodes with memory (all nodes when hwloc knows no sizes).
pub fn memory_nodes(machine: &Machine) -> Vec<u32> {
    let with: Vec<u32> = machine
        .numa_nodes
        .iter()
        .filter(|n| n.memory_bytes > 0)
        .map(|n| n.os_index)
        .collect();
    let mut v = if with.is_empty() {
        machine.numa_nodes.iter().map(|n| n.os_index).collect()
    } else {
        with
    };
    v.sort_unstable();
    v
}

/// Checks one node exists and has memory.
pub fn memory_node(machine: &Machine, node: u32) -> Result<(), MemError> {
    let have = memory_nodes(machine);
    if have.contains(&node) {
        return Ok(());
    }
    let why = if machine.node(node).is_some() {
        "has no memory"
    } else {
        "does not exist"
    };
    Err(MemError::Usage(format!(
        "NUMA node {node} {why} (nodes with memory: {}); see `numalab topo`",
        cpulist::format(&have)
    )))
}

/// Nodes with CPUs, ascending, with their PUs: the node each PU's local memory is on
/// (a memory-only node that hwloc lists with the CPUs of its locality, such as HBM
/// or MCDRAM in flat mode, is a column of a matrix, not a row).
pub fn cpu_nodes(machine: &Machine) -> Vec<(u32, Vec<u32>)> {
    let mut by_node: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for p in &machine.pus {
        if let Some(n) = p.numa_node {
            by_node.entry(n).or_default().push(p.os_index);
        }
    }
    if by_node.is_empty() {
        for n in machine
            .numa_nodes
            .iter()
            .filter(|n| n.has_cpus && !n.cpus.is_empty())
        {
            by_node.insert(n.os_index, n.cpus.clone());
        }
    }
    by_node
        .into_iter()
        .map(|(n, mut pus)| {
            pus.sort_unstable();
            (n, pus)
        })
        .collect()
}

/// A warning when huge pages were asked for but not (fully) obtained.
pub fn pages_warning(p: &PagesObtained) -> Option<Warning> {
    if p.requested == PageRequest::Thp && p.obtained != "thp" {
        let frac = p.huge_fraction() * 100.0;
        return Some(
            Warning::new(
                "thp_not_obtained",
                format!(
                    "transparent huge pages were asked for but back only {frac:.0}% of the memory: the results are for (mostly) base pages"
                ),
            )
            .with_remedy("check /sys/kernel/mm/transparent_hugepage/enabled (madvise or always) and defrag, or reserve hugetlbfs pages and use --pages hugetlb"),
        );
    }
    None
}

/// Checks that a hugetlbfs pool of `size` pages has room for `bytes`.
pub fn check_hugetlb(machine: &Machine, size: u64, bytes: u64) -> Result<(), MemError> {
    let pools = numalab_topo::system::SysRoot::live().huge_pools();
    let known: Vec<String> = machine
        .page_sizes
        .iter()
        .skip(1)
        .map(|p| units::bytes(p.size_bytes))
        .collect();
    let Some(pool) = pools.iter().find(|p| p.size_bytes == size) else {
        return Err(MemError::Unsupported(format!(
            "--pages hugetlb:{}: this machine has no such huge page size (it has {})",
            units::bytes(size),
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        )));
    };
    let need = bytes.div_ceil(size);
    if pool.free < need {
        return Err(MemError::Unsupported(format!(
            "--pages hugetlb:{}: {need} huge pages needed, {} free in the pool; reserve them (as root: `echo {} > /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages`) or use --pages thp",
            units::bytes(size),
            pool.free,
            pool.total + need - pool.free,
            size / 1024
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cells whose THP request got only part of its huge pages, each with its share:
    /// one line at the end, the three smallest shares first (issue 45 item 3).
    #[test]
    fn thp_shortfalls_of_many_cells_fold_into_one_line() {
        let mut fold = numalab_schema::fold::Fold::default();
        let mut shown = 0;
        for (cell, thp) in [50u64, 10, 90, 30, 70, 0].into_iter().enumerate() {
            let w = pages_warning(&PagesObtained {
                requested: PageRequest::Thp,
                obtained: "thp-partial".into(),
                page_bytes: 4096,
                thp_bytes: Some(thp),
                total_bytes: 100,
            })
            .unwrap();
            assert_eq!(w.code, "thp_not_obtained");
            shown += usize::from(fold.note(&format!("cell{cell}"), &w));
        }
        assert_eq!(shown, 1);
        let w = &fold.folded()[0];
        assert!(w.message.contains("5 more records"), "{}", w.message);
        let m = &w.message;
        let at = |s: &str| m.find(s).unwrap_or_else(|| panic!("{s} in {m}"));
        assert!(
            at("cell5: transparent huge pages were asked for but back only 0%") < at("cell1: ")
        );
        assert!(at("cell1: ") < at("cell3: "));
        assert!(!m.contains("cell4") && !m.contains("cell2"), "{m}");
        assert!(w
            .remedy
            .as_deref()
            .unwrap()
            .contains("transparent_hugepage"));
    }
}
