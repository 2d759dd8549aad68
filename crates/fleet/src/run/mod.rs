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
use crate::process::{kill_group, own_group, wait_until, Tail};
use crate::store::{self, GatheredFile, Manifest, NodeState, NodeStatus, FLEET_SCHEMA_VERSION};

/// How much of a node's stderr is kept in its `status.json`.
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// Longest line read from a launcher's stdout (a base64 line is 76 characters).
const MAX_LINE: usize = 1 << 20;

/// Default `--parallel`.
pub const DEFAULT_PARALLEL: usize = 32;

/// Default per-node `--timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2 * 3600);

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
/// proceed (bad options, unusable fleet folder, node list not expandable).
pub fn run_fleet(
    opts: &FleetRunOptions,
    progress: &dyn Progress,
) -> Result<FleetSummary, FleetError> {
    let t0 = Instant::now();
    check_command(&opts.command)?;
    if opts.parallel == 0 {
        return Err(FleetError::Options("--parallel must be at least 1".into()));
    }
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

    let launcher = Launcher::new(
        opts.launcher,
        opts.launcher_program.clone(),
        opts.launcher_args.clone(),
    );
    let queue = Mutex::new(queue);
    let results = Mutex::new(results);
    let counts = Counts::default();
    counts.done.fetch_add(resumed, Ordering::Relaxed);
    let workers = opts.parallel.min(nodes.len() - resumed).max(1);
    let first_error: Mutex<Option<FleetError>> = Mutex::new(None);
    counts.show(progress);
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
                let st = run_node(&opts, &launcher, &node, attempt);
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
                if st.state != NodeState::Done {
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

/// What the stdout reader gathered.
#[derive(Default)]
struct Gathered {
    hello: bool,
    files: Vec<GatheredFile>,
    status: Option<frame::AgentStatus>,
    errors: Vec<String>,
}

/// Reads the launcher's stdout: frames into verified files in `dir`, stray lines into
/// `tail`.
fn gather(
    stdout: impl std::io::Read,
    dir: &Path,
    shared: Option<&Path>,
    node: &str,
    tail: &Tail,
) -> Gathered {
    let mut g = Gathered::default();
    let mut r = BufReader::new(stdout);
    let mut d = FrameDecoder::new();
    let mut current: Option<tempfile::NamedTempFile> = None;
    let mut write_failed = false;
    loop {
        let line = match frame::read_line_bounded(&mut r, MAX_LINE) {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                g.errors.push(format!("reading the launcher's output: {e}"));
                break;
            }
        };
        match d.push_line(&line) {
            Ok(Event::Hello { .. }) => g.hello = true,
            Ok(Event::Begin { name, .. }) => {
                write_failed = false;
                current = None;
                if !BUNDLE_FILES.contains(&name.as_str()) {
                    g.errors.push(format!("unexpected file {name:?} ignored"));
                    continue;
                }
                match tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir) {
                    Ok(f) => current = Some(f),
                    Err(e) => {
                        g.errors
                            .push(format!("cannot create a file in {}: {e}", dir.display()));
                        write_failed = true;
                    }
                }
            }
            Ok(Event::Chunk(c)) => {
                if let Some(f) = current.as_mut() {
                    if let Err(e) = f.write_all(&c) {
                        if !write_failed {
                            g.errors
                                .push(format!("writing into {}: {e}", dir.display()));
                        }
                        write_failed = true;
                    }
                }
            }
            Ok(Event::FileDone {
                name,
                bytes,
                sha256,
            }) => {
                if let Some(f) = current.take() {
                    if !write_failed {
                        let path = dir.join(&name);
                        let persisted =
                            f.as_file()
                                .sync_all()
                                .map_err(|e| e.to_string())
                                .and_then(|_| {
                                    f.persist(&path)
                                        .map(|_| ())
                                        .map_err(|e| e.error.to_string())
                                });
                        match persisted {
                            Ok(()) => g.files.push(GatheredFile {
                                name,
                                bytes,
                                sha256,
                            }),
                            Err(e) => g.errors.push(format!("saving {}: {e}", path.display())),
                        }
                    }
                }
            }
            Ok(Event::Shared {
                name,
                bytes,
                sha256,
            }) => match take_shared(shared, node, dir, &name, bytes, &sha256) {
                Ok(f) => g.files.push(f),
                Err(e) => g.errors.push(e),
            },
            Ok(Event::Status(s)) => g.status = Some(s),
            Ok(Event::Stray(l)) => tail.push(format!("[stdout] {l}\n").as_bytes()),
            Err(e) => {
                current = None;
                g.errors.push(format!("bundle damaged in transit: {e}"));
            }
        }
    }
    if let Err(e) = d.finish() {
        g.errors.push(format!("bundle damaged in transit: {e}"));
    }
    g
}

/// Verifies a file the node left in the shared folder and copies it into the node folder.
fn take_shared(
    shared: Option<&Path>,
    node: &str,
    dir: &Path,
    name: &str,
    bytes: u64,
    sha256: &str,
) -> Result<GatheredFile, String> {
    let Some(shared) = shared else {
        return Err(format!(
            "the node announced {name} in a shared folder, but no --shared was given"
        ));
    };
    if !BUNDLE_FILES.contains(&name) {
        return Err(format!("unexpected file {name:?} ignored"));
    }
    let src = shared.join(node).join(name);
    let data = std::fs::read(&src).map_err(|e| {
        format!(
            "cannot read {} ({e}): is the --shared folder the same file system on the node and here?",
            src.display()
        )
    })?;
    let (n, sha) = frame::hash_reader(&data[..]).map_err(|e| e.to_string())?;
    if n != bytes || sha != sha256 {
        return Err(format!(
            "{}: {n} bytes sha256 {sha}, the node announced {bytes} bytes sha256 {sha256} (not yet visible here, or changed)",
            src.display()
        ));
    }
    store::write_atomic(&dir.join(name), &data).map_err(|e| e.to_string())?;
    Ok(GatheredFile {
        name: name.to_string(),
        bytes,
        sha256: sha,
    })
}

fn cancelled(opts: &FleetRunOptions) -> bool {
    opts.cancel
        .as_ref()
        .is_some_and(|c| c.load(Ordering::Relaxed))
}

/// How long reader threads may take to finish after the launcher ended (a process the
/// launcher left behind may hold its pipes open).
const READER_GRACE: Duration = Duration::from_secs(5);

/// Grace between SIGTERM and SIGKILL for a launcher's process group.
const LAUNCHER_KILL_GRACE: Duration = Duration::from_secs(5);

/// Launches, gathers and judges one node. Never fails: every problem is in the status.
fn run_node(opts: &FleetRunOptions, launcher: &Launcher, node: &str, attempt: u32) -> NodeStatus {
    let started = store::now_rfc3339();
    let t0 = Instant::now();
    let dir = store::node_dir(&opts.fleet, node);
    let agent = AgentOptions {
        node: node.to_string(),
        numalab: opts.numalab.clone(),
        version: opts.numalab_version.clone(),
        command: opts.command.clone(),
        timeout: opts.timeout,
        shared: opts.shared.clone(),
    };
    let argv = launcher.argv(node, &opts.numalab, &agent.to_args());
    let mut status = NodeStatus {
        schema_version: FLEET_SCHEMA_VERSION,
        node: node.to_string(),
        state: NodeState::LaunchFailed,
        exit_code: None,
        duration_s: 0.0,
        started,
        message: String::new(),
        stderr_tail: String::new(),
        launcher_command: redact(&argv),
        files: Vec::new(),
        attempt,
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        status.message = format!("cannot create {}: {e}", dir.display());
        return status;
    }
    let mut cmd = launcher.command(node, &opts.numalab, &agent.to_args());
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    own_group(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            status.message = if e.kind() == std::io::ErrorKind::NotFound {
                match launcher.kind {
                    LauncherKind::Local => not_there(&opts.numalab, node),
                    _ => format!(
                        "the launcher {} is not installed here ({e}): run on a login node of the cluster, or give the launcher's path",
                        argv[0]
                    ),
                }
            } else {
                format!("cannot start {}: {e}", argv[0])
            };
            status.duration_s = t0.elapsed().as_secs_f64();
            return status;
        }
    };
    let tail = Tail::new(STDERR_TAIL_BYTES);
    let (err_tx, err_rx) = mpsc::channel();
    let stderr = child.stderr.take();
    let t = tail.clone();
    std::thread::spawn(move || {
        if let Some(e) = stderr {
            t.drain_from(e);
        }
        let _ = err_tx.send(());
    });
    let (out_tx, out_rx) = mpsc::channel();
    let stdout = child.stdout.take();
    let (d, sh, n, t) = (
        dir.clone(),
        opts.shared.clone(),
        node.to_string(),
        tail.clone(),
    );
    std::thread::spawn(move || {
        let g = match stdout {
            Some(o) => gather(o, &d, sh.as_deref(), &n, &t),
            None => Gathered::default(),
        };
        let _ = out_tx.send(g);
    });

    let deadline = t0 + opts.timeout + opts.kill_margin;
    let mut fleet_timeout = false;
    let mut interrupted = false;
    let exit = match wait_until(&mut child, deadline, opts.cancel.as_deref()) {
        Ok(Some(st)) => Some(st),
        Ok(None) => {
            if Instant::now() >= deadline {
                fleet_timeout = true;
            } else {
                interrupted = true;
            }
            kill_group(&mut child, LAUNCHER_KILL_GRACE).ok()
        }
        Err(_) => kill_group(&mut child, LAUNCHER_KILL_GRACE).ok(),
    };
    let gathered = out_rx.recv_timeout(READER_GRACE).unwrap_or_else(|_| Gathered {
        errors: vec!["the launcher's output stayed open after it ended (a process it left behind?); stopped reading".into()],
        ..Gathered::default()
    });
    let _ = err_rx.recv_timeout(READER_GRACE);
    status.duration_s = t0.elapsed().as_secs_f64();
    status.stderr_tail = tail.text();
    status.files = gathered.files.clone();
    let launcher_code = exit.and_then(|e| e.code());
    let launcher_exit = exit.map_or("unknown".to_string(), |e| e.to_string());
    let damaged = if gathered.errors.is_empty() {
        String::new()
    } else {
        format!("; {}", gathered.errors.join("; "))
    };
    let has_results = gathered.files.iter().any(|f| f.name == BUNDLE_FILES[0]);
    let cmd_text = opts.command.join(" ");

    if interrupted {
        status.state = NodeState::Failed;
        status.message = format!("interrupted: fleet run was stopped while node {node} ran; the launcher's process group was killed; rerun to run the node again");
        return status;
    }
    if fleet_timeout {
        status.state = NodeState::Timeout;
        status.exit_code = gathered.status.as_ref().and_then(|s| s.exit_code);
        status.message = format!(
            "no result within the timeout of {} (plus {} for the launcher): the launcher's process group was killed{damaged}",
            humantime::format_duration(opts.timeout),
            humantime::format_duration(opts.kill_margin)
        );
        return status;
    }
    if !gathered.hello {
        status.state = NodeState::LaunchFailed;
        status.exit_code = launcher_code;
        let says_missing = launcher_code == Some(EXIT_NOT_FOUND)
            || stderr_says_missing(&status.stderr_tail, &opts.numalab);
        status.message = if says_missing {
            not_there(&opts.numalab, node)
        } else {
            format!(
                "the agent never started on node {node} (no hello line; launcher {launcher_exit}); {}; see stderr_tail",
                not_there(&opts.numalab, node)
            )
        };
        return status;
    }
    let Some(agent_status) = gathered.status else {
        status.state = NodeState::Failed;
        status.exit_code = launcher_code;
        status.message = format!(
            "the agent on node {node} stopped without a status line (launcher {launcher_exit}): killed, or the node failed{damaged}"
        );
        return status;
    };
    status.exit_code = agent_status.exit_code;
    let ran = humantime::format_duration(Duration::from_millis(agent_status.duration_ms));
    match agent_status.state {
        AgentState::Done if has_results && gathered.errors.is_empty() => {
            status.state = NodeState::Done;
            status.message = format!("`numalab {cmd_text}` done in {ran}");
        }
        AgentState::Done => {
            status.state = NodeState::Failed;
            status.message = format!(
                "`numalab {cmd_text}` succeeded but its bundle did not arrive intact{damaged}; rerun the fleet to try the node again"
            );
        }
        AgentState::Timeout => {
            status.state = NodeState::Timeout;
            status.message = format!(
                "`numalab {cmd_text}` ran past the timeout of {} on node {node}; its process group was killed{damaged}",
                humantime::format_duration(opts.timeout)
            );
        }
        AgentState::Killed => {
            status.state = NodeState::Failed;
            status.message =
                format!("the agent on node {node} was stopped by a signal after {ran}{damaged}");
        }
        AgentState::Failed
            if agent_status.exit_code == Some(EXIT_NOT_FOUND) && agent_status.duration_ms == 0 =>
        {
            status.state = NodeState::LaunchFailed;
            status.message = not_there(&opts.numalab, node);
        }
        AgentState::Failed => {
            status.state = NodeState::Failed;
            let how = match (agent_status.exit_code, agent_status.signal) {
                (Some(c), _) => format!("exited with {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                (None, None) => "failed".into(),
            };
            let last = last_line(&status.stderr_tail);
            status.message = format!(
                "`numalab {cmd_text}` {how} on node {node} after {ran}{}{damaged}",
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            );
        }
    }
    status
}

/// The last meaningful stderr line (not the agent's own summary line).
fn last_line(tail: &str) -> String {
    tail.lines()
        .rev()
        .map(str::trim)
        .find(|l| {
            !l.is_empty()
                && !l.starts_with("numalab fleet node:")
                && !l.starts_with("srun:")
                && !l.starts_with("[stdout]")
        })
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}

fn not_there(numalab: &Path, node: &str) -> String {
    format!(
        "numalab is not at {} on node {node}: install it at the same path on every node",
        numalab.display()
    )
}

/// Whether a launcher's stderr says the numalab binary was not found.
fn stderr_says_missing(stderr: &str, numalab: &Path) -> bool {
    let path = numalab.display().to_string();
    let low = stderr.to_ascii_lowercase();
    // Slurm says it on one line, Open MPI over several.
    (stderr.contains(&path) || low.contains("executable"))
        && [
            "no such file",
            "not found",
            "unable to find",
            "could not access",
            "cannot execute",
            "permission denied",
        ]
        .iter()
        .any(|w| low.contains(w))
}

/// `--sbatch`: one batch job whose script runs `numalab fleet run` inside the allocation,
/// with the same fleet folder (which must therefore be writable from the batch host).
fn run_sbatch(
    opts: &FleetRunOptions,
    progress: &dyn Progress,
    t0: Instant,
) -> Result<FleetSummary, FleetError> {
    let argv = sbatch_argv(opts)?;
    let count = match &opts.nodes {
        Some(list) => expand_slurm_nodelist(&opts.scontrol, list)?.len(),
        None => 0,
    };
    progress.start(count as u64, 0);
    progress.message(&format!("waiting for the sbatch job ({count} nodes)"));
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    own_group(&mut cmd);
    // The job runs the nodes `parallel` at a time; allow for queueing on top.
    let rounds = count.div_ceil(opts.parallel.max(1)).max(1) as u32;
    let limit = (opts.timeout + opts.kill_margin) * rounds + Duration::from_secs(24 * 3600);
    let out = crate::process::output_with_timeout(cmd, limit);
    progress.finish();
    let sb = |problem: String| FleetError::Sbatch {
        fleet: opts.fleet.clone(),
        problem,
    };
    let out = match out {
        Ok(o) => o,
        Err(crate::process::OutputError::NotFound) => {
            return Err(sb(format!("{} is not installed here; run on a Slurm login node", argv[0])))
        }
        Err(crate::process::OutputError::Spawn(e)) => return Err(sb(format!("cannot start {}: {e}", argv[0]))),
        Err(crate::process::OutputError::Timeout) => {
            return Err(sb(format!("no end of the job after {}; sbatch was stopped (the job may still run: squeue -n {JOB_NAME})", humantime::format_duration(limit))))
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let job = text
        .split_whitespace()
        .last()
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or("%j")
        .to_string();
    let log = opts.fleet.join(format!("slurm-{job}.out"));
    let manifest = store::read_manifest(&opts.fleet)?;
    let Some(m) = manifest else {
        return Err(sb(format!(
            "the batch job ({}) wrote no {}: {}; its output is in {} on the batch host",
            out.status,
            store::manifest_path(&opts.fleet).display(),
            String::from_utf8_lossy(&out.stderr).trim(),
            log.display()
        )));
    };
    let nodes = m
        .nodes
        .iter()
        .map(|n| match store::read_status(&opts.fleet, n) {
            Some(st) => summary_of(&st, false),
            None => NodeSummary {
                node: n.clone(),
                state: NodeState::LaunchFailed,
                resumed: false,
                exit_code: None,
                duration_s: 0.0,
                message: format!("no status.json after the batch job; see {}", log.display()),
            },
        })
        .collect();
    Ok(FleetSummary::from_nodes(opts, nodes, t0))
}

/// The `sbatch` command line of `--sbatch` (the job script is a `--wrap` shell line, the
/// only shell involved; every word in it is quoted).
pub fn sbatch_argv(opts: &FleetRunOptions) -> Result<Vec<String>, FleetError> {
    let Some(list) = &opts.nodes else {
        return Err(FleetError::Options(
            "--sbatch needs --nodes LIST: the nodes the batch job allocates".into(),
        ));
    };
    if !opts.fleet.is_absolute() {
        return Err(FleetError::Options(format!(
            "--sbatch needs an absolute --fleet path the batch host can write, not {}",
            opts.fleet.display()
        )));
    }
    let count = expand_slurm_nodelist(&opts.scontrol, list)?.len();
    let mut inner = vec![
        opts.numalab.display().to_string(),
        "fleet".into(),
        "run".into(),
        "--launcher".into(),
        "slurm".into(),
        "--nodes".into(),
        list.clone(),
        "--parallel".into(),
        opts.parallel.to_string(),
        "--timeout".into(),
        format_duration(opts.timeout),
    ];
    if let Some(s) = &opts.shared {
        inner.push("--shared".into());
        inner.push(s.display().to_string());
    }
    if opts.restart {
        inner.push("--restart".into());
    }
    for a in &opts.launcher_args {
        inner.push("--launcher-arg".into());
        inner.push(a.clone());
    }
    inner.push("--fleet".into());
    inner.push(opts.fleet.display().to_string());
    inner.push("--".into());
    inner.extend(opts.command.iter().cloned());
    let wrap = inner
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(vec![
        opts.sbatch_program.display().to_string(),
        "--wait".into(),
        "--parsable".into(),
        format!("--nodes={count}"),
        format!("--nodelist={list}"),
        "--exclusive".into(),
        format!("--job-name={JOB_NAME}"),
        format!("--output={}/slurm-%j.out", opts.fleet.display()),
        "--wrap".into(),
        wrap,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

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
