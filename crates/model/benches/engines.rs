//! Prints the model's speed figures (issue "Machine model", Performance):
//! - discrete-event speed in simulated router-cycles per second, one thread, 8x8 and
//!   16x16 meshes at low (10%) and high (80% of saturation) uniform load;
//! - the input-queued router (`noc.router = "input-queued"`) in router-cycles per second
//!   on 8x8 and 16x16 at 80% of BookSim2's saturation load, beside BookSim2's own speed
//!   for the same configuration when its binary is at hand (`$BOOKSIM`, else
//!   /tmp/booksim2/src/booksim; scripts/booksim-compare.sh builds it), and one
//!   simulation allowed every CPU this process may use (`des::synthetic_threads`, which
//!   measures and chooses its shards: a small mesh may stay on one thread);
//! - the analytic engine's time for whole experiments on a 16x16 mesh and on the V1
//!   preset.
//!
//! Runs alternate between configurations and report medians, because the development
//! machine is shared. Run: `cargo bench -p numalab-model`.
//!
//! Last measured (docs/model.md, "Speed"): the input-queued router at 80% of BookSim2's
//! saturation load, 2.8-3.0e6 router-cycles/s on 8x8 and 2.6-3.0e6 on 16x16 (medians of
//! three alternating rounds of
//! `cargo run --release -p numalab-model --example iq_speed -- speed 5 20000`) against
//! 1.8-2.5e6 and 1.7-2.4e6 for the implementation before, on the shared 2-vCPU VM that
//! ran about 1.7-2x slower than when the earlier figures (3.8-4.0e6 and 4.5-4.8e6) were
//! taken; one run of this bench gave 3.1e6 and 2.6e6 (2.8e6 and 2.1e6 before the last
//! commit of that session). BookSim2's
//! binary was not at hand; its earlier figures are 2.6-2.7e5 and 2.3-2.5e5. The session
//! after it (allocators on bit matrices) measured by cachegrind instead, the VM being
//! loaded: 1,681 instructions, 12.6 mispredicted branches and 28.2 L1D misses per
//! router-cycle against 2,103, 22.9 and 26.1 (docs/model.md); its wall figures were not
//! taken, and 1e7 router-cycles/s is not reached.

use numalab_model::des::{self, DesConfig};
use numalab_model::experiments::{self, Engine, Experiment, Options};
use numalab_model::geometry::saturation_formula;
use numalab_model::traffic::{Pattern, Synthetic};
use numalab_model::Model;
use std::time::Instant;

/// The upper median of a bench's repeats (`numalab_stats`' rule, one of the values).
fn median(v: Vec<f64>) -> f64 {
    numalab_stats::upper_median(&v).expect("at least one repeat")
}

fn run_experiment(m: &Model, exp: Experiment, opts: &Options) -> usize {
    let mut records: Vec<numalab_schema::Record> = Vec::new();
    experiments::run(m, exp, opts, &mut records).expect("experiment runs");
    records.len()
}

fn main() {
    let reps = 5;
    println!("discrete-event engine, uniform traffic, 1-flit packets, one thread ({reps} runs each, alternating)");
    let configs: Vec<(u32, f64, u64)> = vec![
        (8, 0.1, 200_000),
        (8, 0.8, 60_000),
        (16, 0.1, 100_000),
        (16, 0.8, 20_000),
    ];
    let models: Vec<Model> = configs
        .iter()
        .map(|(k, _, _)| {
            Model::load("mesh", &[format!("noc.cols={k}"), format!("noc.rows={k}")]).unwrap()
        })
        .collect();
    let mut speed: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut evs: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for rep in 0..reps {
        for (i, (k, load, cycles)) in configs.iter().enumerate() {
            let t = Synthetic {
                pattern: Pattern::Uniform,
                rate: load * saturation_formula(*k),
                flits: 1,
            };
            let cfg = DesConfig {
                seed: rep as u64 + 1,
                warmup_cycles: 1_000,
                measure_cycles: *cycles,
                drain_cycles: 10_000,
            };
            let start = Instant::now();
            let (_, s) = des::synthetic(&models[i], &t, &cfg).unwrap();
            let secs = start.elapsed().as_secs_f64();
            speed[i].push((s.cycles * s.routers) as f64 / secs);
            evs[i].push(s.events as f64 / secs);
        }
    }
    println!("mesh   load   router-cycles/s   events/s   (min..max router-cycles/s)");
    for (i, (k, load, _)) in configs.iter().enumerate() {
        let lo = speed[i].iter().copied().fold(f64::INFINITY, f64::min);
        let hi = speed[i].iter().copied().fold(0.0, f64::max);
        println!(
            "{k:>2}x{k:<2}  {:>3.0}%   {:>15.3e}   {:>8.3e}   ({lo:.2e}..{hi:.2e})",
            load * 100.0,
            median(speed[i].clone()),
            median(evs[i].clone())
        );
    }

    input_queued(reps);

    println!();
    println!("analytic engine, whole experiments ({reps} runs each, alternating)");
    let k16 = Model::load("mesh:k16", &[]).unwrap();
    let v1 = Model::load("neoverse-v1-64", &[]).unwrap();
    let analytic = Options {
        engine: Engine::Analytic,
        ..Default::default()
    };
    let policy = Options {
        engine: Engine::Analytic,
        base_preset: "neoverse-v1-64".into(),
        ..Default::default()
    };
    let jobs: Vec<(&str, &Model, Experiment, &Options)> = vec![
        (
            "16x16 uniform curve (10 loads + saturation)",
            &k16,
            Experiment::Uniform,
            &analytic,
        ),
        (
            "16x16 transpose curve",
            &k16,
            Experiment::Transpose,
            &analytic,
        ),
        (
            "16x16 stream-triad (all nodes)",
            &k16,
            Experiment::StreamTriad,
            &analytic,
        ),
        (
            "neoverse-v1-64 stream-triad (4 nodes)",
            &v1,
            Experiment::StreamTriad,
            &analytic,
        ),
        (
            "neoverse-v1-64 policy (3 configurations x 3 applications)",
            &v1,
            Experiment::Policy,
            &policy,
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); jobs.len()];
    for _ in 0..reps {
        for (i, (_, m, e, o)) in jobs.iter().enumerate() {
            let start = Instant::now();
            run_experiment(m, *e, o);
            times[i].push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    for (i, (name, _, _, _)) in jobs.iter().enumerate() {
        let lo = times[i].iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "{name:<48} median {:>8.2} ms  min {lo:>8.2} ms",
            median(times[i].clone())
        );
    }
}

/// BookSim2's simulated cycles and wall seconds for one run of a recorded configuration
/// with the mesh's radix `k` (a command-line override of the file's).
fn booksim_run(cfg: &str, k: u32, rate: f64) -> Option<(u64, f64)> {
    let bin = std::env::var("BOOKSIM").unwrap_or_else(|_| "/tmp/booksim2/src/booksim".into());
    if !std::path::Path::new(&bin).is_file() {
        return None;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/booksim2");
    let start = Instant::now();
    let out = std::process::Command::new(&bin)
        .arg(dir.join(cfg))
        .arg(format!("k={k}"))
        .arg(format!("injection_rate={rate}"))
        .current_dir(std::env::temp_dir())
        .output()
        .ok()?;
    let wall = start.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&out.stdout);
    let cycles = text
        .lines()
        .find_map(|l| l.strip_prefix("Time taken is "))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((cycles, wall))
}

/// The input-queued router at 80% of BookSim2's uniform saturation load, beside BookSim2
/// when it is at hand. The saturation loads lie between BookSim's highest load accepted
/// within 1% and the next point of its grid: 0.76-0.77 on 4x4 and 0.29-0.30 on 12x12
/// (runs of the reference configuration with `k=4`, `k=12`, 2026-11-27), 0.42-0.44 on
/// 8x8 and 0.22-0.24 on 16x16 (tests/fixtures/booksim2).
fn input_queued(reps: usize) {
    println!();
    // One simulation allowed every CPU this process may use (the same figures; it
    // chooses its shards from what a cycle and a meeting of the threads cost).
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("input-queued router (BookSim2 reference configuration), uniform traffic at 80% of saturation, one thread and allowed {threads} (it chooses its shards; {reps} runs each, alternating)");
    println!("mesh   offered   router-cycles/s   BookSim2 router-cycles/s   speed-up   BookSim2 wall for its run   numalab wall for the same cycles   router-cycles/s on up to {threads} threads");
    for (k, sat) in [(4u32, 0.765), (8, 0.43), (12, 0.295), (16, 0.225)] {
        let m = Model::load(
            "mesh",
            &[
                format!("noc.cols={k}"),
                format!("noc.rows={k}"),
                "noc.router=input-queued".into(),
            ],
        )
        .unwrap();
        let rate = (0.8 * sat * 1000.0_f64).round() / 1000.0;
        let t = Synthetic {
            pattern: Pattern::Uniform,
            rate,
            flits: 1,
        };
        let bs = booksim_run("mesh8_uniform.cfg", k, rate);
        let cycles = bs.map_or(20_000, |(c, _)| c.max(1_000));
        let mut speed = Vec::new();
        let mut walls = Vec::new();
        let mut sharded = Vec::new();
        for rep in 0..reps {
            let cfg = DesConfig {
                seed: rep as u64 + 1,
                warmup_cycles: 0,
                measure_cycles: cycles,
                drain_cycles: 0,
            };
            let start = Instant::now();
            let (_, s) = des::synthetic(&m, &t, &cfg).unwrap();
            let secs = start.elapsed().as_secs_f64();
            speed.push((s.cycles * s.routers) as f64 / secs);
            walls.push(secs);
            let start = Instant::now();
            let (_, s) = des::synthetic_threads(&m, &t, &cfg, threads).unwrap();
            sharded.push((s.cycles * s.routers) as f64 / start.elapsed().as_secs_f64());
        }
        let ours = median(speed);
        let sharded = median(sharded);
        let wall = median(walls);
        match bs {
            Some((c, bw)) => {
                let theirs = (c * u64::from(k * k)) as f64 / bw;
                println!(
                    "{k:>2}x{k:<2}  {rate:>7.3}   {ours:>15.3e}   {theirs:>24.3e}   {:>7.1}x   {bw:>10.3} s ({c} cycles)   {wall:>10.4} s   {sharded:>15.3e}",
                    ours / theirs
                );
            }
            None => println!(
                "{k:>2}x{k:<2}  {rate:>7.3}   {ours:>15.3e}   {:>24}   {:>8}   {:>26}   {wall:>10.4} s   {sharded:>15.3e}",
                "(no BookSim2 binary)", "", ""
            ),
        }
    }
}
