//! What counting this machine allows, found by trying (perf_event_open on this
//! process) rather than guessing from the CPU model.

use perf_event::events::{Hardware, Software};
use perf_event::Builder;
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
    pub(crate) fn from_error(e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOENT)
            | Some(libc::EOPNOTSUPP)
            | Some(libc::ENODEV)
            | Some(libc::EINVAL) => EventStatus::NotSupported(e.to_string()),
            Some(libc::EACCES) | Some(libc::EPERM) => EventStatus::Denied(e.to_string()),
            _ => EventStatus::Failed(e.to_string()),
        }
    }

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

fn try_event(builder: &mut Builder<'_>) -> EventStatus {
    match builder
        .observe_self()
        .any_cpu()
        .exclude_kernel(true)
        .exclude_hv(true)
        .build()
    {
        Ok(mut counter) => {
            let ok = counter.enable().and_then(|_| {
                // A little work so that the counter moves.
                let mut x = 0u64;
                for i in 0..10_000u64 {
                    x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
                }
                std::hint::black_box(x);
                counter.disable()?;
                counter.read()
            });
            match ok {
                Ok(_) => EventStatus::Works,
                Err(e) => EventStatus::from_error(&e),
            }
        }
        Err(e) => EventStatus::from_error(&e),
    }
}

/// Probes this machine.
pub fn probe() -> Capability {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let privileged = probe_is_root();
    let mut pmus: Vec<String> = std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    pmus.sort();
    Capability {
        paranoid,
        privileged,
        cycles: try_event(&mut Builder::new(Hardware::CPU_CYCLES)),
        instructions: try_event(&mut Builder::new(Hardware::INSTRUCTIONS)),
        task_clock: try_event(&mut Builder::new(Software::TASK_CLOCK)),
        page_faults: try_event(&mut Builder::new(Software::PAGE_FAULTS)),
        context_switches: try_event(&mut Builder::new(Software::CONTEXT_SWITCHES)),
        pmus,
    }
}

/// Whether this process runs as root (which overrides perf_event_paranoid).
pub fn probe_is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_task_clock_counts_here() {
        // Every Linux machine numalab supports has software events, including this
        // PMU-less VM; hardware events may or may not work and are only reported.
        let c = probe();
        assert!(c.task_clock.works(), "{c:?}");
        assert!(!c.verdict().is_empty());
    }

    #[test]
    fn errno_classification() {
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert!(matches!(
            EventStatus::from_error(&e),
            EventStatus::NotSupported(_)
        ));
        let e = std::io::Error::from_raw_os_error(libc::EACCES);
        assert!(matches!(
            EventStatus::from_error(&e),
            EventStatus::Denied(_)
        ));
    }
}
