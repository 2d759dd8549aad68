//! `numalab schedule`: a mix of tasks on the cores, three ways (fair, load, optimized),
//! predicted from past runs, run for real with binding (a campaign of repetitions with
//! medians) or evaluated on the machine model. The work is in
//! `numalab_schedule`; this module reads the mix and the history, builds the
//! cores' description (live machine or model), writes records and prints tables.

use crate::recorder::{OutputArgs, Recorder};
use crate::{CliError, CliResult};
use clap::Args;
use numalab_schedule::campaign;
use numalab_schedule::mix::Mix;
use numalab_schedule::study;
use numalab_schema::{ErrorClass, Origin, Record};
use std::path::PathBuf;

/// `numalab schedule`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab scale --threads 1,2,4,8 --out hist/ -- ./sort {threads}\n  numalab schedule --mix mix.toml --history hist/\n  numalab schedule --mix mix.toml --history hist/ --run --repeat 10 --out sched/\n  numalab schedule --mix mix.toml --history hist/ --model knl-7210\n\nA mix file lists [[task]]s: name, command (an argv list, or a string run by sh -c), data\n(size), threads (allowed counts), optional timeout, env, memory_bound and\ncommunication_bound (shares of run time the --model evaluation scales by latency)."
)]
pub struct ScheduleArgs {
    /// The mix (TOML): the tasks, their data sizes and allowed thread counts.
    #[arg(long, value_name = "FILE")]
    pub mix: PathBuf,
    /// Results of earlier runs of the tasks (`numalab scale --out DIR`), repeatable.
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub history: Vec<PathBuf>,
    /// Also every task run stored in this history database (`numalab db ingest`).
    #[arg(long, value_name = "FILE")]
    pub history_db: Option<PathBuf>,
    /// Run the three schedules on this machine (each task pinned to its cores).
    #[arg(long, conflicts_with = "model")]
    pub run: bool,
    /// Evaluate the schedules on a modeled machine (preset NAME[:VARIANT,...]).
    #[arg(long, value_name = "PRESET")]
    pub model: Option<String>,
    /// Runs of each schedule (campaign; outliers are discarded, medians reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// CPUs the schedules may use on this machine (default: all), e.g. 0-15 or node:0.
    #[arg(long, value_name = "LIST", conflicts_with = "model")]
    pub cpus: Option<String>,
    /// An inferred floorplan (`numalab layout infer`) for the optimized placement here.
    #[arg(long, value_name = "LAYOUT", conflicts_with = "model")]
    pub layout: Option<PathBuf>,
    /// A home map of this machine (`numalab home map --out DIR`): the optimized schedule
    /// enforces home affinity, handing each task the map in NUMALAB_HOME_MAP (and
    /// `{home_map}`) for its allocator (`libnumalab_home`). With --model the model's
    /// own address map is used.
    #[arg(long, value_name = "MAP", conflicts_with = "model")]
    pub home_map: Option<PathBuf>,
    /// Home affinity: the largest distance, hops, between a task's cores and the homes
    /// of its data (NUMALAB_HOME_DISTANCE, `{home_distance}`).
    #[arg(long, value_name = "HOPS", default_value_t = 1)]
    pub home_distance: u32,
    /// Do not enforce home affinity in the optimized schedule of --model.
    #[arg(long, requires = "model")]
    pub no_home_affinity: bool,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `numalab schedule`.
pub fn run(a: ScheduleArgs) -> CliResult {
    campaign::check_repeat(a.repeat).map_err(|e| CliError::new(ErrorClass::Usage, e))?;
    let mix = Mix::read(&a.mix)?;
    let mut bundles =
        study::history_bundles(&a.history, &mut |w| eprintln!("numalab: warning: {w}"))?;
    if let Some(db) = &a.history_db {
        bundles.extend(numalab_history::task_history_file(db)?);
    }
    // The cores.
    let target = match &a.model {
        Some(preset) => study::Target::Model {
            preset,
            home_distance: (!a.no_home_affinity).then_some(a.home_distance),
        },
        None => study::Target::Live {
            cpus: a.cpus.as_deref(),
            layout: a.layout.as_deref(),
            home_map: a.home_map.as_deref(),
            home_distance: a.home_distance,
            check_map: &numalab_home::ffi::check_affinity_map,
        },
    };
    let study::Cores {
        resources: res,
        host,
        model,
        origin,
    } = study::cores(target)?;
    let history_sources = study::history_sources(&a.history, a.history_db.as_deref());
    // The plan record (a mix that cannot fit is an error here, before anything runs).
    let plan_rec = study::plan(&mix, &bundles, &res, model.as_ref(), a.run, history_sources)?;
    use numalab_schema::text::path_text;
    let config = serde_json::json!({"mix": path_text(&a.mix),
        "history": a.history.iter().map(|p| path_text(p)).collect::<Vec<_>>(),
        "run": a.run, "model": a.model, "repeat": a.repeat, "cpus": a.cpus,
        "layout": a.layout.as_deref().map(path_text),
        "home_map": a.home_map.as_deref().map(path_text), "home_distance": a.home_distance,
        "home_affinity": !a.no_home_affinity});
    let mut rec = Recorder::new(&a.output, config, origin, host)?;
    let stamp = rec.envelope().created_utc.clone();
    rec.push(study::plan_entry(&plan_rec, origin, &stamp))?;
    if !rec.json() {
        show(&rec, &plan_rec);
    }
    if !a.run {
        rec.finish()?;
        return Ok(());
    }
    // The campaign (numalab_schedule::campaign: rotated repetitions, resumable).
    let total = a.repeat * plan_rec.plans.len();
    let bar = crate::output::bar(
        total as u64,
        "{spinner} [{elapsed}] {bar:30} {pos}/{len} runs {msg}",
    );
    let ran = campaign::campaign(
        &mix,
        &plan_rec,
        res.home.as_ref(),
        a.repeat,
        &stamp,
        &mut rec,
        &mut |step| match step {
            campaign::Step::Running(s) => bar.set_message(s.to_string()),
            campaign::Step::Done => bar.inc(1),
        },
    );
    bar.finish_and_clear();
    let ran = match ran {
        Ok(r) => r,
        Err(e) => {
            rec.finish()?;
            return Err(e.into());
        }
    };
    rec.push(ran.record())?;
    if !rec.json() {
        show(&rec, &ran.summary);
    }
    rec.finish()?;
    if let Some(msg) = ran.interruption() {
        return Err(CliError::new(ErrorClass::Interrupted, msg));
    }
    Ok(())
}

/// One schedule record as the report's schedule section shows it.
fn show<T: numalab_schema::RecordKind>(rec: &Recorder, payload: &T) {
    crate::output::print_sections(
        rec.envelope(),
        [Record::new("shown", Origin::Measured, payload)],
        numalab_report::sections::schedule::sections,
    );
}
