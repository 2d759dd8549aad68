//! Output helpers: colour only on a terminal and never with NO_COLOR, JSON printing for
//! `--json`, and the one writer of output files ([`write_file`]).

use crate::CliResult;
use clap::ValueEnum;
use serde::Serialize;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// When to use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

static COLOR: AtomicBool = AtomicBool::new(false);

/// Decides once whether stdout gets colour.
pub fn init_color(choice: ColorChoice) {
    let on = match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
        }
    };
    COLOR.store(on, Ordering::Relaxed);
}

/// Whether colour is on.
pub fn color() -> bool {
    COLOR.load(Ordering::Relaxed)
}

/// Wraps text in an ANSI colour when colour is on (31 red, 32 green, 33 yellow, 36 cyan, 1 bold).
pub fn paint(code: &str, text: &str) -> String {
    if color() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: Serialize>(value: &T) -> Result<(), crate::CliError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| {
        crate::CliError::new(
            numalab_schema::ErrorClass::Runtime,
            format!("cannot serialize output: {e}"),
        )
    })?;
    println!("{text}");
    Ok(())
}

/// Which sections of the report a command's records get on the terminal.
pub type SectionsOf = numalab_report::sections::SectionsOf;

/// A command's records on the terminal as the report's sections for them
/// ([`numalab_report::sections::terminal_text`]).
pub fn print_sections(
    envelope: &numalab_schema::Envelope,
    records: impl IntoIterator<Item = numalab_schema::Record>,
    sections: SectionsOf,
) {
    let records = records.into_iter().collect();
    print!(
        "{}",
        numalab_report::sections::terminal_text(envelope, records, sections)
    );
}

/// A progress bar on stderr with numalab's look: `template` in indicatif's syntax.
pub fn bar(len: u64, template: &str) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::new(len);
    b.set_style(
        indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    b
}

/// Writes `bytes` (`what`, e.g. "the report") to `p`, the value of `flag`: whole or not
/// at all ([`numalab_schema::output::write_file`]).
pub fn write_file(p: &Path, bytes: &[u8], what: &str, flag: &str) -> CliResult {
    Ok(numalab_schema::output::write_file(p, bytes, what, flag)?)
}
