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
//! NUMALAB_BENCH_SKIP (comma list of parts to skip: bandwidth, latency, migrate),
//! NUMALAB_BENCH_KERNELS (comma list of kernels, default all seven),
//! NUMALAB_BENCH_WIDTHS=1 (also numalab with each vector width forced),
//! NUMALAB_BENCH_PAGES=thp (numalab's arrays on transparent huge pages; default base
//! pages, as likwid-bench's buffers get under the usual THP `madvise` setting).

use numalab_mem::bandwidth::{self, BandwidthRecord};
use numalab_mem::budget::Budgets;
use numalab_mem::kernels::{self, IsaExt, Kernel};
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

/// One numalab run: `isa` given (as `--isa`), or None for numalab's own choice (the
/// variant trial). Returns GB/s (team), GB/s (slowest thread) and the ISA that ran.
fn ours(
    machine: &numalab_schema::Machine,
    placer: &HwlocPlacer,
    kernel: Kernel,
    bytes: u64,
    cpus: &[u32],
    isa: Option<kernels::Isa>,
) -> (f64, f64, String) {
    let mut o = bandwidth::Options::defaults(machine);
    o.kernels = vec![kernel];
    if let Some(isa) = isa {
        o.isa = isa;
        o.isa_forced = true;
    }
    o.working_set_bytes = bytes;
    o.size_given = true;
    o.reps = 5;
    o.pages = match std::env::var("NUMALAB_BENCH_PAGES").as_deref() {
        Ok("thp") => PageRequest::Thp,
        Ok("base") | Err(_) => PageRequest::Base,
        Ok(other) => panic!("NUMALAB_BENCH_PAGES: {other:?} is not thp or base"),
    };
    // Samples of at least 200 ms: about a second of timed work per run, like one
    // likwid-bench run, so both see the same kind of noise.
    o.min_sample_ns = 200e6;
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
    let b = recs[0].decode::<BandwidthRecord>().unwrap().unwrap();
    (
        b.bandwidth_gbps.median,
        b.slowest_thread_gbps.median,
        b.isa.label(),
    )
}

/// What every part of the benchmark shares: the machine, the binder, the CPUs, the
/// working set and the rounds.
struct Bench {
    machine: numalab_schema::Machine,
    placer: HwlocPlacer,
    cpus: Vec<u32>,
    mb: u64,
    rounds: usize,
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
    let bench = Bench {
        machine,
        placer,
        cpus,
        mb,
        rounds,
    };
    if !skip.contains("bandwidth") {
        bandwidth_part(&bench, has_likwid);
    }
    if !skip.contains("latency") {
        latency_part(&bench);
    }
    if !skip.contains("migrate") {
        migrate_part(&bench);
    }
}

/// One kernel's figures, per round: likwid 256, likwid 512, numalab auto, avx2, avx512.
type Rows = Vec<Vec<[f64; 5]>>;

/// The bandwidth kernels, numalab beside likwid-bench, alternating; prints the table.
fn bandwidth_part(bench: &Bench, has_likwid: bool) {
    if !has_likwid {
        println!("likwid-bench not found (Debian: apt-get install likwid): numalab figures only");
    }
    // likwid in its 256-bit and 512-bit variants (what the CPU has); numalab as a
    // user gets it: one run that picks its variant itself (the ISA trial), plus,
    // with NUMALAB_BENCH_WIDTHS=1, each width forced.
    let widths = std::env::var_os("NUMALAB_BENCH_WIDTHS").is_some();
    let pairs: Vec<(&str, &str, &str)> = vec![
        ("triad", "stream_avx", "stream_avx512"),
        ("copy", "copy_avx", "copy_avx512"),
        ("read", "load_avx", "load_avx512"),
        ("write", "store_avx", "store_avx512"),
        ("triad-nt", "stream_mem_avx", "stream_mem_avx512"),
        ("copy-nt", "copy_mem_avx", "copy_mem_avx512"),
        ("write-nt", "store_mem_avx", "store_mem_avx512"),
    ];
    let only = std::env::var("NUMALAB_BENCH_KERNELS").unwrap_or_default();
    let pairs: Vec<(&str, &str, &str)> = pairs
        .into_iter()
        .filter(|(k, _, _)| only.is_empty() || only.split(',').any(|o| o == *k))
        .collect();
    let (rows, chosen) = bandwidth_rounds(bench, &pairs, has_likwid, widths);
    print_bandwidth(bench, &pairs, &rows, &chosen, widths);
}

/// Runs every kernel with both tools for each round, rotating the kernels and
/// alternating which tool goes first. Returns the rows and the ISAs numalab chose.
fn bandwidth_rounds(
    bench: &Bench,
    pairs: &[(&str, &str, &str)],
    has_likwid: bool,
    widths: bool,
) -> (Rows, Vec<Vec<String>>) {
    let (machine, placer, cpus, mb, rounds) = (
        &bench.machine,
        &bench.placer,
        &bench.cpus,
        bench.mb,
        bench.rounds,
    );
    let has512 = kernels::Isa::Avx512.available();
    let nan = f64::NAN;
    let mut rows: Rows = vec![Vec::with_capacity(rounds); pairs.len()];
    let mut chosen: Vec<Vec<String>> = vec![Vec::new(); pairs.len()];
    let mut sizes: Vec<u64> = vec![mb * 1_000_000; pairs.len()];
    for r in 0..rounds {
        for k in 0..pairs.len() {
            let i = (k + r) % pairs.len();
            let (ok, l256, l512) = pairs[i];
            let kernel = Kernel::parse(ok).unwrap();
            // Alternate which tool goes first from round to round.
            let mut steps: Vec<usize> = vec![0, 2];
            if has512 {
                steps.insert(1, 1);
            }
            if widths {
                steps.push(3);
                if has512 {
                    steps.push(4);
                }
            }
            if r % 2 == 1 {
                steps.reverse();
            }
            let mut row = [nan; 5];
            for v in steps {
                let g = match v {
                    0 | 1 => {
                        let test = if v == 0 { l256 } else { l512 };
                        if !has_likwid {
                            continue;
                        }
                        match likwid(test, mb, cpus.len()) {
                            Some((g, size)) => {
                                sizes[i] = size;
                                g
                            }
                            None => nan,
                        }
                    }
                    2 => {
                        let (g, _, isa) = ours(machine, placer, kernel, sizes[i], cpus, None);
                        chosen[i].push(isa);
                        g
                    }
                    _ => {
                        let isa = if v == 3 {
                            kernels::Isa::Avx2
                        } else {
                            kernels::Isa::Avx512
                        };
                        ours(machine, placer, kernel, sizes[i], cpus, Some(isa)).0
                    }
                };
                row[v] = g;
            }
            rows[i].push(row);
        }
        eprintln!("round {} of {rounds} done", r + 1);
    }
    (rows, chosen)
}

/// A list of ratios as `median (lo..hi)`, or `-` when none is finite.
fn ratio_text(ratios: Vec<f64>) -> String {
    let ratios: Vec<f64> = ratios.into_iter().filter(|x| x.is_finite()).collect();
    if ratios.is_empty() {
        return "-".into();
    }
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.2} ({lo:.2}..{hi:.2})", median(ratios))
}

/// Prints the bandwidth table: medians per tool, ratios, the ISAs numalab chose.
fn print_bandwidth(
    bench: &Bench,
    pairs: &[(&str, &str, &str)],
    rows: &Rows,
    chosen: &[Vec<String>],
    widths: bool,
) {
    let rounds = bench.rounds;
    let med = |i: usize, v: usize| -> String {
        let x = median(rows[i].iter().map(|row| row[v]).collect());
        if x.is_finite() {
            format!("{x:.2}")
        } else {
            "-".into()
        }
    };
    println!(
        "\n| kernel (likwid tests) | numalab (its choice) | likwid AVX | likwid AVX-512 | numalab / likwid's best | ISA numalab chose |{}",
        if widths { " numalab avx2 | numalab avx512 | avx2 / AVX | avx512 / AVX-512 |" } else { "" }
    );
    println!(
        "|---|---|---|---|---|---|{}",
        if widths { "---|---|---|---|" } else { "" }
    );
    for (i, (ok, l256, l512)) in pairs.iter().enumerate() {
        // Same-round ratio: numalab's one run against the better of likwid's two.
        let vs_best = ratio_text(
            rows[i]
                .iter()
                .map(|row| row[2] / row[0].max(if row[1].is_nan() { 0.0 } else { row[1] }))
                .collect(),
        );
        let mut isas = chosen[i].clone();
        isas.sort();
        let mut counted: Vec<String> = Vec::new();
        for isa in &isas {
            let n = isas.iter().filter(|x| *x == isa).count();
            let t = format!("{isa} x{n}");
            if !counted.contains(&t) {
                counted.push(t);
            }
        }
        let mut line = format!(
            "| {ok} ({l256}, {l512}) | {} | {} | {} | {vs_best} | {} |",
            med(i, 2),
            med(i, 0),
            med(i, 1),
            counted.join(", ")
        );
        if widths {
            line.push_str(&format!(
                " {} | {} | {} | {} |",
                med(i, 3),
                med(i, 4),
                ratio_text(rows[i].iter().map(|row| row[3] / row[0]).collect()),
                ratio_text(rows[i].iter().map(|row| row[4] / row[1]).collect())
            ));
        }
        println!("{line}");
    }
    println!(
        "\nnumalab's pages: {}",
        std::env::var("NUMALAB_BENCH_PAGES").unwrap_or_else(|_| "base".into())
    );
    println!(
        "\nGB/s (STREAM count, 10^9 B/s): medians over {rounds} alternating rounds. numalab runs as a user gets it (no --isa: it tries this CPU's vector ISAs in an untimed trial and keeps the fastest), median of 5 timed samples of >= 200 ms (team time); likwid-bench: its own figure per run (1-4 s), both widths, and the ratio is against the better of the two in the same round. Ratios: median (range) over rounds."
    );
}

/// Idle latency at 1 GiB: base vs transparent huge pages, page-local and global order,
/// every line or one line per pair, alternating; prints the table.
fn latency_part(bench: &Bench) {
    let (machine, placer) = (&bench.machine, &bench.placer);
    let budgets = Budgets::live(machine);
    let cpu = bench.cpus[0];
    let mut results: Vec<(String, Vec<f64>, String)> = Vec::new();
    let line = latency::Options::defaults(machine).stride_bytes;
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
            let mut opts = latency::Options::defaults(machine);
            opts.order = *o;
            opts.stride_bytes = *st;
            let plan = latency::plan(
                machine,
                &budgets,
                &[cpu],
                &MemPolicy::FirstTouch,
                &[*p],
                vec![1 << 30],
                opts,
            )
            .expect("a valid latency plan");
            let mut recs: Vec<Record> = Vec::new();
            latency::run(&plan, machine, placer, &mut recs);
            let l: LatencyRecord = recs[0].decode().unwrap().unwrap();
            results[i].1.push(l.points[0].latency_ns.median);
            results[i].2 = l.pages.obtained.clone();
        }
    }
    println!("\n| idle latency, 1 GiB, CPU {cpu} | p50 ns (median of 3 runs) | pages obtained |");
    println!("|---|---|---|");
    for (name, v, got) in results {
        println!("| {name} | {:.1} | {got} |", median(v));
    }
}

/// The local migration figures (nearest and farthest node pairs); prints the table.
fn migrate_part(bench: &Bench) {
    let (machine, placer) = (&bench.machine, &bench.placer);
    let budgets = Budgets::live(machine);
    let plan = migrate::plan(
        machine,
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
    migrate::run(&plan, machine, &budgets, placer, &mut recs);
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
