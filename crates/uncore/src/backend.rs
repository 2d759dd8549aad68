//! Opening uncore counters system-wide, behind a trait.
//!
//! Uncore PMUs count for a whole socket (or die, or mesh), not for a task: they are
//! opened with pid = -1 on one CPU of the device's `cpumask` (perf_event_open(2):
//! "pid == -1 and cpu >= 0 measures all processes on the specified CPU"), and they
//! refuse exclusion bits (the drivers set PERF_PMU_CAP_NO_EXCLUDE), so user and
//! kernel are both counted. [`PerfBackend`] does that with `numalab-perfopen`;
//! [`ReplayBackend`] replays given counts so planning, scaling and the derived figures
//! are tested on machines without uncore PMUs (this development VM has none).

use crate::sysfs::Encoding;
use numalab_perfopen as perfopen;
use numalab_perfopen::{Group, MemberStatus};
use std::collections::HashMap;

/// One event to open.
#[derive(Debug, Clone, PartialEq)]
pub struct EventSpec {
    /// Name (for reports and replay).
    pub name: String,
    /// Encoding.
    pub encoding: Encoding,
}

/// One group to open on one CPU (the first event leads).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSpec {
    /// Device name.
    pub device: String,
    /// CPU.
    pub cpu: u32,
    /// Events.
    pub events: Vec<EventSpec>,
}

/// Why an event could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenErrorKind {
    /// EACCES / EPERM: not allowed (perf_event_paranoid, capabilities, seccomp).
    Denied,
    /// ENOENT / ENODEV / EOPNOTSUPP: the PMU does not have it.
    NotSupported,
    /// EINVAL: a field out of range, or a group larger than the box's counters.
    Invalid,
    /// EBUSY: the counters are taken (another tool, the NMI watchdog).
    Busy,
    /// Anything else.
    Failed,
}

impl OpenErrorKind {
    /// The name records use.
    pub fn key(self) -> &'static str {
        match self {
            OpenErrorKind::Denied => "denied",
            OpenErrorKind::NotSupported => "not_supported",
            OpenErrorKind::Invalid => "invalid",
            OpenErrorKind::Busy => "busy",
            OpenErrorKind::Failed => "failed",
        }
    }

    /// Classifies an errno (by [`perfopen::Failure`]).
    pub fn of_errno(errno: i32) -> Self {
        OpenErrorKind::of_failure(perfopen::Failure::of_errno(errno))
    }

    /// The kind of a failure's class: too many events, a missing task and any other
    /// errno are all failed.
    pub fn of_failure(failure: perfopen::Failure) -> Self {
        match failure {
            perfopen::Failure::Denied => OpenErrorKind::Denied,
            perfopen::Failure::NotSupported => OpenErrorKind::NotSupported,
            perfopen::Failure::Invalid => OpenErrorKind::Invalid,
            perfopen::Failure::Busy => OpenErrorKind::Busy,
            perfopen::Failure::TooMany
            | perfopen::Failure::NoSuchTask
            | perfopen::Failure::Other => OpenErrorKind::Failed,
        }
    }
}

/// An event that did not open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError {
    /// Kind.
    pub kind: OpenErrorKind,
    /// errno, when there was one.
    pub errno: Option<i32>,
    /// The message.
    pub message: String,
}

impl OpenError {
    /// From an errno.
    pub fn from_errno(errno: i32) -> Self {
        OpenError {
            kind: OpenErrorKind::of_errno(errno),
            errno: Some(errno),
            message: {
                let m = std::io::Error::from_raw_os_error(errno).to_string();
                match m.find(" (os error") {
                    Some(i) => m[..i].to_string(),
                    None => m,
                }
            },
        }
    }

    fn from_io(e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(n) => OpenError::from_errno(n),
            None => OpenError {
                kind: OpenErrorKind::Failed,
                errno: None,
                message: e.to_string(),
            },
        }
    }
}

/// One group's reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// Time enabled, ns.
    pub time_enabled_ns: u64,
    /// Time on counters, ns.
    pub time_running_ns: u64,
    /// Raw count per event (None where it did not open).
    pub counts: Vec<Option<u64>>,
}

/// Opened groups.
pub trait Opened {
    /// Per group, per event: whether it opened.
    fn statuses(&self) -> Vec<Vec<Result<(), OpenError>>>;
    /// Starts every group.
    fn enable(&mut self) -> Result<(), String>;
    /// Stops every group.
    fn disable(&mut self) -> Result<(), String>;
    /// Reads every group.
    fn read(&mut self) -> Vec<Result<Reading, String>>;
}

/// The counting hardware (or its replay).
pub trait Backend {
    /// Opens the groups, disabled (Send: a session may be started and stopped by a
    /// measuring thread). Events that do not open are reported by
    /// [`Opened::statuses`], not as an error.
    fn open(&mut self, groups: &[GroupSpec]) -> Box<dyn Opened + Send>;
}

/// Real counters through perf_event_open (`numalab-perfopen`, on `perf-event2`).
#[derive(Debug, Default)]
pub struct PerfBackend;

/// Per group spec, the opened group and each member's status.
struct PerfOpened {
    groups: Vec<(Group, Vec<Result<(), OpenError>>)>,
}

/// The encoding of an event to the kernel: the box's PMU type and its config words.
fn perf_encoding(e: &EventSpec) -> perfopen::Encoding {
    perfopen::Encoding {
        pmu_type: e.encoding.pmu_type,
        config: e.encoding.config,
    }
}

impl Backend for PerfBackend {
    fn open(&mut self, groups: &[GroupSpec]) -> Box<dyn Opened + Send> {
        let mut out = Vec::new();
        for g in groups {
            // Every process on one CPU of the box, nothing excluded, disabled until the
            // session enables the group.
            let target = perfopen::Target::Cpu(g.cpu as usize);
            let members = g.events.iter().map(|e| {
                Some(perfopen::builder(
                    &perf_encoding(e),
                    target,
                    perfopen::Exclude::NOTHING,
                ))
            });
            let (group, statuses) = Group::open(members, perfopen::Start::Disabled);
            let statuses = statuses
                .into_iter()
                .map(|s| match s {
                    MemberStatus::Failed(err) => Err(OpenError::from_io(&err)),
                    MemberStatus::Opened | MemberStatus::NotAnEvent => Ok(()),
                })
                .collect();
            out.push((group, statuses));
        }
        Box::new(PerfOpened { groups: out })
    }
}

impl Opened for PerfOpened {
    fn statuses(&self) -> Vec<Vec<Result<(), OpenError>>> {
        self.groups.iter().map(|(_, st)| st.clone()).collect()
    }

    fn enable(&mut self) -> Result<(), String> {
        for (g, _) in &mut self.groups {
            g.enable().map_err(|e| format!("enabling a group: {e}"))?;
        }
        Ok(())
    }

    fn disable(&mut self) -> Result<(), String> {
        for (g, _) in &mut self.groups {
            g.disable().map_err(|e| format!("disabling a group: {e}"))?;
        }
        Ok(())
    }

    fn read(&mut self) -> Vec<Result<Reading, String>> {
        self.groups
            .iter_mut()
            .map(|(g, _)| {
                g.read().map(|v| Reading {
                    time_enabled_ns: v.time_enabled_ns,
                    time_running_ns: v.time_running_ns,
                    counts: v.counts,
                })
            })
            .collect()
    }
}

/// One event's replayed behaviour.
#[derive(Debug, Clone, PartialEq)]
pub enum Replay {
    /// Counted: the count over the whole interval (before multiplexing).
    Count(u64),
    /// Refused with this errno.
    Error(i32),
}

/// Replays given counts. Keys are (device, cpu, event name); `any_cpu` entries
/// (device, event) apply to every CPU. A box holding k groups is on counters 1/k of
/// the time (the kernel's round-robin), unless `fraction` fixes it; the raw counts
/// returned are the full counts times that fraction, as the hardware would give.
#[derive(Debug, Clone)]
pub struct ReplayBackend {
    /// Per (device, cpu, event).
    pub counts: HashMap<(String, u32, String), Replay>,
    /// Per (device, event), any CPU.
    pub any_cpu: HashMap<(String, String), Replay>,
    /// What events not listed do (None: ENOENT).
    pub default: Option<Replay>,
    /// Every open fails with this errno (to test refusals).
    pub refuse_all: Option<i32>,
    /// Interval, ns.
    pub enabled_ns: u64,
    /// Fixed running fraction per (device, cpu), overriding 1/k.
    pub fraction: HashMap<(String, u32), f64>,
    /// The groups asked for (to check plans).
    pub asked: Vec<GroupSpec>,
}

impl Default for ReplayBackend {
    fn default() -> Self {
        ReplayBackend {
            counts: HashMap::new(),
            any_cpu: HashMap::new(),
            default: None,
            refuse_all: None,
            enabled_ns: 1_000_000_000,
            fraction: HashMap::new(),
            asked: Vec::new(),
        }
    }
}

impl ReplayBackend {
    /// A backend whose interval is `seconds`.
    pub fn new(seconds: f64) -> Self {
        ReplayBackend {
            enabled_ns: (seconds * 1e9).round() as u64,
            ..Default::default()
        }
    }

    /// Sets the count of an event on one CPU of a device.
    pub fn set(&mut self, device: &str, cpu: u32, event: &str, value: u64) -> &mut Self {
        self.counts
            .insert((device.into(), cpu, event.into()), Replay::Count(value));
        self
    }

    /// Sets the count of an event on every CPU of a device.
    pub fn set_all(&mut self, device: &str, event: &str, value: u64) -> &mut Self {
        self.any_cpu
            .insert((device.into(), event.into()), Replay::Count(value));
        self
    }

    /// Makes an event fail with `errno` on every CPU of a device.
    pub fn fail(&mut self, device: &str, event: &str, errno: i32) -> &mut Self {
        self.any_cpu
            .insert((device.into(), event.into()), Replay::Error(errno));
        self
    }

    fn lookup(&self, device: &str, cpu: u32, event: &str) -> Replay {
        if let Some(e) = self.refuse_all {
            return Replay::Error(e);
        }
        self.counts
            .get(&(device.to_string(), cpu, event.to_string()))
            .or_else(|| self.any_cpu.get(&(device.to_string(), event.to_string())))
            .cloned()
            .or_else(|| self.default.clone())
            .unwrap_or(Replay::Error(libc::ENOENT))
    }
}

struct ReplayOpened {
    statuses: Vec<Vec<Result<(), OpenError>>>,
    readings: Vec<Result<Reading, String>>,
}

impl Backend for ReplayBackend {
    fn open(&mut self, groups: &[GroupSpec]) -> Box<dyn Opened + Send> {
        self.asked.extend(groups.iter().cloned());
        let mut per_box: HashMap<(String, u32), usize> = HashMap::new();
        for g in groups {
            *per_box.entry((g.device.clone(), g.cpu)).or_default() += 1;
        }
        let mut statuses = Vec::new();
        let mut readings = Vec::new();
        for g in groups {
            let key = (g.device.clone(), g.cpu);
            let fraction = self
                .fraction
                .get(&key)
                .copied()
                .unwrap_or(1.0 / per_box[&key] as f64);
            let running = (self.enabled_ns as f64 * fraction).round() as u64;
            let mut st = Vec::new();
            let mut counts = Vec::new();
            for e in &g.events {
                match self.lookup(&g.device, g.cpu, &e.name) {
                    Replay::Count(v) => {
                        st.push(Ok(()));
                        counts.push(Some((v as f64 * fraction).round() as u64));
                    }
                    Replay::Error(errno) => {
                        st.push(Err(OpenError::from_errno(errno)));
                        counts.push(None);
                    }
                }
            }
            if st.iter().any(|s| s.is_ok()) {
                readings.push(Ok(Reading {
                    time_enabled_ns: self.enabled_ns,
                    time_running_ns: running,
                    counts,
                }));
            } else {
                readings.push(Err("no event of the group could be opened".into()));
            }
            statuses.push(st);
        }
        Box::new(ReplayOpened { statuses, readings })
    }
}

impl Opened for ReplayOpened {
    fn statuses(&self) -> Vec<Vec<Result<(), OpenError>>> {
        self.statuses.clone()
    }

    fn enable(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn disable(&mut self) -> Result<(), String> {
        Ok(())
    }

    fn read(&mut self) -> Vec<Result<Reading, String>> {
        self.readings.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_errno_keeps_the_kind_it_had() {
        // The kinds before the classification moved to numalab-perfopen.
        let table = [
            (libc::EACCES, OpenErrorKind::Denied),
            (libc::EPERM, OpenErrorKind::Denied),
            (libc::ENOENT, OpenErrorKind::NotSupported),
            (libc::ENODEV, OpenErrorKind::NotSupported),
            (libc::EOPNOTSUPP, OpenErrorKind::NotSupported),
            (libc::EINVAL, OpenErrorKind::Invalid),
            (libc::EBUSY, OpenErrorKind::Busy),
            (libc::EMFILE, OpenErrorKind::Failed),
            (libc::ENFILE, OpenErrorKind::Failed),
            (libc::ENOSPC, OpenErrorKind::Failed),
            (libc::ESRCH, OpenErrorKind::Failed),
            (libc::E2BIG, OpenErrorKind::Failed),
            (libc::EIO, OpenErrorKind::Failed),
        ];
        for (errno, kind) in table {
            assert_eq!(OpenErrorKind::of_errno(errno), kind, "errno {errno}");
            assert_eq!(OpenError::from_errno(errno).kind, kind, "errno {errno}");
        }
        let e = std::io::Error::other("no errno");
        assert_eq!(OpenError::from_io(&e).kind, OpenErrorKind::Failed);
    }
}
