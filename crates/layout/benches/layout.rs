//! Exploration harness (replaced by the real benchmark below).
use numalab_layout::groundtruth::{self, preset_grid};
use numalab_layout::infer::{infer, Problem};
use numalab_layout::{HopCosts, Kind, Options};
use numalab_model::Model;

fn main() {
    let preset = std::env::var("P").unwrap_or("mesh".into());
    let sweeps: usize = std::env::var("S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let restarts: usize = std::env::var("R")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let noise: f64 = std::env::var("N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let fit = std::env::var("FIT").is_ok();
    let m = Model::load(&preset, &[]).unwrap();
    let hc = if fit { HopCosts::Fit } else { HopCosts::Fixed };
    for seed in 1..=3u64 {
        let grid = preset_grid(&m, hc).unwrap();
        let t = groundtruth::generate(&m, &grid, Kind::CoreToCore, noise, seed).unwrap();
        let p = Problem::new(&grid, &t.measured, &[]).unwrap();
        let t0 = std::time::Instant::now();
        let inf = infer(
            &p,
            &Options {
                seed,
                restarts,
                sweeps,
                threads: 2,
            },
            &|_| {},
        )
        .unwrap();
        eprint!("truth {:.1} ", p.evaluate(&t.core_stop, &[]).sse);
        let acc = groundtruth::accuracy(
            &grid,
            &grid.symmetries(),
            (&inf.core_stop, &inf.target_stop),
            (&t.core_stop, &t.target_stop),
        );
        let sses: Vec<String> = inf
            .restarts
            .iter()
            .map(|r| format!("{:.3}{}", r.sse, if r.same_as_best { "*" } else { "" }))
            .collect();
        println!(
            "seed {seed}: {:.2}s exact {:.3} disp {:.3} restarts {}",
            t0.elapsed().as_secs_f64(),
            acc.exact_fraction,
            acc.mean_displacement_hops,
            sses.join(" ")
        );
    }
}
