//! The fleet folder: `fleet.json`, `nodes/<node>/{results.jsonl,summary.json,status.json}`,
//! every file written atomically (temp file in the same folder, then rename), so a
//! `fleet run` killed at any moment leaves only whole files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::FleetError;
use crate::frame::hash_reader;

/// Version of `fleet.json` and `status.json` this numalab writes and reads.
pub const FLEET_SCHEMA_VERSION: u32 = 1;

/// Writes `data` to `path` atomically: a temp file in the same folder, synced, renamed
/// ([`numalab_schema::output::replace`]: a new file gets the umask's mode, as a plain
/// create would, an existing one keeps its own).
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<(), FleetError> {
    numalab_schema::output::replace(path, data).map_err(|e| FleetError::io(path, "writing", e))
}

/// `fleet.json`: what this fleet folder is a run of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FLEET_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The numalab command run on every node (without `--out`).
    pub command: Vec<String>,
    /// The launcher.
    pub launcher: crate::launcher::LauncherKind,
    /// Extra launcher arguments, secrets redacted.
    pub launcher_args: Vec<String>,
    /// The nodes, in order.
    pub nodes: Vec<String>,
    /// The numalab binary started on every node (the same path everywhere).
    pub numalab: PathBuf,
    /// numalab's version.
    pub numalab_version: String,
    /// When this fleet folder was first used (RFC 3339, UTC).
    pub created: String,
    /// When the latest `fleet run` on it started.
    pub started: String,
    /// Per-node time limit, seconds.
    pub timeout_s: f64,
    /// `--shared` folder, when the bundles go through it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<PathBuf>,
}

/// How a node ended, in `status.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeState {
    /// The command succeeded and its bundle was gathered and verified.
    Done,
    /// The command failed, or its bundle did not arrive intact.
    Failed,
    /// The node ran past `--timeout`; the launcher's (or the command's) process group was killed.
    Timeout,
    /// The launcher could not start the agent (numalab missing on the node, launcher error).
    LaunchFailed,
}

impl NodeState {
    /// The word used in files and summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Done => "done",
            NodeState::Failed => "failed",
            NodeState::Timeout => "timeout",
            NodeState::LaunchFailed => "launch-failed",
        }
    }
}

/// A bundle file gathered from a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatheredFile {
    /// File name in the node folder.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256, lower-case hex, as announced by the node and verified here.
    pub sha256: String,
}

/// `nodes/<node>/status.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// [`FLEET_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The node.
    pub node: String,
    /// How it ended.
    pub state: NodeState,
    /// Exit code of the numalab command (from the agent), else of the launcher.
    pub exit_code: Option<i32>,
    /// Seconds from launch to the end.
    pub duration_s: f64,
    /// Launch time (RFC 3339, UTC).
    pub started: String,
    /// What happened, in words, with the remedy when there is one.
    pub message: String,
    /// The last 64 KiB of the node's stderr (launcher, agent and the command's output).
    pub stderr_tail: String,
    /// The launcher command line, secrets redacted.
    pub launcher_command: Vec<String>,
    /// The bundle files gathered and verified in this attempt.
    pub files: Vec<GatheredFile>,
    /// 1 for the first run of this node in this fleet folder, then 2, 3...
    pub attempt: u32,
    /// `fleet run --push`: the SHA-256 of the numalab the node ran, a copy the launcher
    /// broadcast there and the agent checked against the file sent before running it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed_sha256: Option<String>,
}

/// The manifest path.
pub fn manifest_path(fleet: &Path) -> PathBuf {
    fleet.join("fleet.json")
}

/// A node's folder.
pub fn node_dir(fleet: &Path, node: &str) -> PathBuf {
    fleet.join("nodes").join(node)
}

/// Reads `fleet.json`; `Ok(None)` if there is none.
pub fn read_manifest(fleet: &Path) -> Result<Option<Manifest>, FleetError> {
    let path = manifest_path(fleet);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(FleetError::io(&path, "reading the fleet manifest", e)),
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| FleetError::Manifest {
        path: path.clone(),
        problem: format!("not a fleet manifest ({e}); give another --fleet folder"),
    })?;
    let version = v
        .get("schema_version")
        .and_then(|x| x.as_u64())
        .unwrap_or(0);
    if version > u64::from(FLEET_SCHEMA_VERSION) {
        return Err(FleetError::Manifest {
            path,
            problem: format!(
                "written by a newer numalab (fleet schema {version}; this one reads up to {FLEET_SCHEMA_VERSION}); upgrade numalab or give another --fleet folder"
            ),
        });
    }
    serde_json::from_value(v)
        .map(Some)
        .map_err(|e| FleetError::Manifest {
            path,
            problem: format!("not a fleet manifest ({e}); give another --fleet folder"),
        })
}

/// Writes `fleet.json` atomically.
pub fn write_manifest(fleet: &Path, m: &Manifest) -> Result<(), FleetError> {
    let text = serde_json::to_string_pretty(m).expect("manifest serializes");
    write_atomic(&manifest_path(fleet), format!("{text}\n").as_bytes())
}

/// Reads a node's `status.json`; `None` when missing or unreadable (the node reruns).
pub fn read_status(fleet: &Path, node: &str) -> Option<NodeStatus> {
    let text = std::fs::read_to_string(node_dir(fleet, node).join("status.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes a node's `status.json` atomically.
pub fn write_status(fleet: &Path, st: &NodeStatus) -> Result<(), FleetError> {
    let dir = node_dir(fleet, &st.node);
    std::fs::create_dir_all(&dir)
        .map_err(|e| FleetError::io(&dir, "creating the node folder", e))?;
    let text = serde_json::to_string_pretty(st).expect("status serializes");
    write_atomic(&dir.join("status.json"), format!("{text}\n").as_bytes())
}

/// Whether the files listed in `st` are on disk with their size and SHA-256.
pub fn files_verified(fleet: &Path, st: &NodeStatus) -> bool {
    let dir = node_dir(fleet, &st.node);
    st.files.iter().all(|f| {
        std::fs::File::open(dir.join(&f.name))
            .and_then(|file| hash_reader(std::io::BufReader::new(file)))
            .is_ok_and(|(n, sha)| n == f.bytes && sha == f.sha256)
    })
}

/// Whether a rerun can skip the node: its status is `done`, lists `results.jsonl`, and
/// every listed file is intact.
pub fn can_skip(fleet: &Path, node: &str) -> Option<NodeStatus> {
    let st = read_status(fleet, node)?;
    let ok = st.state == NodeState::Done
        && st.node == node
        && st
            .files
            .iter()
            .any(|f| f.name == crate::frame::BUNDLE_FILES[0])
        && files_verified(fleet, &st);
    ok.then_some(st)
}

/// The current time as RFC 3339 (UTC, seconds).
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(node: &str, state: NodeState, files: Vec<GatheredFile>) -> NodeStatus {
        NodeStatus {
            schema_version: FLEET_SCHEMA_VERSION,
            node: node.into(),
            state,
            exit_code: Some(0),
            duration_s: 1.0,
            started: now_rfc3339(),
            message: String::new(),
            stderr_tail: String::new(),
            launcher_command: vec![],
            files,
            attempt: 1,
            pushed_sha256: None,
        }
    }

    fn gathered(fleet: &Path, node: &str, name: &str, data: &[u8]) -> GatheredFile {
        let dir = node_dir(fleet, node);
        std::fs::create_dir_all(&dir).unwrap();
        write_atomic(&dir.join(name), data).unwrap();
        let (bytes, sha256) = hash_reader(data).unwrap();
        GatheredFile {
            name: name.into(),
            bytes,
            sha256,
        }
    }

    #[test]
    fn resume_skips_only_verified_done_nodes() {
        let d = tempfile::tempdir().unwrap();
        let fleet = d.path();
        // n1: done and intact -> skipped.
        let f = gathered(fleet, "n1", "results.jsonl", b"{}\n");
        write_status(fleet, &status("n1", NodeState::Done, vec![f])).unwrap();
        assert!(can_skip(fleet, "n1").is_some());
        // n2: done, but the file was altered since -> rerun.
        let f = gathered(fleet, "n2", "results.jsonl", b"{}\n");
        write_status(fleet, &status("n2", NodeState::Done, vec![f])).unwrap();
        std::fs::write(node_dir(fleet, "n2").join("results.jsonl"), b"{\"x\":1}\n").unwrap();
        assert!(can_skip(fleet, "n2").is_none());
        // n3: failed -> rerun; n4: timeout -> rerun; n5: no status -> run.
        let f = gathered(fleet, "n3", "results.jsonl", b"{}\n");
        write_status(fleet, &status("n3", NodeState::Failed, vec![f])).unwrap();
        write_status(fleet, &status("n4", NodeState::Timeout, vec![])).unwrap();
        assert!(can_skip(fleet, "n3").is_none());
        assert!(can_skip(fleet, "n4").is_none());
        assert!(can_skip(fleet, "n5").is_none());
        // n6: done but without results.jsonl -> rerun.
        write_status(fleet, &status("n6", NodeState::Done, vec![])).unwrap();
        assert!(can_skip(fleet, "n6").is_none());
        // n7: a status file that is not JSON -> rerun.
        std::fs::create_dir_all(node_dir(fleet, "n7")).unwrap();
        std::fs::write(node_dir(fleet, "n7").join("status.json"), b"{trunc").unwrap();
        assert!(can_skip(fleet, "n7").is_none());
        // n8: a results file that was deleted -> rerun.
        let f = gathered(fleet, "n8", "results.jsonl", b"{}\n");
        write_status(fleet, &status("n8", NodeState::Done, vec![f])).unwrap();
        std::fs::remove_file(node_dir(fleet, "n8").join("results.jsonl")).unwrap();
        assert!(can_skip(fleet, "n8").is_none());
    }

    #[test]
    fn manifests() {
        let d = tempfile::tempdir().unwrap();
        assert!(read_manifest(d.path()).unwrap().is_none());
        let m = Manifest {
            schema_version: FLEET_SCHEMA_VERSION,
            command: vec!["evaluate".into(), "--quick".into()],
            launcher: crate::launcher::LauncherKind::Slurm,
            launcher_args: vec![],
            nodes: vec!["n1".into()],
            numalab: "/opt/numalab".into(),
            numalab_version: "0.1.0".into(),
            created: now_rfc3339(),
            started: now_rfc3339(),
            timeout_s: 7200.0,
            shared: None,
        };
        write_manifest(d.path(), &m).unwrap();
        assert_eq!(read_manifest(d.path()).unwrap().unwrap(), m);
        std::fs::write(manifest_path(d.path()), br#"{"schema_version": 99}"#).unwrap();
        let e = read_manifest(d.path()).unwrap_err().to_string();
        assert!(e.contains("newer numalab"), "{e}");
        std::fs::write(manifest_path(d.path()), b"[]").unwrap();
        let e = read_manifest(d.path()).unwrap_err().to_string();
        assert!(e.contains("another --fleet folder"), "{e}");
        // No temp files left behind.
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
            .collect();
        assert!(left.is_empty());
    }
}
