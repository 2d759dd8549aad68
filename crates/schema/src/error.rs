//! Error classes shared by every crate, so the binary can map any failure to a
//! documented exit code without knowing each library's error enum.

use serde::{Deserialize, Serialize};

/// What kind of failure an error is; the binary maps each class to an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The command line is wrong (unknown flag, bad value, contradictory options). Exit 2.
    Usage,
    /// An input file or folder is missing, unreadable or malformed. Exit 3.
    Input,
    /// This machine cannot do what was asked (no PMU, one NUMA node, no permission). Exit 4.
    Unsupported,
    /// Something failed while measuring or writing results. Exit 1.
    Runtime,
    /// Some steps failed but the others produced results. Exit 5.
    Partial,
    /// Stopped by a signal (Ctrl-C); everything measured so far was kept. Exit 130.
    Interrupted,
}

impl ErrorClass {
    /// The process exit code of this class (documented in the README and man page).
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorClass::Runtime => 1,
            ErrorClass::Usage => 2,
            ErrorClass::Input => 3,
            ErrorClass::Unsupported => 4,
            ErrorClass::Partial => 5,
            ErrorClass::Interrupted => 130,
        }
    }
}

/// Implemented by every library error type.
pub trait Classify {
    /// The class of this error.
    fn class(&self) -> ErrorClass;
}
