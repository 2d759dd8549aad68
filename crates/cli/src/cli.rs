//! The command-line definition: the one source of truth for flags, `--help`, the man
//! page and shell completions (`numalab generate`).

use crate::output::ColorChoice;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

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
    Topo(TopoArgs),
    /// Check what this machine allows: binding, NUMA, counters, huge pages, frequency, sensors.
    Doctor(DoctorArgs),
    /// Characterize this machine: every probe in turn, a results bundle and an HTML report.
    Evaluate(crate::commands::evaluate::EvaluateArgs),
    /// Run your program at a list of thread counts: throughput, speedup, efficiency, knees, CPU use.
    Scale(crate::commands::harness::ScaleArgs),
    /// Run your program under NUMA memory policies: page placement per node and which policy to use.
    Policy(crate::commands::harness::PolicyArgs),
    /// Run your program over a parameter's values (run time or build time): speedup and the best value.
    Sweep(crate::commands::harness::SweepArgs),
    /// Write the man page or shell completions to stdout.
    Generate(GenerateArgs),
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
}

/// `numalab topo`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab topo\n  numalab topo --tree\n  numalab topo --input other-machine.xml --json\n  numalab topo --input kunpeng.tar.bz2\n  numalab topo --export-xml this-machine.xml"
)]
pub struct TopoArgs {
    /// Describe another machine: an hwloc XML file (hwloc 1.x or 2.x format), a sysfs
    /// snapshot folder (hwloc-gather-topology), or such a snapshot as .tar.bz2/.tar.gz.
    #[arg(long, value_name = "PATH")]
    pub input: Option<PathBuf>,
    /// Also print a condensed tree (identical siblings folded).
    #[arg(long)]
    pub tree: bool,
    /// Print the full machine description as JSON (see docs/schema.md).
    #[arg(long)]
    pub json: bool,
    /// Save this machine's topology as hwloc XML, for `--input` on another machine.
    #[arg(long, value_name = "FILE", conflicts_with = "input")]
    pub export_xml: Option<PathBuf>,
}

/// `numalab doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `numalab generate` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GenerateWhat {
    /// The man page (roff), e.g. `numalab generate man > numalab.1`.
    Man,
    /// bash completions.
    Bash,
    /// zsh completions.
    Zsh,
    /// fish completions.
    Fish,
}

/// `numalab generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// What to write.
    #[arg(value_enum)]
    pub what: GenerateWhat,
}
