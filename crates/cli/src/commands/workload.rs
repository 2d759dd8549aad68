//! `numalab workload`: the built-in reference request workload (route search and
//! evolutionary itinerary planning on a synthetic road network), so that a server can
//! be evaluated without a harness around the user's own engine. The measuring itself
//! lives in `numalab-workload`; this module parses flags, shows progress, writes the
//! `workload.run` record and prints it for people or for other programs
//! (`--json`, `--metric-line`).

use crate::recorder::{OutputArgs, Recorder};
use crate::CliResult;
use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use numalab_schema::Origin;
use numalab_topo::bind::PageKind;
use numalab_workload::graph::{parse_node_count as parse_count, GraphSpec, DEFAULT_NODES};
use numalab_workload::run::{Progress, RunConfig};
use numalab_workload::{CpuOrder, Mode};

/// `numalab workload`.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: WorkloadCommand,
}

/// `numalab workload` subcommands.
#[derive(Debug, Subcommand)]
pub enum WorkloadCommand {
    /// Run closed-loop clients answering route and itinerary requests for a fixed time;
    /// report requests/s (total and per thread), response-time percentiles, CPU use,
    /// pages per NUMA node and power.
    Run(RunArgs),
}

/// Thread placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    /// Fill one NUMA node's cores before the next (SMT siblings last).
    Compact,
    /// Deal cores to the NUMA nodes in turn (SMT siblings last).
    Scatter,
}

/// Data placement mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// One copy of the graph, written by the first client's thread (default policy).
    SharedFirstTouch,
    /// One copy interleaved page by page over all NUMA nodes.
    SharedInterleaved,
    /// One copy per NUMA node with clients; each client reads its node's copy.
    Replicated,
}

/// `numalab workload run`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab workload run --threads 1 --duration 10\n  numalab workload run --placement scatter --mode replicated --json\n  numalab workload run --threads 8 --duration 5 --metric-line\n  numalab workload run --graph-nodes 4M --mix 0.5 --out results/\n\nThe graph's seed also seeds the request streams: equal --seed and --graph-nodes give\nthe same graph (same fingerprint) and the same requests on every machine.\nSee docs/workload.md."
)]
pub struct RunArgs {
    /// Client threads, each pinned to its own PU (default: every PU).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Order in which clients take PUs.
    #[arg(long, value_enum, default_value_t = PlacementArg::Compact)]
    pub placement: PlacementArg,
    /// Where the graph lives.
    #[arg(long, value_enum, default_value_t = ModeArg::SharedFirstTouch)]
    pub mode: ModeArg,
    /// Measured window, seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = RunConfig::default().duration_s)]
    pub duration: f64,
    /// Warm-up before the window (served, not counted), seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = RunConfig::default().warmup_s)]
    pub warmup: f64,
    /// Road network size in nodes (suffixes k and M allowed).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_NODES, value_parser = parse_count)]
    pub graph_nodes: u32,
    /// Seed of the road network and of the request streams.
    #[arg(long, value_name = "S", default_value_t = RunConfig::default().graph.seed)]
    pub seed: u64,
    /// Share of route queries, 0-1 (the rest are itinerary plans).
    #[arg(long, value_name = "R", default_value_t = RunConfig::default().route_share)]
    pub mix: f64,
    /// Back the graph with transparent huge pages (default: base pages).
    #[arg(long)]
    pub thp: bool,
    /// Print only one machine-readable line on stdout:
    /// `requests_per_s=... requests_per_s_per_thread=... latency_p50_ns=...`.
    #[arg(long, conflicts_with = "json")]
    pub metric_line: bool,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub bmc: crate::power::BmcArgs,
}

/// Runs `numalab workload`.
pub fn run(args: WorkloadArgs) -> CliResult {
    match args.command {
        WorkloadCommand::Run(a) => run_cmd(a),
    }
}

pub fn config_of(args: &RunArgs, threads: usize) -> RunConfig {
    RunConfig {
        threads,
        placement: match args.placement {
            PlacementArg::Compact => CpuOrder::Compact,
            PlacementArg::Scatter => CpuOrder::Scatter,
        },
        mode: match args.mode {
            ModeArg::SharedFirstTouch => Mode::SharedFirstTouch,
            ModeArg::SharedInterleaved => Mode::SharedInterleaved,
            ModeArg::Replicated => Mode::Replicated,
        },
        duration_s: args.duration,
        warmup_s: args.warmup,
        graph: GraphSpec {
            seed: args.seed,
            nodes: args.graph_nodes,
        },
        route_share: args.mix,
        page_kind: if args.thp {
            PageKind::Transparent
        } else {
            PageKind::Base
        },
        ..Default::default()
    }
}

fn run_cmd(args: RunArgs) -> CliResult {
    // Flags first, without touching the machine.
    config_of(&args, args.threads.unwrap_or(1)).validate()?;
    let power = args.bmc.open()?;
    let (machine, placer) = numalab_topo::live_with_placer()?;
    let threads = args.threads.unwrap_or(machine.pus.len().max(1));
    let config = config_of(&args, threads);
    config.slots(&machine)?;
    let host = numalab_topo::system::host(&machine);
    let mut rec = Recorder::new(&args.output, config.config_json()?, Origin::Measured, host)?;
    let key = config.key();
    if rec.done(&key) {
        let dir = args.output.out.as_deref();
        let why = numalab_workload::plan::already_measured(&key, dir);
        eprintln!("numalab: {why}");
        if args.metric_line {
            if let Some(outcome) = numalab_workload::Outcome::previous(&rec, &key) {
                println!("{}", outcome.metric_line());
            }
        }
        rec.finish()?;
        return Ok(());
    }

    let bar = ProgressBar::new(1000);
    let mut measuring = false;
    let mut observer = |p: Progress| {
        if let Progress::Generating { .. } = p {
            bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("template"));
        }
        if let Some(position) = p.permille() {
            if !measuring {
                measuring = true;
                bar.set_style(ProgressStyle::with_template("{bar:30} {msg}").expect("template"));
            }
            bar.set_position(position);
        }
        bar.set_message(p.describe(threads, config.mode));
        if p.permille().is_none() {
            bar.tick();
        }
    };
    let watch = power
        .as_ref()
        .and_then(|p| crate::power::start(p, "workload run"));
    let ran = numalab_workload::plan::single(&config, &machine, &placer, &mut rec, &mut observer);
    bar.finish_and_clear();
    let outcome = ran?;
    if let Some(w) = watch {
        crate::power::finish(w, "workload-run", &mut rec);
    }
    if args.metric_line {
        println!("{}", outcome.metric_line());
    } else if !rec.json() {
        crate::output::print_sections(
            rec.envelope(),
            rec.records().to_vec(),
            numalab_report::sections::workload::sections,
        );
    }
    rec.finish()?;
    if let Some(e) = outcome.cut_short() {
        return Err(e.into());
    }
    Ok(())
}
