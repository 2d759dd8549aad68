//! The command-line definition: the one source of truth for flags, `--help`, the man
//! page and shell completions (`numalab generate`).

use crate::commands;
use crate::output::ColorChoice;
use crate::CliResult;
use clap::{CommandFactory, Parser, Subcommand};

/// numalab measures, explains, models and tunes non-uniform many-core machines.
#[derive(Debug, Parser)]
#[command(name = "numalab", version, about, long_about = None, after_help = numalab_schema::ErrorClass::table(), propagate_version = true)]
pub struct Cli {
    /// When to colour terminal output (NO_COLOR is respected).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
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
    }
}
