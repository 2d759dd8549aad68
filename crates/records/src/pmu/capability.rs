//! What counting a machine allowed, as the PMU check records it (found by
//! `numalab_pmu::capability::probe`).

use serde::{Deserialize, Serialize};

/// The outcome of trying to open one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "detail")]
pub enum EventStatus {
    /// The event opened and counted.
    Works,
    /// The kernel or the PMU does not implement it (ENOENT, EOPNOTSUPP, ENODEV).
    NotSupported(String),
    /// Permission denied (EACCES, EPERM): see perf_event_paranoid.
    Denied(String),
    /// Some other error.
    Failed(String),
}

impl EventStatus {
    /// Whether the event can be counted.
    pub fn works(&self) -> bool {
        matches!(self, EventStatus::Works)
    }
}

/// What counting is possible here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capability {
    /// `kernel.perf_event_paranoid`, if readable.
    pub paranoid: Option<i32>,
    /// Whether we run with CAP_PERFMON/CAP_SYS_ADMIN (root), which overrides paranoid.
    pub privileged: bool,
    /// CPU cycles (hardware).
    pub cycles: EventStatus,
    /// Instructions retired (hardware).
    pub instructions: EventStatus,
    /// Task clock (software).
    pub task_clock: EventStatus,
    /// Page faults (software).
    pub page_faults: EventStatus,
    /// Context switches (software).
    pub context_switches: EventStatus,
    /// The PMUs the kernel lists under /sys/bus/event_source/devices.
    pub pmus: Vec<String>,
}

impl Capability {
    /// Whether a hardware PMU can count cycles and instructions.
    pub fn hardware_pmu(&self) -> bool {
        self.cycles.works() && self.instructions.works()
    }

    /// A sentence for people: what works and what does not.
    pub fn verdict(&self) -> String {
        if self.hardware_pmu() {
            "hardware counters work (cycles and instructions counted)".into()
        } else if matches!(self.cycles, EventStatus::Denied(_)) {
            format!(
                "hardware counters exist but are denied (perf_event_paranoid = {}); counting this process's own user-space events needs paranoid <= 2, kernel events <= 1, system-wide <= 0",
                self.paranoid.map_or("unknown".into(), |p| p.to_string())
            )
        } else if self.task_clock.works() {
            "no hardware PMU is exposed here (common in VMs and containers): only software events (task clock, page faults, context switches, migrations) can be counted; recorded counts from another machine can still be analysed offline".into()
        } else {
            "no performance counting is possible here (perf_event_open fails even for software events)".into()
        }
    }
}
