//! The command-line definition: the one source of truth for flags, `--help`, the man
//! page and shell completions (`numalab generate`).

use crate::commands;
use crate::output::ColorChoice;
use crate::CliResult;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;

/// numalab measures, explains, models and tunes non-uniform many-core machines.
#[derive(Debug, Parser)]
#[command(name = "numalab", version, long_version = concat!(env!("CARGO_PKG_VERSION"), "\nbuilt from ", env!("NUMALAB_BUILD")), about, long_about = None, after_help = numalab_schema::ErrorClass::table(), propagate_version = true)]
pub struct Cli {
    /// Options of every command.
    #[command(flatten)]
    pub global: GlobalArgs,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options of every command.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// When to colour terminal output (NO_COLOR is respected).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,
}

impl Cli {
    /// Parses a command line (`args[0]` is the program).
    ///
    /// clap builds every argument of every command before it parses (some 700, each
    /// with its help text), which was a large share of a short run's start-up (`numalab
    /// c2c` of a few samples). So the command line is first parsed by a command that
    /// holds only the subcommand the line names, built by that subcommand's own derive
    /// (the same arguments, defaults and checks). Anything that parser does not accept
    /// (help, version, an error, a line it cannot place) is parsed again by the whole
    /// command, so that help and error messages are exactly the full parser's.
    pub fn try_parse_args(args: Vec<OsString>) -> Result<Cli, clap::Error> {
        if let Some(cmd) = one_command(&args) {
            if let Ok(m) = cmd.try_get_matches_from(&args) {
                if let Ok(cli) = Cli::from_arg_matches(&m) {
                    return Ok(cli);
                }
            }
        }
        Cli::try_parse_from(args)
    }
}

/// The subcommand a command line names: the first word that is not a global option
/// (`--color WHEN`, `--color=WHEN`). None for anything else before it.
pub fn subcommand_name(args: &[OsString]) -> Option<&str> {
    let mut words = args.iter().skip(1);
    while let Some(w) = words.next() {
        let w = w.to_str()?;
        if w == "--color" {
            words.next();
        } else if w.starts_with("--color=") {
            continue;
        } else if w.starts_with('-') {
            return None;
        } else {
            return Some(w);
        }
    }
    None
}

/// The parser of one subcommand with the global options (see [`Cli::try_parse_args`]).
pub fn one_command(args: &[OsString]) -> Option<clap::Command> {
    use crate::commands::*;
    let name = subcommand_name(args)?;
    let augment: fn(clap::Command) -> clap::Command = match name {
        "topo" => topo::TopoArgs::augment_args,
        "doctor" => doctor::DoctorArgs::augment_args,
        "evaluate" => evaluate::EvaluateArgs::augment_args,
        "scale" => harness::ScaleArgs::augment_args,
        "policy" => harness::PolicyArgs::augment_args,
        "sweep" => harness::SweepArgs::augment_args,
        "generate" => generate::GenerateArgs::augment_args,
        "workload" => workload::WorkloadArgs::augment_args,
        "c2c" => c2c::C2cArgs::augment_args,
        "profile" => profile::ProfileArgs::augment_args,
        "model" => model::ModelArgs::augment_args,
        "report" => report::ReportArgs::augment_args,
        "compare" => report::CompareArgs::augment_args,
        "mem" => mem::MemArgs::augment_args,
        "layout" => layout::LayoutArgs::augment_args,
        "schedule" => schedule::ScheduleArgs::augment_args,
        "home" => home::HomeArgs::augment_args,
        "db" => db::DbArgs::augment_args,
        "fleet" => fleet::FleetArgs::augment_args,
        "kernel" => kernel::KernelArgs::augment_args,
        _ => return None,
    };
    let root = clap::Command::new("numalab")
        .subcommand_required(true)
        .subcommand(augment(clap::Command::new(name.to_string())));
    Some(GlobalArgs::augment_args(root))
}

/// numalab's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Describe the machine's topology (or another machine's, from hwloc XML or a sysfs snapshot).
    Topo(crate::commands::topo::TopoArgs),
    /// Check what this machine allows: binding, NUMA, counters, huge pages, frequency, sensors.
    Doctor(crate::commands::doctor::DoctorArgs),
    /// Characterize this machine: every probe in turn, a results bundle and an HTML report.
    Evaluate(crate::commands::evaluate::EvaluateArgs),
    /// Run your program at a list of thread counts: throughput, speedup, efficiency, knees, CPU use.
    Scale(crate::commands::harness::ScaleArgs),
    /// Run your program under NUMA memory policies: page placement per node and which policy to use.
    Policy(crate::commands::harness::PolicyArgs),
    /// Run your program over a parameter's values (run time or build time): speedup and the best value.
    Sweep(crate::commands::harness::SweepArgs),
    /// Write the man page or shell completions to stdout.
    Generate(crate::commands::generate::GenerateArgs),
    /// The built-in reference request workload (route search and itinerary planning on a synthetic road network).
    Workload(crate::commands::workload::WorkloadArgs),
    /// Core-to-core latency matrix and the latency structure it reveals (or analyse a published matrix).
    C2c(crate::commands::c2c::C2cArgs),
    /// Explain a program's performance from hardware counters: metrics, a front-end /
    /// back-end decision tree with a verdict, hot spots; or analyse and compare perf stat files.
    Profile(crate::commands::profile::ProfileArgs),
    /// Model machines you do not have: presets, what-if experiments (analytic and discrete-event).
    Model(crate::commands::model::ModelArgs),
    /// Render bundles as a self-contained HTML report (or Markdown, CSV, JSON, text): findings, charts, tables, raw data.
    Report(crate::commands::report::ReportArgs),
    /// Compare bundles of machines or runs: ratios with intervals per server, per watt, per thread, latency; which is better for what.
    Compare(crate::commands::report::CompareArgs),
    /// Memory probes: bandwidth, latency, loaded latency, page migration (per node pair).
    Mem(crate::commands::mem::MemArgs),
    /// Infer where cores sit on a mesh from latency matrices; check it on model ground
    /// truth; choose cores for cooperating threads.
    Layout(crate::commands::layout::LayoutArgs),
    /// Schedule a mix of tasks on the cores (fair, load, optimized) from past run times;
    /// run the schedules with binding or evaluate them on a model.
    Schedule(crate::commands::schedule::ScheduleArgs),
    /// Where each cache line lives: map lines to home agents and memory interfaces,
    /// recover the address hash; the affinity experiments.
    Home(crate::commands::home::HomeArgs),
    /// The history of every bundle in one SQLite file: ingest, runs, a figure over time,
    /// regressions beyond the run-to-run noise, CSV/JSON export.
    Db(crate::commands::db::DbArgs),
    /// Many nodes through Slurm or MPI: run a command on each and gather the bundles;
    /// the fleet report finds the nodes whose figures are off.
    Fleet(crate::commands::fleet::FleetArgs),
    /// Known kernels (a pointer chase, a branchy loop) and what a correct PMU counts for
    /// them: run them under `numalab profile` to check the counters.
    Kernel(crate::commands::kernel::KernelArgs),
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Topo(a) => commands::topo::run(a),
        Command::Doctor(a) => commands::doctor::run(a),
        Command::Evaluate(a) => commands::evaluate::run(a),
        Command::Scale(a) => commands::harness::scale(a),
        Command::Policy(a) => commands::harness::policy(a),
        Command::Sweep(a) => commands::harness::sweep(a),
        Command::Generate(a) => commands::generate::run(a, Cli::command()),
        Command::Workload(a) => commands::workload::run(a),
        Command::C2c(a) => commands::c2c::run(a),
        Command::Profile(a) => commands::profile::run(a),
        Command::Model(a) => commands::model::run(a),
        Command::Report(a) => commands::report::run(a),
        Command::Compare(a) => commands::report::compare(a),
        Command::Mem(a) => commands::mem::run(a),
        Command::Layout(a) => commands::layout::run(a),
        Command::Schedule(a) => commands::schedule::run(a),
        Command::Home(a) => commands::home::run(a),
        Command::Db(a) => commands::db::run(a),
        Command::Fleet(a) => commands::fleet::run(a),
        Command::Kernel(a) => commands::kernel::run(a),
    }
}
