//! The one file lock numalab takes on what it writes (a journal, an evaluate folder being
//! set aside, a fleet folder): an exclusive, non-blocking lock on an open file (flock on
//! Linux, through std), released when the file is closed or the process dies. Another
//! holder is always [`ErrorClass::Busy`] (exit 6), whatever took the lock.

use crate::ErrorClass;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds it.
    #[error(
        "{}: {holder} is writing it; wait for it to finish or choose another {remedy}",
        crate::text::path_text(path)
    )]
    Busy {
        /// The locked file.
        path: PathBuf,
        /// Who holds it, in words ("another numalab process").
        holder: String,
        /// What to choose instead ("--out folder").
        remedy: String,
    },
    /// The lock call itself failed.
    #[error(
        "{}: cannot lock it ({})",
        crate::text::path_text(path),
        crate::input::io_reason(source)
    )]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl crate::Classify for LockError {
    fn class(&self) -> ErrorClass {
        match self {
            LockError::Busy { .. } => ErrorClass::Busy,
            LockError::Io { .. } => ErrorClass::Runtime,
        }
    }
}

/// Takes `file`'s exclusive lock without waiting. `path` names the file in errors;
/// `holder` and `remedy` word the busy case.
pub fn try_exclusive(
    file: &File,
    path: &Path,
    holder: &str,
    remedy: &str,
) -> Result<(), LockError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(TryLockError::WouldBlock) => Err(LockError::Busy {
            path: path.to_path_buf(),
            holder: holder.into(),
            remedy: remedy.into(),
        }),
        Err(TryLockError::Error(source)) => Err(LockError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Classify;

    #[test]
    fn a_second_holder_is_busy_until_the_first_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .unwrap()
        };
        let first = open();
        try_exclusive(&first, &path, "another numalab process", "--out folder").unwrap();
        let second = open();
        let e =
            try_exclusive(&second, &path, "another numalab process", "--out folder").unwrap_err();
        assert_eq!(e.class(), ErrorClass::Busy);
        assert!(
            e.to_string()
                .contains("another numalab process is writing it"),
            "{e}"
        );
        assert!(e.to_string().contains("choose another --out folder"), "{e}");
        drop(first);
        try_exclusive(&second, &path, "x", "y").unwrap();
    }
}
