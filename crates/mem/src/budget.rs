//! How much memory a probe may take from a NUMA node without pushing the machine into
//! swap or the OOM killer, decided before anything is allocated.
//!
//! Memory bound to node k must come from node k, so the figure that matters is what
//! node k can give (`/sys/devices/system/node/nodeK/meminfo`): its MemFree, less what the
//! kernel keeps from allocations there (`/proc/zoneinfo`: each zone's high watermark and
//! lower-zone reserve, and the room in every CPU's page lists, which on many CPUs and
//! small nodes is most of the free memory; see `numalab_topo::zoneinfo`), plus half of
//! what the kernel can reclaim there (page cache and reclaimable slab: a server that
//! has read files has little MemFree and plenty to give; half, because dirty, mapped
//! or busy pages do not all come back at once), capped by the system's MemAvailable
//! (the kernel's own estimate) and by the cgroup's memory.max. Some VMs account only part
//! of their memory to the nodes (this development VM: node 0 reports 7 GiB of 24 GiB);
//! the node figure is then the conservative one and we keep it, and say so in the
//! refusal, because strict binding beyond it could fail with SIGBUS or wake the OOM
//! killer. A probe may use [`SAFE_FRACTION`] of that budget; default sweeps (migrate)
//! stop at [`SWEEP_FRACTION`].

use crate::MemError;
use numalab_schema::units::bytes as fmt_bytes;
use numalab_schema::Machine;
use numalab_topo::system::SysRoot;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The largest share of a node's budget one probe may allocate.
pub const SAFE_FRACTION: f64 = 0.5;

/// The share a default sweep is clamped to (explicit requests may go to
/// [`SAFE_FRACTION`]).
pub const SWEEP_FRACTION: f64 = 0.25;

/// What one node can give.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Node OS index.
    pub node: u32,
    /// Bytes free for a probe to take (before [`SAFE_FRACTION`]).
    pub free_bytes: u64,
    /// Where the figure comes from, in words.
    pub source: String,
    /// A fact worth telling with a refusal (e.g. node figures that do not add up).
    pub note: Option<String>,
}

/// Budgets of every node with memory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budgets {
    /// Per node.
    pub nodes: BTreeMap<u32, Budget>,
}

impl Budgets {
    /// The same budget for every node of `machine` with memory (tests of plans, and
    /// machines whose free memory cannot be read).
    pub fn uniform(machine: &Machine, free_bytes: u64) -> Budgets {
        Budgets {
            nodes: machine
                .numa_nodes
                .iter()
                .map(|n| {
                    (
                        n.os_index,
                        Budget {
                            node: n.os_index,
                            free_bytes,
                            source: "given".into(),
                            note: None,
                        },
                    )
                })
                .collect(),
        }
    }

    /// Reads the budgets of the live machine from `/sys` and `/proc` under `sys`.
    pub fn read(machine: &Machine, sys: &SysRoot) -> Budgets {
        let available = sys.mem_available_bytes();
        let cgroup = sys.cgroup_limits().memory_max;
        let node_total: u64 = machine.numa_nodes.iter().map(|n| n.memory_bytes).sum();
        let sys_total = sys.mem_total_bytes();
        let inconsistent = sys_total
            .filter(|&t| node_total > 0 && (node_total as f64) < 0.9 * t as f64)
            .map(|t| {
                format!(
                    "the NUMA nodes account for {} of the system's {}; the rest is outside any node's accounting, so node-bound memory is limited to the node figure",
                    fmt_bytes(node_total),
                    fmt_bytes(t)
                )
            });
        let mut nodes = BTreeMap::new();
        for n in &machine.numa_nodes {
            let node_free = sys.node_free_bytes(n.os_index);
            let mut parts: Vec<(u64, String)> = Vec::new();
            if let Some(f) = node_free {
                let mut text = format!("node {} MemFree {}", n.os_index, fmt_bytes(f));
                let mut bytes = f;
                let page = numalab_topo::bind::base_page_size() as u64;
                let kept = sys
                    .node_reserved_pages(n.os_index)
                    .map(|p| p.saturating_mul(page));
                if let Some(kept) = kept.filter(|&k| k > 0) {
                    bytes = f.saturating_sub(kept);
                    text.push_str(&format!(
                        " less {} the kernel keeps (watermarks, lower-zone reserves, room in {} CPUs' page lists)",
                        fmt_bytes(kept.min(f)),
                        machine.pu_ids().len().max(1)
                    ));
                }
                if let Some(r) = sys.node_reclaimable_bytes(n.os_index).filter(|&r| r > 0) {
                    bytes = bytes.saturating_add(r / 2);
                    text.push_str(&format!(
                        " + half its reclaimable page cache and slab {}",
                        fmt_bytes(r / 2)
                    ));
                }
                parts.push((bytes, text));
            }
            if let Some(a) = available {
                parts.push((a, format!("system MemAvailable {}", fmt_bytes(a))));
            }
            if let Some(c) = cgroup {
                parts.push((c, format!("cgroup memory.max {}", fmt_bytes(c))));
            }
            let (free_bytes, source) = match parts.iter().min_by_key(|p| p.0) {
                Some((b, _)) => (
                    *b,
                    parts
                        .iter()
                        .map(|p| p.1.clone())
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                None => (
                    n.memory_bytes / 2,
                    "half the node's memory (free memory unreadable)".into(),
                ),
            };
            nodes.insert(
                n.os_index,
                Budget {
                    node: n.os_index,
                    free_bytes,
                    source,
                    note: inconsistent.clone(),
                },
            );
        }
        Budgets { nodes }
    }

    /// The live machine's budgets.
    pub fn live(machine: &Machine) -> Budgets {
        Budgets::read(machine, &SysRoot::live())
    }

    /// Bytes a probe may take from `node` ([`SAFE_FRACTION`] of its budget).
    pub fn safe_bytes(&self, node: u32) -> u64 {
        self.nodes
            .get(&node)
            .map(|b| (b.free_bytes as f64 * SAFE_FRACTION) as u64)
            .unwrap_or(0)
    }

    /// Bytes a default sweep may take from `node`.
    pub fn sweep_bytes(&self, node: u32) -> u64 {
        self.nodes
            .get(&node)
            .map(|b| (b.free_bytes as f64 * SWEEP_FRACTION) as u64)
            .unwrap_or(0)
    }

    /// Refuses `need` (node -> bytes) when any node would give more than its safe
    /// share. `what` names the request and `flag` the option that sets its size.
    pub fn check(&self, need: &BTreeMap<u32, u64>, what: &str, flag: &str) -> Result<(), MemError> {
        for (&node, &bytes) in need {
            let Some(b) = self.nodes.get(&node) else {
                return Err(MemError::Usage(format!(
                    "{what}: NUMA node {node} has no memory budget (unknown node); see `numalab topo`"
                )));
            };
            let safe = self.safe_bytes(node);
            if bytes > safe {
                let mut msg = format!(
                    "{what} needs {} on NUMA node {node}, more than {:.0}% of what it can give ({}: {}); ask for less with {flag} (at most {})",
                    fmt_bytes(bytes),
                    SAFE_FRACTION * 100.0,
                    fmt_bytes(b.free_bytes),
                    b.source,
                    fmt_bytes(safe)
                );
                if let Some(n) = &b.note {
                    msg.push_str(&format!("; note: {n}"));
                }
                return Err(MemError::Usage(msg));
            }
        }
        Ok(())
    }
}

/// Whether `message` is a refusal of [`Budgets::check`] (a need past a node's safe
/// share), to which a caller may add why a default was not made smaller.
pub(crate) fn is_refusal(message: &str) -> bool {
    message.contains("% of what it can give (")
}

/// Adds `bytes` to `node` in a need map (saturating: a need past u64 is still more
/// than any node has, and refused as such).
pub fn need(map: &mut BTreeMap<u32, u64>, node: u32, bytes: u64) {
    let n = map.entry(node).or_insert(0);
    *n = n.saturating_add(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    use numalab_testkit::write;

    fn one_node_machine(mem: u64) -> Machine {
        let mut m: Machine = serde_json::from_value(serde_json::json!({
            "schema_version": 1,
            "source": {"kind": "live"},
            "summary": {"packages": 0, "numa_nodes": 0, "cores": 0, "pus": 0, "numa": []},
            "cpu": {},
            "packages": [], "dies": [], "groups": [],
            "numa_nodes": [{"os_index": 0, "cpus": [0], "has_cpus": true, "memory_bytes": mem, "subtype": null, "package": null}],
            "cores": [], "pus": [], "caches": [], "cpu_kinds": [], "distances": [],
            "memory_attributes": [], "frequencies": [], "page_sizes": [], "software": {}, "infos": {}
        }))
        .unwrap();
        m.compute_summary();
        m
    }

    /// `--size 18446744073709551615` once overflowed adding up the need (exit 101):
    /// the sums saturate, and a saturated need is more than any node has.
    #[test]
    fn needs_past_u64_saturate() {
        let mut m = BTreeMap::new();
        need(&mut m, 0, u64::MAX);
        need(&mut m, 0, 4096);
        assert_eq!(m[&0], u64::MAX);
        assert_eq!(crate::round_up(u64::MAX, 4096), u64::MAX);
        assert_eq!(crate::round_up(5000, 4096), 8192);
    }

    #[test]
    fn node_figure_caps_and_inconsistency_is_explained() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        // The development VM's shape: the node holds 7 GiB of 24, 4 GiB of it free.
        write(
            r,
            "proc/meminfo",
            "MemTotal: 25165824 kB\nMemAvailable: 23068672 kB\n",
        );
        write(
            r,
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemFree: 4194304 kB\n",
        );
        let m = one_node_machine(7 << 30);
        let b = Budgets::read(&m, &SysRoot::at(r));
        assert_eq!(b.nodes[&0].free_bytes, 4 << 30);
        assert_eq!(b.safe_bytes(0), 2 << 30);
        let mut want = BTreeMap::new();
        need(&mut want, 0, 3 << 30);
        let e = b
            .check(&want, "mem bandwidth", "--size")
            .unwrap_err()
            .to_string();
        assert!(e.contains("node 0 MemFree 4 GiB"), "{e}");
        assert!(e.contains("system MemAvailable 22 GiB"), "{e}");
        assert!(e.contains("--size (at most 2 GiB)"), "{e}");
        assert!(e.contains("outside any node's accounting"), "{e}");
        let mut ok = BTreeMap::new();
        need(&mut ok, 0, 1 << 30);
        b.check(&ok, "x", "--size").unwrap();
        let mut unknown = BTreeMap::new();
        need(&mut unknown, 5, 1);
        assert!(b
            .check(&unknown, "x", "--size")
            .unwrap_err()
            .to_string()
            .contains("node 5"));
    }

    /// The mechanism behind the emulated 2 x 80-CPU server whose OOM killer ended
    /// `evaluate --quick` in its loaded-latency step (159 MiB of free memory sat in the
    /// CPUs' page lists): 4,000 pages free on the node's zone, of which the kernel keeps
    /// its high watermark (500) and the room left in each CPU's list (10 CPUs holding 200
    /// of 252 pages each: 52 each), 1,020 pages in all.
    #[test]
    fn what_the_kernel_keeps_from_a_node_is_not_given_to_probes() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "proc/meminfo",
            "MemTotal: 25165824 kB\nMemAvailable: 23068672 kB\n",
        );
        write(
            r,
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemFree: 16000 kB\n",
        );
        let mut zoneinfo = String::from(
            "Node 0, zone    DMA32\n  pages free     4000\n        min      300\n        low      400\n        high     500\n        protection: (0, 0, 0, 0, 0)\n  pagesets\n",
        );
        for cpu in 0..10 {
            zoneinfo.push_str(&format!(
                "    cpu: {cpu}\n              count: 200\n              high:  252\n              batch: 63\n  vm stats threshold: 24\n"
            ));
        }
        write(r, "proc/zoneinfo", &zoneinfo);
        let m = one_node_machine(7 << 30);
        let b = Budgets::read(&m, &SysRoot::at(r));
        let page = numalab_topo::bind::base_page_size() as u64;
        let kept = (500 + 10 * 52) * page;
        assert_eq!(b.nodes[&0].free_bytes, (16000 << 10) - kept);
        assert!(
            b.nodes[&0].source.contains("the kernel keeps (watermarks"),
            "{}",
            b.nodes[&0].source
        );
        // Without zoneinfo (a snapshot, an old kernel) the node's MemFree stands.
        std::fs::remove_file(r.join("proc/zoneinfo")).unwrap();
        assert_eq!(
            Budgets::read(&m, &SysRoot::at(r)).nodes[&0].free_bytes,
            16000 << 10
        );
    }

    #[test]
    fn page_cache_on_the_node_counts_half() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        // A machine that has read files: 1 GiB free on the node, 12 GiB of page cache
        // and 1 GiB of reclaimable slab there, 20 GiB available system-wide.
        write(
            r,
            "proc/meminfo",
            "MemTotal: 25165824 kB\nMemAvailable: 20971520 kB\n",
        );
        write(
            r,
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemFree: 1048576 kB\nNode 0 Active(file): 4194304 kB\nNode 0 Inactive(file): 8388608 kB\nNode 0 Shmem: 9999 kB\nNode 0 SReclaimable: 1048576 kB\n",
        );
        let b = Budgets::read(&one_node_machine(24 << 30), &SysRoot::at(r));
        // 1 GiB + (4 + 8 + 1) / 2 GiB.
        assert_eq!(b.nodes[&0].free_bytes, (1 << 30) + (13 << 30) / 2);
        assert!(
            b.nodes[&0].source.contains(
                "node 0 MemFree 1 GiB + half its reclaimable page cache and slab 6.5 GiB"
            ),
            "{}",
            b.nodes[&0].source
        );
        // The system's estimate still caps it.
        write(
            r,
            "proc/meminfo",
            "MemTotal: 25165824 kB\nMemAvailable: 2097152 kB\n",
        );
        let b = Budgets::read(&one_node_machine(24 << 30), &SysRoot::at(r));
        assert_eq!(b.nodes[&0].free_bytes, 2 << 30);
    }

    #[test]
    fn cgroup_limit_wins_when_smaller() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        write(
            r,
            "proc/meminfo",
            "MemTotal: 8388608 kB\nMemAvailable: 8000000 kB\n",
        );
        write(
            r,
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemFree: 7000000 kB\n",
        );
        write(r, "proc/self/cgroup", "0::/job\n");
        write(r, "sys/fs/cgroup/job/memory.max", "1073741824\n");
        let b = Budgets::read(&one_node_machine(8 << 30), &SysRoot::at(r));
        assert_eq!(b.nodes[&0].free_bytes, 1 << 30);
        assert!(b.nodes[&0].note.is_none());
    }
}
