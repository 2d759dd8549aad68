//! Counting a child process: which events go together, and perf_event_open behind a
//! trait.
//!
//! A core has a handful of programmable counters (Neoverse N1: 6, plus a fixed cycle
//! counter). Two collection modes follow from that (pmu-methodology.md):
//!
//! - default: one run; the events of each metric form one perf group, so a metric's
//!   ratio is always taken over the same time slices; the kernel time-multiplexes the
//!   groups and each value carries its `time_running / time_enabled` fraction;
//! - `--exact`: groups of at most N programmable events, each with cycles and
//!   instructions, one run of the workload per group (no multiplexing; the run-to-run
//!   spread of cycles and instructions says how comparable the runs are).
//!
//! [`Backend`] is the hardware touch point: [`PerfBackend`] opens real counters with the
//! `numalab-perfopen` crate on `perf-event2` (attached to a gated child before `exec`, `inherit` so threads and
//! children are counted, `enable_on_exec` so counting starts exactly at `exec`);
//! [`ReplayBackend`] replays given counts, so planning, scaling and reporting are tested
//! on machines without a PMU, like the development VM.

use crate::capability::EventStatus;
use crate::catalog::{Catalog, Encoding, EventRef};
use numalab_perfopen as perfopen;
use numalab_perfopen::{Group, MemberStatus};
use numalab_schema::Warning;
use std::collections::HashMap;

mod replay;
pub use replay::{Replay, ReplayBackend};

/// Software events counted on every run (no PMU needed).
pub const SOFTWARE_DEFAULT: &[&str] = &[
    "TASK_CLOCK",
    "CONTEXT_SWITCHES",
    "CPU_MIGRATIONS",
    "PAGE_FAULTS",
    "DURATION_TIME",
];

/// A group of events counted together.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanGroup {
    /// The run (0-based) it is counted in.
    pub run: usize,
    /// Its events (the first is the group leader).
    pub events: Vec<EventRef>,
    /// The metrics it serves.
    pub metrics: Vec<String>,
}

/// What to count, in how many runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Hardware (PMU) groups.
    pub groups: Vec<PlanGroup>,
    /// Software events, counted one by one in every run.
    pub software: Vec<EventRef>,
    /// Number of runs.
    pub runs: usize,
    /// Programmable counters assumed.
    pub counters: usize,
    /// Problems found while planning.
    pub warnings: Vec<Warning>,
}

/// Hardware events per metric, extra hardware events, software events.
type Needed = (Vec<(String, Vec<EventRef>)>, Vec<EventRef>, Vec<EventRef>);

/// Collects the hardware and software events of the metrics and the extra events.
fn needed(catalog: &Catalog, metrics: &[String], extra: &[EventRef]) -> Needed {
    let resolve = |n: &str| -> Option<EventRef> {
        catalog.event(n).map(|e| EventRef {
            name: e.name.clone(),
            encoding: e.encoding,
        })
    };
    let mut per_metric = Vec::new();
    let mut software: Vec<EventRef> = SOFTWARE_DEFAULT.iter().filter_map(|n| resolve(n)).collect();
    for m in metrics {
        let Some(def) = catalog.metric(m) else {
            continue;
        };
        let mut hw = Vec::new();
        for e in def.events() {
            let Some(r) = resolve(&e) else { continue };
            if r.encoding.is_software() {
                if !software.contains(&r) {
                    software.push(r);
                }
            } else {
                hw.push(r);
            }
        }
        if !hw.is_empty() {
            per_metric.push((m.clone(), hw));
        }
    }
    let mut extra_hw = Vec::new();
    for e in extra {
        if e.encoding.is_software() {
            if !software.contains(e) {
                software.push(e.clone());
            }
        } else if !extra_hw.contains(e) {
            extra_hw.push(e.clone());
        }
    }
    (per_metric, extra_hw, software)
}

fn programmable(catalog: &Catalog, events: &[EventRef]) -> usize {
    events.iter().filter(|e| !catalog.is_fixed(&e.name)).count()
}

/// One run, one group per metric (identical groups merged), extra events one group
/// each: the fallback of default mode's packed plan ([`split_failed_groups`]). A metric with more programmable events than counters is split (its
/// ratio then mixes time slices: a warning says so).
pub fn plan_default(
    catalog: &Catalog,
    metrics: &[String],
    extra: &[EventRef],
    counters: usize,
) -> Plan {
    let (per_metric, extra_hw, software) = needed(catalog, metrics, extra);
    let mut groups: Vec<PlanGroup> = Vec::new();
    let mut warnings = Vec::new();
    let add = |events: Vec<EventRef>, metric: Option<&str>, groups: &mut Vec<PlanGroup>| {
        if let Some(g) = groups.iter_mut().find(|g| g.events == events) {
            if let Some(m) = metric {
                g.metrics.push(m.to_string());
            }
            return;
        }
        groups.push(PlanGroup {
            run: 0,
            events,
            metrics: metric.map(|m| vec![m.to_string()]).unwrap_or_default(),
        });
    };
    for (m, hw) in per_metric {
        if programmable(catalog, &hw) <= counters {
            add(hw, Some(&m), &mut groups);
        } else {
            warnings.push(Warning::new(
                "pmu.group_too_large",
                format!(
                    "metric {m} needs {} programmable counters but the PMU has {counters}: its events are counted in separate groups, so its ratio mixes time slices",
                    programmable(catalog, &hw)
                ),
            ).with_remedy("use --exact"));
            for chunk in chunk_programmable(catalog, &hw, counters) {
                add(chunk, Some(&m), &mut groups);
            }
        }
    }
    for e in extra_hw {
        if !groups
            .iter()
            .any(|g| g.events.len() == 1 && g.events[0] == e)
        {
            add(vec![e], None, &mut groups);
        }
    }
    Plan {
        groups,
        software,
        runs: 1,
        counters,
        warnings,
    }
}

fn chunk_programmable(
    catalog: &Catalog,
    events: &[EventRef],
    counters: usize,
) -> Vec<Vec<EventRef>> {
    let mut out: Vec<Vec<EventRef>> = vec![Vec::new()];
    for e in events {
        let last = out.last_mut().expect("non-empty");
        let fixed = catalog.is_fixed(&e.name);
        if !fixed && programmable(catalog, last) >= counters {
            out.push(vec![e.clone()]);
        } else {
            last.push(e.clone());
        }
    }
    out
}

/// `--exact`: groups of at most `counters` programmable events, each holding cycles and
/// instructions, one run per group. A metric's events are kept in one group whenever
/// they fit (first fit, largest metrics first), so its ratio comes from one run.
pub fn plan_exact(
    catalog: &Catalog,
    metrics: &[String],
    extra: &[EventRef],
    counters: usize,
) -> Result<Plan, String> {
    let (per_metric, extra_hw, software) = needed(catalog, metrics, extra);
    let anchors: Vec<EventRef> = catalog
        .anchors()
        .iter()
        .filter_map(|n| catalog.event(n))
        .map(|e| EventRef {
            name: e.name.clone(),
            encoding: e.encoding,
        })
        .collect();
    let anchor_slots = programmable(catalog, &anchors);
    if anchor_slots >= counters {
        return Err(format!(
            "--exact needs more than {anchor_slots} programmable counters (cycles and instructions take {anchor_slots}); this PMU has {counters}"
        ));
    }
    let free = counters - anchor_slots;
    // Units to place: each metric's non-anchor events, then each extra event.
    let mut units: Vec<Unit> = per_metric
        .into_iter()
        .map(|(m, hw)| {
            (
                Some(m),
                hw.into_iter()
                    .filter(|e| !anchors.contains(e))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    units.extend(
        extra_hw
            .into_iter()
            .filter(|e| !anchors.contains(e))
            .map(|e| (None, vec![e])),
    );
    let (mut bins, split) = first_fit(catalog, units, free);
    let warnings = split
        .iter()
        .map(|m| {
            Warning::new(
                "pmu.metric_across_runs",
                format!(
                    "metric {m} needs more counters than one run has: its events come from different runs, normalised by each run's instructions"
                ),
            )
        })
        .collect();
    if bins.is_empty() {
        // Only cycles and instructions (or only software events) were asked for.
        bins.push((Vec::new(), Vec::new()));
    }
    let groups = bins
        .into_iter()
        .enumerate()
        .map(|(run, (evs, ms))| {
            let mut events = anchors.clone();
            events.extend(evs);
            PlanGroup {
                run,
                events,
                metrics: ms,
            }
        })
        .collect::<Vec<_>>();
    Ok(Plan {
        runs: groups.len(),
        groups,
        software,
        counters,
        warnings,
    })
}

/// Events to place together, with the metric they serve (None: an extra event).
type Unit = (Option<String>, Vec<EventRef>);

/// A group being filled: its events and the metrics it serves.
type Bin = (Vec<EventRef>, Vec<String>);

/// Places `units` into groups of at most `free` programmable events: first fit,
/// largest unit first, a unit's events kept together (events already in a group are
/// not counted twice); a unit too large for one group is split. Returns the groups
/// (events, metrics served) and the metrics that had to be split.
fn first_fit(catalog: &Catalog, mut units: Vec<Unit>, free: usize) -> (Vec<Bin>, Vec<String>) {
    units.sort_by_key(|(_, evs)| std::cmp::Reverse(programmable(catalog, evs)));
    let mut bins: Vec<Bin> = Vec::new();
    let mut split = Vec::new();
    for (metric, evs) in units {
        let mut placed = false;
        for (bin, ms) in bins.iter_mut() {
            let mut union = bin.clone();
            for e in &evs {
                if !union.contains(e) {
                    union.push(e.clone());
                }
            }
            if programmable(catalog, &union) <= free {
                *bin = union;
                if let Some(m) = &metric {
                    ms.push(m.clone());
                }
                placed = true;
                break;
            }
        }
        if placed {
            continue;
        }
        if programmable(catalog, &evs) <= free {
            bins.push((evs, metric.into_iter().collect()));
        } else {
            split.extend(metric.iter().cloned());
            for chunk in chunk_programmable(catalog, &evs, free) {
                bins.push((chunk, metric.iter().cloned().collect()));
            }
        }
    }
    (bins, split)
}

/// The planner of multiplexing (`mux`), default mode's plan: the events of `metrics`
/// and `extra` packed into as few groups as `counters` programmable counters allow
/// (fixed-counter events take none), each metric's events in one group wherever they
/// fit; one run, so the groups take turns on the counters. A metric too large for the
/// counters is split, and a `pmu.group_too_large` warning says so. Each group lists
/// every metric it serves. It needs fewer groups than one per metric
/// ([`plan_default`]), so each is counted a larger share of the run.
pub fn plan_packed(
    catalog: &Catalog,
    metrics: &[String],
    extra: &[EventRef],
    counters: usize,
) -> Plan {
    plan_packed_with(catalog, metrics, extra, counters, 0)
}

/// [`plan_packed`] leaving `headroom` programmable counters free in every group that
/// holds more than one metric (a counter the NMI watchdog holds: a full group would
/// never be scheduled). A metric that needs more than `counters - headroom` but no more
/// than `counters` gets a group of its own, as one group per metric would give it.
pub fn plan_packed_with(
    catalog: &Catalog,
    metrics: &[String],
    extra: &[EventRef],
    counters: usize,
    headroom: usize,
) -> Plan {
    let (per_metric, extra_hw, software) = needed(catalog, metrics, extra);
    let room = counters.saturating_sub(headroom).max(1);
    let mut units: Vec<Unit> = Vec::new();
    let mut alone: Vec<Bin> = Vec::new();
    for (m, hw) in per_metric {
        let n = programmable(catalog, &hw);
        if n > room && n <= counters {
            alone.push((hw, vec![m]));
        } else {
            units.push((Some(m), hw));
        }
    }
    units.extend(extra_hw.into_iter().map(|e| (None, vec![e])));
    let (mut bins, split) = first_fit(catalog, units, room);
    bins.extend(alone);
    let warnings = split
        .iter()
        .map(|m| {
            Warning::new(
                "pmu.group_too_large",
                format!(
                    "metric {m} needs more than the {counters} programmable counters: its events are counted in separate groups, so its ratio mixes time slices"
                ),
            )
            .with_remedy("use --exact")
        })
        .collect();
    Plan {
        groups: bins
            .into_iter()
            .map(|(events, metrics)| PlanGroup {
                run: 0,
                events,
                metrics,
            })
            .collect(),
        software,
        runs: 1,
        counters,
        warnings,
    }
}

/// The hardware events of metric `m` (none when the catalog lacks it).
fn hardware_of(catalog: &Catalog, m: &str) -> Vec<EventRef> {
    catalog
        .metric(m)
        .map(|d| d.events())
        .unwrap_or_default()
        .iter()
        .filter_map(|n| catalog.event(n))
        .filter(|e| !e.encoding.is_software())
        .map(|e| EventRef {
            name: e.name.clone(),
            encoding: e.encoding,
        })
        .collect()
}

/// The fallback of packing: in each group of `plan` in which an event failed to open
/// (`statuses`, per group, as [`Backend::probe`] gives them), the metrics that need a
/// failed event (and the failed extra events) leave the group and get the groups one
/// group per metric gives them ([`plan_default`]); the other metrics keep the packed
/// group, without the failed events. So an event that cannot be opened beside the
/// others (unsupported, or a counter constraint the kernel refuses in one group) costs
/// no other metric anything, and its own metric is planned as without packing.
/// Returns the metrics and extra events moved out.
pub fn split_failed_groups(
    catalog: &Catalog,
    plan: &mut Plan,
    statuses: &[Vec<OpenStatus>],
) -> Vec<String> {
    let mut moved = Vec::new();
    let mut groups = Vec::new();
    for (i, g) in std::mem::take(&mut plan.groups).into_iter().enumerate() {
        let failed: Vec<&EventRef> = match statuses.get(i) {
            Some(st) => g
                .events
                .iter()
                .zip(st)
                .filter(|(_, s)| !s.works())
                .map(|(e, _)| e)
                .collect(),
            None => Vec::new(),
        };
        let served: Vec<(String, Vec<EventRef>)> = g
            .metrics
            .iter()
            .map(|m| (m.clone(), hardware_of(catalog, m)))
            .collect();
        let extra: Vec<&EventRef> = g
            .events
            .iter()
            .filter(|e| !served.iter().any(|(_, evs)| evs.contains(e)))
            .collect();
        if failed.is_empty() || served.len() + extra.len() <= 1 {
            groups.push(g);
            continue;
        }
        let (hit, kept): (Vec<_>, Vec<_>) = served
            .into_iter()
            .partition(|(_, evs)| evs.iter().any(|e| failed.contains(&e)));
        let hit_extra: Vec<EventRef> = extra
            .iter()
            .filter(|e| failed.contains(e))
            .map(|e| (*e).clone())
            .collect();
        let keep = |e: &EventRef| {
            !failed.contains(&e)
                && (kept.iter().any(|(_, evs)| evs.contains(e)) || extra.contains(&e))
        };
        let rest: Vec<EventRef> = g.events.iter().filter(|e| keep(e)).cloned().collect();
        if !rest.is_empty() {
            groups.push(PlanGroup {
                run: g.run,
                events: rest,
                metrics: kept.iter().map(|(m, _)| m.clone()).collect(),
            });
        }
        let hit: Vec<String> = hit.into_iter().map(|(m, _)| m).collect();
        let apart = plan_default(catalog, &hit, &hit_extra, plan.counters);
        moved.extend(hit.iter().cloned());
        moved.extend(hit_extra.iter().map(|e| e.name.clone()));
        groups.extend(apart.groups.into_iter().map(|mut a| {
            a.run = g.run;
            a
        }));
    }
    plan.groups = groups;
    moved
}

/// The kernel's rule for Intel's PERF_METRICS (`topdown-*`) events: they are read only
/// in a group led by `slots` (TOPDOWN.SLOTS). Every planned group holding one gets the
/// slots event, as its leader (anchors such as cycles and instructions follow it).
/// Neither takes a programmable counter (slots is fixed counter 3, the metrics are
/// fields of the PERF_METRICS register), so no group grows beyond the counters.
pub fn slots_lead_topdown_groups(catalog: &Catalog, plan: &mut Plan) {
    let Some(slots) = catalog
        .events
        .iter()
        .find(|e| e.encoding == Encoding::Raw(crate::catalog::SLOTS_CONFIG))
    else {
        return;
    };
    let slots = EventRef {
        name: slots.name.clone(),
        encoding: slots.encoding,
    };
    for g in &mut plan.groups {
        if !g
            .events
            .iter()
            .any(|e| crate::catalog::is_topdown_metric(&e.encoding))
        {
            continue;
        }
        g.events.retain(|e| *e != slots);
        g.events.insert(0, slots.clone());
    }
}

/// Whether counting includes the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    /// Count kernel-mode work too (needs perf_event_paranoid <= 1 or CAP_PERFMON).
    pub include_kernel: bool,
    /// perf_event_attr.type for raw events: the core PMU's dynamic type from sysfs
    /// (Arm: `armv8_pmuv3*/type`); None: PERF_TYPE_RAW, which the kernel hands to the
    /// first CPU PMU that accepts it (on big.LITTLE, only one of them).
    pub raw_type: Option<u32>,
}

/// The outcome of opening one event.
pub type OpenStatus = EventStatus;

/// One group's reading.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupReading {
    /// Time the group was enabled, ns.
    pub time_enabled_ns: u64,
    /// Time it was on counters, ns.
    pub time_running_ns: u64,
    /// Count per event (None where the event did not open).
    pub counts: Vec<Option<u64>>,
}

/// What the counters watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A gated child that has not exec'd yet: counting starts at its exec and follows
    /// its threads and children (`inherit`).
    Child(i32),
    /// The threads of a running process (`--pid`): one counter set per thread, enabled
    /// at once, each following the threads and children it creates from then on.
    Threads(Vec<i32>),
    /// Every process on these CPUs (`--all-cpus`): one counter set per CPU, enabled at
    /// once (needs perf_event_paranoid <= 0 or CAP_PERFMON).
    Cpus(Vec<usize>),
}

impl Target {
    /// Counter sets opened per group.
    pub fn instances(&self) -> usize {
        match self {
            Target::Child(_) => 1,
            Target::Threads(t) => t.len(),
            Target::Cpus(c) => c.len(),
        }
    }
}

/// Opened counters on one run of the child (or one attachment).
pub trait Session {
    /// Per group, per event: whether it opened (on every instance: an event that failed
    /// on one thread or CPU shows that instance's error).
    fn statuses(&self) -> Vec<Vec<OpenStatus>>;
    /// Reads every group, summed over instances (threads, CPUs). Counts are cumulative:
    /// reading while counting runs gives the counts so far (interval mode).
    fn read(&mut self) -> Vec<Result<GroupReading, String>>;
}

/// The counting hardware (or its replay).
pub trait Backend {
    /// Opens `groups` on `target`. For [`Target::Child`] counting starts at the child's
    /// exec; for the others at once. Events that cannot be opened are reported in
    /// [`Session::statuses`], not as an error.
    fn open(
        &mut self,
        target: &Target,
        groups: &[Vec<EventRef>],
        opts: OpenOptions,
    ) -> Box<dyn Session>;

    /// Which members of `groups` open here, counting nothing that is kept: the groups
    /// are opened on the calling thread, user space only, and closed at once. The
    /// planner's check that a packed group loses no event ([`split_failed_groups`]).
    fn probe(&mut self, groups: &[Vec<EventRef>], raw_type: Option<u32>) -> Vec<Vec<OpenStatus>> {
        let opts = OpenOptions {
            include_kernel: false,
            raw_type,
        };
        // pid 0: the calling thread.
        self.open(&Target::Threads(vec![0]), groups, opts)
            .statuses()
    }
}

/// Real counters through perf_event_open (`numalab-perfopen`, on the `perf-event2` crate).
#[derive(Debug, Default)]
pub struct PerfBackend;

/// One opened group on one instance, with its members' statuses.
struct PerfGroup {
    group: Group,
    statuses: Vec<OpenStatus>,
}

struct PerfSession {
    /// Per planned group, one opened group per instance (thread or CPU).
    groups: Vec<Vec<PerfGroup>>,
}

/// Where one counter set is opened.
#[derive(Clone, Copy)]
enum Instance {
    /// A gated child: enabled by its exec.
    Child(i32),
    /// A thread, enabled at once.
    Thread(i32),
    /// A CPU, every process on it, enabled at once.
    Cpu(usize),
}

/// Opens one planned group on one instance: every event on the instance's target
/// (a task with `inherit` for a child or a thread, every process on a CPU), the kernel
/// excluded unless asked, the hypervisor always. A child's group starts at its exec,
/// the others at once; the wall time is not a counter.
fn open_group(g: &[EventRef], at: Instance, opts: OpenOptions) -> PerfGroup {
    let (target, start) = match at {
        Instance::Child(pid) => (perfopen::Target::Task(pid), perfopen::Start::AtExec),
        Instance::Thread(pid) => (perfopen::Target::Task(pid), perfopen::Start::Now),
        Instance::Cpu(cpu) => (perfopen::Target::Cpu(cpu), perfopen::Start::Now),
    };
    let exclude = perfopen::Exclude::kernel_unless(opts.include_kernel);
    let members = g.iter().map(|e| {
        e.encoding
            .perf(opts.raw_type)
            .map(|enc| perfopen::builder(&enc, target, exclude))
    });
    let (group, statuses) = Group::open(members, start);
    let statuses = statuses
        .into_iter()
        .map(|s| match s {
            MemberStatus::Opened => EventStatus::Works,
            MemberStatus::NotAnEvent => EventStatus::NotSupported("not a counter".into()),
            MemberStatus::Failed(err) => crate::capability::status_from_error(&err),
        })
        .collect();
    PerfGroup { group, statuses }
}

impl Backend for PerfBackend {
    fn open(
        &mut self,
        target: &Target,
        groups: &[Vec<EventRef>],
        opts: OpenOptions,
    ) -> Box<dyn Session> {
        let instances: Vec<Instance> = match target {
            Target::Child(pid) => vec![Instance::Child(*pid)],
            Target::Threads(t) => t.iter().map(|&t| Instance::Thread(t)).collect(),
            Target::Cpus(c) => c.iter().map(|&c| Instance::Cpu(c)).collect(),
        };
        let out = groups
            .iter()
            .map(|g| {
                instances
                    .iter()
                    .map(|&at| open_group(g, at, opts))
                    .collect()
            })
            .collect();
        Box::new(PerfSession { groups: out })
    }
}

/// The statuses of one planned group over its instances: the first instance's, except
/// where another instance failed (a thread that exited while being attached to, a CPU
/// that refused): then that failure.
fn merged_statuses(per_instance: &[PerfGroup]) -> Vec<OpenStatus> {
    let Some(first) = per_instance.first() else {
        return Vec::new();
    };
    let mut st = first.statuses.clone();
    for g in &per_instance[1..] {
        for (a, b) in st.iter_mut().zip(&g.statuses) {
            if a.works() && !b.works() {
                *a = b.clone();
            }
        }
    }
    st
}

impl Session for PerfSession {
    fn statuses(&self) -> Vec<Vec<OpenStatus>> {
        self.groups.iter().map(|g| merged_statuses(g)).collect()
    }

    fn read(&mut self) -> Vec<Result<GroupReading, String>> {
        self.groups
            .iter_mut()
            .map(|per_instance| {
                let mut sum: Option<GroupReading> = None;
                let mut last_err = None;
                for g in per_instance.iter_mut() {
                    let v = match g.group.read() {
                        Ok(v) => v,
                        Err(e) => {
                            last_err = Some(e);
                            continue;
                        }
                    };
                    let r = GroupReading {
                        time_enabled_ns: v.time_enabled_ns,
                        time_running_ns: v.time_running_ns,
                        counts: v.counts,
                    };
                    sum = Some(match sum {
                        None => r,
                        Some(s) => s.plus(&r),
                    });
                }
                sum.ok_or_else(|| last_err.unwrap_or_else(|| "nothing opened".into()))
            })
            .collect()
    }
}

impl GroupReading {
    /// Two instances' readings added: counts per event (None if either lacks it), and
    /// times, so that the running fraction of the sum is the time-weighted one.
    pub fn plus(&self, o: &GroupReading) -> GroupReading {
        GroupReading {
            time_enabled_ns: self.time_enabled_ns + o.time_enabled_ns,
            time_running_ns: self.time_running_ns + o.time_running_ns,
            counts: self
                .counts
                .iter()
                .zip(&o.counts)
                .map(|(a, b)| a.zip(*b).map(|(a, b)| a + b))
                .collect(),
        }
    }

    /// What was counted since `earlier` (a reading of the same group): counts and times
    /// as differences (interval mode).
    pub fn since(&self, earlier: &GroupReading) -> GroupReading {
        GroupReading {
            time_enabled_ns: self.time_enabled_ns.saturating_sub(earlier.time_enabled_ns),
            time_running_ns: self.time_running_ns.saturating_sub(earlier.time_running_ns),
            counts: self
                .counts
                .iter()
                .zip(&earlier.counts)
                .map(|(a, b)| a.zip(*b).map(|(a, b)| a.saturating_sub(b)))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::load;

    fn names(g: &PlanGroup) -> Vec<&str> {
        g.events.iter().map(|e| e.name.as_str()).collect()
    }

    #[test]
    fn default_plan_groups_per_metric() {
        let c = load("neoverse-n1").unwrap();
        let metrics: Vec<String> = ["ipc", "l1d_mpki", "l1d_miss_rate", "cpus_utilized"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let p = plan_default(&c, &metrics, &[], c.counters);
        assert_eq!(p.runs, 1);
        assert_eq!(p.groups.len(), 3);
        assert_eq!(names(&p.groups[0]), ["CPU_CYCLES", "INST_RETIRED"]);
        assert_eq!(names(&p.groups[1]), ["INST_RETIRED", "L1D_CACHE_REFILL"]);
        assert_eq!(names(&p.groups[2]), ["L1D_CACHE", "L1D_CACHE_REFILL"]);
        // Software events are counted separately, always.
        let sw: Vec<&str> = p.software.iter().map(|e| e.name.as_str()).collect();
        assert!(sw.contains(&"TASK_CLOCK") && sw.contains(&"DURATION_TIME"));
    }

    #[test]
    fn packed_plan_needs_the_fewest_groups_the_counters_allow() {
        let c = load("neoverse-n1").unwrap();
        let metrics: Vec<String> = [
            "ipc",
            "l1d_mpki",
            "ll_read_miss_rate",
            "backend_stall_rate",
            "frontend_stall_rate",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Six programmable events (cycles is fixed on N1): one group per metric by
        // default, one group in all with six counters.
        assert_eq!(plan_default(&c, &metrics, &[], 6).groups.len(), 5);
        let six = plan_packed(&c, &metrics, &[], 6);
        assert_eq!(six.groups.len(), 1);
        assert_eq!(six.groups[0].metrics.len(), 5);
        assert!(six.warnings.is_empty());
        // Three counters: L1D_CACHE_REFILL + INST_RETIRED (l1d_mpki, ipc) +
        // STALL_BACKEND; LL_CACHE_RD + LL_CACHE_MISS_RD + STALL_FRONTEND: two groups,
        // the fewest six events fit in. Every metric's events in one group.
        let three = plan_packed(&c, &metrics, &[], 3);
        assert_eq!(three.groups.len(), 2);
        for g in &three.groups {
            assert!(programmable(&c, &g.events) <= 3, "{:?}", names(g));
        }
        for m in &metrics {
            let evs = c.metric(m).unwrap().events();
            assert!(
                three
                    .groups
                    .iter()
                    .any(|g| g.metrics.contains(m)
                        && evs.iter().all(|e| names(g).contains(&e.as_str()))),
                "{m} split"
            );
        }
        // A run of 1 s rotated every 4 ms through 2 groups: 125 rotations.
        let r = crate::mux::rotations(1.0, 4, three.groups.len());
        assert!((r - 125.0).abs() < 1e-9, "{r}");
        // One counter: the LL miss rate's two events cannot share a group.
        let one = plan_packed(&c, &metrics, &[], 1);
        assert_eq!(one.groups.len(), 6);
        assert_eq!(one.warnings.len(), 2, "{:?}", one.warnings); // ll and l1d split
        assert!(one.warnings.iter().all(|w| w.code == "pmu.group_too_large"));
    }

    #[test]
    fn exact_groups_respect_the_counter_limit() {
        for id in ["neoverse-n1", "neoverse-v1", "x86-64"] {
            let c = load(id).unwrap();
            let metrics = c.select_metrics("all").unwrap();
            for counters in [3usize, 4, 6] {
                let p = plan_exact(&c, &metrics, &[], counters).unwrap();
                let anchors = c.anchors();
                let mut covered = std::collections::BTreeSet::new();
                for g in &p.groups {
                    let prog = g.events.iter().filter(|e| !c.is_fixed(&e.name)).count();
                    assert!(prog <= counters, "{id}/{counters}: {:?}", names(g));
                    assert_eq!(&names(g)[..2], &anchors, "{id}: anchors first");
                    covered.extend(g.events.iter().map(|e| e.name.clone()));
                }
                assert_eq!(p.runs, p.groups.len());
                // Every hardware event of every metric is counted somewhere.
                for m in &metrics {
                    for e in c.metric(m).unwrap().events() {
                        if !c.event(&e).unwrap().encoding.is_software() {
                            assert!(covered.contains(&e), "{id}/{counters}: {e} of {m}");
                        }
                    }
                }
                // A metric whose events fit in one run is in one run.
                for m in &metrics {
                    let evs: Vec<String> = c
                        .metric(m)
                        .unwrap()
                        .events()
                        .into_iter()
                        .filter(|e| !c.event(e).unwrap().encoding.is_software())
                        .collect();
                    let prog = evs
                        .iter()
                        .filter(|e| !c.is_fixed(e) && !anchors.contains(&e.as_str()))
                        .count();
                    let anchor_prog = anchors.iter().filter(|a| !c.is_fixed(a)).count();
                    if prog + anchor_prog <= counters {
                        assert!(
                            p.groups
                                .iter()
                                .any(|g| evs.iter().all(|e| names(g).contains(&e.as_str()))),
                            "{id}/{counters}: {m} split"
                        );
                    }
                }
            }
        }
        // N1 with 6 counters: cycles is fixed, so each run has INST_RETIRED + 5 others.
        let c = load("neoverse-n1").unwrap();
        let p = plan_exact(&c, &c.select_metrics("first-pass").unwrap(), &[], 6).unwrap();
        assert!(p.groups.iter().all(|g| g.events.len() <= 7));
        assert!(p.groups.iter().any(|g| g.events.len() == 7));
        assert!(plan_exact(&c, &[], &[], 1).is_err());
    }

    #[test]
    fn events_reach_the_kernel_with_their_types_and_config_words() {
        use numalab_perfopen::Encoding as Perf;
        // Raw events: the core PMU's dynamic type when known, else PERF_TYPE_RAW (4).
        assert_eq!(Encoding::Raw(0x11).perf(None), Some(Perf::new(4, 0x11)));
        assert_eq!(
            Encoding::Raw(0x11).perf(Some(10)),
            Some(Perf::new(10, 0x11))
        );
        let ext = Encoding::RawExt {
            config: 0x1cd,
            config1: 3,
        };
        assert_eq!(
            ext.perf(Some(10)),
            Some(Perf {
                pmu_type: 10,
                config: [0x1cd, 3, 0, 0]
            })
        );
        assert_eq!(Encoding::Hardware(1).perf(Some(10)), Some(Perf::new(0, 1)));
        assert_eq!(
            Encoding::Cache(0x1_0003).perf(None),
            Some(Perf::new(3, 0x1_0003))
        );
        assert_eq!(Encoding::Software(1).perf(None), Some(Perf::new(1, 1)));
        assert_eq!(Encoding::Wall.perf(None), None);
    }

    #[test]
    fn default_plan_splits_oversized_metric_with_a_warning() {
        let c = load("neoverse-n1").unwrap();
        let p = plan_default(&c, &["mix_branch_pct".into()], &[], 2);
        assert_eq!(p.groups.len(), 2);
        assert!(p.warnings.iter().any(|w| w.code == "pmu.group_too_large"));
    }
}
