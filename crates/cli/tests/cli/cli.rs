//! Integration tests of the `numalab` binary: exit codes and messages for bad input,
//! and the JSON contract of `topo --json`, read with independent structs.

use crate::common::{self, assert_ok, numalab, refused};
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> String {
    common::fixture("topology", name)
}

#[test]
fn error_table() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty.xml");
    std::fs::write(&empty, "").unwrap();
    let empty = empty.display().to_string();
    let hwloc3 = fixture("AMD-19h-Zen3-2xEpyc-7763.hwloc3-format.xml");
    // (args, exit code, text expected on stderr)
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["topo", "--input", "/nonexistent/x.xml"],
            3,
            "no such file",
        ),
        (vec!["topo", "--input", &empty], 3, "the file is empty"),
        (vec!["topo", "--input", &hwloc3], 3, "hwloc 3.x"),
        (vec!["topo", "--bogus"], 2, "unexpected argument"),
        (vec!["nosuchcommand"], 2, "unrecognized subcommand"),
        (vec!["generate", "pdf"], 2, "invalid value"),
    ];
    for (args, code, text) in cases {
        let out = refused(&args, code, text);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("RUST_BACKTRACE"), "{args:?}: {stderr}");
    }
}

/// The documented `topo --json` contract, read with structs that do not share code
/// with numalab.
#[derive(serde::Deserialize)]
struct TopoJson {
    schema_version: u32,
    summary: SummaryJson,
}

#[derive(serde::Deserialize)]
struct SummaryJson {
    packages: usize,
    numa_nodes: usize,
    cores: usize,
    pus: usize,
    numa: Vec<NodeJson>,
}

#[derive(serde::Deserialize)]
struct NodeJson {
    os_index: u32,
    cpus: Vec<u32>,
    memory_bytes: u64,
    subtype: Option<String>,
}

#[test]
fn topo_json_contract() {
    let out = numalab(&[
        "topo",
        "--input",
        &fixture("llnl-knl-snc4-flat-hwloc1.xml"),
        "--json",
    ]);
    assert_ok(&out);
    let v: TopoJson = serde_json::from_slice(&out.stdout).expect("topo --json parses");
    assert_eq!(v.schema_version, 1);
    let s = v.summary;
    assert_eq!((s.packages, s.numa_nodes, s.cores, s.pus), (1, 8, 68, 272));
    let mcdram: Vec<&NodeJson> = s
        .numa
        .iter()
        .filter(|n| n.subtype.as_deref() == Some("MCDRAM"))
        .collect();
    assert_eq!(mcdram.len(), 4);
    assert!(mcdram.iter().all(|n| n.memory_bytes == 4 << 30));
    // SNC-4 quadrants of a 68-core KNL hold 18, 18, 16 and 16 cores (x4 threads).
    let sizes: Vec<usize> = mcdram.iter().map(|n| n.cpus.len()).collect();
    assert_eq!(sizes, vec![72, 72, 64, 64]);
    assert!(s.numa.iter().any(|n| n.os_index == 7));
}

#[test]
fn topo_live_summary_and_tree() {
    let out = numalab(&["topo", "--tree"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let n = common::online_pus();
    assert!(text.contains(&format!("({n} PUs)")), "{text}");
    assert!(text.contains("NUMA node"), "{text}");
    assert!(text.contains("Machine ("), "{text}");
}

#[test]
fn export_xml_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let xml: PathBuf = tmp.path().join("me.xml");
    let out = numalab(&["topo", "--export-xml", xml.to_str().unwrap(), "--json"]);
    assert_ok(&out);
    let live: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let again = numalab(&["topo", "--input", xml.to_str().unwrap(), "--json"]);
    assert_ok(&again);
    let from_xml: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(live["summary"], from_xml["summary"]);
    assert_eq!(live["caches"], from_xml["caches"]);
}

#[test]
fn doctor_json_has_every_check() {
    let out = numalab(&["doctor", "--json"]);
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = common::field_strs(&v["checks"], "name");
    for expected in [
        "binding",
        "numa",
        "perf-paranoid",
        "pmu",
        "huge-pages",
        "frequency",
        "smt",
        "hypervisor",
        "cgroup",
        "power-sensors",
    ] {
        assert!(names.contains(&expected), "missing {expected}: {names:?}");
    }
    // This machine really pins threads and binds memory.
    let binding = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "binding")
        .unwrap();
    assert_eq!(binding["verdict"], "ok", "{binding}");
}

#[test]
fn man_page_and_completions_are_generated() {
    let out = numalab(&["generate", "man"]);
    assert!(out.status.success());
    let man = String::from_utf8_lossy(&out.stdout);
    assert!(man.contains(".TH numalab"), "not a man page");
    assert!(man.contains("numalab\\-topo") || man.contains("numalab-topo"));
    assert!(man.contains("Exit codes"));
    let out = numalab(&["generate", "bash"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("_numalab"));
}

/// Regression: `numalab topo | head -1` used to panic in println! on the closed pipe.
#[test]
fn closed_stdout_pipe_does_not_panic() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args([
            "topo",
            "--json",
            "--input",
            &fixture("192em64t-24n8c2t.xml"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the rest of the output hits a closed pipe.
    let out = child.wait_with_output().unwrap();
    assert_eq!(first.trim(), "{");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Ended by SIGPIPE, quietly (the exit table's 141), as other tools.
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(13), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

/// The binary is linked at a fixed address on GNU/Linux (crates/cli/build.rs), so the
/// dynamic loader relocates nothing of it at start: ELF type ET_EXEC (2), not ET_DYN (3).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_needs_no_relocation_at_start() {
    let elf = std::fs::read(env!("CARGO_BIN_EXE_numalab")).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    assert_eq!(elf[4], 2, "a 64-bit ELF file");
    let e_type = u16::from_le_bytes([elf[16], elf[17]]);
    assert_eq!(
        e_type, 2,
        "ELF type {e_type}: the binary is position-independent"
    );
}
