//! The node list: Slurm node lists expanded by Slurm itself (`scontrol show hostnames`),
//! MPI hostfiles, plain comma lists; every name checked before it becomes a folder name.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::error::FleetError;
use numalab_proc::group::{run_captured, Limits, RunError};

/// Longest node name accepted (a DNS name is at most 253 bytes).
pub const MAX_NODE_NAME: usize = 253;

/// Checks that `name` can be used as a node name and as a folder name under
/// `FLEET/nodes/`: not empty, at most [`MAX_NODE_NAME`] bytes, no `/`, not `.` or `..`,
/// no control character or white space, not starting with `-` (it would read as an
/// option to the launcher).
pub fn validate_node_name(name: &str) -> Result<(), FleetError> {
    let bad = |problem: &str| {
        Err(FleetError::BadNodeName {
            name: name.to_string(),
            problem: problem.to_string(),
        })
    };
    if name.is_empty() {
        return bad("is empty");
    }
    if name.len() > MAX_NODE_NAME {
        return bad(&format!("is longer than {MAX_NODE_NAME} bytes"));
    }
    if name == "." || name == ".." {
        return bad("is a relative folder name");
    }
    if name.contains('/') || name.contains('\\') {
        return bad("contains a path separator");
    }
    if name.chars().any(|c| c.is_control()) {
        return bad("contains a control character");
    }
    if name.chars().any(char::is_whitespace) {
        return bad("contains white space");
    }
    if name.starts_with('-') {
        return bad("starts with '-' (it would read as an option)");
    }
    Ok(())
}

/// Keeps the first occurrence of each name, in order.
fn dedup(names: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names
        .into_iter()
        .filter(|n| seen.insert(n.clone()))
        .collect()
}

/// Splits a plain comma-separated list (`a,b,c`; no Slurm ranges), checks each name.
pub fn parse_plain_list(list: &str) -> Result<Vec<String>, FleetError> {
    let names: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    for n in &names {
        validate_node_name(n)?;
    }
    Ok(dedup(names))
}

/// How a Slurm client command (`scontrol`, `sbatch`) run to its end is bounded: all its
/// output kept, and after `timeout` its group gets SIGTERM, then SIGKILL a second later.
pub(crate) fn launcher_limits(timeout: Duration) -> Limits<'static> {
    Limits {
        kill_grace: Duration::from_secs(1),
        ..Limits::new(timeout)
    }
}

/// Expands a Slurm node list (`n[001-004,010],gpu1`) with `scontrol show hostnames LIST`:
/// Slurm's own hostlist syntax, never parsed here.
pub fn expand_slurm_nodelist(scontrol: &Path, list: &str) -> Result<Vec<String>, FleetError> {
    let program = scontrol.display().to_string();
    let mut cmd = Command::new(scontrol);
    cmd.args(["show", "hostnames", list]).stdin(Stdio::null());
    let out = run_captured(cmd, &launcher_limits(Duration::from_secs(60))).map_err(|e| FleetError::Tool {
        program: program.clone(),
        problem: match e {
            RunError::NotFound => "not found: install Slurm's client commands (Debian: slurm-client) or run on a Slurm login node".into(),
            RunError::Spawn(e) => format!("cannot start: {}", numalab_schema::input::io_reason(&e)),
            RunError::Timeout | RunError::Wait(_) | RunError::Cancelled => "show hostnames did not answer within 60 s (killed); is slurmctld reachable?".into(),
        },
    })?;
    if !out.status.success() {
        return Err(FleetError::Tool {
            program,
            problem: format!(
                "show hostnames {list:?} failed ({}): {}; check the node list",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    for n in &names {
        validate_node_name(n)?;
    }
    Ok(dedup(names))
}

/// Parses an MPI hostfile (Open MPI and MPICH style): one host per line, optionally
/// followed by `slots=N`, `max_slots=N` or `:N`; `#` starts a comment. Returns one entry
/// per distinct host, in order of first appearance.
pub fn parse_hostfile(path: &Path, text: &str) -> Result<Vec<String>, FleetError> {
    let mut names = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |problem: String| FleetError::Hostfile {
            path: path.to_path_buf(),
            line: i + 1,
            problem,
        };
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        let host = match first.split_once(':') {
            Some((h, n)) => {
                n.parse::<u32>()
                    .map_err(|_| err(format!("{first:?}: the count after ':' is not a number")))?;
                h
            }
            None => first,
        };
        for w in words {
            let ok = match w.split_once('=') {
                Some((k, v)) => {
                    matches!(k, "slots" | "max_slots" | "max-slots") && v.parse::<u32>().is_ok()
                }
                None => false,
            };
            if !ok {
                return Err(err(format!("{w:?} is not slots=N or max_slots=N")));
            }
        }
        validate_node_name(host).map_err(|e| err(e.to_string()))?;
        names.push(host.to_string());
    }
    Ok(dedup(names))
}

/// Reads and parses an MPI hostfile ([`parse_hostfile`]).
pub fn read_hostfile(path: &Path) -> Result<Vec<String>, FleetError> {
    // Read as a direct input: a missing, binary or special file is bad input (exit 3).
    let what = "the MPI hostfile";
    let text = numalab_schema::input::read_to_string(path, what, numalab_schema::input::TEXT)
        .map_err(|error| FleetError::File {
            option: "--hostfile",
            error,
        })?;
    parse_hostfile(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_checked() {
        for good in ["n1", "node-001", "gpu1.cluster.example", "a_b", "x:1"] {
            assert!(validate_node_name(good).is_ok(), "{good}");
        }
        for (bad, what) in [
            ("", "empty"),
            (".", "relative"),
            ("..", "relative"),
            ("a/b", "separator"),
            ("../etc", "separator"),
            ("a\\b", "separator"),
            ("n1\n", "control"),
            ("n\u{7f}1", "control"),
            ("n 1", "white space"),
            ("-n1", "option"),
        ] {
            let e = validate_node_name(bad).unwrap_err().to_string();
            assert!(e.contains(what), "{bad:?}: {e}");
        }
        let long = "a".repeat(MAX_NODE_NAME + 1);
        assert!(validate_node_name(&long).is_err());
    }

    #[test]
    fn plain_lists() {
        assert_eq!(parse_plain_list("a, b,,a,c").unwrap(), ["a", "b", "c"]);
        assert!(parse_plain_list("a,..").is_err());
    }

    #[test]
    fn hostfiles() {
        let p = Path::new("hosts");
        let text = "# cluster\nnode1 slots=4\nnode2\n\nnode1 slots=4 # again\nnode3:8\n  node4 max_slots=2\n";
        assert_eq!(
            parse_hostfile(p, text).unwrap(),
            ["node1", "node2", "node3", "node4"]
        );
        let e = parse_hostfile(p, "a\nb slots=x\n").unwrap_err().to_string();
        assert!(e.contains("hosts:2") && e.contains("slots=N"), "{e}");
        let e = parse_hostfile(p, "../x\n").unwrap_err().to_string();
        assert!(e.contains("hosts:1"), "{e}");
        assert!(parse_hostfile(p, "# nothing\n").unwrap().is_empty());
    }

    #[test]
    fn a_missing_binary_or_device_hostfile_is_bad_input() {
        use numalab_schema::{Classify, ErrorClass};
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::write(&bin, b"\xff\xfe\x00").unwrap();
        for (p, says) in [
            (dir.path().join("missing"), "no such file or folder"),
            (bin, "not text"),
            (
                Path::new("/dev/zero").to_path_buf(),
                "this is a device, not a file",
            ),
        ] {
            let e = read_hostfile(&p).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Input, "{e}");
            let m = e.to_string();
            let named = format!("--hostfile {}: ", p.display());
            assert!(m.contains(says) && m.starts_with(&named), "{m}");
            assert!(!m.contains("os error"), "{m}");
        }
    }
}
