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
fn subcommand_name(args: &[OsString]) -> Option<&str> {
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
fn one_command(args: &[OsString]) -> Option<clap::Command> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn os(line: &[&str]) -> Vec<OsString> {
        line.iter().map(OsString::from).collect()
    }

    /// Every argument of a command and of its subcommands, as the parser sees them.
    fn shape(cmd: &clap::Command, out: &mut Vec<String>, path: &str) {
        // `--version`, which the whole command propagates to every subcommand, is left
        // out: the short parser has none, so `numalab c2c --version` goes to the whole
        // command (`help_version_and_errors_are_the_whole_commands`).
        for a in cmd.get_arguments().filter(|a| a.get_id() != "version") {
            out.push(format!(
                "{path} {} long={:?} short={:?} required={} global={} defaults={:?} action={:?} num_args={:?} values={:?}",
                a.get_id(),
                a.get_long(),
                a.get_short(),
                a.is_required_set(),
                a.is_global_set(),
                a.get_default_values(),
                a.get_action(),
                a.get_num_args(),
                a.get_possible_values().iter().map(|v| v.get_name().to_string()).collect::<Vec<_>>(),
            ));
        }
        for g in cmd.get_groups() {
            out.push(format!(
                "{path} group {} args={:?} required={} multiple={}",
                g.get_id(),
                g.get_args().collect::<Vec<_>>(),
                g.is_required_set(),
                g.clone().is_multiple()
            ));
        }
        for s in cmd.get_subcommands() {
            shape(s, out, &format!("{path} {}", s.get_name()));
        }
    }

    #[test]
    fn each_subcommand_alone_has_the_arguments_of_the_whole_command() {
        let mut full = Cli::command();
        full.build();
        let names: Vec<String> = full
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .filter(|n| n != "help")
            .collect();
        assert_eq!(names.len(), 20, "{names:?}");
        for name in &names {
            let mut one = one_command(&os(&["numalab", name]))
                .unwrap_or_else(|| panic!("no parser of its own for `{name}`"));
            one.build();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            shape(full.find_subcommand(name).unwrap(), &mut a, name);
            shape(one.find_subcommand(name).unwrap(), &mut b, name);
            assert!(a.len() > 1, "{name}: {a:?}");
            assert_eq!(
                a, b,
                "{name}: its own parser differs from the whole command's"
            );
        }
        // The global option, as the whole command has it.
        let global = |c: &clap::Command| {
            let mut v = Vec::new();
            shape(c, &mut v, "");
            v.into_iter()
                .filter(|l| l.starts_with(" color "))
                .collect::<Vec<_>>()
        };
        let mut one = one_command(&os(&["numalab", "c2c"])).unwrap();
        one.build();
        assert_eq!(global(&full).len(), 1);
        assert_eq!(global(&full), global(&one));
    }

    #[test]
    fn a_line_parses_alike_through_its_subcommand_alone_and_the_whole_command() {
        for line in [
            "numalab c2c --cpus 0-1 --samples 3 --json",
            "numalab --color never topo --json",
            "numalab --color=always doctor",
            "numalab mem bandwidth --kernel copy,triad --threads 1",
            "numalab model run neoverse-v1-64 --experiment stream-triad",
            "numalab scale --threads 1,2 -- true --color x",
            "numalab db runs",
        ] {
            let line: Vec<&str> = line.split(' ').collect();
            let args = os(&line);
            // The short path is the one taken (not the fallback).
            let m = one_command(&args)
                .unwrap()
                .try_get_matches_from(&args)
                .unwrap_or_else(|e| panic!("{line:?}: {e}"));
            let short = Cli::from_arg_matches(&m).unwrap();
            let full = Cli::try_parse_from(&args).unwrap();
            assert_eq!(format!("{short:?}"), format!("{full:?}"), "{line:?}");
            let parsed = Cli::try_parse_args(args).unwrap();
            assert_eq!(format!("{parsed:?}"), format!("{full:?}"), "{line:?}");
        }
    }

    #[test]
    fn help_version_and_errors_are_the_whole_commands() {
        for line in [
            &["numalab", "c2c", "--bogus"][..],
            &["numalab", "c2c", "--help"],
            &["numalab", "c2c", "--version"],
            &["numalab", "--help"],
            &["numalab"],
            &["numalab", "no-such-command"],
            &["numalab", "--color"],
            &["numalab", "mem"],
            &["numalab", "c2c", "--samples", "many"],
        ] {
            let ours = Cli::try_parse_args(os(line)).unwrap_err();
            let full = Cli::try_parse_from(os(line)).unwrap_err();
            assert_eq!(ours.kind(), full.kind(), "{line:?}");
            assert_eq!(
                ours.render().to_string(),
                full.render().to_string(),
                "{line:?}"
            );
        }
        assert_eq!(
            subcommand_name(&os(&["numalab", "--color", "c2c", "topo"])),
            Some("topo")
        );
        assert_eq!(subcommand_name(&os(&["numalab", "-h", "topo"])), None);
    }
}
