//! The steps of an evaluation, in order: what each measures, with which plan, and
//! how it ends (done, skipped with the machine's reason, or failed). Every record goes
//! to the context's sink the moment it exists; a unit of work whose record the sink
//! already has (an earlier, killed run) is not measured again.

use crate::{err, EvalError, Observer};
use numalab_mem::probe::Probe;
use numalab_records::evaluate::{PowerCheck, StepStatus, TopologyRecord};
use numalab_schema::sink::Sink;
use numalab_schema::{interrupt, Classify, Machine, Origin, Record, Warning};
use numalab_topo::bind::Placer;

/// What a step gets to work with.
pub struct Ctx<'a> {
    /// This machine.
    pub machine: &'a Machine,
    /// Where records go (and where an earlier run's are found).
    pub sink: &'a mut dyn Sink,
    /// Short measurements.
    pub quick: bool,
    /// Pinning and memory placement on this machine.
    pub placer: &'a dyn Placer,
    /// Who shows what the step is doing.
    pub observer: &'a mut dyn Observer,
}

impl Ctx<'_> {
    fn push(&mut self, record: Record) -> Result<(), EvalError> {
        self.sink.push(record).map_err(err)
    }
}

type StepFn = fn(&mut Ctx<'_>) -> Result<StepStatus, EvalError>;

/// A step of the evaluation.
pub struct Step {
    /// Stable id (used in record keys and `--skip`).
    pub id: &'static str,
    /// What it does, for people.
    pub title: &'static str,
    /// The work.
    pub run: StepFn,
}

impl Step {
    /// The step's opening line in a log: "step 3/9 latency: memory latency (curve and
    /// node matrix)", `index` counted from 0 of `total`.
    pub fn start_line(&self, index: usize, total: usize) -> String {
        format!("step {}/{total} {}: {}", index + 1, self.id, self.title)
    }
}

/// The steps, in order.
pub fn steps() -> Vec<Step> {
    let step = |id, title, run| Step { id, title, run };
    vec![
        step("topology", "topology and doctor", topology),
        step(
            "bandwidth",
            "memory bandwidth (thread sweep and node matrix)",
            bandwidth,
        ),
        step("latency", "memory latency (curve and node matrix)", latency),
        step("loaded", "loaded latency", loaded),
        step("c2c", "core-to-core latency and structure", c2c),
        step("migrate", "page migration", migrate),
        step("pmu", "PMU check", pmu),
        step("workload", "reference workload", workload),
        step("power", "power and frequency", power),
    ]
}

fn topology(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    if !ctx.sink.done("topology/machine") {
        let payload = TopologyRecord {
            machine: ctx.machine.clone(),
            summary_text: numalab_topo::render::summary(ctx.machine),
        };
        ctx.push(Record::new("topology/machine", Origin::Measured, &payload))?;
    }
    // The memory configuration from SMBIOS and its theoretical peak, against which
    // every bandwidth figure of the report is shown (or why there is none).
    numalab_mem::memconfig::push_once(&mut *ctx.sink).map_err(err)?;
    if !ctx.sink.done("topology/doctor") {
        let report = numalab_doctor::collect(ctx.machine);
        ctx.push(Record::new("topology/doctor", Origin::Measured, &report))?;
    }
    Ok(StepStatus::Done)
}

fn pmu(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    if !ctx.sink.done("pmu/check") {
        let check = numalab_pmu::check::check(&ctx.machine.cpu, std::path::Path::new("/"));
        let mut rec = Record::new("pmu/check", Origin::Measured, &check);
        if !check.capability.hardware_pmu() {
            rec = rec.with_warnings(vec![Warning::new("no_hardware_pmu", check.verdict.clone())]);
        }
        ctx.push(rec)?;
    }
    Ok(StepStatus::Done)
}

/// Runs memory-probe plans in turn: a plan the machine cannot do skips the step with
/// the reason; cells that fail fail the step (a rerun retries only them).
fn run_mem(
    ctx: &mut Ctx<'_>,
    plans: Vec<Result<Probe, numalab_mem::MemError>>,
) -> Result<StepStatus, EvalError> {
    use numalab_mem::MemError;
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
            Err(e) => return Err(err(e)),
        };
        for n in plan.notes() {
            ctx.observer.note(n);
        }
        let o = plan.run(ctx.machine, &budgets, ctx.placer, &mut *ctx.sink);
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

pub use crate::plans::thread_sweep;

fn bandwidth(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    let b = numalab_mem::budget::Budgets::live(ctx.machine);
    let plans = crate::plans::bandwidth(ctx.machine, &b, ctx.quick);
    run_mem(ctx, plans)
}

fn latency(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    let b = numalab_mem::budget::Budgets::live(ctx.machine);
    let plans = crate::plans::latency(ctx.machine, &b, ctx.quick);
    run_mem(ctx, plans)
}

fn loaded(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    let b = numalab_mem::budget::Budgets::live(ctx.machine);
    let plans = crate::plans::loaded(ctx.machine, &b, ctx.quick);
    run_mem(ctx, plans)
}

fn migrate(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    let b = numalab_mem::budget::Budgets::live(ctx.machine);
    let plans = crate::plans::migrate(ctx.machine, &b, ctx.quick);
    run_mem(ctx, plans)
}

/// Core-to-core latency: CAS ping-pong over every PU pair (a sampled plan above 64
/// PUs), each pair pushed as measured, then the matrix record with its structure and
/// the comparison with hwloc.
fn c2c(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    let cpus = ctx.machine.pu_ids();
    if cpus.len() < 2 {
        return Ok(StepStatus::Skipped {
            reason: "one PU: there is no pair to measure".into(),
        });
    }
    let plan = numalab_pingpong::probe::plan(ctx.machine, &cpus, &c2c_options(ctx.quick))
        .map_err(|e| EvalError::new(e.class(), e.to_string()))?;
    if ctx.sink.done(&plan.key) {
        return Ok(StepStatus::Done);
    }
    ctx.observer.message("core-to-core latency");
    let clock = numalab_clock::check(numalab_pingpong::probe::CLOCK_READS);
    // An interrupted run makes no matrix record and leaves the step open.
    numalab_pingpong::probe::run(
        ctx.placer,
        &plan,
        ctx.machine,
        &clock,
        ctx.sink,
        &mut |_| {},
    )
    .map_err(|e| EvalError::new(e.class(), e.to_string()))?;
    Ok(StepStatus::Done)
}

/// The core-to-core step's options: the probe's defaults, or its quick variant.
pub fn c2c_options(quick: bool) -> numalab_pingpong::probe::Options {
    if quick {
        numalab_pingpong::probe::Options::quick()
    } else {
        numalab_pingpong::probe::Options::defaults()
    }
}

/// The built-in request workload: the workload's reference set for this machine
/// ([`numalab_workload::plan::reference`]), each run pushed as it finishes; a run cut
/// short by Ctrl-C is not kept, so a rerun measures it whole; a run whose clients do not
/// all fit in memory runs with as many as fit, said in a note and on its record.
fn workload(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    use numalab_workload::plan::{self, Cut, Fit};
    use numalab_workload::run::Progress;
    let configs = workload_configs(ctx.machine, ctx.quick);
    if configs.iter().all(|c| ctx.sink.done(&c.key())) {
        return Ok(StepStatus::Done);
    }
    let observer = &mut *ctx.observer;
    let ran = plan::run(
        &configs,
        ctx.machine,
        ctx.placer,
        Cut::Drop,
        Fit::Shrink,
        ctx.sink,
        &mut |c, p| match p {
            Progress::Generating { .. } => {
                observer.message("reference workload: generating the road network")
            }
            Progress::Placing { .. } => observer.message(&format!(
                "reference workload: {} thread(s), {}",
                c.threads, c.mode
            )),
            _ => {}
        },
    )
    .map_err(err)?;
    for n in &ran.notes {
        ctx.observer.note(n);
    }
    Ok(StepStatus::Done)
}

/// The reference-workload step's runs on `machine`.
pub fn workload_configs(machine: &Machine, quick: bool) -> Vec<numalab_workload::RunConfig> {
    numalab_workload::plan::reference(machine.pus.len(), quick)
}

fn power(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    let sensors = numalab_sensors::discover(std::path::Path::new("/"));
    let frequencies = ctx.machine.frequencies.clone();
    if sensors.is_empty() && frequencies.is_empty() {
        return Ok(StepStatus::Skipped {
            reason: "no readable power sensors (powercap, hwmon) and no cpufreq interface on this machine".into(),
        });
    }
    if !ctx.sink.done("power/check") {
        ctx.push(Record::new(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_doubles_and_ends_at_every_pu() {
        assert_eq!(thread_sweep(1), vec![1]);
        assert_eq!(thread_sweep(2), vec![1, 2]);
        assert_eq!(thread_sweep(6), vec![1, 2, 4, 6]);
        assert_eq!(thread_sweep(8), vec![1, 2, 4, 8]);
        assert_eq!(thread_sweep(0), vec![1]);
    }

    #[test]
    fn step_ids_are_unique_and_stable() {
        let ids: Vec<&str> = steps().iter().map(|s| s.id).collect();
        assert_eq!(
            ids,
            [
                "topology",
                "bandwidth",
                "latency",
                "loaded",
                "c2c",
                "migrate",
                "pmu",
                "workload",
                "power"
            ]
        );
    }
}
