//! Records of the workload harness: one run of the user's program (`harness.run`,
//! what was sampled while it ran) and the summaries of its studies (`harness.scale`,
//! `harness.policy`, `harness.sweep`), with the plans and statistics they hold.

use crate::process::Outcome;
use crate::sensors::SensorKind;
use numalab_schema::memory::MemPolicy;
use numalab_schema::RecordKind;
use numalab_stats::Interval;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A placement strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Fill a core, cluster, NUMA node and package before the next.
    Compact,
    /// Round-robin over packages, nodes and clusters; SMT siblings last.
    Scatter,
    /// Threads and memory on one NUMA node.
    NumaLocal,
    /// No affinity, no memory policy.
    None,
}

impl Placement {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Compact => "compact",
            Placement::Scatter => "scatter",
            Placement::NumaLocal => "numa-local",
            Placement::None => "none",
        }
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Placement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "compact" => Ok(Placement::Compact),
            "scatter" => Ok(Placement::Scatter),
            "numa-local" | "numa_local" | "local" => Ok(Placement::NumaLocal),
            "none" | "os" => Ok(Placement::None),
            other => Err(format!(
                "unknown placement {other:?}; use compact, scatter, numa-local or none"
            )),
        }
    }
}

/// What a set of CPUs covers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// Packages with at least one of the CPUs (positions in `Machine::packages`).
    pub packages: Vec<usize>,
    /// NUMA nodes (OS indices) local to at least one of the CPUs.
    pub nodes: Vec<u32>,
    /// Clusters (innermost hwloc groups) with at least one of the CPUs.
    pub clusters: usize,
    /// Cores with at least one of the CPUs.
    pub cores: usize,
    /// Cores with more than one of the CPUs (SMT siblings both in use).
    pub shared_cores: usize,
}

/// Bytes per NUMA node (OS index -> bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeBytes {
    /// Pages of mappings without a backing file (heap, stacks, anonymous), per node.
    pub data: BTreeMap<u32, u64>,
    /// Pages of every mapping (files included), per node.
    pub all: BTreeMap<u32, u64>,
}

impl NodeBytes {
    /// Total data bytes.
    pub fn data_total(&self) -> u64 {
        self.data.values().sum()
    }

    /// Total bytes of every mapping.
    pub fn all_total(&self) -> u64 {
        self.all.values().sum()
    }

    /// Adds another process's pages.
    pub fn add(&mut self, other: &NodeBytes) {
        for (n, b) in &other.data {
            *self.data.entry(*n).or_insert(0) += b;
        }
        for (n, b) in &other.all {
            *self.all.entry(*n).or_insert(0) += b;
        }
    }

    /// The per-node distribution used for judgments: data pages, or every page when the
    /// process has no data pages.
    pub fn judged(&self) -> &BTreeMap<u32, u64> {
        if self.data_total() > 0 {
            &self.data
        } else {
            &self.all
        }
    }

    /// Fraction of the judged bytes on each node.
    pub fn fractions(&self) -> BTreeMap<u32, f64> {
        let m = self.judged();
        let total: u64 = m.values().sum();
        m.iter()
            .map(|(n, b)| {
                (
                    *n,
                    if total == 0 {
                        0.0
                    } else {
                        *b as f64 / total as f64
                    },
                )
            })
            .collect()
    }
}

/// One sensor's figures over a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SensorFigure {
    /// Sensor id (`powercap:intel-rapl:0`, `hwmon:hwmon0:power1`).
    pub id: String,
    /// The kernel's name or label.
    pub label: String,
    /// What the figure covers.
    pub covers: String,
    /// Energy counter, power or temperature.
    pub kind: SensorKind,
    /// Readings taken.
    pub samples: usize,
    /// Energy over the run, joules (energy counters: difference; power sensors: mean
    /// power times the sampled time).
    pub energy_j: Option<f64>,
    /// Mean power, watts.
    pub mean_w: Option<f64>,
    /// Highest power reading, watts (power sensors only).
    pub max_w: Option<f64>,
    /// Mean temperature, degrees Celsius.
    pub mean_c: Option<f64>,
    /// Highest temperature, degrees Celsius.
    pub max_c: Option<f64>,
}

/// Power and temperature over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PowerFigures {
    /// Every readable sensor.
    pub sensors: Vec<SensorFigure>,
    /// The figure used for work per joule: mean watts of the sensors in `total_covers`.
    pub total_w: Option<f64>,
    /// Which sensors make `total_w`, and what they cover.
    pub total_covers: Option<String>,
    /// Why there are no figures, when there are none.
    pub not_available: Option<String>,
}

/// CPU frequencies over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FrequencyFigures {
    /// CPUs sampled (the run's CPUs).
    pub cpus: Vec<u32>,
    /// Sampling rounds.
    pub samples: usize,
    /// Mean of all readings, kHz.
    pub mean_khz: Option<f64>,
    /// Lowest reading, kHz.
    pub min_khz: Option<u64>,
    /// Highest reading, kHz.
    pub max_khz: Option<u64>,
    /// The highest frequency the CPUs allow (cpuinfo_max_freq), kHz.
    pub nominal_max_khz: Option<u64>,
    /// Why there are no figures, when there are none.
    pub not_available: Option<String>,
}

/// Pages per node over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PageFigures {
    /// Successful samples.
    pub samples: usize,
    /// The footprint at full size: the latest sample whose data bytes are within
    /// [`FULL_SIZE_SHARE`] of the largest seen. (Not simply the largest: a sample taken
    /// while the data was still being touched can count short-lived thread stacks and
    /// outweigh the complete data a moment later.)
    pub peak: Option<NodeBytes>,
    /// The largest data footprint seen, bytes.
    #[serde(default)]
    pub largest_bytes: u64,
    /// Data bytes over time: (ms since start, bytes per node).
    pub series: Vec<(u64, std::collections::BTreeMap<u32, u64>)>,
    /// Why there are no figures, when there are none.
    pub not_available: Option<String>,
}

/// A sample within this share of the largest footprint counts as full size.
pub const FULL_SIZE_SHARE: f64 = 0.95;

impl PageFigures {
    /// Takes one sample into `peak` (see there) and `largest_bytes`.
    pub fn observe(&mut self, b: NodeBytes) {
        let total = b.data_total();
        self.largest_bytes = self.largest_bytes.max(total);
        if total as f64 >= FULL_SIZE_SHARE * self.largest_bytes as f64 {
            self.peak = Some(b);
        }
    }
}

/// Everything sampled during one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSamples {
    /// Power and temperature (None when not asked for).
    pub power: Option<PowerFigures>,
    /// Frequencies (None when not asked for).
    pub frequency: Option<FrequencyFigures>,
    /// Pages per node (None when not asked for).
    pub pages: Option<PageFigures>,
}

/// Response-time percentiles over a point's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseStats {
    /// Unit as printed by the program.
    pub unit: String,
    /// Response times pooled over the runs.
    pub count: usize,
    /// Median with its interval.
    pub p50: Interval,
    /// 95th percentile with its interval.
    pub p95: Interval,
    /// 99th percentile with its interval.
    pub p99: Interval,
}

/// What a point's runs say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointStats {
    /// Runs done.
    pub runs: usize,
    /// Runs that succeeded.
    pub ok: usize,
    /// Distinct failure reasons (first line of each).
    pub failures: Vec<String>,
    /// Median of the metric's values with a bootstrap interval.
    pub metric: Option<Interval>,
    /// Median throughput with a bootstrap interval.
    pub throughput: Option<Interval>,
    /// The throughput of each successful run.
    pub throughput_values: Vec<f64>,
    /// Runs whose throughput is an outlier (modified z-score > 3.5); kept in the median.
    pub outliers: usize,
    /// Median CPUs kept busy.
    pub cpus_busy: Option<f64>,
    /// Median CPUs busy per thread given.
    pub utilisation: Option<f64>,
    /// Response times, when measured.
    pub response: Option<ResponseStats>,
    /// Median power of the total figure (watts), when sensors exist.
    pub power_w: Option<f64>,
    /// What that power covers.
    pub power_covers: Option<String>,
    /// Throughput / power: work per joule, in the throughput's work unit.
    pub work_per_joule: Option<f64>,
    /// Highest temperature seen, degrees Celsius.
    pub max_temp_c: Option<f64>,
    /// Mean frequency of the run's CPUs, kHz.
    pub mean_khz: Option<f64>,
    /// The CPUs' highest allowed frequency, kHz.
    pub nominal_max_khz: Option<u64>,
    /// Why power figures are missing.
    pub power_not_available: Option<String>,
    /// Why frequency figures are missing.
    pub frequency_not_available: Option<String>,
}

/// A memory policy to try.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// First touch (the kernel's default: each page on the node of the CPU touching it).
    Local,
    /// Interleave page by page over every node with memory.
    Interleave,
    /// Bind to one node (strict).
    Bind,
    /// Prefer one node, fall back to others when it is full.
    Preferred,
}

impl PolicyKind {
    /// Every policy, in the order they are reported.
    pub const ALL: [PolicyKind; 4] = [
        PolicyKind::Local,
        PolicyKind::Interleave,
        PolicyKind::Bind,
        PolicyKind::Preferred,
    ];

    /// Name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Local => "local",
            PolicyKind::Interleave => "interleave",
            PolicyKind::Bind => "bind",
            PolicyKind::Preferred => "preferred",
        }
    }
}

impl std::str::FromStr for PolicyKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "local" | "first-touch" | "default" => Ok(PolicyKind::Local),
            "interleave" => Ok(PolicyKind::Interleave),
            "bind" | "membind" => Ok(PolicyKind::Bind),
            "preferred" => Ok(PolicyKind::Preferred),
            o => Err(format!(
                "unknown policy {o:?}; use local, interleave, bind or preferred"
            )),
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyPlan {
    /// Threads for `{threads}`.
    pub threads: usize,
    /// How the CPUs were chosen.
    pub placement: Placement,
    /// The pinning shared by every policy (None: not pinned).
    pub cpus: Option<Vec<u32>>,
    /// Node of bind and preferred.
    pub node: u32,
    /// Nodes of interleave (every node with memory).
    pub interleave_nodes: Vec<u32>,
    /// NUMA nodes the CPUs belong to.
    pub cpu_nodes: Vec<u32>,
    /// Policies, in order.
    pub policies: Vec<PolicyKind>,
    /// Nodes with memory on the machine.
    pub memory_nodes: Vec<u32>,
}

impl PolicyPlan {
    /// The memory policy of a kind.
    pub fn mem_policy(&self, k: PolicyKind) -> Option<MemPolicy> {
        match k {
            PolicyKind::Local => None,
            PolicyKind::Interleave => Some(MemPolicy::Interleave(self.interleave_nodes.clone())),
            PolicyKind::Bind => Some(MemPolicy::Bind(vec![self.node])),
            PolicyKind::Preferred => Some(MemPolicy::Preferred(self.node)),
        }
    }
}

/// One policy's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyResult {
    /// The policy.
    pub policy: PolicyKind,
    /// The memory policy given.
    pub mem_policy: Option<MemPolicy>,
    /// Runs and statistics.
    pub stats: PointStats,
    /// Throughput relative to local (first touch).
    pub vs_local: Option<Interval>,
    /// Pages per node at the largest footprint seen (over the runs).
    pub pages: Option<NodeBytes>,
    /// Fraction of the data pages per node.
    pub fractions: BTreeMap<u32, f64>,
    /// Largest fraction on one node.
    pub max_node_fraction: Option<f64>,
    /// Evenness of the pages over the nodes the threads run on (1 = even, 0 = all on one).
    pub evenness: Option<f64>,
}

/// The summary of a policy study (`harness.policy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicySummary {
    /// Configuration id.
    pub study_id: String,
    /// The command (placeholders substituted).
    pub command: Vec<String>,
    /// The plan.
    pub plan: PolicyPlan,
    /// The metric as given.
    pub metric: String,
    /// What throughput counts.
    pub throughput_unit: String,
    /// Runs per policy.
    pub repeat: usize,
    /// Per policy.
    pub results: Vec<PolicyResult>,
    /// The machine has one node with memory: every policy is the same.
    pub single_node: bool,
    /// "single-node", "concentrated", "balanced", "one-node-threads" or "unknown".
    pub class: String,
    /// The class in a sentence.
    pub classification: String,
    /// The policy to use.
    pub recommended: Option<PolicyKind>,
    /// Why.
    pub recommendation: String,
    /// The command line to paste.
    pub command_line: Option<String>,
    /// Findings in sentences.
    pub findings: Vec<String>,
    /// Failed runs.
    pub failed_runs: usize,
}

impl RecordKind for PolicySummary {
    const KIND: &'static str = "harness.policy";
}

/// One thread count's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalePoint {
    /// Threads.
    pub threads: usize,
    /// CPUs given ("0-7", or "all" when not pinned).
    pub cpus: String,
    /// Memory policy given.
    pub mem_policy: Option<MemPolicy>,
    /// Topology boundaries the point sits on.
    pub boundaries: Vec<String>,
    /// What the CPUs cover.
    pub span: Span,
    /// Runs and their statistics.
    pub stats: PointStats,
    /// Throughput per thread.
    pub per_thread: Option<Interval>,
    /// Throughput over the base point's.
    pub speedup: Option<Interval>,
    /// Speedup over the thread ratio.
    pub efficiency: Option<Interval>,
}

/// A knee of the per-thread curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeFinding {
    /// Last thread count before the fall.
    pub threads_before: usize,
    /// First thread count after it.
    pub threads_after: usize,
    /// Relative change of per-thread throughput (-0.38 = 38% lower).
    pub relative_change: f64,
    /// The topology boundary crossed, if any ("where threads start running on package 1").
    pub boundary: Option<String>,
    /// The finding in one sentence.
    pub sentence: String,
}

/// The summary of a scaling study (`harness.scale`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleSummary {
    /// Configuration id (shared with the study's `harness.run` records).
    pub study_id: String,
    /// The command (with placeholders).
    pub command: Vec<String>,
    /// Placement strategy.
    pub placement: Placement,
    /// The metric as given.
    pub metric: String,
    /// What throughput counts.
    pub throughput_unit: String,
    /// Runs per point.
    pub repeat: usize,
    /// Threads of the base point of speedups (the smallest count that succeeded).
    pub base_threads: Option<usize>,
    /// The points.
    pub points: Vec<ScalePoint>,
    /// Knees of per-thread throughput.
    pub knees: Vec<KneeFinding>,
    /// Points where the program kept under 75% of its CPUs busy: (threads, cpus busy).
    pub under_subscribed: Vec<(usize, f64)>,
    /// Findings in sentences, most important first.
    pub findings: Vec<String>,
    /// Failed runs.
    pub failed_runs: usize,
}

impl RecordKind for ScaleSummary {
    const KIND: &'static str = "harness.scale";
}

/// A parameter and its values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    /// Name (`{NAME}` in the command or the build).
    pub name: String,
    /// Values, in order; the first is the baseline.
    pub values: Vec<String>,
}

const RESERVED: [&str; 3] = ["threads", "cpus", "node"];

impl std::str::FromStr for Param {
    type Err = String;
    /// `NAME=V1,V2,...`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, values) = s.split_once('=').ok_or_else(|| {
            format!("--param {s:?}: write NAME=V1,V2,... (e.g. --param DIST=0,8,16,32)")
        })?;
        let valid = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(format!(
                "--param {s:?}: the name {name:?} must be letters, digits and _ (not starting with a digit)"
            ));
        }
        if RESERVED.contains(&name) {
            return Err(format!(
                "--param {s:?}: {{{name}}} is set by numalab itself; choose another name"
            ));
        }
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(|v| v.is_empty()) {
            return Err(format!("--param {s:?}: a value is empty"));
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(d) = values.iter().find(|v| !seen.insert(v.as_str())) {
            return Err(format!("--param {s:?}: the value {d:?} is given twice"));
        }
        Ok(Param {
            name: name.to_string(),
            values,
        })
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPlan {
    /// Parameters; with several, every combination is a point (the first is the baseline).
    pub params: Vec<Param>,
    /// The build command (placeholders allowed), split into words.
    pub build: Option<Vec<String>>,
    /// Threads for `{threads}`; the CPUs are placed by `placement` when set.
    pub threads: Option<usize>,
    /// Placement of the threads.
    pub placement: Placement,
    /// CPUs given to every run (None: not pinned).
    pub cpus: Option<Vec<u32>>,
}

impl SweepPlan {
    /// Every combination of values, baseline first.
    pub fn combinations(&self) -> Vec<BTreeMap<String, String>> {
        let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for p in &self.params {
            let mut next = Vec::new();
            for combo in &out {
                for v in &p.values {
                    let mut c = combo.clone();
                    c.push((p.name.clone(), v.clone()));
                    next.push(c);
                }
            }
            out = next;
        }
        out.into_iter().map(|c| c.into_iter().collect()).collect()
    }
}

/// One value's (or combination's) results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Parameter values.
    pub params: BTreeMap<String, String>,
    /// "DIST=40".
    pub label: String,
    /// Runs and statistics.
    pub stats: PointStats,
    /// Throughput over the baseline's (the first value).
    pub speedup: Option<Interval>,
    /// The build failed (no runs).
    pub build_failed: bool,
}

/// The summary of a sweep (`harness.sweep`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    /// Configuration id.
    pub study_id: String,
    /// The command (with placeholders).
    pub command: Vec<String>,
    /// The plan.
    pub plan: SweepPlan,
    /// The metric as given.
    pub metric: String,
    /// What throughput counts.
    pub throughput_unit: String,
    /// Runs per value.
    pub repeat: usize,
    /// Per value, in sweep order.
    pub points: Vec<SweepPoint>,
    /// The best value's label, when it is measurably better than the baseline.
    pub best: Option<String>,
    /// The fastest value's label, measurable or not.
    pub fastest: Option<String>,
    /// Findings in sentences.
    pub findings: Vec<String>,
    /// Failed runs.
    pub failed_runs: usize,
}

impl RecordKind for SweepSummary {
    const KIND: &'static str = "harness.sweep";
}

/// The build step of a sweep point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildRecord {
    /// The build command as run.
    pub argv: Vec<String>,
    /// It exited with 0.
    pub ok: bool,
    /// How it ended (tails of its output included).
    pub outcome: Option<Outcome>,
    /// Why it failed.
    pub failure: Option<String>,
}

/// One run (`harness.run`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// "scale", "policy" or "sweep".
    pub study: String,
    /// The study's configuration id.
    pub study_id: String,
    /// The point's label.
    pub point: String,
    /// Repetition index (0-based).
    pub repetition: usize,
    /// The command as run.
    pub argv: Vec<String>,
    /// Run through a shell.
    pub shell: bool,
    /// Thread count given to the program, if any.
    pub threads: Option<usize>,
    /// Placement strategy.
    pub placement: Option<String>,
    /// CPU affinity given ("0-7"), None = not pinned.
    pub cpus: Option<String>,
    /// Memory policy given, None = the kernel's default (first touch).
    pub mem_policy: Option<MemPolicy>,
    /// Parameter values.
    pub params: BTreeMap<String, String>,
    /// The run succeeded and its metric was read.
    pub ok: bool,
    /// Why not.
    pub failure: Option<String>,
    /// How the process ended (None when it could not start).
    pub outcome: Option<Outcome>,
    /// The metric as given.
    pub metric: String,
    /// The metric's value (seconds for `wall`).
    pub metric_value: Option<f64>,
    /// Work per second derived from the metric.
    pub throughput: Option<f64>,
    /// Response times read from the output (at most 20000, evenly thinned).
    pub response_values: Vec<f64>,
    /// How many response times the output held.
    pub response_count: usize,
    /// CPU time / wall time: how many CPUs the program kept busy on average.
    pub cpus_busy: Option<f64>,
    /// cpus_busy / threads given.
    pub utilisation: Option<f64>,
    /// Power, frequency and page samples.
    pub samples: RunSamples,
    /// The build step, for sweeps with `--build`.
    pub build: Option<BuildRecord>,
}

impl RecordKind for RunRecord {
    const KIND: &'static str = "harness.run";
}
