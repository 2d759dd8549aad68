//! Memory benchmark: numalab's bandwidth kernels side by side with likwid-bench, the
//! idle latency at 1 GiB with and without huge pages, and the local migration figures.
//!
//! Run: `cargo bench -p numalab-mem --bench vs_likwid` (likwid-bench from the Debian
//! package `likwid`; without it only numalab's figures are printed). Both tools run
//! alternately in the same process, kernel by kernel, round after round, with the same
//! threads (the first N CPUs; likwid's `S0:SIZE:N` pins to the same hardware threads
//! on a one-socket machine) and the same working set (likwid's `-w` size: all arrays
//! together, MB = 10^6 bytes), so that a noisy shared machine hits both alike; medians
//! over rounds are reported. Both count bandwidth the STREAM way (no write-allocate).
//!
//! Environment: NUMALAB_BENCH_MB (working set, default 1000), NUMALAB_BENCH_THREADS
//! (default: every PU of package 0), NUMALAB_BENCH_ROUNDS (default 5),
//! NUMALAB_BENCH_SKIP (comma list of parts to skip: bandwidth, latency, migrate).

use numalab_mem::bandwidth::{self, BandwidthRecord};
use numalab_mem::budget::Budgets;
use numalab_mem::kernels::{self, Kernel};
use numalab_mem::latency::{self, LatencyRecord};
use numalab_mem::migrate::{self, MigrateRecord};
use numalab_mem::PageRequest;
use numalab_schema::Record;
use numalab_topo::bind::{HwlocPlacer, MemPolicy};
use std::process::Command;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    numalab_stats::median(&v).unwrap_or(f64::NAN)
}

/// Runs likwid-bench once; returns MByte/s / 1000 (GB/s) and the working set in bytes.
fn likwid(test: &str, mb: u64, threads: usize) -> Option<(f64, u64)> {
    let out = Command::new("timeout")
        .args([
            "300",
            "likwid-bench",
            "-t",
            test,
            "-w",
            &format!("S0:{mb}MB:{threads}"),
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(name))?
            .split_whitespace()
            .last()?
            .parse()
            .ok()
    };
    Some((field("MByte/s:")? / 1000.0, field("Size (Byte):")? as u64))
}

fn ours(
    machine: &numalab_schema::Machine,
    placer: &HwlocPlacer,
    kernel: Kernel,
    bytes: u64,
    cpus: &[u32],
) -> f64 {
    let mut o = bandwidth::Options::defaults(machine);
    o.kernels = vec![kernel];
    o.working_set_bytes = bytes;
    o.reps = 5;
    let budgets = Budgets::live(machine);
    let plan = bandwidth::plan(
        machine,
        &budgets,
        cpus,
        &[cpus.len()],
        &MemPolicy::FirstTouch,
        o,
    )
    .expect("a valid plan");
    let mut recs: Vec<Record> = Vec::new();
    let out = bandwidth::run(&plan, machine, placer, &mut recs);
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    recs[0]
        .decode::<BandwidthRecord>()
        .unwrap()
        .unwrap()
        .bandwidth_gbps
        .median
}

fn main() {
    // `cargo bench` passes --bench; nothing else is expected.
    let machine = numalab_topo::live().expect("the live topology");
    let placer = HwlocPlacer::new().expect("hwloc binding");
    let skip = std::env::var("NUMALAB_BENCH_SKIP").unwrap_or_default();
    let pkg0: Vec<u32> = machine
        .packages
        .first()
        .map(|p| p.cpus.clone())
        .unwrap_or_else(|| machine.pu_ids());
    let threads = env_num("NUMALAB_BENCH_THREADS", pkg0.len() as u64) as usize;
    let cpus: Vec<u32> = pkg0.into_iter().take(threads).collect();
    let mb = env_num("NUMALAB_BENCH_MB", 1000);
    let rounds = env_num("NUMALAB_BENCH_ROUNDS", 5) as usize;
    let best = kernels::best();
    let has_likwid = Command::new("likwid-bench").arg("-h").output().is_ok();
    println!(
        "# numalab mem benchmark: {} ({} threads on CPUs {}, {mb} MB working set, {rounds} rounds, ISA {best})",
        machine.cpu.model_name.clone().unwrap_or_default(),
        cpus.len(),
        numalab_schema::cpulist::format(&cpus)
    );
    if !skip.contains("bandwidth") {
        if !has_likwid {
            println!(
                "likwid-bench not found (Debian: apt-get install likwid): numalab figures only"
            );
        }
        let avx512 = kernels::Isa::Avx512.available();
        // (ours, likwid AVX, likwid AVX-512)
        let pairs: Vec<(&str, &str, &str)> = vec![
            ("triad", "stream_avx", "stream_avx512"),
            ("copy", "copy_avx", "copy_avx512"),
            ("read", "load_avx", "load_avx512"),
            ("triad-nt", "stream_mem_avx", "stream_mem_avx512"),
            ("copy-nt", "copy_mem_avx", "copy_mem_avx512"),
        ];
        let mut ours_gbps: Vec<Vec<f64>> = vec![Vec::new(); pairs.len()];
        let mut lk_avx: Vec<Vec<f64>> = vec![Vec::new(); pairs.len()];
        let mut lk_512: Vec<Vec<f64>> = vec![Vec::new(); pairs.len()];
        let mut sizes: Vec<u64> = vec![mb * 1_000_000; pairs.len()];
        for r in 0..rounds {
            for k in 0..pairs.len() {
                let i = (k + r) % pairs.len();
                let (ok, la, l5) = pairs[i];
                if has_likwid {
                    if let Some((g, size)) = likwid(la, mb, cpus.len()) {
                        lk_avx[i].push(g);
                        sizes[i] = size;
                    }
                }
                ours_gbps[i].push(ours(
                    &machine,
                    &placer,
                    Kernel::parse(ok).unwrap(),
                    sizes[i],
                    &cpus,
                ));
                if has_likwid && avx512 {
                    if let Some((g, _)) = likwid(l5, mb, cpus.len()) {
                        lk_512[i].push(g);
                    }
                }
            }
            eprintln!("round {} of {rounds} done", r + 1);
        }
        println!("\n| kernel | numalab ({best}) GB/s | likwid-bench AVX GB/s | likwid-bench AVX-512 GB/s | ratio numalab / best likwid |");
        println!("|---|---|---|---|---|");
        for (i, (ok, la, l5)) in pairs.iter().enumerate() {
            let o = median(ours_gbps[i].clone());
            let a = median(lk_avx[i].clone());
            let b = median(lk_512[i].clone());
            let best_l = [a, b]
                .into_iter()
                .filter(|x| x.is_finite())
                .fold(f64::NAN, f64::max);
            println!(
                "| {ok} vs {la} / {l5} | {o:.2} | {a:.2} | {b:.2} | {:.2} |",
                o / best_l
            );
        }
        println!(
            "\nMedians over {rounds} alternating rounds; numalab: median of 5 timed rounds per run; likwid-bench: its own figure per run."
        );
    }
    if !skip.contains("latency") {
        // Idle latency at 1 GiB: base vs transparent huge pages, page-local and global
        // order, every line or one line per pair, alternating.
        let budgets = Budgets::live(&machine);
        let cpu = cpus[0];
        let mut results: Vec<(String, Vec<f64>, String)> = Vec::new();
        let line = latency::Options::defaults(&machine).stride_bytes;
        let mut configs = Vec::new();
        for stride in [line, 2 * line] {
            for order in [
                numalab_mem::chase::Order::PageLocal,
                numalab_mem::chase::Order::Global,
            ] {
                for pages in [PageRequest::Base, PageRequest::Thp] {
                    configs.push((pages, order, stride));
                }
            }
        }
        for (p, o, st) in &configs {
            results.push((
                format!("{} pages, {} order, stride {st} B", p.name(), o.name()),
                Vec::new(),
                String::new(),
            ));
        }
        for _ in 0..3 {
            for (i, (p, o, st)) in configs.iter().enumerate() {
                let mut opts = latency::Options::defaults(&machine);
                opts.order = *o;
                opts.stride_bytes = *st;
                let plan = latency::plan(
                    &machine,
                    &budgets,
                    &[cpu],
                    &MemPolicy::FirstTouch,
                    &[*p],
                    vec![1 << 30],
                    opts,
                )
                .expect("a valid latency plan");
                let mut recs: Vec<Record> = Vec::new();
                latency::run(&plan, &machine, &placer, &mut recs);
                let l: LatencyRecord = recs[0].decode().unwrap().unwrap();
                results[i].1.push(l.points[0].latency_ns.median);
                results[i].2 = l.pages.obtained.clone();
            }
        }
        println!(
            "\n| idle latency, 1 GiB, CPU {cpu} | p50 ns (median of 3 runs) | pages obtained |"
        );
        println!("|---|---|---|");
        for (name, v, got) in results {
            println!("| {name} | {:.1} | {got} |", median(v));
        }
    }
    if !skip.contains("migrate") {
        let budgets = Budgets::live(&machine);
        let plan = migrate::plan(
            &machine,
            &budgets,
            &migrate::PairChoice::NearestFarthest,
            None,
            migrate::Options::defaults(),
            false,
        )
        .expect("a valid migrate plan");
        for n in &plan.notes {
            println!("\nnote: {n}");
        }
        let mut recs: Vec<Record> = Vec::new();
        migrate::run(&plan, &machine, &budgets, &placer, &mut recs);
        let rs: Vec<MigrateRecord> = recs
            .iter()
            .filter_map(|r| r.decode().and_then(Result::ok))
            .collect();
        if let Some(r) = rs.first() {
            println!("\nreference: {}", r.reference.detail);
        }
        println!("\n| unit | pages | memcpy GB/s (%) | move_pages | stream_copy GB/s (%) | fault ns/base page | winner |");
        println!("|---|---|---|---|---|---|---|");
        for r in &rs {
            let cell = |i: usize| {
                let m = &r.methods[i];
                match (&m.throughput_gbps, m.percent_of_reference) {
                    (Some(t), Some(p)) => format!("{:.2} ({p:.0}%)", t.median),
                    _ => format!("{:.0} ns/unit, nothing moved", m.ns_per_page),
                }
            };
            println!(
                "| {} | {} | {} | {} | {} | {:.0} | {} |",
                numalab_schema::units::bytes(r.unit_bytes),
                r.pages,
                cell(0),
                cell(1),
                cell(2),
                r.destination_fault_ns_per_base_page.unwrap_or(f64::NAN),
                r.winner.map_or("-", |w| w.name())
            );
        }
        for line in migrate::conclude(&rs) {
            println!("\n{line}");
        }
    }
}
