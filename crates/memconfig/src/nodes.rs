//! The NUMA nodes' memory as the kernel describes it in sysfs, read under a root
//! folder so that tests use fixture trees.
//!
//! A node's memory is the set of memory blocks linked in its folder
//! (`/sys/devices/system/node/nodeN/memoryM`); block M covers
//! `[M * block_size, (M + 1) * block_size)` with the block size from
//! `/sys/devices/system/memory/block_size_bytes` (hexadecimal). Its CPUs come from
//! `nodeN/cpulist` and their sockets from
//! `/sys/devices/system/cpu/cpuC/topology/physical_package_id`.

use numalab_records::memconfig::AddressRange;
use std::fs;
use std::path::Path;

/// Largest CPU range accepted in a cpulist (a guard against garbage).
const MAX_CPUS: u32 = 1 << 16;

/// One NUMA node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeInfo {
    /// Node id.
    pub node: u32,
    /// Its memory, merged address ranges (empty when the block size is unknown).
    pub ranges: Vec<AddressRange>,
    /// Its memory, bytes (from the blocks, or `meminfo` when the block size is unknown).
    pub memory_bytes: u64,
    /// Its CPUs.
    pub cpus: Vec<u32>,
    /// The sockets (physical package ids) of its CPUs.
    pub packages: Vec<u32>,
}

/// The NUMA nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeTopology {
    /// Nodes, by id.
    pub nodes: Vec<NodeInfo>,
    /// Memory block size, bytes.
    pub block_size: Option<u64>,
    /// What could not be read.
    pub notes: Vec<String>,
}

fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// Parses a cpulist (`0-3,8,10-11`); malformed parts are ignored.
pub fn parse_cpulist(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
            None => (part.parse::<u32>(), part.parse::<u32>()),
        };
        if let (Ok(a), Ok(b)) = (a, b) {
            if a <= b && b - a < MAX_CPUS && a < MAX_CPUS * 64 {
                out.extend(a..=b);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Merges sorted or unsorted ranges into disjoint sorted ones.
pub fn merge(mut r: Vec<AddressRange>) -> Vec<AddressRange> {
    r.retain(|x| !x.is_empty());
    r.sort_by_key(|x| x.start);
    let mut out: Vec<AddressRange> = Vec::with_capacity(r.len());
    for x in r {
        match out.last_mut() {
            Some(last) if x.start <= last.end => last.end = last.end.max(x.end),
            _ => out.push(x),
        }
    }
    out
}

/// Bytes two sets of ranges have in common (each set disjoint).
pub fn overlap(a: &[AddressRange], b: &[AddressRange]) -> u64 {
    let mut total = 0u64;
    for x in a {
        for y in b {
            let (s, e) = (x.start.max(y.start), x.end.min(y.end));
            if e > s {
                total = total.saturating_add(e - s);
            }
        }
    }
    total
}

/// Reads the nodes under `root` (normally `/`). Err: why there is no node information.
pub fn read_nodes(root: &Path) -> Result<NodeTopology, String> {
    let dir = root.join("sys/devices/system/node");
    let entries = fs::read_dir(&dir).map_err(|e| {
        format!(
            "no NUMA node information: {} is not readable ({e})",
            dir.display()
        )
    })?;
    let mut topo = NodeTopology::default();
    let bs_path = root.join("sys/devices/system/memory/block_size_bytes");
    topo.block_size = read_trim(&bs_path)
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .filter(|&b| b > 0);
    if topo.block_size.is_none() {
        topo.notes.push(format!(
            "{} is not readable: the nodes' address ranges are unknown",
            bs_path.display()
        ));
    }
    let mut ids: Vec<u32> = entries
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("node"))
                .and_then(|n| n.parse().ok())
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Err(format!("no NUMA node listed in {}", dir.display()));
    }
    for id in ids {
        let nd = dir.join(format!("node{id}"));
        let mut blocks: Vec<u64> = fs::read_dir(&nd)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()
                            .and_then(|n| n.strip_prefix("memory"))
                            .and_then(|n| n.parse().ok())
                    })
                    .collect()
            })
            .unwrap_or_default();
        blocks.sort_unstable();
        blocks.dedup();
        let mut info = NodeInfo {
            node: id,
            cpus: read_trim(&nd.join("cpulist"))
                .map(|s| parse_cpulist(&s))
                .unwrap_or_default(),
            ..NodeInfo::default()
        };
        if let Some(bs) = topo.block_size {
            let ranges: Vec<AddressRange> = blocks
                .iter()
                .filter_map(|&m| {
                    let start = m.checked_mul(bs)?;
                    Some(AddressRange {
                        start,
                        end: start.checked_add(bs)?,
                    })
                })
                .collect();
            info.ranges = merge(ranges);
            info.memory_bytes = info.ranges.iter().map(AddressRange::len).sum();
        } else if let Some(mi) = read_trim(&nd.join("meminfo")) {
            // "Node 0 MemTotal:       16310500 kB"
            info.memory_bytes = mi
                .lines()
                .find(|l| l.contains("MemTotal:"))
                .and_then(|l| l.split_whitespace().rev().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
                .map(|kb| kb.saturating_mul(1024))
                .unwrap_or(0);
        }
        let mut packages: Vec<u32> = info
            .cpus
            .iter()
            .filter_map(|c| {
                read_trim(&root.join(format!(
                    "sys/devices/system/cpu/cpu{c}/topology/physical_package_id"
                )))
                .and_then(|s| s.parse().ok())
            })
            .collect();
        packages.sort_unstable();
        packages.dedup();
        info.packages = packages;
        topo.nodes.push(info);
    }
    Ok(topo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists() {
        assert_eq!(parse_cpulist("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpulist(""), Vec::<u32>::new());
        assert_eq!(parse_cpulist("5-1,x,0-4294967295"), Vec::<u32>::new());
    }

    #[test]
    fn merging_and_overlap() {
        let r = |s, e| AddressRange { start: s, end: e };
        let m = merge(vec![r(10, 20), r(0, 10), r(30, 40), r(35, 50)]);
        assert_eq!(m, vec![r(0, 20), r(30, 50)]);
        assert_eq!(overlap(&m, &[r(15, 35)]), 10);
    }
}
