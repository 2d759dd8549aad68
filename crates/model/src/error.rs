//! Errors of the model: bad presets and bad requests, each naming the input and the fix,
//! classified for the binary's exit codes.

use numalab_schema::{Classify, ErrorClass};

/// A model error.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A preset (shipped, user file, variant or override) is malformed or inconsistent.
    #[error("preset {what}: {msg}")]
    Input {
        /// Which preset or file.
        what: String,
        /// What is wrong and what to do.
        msg: String,
    },
    /// Measurements a calibration cannot use (another machine, no usable record, a
    /// node count the preset does not have).
    #[error("{what}: {msg}")]
    Measurements {
        /// Which bundle(s).
        what: String,
        /// What is wrong and what to do.
        msg: String,
    },
    /// A file that is not what the command reads, in one sentence that names it and
    /// says what to give instead.
    #[error("{0}")]
    Unreadable(String),
    /// A request that does not fit the preset (unknown core, node, target...).
    #[error("{msg}")]
    Usage {
        /// What is wrong and what to do.
        msg: String,
    },
    /// Writing a result failed (journal, file).
    #[error("{0}")]
    Output(String),
    /// Stopped by Ctrl-C.
    #[error("interrupted")]
    Interrupted,
}

impl Classify for ModelError {
    fn class(&self) -> ErrorClass {
        match self {
            ModelError::Input { .. }
            | ModelError::Measurements { .. }
            | ModelError::Unreadable(_) => ErrorClass::Input,
            ModelError::Usage { .. } => ErrorClass::Usage,
            ModelError::Output(_) => ErrorClass::Runtime,
            ModelError::Interrupted => ErrorClass::Interrupted,
        }
    }
}

/// Shorthand for a usage error.
#[allow(dead_code)]
pub(crate) fn usage(msg: impl Into<String>) -> ModelError {
    ModelError::Usage { msg: msg.into() }
}

impl From<numalab_schema::sink::SinkError> for ModelError {
    fn from(e: numalab_schema::sink::SinkError) -> Self {
        ModelError::Output(e.0)
    }
}
