//! Errors of topology loading, CPU selection and binding. Each names the input or the
//! failing call and says what to do.

use numalab_schema::{Classify, ErrorClass};
use std::path::PathBuf;

/// A topology, selection or binding error.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    /// The input path does not exist or cannot be read.
    #[error("{path}: {reason}; give an hwloc XML file, a sysfs snapshot folder or a .tar.bz2/.tar.gz snapshot")]
    Unreadable {
        /// The input.
        path: PathBuf,
        /// The OS error, in words.
        reason: String,
    },
    /// The file is not something we can load.
    #[error("{path}: {reason}")]
    BadInput {
        /// The input.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// hwloc refused to build a topology.
    #[error("{what}: hwloc could not load it ({detail}); {remedy}")]
    Hwloc {
        /// What was being loaded.
        what: String,
        /// hwloc's error.
        detail: String,
        /// What to do.
        remedy: String,
    },
    /// An output file (`--export-xml`) could not be written; its class says whose fault.
    #[error(transparent)]
    Write(#[from] numalab_schema::output::WriteError),
    /// A CPU/node selection names something that does not exist.
    #[error("{0}")]
    Selection(String),
    /// Pinning or memory binding failed.
    #[error("{call} failed: {detail}; {remedy}")]
    Binding {
        /// The failing call (e.g. "hwloc_set_thread_cpubind(PU 3)").
        call: String,
        /// The OS or hwloc error.
        detail: String,
        /// What to do.
        remedy: String,
        /// Whether the machine simply cannot do it (as opposed to a transient failure).
        unsupported: bool,
    },
    /// Ctrl-C or SIGTERM stopped the load (unpacking an archive, checking an input);
    /// the unpacked copy is removed. Exit 130.
    #[error(transparent)]
    Interrupted(#[from] numalab_schema::interrupt::Interrupted),
}

impl Classify for TopoError {
    fn class(&self) -> ErrorClass {
        match self {
            TopoError::Unreadable { .. } | TopoError::BadInput { .. } => ErrorClass::Input,
            TopoError::Hwloc { .. } => ErrorClass::Input,
            TopoError::Selection(_) => ErrorClass::Usage,
            TopoError::Write(w) => w.class(),
            TopoError::Binding {
                unsupported: true, ..
            } => ErrorClass::Unsupported,
            TopoError::Binding { .. } => ErrorClass::Runtime,
            TopoError::Interrupted(_) => ErrorClass::Interrupted,
        }
    }
}
