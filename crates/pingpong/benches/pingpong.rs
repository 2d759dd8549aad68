//! Benchmarks that print figures (recorded in docs/benchmarks.md, "Core-to-core"):
//!
//! 1. Structure inference on the largest published matrices (256 PUs).
//! 2. Side by side with the `core-to-core-latency` tool (if installed: `cargo install
//!    core-to-core-latency`): the same pair (CPUs 1 and 0), the same 1000 round trips x
//!    300 samples, alternating runs, medians of the results and of the wall times.
//!
//! 3. The whole process: `numalab c2c --cpus 0-1 --samples 300 --round-trips 5000`
//!    against `core-to-core-latency 5000 300 -c 0,1`, alternating, wall time per run
//!    and the median latency each reports; the ratio of wall times is the median of
//!    same-round ratios with its range. numalab is `NUMALAB_BIN` (default: the release
//!    build in `target/release/numalab`, which `scripts/peers.sh` builds).
//!
//! Run: `cargo bench -p numalab-pingpong` (`C2C_RUNS=N` alternations, default 5;
//! `C2C_SKIP_STRUCTURE=1` skips part 1). `scripts/peers.sh` runs it with the others.

use numalab_pingpong::{measure_pair, Config, Variant};
use numalab_topo::bind::HwlocPlacer;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn structure_bench() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/c2c");
    println!("## structure inference (release build)");
    println!("| matrix | CPUs | median | min |");
    println!("|---|---|---|---|");
    for name in [
        "dual-amd-epyc-7742-64-core-processor.csv",
        "dual-amd-epyc-7763-64-core-processor.csv",
        "amd-epyc-7r13-48-core-processor.csv",
        "amd-epyc-7773x.csv",
        "intel-core-i9-12900k.csv",
    ] {
        let m = numalab_c2c::csv::read(&dir.join(name))
            .expect("fixture")
            .matrix;
        let mut times = Vec::new();
        let mut levels = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let s = numalab_c2c::infer(&m);
            times.push(t.elapsed().as_secs_f64() * 1e3);
            levels = s.levels.len();
        }
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "| {name} ({levels} levels) | {} | {:.0} ms | {:.0} ms |",
            m.n(),
            median(times),
            min
        );
    }
}

fn tool() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let candidates = [
        home.join(".cargo/bin/core-to-core-latency"),
        PathBuf::from("core-to-core-latency"),
    ];
    candidates
        .into_iter()
        .find(|p| Command::new(p).arg("--help").output().is_ok())
}

fn side_by_side() {
    let runs: usize = std::env::var("C2C_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let Some(tool) = tool() else {
        println!("core-to-core-latency is not installed: `cargo install core-to-core-latency` to compare");
        return;
    };
    let Ok(placer) = HwlocPlacer::new() else {
        println!("hwloc is not usable here: no side-by-side run");
        return;
    };
    let cfg = Config {
        variant: Variant::Cas,
        round_trips: 1000,
        samples: 300,
        warmup_samples: 0,
        home_node: None,
    };
    let (mut ours_mean, mut ours_median, mut ours_wall) = (Vec::new(), Vec::new(), Vec::new());
    let (mut theirs, mut theirs_wall) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let t = Instant::now();
        let out = Command::new(&tool)
            .args(["1000", "300", "-c", "0,1", "--csv"])
            .output()
            .expect("run core-to-core-latency");
        theirs_wall.push(t.elapsed().as_secs_f64());
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(v) = text
            .lines()
            .nth(1)
            .and_then(|l| l.split(',').next())
            .and_then(|f| f.trim().parse::<f64>().ok())
        {
            theirs.push(v);
        } else {
            theirs.push(f64::NAN);
            println!(
                "core-to-core-latency gave no figure (status {}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
                    .chars()
                    .take(300)
                    .collect::<String>()
            );
        }
        let t = Instant::now();
        let m = measure_pair(&placer, 1, 0, &cfg, &|| false).expect("measure 1-0");
        ours_wall.push(t.elapsed().as_secs_f64());
        let s = m.summary().expect("samples");
        ours_mean.push(s.mean);
        ours_median.push(s.median);
        println!(
            "run {}: core-to-core-latency mean {:.1} ns in {:.2} s | numalab mean {:.1} ns, median {:.1} ns in {:.2} s",
            ours_mean.len(),
            theirs.last().copied().unwrap_or(f64::NAN),
            theirs_wall.last().copied().unwrap_or(f64::NAN),
            s.mean,
            s.median,
            ours_wall.last().copied().unwrap_or(f64::NAN)
        );
    }
    println!();
    println!("## side by side with core-to-core-latency 1.2.0 (CAS, CPUs 1-0, 1000 round trips x 300 samples, {runs} alternating runs)");
    println!("| tool | latency (median of runs) | wall time per run (median) |");
    println!("|---|---|---|");
    println!(
        "| core-to-core-latency (mean of samples) | {:.1} ns | {:.2} s (process, incl. start-up) |",
        median(theirs.iter().copied().filter(|v| v.is_finite()).collect()),
        median(theirs_wall)
    );
    println!(
        "| numalab (mean of samples) | {:.1} ns | {:.2} s (one pair, incl. page and threads) |",
        median(ours_mean.clone()),
        median(ours_wall)
    );
    println!(
        "| numalab (median of samples) | {:.1} ns | |",
        median(ours_median)
    );
    let ratio = median(ours_mean) / median(theirs.into_iter().filter(|v| v.is_finite()).collect());
    println!("ratio numalab/core-to-core-latency (means): {ratio:.3}");
}

/// Median and range of same-round ratios, "0.95 (0.90..1.02)".
fn ratio_text(ratios: &[f64]) -> String {
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.2} ({lo:.2}..{hi:.2})", median(ratios.to_vec()))
}

/// Spread of repeated figures as (max - min) / median, in percent.
fn spread_pct(v: &[f64]) -> f64 {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    100.0 * (hi - lo) / median(v.to_vec())
}

fn numalab_bin() -> PathBuf {
    std::env::var_os("NUMALAB_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/numalab")
        })
}

fn whole_process() {
    let runs: usize = std::env::var("C2C_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let Some(tool) = tool() else {
        println!("core-to-core-latency is not installed: no whole-process comparison");
        return;
    };
    let bin = numalab_bin();
    if Command::new(&bin).arg("--version").output().is_err() {
        println!(
            "{}: no numalab binary (cargo build --release -p numalab, or set NUMALAB_BIN): no whole-process comparison",
            bin.display()
        );
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (mut ours_wall, mut theirs_wall, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ours_lat, mut theirs_lat) = (Vec::new(), Vec::new());
    for r in 0..runs {
        // Alternate which tool goes first, so that neither always follows the other.
        let mut pair = [0.0f64; 2];
        for side in [r % 2, 1 - r % 2] {
            if side == 0 {
                let t = Instant::now();
                let out = Command::new(&tool)
                    .args(["5000", "300", "-c", "0,1", "--csv"])
                    .output()
                    .expect("run core-to-core-latency");
                pair[0] = t.elapsed().as_secs_f64();
                let text = String::from_utf8_lossy(&out.stdout);
                theirs_lat.push(
                    text.lines()
                        .nth(1)
                        .and_then(|l| l.split(',').next())
                        .and_then(|f| f.trim().parse::<f64>().ok())
                        .unwrap_or(f64::NAN),
                );
            } else {
                let out_dir = dir.path().join(format!("run{r}"));
                let t = Instant::now();
                let out = Command::new(&bin)
                    .args([
                        "c2c",
                        "--cpus",
                        "0-1",
                        "--samples",
                        "300",
                        "--round-trips",
                        "5000",
                        "--json",
                        "--out",
                    ])
                    .arg(&out_dir)
                    .output()
                    .expect("run numalab c2c");
                pair[1] = t.elapsed().as_secs_f64();
                let v: serde_json::Value =
                    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
                // The pair's record: its latency is the median of its samples.
                let lat = v
                    .get("records")
                    .and_then(|r| r.as_array())
                    .and_then(|r| r.iter().find(|x| x["kind"] == "c2c.pair"))
                    .and_then(|x| x.pointer("/data/latency_ns"))
                    .and_then(|x| x.as_f64())
                    .unwrap_or(f64::NAN);
                if !lat.is_finite() {
                    println!(
                        "numalab c2c gave no figure (status {}): {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                            .chars()
                            .take(300)
                            .collect::<String>()
                    );
                }
                ours_lat.push(lat);
            }
        }
        theirs_wall.push(pair[0]);
        ours_wall.push(pair[1]);
        ratios.push(pair[1] / pair[0]);
        println!(
            "round {}: core-to-core-latency {:.3} s, mean {:.1} ns | numalab c2c {:.3} s, median {:.1} ns",
            r + 1,
            pair[0],
            theirs_lat.last().copied().unwrap_or(f64::NAN),
            pair[1],
            ours_lat.last().copied().unwrap_or(f64::NAN)
        );
    }
    let finite = |v: &[f64]| {
        v.iter()
            .copied()
            .filter(|x| x.is_finite())
            .collect::<Vec<_>>()
    };
    println!();
    println!("## whole process: `numalab c2c --cpus 0-1 --samples 300 --round-trips 5000 --json --out DIR` against `core-to-core-latency 5000 300 -c 0,1 --csv` ({runs} alternating rounds)");
    println!("| tool | wall time (median) | latency (median of runs) | latency spread over runs |");
    println!("|---|---|---|---|");
    println!(
        "| core-to-core-latency | {:.3} s | {:.1} ns (mean of samples) | {:.0}% |",
        median(theirs_wall),
        median(finite(&theirs_lat)),
        spread_pct(&finite(&theirs_lat))
    );
    println!(
        "| numalab c2c | {:.3} s | {:.1} ns (median of samples) | {:.0}% |",
        median(ours_wall),
        median(finite(&ours_lat)),
        spread_pct(&finite(&ours_lat))
    );
    println!(
        "wall time numalab / core-to-core-latency, median of same-round ratios (range): {}",
        ratio_text(&ratios)
    );
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing special.
    if std::env::var_os("C2C_SKIP_STRUCTURE").is_none() {
        structure_bench();
    }
    side_by_side();
    whole_process();
}
