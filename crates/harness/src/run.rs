//! Running the points of a study: each point (a thread count, a policy, a parameter
//! value) `repeat` times, each run through `numalab-proc` with its placement, sampled
//! while it runs, and written as a `harness.run` record the moment it ends.
//!
//! The protocol, in order: runs already in the journal are taken from it (resume);
//! the first run actually started is a pilot: a command that cannot start, or a
//! successful run whose output does not hold the metric, stops the study at once with
//! the reason (nothing else would work either); any other failure is recorded and the
//! study goes on (unless `fail_fast`). Repetitions are interleaved across points
//! (round 1 of every point, then round 2...) so that slow drifts of the machine
//! (temperature, other tenants) spread over all points instead of biasing one, except
//! when a point needs a build step, which is then run once before that point's runs.
//! Ctrl-C stops between runs; a run killed by Ctrl-C is not recorded, so a rerun does it.

use crate::metric::{last_lines, Metric, MetricError};
use crate::plan::PlanError;
use crate::sample::{RunSamples, Sampler, SamplingConfig};
use numalab_proc::{spawn, ProcError, Spec};
use numalab_schema::{interrupt, Classify, ErrorClass, Origin, Record};
use numalab_stats::Interval;
use numalab_topo::bind::MemPolicy;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::Duration;

pub use numalab_records::harness::{BuildRecord, PointStats, ResponseStats, RunRecord};

/// Runs per point unless `--repeat` says otherwise ([`Study::new`]'s).
pub const DEFAULT_REPEAT: usize = 3;

/// The work metric unless `--metric` says otherwise: the wall time of a fixed amount of
/// work ([`Metric::Wall`], [`Study::new`]'s).
pub const DEFAULT_METRIC: &str = "wall";

/// The unit of printed response times unless `--response-unit` says otherwise.
pub const DEFAULT_RESPONSE_UNIT: &str = "as printed";

/// How a study runs the command (shared by scale, policy and sweep).
#[derive(Debug, Clone)]
pub struct Study {
    /// The command and its arguments, with `{threads}`-style placeholders.
    pub command: Vec<String>,
    /// Run through `/bin/sh -c`.
    pub shell: bool,
    /// Extra environment variables (values may hold placeholders too).
    pub env: Vec<(String, String)>,
    /// Per-run timeout.
    pub timeout: Option<Duration>,
    /// The work metric.
    pub metric: Metric,
    /// A printed metric is a time (lower is better) rather than a rate.
    pub lower_is_better: bool,
    /// Per-request response times printed by the program (every match is one request).
    pub response: Option<Metric>,
    /// Unit of the response times as printed ("us", "ms"...).
    pub response_unit: String,
    /// Runs per point.
    pub repeat: usize,
    /// Stop at the first failed run.
    pub fail_fast: bool,
    /// What to sample during runs.
    pub sampling: SamplingConfig,
}

impl Study {
    /// A study of `command` with defaults: wall time, 3 repetitions, power and
    /// frequency sampling.
    pub fn new(command: Vec<String>) -> Self {
        Study {
            command,
            shell: false,
            env: Vec::new(),
            timeout: None,
            metric: Metric::Wall,
            lower_is_better: false,
            response: None,
            response_unit: DEFAULT_RESPONSE_UNIT.into(),
            repeat: DEFAULT_REPEAT,
            fail_fast: false,
            sampling: SamplingConfig::default(),
        }
    }

    /// What the throughput figures count.
    pub fn throughput_unit(&self) -> String {
        match (&self.metric, self.lower_is_better) {
            (Metric::Wall, _) => "runs/s (fixed work: 1 / wall time)".into(),
            (m, true) => format!("1 / ({})", m.text()),
            (m, false) => m.text(),
        }
    }

    /// The run's throughput from its metric value: a rate as printed, or 1 / time.
    pub fn throughput(&self, metric_value: f64) -> Option<f64> {
        let t = match (&self.metric, self.lower_is_better) {
            (Metric::Wall, _) | (_, true) => 1.0 / metric_value,
            _ => metric_value,
        };
        t.is_finite().then_some(t)
    }

    /// A stable id of the study's configuration (`extra` = the plan), used in keys.
    pub fn id(&self, kind: &str, extra: &serde_json::Value) -> String {
        let v = serde_json::json!({
            "kind": kind,
            "command": self.command,
            "shell": self.shell,
            "env": self.env,
            "metric": self.metric.text(),
            "lower_is_better": self.lower_is_better,
            "response": self.response.as_ref().map(|m| m.text()),
            "plan": extra,
        });
        let digest = Sha256::digest(v.to_string().as_bytes());
        digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
    }
}

/// One configuration of a study, run `repeat` times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// For people: "8 threads", "interleave", "DIST=40".
    pub label: String,
    /// For keys: "t8", "interleave", "DIST=40".
    pub key: String,
    /// The command with placeholders substituted.
    pub argv: Vec<String>,
    /// Environment with placeholders substituted.
    pub env: Vec<(String, String)>,
    /// Thread count, when the study sets one.
    pub threads: Option<usize>,
    /// Placement strategy name.
    pub placement: Option<String>,
    /// CPU affinity.
    pub cpus: Option<Vec<u32>>,
    /// Memory policy.
    pub mem_policy: Option<MemPolicy>,
    /// Parameter values (sweeps).
    pub params: BTreeMap<String, String>,
    /// A build command to run once before the point's runs (sweeps).
    pub build: Option<Vec<String>>,
}

/// Where a study's records go, and where a resumed study finds earlier ones: the one
/// protocol of every probe.
pub use numalab_schema::sink::{MemorySink, Sink, SinkError};

/// Progress of a study, for progress bars.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Runs finished (or taken from the journal).
    pub done: usize,
    /// Runs in the study.
    pub total: usize,
    /// The point just finished.
    pub label: String,
    /// Its outcome in a few words ("ok 1.23 s", "failed: exited with status 1", "resumed").
    pub status: String,
}

/// Why a study stopped.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A thread count, node or CPU list does not fit the machine.
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// The metric is wrong.
    #[error("{0}")]
    Metric(#[from] MetricError),
    /// The first run succeeded but its output did not hold the metric.
    #[error("the first run ({label}) exited successfully, but {error}\ncheck --metric against the program's output; the study was stopped before wasting more runs")]
    PilotMetric {
        /// The run.
        label: String,
        /// What went wrong.
        error: MetricError,
    },
    /// The command could not be started.
    #[error("{0}")]
    Start(#[from] ProcError),
    /// Other bad input.
    #[error("{0}")]
    Usage(String),
    /// Records could not be written.
    #[error("cannot write results: {0}")]
    Sink(SinkError),
    /// `fail_fast` and a run failed.
    #[error("stopped at the first failure (--fail-fast): {0}")]
    FailFast(String),
    /// Ctrl-C.
    #[error("interrupted; every finished run was kept (rerun with the same --out to resume)")]
    Interrupted,
}

impl Classify for HarnessError {
    fn class(&self) -> ErrorClass {
        match self {
            HarnessError::Plan(_)
            | HarnessError::Metric(_)
            | HarnessError::PilotMetric { .. }
            | HarnessError::Usage(_) => ErrorClass::Usage,
            HarnessError::Start(e) => e.class(),
            HarnessError::Sink(_) | HarnessError::FailFast(_) => ErrorClass::Runtime,
            HarnessError::Interrupted => ErrorClass::Interrupted,
        }
    }
}

const RESPONSE_KEEP: usize = 20_000;

fn truncate_tail(s: &str, bytes: usize) -> String {
    if s.len() <= bytes {
        return s.to_string();
    }
    let mut start = s.len() - bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}

fn spec_for(argv: &[String], env: &[(String, String)], study: &Study) -> Spec {
    let mut spec = Spec::new(argv.to_vec());
    spec.shell = study.shell;
    spec.env = env.to_vec();
    spec.timeout = study.timeout;
    spec.tail_bytes = 8 * 1024;
    spec.kill_grace = Duration::from_secs(2);
    spec
}

/// Runs a point's build command.
pub fn build(point: &Point, study: &Study) -> Result<BuildRecord, HarnessError> {
    let argv = point.build.clone().unwrap_or_default();
    let spec = spec_for(&argv, &point.env, study);
    let outcome = spawn(&spec)?.wait();
    let ok = outcome.success();
    let failure = (!ok).then(|| {
        format!(
            "the build `{}` {}; end of its output:\n{}",
            argv.join(" "),
            outcome.describe(),
            last_lines(
                &format!("{}{}", outcome.stdout_tail, outcome.stderr_tail),
                10
            )
        )
    });
    if outcome.interrupted {
        return Err(HarnessError::Interrupted);
    }
    Ok(BuildRecord {
        argv,
        ok,
        outcome: Some(outcome),
        failure,
    })
}

fn new_record(
    study_kind: &str,
    study_id: &str,
    point: &Point,
    repetition: usize,
    study: &Study,
) -> RunRecord {
    RunRecord {
        study: study_kind.into(),
        study_id: study_id.into(),
        point: point.label.clone(),
        repetition,
        argv: point.argv.clone(),
        shell: study.shell,
        threads: point.threads,
        placement: point.placement.clone(),
        cpus: point
            .cpus
            .as_ref()
            .map(|c| numalab_schema::cpulist::format(c)),
        mem_policy: point.mem_policy.clone(),
        params: point.params.clone(),
        ok: false,
        failure: None,
        outcome: None,
        metric: study.metric.text(),
        metric_value: None,
        throughput: None,
        response_values: Vec::new(),
        response_count: 0,
        cpus_busy: None,
        utilisation: None,
        samples: RunSamples::default(),
        build: None,
    }
}

/// Runs a point once. Errors only when the command cannot start at all; every other
/// failure (non-zero exit, signal, timeout, missing metric, a placement the kernel
/// refuses) is a record with `ok: false`.
pub fn execute(
    study_kind: &str,
    study_id: &str,
    point: &Point,
    repetition: usize,
    study: &Study,
) -> Result<(RunRecord, Option<MetricError>), HarnessError> {
    let mut spec = spec_for(&point.argv, &point.env, study);
    spec.cpus = point.cpus.clone();
    spec.mem_policy = point.mem_policy.clone();
    if study.metric.needs_stdout() || study.response.is_some() {
        spec.keep_stdout_bytes = 256 << 20;
    }
    let mut record = new_record(study_kind, study_id, point, repetition, study);
    let running = match spawn(&spec) {
        Ok(r) => r,
        Err(e @ ProcError::Placement { .. }) => {
            record.failure = Some(format!("the kernel refused the placement: {e}"));
            return Ok((record, None));
        }
        Err(e) => return Err(e.into()),
    };
    let all_cpus: Vec<u32>;
    let cpus = match &point.cpus {
        Some(c) => c.as_slice(),
        None => {
            all_cpus =
                (0..std::thread::available_parallelism().map_or(1, |n| n.get()) as u32).collect();
            &all_cpus
        }
    };
    let sampler = Sampler::start(&study.sampling, running.pid(), cpus);
    let mut outcome = running.wait();
    record.samples = sampler.finish();
    if outcome.interrupted {
        return Err(HarnessError::Interrupted);
    }
    let busy = outcome.cpus_busy();
    record.cpus_busy = Some(busy);
    record.utilisation = point.threads.map(|t| busy / t as f64);
    let mut metric_error = None;
    if !outcome.success() {
        let mut why = format!("the command {}", outcome.describe());
        let err = last_lines(&outcome.stderr_tail, 5);
        if !err.is_empty() {
            why.push_str(&format!("; end of its stderr:\n{err}"));
        }
        record.failure = Some(why);
    } else {
        match study.metric.value(&outcome) {
            Ok(v) => {
                record.metric_value = Some(v);
                record.throughput = study.throughput(v);
                record.ok = true;
            }
            Err(e) => {
                record.failure = Some(e.to_string());
                metric_error = Some(e);
            }
        }
        if let (true, Some(resp)) = (record.ok, &study.response) {
            match resp.values(&outcome) {
                Ok(values) => {
                    record.response_count = values.len();
                    let step = values.len().div_ceil(RESPONSE_KEEP).max(1);
                    record.response_values = values.into_iter().step_by(step).collect();
                }
                Err(e) => {
                    record.ok = false;
                    record.failure = Some(format!("response times: {e}"));
                }
            }
        }
    }
    let keep = if record.ok { 2048 } else { 8192 };
    outcome.stdout_tail = truncate_tail(&outcome.stdout_tail, keep);
    outcome.stderr_tail = truncate_tail(&outcome.stderr_tail, keep);
    outcome.stdout = None;
    record.outcome = Some(outcome);
    Ok((record, metric_error))
}

fn status_of(r: &RunRecord) -> String {
    match (&r.failure, r.metric_value) {
        (Some(f), _) => format!("failed: {}", f.lines().next().unwrap_or("")),
        (None, Some(v)) => format!("ok {v:.4}"),
        _ => "ok".into(),
    }
}

/// The warning of a failed run (`run_failed`: the point's label and the first line of
/// why; none for a run that went well). A sweep whose program fails at many sizes gives
/// one per run: the terminal says the first and folds the others into one line, and the
/// journal keeps that line ([`numalab_schema::fold`]).
pub fn run_warnings(label: &str, r: &RunRecord) -> Vec<numalab_schema::Warning> {
    r.failure
        .iter()
        .map(|f| {
            numalab_schema::Warning::new(
                "run_failed",
                format!("{label}: {}", f.lines().next().unwrap_or("")),
            )
            .with_remedy("the run's record keeps why (its exit, its output's tail); fix the command or its options and run the study again")
        })
        .collect()
}

/// Runs every point `study.repeat` times (see the module comment for the protocol) and
/// returns the runs of each point, in point order.
pub fn run_points(
    study_kind: &str,
    study_id: &str,
    points: &[Point],
    study: &Study,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Vec<Vec<RunRecord>>, HarnessError> {
    run_points_with(study_kind, study_id, points, study, sink, progress, None).map(|(runs, _)| runs)
}

/// Called once per point, right after its last repetition (while a build step's
/// output is still the point's): gets the record key to use and the point's process
/// spec (command, pinning, memory policy), and returns a record to journal (e.g. a
/// counter profile) or why there is none.
pub type PointHook<'a> = &'a mut dyn FnMut(&str, &Spec) -> Result<Record, String>;

/// [`run_points`] with a hook after each point. Returns the runs and the hook's
/// failures, one sentence each.
pub fn run_points_with(
    study_kind: &str,
    study_id: &str,
    points: &[Point],
    study: &Study,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(&Progress),
    mut hook: Option<PointHook<'_>>,
) -> Result<(Vec<Vec<RunRecord>>, Vec<String>), HarnessError> {
    let mut hook_failures = Vec::new();
    let repeat = study.repeat.max(1);
    let total = points.len() * repeat;
    let interleave = points.iter().all(|p| p.build.is_none());
    let order: Vec<(usize, usize)> = if interleave {
        (0..repeat)
            .flat_map(|r| (0..points.len()).map(move |p| (p, r)))
            .collect()
    } else {
        (0..points.len())
            .flat_map(|p| (0..repeat).map(move |r| (p, r)))
            .collect()
    };
    let key = |p: &Point, r: usize| format!("{study_kind}/{study_id}/{}/r{r}", p.key);
    let mut runs: Vec<Vec<RunRecord>> = vec![Vec::new(); points.len()];
    let mut pilot_done = false;
    let mut built: Option<(usize, BuildRecord)> = None;
    for (done, (pi, rep)) in order.into_iter().enumerate() {
        let point = &points[pi];
        let k = key(point, rep);
        if let Some(Ok(run)) = sink.previous(&k).and_then(|r| r.decode::<RunRecord>()) {
            runs[pi].push(run);
            progress(&Progress {
                done: done + 1,
                total,
                label: point.label.clone(),
                status: "resumed".into(),
            });
            continue;
        }
        if interrupt::requested() {
            return Err(HarnessError::Interrupted);
        }
        // The build step, once per point.
        let mut build_failed = None;
        if point.build.is_some() {
            if built.as_ref().is_none_or(|(b, _)| *b != pi) {
                built = Some((pi, build(point, study)?));
            }
            let b = &built.as_ref().expect("just built").1;
            if !b.ok {
                build_failed = Some(b.clone());
            }
        }
        let (mut record, metric_error) = match build_failed {
            Some(b) => {
                let mut r = new_record(study_kind, study_id, point, rep, study);
                r.failure = b.failure.clone();
                r.build = Some(b);
                (r, None)
            }
            None => execute(study_kind, study_id, point, rep, study)?,
        };
        if record.build.is_none() {
            if let Some((_, b)) = &built {
                if point.build.is_some() && rep == 0 {
                    record.build = Some(b.clone());
                }
            }
        }
        let succeeded_process = record.outcome.as_ref().is_some_and(|o| o.success());
        let warnings = run_warnings(&point.label, &record);
        sink.push(Record::new(k, Origin::Measured, &record).with_warnings(warnings))
            .map_err(HarnessError::Sink)?;
        progress(&Progress {
            done: done + 1,
            total,
            label: point.label.clone(),
            status: status_of(&record),
        });
        if !pilot_done {
            pilot_done = true;
            if let (true, Some(e)) = (succeeded_process, metric_error) {
                return Err(HarnessError::PilotMetric {
                    label: point.label.clone(),
                    error: e,
                });
            }
        }
        if study.fail_fast && !record.ok {
            return Err(HarnessError::FailFast(format!(
                "{}: {}",
                point.label,
                record.failure.clone().unwrap_or_default()
            )));
        }
        runs[pi].push(record);
        if runs[pi].len() == repeat {
            if let Some(h) = hook.as_mut() {
                let hook_key = format!("{study_kind}/{study_id}/{}/hook", point.key);
                if sink.previous(&hook_key).is_none()
                    && !runs[pi]
                        .iter()
                        .any(|r| r.build.as_ref().is_some_and(|b| !b.ok))
                {
                    let mut spec = spec_for(&point.argv, &point.env, study);
                    spec.cpus = point.cpus.clone();
                    spec.mem_policy = point.mem_policy.clone();
                    match h(&hook_key, &spec) {
                        Ok(r) => sink.push(r).map_err(HarnessError::Sink)?,
                        Err(e) => hook_failures.push(format!("{}: {e}", point.label)),
                    }
                }
            }
        }
    }
    for r in &mut runs {
        r.sort_by_key(|x| x.repetition);
    }
    Ok((runs, hook_failures))
}

fn med(v: &[f64]) -> Option<f64> {
    numalab_stats::median(v)
}

/// Summarises a point's runs.
pub fn point_stats(runs: &[RunRecord], response_unit: &str) -> PointStats {
    let ok: Vec<&RunRecord> = runs.iter().filter(|r| r.ok).collect();
    let mut failures: Vec<String> = Vec::new();
    for r in runs.iter().filter(|r| !r.ok) {
        let f = r
            .failure
            .as_deref()
            .unwrap_or("failed")
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        if !failures.contains(&f) {
            failures.push(f);
        }
    }
    let metric: Vec<f64> = ok.iter().filter_map(|r| r.metric_value).collect();
    let thr: Vec<f64> = ok.iter().filter_map(|r| r.throughput).collect();
    let busy: Vec<f64> = ok.iter().filter_map(|r| r.cpus_busy).collect();
    let util: Vec<f64> = ok.iter().filter_map(|r| r.utilisation).collect();
    let resp: Vec<f64> = ok
        .iter()
        .flat_map(|r| r.response_values.iter().copied())
        .collect();
    let response = (!resp.is_empty()).then(|| ResponseStats {
        unit: response_unit.to_string(),
        count: ok.iter().map(|r| r.response_count).sum(),
        p50: numalab_stats::quantile_interval(&resp, 50.0, 0.95).expect("non-empty"),
        p95: numalab_stats::quantile_interval(&resp, 95.0, 0.95).expect("non-empty"),
        p99: numalab_stats::quantile_interval(&resp, 99.0, 0.95).expect("non-empty"),
    });
    let powers: Vec<f64> = ok
        .iter()
        .filter_map(|r| r.samples.power.as_ref()?.total_w)
        .collect();
    let power_w = med(&powers);
    let temps: Vec<f64> = ok
        .iter()
        .filter_map(|r| r.samples.power.as_ref())
        .flat_map(|p| p.sensors.iter().filter_map(|s| s.max_c))
        .collect();
    let khz: Vec<f64> = ok
        .iter()
        .filter_map(|r| r.samples.frequency.as_ref()?.mean_khz)
        .collect();
    let first_power = runs.iter().find_map(|r| r.samples.power.as_ref());
    let first_freq = runs.iter().find_map(|r| r.samples.frequency.as_ref());
    let throughput = numalab_stats::median_interval(&thr);
    PointStats {
        runs: runs.len(),
        ok: ok.len(),
        failures,
        metric: numalab_stats::median_interval(&metric),
        work_per_joule: match (&throughput, power_w) {
            (Some(t), Some(w)) if w > 0.0 => Some(t.estimate / w),
            _ => None,
        },
        throughput,
        outliers: numalab_stats::outliers(&thr).len(),
        throughput_values: thr,
        cpus_busy: med(&busy),
        utilisation: med(&util),
        response,
        power_w,
        power_covers: first_power.and_then(|p| p.total_covers.clone()),
        max_temp_c: temps.iter().copied().reduce(f64::max),
        mean_khz: med(&khz),
        nominal_max_khz: first_freq.and_then(|f| f.nominal_max_khz),
        power_not_available: first_power.and_then(|p| p.not_available.clone()),
        frequency_not_available: first_freq.and_then(|f| f.not_available.clone()),
    }
}

/// A relative interval (ratio of medians a/b) between two points' throughputs.
pub fn ratio(a: &PointStats, b: &PointStats) -> Option<Interval> {
    numalab_stats::ratio_interval(
        &a.throughput_values,
        &b.throughput_values,
        0.95,
        2000,
        numalab_stats::DEFAULT_SEED,
    )
}

/// Scales an interval by a constant (e.g. throughput -> per-thread throughput).
pub fn scaled(i: &Interval, k: f64) -> Interval {
    Interval {
        estimate: i.estimate * k,
        low: i.low * k,
        high: i.high * k,
        ..i.clone()
    }
}
