//! What can stop a fleet run or an agent as a whole, each with the input it concerns and
//! the remedy. A single node failing is never one of these: it is recorded in that
//! node's `status.json` and the other nodes go on.

use numalab_schema::{Classify, ErrorClass};
use std::path::PathBuf;

/// An error that stops `numalab fleet run` or `numalab fleet node` as a whole.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A file or folder could not be read or written.
    #[error("{}: {what}: {}", path.display(), numalab_schema::input::io_reason(source))]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done ("creating the fleet folder", ...).
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file named by an option (the hostfile) cannot be read: missing, not a regular
    /// file, too large or not text.
    #[error("{option} {error}")]
    File {
        /// The option that named the file ("--hostfile").
        option: &'static str,
        /// The file and why it cannot be read.
        error: numalab_schema::input::InputError,
    },
    /// Another `fleet run` holds the fleet folder's lock (or the lock call failed).
    #[error(transparent)]
    Locked(#[from] numalab_schema::lock::LockError),
    /// The options are contradictory or incomplete.
    #[error("{0}")]
    Options(String),
    /// A node name cannot be used (it becomes a folder name under `FLEET/nodes/`).
    #[error("node name {name:?} {problem}; give the node names the launcher knows (e.g. n001)")]
    BadNodeName {
        /// The name as given (escaped when printed).
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// No node to run on.
    #[error("no nodes to run on: {0}")]
    NoNodes(String),
    /// An MPI hostfile line could not be understood.
    #[error("{}:{line}: {problem}; a hostfile line is `host`, `host slots=N` or a `#` comment", path.display())]
    Hostfile {
        /// The hostfile.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: String,
    },
    /// A helper program (`scontrol`, `sbatch`) is missing or failed.
    #[error("{program}: {problem}")]
    Tool {
        /// The program as given.
        program: String,
        /// What went wrong, with its error output and the remedy.
        problem: String,
    },
    /// The fleet folder holds a run of another command.
    #[error("{}: this fleet folder holds a run of `{previous}`, not `{now}`; give another --fleet folder, or --restart to start over (the old nodes/ folder is kept as {})", fleet.display(), fleet.join("nodes.previous-TIME").display())]
    CommandChanged {
        /// The fleet folder.
        fleet: PathBuf,
        /// The command recorded in its `fleet.json`.
        previous: String,
        /// The command asked for now.
        now: String,
    },
    /// The fleet folder's `fleet.json` cannot be used.
    #[error("{}: {problem}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong, and the remedy.
        problem: String,
    },
    /// The arguments of `numalab fleet node` (written by `fleet run`'s launcher) are wrong.
    #[error("fleet node: {0} (these arguments are written by `numalab fleet run`; run the same numalab version on every node)")]
    AgentArgs(String),
    /// The path of the running numalab binary, which the nodes run, cannot be found.
    #[error("cannot find the path of this numalab binary: {0}")]
    NoBinary(String),
    /// The `--sbatch` run failed or left nothing in the fleet folder.
    #[error("sbatch: {problem}; with --sbatch the fleet folder {} must be on a path the batch host can write (a shared file system mounted at the same path)", fleet.display())]
    Sbatch {
        /// The fleet folder.
        fleet: PathBuf,
        /// What happened.
        problem: String,
    },
}

impl FleetError {
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        what: impl Into<String>,
        source: std::io::Error,
    ) -> Self {
        FleetError::Io {
            path: path.into(),
            what: what.into(),
            source,
        }
    }
}

/// The documented exit class of each error: contradictory options and agent arguments
/// are usage errors, an unreadable hostfile or manifest bad input, no nodes or a missing
/// launcher tool unsupported here, a held lock as the lock says, the rest runtime.
impl Classify for FleetError {
    fn class(&self) -> ErrorClass {
        match self {
            FleetError::Options(_)
            | FleetError::BadNodeName { .. }
            | FleetError::CommandChanged { .. }
            | FleetError::AgentArgs(_) => ErrorClass::Usage,
            FleetError::Hostfile { .. } | FleetError::Manifest { .. } | FleetError::File { .. } => {
                ErrorClass::Input
            }
            FleetError::NoNodes(_) | FleetError::Tool { .. } => ErrorClass::Unsupported,
            FleetError::Locked(l) => l.class(),
            _ => ErrorClass::Runtime,
        }
    }
}

#[cfg(test)]
mod class_tests {
    use super::*;

    #[test]
    fn each_error_has_its_exit_class() {
        assert_eq!(FleetError::Options("x".into()).class(), ErrorClass::Usage);
        let no_binary = FleetError::NoBinary("gone".into());
        assert_eq!(no_binary.class(), ErrorClass::Runtime);
        assert_eq!(
            no_binary.to_string(),
            "cannot find the path of this numalab binary: gone"
        );
        assert_eq!(
            FleetError::NoNodes("x".into()).class(),
            ErrorClass::Unsupported
        );
        let hostfile = FleetError::Hostfile {
            path: "h".into(),
            line: 2,
            problem: "bad".into(),
        };
        assert_eq!(hostfile.class(), ErrorClass::Input);
        let io = FleetError::Io {
            path: "f".into(),
            what: "reading".into(),
            source: std::io::Error::other("gone"),
        };
        assert_eq!(io.class(), ErrorClass::Runtime);
    }
}
