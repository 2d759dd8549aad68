//! The machine description: one serializable value that says what a machine is made of.
//!
//! It is filled from hwloc by `numalab-topo` (live, from an XML file, or from a sysfs
//! snapshot of another machine) or built by the model for machines that do not exist.
//! Every measurement carries the [`Machine::topology_hash`] of the machine it ran on.
//!
//! Conventions: CPU ids are OS indices of PUs (what the kernel and `taskset` call CPU
//! numbers); NUMA nodes are named by their OS index; packages, dies, cores and groups
//! are listed in hwloc's logical order and referred to by their position in these lists.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Version of the machine description layout. Bumped when a field changes meaning.
pub const MACHINE_SCHEMA_VERSION: u32 = 1;

/// A whole machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Layout version of this description ([`MACHINE_SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Where the description came from.
    pub source: MachineSource,
    /// Counts and the NUMA layout in a small, stable form for scripts.
    pub summary: Summary,
    /// CPU vendor and model identification.
    pub cpu: CpuIdentity,
    /// Physical packages (sockets).
    pub packages: Vec<Domain>,
    /// Dies inside packages (empty when hwloc reports none).
    pub dies: Vec<Domain>,
    /// Groups and clusters (hwloc `Group` objects: clusters of cores, tiles, CCX...).
    pub groups: Vec<Domain>,
    /// NUMA nodes, with and without CPUs.
    pub numa_nodes: Vec<NumaNode>,
    /// Physical cores.
    pub cores: Vec<Core>,
    /// Processing units (hardware threads), by OS index.
    pub pus: Vec<Pu>,
    /// CPU caches (and memory-side caches, flagged as such).
    pub caches: Vec<Cache>,
    /// CPU kinds on hybrid machines (one entry on homogeneous machines, or none if unknown).
    pub cpu_kinds: Vec<CpuKind>,
    /// Distance matrices between NUMA nodes (the firmware's SLIT, and any other hwloc has).
    pub distances: Vec<DistanceMatrix>,
    /// HMAT-style memory attributes (bandwidth, latency, capacity per initiator/target).
    pub memory_attributes: Vec<MemoryAttribute>,
    /// cpufreq frequency ranges, grouped by CPUs that share the same values.
    pub frequencies: Vec<FrequencyDomain>,
    /// Page sizes available (base page and huge pages), with pool sizes where known.
    pub page_sizes: Vec<PageSize>,
    /// Operating system and library versions.
    pub software: Software,
    /// Other facts hwloc reports about the machine as a whole (DMI strings, architecture...).
    pub infos: BTreeMap<String, String>,
}

/// Where a machine description came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum MachineSource {
    /// The machine numalab runs on.
    Live,
    /// An hwloc XML file.
    HwlocXml {
        /// Path as given by the user.
        path: String,
    },
    /// A sysfs/procfs snapshot (folder or tarball from `hwloc-gather-topology`).
    Snapshot {
        /// Path as given by the user.
        path: String,
    },
    /// A machine model preset.
    Model {
        /// Preset name.
        preset: String,
    },
}

/// The small stable summary (`numalab topo --json` promises these fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of packages.
    pub packages: usize,
    /// Number of NUMA nodes (including memory-only nodes).
    pub numa_nodes: usize,
    /// Number of cores.
    pub cores: usize,
    /// Number of PUs.
    pub pus: usize,
    /// The NUMA nodes.
    pub numa: Vec<SummaryNode>,
}

/// One NUMA node in the summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryNode {
    /// OS index of the node.
    pub os_index: u32,
    /// OS indices of the PUs local to the node as hwloc places it: for a memory-only node
    /// (HBM, MCDRAM in flat mode, CXL, NVDIMM) the CPUs nearest to it; see
    /// [`NumaNode::has_cpus`] for whether Linux lists CPUs for the node.
    pub cpus: Vec<u32>,
    /// Local memory in bytes.
    pub memory_bytes: u64,
    /// Memory technology when known ("DRAM", "HBM", "MCDRAM", "NVM", "CXL-DRAM"...).
    pub subtype: Option<String>,
}

/// CPU identification: x86 CPUID fields or Arm MIDR fields, whichever apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuIdentity {
    /// Architecture ("x86_64", "aarch64", ...), when known.
    pub architecture: Option<String>,
    /// Vendor string ("GenuineIntel", "AuthenticAMD") or Arm implementer name.
    pub vendor: Option<String>,
    /// Model name as the OS reports it; on Arm, whose kernel reports none, the name
    /// from numalab's MIDR table ([`crate::midr`], e.g. "Arm Neoverse N1 (MIDR
    /// 0x414fd0c1, r4p1)").
    pub model_name: Option<String>,
    /// x86 CPUID family number.
    pub family: Option<u32>,
    /// x86 CPUID model number.
    pub model: Option<u32>,
    /// x86 CPUID stepping.
    pub stepping: Option<u32>,
    /// Arm MIDR implementer code (e.g. 0x41 = Arm, 0x48 = HiSilicon).
    pub implementer: Option<u32>,
    /// Arm MIDR part number (e.g. 0xd0c = Neoverse N1).
    pub part: Option<u32>,
    /// Arm MIDR variant.
    pub variant: Option<u32>,
    /// Arm MIDR revision.
    pub revision: Option<u32>,
}

impl CpuIdentity {
    /// The Arm MIDR_EL1 value rebuilt from its fields (architecture field 0xf), if Arm.
    pub fn midr(&self) -> Option<u64> {
        let implementer = u64::from(self.implementer?);
        let part = u64::from(self.part?);
        let variant = u64::from(self.variant.unwrap_or(0));
        let revision = u64::from(self.revision.unwrap_or(0));
        Some((implementer << 24) | (variant << 20) | (0xf << 16) | (part << 4) | revision)
    }

    /// The Arm CPU's name from its MIDR fields ([`crate::midr::Midr::cpu_name`]), if Arm.
    pub fn arm_name(&self) -> Option<String> {
        Some(crate::midr::Midr::from_value(self.midr()?).cpu_name())
    }
}

/// A package, die or group: a set of PUs with an optional OS index and a kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Domain {
    /// OS index when the OS gives one (physical package id, die id).
    pub os_index: Option<u32>,
    /// Subtype for groups ("Cluster", "Tile", "Module"...), when hwloc knows it.
    pub subtype: Option<String>,
    /// Depth of a group among groups (0 = outermost); 0 for packages and dies.
    pub level: u32,
    /// OS indices of the PUs inside.
    pub cpus: Vec<u32>,
}

/// A NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaNode {
    /// OS index.
    pub os_index: u32,
    /// PUs local to the node as hwloc places it. For a memory-only node (HBM, MCDRAM in
    /// flat mode, CXL, NVDIMM) these are the CPUs nearest to it, not CPUs of the node.
    pub cpus: Vec<u32>,
    /// Whether Linux lists CPUs for this node (false for memory-only nodes).
    pub has_cpus: bool,
    /// Local memory size in bytes.
    pub memory_bytes: u64,
    /// Memory technology when hwloc knows it.
    pub subtype: Option<String>,
    /// Index into [`Machine::packages`] of the package the node belongs to, if any.
    pub package: Option<usize>,
}

/// A physical core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Core {
    /// OS index of the core (core id inside its package on Linux), if known.
    pub os_index: Option<u32>,
    /// OS indices of its PUs (more than one with SMT).
    pub pus: Vec<u32>,
    /// Index into [`Machine::packages`].
    pub package: Option<usize>,
    /// Index into [`Machine::cpu_kinds`] (hybrid machines).
    pub kind: Option<usize>,
}

/// A processing unit (hardware thread).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pu {
    /// OS index: the CPU number the kernel uses.
    pub os_index: u32,
    /// Index into [`Machine::cores`].
    pub core: Option<usize>,
    /// Index into [`Machine::packages`].
    pub package: Option<usize>,
    /// Index into [`Machine::dies`].
    pub die: Option<usize>,
    /// OS index of the nearest NUMA node with memory (the node of its first-touch memory).
    pub numa_node: Option<u32>,
    /// Other PUs of the same core (SMT siblings).
    pub siblings: Vec<u32>,
}

/// Kind of cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheKind {
    /// Data cache.
    Data,
    /// Instruction cache.
    Instruction,
    /// Unified cache.
    Unified,
    /// Memory-side cache (in front of a NUMA node, e.g. MCDRAM in cache mode).
    MemorySide,
}

/// One cache instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    /// Level (1, 2, 3...).
    pub level: u32,
    /// Data, instruction, unified or memory-side.
    pub kind: CacheKind,
    /// Size in bytes, when known.
    pub size_bytes: Option<u64>,
    /// Cache line size in bytes, when known.
    pub line_bytes: Option<u32>,
    /// Associativity (ways); 0 = fully associative; None = unknown.
    pub ways: Option<u32>,
    /// PUs that share this cache.
    pub cpus: Vec<u32>,
}

/// A CPU kind of a hybrid machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuKind {
    /// PUs of this kind.
    pub cpus: Vec<u32>,
    /// hwloc efficiency rank (higher = more performant), when known.
    pub efficiency: Option<u32>,
    /// What hwloc knows of the kind (CoreType, FrequencyMaxMHz, LinuxCapacity...).
    pub infos: BTreeMap<String, String>,
}

/// A distance matrix between NUMA nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistanceMatrix {
    /// hwloc's name for the matrix ("NUMALatency" for the firmware SLIT), if any.
    pub name: Option<String>,
    /// Whether the values come from the OS/firmware (true) or from the user.
    pub from_os: bool,
    /// "latency" or "bandwidth": what the values mean (SLIT is a relative latency).
    pub means: String,
    /// OS indices of the nodes, in matrix order.
    pub nodes: Vec<u32>,
    /// Row-major matrix: `values[i][j]` = distance from `nodes[i]` to `nodes[j]`.
    pub values: Vec<Vec<u64>>,
}

/// One memory attribute (HMAT and friends) with its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryAttribute {
    /// Attribute name ("Bandwidth", "Latency", "ReadBandwidth", "Capacity", "Locality"...).
    pub name: String,
    /// Unit of the values ("MiB/s", "ns", "bytes", "PUs").
    pub unit: String,
    /// Whether higher values are better.
    pub higher_is_better: bool,
    /// Values per (initiator, target).
    pub values: Vec<MemoryAttributeValue>,
}

/// A memory attribute value for one initiator and target node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryAttributeValue {
    /// PUs of the initiator (None for attributes that need no initiator).
    pub initiator_cpus: Option<Vec<u32>>,
    /// OS index of the target NUMA node.
    pub target_node: u32,
    /// The value, in [`MemoryAttribute::unit`].
    pub value: u64,
}

/// cpufreq settings shared by a set of CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrequencyDomain {
    /// CPUs with these values.
    pub cpus: Vec<u32>,
    /// Lowest frequency the governor may use, kHz.
    pub min_khz: Option<u64>,
    /// Highest frequency the governor may use, kHz.
    pub max_khz: Option<u64>,
    /// Base (nominal) frequency, kHz, where the platform reports it.
    pub base_khz: Option<u64>,
    /// Current frequency when the description was taken, kHz (live machines only).
    pub current_khz: Option<u64>,
    /// cpufreq governor.
    pub governor: Option<String>,
    /// Where the values come from ("cpufreq", "hwloc cpukinds").
    pub origin: String,
}

/// A page size and its pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSize {
    /// Page size in bytes.
    pub size_bytes: u64,
    /// Pages of this size reserved in the pool, summed over NUMA nodes (None for the base page).
    pub pool_pages: Option<u64>,
}

/// Software versions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Software {
    /// Operating system name ("Linux").
    pub os_name: Option<String>,
    /// Kernel release ("6.1.0-18-amd64").
    pub kernel: Option<String>,
    /// hwloc version that produced the description (runtime library).
    pub hwloc: Option<String>,
    /// Host name of the described machine, when known.
    pub hostname: Option<String>,
}

impl Machine {
    /// A machine of this source with nothing in it yet (every list empty, the summary
    /// zero): builders fill in what they know and call [`Machine::compute_summary`].
    pub fn empty(source: MachineSource) -> Machine {
        Machine {
            schema_version: MACHINE_SCHEMA_VERSION,
            source,
            summary: Summary {
                packages: 0,
                numa_nodes: 0,
                cores: 0,
                pus: 0,
                numa: Vec::new(),
            },
            cpu: CpuIdentity::default(),
            packages: Vec::new(),
            dies: Vec::new(),
            groups: Vec::new(),
            numa_nodes: Vec::new(),
            cores: Vec::new(),
            pus: Vec::new(),
            caches: Vec::new(),
            cpu_kinds: Vec::new(),
            distances: Vec::new(),
            memory_attributes: Vec::new(),
            frequencies: Vec::new(),
            page_sizes: Vec::new(),
            software: Software::default(),
            infos: BTreeMap::new(),
        }
    }

    /// The NUMA nodes with CPUs.
    pub fn cpu_nodes(&self) -> impl Iterator<Item = &NumaNode> {
        self.numa_nodes.iter().filter(|n| n.has_cpus)
    }

    /// Finds a NUMA node by OS index.
    pub fn node(&self, os_index: u32) -> Option<&NumaNode> {
        self.numa_nodes.iter().find(|n| n.os_index == os_index)
    }

    /// Finds a PU by OS index.
    pub fn pu(&self, os_index: u32) -> Option<&Pu> {
        self.pus.iter().find(|p| p.os_index == os_index)
    }

    /// All PU OS indices, ascending.
    pub fn pu_ids(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.pus.iter().map(|p| p.os_index).collect();
        v.sort_unstable();
        v
    }

    /// The firmware's SLIT matrix, if present (hwloc calls it "NUMALatency").
    pub fn slit(&self) -> Option<&DistanceMatrix> {
        self.distances
            .iter()
            .find(|d| d.name.as_deref() == Some("NUMALatency"))
            .or_else(|| {
                self.distances
                    .iter()
                    .find(|d| d.from_os && d.means == "latency")
            })
    }

    /// Total size of the largest cache level, summed over its instances (bytes).
    /// Used to size working sets "at least 4x the last-level cache".
    pub fn last_level_cache_total(&self) -> Option<u64> {
        let level = self
            .caches
            .iter()
            .filter(|c| c.kind != CacheKind::MemorySide && c.kind != CacheKind::Instruction)
            .map(|c| c.level)
            .max()?;
        Some(
            self.caches
                .iter()
                .filter(|c| {
                    c.level == level
                        && c.kind != CacheKind::MemorySide
                        && c.kind != CacheKind::Instruction
                })
                .filter_map(|c| c.size_bytes)
                .sum(),
        )
    }

    /// A hash of the machine's structure (PUs, cores, packages, nodes, caches, distances).
    ///
    /// Two descriptions of the same machine have the same hash whatever their source,
    /// current frequencies, host name or node memory sizes (which change with memory
    /// hot-plug and ballooning: a VM's node grew from 18 to 21 GiB during one
    /// evaluation, and a resumed run was refused as "another machine"); any structural
    /// difference changes it.
    pub fn topology_hash(&self) -> String {
        /// A NUMA node without its memory size.
        #[derive(Serialize)]
        struct Node<'a> {
            os_index: u32,
            cpus: &'a [u32],
            has_cpus: bool,
            subtype: &'a Option<String>,
            package: Option<usize>,
        }
        #[derive(Serialize)]
        struct Structure<'a> {
            packages: &'a [Domain],
            dies: &'a [Domain],
            groups: &'a [Domain],
            numa_nodes: Vec<Node<'a>>,
            cores: &'a [Core],
            pus: &'a [Pu],
            caches: &'a [Cache],
            distances: &'a [DistanceMatrix],
        }
        let s = Structure {
            packages: &self.packages,
            dies: &self.dies,
            groups: &self.groups,
            numa_nodes: self
                .numa_nodes
                .iter()
                .map(|n| Node {
                    os_index: n.os_index,
                    cpus: &n.cpus,
                    has_cpus: n.has_cpus,
                    subtype: &n.subtype,
                    package: n.package,
                })
                .collect(),
            cores: &self.cores,
            pus: &self.pus,
            caches: &self.caches,
            distances: &self.distances,
        };
        let bytes = serde_json::to_vec(&s).expect("machine structure serializes");
        let digest = Sha256::digest(&bytes);
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// Recomputes [`Machine::summary`] from the detailed lists.
    pub fn compute_summary(&mut self) {
        self.summary = Summary {
            packages: self.packages.len(),
            numa_nodes: self.numa_nodes.len(),
            cores: self.cores.len(),
            pus: self.pus.len(),
            numa: self
                .numa_nodes
                .iter()
                .map(|n| SummaryNode {
                    os_index: n.os_index,
                    cpus: n.cpus.clone(),
                    memory_bytes: n.memory_bytes,
                    subtype: n.subtype.clone(),
                })
                .collect(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midr_is_rebuilt_from_fields() {
        // Neoverse N1 r3p1: implementer 0x41, variant 3, part 0xd0c, revision 1.
        let id = CpuIdentity {
            implementer: Some(0x41),
            part: Some(0xd0c),
            variant: Some(3),
            revision: Some(1),
            ..Default::default()
        };
        assert_eq!(id.midr(), Some(0x413f_d0c1));
        assert_eq!(CpuIdentity::default().midr(), None);
        assert_eq!(
            id.arm_name().as_deref(),
            Some("Arm Neoverse N1 (MIDR 0x413fd0c1, r3p1)")
        );
        assert_eq!(CpuIdentity::default().arm_name(), None);
    }
}
