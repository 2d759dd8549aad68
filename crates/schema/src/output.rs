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
    use std::os::unix::fs::FileTypeExt;
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
                "{shown}: cannot write {what}: the folder {} {}; create it or choose another {flag} path",
                crate::text::path_text(&dir),
                if dir.exists() { "is a file" } else { "does not exist" }
            ),
        ));
    }
    replace(&target, bytes).map_err(fail)
}

/// Replaces the regular file `target` (or creates it) whole or not at all: a temporary
/// file in its folder, written, synced, then renamed over it. The temporary file is
/// created 0666 less the umask (the kernel applies it), as a plain create would be; an
/// existing file's mode is copied onto it. The caller has checked that `target` is a
/// regular file or absent ([`write_file`] does); numalab's own files in its own folders
/// (the fleet folder's) are written with this directly.
pub fn replace(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".numalab-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    if let Ok(m) = std::fs::metadata(target) {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(
                m.permissions().mode() & 0o7777,
            ))?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(target).map_err(|e| e.error)?;
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
        // A file where the folder should be: said so, not "os error 20".
        std::fs::write(dir.path().join("plain"), "x").unwrap();
        let under = dir.path().join("plain/r.svg");
        let e = write_file(&under, b"x", "the SVG", "--svg").unwrap_err();
        assert_eq!(e.class, ErrorClass::Runtime);
        assert!(e.message.contains("plain is a file; create it"), "{e}");
    }

    /// The umask is process-wide: the test that sets it runs its cases one after another
    /// in a child process (this test binary, filtered to `umask_child`), so no other test
    /// thread creates files under it.
    #[test]
    fn a_new_file_gets_0666_less_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        for (umask, mode) in [("027", 0o640), ("022", 0o644), ("077", 0o600)] {
            let p = dir.path().join(format!("new-{umask}.md"));
            let st = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "umask {umask} && exec \"$0\" --exact output::tests::umask_child --include-ignored --quiet"
                ))
                .arg(&exe)
                .env("NUMALAB_OUTPUT_TEST_PATH", &p)
                .status()
                .unwrap();
            assert!(st.success());
            let got = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
            assert_eq!(got, mode, "umask {umask}");
        }
    }

    /// Run by [`a_new_file_gets_0666_less_the_umask`] in a child with a umask.
    #[test]
    #[ignore = "run by a_new_file_gets_0666_less_the_umask"]
    fn umask_child() {
        let p = std::env::var_os("NUMALAB_OUTPUT_TEST_PATH").expect("run by its parent");
        write_file(Path::new(&p), b"x", "the report", "-o").unwrap();
    }

    #[test]
    fn a_symlink_to_a_file_stays_a_link_and_its_target_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("t.md");
        std::fs::write(&target, "old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o604)).unwrap();
        let link = dir.path().join("l.md");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_file(&link, b"new", "the report", "-o").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o604);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    /// A device (a link to one too) is written through and stays a device: /dev/null
    /// takes the bytes, /dev/full says it is full (exit 1, the device untouched).
    #[test]
    fn a_device_is_written_through_never_replaced() {
        use std::os::unix::fs::FileTypeExt;
        write_file(Path::new("/dev/null"), b"x", "the report", "-o").unwrap();
        let e = write_file(Path::new("/dev/full"), b"x", "the report", "-o").unwrap_err();
        assert_eq!(e.class, ErrorClass::Runtime);
        assert!(
            e.message
                .starts_with("/dev/full: cannot write the report ("),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("full");
        std::os::unix::fs::symlink("/dev/full", &link).unwrap();
        assert!(write_file(&link, b"x", "the report", "-o").is_err());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        for d in ["/dev/null", "/dev/full"] {
            let m = std::fs::symlink_metadata(d).unwrap();
            assert!(m.file_type().is_char_device(), "{d}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_fifo_is_written_through_and_a_socket_refused() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_file(&fifo, b"page", "the report", "-o").unwrap();
        assert_eq!(reader.join().unwrap(), b"page");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = write_file(&sock, b"x", "the SVG", "--svg").unwrap_err();
        assert_eq!(e.class, ErrorClass::Usage);
        assert!(
            e.message
                .ends_with(": is not a regular file (a socket); give --svg a file name"),
            "{e}"
        );
        assert!(std::fs::symlink_metadata(&sock)
            .unwrap()
            .file_type()
            .is_socket());
    }

    #[test]
    fn replace_keeps_an_existing_files_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fleet.json");
        std::fs::write(&p, "{}").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        replace(&p, b"[]").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"[]");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o644);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
