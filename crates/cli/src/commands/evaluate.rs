//! `numalab evaluate`: the main job. Characterizes this machine step by step, writing
//! every record to `DIR/results.jsonl` the moment it exists, then `summary.json` (steps
//! and findings) and a self-contained `report.html`, both rendered from the journal by
//! the same code as `numalab report`.
//!
//! Resuming: each step ends with an `evaluate.step` record. A rerun with the same
//! `--out` skips steps that have one; a step that was cut short is run again, and
//! inside it every unit of work (a matrix cell, a pair) whose record is already in the
//! journal is skipped, so nothing measured is lost or duplicated, whatever the moment
//! the previous run was killed.
//!
//! A resumption is exact: each run writes an `evaluate.run` record with its options and
//! every step record names its run. A step that failed, or that an earlier run left out
//! with `--skip`, is run again by the next run that does not leave it out. A run whose
//! `--quick` differs from the folder's first run is refused (the two would mix sizes
//! under one name) unless `--fresh` moves the old results aside first.

use crate::record::{OutputArgs, Recorder};
use crate::{CliError, CliResult};
use clap::Args;
use numalab_schema::{interrupt, ErrorClass, Machine, Origin, Record, Warning};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

/// `numalab evaluate`.
#[derive(Debug, Args)]
#[command(
    after_help = "A rerun with the same --out folder resumes where the last run stopped: it runs the \
steps that are missing, failed, or were left out with --skip before. It must use the same --quick \
as the run that created the folder; --fresh moves earlier results aside and starts over."
)]
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
    /// Start over: move the results already in --out into DIR/replaced-TIME/ (nothing
    /// is deleted), then run every step.
    #[arg(long)]
    pub fresh: bool,
}

pub use numalab_report::records::{
    PowerCheck, RunRecord, StepRecord, StepStatus, TopologyRecord, LEFT_OUT,
};

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
            title: "memory bandwidth (thread sweep and node matrix)",
            run: step_bandwidth,
        },
        Step {
            id: "latency",
            title: "memory latency (curve and node matrix)",
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

/// Runs memory-probe plans in turn: a plan the machine cannot do skips the step with
/// the reason; cells that fail fail the step (a rerun retries only them).
fn run_mem(
    ctx: &mut Ctx<'_>,
    plans: Vec<Result<MemPlan, numalab_mem::MemError>>,
) -> Result<StepStatus, CliError> {
    use numalab_mem::{bandwidth, latency, loaded, migrate, MemError};
    let budgets = numalab_mem::budget::Budgets::live(ctx.machine);
    let mut failed = Vec::new();
    let mut ran = 0;
    let mut skipped = Vec::new();
    for plan in plans {
        let plan = match plan {
            Ok(p) => p,
            Err(e @ (MemError::Unsupported(_) | MemError::Usage(_))) => {
                skipped.push(e.to_string());
                continue;
            }
            Err(e) => return Err(CliError::from(e)),
        };
        let notes = match &plan {
            MemPlan::Bandwidth(p) => &p.notes,
            MemPlan::Latency(p) => &p.notes,
            MemPlan::Loaded(p) => &p.notes,
            MemPlan::Migrate(p) => &p.notes,
        };
        ctx.progress.suspend(|| {
            for n in notes {
                eprintln!("numalab: note: {n}");
            }
        });
        let mut sink = crate::record::ProgressSink::with_message(&mut *ctx.rec, ctx.progress);
        let o = match &plan {
            MemPlan::Bandwidth(p) => bandwidth::run(p, ctx.machine, ctx.placer, &mut sink),
            MemPlan::Latency(p) => latency::run(p, ctx.machine, ctx.placer, &mut sink),
            MemPlan::Loaded(p) => loaded::run(p, ctx.machine, ctx.placer, &mut sink),
            MemPlan::Migrate(p) => migrate::run(p, ctx.machine, &budgets, ctx.placer, &mut sink),
        };
        ran += 1;
        failed.extend(o.failed.into_iter().map(|(k, e)| format!("{k}: {e}")));
        if o.interrupted || interrupt::requested() {
            break;
        }
    }
    if !failed.is_empty() {
        return Ok(StepStatus::Failed {
            error: format!("{} cell(s) failed: {}", failed.len(), failed.join("; ")),
        });
    }
    if ran == 0 {
        return Ok(StepStatus::Skipped {
            reason: skipped.join("; "),
        });
    }
    Ok(StepStatus::Done)
}

/// A memory-probe plan of any kind.
enum MemPlan {
    Bandwidth(numalab_mem::bandwidth::Plan),
    Latency(numalab_mem::latency::Plan),
    Loaded(numalab_mem::loaded::Plan),
    Migrate(numalab_mem::migrate::Plan),
}

/// Thread counts of a full sweep: 1, 2, 4, ... and every PU.
fn thread_sweep(pus: usize) -> Vec<usize> {
    let mut t: Vec<usize> = std::iter::successors(Some(1usize), |x| Some(x * 2))
        .take_while(|x| *x < pus)
        .collect();
    t.push(pus.max(1));
    t
}

fn step_bandwidth(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    use numalab_mem::bandwidth::{plan, plan_matrix, quick_plan, Options};
    let m = ctx.machine;
    let b = numalab_mem::budget::Budgets::live(m);
    let plans = if ctx.quick {
        // The quick node matrix measures reading (what a node pair's links give one
        // way, as Intel MLC's matrix does) and the STREAM triad; copy and the
        // non-temporal write are in the thread sweep and in a full run's matrix.
        let mut matrix = Options::quick(m);
        matrix
            .kernels
            .retain(|k| matches!(k.name().as_str(), "read" | "triad"));
        vec![quick_plan(m, &b), plan_matrix(m, &b, &[], matrix)]
    } else {
        let cpus = m.pu_ids();
        vec![
            plan(
                m,
                &b,
                &cpus,
                &thread_sweep(cpus.len()),
                &numalab_topo::bind::MemPolicy::FirstTouch,
                Options::defaults(m),
            ),
            plan_matrix(m, &b, &[], Options::defaults(m)),
        ]
    };
    let plans = plans
        .into_iter()
        .map(|p| p.map(MemPlan::Bandwidth))
        .collect();
    run_mem(ctx, plans)
}

fn step_latency(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    use numalab_mem::latency::{
        default_sizes, fitted_idle_size, plan, plan_matrix, quick_plan, Options,
    };
    use numalab_mem::PageRequest;
    let m = ctx.machine;
    let b = numalab_mem::budget::Budgets::live(m);
    // The default working set fitted to small nodes (the plan's notes say so) rather
    // than refused, so that a machine with small nodes still gets its matrix.
    let (idle, fitted) = fitted_idle_size(m, &b, &numalab_mem::bandwidth::memory_nodes(m));
    // Memory latency as the field means it: every node pair, uniformly random over a
    // working set 8x the last-level cache, on huge pages (THP) so that the TLB's reach
    // covers it; and the local pairs again on base pages, whose difference is the
    // cost of page walks.
    let matrix = |o: Options| {
        let huge = plan_matrix(m, &b, &[PageRequest::Thp], idle, o.clone());
        let base = plan_matrix(m, &b, &[PageRequest::Base], idle, o);
        huge.and_then(|mut h| {
            let mut base = base?;
            base.cells
                .retain(|c| c.matrix.is_some_and(|x| x.cpu_node == x.mem_node));
            h.cells.extend(base.cells);
            h.notes.extend(fitted.clone());
            Ok(h)
        })
    };
    let plans = if ctx.quick {
        vec![quick_plan(m, &b), matrix(Options::quick(m))]
    } else {
        let first = m.pu_ids().first().copied().unwrap_or(0);
        let opts = Options::defaults(m);
        vec![
            plan(
                m,
                &b,
                &[first],
                &numalab_topo::bind::MemPolicy::FirstTouch,
                &[PageRequest::Base, PageRequest::Thp],
                default_sizes(m, first, 2, opts.stride_bytes),
                opts,
            ),
            matrix(Options::idle(m)),
        ]
    };
    let plans = plans.into_iter().map(|p| p.map(MemPlan::Latency)).collect();
    run_mem(ctx, plans)
}

fn step_loaded(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    use numalab_mem::loaded::{plan, quick_plan, Options};
    let m = ctx.machine;
    let b = numalab_mem::budget::Budgets::live(m);
    let p = if ctx.quick || m.pu_ids().len() < 2 {
        quick_plan(m, &b)
    } else {
        plan(
            m,
            &b,
            &m.pu_ids(),
            None,
            &numalab_topo::bind::MemPolicy::FirstTouch,
            Options::defaults(m),
        )
    };
    run_mem(ctx, vec![p.map(MemPlan::Loaded)])
}

fn step_migrate(ctx: &mut Ctx<'_>) -> Result<StepStatus, CliError> {
    use numalab_mem::migrate::{plan, quick_plan, Options, PairChoice};
    let m = ctx.machine;
    let b = numalab_mem::budget::Budgets::live(m);
    let p = if ctx.quick {
        quick_plan(m, &b)
    } else {
        plan(
            m,
            &b,
            &PairChoice::NearestFarthest,
            None,
            Options::defaults(),
            false,
        )
    };
    run_mem(ctx, vec![p.map(MemPlan::Migrate)])
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
    if args.fresh {
        set_aside(&args.out)?;
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
    if let Some(previous) = rec.previous_envelope.clone() {
        check_same_options(&args, &previous)?;
    }
    let latest = numalab_report::records::latest_steps(
        rec.previous
            .iter()
            .filter_map(|r| r.decode::<StepRecord>().and_then(Result::ok)),
    );
    let finished: Vec<String> = latest
        .iter()
        .filter(|s| s.finished())
        .map(|s| s.step.clone())
        .collect();
    let run_no = 1 + rec
        .previous
        .iter()
        .filter(|r| r.kind == <RunRecord as numalab_schema::RecordKind>::KIND)
        .count() as u32;
    if rec.previous_envelope.is_some() {
        eprintln!(
            "numalab: resuming {} (run {run_no} in this folder): {} record(s) kept, {} step(s) already finished",
            args.out.display(),
            rec.previous.len(),
            finished.len()
        );
        for s in &latest {
            let again = !s.finished() && !args.skip.contains(&s.step);
            match &s.outcome {
                StepStatus::Failed { error } if again => {
                    eprintln!(
                        "numalab: running step {} again: it failed last time ({error})",
                        s.step
                    )
                }
                StepStatus::Skipped { .. } if again => eprintln!(
                    "numalab: filling in step {}, left out with --skip before",
                    s.step
                ),
                _ => {}
            }
        }
    }
    rec.push(Record::new(
        format!("evaluate/run/{run_no}"),
        Origin::Measured,
        &RunRecord {
            run: run_no,
            command: std::env::args_os()
                .map(|a| numalab_schema::text::os_text(&a))
                .collect(),
            quick: args.quick,
            skip: args.skip.clone(),
            started_utc: numalab_schema::record::now_utc(),
        },
    ))?;
    let placer = numalab_topo::bind::HwlocPlacer::new()?;
    let progress = indicatif::ProgressBar::new(all.len() as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
            .expect("static template")
            .progress_chars("=> "),
    );
    rec.set_progress(Some(progress.clone()));
    let mut failed = 0;
    // Without a terminal (a log, CI, ssh without a tty) the bar does not draw: one
    // line per step on stderr instead, so a long run is never silent.
    let lines = !std::io::stderr().is_terminal();
    for (i, step) in all.iter().enumerate() {
        progress.set_message(step.title);
        if interrupt::requested() {
            break;
        }
        let previous = latest.iter().find(|s| s.step == step.id);
        let leave_out = args.skip.iter().any(|s| s == step.id);
        if finished.iter().any(|s| s == step.id)
            || (leave_out && previous.is_some_and(StepRecord::left_out))
        {
            progress.inc(1);
            continue;
        }
        if lines {
            eprintln!(
                "numalab: step {}/{} {}: {}",
                i + 1,
                all.len(),
                step.id,
                step.title
            );
        }
        // The first closing record of a step has the plain key; one that replaces a
        // failed or left-out outcome is keyed by its run, so no record is overwritten.
        let mut key = format!("evaluate/step/{}", step.id);
        if rec.done(&key) {
            key = format!("evaluate/step/{}/run-{run_no}", step.id);
        }
        let start = Instant::now();
        let outcome = if leave_out {
            StepStatus::Skipped {
                reason: LEFT_OUT.into(),
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
            run: Some(run_no),
        };
        if lines {
            let status = match &record.outcome {
                StepStatus::Done => "done".to_string(),
                StepStatus::Skipped { reason } => format!("skipped ({reason})"),
                StepStatus::Failed { .. } => "failed".to_string(),
            };
            eprintln!(
                "numalab: step {} {status} in {:.1} s",
                step.id, record.seconds
            );
        }
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
    // Everything below is rendered from the journal alone, as `numalab report` would.
    let loaded = numalab_report::load(&args.out)?;
    for w in &loaded.warnings {
        eprintln!("numalab: warning: {w}");
    }
    let set = [loaded];
    let bundle = &set[0].bundle;
    let steps_done: Vec<StepRecord> = numalab_report::records::latest_steps(
        bundle
            .records_of::<StepRecord>()
            .into_iter()
            .map(|(_, s)| s),
    );
    let findings = numalab_report::findings::findings(&set);
    let summary = serde_json::json!({
        "schema_version": numalab_schema::record::SCHEMA_VERSION,
        "host": bundle.envelope.host.hostname,
        "topology_hash": bundle.envelope.host.topology_hash,
        "records": bundle.records.len(),
        "steps": steps_done,
        "findings": findings,
    });
    let write = |name: &str, text: &str| -> CliResult {
        let path = args.out.join(name);
        std::fs::write(&path, text).map_err(|e| {
            CliError::new(
                ErrorClass::Runtime,
                format!("{}: cannot write it: {e}", path.display()),
            )
        })
    };
    write(
        "summary.json",
        &serde_json::to_string_pretty(&summary).expect("summary serializes"),
    )?;
    write(
        "report.html",
        &numalab_report::sections::document(&set).to_html(),
    )?;
    for s in &steps_done {
        let status = match &s.outcome {
            StepStatus::Done => "done".to_string(),
            StepStatus::Skipped { reason } => format!("skipped: {reason}"),
            StepStatus::Failed { error } => format!("FAILED: {error}"),
        };
        println!("{:<10} {status}", s.step);
    }
    if !findings.is_empty() {
        println!("\nfindings:");
        for f in &findings {
            let tag = match f.severity {
                numalab_report::findings::Severity::Warning => {
                    crate::output::paint("33", "warning")
                }
                numalab_report::findings::Severity::Notice => crate::output::paint("36", "notice "),
                numalab_report::findings::Severity::Info => "info   ".to_string(),
            };
            println!("  {tag} {}", numalab_report::table::plain(&f.text));
        }
    }
    println!(
        "\nresults in {}: results.jsonl, summary.json, report.html",
        args.out.display()
    );
    if failed > 0 {
        return Err(CliError::new(
            ErrorClass::Partial,
            format!("{failed} step(s) failed; the others produced results"),
        ));
    }
    Ok(())
}

/// Refuses a resumption whose options would mix differently measured records in one
/// folder. `--skip` may differ (left-out steps are filled in later); `--quick` may not.
fn check_same_options(args: &EvaluateArgs, previous: &numalab_schema::Envelope) -> CliResult {
    let dir = args.out.display();
    let remedy = format!(
        "choose another --out folder, or add --fresh to move the results in {dir} aside (into {dir}/replaced-TIME/) and start over"
    );
    if !previous.command.iter().skip(1).any(|c| c == "evaluate") {
        return Err(CliError::new(
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
    if quick != args.quick {
        let (then, now) = if quick {
            ("with --quick", "without --quick")
        } else {
            ("without --quick", "with --quick")
        };
        return Err(CliError::new(
            ErrorClass::Usage,
            format!(
                "{dir}: holds an evaluation run {then} (started {}), and this run is {now}: their measurements use different sizes and cannot be mixed in one report. To resume it, run it {then}; otherwise {remedy}",
                previous.created_utc
            ),
        ));
    }
    Ok(())
}

/// `--fresh`: moves the journal, summary and report in `dir` into `dir/replaced-TIME/`.
fn set_aside(dir: &std::path::Path) -> CliResult {
    let names = [
        numalab_schema::journal::JOURNAL_FILE,
        "summary.json",
        "report.html",
    ];
    let present: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| dir.join(n).exists())
        .collect();
    if present.is_empty() {
        return Ok(());
    }
    // A journal another numalab is still writing is not moved from under it.
    let journal = dir.join(numalab_schema::journal::JOURNAL_FILE);
    if let Ok(f) = std::fs::File::open(&journal) {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a valid open descriptor; no memory is passed. The lock is
        // released when `f` is dropped at the end of this block.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(CliError::new(
                ErrorClass::Usage,
                format!(
                    "{}: another numalab process is writing this journal; wait for it or choose another --out folder",
                    journal.display()
                ),
            ));
        }
    }
    let stamp = numalab_schema::record::now_utc().replace(':', "-");
    let mut aside = dir.join(format!("replaced-{stamp}"));
    let mut n = 1;
    while aside.exists() {
        n += 1;
        aside = dir.join(format!("replaced-{stamp}-{n}"));
    }
    let fail = |what: &std::path::Path, e: std::io::Error| {
        CliError::new(
            ErrorClass::Runtime,
            format!("--fresh: cannot move {} aside: {e}", what.display()),
        )
    };
    std::fs::create_dir(&aside).map_err(|e| fail(&aside, e))?;
    for n in present {
        let from = dir.join(n);
        std::fs::rename(&from, aside.join(n)).map_err(|e| fail(&from, e))?;
    }
    eprintln!(
        "numalab: --fresh: earlier results moved to {}",
        aside.display()
    );
    Ok(())
}
