//! `numalab evaluate`: the main job. Characterizes this machine step by step, writing
//! every record to `DIR/results.jsonl` the moment it exists, then `summary.json` and a
//! self-contained `report.html`.
//!
//! Resuming: each step ends with an `evaluate.step` record. A rerun with the same
//! `--out` skips steps that have one; a step that was cut short is run again, and
//! inside it every unit of work (a matrix cell, a pair) whose record is already in the
//! journal is skipped, so nothing measured is lost or duplicated, whatever the moment
//! the previous run was killed.

use crate::record::{OutputArgs, Recorder};
use crate::{CliError, CliResult};
use clap::Args;
use numalab_schema::record::RecordKind;
use numalab_schema::{interrupt, ErrorClass, Machine, Origin, Record, Warning};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;

/// `numalab evaluate`.
#[derive(Debug, Args)]
#[command(after_help = "A rerun with the same --out folder resumes where the last run stopped.")]
pub struct EvaluateArgs {
    /// Short measurements (about a minute on a small machine).
    #[arg(long)]
    pub quick: bool,
    /// Output folder: results.jsonl (journal), summary.json, report.html.
    #[arg(long, value_name = "DIR", default_value = "numalab-out")]
    pub out: PathBuf,
    /// Steps to leave out (comma-separated step ids; see --list-steps).
    #[arg(long, value_delimiter = ',', value_name = "STEP")]
    pub skip: Vec<String>,
    /// Print the steps and exit.
    #[arg(long)]
    pub list_steps: bool,
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum StepStatus {
    /// Completed.
    Done,
    /// Not run, and why (the machine cannot do it, or the user left it out).
    Skipped {
        /// Why.
        reason: String,
    },
    /// Failed; the other steps went on.
    Failed {
        /// The error.
        error: String,
    },
}

/// The record closing a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Step id.
    pub step: String,
    /// Step title.
    pub title: String,
    /// Outcome.
    pub outcome: StepStatus,
    /// Seconds spent in this run of the step.
    pub seconds: f64,
}

impl RecordKind for StepRecord {
    const KIND: &'static str = "evaluate.step";
}

/// What a step gets to work with.
pub struct Ctx<'a> {
    /// This machine.
    pub machine: &'a Machine,
    /// Where records go.
    pub rec: &'a mut Recorder,
    /// `--quick`.
    pub quick: bool,
    /// The overall progress bar (steps can set its message).
    pub progress: &'a indicatif::ProgressBar,
    /// Pinning and memory placement on this machine.
    pub placer: &'a dyn numalab_topo::bind::Placer,
}

type StepFn = fn(&mut Ctx<'_>) -> Result<StepStatus, CliError>;

/// A step of the evaluation.
pub struct Step {
    /// Stable id (used in record keys and --skip).
    pub id: &'static str,
    /// What it does, for people.
    pub title: &'static str,
    /// The work.
    pub run: StepFn,
}

/// The steps, in order.
pub fn steps() -> Vec<Step> {
    vec![
        Step {
            id: "topology",
            title: "topology and doctor",
            run: step_topology,
        },
        Step {
            id: "bandwidth",
            title: "memory bandwidth (thread sweep, node matrix)",
            run: step_bandwidth,
        },
        Step {
            id: "latency",
            title: "memory latency (curve, node matrix)",
            run: step_latency,
        },
        Step {
            id: "loaded",
            title: "loaded latency",
            run: step_loaded,
        },
        Step {
            id: "c2c",
            title: "core-to-core latency and structure",
            run: step_c2c,
        },
        Step {
            id: "migrate",
            title: "page migration",
            run: step_migrate,
        },
        Step {
            id: "pmu",
            title: "PMU check",
            run: step_pmu,
        },
        Step {
            id: "workload",
            title: "reference workload",
            run: step_workload,
        },
        Step {
            id: "power",
            title: "power and frequency",
            run: step_power,
        },
    ]
}

/// The machine description as a record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopologyRecord {
    /// The machine.
    pub machine: Machine,
    /// The short summary as printed by `numalab topo`.
    pub summary_text: String,
}

impl RecordKind for TopologyRecord {
    const KIND: &'static str = "topo.machine";
}

impl RecordKind for super::doctor::DoctorReport {
    const KIND: &'static str = "doctor.report";
}

fn step_topology(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    if !ctx.rec.done("topology/machine") {
        let payload = TopologyRecord {
            machine: ctx.machine.clone(),
            summary_text: numalab_topo::render::summary(ctx.machine),
        };
        ctx.rec
            .push(Record::new("topology/machine", Origin::Measured, &payload))?;
    }
    if !ctx.rec.done("topology/doctor") {
        let report = super::doctor::collect(ctx.machine);
        ctx.rec
            .push(Record::new("topology/doctor", Origin::Measured, &report))?;
    }
    Ok(StepStatus::Done)
}

fn step_pmu(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    if !ctx.rec.done("pmu/check") {
        let check = numalab_pmu::check::check(&ctx.machine.cpu, std::path::Path::new("/"));
        let mut rec = Record::new("pmu/check", Origin::Measured, &check);
        if !check.capability.hardware_pmu() {
            rec = rec.with_warnings(vec![Warning::new("no_hardware_pmu", check.verdict.clone())]);
        }
        ctx.rec.push(rec)?;
    }
    Ok(StepStatus::Done)
}

/// Memory probes write through this: records to the journal at once, cells already
/// there skipped, progress on the overall bar.
struct MemSink<'a, 'b> {
    rec: &'a mut Recorder,
    progress: &'b indicatif::ProgressBar,
    title: &'static str,
}

impl numalab_mem::Sink for MemSink<'_, '_> {
    fn done(&self, key: &str) -> bool {
        self.rec.done(key)
    }
    fn push(&mut self, record: Record) -> Result<(), numalab_mem::MemError> {
        self.rec
            .push(record)
            .map_err(|e| numalab_mem::MemError::Output(e.message))
    }
    fn progress(&mut self, label: &str, done: u64, total: u64) {
        self.progress
            .set_message(format!("{}: {label} {done}/{total}", self.title));
    }
}

/// Runs mem plans in order; the step fails if every plan failed, and says which cells
/// failed otherwise.
fn run_mem_plans(
    ctx: &mut Ctx<'_>,
    title: &'static str,
    plans: Vec<Result<MemPlan, numalab_mem::MemError>>,
) -> Result<StepStatus, CliError> {
    let budgets = numalab_mem::budget::Budgets::live(ctx.machine);
    let mut failures = Vec::new();
    let mut ran = 0;
    for plan in plans {
        let plan = match plan {
            Ok(p) => p,
            // A plan the machine cannot run (no memory for it, one node) is a note, not a failure.
            Err(e) => {
                failures.push(e.to_string());
                continue;
            }
        };
        let notes = match &plan {
            MemPlan::Bandwidth(p) => &p.notes,
            MemPlan::Latency(p) => &p.notes,
            MemPlan::Loaded(p) => &p.notes,
            MemPlan::Migrate(p) => &p.notes,
        };
        ctx.progress.suspend(|| {
            for n in notes {
                eprintln!("numalab: {title}: note: {n}");
            }
        });
        let mut sink = MemSink {
            rec: ctx.rec,
            progress: ctx.progress,
            title,
        };
        let outcome = match &plan {
            MemPlan::Bandwidth(p) => {
                numalab_mem::bandwidth::run(p, ctx.machine, ctx.placer, &mut sink)
            }
            MemPlan::Latency(p) => numalab_mem::latency::run(p, ctx.machine, ctx.placer, &mut sink),
            MemPlan::Loaded(p) => numalab_mem::loaded::run(p, ctx.machine, ctx.placer, &mut sink),
            MemPlan::Migrate(p) => {
                numalab_mem::migrate::run(p, ctx.machine, &budgets, ctx.placer, &mut sink)
            }
        };
        if outcome.interrupted {
            return Ok(StepStatus::Done);
        }
        ran += 1;
        failures.extend(outcome.failed.iter().map(|(k, e)| format!("{k}: {e}")));
    }
    if ran == 0 {
        return Ok(StepStatus::Failed {
            error: failures.join("; "),
        });
    }
    if !failures.is_empty() {
        ctx.progress.suspend(|| {
            for f in &failures {
                eprintln!("numalab: {title}: {f}");
            }
        });
    }
    Ok(StepStatus::Done)
}

/// A plan of any memory probe.
enum MemPlan {
    Bandwidth(numalab_mem::bandwidth::Plan),
    Latency(numalab_mem::latency::Plan),
    Loaded(numalab_mem::loaded::Plan),
    Migrate(numalab_mem::migrate::Plan),
}

fn multi_node(m: &Machine) -> bool {
    m.numa_nodes.iter().filter(|n| n.memory_bytes > 0).count() > 1
}

fn step_bandwidth(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    use numalab_mem::bandwidth;
    let budgets = numalab_mem::budget::Budgets::live(ctx.machine);
    let m = ctx.machine;
    let mut plans = Vec::new();
    if ctx.quick {
        plans.push(bandwidth::quick_plan(m, &budgets).map(MemPlan::Bandwidth));
    } else {
        // 1, 2, 4, ... threads and all PUs, data first-touched locally.
        let cpus = m.pu_ids();
        let mut threads: Vec<usize> = std::iter::successors(Some(1usize), |t| Some(t * 2))
            .take_while(|t| *t < cpus.len())
            .collect();
        threads.push(cpus.len());
        plans.push(
            bandwidth::plan(
                m,
                &budgets,
                &cpus,
                &threads,
                &numalab_topo::bind::MemPolicy::FirstTouch,
                bandwidth::Options::defaults(m),
            )
            .map(MemPlan::Bandwidth),
        );
    }
    if multi_node(m) {
        let opts = if ctx.quick {
            bandwidth::Options::quick(m)
        } else {
            bandwidth::Options::defaults(m)
        };
        plans.push(bandwidth::plan_matrix(m, &budgets, &[], opts).map(MemPlan::Bandwidth));
    }
    run_mem_plans(ctx, "bandwidth", plans)
}

fn step_latency(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    use numalab_mem::latency;
    let budgets = numalab_mem::budget::Budgets::live(ctx.machine);
    let m = ctx.machine;
    let mut plans = vec![if ctx.quick {
        latency::quick_plan(m, &budgets).map(MemPlan::Latency)
    } else {
        let opts = latency::Options::defaults(m);
        let cpu = m.pu_ids()[0];
        let sizes = latency::default_sizes(m, cpu, 2, opts.stride_bytes);
        latency::plan(
            m,
            &budgets,
            &[cpu],
            &numalab_topo::bind::MemPolicy::FirstTouch,
            &[
                numalab_mem::PageRequest::Base,
                numalab_mem::PageRequest::Thp,
            ],
            sizes,
            opts,
        )
        .map(MemPlan::Latency)
    }];
    if multi_node(m) {
        // Fitted to small nodes (the plan's notes say so) rather than refused.
        let (size, note) =
            latency::fitted_idle_size(m, &budgets, &numalab_mem::bandwidth::memory_nodes(m));
        plans.push(
            latency::plan_matrix(
                m,
                &budgets,
                &[numalab_mem::PageRequest::Thp],
                size,
                latency::Options::idle(m),
            )
            .map(|mut p| {
                p.notes.extend(note);
                MemPlan::Latency(p)
            }),
        );
    }
    run_mem_plans(ctx, "latency", plans)
}

fn step_loaded(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    if ctx.machine.pus.len() < 2 {
        return Ok(StepStatus::Skipped {
            reason: "one PU: no CPU is left to generate traffic".into(),
        });
    }
    let budgets = numalab_mem::budget::Budgets::live(ctx.machine);
    let plan = numalab_mem::loaded::quick_plan(ctx.machine, &budgets).map(MemPlan::Loaded);
    run_mem_plans(ctx, "loaded latency", vec![plan])
}

fn step_migrate(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    let budgets = numalab_mem::budget::Budgets::live(ctx.machine);
    let plan = numalab_mem::migrate::quick_plan(ctx.machine, &budgets).map(MemPlan::Migrate);
    run_mem_plans(ctx, "migrate", vec![plan])
}

fn step_c2c(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    if ctx.machine.pus.len() < 2 {
        return Ok(StepStatus::Skipped {
            reason: "one PU: there is no pair to measure".into(),
        });
    }
    ctx.progress.set_message("core-to-core latency");
    super::c2c::evaluate_step(ctx.machine, ctx.placer, ctx.rec, ctx.quick)?;
    Ok(StepStatus::Done)
}

/// The built-in request workload: one client, then one per PU; with the default
/// (not `--quick`) also the interleaved and replicated data modes at full load.
fn step_workload(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    use numalab_workload::{Mode, RunConfig};
    let pus = ctx.machine.pus.len().max(1);
    let mut configs = Vec::new();
    for threads in [1, pus] {
        let mut c = RunConfig::quick(threads);
        if ctx.quick {
            c.duration_s = 3.0;
            c.warmup_s = 0.5;
        }
        if !configs.contains(&c) {
            configs.push(c);
        }
    }
    if !ctx.quick {
        for mode in [Mode::SharedInterleaved, Mode::Replicated] {
            let mut c = RunConfig::quick(pus);
            c.mode = mode;
            configs.push(c);
        }
    }
    let todo: Vec<&RunConfig> = configs.iter().filter(|c| !ctx.rec.done(&c.key())).collect();
    if todo.is_empty() {
        return Ok(StepStatus::Done);
    }
    ctx.progress
        .set_message("reference workload: generating the road network");
    let (graph, generation_s) = numalab_workload::run::timed_generate(&todo[0].graph)?;
    for c in todo {
        if interrupt::requested() {
            break;
        }
        ctx.progress.set_message(format!(
            "reference workload: {} thread(s), {}",
            c.threads, c.mode
        ));
        let outcome = numalab_workload::run_on(
            &graph,
            generation_s,
            c,
            ctx.machine,
            ctx.placer,
            &mut |_| {},
        )?;
        // A run cut short by Ctrl-C is not kept: a rerun measures it whole.
        if !outcome.run.interrupted {
            ctx.rec.push(outcome.record())?;
        }
    }
    Ok(StepStatus::Done)
}

/// Sensors and frequencies found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PowerCheck {
    /// Readable sensors.
    pub sensors: Vec<numalab_sensors::Sensor>,
    /// cpufreq domains at the time of the check.
    pub frequencies: Vec<numalab_schema::machine::FrequencyDomain>,
}

impl RecordKind for PowerCheck {
    const KIND: &'static str = "power.check";
}

fn step_power(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    let sensors = numalab_sensors::discover(std::path::Path::new("/"));
    let frequencies = ctx.machine.frequencies.clone();
    if sensors.is_empty() && frequencies.is_empty() {
        return Ok(StepStatus::Skipped {
            reason: "no readable power sensors (powercap, hwmon) and no cpufreq interface on this machine".into(),
        });
    }
    if !ctx.rec.done("power/check") {
        ctx.rec.push(Record::new(
            "power/check",
            Origin::Measured,
            &PowerCheck {
                sensors,
                frequencies,
            },
        ))?;
    }
    Ok(StepStatus::Done)
}

/// Runs `numalab evaluate`.
pub fn run(args: EvaluateArgs) -> CliResult {
    let all = steps();
    if args.list_steps {
        for s in &all {
            println!("{:<10} {}", s.id, s.title);
        }
        return Ok(());
    }
    for s in &args.skip {
        if !all.iter().any(|x| x.id == s) {
            let ids: Vec<&str> = all.iter().map(|x| x.id).collect();
            return Err(CliError::new(
                ErrorClass::Usage,
                format!("--skip {s}: no such step (steps: {})", ids.join(", ")),
            ));
        }
    }
    let machine = numalab_topo::live()?;
    let output = OutputArgs {
        json: false,
        out: Some(args.out.clone()),
    };
    let config = serde_json::json!({ "quick": args.quick, "skip": args.skip });
    let mut rec = Recorder::new(
        &output,
        config,
        Origin::Measured,
        numalab_topo::system::host(&machine),
    )?;
    let finished: Vec<String> = rec
        .previous
        .iter()
        .filter_map(|r| r.decode::<StepRecord>().and_then(Result::ok))
        .filter(|s| !matches!(s.outcome, StepStatus::Failed { .. }))
        .map(|s| s.step)
        .collect();
    if !rec.previous.is_empty() {
        eprintln!(
            "numalab: resuming {}: {} record(s) kept, {} step(s) already finished",
            args.out.display(),
            rec.previous.len(),
            finished.len()
        );
    }
    let placer = numalab_topo::bind::HwlocPlacer::new()?;
    let progress = indicatif::ProgressBar::new(all.len() as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
            .expect("static template")
            .progress_chars("=> "),
    );
    rec.set_progress(Some(progress.clone()));
    let mut failed = 0;
    for step in &all {
        progress.set_message(step.title);
        if interrupt::requested() {
            break;
        }
        let key = format!("evaluate/step/{}", step.id);
        if finished.iter().any(|s| s == step.id) || rec.done(&key) {
            progress.inc(1);
            continue;
        }
        let start = Instant::now();
        let outcome = if args.skip.iter().any(|s| s == step.id) {
            StepStatus::Skipped {
                reason: "left out with --skip".into(),
            }
        } else {
            let mut ctx = Ctx {
                machine: &machine,
                rec: &mut rec,
                quick: args.quick,
                progress: &progress,
                placer: &placer,
            };
            match (step.run)(&mut ctx) {
                Ok(o) => o,
                Err(e) => StepStatus::Failed { error: e.message },
            }
        };
        if interrupt::requested() {
            // The step stopped early: no closing record, so a rerun finishes it.
            break;
        }
        if let StepStatus::Failed { error } = &outcome {
            failed += 1;
            progress.suspend(|| eprintln!("numalab: step {} failed: {error}", step.id));
        }
        let record = StepRecord {
            step: step.id.into(),
            title: step.title.into(),
            outcome,
            seconds: start.elapsed().as_secs_f64(),
        };
        rec.push(Record::new(key, Origin::Measured, &record))?;
        progress.inc(1);
    }
    progress.finish_and_clear();
    if interrupt::requested() {
        return Err(CliError::new(
            ErrorClass::Interrupted,
            format!("interrupted; everything measured so far is in {}; run the same command again to resume", args.out.display()),
        ));
    }
    let (bundle, warnings) = numalab_schema::journal::read_bundle(&args.out)?;
    for w in warnings {
        eprintln!("numalab: warning: {w}");
    }
    let steps_done: Vec<StepRecord> = bundle
        .records_of::<StepRecord>()
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    let summary = serde_json::json!({
        "schema_version": numalab_schema::record::SCHEMA_VERSION,
        "host": bundle.envelope.host.hostname,
        "topology_hash": bundle.envelope.host.topology_hash,
        "records": bundle.records.len(),
        "steps": steps_done,
    });
    let summary_path = args.out.join("summary.json");
    std::fs::write(
        &summary_path,
        serde_json::to_string_pretty(&summary).expect("summary serializes"),
    )
    .map_err(|e| {
        CliError::new(
            ErrorClass::Runtime,
            format!("{}: cannot write it: {e}", summary_path.display()),
        )
    })?;
    for s in &steps_done {
        let status = match &s.outcome {
            StepStatus::Done => "done".to_string(),
            StepStatus::Skipped { reason } => format!("skipped: {reason}"),
            StepStatus::Failed { error } => format!("FAILED: {error}"),
        };
        println!("{:<10} {status}", s.step);
    }
    println!("results in {}", args.out.display());
    if failed > 0 {
        return Err(CliError::new(
            ErrorClass::Partial,
            format!("{failed} step(s) failed; the others produced results"),
        ));
    }
    Ok(())
}
