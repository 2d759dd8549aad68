//! `numalab report` and `numalab compare`: render bundles (output folders, journals,
//! bundle files) offline, on any machine, from the records alone. Both show whatever
//! can be read: a bundle that cannot be read is named with the reason, the others are
//! still rendered, and the exit code says the output is partial.

use crate::{CliError, CliResult};
use clap::{Args, ValueEnum};
use numalab_report::compare::sides::{
    comparable_groups, load_sides, problems, split_arguments, Sides,
};
use numalab_report::load::{load, unique_labels, Loaded};
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

    /// The format a file name asks for, by its extension.
    fn of_path(p: &Path) -> Option<FormatArg> {
        match p.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "html" | "htm" => Some(FormatArg::Html),
            "md" | "markdown" => Some(FormatArg::Markdown),
            "csv" => Some(FormatArg::Csv),
            "json" => Some(FormatArg::Json),
            "txt" => Some(FormatArg::Terminal),
            _ => None,
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
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    pub run_noise: f64,
    /// Write to FILE (default: stdout). The format follows the extension (.html, .md,
    /// .csv, .json, .txt) unless --format is given.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format [default: terminal, or what -o's extension says].
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
}

/// Loads every bundle it can; the errors of the others, as messages.
pub fn load_all(paths: &[PathBuf]) -> (Vec<Loaded>, Vec<CliError>) {
    let mut set = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match load(p) {
            Ok(l) => set.push(l),
            Err(e) => errors.push(CliError::from(e)),
        }
    }
    unique_labels(&mut set);
    (set, errors)
}

/// Writes `text` to `path` (through a temporary file renamed into place, so a full
/// disk or a kill never leaves a torn file), or stdout.
pub fn write_output(path: Option<&Path>, text: &str) -> CliResult {
    match path {
        Some(p) => write_atomic(p, text.as_bytes()),
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

/// Writes the report to `p` ([`crate::output::write_file`]).
pub fn write_atomic(p: &Path, bytes: &[u8]) -> CliResult {
    crate::output::write_file(p, bytes, "the report", "-o")
}

/// Refuses an -o path whose extension names no format numalab writes (`r.pdf`).
fn check_output_name(output: Option<&Path>) -> CliResult {
    let Some(p) = output else { return Ok(()) };
    match p.extension() {
        Some(_) if FormatArg::of_path(p).is_none() => Err(CliError::new(
            ErrorClass::Usage,
            format!(
                "-o {}: numalab writes .html, .md, .csv, .json or .txt (terminal text); name the file with one of these",
                numalab_schema::text::path_text(p)
            ),
        )),
        _ => Ok(()),
    }
}

/// The exit status after rendering: the first load error, made partial when
/// something was rendered.
fn after(errors: Vec<CliError>, rendered: bool) -> CliResult {
    let n = errors.len();
    let mut it = errors.into_iter();
    let Some(first) = it.next() else {
        return Ok(());
    };
    for e in it {
        eprintln!("numalab: {}", e.message);
    }
    if rendered {
        Err(CliError::new(
            ErrorClass::Partial,
            format!(
                "{}{}; the other bundles were rendered",
                first.message,
                if n > 1 {
                    format!(" (and {} more unreadable)", n - 1)
                } else {
                    String::new()
                }
            ),
        ))
    } else {
        Err(first)
    }
}

fn warn_problems(set: &[Loaded]) {
    for l in set {
        for w in &l.warnings {
            eprintln!("numalab: warning: {w}");
        }
    }
}

/// Runs `numalab report`.
pub fn run(args: ReportArgs) -> CliResult {
    check_output_name(args.output.as_deref())?;
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(FormatArg::of_path))
        .unwrap_or(FormatArg::Html);
    // An HTML page is not for a terminal: without -o, on a terminal, it goes into the
    // (first) bundle's folder.
    let mut output = args.output.clone();
    if output.is_none() && format == FormatArg::Html && std::io::stdout().is_terminal() {
        if let Some(dir) = args.bundles.iter().find(|b| b.is_dir()) {
            output = Some(dir.join("report.html"));
        }
    }
    let (set, errors) = load_all(&args.bundles);
    if set.is_empty() {
        return after(errors, false);
    }
    warn_problems(&set);
    let doc = numalab_report::sections::document(&set);
    let text = match format {
        FormatArg::Html => doc.to_html(),
        f => doc.to_text(f.format()),
    };
    write_output(output.as_deref(), &text)?;
    if let Some(p) = &output {
        eprintln!("numalab: wrote {}", p.display());
    }
    after(errors, true)
}

/// Runs `numalab compare`.
pub fn compare(args: CompareArgs) -> CliResult {
    check_output_name(args.output.as_deref())?;
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(FormatArg::of_path))
        .unwrap_or(FormatArg::Terminal);
    if !(0.0..=100.0).contains(&args.run_noise) || !args.run_noise.is_finite() {
        return Err(CliError::new(
            ErrorClass::Usage,
            format!(
                "--run-noise {}: a percentage from 0 to 100 (the run-to-run spread assumed for single runs; 10 is the default)",
                args.run_noise
            ),
        ));
    }
    let groups = split_arguments(&args.bundles);
    let loaded = load_sides(&groups);
    let errors: Vec<CliError> = loaded.errors.into_iter().map(CliError::from).collect();
    let set = loaded.bundles;
    if set.len() < 2 {
        let mut msg: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
        msg.push(format!(
            "compare needs two readable bundles; {} of {} could be read",
            set.len(),
            groups.iter().map(Vec::len).sum::<usize>()
        ));
        return Err(CliError::new(ErrorClass::Input, msg.join("\n")));
    }
    warn_problems(&set);
    let Sides {
        metrics,
        sides,
        power,
    } = Sides::group(&set, &loaded.side_of, args.by_machine);
    if sides.len() < 2 {
        return Err(CliError::new(
            ErrorClass::Input,
            format!(
                "all {} bundles are runs of one machine ({}): nothing to compare them with; give runs of another machine too, or leave out --by-machine to compare the runs with each other",
                set.len(),
                sides.first().map(|s| s.label.as_str()).unwrap_or("?")
            ),
        ));
    }
    let report = numalab_report::compare::compare_groups(
        &sides,
        problems(&set),
        numalab_report::compare::Options {
            assumed_run_spread: args.run_noise / 100.0,
        },
    )
    .with_power(power);
    let text = match format {
        FormatArg::Json => {
            serde_json::to_string_pretty(&report).expect("comparison serializes") + "\n"
        }
        FormatArg::Html => report.document(&metrics).to_html(),
        f => report.document(&metrics).to_text(f.format()),
    };
    write_output(args.output.as_deref(), &text)?;
    if let Some(p) = &args.output {
        eprintln!("numalab: wrote {}", p.display());
    }
    if report.nothing_in_common() {
        let have = comparable_groups(&metrics);
        for e in &errors {
            eprintln!("numalab: {}", e.message);
        }
        return Err(CliError::new(
            ErrorClass::Input,
            format!(
                "the bundles have no figure in common ({}); run the same commands on each machine (numalab evaluate, or the same scale study) and compare their output folders",
                have.join("; ")
            ),
        ));
    }
    after(errors, true)
}
