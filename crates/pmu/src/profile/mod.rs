//! `numalab profile` as a library: run a command under counters (or read a perf file),
//! derive the metrics, walk the decision tree, and return one `pmu.profile` record.
//!
//! The CLI, `numalab sweep --profile` and `numalab evaluate` all call [`profile`] /
//! [`profile_with`] (live) or [`from_import`] (offline), so every profile in a bundle
//! has the same shape whatever produced it.

mod attach;
mod coverage;
mod run;
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

    /// Checks the uncore's consistency rules (`data/rules/uncore.toml`) on the uncore
    /// figures counted beside the profile, when there are any: each check joins the
    /// profile's `consistency` list, each violation a `pmu.inconsistent` warning with
    /// its figures; nothing is adjusted. Call it after `profile.uncore` is set.
    pub fn check_uncore_consistency(&mut self) {
        let Some(u) = &self.profile.uncore else {
            return;
        };
        match crate::consistency::check_uncore(u) {
            Ok(checks) => {
                for c in checks.iter().filter(|c| c.violated()) {
                    let mut w = Warning::new("pmu.inconsistent", c.text.clone());
                    if let Some(why) = &c.cause {
                        w = w.with_remedy(why.clone());
                    }
                    self.warnings.push(w);
                }
                self.profile.consistency.extend(checks);
            }
            Err(e) => self.warnings.push(Warning::new(
                "pmu.consistency_rules",
                format!(
                    "the uncore's consistency rules could not be read, so none was checked: {e}"
                ),
            )),
        }
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
    /// read from this machine's sysfs when the identity lacks it; a CPU numalab ships no
    /// catalog for gets the installed perf's events and metrics when perf lists them).
    pub fn for_cpu(cpu: &numalab_schema::machine::CpuIdentity) -> Result<Self, CatalogError> {
        let m = catalog::detect(cpu, catalog::midr_from_sysfs(Path::new("/")))?;
        Ok(Self::new(catalog::perf::prefer_perf(m)))
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
    // Default mode packs the events into as few groups as the counters allow.
    let headroom = nmi_headroom(&config.sysroot);
    let mut plan: Plan = if config.exact {
        count::plan_exact(&catalog, &names, &extra, counters).map_err(ProfileError::Plan)?
    } else {
        count::plan_packed_with(&catalog, &names, &extra, counters, headroom)
    };
    let fewest = (!config.exact).then_some(plan.groups.len());
    // Intel's topdown-* events count only in a group led by slots.
    count::slots_lead_topdown_groups(&catalog, &mut plan);
    let mut warnings = std::mem::take(&mut plan.warnings);
    let hardware = hardware_or_software(cap, &mut plan, &mut warnings)?;
    let sys = core_pmus(&catalog, config, hardware, &mut warnings);
    let core = sys.primary().cloned();
    let raw_type = core.as_ref().and_then(|c| c.pmu_type);
    let mut standing = match &core {
        Some(c) if hardware => standing_of(&plan, c),
        _ => BTreeMap::new(),
    };
    if hardware && !config.exact {
        split_what_fails(
            &catalog,
            &mut plan,
            backend,
            raw_type,
            &standing,
            &mut warnings,
        );
        if let Some(c) = &core {
            standing = standing_of(&plan, c);
        }
    }
    let include_kernel = kernel_scope(cap, &mut warnings);
    let setup = run::Setup {
        subject,
        config,
        cap,
        plan: &plan,
        hardware,
        raw_type,
        standing: &standing,
        // Its name now: a process that exits while counted leaves no /proc entry.
        comm: match subject {
            Subject::Pid(p) => comm_of(*p),
            _ => None,
        },
        hw_reason: "no hardware PMU here".to_string(),
    };
    let mut counted = run::count_runs(&setup, backend, include_kernel, &mut warnings, progress)?;
    let timeline_raw = std::mem::take(&mut counted.timeline_raw);
    let mut profile = measured_profile(subject, config, hardware, counters, counted);
    if config.exact {
        profile.spread = spreads(&catalog, &profile.groups);
        spread_warnings(&profile, &mut warnings);
    }
    let names = if config.metrics.trim().eq_ignore_ascii_case("none") {
        Vec::new()
    } else if names.is_empty() {
        computable(&catalog, &profile.events)
    } else {
        names
    };
    profile.timeline = timeline(&catalog, &names, &profile, timeline_raw);
    let mux_pmus: Vec<&str> = core
        .iter()
        .map(|c| c.name.as_str())
        .chain(["cpu", "cpu_core"])
        .collect();
    crate::mux::annotate(
        &mut profile,
        crate::mux::mux_interval_ms(&config.sysroot, &mux_pmus),
        fewest,
    );
    profile.metrics = evaluate_live(&catalog, &names, &profile, config.exact);
    multiplex_warnings(&profile, &mut warnings);
    unsupported_warning(&profile, hardware, &mut warnings);
    let extra = evaluate_live(
        &catalog,
        &unselected_computable(&catalog, &names, &profile.events),
        &profile,
        config.exact,
    );
    let checked = [profile.metrics.as_slice(), extra.as_slice()].concat();
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
    check_consistency(&catalog, &mut profile, &checked, &mut warnings);
    Ok(Profiled { profile, warnings })
}

/// Programmable counters to leave free in a packed group: 1 while the NMI watchdog
/// runs (`/proc/sys/kernel/nmi_watchdog` under `sysroot` is 1: it holds a counter
/// through perf, so a group of every counter would never be scheduled), else 0.
fn nmi_headroom(sysroot: &Path) -> usize {
    let on = std::fs::read_to_string(sysroot.join("proc/sys/kernel/nmi_watchdog"))
        .is_ok_and(|t| t.trim() == "1");
    usize::from(on)
}

/// Opens the packed groups once on this thread ([`count::Backend::probe`]) and splits
/// each group in which an event failed into one group per metric
/// ([`count::split_failed_groups`]), so no metric loses its group to another's event;
/// a warning names them. Events the PMU does not advertise are not opened (as in the
/// run), so they split nothing.
fn split_what_fails(
    catalog: &catalog::Catalog,
    plan: &mut Plan,
    backend: &mut dyn Backend,
    raw_type: Option<u32>,
    standing: &BTreeMap<String, (Advertised, String)>,
    warnings: &mut Vec<Warning>,
) {
    let multi = |g: &count::PlanGroup| g.metrics.len() > 1 || g.events.len() > g.metrics.len();
    if !plan.groups.iter().any(multi) {
        return;
    }
    let blocked = |e: &EventRef| {
        standing
            .get(&e.name)
            .is_some_and(|(a, _)| *a == Advertised::NotListed)
    };
    let groups: Vec<Vec<EventRef>> = plan
        .groups
        .iter()
        .map(|g| g.events.iter().filter(|e| !blocked(e)).cloned().collect())
        .collect();
    let probed = backend.probe(&groups, raw_type);
    // Back to the plan's members: an event not opened stands as working (it is not
    // opened in the run either), and so does one denied (permission is not a matter of
    // grouping: the run says so on its own).
    let statuses: Vec<Vec<count::OpenStatus>> = plan
        .groups
        .iter()
        .zip(&probed)
        .map(|(g, st)| {
            let mut opened = g.events.iter().filter(|e| !blocked(e)).zip(st);
            g.events
                .iter()
                .map(|e| match blocked(e) {
                    true => EventStatus::Works,
                    false => match opened.next() {
                        Some((_, EventStatus::Denied(_))) | None => EventStatus::Works,
                        Some((_, s)) => s.clone(),
                    },
                })
                .collect()
        })
        .collect();
    let moved = count::split_failed_groups(catalog, plan, &statuses);
    if moved.is_empty() {
        return;
    }
    count::slots_lead_topdown_groups(catalog, plan);
    warnings.push(Warning::new(
        "pmu.packed_split",
        format!(
            "an event did not open in its packed group, so {} {} counted in a group of {} own instead (as one group per metric would), the rest of the group as packed ({} groups)",
            moved.join(", "),
            if moved.len() == 1 { "is" } else { "are" },
            if moved.len() == 1 { "its" } else { "their" },
            plan.groups.len()
        ),
    ));
}

/// Whether a hardware PMU counts here. A PMU that counts either anchor is a hardware
/// PMU: an emulated Arm PMU without `inst_retired` (QEMU without -icount) refuses the
/// generic instructions event but counts cycles; what it does not advertise is sorted
/// out per event. Without one, the software events fit in one run (and a warning says
/// so); without even the task clock, nothing can be counted.
fn hardware_or_software(
    cap: &Capability,
    plan: &mut Plan,
    warnings: &mut Vec<Warning>,
) -> Result<bool, ProfileError> {
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
    Ok(hardware)
}

/// What the core PMUs advertise (Arm: unlisted events are not opened; elsewhere
/// nothing is read), with a warning when the cores differ.
fn core_pmus(
    catalog: &Catalog,
    config: &ProfileConfig,
    hardware: bool,
    warnings: &mut Vec<Warning>,
) -> advertised::PmuSysfs {
    let sys = if catalog.arch == catalog::Arch::Arm {
        advertised::read(&config.sysroot)
    } else {
        advertised::PmuSysfs::default()
    };
    if hardware {
        if let Some(w) = sys.heterogeneous() {
            warnings.push(
                Warning::new("pmu.heterogeneous", w)
                    .with_remedy("pin the command to one kind of core (taskset -c CPUS) so every count covers the whole run"),
            );
        }
    }
    sys
}

/// Per raw event of the plan: whether the core PMU advertises it, and why not.
fn standing_of(plan: &Plan, core: &CorePmu) -> BTreeMap<String, (Advertised, String)> {
    plan.groups
        .iter()
        .flat_map(|g| &g.events)
        .filter_map(|e| match e.encoding {
            catalog::Encoding::Raw(code) => {
                Some((e.name.clone(), (core.advertises(code), core.why_not(code))))
            }
            _ => None,
        })
        .collect()
}

/// Whether kernel mode can be counted; a warning when only user space is.
fn kernel_scope(cap: &Capability, warnings: &mut Vec<Warning>) -> bool {
    let include_kernel = cap.privileged || cap.paranoid.is_some_and(|p| p <= 1);
    if !include_kernel {
        warnings.push(Warning::new(
            "pmu.user_only",
            format!(
                "counting user space only: kernel-mode counting needs perf_event_paranoid <= 1 (it is {}) or CAP_PERFMON",
                cap.paranoid.map_or("unknown".into(), |p| p.to_string())
            ),
        ));
    }
    include_kernel
}

/// The measured profile of what the runs counted: software events as their median
/// over runs, the events summarized, zeros where hardware must count marked not
/// counted (never fed to a metric); metrics, tree and coverage still to come.
fn measured_profile(
    subject: &Subject,
    config: &ProfileConfig,
    hardware: bool,
    counters: usize,
    counted: run::Counted,
) -> Profile {
    let software = median_software(&counted.software_runs);
    let mut profile = Profile {
        cpu: config.cpu.clone(),
        source: Source {
            kind: "measured".into(),
            path: None,
            format: None,
        },
        mode: if config.exact { "exact" } else { "default" }.into(),
        scope: Some(
            if counted.include_kernel {
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
        groups: counted.groups,
        runs: counted.runs,
        spread: Vec::new(),
        metrics: Vec::new(),
        tree: None,
        consistency: Vec::new(),
        coverage: None,
        attach: counted.attachment,
        interval_ms: config.interval.map(|d| d.as_millis() as u64),
        timeline: Vec::new(),
        uncore: None,
        uncore_note: None,
        multiplexing: None,
    };
    profile.events = summarize_events(&profile.groups, &software);
    let mut group_values: Vec<&mut Vec<EventValue>> =
        profile.groups.iter_mut().map(|g| &mut g.values).collect();
    crate::trust::mark(&mut profile.events, &mut group_values);
    profile
}

/// The catalog's consistency rules over the metrics as counted, selected or computed
/// for the tree (`metrics`; recorded, never used to adjust a value): a warning per
/// violated rule, with its likely cause.
fn check_consistency(
    catalog: &Catalog,
    profile: &mut Profile,
    metrics: &[MetricValue],
    warnings: &mut Vec<Warning>,
) {
    let counting = crate::consistency::Counting {
        groups: &profile.groups,
        exact: profile.mode == "exact",
    };
    match crate::consistency::rules_for(catalog)
        .map(|rules| crate::consistency::check(&rules, metrics, &counting))
    {
        Ok(checks) => {
            for c in checks.iter().filter(|c| c.violated()) {
                let mut w = Warning::new("pmu.inconsistent", c.text.clone());
                if let Some(why) = &c.cause {
                    w = w.with_remedy(why.clone());
                }
                warnings.push(w);
            }
            profile.consistency = checks;
        }
        Err(e) => warnings.push(Warning::new(
            "pmu.consistency_rules",
            format!("the consistency rules could not be read, so none was checked: {e}"),
        )),
    }
}

/// A warning per event whose count varied by more than 5% between the runs of --exact.
fn spread_warnings(profile: &Profile, warnings: &mut Vec<Warning>) {
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
        consistency: Vec::new(),
        coverage: None,
        attach: None,
        interval_ms: None,
        timeline: Vec::new(),
        uncore: None,
        uncore_note: None,
        multiplexing: None,
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
    // perf stat's percentages give the running fraction, not the rotations.
    crate::mux::apply(&mut profile.events, None);
    profile.multiplexing = crate::mux::summary(&[], &profile.events, None, None, None);
    profile.metrics = metrics::evaluate_all(&catalog, &names, &profile.events);
    multiplex_warnings(&profile, &mut warnings);
    let extra = metrics::evaluate_all(
        &catalog,
        &unselected_computable(&catalog, &names, &profile.events),
        &profile.events,
    );
    let checked = [profile.metrics.as_slice(), extra.as_slice()].concat();
    profile.tree = Some(tree_over(&catalog, &profile.metrics, extra));
    profile.coverage = Some(coverage_of(&profile));
    check_consistency(&catalog, &mut profile, &checked, &mut warnings);
    Ok(Profiled { profile, warnings })
}
