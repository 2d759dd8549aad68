//! One counting session of `numalab profile`, as a library: the core counters with
//! their metrics and decision tree (`numalab-pmu`), the uncore PMUs counted system-wide
//! over the same time (`numalab-uncore`), hot-spot samples (`--sample`) and data-address
//! samples (`--memory-samples`, `numalab-memaccess`), each record pushed to a [`Sink`]
//! under a key this crate computes ([`Keys`]), a key the sink already has skipped.
//!
//! [`plan`] checks everything that can be checked before the subject runs (the catalog,
//! the metric and event names, exact mode's groups, the sampled event against the PMU);
//! [`run`] counts. What went wrong without stopping the session (the command failed, no
//! hardware event could be counted, data-address sampling was refused) comes back as
//! [`Problem`]s with their exit classes, the records kept; the caller decides what to
//! print and how to exit.

pub mod kernels;
pub mod listing;
pub mod offline;
pub mod point;
pub mod progress;
pub mod request;

use numalab_memaccess::{AnalysisOptions, NamedRegion, RecordOptions};
use numalab_pmu::capability::Capability;
use numalab_pmu::catalog::{self, CpuMatch};
use numalab_pmu::count;
use numalab_pmu::profile::{self, Profile, ProfileConfig, Profiled, Subject};
use numalab_pmu::sample::{self, SampleConfig};
use numalab_schema::sink::Sink;
use numalab_schema::{Classify, ErrorClass, Origin, Record};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A failure with its exit class and the words for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Exit class.
    pub class: ErrorClass,
    /// One line: what, and what to do.
    pub message: String,
}

impl Problem {
    /// A problem of `class`.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Problem {
        Problem {
            class,
            message: message.into(),
        }
    }

    fn of(e: impl Classify + std::fmt::Display) -> Problem {
        Problem::new(e.class(), e.to_string())
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Problem {}

/// A problem's exit class is its own: callers turn it into their error with `?`.
impl Classify for Problem {
    fn class(&self) -> ErrorClass {
        self.class
    }
}

/// What is counted.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A command numalab starts (argv, run without a shell unless `shell`).
    Command {
        /// The command and its arguments.
        argv: Vec<String>,
        /// Run through `/bin/sh -c`.
        shell: bool,
        /// Kill it (and its process group) after this long.
        timeout: Option<Duration>,
    },
    /// A running process and the threads it creates.
    Pid(i32),
    /// Every CPU, while the command runs or (without one) until the duration or Ctrl-C.
    AllCpus {
        /// The command, if any (empty: none).
        argv: Vec<String>,
        /// Run through `/bin/sh -c`.
        shell: bool,
        /// Kill it after this long.
        timeout: Option<Duration>,
    },
}

/// How to count: what `numalab profile`'s flags choose.
#[derive(Debug, Clone)]
pub struct Options {
    /// What is counted.
    pub target: Target,
    /// The CPU whose catalog is used.
    pub cpu: CpuMatch,
    /// Metric set (`first-pass`, a group, names; empty with `events` alone).
    pub metrics: String,
    /// Extra events, comma-separated lists as given.
    pub events: Vec<String>,
    /// Exact mode: one run per group, no multiplexing.
    pub exact: bool,
    /// Programmable counters per CPU (None: the catalog's).
    pub counters: Option<usize>,
    /// Interval mode.
    pub interval: Option<Duration>,
    /// Stop counting a process or the system after this long.
    pub duration: Option<Duration>,
    /// Count the uncore PMUs beside the core counters.
    pub uncore: bool,
    /// After counting, sample this event for hot spots.
    pub sample: Option<String>,
    /// Samples per second of `sample`.
    pub sample_freq: u64,
    /// Sample every N events instead.
    pub sample_period: Option<u64>,
    /// After counting, sample data addresses.
    pub memory_samples: bool,
    /// How slow loads are chosen (data-address samples).
    pub analysis: AnalysisOptions,
    /// Named address ranges (data-address samples).
    pub regions: Vec<NamedRegion>,
}

/// The kernel's highest sampling frequency (`kernel.perf_event_max_sample_rate`) and
/// where the figure comes from; the kernel's default (100000) when it cannot be read.
pub fn max_sample_rate() -> (u64, &'static str) {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .map(|v| (v, "kernel.perf_event_max_sample_rate"))
        .unwrap_or((
            100_000,
            "the kernel's default limit; kernel.perf_event_max_sample_rate is unreadable here",
        ))
}

/// `--sample-freq` must lie within 1 and the kernel's limit `max` (from
/// [`max_sample_rate`]): a usage error naming the range, not the kernel's "Invalid
/// argument" after the counting has run.
pub fn check_sample_freq(hz: u64, (max, source): (u64, &str)) -> Result<(), Problem> {
    if (1..=max.max(1)).contains(&hz) {
        return Ok(());
    }
    Err(Problem::new(
        ErrorClass::Usage,
        format!(
            "--sample-freq {hz} is outside the allowed range of 1 to {} samples per second ({source}); give a value in it, or --sample-period N",
            max.max(1)
        ),
    ))
}

/// The record keys of a session: the counts, and the samples when asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    /// `pmu.profile`: `profile:{mode}:{argv}`, `profile:pid:{pid}`,
    /// `profile:system-wide[:{argv}]`.
    pub profile: String,
    /// `pmu.samples`: `samples:{event}:{argv}`.
    pub samples: Option<String>,
    /// `pmu.memaccess`: `memaccess:{argv}` or `memaccess:pid:{pid}`.
    pub memaccess: Option<String>,
}

impl Keys {
    /// The key of a `perf stat` file imported (`numalab profile --import FILE`).
    pub fn import(path: &std::path::Path) -> String {
        format!("profile:import:{}", path.display())
    }

    /// The key of another tool's data-address samples imported (`--import FILE` of
    /// `perf script` memory samples).
    pub fn memaccess_import(path: &std::path::Path) -> String {
        format!("memaccess:import:{}", path.display())
    }

    /// The key of a comparison of two profiles (`--compare BASE NEW`), by their labels.
    pub fn compare(base: &str, new: &str) -> String {
        format!("compare:{base}:{new}")
    }
}

/// The metric set a session counts: the one named, none when only events were named,
/// else `first-pass` (the decision tree's first level).
pub fn metric_set(metrics: Option<&str>, events_named: bool) -> String {
    match (metrics, events_named) {
        (Some(m), _) => m.to_string(),
        (None, true) => String::new(),
        (None, false) => "first-pass".into(),
    }
}

/// A checked session.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The options planned.
    pub options: Options,
    /// The record keys.
    pub keys: Keys,
    subject: Subject,
    config: ProfileConfig,
    sample: Option<SampleConfig>,
}

impl Plan {
    /// The subject as `numalab-pmu` counts it.
    pub fn subject(&self) -> &Subject {
        &self.subject
    }
}

fn spec(argv: &[String], shell: bool, timeout: Option<Duration>) -> numalab_proc::Spec {
    numalab_proc::Spec {
        argv: argv.to_vec(),
        shell,
        timeout,
        ..Default::default()
    }
}

/// Checks the session against the catalog and the PMU before anything runs.
pub fn plan(options: Options, cap: &Capability) -> Result<Plan, Problem> {
    if (options.sample.is_some() || options.memory_samples) && options.sample_period.is_none() {
        check_sample_freq(options.sample_freq, max_sample_rate())?;
    }
    // The kernel takes periods of 1 to 2^63 - 1 events (EINVAL otherwise, after the run).
    if let Some(n) = options
        .sample_period
        .filter(|n| !(1..=i64::MAX as u64).contains(n))
    {
        return Err(Problem::new(
            ErrorClass::Usage,
            format!(
                "--sample-period {n}: give 1 to {} events between samples",
                i64::MAX
            ),
        ));
    }
    let cat = catalog::load_match(&options.cpu).map_err(Problem::of)?;
    let (names, extra) =
        profile::selection(&cat, &options.metrics, &options.events).map_err(Problem::of)?;
    let counters = options.counters.unwrap_or(cat.counters);
    if options.exact {
        count::plan_exact(&cat, &names, &extra, counters)
            .map_err(|e| Problem::new(ErrorClass::Usage, e))?;
    }
    let sample_event = options
        .sample
        .as_deref()
        .map(|e| sample::resolve(&cat, e))
        .transpose()
        .map_err(Problem::of)?;
    if let Some(ev) = &sample_event {
        if !ev.encoding.is_software() && !cap.hardware_pmu() {
            return Err(Problem::new(
                ErrorClass::Unsupported,
                format!(
                    "cannot sample {}: no hardware PMU here ({}); --sample cpu-clock works on every machine",
                    ev.name,
                    cap.verdict()
                ),
            ));
        }
    }
    let mode = if options.exact { "exact" } else { "default" };
    let (subject, argv) = match &options.target {
        Target::Command {
            argv,
            shell,
            timeout,
        } => (Subject::Command(spec(argv, *shell, *timeout)), argv.clone()),
        Target::Pid(pid) => (Subject::Pid(*pid), Vec::new()),
        Target::AllCpus {
            argv,
            shell,
            timeout,
        } => (
            Subject::AllCpus((!argv.is_empty()).then(|| spec(argv, *shell, *timeout))),
            argv.clone(),
        ),
    };
    let command = argv.join(" ");
    let profile_key = match &subject {
        Subject::Command(_) => format!("profile:{mode}:{command}"),
        Subject::Pid(pid) => format!("profile:pid:{pid}"),
        Subject::AllCpus(None) => "profile:system-wide".to_string(),
        Subject::AllCpus(Some(_)) => format!("profile:system-wide:{command}"),
    };
    let keys = Keys {
        profile: profile_key,
        samples: sample_event
            .as_ref()
            .map(|ev| format!("samples:{}:{command}", ev.name)),
        memaccess: options.memory_samples.then(|| match &subject {
            Subject::Pid(pid) => format!("memaccess:pid:{pid}"),
            _ => format!("memaccess:{command}"),
        }),
    };
    let config = ProfileConfig {
        cpu: options.cpu.clone(),
        metrics: options.metrics.clone(),
        events: options.events.clone(),
        exact: options.exact,
        counters: options.counters,
        sysroot: PathBuf::from("/"),
        interval: options.interval,
        duration: options.duration,
    };
    let sample = sample_event.map(|event| SampleConfig {
        event,
        frequency_hz: options.sample_freq,
        period: options.sample_period,
        include_kernel: cap.privileged || cap.paranoid.is_some_and(|p| p <= 1),
    });
    Ok(Plan {
        options,
        keys,
        subject,
        config,
        sample,
    })
}

/// What a session did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The counts were in the sink already (nothing counted now).
    pub already: bool,
    /// Keys of the counting and hot-spot records of this session, to show.
    pub shown: Vec<String>,
    /// Keys of its data-address records, to show.
    pub sampled: Vec<String>,
    /// The command failed or was interrupted; the counts describe that run.
    pub failure: Option<Problem>,
    /// Hardware events were asked for and not one was counted (exit 4).
    pub no_hardware: Option<Problem>,
    /// Data-address sampling was refused (the counts were recorded).
    pub no_sampling: Option<Problem>,
}

impl Outcome {
    /// The problem that decides the exit code: the command's, then no hardware, then
    /// no data-address sampling.
    pub fn decisive(&self) -> Option<&Problem> {
        self.failure
            .as_ref()
            .or(self.no_hardware.as_ref())
            .or(self.no_sampling.as_ref())
    }

    /// The data-address sampling refusal when another problem decides the exit code:
    /// it is said too, else it would go unsaid.
    pub fn also_said(&self) -> Option<&Problem> {
        self.no_sampling
            .as_ref()
            .filter(|_| self.failure.is_some() || self.no_hardware.is_some())
    }
}

/// Who hears a session's progress (the CLI: a progress bar and a line as counting
/// starts); every method shows nothing by default.
pub trait Watch {
    /// Run `run` (0-based) of `runs` starts (exact mode runs the command per group).
    fn run_started(&mut self, _run: usize, _runs: usize) {}
}

impl Watch for () {}

/// Counts the plan's subject (unless the sink has its counts), then samples as asked,
/// each record pushed as it is made.
pub fn run(
    plan: &Plan,
    cap: &Capability,
    sink: &mut dyn Sink,
    watch: &mut dyn Watch,
) -> Result<Outcome, Problem> {
    let opts = &plan.options;
    let keys = &plan.keys;
    let mut out = Outcome {
        shown: vec![keys.profile.clone()],
        ..Default::default()
    };
    let argv = plan.subject.argv();
    if sink.done(&keys.profile) {
        out.already = true;
    } else {
        // Started as the first run starts (after every check), stopped after the last.
        let mut uncore: Option<Result<numalab_uncore::Session, String>> = None;
        let result = profile::profile_subject(
            &plan.subject,
            &plan.config,
            &mut count::PerfBackend,
            cap,
            &mut |run, runs| {
                if run == 0 && opts.uncore && uncore.is_none() {
                    uncore = Some(start_uncore());
                }
                watch.run_started(run, runs);
            },
        );
        let mut p: Profiled = result.map_err(Problem::of)?;
        match uncore.take() {
            Some(Ok(session)) => match session.stop() {
                Ok(u) => p.profile.uncore = Some(u),
                Err(e) => {
                    p.profile.uncore_note = Some(format!("counting the uncore PMUs failed: {e}"))
                }
            },
            Some(Err(why)) => p.profile.uncore_note = Some(why),
            None => {}
        }
        p.check_uncore_consistency();
        out.failure = command_failure(&p.profile, &argv);
        // Ctrl-C is how counting a process or the system ends when no duration was
        // given; with one, it interrupted the count (exit 130, the counts kept).
        if let (Some(a), Some(d)) = (&p.profile.attach, opts.duration) {
            if a.stopped_by == "ctrl-c" {
                out.failure = Some(Problem::new(
                    ErrorClass::Interrupted,
                    format!(
                        "interrupted after {:.1} s of the {} asked for; the counts so far are recorded",
                        a.seconds,
                        humantime::format_duration(d)
                    ),
                ));
            }
        }
        out.no_hardware = no_hardware_counted(&p.profile);
        sink.push(p.into_record(keys.profile.clone()))
            .map_err(|e| Problem::new(ErrorClass::Runtime, e.to_string()))?;
    }
    if let (Some(scfg), Some(skey), None) = (&plan.sample, &keys.samples, &out.failure) {
        if !sink.done(skey) {
            let spec = match &plan.subject {
                Subject::Command(s) | Subject::AllCpus(Some(s)) => s.clone(),
                _ => spec(&argv, false, None),
            };
            let r = sample::sample(&spec, scfg).map_err(Problem::of)?;
            if !r.outcome.success() {
                out.failure = Some(Problem::new(
                    if r.outcome.interrupted {
                        ErrorClass::Interrupted
                    } else {
                        ErrorClass::Runtime
                    },
                    format!(
                        "the command {} during the sampling run",
                        r.outcome.describe()
                    ),
                ));
            }
            sink.push(Record::new(skey.clone(), Origin::Measured, &r))
                .map_err(|e| Problem::new(ErrorClass::Runtime, e.to_string()))?;
        }
        out.shown.push(skey.clone());
    }
    if let (Some(mkey), None) = (&keys.memaccess, &out.failure) {
        if sink.done(mkey) {
            out.sampled.push(mkey.clone());
        } else {
            let target = match &plan.subject {
                Subject::Pid(pid) => numalab_memaccess::Target::Pid {
                    pid: *pid,
                    duration: opts.duration.unwrap_or(Duration::from_secs(10)),
                },
                Subject::Command(s) | Subject::AllCpus(Some(s)) => {
                    numalab_memaccess::Target::Command(s.clone())
                }
                Subject::AllCpus(None) => {
                    numalab_memaccess::Target::Command(spec(&argv, false, None))
                }
            };
            let ropts = RecordOptions {
                analysis: opts.analysis.clone(),
                regions: opts.regions.clone(),
                ..Default::default()
            };
            match numalab_memaccess::record(&target, &ropts) {
                Ok(r) => {
                    sink.push(Record::new(mkey.clone(), Origin::Measured, &r.record))
                        .map_err(|e| Problem::new(ErrorClass::Runtime, e.to_string()))?;
                    out.sampled.push(mkey.clone());
                }
                Err(e) => {
                    out.no_sampling = Some(Problem::new(
                        ErrorClass::Unsupported,
                        format!("--memory-samples: {e}; the counts were recorded"),
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// The uncore PMUs counted system-wide from now (memory controllers, LLC/SLC, links),
/// or why they are not.
fn start_uncore() -> Result<numalab_uncore::Session, String> {
    let root = Path::new("/");
    let d = numalab_uncore::discover(root, &numalab_uncore::packages_from_sysfs(root))
        .map_err(|e| e.to_string())?;
    if d.uncore().next().is_none() {
        let names: Vec<&str> = d.devices.iter().map(|x| x.name.as_str()).collect();
        return Err(format!(
            "no uncore PMU under /sys/bus/event_source/devices (the kernel lists {}): memory-controller, LLC and link traffic cannot be counted here",
            if names.is_empty() { "none".to_string() } else { names.join(", ") }
        ));
    }
    numalab_uncore::Session::start(
        &d,
        &numalab_uncore::What::all(),
        &mut numalab_uncore::PerfBackend,
    )
    .map_err(|e| e.to_string())
}

/// The command's failure (or interruption) as a problem; the counts are kept.
fn command_failure(p: &Profile, argv: &[String]) -> Option<Problem> {
    let bad = p.runs.iter().find(|r| !r.outcome.success())?;
    let o = &bad.outcome;
    let class = if o.interrupted {
        ErrorClass::Interrupted
    } else {
        ErrorClass::Runtime
    };
    Some(Problem::new(
        class,
        format!(
            "the command `{}` {}; the counts above describe that run",
            argv.join(" "),
            o.describe()
        ),
    ))
}

/// Exit 4 (this machine cannot do what was asked) when hardware events were asked for
/// and not one was counted: the record with the software events is kept.
pub fn no_hardware_counted(p: &Profile) -> Option<Problem> {
    let c = p.coverage.as_ref()?;
    if c.hardware_asked == 0 || c.hardware_counted > 0 {
        return None;
    }
    let why = if p.hardware_pmu == Some(false) {
        "the kernel exposes no hardware counters".to_string()
    } else {
        let mut parts = Vec::new();
        if !c.unsupported.is_empty() {
            parts.push(format!("{} not supported", c.unsupported.len()));
        }
        if !c.untrusted.is_empty() {
            parts.push(format!(
                "{} read 0 where hardware must count",
                c.untrusted.len()
            ));
        }
        if !c.not_scheduled.is_empty() {
            parts.push(format!("{} never scheduled", c.not_scheduled.len()));
        }
        if !c.denied_or_failed.is_empty() {
            parts.push(format!("{} denied or failed", c.denied_or_failed.len()));
        }
        format!(
            "of {} hardware events asked for, {}",
            c.hardware_asked,
            parts.join(", ")
        )
    };
    Some(Problem::new(
        ErrorClass::Unsupported,
        format!(
            "not one hardware event could be counted ({why}); the software events were counted and recorded, and offline analysis works (--import a perf stat file from a machine with a PMU)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_frequency_past_the_kernels_limit_is_a_usage_error_with_the_range() {
        let limit = (100_000, "kernel.perf_event_max_sample_rate");
        let e = check_sample_freq(4_294_967_295, limit).unwrap_err();
        assert_eq!(e.class, ErrorClass::Usage);
        assert!(
            e.message
                .contains("--sample-freq 4294967295 is outside the allowed range of 1 to 100000")
                && e.message.contains("kernel.perf_event_max_sample_rate"),
            "{}",
            e.message
        );
        assert!(check_sample_freq(0, limit).is_err());
        assert!(check_sample_freq(1, limit).is_ok());
        assert!(check_sample_freq(100_000, limit).is_ok());
        assert!(check_sample_freq(100_001, limit).is_err());
    }

    #[test]
    fn a_problem_is_an_error_of_its_own_class() {
        let p = Problem::new(ErrorClass::Unsupported, "no PMU here");
        assert_eq!(p.class(), ErrorClass::Unsupported);
        let e: &dyn std::error::Error = &p;
        assert_eq!(e.to_string(), "no PMU here");
        assert_eq!(Problem::of(p.clone()), p);
    }

    #[test]
    fn offline_keys_and_the_metric_set_default() {
        let p = std::path::Path::new("runs/a b.txt");
        assert_eq!(Keys::import(p), "profile:import:runs/a b.txt");
        assert_eq!(Keys::memaccess_import(p), "memaccess:import:runs/a b.txt");
        assert_eq!(Keys::compare("base", "new"), "compare:base:new");
        assert_eq!(metric_set(None, false), "first-pass");
        assert_eq!(metric_set(None, true), "");
        assert_eq!(metric_set(Some("tma-level2"), true), "tma-level2");
    }

    fn options(target: Target) -> Options {
        Options {
            target,
            cpu: catalog::resolve_model("neoverse-n1").unwrap(),
            metrics: "first-pass".into(),
            events: Vec::new(),
            exact: false,
            counters: None,
            interval: None,
            duration: None,
            uncore: true,
            sample: None,
            sample_freq: 999,
            sample_period: None,
            memory_samples: false,
            analysis: AnalysisOptions::default(),
            regions: Vec::new(),
        }
    }

    fn cap() -> Capability {
        numalab_pmu::capability::probe()
    }

    fn command(argv: &[&str]) -> Target {
        Target::Command {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            shell: false,
            timeout: None,
        }
    }

    #[test]
    fn the_keys_name_the_mode_and_the_subject() {
        let p = plan(options(command(&["./a", "-x"])), &cap()).unwrap();
        assert_eq!(p.keys.profile, "profile:default:./a -x");
        assert_eq!(
            (p.keys.samples.as_deref(), p.keys.memaccess.as_deref()),
            (None, None)
        );
        let mut o = options(command(&["./a"]));
        o.exact = true;
        o.sample = Some("cpu-clock".into());
        o.memory_samples = true;
        let p = plan(o, &cap()).unwrap();
        assert_eq!(p.keys.profile, "profile:exact:./a");
        assert!(p.keys.samples.as_deref().unwrap().starts_with("samples:"));
        assert!(p.keys.samples.as_deref().unwrap().ends_with(":./a"));
        assert_eq!(p.keys.memaccess.as_deref(), Some("memaccess:./a"));
        let mut o = options(Target::Pid(42));
        o.memory_samples = true;
        let p = plan(o, &cap()).unwrap();
        assert_eq!(p.keys.profile, "profile:pid:42");
        assert_eq!(p.keys.memaccess.as_deref(), Some("memaccess:pid:42"));
        let none = Target::AllCpus {
            argv: Vec::new(),
            shell: false,
            timeout: None,
        };
        assert_eq!(
            plan(options(none), &cap()).unwrap().keys.profile,
            "profile:system-wide"
        );
    }

    #[test]
    fn a_refused_sampling_is_said_too_when_another_problem_decides() {
        let refused = Problem::new(ErrorClass::Unsupported, "--memory-samples: no");
        let failed = Problem::new(ErrorClass::Runtime, "the command failed");
        let mut o = Outcome {
            no_sampling: Some(refused.clone()),
            ..Default::default()
        };
        assert_eq!((o.decisive(), o.also_said()), (Some(&refused), None));
        o.failure = Some(failed.clone());
        assert_eq!(
            (o.decisive(), o.also_said()),
            (Some(&failed), Some(&refused))
        );
        o.failure = None;
        o.no_hardware = Some(failed.clone());
        assert_eq!(o.also_said(), Some(&refused));
        o.no_sampling = None;
        assert_eq!(o.also_said(), None);
    }

    #[test]
    fn bad_names_are_refused_before_anything_runs() {
        let mut o = options(command(&["true"]));
        o.metrics = "no_such_metric".into();
        let e = plan(o, &cap()).unwrap_err();
        assert_eq!(e.class, ErrorClass::Usage, "{e}");
        let mut o = options(command(&["true"]));
        o.sample = Some("NO_SUCH_EVENT".into());
        assert!(plan(o, &cap()).is_err());
    }
}
