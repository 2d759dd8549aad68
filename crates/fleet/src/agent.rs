//! The node side, `numalab fleet node`: runs the command into a node-local folder with
//! a time limit and sends the bundle back on stdout in frames ([`crate::frame`]).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::FleetError;
use crate::frame::{self, AgentState, AgentStatus};
use crate::nodes::validate_node_name;
use numalab_proc::group::{kill_group, own_group, signal_group, wait_until};

pub use crate::frame::BUNDLE_FILES;

/// Environment variable the agent sets for the command: the node name it runs for.
pub const NODE_ENV: &str = "NUMALAB_FLEET_NODE";

/// Exit code of the agent when the command timed out (as `timeout(1)`).
pub const EXIT_TIMEOUT: i32 = 124;

/// Exit code of the agent when numalab could not be started on the node.
pub const EXIT_NOT_FOUND: i32 = 127;

/// Exit code of the agent when the pushed copy of numalab (`fleet run --push`) is not
/// the file that was sent: its SHA-256 differs, or it cannot be read.
pub const EXIT_PUSH_MISMATCH: i32 = 125;

/// Grace between SIGTERM and SIGKILL when the agent stops the command.
const KILL_GRACE: Duration = Duration::from_secs(3);

/// Default per-node `--timeout`: what a node's command may take when the launcher gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2 * 3600);

/// What `numalab fleet node` does; built by `fleet run` as arguments
/// ([`AgentOptions::to_args`]) and read back on the node ([`AgentOptions::from_args`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentOptions {
    /// The node name the launcher was asked for (`--node`); names the shared subfolder
    /// and is given to the command as `NUMALAB_FLEET_NODE`.
    pub node: String,
    /// The numalab binary to run the command with (the running numalab, normally).
    pub numalab: PathBuf,
    /// numalab's version, announced in the hello line.
    pub version: String,
    /// The numalab command and its arguments (`evaluate --quick`); `--out` is added.
    pub command: Vec<String>,
    /// Time limit of the command; its process group is killed after it.
    pub timeout: Duration,
    /// Write the bundle to `SHARED/<node>/` instead of sending it on stdout.
    pub shared: Option<PathBuf>,
    /// `fleet run --push`: `numalab` is a copy the launcher broadcast to the node; the
    /// agent runs nothing unless its SHA-256 is this one, and removes the copy when done.
    pub pushed_sha256: Option<String>,
}

/// The path of the running binary: the numalab that `fleet run` launches on the nodes
/// and that `fleet node` starts the command with.
pub fn this_numalab() -> Result<PathBuf, FleetError> {
    std::env::current_exe().map_err(|e| FleetError::NoBinary(numalab_schema::text::io_reason(&e)))
}

impl AgentOptions {
    /// The arguments after `numalab fleet node`:
    /// `--node NAME --timeout DUR [--shared DIR] -- COMMAND...`.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            "--node".to_string(),
            self.node.clone(),
            "--timeout".to_string(),
            format_duration(self.timeout),
        ];
        if let Some(s) = &self.shared {
            a.push("--shared".into());
            a.push(s.display().to_string());
        }
        if let Some(h) = &self.pushed_sha256 {
            a.push("--pushed-sha256".into());
            a.push(h.clone());
        }
        a.push("--".into());
        a.extend(self.command.iter().cloned());
        a
    }

    /// Reads the arguments written by [`AgentOptions::to_args`] (the CLI passes everything
    /// after `fleet node`). `--numalab PATH` overrides `numalab` (a test agent uses it).
    pub fn from_args(args: &[String], numalab: PathBuf, version: &str) -> Result<Self, FleetError> {
        let mut o = AgentOptions {
            node: String::new(),
            numalab,
            version: version.to_string(),
            command: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            shared: None,
            pushed_sha256: None,
        };
        let mut it = args.iter();
        let mut node = None;
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| FleetError::AgentArgs(format!("{name} needs a value")))
            };
            match a.as_str() {
                "--node" => node = Some(value("--node")?),
                "--timeout" => {
                    let v = value("--timeout")?;
                    o.timeout = numalab_schema::units::parse_duration(&v)
                        .map_err(|e| FleetError::AgentArgs(format!("--timeout {e}")))?;
                }
                "--shared" => o.shared = Some(PathBuf::from(value("--shared")?)),
                "--numalab" => o.numalab = PathBuf::from(value("--numalab")?),
                "--pushed-sha256" => {
                    let v = value("--pushed-sha256")?;
                    if v.len() != 64 || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(FleetError::AgentArgs(format!(
                            "--pushed-sha256 {v:?}: give the 64 hexadecimal digits of a SHA-256"
                        )));
                    }
                    o.pushed_sha256 = Some(v.to_ascii_lowercase());
                }
                "--" => {
                    o.command = it.by_ref().cloned().collect();
                    break;
                }
                other => {
                    return Err(FleetError::AgentArgs(format!("unknown argument {other:?}")));
                }
            }
        }
        o.node = node.ok_or_else(|| FleetError::AgentArgs("--node NAME is missing".into()))?;
        o.check()?;
        Ok(o)
    }

    fn check(&self) -> Result<(), FleetError> {
        validate_node_name(&self.node)?;
        check_command(&self.command)
    }
}

/// A duration as `fleet node --timeout` reads it (`7200s`, `1500ms`).
pub(crate) fn format_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The command must be non-empty and leave `--out` to the fleet.
pub(crate) fn check_command(command: &[String]) -> Result<(), FleetError> {
    if command.is_empty() {
        return Err(FleetError::Options(
            "the command to run on the nodes is empty; give one after `--` (default: evaluate --quick)".into(),
        ));
    }
    if command
        .iter()
        .any(|a| a == "--out" || a.starts_with("--out="))
    {
        return Err(FleetError::Options(format!(
            "the fleet command `{}` has --out: the fleet chooses each node's output folder itself; remove --out",
            command.join(" ")
        )));
    }
    Ok(())
}

/// Runs the agent as `numalab fleet node` does: stdout carries the frames, the command's
/// own stdout goes to stderr, SIGTERM/SIGINT/SIGHUP stop the command (its whole process
/// group) and still send what it wrote. Returns the exit code for the agent: 0 when the
/// command succeeded, its exit code when it failed, 124 on timeout, 127 when numalab
/// cannot be started.
pub fn run_agent(opts: &AgentOptions) -> Result<i32, FleetError> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .map_err(|e| FleetError::io("/", "installing the agent's signal handlers", e))?;
    }
    use std::os::fd::AsFd;
    let child_stdout = io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map(Stdio::from)
        .map_err(|e| {
            FleetError::io(
                "/dev/stderr",
                "duplicating stderr for the command's output",
                e,
            )
        })?;
    let stdout = io::stdout();
    let mut out = stdout.lock();
    run_agent_with(opts, &mut out, child_stdout, Stdio::inherit(), &stop)
}

/// [`run_agent`] with the frames written to `out`, the command's stdout and stderr sent
/// where given, and `stop` polled (set it to stop the command early).
pub fn run_agent_with(
    opts: &AgentOptions,
    out: &mut dyn Write,
    child_stdout: Stdio,
    child_stderr: Stdio,
    stop: &AtomicBool,
) -> Result<i32, FleetError> {
    opts.check()?;
    let werr = |e: io::Error| FleetError::io("/dev/stdout", "writing the fleet frames", e);
    let hello = match &opts.pushed_sha256 {
        None => frame::hello_line(&opts.node, &opts.version),
        Some(sent) => {
            if let Err(why) = check_pushed(&opts.numalab, sent) {
                // No hello line: `fleet run` records the node as not launched, with this.
                eprintln!("numalab fleet node: {why} on node {}", opts.node);
                return Ok(EXIT_PUSH_MISMATCH);
            }
            frame::hello_line_pushed(&opts.node, &opts.version, sent)
        }
    };
    // The pushed copy is the launcher's temporary file: removed when the agent ends,
    // whatever the outcome (the running command keeps its own open image).
    let _pushed = opts
        .pushed_sha256
        .as_ref()
        .map(|_| RemoveOnDrop(opts.numalab.clone()));
    writeln!(out, "{hello}").map_err(werr)?;
    out.flush().map_err(werr)?;

    let tmp = tempfile::Builder::new()
        .prefix("numalab-fleet-")
        .tempdir()
        .map_err(|e| {
            FleetError::io(
                std::env::temp_dir(),
                "creating the node-local output folder",
                e,
            )
        })?;
    let bundle = tmp.path().join("bundle");
    std::fs::create_dir(&bundle)
        .map_err(|e| FleetError::io(&bundle, "creating the output folder", e))?;

    let mut cmd = Command::new(&opts.numalab);
    cmd.args(&opts.command)
        .arg("--out")
        .arg(&bundle)
        .env(NODE_ENV, &opts.node)
        .stdin(Stdio::null())
        .stdout(child_stdout)
        .stderr(child_stderr);
    own_group(&mut cmd);
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "numalab fleet node: numalab is not at {} on node {} ({}): install it at the same path on every node",
                numalab_schema::text::path_text(&opts.numalab),
                numalab_schema::text::message(&opts.node),
                numalab_schema::text::io_reason(&e)
            );
            let st = AgentStatus {
                state: AgentState::Failed,
                exit_code: Some(EXIT_NOT_FOUND),
                signal: None,
                duration_ms: 0,
            };
            writeln!(out, "{}", frame::status_line(&st)).map_err(werr)?;
            out.flush().map_err(werr)?;
            return Ok(EXIT_NOT_FOUND);
        }
    };
    let pgid = child.id();
    let deadline = started + opts.timeout;
    let waited = wait_until(&mut child, deadline, Some(stop));
    let (status, ended) = match waited {
        Ok(Some(st)) => (st, None),
        Ok(None) => {
            let why = if Instant::now() >= deadline {
                AgentState::Timeout
            } else {
                AgentState::Killed
            };
            let st = kill_group(&mut child, KILL_GRACE)
                .map_err(|e| FleetError::io(&opts.numalab, "stopping the command", e))?;
            (st, Some(why))
        }
        Err(e) => return Err(FleetError::io(&opts.numalab, "waiting for the command", e)),
    };
    // Whatever the command left running in its group goes with it.
    signal_group(pgid, libc::SIGKILL);
    let duration_ms = started.elapsed().as_millis() as u64;
    use std::os::unix::process::ExitStatusExt;
    let exit_code = status.code();
    let signal = status.signal();
    let mut state = match ended {
        Some(s) => s,
        None if status.success() => AgentState::Done,
        None => AgentState::Failed,
    };
    if let Some(s) = ended {
        eprintln!(
            "numalab fleet node: {} on node {}: {} after {}; its process group was killed",
            opts.command.join(" "),
            opts.node,
            if s == AgentState::Timeout {
                "no result"
            } else {
                "stopped"
            },
            humantime::format_duration(Duration::from_millis(duration_ms)),
        );
    } else if state == AgentState::Failed {
        eprintln!(
            "numalab fleet node: `numalab {}` on node {} failed ({status})",
            opts.command.join(" "),
            opts.node
        );
    }

    let mut sent_results = false;
    for name in BUNDLE_FILES {
        let path = bundle.join(name);
        if !path.is_file() {
            continue;
        }
        let ok = match &opts.shared {
            Some(dir) => copy_to_shared(&path, &dir.join(&opts.node), name, out)?,
            None => send_file(&path, name, out)?,
        };
        if name == BUNDLE_FILES[0] {
            sent_results = ok;
        }
    }
    if state == AgentState::Done && !sent_results {
        eprintln!(
            "numalab fleet node: `numalab {}` exited 0 on node {} but wrote no {} in --out",
            opts.command.join(" "),
            opts.node,
            BUNDLE_FILES[0]
        );
        state = AgentState::Failed;
    }
    let st = AgentStatus {
        state,
        exit_code,
        signal,
        duration_ms,
    };
    writeln!(out, "{}", frame::status_line(&st)).map_err(werr)?;
    out.flush().map_err(werr)?;
    Ok(match state {
        AgentState::Done => 0,
        AgentState::Timeout => EXIT_TIMEOUT,
        AgentState::Killed => 128 + libc::SIGTERM,
        AgentState::Failed => match exit_code {
            Some(0) | None => 1,
            Some(c) => c,
        },
    })
}

/// The name srun gives the copy it broadcasts into a folder (`--bcast=DIR/`):
/// `slurm_bcast_<job>.<step>_<node>`.
pub const BCAST_PREFIX: &str = "slurm_bcast_";

/// Checks that `numalab` is the file `fleet run --push` sent: a copy srun broadcast (its
/// name says so; the agent removes it later, never an installed numalab) whose SHA-256 is
/// `sent`.
fn check_pushed(numalab: &Path, sent: &str) -> Result<(), String> {
    let name = numalab.file_name().map(|n| n.to_string_lossy());
    if !name.is_some_and(|n| n.starts_with(BCAST_PREFIX)) {
        return Err(format!(
            "{} is not a copy srun broadcast (--bcast names it {BCAST_PREFIX}...): this Slurm did not push the binary; nothing was run",
            numalab.display()
        ));
    }
    let file = std::fs::File::open(numalab).map_err(|e| {
        format!(
            "the pushed copy of numalab {} cannot be read ({}): the broadcast did not arrive; rerun",
            numalab.display(),
            numalab_schema::text::io_reason(&e)
        )
    })?;
    let (_, got) = frame::hash_reader(io::BufReader::new(file)).map_err(|e| {
        format!(
            "the pushed copy of numalab {} cannot be read ({})",
            numalab.display(),
            numalab_schema::text::io_reason(&e)
        )
    })?;
    if got != sent {
        return Err(format!(
            "the pushed copy of numalab {} has SHA-256 {got}, not {sent} as sent: the broadcast was damaged or replaced; nothing was run",
            numalab.display()
        ));
    }
    Ok(())
}

/// Removes a file when dropped (the pushed copy, once the agent is done with it).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Sends one file as a frame; `false` (and a note on stderr) if it cannot be read.
fn send_file(path: &Path, name: &str, out: &mut dyn Write) -> Result<bool, FleetError> {
    let open = || std::fs::File::open(path);
    let hashed = open().and_then(|f| frame::hash_reader(io::BufReader::new(f)));
    let (bytes, sha) = match hashed {
        Ok(h) => h,
        Err(e) => {
            eprintln!(
                "numalab fleet node: cannot read {}: {}",
                numalab_schema::text::path_text(path),
                numalab_schema::text::io_reason(&e)
            );
            return Ok(false);
        }
    };
    let f = open().map_err(|e| FleetError::io(path, "reading the bundle", e))?;
    frame::write_file_frame(out, name, bytes, &sha, io::BufReader::new(f))
        .map_err(|e| FleetError::io("/dev/stdout", "writing the fleet frames", e))?;
    Ok(true)
}

/// Copies one file into the shared folder atomically and announces it.
fn copy_to_shared(
    path: &Path,
    dir: &Path,
    name: &str,
    out: &mut dyn Write,
) -> Result<bool, FleetError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| FleetError::io(dir, "creating the node's shared folder", e))?;
    let data = std::fs::read(path).map_err(|e| FleetError::io(path, "reading the bundle", e))?;
    crate::store::write_atomic(&dir.join(name), &data)?;
    let (bytes, sha) =
        frame::hash_reader(&data[..]).map_err(|e| FleetError::io(path, "hashing", e))?;
    writeln!(out, "{}", frame::shared_line(name, bytes, &sha))
        .map_err(|e| FleetError::io("/dev/stdout", "writing the fleet frames", e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Event, FrameDecoder};

    #[test]
    fn this_numalab_is_the_running_binary() {
        let exe = this_numalab().unwrap();
        assert!(exe.is_file(), "{}", exe.display());
        assert_eq!(exe, std::env::current_exe().unwrap());
    }
    use std::os::unix::fs::PermissionsExt;

    /// A fake numalab: `$1` says what to do; `--out DIR` is the last argument.
    pub(crate) fn fake_numalab(dir: &Path) -> PathBuf {
        let p = dir.join("fake-numalab");
        std::fs::write(
            &p,
            r#"#!/bin/sh
mode=$1
for a in "$@"; do out=$a; done
case "$mode" in
ok)
  echo "fake numalab on $NUMALAB_FLEET_NODE: measuring"
  printf '{"kind":"run","node":"%s"}\n' "$NUMALAB_FLEET_NODE" > "$out/results.jsonl"
  echo '{"steps":[]}' > "$out/summary.json"
  ;;
fail)
  echo "partial" > "$out/results.jsonl"
  echo "bandwidth step exploded" >&2
  exit 3
  ;;
noresults)
  ;;
hang)
  sleep 1000 &
  echo $! > "$2"
  wait
  ;;
esac
"#,
        )
        .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A child forked by another test thread while the script was open for writing
        // holds that descriptor until it execs, and executing the script meanwhile fails
        // with ETXTBSY. No new holder can appear once the file is closed, so one
        // successful run (no arguments: the script does nothing) makes it safe.
        for _ in 0..200 {
            match std::process::Command::new(&p).status() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                r => {
                    assert!(r.unwrap().success());
                    return p;
                }
            }
        }
        panic!("{} stayed busy (ETXTBSY) for a second", p.display());
    }

    fn opts(numalab: PathBuf, command: &[&str]) -> AgentOptions {
        AgentOptions {
            node: "n1".into(),
            numalab,
            version: "0.0.test".into(),
            command: command.iter().map(|s| s.to_string()).collect(),
            timeout: Duration::from_secs(30),
            shared: None,
            pushed_sha256: None,
        }
    }

    type Files = Vec<(String, Vec<u8>)>;

    fn run(o: &AgentOptions) -> (i32, Files, Vec<Event>) {
        let mut out = Vec::new();
        let stop = AtomicBool::new(false);
        let code = run_agent_with(o, &mut out, Stdio::null(), Stdio::null(), &stop).unwrap();
        let mut d = FrameDecoder::new();
        let mut files = Vec::new();
        let mut cur = Vec::new();
        let mut events = Vec::new();
        for l in String::from_utf8(out).unwrap().lines() {
            match d.push_line(l).unwrap() {
                Event::Begin { .. } => cur.clear(),
                Event::Chunk(c) => cur.extend(c),
                Event::FileDone { name, .. } => files.push((name, std::mem::take(&mut cur))),
                e => events.push(e),
            }
        }
        d.finish().unwrap();
        (code, files, events)
    }

    fn status(events: &[Event]) -> AgentStatus {
        match events.last() {
            Some(Event::Status(s)) => s.clone(),
            other => panic!("no status last: {other:?}"),
        }
    }

    #[test]
    fn args_round_trip() {
        let mut o = opts("/opt/numalab".into(), &["evaluate", "--quick"]);
        o.shared = Some("/shared/fleet".into());
        o.timeout = Duration::from_millis(1500);
        let back =
            AgentOptions::from_args(&o.to_args(), "/opt/numalab".into(), "0.0.test").unwrap();
        assert_eq!(back, o);
        let e = AgentOptions::from_args(&["--node".into(), "../x".into()], "/x".into(), "v");
        assert!(e.is_err());
        let e = AgentOptions::from_args(
            &["--node", "n1", "--", "evaluate", "--out", "x"].map(String::from),
            "/x".into(),
            "v",
        )
        .unwrap_err();
        assert!(e.to_string().contains("remove --out"), "{e}");
        let e = AgentOptions::from_args(&["--bogus".into()], "/x".into(), "v").unwrap_err();
        assert!(e.to_string().contains("same numalab version"), "{e}");
        // A timeout no deadline holds is refused, not a panic when the deadline is formed.
        for t in ["500000000000y", "18446744073709551615s", "366days"] {
            let e = AgentOptions::from_args(
                &["--node", "n1", "--timeout", t, "--", "topo"].map(String::from),
                "/x".into(),
                "v",
            )
            .unwrap_err();
            assert!(e.to_string().contains("longer than 365 days"), "{e}");
        }
    }

    /// `--push`: the agent runs the copy only when its SHA-256 is the one sent, says so
    /// in its hello line, and removes the copy when done; a damaged copy runs nothing.
    #[test]
    fn a_pushed_copy_runs_only_when_its_hash_is_the_one_sent() {
        let dir = tempfile::tempdir().unwrap();
        let original = fake_numalab(dir.path());
        let copy = dir.path().join("slurm_bcast_7.0_n1");
        std::fs::copy(&original, &copy).unwrap();
        // As in fake_numalab: wait until no forked child holds the copy open for writing.
        for _ in 0..200 {
            match std::process::Command::new(&copy).status() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                r => {
                    assert!(r.unwrap().success());
                    break;
                }
            }
        }
        let file = std::fs::File::open(&original).unwrap();
        let (_, sent) = frame::hash_reader(file).unwrap();
        let mut o = opts(copy.clone(), &["ok"]);
        o.pushed_sha256 = Some(sent.clone());
        let back = AgentOptions::from_args(&o.to_args(), copy.clone(), "0.0.test").unwrap();
        assert_eq!(back, o);
        let (code, files, events) = run(&o);
        assert_eq!(code, 0, "{events:?}");
        assert!(
            matches!(&events[0], Event::Hello { pushed: Some(h), .. } if *h == sent),
            "{events:?}"
        );
        assert_eq!(files.len(), 2);
        assert!(
            !copy.exists(),
            "the pushed copy is removed when the agent ends"
        );

        // A copy that is not the file sent: no hello, nothing run, the copy left alone.
        let other = dir.path().join("slurm_bcast_8.0_n1");
        std::fs::write(&other, b"#!/bin/sh\nexit 0\n").unwrap();
        let mut o = opts(other.clone(), &["ok"]);
        o.pushed_sha256 = Some(sent.clone());
        let (code, files, events) = run(&o);
        assert_eq!(code, EXIT_PUSH_MISMATCH);
        assert!(events.is_empty() && files.is_empty(), "{events:?}");
        assert!(other.exists());
        // The installed numalab itself (a Slurm that ignored --bcast ran the original):
        // refused, and never removed.
        let mut o = opts(original.clone(), &["ok"]);
        o.pushed_sha256 = Some(sent.clone());
        let (code, _, events) = run(&o);
        assert_eq!(code, EXIT_PUSH_MISMATCH);
        assert!(events.is_empty(), "{events:?}");
        assert!(original.exists());
        let e = AgentOptions::from_args(
            &["--node", "n1", "--pushed-sha256", "abc", "--", "topo"].map(String::from),
            "/x".into(),
            "v",
        )
        .unwrap_err();
        assert!(e.to_string().contains("64 hexadecimal digits"), "{e}");
    }

    #[test]
    fn done_sends_the_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let o = opts(fake_numalab(dir.path()), &["ok"]);
        let (code, files, events) = run(&o);
        assert_eq!(code, 0);
        assert!(matches!(&events[0], Event::Hello { node, .. } if node == "n1"));
        assert_eq!(status(&events).state, AgentState::Done);
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].0, "results.jsonl");
        assert_eq!(files[0].1, b"{\"kind\":\"run\",\"node\":\"n1\"}\n");
        assert_eq!(files[1].0, "summary.json");
    }

    #[test]
    fn failure_keeps_partial_results() {
        let dir = tempfile::tempdir().unwrap();
        let (code, files, events) = run(&opts(fake_numalab(dir.path()), &["fail"]));
        assert_eq!(code, 3);
        let st = status(&events);
        assert_eq!((st.state, st.exit_code), (AgentState::Failed, Some(3)));
        assert_eq!(
            files,
            vec![("results.jsonl".to_string(), b"partial\n".to_vec())]
        );

        let (code, files, events) = run(&opts(fake_numalab(dir.path()), &["noresults"]));
        assert_eq!(code, 1);
        assert_eq!(status(&events).state, AgentState::Failed);
        assert!(files.is_empty());

        let (code, _, events) = run(&opts(dir.path().join("missing"), &["ok"]));
        assert_eq!(code, EXIT_NOT_FOUND);
        assert_eq!(status(&events).exit_code, Some(EXIT_NOT_FOUND));
    }

    #[test]
    fn timeout_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild.pid");
        let mut o = opts(
            fake_numalab(dir.path()),
            &["hang", pidfile.to_str().unwrap()],
        );
        o.timeout = Duration::from_millis(800);
        let t0 = Instant::now();
        let (code, files, events) = run(&o);
        assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
        assert_eq!(code, EXIT_TIMEOUT);
        assert_eq!(status(&events).state, AgentState::Timeout);
        assert!(files.is_empty());
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            crate::process_gone(pid, Duration::from_secs(5)),
            "grandchild {pid} survived"
        );
    }

    #[test]
    fn shared_folder_instead_of_stdout() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        let mut o = opts(fake_numalab(dir.path()), &["ok"]);
        o.shared = Some(shared.clone());
        let (code, files, events) = run(&o);
        assert_eq!(code, 0);
        assert!(files.is_empty());
        let n = events
            .iter()
            .filter(|e| matches!(e, Event::Shared { .. }))
            .count();
        assert_eq!(n, 2);
        assert!(std::fs::read_to_string(shared.join("n1/results.jsonl"))
            .unwrap()
            .contains("\"n1\""));
    }
}
