//! The fleet side, `numalab fleet run`: nodes launched concurrently (bounded), each
//! node's frames gathered and verified into the fleet folder, every node's outcome
//! recorded whatever the others do.

use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::agent::{check_command, format_duration, AgentOptions, BUNDLE_FILES, EXIT_NOT_FOUND};
use crate::error::FleetError;
use crate::frame::{self, AgentState, Event, FrameDecoder};
use crate::launcher::{redact, shell_quote, Launcher, LauncherKind, JOB_NAME};
use crate::nodes::{expand_slurm_nodelist, parse_plain_list, read_hostfile, validate_node_name};
use crate::store::{self, GatheredFile, Manifest, NodeState, NodeStatus, FLEET_SCHEMA_VERSION};
use numalab_proc::group::{kill_group, own_group, wait_until, Tail};

mod node;
mod sbatch;

use node::run_node;
use sbatch::run_sbatch;
pub use sbatch::sbatch_argv;

/// How much of a node's stderr is kept in its `status.json`.
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// Longest line read from a launcher's stdout (a base64 line is 76 characters).
const MAX_LINE: usize = 1 << 20;

/// Default `--parallel`.
pub const DEFAULT_PARALLEL: usize = 32;

/// Default per-node `--timeout` (the agent's too, which owns it).
pub use crate::agent::DEFAULT_TIMEOUT;

/// Where `--push` has srun put the copy of numalab on each node: the node-local
/// temporary folder every Linux node has (the agent removes the copy when it ends).
pub const PUSH_DIR: &str = "/tmp";

/// The SHA-256 (hex) of the file `--push` broadcasts.
fn sha256_of(path: &Path) -> Result<String, FleetError> {
    let file = std::fs::File::open(path)
        .map_err(|e| FleetError::io(path, "reading the numalab binary to push", e))?;
    let (_, sha) = frame::hash_reader(std::io::BufReader::new(file))
        .map_err(|e| FleetError::io(path, "reading the numalab binary to push", e))?;
    Ok(sha)
}

/// What `numalab fleet run` was asked to do.
#[derive(Debug, Clone)]
pub struct FleetRunOptions {
    /// `--launcher`.
    pub launcher: LauncherKind,
    /// `--nodes LIST`: a Slurm node list (`n[1-4]`, expanded by `scontrol`), else a comma
    /// list. For Slurm without it: `SLURM_JOB_NODELIST` of the allocation.
    pub nodes: Option<String>,
    /// `--hostfile F` (MPI): one node per distinct host.
    pub hostfile: Option<PathBuf>,
    /// `--parallel N`: nodes running at once (at least 1).
    pub parallel: usize,
    /// `--timeout DUR`: per node; the node's command is killed after it and the node
    /// recorded as `timeout`. The launcher gets `kill_margin` more, counted from the
    /// launch (so time a step waits in Slurm's queue counts against it).
    pub timeout: Duration,
    /// Extra time the launcher gets beyond `timeout` (start-up and sending the bundle)
    /// before its whole process group is killed.
    pub kill_margin: Duration,
    /// `--shared DIR`: nodes write their bundles to `DIR/<node>/` (a file system every
    /// node and this machine see at the same path) instead of sending them on stdout.
    pub shared: Option<PathBuf>,
    /// `--sbatch`: submit one batch allocation that runs the fleet inside it.
    pub sbatch: bool,
    /// `--launcher-arg ARG`, repeatable: given to srun or mpirun before the command.
    pub launcher_args: Vec<String>,
    /// `--fleet DIR`.
    pub fleet: PathBuf,
    /// The numalab command (`-- COMMAND...`, default `evaluate --quick`).
    pub command: Vec<String>,
    /// The numalab binary, at the same path on every node (the running one, normally).
    pub numalab: PathBuf,
    /// numalab's version, recorded in `fleet.json`.
    pub numalab_version: String,
    /// `--restart`: start over in a fleet folder that holds another command's run.
    pub restart: bool,
    /// `--push` (Slurm): srun copies this numalab binary to each node before its step
    /// ([`PUSH_DIR`]), the agent checks the copy's SHA-256 and runs it, so nothing needs
    /// to be installed on the nodes.
    pub push: bool,
    /// The launcher program (default `srun` or `mpirun` from `PATH`).
    pub launcher_program: Option<PathBuf>,
    /// `scontrol` (node list expansion).
    pub scontrol: PathBuf,
    /// `sbatch` (`--sbatch`).
    pub sbatch_program: PathBuf,
    /// Set to stop the run early (the CLI sets it from SIGINT/SIGTERM handlers): the
    /// running launchers' process groups are killed, those nodes recorded as `failed`
    /// ("interrupted"), nodes not yet started are left for a rerun and the summary says
    /// `interrupted`.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl FleetRunOptions {
    /// The option combinations refused before anything is touched: `--parallel 0`,
    /// `--launcher mpi` without `--hostfile`, a `--timeout` (or kill margin) over a year.
    pub fn check(&self) -> Result<(), FleetError> {
        if self.parallel == 0 {
            return Err(FleetError::Options("--parallel must be at least 1".into()));
        }
        if self.timeout > numalab_schema::units::MAX_DURATION
            || self.kill_margin > numalab_schema::units::MAX_DURATION
        {
            return Err(FleetError::Options(format!(
                "--timeout {}: longer than 365 days, the longest accepted; give e.g. 90m, 2h",
                humantime::format_duration(self.timeout)
            )));
        }
        if self.push && self.launcher != LauncherKind::Slurm {
            return Err(FleetError::Options(format!(
                "--push works through Slurm (srun --bcast copies the binary to each node); with --launcher {} install numalab at the same path on every node (Open MPI 4's own `--preload-binary` can go in --launcher-arg, unchecked)",
                self.launcher.name()
            )));
        }
        if self.push && self.sbatch {
            return Err(FleetError::Options(
                "--push with --sbatch: the batch job starts numalab on its first node before anything can be pushed; run `fleet run --push` inside an allocation (salloc) instead".into(),
            ));
        }
        if self.launcher == LauncherKind::Mpi && self.hostfile.is_none() {
            return Err(FleetError::Options(
                "--launcher mpi needs --hostfile FILE (one host per line)".into(),
            ));
        }
        Ok(())
    }

    /// The defaults: Slurm, `--parallel 32`, `--timeout 2h`, `evaluate --quick`.
    pub fn new(
        fleet: impl Into<PathBuf>,
        numalab: impl Into<PathBuf>,
        numalab_version: &str,
    ) -> Self {
        FleetRunOptions {
            launcher: LauncherKind::Slurm,
            nodes: None,
            hostfile: None,
            parallel: DEFAULT_PARALLEL,
            timeout: DEFAULT_TIMEOUT,
            kill_margin: Duration::from_secs(60),
            shared: None,
            sbatch: false,
            launcher_args: Vec::new(),
            fleet: fleet.into(),
            command: vec!["evaluate".into(), "--quick".into()],
            numalab: numalab.into(),
            numalab_version: numalab_version.to_string(),
            restart: false,
            push: false,
            launcher_program: None,
            scontrol: "scontrol".into(),
            sbatch_program: "sbatch".into(),
            cancel: None,
        }
    }
}

/// One node in the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeSummary {
    /// The node.
    pub node: String,
    /// How it ended.
    pub state: NodeState,
    /// `true` when it was `done` from an earlier run and not launched again.
    pub resumed: bool,
    /// The command's exit code.
    pub exit_code: Option<i32>,
    /// Seconds it ran.
    pub duration_s: f64,
    /// What happened.
    pub message: String,
}

/// What `fleet run` did (printed by `--json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetSummary {
    /// The fleet folder.
    pub fleet: PathBuf,
    /// The launcher.
    pub launcher: LauncherKind,
    /// The command.
    pub command: Vec<String>,
    /// Every node, in the order of the node list.
    pub nodes: Vec<NodeSummary>,
    /// Nodes done (including resumed ones).
    pub done: usize,
    /// Nodes failed.
    pub failed: usize,
    /// Nodes timed out.
    pub timeout: usize,
    /// Nodes where the agent could not be started.
    pub launch_failed: usize,
    /// Nodes not launched because an earlier run had them done.
    pub resumed: usize,
    /// Wall time of this run, seconds.
    pub elapsed_s: f64,
    /// The run was stopped through [`FleetRunOptions::cancel`]; nodes not started are
    /// missing from `nodes`.
    pub interrupted: bool,
}

impl FleetSummary {
    /// Whether every node is done.
    pub fn all_done(&self) -> bool {
        self.done == self.nodes.len()
    }

    /// For a run stopped by Ctrl-C: where its bundles are and how to resume.
    pub fn interruption(&self) -> Option<String> {
        self.interrupted.then(|| {
            format!(
                "interrupted; every bundle gathered so far is in {}; run the same command again to resume",
                self.fleet.display()
            )
        })
    }

    /// For a run some of whose nodes did not finish: how many, and how to retry them.
    pub fn unfinished(&self) -> Option<String> {
        let not_done = self.nodes.len() - self.done;
        (not_done > 0).then(|| {
            format!(
                "{not_done} of {} node(s) did not finish (see each node's status.json); run the same command again to retry them",
                self.nodes.len()
            )
        })
    }

    /// The summary for people: one line per node (name, state, seconds, message; text
    /// from the nodes made visible), a blank line and the counts, and the next command
    /// when some node is done.
    pub fn lines(&self) -> Vec<String> {
        let visible = |s: &str| numalab_schema::text::visible(s, true);
        let mut lines: Vec<String> = self
            .nodes
            .iter()
            .map(|n| {
                format!(
                    "{:<20} {:<14} {:>8.1} s  {}",
                    visible(&n.node),
                    format!("{:?}", n.state).to_lowercase()
                        + if n.resumed { " (kept)" } else { "" },
                    n.duration_s,
                    visible(&n.message)
                )
            })
            .collect();
        lines.push(format!(
            "\n{} node(s): {} done ({} kept from before), {} failed, {} timed out, {} not launched; bundles in {}",
            self.nodes.len(),
            self.done,
            self.resumed,
            self.failed,
            self.timeout,
            self.launch_failed,
            self.fleet.join("nodes").display()
        ));
        if self.done > 0 {
            lines.push(format!(
                "next: numalab fleet report {}",
                self.fleet.display()
            ));
        }
        lines
    }

    fn from_nodes(opts: &FleetRunOptions, nodes: Vec<NodeSummary>, t0: Instant) -> Self {
        let count = |s: NodeState| nodes.iter().filter(|n| n.state == s).count();
        FleetSummary {
            fleet: opts.fleet.clone(),
            launcher: opts.launcher,
            command: opts.command.clone(),
            done: count(NodeState::Done),
            failed: count(NodeState::Failed),
            timeout: count(NodeState::Timeout),
            launch_failed: count(NodeState::LaunchFailed),
            resumed: nodes.iter().filter(|n| n.resumed).count(),
            nodes,
            elapsed_s: t0.elapsed().as_secs_f64(),
            interrupted: opts
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed)),
        }
    }
}

fn summary_of(st: &NodeStatus, resumed: bool) -> NodeSummary {
    NodeSummary {
        node: st.node.clone(),
        state: st.state,
        resumed,
        exit_code: st.exit_code,
        duration_s: st.duration_s,
        message: st.message.clone(),
    }
}

/// The node list from the options (see [`FleetRunOptions::nodes`] and `hostfile`).
pub fn resolve_nodes(opts: &FleetRunOptions) -> Result<Vec<String>, FleetError> {
    if opts.nodes.is_some() && opts.hostfile.is_some() {
        return Err(FleetError::Options(
            "give --nodes or --hostfile, not both".into(),
        ));
    }
    let nodes = if let Some(h) = &opts.hostfile {
        read_hostfile(h)?
    } else {
        match (opts.launcher, &opts.nodes) {
            (LauncherKind::Slurm, Some(list)) => expand_slurm_nodelist(&opts.scontrol, list)?,
            (LauncherKind::Slurm, None) => match std::env::var("SLURM_JOB_NODELIST") {
                Ok(list) if !list.trim().is_empty() => expand_slurm_nodelist(&opts.scontrol, &list)?,
                _ => {
                    return Err(FleetError::NoNodes(
                        "give --nodes LIST, or run inside a Slurm allocation (salloc/sbatch set SLURM_JOB_NODELIST)".into(),
                    ))
                }
            },
            (_, Some(list)) => parse_plain_list(list)?,
            (LauncherKind::Mpi, None) => {
                return Err(FleetError::NoNodes("give --hostfile F or --nodes a,b,c for the MPI launcher".into()))
            }
            (LauncherKind::Local, None) => {
                return Err(FleetError::NoNodes("give --nodes a,b,c for the local launcher".into()))
            }
        }
    };
    if nodes.is_empty() {
        return Err(FleetError::NoNodes("the node list is empty".into()));
    }
    Ok(nodes)
}

/// Takes `FLEET/.lock` (flock, released when the returned file is dropped or the
/// process dies) so that two `fleet run` cannot write the same folder at once.
fn lock_fleet(fleet: &Path) -> Result<std::fs::File, FleetError> {
    let path = fleet.join(".lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| FleetError::io(&path, "opening the fleet lock", e))?;
    numalab_schema::lock::try_exclusive(
        &f,
        &path,
        "another `numalab fleet run`",
        "--fleet folder",
    )?;
    Ok(f)
}

fn absolute(p: &Path) -> Result<PathBuf, FleetError> {
    std::path::absolute(p).map_err(|e| FleetError::io(p, "making the path absolute", e))
}

/// Who shows a fleet run's progress (the CLI: a progress bar on stderr); every method
/// has a default that shows nothing, and `()` shows nothing at all.
pub trait Progress: Sync {
    /// The run starts: `total` nodes, of which `already` were done before (resumed).
    fn start(&self, _total: u64, _already: u64) {}
    /// A state line ("done 3, failed 1, running 2", "waiting for the sbatch job").
    fn message(&self, _text: &str) {}
    /// A node that did not finish, in one line for people.
    fn node_problem(&self, _line: &str) {}
    /// One more node ended (done or not).
    fn node_ended(&self) {}
    /// The run is over.
    fn finish(&self) {}
}

/// No progress shown.
impl Progress for () {}

/// Runs the fleet: see the crate documentation. Node failures are in the summary (and
/// each node's `status.json`), not errors; an error means the run as a whole could not
/// proceed (bad options, [`FleetRunOptions::check`]'s among them; unusable fleet
/// folder; node list not expandable).
pub fn run_fleet(
    opts: &FleetRunOptions,
    progress: &dyn Progress,
) -> Result<FleetSummary, FleetError> {
    let t0 = Instant::now();
    check_command(&opts.command)?;
    opts.check()?;
    if opts.sbatch && opts.launcher != LauncherKind::Slurm {
        return Err(FleetError::Options(
            "--sbatch goes with --launcher slurm".into(),
        ));
    }
    if opts.numalab.is_relative() && opts.numalab.components().count() > 1 {
        return Err(FleetError::Options(format!(
            "the numalab path {} is relative: give an absolute path, the same on every node",
            opts.numalab.display()
        )));
    }
    let mut opts = opts.clone();
    if std::fs::metadata(&opts.fleet).is_ok_and(|m| !m.is_dir()) {
        return Err(FleetError::Options(format!(
            "--fleet {}: this is a file, not a folder; give --fleet a new folder or the folder of an earlier fleet run",
            opts.fleet.display()
        )));
    }
    // A hostfile numalab cannot use is refused before the fleet folder is made (a run
    // refused for its input leaves nothing behind); it is read again under the lock.
    if let Some(h) = &opts.hostfile {
        read_hostfile(h)?;
    }
    std::fs::create_dir_all(&opts.fleet)
        .map_err(|e| FleetError::io(&opts.fleet, "creating the fleet folder", e))?;
    opts.fleet = absolute(&opts.fleet)?;
    if let Some(s) = &opts.shared {
        opts.shared = Some(absolute(s)?);
    }
    if opts.sbatch {
        return run_sbatch(&opts, progress, t0);
    }
    let _lock = lock_fleet(&opts.fleet)?;
    let nodes = resolve_nodes(&opts)?;
    for n in &nodes {
        validate_node_name(n)?;
    }
    prepare_manifest(&opts, &nodes)?;

    // Resume: nodes done with an intact bundle are not launched again.
    let mut results: Vec<Option<NodeSummary>> = vec![None; nodes.len()];
    let mut queue = VecDeque::new();
    for (i, n) in nodes.iter().enumerate() {
        match store::can_skip(&opts.fleet, n) {
            Some(st) => results[i] = Some(summary_of(&st, true)),
            None => queue.push_back((i, n.clone())),
        }
    }
    let resumed = nodes.len() - queue.len();
    progress.start(nodes.len() as u64, resumed as u64);

    let mut launcher = Launcher::new(
        opts.launcher,
        opts.launcher_program.clone(),
        opts.launcher_args.clone(),
    );
    // --push: the SHA-256 of the file srun broadcasts, which each node's agent checks.
    let pushed = if opts.push {
        launcher.bcast_dir = Some(PathBuf::from(PUSH_DIR));
        Some(sha256_of(&opts.numalab)?)
    } else {
        None
    };
    let queue = Mutex::new(queue);
    let results = Mutex::new(results);
    let counts = Counts::default();
    counts.done.fetch_add(resumed, Ordering::Relaxed);
    let workers = opts.parallel.min(nodes.len() - resumed).max(1);
    let first_error: Mutex<Option<FleetError>> = Mutex::new(None);
    counts.show(progress);
    let problems = Problems::default();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                if cancelled(&opts) {
                    break;
                }
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                let Some((i, node)) = next else { break };
                counts.running.fetch_add(1, Ordering::Relaxed);
                counts.show(progress);
                let attempt = store::read_status(&opts.fleet, &node).map_or(1, |s| s.attempt + 1);
                let st = run_node(&opts, &launcher, &node, attempt, pushed.as_deref());
                counts.running.fetch_sub(1, Ordering::Relaxed);
                match st.state {
                    NodeState::Done => &counts.done,
                    _ => &counts.failed,
                }
                .fetch_add(1, Ordering::Relaxed);
                if let Err(e) = store::write_status(&opts.fleet, &st) {
                    first_error
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(e);
                }
                if st.state != NodeState::Done && problems.note(&node, &st) {
                    progress.node_problem(&format!(
                        "{}: {}: {}",
                        node,
                        st.state.as_str(),
                        st.message
                    ));
                }
                results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(summary_of(&st, false));
                progress.node_ended();
                counts.show(progress);
            });
        }
    });
    problems.said(progress);
    progress.finish();
    if let Some(e) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let nodes: Vec<NodeSummary> = results
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .flatten()
        .collect();
    Ok(FleetSummary::from_nodes(&opts, nodes, t0))
}

/// The nodes' problems as they are said: the first of each state at once, the others
/// (the same problem on 64 nodes) one line a state when the run ends: how many more
/// nodes, three of them, what to do ([`numalab_schema::fold`]).
#[derive(Default)]
struct Problems(Mutex<Option<numalab_schema::fold::Fold>>);

impl Problems {
    /// Takes node `node`'s problem: true when it is to be said now.
    fn note(&self, node: &str, st: &NodeStatus) -> bool {
        let remedy = match st.state {
            NodeState::Timeout => "see the node's status.json; raise --timeout if the command needs longer, and run the same command again to retry the nodes not done",
            NodeState::LaunchFailed => "see the node's status.json for the launcher's words; run the same command again to retry the nodes not done",
            _ => "see the node's status.json (its stderr); run the same command again to retry the nodes not done",
        };
        let w = numalab_schema::Warning::new(st.state.as_str(), &st.message).with_remedy(remedy);
        let mut fold = self.0.lock().unwrap_or_else(|p| p.into_inner());
        fold.get_or_insert_with(|| numalab_schema::fold::Fold::per("node"))
            .note(node, &w)
    }

    /// Says the folded lines, one per state that more than one node had.
    fn said(&self, progress: &dyn Progress) {
        let fold = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for w in fold.iter().flat_map(|f| f.folded()) {
            progress.node_problem(&w.to_string());
        }
    }
}

#[derive(Default)]
struct Counts {
    done: AtomicUsize,
    failed: AtomicUsize,
    running: AtomicUsize,
}

impl Counts {
    fn show(&self, p: &dyn Progress) {
        p.message(&format!(
            "done {}, failed {}, running {}",
            self.done.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            self.running.load(Ordering::Relaxed)
        ));
    }
}

/// Checks the existing manifest (same command, or `--restart`) and writes the new one.
fn prepare_manifest(opts: &FleetRunOptions, nodes: &[String]) -> Result<(), FleetError> {
    let old = store::read_manifest(&opts.fleet)?;
    let mut created = store::now_rfc3339();
    if let Some(old) = &old {
        if old.command != opts.command {
            if !opts.restart {
                return Err(FleetError::CommandChanged {
                    fleet: opts.fleet.clone(),
                    previous: old.command.join(" "),
                    now: opts.command.join(" "),
                });
            }
            let nodes_dir = opts.fleet.join("nodes");
            if nodes_dir.exists() {
                let secs = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let aside = opts.fleet.join(format!("nodes.previous-{secs}"));
                std::fs::rename(&nodes_dir, &aside)
                    .map_err(|e| FleetError::io(&nodes_dir, "moving the previous run aside", e))?;
            }
        } else {
            created = old.created.clone();
        }
    }
    let nodes_dir = opts.fleet.join("nodes");
    std::fs::create_dir_all(&nodes_dir).map_err(|e| FleetError::io(&nodes_dir, "creating", e))?;
    let m = Manifest {
        schema_version: FLEET_SCHEMA_VERSION,
        command: opts.command.clone(),
        launcher: opts.launcher,
        launcher_args: redact(&opts.launcher_args),
        nodes: nodes.to_vec(),
        numalab: opts.numalab.clone(),
        numalab_version: opts.numalab_version.clone(),
        created,
        started: store::now_rfc3339(),
        timeout_s: opts.timeout.as_secs_f64(),
        shared: opts.shared.clone(),
    };
    store::write_manifest(&opts.fleet, &m)
}

/// Whether the caller asked the run to stop.
fn cancelled(opts: &FleetRunOptions) -> bool {
    opts.cancel
        .as_ref()
        .is_some_and(|c| c.load(Ordering::Relaxed))
}

/// [`run_fleet`] stopped by Ctrl-C or SIGTERM: a watcher hands the interrupt on through
/// [`FleetRunOptions::cancel`] (the launchers run in their own process groups, so only
/// numalab hears it) and the run kills its launchers.
pub fn run_cancellable(
    mut opts: FleetRunOptions,
    progress: &dyn Progress,
) -> Result<FleetSummary, FleetError> {
    let cancel = Arc::new(AtomicBool::new(false));
    opts.cancel = Some(cancel.clone());
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if numalab_schema::interrupt::requested() {
                    cancel.store(true, Ordering::Relaxed);
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let summary = run_fleet(&opts, progress);
    done.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    summary
}

#[cfg(test)]
mod tests {
    use super::node::{last_line, not_there, stderr_says_missing};
    use super::*;

    #[test]
    fn refused_combinations_and_how_a_run_ended() {
        let mut o = FleetRunOptions::new("/tmp/f", "/opt/numalab", "0.1.0");
        assert!(o.check().is_ok());
        o.launcher = LauncherKind::Mpi;
        let e = o.check().unwrap_err().to_string();
        assert_eq!(
            e,
            "--launcher mpi needs --hostfile FILE (one host per line)"
        );
        o.hostfile = Some("hosts".into());
        assert!(o.check().is_ok());
        // --push goes through srun --bcast: refused with mpirun and with --sbatch.
        o.push = true;
        let e = o.check().unwrap_err().to_string();
        assert!(e.starts_with("--push works through Slurm"), "{e}");
        o.launcher = LauncherKind::Slurm;
        assert!(o.check().is_ok());
        o.sbatch = true;
        let e = o.check().unwrap_err().to_string();
        assert!(
            e.contains("run `fleet run --push` inside an allocation"),
            "{e}"
        );
        (o.launcher, o.push, o.sbatch) = (LauncherKind::Mpi, false, false);
        o.timeout = numalab_schema::units::MAX_DURATION + Duration::from_secs(1);
        let e = o.check().unwrap_err().to_string();
        assert!(
            e.ends_with(": longer than 365 days, the longest accepted; give e.g. 90m, 2h"),
            "{e}"
        );
        o.timeout = numalab_schema::units::MAX_DURATION;
        assert!(o.check().is_ok());
        o.parallel = 0;
        assert_eq!(
            o.check().unwrap_err().to_string(),
            "--parallel must be at least 1"
        );
        // The watched run ends with run_fleet's own refusal (the watcher is stopped).
        let e = run_cancellable(o.clone(), &()).unwrap_err();
        assert_eq!(e.to_string(), "--parallel must be at least 1");
        let node = |state| NodeSummary {
            node: "n1".into(),
            state,
            resumed: false,
            exit_code: None,
            duration_s: 0.0,
            message: String::new(),
        };
        let mut s = FleetSummary {
            fleet: "/tmp/f".into(),
            launcher: LauncherKind::Slurm,
            command: vec![],
            nodes: vec![node(NodeState::Done), node(NodeState::Failed)],
            done: 1,
            failed: 1,
            timeout: 0,
            launch_failed: 0,
            resumed: 0,
            elapsed_s: 1.0,
            interrupted: false,
        };
        assert_eq!(s.interruption(), None);
        assert!(s
            .unfinished()
            .unwrap()
            .starts_with("1 of 2 node(s) did not finish"));
        s.interrupted = true;
        assert!(s
            .interruption()
            .unwrap()
            .contains("every bundle gathered so far is in /tmp/f;"));
        s.done = 2;
        assert_eq!(s.unfinished(), None);
    }

    #[test]
    fn the_summary_for_people() {
        let node = |name: &str, state, resumed| NodeSummary {
            node: name.into(),
            state,
            resumed,
            exit_code: None,
            duration_s: 2.0,
            message: "exit 3\x1b".into(),
        };
        let mut s = FleetSummary {
            fleet: "/tmp/f".into(),
            launcher: LauncherKind::Slurm,
            command: vec![],
            nodes: vec![
                node("n1", NodeState::Done, true),
                node("n2", NodeState::Failed, false),
            ],
            done: 1,
            failed: 1,
            timeout: 0,
            launch_failed: 0,
            resumed: 1,
            elapsed_s: 1.0,
            interrupted: false,
        };
        let lines = s.lines();
        assert_eq!(lines.len(), 4);
        assert!(
            lines[0].starts_with("n1                   done (kept)         2.0 s  exit 3"),
            "{}",
            lines[0]
        );
        assert!(!lines[1].contains('\x1b'), "{}", lines[1]);
        assert_eq!(
            lines[2],
            "\n2 node(s): 1 done (1 kept from before), 1 failed, 0 timed out, 0 not launched; bundles in /tmp/f/nodes"
        );
        assert_eq!(lines[3], "next: numalab fleet report /tmp/f");
        s.done = 0;
        assert_eq!(s.lines().len(), 3);
    }

    #[test]
    fn missing_binary_recognised() {
        let p = Path::new("/opt/numalab");
        assert!(stderr_says_missing(
            "slurmstepd-n2: error: execve(): /opt/numalab: No such file or directory\n",
            p
        ));
        assert!(stderr_says_missing(
            "mpirun was unable to launch the specified application as it could not access\nor execute an executable:\n\nExecutable: /opt/numalab\nNode: vm\n",
            p
        ));
        assert!(!stderr_says_missing(
            "srun: error: n2: task 0: Exited with exit code 3\n",
            p
        ));
        assert!(not_there(p, "n2").contains("install it at the same path on every node"));
    }

    #[test]
    fn options_checked() {
        let d = tempfile::tempdir().unwrap();
        let mut o = FleetRunOptions::new(d.path(), "/opt/numalab", "0");
        o.launcher = LauncherKind::Local;
        o.nodes = Some("a,b".into());
        o.command = vec!["evaluate".into(), "--out=x".into()];
        assert!(run_fleet(&o, &())
            .unwrap_err()
            .to_string()
            .contains("--out"));
        o.command = vec!["evaluate".into()];
        o.parallel = 0;
        assert!(run_fleet(&o, &()).is_err());
        o.parallel = 1;
        o.nodes = None;
        let e = run_fleet(&o, &()).unwrap_err().to_string();
        assert!(e.contains("--nodes"), "{e}");
        o.nodes = Some("a,../b".into());
        assert!(run_fleet(&o, &()).is_err());
        o.nodes = Some("a".into());
        o.numalab = "bin/numalab".into();
        assert!(run_fleet(&o, &())
            .unwrap_err()
            .to_string()
            .contains("absolute"));
        let mut o = FleetRunOptions::new("/shared/fleet", "/opt/numalab", "0");
        assert!(sbatch_argv(&o).unwrap_err().to_string().contains("--nodes"));
        o.nodes = Some("n1".into());
        o.fleet = "rel".into();
        assert!(sbatch_argv(&o)
            .unwrap_err()
            .to_string()
            .contains("absolute"));
    }

    /// Issue 50's walk: `fleet run --hostfile /dev/zero --fleet f` (or a missing
    /// hostfile) was refused, exit 3, after making `f` and its `.lock`.
    #[test]
    fn fleet_run_with_a_refused_hostfile_makes_no_fleet_folder() {
        let d = tempfile::tempdir().unwrap();
        let fleet = d.path().join("f");
        let mut o = FleetRunOptions::new(&fleet, "/opt/numalab", "0");
        o.launcher = LauncherKind::Mpi;
        for h in ["/dev/zero", "/nonexistent/hosts"] {
            o.hostfile = Some(h.into());
            let e = run_fleet(&o, &()).unwrap_err();
            assert_eq!(
                numalab_schema::Classify::class(&e),
                numalab_schema::ErrorClass::Input,
                "{e}"
            );
            assert!(!fleet.exists(), "{h}: the fleet folder was made");
        }
    }

    #[test]
    fn one_run_per_fleet_folder() {
        let d = tempfile::tempdir().unwrap();
        let held = lock_fleet(d.path()).unwrap();
        let e = lock_fleet(d.path()).unwrap_err().to_string();
        assert!(e.contains("another `numalab fleet run`"), "{e}");
        drop(held);
        assert!(lock_fleet(d.path()).is_ok());
    }

    #[test]
    fn last_stderr_line() {
        let t = "fake: step exploded\nnumalab fleet node: `numalab x` failed\nsrun: error: n3: task 0: Exited with exit code 1\n";
        assert_eq!(last_line(t), "fake: step exploded");
    }
}
