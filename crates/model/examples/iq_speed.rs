//! The input-queued router's speed at 80% of BookSim2's saturation load (as the bench's
//! input-queued section, without the other engines), and a dump of its figures for a set
//! of seeds and workloads to check that a change keeps them bit-identical:
//!
//! ```sh
//! cargo run --release -p numalab-model --example iq_speed -- speed [reps] [cycles] [threads] [exact]
//! cargo run --release -p numalab-model --example iq_speed -- figures [shards] [from] > figures.txt
//! ```
//!
//! `speed` with `threads` (default 1) lets each simulation choose its shards on up to that
//! many threads (`router::simulate_threads`, which prints its choice and measurements);
//! with `exact`, it runs on exactly that many from the first cycle
//! (`router::simulate_shards`). `figures` runs on `shards` threads (default 1) from cycle
//! `from` (default 0); its figures must be those of one thread, bit for bit.

use numalab_model::des::DesConfig;
use numalab_model::experiments::{self, Engine, Experiment, Options};
use numalab_model::router::{simulate_shards, simulate_threads, Flow, Workload};
use numalab_model::traffic::{Pattern, Synthetic};
use numalab_model::Model;
use std::time::Instant;

fn iq(k: u32, extra: &[&str]) -> Model {
    let mut sets = vec![
        format!("noc.cols={k}"),
        format!("noc.rows={k}"),
        "noc.router=input-queued".to_string(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    Model::load("mesh", &sets).expect("mesh preset with input-queued routers")
}

fn synthetic(pattern: Pattern, rate: f64, flits: u32, networks: u8) -> Workload {
    Workload::Synthetic {
        traffic: Synthetic {
            pattern,
            rate,
            flits,
        },
        networks,
    }
}

/// Nanoseconds this thread has run on a CPU (Linux), to see through a busy machine.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn speed(reps: usize, cycles: u64, threads: usize, exact: bool) {
    // 4x4 too: the mesh where sharding does not pay on the development VM.
    let sizes = [4, 8, 16];
    let models = sizes.map(|k| iq(k, &[]));
    let rates = [0.612, 0.344, 0.180];
    let mut speeds = vec![Vec::new(); 3];
    let mut cpu_speeds = vec![Vec::new(); 3];
    for rep in 0..reps {
        for i in 0..3 {
            let cfg = DesConfig {
                seed: rep as u64 + 1,
                warmup_cycles: 0,
                measure_cycles: cycles,
                drain_cycles: 0,
            };
            let w = synthetic(Pattern::Uniform, rates[i], 1, 1);
            let start = Instant::now();
            let cpu0 = cpu_ns();
            let r = if exact {
                simulate_shards(&models[i], &w, &cfg, threads, 0).unwrap()
            } else {
                simulate_threads(&models[i], &w, &cfg, threads).unwrap()
            };
            let secs = start.elapsed().as_secs_f64();
            if let Some(c) = &r.sharding {
                let trials: Vec<String> = c
                    .trials
                    .iter()
                    .map(|(k, ns)| format!("{:.1} us on {k}", ns / 1e3))
                    .collect();
                println!(
                    "{k}x{k} run {rep}: {} of at most {} shards (cycles {}..{}: {:.1} us per cycle on one thread, {})",
                    c.shards,
                    c.max,
                    c.cycles.0,
                    c.cycles.1,
                    c.one_ns / 1e3,
                    trials.join(", "),
                    k = sizes[i],
                );
            }
            let work = (r.stats.cycles * r.stats.routers) as f64;
            speeds[i].push(work / secs);
            // One thread's CPU time says nothing of a sharded run's (on-CPU rates are
            // of the runs that stayed on one thread).
            if let (Some(a), Some(b), 1) = (cpu0, cpu_ns(), r.threads) {
                cpu_speeds[i].push(work / ((b - a) as f64 * 1e-9));
            }
        }
    }
    for (i, k) in sizes.iter().enumerate() {
        for (what, v) in [("wall", &speeds[i]), ("on-CPU", &cpu_speeds[i])] {
            let mut v = v.clone();
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            println!(
                "{k}x{k} offered {:.3}, {threads} thread(s): median {:.3e} router-cycles/s by {what} time ({:.2e}..{:.2e}, {} runs)",
                rates[i],
                v[v.len() / 2],
                v[0],
                v[v.len() - 1],
                v.len()
            );
        }
    }
}

fn figures(shards: usize, from: u64) {
    let cfg = |seed: u64, measure: u64| DesConfig {
        seed,
        warmup_cycles: 500,
        measure_cycles: measure,
        drain_cycles: 20_000,
    };
    let hot = Pattern::Hotspot {
        stop: 27,
        fraction: 0.2,
    };
    let cases: Vec<(&str, Model, Workload, u64)> = vec![
        (
            "8x8 uniform 0.344",
            iq(8, &[]),
            synthetic(Pattern::Uniform, 0.344, 1, 1),
            4_000,
        ),
        (
            "8x8 uniform 0.50 (saturated)",
            iq(8, &[]),
            synthetic(Pattern::Uniform, 0.5, 1, 1),
            3_000,
        ),
        (
            "16x16 uniform 0.18",
            iq(16, &[]),
            synthetic(Pattern::Uniform, 0.18, 1, 1),
            2_000,
        ),
        (
            "8x8 uniform 4 flits 0.1",
            iq(8, &[]),
            synthetic(Pattern::Uniform, 0.1, 4, 1),
            4_000,
        ),
        (
            "8x8 hotspot 0.05",
            iq(8, &[]),
            synthetic(hot, 0.05, 1, 1),
            4_000,
        ),
        (
            "8x8 hotspot 4 flits 0.03",
            iq(8, &[]),
            synthetic(hot, 0.03, 4, 1),
            4_000,
        ),
        (
            "8x8 transpose 0.2",
            iq(8, &[]),
            synthetic(Pattern::Transpose, 0.2, 2, 1),
            4_000,
        ),
        (
            "8x8 3 networks 0.3",
            iq(8, &[]),
            synthetic(Pattern::Uniform, 0.3, 2, 3),
            3_000,
        ),
        (
            "8x8 shared 4 networks 0.2",
            iq(8, &["noc.shared_links=true", "noc.vcs=2"]),
            synthetic(Pattern::Uniform, 0.2, 2, 4),
            3_000,
        ),
        (
            "6x4 1 vc 2 flits buffer, yx, 2 iters",
            iq(
                6,
                &[
                    "noc.rows=4",
                    "noc.vcs=1",
                    "noc.buffer_flits=2",
                    "noc.routing=yx",
                    "noc.alloc_iters=2",
                ],
            ),
            synthetic(Pattern::Uniform, 0.2, 3, 1),
            4_000,
        ),
        (
            "8x8 delays",
            iq(
                8,
                &[
                    "noc.routing_delay=1",
                    "noc.credit_delay=4",
                    "noc.vc_alloc_delay=2",
                    "noc.vcs=3",
                    "noc.buffer_flits=5",
                ],
            ),
            synthetic(Pattern::Uniform, 0.3, 2, 1),
            4_000,
        ),
        (
            "8x8 flows",
            iq(8, &[]),
            Workload::Flows {
                flows: (0..64)
                    .map(|s| Flow {
                        src: s,
                        dst: (s % 8) * 8 + s / 8,
                        rate: 0.3,
                        vn: (s % 2) as u8,
                    })
                    .collect(),
                flits: 2,
            },
            4_000,
        ),
    ];
    // Application traffic (the closed loop of the discrete-event engine's stream-triad)
    // on input-queued routers, as
    // `numalab model run neoverse-v1-64:numa4-grouped --experiment stream-triad --engine des --set noc.router=input-queued`.
    let sets = vec!["noc.router=input-queued".to_string()];
    let v1 = Model::load("neoverse-v1-64:numa4-grouped", &sets).unwrap();
    for seed in 1..=2 {
        let opts = Options {
            engine: Engine::Des,
            des: DesConfig {
                seed,
                warmup_cycles: 1_000,
                measure_cycles: 5_000,
                drain_cycles: 5_000,
            },
            base_preset: "neoverse-v1-64:numa4-grouped".into(),
            sets: sets.clone(),
            ..Default::default()
        };
        let mut records: Vec<numalab_schema::Record> = Vec::new();
        experiments::run(&v1, Experiment::StreamTriad, &opts, &mut records).unwrap();
        for r in &records {
            println!("stream-triad seed {seed}: {} {}", r.kind, r.data);
        }
    }
    for (name, m, w, measure) in &cases {
        for seed in 1..=3 {
            match simulate_shards(m, w, &cfg(seed, *measure), shards, from) {
                // Without `threads`: the dumps of any number of threads compare equal.
                Ok(r) => println!("{name} seed {seed}: {:?}", (r.figures, r.flows, r.stats)),
                Err(e) => println!("{name} seed {seed}: error {e}"),
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("figures") => figures(
            args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1),
            args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0),
        ),
        _ => speed(
            args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5),
            args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20_000),
            args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1),
            args.get(4).is_some_and(|s| s == "exact"),
        ),
    }
}
