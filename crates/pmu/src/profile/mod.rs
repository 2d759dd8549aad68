//! `numalab profile` as a library: run a command under counters (or read a perf file),
//! derive the metrics, walk the decision tree, and return one `pmu.profile` record.
//!
//! The CLI, `numalab sweep --profile` and `numalab evaluate` all call [`profile`] /
//! [`profile_with`] (live) or [`from_import`] (offline), so every profile in a bundle
//! has the same shape whatever produced it.

mod attach;
mod coverage;
mod values;

pub use attach::parse_cpu_list;
use attach::*;

pub use coverage::not_computable;
use coverage::*;
use values::*;

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
use std::time::Duration;

// What a profile records lives in numalab-records.
pub use numalab_records::pmu::{
    Attachment, Coverage, GroupRecord, IntervalPoint, NotComputable, Profile, RunRecord, Source,
    Spread,
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
    /// Interval mode: read the counters this often and keep a timeline (at least 10 ms).
    pub interval: Option<Duration>,
    /// Stop counting a running process or the whole system after this long.
    pub duration: Option<Duration>,
}

/// The shortest interval of interval mode: below it the reads themselves (one
/// `read()` per group and thread or CPU) become a visible part of what is counted.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// What to count.
#[derive(Debug, Clone)]
pub enum Subject {
    /// A command numalab starts (and reruns per group in `--exact` mode).
    Command(Spec),
    /// A running process (`--pid`): every thread it has, and those they create.
    Pid(i32),
    /// Every CPU (`--all-cpus`): while the command runs, or without one until
    /// `--duration` or Ctrl-C.
    AllCpus(Option<Spec>),
}

impl Subject {
    /// The command's argv, when there is one.
    pub fn argv(&self) -> Vec<String> {
        match self {
            Subject::Command(s) | Subject::AllCpus(Some(s)) => s.argv.clone(),
            Subject::Pid(_) | Subject::AllCpus(None) => Vec::new(),
        }
    }
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
            interval: None,
            duration: None,
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
    /// The process to attach to does not exist.
    #[error("{0}")]
    NoProcess(String),
}

impl Classify for ProfileError {
    fn class(&self) -> ErrorClass {
        match self {
            ProfileError::Catalog(e) => e.class(),
            ProfileError::Proc(e) => e.class(),
            ProfileError::Import(e) => e.class(),
            ProfileError::Plan(_) | ProfileError::NoProcess(_) => ErrorClass::Usage,
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
    profile_subject(
        &Subject::Command(spec.clone()),
        config,
        backend,
        cap,
        progress,
    )
}

/// Checks the combination of subject and options before anything runs.
fn check_subject(subject: &Subject, config: &ProfileConfig) -> Result<(), ProfileError> {
    if let Some(iv) = config.interval {
        if iv < MIN_INTERVAL {
            return Err(ProfileError::Plan(format!(
                "--interval {} ms is below 10 ms: reading every counter that often disturbs what is counted; use 10ms or more",
                iv.as_secs_f64() * 1e3
            )));
        }
        if config.exact {
            return Err(ProfileError::Plan(
                "--interval needs one run (the default mode): --exact runs the command once per group, so no timeline covers every event".into(),
            ));
        }
    }
    let attached = !matches!(subject, Subject::Command(_));
    if attached && config.exact {
        return Err(ProfileError::Plan(
            "--exact runs the command once per group; a running process or the whole system cannot be run again: use the default mode".into(),
        ));
    }
    if config.duration.is_some()
        && matches!(subject, Subject::Command(_) | Subject::AllCpus(Some(_)))
    {
        return Err(ProfileError::Plan(
            "--duration stops counting a running process (--pid) or the whole system (--all-cpus); a command is stopped with --timeout".into(),
        ));
    }
    if let Subject::Pid(pid) = subject {
        if *pid <= 0 || !Path::new(&format!("/proc/{pid}")).exists() {
            return Err(ProfileError::NoProcess(format!(
                "--pid {pid}: no such process (nothing under /proc/{pid}); check the pid with `ps`"
            )));
        }
    }
    Ok(())
}

/// Profiles `subject` with `backend`: a command (as [`profile_with`]), a running process
/// or every CPU, optionally in interval mode. `progress(run, runs)` is called before
/// each run.
pub fn profile_subject(
    subject: &Subject,
    config: &ProfileConfig,
    backend: &mut dyn Backend,
    cap: &Capability,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Profiled, ProfileError> {
    check_subject(subject, config)?;
    let catalog = catalog::load_match(&config.cpu)?;
    let (names, extra) = selection(&catalog, &config.metrics, &config.events)?;
    let counters = config.counters.unwrap_or(catalog.counters);
    let mut plan: Plan = if config.exact {
        count::plan_exact(&catalog, &names, &extra, counters).map_err(ProfileError::Plan)?
    } else {
        count::plan_default(&catalog, &names, &extra, counters)
    };
    // Intel's topdown-* events count only in a group led by slots.
    count::slots_lead_topdown_groups(&catalog, &mut plan);
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
    let mut attachment: Option<Attachment> = None;
    // Its name now: a process that exits while counted leaves no /proc entry.
    let comm = match subject {
        Subject::Pid(p) => comm_of(*p),
        _ => None,
    };
    let mut timeline_raw: Vec<(f64, f64, Vec<GroupRecord>, Vec<EventValue>)> = Vec::new();
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

        // The command (gated: the counters are open before it runs) and the target.
        let command = match subject {
            Subject::Command(spec) | Subject::AllCpus(Some(spec)) => {
                let mut child_spec = spec.clone();
                child_spec.gated = true;
                Some(numalab_proc::spawn(&child_spec)?)
            }
            Subject::Pid(_) | Subject::AllCpus(None) => None,
        };
        let target = match (subject, &command) {
            (Subject::Command(_), Some(r)) => count::Target::Child(r.pid()),
            (Subject::Pid(pid), _) => count::Target::Threads(threads_of(*pid)?),
            _ => count::Target::Cpus(online_cpus(&config.sysroot)),
        };
        let opts = |include_kernel| OpenOptions {
            include_kernel,
            raw_type,
        };
        let mut session = backend.open(&target, &to_open, opts(include_kernel));
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
            session = backend.open(&target, &to_open, opts(include_kernel));
        }
        let statuses = session.statuses();
        // Nothing opened and permission was among the reasons: say what would allow it.
        if !statuses.iter().flatten().any(EventStatus::works)
            && statuses
                .iter()
                .flatten()
                .any(|s| matches!(s, EventStatus::Denied(_)))
        {
            if let Some(r) = command {
                drop(r.wait());
            }
            return Err(ProfileError::Denied(denied_text(subject, cap)));
        }
        let started = std::time::Instant::now();
        let mut waiter = None;
        if let Some(mut r) = command {
            r.release()?;
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(r.wait());
            });
            waiter = Some(rx);
        }
        // Count until the command ends, the process exits, --duration or Ctrl-C; read
        // at every interval.
        let mut last: Option<Vec<Result<count::GroupReading, String>>> = None;
        let mut last_t = 0.0;
        let mut next_tick = config.interval;
        let poll = std::time::Duration::from_millis(20);
        let (outcome, stopped_by) = loop {
            let now = started.elapsed();
            let mut wait = poll;
            if let Some(t) = next_tick {
                wait = wait.min(t.saturating_sub(now));
            }
            if let Some(rx) = &waiter {
                match rx.recv_timeout(wait) {
                    Ok(o) => {
                        let by = if o.interrupted {
                            "ctrl-c"
                        } else if o.timed_out {
                            "timeout"
                        } else {
                            "command ended"
                        };
                        break (Some(o), by);
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                        return Err(ProfileError::Unsupported(
                            "the thread waiting for the command died".into(),
                        ))
                    }
                }
            } else {
                std::thread::sleep(wait);
                if numalab_schema::interrupt::requested() {
                    break (None, "ctrl-c");
                }
                if let Subject::Pid(pid) = subject {
                    if !alive(*pid) {
                        break (None, "process exited");
                    }
                }
                if config.duration.is_some_and(|d| started.elapsed() >= d) {
                    break (None, "duration");
                }
            }
            if let (Some(iv), Some(t)) = (config.interval, next_tick) {
                if started.elapsed() >= t {
                    let readings = session.read();
                    let end = started.elapsed().as_secs_f64();
                    timeline_raw.push(interval_of(
                        &run_groups,
                        &opened_hw,
                        &readings,
                        last.as_deref(),
                        &statuses,
                        hardware,
                        &blocked,
                        &sw_counted,
                        hw_opened,
                        &hw_reason,
                        (last_t, end),
                    ));
                    last = Some(readings);
                    last_t = end;
                    next_tick = Some(t + iv);
                }
            }
        };
        let readings = session.read();
        let seconds = started.elapsed().as_secs_f64();
        if config.interval.is_some() && seconds > last_t {
            timeline_raw.push(interval_of(
                &run_groups,
                &opened_hw,
                &readings,
                last.as_deref(),
                &statuses,
                hardware,
                &blocked,
                &sw_counted,
                hw_opened,
                &hw_reason,
                (last_t, seconds),
            ));
        }
        if !matches!(subject, Subject::Command(_)) {
            attachment = Some(Attachment {
                kind: match subject {
                    Subject::Pid(_) => "pid",
                    _ => "system-wide",
                }
                .into(),
                pid: match subject {
                    Subject::Pid(p) => Some(*p),
                    _ => None,
                },
                comm: comm.clone(),
                threads: match &target {
                    count::Target::Threads(t) => Some(t.len()),
                    _ => None,
                },
                cpus: match &target {
                    count::Target::Cpus(c) => c.clone(),
                    _ => Vec::new(),
                },
                stopped_by: stopped_by.into(),
                seconds,
            });
        }

        let (mut recs, mut sw_values) = assemble(
            &run_groups,
            &opened_hw,
            &readings,
            &statuses,
            hardware,
            &blocked,
            &sw_counted,
            hw_opened,
            &hw_reason,
            run,
        );
        for rec in &mut recs {
            for v in &mut rec.values {
                v.advertised = standing.get(&v.name).map(|(a, _)| *a);
            }
        }
        groups_out.append(&mut recs);
        if plan
            .software
            .iter()
            .any(|e| e.encoding == catalog::Encoding::Wall)
        {
            sw_values.push(match &outcome {
                Some(o) => wall_value(o, run),
                None => wall_of(seconds, run),
            });
        }
        software_runs.push(sw_values);
        let Some(outcome) = outcome else {
            if stopped_by == "ctrl-c" {
                warnings.push(Warning::new(
                    "pmu.interrupted",
                    format!("stopped by Ctrl-C after {seconds:.1} s; the counts cover that time"),
                ));
            }
            break;
        };
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
        command: subject.argv(),
        events: Vec::new(),
        groups: groups_out,
        runs,
        spread: Vec::new(),
        metrics: Vec::new(),
        tree: None,
        coverage: None,
        attach: attachment,
        interval_ms: config.interval.map(|d| d.as_millis() as u64),
        timeline: Vec::new(),
        uncore: None,
        uncore_note: None,
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
    profile.timeline = timeline(&catalog, &names, &profile, timeline_raw);
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
        attach: None,
        interval_ms: None,
        timeline: Vec::new(),
        uncore: None,
        uncore_note: None,
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
