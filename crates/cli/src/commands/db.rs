//! `numalab db`: the history of every bundle in one SQLite file (crate
//! `numalab-history`): ingest bundles, list runs, a figure over time, regressions beyond
//! the run-to-run noise, CSV/JSON export.

use crate::{CliError, CliResult};
use clap::{Args, Subcommand, ValueEnum};
use numalab_history::{
    tables, Baseline, History, IngestOptions, Query, RegressionQuery, RunFilter,
};
use numalab_report::table::{render, Format};
use numalab_schema::ErrorClass;
use std::path::PathBuf;

/// History of results in one SQLite file.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab db ingest results/ other-machine/\n  numalab db ingest --tag cluster=a --tag node=n17 results/\n  numalab db runs\n  numalab db query --metric mem.bandwidth.triad.all\n  numalab db query --metric mem.bandwidth.triad.all --format csv > triad.csv\n  numalab db regressions --baseline first --latest-runs 3\n\nThe file is --db, else $NUMALAB_DB, else $XDG_DATA_HOME/numalab/history.sqlite\n(~/.local/share/numalab/history.sqlite). Ingest is idempotent (a bundle is keyed by its\ncontent); several processes may ingest into one file at once."
)]
pub struct DbArgs {
    /// The history file (created if missing).
    #[arg(long, global = true, env = "NUMALAB_DB")]
    pub db: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: DbCommand,
}

/// `numalab db` subcommands.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Store bundles (result folders, journals or bundle files); each is stored once.
    Ingest(IngestArgs),
    /// List the stored runs (filtered).
    Runs(RunsArgs),
    /// A figure (or every figure) over time.
    Query(QueryArgs),
    /// Figures that moved beyond their run-to-run noise since a baseline.
    Regressions(RegressionsArgs),
}

/// `numalab db ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Bundles: folders written with `--out`, `results.jsonl` journals, bundle files, or
    /// fleet folders (`numalab fleet run`: every node's bundle, tagged fleet= and node=).
    #[arg(required = true)]
    pub bundles: Vec<PathBuf>,
    /// Label of the runs (default: the host name, else the folder name).
    #[arg(long)]
    pub label: Option<String>,
    /// A tag KEY=VALUE stored with each run, for filters (repeatable).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Which runs (shared by the reading subcommands).
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// Runs of this machine fingerprint (16 hex digits, as `db runs` shows).
    #[arg(long)]
    pub machine: Option<String>,
    /// Runs of this host name.
    #[arg(long)]
    pub host: Option<String>,
    /// Runs with this tag KEY=VALUE (repeatable: all must hold).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Runs at or after this time (RFC 3339: 2026-11-01 or 2026-11-01T12:00:00Z).
    #[arg(long)]
    pub since: Option<String>,
    /// Runs at or before this time (RFC 3339).
    #[arg(long)]
    pub until: Option<String>,
}

/// `numalab db runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Which runs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DbFormat::Table)]
    pub format: DbFormat,
}

/// `numalab db query`.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The figure id (e.g. mem.bandwidth.triad.all; `db query` without it lists every figure).
    #[arg(long)]
    pub metric: Option<String>,
    /// Only figures of this group (e.g. "memory bandwidth").
    #[arg(long)]
    pub group: Option<String>,
    /// Which runs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// At most this many points (earliest first).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Output format (csv and json are the export formats).
    #[arg(long, value_enum, default_value_t = DbFormat::Table)]
    pub format: DbFormat,
}

/// `numalab db regressions`.
#[derive(Debug, Args)]
pub struct RegressionsArgs {
    /// Where the baseline starts: `first` (each figure's first run on its machine), a run
    /// id (`run:12`) or a time (RFC 3339: the first run at or after it).
    #[arg(long, default_value = "first")]
    pub baseline: String,
    /// Runs in the baseline side (their spread measures the run-to-run noise).
    #[arg(long, default_value_t = RegressionQuery::default().baseline_runs)]
    pub baseline_runs: usize,
    /// The most recent runs that form the other side.
    #[arg(long, default_value_t = RegressionQuery::default().latest_runs)]
    pub latest_runs: usize,
    /// Only this figure.
    #[arg(long)]
    pub metric: Option<String>,
    /// Only figures of this group.
    #[arg(long)]
    pub group: Option<String>,
    /// Relative run-to-run spread assumed when a side has one run, percent.
    #[arg(long, default_value_t = 100.0 * RegressionQuery::default().assumed_run_spread)]
    pub run_noise: f64,
    /// Show every figure with its verdict, not only those that got worse.
    #[arg(long)]
    pub all: bool,
    /// Which runs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Output formats of `db runs` and `db query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DbFormat {
    /// Aligned table.
    Table,
    /// CSV (one row per point; `db query` only: the export format).
    Csv,
    /// JSON.
    Json,
}

/// Runs `numalab db`.
pub fn run(a: DbArgs) -> CliResult {
    // --db, else $NUMALAB_DB (clap reads it), else the user's data folder.
    let path = match a.db {
        Some(p) => p,
        None => numalab_history::default_path()?,
    };
    match a.command {
        DbCommand::Ingest(i) => ingest(&path, i),
        DbCommand::Runs(r) => runs(&path, r),
        DbCommand::Query(q) => query(&path, q),
        DbCommand::Regressions(r) => regressions(&path, r),
    }
}

fn filter(f: &FilterArgs) -> Result<RunFilter, CliError> {
    Ok(RunFilter::parse(
        f.machine.clone(),
        f.host.clone(),
        &f.tags,
        f.since.as_deref(),
        f.until.as_deref(),
    )?)
}

fn ingest(path: &std::path::Path, a: IngestArgs) -> CliResult {
    let tags = numalab_history::tags_object(&a.tags)?;
    let mut h = History::open(path)?;
    let opts = IngestOptions {
        label: a.label.clone(),
        tags,
    };
    let (bundles, skipped) = numalab_history::expand_fleets(&a.bundles, &opts);
    for line in skipped {
        eprintln!("numalab: {line}");
    }
    let batch = h.ingest_batch(bundles, &mut |r| {
        for note in r.notes() {
            eprintln!("numalab: {note}");
        }
        if let (Some(line), false) = (r.line(), a.json) {
            println!("{line}");
        }
    });
    if a.json {
        crate::output::print_json(&batch.to_json(path, h.run_count()?))?;
    }
    Ok(batch.verdict(a.bundles.len())?)
}

fn runs(path: &std::path::Path, a: RunsArgs) -> CliResult {
    let h = History::open_read(path)?;
    let runs = h.runs(&filter(&a.filter)?)?;
    match a.format {
        DbFormat::Json => crate::output::print_json(&runs),
        DbFormat::Csv => Err(CliError::new(
            ErrorClass::Usage,
            "--format csv is the export of `db query`; use --format table or json for runs",
        )),
        DbFormat::Table => {
            let t = tables::runs_table(&path.display().to_string(), &runs);
            print!("{}", render(&[t], Format::Terminal));
            Ok(())
        }
    }
}

fn query(path: &std::path::Path, a: QueryArgs) -> CliResult {
    let h = History::open_read(path)?;
    let q = Query {
        metric_id: a.metric.clone(),
        group: a.group.clone(),
        runs: filter(&a.filter)?,
        limit: a.limit,
    };
    let stdout = std::io::stdout();
    match a.format {
        DbFormat::Csv => drop(h.export_csv(&q, stdout.lock())?),
        DbFormat::Json => drop(h.export_json(&q, stdout.lock())?),
        DbFormat::Table => {
            let points = h.query(&q)?;
            let t = tables::points_table(a.metric.as_deref(), &points);
            print!("{}", render(&[t], Format::Terminal));
        }
    }
    Ok(())
}

fn regressions(path: &std::path::Path, a: RegressionsArgs) -> CliResult {
    numalab_history::check_regression_sides(a.baseline_runs, a.latest_runs, a.run_noise)?;
    let h = History::open_read(path)?;
    let q = RegressionQuery {
        baseline: Baseline::parse(&a.baseline)?,
        baseline_runs: a.baseline_runs,
        latest_runs: a.latest_runs,
        metric_id: a.metric.clone(),
        group: a.group.clone(),
        runs: filter(&a.filter)?,
        assumed_run_spread: a.run_noise / 100.0,
    };
    let rows = if a.all {
        h.verdicts(&q)?
    } else {
        h.regressions(&q)?
    };
    if a.json {
        return crate::output::print_json(&rows);
    }
    let t = tables::regressions_table(&rows, a.all, a.run_noise);
    print!("{}", render(&[t], Format::Terminal));
    Ok(())
}
