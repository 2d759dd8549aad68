//! numalab's input-queued router model beside the recorded BookSim2 curves
//! (crates/model/tests/fixtures/booksim2/*.csv), as `scripts/booksim-compare.sh` prints
//! them:
//!
//! ```sh
//! cargo run --release -p numalab-model --example booksim_compare -- crates/model/tests/fixtures/booksim2
//! ```
//!
//! Each point also shows the analytic engine's answer for the same routers (`an_lat`),
//! and each curve the analytic saturation estimate; `--analytic-only` after the folder
//! skips the discrete-event runs.

use numalab_model::analytic::SyntheticCurve;
use numalab_model::des::DesConfig;
use numalab_model::router::{simulate, Flow, Workload};
use numalab_model::traffic::{Pattern, Synthetic};
use numalab_model::Model;
use std::path::Path;

/// One recorded BookSim point: offered, latency, accepted (None when unstable).
fn read_csv(path: &Path) -> Vec<(f64, Option<(f64, f64)>)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let r: f64 = f.first()?.parse().ok()?;
            if f.get(3) == Some(&"1") {
                Some((r, Some((f[1].parse().ok()?, f[2].parse().ok()?))))
            } else {
                Some((r, None))
            }
        })
        .collect()
}

/// The workload BookSim runs: its transpose has the diagonal nodes send to themselves
/// (numalab's `transpose` pattern leaves them silent), so it is given as flows.
fn workload(k: u32, pattern: Pattern, rate: f64, flits: u32) -> Workload {
    if pattern == Pattern::Transpose {
        let flows = (0..k * k)
            .map(|s| Flow {
                src: s,
                dst: (s % k) * k + s / k,
                rate,
                vn: 0,
            })
            .collect();
        return Workload::Flows { flows, flits };
    }
    Workload::Synthetic {
        traffic: Synthetic {
            pattern,
            rate,
            flits,
        },
        networks: 1,
    }
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "crates/model/tests/fixtures/booksim2".into());
    let analytic_only = std::env::args().any(|a| a == "--analytic-only");
    let cfg = DesConfig {
        seed: 1,
        warmup_cycles: 3_000,
        measure_cycles: 20_000,
        drain_cycles: 20_000,
    };
    for (file, k, pattern, flits) in [
        ("mesh8_uniform.csv", 8, Pattern::Uniform, 1),
        ("mesh8_transpose.csv", 8, Pattern::Transpose, 1),
        (
            "mesh8_hotspot.csv",
            8,
            Pattern::Hotspot {
                stop: 0,
                fraction: 0.1,
            },
            1,
        ),
        ("mesh16_uniform.csv", 16, Pattern::Uniform, 1),
        ("mesh16_transpose.csv", 16, Pattern::Transpose, 1),
        (
            "mesh16_hotspot.csv",
            16,
            Pattern::Hotspot {
                stop: 0,
                fraction: 0.1,
            },
            1,
        ),
        ("mesh8_uniform_p4.csv", 8, Pattern::Uniform, 4),
    ] {
        let rows = read_csv(&Path::new(&dir).join(file));
        if rows.is_empty() {
            println!("{file}: not recorded");
            continue;
        }
        let model = Model::load(
            "mesh",
            &[
                format!("noc.cols={k}"),
                format!("noc.rows={k}"),
                "noc.router=input-queued".into(),
            ],
        )
        .expect("mesh preset");
        println!("\n{file} (BookSim2 vs numalab input-queued router)");
        // The analytic engine takes the same traffic: BookSim's transpose as flows.
        let curve = match workload(k, pattern, 1.0, flits) {
            Workload::Flows { flows, flits } => SyntheticCurve::from_flows(&model, &flows, flits),
            Workload::Synthetic { traffic, .. } => SyntheticCurve::new(&model, &traffic),
            Workload::App(_) => unreachable!("synthetic curves only"),
        };
        if analytic_only {
            println!(
                "{:>8} {:>10} {:>10} {:>8}",
                "offered", "bs_lat", "an_lat", "an_diff%"
            );
        } else {
            println!(
                "{:>8} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8} {:>10} {:>8}",
                "offered",
                "bs_lat",
                "model_lat",
                "diff%",
                "bs_acc",
                "model_acc",
                "model_ok",
                "an_lat",
                "an_diff%"
            );
        }
        let mut bs_sat: f64 = 0.0;
        let mut model_sat: f64 = 0.0;
        let mut model_unstable = false;
        // Saturation as the tests and docs/model.md define it: the highest offered load
        // accepted within 1%.
        let mut bs_sat1: f64 = 0.0;
        let mut model_sat1: f64 = 0.0;
        let mut model_over = false;
        let mut an_worst: f64 = 0.0;
        let an_sat = curve.router_saturation_rate();
        for (r, bs) in rows {
            let an = curve.at(r);
            let an_lat = if an.saturated {
                f64::NAN
            } else {
                an.packet_latency_cycles
            };
            if analytic_only {
                if let Some((bl, ba)) = bs {
                    if ba >= 0.99 * r {
                        bs_sat1 = bs_sat1.max(r);
                    }
                    let d = 100.0 * (an_lat - bl) / bl;
                    if r <= 0.9 * an_sat {
                        an_worst = an_worst.max(d.abs());
                    }
                    println!("{r:>8.3} {bl:>10.2} {an_lat:>10.2} {d:>+8.1}");
                }
                continue;
            }
            let res = simulate(&model, &workload(k, pattern, r, flits), &cfg).expect("simulate");
            let n = f64::from(k * k);
            let lat = res.figures.packet_latency_cycles;
            let acc = res.figures.packets_per_cycle / n;
            let ok = res.stats.drained && lat < 500.0;
            if ok && !model_unstable {
                model_sat = r;
            } else {
                model_unstable = true;
            }
            if ok && acc >= 0.99 * r && !model_over {
                model_sat1 = r;
            } else {
                model_over = true;
            }
            match bs {
                Some((bl, ba)) => {
                    bs_sat = r;
                    if ba >= 0.99 * r {
                        bs_sat1 = bs_sat1.max(r);
                    }
                    println!(
                        "{r:>8.3} {bl:>10.2} {lat:>10.2} {:>+8.1} {ba:>10.4} {acc:>10.4} {ok:>8} {an_lat:>10.2} {:>+8.1}",
                        100.0 * (lat - bl) / bl,
                        100.0 * (an_lat - bl) / bl
                    );
                }
                None => println!(
                    "{r:>8.3} {:>10} {lat:>10.2} {:>8} {:>10} {acc:>10.4} {ok:>8} {an_lat:>10.2}",
                    "unstable", "", ""
                ),
            }
        }
        println!(
            "analytic: saturation estimate {an_sat:.4} (link bound {:.4}; BookSim's, the highest load accepted within 1%: {bs_sat1:.3}, {:+.1}%); worst latency difference from BookSim up to 90% of the estimate: {an_worst:.1}%",
            curve.saturation_rate(),
            100.0 * (an_sat - bs_sat1) / bs_sat1
        );
        if analytic_only {
            continue;
        }
        let res = simulate(
            &model,
            &workload(k, pattern, 1.0, flits),
            &DesConfig {
                drain_cycles: 0,
                ..cfg
            },
        )
        .expect("simulate");
        println!(
            "saturation: highest offered load accepted within 1%: BookSim {bs_sat1:.3}, model {model_sat1:.3}; highest stable: BookSim {bs_sat:.3}, model {model_sat:.3}; model accepted at offered 1.0: {:.4}",
            res.figures.packets_per_cycle / f64::from(k * k)
        );
    }
}
