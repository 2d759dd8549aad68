//! `numalab evaluate` survives being killed: SIGKILL at random moments, several times,
//! then a final run; every record that was complete on disk at any kill is in the final
//! journal exactly once and unchanged, and every step is closed exactly once.

use crate::common::journal;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

fn evaluate(out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_numalab"));
    c.args(["evaluate", "--quick", "--out"])
        .arg(out)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
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
    let start = Instant::now();
    assert!(evaluate(&reference).status().unwrap().success());
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
    // Three campaigns, each in a fresh folder: up to three killed runs, then a final one.
    for campaign in 0..3 {
        let out = tmp.path().join(format!("killed-{campaign}"));
        let mut seen: HashMap<String, String> = HashMap::new();
        for _ in 0..3 {
            let delay = duration.mul_f64(next().max(0.02));
            let mut child = evaluate(&out).spawn().unwrap();
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
        let status = evaluate(&out).status().unwrap();
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
