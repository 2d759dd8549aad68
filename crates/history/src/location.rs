//! Where the history file is when none is given: `$XDG_DATA_HOME/numalab/history.sqlite`,
//! else `~/.local/share/numalab/history.sqlite`.

use numalab_schema::{Classify, ErrorClass};
use std::ffi::OsString;
use std::path::PathBuf;

/// Why there is no default history file.
#[derive(Debug, thiserror::Error)]
pub enum LocationError {
    /// Neither `HOME` nor `XDG_DATA_HOME` is set (a usage error: give a file).
    #[error("no history file: neither HOME nor XDG_DATA_HOME is set; give --db FILE")]
    NoHome,
    /// The folder could not be created.
    #[error("{}: cannot create the history folder: {}; give --db FILE", folder.display(), numalab_schema::input::io_reason(source))]
    NoFolder {
        /// The folder.
        folder: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl Classify for LocationError {
    fn class(&self) -> ErrorClass {
        match self {
            LocationError::NoHome => ErrorClass::Usage,
            LocationError::NoFolder { .. } => ErrorClass::Runtime,
        }
    }
}

/// The history's folder for these values of `XDG_DATA_HOME` and `HOME` (empty counts as
/// unset): `$XDG_DATA_HOME/numalab`, else `$HOME/.local/share/numalab`.
pub fn default_folder(
    xdg_data_home: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, LocationError> {
    let base = match xdg_data_home.filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => match home.filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".local/share"),
            None => return Err(LocationError::NoHome),
        },
    };
    Ok(base.join("numalab"))
}

/// The default history file, `history.sqlite` in the [`default_folder`] of this
/// process's environment; the folder is created.
pub fn default_path() -> Result<PathBuf, LocationError> {
    let dir = default_folder(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))?;
    std::fs::create_dir_all(&dir).map_err(|source| LocationError::NoFolder {
        folder: dir.clone(),
        source,
    })?;
    Ok(dir.join("history.sqlite"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdg_data_home_wins_then_home_and_empty_is_unset() {
        let f = |x: &str, h: &str| {
            let some = |v: &str| Some(OsString::from(v));
            default_folder(some(x), some(h))
        };
        assert_eq!(f("/x", "/h").unwrap(), PathBuf::from("/x/numalab"));
        assert_eq!(
            f("", "/h").unwrap(),
            PathBuf::from("/h/.local/share/numalab")
        );
        let e = f("", "").unwrap_err();
        assert_eq!(e.class(), ErrorClass::Usage);
        assert_eq!(
            e.to_string(),
            "no history file: neither HOME nor XDG_DATA_HOME is set; give --db FILE"
        );
        assert!(default_folder(None, None).is_err());
    }

    #[test]
    fn a_folder_that_cannot_be_made_is_a_runtime_error_naming_it() {
        let e = LocationError::NoFolder {
            folder: "/f".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        assert_eq!(e.class(), ErrorClass::Runtime);
        assert!(e
            .to_string()
            .starts_with("/f: cannot create the history folder: "));
        assert!(e.to_string().ends_with("; give --db FILE"));
    }
}
