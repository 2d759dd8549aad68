//! Benchmarks that print figures (recorded in docs/benchmarks.md, "Core-to-core"):
//!
//! 1. Structure inference on the largest published matrices (256 PUs).
//! 2. Side by side with the `core-to-core-latency` tool (if installed: `cargo install
//!    core-to-core-latency`): the same pair (CPUs 1 and 0), the same 1000 round trips x
//!    300 samples, alternating runs, medians of the results and of the wall times.
//!
//! Run: `cargo bench -p numalab-pingpong` (`C2C_RUNS=N` alternations, default 5).

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

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` passes nothing special.
    structure_bench();
    side_by_side();
}
