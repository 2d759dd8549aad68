//! Why a layout, affinity or schedule request cannot be carried out. Every variant names
//! the input at fault and what to do, and maps to the CLI's documented exit codes.

use numalab_schema::{Classify, ErrorClass};

/// A layout or schedule error.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// The input (a matrix, a mix file, a history bundle) is unusable.
    #[error("{what}: {msg}")]
    Input {
        /// The file or value at fault.
        what: String,
        /// What is wrong and what to do.
        msg: String,
    },
    /// A file that is not what the command reads, in one sentence that names it and
    /// says what to give instead.
    #[error("{0}")]
    Unreadable(String),
    /// The request does not fit (a geometry too small, a mix too large).
    #[error("{0}")]
    Usage(String),
    /// Something this build or machine cannot do.
    #[error("{0}")]
    Unsupported(String),
    /// A command could not be run.
    #[error("{0}")]
    Runtime(String),
    /// Ctrl-C: stopped cleanly; the message says what was kept.
    #[error("{0}")]
    Stopped(String),
    /// Ctrl-C: stopped cleanly, what was measured is kept.
    #[error("interrupted; rerun the same command with the same --out to resume")]
    Interrupted,
}

impl LayoutError {
    /// An input error.
    pub fn input(what: impl Into<String>, msg: impl Into<String>) -> Self {
        LayoutError::Input {
            what: what.into(),
            msg: msg.into(),
        }
    }
}

impl Classify for LayoutError {
    fn class(&self) -> ErrorClass {
        match self {
            LayoutError::Input { .. } | LayoutError::Unreadable(_) => ErrorClass::Input,
            LayoutError::Usage(_) => ErrorClass::Usage,
            LayoutError::Unsupported(_) => ErrorClass::Unsupported,
            LayoutError::Runtime(_) => ErrorClass::Runtime,
            LayoutError::Interrupted | LayoutError::Stopped(_) => ErrorClass::Interrupted,
        }
    }
}

/// Ctrl-C or SIGTERM in a step of another crate (the c2c structure inference): stopped,
/// said as that step says it (exit 130).
impl From<numalab_schema::interrupt::Interrupted> for LayoutError {
    fn from(e: numalab_schema::interrupt::Interrupted) -> Self {
        LayoutError::Stopped(e.to_string())
    }
}

impl From<numalab_model::ModelError> for LayoutError {
    fn from(e: numalab_model::ModelError) -> Self {
        match e.class() {
            ErrorClass::Input => LayoutError::input("preset", e.to_string()),
            ErrorClass::Usage => LayoutError::Usage(e.to_string()),
            ErrorClass::Interrupted => LayoutError::Interrupted,
            _ => LayoutError::Runtime(e.to_string()),
        }
    }
}
