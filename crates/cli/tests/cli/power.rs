//! `--bmc`: node power from the BMC sampled during a measurement, recorded with its
//! source; the planted password appears nowhere; `compare` names each side's source.
//! The BMC is numalab-bmc's stand-in `ipmitool` (DCMI responses constructed from the
//! specification; it checks that the password comes through the environment only).

use crate::common::{numalab, p, refused, stderr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PLANTED: &str = "pl4nted-BMC-s3cret";

/// A short one-thread triad measurement, without its options for power and output.
const TRIAD: [&str; 10] = [
    "mem",
    "bandwidth",
    "--kernel",
    "triad",
    "--threads",
    "1",
    "--size",
    "96MiB",
    "--reps",
    "3",
];

fn fake_ipmitool() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bmc/tests/fixtures/fake-ipmitool")
}

fn with_bmc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("NUMALAB_IPMITOOL", fake_ipmitool())
        .env("IPMI_PASSWORD", PLANTED)
        .output()
        .expect("run numalab")
}

/// Every file under `dir`, as text.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.push_str(&all_text(&path));
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    out
}

/// The one `power.bmc` record of a journal.
fn bmc_record(journal: &str) -> serde_json::Value {
    let mut found = journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "power.bmc");
    let rec = found
        .next()
        .unwrap_or_else(|| panic!("no power.bmc record in {journal}"));
    assert!(found.next().is_none(), "two power.bmc records: {journal}");
    rec
}

#[test]
fn bandwidth_with_bmc_records_wall_power_with_its_source_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = with_bmc(
        &[
            &TRIAD[..],
            &[
                "--bmc",
                "ipmi://admin@bmc.test",
                "--bmc-interval",
                "50",
                "--out",
                p(&out_dir),
            ],
        ]
        .concat(),
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let journal = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let rec = bmc_record(&journal);
    assert_eq!(rec["key"], "power/bmc/mem-bandwidth");
    let d = &rec["data"];
    assert_eq!(d["during"], "mem bandwidth");
    assert_eq!(d["covers"], "whole node at the wall (BMC)");
    assert_eq!(d["source"]["kind"], "ipmi_dcmi");
    assert_eq!(d["source"]["access"]["via"], "lan");
    assert_eq!(d["source"]["access"]["host"], "bmc.test");
    assert_eq!(d["source"]["access"]["user"], "admin");
    let samples = d["samples"].as_array().unwrap();
    assert!(!samples.is_empty(), "{d}");
    // The stand-in BMC answers 345 W (DCMI instantaneous reading).
    assert!(
        samples.iter().all(|s| s["reading"]["watts"] == 345.0),
        "{d}"
    );
    // The mem record is there too: power is beside the measurement, not instead of it.
    assert!(journal.contains("\"mem.bandwidth\""));
    // The password is nowhere: not in the bundle, the report, stdout or stderr.
    let everything = all_text(&out_dir) + &String::from_utf8_lossy(&out.stdout) + &err;
    assert!(!everything.contains(PLANTED), "the password leaked");

    // `compare` names the power source of each side.
    let other = dir.path().join("other");
    let o = numalab(&[&TRIAD[..], &["--out", p(&other)]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let c = numalab(&["compare", p(&out_dir), p(&other), "--format", "json"]);
    assert!(c.status.success(), "{}", stderr(&c));
    let report: serde_json::Value = serde_json::from_slice(&c.stdout).unwrap();
    let power = report["power"].as_array().unwrap();
    assert_eq!(power.len(), 2, "{report}");
    let first = power[0]["sources"].as_array().unwrap();
    assert!(
        first[0]
            .as_str()
            .unwrap()
            .starts_with("whole node at the wall (BMC)"),
        "{report}"
    );
    assert!(power[1]["sources"].as_array().unwrap().is_empty());
    let summary = report["summary"].to_string();
    assert!(summary.contains("has no power figure"), "{summary}");
}

#[test]
fn bmc_addresses_with_passwords_and_unreachable_bmcs_are_refused() {
    // A password in the address: refused before anything runs, and not repeated.
    let out = refused(
        &["mem", "bandwidth", "--bmc", "ipmi://admin:hunter2@bmc.test"],
        2,
        "never on the command line",
    );
    assert!(!stderr(&out).contains("hunter2"));
    refused(
        &["workload", "run", "--bmc", "snmp://x"],
        2,
        "not a BMC address",
    );
    // A BMC that answers neither DCMI nor has power sensors: exit 4 before measuring.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args([
            "mem",
            "bandwidth",
            "--bmc",
            "ipmi://admin@invalid",
            "--out",
            p(&dir.path().join("o")),
        ])
        .env("NUMALAB_IPMITOOL", fake_ipmitool())
        .env("IPMI_PASSWORD", PLANTED)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("--bmc ipmi://admin@invalid"), "{err}");
    assert!(!err.contains(PLANTED));
    assert!(!dir.path().join("o/results.jsonl").exists());
}

#[test]
fn a_scale_study_with_bmc_keeps_the_wall_power_of_the_whole_study() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("scale");
    let out = with_bmc(&[
        "scale",
        "--threads",
        "1",
        "--repeat",
        "2",
        "--bmc",
        "ipmi://admin@bmc.test",
        "--bmc-interval",
        "20",
        "--out",
        p(&out_dir),
        "--",
        "sleep",
        "0.2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let journal = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let rec = bmc_record(&journal);
    assert_eq!(rec["key"], "power/bmc/scale");
    assert_eq!(rec["data"]["during"], "scale");
    // Two runs of 0.2 s sampled every 20 ms: several samples, all the BMC's 345 W.
    let samples = rec["data"]["samples"].as_array().unwrap();
    assert!(samples.len() >= 3, "{rec}");
    assert!(journal.contains("\"harness.scale\""));
    assert!(!journal.contains(PLANTED));
}

/// `evaluate --bmc`: the evaluate library watches each step that runs with the bmc
/// crate's watcher (no callback into the binary), each step's record before the step's
/// closing record, and no secret anywhere.
#[test]
fn evaluate_with_bmc_records_each_step_that_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let skip = "bandwidth,latency,loaded,c2c,migrate,workload,power";
    let out = with_bmc(&[
        "evaluate",
        "--quick",
        "--skip",
        skip,
        "--bmc",
        "ipmi://admin@bmc.test",
        "--bmc-interval",
        "50",
        "--out",
        p(&out_dir),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let journal = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let keys: Vec<String> = journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|v| v["key"].as_str().map(String::from))
        .collect();
    for id in ["topology", "pmu"] {
        let power = keys
            .iter()
            .position(|k| *k == format!("power/bmc/step/{id}"));
        let step = keys
            .iter()
            .position(|k| *k == format!("evaluate/step/{id}"));
        assert!(
            matches!((power, step), (Some(a), Some(b)) if a < b),
            "{id}: {keys:?}"
        );
    }
    assert!(
        !keys.iter().any(|k| k == "power/bmc/step/bandwidth"),
        "a step left out was watched: {keys:?}"
    );
    assert!(!all_text(&out_dir).contains(PLANTED), "the password leaked");
}

/// A BMC that answers `--bmc`'s check and then no more: the power of each step that runs
/// is not sampled, one warning a step. The terminal says the first and, at the end, one
/// line for the rest; the journal keeps that line as a `warnings.folded` record naming
/// the steps' power keys.
#[test]
fn evaluate_folds_the_bmc_warning_of_every_step_into_one_line_and_record() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (calls, tool) = (dir.path().join("calls"), dir.path().join("ipmitool"));
    let script = format!(
        "#!/bin/sh\n[ -e '{}' ] && {{ echo 'the BMC went away' >&2; exit 1; }}\n: > '{}'\nexec '{}' \"$@\"\n",
        p(&calls),
        p(&calls),
        p(&fake_ipmitool())
    );
    std::fs::write(&tool, script).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out_dir = dir.path().join("out");
    let skip = "bandwidth,latency,loaded,c2c,migrate,workload,power";
    let out = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["evaluate", "--quick", "--skip", skip])
        .args(["--bmc", "ipmi://admin@bmc.test", "--out", p(&out_dir)])
        .env("NO_COLOR", "1")
        .env("NUMALAB_IPMITOOL", &tool)
        .env("IPMI_PASSWORD", PLANTED)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("bmc_power")).collect();
    let first: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("numalab: warning: BMC power not sampled"))
        .collect();
    assert_eq!(first.len(), 1, "{err}");
    assert!(first[0].contains("during evaluate step topology"), "{err}");
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("1 more record had this warning"), "{err}");
    let journal = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let folded: Vec<serde_json::Value> = journal
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "warnings.folded")
        .collect();
    assert_eq!(folded.len(), 1, "{journal}");
    let codes = folded[0]["data"]["codes"].as_array().unwrap();
    assert_eq!(codes.len(), 1, "{journal}");
    let bmc = &codes[0];
    assert_eq!(bmc["code"], "bmc_power");
    assert_eq!(bmc["messages"], 2);
    assert_eq!(bmc["first"]["key"], "power/bmc/step/topology");
    let named: Vec<&str> = bmc["named"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["key"].as_str().unwrap())
        .collect();
    assert_eq!(named, ["power/bmc/step/pmu"]);
    assert!(bmc["named"][0]["message"]
        .as_str()
        .unwrap()
        .contains("during evaluate step pmu"));
    assert!(!journal.contains(PLANTED));
}
