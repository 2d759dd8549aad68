//! `numalab fleet`: one numalab command (by default `evaluate --quick`) on many nodes,
//! the bundles gathered into one folder.
//!
//! **Why through the site's launcher.** A cluster already has a way to start a process
//! on a node with the right user, limits, accounting and interconnect set-up: Slurm's
//! `srun`, or `mpirun`. numalab invents no remote execution (no ssh fan-out, no daemon,
//! no port of its own): it builds one launcher command per node ([`Launcher`]), without
//! a shell, and the launcher starts `numalab fleet node` there.
//!
//! ```text
//! numalab fleet run [--launcher slurm|mpi] [--nodes LIST | --hostfile F] [--parallel N]
//!                   [--timeout DUR] [--shared DIR] [--sbatch] [--launcher-arg ARG]...
//!                   [--restart] [--push] --fleet DIR [-- COMMAND...]
//! numalab fleet node --node NAME --timeout DUR [--shared DIR] -- COMMAND...   (run by the launcher)
//! ```
//!
//! - **Nodes.** Slurm: `--nodes LIST` or the allocation's `SLURM_JOB_NODELIST`, expanded
//!   by `scontrol show hostnames` (Slurm's own hostlist syntax, not a re-implementation).
//!   MPI: a hostfile (`host`, `host slots=N`, `# comments`), one entry per distinct host.
//!   Every name is checked before it becomes a folder name ([`validate_node_name`]).
//! - **Launchers.** Inside an allocation each node is a step
//!   `srun --nodes=1 --ntasks=1 --nodelist=NODE --job-name=numalab-fleet --kill-on-bad-exit=1 [ARGS] NUMALAB fleet node ...`;
//!   outside one the same with `--exclusive` (Slurm makes a one-node job of each).
//!   `--sbatch` submits one allocation (`sbatch --wait --nodes=N --exclusive
//!   --output=FLEET/slurm-%j.out --wrap ...`) that runs `numalab fleet run` inside it:
//!   the fleet folder must then be on a file system the batch host can write at the same
//!   path. MPI: `mpirun --host NODE -np 1 [--allow-run-as-root] [ARGS] NUMALAB fleet node ...`.
//!   Up to `--parallel` nodes (default 32) run at once.
//! - **The agent** ([`run_agent`]) runs `NUMALAB COMMAND... --out <node-local temp dir>`
//!   in its own process group with a time limit (the whole group is killed after it),
//!   sends the command's stdout to stderr, and writes on stdout only line frames
//!   ([`frame`]): a hello line, each bundle file (`results.jsonl`, `summary.json`) as
//!   `numalab-fleet v1 file=NAME bytes=N sha256=HEX`, base64 lines and an end line, then
//!   a status line. Whatever else appears on the launcher's stdout cannot pass for a
//!   file: size and SHA-256 are checked. With `--shared DIR` the agent writes the files
//!   to `DIR/<node>/` and announces them with their SHA-256 instead.
//! - **Gathering** into the fleet folder: `fleet.json` (command, launcher, nodes, numalab
//!   path and version, times, schema version), `nodes/<node>/results.jsonl` and
//!   `summary.json` (verified), `nodes/<node>/status.json` ([`NodeStatus`]: `done`,
//!   `failed`, `timeout` or `launch-failed`, exit code, duration, the last 64 KiB of the
//!   node's stderr, the launcher command line with secrets redacted). Every file is
//!   written atomically, so a `fleet run` killed at any point loses nothing it gathered.
//! - **Push** (`--push`, Slurm): each step gets `srun --bcast=/tmp/`, so srun copies the
//!   binary to the node and runs the copy; the agent checks the copy's SHA-256 against the
//!   one `fleet run` computed (`--pushed-sha256`), runs nothing on a mismatch (exit
//!   [`EXIT_PUSH_MISMATCH`]) and removes the copy when it ends.
//! - **Isolation.** A node failing, hanging (`--timeout`, default 2 h: the agent kills
//!   the command's group; if the launcher itself does not end, its whole process group
//!   gets SIGTERM, which srun forwards to its step, then SIGKILL) or missing numalab
//!   ("numalab is not at PATH on node X: install it at the same path on every node") is
//!   recorded and never stops the others.
//! - **Resume.** The same `--fleet` folder again skips nodes `done` with an intact
//!   bundle and reruns the others; a different command is refused unless `--restart`
//!   (the previous `nodes/` folder is then kept as `nodes.previous-TIME`).
//!
//! [`run_fleet`] is the `fleet run` side (progress through [`Progress`], a serde
//! [`FleetSummary`] for `--json`); [`run_agent`] is `fleet node`, whose arguments
//! [`AgentOptions::from_args`] reads. The `numalab-fleet-agent` binary of this crate is
//! the agent alone (tests put it behind a fake numalab).

#![deny(missing_docs)]

mod agent;
mod error;
pub mod frame;
mod launcher;
mod nodes;
mod run;
mod store;

pub use agent::{
    run_agent, run_agent_with, this_numalab, AgentOptions, BUNDLE_FILES, EXIT_NOT_FOUND,
    EXIT_PUSH_MISMATCH, EXIT_TIMEOUT, NODE_ENV,
};
pub use error::FleetError;
pub use launcher::{redact, Launcher, LauncherKind, JOB_NAME};
pub use nodes::{
    expand_slurm_nodelist, parse_hostfile, parse_plain_list, read_hostfile, validate_node_name,
    MAX_NODE_NAME,
};
pub use numalab_proc::group::process_gone;
pub use run::{
    resolve_nodes, run_cancellable, run_fleet, sbatch_argv, FleetRunOptions, FleetSummary,
    NodeSummary, Progress, DEFAULT_PARALLEL, DEFAULT_TIMEOUT, PUSH_DIR, STDERR_TAIL_BYTES,
};
pub use store::{
    can_skip, node_dir, read_manifest, read_status, write_atomic, GatheredFile, Manifest,
    NodeState, NodeStatus, FLEET_SCHEMA_VERSION,
};
