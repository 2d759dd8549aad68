//! Layout benchmark (prints figures, asserts nothing):
//!
//! 1. inference time for a Xeon Phi-like chip (knl-7210: 38 tiles, 64 cores in 2-core
//!    tiles) and for a 12 x 12 mesh (144 cores), with the default search (8 restarts);
//! 2. the published Xeon Phi 7210 matrix: time, residual, agreement of restarts;
//! 3. recovery accuracy versus noise on model-generated matrices.
//!
//! `cargo bench -p numalab-layout`; `NUMALAB_BENCH_TRIALS` (default 3) sets the trials per
//! noise level, `NUMALAB_BENCH_QUICK=1` runs one trial and fewer levels.

use numalab_layout::groundtruth::{self, preset_grid, TrialOptions};
use numalab_layout::infer::{infer, tile_groups, Problem};
use numalab_layout::{input, HopCosts, Kind, Options};
use numalab_model::Model;
use std::path::Path;
use std::time::Instant;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn timing(preset: &str, hop: HopCosts, noise: f64, seeds: &[u64]) {
    let m = Model::load(preset, &[]).unwrap();
    let mut times = Vec::new();
    let mut exact = Vec::new();
    for &seed in seeds {
        let opts = TrialOptions {
            kind: Kind::CoreToCore,
            hop_costs: hop,
            disabled_known: false,
            search: Options {
                seed,
                ..Options::default()
            },
        };
        let t = groundtruth::trial(&m, &opts, noise, seed).unwrap();
        times.push(t.seconds);
        exact.push(t.accuracy.exact_fraction);
    }
    let grid = preset_grid(&m, hop).unwrap();
    println!(
        "| {preset} ({} x {} stops, {} tiles, {} cores) | {:?} | {noise} | {} | {:.2} | {:.2} | {:.2} | {:.0}% |",
        grid.geo.rows,
        grid.geo.cols,
        grid.core_stops().len(),
        m.cores.len(),
        hop,
        seeds.len(),
        median(&mut times.clone()),
        times.iter().copied().fold(f64::INFINITY, f64::min),
        times.iter().copied().fold(0.0, f64::max),
        100.0 * exact.iter().sum::<f64>() / exact.len() as f64
    );
}

fn accuracy(preset: &str, kind: Kind, hop: HopCosts, levels: &[f64], trials: u64, restarts: usize) {
    let m = Model::load(preset, &[]).unwrap();
    let opts = TrialOptions {
        kind,
        hop_costs: hop,
        disabled_known: false,
        search: Options {
            restarts,
            ..Options::default()
        },
    };
    println!("\n{preset}, {kind:?}, hop costs {hop:?}, disabled tiles unknown, {trials} trials per level, {restarts} restarts:\n");
    println!("| noise (ns, sd per cell) | exact (mean) | worst | mean displacement (hops) | tile pairs found correctly | search optimal | median time (s) |");
    println!("|---|---|---|---|---|---|---|");
    for &noise in levels {
        let ts: Vec<_> = (0..trials)
            .map(|k| groundtruth::trial(&m, &opts, noise, 100 + k).unwrap())
            .collect();
        let ex: Vec<f64> = ts.iter().map(|t| t.accuracy.exact_fraction).collect();
        let disp: f64 = ts
            .iter()
            .map(|t| t.accuracy.mean_displacement_hops)
            .sum::<f64>()
            / ts.len() as f64;
        let pairs_total = if m.spec.cores.per_stop > 1 && kind == Kind::CoreToCore {
            Some((m.cores.len() / m.spec.cores.per_stop as usize) * ts.len())
        } else {
            None
        };
        let correct: usize = ts.iter().map(|t| t.tile_groups_correct).sum();
        let optimal = ts.iter().filter(|t| t.search_optimal).count();
        let mut secs: Vec<f64> = ts.iter().map(|t| t.seconds).collect();
        println!(
            "| {noise} | {:.1}% | {:.1}% | {disp:.2} | {} | {optimal}/{} | {:.2} |",
            100.0 * ex.iter().sum::<f64>() / ex.len() as f64,
            100.0 * ex.iter().copied().fold(f64::INFINITY, f64::min),
            pairs_total.map_or("-".into(), |p| format!(
                "{:.0}%",
                100.0 * correct as f64 / p as f64
            )),
            ts.len(),
            median(&mut secs)
        );
    }
}

fn published() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/c2c/intel-xeon-phi-cpu-7210-1.30ghz.csv");
    let loaded = input::load(&path).unwrap();
    let m = Model::load("knl-7210", &[]).unwrap();
    println!("\nPublished Xeon Phi 7210 matrix (core-to-core-latency), knl-7210 geometry, default search:\n");
    println!("| hop costs | seed | time (s) | residual rms (ns) | R^2 | base (ns) | same tile (ns) | per hop | restarts at the best | CPUs with confidence < 0.9 |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for hop in [HopCosts::Fixed, HopCosts::Fit] {
        for seed in [1u64, 2, 3] {
            let grid = preset_grid(&m, hop).unwrap();
            let s = numalab_c2c::infer(loaded.c2c.as_ref().unwrap());
            let groups = tile_groups(&s, &loaded.measured.cpus, grid.capacity);
            let p = Problem::new(&grid, &loaded.measured, &groups).unwrap();
            let opts = Options {
                seed,
                ..Options::default()
            };
            let t0 = Instant::now();
            let inf = infer(&p, &opts, &|_| {}).unwrap();
            let secs = t0.elapsed().as_secs_f64();
            let r = numalab_layout::record::inference_record(
                "knl",
                "imported",
                &grid,
                None,
                &loaded.measured,
                &inf,
                &groups,
                &opts,
                Vec::new(),
            );
            let hops: Vec<String> = r.constants[2..]
                .iter()
                .map(|c| format!("{} {:.2}", c.name, c.value_ns))
                .collect();
            println!(
                "| {hop:?} | {seed} | {secs:.2} | {:.2} | {:.3} | {:.1} | {:.1} | {} | {}/{} | {} |",
                r.residual_rms_ns,
                r.r_squared,
                r.base_ns,
                r.same_stop_ns,
                hops.join(", "),
                r.restarts_same_as_best,
                r.restarts.len(),
                r.low_confidence_cpus.len()
            );
        }
    }
}

fn main() {
    let quick = std::env::var("NUMALAB_BENCH_QUICK").is_ok();
    let trials: u64 = std::env::var("NUMALAB_BENCH_TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 1 } else { 3 });
    println!("Inference time, default search (8 restarts: 4 from spectral starts, 4 random), threads = available parallelism:\n");
    println!("| chip | hop costs | noise (ns) | runs | median (s) | min (s) | max (s) | exact |");
    println!("|---|---|---|---|---|---|---|---|");
    let seeds: Vec<u64> = if quick { vec![1] } else { vec![1, 2, 3] };
    timing("knl-7210", HopCosts::Fixed, 1.0, &seeds);
    timing("knl-7210", HopCosts::Fit, 1.0, &seeds);
    timing("mesh:k12", HopCosts::Fixed, 1.0, &seeds);
    timing("mesh:k12", HopCosts::Fit, 1.0, &seeds);
    published();
    let knl_levels: &[f64] = if quick {
        &[0.0, 2.0]
    } else {
        &[0.0, 0.5, 1.0, 2.0, 4.0, 8.0]
    };
    accuracy(
        "knl-7210",
        Kind::CoreToCore,
        HopCosts::Fixed,
        knl_levels,
        trials,
        8,
    );
    accuracy(
        "knl-7210",
        Kind::CoreToTarget,
        HopCosts::Fixed,
        knl_levels,
        trials,
        8,
    );
    let mesh_levels: &[f64] = if quick {
        &[0.0, 4.0]
    } else {
        &[0.0, 1.0, 2.0, 4.0, 8.0]
    };
    accuracy(
        "mesh:k12",
        Kind::CoreToCore,
        HopCosts::Fixed,
        mesh_levels,
        trials,
        4,
    );
}
