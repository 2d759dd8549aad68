//! How the agent reaches a node: the site's own launcher, one command per node, built as
//! an argument vector (never a shell line).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Job name of every step and batch job numalab submits.
pub const JOB_NAME: &str = "numalab-fleet";

/// Which launcher starts `numalab fleet node` on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LauncherKind {
    /// Slurm's `srun`, one single-task step per node.
    Slurm,
    /// MPI's `mpirun` (Open MPI, MPICH), one rank per node.
    Mpi,
    /// The agent started directly on this machine, the node name given (tests, and a
    /// one-machine dry run of a fleet folder).
    Local,
}

impl LauncherKind {
    /// The name used on the command line and in `fleet.json`.
    pub fn name(self) -> &'static str {
        match self {
            LauncherKind::Slurm => "slurm",
            LauncherKind::Mpi => "mpi",
            LauncherKind::Local => "local",
        }
    }
}

impl std::str::FromStr for LauncherKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "slurm" => Ok(LauncherKind::Slurm),
            "mpi" => Ok(LauncherKind::Mpi),
            "local" => Ok(LauncherKind::Local),
            _ => Err(format!("unknown launcher {s:?}: slurm, mpi or local")),
        }
    }
}

/// A launcher ready to build the per-node commands.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// Which one.
    pub kind: LauncherKind,
    /// The launcher program (`srun`, `mpirun`; unused by `Local`).
    pub program: PathBuf,
    /// Extra arguments for the launcher, placed before the numalab command
    /// (`--launcher-arg`; e.g. `--partition=short`, `--mca btl self,tcp`).
    pub extra_args: Vec<String>,
    /// Slurm: there is no allocation around us, so each step is its own one-node job and
    /// gets `--exclusive`.
    pub outside_allocation: bool,
    /// MPI: running as root, so `--allow-run-as-root` is needed by Open MPI.
    pub as_root: bool,
    /// Slurm, `fleet run --push`: srun copies the numalab binary into this node-local
    /// folder before the step starts (`--bcast=DIR/`: the copy is
    /// `DIR/slurm_bcast_<job>.<step>_<node>`) and runs that copy.
    pub bcast_dir: Option<PathBuf>,
}

impl Launcher {
    /// The launcher for `kind`, with the environment looked at: Slurm steps get
    /// `--exclusive` when `SLURM_JOB_ID` is unset, mpirun `--allow-run-as-root` when the
    /// effective user is root.
    pub fn new(kind: LauncherKind, program: Option<PathBuf>, extra_args: Vec<String>) -> Self {
        let program = program.unwrap_or_else(|| {
            PathBuf::from(match kind {
                LauncherKind::Slurm => "srun",
                LauncherKind::Mpi => "mpirun",
                LauncherKind::Local => "",
            })
        });
        let as_root = numalab_proc::effective_uid() == 0;
        Launcher {
            kind,
            program,
            extra_args,
            outside_allocation: std::env::var_os("SLURM_JOB_ID").is_none(),
            as_root,
            bcast_dir: None,
        }
    }

    /// The full argument vector for one node: launcher, its options, then
    /// `NUMALAB fleet node AGENT_ARGS...`.
    pub fn argv(&self, node: &str, numalab: &Path, agent_args: &[String]) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        match self.kind {
            LauncherKind::Slurm => {
                v.push(self.program.display().to_string());
                v.extend([
                    "--nodes=1".to_string(),
                    "--ntasks=1".to_string(),
                    format!("--nodelist={node}"),
                    format!("--job-name={JOB_NAME}"),
                    "--kill-on-bad-exit=1".to_string(),
                ]);
                if self.outside_allocation {
                    v.push("--exclusive".into());
                }
                if let Some(dir) = &self.bcast_dir {
                    let dir = dir.display().to_string();
                    v.push(format!("--bcast={}/", dir.trim_end_matches('/')));
                }
                v.extend(self.extra_args.iter().cloned());
            }
            LauncherKind::Mpi => {
                v.push(self.program.display().to_string());
                v.extend([
                    "--host".to_string(),
                    node.to_string(),
                    "-np".into(),
                    "1".into(),
                ]);
                if self.as_root {
                    v.push("--allow-run-as-root".into());
                }
                v.extend(self.extra_args.iter().cloned());
            }
            LauncherKind::Local => {}
        }
        v.push(numalab.display().to_string());
        v.push("fleet".into());
        v.push("node".into());
        v.extend(agent_args.iter().cloned());
        v
    }

    /// [`Launcher::argv`] as a command (no shell).
    pub fn command(&self, node: &str, numalab: &Path, agent_args: &[String]) -> Command {
        let argv = self.argv(node, numalab, agent_args);
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..]);
        c
    }
}

/// The argument vector with secrets hidden, for `status.json`: the value of any option
/// whose name mentions a password, token, secret or key becomes `***`.
pub fn redact(argv: &[String]) -> Vec<String> {
    let secret = |name: &str| {
        let n = name.to_ascii_lowercase();
        ["pass", "token", "secret", "key", "credential"]
            .iter()
            .any(|w| n.contains(w))
    };
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for a in argv {
        if hide_next {
            out.push("***".to_string());
            hide_next = false;
            continue;
        }
        if a == "--" {
            out.push(a.clone());
            continue;
        }
        if a.starts_with('-') {
            if let Some((k, _)) = a.split_once('=') {
                if secret(k) {
                    out.push(format!("{k}=***"));
                    continue;
                }
            } else if secret(a) {
                hide_next = true;
            }
        }
        out.push(a.clone());
    }
    out
}

/// Quotes one word for a POSIX shell (only `sbatch --wrap` needs a shell line).
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launcher(kind: LauncherKind, outside: bool, root: bool) -> Launcher {
        Launcher {
            kind,
            program: match kind {
                LauncherKind::Slurm => "srun".into(),
                _ => "mpirun".into(),
            },
            extra_args: vec!["--partition=short".into()],
            outside_allocation: outside,
            as_root: root,
            bcast_dir: None,
        }
    }

    /// `--push`: srun broadcasts the binary into the node-local folder and runs the copy.
    #[test]
    fn a_pushed_binary_is_broadcast_by_srun() {
        let mut l = launcher(LauncherKind::Slurm, false, false);
        l.bcast_dir = Some("/tmp/".into());
        let v = l.argv("n2", Path::new("/home/me/numalab"), &["--".to_string()]);
        assert_eq!(
            v.join(" "),
            "srun --nodes=1 --ntasks=1 --nodelist=n2 --job-name=numalab-fleet --kill-on-bad-exit=1 --bcast=/tmp/ --partition=short /home/me/numalab fleet node --"
        );
    }

    #[test]
    fn slurm_and_mpi_command_lines() {
        let args = vec![
            "--node".to_string(),
            "n7".into(),
            "--".into(),
            "evaluate".into(),
        ];
        let v =
            launcher(LauncherKind::Slurm, false, true).argv("n7", Path::new("/opt/numalab"), &args);
        assert_eq!(
            v.join(" "),
            "srun --nodes=1 --ntasks=1 --nodelist=n7 --job-name=numalab-fleet --kill-on-bad-exit=1 --partition=short /opt/numalab fleet node --node n7 -- evaluate"
        );
        let v =
            launcher(LauncherKind::Slurm, true, true).argv("n7", Path::new("/opt/numalab"), &args);
        assert!(v.contains(&"--exclusive".to_string()));
        let v =
            launcher(LauncherKind::Mpi, false, true).argv("h1", Path::new("/opt/numalab"), &args);
        assert_eq!(
            v.join(" "),
            "mpirun --host h1 -np 1 --allow-run-as-root --partition=short /opt/numalab fleet node --node n7 -- evaluate"
        );
        let v = launcher(LauncherKind::Mpi, false, false).argv("h1", Path::new("/x"), &args);
        assert!(!v.contains(&"--allow-run-as-root".to_string()));
        let v = launcher(LauncherKind::Local, false, false).argv("h1", Path::new("/x"), &args);
        assert_eq!(v[..3], ["/x", "fleet", "node"]);
    }

    #[test]
    fn secrets_redacted_and_quoting() {
        let v: Vec<String> = [
            "srun",
            "--api-token=abc",
            "--password",
            "hunter2",
            "--nodes=1",
            "--",
            "--key=v",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            redact(&v),
            [
                "srun",
                "--api-token=***",
                "--password",
                "***",
                "--nodes=1",
                "--",
                "--key=***"
            ]
        );
        assert_eq!(shell_quote("a-b/c"), "a-b/c");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
    }
}
