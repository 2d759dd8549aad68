//! The fleet report on 2,000 synthetic nodes: each node's `results.jsonl` is a real
//! `numalab evaluate --quick` journal (tests/fixtures/bundles/vm-evaluate, 252 KB) with
//! its host name changed and its memory bandwidth rounds scaled by a node factor (1%
//! noise; every 250th node 12% slower); every 500th node failed without a bundle.
//! Prints the seconds of each phase (write, load, analyse, HTML, text, JSON), the
//! report sizes and the peak memory.
//!
//! `cargo bench -p numalab-report --bench fleet` (`FLEET_NODES=N` for another size).

use numalab_report::fleet::{analyse, load_fleet, render_html, render_json, render_text, Options};
use serde_json::Value;
use std::path::Path;
use std::time::Instant;

/// A small deterministic generator (xorshift64*), uniform in [0, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn main() {
    let n: usize = std::env::var("FLEET_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let template = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bundles/vm-evaluate/results.jsonl");
    let text = std::fs::read_to_string(&template).expect("the template journal");
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let t = Instant::now();
    let mut bytes = 0usize;
    for i in 0..n {
        let name = format!("node{i:04}");
        let node = dir.path().join("nodes").join(&name);
        std::fs::create_dir_all(&node).unwrap();
        if i % 500 == 499 {
            std::fs::write(
                node.join("status.json"),
                r#"{"state": "failed", "exit_code": 1, "duration_s": 42.0, "stderr_tail": "error: mem bandwidth: cannot bind memory to node 1\n"}"#,
            )
            .unwrap();
            continue;
        }
        let factor = if i % 250 == 17 {
            1.0 / 0.88
        } else {
            1.0 + (rng.next() - 0.5) * 0.02
        };
        let mut out = String::with_capacity(text.len() + 1024);
        for l in &lines {
            if l["line"] == "envelope" {
                let mut e = l.clone();
                e["host"]["hostname"] = Value::String(name.clone());
                out.push_str(&e.to_string());
            } else if l["kind"] == "mem.bandwidth" {
                let mut r = l.clone();
                // The VM's rounds spread by 10-30%; a server's by about 1%: each
                // round is the record's median round with 1% noise.
                if let Some(s) = r["data"]["sample_ns"].as_array_mut() {
                    let mut ns: Vec<f64> = s.iter().filter_map(Value::as_f64).collect();
                    ns.sort_by(f64::total_cmp);
                    let mid = ns.get(ns.len() / 2).copied().unwrap_or(1.0);
                    for v in s.iter_mut() {
                        let x = mid * factor * (1.0 + (rng.next() - 0.5) * 0.02);
                        *v = serde_json::json!(x.round());
                    }
                }
                out.push_str(&r.to_string());
            } else {
                out.push_str(&l.to_string());
            }
            out.push('\n');
        }
        bytes += out.len();
        std::fs::write(node.join("results.jsonl"), out).unwrap();
        std::fs::write(
            node.join("status.json"),
            r#"{"state": "done", "exit_code": 0, "duration_s": 600.0}"#,
        )
        .unwrap();
    }
    let write_s = t.elapsed().as_secs_f64();
    println!(
        "fleet bench: {n} nodes, {:.0} MB of journals written in {write_s:.2} s (setup)",
        bytes as f64 / 1e6
    );

    let t = Instant::now();
    let input = load_fleet(dir.path()).expect("the fleet folder");
    let load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let report = analyse(&input, &Options::default());
    let analyse_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let html = render_html(&report);
    let html_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let text = render_text(&report);
    let text_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let json = render_json(&report);
    let json_s = t.elapsed().as_secs_f64();
    let figures: usize = report.groups.iter().map(|g| g.figures.len()).sum();
    println!("load     {load_s:8.3} s ({} nodes read)", input.nodes.len());
    println!(
        "analyse  {analyse_s:8.3} s ({} groups, {figures} figures, {} outliers, {} failed)",
        report.groups.len(),
        report.outliers.len(),
        report.failed.len()
    );
    println!(
        "html     {html_s:8.3} s ({:.2} MB)",
        html.len() as f64 / 1e6
    );
    println!(
        "text     {text_s:8.3} s ({:.2} MB)",
        text.len() as f64 / 1e6
    );
    println!(
        "json     {json_s:8.3} s ({:.2} MB)",
        json.len() as f64 / 1e6
    );
    if let Some(m) = peak_rss_mib() {
        println!("peak RSS {m:.0} MiB");
    }
    let flagged: Vec<&str> = report
        .outliers
        .iter()
        .filter(|o| o.figure.key.id == "mem.bandwidth.triad.all")
        .map(|o| o.node.as_str())
        .collect();
    println!("flagged on triad, all threads: {flagged:?}");
}
