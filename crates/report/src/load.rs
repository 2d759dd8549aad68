//! Reading the bundles a report or a comparison is made of: output folders, journals or
//! single-document bundle files, each with a label people recognise (the host name,
//! else the file name) and the warnings met while reading it (a cut-off last line, a
//! newer schema, unreadable lines). A file that cannot be read at all is an error that
//! names it and says what to do; callers show the other bundles anyway.

use numalab_schema::journal::{read_bundle, JournalError};
use numalab_schema::record::SCHEMA_VERSION;
use numalab_schema::{Bundle, Classify, ErrorClass, Record, RecordKind, Warning};
use std::path::{Path, PathBuf};

/// A bundle read from disk (or built in memory), with its label.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Where it came from (empty when built in memory).
    pub path: PathBuf,
    /// Short name for tables and headings: the host name, made unique.
    pub label: String,
    /// The bundle.
    pub bundle: Bundle,
    /// Problems met while reading it.
    pub warnings: Vec<Warning>,
}

/// Why a bundle could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct LoadError {
    /// The whole message: the input, what is wrong, the remedy.
    pub message: String,
    class: ErrorClass,
}

impl Classify for LoadError {
    fn class(&self) -> ErrorClass {
        self.class
    }
}

impl Loaded {
    /// A bundle already in memory.
    pub fn from_bundle(label: &str, bundle: Bundle) -> Self {
        Loaded {
            path: PathBuf::new(),
            label: label.into(),
            bundle,
            warnings: Vec::new(),
        }
    }

    /// Records of one type, decoded, with their envelope records.
    pub fn records_of<T: RecordKind>(&self) -> Vec<(&Record, T)> {
        self.bundle.records_of::<T>()
    }

    /// Whether the bundle was written by a newer numalab than this one.
    pub fn newer_schema(&self) -> bool {
        self.bundle.schema_version > SCHEMA_VERSION
    }
}

/// Reads one bundle: an output folder, a `results.jsonl` journal or a bundle file.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let (bundle, warnings) = read_bundle(path).map_err(|e| {
        let (class, message) = match &e {
            JournalError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => (
                ErrorClass::Input,
                format!("{}: no such file or folder; give an output folder of numalab (with results.jsonl) or a bundle file", path.display()),
            ),
            JournalError::Io { .. } => (ErrorClass::Input, format!("{e}; check the path and its permissions")),
            JournalError::NotABundle { .. } => (
                e.class(),
                format!("{e}; give an output folder of numalab (with results.jsonl), a results.jsonl file or a bundle written with --json"),
            ),
            JournalError::Locked { .. }
            | JournalError::NotAFolder { .. }
            | JournalError::OtherMachine { .. } => {
                (e.class(), e.to_string())
            }
        };
        LoadError { message, class }
    })?;
    let label = bundle
        .envelope
        .host
        .hostname
        .clone()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| {
            path.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string())
        });
    Ok(Loaded {
        path: path.to_path_buf(),
        label,
        bundle,
        warnings,
    })
}

/// Makes labels unique: bundles of the same host get the folder or file name added
/// ("node1 (run-a)"), then a number if that is not enough.
pub fn unique_labels(set: &mut [Loaded]) {
    let n = set.len();
    for i in 0..n {
        let same: Vec<usize> = (0..n).filter(|&j| set[j].label == set[i].label).collect();
        if same.len() < 2 {
            continue;
        }
        for j in same {
            let name = set[j]
                .path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !name.is_empty() && !set[j].label.contains(&name) {
                set[j].label = format!("{} ({name})", set[j].label);
            }
        }
    }
    for i in 0..n {
        let mut k = 1;
        for j in i + 1..n {
            if set[j].label == set[i].label {
                k += 1;
                set[j].label = format!("{} #{k}", set[j].label);
            }
        }
    }
}

/// A loaded bundle of `records` from an unknown host, made with `command` (tests).
#[cfg(test)]
pub(crate) fn test_loaded(
    command: &str,
    origin: numalab_schema::Origin,
    records: Vec<numalab_schema::Record>,
) -> Loaded {
    use numalab_schema::record::{Host, Tool, SCHEMA_VERSION};
    use numalab_schema::{Bundle, Envelope};
    Loaded::from_bundle(
        "m",
        Bundle {
            schema_version: SCHEMA_VERSION,
            envelope: Envelope {
                schema_version: SCHEMA_VERSION,
                tool: Tool::this("0"),
                created_utc: "2026-01-01T00:00:00Z".into(),
                command: vec!["numalab".into(), command.into()],
                config: serde_json::json!({}),
                origin,
                host: Host::unknown("x"),
            },
            records,
        },
    )
}
