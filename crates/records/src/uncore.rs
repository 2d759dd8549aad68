//! Records of the memory system as the uncore PMUs count it (made by `numalab-uncore`):
//! the uncore devices the kernel exposes (memory controllers, LLC slices, socket links,
//! data fabric, mesh), each box's counts with the share of time it was on a counter,
//! and the figures derived from them per memory controller, per socket and per link.
//!
//! An [`UncoreReport`] is meant to be embedded as an optional field of other records
//! (`mem.bandwidth`, `pmu.profile`); [`UncoreCounts`] (`uncore.counts`) is the
//! standalone record. A figure that the machine's counters cannot give is absent with
//! its reason ([`Derived::reason`]), never 0.

use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// A derived figure: its value, or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// The value (units in the field name that holds it).
    #[serde(default)]
    pub value: Option<f64>,
    /// Why there is no value (absent when there is one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Derived {
    /// A value.
    pub fn of(value: f64) -> Self {
        Derived {
            value: Some(value),
            reason: None,
        }
    }

    /// No value, and why.
    pub fn absent(reason: impl Into<String>) -> Self {
        Derived {
            value: None,
            reason: Some(reason.into()),
        }
    }

    /// The value, or the reason as an error.
    pub fn get(&self) -> Result<f64, String> {
        match self.value {
            Some(v) => Ok(v),
            None => Err(self.reason.clone().unwrap_or_else(|| "not derived".into())),
        }
    }
}

/// An uncore PMU the kernel exposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UncoreDevice {
    /// Its name under `/sys/bus/event_source/devices` (`uncore_imc_0`, `amd_df`,
    /// `arm_cmn_0` ...).
    pub name: String,
    /// What it is: `intel_imc`, `intel_imc_free_running`, `intel_cha`, `intel_upi`,
    /// `amd_df`, `amd_umc`, `arm_cmn`, or `other_uncore`.
    pub class: String,
    /// perf_event_attr.type (its `type` file).
    pub pmu_type: u32,
    /// CPUs to open it on (its `cpumask`: one per socket or die, usually).
    pub cpus: Vec<u32>,
    /// The sockets (packages) of those CPUs, where known.
    #[serde(default)]
    pub sockets: Vec<u32>,
    /// Named events it lists (`events/`).
    #[serde(default)]
    pub named_events: usize,
    /// General counters per box assumed when grouping (None: free-running or unknown).
    #[serde(default)]
    pub counters: Option<u32>,
    /// Where that number comes from.
    #[serde(default)]
    pub counters_source: String,
}

/// One event of a box as counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventCount {
    /// The event (sysfs name, or numalab's name for an event from its table).
    pub name: String,
    /// What it serves (`cas_read`, `llc_miss`, `clock` ...), or `extra`.
    #[serde(default)]
    pub role: String,
    /// How it was opened: `type=..,config=0x..[,config1=0x..]`.
    pub encoding: String,
    /// The count read (before scaling).
    #[serde(default)]
    pub raw: Option<u64>,
    /// The count scaled to the whole interval: raw * time_enabled / time_running.
    #[serde(default)]
    pub value: Option<f64>,
    /// `counted`, `not_counted_here` (the box's clock read 0 where hardware must
    /// count), `not_scheduled` (never on a counter), `not_opened`, `read_failed`.
    pub state: String,
    /// Why, when not `counted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One perf group on one box (a device on one CPU of its cpumask).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoxCounts {
    /// Device name.
    pub device: String,
    /// Device class (see [`UncoreDevice::class`]).
    pub class: String,
    /// The CPU it was opened on.
    pub cpu: u32,
    /// That CPU's socket.
    #[serde(default)]
    pub socket: Option<u32>,
    /// Group index within the box (0-based; more than one when the events exceed
    /// the box's counters).
    pub group: usize,
    /// Time the group was enabled, ns.
    #[serde(default)]
    pub time_enabled_ns: Option<u64>,
    /// Time it was on counters, ns.
    #[serde(default)]
    pub time_running_ns: Option<u64>,
    /// time_running / time_enabled: below 1 the kernel multiplexed the groups.
    #[serde(default)]
    pub running_fraction: Option<f64>,
    /// Its events.
    pub events: Vec<EventCount>,
}

/// Memory traffic of one controller (Intel iMC channel, AMD UMC, a DF DRAM channel, or
/// a CMN mesh's HN-F to memory requests).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControllerFigures {
    /// What is described: `uncore_imc_3`, `amd_df dram channel 2`, `arm_cmn_0 (all HN-F)`.
    pub controller: String,
    /// Device name.
    pub device: String,
    /// Device class.
    pub class: String,
    /// CPU the box was opened on.
    pub cpu: u32,
    /// Socket.
    #[serde(default)]
    pub socket: Option<u32>,
    /// Interval the counts cover, s (the group's time enabled).
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Smallest running fraction of the groups used.
    #[serde(default)]
    pub running_fraction: Option<f64>,
    /// Bytes read from memory.
    pub read_bytes: Derived,
    /// Bytes written to memory.
    pub write_bytes: Derived,
    /// Bytes read and written.
    pub total_bytes: Derived,
    /// Read bandwidth, GB/s (1e9 bytes per second).
    pub read_gbps: Derived,
    /// Write bandwidth, GB/s.
    pub write_gbps: Derived,
    /// Read + write bandwidth, GB/s.
    pub total_gbps: Derived,
}

/// What one socket's uncore counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketFigures {
    /// Socket (package); None when the CPU-to-package map did not know the CPU.
    pub socket: Option<u32>,
    /// Memory controllers counted on it.
    pub controllers: usize,
    /// Bytes read from its memory.
    pub read_bytes: Derived,
    /// Bytes written to its memory.
    pub write_bytes: Derived,
    /// Bytes read and written.
    pub total_bytes: Derived,
    /// Read bandwidth, GB/s.
    pub read_gbps: Derived,
    /// Write bandwidth, GB/s.
    pub write_gbps: Derived,
    /// Read + write bandwidth, GB/s.
    pub total_gbps: Derived,
    /// LLC/SLC lookups counted (Intel: core requests into the CHAs' TOR; CMN: HN-F
    /// SLC and snoop-filter accesses).
    pub llc_lookups: Derived,
    /// Of which misses.
    pub llc_misses: Derived,
    /// (lookups - misses) / lookups.
    pub llc_hit_ratio: Derived,
    /// Memory directory lookups (Intel CHA, multi-socket directory).
    pub directory_lookups: Derived,
    /// Share of directory lookups that sent snoops.
    pub directory_snoop_share: Derived,
    /// Snoops sent by the home nodes (CMN HN-F directed + broadcast).
    pub snoops_sent: Derived,
    /// Bytes sent over its socket links.
    pub link_tx_bytes: Derived,
    /// Intel's `numa_reads_addressed_to_local_dram`: of the core data reads and LLC
    /// prefetches that missed this socket's CHAs, the share addressed to local DRAM, in
    /// percent (Intel CHA, Ice Lake-SP and later).
    #[serde(default)]
    pub numa_reads_addressed_to_local_dram: Derived,
    /// Intel's `numa_reads_addressed_to_remote_dram`: the share addressed to remote
    /// DRAM, in percent.
    #[serde(default)]
    pub numa_reads_addressed_to_remote_dram: Derived,
    /// All CAS commands of this socket's memory controllers, counted by their own event
    /// beside reads and writes (Intel iMC `UNC_M_CAS_COUNT.ALL`), in bytes (64 per CAS).
    #[serde(default)]
    pub all_cas_bytes: Derived,
    /// The CAS reads as a share of `all_cas_bytes`, in percent (Intel iMC); with
    /// `write_percent_of_all_cas` it sums to 100 when read + write = total holds.
    #[serde(default)]
    pub read_percent_of_all_cas: Derived,
    /// The CAS writes as a share of `all_cas_bytes`, in percent (Intel iMC).
    #[serde(default)]
    pub write_percent_of_all_cas: Derived,
}

/// One socket link end (Intel UPI link, AMD remote link controller).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkFigures {
    /// What is described: `uncore_upi_1`, `amd_df remote link 0`.
    pub link: String,
    /// Device name.
    pub device: String,
    /// Device class.
    pub class: String,
    /// CPU the box was opened on.
    pub cpu: u32,
    /// Socket the link leaves.
    #[serde(default)]
    pub socket: Option<u32>,
    /// Interval, s.
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Running fraction of its group.
    #[serde(default)]
    pub running_fraction: Option<f64>,
    /// Payload bytes sent.
    pub tx_bytes: Derived,
    /// Payload bandwidth sent, GB/s.
    pub tx_gbps: Derived,
}

/// How a figure is computed and where the formula comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Formula {
    /// The figure (`read_bytes (intel_imc)` ...).
    pub figure: String,
    /// The formula.
    pub formula: String,
    /// Its source (kernel file, vendor event file, manual).
    pub source: String,
}

/// An event that could not be opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotOpened {
    /// Device.
    pub device: String,
    /// CPU.
    pub cpu: u32,
    /// Event.
    pub event: String,
    /// `denied`, `not_supported`, `invalid`, `busy`, `unencodable` or `failed`.
    pub kind: String,
    /// The error.
    pub error: String,
}

/// System-wide counting was refused: why and what to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionProblem {
    /// /proc/sys/kernel/perf_event_paranoid (None: not readable).
    #[serde(default)]
    pub paranoid: Option<i32>,
    /// The explanation.
    pub message: String,
    /// The exact remedy.
    pub remedy: String,
}

/// The uncore's view of an interval: what was found, counted and derived.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UncoreReport {
    /// The root the sysfs tree was read under (`/` live, a fixture folder in tests).
    pub sysfs_root: String,
    /// Uncore devices found.
    pub devices: Vec<UncoreDevice>,
    /// The other PMUs the kernel lists (core, software, tracepoint ...).
    #[serde(default)]
    pub other_pmus: Vec<String>,
    /// Counts per box and group.
    #[serde(default)]
    pub boxes: Vec<BoxCounts>,
    /// Figures per memory controller.
    #[serde(default)]
    pub controllers: Vec<ControllerFigures>,
    /// Figures per socket.
    #[serde(default)]
    pub sockets: Vec<SocketFigures>,
    /// Figures per socket link.
    #[serde(default)]
    pub links: Vec<LinkFigures>,
    /// The formulas used, each once.
    #[serde(default)]
    pub formulas: Vec<Formula>,
    /// Events that could not be opened.
    #[serde(default)]
    pub not_opened: Vec<NotOpened>,
    /// Set when the kernel refused system-wide counting.
    #[serde(default)]
    pub permission: Option<PermissionProblem>,
    /// Longest interval counted, s.
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Everything else worth saying (unreadable sysfs files, budgets assumed ...).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl UncoreReport {
    /// Figures of one socket.
    pub fn socket(&self, socket: u32) -> Option<&SocketFigures> {
        self.sockets.iter().find(|s| s.socket == Some(socket))
    }

    /// Figures of one controller by its label.
    pub fn controller(&self, label: &str) -> Option<&ControllerFigures> {
        self.controllers.iter().find(|c| c.controller == label)
    }
}

/// The standalone record (`uncore.counts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UncoreCounts {
    /// What ran while counting (a command, a probe), if anything.
    #[serde(default)]
    pub context: Option<String>,
    /// The counts and figures.
    pub report: UncoreReport,
}

impl RecordKind for UncoreCounts {
    const KIND: &'static str = "uncore.counts";
}

/// A probe's own traffic against the memory controllers' count of the same interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeCheck {
    /// `agree`, `disagree` (beyond the tolerance), or `not_counted` (the controllers
    /// read 0 while the probe moved data).
    pub verdict: String,
    /// Tolerance, percent.
    pub tolerance_pct: f64,
    /// The comparisons made (`read`, `write` or `total`).
    pub sides: Vec<ProbeSide>,
    /// One or two sentences for people.
    pub text: String,
}

impl ProbeCheck {
    /// Whether this is a finding (a disagreement beyond the tolerance).
    pub fn is_finding(&self) -> bool {
        self.verdict == "disagree"
    }
}

/// One direction of a [`ProbeCheck`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSide {
    /// `read`, `write` or `total`.
    pub side: String,
    /// The probe's bandwidth, GB/s.
    pub probe_gbps: f64,
    /// The controllers' bandwidth (all sockets), GB/s.
    pub controllers_gbps: f64,
    /// (controllers - probe) / probe, percent.
    pub difference_pct: f64,
}
