//! CPU and node lists in the kernel's list syntax ("0-3,8,10-11").
//!
//! The same syntax appears in sysfs, numactl, taskset and our own output, so one parser
//! and one formatter serve every crate.

use std::fmt::Write as _;

/// An error in a list written by a user or read from a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid list {input:?}: {reason} (expected e.g. \"0-3,8,10-11\")")]
pub struct ListError {
    /// The text that could not be parsed.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses "0-3,8,10-11" into a sorted list without duplicates.
pub fn parse(input: &str) -> Result<Vec<u32>, ListError> {
    let err = |reason: String| ListError {
        input: input.to_string(),
        reason,
    };
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(err("the list is empty".into()));
    }
    let mut out = Vec::new();
    for part in trimmed.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(err("an element between commas is empty".into()));
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (parse_num(a, input)?, parse_num(b, input)?),
            None => {
                let v = parse_num(part, input)?;
                (v, v)
            }
        };
        if lo > hi {
            return Err(err(format!("range {part:?} runs backwards")));
        }
        if hi - lo > 1 << 20 {
            return Err(err(format!("range {part:?} is implausibly large")));
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn parse_num(text: &str, input: &str) -> Result<u32, ListError> {
    text.trim().parse::<u32>().map_err(|_| ListError {
        input: input.to_string(),
        reason: format!("{:?} is not a non-negative integer", text.trim()),
    })
}

/// The CPUs the kernel has online under `sysroot` (its
/// `sys/devices/system/cpu/online`; `/` for this machine), sorted; where that file is
/// missing, unreadable or not a list, every CPU this process can know of
/// (`0..available_parallelism`). The CPUs a per-CPU counter or sampler opens on.
pub fn online(sysroot: &std::path::Path) -> Vec<usize> {
    std::fs::read_to_string(sysroot.join("sys/devices/system/cpu/online"))
        .ok()
        .and_then(|t| parse(&t).ok())
        .map(|v| v.into_iter().map(|c| c as usize).collect())
        .unwrap_or_else(|| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        })
}

/// Formats a list of ids compactly: `[0,1,2,3,8]` -> "0-3,8". Input order does not matter.
pub fn format(ids: &[u32]) -> String {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn online_cpus_come_from_sysfs_else_from_the_process() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("sys/devices/system/cpu");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("online"), "8-9,0-1\n").unwrap();
        assert_eq!(online(d.path()), vec![0, 1, 8, 9]);
        let every: Vec<usize> =
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
        std::fs::write(dir.join("online"), "\n").unwrap();
        assert_eq!(online(d.path()), every);
        std::fs::remove_file(dir.join("online")).unwrap();
        assert_eq!(online(d.path()), every);
    }

    use super::*;

    #[test]
    fn round_trip() {
        let ids = parse("8, 0-3,10-11,2").unwrap();
        assert_eq!(ids, vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(format(&ids), "0-3,8,10-11");
        assert_eq!(format(&[]), "");
        assert_eq!(format(&[5]), "5");
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(parse("").unwrap_err().reason.contains("empty"));
        assert!(parse("3-1").unwrap_err().reason.contains("backwards"));
        assert!(parse("1,,2").unwrap_err().reason.contains("empty"));
        assert!(parse("a")
            .unwrap_err()
            .reason
            .contains("not a non-negative integer"));
        assert!(parse("-1").is_err());
        assert!(parse("0-99999999").unwrap_err().reason.contains("large"));
    }
}
