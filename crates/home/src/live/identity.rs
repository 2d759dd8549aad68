//! This machine's identity: the fingerprint made from `/proc/cpuinfo` and sysfs text
//! (pure parsers, tested with other machines' text) through the machine identity
//! (`numalab_schema::identity`), and the cache line size.

use crate::probe::Fingerprint;
use numalab_records::home::{MEMORY_BLOCKS, MEMORY_MEMTOTAL};
use numalab_schema::identity::{arm_cpu, cpuinfo_number as number, CpuId, MachineIdentity};
use numalab_schema::machine::CpuIdentity;
use std::path::Path;

/// CPU identification from `/proc/cpuinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuIdent {
    /// Which CPU, as the machine identity says it: x86 "model name" and "family F model
    /// M stepping S", Arm the MIDR's name and "MIDR 0x..."; each field the distinct
    /// values of the processors joined by " + " (hybrid and big.LITTLE parts).
    pub cpu: CpuId,
    /// Processor entries.
    pub processors: u32,
}

/// The CPU one processor block describes, as a machine description would: Arm when it
/// has an implementer and a part, x86 when it has a model name (with its family, model
/// and stepping when all three are given); `None` otherwise.
fn block_cpu(block: numalab_topo::cpuinfo::Block<'_>) -> Option<CpuIdentity> {
    let num = |name: &str| block.field(name).and_then(number);
    if block.field("CPU implementer").is_some() && block.field("CPU part").is_some() {
        return Some(arm_cpu(
            num("CPU implementer")?,
            num("CPU part")?,
            num("CPU variant"),
            num("CPU revision"),
        ));
    }
    let name = block.field("model name")?;
    let fms = match (
        block.field("cpu family").and_then(|v| v.parse().ok()),
        block.field("model").and_then(|v| v.parse().ok()),
        block.field("stepping").and_then(|v| v.parse().ok()),
    ) {
        (Some(f), Some(m), Some(s)) => Some((f, m, s)),
        _ => None,
    };
    Some(CpuIdentity {
        vendor: block.field("vendor_id").map(str::to_string),
        model_name: Some(name.to_string()),
        family: fms.map(|x: (u32, u32, u32)| x.0),
        model: fms.map(|x| x.1),
        stepping: fms.map(|x| x.2),
        ..Default::default()
    })
}

/// Parses `/proc/cpuinfo` text (x86 or Arm) into the machine identity's CPU.
pub fn parse_cpuinfo(text: &str) -> CpuIdent {
    let mut kinds: Vec<CpuIdentity> = Vec::new();
    let mut processors = 0;
    for block in numalab_topo::cpuinfo::blocks(text) {
        if block.field("processor").is_some() {
            processors += 1;
        }
        if let Some(cpu) = block_cpu(block) {
            if !kinds.contains(&cpu) {
                kinds.push(cpu);
            }
        }
    }
    CpuIdent {
        cpu: CpuId::of_kinds(&kinds),
        processors,
    }
}

/// A node's `MemTotal` from its `meminfo` text (`Node N MemTotal: K kB`), rounded down
/// to whole MiB, in bytes.
pub fn node_mem_total_bytes(text: &str) -> Option<u64> {
    let b = numalab_topo::system::meminfo_bytes(text, "MemTotal")?;
    Some(b / (1 << 20) * (1 << 20))
}

/// One NUMA node's sysfs text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeText {
    /// Node id.
    pub id: u32,
    /// `/sys/devices/system/node/nodeN/meminfo`.
    pub meminfo: String,
    /// `/sys/devices/system/node/nodeN/cpulist`.
    pub cpulist: String,
    /// The memory blocks (`memoryM` entries) under `/sys/devices/system/node/nodeN`,
    /// when that folder could be listed.
    pub memory_blocks: Option<u64>,
}

/// The text a fingerprint is made from, read from a system root (normally `/`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemText {
    /// `/proc/cpuinfo`.
    pub cpuinfo: String,
    /// `/sys/devices/system/cpu/online`.
    pub online: Option<String>,
    /// `/proc/meminfo` (memory of a kernel without NUMA nodes in sysfs).
    pub meminfo: Option<String>,
    /// The nodes under `/sys/devices/system/node`, in any order.
    pub nodes: Vec<NodeText>,
    /// `/sys/devices/system/cpu/smt/active`.
    pub smt_active: Option<String>,
    /// `/sys/devices/system/memory/block_size_bytes` (hexadecimal), absent on a kernel
    /// without memory hot-plug.
    pub memory_block_size: Option<String>,
    /// The memory blocks under `/sys/devices/system/memory` (for a kernel without NUMA
    /// nodes in sysfs).
    pub memory_blocks: Option<u64>,
}

/// The `memoryM` entries of a sysfs folder, when it can be listed.
fn count_memory_blocks(dir: &Path) -> Option<u64> {
    let entries = std::fs::read_dir(dir).ok()?;
    Some(
        entries
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix("memory"))
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            })
            .count() as u64,
    )
}

impl SystemText {
    /// Reads the files under `root` (a folder holding `proc/` and `sys/`).
    pub fn read(root: &Path) -> SystemText {
        let read = |rel: &str| std::fs::read_to_string(root.join(rel)).ok();
        let mut nodes = Vec::new();
        if let Ok(dir) = std::fs::read_dir(root.join("sys/devices/system/node")) {
            for e in dir.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let Some(id) = name.strip_prefix("node").and_then(|n| n.parse().ok()) else {
                    continue;
                };
                nodes.push(NodeText {
                    id,
                    meminfo: read(&format!("sys/devices/system/node/{name}/meminfo"))
                        .unwrap_or_default(),
                    cpulist: read(&format!("sys/devices/system/node/{name}/cpulist"))
                        .unwrap_or_default(),
                    memory_blocks: count_memory_blocks(&e.path()),
                });
            }
        }
        SystemText {
            cpuinfo: read("proc/cpuinfo").unwrap_or_default(),
            online: read("sys/devices/system/cpu/online"),
            meminfo: read("proc/meminfo"),
            nodes,
            smt_active: read("sys/devices/system/cpu/smt/active"),
            memory_block_size: read("sys/devices/system/memory/block_size_bytes"),
            memory_blocks: count_memory_blocks(&root.join("sys/devices/system/memory")),
        }
    }

    /// Each node's present memory (memory blocks times the block size), in node order,
    /// when sysfs shows the block size and every node's blocks.
    fn present_memory(&self, nodes: &[&NodeText]) -> Option<Vec<u64>> {
        let size = u64::from_str_radix(self.memory_block_size.as_deref()?.trim(), 16)
            .ok()
            .filter(|&b| b > 0)?;
        if nodes.is_empty() {
            return Some(vec![self
                .memory_blocks
                .filter(|&n| n > 0)?
                .checked_mul(size)?]);
        }
        let per_node = nodes
            .iter()
            .map(|n| n.memory_blocks.and_then(|b| b.checked_mul(size)))
            .collect::<Option<Vec<u64>>>()?;
        // A kernel that lists no blocks under any node does not link them there.
        per_node.iter().any(|&b| b > 0).then_some(per_node)
    }

    /// The fingerprint this text describes (source "live").
    pub fn fingerprint(&self) -> Fingerprint {
        let cpu = parse_cpuinfo(&self.cpuinfo);
        let online = self
            .online
            .as_deref()
            .and_then(|t| numalab_schema::cpulist::parse(t.trim()).ok());
        let cpus = online.as_ref().map_or(cpu.processors, |v| v.len() as u32);
        let mut nodes: Vec<&NodeText> = self.nodes.iter().collect();
        nodes.sort_by_key(|n| n.id);
        let mut modes = Vec::new();
        let present = self.present_memory(&nodes);
        let memtotal = if nodes.is_empty() {
            modes.push("1 NUMA node".to_string());
            if let Some(list) = &online {
                modes.push(format!(
                    "node0 cpus {}",
                    numalab_schema::cpulist::format(list)
                ));
            }
            self.meminfo
                .as_deref()
                .and_then(node_mem_total_bytes)
                .into_iter()
                .collect()
        } else {
            modes.push(format!(
                "{} NUMA node{}",
                nodes.len(),
                if nodes.len() == 1 { "" } else { "s" }
            ));
            for n in &nodes {
                let list = numalab_schema::cpulist::parse(n.cpulist.trim())
                    .ok()
                    .filter(|l| !l.is_empty());
                modes.push(match list {
                    Some(l) => format!("node{} cpus {}", n.id, numalab_schema::cpulist::format(&l)),
                    None => format!("node{} cpus none", n.id),
                });
            }
            nodes
                .iter()
                .map(|n| node_mem_total_bytes(&n.meminfo).unwrap_or(0))
                .collect()
        };
        let (node_memory_bytes, memory_basis) = match present {
            Some(p) => (p, MEMORY_BLOCKS),
            None => (memtotal, MEMORY_MEMTOTAL),
        };
        match self.smt_active.as_deref().map(str::trim) {
            Some("1") => modes.push("SMT on".into()),
            Some("0") => modes.push("SMT off".into()),
            _ => {}
        }
        let identity = MachineIdentity {
            cpu: cpu.cpu,
            cores: None,
            pus: Some(u64::from(cpus)),
            numa_nodes: Some(nodes.len().max(1) as u64),
        };
        Fingerprint::new("live", &identity, node_memory_bytes, memory_basis, modes)
    }
}

/// The fingerprint of this machine.
pub fn live_fingerprint() -> Fingerprint {
    SystemText::read(Path::new("/")).fingerprint()
}

/// The cache line size: the largest coherency line size of CPU 0's caches, else 64.
pub(super) fn cache_line_bytes() -> u32 {
    let mut best = 0u32;
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") {
        for e in dir.flatten() {
            if let Ok(t) = std::fs::read_to_string(e.path().join("coherency_line_size")) {
                if let Ok(v) = t.trim().parse::<u32>() {
                    best = best.max(v);
                }
            }
        }
    }
    if best.is_power_of_two() && (16..=1024).contains(&best) {
        best
    } else {
        64
    }
}
