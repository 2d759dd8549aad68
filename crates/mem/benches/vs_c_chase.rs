//! Memory latency against an independent C pointer chase: numalab's headline figure
//! (the node matrix's local cell: idle, uniformly random over the whole working set,
//! every 64-byte line, on the asked page kind) beside `benches/c/chase.c`, a plain C
//! chase written apart from numalab (its own shuffle, its own timing loop), over the
//! same working set, page kind and order, on the same CPU.
//!
//! Run: `cargo bench -p numalab-mem --bench vs_c_chase` (needs a C compiler, `cc`, and
//! `taskset`). Both run alternately, round after round, so that a noisy host hits both
//! alike; the figure is the median over rounds of each round's ratio numalab / C, and
//! the agreement asked of numalab is within 5%.
//!
//! Environment: NUMALAB_BENCH_ROUNDS (default 7, at least 5), NUMALAB_BENCH_LAT_MB
//! (working set in MiB, default numalab's idle working set: 8x the last-level cache,
//! at least 256 MiB), NUMALAB_BENCH_PAGES (comma list of thp, base; default both).

use numalab_mem::budget::Budgets;
use numalab_mem::latency::{self, LatencyRecord};
use numalab_mem::PageRequest;
use numalab_schema::Record;
use numalab_topo::bind::HwlocPlacer;
use std::path::{Path, PathBuf};
use std::process::Command;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(v: &[f64]) -> f64 {
    let v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    numalab_stats::median(&v).unwrap_or(f64::NAN)
}

/// Compiles the C chase; returns the binary.
fn compile() -> Result<PathBuf, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/c/chase.c");
    let out = std::env::temp_dir().join(format!("numalab-chase-{}", std::process::id()));
    let st = Command::new("cc")
        .args(["-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .map_err(|e| format!("cc: {e} (install a C compiler: apt-get install gcc)"))?;
    if !st.success() {
        return Err(format!("cc failed on {}", src.display()));
    }
    Ok(out)
}

/// One run of the C chase on `cpu`: (ns per load, THP bytes of its buffer).
fn c_chase(bin: &Path, cpu: u32, bytes: u64, pages: &str, seed: u64) -> Result<(f64, i64), String> {
    let out = Command::new("taskset")
        .args(["-c", &cpu.to_string()])
        .arg(bin)
        .args([&bytes.to_string(), pages, "1", &seed.to_string()])
        .output()
        .map_err(|e| format!("taskset: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> Option<String> {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")).map(str::to_string))
    };
    match (field("ns_per_load"), field("thp_bytes")) {
        (Some(ns), Some(thp)) => Ok((
            ns.parse().map_err(|_| format!("bad output: {text}"))?,
            thp.parse().unwrap_or(-1),
        )),
        _ => Err(format!(
            "the C chase failed: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

fn main() {
    let machine = numalab_topo::live().expect("the live topology");
    let placer = HwlocPlacer::new().expect("hwloc binding");
    let budgets = Budgets::live(&machine);
    let rounds = env_num("NUMALAB_BENCH_ROUNDS", 7).max(5);
    let bytes = match std::env::var("NUMALAB_BENCH_LAT_MB") {
        Ok(mb) => mb.parse::<u64>().expect("NUMALAB_BENCH_LAT_MB: MiB") << 20,
        Err(_) => latency::default_idle_size(&machine),
    };
    let kinds: Vec<String> = std::env::var("NUMALAB_BENCH_PAGES")
        .unwrap_or_else(|_| "thp,base".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let bin = match compile() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("vs_c_chase: {e}; nothing measured");
            return;
        }
    };
    println!(
        "memory latency, idle, random over {} ({} rounds, alternating numalab and the C chase)",
        numalab_schema::units::bytes(bytes),
        rounds
    );
    println!(
        "\n| pages | round | numalab ns | C chase ns | numalab / C | numalab pages | C THP bytes |"
    );
    println!("|---|---:|---:|---:|---:|---|---:|");
    let mut summary = Vec::new();
    for kind in &kinds {
        let req = match kind.as_str() {
            "thp" => PageRequest::Thp,
            "base" => PageRequest::Base,
            other => panic!("NUMALAB_BENCH_PAGES: {other:?} is not thp or base"),
        };
        let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            // numalab's headline path: the node matrix at this working set, its local
            // cell of the first node with CPUs.
            let mut plan = latency::plan_matrix(
                &machine,
                &budgets,
                &[req],
                bytes,
                latency::Options::idle(&machine),
            )
            .expect("a valid latency plan");
            plan.cells
                .retain(|c| c.matrix.is_some_and(|m| m.cpu_node == m.mem_node));
            plan.cells.truncate(1);
            let cpu = plan.cells[0].cpu;
            let mut recs: Vec<Record> = Vec::new();
            let out = latency::run(&plan, &machine, &placer, &mut recs);
            assert!(out.failed.is_empty(), "{:?}", out.failed);
            let l: LatencyRecord = recs[0].decode().unwrap().unwrap();
            let n = l.points[0].latency_ns.median;
            let (c, thp) = match c_chase(&bin, cpu, bytes, kind, 1000 + round) {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("vs_c_chase: {e}");
                    return;
                }
            };
            println!(
                "| {kind} | {} | {n:.1} | {c:.1} | {:.3} | {} | {thp} |",
                round + 1,
                n / c,
                l.pages.obtained
            );
            ours.push(n);
            theirs.push(c);
            ratios.push(n / c);
        }
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        summary.push((
            kind.clone(),
            median(&ours),
            median(&theirs),
            median(&ratios),
            lo,
            hi,
        ));
    }
    let _ = std::fs::remove_file(&bin);
    println!("\n| pages | numalab ns (median) | C chase ns (median) | numalab / C, median of rounds (range) | within 5% |");
    println!("|---|---:|---:|---:|---|");
    for (kind, n, c, r, lo, hi) in summary {
        println!(
            "| {kind} | {n:.1} | {c:.1} | {r:.3} ({lo:.3}-{hi:.3}) | {} |",
            if (r - 1.0).abs() <= 0.05 { "yes" } else { "NO" }
        );
    }
}
