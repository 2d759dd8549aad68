//! `numalab profile` as a library: run a command under counters (or read a perf file),
//! derive the metrics, walk the decision tree, and return one `pmu.profile` record.
//!
//! The CLI, `numalab sweep --profile` and `numalab evaluate` all call [`profile`] /
//! [`profile_with`] (live) or [`from_import`] (offline), so every profile in a bundle
//! has the same shape whatever produced it.

use crate::advertised::{self, Advertised, CorePmu};
use crate::capability::{self, Capability, EventStatus};
use crate::catalog::{self, Catalog, CatalogError, CpuMatch, EventRef};
use crate::count::{self, Backend, OpenOptions, PerfBackend, Plan};
use crate::import::{self, ImportError};
use crate::metrics::{self, EventState, EventValue, MetricValue};
use crate::tree::{self, TreeReport};
use numalab_proc::{Outcome, ProcError, Spec};
use numalab_schema::{Classify, ErrorClass, Origin, Record, Warning};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

// What a profile records lives in numalab-records.
pub use numalab_records::pmu::{
    Coverage, GroupRecord, NotComputable, Profile, RunRecord, Source, Spread,
};

/// A profile and the warnings that go with it.
#[derive(Debug, Clone)]
pub struct Profiled {
    /// The profile.
    pub profile: Profile,
    /// Warnings (multiplexing, unsupported events, a failed command...).
    pub warnings: Vec<Warning>,
}

impl Profiled {
    /// The record (`pmu.profile`), with the warnings attached.
    pub fn into_record(self, key: impl Into<String>) -> Record {
        let origin = if self.profile.source.kind == "imported" {
            Origin::Imported
        } else {
            Origin::Measured
        };
        Record::new(key, origin, &self.profile).with_warnings(self.warnings)
    }
}

/// What to count and how.
#[derive(Debug, Clone)]
pub struct ProfileConfig {
    /// The CPU's catalog.
    pub cpu: CpuMatch,
    /// Metric set (`first-pass`, `vendor`, `topdown`, `all`, `none`, groups, names).
    pub metrics: String,
    /// Extra events by name or raw code.
    pub events: Vec<String>,
    /// `--exact` mode.
    pub exact: bool,
    /// Programmable counters (None: from the catalog).
    pub counters: Option<usize>,
    /// The filesystem root holding `sys/` (normally `/`): the core PMU's advertised
    /// events and type are read under it (tests use fake trees).
    pub sysroot: PathBuf,
}

impl ProfileConfig {
    /// The default configuration for a machine's CPU (`Machine::cpu`; the MIDR is also
    /// read from this machine's sysfs when the identity lacks it).
    pub fn for_cpu(cpu: &numalab_schema::machine::CpuIdentity) -> Result<Self, CatalogError> {
        let m = catalog::detect(cpu, catalog::midr_from_sysfs(Path::new("/")))?;
        Ok(Self::new(m))
    }

    /// The default: the first-pass metrics of the CPU's catalog.
    pub fn new(cpu: CpuMatch) -> Self {
        ProfileConfig {
            cpu,
            metrics: "first-pass".into(),
            events: Vec::new(),
            exact: false,
            counters: None,
            sysroot: PathBuf::from("/"),
        }
    }
}

/// Why profiling failed.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// A catalog, event or metric problem.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The command could not be started.
    #[error(transparent)]
    Proc(#[from] ProcError),
    /// An import problem.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// The plan is impossible (e.g. --exact with too few counters).
    #[error("{0}")]
    Plan(String),
    /// Counting is not permitted.
    #[error("{0}")]
    Denied(String),
    /// Not even software events can be counted.
    #[error("{0}")]
    Unsupported(String),
}

impl Classify for ProfileError {
    fn class(&self) -> ErrorClass {
        match self {
            ProfileError::Catalog(e) => e.class(),
            ProfileError::Proc(e) => e.class(),
            ProfileError::Import(e) => e.class(),
            ProfileError::Plan(_) => ErrorClass::Usage,
            ProfileError::Denied(_) | ProfileError::Unsupported(_) => ErrorClass::Unsupported,
        }
    }
}

/// Resolves the metric set and extra events against the catalog (before anything runs).
pub fn selection(
    catalog: &Catalog,
    metrics: &str,
    events: &[String],
) -> Result<(Vec<String>, Vec<EventRef>), CatalogError> {
    let names = catalog.select_metrics(metrics)?;
    let extra = events
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|e| catalog.resolve_event(e))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((names, extra))
}

/// Metrics computable from the events at hand, beyond those asked for (used when only
/// `--events` was given: every known metric whose inputs were all counted).
fn computable(catalog: &Catalog, events: &[EventValue]) -> Vec<String> {
    catalog
        .metrics
        .iter()
        .filter(|m| {
            m.events().iter().all(|e| {
                events
                    .iter()
                    .any(|v| &v.name == e && v.state == EventState::Counted)
            })
        })
        .map(|m| m.name.clone())
        .collect()
}

/// Metrics not asked for whose inputs were all counted anyway (the tree uses them).
fn unselected_computable(
    catalog: &Catalog,
    names: &[String],
    events: &[EventValue],
) -> Vec<String> {
    computable(catalog, events)
        .into_iter()
        .filter(|n| !names.contains(n))
        .collect()
}

/// Walks the tree over the selected metrics plus `extra` computable ones.
fn tree_over(catalog: &Catalog, selected: &[MetricValue], extra: Vec<MetricValue>) -> TreeReport {
    let mut all = selected.to_vec();
    all.extend(extra);
    tree::walk_tree(catalog, &all)
}

/// Profiles `spec` with real counters (the capability is probed first).
pub fn profile(spec: &Spec, config: &ProfileConfig) -> Result<Profiled, ProfileError> {
    let cap = capability::probe();
    profile_with(spec, config, &mut PerfBackend, &cap, &mut |_, _| {})
}

/// Profiles `spec` with `backend`. `progress(run, runs)` is called before each run.
pub fn profile_with(
    spec: &Spec,
    config: &ProfileConfig,
    backend: &mut dyn Backend,
    cap: &Capability,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Profiled, ProfileError> {
    let catalog = catalog::load_match(&config.cpu)?;
    let (names, extra) = selection(&catalog, &config.metrics, &config.events)?;
    let counters = config.counters.unwrap_or(catalog.counters);
    let mut plan: Plan = if config.exact {
        count::plan_exact(&catalog, &names, &extra, counters).map_err(ProfileError::Plan)?
    } else {
        count::plan_default(&catalog, &names, &extra, counters)
    };
    let mut warnings = std::mem::take(&mut plan.warnings);
    // A PMU that counts either anchor is a hardware PMU here: an emulated Arm PMU
    // without `inst_retired` (QEMU without -icount) refuses the generic instructions
    // event but counts cycles; what it does not advertise is sorted out per event below.
    let hardware = cap.cycles.works() || cap.instructions.works();
    if !hardware && !cap.task_clock.works() {
        return Err(ProfileError::Unsupported(format!(
            "no counting is possible here: {}",
            cap.verdict()
        )));
    }
    if !hardware && plan.runs > 1 {
        // Nothing to separate: the software events fit in one run.
        for g in &mut plan.groups {
            g.run = 0;
        }
        plan.runs = 1;
    }
    if !hardware {
        warnings.push(
            Warning::new(
                "pmu.no_hardware",
                "no hardware PMU here (common in VMs and containers): only software events were counted; hardware events and their metrics are not available",
            )
            .with_remedy("run on a machine with a PMU, or analyse counts recorded there with --import"),
        );
    }
    // What the core PMU advertises (Arm): unlisted events are not opened.
    let sys = if catalog.arch == catalog::Arch::Arm {
        advertised::read(&config.sysroot)
    } else {
        advertised::PmuSysfs::default()
    };
    let core = sys.primary().cloned();
    let raw_type = core.as_ref().and_then(|c| c.pmu_type);
    if hardware {
        if let Some(w) = sys.heterogeneous() {
            warnings.push(
                Warning::new("pmu.heterogeneous", w)
                    .with_remedy("pin the command to one kind of core (taskset -c CPUS) so every count covers the whole run"),
            );
        }
    }
    let standing: BTreeMap<String, (Advertised, String)> = match &core {
        Some(c) if hardware => plan
            .groups
            .iter()
            .flat_map(|g| &g.events)
            .filter_map(|e| match e.encoding {
                catalog::Encoding::Raw(code) => {
                    Some((e.name.clone(), (c.advertises(code), c.why_not(code))))
                }
                _ => None,
            })
            .collect(),
        _ => BTreeMap::new(),
    };
    let blocked = |e: &EventRef| {
        standing
            .get(&e.name)
            .filter(|(a, _)| *a == Advertised::NotListed)
            .map(|(_, why)| why.clone())
    };
    let mut include_kernel = cap.privileged || cap.paranoid.is_some_and(|p| p <= 1);
    if !include_kernel {
        warnings.push(Warning::new(
            "pmu.user_only",
            format!(
                "counting user space only: kernel-mode counting needs perf_event_paranoid <= 1 (it is {}) or CAP_PERFMON",
                cap.paranoid.map_or("unknown".into(), |p| p.to_string())
            ),
        ));
    }

    let mut groups_out: Vec<GroupRecord> = Vec::new();
    let mut software_runs: Vec<Vec<EventValue>> = Vec::new();
    let mut runs: Vec<RunRecord> = Vec::new();
    let hw_reason = "no hardware PMU here".to_string();
    for run in 0..plan.runs {
        if numalab_schema::interrupt::requested() {
            break;
        }
        progress(run, plan.runs);
        let run_groups: Vec<(usize, &count::PlanGroup)> = plan
            .groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.run == run)
            .collect();
        // What to open: hardware groups (if a PMU exists), then software singles.
        // Events the PMU does not advertise are left out (and reported by name).
        let mut to_open: Vec<Vec<EventRef>> = Vec::new();
        let mut opened_hw: Vec<usize> = Vec::new(); // plan group k -> index in to_open
        if hardware {
            for (k, (_, g)) in run_groups.iter().enumerate() {
                let open: Vec<EventRef> = g
                    .events
                    .iter()
                    .filter(|e| blocked(e).is_none())
                    .cloned()
                    .collect();
                if !open.is_empty() {
                    opened_hw.push(k);
                    to_open.push(open);
                }
            }
        }
        let hw_opened = to_open.len();
        let sw_counted: Vec<&EventRef> = plan
            .software
            .iter()
            .filter(|e| e.encoding != catalog::Encoding::Wall)
            .collect();
        to_open.extend(sw_counted.iter().map(|e| vec![(*e).clone()]));

        let mut child_spec = spec.clone();
        child_spec.gated = true;
        let mut running = numalab_proc::spawn(&child_spec)?;
        let opts = |include_kernel| OpenOptions {
            include_kernel,
            raw_type,
        };
        let mut session = backend.open(running.pid(), &to_open, opts(include_kernel));
        let statuses = session.statuses();
        let denied = statuses
            .iter()
            .flatten()
            .any(|s| matches!(s, EventStatus::Denied(_)));
        if denied && include_kernel {
            // Retry user space only, as the methodology says.
            drop(session);
            include_kernel = false;
            warnings.push(Warning::new(
                "pmu.user_only",
                "kernel-mode counting was denied: counting user space only",
            ));
            session = backend.open(running.pid(), &to_open, opts(include_kernel));
        }
        let statuses = session.statuses();
        if statuses
            .iter()
            .flatten()
            .all(|s| matches!(s, EventStatus::Denied(_)))
            && !statuses.is_empty()
        {
            let outcome = running.wait();
            drop(outcome);
            return Err(ProfileError::Denied(format!(
                "perf_event_paranoid = {} forbids counting: counting your own processes in user space needs perf_event_paranoid <= 2, kernel-mode counting <= 1, system-wide <= 0 (or CAP_PERFMON); numalab never changes it (as root: sysctl kernel.perf_event_paranoid=2)",
                cap.paranoid.map_or("unknown".into(), |p| p.to_string())
            )));
        }
        running.release()?;
        let outcome = running.wait();
        let readings = session.read();

        // Hardware groups, with the events left out put back in plan order.
        let hw_count = hw_opened;
        for (k, (gi, g)) in run_groups.iter().enumerate() {
            let (reading, st) = if hardware {
                let opened = opened_hw
                    .iter()
                    .position(|x| *x == k)
                    .map(|i| (&readings[i], &statuses[i]));
                let (r, s) = expand(&g.events, opened, &blocked);
                (Some(r), Some(s))
            } else {
                (None, None)
            };
            let mut rec = group_record(*gi, g, reading.as_ref(), st.as_ref(), &hw_reason, run);
            for v in &mut rec.values {
                v.advertised = standing.get(&v.name).map(|(a, _)| *a);
            }
            groups_out.push(rec);
        }
        // Software events.
        let mut sw_values = Vec::new();
        for (k, e) in sw_counted.iter().enumerate() {
            let idx = hw_count + k;
            let mut v = values_of(
                std::slice::from_ref(e),
                Some(&readings[idx]),
                Some(&statuses[idx]),
                &hw_reason,
                run,
            );
            sw_values.append(&mut v);
        }
        if plan
            .software
            .iter()
            .any(|e| e.encoding == catalog::Encoding::Wall)
        {
            sw_values.push(wall_value(&outcome, run));
        }
        for v in &mut sw_values {
            v.software = true;
        }
        software_runs.push(sw_values);
        if !outcome.success() {
            warnings.push(Warning::new(
                "pmu.workload_failed",
                format!(
                    "run {}: the command {}; the counts describe that run",
                    run + 1,
                    outcome.describe()
                ),
            ));
        }
        let stop = outcome.interrupted;
        runs.push(RunRecord { run, outcome });
        if stop {
            warnings.push(Warning::new(
                "pmu.interrupted",
                format!(
                    "stopped by Ctrl-C after {} of {} runs",
                    runs.len(),
                    plan.runs
                ),
            ));
            break;
        }
    }

    // Software events: the median over runs.
    let software = median_software(&software_runs);
    let mut profile = Profile {
        cpu: config.cpu.clone(),
        source: Source {
            kind: "measured".into(),
            path: None,
            format: None,
        },
        mode: if config.exact { "exact" } else { "default" }.into(),
        scope: Some(
            if include_kernel {
                "user+kernel"
            } else {
                "user"
            }
            .into(),
        ),
        hardware_pmu: Some(hardware),
        counters: Some(counters),
        metric_set: config.metrics.clone(),
        command: spec.argv.clone(),
        events: Vec::new(),
        groups: groups_out,
        runs,
        spread: Vec::new(),
        metrics: Vec::new(),
        tree: None,
        coverage: None,
    };
    profile.events = summarize_events(&profile.groups, &software);
    // Zeros where hardware must count are not counted here (never fed to a metric).
    {
        let mut group_values: Vec<&mut Vec<EventValue>> =
            profile.groups.iter_mut().map(|g| &mut g.values).collect();
        crate::trust::mark(&mut profile.events, &mut group_values);
    }
    if config.exact {
        profile.spread = spreads(&catalog, &profile.groups);
        for s in &profile.spread {
            if s.spread_pct > 5.0 {
                warnings.push(Warning::new(
                    "pmu.run_spread",
                    format!(
                        "{} varied by {:.1}% between runs: the runs of --exact are not identical, so ratios across runs are uncertain",
                        s.event, s.spread_pct
                    ),
                ));
            }
        }
    }
    let names = if config.metrics.trim().eq_ignore_ascii_case("none") {
        Vec::new()
    } else if names.is_empty() {
        computable(&catalog, &profile.events)
    } else {
        names
    };
    profile.metrics = evaluate_live(&catalog, &names, &profile, config.exact);
    multiplex_warnings(&profile, &mut warnings);
    unsupported_warning(&profile, hardware, &mut warnings);
    let extra = evaluate_live(
        &catalog,
        &unselected_computable(&catalog, &names, &profile.events),
        &profile,
        config.exact,
    );
    let mut tree = tree_over(&catalog, &profile.metrics, extra);
    let mut coverage = coverage_of(&profile);
    coverage.core_pmu = core.clone();
    coverage.core_pmus = sys.core.len();
    coverage.raw_type = raw_type;
    coverage.common_set_complete = core.as_ref().map(CorePmu::common_set_complete);
    if !hardware {
        tree.refuse("this machine exposes no hardware PMU, so there is no cycle accounting (import counts recorded on a machine with one: --import FILE)");
    } else if coverage.hardware_asked > 0 && coverage.hardware_counted == 0 {
        tree.refuse("no hardware event could be counted here (every one is unsupported, not trusted or never scheduled), so there is no cycle accounting");
    }
    profile.tree = Some(tree);
    profile.coverage = Some(coverage);
    Ok(Profiled { profile, warnings })
}

/// The statuses and reading of a planned group whose events `blocked` were not opened:
/// the opened subset's results put back in plan order, the others not supported.
fn expand(
    events: &[EventRef],
    opened: Option<(&Result<count::GroupReading, String>, &Vec<EventStatus>)>,
    blocked: &dyn Fn(&EventRef) -> Option<String>,
) -> (Result<count::GroupReading, String>, Vec<EventStatus>) {
    let mut statuses = Vec::with_capacity(events.len());
    let mut counts = Vec::with_capacity(events.len());
    let mut j = 0;
    for e in events {
        if let Some(why) = blocked(e) {
            statuses.push(EventStatus::NotSupported(why));
            counts.push(None);
            continue;
        }
        let st = opened
            .and_then(|(_, st)| st.get(j).cloned())
            .unwrap_or_else(|| EventStatus::Failed("not opened".into()));
        let c = match opened {
            Some((Ok(r), _)) => r.counts.get(j).copied().flatten(),
            _ => None,
        };
        statuses.push(st);
        counts.push(c);
        j += 1;
    }
    let reading = match opened {
        Some((Ok(r), _)) => Ok(count::GroupReading {
            time_enabled_ns: r.time_enabled_ns,
            time_running_ns: r.time_running_ns,
            counts,
        }),
        Some((Err(e), _)) => Err(e.clone()),
        None => Err("no event of the group was opened".into()),
    };
    (reading, statuses)
}

/// The cause of a metric's missing value, from its inputs' states (first match wins).
fn missing_cause(m: &MetricValue, events: &[EventValue], no_hw: bool) -> (String, Vec<String>) {
    let by = |st: EventState| -> Vec<String> {
        m.events
            .iter()
            .filter(|n| events.iter().any(|e| &e.name == *n && e.state == st))
            .cloned()
            .collect()
    };
    if no_hw {
        return ("no_hardware".into(), by(EventState::NotSupported));
    }
    for (st, cause) in [
        (EventState::NotSupported, "unsupported"),
        (EventState::Untrusted, "untrusted"),
        (EventState::NotCounted, "not_scheduled"),
        (EventState::Denied, "denied"),
        (EventState::Failed, "failed"),
    ] {
        let evs = by(st);
        if !evs.is_empty() {
            return (cause.into(), evs);
        }
    }
    let absent: Vec<String> = m
        .events
        .iter()
        .filter(|n| !events.iter().any(|e| &e.name == *n))
        .cloned()
        .collect();
    if !absent.is_empty() {
        return ("not_counted".into(), absent);
    }
    ("other".into(), Vec::new())
}

/// Metrics without a value, grouped by cause, each group one line.
pub fn not_computable(
    metrics: &[MetricValue],
    events: &[EventValue],
    no_hw: bool,
) -> Vec<NotComputable> {
    let mut out: Vec<NotComputable> = Vec::new();
    for m in metrics.iter().filter(|m| m.value.is_none()) {
        let (cause, evs) = missing_cause(m, events, no_hw);
        // "other" causes (a zero denominator...) group by their own reason.
        let key = if cause == "other" {
            m.reason.clone().unwrap_or_else(|| "no value".into())
        } else {
            String::new()
        };
        let slot = out
            .iter_mut()
            .find(|g| g.cause == cause && (cause != "other" || g.text == key));
        let g = match slot {
            Some(g) => g,
            None => {
                out.push(NotComputable {
                    cause: cause.clone(),
                    text: key.clone(),
                    metrics: Vec::new(),
                    events: Vec::new(),
                });
                out.last_mut().expect("just pushed")
            }
        };
        g.metrics.push(m.name.clone());
        for e in evs {
            if !g.events.contains(&e) {
                g.events.push(e);
            }
        }
    }
    for g in &mut out {
        let n = g.metrics.len();
        let (head, their) = if n == 1 {
            ("1 metric not computable".to_string(), "its events")
        } else {
            (format!("{n} metrics not computable"), "their events")
        };
        let list = g.events.join(", ");
        g.text = match g.cause.as_str() {
            "no_hardware" => format!("{head}: no hardware PMU here"),
            "unsupported" => format!("{head}: {their} are not counted by this PMU ({list})"),
            "untrusted" => format!(
                "{head}: {their} read 0 where hardware must count, so they are not counted here ({list})"
            ),
            "not_scheduled" => {
                format!("{head}: {their} were never scheduled on a counter ({list})")
            }
            "denied" => format!("{head}: {their} were denied (perf_event_paranoid) ({list})"),
            "failed" => format!("{head}: {their} could not be counted ({list})"),
            "not_counted" => format!("{head}: {their} were not counted ({list})"),
            _ => format!("{head}: {}", g.text),
        };
    }
    out
}

/// The coverage of a profile (the core PMU fields are filled in by the caller).
fn coverage_of(profile: &Profile) -> Coverage {
    let hw: Vec<&EventValue> = profile.events.iter().filter(|e| !e.software).collect();
    let named = |st: EventState| -> Vec<String> {
        hw.iter()
            .filter(|e| e.state == st)
            .map(|e| e.name.clone())
            .collect()
    };
    let no_hw = profile.hardware_pmu == Some(false);
    Coverage {
        hardware_asked: hw.len(),
        hardware_counted: hw.iter().filter(|e| e.state == EventState::Counted).count(),
        unsupported: named(EventState::NotSupported),
        untrusted: named(EventState::Untrusted),
        not_scheduled: named(EventState::NotCounted),
        denied_or_failed: hw
            .iter()
            .filter(|e| matches!(e.state, EventState::Denied | EventState::Failed))
            .map(|e| e.name.clone())
            .collect(),
        on_trust: hw
            .iter()
            .filter(|e| e.state == EventState::Counted && e.advertised == Some(Advertised::OnTrust))
            .map(|e| e.name.clone())
            .collect(),
        not_computable: not_computable(&profile.metrics, &profile.events, no_hw),
        ..Default::default()
    }
}

fn state_of(s: &EventStatus) -> (EventState, Option<String>) {
    match s {
        EventStatus::Works => (EventState::Counted, None),
        EventStatus::NotSupported(d) => (EventState::NotSupported, Some(d.clone())),
        EventStatus::Denied(d) => (EventState::Denied, Some(d.clone())),
        EventStatus::Failed(d) => (EventState::Failed, Some(d.clone())),
    }
}

fn values_of(
    events: &[EventRef],
    reading: Option<&Result<count::GroupReading, String>>,
    statuses: Option<&Vec<EventStatus>>,
    no_hw_reason: &str,
    run: usize,
) -> Vec<EventValue> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut v = EventValue {
                name: e.name.clone(),
                code: match e.encoding {
                    catalog::Encoding::Raw(c) => Some(format!("r{c:x}")),
                    _ => None,
                },
                value: None,
                raw_count: None,
                running_fraction: None,
                time_enabled_ns: None,
                time_running_ns: None,
                supported: false,
                state: EventState::NotSupported,
                reason: Some(no_hw_reason.to_string()),
                unit: if matches!(e.encoding, catalog::Encoding::Software(0 | 1)) {
                    Some("ns".into())
                } else {
                    None
                },
                software: e.encoding.is_software(),
                run: Some(run),
                advertised: None,
            };
            let (Some(reading), Some(st)) = (reading, statuses) else {
                return v;
            };
            let (state, reason) = state_of(&st[i]);
            v.state = state;
            v.reason = reason;
            v.supported = state != EventState::NotSupported;
            if state != EventState::Counted {
                return v;
            }
            match reading {
                Err(why) => {
                    v.state = EventState::Failed;
                    v.reason = Some(why.clone());
                }
                Ok(r) => {
                    v.time_enabled_ns = Some(r.time_enabled_ns);
                    v.time_running_ns = Some(r.time_running_ns);
                    let count = r.counts.get(i).copied().flatten();
                    v.raw_count = count;
                    if r.time_running_ns == 0 {
                        if r.time_enabled_ns == 0 && count == Some(0) {
                            // The child never ran on a CPU with the event enabled
                            // (e.g. it exited at once): a true zero.
                            v.value = Some(0.0);
                            v.running_fraction = Some(1.0);
                        } else {
                            v.state = EventState::NotCounted;
                            v.reason = Some("the kernel never scheduled its group on the counters (too many events at once, or a counter taken by the NMI watchdog)".into());
                        }
                    } else {
                        let f = r.time_running_ns as f64 / r.time_enabled_ns.max(1) as f64;
                        v.running_fraction = Some(f.min(1.0));
                        v.value = count.map(|c| c as f64 / f.min(1.0));
                    }
                }
            }
            v
        })
        .collect()
}

fn group_record(
    id: usize,
    g: &count::PlanGroup,
    reading: Option<&Result<count::GroupReading, String>>,
    statuses: Option<&Vec<EventStatus>>,
    no_hw_reason: &str,
    run: usize,
) -> GroupRecord {
    let values = values_of(&g.events, reading, statuses, no_hw_reason, run);
    let (te, tr) = match reading {
        Some(Ok(r)) => (Some(r.time_enabled_ns), Some(r.time_running_ns)),
        _ => (None, None),
    };
    GroupRecord {
        id,
        run,
        metrics: g.metrics.clone(),
        time_enabled_ns: te,
        time_running_ns: tr,
        running_fraction: match (te, tr) {
            (Some(e), Some(r)) if e > 0 => Some((r as f64 / e as f64).min(1.0)),
            _ => None,
        },
        values,
    }
}

fn wall_value(outcome: &Outcome, run: usize) -> EventValue {
    EventValue {
        name: "DURATION_TIME".into(),
        code: None,
        value: Some(outcome.wall_ns as f64),
        raw_count: Some(outcome.wall_ns),
        running_fraction: Some(1.0),
        time_enabled_ns: Some(outcome.wall_ns),
        time_running_ns: Some(outcome.wall_ns),
        supported: true,
        state: EventState::Counted,
        reason: None,
        unit: Some("ns".into()),
        software: true,
        run: Some(run),
        advertised: None,
    }
}

fn median_software(runs: &[Vec<EventValue>]) -> Vec<EventValue> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .map(|e| {
            let vals: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.iter().find(|x| x.name == e.name))
                .filter_map(|x| x.value)
                .collect();
            let mut out = e.clone();
            if runs.len() > 1 {
                out.run = None;
                out.value = numalab_stats::Summary::of(&vals).map(|s| s.median);
            }
            out
        })
        .collect()
}

/// One value per event: software events, then for each hardware event the value from
/// the group with the best coverage (highest running fraction).
fn summarize_events(groups: &[GroupRecord], software: &[EventValue]) -> Vec<EventValue> {
    let mut out: Vec<EventValue> = Vec::new();
    for g in groups {
        for v in &g.values {
            match out.iter_mut().find(|x| x.name == v.name) {
                None => out.push(v.clone()),
                Some(x) => {
                    let better = match (x.state, v.state) {
                        (EventState::Counted, EventState::Counted) => {
                            v.running_fraction.unwrap_or(0.0) > x.running_fraction.unwrap_or(0.0)
                        }
                        (_, EventState::Counted) => true,
                        _ => false,
                    };
                    if better {
                        *x = v.clone();
                    }
                }
            }
        }
    }
    out.extend(software.iter().cloned());
    out
}

fn spreads(catalog: &Catalog, groups: &[GroupRecord]) -> Vec<Spread> {
    catalog
        .anchors()
        .iter()
        .filter_map(|a| {
            let vals: Vec<f64> = groups
                .iter()
                .filter_map(|g| g.values.iter().find(|v| v.name == *a))
                .filter_map(|v| v.value)
                .collect();
            let s = numalab_stats::Summary::of(&vals)?;
            (vals.len() >= 2).then(|| Spread {
                event: a.to_string(),
                runs: vals.len(),
                min: s.min,
                median: s.median,
                max: s.max,
                spread_pct: if s.median > 0.0 {
                    (s.max - s.min) / s.median * 100.0
                } else {
                    0.0
                },
            })
        })
        .collect()
}

/// Evaluates metrics from live groups: each metric from the group planned for it (one
/// time base); in `--exact` a metric whose events span runs is normalised by each
/// run's instructions.
fn evaluate_live(
    catalog: &Catalog,
    names: &[String],
    profile: &Profile,
    exact: bool,
) -> Vec<MetricValue> {
    let software: Vec<&EventValue> = profile.events.iter().filter(|e| e.software).collect();
    let instr_name = catalog.anchors()[1];
    let instr_ref = profile
        .spread
        .iter()
        .find(|s| s.event == instr_name)
        .map(|s| s.median);
    names
        .iter()
        .filter_map(|n| catalog.metric(n))
        .map(|def| {
            let evs = def.events();
            let hw: Vec<&String> = evs
                .iter()
                .filter(|e| !software.iter().any(|s| &&s.name == e))
                .collect();
            // A group holding all its hardware events, preferring one planned for it.
            let home = profile
                .groups
                .iter()
                .filter(|g| hw.iter().all(|e| g.values.iter().any(|v| &&v.name == e)))
                .max_by_key(|g| g.metrics.contains(&def.name));
            let mut across = false;
            let table: Vec<EventValue> = match home {
                Some(g) if !hw.is_empty() => g.values.clone(),
                _ if exact && !hw.is_empty() => {
                    across = true;
                    hw.iter()
                        .filter_map(|e| {
                            let g = profile
                                .groups
                                .iter()
                                .find(|g| g.values.iter().any(|v| &&v.name == e))?;
                            let mut v = g.values.iter().find(|v| &&v.name == e)?.clone();
                            let run_instr = g
                                .values
                                .iter()
                                .find(|v| v.name == instr_name)
                                .and_then(|v| v.value);
                            if let (Some(x), Some(ri), Some(rr)) = (v.value, run_instr, instr_ref) {
                                if ri > 0.0 {
                                    v.value = Some(x * rr / ri);
                                }
                            }
                            Some(v)
                        })
                        .collect()
                }
                _ => profile.events.clone(),
            };
            let mut all = table;
            all.extend(software.iter().map(|s| (*s).clone()));
            let look = metrics::lookup(&all, "not counted");
            let mut m = metrics::evaluate(def, &look);
            m.across_runs = across;
            m.min_running_fraction = evs
                .iter()
                .filter_map(|e| all.iter().find(|v| &v.name == e))
                .filter_map(|v| v.running_fraction)
                .reduce(f64::min);
            m
        })
        .collect()
}

fn multiplex_warnings(profile: &Profile, warnings: &mut Vec<Warning>) {
    let partial: Vec<String> = profile
        .events
        .iter()
        .filter(|e| e.state == EventState::Counted)
        .filter_map(|e| {
            let f = e.running_fraction?;
            (f < 0.999).then(|| format!("{} {:.0}%", e.name, f * 100.0))
        })
        .collect();
    if !partial.is_empty() {
        warnings.push(
            Warning::new(
                "pmu.multiplexed",
                format!(
                    "the kernel multiplexed the counters: only part of the run was counted for {} (values are scaled up)",
                    partial.join(", ")
                ),
            )
            .with_remedy("use --exact for short runs and hot loops"),
        );
    }
}

fn unsupported_warning(profile: &Profile, hardware: bool, warnings: &mut Vec<Warning>) {
    if !hardware {
        return; // one line (pmu.no_hardware) says it all
    }
    let names: Vec<&str> = profile
        .events
        .iter()
        .filter(|e| e.state == EventState::NotSupported)
        .map(|e| e.name.as_str())
        .collect();
    if !names.is_empty() {
        warnings.push(Warning::new(
            "pmu.unsupported",
            format!(
                "not supported by this PMU (reported as not available, not 0): {}",
                names.join(", ")
            ),
        ));
    }
    let untrusted: Vec<&str> = profile
        .events
        .iter()
        .filter(|e| e.state == EventState::Untrusted)
        .map(|e| e.name.as_str())
        .collect();
    if !untrusted.is_empty() {
        warnings.push(Warning::new(
            "pmu.untrusted",
            format!(
                "read 0 where real hardware must count, so not counted here (kept in the record, left out of every metric and the verdict): {}",
                untrusted.join(", ")
            ),
        ));
    }
    let never: Vec<&str> = profile
        .events
        .iter()
        .filter(|e| e.state == EventState::NotCounted)
        .map(|e| e.name.as_str())
        .collect();
    if !never.is_empty() {
        warnings.push(
            Warning::new(
                "pmu.not_counted",
                format!("never scheduled on a counter: {}", never.join(", ")),
            )
            .with_remedy("use --exact, or free the counter the NMI watchdog holds (sysctl kernel.nmi_watchdog=0, as an administrator)"),
        );
    }
}

/// A profile from a `perf stat` file. `cpu` is `--cpu-model` (else the catalog is
/// guessed from the event names, else `fallback`, e.g. this machine's).
pub fn from_import(
    path: &Path,
    cpu: Option<CpuMatch>,
    fallback: Option<CpuMatch>,
    metrics_set: &str,
    extra_events: &[String],
) -> Result<Profiled, ProfileError> {
    let (format, lines) = import::read(path)?;
    let mut warnings = Vec::new();
    let cpu = match cpu {
        Some(c) => c,
        None => match import::guess_catalog(&lines) {
            Some(g) => {
                warnings.push(
                    Warning::new(
                        "pmu.import.cpu_guessed",
                        format!("CPU model guessed from the event names: {}", g.cpu),
                    )
                    .with_remedy("pass --cpu-model to be sure"),
                );
                g
            }
            None => {
                let f = fallback.ok_or_else(|| {
                    CatalogError::NoCatalog(format!(
                        "{}: cannot tell which CPU recorded these counts; pass --cpu-model ({})",
                        path.display(),
                        catalog::shipped().join(", ")
                    ))
                })?;
                warnings.push(
                    Warning::new(
                        "pmu.import.cpu_assumed",
                        format!(
                            "the event names fit several CPUs: assumed this machine's ({})",
                            f.cpu
                        ),
                    )
                    .with_remedy("pass --cpu-model for the machine that recorded the file"),
                );
                f
            }
        },
    };
    let catalog = catalog::load_match(&cpu)?;
    let (names, _) = selection(&catalog, metrics_set, extra_events)?;
    let (events, mut w) = import::to_events(&catalog, &lines);
    warnings.append(&mut w);
    let names = if names.is_empty() && !metrics_set.trim().eq_ignore_ascii_case("none") {
        computable(&catalog, &events)
    } else {
        names
    };
    let mut profile = Profile {
        cpu,
        source: Source {
            kind: "imported".into(),
            path: Some(path.display().to_string()),
            format: Some(format.name().into()),
        },
        mode: "import".into(),
        scope: None,
        hardware_pmu: None,
        counters: None,
        metric_set: metrics_set.into(),
        command: Vec::new(),
        events,
        groups: Vec::new(),
        runs: Vec::new(),
        spread: Vec::new(),
        metrics: Vec::new(),
        tree: None,
        coverage: None,
    };
    let untrusted = crate::trust::mark(&mut profile.events, &mut []);
    if !untrusted.is_empty() {
        warnings.push(Warning::new(
            "pmu.untrusted",
            format!(
                "read 0 where real hardware must count, so not counted there (left out of every metric and the verdict): {}",
                untrusted.join(", ")
            ),
        ));
    }
    profile.metrics = metrics::evaluate_all(&catalog, &names, &profile.events);
    multiplex_warnings(&profile, &mut warnings);
    let extra = metrics::evaluate_all(
        &catalog,
        &unselected_computable(&catalog, &names, &profile.events),
        &profile.events,
    );
    profile.tree = Some(tree_over(&catalog, &profile.metrics, extra));
    profile.coverage = Some(coverage_of(&profile));
    Ok(Profiled { profile, warnings })
}
