//! Helpers shared by the CLI test modules: running the binary, fixture paths, the
//! journal of an `--out` folder, the error-table check, and the bundle contract read
//! with structs that share no code with numalab (docs/schema.md).

use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the binary under test with `args`, colours off.
pub fn numalab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run numalab")
}

/// `tests/fixtures/<dir>/<name>` of the repository.
pub fn fixture_path(dir: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(dir)
        .join(name)
}

/// [`fixture_path`] as a command-line argument.
pub fn fixture(dir: &str, name: &str) -> String {
    fixture_path(dir, name).display().to_string()
}

/// A path as a command-line argument.
pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts that the run exited with status 0, showing its stderr if not.
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JSON document a successful run printed on stdout.
pub fn json<T: DeserializeOwned>(out: &Output) -> T {
    assert_ok(out);
    serde_json::from_slice(&out.stdout).expect("one JSON document on stdout")
}

/// The journal (`results.jsonl`) of an `--out` folder.
pub fn journal(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("results.jsonl")).unwrap()
}

/// Runs a command that must be refused: exit `code`, `text` on stderr, no panic. The
/// output is returned for the checks a table adds.
pub fn refused(args: &[&str], code: i32, text: &str) -> Output {
    let out = numalab(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(stderr.contains(text), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    out
}

/// CPUs this process may run on.
pub fn live_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// PUs the kernel has online (/sys/devices/system/cpu/online).
pub fn online_pus() -> usize {
    let pus = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    numalab_schema::cpulist::parse(pus.trim()).unwrap().len()
}

/// The string `field` of every element of the JSON array `array`.
pub fn field_strs<'a>(array: &'a serde_json::Value, field: &str) -> Vec<&'a str> {
    array
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x[field].as_str().unwrap())
        .collect()
}

/// The documented bundle (docs/schema.md), independent of numalab's types.
#[derive(Deserialize)]
pub struct BundleJson {
    pub records: Vec<RecordJson>,
}

#[derive(Deserialize)]
pub struct RecordJson {
    pub key: String,
    pub kind: String,
    pub origin: String,
    pub data: serde_json::Value,
    #[serde(default)]
    pub warnings: Vec<WarningJson>,
}

#[derive(Deserialize)]
pub struct WarningJson {
    pub code: String,
}

/// The bundle a successful `--json` run printed.
pub fn bundle(out: &Output) -> BundleJson {
    json(out)
}

/// The payloads of the records of one kind in the bundle a successful run printed.
pub fn records(out: &Output, kind: &str) -> Vec<serde_json::Value> {
    bundle(out)
        .records
        .into_iter()
        .filter(|r| r.kind == kind)
        .map(|r| {
            assert!(!r.origin.is_empty());
            r.data
        })
        .collect()
}
