//! Where a process's pages are, per NUMA node, from `/proc/PID/numa_maps`.
//!
//! The kernel lists each mapping with its policy and, per node, the number of its
//! pages resident there (`N1=512`), with the page size (`kernelpagesize_kB=4`). Summed
//! over the mappings this says how a program's memory is spread over the nodes, which
//! is what decides between local placement and interleave (experiments.md B2). Pages
//! of mappings without a backing file (heap, stacks, anonymous memory) are counted
//! apart as the program's *data*: file pages (the binary, shared libraries) are shared
//! with other processes and say little about the program's own placement.
//!
//! Reading numa_maps walks the page tables of the process, which costs time for large
//! processes, so the harness samples it at a modest rate and only in `policy` studies.

use std::path::Path;

pub use numalab_records::harness::NodeBytes;

/// Parses the text of a `numa_maps` file.
pub fn parse(text: &str) -> NodeBytes {
    let mut out = NodeBytes::default();
    for line in text.lines() {
        let mut page_kb: u64 = 4;
        let mut has_file = false;
        let mut counts: Vec<(u32, u64)> = Vec::new();
        // Field 0 is the address, field 1 the policy; the rest are key=value or flags.
        for token in line.split_whitespace().skip(2) {
            if let Some(v) = token.strip_prefix("kernelpagesize_kB=") {
                page_kb = v.parse().unwrap_or(4);
            } else if token.starts_with("file=") {
                has_file = true;
            } else if let Some(rest) = token.strip_prefix('N') {
                if let Some((node, pages)) = rest.split_once('=') {
                    if let (Ok(n), Ok(p)) = (node.parse::<u32>(), pages.parse::<u64>()) {
                        counts.push((n, p));
                    }
                }
            }
        }
        for (n, pages) in counts {
            let bytes = pages * page_kb * 1024;
            *out.all.entry(n).or_insert(0) += bytes;
            if !has_file {
                *out.data.entry(n).or_insert(0) += bytes;
            }
        }
    }
    out
}

/// The processes of a process group (the harness runs each command in its own group),
/// found under `proc_root` (normally `/proc`).
pub fn group_members(proc_root: &Path, pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(proc_root) else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // After the command name in parentheses: state, ppid, pgrp.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.get(2).and_then(|f| f.parse::<i32>().ok()) == Some(pgid) {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// Pages per node of every process of a group, summed. `None` if no member's
/// numa_maps could be read (the processes ended, or permission was refused).
pub fn read_group(proc_root: &Path, pgid: i32) -> Option<NodeBytes> {
    let mut total = NodeBytes::default();
    let mut any = false;
    for pid in group_members(proc_root, pgid) {
        if let Ok(text) = std::fs::read_to_string(proc_root.join(format!("{pid}/numa_maps"))) {
            total.add(&parse(&text));
            any = true;
        }
    }
    any.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines in the layout of the kernel's numa_maps (Documentation/filesystems/proc.rst),
    /// as a two-node machine shows them for an interleaved array, a bound huge-page
    /// buffer, a heap and a shared library.
    const TWO_NODES: &str = "\
00400000 default file=/usr/bin/app mapped=12 mapmax=2 N0=8 N1=4 kernelpagesize_kB=4
01d6f000 default heap anon=300 dirty=300 active=0 N0=300 kernelpagesize_kB=4
7f2b4c000000 interleave:0-1 anon=262144 dirty=262144 N0=131072 N1=131072 kernelpagesize_kB=4
7f2c00000000 bind:1 huge anon=512 dirty=512 N1=512 kernelpagesize_kB=2048
7f2d10000000 default file=/usr/lib/x86_64-linux-gnu/libc.so.6 mapped=40 mapmax=90 N0=40 kernelpagesize_kB=4
7ffd1a2b3000 default stack anon=33 dirty=33 N0=33 kernelpagesize_kB=4
7ffd1a300000 default
";

    #[test]
    fn parses_pages_per_node_with_page_sizes() {
        let b = parse(TWO_NODES);
        let kib = 1024u64;
        assert_eq!(b.data[&0], (300 + 131072 + 33) * 4 * kib);
        assert_eq!(b.data[&1], 131072 * 4 * kib + 512 * 2048 * kib);
        assert_eq!(b.all[&0], b.data[&0] + (8 + 40) * 4 * kib);
        assert_eq!(b.all[&1], b.data[&1] + 4 * 4 * kib);
        let f = b.fractions();
        assert!((f[&0] + f[&1] - 1.0).abs() < 1e-12);
        assert!(f[&1] > f[&0]);
    }

    #[test]
    fn captured_from_this_machine() {
        // Captured with `head /proc/self/numa_maps` on the one-node development VM.
        let text = "\
5615888ad000 default file=/usr/bin/head mapped=2 mapmax=2 N0=2 kernelpagesize_kB=4
5615888b8000 default file=/usr/bin/head anon=1 dirty=1 active=0 N0=1 kernelpagesize_kB=4
5615c3bde000 default heap anon=4 dirty=4 active=0 N0=4 kernelpagesize_kB=4
7fdf8865c000 default file=/usr/lib/locale/C.utf8/LC_CTYPE mapped=32 mapmax=21 N0=32 kernelpagesize_kB=4
";
        let b = parse(text);
        assert_eq!(b.data.len(), 1);
        assert_eq!(b.data[&0], 4 * 4096);
        assert_eq!(b.all_total(), (2 + 1 + 4 + 32) * 4096);
        assert_eq!(b.fractions()[&0], 1.0);
    }

    #[test]
    fn garbage_is_ignored_and_empty_files_give_nothing() {
        let b = parse("zzz\n12 default Nx=3 N1=y N2=5 kernelpagesize_kB=q\n");
        assert_eq!(b.all.get(&2), Some(&(5 * 4 * 1024)));
        assert_eq!(b.all.len(), 1);
        let e = parse("");
        assert_eq!(e.all_total(), 0);
        assert!(e.fractions().is_empty());
    }

    #[test]
    fn reads_our_own_process_group() {
        let pgid = crate::sys::process_group();
        let members = group_members(Path::new("/proc"), pgid);
        assert!(
            members.contains(&(std::process::id() as i32)),
            "{members:?}"
        );
        let pages = read_group(Path::new("/proc"), pgid).expect("own numa_maps");
        assert!(pages.data_total() > 0);
        assert!(read_group(Path::new("/nonexistent"), pgid).is_none());
    }
}
