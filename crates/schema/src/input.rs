//! Reading files given by the user, with a bound: a topology, a CSV or a perf file is
//! read only if it is a regular file no larger than a limit, so that `/dev/zero`, a
//! FIFO or a mistaken 20 GB file gives a clear error instead of filling the memory or
//! hanging.
//!
//! Limits per kind of input are the constants below; `NUMALAB_MAX_INPUT` (bytes, with
//! a unit: `512MiB`, `2GiB`) replaces every one of them.

use std::io::Read;
use std::path::{Path, PathBuf};

/// hwloc XML topologies and files of sysfs snapshots.
pub const TOPOLOGY: u64 = 64 << 20;
/// Core-to-core CSV matrices.
pub const C2C_CSV: u64 = 64 << 20;
/// perf stat output and sample imports.
pub const PERF: u64 = 256 << 20;
/// Small text inputs: task mixes, model presets and overrides, layouts.
pub const TEXT: u64 = 16 << 20;
/// Result bundles and journals.
pub const BUNDLE: u64 = 2 << 30;
/// Unpacked size of a snapshot archive (all its files together).
pub const ARCHIVE_UNPACKED: u64 = 256 << 20;
/// Entries of a snapshot archive.
pub const ARCHIVE_ENTRIES: u64 = 200_000;

/// The environment variable that replaces every limit.
pub const ENV: &str = "NUMALAB_MAX_INPUT";

/// A file that cannot be read as an input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", crate::text::path_text(path))]
pub struct InputError {
    /// The file.
    pub path: PathBuf,
    /// Why, with the remedy.
    pub reason: String,
}

/// The limit in force: `default`, or the value of `NUMALAB_MAX_INPUT` when set, capped
/// at [`crate::units::MAX_BYTES`] (1 PiB: `18446744073709551615` means "no practical
/// limit", never a wrap to 0).
pub fn limit(default: u64) -> u64 {
    limit_from(std::env::var(ENV).ok().as_deref(), default)
}

/// Why the value of `NUMALAB_MAX_INPUT` cannot be used (not a size, 0, not UTF-8), so
/// that an input is refused naming it instead of the value being ignored; `None` when it
/// is unset or usable.
fn env_problem(value: Option<&std::ffi::OsStr>) -> Option<String> {
    let v = value?;
    let text = v.to_str().map(str::trim);
    match text.map(crate::units::parse_unbounded) {
        Some(Ok(n)) if n > 0 => None,
        _ => Some(format!(
            "{ENV}={} is not a size of at least 1 byte: give e.g. {ENV}=1GiB, or unset it",
            crate::text::visible(&v.to_string_lossy(), false)
        )),
    }
}

fn limit_from(value: Option<&str>, default: u64) -> u64 {
    value
        .and_then(|v| crate::units::parse_unbounded(v).ok())
        .filter(|&v| v > 0)
        .map_or(default, |v| {
            v.min(u128::from(crate::units::MAX_BYTES)) as u64
        })
}

fn err(path: &Path, reason: impl Into<String>) -> InputError {
    InputError {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// What an OS error means, in words ([`crate::text::io_reason`], kept here for the
/// callers that read inputs).
pub use crate::text::io_reason;

/// What a path that is not a regular file is, in words ("a folder", "a device", "a FIFO
/// (named pipe)", "a socket"; "a file" for a regular one).
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let ft = meta.file_type();
    if ft.is_dir() {
        "a folder"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_file() {
        "a file"
    } else {
        "not a regular file"
    }
}

/// Checks that `path` is a regular file (links followed) of at most the limit; returns
/// its size. Folders, devices, FIFOs and sockets are refused with what they are.
pub fn check_file(path: &Path, what: &str, default_limit: u64) -> Result<u64, InputError> {
    let meta = std::fs::metadata(path).map_err(|e| err(path, io_reason(&e)))?;
    if !meta.is_file() {
        let kind = kind_of(&meta);
        return Err(err(
            path,
            format!("this is {kind}, not a file; give {what} as a regular file (save a stream to a file first)"),
        ));
    }
    if let Some(problem) = env_problem(std::env::var_os(ENV).as_deref()) {
        return Err(err(path, problem));
    }
    let max = limit(default_limit);
    if meta.len() > max {
        return Err(err(
            path,
            format!(
                "{} is larger than the {} allowed for {what}; check that this is the right file, or raise the limit with {ENV}={}",
                crate::units::bytes(meta.len()),
                crate::units::bytes(max),
                crate::units::bytes(meta.len().next_power_of_two())
                    .replace(' ', "")
            ),
        ));
    }
    Ok(meta.len())
}

/// Reads a user-given file of `what` ("a topology XML", "a perf stat file") whole,
/// refusing anything but a regular file and anything beyond the limit (also when the
/// file grows while it is read).
pub fn read(path: &Path, what: &str, default_limit: u64) -> Result<Vec<u8>, InputError> {
    check_file(path, what, default_limit)?;
    let max = limit(default_limit);
    let file = std::fs::File::open(path).map_err(|e| err(path, io_reason(&e)))?;
    let mut out = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| err(path, io_reason(&e)))?;
    if out.len() as u64 > max {
        return Err(err(
            path,
            format!(
                "it grew past the {} allowed for {what} while being read; read a finished copy",
                crate::units::bytes(max)
            ),
        ));
    }
    Ok(out)
}

/// [`read`] as text; bytes that are not UTF-8 are an error naming where.
pub fn read_to_string(path: &Path, what: &str, default_limit: u64) -> Result<String, InputError> {
    let bytes = read(path, what, default_limit)?;
    String::from_utf8(bytes).map_err(|e| {
        err(
            path,
            format!(
                "not text: invalid UTF-8 at byte {}; give {what} as a text file",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A NUMALAB_MAX_INPUT that is not a size, or 0, was ignored without a word (the
    /// default limits applied): now every input is refused naming it (issue 50's campaign).
    #[test]
    fn an_unusable_numalab_max_input_is_named_not_ignored() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        assert_eq!(env_problem(None), None);
        assert_eq!(env_problem(os("2KiB").as_deref()), None);
        assert_eq!(env_problem(os("18446744073709551615").as_deref()), None);
        for bad in ["0", "lots", "", "-1", "\u{1b}[2J"] {
            let p = env_problem(os(bad).as_deref()).expect(bad);
            assert!(
                p.starts_with("NUMALAB_MAX_INPUT=") && p.contains("1GiB"),
                "{p}"
            );
            assert!(!p.contains('\u{1b}'), "{p}");
        }
    }

    /// `NUMALAB_MAX_INPUT=18446744073709551615` used to wrap the read bound to 0, making
    /// every input "empty": now it caps at 1 PiB and a file reads whole.
    #[test]
    fn numalab_max_input_u64_max_does_not_wrap() {
        let max = limit_from(Some("18446744073709551615"), TOPOLOGY);
        assert_eq!(max, crate::units::MAX_BYTES);
        assert_eq!(limit_from(Some("1e9999999999999999999999999999T"), 7), 7);
        assert_eq!(limit_from(Some("0"), 7), 7);
        assert_eq!(limit_from(Some("2KiB"), 7), 2048);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("small.csv");
        std::fs::write(&f, b"0,1\n1,0\n").unwrap();
        // `read` with the capped bound: the take() bound must not wrap.
        let file = std::fs::File::open(&f).unwrap();
        let mut out = Vec::new();
        file.take(max.saturating_add(1))
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"0,1\n1,0\n");
    }

    #[test]
    fn os_errors_are_said_in_words_without_their_number() {
        // ENOSPC on Linux, every architecture numalab builds for.
        let full = std::io::Error::from_raw_os_error(28);
        assert_eq!(
            io_reason(&full),
            "the disk is full: free some space or write elsewhere"
        );
        let lp = std::io::Error::from_raw_os_error(40);
        assert!(
            io_reason(&lp).starts_with("a symbolic link loop"),
            "{}",
            io_reason(&lp)
        );
        let notdir = std::io::Error::from_raw_os_error(20);
        assert!(io_reason(&notdir).starts_with("a part of the path is not a folder"));
        let refused = std::io::Error::from_raw_os_error(111);
        assert!(io_reason(&refused).starts_with("connection refused"));
        // An error without its own words: the system's, without the number.
        let other = std::io::Error::from_raw_os_error(7);
        assert_eq!(io_reason(&other), "Argument list too long");
        let plain = std::io::Error::other("a reason of our own");
        assert_eq!(io_reason(&plain), "a reason of our own");
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(io_reason(&missing), "no such file or folder");
    }

    #[test]
    fn devices_fifos_and_folders_are_refused_without_reading() {
        for (p, kind) in [
            ("/dev/zero", "a device"),
            ("/dev/urandom", "a device"),
            ("/tmp", "a folder"),
        ] {
            let e = read(Path::new(p), "a topology XML", TOPOLOGY).unwrap_err();
            assert!(e.reason.contains(kind), "{e}");
            assert!(e.to_string().starts_with(p), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(crate::sys::mkfifo(&c, 0o600), 0);
        let e = read(&fifo, "a CSV matrix", C2C_CSV).unwrap_err();
        assert!(e.reason.contains("FIFO"), "{e}");
        let e = read(&dir.path().join("missing"), "a CSV matrix", C2C_CSV).unwrap_err();
        assert_eq!(e.reason, "no such file or folder");
    }

    #[test]
    fn files_beyond_the_limit_are_refused_with_the_remedy() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("big.xml");
        std::fs::write(&f, vec![b'x'; 5000]).unwrap();
        let e = read(&f, "a topology XML", 4096).unwrap_err();
        assert!(
            e.reason
                .contains("4.9 KiB is larger than the 4 KiB allowed for a topology XML"),
            "{e}"
        );
        assert!(e.reason.contains("NUMALAB_MAX_INPUT=8KiB"), "{e}");
        assert_eq!(read(&f, "a topology XML", 5000).unwrap().len(), 5000);
        std::fs::write(&f, b"\xff\xfe").unwrap();
        assert!(read_to_string(&f, "a mix", TEXT)
            .unwrap_err()
            .reason
            .contains("invalid UTF-8 at byte 0"));
    }
}
