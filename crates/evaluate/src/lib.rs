//! `numalab evaluate` as a library: the main job's steps ([`steps`]), run in order into
//! a [`Sink`] by [`run`] with exact resumption, and the summary and report written
//! from the journal alone by [`write_outputs`]. The command line adds flags, the
//! journal, a progress bar and printing; tests and other callers use a
//! [`numalab_schema::sink::MemorySink`] and their own [`Observer`].
//!
//! Resuming: each step ends with an `evaluate.step` record. A rerun with the same
//! journal skips steps that have one; a step that was cut short is run again, and
//! inside it every unit of work (a matrix cell, a pair) whose record is already in the
//! journal is skipped, so nothing measured is lost or duplicated, whatever the moment
//! the previous run was killed.
//!
//! A resumption is exact: each run writes an `evaluate.run` record with its options and
//! every step record names its run. A step that failed, or that an earlier run left out
//! with `--skip`, is run again by the next run that does not leave it out. A run whose
//! `quick` differs from the folder's first run is refused ([`check_same_options`])
//! unless the old results are moved aside first ([`set_aside`]).

pub mod plans;
pub mod power;
pub mod steps;

pub use numalab_records::evaluate::{
    latest_steps, PowerCheck, RunRecord, StepRecord, StepStatus, TopologyRecord, LEFT_OUT,
};
pub use steps::{steps, Ctx, Step};

use numalab_schema::sink::Sink;
use numalab_schema::{interrupt, Classify, ErrorClass, Machine, Origin, Record, RecordKind};
use numalab_topo::bind::Placer;
use std::path::Path;
use std::time::Instant;

/// Why an evaluation (or one of its steps) could not go on, with its exit class.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    /// Exit class.
    pub class: ErrorClass,
    /// One line for people: what, which input, what to do.
    pub message: String,
}

impl EvalError {
    /// A new error.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        EvalError {
            class,
            message: message.into(),
        }
    }
}

impl Classify for EvalError {
    fn class(&self) -> ErrorClass {
        self.class
    }
}

impl From<numalab_schema::sink::SinkError> for EvalError {
    fn from(e: numalab_schema::sink::SinkError) -> Self {
        EvalError::new(ErrorClass::Runtime, e.0)
    }
}

/// Any classified error as an [`EvalError`].
pub(crate) fn err(e: impl Classify + std::fmt::Display) -> EvalError {
    EvalError::new(e.class(), e.to_string())
}

/// Who shows an evaluation's progress (a progress bar, log lines, nothing).
pub trait Observer {
    /// Step `index` (0-based) of `total` starts.
    fn step_started(&mut self, _index: usize, _total: usize, _step: &Step) {}
    /// A step ended with this record; `None`: an earlier run had finished it.
    fn step_finished(&mut self, _record: Option<&StepRecord>) {}
    /// What the current step is doing now.
    fn message(&mut self, _text: &str) {}
    /// A plan's note for people (a size reduced to fit, a kernel left out).
    fn note(&mut self, _text: &str) {}
}

/// An observer that shows nothing.
impl Observer for () {}

/// Watches each step while it runs and may add records of its own (node power from the
/// BMC sampled during the step): called around every step that runs, also when it
/// fails or is interrupted, so nothing it measured is lost.
pub trait StepMonitor {
    /// The step starts.
    fn step_started(&mut self, _step: &Step) {}
    /// The step ended; records go into `sink` (their failures are the monitor's to
    /// report: a step is never failed by its monitor).
    fn step_ended(&mut self, _step: &Step, _sink: &mut dyn Sink) {}
}

/// A monitor that does nothing.
impl StepMonitor for () {}

/// The options of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// Short measurements.
    pub quick: bool,
    /// Step ids to leave out.
    pub skip: Vec<String>,
    /// The command line of this run, for its `evaluate.run` record.
    pub command: Vec<String>,
}

impl Options {
    /// The configuration the run's envelope records: `quick` (which a resumed run must
    /// match, [`check_same_options`]) and `skip`.
    pub fn config(&self) -> serde_json::Value {
        serde_json::json!({ "quick": self.quick, "skip": self.skip })
    }

    /// Refuses step ids that do not exist.
    pub fn check(&self) -> Result<(), EvalError> {
        let all = steps();
        for s in &self.skip {
            if !all.iter().any(|x| x.id == s) {
                let ids: Vec<&str> = all.iter().map(|x| x.id).collect();
                return Err(EvalError::new(
                    ErrorClass::Usage,
                    format!("--skip {s}: no such step (steps: {})", ids.join(", ")),
                ));
            }
        }
        Ok(())
    }
}

/// Where earlier runs into the same journal left the evaluation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resume {
    /// The number of this run (1 for a new folder).
    pub run: u32,
    /// The latest closing record of every step closed before.
    pub latest: Vec<StepRecord>,
    /// Steps with nothing left to do.
    pub finished: Vec<String>,
}

impl Resume {
    /// From the records of earlier runs.
    pub fn from_previous(previous: &[Record]) -> Resume {
        let latest = latest_steps(
            previous
                .iter()
                .filter_map(|r| r.decode::<StepRecord>().and_then(Result::ok)),
        );
        let finished = latest
            .iter()
            .filter(|s| s.finished())
            .map(|s| s.step.clone())
            .collect();
        let run = 1 + previous
            .iter()
            .filter(|r| r.kind == RunRecord::KIND)
            .count() as u32;
        Resume {
            run,
            latest,
            finished,
        }
    }

    /// The line announcing a resumed run in `dir`: its number, the records kept and the
    /// steps already finished.
    pub fn announce(&self, dir: &Path, kept: usize) -> String {
        format!(
            "resuming {} (run {} in this folder): {kept} record(s) kept, {} step(s) already finished",
            dir.display(),
            self.run,
            self.finished.len()
        )
    }

    /// What this run will do again, in sentences: steps that failed, steps left out
    /// before and not now.
    pub fn again(&self, skip: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.latest {
            if s.finished() || skip.contains(&s.step) {
                continue;
            }
            match &s.outcome {
                StepStatus::Failed { error } => out.push(format!(
                    "running step {} again: it failed last time ({error})",
                    s.step
                )),
                StepStatus::Skipped { .. } => out.push(format!(
                    "filling in step {}, left out with --skip before",
                    s.step
                )),
                StepStatus::Done => {}
            }
        }
        out
    }

    /// What a resumed run says as it starts: [`Resume::announce`], then
    /// [`Resume::again`]'s sentences.
    pub fn said(&self, dir: &Path, kept: usize, skip: &[String]) -> Vec<String> {
        let mut lines = vec![self.announce(dir, kept)];
        lines.extend(self.again(skip));
        lines
    }
}

/// How a run ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Steps that failed in this run.
    pub failed: usize,
    /// Stopped by Ctrl-C or SIGTERM: the step under way has no closing record.
    pub interrupted: bool,
}

impl Outcome {
    /// The ending of a run stopped by Ctrl-C or SIGTERM (journal in `dir`), if it was.
    pub fn interruption(&self, dir: &Path) -> Option<String> {
        self.interrupted.then(|| {
            format!("interrupted; everything measured so far is in {}; run the same command again to resume", dir.display())
        })
    }

    /// The ending of a run some of whose steps failed, if any did.
    pub fn failures(&self) -> Option<String> {
        (self.failed > 0).then(|| {
            format!(
                "{} step(s) failed; the others produced results",
                self.failed
            )
        })
    }
}

/// Runs the evaluation: its `evaluate.run` record, then every step that is not
/// finished, each closed by an `evaluate.step` record. Steps left out by
/// `opts.skip` are closed as left out (a later run fills them in). Errors are those of
/// the sink; a step's own failure is recorded and the others go on.
pub fn run(
    opts: &Options,
    resume: &Resume,
    machine: &Machine,
    placer: &dyn Placer,
    sink: &mut dyn Sink,
    observer: &mut dyn Observer,
) -> Result<Outcome, EvalError> {
    run_monitored(opts, resume, machine, placer, sink, observer, &mut ())
}

/// [`run`] with a [`StepMonitor`] around every step that runs.
pub fn run_monitored(
    opts: &Options,
    resume: &Resume,
    machine: &Machine,
    placer: &dyn Placer,
    sink: &mut dyn Sink,
    observer: &mut dyn Observer,
    monitor: &mut dyn StepMonitor,
) -> Result<Outcome, EvalError> {
    let run_no = resume.run;
    sink.push(Record::new(
        format!("evaluate/run/{run_no}"),
        Origin::Measured,
        &RunRecord {
            run: run_no,
            command: opts.command.clone(),
            quick: opts.quick,
            skip: opts.skip.clone(),
            started_utc: numalab_schema::record::now_utc(),
        },
    ))?;
    let all = steps();
    let mut out = Outcome::default();
    for (i, step) in all.iter().enumerate() {
        if interrupt::requested() {
            out.interrupted = true;
            break;
        }
        let previous = resume.latest.iter().find(|s| s.step == step.id);
        let leave_out = opts.skip.iter().any(|s| s == step.id);
        if resume.finished.iter().any(|s| s == step.id)
            || (leave_out && previous.is_some_and(StepRecord::left_out))
        {
            observer.step_finished(None);
            continue;
        }
        observer.step_started(i, all.len(), step);
        // The first closing record of a step has the plain key; one that replaces a
        // failed or left-out outcome is keyed by its run, so no record is overwritten.
        let mut key = format!("evaluate/step/{}", step.id);
        if sink.done(&key) {
            key = format!("evaluate/step/{}/run-{run_no}", step.id);
        }
        let start = Instant::now();
        let outcome = if leave_out {
            StepStatus::Skipped {
                reason: LEFT_OUT.into(),
            }
        } else {
            monitor.step_started(step);
            let mut ctx = Ctx {
                machine,
                sink: &mut *sink,
                quick: opts.quick,
                placer,
                observer: &mut *observer,
            };
            let status = match (step.run)(&mut ctx) {
                Ok(o) => o,
                Err(e) => StepStatus::Failed { error: e.message },
            };
            monitor.step_ended(step, &mut *sink);
            status
        };
        if interrupt::requested() {
            // The step stopped early: no closing record, so a rerun finishes it.
            out.interrupted = true;
            break;
        }
        if matches!(outcome, StepStatus::Failed { .. }) {
            out.failed += 1;
        }
        let record = StepRecord {
            step: step.id.into(),
            title: step.title.into(),
            outcome,
            seconds: start.elapsed().as_secs_f64(),
            run: Some(run_no),
        };
        sink.push(Record::new(key, Origin::Measured, &record))?;
        observer.step_finished(Some(&record));
    }
    Ok(out)
}

/// Refuses a resumption whose options would mix differently measured records in one
/// folder. `skip` may differ (left-out steps are filled in later); `quick` may not.
pub fn check_same_options(
    dir: &Path,
    quick_now: bool,
    previous: &numalab_schema::Envelope,
) -> Result<(), EvalError> {
    let dir = dir.display();
    let remedy = format!(
        "choose another --out folder, or add --fresh to move the results in {dir} aside (into {dir}/replaced-TIME/) and start over"
    );
    if !previous.command.iter().skip(1).any(|c| c == "evaluate") {
        return Err(EvalError::new(
            ErrorClass::Usage,
            format!(
                "{dir}: holds the results of another command ({}), not of numalab evaluate; {remedy}",
                previous.command.join(" ")
            ),
        ));
    }
    let quick = previous
        .config
        .get("quick")
        .and_then(|q| q.as_bool())
        .unwrap_or(false);
    if quick != quick_now {
        let (then, now) = if quick {
            ("with --quick", "without --quick")
        } else {
            ("without --quick", "with --quick")
        };
        return Err(EvalError::new(
            ErrorClass::Usage,
            format!(
                "{dir}: holds an evaluation run {then} (started {}), and this run is {now}: their measurements use different sizes and cannot be mixed in one report. To resume it, run it {then}; otherwise {remedy}",
                previous.created_utc
            ),
        ));
    }
    Ok(())
}

/// Files an evaluation writes into its folder.
pub const OUTPUTS: [&str; 3] = [
    numalab_schema::journal::JOURNAL_FILE,
    "summary.json",
    "report.html",
];

/// Start over: moves the journal, summary and report in `dir` into
/// `dir/replaced-TIME/` (nothing is deleted). Returns where they went, or `None` when
/// there was nothing to move. A journal another process is writing is not moved.
pub fn set_aside(dir: &Path) -> Result<Option<std::path::PathBuf>, EvalError> {
    let present: Vec<&str> = OUTPUTS
        .iter()
        .copied()
        .filter(|n| dir.join(n).exists())
        .collect();
    if present.is_empty() {
        return Ok(None);
    }
    let journal = dir.join(numalab_schema::journal::JOURNAL_FILE);
    if let Ok(f) = std::fs::File::open(&journal) {
        // Released when `f` is dropped at the end of this block. Another writer is
        // Busy (exit 6), as for the journal itself.
        numalab_schema::lock::try_exclusive(
            &f,
            &journal,
            "another numalab process",
            "--out folder",
        )
        .map_err(|e| EvalError::new(e.class(), e.to_string()))?;
    }
    let stamp = numalab_schema::record::now_utc().replace(':', "-");
    let mut aside = dir.join(format!("replaced-{stamp}"));
    let mut n = 1;
    while aside.exists() {
        n += 1;
        aside = dir.join(format!("replaced-{stamp}-{n}"));
    }
    let fail = |what: &Path, e: std::io::Error| {
        EvalError::new(
            ErrorClass::Runtime,
            format!("--fresh: cannot move {} aside: {e}", what.display()),
        )
    };
    std::fs::create_dir(&aside).map_err(|e| fail(&aside, e))?;
    for n in present {
        let from = dir.join(n);
        std::fs::rename(&from, aside.join(n)).map_err(|e| fail(&from, e))?;
    }
    Ok(Some(aside))
}

/// What [`write_outputs`] wrote and found.
#[derive(Debug, Clone)]
pub struct Written {
    /// The latest outcome of every step.
    pub steps: Vec<StepRecord>,
    /// The findings, most important first.
    pub findings: Vec<numalab_report::findings::Finding>,
    /// Problems met reading the journal (a cut-off last line...), folded: the first of
    /// each code, then one warning for the rest of it
    /// ([`numalab_report::outcome::folded_warnings`]).
    pub warnings: Vec<numalab_schema::Warning>,
}

/// Writes `summary.json` (steps and findings) and a self-contained `report.html`
/// into `dir`, rendered from its journal alone, as `numalab report` would.
pub fn write_outputs(dir: &Path) -> Result<Written, EvalError> {
    let loaded = numalab_report::load(dir).map_err(err)?;
    let set = [loaded];
    let warnings = numalab_report::outcome::folded_warnings(&set);
    let bundle = &set[0].bundle;
    let steps = latest_steps(
        set[0]
            .records_of::<StepRecord>()
            .into_iter()
            .map(|(_, s)| s),
    );
    let findings = numalab_report::findings::findings(&set);
    let summary = serde_json::json!({
        "schema_version": numalab_schema::record::SCHEMA_VERSION,
        "host": bundle.envelope.host.hostname,
        "topology_hash": bundle.envelope.host.topology_hash,
        "records": set[0].record_count(),
        "steps": steps,
        "findings": findings,
    });
    let write = |name: &str, text: &str| -> Result<(), EvalError> {
        let path = dir.join(name);
        numalab_schema::output::write_file(&path, text.as_bytes(), name, "--out")
            .map_err(|e| EvalError::new(e.class, e.message))
    };
    write(
        "summary.json",
        &serde_json::to_string_pretty(&summary).expect("summary serializes"),
    )?;
    write(
        "report.html",
        &numalab_report::sections::document(&set).to_html(),
    )?;
    Ok(Written {
        steps,
        findings,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_ends_in_words() {
        let dir = Path::new("out");
        let clean = Outcome::default();
        assert_eq!((clean.interruption(dir), clean.failures()), (None, None));
        let cut = Outcome {
            failed: 2,
            interrupted: true,
        };
        assert_eq!(
            cut.interruption(dir).unwrap(),
            "interrupted; everything measured so far is in out; run the same command again to resume"
        );
        assert_eq!(
            cut.failures().unwrap(),
            "2 step(s) failed; the others produced results"
        );
        let resume = Resume {
            run: 3,
            latest: vec![],
            finished: vec!["topo".into(), "c2c".into()],
        };
        assert_eq!(
            resume.announce(dir, 7),
            "resuming out (run 3 in this folder): 7 record(s) kept, 2 step(s) already finished"
        );
        let failed = StepRecord {
            step: "mem".into(),
            title: "memory".into(),
            outcome: StepStatus::Failed {
                error: "boom".into(),
            },
            seconds: 1.0,
            run: Some(2),
        };
        let again = Resume {
            latest: vec![failed],
            ..resume
        };
        assert_eq!(
            again.said(dir, 7, &[]),
            [
                again.announce(dir, 7),
                "running step mem again: it failed last time (boom)".to_string()
            ]
        );
        assert_eq!(again.said(dir, 7, &["mem".to_string()]).len(), 1);
    }

    #[test]
    fn the_recorded_configuration_is_what_a_resume_checks() {
        let opts = Options {
            quick: true,
            skip: vec!["c2c".into()],
            command: vec![],
        };
        let config = opts.config();
        assert_eq!(config, serde_json::json!({"quick": true, "skip": ["c2c"]}));
        let previous = numalab_schema::Envelope {
            schema_version: numalab_schema::record::SCHEMA_VERSION,
            tool: numalab_schema::record::Tool::this("0"),
            created_utc: "2026-01-01T00:00:00Z".into(),
            command: vec!["numalab".into(), "evaluate".into()],
            config,
            origin: numalab_schema::Origin::Measured,
            host: numalab_schema::record::Host::unknown("h"),
        };
        let dir = Path::new("out");
        assert!(check_same_options(dir, true, &previous).is_ok());
        assert!(check_same_options(dir, false, &previous).is_err());
    }
}
