//! `numalab report` and `numalab compare`: render bundles (output folders, journals,
//! bundle files) offline, on any machine, from the records alone. Both show whatever
//! can be read: a bundle that cannot be read is named with the reason, the others are
//! still rendered, and the exit code says the output is partial.

use crate::{CliError, CliResult};
use clap::{Args, ValueEnum};
use numalab_report::compare::{sides, DEFAULT_RUN_SPREAD};
use numalab_report::load::{LoadError, Loaded};
use numalab_report::outcome;
use numalab_report::table::Format;
use numalab_schema::ErrorClass;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Output formats of `report` and `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// A self-contained HTML page (inline CSS and SVG charts, no network requests).
    Html,
    /// Markdown tables.
    Markdown,
    /// CSV, one block per table.
    Csv,
    /// JSON.
    Json,
    /// Aligned text for a terminal.
    Terminal,
}

impl FormatArg {
    fn format(self) -> Format {
        match self {
            FormatArg::Html => Format::Html,
            FormatArg::Markdown => Format::Markdown,
            FormatArg::Csv => Format::Csv,
            FormatArg::Json => Format::Json,
            FormatArg::Terminal => Format::Terminal,
        }
    }
}

/// `numalab report`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  numalab report numalab-out -o report.html\n  numalab report eval-dir scale-dir model.json -o all.html\n  numalab report numalab-out --format markdown"
)]
pub struct ReportArgs {
    /// Bundles: output folders (holding results.jsonl), results.jsonl files, or bundle
    /// files written with --json. Several bundles make one report.
    #[arg(required = true, value_name = "BUNDLE")]
    pub bundles: Vec<PathBuf>,
    /// Write to FILE (default: stdout). The format follows the extension (.html, .md,
    /// .csv, .json, .txt) unless --format is given.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format [default: html, or what -o's extension says].
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
}

/// `numalab compare`.
#[derive(Debug, Args)]
#[command(
    after_help = "The first bundle is the baseline: ratios are other / baseline, with 95% bootstrap intervals; a ratio whose interval contains 1 is called within the noise.\n\nExamples:\n  numalab compare xeon-out altra-out\n  numalab compare xeon-out altra-out grace-out -o comparison.html\n  numalab compare before.jsonl after.jsonl --format json"
)]
pub struct CompareArgs {
    /// Two or more bundles (output folders, results.jsonl files or bundle files); the
    /// first is the baseline. Several runs of one machine form one side when joined
    /// with commas (A1,A2,A3 B1,B2): their spread gives the run-to-run noise.
    #[arg(required = true, num_args = 2.., value_name = "BUNDLE[,BUNDLE...]")]
    pub bundles: Vec<PathBuf>,
    /// Group the bundles into sides by machine (host name and topology fingerprint)
    /// instead of by argument: each machine's runs form one side, in order of first
    /// appearance.
    #[arg(long)]
    pub by_machine: bool,
    /// Run-to-run spread (relative standard deviation of one run's figure, in percent)
    /// assumed when a side has a single run: its intervals are widened by it.
    #[arg(long, value_name = "PCT", default_value_t = 100.0 * DEFAULT_RUN_SPREAD)]
    pub run_noise: f64,
    /// Write to FILE (default: stdout). The format follows the extension (.html, .md,
    /// .csv, .json, .txt) unless --format is given.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format [default: terminal, or what -o's extension says].
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
}

/// Writes `text` to `path` (through a temporary file renamed into place, so a full
/// disk or a kill never leaves a torn file), or stdout.
pub fn write_output(path: Option<&Path>, text: &str) -> CliResult {
    match path {
        Some(p) => crate::output::write_file(p, text.as_bytes(), "the report", "-o"),
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                // A closed pipe (| head) is not an error worth reporting.
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CliError::new(
                    ErrorClass::Runtime,
                    format!(
                        "cannot write the report to standard output ({}); free some space or give -o a file",
                        numalab_schema::input::io_reason(&e)
                    ),
                )),
                _ => Ok(()),
            }
        }
    }
}

/// Says the load errors beside the first, whose exit decides (partial when rendered).
fn after(errors: Vec<LoadError>, rendered: bool) -> CliResult {
    let (said, verdict) = outcome::after_rendering(errors, rendered);
    for line in said {
        eprintln!("numalab: {line}");
    }
    Ok(verdict?)
}

/// Says the warnings met reading the bundles.
fn warn(set: &[Loaded]) {
    for line in outcome::warning_lines(set) {
        eprintln!("numalab: {line}");
    }
}

/// Says where the output was written (not when it went to standard output).
fn wrote(output: Option<&Path>) {
    if let Some(p) = output {
        eprintln!("numalab: wrote {}", p.display());
    }
}

/// Runs `numalab report`.
pub fn run(args: ReportArgs) -> CliResult {
    let output = args.output.as_deref();
    outcome::check_output_name(output)?;
    let format = outcome::output_format(args.format.map(FormatArg::format), output, Format::Html);
    let on_terminal = std::io::stdout().is_terminal();
    let output = outcome::destination(output, format, &args.bundles, on_terminal);
    let (set, errors) = outcome::load_all(&args.bundles);
    if set.is_empty() {
        return after(errors, false);
    }
    warn(&set);
    let text = numalab_report::sections::try_document(&set)?.try_render(format)?;
    write_output(output.as_deref(), &text)?;
    wrote(output.as_deref());
    after(errors, true)
}

/// Runs `numalab compare`.
pub fn compare(args: CompareArgs) -> CliResult {
    let output = args.output.as_deref();
    outcome::check_output_name(output)?;
    let format =
        outcome::output_format(args.format.map(FormatArg::format), output, Format::Terminal);
    outcome::check_run_noise(args.run_noise)?;
    let loaded = sides::load_arguments(&args.bundles)?;
    warn(&loaded.bundles);
    let (report, metrics) = sides::compare_loaded(&loaded, args.by_machine, args.run_noise)?;
    write_output(output, &report.render(format, &metrics))?;
    wrote(output);
    if report.nothing_in_common() {
        for e in &loaded.errors {
            eprintln!("numalab: {}", e.message);
        }
        return Err(sides::nothing_in_common(&metrics).into());
    }
    after(loaded.errors, true)
}
