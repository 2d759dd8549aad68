//! What a profile (`pmu.profile`, made by `numalab_pmu::profile`) records besides its
//! events and metrics: where the counts came from, the perf groups, the run-to-run
//! spread, and what could not be counted.

use super::advertised::CorePmu;
use super::catalog::CpuMatch;
use super::metrics::{EventValue, MetricValue};
use super::tree::TreeReport;
use crate::process::Outcome;
use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// Where the counts came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// "measured" or "imported".
    pub kind: String,
    /// The imported file.
    #[serde(default)]
    pub path: Option<String>,
    /// The imported file's format.
    #[serde(default)]
    pub format: Option<String>,
}

/// One perf group as counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRecord {
    /// Index.
    pub id: usize,
    /// The run it was counted in.
    pub run: usize,
    /// Metrics it serves.
    pub metrics: Vec<String>,
    /// Time enabled, ns.
    pub time_enabled_ns: Option<u64>,
    /// Time on counters, ns.
    pub time_running_ns: Option<u64>,
    /// time_running / time_enabled.
    pub running_fraction: Option<f64>,
    /// Its events' values (scaled by the fraction).
    pub values: Vec<EventValue>,
}

/// Run-to-run spread of an event counted in every run (`--exact`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Event.
    pub event: String,
    /// Runs.
    pub runs: usize,
    /// Smallest count.
    pub min: f64,
    /// Median count.
    pub median: f64,
    /// Largest count.
    pub max: f64,
    /// (max - min) / median, in percent.
    pub spread_pct: f64,
}

/// What the profile could count, each fact once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// Live Arm runs: the core PMU raw events were opened on (sysfs).
    #[serde(default)]
    pub core_pmu: Option<CorePmu>,
    /// Live Arm runs: core PMUs found (more than one on big.LITTLE).
    #[serde(default)]
    pub core_pmus: usize,
    /// perf_event_attr.type raw events were opened with (None: PERF_TYPE_RAW, 4).
    #[serde(default)]
    pub raw_type: Option<u32>,
    /// Whether the core PMU advertises the architecture's required common events
    /// (then unlisted IMPLEMENTATION DEFINED events are counted on trust).
    #[serde(default)]
    pub common_set_complete: Option<bool>,
    /// Hardware events asked for.
    pub hardware_asked: usize,
    /// Hardware events counted and trusted.
    pub hardware_counted: usize,
    /// Events not supported by this PMU (not advertised, or refused by the kernel).
    pub unsupported: Vec<String>,
    /// Events that read 0 where hardware must count: not counted here.
    pub untrusted: Vec<String>,
    /// Events opened but never scheduled on a counter.
    pub not_scheduled: Vec<String>,
    /// Events denied or failed.
    #[serde(default)]
    pub denied_or_failed: Vec<String>,
    /// IMPLEMENTATION DEFINED events counted although the PMU does not list them.
    #[serde(default)]
    pub on_trust: Vec<String>,
    /// Metrics without a value, grouped by cause.
    pub not_computable: Vec<NotComputable>,
}

/// Metrics that share the cause of having no value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotComputable {
    /// `no_hardware`, `unsupported`, `untrusted`, `not_scheduled`, `denied`,
    /// `failed`, `not_counted` (not selected), or `other`.
    pub cause: String,
    /// One line: "14 metrics not computable: their events are not counted by this PMU
    /// (BR_RETIRED, ...)".
    pub text: String,
    /// The metrics.
    pub metrics: Vec<String>,
    /// The events behind the cause.
    pub events: Vec<String>,
}

/// One run of the workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Index (0-based).
    pub run: usize,
    /// How the command ended.
    pub outcome: Outcome,
}

/// A profile (`pmu.profile`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The catalog used and how the CPU was recognised.
    pub cpu: CpuMatch,
    /// Where the counts came from.
    pub source: Source,
    /// "default", "exact" or "import".
    pub mode: String,
    /// "user" or "user+kernel" (live runs).
    #[serde(default)]
    pub scope: Option<String>,
    /// Whether a hardware PMU was available (live runs).
    #[serde(default)]
    pub hardware_pmu: Option<bool>,
    /// Programmable counters assumed (live runs).
    #[serde(default)]
    pub counters: Option<usize>,
    /// The metric set asked for.
    pub metric_set: String,
    /// The command profiled (live runs).
    #[serde(default)]
    pub command: Vec<String>,
    /// One value per event (for events counted in several groups: the best-covered one).
    pub events: Vec<EventValue>,
    /// Perf groups (live runs).
    #[serde(default)]
    pub groups: Vec<GroupRecord>,
    /// Runs of the workload.
    #[serde(default)]
    pub runs: Vec<RunRecord>,
    /// Run-to-run spread (`--exact`).
    #[serde(default)]
    pub spread: Vec<Spread>,
    /// Metrics.
    pub metrics: Vec<MetricValue>,
    /// The decision tree.
    #[serde(default)]
    pub tree: Option<TreeReport>,
    /// The catalog's consistency rules checked against the metrics (level 1 sums to
    /// 100%, children sum to their parent, shares within range ...); a violated rule is
    /// a finding with its figures, and the values stay as counted.
    #[serde(default)]
    pub consistency: Vec<super::consistency::RuleCheck>,
    /// What could and could not be counted, said once: events not supported, not
    /// trusted, never scheduled; metrics not computable grouped by cause.
    #[serde(default)]
    pub coverage: Option<Coverage>,
    /// What was counted when not a command numalab started: a running process
    /// (`--pid`) or every CPU (`--all-cpus`), and what ended the counting.
    #[serde(default)]
    pub attach: Option<Attachment>,
    /// Interval mode (`--interval`): the interval, ms.
    #[serde(default)]
    pub interval_ms: Option<u64>,
    /// Interval mode: counts and metrics per interval, in time order.
    #[serde(default)]
    pub timeline: Vec<IntervalPoint>,
    /// The uncore PMUs (memory controllers, LLC/SLC, socket links) counted system-wide
    /// over the same time, where the machine has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncore: Option<crate::uncore::UncoreReport>,
    /// Why the uncore PMUs were not counted, when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncore_note: Option<String>,
    /// How much of the run the counters were multiplexed, and what that leaves
    /// uncertain; absent when every hardware value was counted all the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplexing: Option<Multiplexing>,
}

/// Multiplexing over a profile: the groups that took turns on the counters, how often
/// they turned, and the uncertainty it left on the values (`numalab_pmu::mux`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Multiplexing {
    /// Hardware groups counted in one run (the most in any run); absent for imports
    /// (a `perf stat` file does not say).
    #[serde(default)]
    pub groups: Option<usize>,
    /// The fewest groups the same events fit in with these counters (the planner's
    /// packing, events of one metric together where they fit).
    #[serde(default)]
    pub fewest_groups: Option<usize>,
    /// Programmable counters assumed (live runs).
    #[serde(default)]
    pub counters: Option<usize>,
    /// Length of the run the groups were enabled for, seconds (live runs).
    #[serde(default)]
    pub seconds: Option<f64>,
    /// The kernel's rotation interval (`perf_event_mux_interval_ms` of the core PMU),
    /// when it could be read.
    #[serde(default)]
    pub mux_interval_ms: Option<u64>,
    /// Expected full rotations through the groups: seconds / (interval x groups);
    /// absent without the interval.
    #[serde(default)]
    pub rotations: Option<f64>,
    /// The smallest running fraction of a counted hardware event.
    pub min_running_fraction: f64,
    /// The largest typical relative uncertainty of a counted value.
    pub typical: f64,
    /// The largest worst-case relative uncertainty of a counted value.
    pub worst: f64,
    /// Counted values with a multiplexing uncertainty.
    pub values: usize,
}

/// What the counters watched and why they stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    /// "command" (started by numalab), "pid" (a running process) or "system-wide".
    pub kind: String,
    /// The process attached to (`--pid`).
    #[serde(default)]
    pub pid: Option<i32>,
    /// Its command name (`/proc/PID/comm`).
    #[serde(default)]
    pub comm: Option<String>,
    /// Threads it had when attached (each counted, and the threads they create).
    #[serde(default)]
    pub threads: Option<usize>,
    /// CPUs counted (system-wide).
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// "duration", "ctrl-c", "process exited" or "command ended".
    pub stopped_by: String,
    /// Seconds counted.
    pub seconds: f64,
}

/// Counts and metrics over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalPoint {
    /// Start, seconds from the start of counting.
    pub start_s: f64,
    /// End, seconds from the start of counting.
    pub end_s: f64,
    /// The smallest share of the interval any hardware group was on counters (None
    /// without hardware groups).
    #[serde(default)]
    pub running_fraction: Option<f64>,
    /// Counts in the interval (scaled for multiplexing), per event; events without a
    /// value in the interval are absent.
    pub counts: std::collections::BTreeMap<String, f64>,
    /// Metrics over the interval; metrics without a value are absent.
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// Consistency rules the interval's metrics violate (rule ids; the whole profile's
    /// `consistency` has each rule's text and source).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inconsistent: Vec<String>,
}

impl Multiplexing {
    /// The one line a report prints: "multiplexed: 4 groups (they fit in 2), ~75
    /// rotations in 1.20 s; values carry +-22% (worst 75%)".
    pub fn line(&self) -> String {
        let fewer = match (self.fewest_groups, self.groups) {
            (Some(f), Some(g)) if f < g => format!(" (they fit in {f})"),
            _ => String::new(),
        };
        let shape = match (self.groups, self.seconds) {
            (Some(g), Some(s)) => {
                let turns = match self.rotations {
                    Some(r) => format!("~{r:.0} rotations"),
                    None => "rotations unknown".to_string(),
                };
                format!("{g} groups{fewer}, {turns} in {s:.2} s")
            }
            _ => "groups and rotations not recorded".to_string(),
        };
        format!(
            "multiplexed: {shape}; values carry +-{} (worst {})",
            super::fmt_pct(self.typical),
            super::fmt_pct(self.worst)
        )
    }
}

impl RecordKind for Profile {
    const KIND: &'static str = "pmu.profile";
}

impl Profile {
    /// An event by name.
    pub fn event(&self, name: &str) -> Option<&EventValue> {
        self.events.iter().find(|e| e.name == name)
    }

    /// A metric by name.
    pub fn metric(&self, name: &str) -> Option<&MetricValue> {
        self.metrics.iter().find(|m| m.name == name)
    }
}
