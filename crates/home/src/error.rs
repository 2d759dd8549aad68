//! Why a home map, hash, allocation or bench cannot be carried out. Every variant names
//! the input at fault and what to do, and maps to the CLI's documented exit codes.

use numalab_schema::{Classify, ErrorClass};

/// A home error.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    /// The input (a map, a floorplan, a preset) is unusable.
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
    /// The request does not fit (a buffer too large, a distance no line satisfies).
    #[error("{0}")]
    Usage(String),
    /// Something this build or machine cannot do.
    #[error("{0}")]
    Unsupported(String),
    /// A system call failed while measuring.
    #[error("{0}")]
    Runtime(String),
    /// Ctrl-C or SIGTERM: stopped cleanly. No home step resumes (a map or a bench is
    /// recorded whole at its end), so nothing of it was kept, with or without --out.
    #[error("interrupted; nothing of this map or bench was recorded: run the command again")]
    Interrupted,
}

impl HomeError {
    /// An input error.
    pub fn input(what: impl Into<String>, msg: impl Into<String>) -> Self {
        HomeError::Input {
            what: what.into(),
            msg: msg.into(),
        }
    }
}

impl Classify for HomeError {
    fn class(&self) -> ErrorClass {
        match self {
            HomeError::Input { .. } | HomeError::Unreadable(_) => ErrorClass::Input,
            HomeError::Usage(_) => ErrorClass::Usage,
            HomeError::Unsupported(_) => ErrorClass::Unsupported,
            HomeError::Runtime(_) => ErrorClass::Runtime,
            HomeError::Interrupted => ErrorClass::Interrupted,
        }
    }
}

impl From<numalab_model::ModelError> for HomeError {
    fn from(e: numalab_model::ModelError) -> Self {
        match e.class() {
            ErrorClass::Input => HomeError::input("preset", e.to_string()),
            ErrorClass::Usage => HomeError::Usage(e.to_string()),
            ErrorClass::Interrupted => HomeError::Interrupted,
            _ => HomeError::Runtime(e.to_string()),
        }
    }
}

impl From<numalab_layout::LayoutError> for HomeError {
    fn from(e: numalab_layout::LayoutError) -> Self {
        if let numalab_layout::LayoutError::Unreadable(m) = e {
            return HomeError::Unreadable(m);
        }
        match e.class() {
            ErrorClass::Input => HomeError::input("floorplan", e.to_string()),
            ErrorClass::Usage => HomeError::Usage(e.to_string()),
            ErrorClass::Interrupted => HomeError::Interrupted,
            ErrorClass::Unsupported => HomeError::Unsupported(e.to_string()),
            _ => HomeError::Runtime(e.to_string()),
        }
    }
}
