//! Data-address sampling (`pmu.memaccess`, made by `numalab_memaccess`): which data the
//! sampled loads and stores touched, how slow they were, whether the PMU saw them
//! served from another node, on which node their pages were, and which cache lines
//! several CPUs wrote at different offsets (false sharing), in the spirit of
//! `perf mem` and `perf c2c`.
//!
//! Latencies are the PMU's sample weight, in its unit (`latency_unit`: core cycles for
//! Intel PEBS load latency, Arm SPE total latency and AMD IBS; whatever the importer
//! was told otherwise). Shares are percentages.

use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// Where the samples came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemSource {
    /// "imported" (`perf script` text) or "measured" (numalab sampled).
    pub kind: String,
    /// The imported file, when imported from a file.
    #[serde(default)]
    pub path: Option<String>,
    /// The format read, e.g. "perf script (comm,pid,tid,cpu,time,event,ip,sym,dso,addr,data_src,weight,phys_addr)".
    #[serde(default)]
    pub format: Option<String>,
    /// The command sampled (live).
    #[serde(default)]
    pub command: Vec<String>,
    /// The process sampled (live, by pid).
    #[serde(default)]
    pub pid: Option<u32>,
    /// Events seen, with their sample counts (e.g. `cpu/mem-loads,ldlat=30/P`).
    #[serde(default)]
    pub events: Vec<(String, u64)>,
}

/// How the slow-load threshold was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// The threshold: a load is slow when its latency is at or above it.
    pub value: f64,
    /// Its unit (the latency unit).
    pub unit: String,
    /// "given" (the user's value), "given in ns" (converted with `cycles_per_ns`) or
    /// "percentile" (of the sampled loads' latencies).
    pub how: String,
    /// The percentile, when `how` = "percentile" (90 by default; nearest rank).
    #[serde(default)]
    pub percentile: Option<f64>,
    /// The conversion used, when given in ns.
    #[serde(default)]
    pub cycles_per_ns: Option<f64>,
}

/// Samples attributed to one mapping, data symbol or user-named region.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionRow {
    /// Its name: a file path, `[heap]`, `[stack]`, `anon 0x7f..-0x7f..`, a data symbol
    /// (`graph_edges`), or a user-named region.
    pub name: String,
    /// "file", "heap", "stack", "anonymous", "special" (`[vdso]` ...), "unmapped"
    /// (no mapping seen), "symbol" (an ELF data symbol) or "user" (a named region).
    pub kind: String,
    /// The file the symbol is in, or the process (`pid 1234`) of an anonymous mapping.
    #[serde(default)]
    pub object: Option<String>,
    /// ELF section of a symbol (`.data`, `.bss`, ...).
    #[serde(default)]
    pub section: Option<String>,
    /// Start address (hex) and size in bytes, when one range.
    #[serde(default)]
    pub start: Option<String>,
    /// Size, bytes.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Samples in it.
    pub samples: u64,
    /// Share of all samples, %.
    pub samples_pct: f64,
    /// Load samples in it.
    pub loads: u64,
    /// Store samples in it.
    pub stores: u64,
    /// Slow loads in it (latency at or above the threshold).
    pub slow_loads: u64,
    /// Share of all slow loads, %.
    pub slow_loads_pct: f64,
    /// Samples the PMU marked as served from another node (memory or cache).
    pub remote: u64,
    /// Share of its samples that are remote per the PMU, %.
    pub remote_pct: f64,
    /// Share of its slow loads that are remote per the PMU, % (None without slow loads).
    #[serde(default)]
    pub slow_remote_pct: Option<f64>,
    /// Loads that hit a line modified in another core's cache (snoop HITM / peer).
    pub hitm: u64,
    /// Loads that missed the TLB.
    pub tlb_misses: u64,
    /// Median load latency.
    #[serde(default)]
    pub median_latency: Option<f64>,
    /// Samples per level they were served from (`L1`, `L3`, `local RAM`, `remote RAM`...).
    #[serde(default)]
    pub levels: Vec<(String, u64)>,
}

/// A latency histogram of the loads whose page is on one node (or of one PMU class).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeHistogram {
    /// "node 1", "remote per the PMU", "local per the PMU", "unknown".
    pub label: String,
    /// The node, when known.
    #[serde(default)]
    pub node: Option<u32>,
    /// How it was obtained: "move_pages" (asked the kernel while the process lived),
    /// "phys_addr + sysfs memory blocks" (this machine, as the user said), "PMU remote
    /// bit" (no node, only local/remote), "unknown".
    pub how: String,
    /// Loads.
    pub loads: u64,
    /// Slow loads.
    pub slow_loads: u64,
    /// Median latency.
    #[serde(default)]
    pub median_latency: Option<f64>,
    /// Counts per bin; bin i covers `bin_edges[i]` up to, not including, `bin_edges[i + 1]`.
    pub counts: Vec<u64>,
}

/// One offset of a cache line in a false-sharing report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineOffset {
    /// Byte offset in the line.
    pub offset: u32,
    /// CPUs that touched it.
    pub cpus: Vec<u32>,
    /// Store samples.
    pub stores: u64,
    /// Load samples.
    pub loads: u64,
    /// Loads that hit a modified line in another cache.
    pub hitm: u64,
    /// Code that touched it (function, most samples first).
    #[serde(default)]
    pub code: Vec<String>,
}

/// A cache line written (or HITM-loaded) by several CPUs at different offsets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FalseSharingLine {
    /// The line's virtual address (hex).
    pub line: String,
    /// The process.
    pub pid: u32,
    /// Line size used, bytes (64).
    pub line_bytes: u32,
    /// The data symbol, region or mapping it is in.
    pub region: String,
    /// Samples on the line.
    pub samples: u64,
    /// Store samples.
    pub stores: u64,
    /// HITM loads.
    pub hitm: u64,
    /// CPUs that wrote or HITM-loaded it.
    pub cpus: Vec<u32>,
    /// Per offset.
    pub offsets: Vec<LineOffset>,
}

/// A data-address sampling run or import (`pmu.memaccess`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemAccessRecord {
    /// Where the samples came from.
    pub source: MemSource,
    /// The sampling facility: "Intel PEBS load latency", "AMD IBS op", "Arm SPE", or
    /// "imported" with what the events say.
    pub facility: String,
    /// The latency unit ("cycles" unless told otherwise).
    pub latency_unit: String,
    /// Samples read.
    pub samples: u64,
    /// Load samples.
    pub loads: u64,
    /// Store samples.
    pub stores: u64,
    /// Samples that are neither (prefetch, unknown op).
    pub other: u64,
    /// Samples the kernel lost (live) or lines not samples (import: 0).
    #[serde(default)]
    pub lost: u64,
    /// The slow-load threshold.
    pub threshold: Threshold,
    /// Loads at or above it.
    pub slow_loads: u64,
    /// Samples remote per the PMU.
    pub remote: u64,
    /// Per mapping, most samples first.
    pub mappings: Vec<RegionRow>,
    /// Per data symbol or user-named region, most samples first (empty when no symbol
    /// could be read and no region was named).
    #[serde(default)]
    pub symbols: Vec<RegionRow>,
    /// Bin edges of the histograms (latency unit), one more than bins.
    pub bin_edges: Vec<f64>,
    /// Latency histograms per node of the page.
    pub node_histograms: Vec<NodeHistogram>,
    /// How nodes were obtained, per method: (method, loads answered).
    #[serde(default)]
    pub node_methods: Vec<(String, u64)>,
    /// False-sharing lines, most HITM and stores first (at most 50).
    pub false_sharing: Vec<FalseSharingLine>,
    /// Findings, in plain sentences.
    pub findings: Vec<String>,
    /// Caveats.
    pub notes: Vec<String>,
}

impl RecordKind for MemAccessRecord {
    const KIND: &'static str = "pmu.memaccess";
}
