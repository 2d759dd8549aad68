//! `numalab profile`: counters turned into an explanation.
//!
//! Four ways in: a command to run under counters (`-- CMD ARGS...`, default or
//! `--exact` mode, optionally `--sample EVENT` for hot spots), a `perf stat` file from
//! another machine (`--import`), two profiles to compare (`--compare BASE NEW`), or
//! `--list` to see what a CPU model's catalog offers. Flags are checked against the
//! catalog (metric and event names, with close matches suggested) before anything runs.

use crate::output::SectionsOf;
use crate::recorder::{OutputArgs, Recorder};
use crate::CliResult;
use clap::{Args, ValueEnum};
use numalab_pmu::capability;
use numalab_pmu::profile;
use numalab_profile::offline::{self, Imported};
use numalab_profile::request::{detect_cpu, Cpus, Mode, Request};
use numalab_profile::{listing, progress};
use numalab_report::sections::memaccess::sections as memaccess_sections;
use numalab_report::sections::pmu::sections as pmu_sections;
use numalab_schema::{Origin, Record};
use std::path::PathBuf;

/// What `--list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListWhat {
    /// Metric sets, groups and metrics with their formulas.
    Metrics,
    /// Events with their codes.
    Events,
    /// The CPU models numalab has catalogs for.
    Models,
}

/// `numalab profile`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  numalab profile -- ./my-program --size 16M
  numalab profile --exact --metrics l1d,ll -- ./my-program
  numalab profile --sample cpu-clock -- ./my-program
  numalab profile --pid 4242 --duration 30s --interval 1s
  numalab profile --all-cpus --duration 10s
  numalab profile --memory-samples -- ./my-program
  numalab profile --import perf-mem-script.txt --regions regions.txt
  numalab profile --import perf-stat.csv --cpu-model neoverse-n1
  numalab profile --compare before.csv after.csv
  numalab profile --list metrics --cpu-model neoverse-n2
See docs/profile.md for the method and how to read the decision tree.")]
pub struct ProfileArgs {
    /// The command to profile and its arguments, after `--` (run without a shell).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// Analyse counts recorded elsewhere: the output of `perf stat -x,` (CSV) or
    /// `perf stat -j` (JSON), events by name or raw code (r11).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["compare", "command", "list", "sample", "exact"])]
    pub import: Option<PathBuf>,
    /// Compare two profiles, each a numalab output (folder, journal or bundle holding a
    /// pmu.profile record) or a perf stat file: every metric and count with % change.
    #[arg(long, num_args = 2, value_names = ["BASE", "NEW"], conflicts_with_all = ["command", "list", "sample", "exact"])]
    pub compare: Option<Vec<PathBuf>>,
    /// Exact mode: at most as many events as the PMU has counters per run, each run with
    /// cycles and instructions, one run of the command per group (no multiplexing).
    #[arg(long)]
    pub exact: bool,
    /// Metrics to derive: first-pass (default), vendor, topdown, all, none, a group
    /// (l1d, branch, ...), metric names, or a comma-separated mix.
    #[arg(long, value_name = "SET")]
    pub metrics: Option<String>,
    /// Extra events to count, comma-separated: names (CPU_CYCLES, cycles,
    /// L1-dcache-load-misses) or raw codes (r11). Alone, only these are counted.
    #[arg(long, value_name = "LIST")]
    pub events: Option<String>,
    /// After counting, sample this event with call chains and attribute the samples to
    /// functions and source lines (cpu-clock works without a hardware PMU).
    #[arg(long, value_name = "EVENT")]
    pub sample: Option<String>,
    /// Samples per second for --sample.
    #[arg(long, value_name = "HZ", default_value_t = 999)]
    pub sample_freq: u64,
    /// Sample every N events instead of by frequency.
    #[arg(long, value_name = "N")]
    pub sample_period: Option<u64>,
    /// The CPU whose catalog to use (a catalog id such as neoverse-n1 or x86-64, a
    /// product such as ampere-altra or graviton4, a MIDR value such as 0x413fd0c1; --list
    /// models prints them all), instead of detecting this machine's.
    #[arg(long, value_name = "NAME")]
    pub cpu_model: Option<String>,
    /// Programmable counters per CPU (default: from the CPU's event file).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub counters: Option<u32>,
    /// Kill the command (and its process group) after this long, e.g. 30s, 5m.
    #[arg(long, value_name = "DURATION", value_parser = numalab_schema::units::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Run the command through /bin/sh -c (for pipes and redirections).
    #[arg(long)]
    pub shell: bool,
    /// Count a running process instead of starting a command: every thread it has and
    /// those they create, until it exits, --duration or Ctrl-C (the counts so far are
    /// kept). Another user's process needs CAP_PERFMON and CAP_SYS_PTRACE.
    #[arg(long, value_name = "PID", conflicts_with_all = ["command", "import", "compare", "list", "exact", "sample", "all_cpus"])]
    pub pid: Option<i32>,
    /// Count every CPU (system-wide): while the command after `--` runs, or without one
    /// until --duration or Ctrl-C. Needs perf_event_paranoid <= 0 or CAP_PERFMON.
    #[arg(long, conflicts_with_all = ["import", "compare", "list", "exact", "sample"])]
    pub all_cpus: bool,
    /// Read the counters this often (at least 10ms) and keep a timeline of counts and
    /// metrics, e.g. 100ms, 1s; the report draws it.
    #[arg(long, value_name = "DURATION", value_parser = numalab_schema::units::parse_duration, conflicts_with_all = ["import", "compare", "list", "exact"])]
    pub interval: Option<std::time::Duration>,
    /// Stop counting a running process (--pid) or the whole system (--all-cpus without a
    /// command) after this long, e.g. 10s, 5m.
    #[arg(long, value_name = "DURATION", value_parser = numalab_schema::units::parse_duration, conflicts_with_all = ["import", "compare", "list", "command"])]
    pub duration: Option<std::time::Duration>,
    /// Do not count the uncore PMUs (memory controllers, LLC/SLC, socket links), which
    /// are counted system-wide over the same time wherever the machine has them.
    #[arg(long, conflicts_with_all = ["import", "compare", "list"])]
    pub no_uncore: bool,
    /// After counting, sample loads and stores with their data addresses (Intel PEBS
    /// load latency, AMD IBS op, Arm SPE): which mappings and data symbols the slow and
    /// remote accesses hit, latency per NUMA node of the page, false sharing.
    #[arg(long, conflicts_with_all = ["import", "compare", "list", "all_cpus"])]
    pub memory_samples: bool,
    /// With --memory-samples or an imported `perf script` file: loads at or above this
    /// latency (the PMU's weight, cycles) are slow; default: the 90th percentile.
    #[arg(long, value_name = "CYCLES")]
    pub slow: Option<f64>,
    /// With --memory-samples or an imported `perf script` file: named address ranges,
    /// one per line: `name start len [pid]` (hex or decimal, K/M/G suffixes).
    #[arg(long, value_name = "FILE")]
    pub regions: Option<PathBuf>,
    /// The imported `perf script` file was recorded on this machine: its physical
    /// addresses are mapped to NUMA nodes through this machine's memory blocks.
    #[arg(long, requires = "import")]
    pub same_machine: bool,
    /// List what the CPU model's catalog offers, then exit.
    #[arg(long, value_enum, value_name = "WHAT", num_args = 0..=1, default_missing_value = "metrics", conflicts_with = "command")]
    pub list: Option<ListWhat>,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `numalab profile`'s flags as the library takes them.
fn request(args: &ProfileArgs) -> Request {
    Request {
        command: args.command.clone(),
        import: args.import.clone(),
        compare: args.compare.clone().and_then(|v| v.try_into().ok()),
        list: args.list.is_some(),
        exact: args.exact,
        metrics: args.metrics.clone(),
        events: args.events.clone(),
        sample: args.sample.clone(),
        sample_freq: args.sample_freq,
        sample_period: args.sample_period,
        cpu_model: args.cpu_model.clone(),
        counters: args.counters,
        timeout: args.timeout,
        shell: args.shell,
        pid: args.pid,
        all_cpus: args.all_cpus,
        interval: args.interval,
        duration: args.duration,
        no_uncore: args.no_uncore,
        memory_samples: args.memory_samples,
        slow: args.slow,
        regions: args.regions.clone(),
        same_machine: args.same_machine,
    }
}

/// Runs `numalab profile`.
pub fn run(args: ProfileArgs) -> CliResult {
    // Step 1: flags alone, nothing touched.
    let req = request(&args);
    let mode = req.mode()?;
    let given = req.given_cpu()?;
    if let Some(what) = args.list {
        let cpu = match given {
            Some(c) => c,
            None => detect_cpu(&numalab_topo::live()?.cpu)?,
        };
        let what = match what {
            ListWhat::Metrics => listing::What::Metrics,
            ListWhat::Events => listing::What::Events,
            ListWhat::Models => listing::What::Models,
        };
        print!("{}", listing::list(what, &cpu)?);
        return Ok(());
    }
    let machine = numalab_topo::live()?;
    let cpus = Cpus {
        given,
        live: detect_cpu(&machine.cpu),
    };
    let imported = |record: Record, sections: SectionsOf| -> CliResult {
        let host = numalab_topo::system::host(&machine);
        let mut rec = Recorder::new(&args.output, req.config(), Origin::Imported, host)?;
        let key = record.key.clone();
        rec.push(record)?;
        show(&rec, &[key], sections);
        rec.finish().map(drop)
    };
    match mode {
        Mode::Compare(base, new) => {
            let record = offline::compare(base, new, &req.metric_set(), cpus);
            return imported(record?, pmu_sections);
        }
        Mode::Import(path) => {
            return match offline::import(path, &req, cpus)? {
                Imported::Memaccess(record) => imported(record, memaccess_sections),
                Imported::Profile(record) => imported(record, pmu_sections),
            };
        }
        Mode::List | Mode::Count => {}
    }

    // A command to run. Step 2: plan against the catalog before running anything.
    let options = req.options(cpus)?;
    let cap = capability::probe();
    let plan = numalab_profile::plan(options, &cap)?;
    let mut rec = Recorder::new(
        &args.output,
        req.config(),
        Origin::Measured,
        numalab_topo::system::host(&machine),
    )?;
    if rec.done(&plan.keys.profile) {
        eprintln!(
            "numalab: {}",
            progress::already_measured(&plan.keys.profile)
        );
    }
    let mut watch = Progress {
        bar: progress_bar(args.exact),
        subject: plan.subject().clone(),
        duration: args.duration,
    };
    let outcome = numalab_profile::run(&plan, &cap, &mut rec, &mut watch);
    if let Some(b) = &watch.bar {
        b.finish_and_clear();
    }
    let outcome = outcome?;
    show(&rec, &outcome.shown, pmu_sections);
    if !outcome.sampled.is_empty() {
        show(&rec, &outcome.sampled, memaccess_sections);
    }
    rec.finish()?;
    if let Some(e) = outcome.also_said() {
        // Said too, though another problem decides the exit code.
        eprintln!("numalab: {}", numalab_schema::text::message(&e.message));
    }
    match outcome.decisive() {
        Some(e) => Err(e.clone().into()),
        None => Ok(()),
    }
}

/// The progress of a counting session: a bar in exact mode, and a line as counting a
/// process or the system starts.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    subject: profile::Subject,
    duration: Option<std::time::Duration>,
}

impl numalab_profile::Watch for Progress {
    fn run_started(&mut self, run: usize, runs: usize) {
        // Said once everything was checked, as counting starts.
        if let Some(line) = (run == 0)
            .then(|| progress::counting_started(&self.subject, self.duration))
            .flatten()
        {
            eprintln!("numalab: {line}");
        }
        if let Some(b) = &self.bar {
            b.set_length(runs as u64);
            b.set_position(run as u64);
            b.set_message(format!("run {} of {runs}", run + 1));
        }
    }
}

fn progress_bar(exact: bool) -> Option<indicatif::ProgressBar> {
    if !exact {
        return None;
    }
    Some(crate::output::bar(
        1,
        "{spinner} {msg} [{bar:30}] {elapsed}",
    ))
}

/// The records of these keys (this run's, or an earlier run's of the same --out folder)
/// as the report's `sections` show them (the counters', the data addresses').
fn show(rec: &Recorder, keys: &[String], sections: SectionsOf) {
    if !rec.json() {
        let records = rec.latest().into_iter().filter(|r| keys.contains(&r.key));
        crate::output::print_sections(rec.envelope(), records, sections);
    }
}
