//! One node's launch: the launcher started, its stdout gathered into verified files,
//! its stderr tailed, and the outcome judged (timeout, missing numalab, failure).

use super::*;
use numalab_schema::input::io_reason;

/// What the stdout reader gathered.
#[derive(Default)]
struct Gathered {
    hello: bool,
    /// The SHA-256 the agent said it checked (`--push`).
    pushed: Option<String>,
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
                g.errors
                    .push(format!("reading the launcher's output: {}", io_reason(&e)));
                break;
            }
        };
        match d.push_line(&line) {
            Ok(Event::Hello { pushed, .. }) => {
                g.hello = true;
                g.pushed = pushed;
            }
            Ok(Event::Begin { name, .. }) => {
                write_failed = false;
                current = None;
                if !BUNDLE_FILES.contains(&name.as_str()) {
                    g.errors.push(format!("unexpected file {name:?} ignored"));
                    continue;
                }
                // 0666 less the umask, as a plain create (tempfile's own is 0600).
                let mode = std::os::unix::fs::PermissionsExt::from_mode(0o666);
                match tempfile::Builder::new()
                    .prefix(".tmp-")
                    .permissions(mode)
                    .tempfile_in(dir)
                {
                    Ok(f) => current = Some(f),
                    Err(e) => {
                        g.errors.push(format!(
                            "cannot create a file in {}: {}",
                            dir.display(),
                            io_reason(&e)
                        ));
                        write_failed = true;
                    }
                }
            }
            Ok(Event::Chunk(c)) => {
                if let Some(f) = current.as_mut() {
                    if let Err(e) = f.write_all(&c) {
                        if !write_failed {
                            g.errors.push(format!(
                                "writing into {}: {}",
                                dir.display(),
                                io_reason(&e)
                            ));
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
                                .map_err(|e| io_reason(&e))
                                .and_then(|_| {
                                    f.persist(&path)
                                        .map(|_| ())
                                        .map_err(|e| io_reason(&e.error))
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
            "cannot read {} ({}): is the --shared folder the same file system on the node and here?",
            src.display(),
            io_reason(&e)
        )
    })?;
    let (n, sha) = frame::hash_reader(&data[..]).map_err(|e| io_reason(&e))?;
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

/// How long reader threads may take to finish after the launcher ended (a process the
/// launcher left behind may hold its pipes open).
const READER_GRACE: Duration = Duration::from_secs(5);

/// Grace between SIGTERM and SIGKILL for a launcher's process group.
const LAUNCHER_KILL_GRACE: Duration = Duration::from_secs(5);

/// Launches, gathers and judges one node. Never fails: every problem is in the status.
pub(super) fn run_node(
    opts: &FleetRunOptions,
    launcher: &Launcher,
    node: &str,
    attempt: u32,
    pushed: Option<&str>,
) -> NodeStatus {
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
        pushed_sha256: pushed.map(str::to_string),
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
        pushed_sha256: None,
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        status.message = format!("cannot create {}: {}", dir.display(), io_reason(&e));
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
                        "the launcher {} is not installed here ({}): run on a login node of the cluster, or give the launcher's path",
                        argv[0],
                        io_reason(&e)
                    ),
                }
            } else {
                format!("cannot start {}: {}", argv[0], io_reason(&e))
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
    if let Some(sent) = pushed {
        if let Some(why) = push_problem(&gathered, sent, launcher_code, &status.stderr_tail) {
            status.state = NodeState::LaunchFailed;
            status.exit_code = launcher_code;
            status.message = format!("{why} (node {node})");
            return status;
        }
        status.pushed_sha256 = Some(sent.to_string());
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

/// With `--push`: why the node did not run the copy sent (`None`: it checked it and ran it,
/// or it never started for a reason the general checks say).
fn push_problem(
    g: &Gathered,
    sent: &str,
    launcher_code: Option<i32>,
    stderr: &str,
) -> Option<String> {
    if g.hello {
        return match &g.pushed {
            Some(h) if h == sent => None,
            Some(h) => Some(format!(
                "the agent checked a pushed copy with SHA-256 {h}, not {sent} as sent"
            )),
            None => Some(
                "the agent did not say it checked the pushed copy: the node ran another numalab (an older one at the same path?)".into(),
            ),
        };
    }
    if launcher_code == Some(crate::agent::EXIT_PUSH_MISMATCH) {
        let said = stderr
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("numalab fleet node: "))
            .unwrap_or("the pushed copy of numalab is not the file sent");
        return Some(said.chars().take(400).collect());
    }
    None
}

/// The last meaningful stderr line (not the agent's own summary line).
pub(super) fn last_line(tail: &str) -> String {
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

pub(super) fn not_there(numalab: &Path, node: &str) -> String {
    format!(
        "numalab is not at {} on node {node}: install it at the same path on every node",
        numalab.display()
    )
}

/// Whether a launcher's stderr says the numalab binary was not found.
pub(super) fn stderr_says_missing(stderr: &str, numalab: &Path) -> bool {
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
