//! `numalab evaluate` survives being killed: SIGKILL at random moments, several times,
//! then a final run; every record that was complete on disk at any kill is in the final
//! journal exactly once and unchanged, and every step is closed exactly once.
//!
//! One campaign of four kills runs by default, CI's short mode; `NUMALAB_KILL_CAMPAIGNS=N`
//! runs N (the long run before changing the journal or the step runner:
//! `NUMALAB_KILL_CAMPAIGNS=10 cargo test -p numalab --test cli evaluate::killed`).
//!
//! The runs see this machine with its last-level cache given as at most 32 MiB
//! ([`capped_topology`]): `evaluate --quick`'s bandwidth working set is 12x the LLC, and
//! on a VM whose hypervisor reports a 300 MiB L3 one run took 130 s, 80 of them in the
//! bandwidth step's 3.6 GB cells, the campaign 6 minutes (about one where the LLC is 32
//! MiB). What is tested is the resume, not the figures; every step still measures for
//! real, bound where it asks.

use crate::common::journal;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn evaluate(out: &Path, topology: Option<&Path>) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_numalab"));
    c.args(["evaluate", "--quick", "--out"])
        .arg(out)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(xml) = topology {
        // hwloc's own override: the topology from this XML file, taken as this
        // machine's (binding and memory placement stay real).
        c.env("HWLOC_XMLFILE", xml).env("HWLOC_THISSYSTEM", "1");
    }
    c
}

/// The largest last-level cache the kill runs see.
const LLC_CAP: u64 = 32 << 20;

/// This machine's topology (`numalab topo --export-xml`) with every L3 cache above
/// [`LLC_CAP`] given as `LLC_CAP`, written in `dir`; `None` where no cache is larger
/// (the runs then see the machine as it is).
fn capped_topology(dir: &Path) -> Option<PathBuf> {
    let xml = dir.join("this-machine.xml");
    let st = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["topo", "--export-xml"])
        .arg(&xml)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "topo --export-xml: {st}");
    let text = std::fs::read_to_string(&xml).unwrap();
    let mut capped = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let Some(at) = line
                .find("cache_size=\"")
                .filter(|_| line.contains("type=\"L3Cache\""))
            else {
                return line.to_string();
            };
            let start = at + "cache_size=\"".len();
            let end = start + line[start..].find('"').expect("a closing quote");
            let size: u64 = line[start..end].parse().expect("a cache size in bytes");
            if size <= LLC_CAP {
                return line.to_string();
            }
            capped = true;
            format!("{}{LLC_CAP}{}", &line[..start], &line[end..])
        })
        .collect();
    if !capped {
        return None;
    }
    std::fs::write(&xml, lines.join("\n")).unwrap();
    Some(xml)
}

/// Complete journal lines, by record key (the envelope under "").
fn lines(out: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(out.join("results.jsonl")).unwrap_or_default();
    let mut map = BTreeMap::new();
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    for line in complete.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("complete lines are JSON");
        let key = v
            .get("key")
            .and_then(|k| k.as_str())
            .unwrap_or("")
            .to_string();
        map.insert(key, line.to_string());
    }
    map
}

#[test]
fn killed_runs_resume_without_losing_or_duplicating_records() {
    let tmp = tempfile::tempdir().unwrap();
    // A reference run gives the duration to aim the kills at.
    let reference = tmp.path().join("reference");
    let topology = capped_topology(tmp.path());
    let topology = topology.as_deref();
    let start = Instant::now();
    assert!(evaluate(&reference, topology).status().unwrap().success());
    let duration = start.elapsed();
    summary_and_report_hold_the_findings(&reference);

    // A fixed LCG: the kill times are random but reproducible.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut kills = 0;
    let campaigns: usize = match std::env::var("NUMALAB_KILL_CAMPAIGNS") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("NUMALAB_KILL_CAMPAIGNS={v:?}: give a whole number")),
        Err(_) => 1,
    };
    // Campaigns, each in a fresh folder: up to four killed runs, then a final one. A kill
    // comes within the first 60% of a whole run's duration after its start; as every run
    // resumes where the last one stopped, the kills of a campaign move through the steps
    // (the first of each in a fresh folder, the others in a journal already resumed).
    for campaign in 0..campaigns {
        let out = tmp.path().join(format!("killed-{campaign}"));
        let mut seen: HashMap<String, String> = HashMap::new();
        for _ in 0..4 {
            let delay = duration.mul_f64(0.6 * next()).max(duration.mul_f64(0.02));
            let mut child = evaluate(&out, topology).spawn().unwrap();
            std::thread::sleep(delay);
            if child.try_wait().unwrap().is_none() {
                child.kill().unwrap(); // SIGKILL
                kills += 1;
            }
            child.wait().unwrap();
            for (k, v) in lines(&out) {
                if let Some(prev) = seen.get(&k) {
                    if !k.is_empty() {
                        assert_eq!(prev, &v, "record {k} changed after a restart");
                    }
                }
                seen.insert(k, v);
            }
        }
        // Finish the job.
        let status = evaluate(&out, topology).status().unwrap();
        assert!(status.success(), "final run: {status}");
        let final_lines = lines(&out);
        let text = journal(&out);
        let mut counts: HashMap<String, usize> = HashMap::new();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(k) = v.get("key").and_then(|k| k.as_str()) {
                *counts.entry(k.to_string()).or_default() += 1;
            }
        }
        for (k, n) in &counts {
            assert_eq!(*n, 1, "record {k} written {n} times");
        }
        for (k, v) in &seen {
            if k.is_empty() {
                continue;
            }
            assert_eq!(
                final_lines.get(k),
                Some(v),
                "record {k} was lost or changed"
            );
        }
        // Every step is closed once, as in the uninterrupted reference run.
        let steps = |m: &BTreeMap<String, String>| -> Vec<String> {
            m.keys()
                .filter(|k| k.starts_with("evaluate/step/"))
                .cloned()
                .collect()
        };
        assert_eq!(steps(&final_lines), steps(&lines(&reference)));
        assert!(out.join("summary.json").exists());
    }
    assert!(
        kills > 0,
        "no run was killed; the test did not test anything"
    );
}

/// summary.json as another program reads it (independent of numalab's types).
#[derive(serde::Deserialize)]
struct Summary {
    schema_version: u32,
    records: usize,
    steps: Vec<serde_json::Value>,
    findings: Vec<SummaryFinding>,
}

#[derive(serde::Deserialize)]
struct SummaryFinding {
    id: String,
    severity: String,
    text: String,
    #[serde(default)]
    anchor: Option<String>,
}

fn summary_and_report_hold_the_findings(out: &Path) {
    let s: Summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s.schema_version, 1);
    assert!(s.records > 0 && !s.steps.is_empty());
    let ids: Vec<&str> = s.findings.iter().map(|f| f.id.as_str()).collect();
    // True on any machine: evaluate always describes the machine and checks the PMU.
    assert!(
        ids.iter()
            .any(|i| ["one_numa_node", "packages"].contains(i)),
        "{ids:?}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h2 id=\"findings\">Findings</h2>"));
    for f in &s.findings {
        assert!(["warning", "notice", "info"].contains(&f.severity.as_str()));
        let escaped = f
            .text
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;");
        assert!(html.contains(&escaped), "{} not in report.html", f.text);
        if let Some(a) = &f.anchor {
            assert!(html.contains(&format!("id=\"{a}\"")), "#{a} missing");
        }
    }
}

#[test]
fn unknown_step_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(["evaluate", "--skip", "nosuchstep", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such step"));
}

/// Every step but these is left out, so that a run takes about a second.
fn only(steps: &[&str]) -> String {
    [
        "topology",
        "bandwidth",
        "latency",
        "loaded",
        "c2c",
        "migrate",
        "pmu",
        "workload",
        "power",
    ]
    .iter()
    .filter(|s| !steps.contains(s))
    .copied()
    .collect::<Vec<_>>()
    .join(",")
}

fn run_evaluate(out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .arg("evaluate")
        .args(extra)
        .arg("--out")
        .arg(out)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// The journal's records of one kind, in order.
fn records_of(out: &Path, kind: &str) -> Vec<serde_json::Value> {
    journal(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some(kind))
        .collect()
}

/// The latest outcome of `step` in summary.json.
fn summary_status(out: &Path, step: &str) -> String {
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let steps = s["steps"].as_array().unwrap();
    let of: Vec<&serde_json::Value> = steps.iter().filter(|x| x["step"] == step).collect();
    assert_eq!(of.len(), 1, "summary lists {step} once: {steps:?}");
    of[0]["outcome"]["status"].as_str().unwrap().to_string()
}

#[test]
fn a_step_left_out_is_filled_in_by_a_later_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("e");
    let first = run_evaluate(&out, &["--quick", "--skip", &only(&["topology"])]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(summary_status(&out, "pmu"), "skipped");
    assert!(records_of(&out, "pmu.check").is_empty());

    // The same folder, now with the PMU step: it is run, not kept as "skipped".
    let second = run_evaluate(&out, &["--quick", "--skip", &only(&["topology", "pmu"])]);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{err}");
    assert!(err.contains("filling in step pmu"), "{err}");
    assert_eq!(summary_status(&out, "pmu"), "done");
    assert_eq!(records_of(&out, "pmu.check").len(), 1);
    // Both outcomes stay in the journal, each naming the run that wrote it, and each
    // run's options are recorded.
    let pmu_steps: Vec<_> = records_of(&out, "evaluate.step")
        .into_iter()
        .filter(|r| r["data"]["step"] == "pmu")
        .collect();
    assert_eq!(pmu_steps.len(), 2, "{pmu_steps:?}");
    assert_eq!(pmu_steps[0]["data"]["run"], 1);
    assert_eq!(pmu_steps[0]["data"]["outcome"]["status"], "skipped");
    assert_eq!(pmu_steps[1]["data"]["run"], 2);
    assert_eq!(pmu_steps[1]["data"]["outcome"]["status"], "done");
    let runs = records_of(&out, "evaluate.run");
    assert_eq!(runs.len(), 2);
    assert!(runs[0]["data"]["skip"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s == "pmu"));
    assert!(!runs[1]["data"]["skip"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s == "pmu"));
    // The report shows the step's latest outcome only.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        !html.contains("not measured: PMU check"),
        "stale skip in the report"
    );
    // The top of the report names the machine and each run's options.
    assert!(
        html.contains("CPU(s),") && html.contains("NUMA node(s)"),
        "machine not named"
    );
    assert!(html.contains("evaluate run 1 at "), "runs not listed");
    assert!(
        html.contains("(--quick; left out: bandwidth"),
        "run options not shown"
    );

    // Nothing left to do: a third run adds its run record and no step record.
    let steps_before = records_of(&out, "evaluate.step").len();
    let third = run_evaluate(&out, &["--quick", "--skip", &only(&["topology", "pmu"])]);
    assert!(third.status.success());
    assert_eq!(records_of(&out, "evaluate.step").len(), steps_before);
    assert_eq!(records_of(&out, "evaluate.run").len(), 3);
    // Leaving the step out again does not undo it.
    let fourth = run_evaluate(&out, &["--quick", "--skip", &only(&["topology"])]);
    assert!(fourth.status.success());
    assert_eq!(summary_status(&out, "pmu"), "done");
}

#[test]
fn a_resumption_with_other_options_is_refused_until_fresh() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("e");
    let skip = only(&["topology"]);
    assert!(run_evaluate(&out, &["--quick", "--skip", &skip])
        .status
        .success());
    let before = journal(&out);

    // A full run into a quick run's folder: refused, the difference and remedies named,
    // nothing written.
    let full = run_evaluate(&out, &["--skip", &skip]);
    let err = String::from_utf8_lossy(&full.stderr);
    assert_eq!(full.status.code(), Some(2), "{err}");
    assert!(
        err.contains("with --quick") && err.contains("without --quick"),
        "{err}"
    );
    assert!(
        err.contains("--fresh") && err.contains("another --out"),
        "{err}"
    );
    assert_eq!(journal(&out), before, "a refused run wrote to the journal");

    // --fresh moves the quick results aside, whole, and starts over.
    let fresh = run_evaluate(&out, &["--fresh", "--skip", &skip]);
    let err = String::from_utf8_lossy(&fresh.stderr);
    assert!(fresh.status.success(), "{err}");
    let aside: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(aside[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("replaced-"));
    assert_eq!(
        std::fs::read_to_string(aside[0].join("results.jsonl")).unwrap(),
        before
    );
    assert!(aside[0].join("summary.json").exists() && aside[0].join("report.html").exists());
    let runs = records_of(&out, "evaluate.run");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["data"]["quick"], false);
    assert!(err.contains("moved to"), "{err}");
}

#[test]
fn evaluate_refuses_a_folder_of_another_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().display().to_string();
    // A journal written by `scale` (whose pilot run finds no metric: exit 2, but the
    // envelope and the pilot's record are on disk).
    crate::common::numalab(&[
        "scale",
        "--metric",
        "regex:rps=([0-9]+)",
        "--out",
        &dir,
        "--",
        "echo",
        "none",
    ]);
    let before = journal(tmp.path());
    assert!(before.contains("\"scale\""), "{before}");
    let e = run_evaluate(tmp.path(), &["--quick", "--skip", &only(&["topology"])]);
    let err = String::from_utf8_lossy(&e.stderr);
    assert_eq!(e.status.code(), Some(2), "{err}");
    assert!(
        err.contains("another command") && err.contains("scale"),
        "{err}"
    );
    assert_eq!(journal(tmp.path()), before);
}
