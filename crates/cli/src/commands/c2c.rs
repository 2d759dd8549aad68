//! `numalab c2c`: core-to-core latency matrix and the machine's latency structure.
//!
//! Measures (or imports with `--input`) a matrix of half round-trip latencies between
//! CPUs, infers groups from it, compares them with hwloc, and shows a heatmap. Every pair
//! is written to the journal as soon as it is measured (`c2c.pair`), so a killed run
//! resumes pair by pair with the same `--out`; the matrix and its structure follow as one
//! `c2c.matrix` record (see docs/c2c.md for the JSON contract).

use crate::output::color;
use crate::recorder::{OutputArgs, ProgressSink, Recorder};
use crate::{CliError, CliResult};
use clap::{Args, ValueEnum};
use numalab_c2c::heatmap::{self, Order};
use numalab_c2c::matrix::LatencyMatrix;
use numalab_c2c::record;
use numalab_c2c::structure::Structure;
use numalab_pingpong::{self as pingpong, probe::DEFAULTS, Variant};
use numalab_schema::{ErrorClass, Origin};
use std::path::PathBuf;

/// Ping-pong variant (command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VariantArg {
    /// Both threads compare-and-swap one word (as core-to-core-latency).
    Cas,
    /// One thread stores a flag, the other spins on loads, then answers.
    Flag,
}

/// Which pairs to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PairsArg {
    /// Every pair up to 64 CPUs, sampled beyond.
    Auto,
    /// Every pair.
    All,
    /// Every pair inside each cache/cluster group plus a stratified sample across groups.
    Sampled,
}

/// Heatmap order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// OS CPU ids.
    Os,
    /// Inferred groups, coarsest first.
    Group,
}

/// `numalab c2c`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab c2c\n  numalab c2c --cpus 0-15 --variant flag\n  numalab c2c --cpus package:0 --home-node 1 --out results/\n  numalab c2c --input 'published.csv' --topology that-machine.xml\n  numalab c2c --export-csv mine.csv --svg mine.svg --order group"
)]
pub struct C2cArgs {
    /// CPUs to measure: "0-3,8", "node:N", "package:N", "core:N", "all".
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub cpus: String,
    /// Ping-pong variant.
    #[arg(long, value_enum, default_value_t = VariantArg::Cas)]
    pub variant: VariantArg,
    /// NUMA node holding the cache line (default: the node of each pair's first CPU).
    #[arg(long, value_name = "N")]
    pub home_node: Option<u32>,
    /// Timed samples per pair.
    #[arg(long, default_value_t = DEFAULTS.samples, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
    /// Round trips per sample.
    #[arg(long, default_value_t = DEFAULTS.round_trips, value_parser = clap::value_parser!(u32).range(1..))]
    pub round_trips: u32,
    /// Which pairs to measure.
    #[arg(long, value_enum, default_value_t = PairsArg::Auto)]
    pub pairs: PairsArg,
    /// Sampled mode: pairs measured between each two groups.
    #[arg(long, value_name = "K", default_value_t = DEFAULTS.across)]
    pub across: usize,
    /// Analyse a matrix in core-to-core-latency's CSV format instead of measuring
    /// (CPU ids are taken as 0..N-1).
    #[arg(long, value_name = "FILE.csv")]
    pub input: Option<PathBuf>,
    /// With --input: the measured machine's topology (hwloc XML or sysfs snapshot), to
    /// compare the inferred structure with.
    #[arg(long, value_name = "PATH", requires = "input")]
    pub topology: Option<PathBuf>,
    /// Also write the matrix in core-to-core-latency's CSV format.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the heatmap as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Heatmap row/column order.
    #[arg(long, value_enum, default_value_t = OrderArg::Os)]
    pub order: OrderArg,
    /// Output options.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `numalab c2c`.
pub fn run(args: C2cArgs) -> CliResult {
    if let Some(path) = &args.input {
        return run_import(&args, path);
    }
    run_measure(&args)
}

fn run_import(args: &C2cArgs, path: &std::path::Path) -> CliResult {
    let import = numalab_c2c::csv::read(path)?;
    let machine = match &args.topology {
        Some(t) => Some(numalab_topo::machine(&numalab_topo::Input::detect(t)?)?),
        None => None,
    };
    let host = record::imported_host(path, machine.as_ref());
    let config = record::import_config(path, args.topology.as_deref());
    let mut rec = Recorder::new(&args.output, config, Origin::Imported, host)?;
    let (matrix, structure) = record::imported(&import, machine.as_ref())?;
    let key = matrix.key.clone();
    rec.push(matrix)?;
    show(args, &mut rec, &import.matrix, &structure, &key, "imported")?;
    rec.finish()?;
    Ok(())
}

impl C2cArgs {
    /// The probe's options from the flags (nothing else: the plan is the library's).
    pub fn options(&self) -> pingpong::probe::Options {
        use pingpong::probe::Pairs;
        pingpong::probe::Options {
            variant: match self.variant {
                VariantArg::Cas => Variant::Cas,
                VariantArg::Flag => Variant::Flag,
            },
            samples: self.samples,
            round_trips: self.round_trips,
            pairs: match self.pairs {
                PairsArg::Auto => Pairs::Auto,
                PairsArg::All => Pairs::All,
                PairsArg::Sampled => Pairs::Sampled,
            },
            across: self.across.max(1),
            home_node: self.home_node,
        }
    }
}

fn run_measure(args: &C2cArgs) -> CliResult {
    // Plan against the topology (the clock checked and the host read beside it).
    let pingpong::start::Start {
        machine,
        placer,
        plan,
        clock,
        facts,
    } = pingpong::start::start(&args.cpus, &args.options())?;
    let mut rec = Recorder::new(
        &args.output,
        plan.config_json(&clock),
        Origin::Measured,
        numalab_topo::system::host_from(&machine, facts),
    )?;
    let json = rec.json();
    let mut announce = |e: &pingpong::Estimate| {
        if json {
            return;
        }
        eprintln!("numalab: {}", plan.describe(e));
        for w in &e.warnings {
            crate::recorder::warn(w);
        }
    };
    let mut sink = ProgressSink::with_bar(&mut rec);
    let outcome = pingpong::probe::run(&placer, &plan, &machine, &clock, &mut sink, &mut announce);
    sink.finish();
    let outcome = outcome?;
    if let Some(msg) = outcome.interruption(args.output.out.is_some()) {
        rec.finish()?;
        return Err(CliError::new(ErrorClass::Interrupted, msg));
    }
    let (variant, structure) = (plan.config.variant.name(), outcome.structure()?);
    show(
        args,
        &mut rec,
        &outcome.matrix,
        structure,
        &plan.key,
        variant,
    )?;
    rec.finish()?;
    if let Some(msg) = outcome.failed_pairs() {
        return Err(CliError::new(ErrorClass::Partial, msg));
    }
    Ok(())
}

/// The files asked for (CSV, SVG) and the terminal's picture of a matrix whose record
/// is in the journal under `key`, measured with `variant` (the SVG's title).
fn show(
    args: &C2cArgs,
    rec: &mut Recorder,
    matrix: &LatencyMatrix,
    structure: &Structure,
    key: &str,
    variant: &str,
) -> CliResult {
    if let Some(path) = &args.export_csv {
        let csv = numalab_c2c::csv::to_bytes(matrix);
        crate::output::write_file(path, &csv, "the CSV", "--export-csv")?;
    }
    let order = match args.order {
        OrderArg::Os => Order::Os,
        OrderArg::Group => Order::Group,
    };
    let positions = heatmap::order(matrix, Some(structure), order);
    if let Some(path) = &args.svg {
        let svg = heatmap::titled_svg(matrix, &positions, variant);
        crate::output::write_file(path, svg.as_bytes(), "the SVG", "--svg")?;
    }
    if !rec.json() {
        print!("{}", heatmap::picture(matrix, &positions, color()));
        // The pairs of this matrix and the matrix itself, as the report shows them.
        let shown = rec
            .latest()
            .into_iter()
            .filter(|r| record::shown_with(r, key));
        crate::output::print_sections(
            rec.envelope(),
            shown,
            numalab_report::sections::c2c::sections,
        );
    }
    Ok(())
}
