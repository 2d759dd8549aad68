//! Reading a fleet folder: `FLEET/nodes/<node>/results.jsonl` and
//! `FLEET/nodes/<node>/status.json`, one folder per node, as `numalab fleet run` writes
//! them. A node whose bundle or status cannot be read keeps its problem beside its
//! name; only a fleet folder that cannot be listed at all is an error.

use crate::fingerprint::{firmware_of, Fingerprint};
use crate::load::{load, Loaded};
use crate::metrics::{metrics, Metric};
use numalab_records::memconfig::MemConfig;
use numalab_schema::input;
use numalab_schema::text::{excerpt, os_text, path_text};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Largest `status.json` read (bytes; `NUMALAB_MAX_INPUT` replaces it).
pub const MAX_STATUS_BYTES: u64 = 1 << 20;
/// Longest stderr tail kept per node (characters; the end is kept).
pub const MAX_STDERR_CHARS: usize = 4000;
/// Longest status message kept per node (characters).
pub const MAX_MESSAGE_CHARS: usize = 2000;
/// Longest node name shown (characters; longer names are cut with "...").
pub const MAX_NAME_CHARS: usize = 200;

/// A node's `status.json`, read leniently: every field optional, unknown fields
/// ignored, so that the runner can add fields without breaking the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// `done`, `failed`, `timeout` or `launch-failed` (anything else is shown as it is).
    #[serde(default)]
    pub state: Option<String>,
    /// Exit code of `numalab` on the node (None: not known, e.g. never started).
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// Wall time of the node's run, seconds.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// The last lines of the node's standard error.
    #[serde(default)]
    pub stderr_tail: Option<String>,
    /// What the runner has to say (why the launch failed...).
    #[serde(default)]
    pub message: Option<String>,
}

impl NodeStatus {
    /// Whether the node's run completed (`done`).
    pub fn is_done(&self) -> bool {
        self.state.as_deref() == Some("done")
    }
}

/// One node of a fleet folder.
#[derive(Debug, Clone)]
pub struct FleetNode {
    /// The node's folder name (lossless for non-UTF-8 names, cut to
    /// [`MAX_NAME_CHARS`]).
    pub name: String,
    /// Its folder.
    pub path: PathBuf,
    /// Its `status.json` (None: absent or unreadable, see `problems`).
    pub status: Option<NodeStatus>,
    /// What the report needs of its bundle (None: absent or unreadable, see
    /// `problems`). The bundle itself is dropped once read, so a fleet of thousands of
    /// nodes is held as their figures, not their records.
    pub facts: Option<NodeFacts>,
    /// What went wrong reading it, each in a sentence.
    pub problems: Vec<String>,
}

impl FleetNode {
    /// The node's state: the status file's, else "unknown".
    pub fn state(&self) -> String {
        self.status
            .as_ref()
            .and_then(|s| s.state.clone())
            .unwrap_or_else(|| "unknown".into())
    }
}

/// What one node's bundle contributes to the fleet report.
#[derive(Debug, Clone)]
pub struct NodeFacts {
    /// Host name in the bundle.
    pub hostname: Option<String>,
    /// Hardware identity, the grouping key.
    pub fingerprint: Fingerprint,
    /// The SMBIOS memory configuration in words ([`memory_key`]), when recorded.
    pub memory: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Firmware (BIOS vendor, version, date), when the topology has it.
    pub firmware: Option<String>,
    /// Its comparable figures, with finite samples only.
    pub metrics: Vec<Metric>,
}

impl NodeFacts {
    /// Reads what the report needs from a loaded bundle.
    pub fn of(l: &Loaded) -> NodeFacts {
        let host = &l.bundle.envelope.host;
        let memory = l
            .records_of::<MemConfig>()
            .into_iter()
            .find_map(|(_, m)| memory_key(&m));
        let mut ms = metrics(l);
        for m in &mut ms {
            m.samples.retain(|v| v.is_finite());
        }
        ms.retain(|m| !m.samples.is_empty());
        NodeFacts {
            hostname: host.hostname.clone(),
            fingerprint: Fingerprint::of(host),
            memory,
            kernel: host.kernel.clone(),
            firmware: firmware_of(host),
            metrics: ms,
        }
    }
}

/// The memory configuration in words, the part of it that is in the grouping key:
/// populated channels, memory types and transfer rates.
pub fn memory_key(mc: &MemConfig) -> Option<String> {
    if mc.channels.is_empty() {
        return None;
    }
    let mut types: Vec<&str> = mc.channels.iter().map(|c| c.memory_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    let mut speeds: Vec<u32> = mc.channels.iter().filter_map(|c| c.speed_mts).collect();
    speeds.sort_unstable();
    speeds.dedup();
    let speeds = if speeds.is_empty() {
        "speed unknown".to_string()
    } else {
        format!(
            "{} MT/s",
            speeds
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join("/")
        )
    };
    Some(format!(
        "{} channel{} {} at {speeds}",
        mc.channels.len(),
        if mc.channels.len() == 1 { "" } else { "s" },
        types.join("/")
    ))
}

/// A fleet folder, read.
#[derive(Debug, Clone, Default)]
pub struct FleetInput {
    /// The fleet folder (`FLEET`).
    pub root: PathBuf,
    /// Nodes in name order.
    pub nodes: Vec<FleetNode>,
}

/// Why a fleet folder could not be read at all.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct FleetError {
    /// The input, what is wrong, the remedy.
    pub message: String,
}

impl numalab_schema::Classify for FleetError {
    fn class(&self) -> numalab_schema::ErrorClass {
        numalab_schema::ErrorClass::Input
    }
}

/// `s` cut to `max` characters from its end (a tail), with control characters kept
/// as they are (every renderer escapes them).
fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        let t: String = s.chars().skip(n - max).collect();
        format!("...({} characters before) {t}", n - max)
    }
}

/// Reads a node's status file; a problem in a sentence when it cannot.
pub fn read_status(path: &Path) -> Result<NodeStatus, String> {
    let text =
        input::read_to_string(path, "node status", MAX_STATUS_BYTES).map_err(|e| e.to_string())?;
    let mut s: NodeStatus = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a status file ({}); numalab fleet run writes it",
            path_text(path),
            excerpt(&e.to_string(), 200)
        )
    })?;
    s.state = s.state.map(|v| excerpt(&v, 100));
    s.stderr_tail = s.stderr_tail.map(|v| tail(&v, MAX_STDERR_CHARS));
    s.message = s.message.map(|v| tail(&v, MAX_MESSAGE_CHARS));
    s.duration_s = s.duration_s.filter(|d| d.is_finite());
    Ok(s)
}

/// Reads one node's folder.
pub fn load_node(name: &str, dir: &Path) -> FleetNode {
    let mut node = FleetNode {
        name: crate::shorten(name, MAX_NAME_CHARS),
        path: dir.to_path_buf(),
        status: None,
        facts: None,
        problems: Vec::new(),
    };
    let status = dir.join("status.json");
    if status.exists() {
        match read_status(&status) {
            Ok(s) => node.status = Some(s),
            Err(p) => node.problems.push(p),
        }
    } else {
        node.problems.push("no status.json".into());
    }
    let journal = dir.join("results.jsonl");
    if journal.exists() {
        match load(&journal) {
            Ok(l) => {
                for w in &l.warnings {
                    node.problems
                        .push(format!("results.jsonl: {}", excerpt(&w.message, 300)));
                }
                node.facts = Some(NodeFacts::of(&l));
            }
            Err(e) => node.problems.push(excerpt(&e.message, 500)),
        }
    } else if node.status.as_ref().is_none_or(NodeStatus::is_done) {
        node.problems.push("no results.jsonl".into());
    }
    node
}

/// Whether `dir` is a fleet folder (`numalab fleet run`'s: `fleet.json` and `nodes/`).
pub fn is_fleet(dir: &Path) -> bool {
    dir.join("fleet.json").is_file() && dir.join("nodes").is_dir()
}

/// Where `numalab fleet report` writes its HTML page: the path given (`--html`), else
/// `fleet-report.html` in the fleet folder itself.
pub fn report_html_path(dir: &Path, given: Option<&Path>) -> PathBuf {
    given.map_or_else(|| dir.join("fleet-report.html"), Path::to_path_buf)
}

/// The node folders of a fleet folder, `(node name, folder)` in name order: every folder
/// under `dir/nodes/` (other entries skipped).
pub fn node_folders(dir: &Path) -> Result<Vec<(String, PathBuf)>, FleetError> {
    let nodes_dir = dir.join("nodes");
    let entries = std::fs::read_dir(&nodes_dir).map_err(|e| FleetError {
        message: format!(
            "{}: {}; give the folder numalab fleet run wrote (with nodes/<node>/results.jsonl)",
            path_text(&nodes_dir),
            input::io_reason(&e)
        ),
    })?;
    let mut dirs: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (os_text(&e.file_name()), e.path()))
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Reads a fleet folder: every folder under `dir/nodes/`, in name order. Entries that
/// are not folders are skipped; a node that cannot be read is kept with its problem.
pub fn load_fleet(dir: &Path) -> Result<FleetInput, FleetError> {
    let dirs = node_folders(dir)?;
    let mut nodes: Vec<FleetNode> = dirs.iter().map(|(n, p)| load_node(n, p)).collect();
    // Names cut to the same text stay apart.
    let mut seen = std::collections::HashSet::new();
    for n in &mut nodes {
        let mut k = 1;
        let base = n.name.clone();
        while !seen.insert(n.name.clone()) {
            k += 1;
            n.name = format!("{base} #{k}");
        }
    }
    Ok(FleetInput {
        root: dir.to_path_buf(),
        nodes,
    })
}

#[cfg(test)]
mod path_tests {
    use super::*;

    #[test]
    fn the_html_report_goes_into_the_fleet_folder_unless_given() {
        let dir = Path::new("runs/fleet1");
        assert_eq!(
            report_html_path(dir, None),
            Path::new("runs/fleet1/fleet-report.html")
        );
        let given = Path::new("/tmp/x.html");
        assert_eq!(report_html_path(dir, Some(given)), given);
    }
}
