//! The analytic engine's finite-buffer correction against the discrete-event
//! input-queued router (which models credits and virtual channels exactly), on 8x8
//! uniform and hotspot traffic with `noc.vcs` in {1, 2, 8} and `noc.buffer_flits` in
//! {2, 4, 8}, 1- and 4-flit packets:
//!
//! ```sh
//! cargo run --release -p numalab-model --example buffer_compare            # all 36
//! cargo run --release -p numalab-model --example buffer_compare -- --des target/bc.csv
//! ```
//!
//! For each configuration: the discrete-event saturation load (the highest offered load
//! that drains and is accepted within 1%, by bisection), then the latency of both engines
//! at 25/50/75/90% of it, the analytic one without (`an_inf`, infinite buffers) and with
//! (`an_buf`) the correction, and both analytic saturation estimates. `--des FILE` keeps
//! the discrete-event figures in FILE (read when it exists, written otherwise), so the
//! analytic side can be re-run in milliseconds.

use numalab_model::analytic::SyntheticCurve;
use numalab_model::des::{self, DesConfig};
use numalab_model::traffic::{Pattern, Synthetic};
use numalab_model::Model;
use std::collections::HashMap;
use std::fmt::Write as _;

const FRACTIONS: [f64; 4] = [0.25, 0.5, 0.75, 0.9];

fn model(vcs: u32, buf: u32) -> Model {
    Model::load(
        "mesh",
        &[
            "noc.cols=8".into(),
            "noc.rows=8".into(),
            "noc.router=input-queued".into(),
            format!("noc.vcs={vcs}"),
            format!("noc.buffer_flits={buf}"),
        ],
    )
    .expect("mesh preset")
}

fn pattern(name: &str) -> Pattern {
    match name {
        "uniform" => Pattern::Uniform,
        _ => Pattern::Hotspot {
            stop: 0,
            fraction: 0.1,
        },
    }
}

/// The discrete-event figures of one configuration: saturation load, and latency at
/// each of [`FRACTIONS`] of it.
fn des_figures(m: &Model, pat: Pattern, flits: u32, bound: f64) -> (f64, [f64; 4]) {
    let cfg = DesConfig {
        seed: 1,
        warmup_cycles: 3_000,
        measure_cycles: 10_000,
        drain_cycles: 20_000,
    };
    let run = |rate: f64| {
        let t = Synthetic {
            pattern: pat,
            rate,
            flits,
        };
        let (f, s) = des::synthetic(m, &t, &cfg).expect("simulate");
        let acc = f.packets_per_cycle / 64.0;
        let ok = s.drained && acc >= 0.99 * rate && f.packet_latency_cycles < 500.0;
        (ok, f.packet_latency_cycles)
    };
    let (mut lo, mut hi) = (0.0, bound);
    for _ in 0..8 {
        let mid = 0.5 * (lo + hi);
        if run(mid).0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut lat = [0.0; 4];
    for (i, f) in FRACTIONS.iter().enumerate() {
        lat[i] = run(f * lo).1;
    }
    (lo, lat)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cache = args
        .iter()
        .position(|a| a == "--des")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let mut known: HashMap<String, (f64, [f64; 4])> = HashMap::new();
    if let Some(path) = &cache {
        if let Ok(text) = std::fs::read_to_string(path) {
            for l in text.lines() {
                let f: Vec<&str> = l.split(',').collect();
                let v: Vec<f64> = f[1..].iter().map(|x| x.parse().unwrap()).collect();
                known.insert(f[0].to_string(), (v[0], [v[1], v[2], v[3], v[4]]));
            }
        }
    }
    let mut out = String::new();
    // Worst |analytic - DES| / DES over all configurations, up to 75% and at 90%.
    let mut worst = [[0.0f64; 2]; 2];
    let mut worst_sat = [0.0f64; 2];
    println!(
        "{:<26} {:>6} {:>7} {:>8} {:>8} {:>7} {:>8} {:>7}",
        "config", "frac", "load", "des_lat", "an_inf", "diff%", "an_buf", "diff%"
    );
    for name in ["uniform", "hotspot"] {
        for flits in [1u32, 4] {
            for vcs in [1u32, 2, 8] {
                for buf in [2u32, 4, 8] {
                    let key = format!("{name}_p{flits}_v{vcs}_b{buf}");
                    let m = model(vcs, buf);
                    let pat = pattern(name);
                    let t = Synthetic {
                        pattern: pat,
                        rate: 1e-9,
                        flits,
                    };
                    let corrected = SyntheticCurve::new(&m, &t);
                    let infinite = SyntheticCurve::new(&m, &t).infinite_buffers();
                    let (sat, lat) = *known.entry(key.clone()).or_insert_with(|| {
                        des_figures(&m, pat, flits, corrected.saturation_rate())
                    });
                    let _ = writeln!(
                        out,
                        "{key},{sat},{},{},{},{}",
                        lat[0], lat[1], lat[2], lat[3]
                    );
                    for (i, f) in FRACTIONS.iter().enumerate() {
                        let r = f * sat;
                        let a0 = infinite.at(r);
                        let a1 = corrected.at(r);
                        let show = |x: &numalab_model::traffic::Figures| {
                            if x.saturated {
                                f64::NAN
                            } else {
                                x.packet_latency_cycles
                            }
                        };
                        let (l0, l1) = (show(&a0), show(&a1));
                        let d0 = 100.0 * (l0 - lat[i]) / lat[i];
                        let d1 = 100.0 * (l1 - lat[i]) / lat[i];
                        let w = usize::from(i == 3);
                        for (c, d) in [d0, d1].iter().enumerate() {
                            worst[w][c] = if d.is_nan() {
                                f64::INFINITY
                            } else {
                                worst[w][c].max(d.abs())
                            };
                        }
                        println!(
                            "{key:<26} {:>5.0}% {r:>7.4} {:>8.2} {l0:>8.2} {d0:>+7.1} {l1:>8.2} {d1:>+7.1}",
                            100.0 * f,
                            lat[i]
                        );
                    }
                    let s0 = infinite.router_saturation_rate();
                    let s1 = corrected.router_saturation_rate();
                    let e0 = 100.0 * (s0 - sat) / sat;
                    let e1 = 100.0 * (s1 - sat) / sat;
                    worst_sat[0] = worst_sat[0].max(e0.abs());
                    worst_sat[1] = worst_sat[1].max(e1.abs());
                    println!(
                        "{key:<26} saturation: des {sat:.4}, analytic infinite buffers {s0:.4} ({e0:+.1}%), corrected {s1:.4} ({e1:+.1}%)"
                    );
                }
            }
        }
    }
    println!(
        "worst latency difference, infinite buffers: {:.1}% up to 75%, {:.1}% at 90%; corrected: {:.1}% up to 75%, {:.1}% at 90%",
        worst[0][0], worst[1][0], worst[0][1], worst[1][1]
    );
    println!(
        "worst saturation difference: infinite buffers {:.1}%, corrected {:.1}%",
        worst_sat[0], worst_sat[1]
    );
    if let Some(path) = cache {
        if !std::path::Path::new(&path).exists() {
            std::fs::write(&path, out).expect("write the discrete-event figures");
        }
    }
}
