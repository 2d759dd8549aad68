//! The one writer of output files (reports, charts, exported XML): a regular file is
//! written whole or not at all; what is not one is written through or refused.

use crate::{Classify, ErrorClass};
use std::path::{Path, PathBuf};

/// Why an output file could not be written, with its exit class: a path that cannot
/// take a file is the user's to fix (usage), a write that failed is a runtime failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct WriteError {
    /// Exit class.
    pub class: ErrorClass,
    /// One line for people: the path, what failed, what to do.
    pub message: String,
}

impl WriteError {
    fn new(class: ErrorClass, message: String) -> Self {
        WriteError { class, message }
    }
}

impl Classify for WriteError {
    fn class(&self) -> ErrorClass {
        self.class
    }
}

/// Writes `bytes` (`what`, e.g. "the report") to `p`, the value of `flag`. A regular file (or a path that does not exist yet) is written
/// whole or not at all: a temporary file in the same folder, synced, then renamed over
/// it; an existing file keeps its mode, a new one gets the umask's; a symlink to a
/// regular file stays a symlink (its target is replaced). Anything else that the path
/// names (a terminal, `/dev/stdout`, a pipe, a FIFO) is written through, never
/// replaced; a socket or another kind of file is refused (exit 2).
pub fn write_file(p: &Path, bytes: &[u8], what: &str, flag: &str) -> Result<(), WriteError> {
    use std::io::Write;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let shown = crate::text::path_text(p);
    let fail = |e: std::io::Error| {
        WriteError::new(
            ErrorClass::Runtime,
            format!(
                "{shown}: cannot write {what} ({}); the previous file, if any, is unchanged: free some space or choose another {flag} path",
                crate::input::io_reason(&e)
            ),
        )
    };
    // What the path names, through symlinks.
    let existing = std::fs::metadata(p).ok();
    if let Some(m) = &existing {
        let t = m.file_type();
        if t.is_dir() {
            return Err(WriteError::new(
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
            return Err(WriteError::new(
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
        return Err(WriteError::new(
            ErrorClass::Runtime,
            format!(
                "{shown}: cannot write {what}: the folder {} does not exist; create it or choose another {flag} path",
                crate::text::path_text(&dir)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_is_replaced_whole_keeping_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.html");
        write_file(&p, b"one", "the report", "-o").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_file(&p, b"two", "the report", "-o").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Nothing left beside it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_folder_or_a_missing_folder_is_refused_with_the_flag_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_file(dir.path(), b"x", "the report", "-o").unwrap_err();
        assert_eq!(e.class, ErrorClass::Usage);
        assert!(
            e.message
                .ends_with(": is a folder; give -o a file name in it"),
            "{e}"
        );
        let missing = dir.path().join("no/such/r.svg");
        let e = write_file(&missing, b"x", "the SVG", "--svg").unwrap_err();
        assert_eq!(e.class, ErrorClass::Runtime);
        assert!(
            e.message.contains("cannot write the SVG: the folder "),
            "{e}"
        );
        assert!(
            e.message
                .ends_with("does not exist; create it or choose another --svg path"),
            "{e}"
        );
    }
}
