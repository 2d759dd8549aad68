//! Output helpers: colour only on a terminal and never with NO_COLOR, JSON printing for
//! `--json`, and the one writer of output files ([`write_file`]).

use crate::{CliError, CliResult};
use clap::ValueEnum;
use numalab_schema::ErrorClass;
use serde::Serialize;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
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
pub type SectionsOf = fn(usize, &numalab_report::Loaded, &str) -> Vec<numalab_report::doc::Section>;

/// A command's records on the terminal as the report's sections for them: the same
/// tables (one definition per record kind) that the HTML, Markdown and CSV reports use,
/// without the charts.
pub fn print_sections(
    envelope: &numalab_schema::Envelope,
    records: impl IntoIterator<Item = numalab_schema::Record>,
    sections: SectionsOf,
) {
    let loaded = numalab_report::Loaded::from_bundle(
        envelope.host.hostname.as_deref().unwrap_or("this run"),
        numalab_schema::Bundle {
            schema_version: numalab_schema::record::SCHEMA_VERSION,
            envelope: envelope.clone(),
            records: records.into_iter().collect(),
        },
    );
    for s in sections(0, &loaded, "") {
        print!(
            "{}",
            s.to_text(numalab_report::table::Format::Terminal, false)
        );
    }
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

/// Writes `bytes` (`what`, e.g. "the report") to `p`, the value of `flag`. A regular file (or a path that does not exist yet) is written
/// whole or not at all: a temporary file in the same folder, synced, then renamed over
/// it; an existing file keeps its mode, a new one gets the umask's; a symlink to a
/// regular file stays a symlink (its target is replaced). Anything else that the path
/// names (a terminal, `/dev/stdout`, a pipe, a FIFO) is written through, never
/// replaced; a socket or another kind of file is refused (exit 2).
pub fn write_file(p: &Path, bytes: &[u8], what: &str, flag: &str) -> CliResult {
    use std::io::Write;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let shown = numalab_schema::text::path_text(p);
    let fail = |e: std::io::Error| {
        CliError::new(
            ErrorClass::Runtime,
            format!(
                "{shown}: cannot write {what} ({}); the previous file, if any, is unchanged: free some space or choose another {flag} path",
                numalab_schema::input::io_reason(&e)
            ),
        )
    };
    // What the path names, through symlinks.
    let existing = std::fs::metadata(p).ok();
    if let Some(m) = &existing {
        let t = m.file_type();
        if t.is_dir() {
            return Err(CliError::new(
                ErrorClass::Usage,
                format!("{shown}: is a folder; give {flag} a file name in it"),
            ));
        }
        if t.is_char_device() || t.is_fifo() {
            // A terminal, /dev/stdout, /dev/null, a pipe: written through.
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .map_err(fail)?;
            return f.write_all(bytes).and_then(|()| f.flush()).map_err(fail);
        }
        if !t.is_file() {
            return Err(CliError::new(
                ErrorClass::Usage,
                format!(
                    "{shown}: is not a regular file (a {}); give {flag} a file name",
                    if t.is_socket() {
                        "socket"
                    } else if t.is_block_device() {
                        "block device"
                    } else {
                        "special file"
                    }
                ),
            ));
        }
    }
    // A symlink to a regular file: the target is replaced, the link kept.
    let target = match (&existing, std::fs::symlink_metadata(p)) {
        (Some(_), Ok(l)) if l.file_type().is_symlink() => std::fs::canonicalize(p).map_err(fail)?,
        _ => p.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(CliError::new(
            ErrorClass::Runtime,
            format!(
                "{shown}: cannot write {what}: the folder {} does not exist; create it or choose another {flag} path",
                numalab_schema::text::path_text(&dir)
            ),
        ));
    }
    // The temporary file is created 0666 less the umask (the kernel applies it), as a
    // plain create would be; an existing file's mode is then copied onto it.
    let mut tmp = tempfile::Builder::new()
        .prefix(".numalab-report-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(&dir)
        .map_err(fail)?;
    if let Some(m) = &existing {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(
                m.permissions().mode() & 0o7777,
            ))
            .map_err(fail)?;
    }
    tmp.write_all(bytes).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(&target).map_err(|e| fail(e.error))?;
    Ok(())
}
