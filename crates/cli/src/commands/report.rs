//! `numalab report` and `numalab compare`: render bundles (output folders, journals,
//! bundle files) offline, on any machine, from the records alone. Both show whatever
//! can be read: a bundle that cannot be read is named with the reason, the others are
//! still rendered, and the exit code says the output is partial.

use crate::{CliError, CliResult};
use clap::{Args, ValueEnum};
use numalab_report::load::{load, unique_labels, Loaded};
use numalab_report::table::Format;
use numalab_schema::ErrorClass;
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
    /// first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "BUNDLE")]
    pub bundles: Vec<PathBuf>,
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

/// Writes `text` to `path`, or stdout.
pub fn write_output(path: Option<&Path>, text: &str) -> CliResult {
    match path {
        Some(p) => std::fs::write(p, text).map_err(|e| {
            CliError::new(
                ErrorClass::Runtime,
                format!("{}: cannot write the report: {e}", p.display()),
            )
        }),
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            // A closed pipe (| head) is not an error worth reporting.
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            Ok(())
        }
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
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(FormatArg::of_path))
        .unwrap_or(FormatArg::Html);
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
    write_output(args.output.as_deref(), &text)?;
    if let Some(p) = &args.output {
        eprintln!("numalab: wrote {}", p.display());
    }
    after(errors, true)
}

/// Runs `numalab compare`.
pub fn compare(args: CompareArgs) -> CliResult {
    let format = args
        .format
        .or_else(|| args.output.as_deref().and_then(FormatArg::of_path))
        .unwrap_or(FormatArg::Terminal);
    let (set, errors) = load_all(&args.bundles);
    if set.len() < 2 {
        let mut msg: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
        msg.push(format!(
            "compare needs two readable bundles; {} of {} could be read",
            set.len(),
            args.bundles.len()
        ));
        return Err(CliError::new(ErrorClass::Input, msg.join("\n")));
    }
    warn_problems(&set);
    let metrics: Vec<(String, Vec<numalab_report::compare::Metric>)> = set
        .iter()
        .map(|l| (l.label.clone(), numalab_report::metrics::metrics(l)))
        .collect();
    let problems: Vec<String> = set
        .iter()
        .flat_map(|l| l.warnings.iter().map(move |w| format!("{}: {w}", l.label)))
        .collect();
    let report = numalab_report::compare::compare_all(&metrics, problems);
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
        let have: Vec<String> = metrics
            .iter()
            .map(|(l, m)| {
                let mut groups: Vec<&str> = Vec::new();
                for g in m.iter().map(|m| m.group.as_str()) {
                    if !groups.contains(&g) {
                        groups.push(g);
                    }
                }
                format!(
                    "{l}: {}",
                    if groups.is_empty() {
                        "nothing comparable".to_string()
                    } else {
                        groups.join(", ")
                    }
                )
            })
            .collect();
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
