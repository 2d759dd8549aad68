//! Benchmark of the reference workload (prints figures; asserts nothing about time).
//!
//! `cargo bench -p numalab-workload` prints: generation time and memory per node of the
//! default 2-million-node graph; allocations per request in steady state (counted by a
//! global allocator wrapper); single-thread cost of each request kind; and requests/s
//! with 1 and 2 client threads in each placement mode, modes alternated round by round
//! and medians reported (the machine may be shared). `NUMALAB_BENCH_ROUNDS` (default 3)
//! and `NUMALAB_BENCH_SECONDS` (default 3) set the rounds and the window of each run.

use numalab_clock::now_ns;
use numalab_workload::graph::{generate, GraphSpec, GraphStats, DEFAULT_NODES};
use numalab_workload::itinerary::EaParams;
use numalab_workload::request::{Request, RequestGen, RequestKind, Worker};
use numalab_workload::run::{run_on, state_bytes_estimate, RunConfig};
use numalab_workload::{CpuOrder, Mode};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let rounds = env_usize("NUMALAB_BENCH_ROUNDS", 3);
    let seconds = env_usize("NUMALAB_BENCH_SECONDS", 3) as f64;
    let spec = GraphSpec {
        seed: 1,
        nodes: DEFAULT_NODES,
    };

    // 1. Generation.
    let mut gen_s = Vec::new();
    let mut graph = None;
    for _ in 0..3 {
        let t = now_ns();
        let g = generate(&spec).expect("generate");
        gen_s.push((now_ns() - t) as f64 / 1e9);
        graph = Some(g);
    }
    let graph = graph.unwrap();
    let stats = GraphStats::of(&graph.view(), true);
    println!("## Generation ({} nodes, seed {})", spec.nodes, spec.seed);
    println!(
        "generation: median {:.2} s over 3 (min {:.2} s)",
        median(&mut gen_s.clone()),
        gen_s.iter().copied().fold(f64::INFINITY, f64::min)
    );
    println!(
        "streets {}, mean degree {:.2}, components {:?}, weights min/median/max {}/{}/{} ms",
        stats.edges,
        stats.mean_degree,
        stats.components,
        stats.weight_min_ms,
        stats.weight_median_ms,
        stats.weight_max_ms
    );
    let total: u64 = stats.degree_histogram.iter().sum();
    let hist: Vec<String> = stats
        .degree_histogram
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(d, c)| format!("{d}: {:.1}%", *c as f64 * 100.0 / total as f64))
        .collect();
    println!("degrees: {}", hist.join(", "));
    println!(
        "graph copy: {:.1} MiB = {:.1} bytes/node; search state per client: {:.1} MiB = {:.1} bytes/node",
        graph.bytes() as f64 / (1 << 20) as f64,
        graph.bytes() as f64 / spec.nodes as f64,
        state_bytes_estimate(spec.nodes) as f64 / (1 << 20) as f64,
        state_bytes_estimate(spec.nodes) as f64 / spec.nodes as f64
    );

    // 2. Allocations and single-thread cost per request kind.
    println!("\n## Requests, one thread, no harness");
    let view = graph.view();
    for (name, share) in [("route", 1.0), ("itinerary", 0.0)] {
        let mut worker = Worker::new(spec.nodes, EaParams::default());
        let mut gen = RequestGen::new(&view, 7, 0, share);
        let mut req = Request::default();
        for _ in 0..50 {
            gen.next(&mut req);
            std::hint::black_box(worker.serve(&view, &req));
        }
        let n = if name == "route" { 1000 } else { 200 };
        let a0 = ALLOCS.load(Ordering::Relaxed);
        let c = thread_cpu_s();
        let t = now_ns();
        let mut settled = 0;
        for _ in 0..n {
            gen.next(&mut req);
            let a = worker.serve(&view, &req);
            settled += a.settled;
            assert_eq!(
                a.kind,
                if share == 1.0 {
                    RequestKind::Route
                } else {
                    RequestKind::Itinerary
                }
            );
        }
        let dt = (now_ns() - t) as f64 / 1e9;
        let cpu = thread_cpu_s() - c;
        let allocs = ALLOCS.load(Ordering::Relaxed) - a0;
        println!(
            "{name}: {n} requests after 50 warm-up: {:.2} ms/request wall, {:.2} ms/request CPU, {:.0} nodes settled/request, {:.1} M nodes settled per CPU-second, allocations/request {:.3}",
            dt * 1e3 / n as f64,
            cpu * 1e3 / n as f64,
            settled as f64 / n as f64,
            settled as f64 / cpu / 1e6,
            allocs as f64 / n as f64
        );
    }

    // 3. Runs through the real harness, modes alternated.
    let machine = numalab_topo::live().expect("live topology");
    let placer = numalab_topo::bind::HwlocPlacer::new().expect("hwloc placer");
    let pus = machine.pus.len();
    let threads: Vec<usize> = if pus >= 2 { vec![1, 2] } else { vec![1] };
    println!(
        "\n## Runs: {rounds} rounds x {} modes x threads {threads:?}, {seconds} s each (0.5 s warm-up), default mix (80% routes), compact",
        Mode::ALL.len()
    );
    type Figures = ((Mode, usize), Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);
    let mut figures: Vec<Figures> = Vec::new();
    for _ in 0..rounds {
        for &t in &threads {
            for mode in Mode::ALL {
                let config = RunConfig {
                    threads: t,
                    placement: CpuOrder::Compact,
                    mode,
                    duration_s: seconds,
                    warmup_s: 0.5,
                    graph: spec,
                    ..Default::default()
                };
                let out =
                    run_on(&graph, 0.0, &config, &machine, &placer, &mut |_| {}).expect("run");
                let p50 = out
                    .run
                    .latency
                    .as_ref()
                    .map_or(f64::NAN, |l| l.p50_ns.estimate / 1e6);
                let cpu = out.run.cpu_utilization;
                let per_cpu = out.run.requests_per_cpu_s.unwrap_or(f64::NAN);
                match figures.iter_mut().find(|f| f.0 == (mode, t)) {
                    Some(f) => {
                        f.1.push(out.run.requests_per_s);
                        f.2.push(p50);
                        f.3.push(cpu);
                        f.4.push(per_cpu);
                    }
                    None => figures.push((
                        (mode, t),
                        vec![out.run.requests_per_s],
                        vec![p50],
                        vec![cpu],
                        vec![per_cpu],
                    )),
                }
            }
        }
    }
    println!("| mode | threads | requests/s (median) | per thread | min-max | p50 ms (median) | CPU utilisation (median) | requests per CPU-second (median) |");
    println!("|---|---|---|---|---|---|---|---|");
    for ((mode, t), rates, p50s, cpus, per_cpu) in &mut figures {
        let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = rates.iter().copied().fold(0.0, f64::max);
        let m = median(rates);
        println!(
            "| {mode} | {t} | {m:.1} | {:.1} | {lo:.1}-{hi:.1} | {:.2} | {:.0}% | {:.0} |",
            m / *t as f64,
            median(p50s),
            median(cpus) * 100.0,
            median(per_cpu)
        );
    }
}
