//! `numalab scale`, `numalab policy` and `numalab sweep`: the user's own program under
//! thread counts, memory policies and parameter values (the work is in
//! `numalab-harness`; this module parses flags, plans against the live topology,
//! records through the shared [`Recorder`], shows progress and prints the results).

use crate::recorder::{OutputArgs, Recorder};
use crate::{CliError, CliResult};
use clap::Args;
use numalab_harness::outcome::Runs;
use numalab_harness::run::{PointHook, Progress, Sink};
use numalab_harness::scale::parse_thread_counts;
use numalab_harness::{run as study, sample::SamplingConfig, StudyOptions};
use numalab_harness::{HarnessError, Param, Placement, PolicyKind, RunRecord, ScalePlan};
use numalab_profile::point::PointProfiler;
use numalab_schema::{Machine, Origin, Record, RecordKind};
use std::path::PathBuf;

/// Options shared by the three studies.
#[derive(Debug, Args)]
pub struct StudyArgs {
    /// The work metric: `wall` (wall time of a fixed amount of work), `regex:PATTERN`
    /// (a number the program prints, in the pattern's one capture group; the last
    /// match counts), or `json:PATH` (a field of a JSON document or JSON line it
    /// prints, e.g. json:records.data.requests_per_s).
    #[arg(long, default_value = study::DEFAULT_METRIC, value_name = "METRIC")]
    pub metric: String,
    /// The printed metric is a time (lower is better), not a rate.
    #[arg(long)]
    pub lower_is_better: bool,
    /// Per-request response times the program prints (every match is one request):
    /// reported as p50/p95/p99 with intervals. Same syntax as --metric.
    #[arg(long, value_name = "METRIC")]
    pub response: Option<String>,
    /// Unit of the response times as printed (for the table and records).
    #[arg(long, default_value = study::DEFAULT_RESPONSE_UNIT, value_name = "UNIT")]
    pub response_unit: String,
    /// Runs per point.
    #[arg(long, default_value_t = study::DEFAULT_REPEAT, value_name = "N")]
    pub repeat: usize,
    /// Kill a run (its whole process group) after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Run the command through /bin/sh -c (the words after -- joined by spaces).
    #[arg(long)]
    pub shell: bool,
    /// Stop at the first failed run (by default failures are recorded and the study goes on).
    #[arg(long)]
    pub fail_fast: bool,
    /// Set an environment variable for the command (repeatable; values may use
    /// {threads}, {cpus}, {node} and sweep parameters).
    #[arg(long = "env", value_name = "K=V")]
    pub env: Vec<String>,
    /// Time between samples of power, temperature, frequency and page placement.
    #[arg(long, default_value_t = SamplingConfig::default().interval_ms, value_name = "MS")]
    pub sample_interval: u64,
    /// Write a chart of the results to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub bmc: crate::power::BmcArgs,
    /// The command, after `--`. Placeholders: {threads}, {cpus}, {node}, and {NAME} for
    /// sweep parameters (`{{`/`}}` for literal braces).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

/// `numalab scale`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab scale -- ./my-program --threads {threads}\n  numalab scale --threads 1,2,4,8 --placement scatter --repeat 5 -- ./bench -t {threads}\n  numalab scale --metric 'regex:requests_per_s=([0-9.]+)' --svg scale.svg -- numalab workload run --threads {threads}\n  numalab scale --placement numa-local --node 1 --out results/ -- ./app {threads}"
)]
pub struct ScaleArgs {
    /// Thread counts, e.g. 1,2,4,8 or 1-4,8 (default: 1, 2, 4, ... up to every PU, plus
    /// one core, cluster, NUMA node and package).
    #[arg(long, value_name = "LIST")]
    pub threads: Option<String>,
    /// Where threads go: compact (fill a core, cluster, node, package in order),
    /// scatter (round-robin over packages, nodes, clusters), numa-local (threads and
    /// memory on one node), none (no pinning).
    #[arg(long, default_value = "compact", value_name = "STRATEGY")]
    pub placement: Placement,
    /// The node of numa-local (default: the first node with CPUs).
    #[arg(long, value_name = "N")]
    pub node: Option<u32>,
    #[command(flatten)]
    pub study: StudyArgs,
}

/// `numalab policy`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab policy -- ./my-program --threads {threads}\n  numalab policy --threads 64 --node 1 --policies local,interleave -- ./app"
)]
pub struct PolicyArgs {
    /// Threads for {threads}, pinned by --placement (default: every PU).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// How the pinned CPUs are chosen: compact, scatter or none (no pinning).
    #[arg(long, default_value = "compact", value_name = "STRATEGY")]
    pub placement: Placement,
    /// The node of bind and preferred (default: the node of the first CPU).
    #[arg(long, value_name = "N")]
    pub node: Option<u32>,
    /// Policies to compare (default: local,interleave,bind,preferred).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub policies: Vec<PolicyKind>,
    #[command(flatten)]
    pub study: StudyArgs,
}

/// `numalab sweep`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab sweep --param BLOCK=64,128,256 -- ./app --block {BLOCK}\n  numalab sweep --param DIST=0,8,16,32,64 --build 'cc -O2 -DDIST={DIST} -o chase chase.c' -- ./chase"
)]
pub struct SweepArgs {
    /// A parameter and its values, NAME=V1,V2,... (repeatable: every combination is
    /// run; the first value is the baseline of speedups).
    #[arg(long = "param", required = true, value_name = "NAME=V1,V2,...")]
    pub params: Vec<Param>,
    /// A build command run once before each value's runs, with {NAME} substituted
    /// (compile-time parameters), e.g. 'make DIST={DIST}'.
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,
    /// Threads for {threads}, pinned by --placement (default: not pinned, {threads} =
    /// every PU).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// How the pinned CPUs are chosen (with --threads).
    #[arg(long, default_value = "compact", value_name = "STRATEGY")]
    pub placement: Placement,
    /// Attach a counter profile (`numalab profile`, default metric set) to each point,
    /// counted in one extra run right after the point's runs (`pmu.profile` records).
    #[arg(long)]
    pub profile: bool,
    #[command(flatten)]
    pub study: StudyArgs,
}

/// The study's options as the library takes them.
fn options(a: &StudyArgs) -> StudyOptions {
    StudyOptions {
        command: a.command.clone(),
        metric: a.metric.clone(),
        lower_is_better: a.lower_is_better,
        response: a.response.clone(),
        response_unit: a.response_unit.clone(),
        repeat: a.repeat,
        timeout: a.timeout,
        shell: a.shell,
        fail_fast: a.fail_fast,
        env: a.env.clone(),
        sample_interval: a.sample_interval,
    }
}

fn progress_bar() -> indicatif::ProgressBar {
    crate::output::bar(0, "{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
}

fn on_progress(bar: &indicatif::ProgressBar) -> impl FnMut(&Progress) + '_ {
    move |p: &Progress| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
        bar.set_message(p.message()); // a failed run's warning is the recorder's to say
    }
}

/// Opens the recorder of a study: the envelope's config names the study and holds its plan.
fn recorder(
    kind: &str,
    a: &StudyArgs,
    plan: &impl serde::Serialize,
    m: &Machine,
) -> Result<Recorder, CliError> {
    Recorder::new(
        &a.output,
        options(a).config(kind, serde_json::to_value(plan).unwrap_or_default()),
        Origin::Measured,
        numalab_topo::system::host(m),
    )
}

/// Runs a planned study under a progress bar, then shows it: the report's section of
/// its summary (not with --json), its chart (--svg), and failed runs in the exit code.
fn run_study<S: Runs>(
    mut rec: Recorder,
    bmc: (Option<crate::power::BmcPower>, &str),
    svg_path: &Option<PathBuf>,
    study: impl FnOnce(&mut dyn Sink, &mut dyn FnMut(&Progress)) -> Result<S, HarnessError>,
    svg: fn(&S) -> String,
) -> CliResult {
    let bar = progress_bar();
    rec.set_progress(Some(bar.clone()));
    let watch = bmc.0.as_ref().and_then(|p| crate::power::start(p, bmc.1));
    let result = study(&mut rec, &mut on_progress(&bar));
    bar.finish_and_clear();
    if let Some(w) = watch {
        crate::power::finish(w, bmc.1, &mut rec);
    }
    let s = match result {
        Ok(s) => s,
        Err(e) => {
            // A stopped study keeps its journal and still prints what it has (JSON).
            rec.finish()?;
            return Err(e.into());
        }
    };
    if !rec.json() {
        // The study's summary as the report shows it (its runs are in the journal and
        // the report's appendix, not on the terminal).
        let summaries = rec.records().iter().filter(|r| r.kind != RunRecord::KIND);
        crate::output::print_sections(
            rec.envelope(),
            summaries.cloned().collect::<Vec<Record>>(),
            numalab_report::sections::harness::sections,
        );
    }
    if let Some(p) = svg_path {
        crate::output::write_file(p, svg(&s).as_bytes(), "the chart", "--svg")?;
    }
    let json = rec.json();
    rec.finish()?;
    Ok(s.run_count().verdict(json)?)
}

/// `numalab scale`.
pub fn scale(a: ScaleArgs) -> CliResult {
    let study = options(&a.study).study()?;
    let threads = a.threads.as_deref().map(parse_thread_counts).transpose()?;
    let m = numalab_topo::live()?;
    let plan =
        ScalePlan::new(&m, a.placement, threads.as_deref(), a.node).map_err(HarnessError::Plan)?;
    let power = a.study.bmc.open()?;
    let rec = recorder("scale", &a.study, &plan, &m)?;
    run_study(
        rec,
        (power, "scale"),
        &a.study.svg,
        |sink, progress| numalab_harness::scale(&m, &plan, &study, sink, progress),
        numalab_report::draw::harness::scale_svg,
    )
}

/// `numalab policy`.
pub fn policy(a: PolicyArgs) -> CliResult {
    let study = options(&a.study).study()?;
    numalab_harness::policy::check_placement(a.placement)?;
    let m = numalab_topo::live()?;
    let plan = numalab_harness::policy::new_plan(&m, a.threads, a.placement, a.node, &a.policies)
        .map_err(HarnessError::Plan)?;
    let power = a.study.bmc.open()?;
    let rec = recorder("policy", &a.study, &plan, &m)?;
    run_study(
        rec,
        (power, "policy"),
        &a.study.svg,
        |sink, progress| numalab_harness::policy(&m, &plan, &study, sink, progress),
        numalab_report::draw::harness::policy_svg,
    )
}

/// `numalab sweep`.
pub fn sweep(a: SweepArgs) -> CliResult {
    let study = options(&a.study).study()?;
    numalab_harness::sweep::check_names(&a.params)?;
    let m = numalab_topo::live()?;
    let plan = numalab_harness::sweep::new_plan(
        &m,
        a.params.clone(),
        a.build.as_deref(),
        a.threads,
        a.placement,
        &study,
    )
    .map_err(CliError::from)?;
    let power = a.study.bmc.open()?;
    let rec = recorder("sweep", &a.study, &plan, &m)?;
    // --profile: a counter profile of each point's command, right after its runs.
    let profiler = a.profile.then(|| PointProfiler::for_cpu(&m.cpu));
    let profiler = profiler.transpose()?;
    let mut profile_point = |key: &str, spec: &numalab_proc::Spec| {
        let profiler = profiler.as_ref().expect("hook only with --profile");
        profiler.profile(key, spec)
    };
    run_study(
        rec,
        (power, "sweep"),
        &a.study.svg,
        |sink, progress| {
            let hook = a.profile.then_some(&mut profile_point as PointHook);
            numalab_harness::sweep_with(&m, &plan, &study, sink, progress, hook)
        },
        numalab_report::draw::harness::sweep_svg,
    )
}
