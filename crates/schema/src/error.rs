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
    /// Another numalab process holds the output folder's journal. Exit 6.
    Busy,
    /// Stopped by a signal (Ctrl-C, SIGTERM); what was finished is kept (the message says
    /// what, and how to go on). Exit 130.
    Interrupted,
}

impl ErrorClass {
    /// Every class, in the order of their codes.
    pub const ALL: [ErrorClass; 7] = [
        ErrorClass::Runtime,
        ErrorClass::Usage,
        ErrorClass::Input,
        ErrorClass::Unsupported,
        ErrorClass::Partial,
        ErrorClass::Busy,
        ErrorClass::Interrupted,
    ];

    /// What the exit code means, for the table in `--help`, the man page and the
    /// README (one table, from here).
    pub fn meaning(self) -> &'static str {
        match self {
            ErrorClass::Runtime => {
                "a measurement or write failed, or every run of a study failed (runtime error)"
            }
            ErrorClass::Usage => "bad command line (usage error)",
            ErrorClass::Input => {
                "an input file or folder is missing, unreadable, malformed or too large"
            }
            ErrorClass::Unsupported => {
                "this machine cannot do what was asked (no PMU, one NUMA node, no permission)"
            }
            ErrorClass::Partial => {
                "some steps or runs failed, the others produced results (partial)"
            }
            ErrorClass::Busy => {
                "another numalab process is writing the same --out or --fleet folder"
            }
            ErrorClass::Interrupted => {
                "interrupted (Ctrl-C, SIGTERM); what was finished is kept (the message says what)"
            }
        }
    }

    /// The exit-code table as text: "Exit codes:" then one line per code, 0 first.
    pub fn table() -> String {
        let mut out = String::from("Exit codes:\n  0    success");
        for c in ErrorClass::ALL {
            out.push_str(&format!("\n  {:<4} {}", c.exit_code(), c.meaning()));
        }
        out.push_str("\n  101  numalab itself failed (a panic: a bug; please report it with the command line)");
        out.push_str("\n  134  numalab was aborted (e.g. it ran out of memory; please report it with the command line)");
        out.push_str("\n  141  standard output closed early (e.g. piped into head): a quiet end by SIGPIPE, as other tools");
        out
    }

    /// The process exit code of this class (documented in the README and man page).
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorClass::Runtime => 1,
            ErrorClass::Usage => 2,
            ErrorClass::Input => 3,
            ErrorClass::Unsupported => 4,
            ErrorClass::Partial => 5,
            ErrorClass::Busy => 6,
            ErrorClass::Interrupted => 130,
        }
    }
}

/// Implemented by every library error type.
pub trait Classify {
    /// The class of this error.
    fn class(&self) -> ErrorClass;
}
