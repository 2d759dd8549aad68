//! What `numalab report` and `compare` decide beside their output: the file's format and
//! name, where an HTML page goes, and the exit an unreadable bundle or a bad option makes.

use crate::load::{load, unique_labels, LoadError, Loaded};
use crate::table::Format;
use numalab_schema::{Classify, ErrorClass, Warning};
use std::path::{Path, PathBuf};

/// A refusal or a run's verdict, with its exit class and the words for the user.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Refusal {
    /// Exit class.
    pub class: ErrorClass,
    /// What, which input, what to do.
    pub message: String,
}

impl Classify for Refusal {
    fn class(&self) -> ErrorClass {
        self.class
    }
}

impl Refusal {
    /// A refusal of `class`.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Refusal {
        Refusal {
            class,
            message: message.into(),
        }
    }
}

/// Refuses an `-o` path whose extension names no format numalab writes (`r.pdf`); a
/// name without an extension is accepted (the format is then the default or --format).
pub fn check_output_name(output: Option<&Path>) -> Result<(), Refusal> {
    let Some(p) = output else { return Ok(()) };
    match p.extension() {
        Some(_) if Format::of_path(p).is_none() => Err(Refusal::new(
            ErrorClass::Usage,
            format!(
                "-o {}: numalab writes .html, .md, .csv, .json or .txt (terminal text); name the file with one of these",
                numalab_schema::text::path_text(p)
            ),
        )),
        _ => Ok(()),
    }
}

/// The output's format: the one given, else what `-o`'s extension says, else `default`.
pub fn output_format(given: Option<Format>, output: Option<&Path>, default: Format) -> Format {
    given
        .or_else(|| output.and_then(Format::of_path))
        .unwrap_or(default)
}

/// Where the report goes: `-o` as given; without it an HTML page is not for a terminal,
/// so on one it goes into the first bundle that is a folder (`report.html`); else
/// standard output (none).
pub fn destination(
    output: Option<&Path>,
    format: Format,
    bundles: &[PathBuf],
    stdout_is_terminal: bool,
) -> Option<PathBuf> {
    if output.is_none() && format == Format::Html && stdout_is_terminal {
        if let Some(dir) = bundles.iter().find(|b| b.is_dir()) {
            return Some(dir.join("report.html"));
        }
    }
    output.map(Path::to_path_buf)
}

/// Loads every bundle it can, labels made unique; the errors of the others.
pub fn load_all(paths: &[PathBuf]) -> (Vec<Loaded>, Vec<LoadError>) {
    let mut set = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match load(p) {
            Ok(l) => set.push(l),
            // Ctrl-C or SIGTERM: no more bundles are read, and that error decides.
            Err(e) if e.class() == ErrorClass::Interrupted => return (Vec::new(), vec![e]),
            Err(e) => errors.push(e),
        }
    }
    unique_labels(&mut set);
    (set, errors)
}

/// The warnings met reading the bundles, one line each ("warning: ...").
pub fn warning_lines(set: &[Loaded]) -> Vec<String> {
    folded_warnings(set)
        .iter()
        .map(|w| format!("warning: {w}"))
        .collect()
}

/// The warnings met reading `set`, folded: the first of each code as it came, the
/// others of that code one warning at the end (how many, three of them;
/// `numalab_schema::fold`). A damaged journal can give one warning a line.
pub fn folded_warnings(set: &[Loaded]) -> Vec<Warning> {
    let mut fold = numalab_schema::fold::Fold::default();
    let mut said = Vec::new();
    for l in set {
        for w in &l.warnings {
            if fold.note(&l.label, w) {
                said.push(w.clone());
            }
        }
    }
    said.extend(fold.folded());
    said
}

/// What the unreadable bundles make of a run: the messages said beside (all but the
/// first), and the first error deciding the exit, made partial when the other bundles
/// were `rendered`.
pub fn after_rendering(
    errors: Vec<LoadError>,
    rendered: bool,
) -> (Vec<String>, Result<(), Refusal>) {
    let n = errors.len();
    let mut it = errors.into_iter();
    let Some(first) = it.next() else {
        return (Vec::new(), Ok(()));
    };
    let said = it.map(|e| e.message).collect();
    let verdict = if rendered {
        Refusal::new(
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
        )
    } else {
        Refusal::new(first.class(), first.message)
    };
    (said, Err(verdict))
}

/// Checks `--run-noise`: a percentage from 0 to 100.
pub fn check_run_noise(pct: f64) -> Result<(), Refusal> {
    if !(0.0..=100.0).contains(&pct) || !pct.is_finite() {
        return Err(Refusal::new(
            ErrorClass::Usage,
            format!(
                "--run-noise {pct}: a percentage from 0 to 100 (the run-to-run spread assumed for single runs; 10 is the default)"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_error(path: &str) -> LoadError {
        load(Path::new(path)).unwrap_err()
    }

    #[test]
    fn only_names_of_formats_numalab_writes_are_accepted() {
        assert_eq!(check_output_name(None), Ok(()));
        assert_eq!(check_output_name(Some(Path::new("r.MD"))), Ok(()));
        assert_eq!(check_output_name(Some(Path::new("report"))), Ok(()));
        let e = check_output_name(Some(Path::new("r.pdf"))).unwrap_err();
        assert_eq!(e.class, ErrorClass::Usage);
        assert!(
            e.message.starts_with("-o r.pdf: numalab writes .html"),
            "{e}"
        );
    }

    #[test]
    fn the_format_given_wins_then_the_extension_then_the_default() {
        let o = Some(Path::new("r.csv"));
        assert_eq!(
            output_format(Some(Format::Json), o, Format::Html),
            Format::Json
        );
        assert_eq!(output_format(None, o, Format::Html), Format::Csv);
        assert_eq!(
            output_format(None, None, Format::Terminal),
            Format::Terminal
        );
    }

    #[test]
    fn an_html_page_on_a_terminal_goes_into_the_first_bundle_folder() {
        let dir = tempfile::tempdir().unwrap();
        let bundles = vec![PathBuf::from("no-such.jsonl"), dir.path().to_path_buf()];
        let page = Some(dir.path().join("report.html"));
        assert_eq!(destination(None, Format::Html, &bundles, true), page);
        assert_eq!(destination(None, Format::Html, &bundles, false), None);
        assert_eq!(destination(None, Format::Csv, &bundles, true), None);
        let o = Path::new("x.html");
        assert_eq!(
            destination(Some(o), Format::Html, &bundles, true),
            Some(o.into())
        );
    }

    #[test]
    fn unreadable_bundles_make_the_run_partial_when_others_were_rendered() {
        assert_eq!(after_rendering(Vec::new(), true), (Vec::new(), Ok(())));
        let errors = || vec![load_error("/no/such/a"), load_error("/no/such/b")];
        let (said, verdict) = after_rendering(errors(), true);
        assert_eq!(said.len(), 1);
        assert!(said[0].starts_with("/no/such/b: no such file"), "{said:?}");
        let v = verdict.unwrap_err();
        assert_eq!(v.class, ErrorClass::Partial);
        assert!(v.message.starts_with("/no/such/a: no such file"), "{v}");
        assert!(v
            .message
            .ends_with(" (and 1 more unreadable); the other bundles were rendered"));
        let (_, verdict) = after_rendering(errors(), false);
        assert_eq!(verdict.unwrap_err().class, ErrorClass::Input);
    }

    #[test]
    fn load_all_keeps_the_readable_and_the_reasons_of_the_others() {
        let (set, errors) = load_all(&[PathBuf::from("/no/such/bundle")]);
        assert!(set.is_empty());
        assert_eq!(errors.len(), 1);
        assert!(warning_lines(&set).is_empty());
    }

    /// A journal with a hundred unreadable lines says the first and one line for the
    /// other 99 (three of them named), not a hundred lines.
    #[test]
    fn a_warning_per_journal_line_is_said_in_two_lines() {
        let mut l = crate::load::test_loaded("run", numalab_schema::Origin::Measured, Vec::new());
        l.warnings = (1..=100)
            .map(|i| {
                numalab_schema::Warning::new(
                    "unreadable_line",
                    format!("line {i} skipped: not JSON"),
                )
            })
            .collect();
        let label = l.label.clone();
        let lines = warning_lines(&[l]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0], "warning: line 1 skipped: not JSON");
        assert!(
            lines[1].starts_with("warning: unreadable_line: 99 more records had this warning"),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].contains(&format!("the next: {label}: line 2 skipped"))
                && lines[1].contains(&format!("{label}: line 4 skipped"))
                && !lines[1].contains("line 5 "),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn run_noise_is_a_percentage() {
        assert_eq!(check_run_noise(10.0), Ok(()));
        assert_eq!(check_run_noise(0.0), Ok(()));
        for bad in [-1.0, 100.5, f64::NAN, f64::INFINITY] {
            assert_eq!(check_run_noise(bad).unwrap_err().class, ErrorClass::Usage);
        }
        assert!(check_run_noise(101.0)
            .unwrap_err()
            .message
            .starts_with("--run-noise 101: a percentage from 0 to 100"));
    }
}
