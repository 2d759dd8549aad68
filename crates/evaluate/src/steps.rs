//! The steps of an evaluation, in order: what each measures, with which plan, and
//! how it ends (done, skipped with the machine's reason, or failed). Every record goes
//! to the context's sink the moment it exists; a unit of work whose record the sink
//! already has (an earlier, killed run) is not measured again.

use crate::{err, EvalError, Observer};
use numalab_mem::probe::Probe;
use numalab_records::evaluate::{PowerCheck, StepStatus, TopologyRecord};
use numalab_schema::sink::Sink;
use numalab_schema::{interrupt, Classify, Machine, Origin, Record, Warning};
use numalab_topo::bind::{MemPolicy, Placer};

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

/// Thread counts of a full sweep: 1, 2, 4, ... and every PU.
pub fn thread_sweep(pus: usize) -> Vec<usize> {
    let mut t: Vec<usize> = std::iter::successors(Some(1usize), |x| Some(x * 2))
        .take_while(|x| *x < pus)
        .collect();
    t.push(pus.max(1));
    t
}

fn bandwidth(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
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
                &MemPolicy::FirstTouch,
                Options::defaults(m),
            ),
            plan_matrix(m, &b, &[], Options::defaults(m)),
        ]
    };
    let plans = plans.into_iter().map(|p| p.map(Probe::Bandwidth)).collect();
    run_mem(ctx, plans)
}

fn latency(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    use numalab_mem::latency::{default_plan, fitted_plan_matrix, quick_plan, Options};
    use numalab_mem::PageRequest;
    let m = ctx.machine;
    let b = numalab_mem::budget::Budgets::live(m);
    // Memory latency as the field means it: every node pair, uniformly random over a
    // working set 8x the last-level cache, on huge pages (THP) so that the TLB's reach
    // covers it; and the local pairs again on base pages, whose difference is the
    // cost of page walks. The default working set is fitted to small nodes (the plan's
    // notes say so) rather than refused, as `numalab mem latency --matrix` does, so
    // that a machine with small nodes still gets its matrix.
    let matrix = |o: Options| {
        let huge = fitted_plan_matrix(m, &b, &[PageRequest::Thp], None, o.clone());
        let base = fitted_plan_matrix(m, &b, &[PageRequest::Base], None, o);
        huge.and_then(|mut h| {
            let mut base = base?;
            base.cells
                .retain(|c| c.matrix.is_some_and(|x| x.cpu_node == x.mem_node));
            h.cells.extend(base.cells);
            Ok(h)
        })
    };
    let plans = if ctx.quick {
        vec![quick_plan(m, &b), matrix(Options::quick(m))]
    } else {
        vec![default_plan(m, &b), matrix(Options::idle(m))]
    };
    let plans = plans.into_iter().map(|p| p.map(Probe::Latency)).collect();
    run_mem(ctx, plans)
}

fn loaded(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
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
            &MemPolicy::FirstTouch,
            Options::defaults(m),
        )
    };
    run_mem(ctx, vec![p.map(Probe::Loaded)])
}

fn migrate(ctx: &mut Ctx<'_>) -> Result<StepStatus, EvalError> {
    use numalab_mem::migrate::{default_plan, quick_plan};
    let m = ctx.machine;
    let b = numalab_mem::budget::Budgets::live(m);
    let p = if ctx.quick {
        quick_plan(m, &b)
    } else {
        default_plan(m, &b)
    };
    run_mem(ctx, vec![p.map(Probe::Migrate)])
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
