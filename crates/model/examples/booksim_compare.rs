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
//! skips the discrete-event runs, `--only NAME,...` compares only the named curves (file
//! names without `.csv`), `--seed N` seeds the simulations (default 1). `--table` prints instead docs/model.md's table of every
//! engine and router against BookSim2 (markdown): the discrete-event engine with
//! input-queued and with output-queued routers, the analytic engine with each.

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

/// The recorded curves: file, mesh side, pattern, flits per packet.
const CURVES: &[(&str, u32, Pattern, u32)] = &[
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
    ("mesh12_uniform.csv", 12, Pattern::Uniform, 1),
    (
        "mesh12_hotspot.csv",
        12,
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
    // 8x8 hotspot near saturation on a 0.001 grid (BookSim's 0.01 grid above puts its
    // saturation one step from the model's).
    (
        "mesh8_hotspot_fine.csv",
        8,
        Pattern::Hotspot {
            stop: 0,
            fraction: 0.1,
        },
        1,
    ),
];

/// The curves to compare: all, or those named after `--only` (file names without
/// `.csv`, comma separated).
fn curves() -> Vec<(&'static str, u32, Pattern, u32)> {
    let args: Vec<String> = std::env::args().collect();
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    CURVES
        .iter()
        .copied()
        .filter(|(f, ..)| {
            only.is_none_or(|o| o.split(',').any(|n| n == f.trim_end_matches(".csv")))
        })
        .collect()
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "crates/model/tests/fixtures/booksim2".into());
    let analytic_only = std::env::args().any(|a| a == "--analytic-only");
    let args: Vec<String> = std::env::args().collect();
    // `--seed N`: the simulations' seed (default 1, the documented table's).
    let seed = args
        .iter()
        .position(|a| a == "--seed")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let cfg = DesConfig {
        seed,
        warmup_cycles: 3_000,
        measure_cycles: 20_000,
        drain_cycles: 20_000,
    };
    if std::env::args().any(|a| a == "--table") {
        table(&dir, &cfg);
        return;
    }
    for (file, k, pattern, flits) in curves() {
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

/// The mesh preset at `k x k` with `router`.
fn mesh(k: u32, router: &str) -> Model {
    Model::load(
        "mesh",
        &[
            format!("noc.cols={k}"),
            format!("noc.rows={k}"),
            format!("noc.router={router}"),
        ],
    )
    .expect("mesh preset")
}

/// One discrete-event point: latency, accepted packets per node per cycle, drained.
fn des_point(
    model: &Model,
    k: u32,
    pattern: Pattern,
    r: f64,
    flits: u32,
    cfg: &DesConfig,
) -> (f64, f64, bool) {
    let n = f64::from(k * k);
    if model.spec.noc.router == numalab_model::spec::RouterKind::InputQueued {
        let res = simulate(model, &workload(k, pattern, r, flits), cfg).expect("simulate");
        let f = &res.figures;
        (
            f.packet_latency_cycles,
            f.packets_per_cycle / n,
            res.stats.drained,
        )
    } else {
        // The output-queued engine runs numalab's patterns (transpose: the diagonal
        // nodes silent, BookSim's send to themselves).
        let t = Synthetic {
            pattern,
            rate: r,
            flits,
        };
        let (f, s) = numalab_model::des::synthetic(model, &t, cfg).expect("simulate");
        // Accepted per sending node (transpose: the k diagonal nodes send nothing).
        let stops = f64::from(Synthetic::stops(model));
        let senders = if pattern == Pattern::Transpose {
            stops - f64::from(k)
        } else {
            stops
        };
        (
            f.packet_latency_cycles,
            f.packets_per_cycle / senders,
            s.drained,
        )
    }
}

/// The analytic curve of BookSim's traffic (its transpose as flows).
fn an_curve(m: &Model, k: u32, pattern: Pattern, flits: u32) -> SyntheticCurve<'_> {
    match workload(k, pattern, 1.0, flits) {
        Workload::Flows { flows, flits } => SyntheticCurve::from_flows(m, &flows, flits),
        Workload::Synthetic { traffic, .. } => SyntheticCurve::new(m, &traffic),
        Workload::App(_) => unreachable!("synthetic curves only"),
    }
}

/// A percentage difference, or a dash.
fn pct(a: f64, b: f64) -> String {
    if a.is_finite() && b.is_finite() {
        format!("{:+.1}%", 100.0 * (a - b) / b)
    } else {
        "-".into()
    }
}

/// docs/model.md's table of every engine and router against BookSim2.
fn table(dir: &str, cfg: &DesConfig) {
    println!("| curve, offered | BookSim2 | DES input-queued | analytic input-queued | DES output-queued | analytic output-queued |");
    println!("|---|---|---|---|---|---|");
    let mut sat_rows = Vec::new();
    for (file, k, pattern, flits) in curves() {
        let rows = read_csv(&Path::new(dir).join(file));
        if rows.is_empty() {
            println!("| {file}: not recorded | | | | | |");
            continue;
        }
        let iqm = mesh(k, "input-queued");
        let oqm = mesh(k, "output-queued");
        let (ai, ao) = (
            an_curve(&iqm, k, pattern, flits),
            an_curve(&oqm, k, pattern, flits),
        );
        let t0 = |c: &SyntheticCurve| c.at(1e-9).packet_latency_cycles;
        let (t0i, t0o) = (t0(&ai), t0(&ao));
        let name = file.trim_end_matches(".csv");
        let mut bs_sat: f64 = 0.0;
        let mut first = true;
        // Saturation of each simulation as BookSim's: the highest load of the grid (BookSim's
        // rates, continued by its last step) accepted within 1% and drained.
        let mut sat = [0.0f64; 2];
        let mut over = [false; 2];
        let mut grid = Vec::new();
        let take =
            |sat: &mut [f64; 2], over: &mut [bool; 2], i: usize, r: f64, acc: f64, ok: bool| {
                if ok && acc >= 0.99 * r && !over[i] {
                    sat[i] = r;
                } else {
                    over[i] = true;
                }
            };
        for (r, bs) in rows {
            grid.push(r);
            let Some((bl, ba)) = bs else {
                println!("| {name} {r:.3} | unstable | | | | |");
                continue;
            };
            if ba >= 0.99 * r {
                bs_sat = bs_sat.max(r);
            }
            let (li, ai_acc, oki) = des_point(&iqm, k, pattern, r, flits, cfg);
            let (lo, ao_acc, oko) = des_point(&oqm, k, pattern, r, flits, cfg);
            take(&mut sat, &mut over, 0, r, ai_acc, oki && li < 500.0);
            take(&mut sat, &mut over, 1, r, ao_acc, oko && lo < 500.0);
            let an = |c: &SyntheticCurve| {
                let f = c.at(r);
                if f.saturated {
                    f64::NAN
                } else {
                    f.packet_latency_cycles
                }
            };
            let (lai, lao) = (an(&ai), an(&ao));
            let mark = |ok: bool| if ok { "" } else { " (not drained)" };
            let label = if first {
                format!("{name} {r:.3}")
            } else {
                format!("{r:.3}")
            };
            first = false;
            println!(
                "| {label} | {bl:.2} ({:.2}x) | {li:.2} {}{} | {} {} | {lo:.2} ({:.2}x){} | {} |",
                bl / t0i,
                pct(li, bl),
                mark(oki),
                if lai.is_finite() {
                    format!("{lai:.2}")
                } else {
                    "saturated".into()
                },
                pct(lai, bl),
                lo / t0o,
                mark(oko),
                if lao.is_finite() {
                    format!("{lao:.2} ({:.2}x)", lao / t0o)
                } else {
                    "saturated".into()
                },
            );
        }
        // Past BookSim's grid: its last step on, until both simulations are over.
        let step = grid.windows(2).last().map_or(0.01, |w| w[1] - w[0]);
        let mut r = grid.last().copied().unwrap_or(0.0);
        while !(over[0] && over[1]) && r < 1.0 {
            r += step;
            for (i, m) in [&iqm, &oqm].into_iter().enumerate() {
                if !over[i] {
                    let (l, acc, ok) = des_point(m, k, pattern, r, flits, cfg);
                    take(&mut sat, &mut over, i, r, acc, ok && l < 500.0);
                }
            }
        }
        let (si, so) = (sat[0], sat[1]);
        let (sai, sao) = (ai.router_saturation_rate(), ao.router_saturation_rate());
        sat_rows.push(format!(
            "| {name} | {bs_sat:.3} | {si:.3} ({}) | {sai:.4} ({}) | {so:.3} ({}) | {sao:.4} ({}) |",
            pct(si, bs_sat),
            pct(sai, bs_sat),
            pct(so, bs_sat),
            pct(sao, bs_sat)
        ));
    }
    println!();
    println!("| curve | BookSim2 saturation | DES input-queued | analytic input-queued | DES output-queued | analytic output-queued |");
    println!("|---|---|---|---|---|---|");
    for r in sat_rows {
        println!("{r}");
    }
}
