//! The input-queued router (`noc.router = "input-queued"`): mechanism tests (credits,
//! shared links, head-of-line blocking) and the comparison with the BookSim2 curves
//! recorded in tests/fixtures/booksim2 (README.md there: commit, configs, commands).

use numalab_model::des::{self, DesConfig};
use numalab_model::router::{simulate, Flow, IqResult, Workload};
use numalab_model::traffic::{Pattern, Synthetic};
use numalab_model::Model;

fn iq(k_cols: u32, k_rows: u32, extra: &[&str]) -> Model {
    let mut sets = vec![
        format!("noc.cols={k_cols}"),
        format!("noc.rows={k_rows}"),
        "noc.router=input-queued".to_string(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    Model::load("mesh", &sets).expect("mesh preset with input-queued routers")
}

fn cfg(measure: u64) -> DesConfig {
    DesConfig {
        seed: 11,
        warmup_cycles: 2_000,
        measure_cycles: measure,
        drain_cycles: 0,
    }
}

fn flows(m: &Model, flows: Vec<Flow>, c: &DesConfig) -> IqResult {
    simulate(m, &Workload::Flows { flows, flits: 1 }, c).expect("simulation")
}

/// With one VC of one flit and a long credit delay, a single stream can send one packet
/// per credit round trip. By hand, for 1-flit packets with the default pipeline
/// (routing 0, VC allocation 1, switch allocation 1, switch traversal 1, links 1): a flit
/// wins the switch at `s`, reaches the next buffer at `s + 1 + 1 + 1`, is routed and gets
/// its next VC at `s + 3`, wins that router's switch at `s + 4` and leaves the buffer; the
/// credit is usable upstream at `s + 4 + 1 (link) + credit_delay`. Period =
/// `5 + credit_delay` cycles, throughput = `1 / (5 + credit_delay)` packets per cycle.
#[test]
fn credits_stall_a_full_buffer() {
    for delay in [2u32, 10, 25] {
        let m = iq(
            2,
            2,
            &[
                "noc.vcs=1",
                "noc.buffer_flits=1",
                &format!("noc.credit_delay={delay}"),
            ],
        );
        // (1,0) -> (0,1): two hops (west, then north), offered far above the bound.
        let r = flows(
            &m,
            vec![Flow {
                src: 1,
                dst: 2,
                rate: 0.9,
                vn: 0,
            }],
            &cfg(30_000),
        );
        let expect = 1.0 / f64::from(5 + delay);
        let got = r.flows[0].accepted;
        assert!(
            (got - expect).abs() / expect < 0.01,
            "credit_delay {delay}: accepted {got:.5}, hand-computed bound {expect:.5}"
        );
        // Deep enough buffers lift the bound: 6 + delay flits cover the loop (two VCs:
        // one VC alone passes at most one 1-flit packet per two cycles, since its next
        // packet is allocated the cycle after the previous one's tail left).
        let deep = iq(
            2,
            2,
            &[
                "noc.vcs=2",
                &format!("noc.buffer_flits={}", 6 + delay),
                &format!("noc.credit_delay={delay}"),
            ],
        );
        let r = flows(
            &deep,
            vec![Flow {
                src: 1,
                dst: 2,
                rate: 0.9,
                vn: 0,
            }],
            &cfg(30_000),
        );
        assert!(
            r.flows[0].accepted > 0.85,
            "credit_delay {delay} with deep buffers: {:.3}",
            r.flows[0].accepted
        );
    }
}

/// Two virtual networks at rate r each over one shared link behave as one network at
/// 2r; with a link per network each behaves as one network at r.
#[test]
fn a_shared_link_serialises_its_networks() {
    let line = |shared: bool| {
        iq(
            4,
            1,
            &[if shared {
                "noc.shared_links=true"
            } else {
                "noc.shared_links=false"
            }],
        )
    };
    let two = |r: f64| {
        vec![
            Flow {
                src: 0,
                dst: 3,
                rate: r,
                vn: 0,
            },
            Flow {
                src: 0,
                dst: 3,
                rate: r,
                vn: 1,
            },
        ]
    };
    let one = |r: f64| {
        vec![Flow {
            src: 0,
            dst: 3,
            rate: r,
            vn: 0,
        }]
    };
    let c = cfg(40_000);
    let c = DesConfig {
        drain_cycles: 20_000,
        ..c
    };
    // Below saturation: latency.
    let r = 0.35;
    let shared = flows(&line(true), two(r), &c);
    let separate = flows(&line(false), two(r), &c);
    let at_2r = flows(&line(false), one(2.0 * r), &c);
    let at_r = flows(&line(false), one(r), &c);
    let ls = shared.figures.packet_latency_cycles;
    let l2 = at_2r.figures.packet_latency_cycles;
    let lsep = separate.figures.packet_latency_cycles;
    let l1 = at_r.figures.packet_latency_cycles;
    assert!(
        (ls - l2).abs() / l2 < 0.05,
        "shared at 2 x {r}: {ls:.2} cycles, one network at {}: {l2:.2}",
        2.0 * r
    );
    assert!(
        (lsep - l1).abs() / l1 < 0.02,
        "separate links: {lsep:.2}, one network at {r}: {l1:.2}"
    );
    assert!(
        ls > lsep + 0.3,
        "sharing must add queueing: {ls:.2} vs {lsep:.2}"
    );
    // Beyond a link's capacity: throughput.
    let c = cfg(30_000);
    let r = 0.7;
    let shared = flows(&line(true), two(r), &c);
    let separate = flows(&line(false), two(r), &c);
    let at_2r = flows(&line(false), one(2.0 * r), &c);
    let ts = shared.figures.packets_per_cycle;
    let t2 = at_2r.figures.packets_per_cycle;
    assert!(
        ts <= 1.0 + 1e-9 && ts > 0.97,
        "shared link carries {ts:.3} of 1"
    );
    assert!(
        (ts - t2).abs() < 0.02,
        "shared {ts:.3}, one network {t2:.3}"
    );
    let tsep = separate.figures.packets_per_cycle;
    assert!(
        (tsep - 2.0 * r).abs() < 0.03,
        "separate links carry both: {tsep:.3} of {}",
        2.0 * r
    );
}

/// Head-of-line blocking: on a 4x2 mesh, A (0,0)->(3,0) and B (2,0)->(3,0) load the
/// link (2,0)->(3,0) to 90%; C (1,0)->(2,1) shares (2,0)'s west input with A but turns
/// north to an idle output. With one VC C waits behind A's queued packets; with 8 VCs it
/// passes them.
#[test]
fn head_of_line_blocking_with_one_vc_not_with_eight() {
    let pattern = vec![
        Flow {
            src: 0,
            dst: 3,
            rate: 0.3,
            vn: 0,
        },
        Flow {
            src: 2,
            dst: 3,
            rate: 0.15,
            vn: 0,
        },
        Flow {
            src: 1,
            dst: 6,
            rate: 0.1,
            vn: 0,
        },
    ];
    let c = DesConfig {
        drain_cycles: 20_000,
        ..cfg(50_000)
    };
    let one = flows(&iq(4, 2, &["noc.vcs=1"]), pattern.clone(), &c);
    let eight = flows(&iq(4, 2, &["noc.vcs=8"]), pattern.clone(), &c);
    let zero = numalab_model::router::zero_load_latency(&iq(4, 2, &[]), 2.0, 1, 1.0);
    let (c1, c8) = (one.flows[2].latency_cycles, eight.flows[2].latency_cycles);
    eprintln!(
        "C: 1 VC {c1:.2}, 8 VCs {c8:.2}, zero load {zero}; A: {:.2} / {:.2}",
        one.flows[0].latency_cycles, eight.flows[0].latency_cycles
    );
    assert!(c1 > zero + 3.0, "1 VC: C at {c1:.2}, zero load {zero}");
    assert!(c8 < zero + 1.0, "8 VCs: C at {c8:.2}, zero load {zero}");
    assert!(c1 > c8 + 2.5, "1 VC {c1:.2} vs 8 VCs {c8:.2}");
}

/// The input-queued router's zero-load latency is the pipeline formula, and it is what
/// `des::synthetic` runs when the spec asks for it.
#[test]
fn lone_packets_take_the_pipeline_latency() {
    let m = iq(8, 8, &[]);
    let t = Synthetic {
        pattern: Pattern::Uniform,
        rate: 0.002,
        flits: 1,
    };
    let (f, s) = des::synthetic(
        &m,
        &t,
        &DesConfig {
            seed: 5,
            warmup_cycles: 1_000,
            measure_cycles: 100_000,
            drain_cycles: 10_000,
        },
    )
    .unwrap();
    assert!(s.drained);
    let expect = numalab_model::router::zero_load_latency(&m, f.mean_hops, 1, 1.0);
    assert!(
        (f.packet_latency_cycles - expect).abs() < 0.1,
        "{} vs {expect}",
        f.packet_latency_cycles
    );
    assert!(
        f.vns[0].queueing_cycles < 0.1,
        "{}",
        f.vns[0].queueing_cycles
    );
    // 1 + t_inject + 3 (H + 1) + H t_link + t_eject = 6 + 4H: BookSim's minimum of 6 for a
    // packet to itself.
    assert!((numalab_model::router::zero_load_latency(&m, 0.0, 1, 1.0) - 6.0).abs() < 1e-9);
}

/// One recorded BookSim2 point: offered load, and latency and accepted rate if stable.
fn booksim(file: &str) -> Vec<(f64, Option<(f64, f64)>)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/booksim2")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("recorded BookSim2 curve");
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let r: f64 = f[0].parse().unwrap();
            let point = (f[3] == "1").then(|| (f[1].parse().unwrap(), f[2].parse().unwrap()));
            (r, point)
        })
        .collect()
}

/// BookSim's saturation load: the highest offered load it accepts within 1%.
fn booksim_saturation(curve: &[(f64, Option<(f64, f64)>)]) -> f64 {
    curve
        .iter()
        .filter_map(|(r, p)| p.filter(|(_, acc)| *acc >= 0.99 * r).map(|_| *r))
        .fold(0.0, f64::max)
}

/// The workload BookSim runs at `rate` packets per node per cycle: its transpose has the
/// diagonal nodes send to themselves (numalab's `Pattern::Transpose` leaves them silent),
/// so it is given as flows; its hotspot class sends to node 0 (`Pattern::Hotspot` with
/// stop 0).
fn booksim_workload(k: u32, pattern: Pattern, rate: f64, flits: u32) -> Workload {
    if pattern == Pattern::Transpose {
        let flows = booksim_transpose(k)
            .into_iter()
            .map(|f| Flow { rate, ..f })
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

/// Checks the discrete-event model against one recorded BookSim2 curve:
/// - latency within `tol_latency` at the recorded loads in `loads` that are at most 90%
///   of BookSim's saturation load (saturation load: the highest offered load BookSim
///   accepts within 1%);
/// - saturation throughput (the accepted rate at BookSim's highest stable load) within
///   `tol_throughput`.
///
/// Returns the worst latency difference and the throughput difference.
fn against_booksim(
    file: &str,
    k: u32,
    pattern: Pattern,
    flits: u32,
    loads: &[f64],
    tol_latency: f64,
    tol_throughput: f64,
) -> (f64, f64) {
    let m = iq(k, k, &[]);
    let curve = booksim(file);
    let sat = booksim_saturation(&curve);
    let c = DesConfig {
        seed: 3,
        warmup_cycles: 3_000,
        measure_cycles: if k > 8 { 4_000 } else { 10_000 },
        drain_cycles: 20_000,
    };
    let run = |rate: f64| {
        let r = simulate(&m, &booksim_workload(k, pattern, rate, flits), &c).unwrap();
        (r.figures, r.stats)
    };
    let mut worst: f64 = 0.0;
    let mut checked = 0;
    for (r, p) in &curve {
        let Some((lat, _)) = p else { continue };
        if *r > 0.9 * sat + 1e-9 || !loads.iter().any(|l| (l - r).abs() < 1e-9) {
            continue;
        }
        let (f, s) = run(*r);
        assert!(s.drained, "{file}: unstable at {r}");
        let d = (f.packet_latency_cycles - lat) / lat;
        worst = worst.max(d.abs());
        checked += 1;
        assert!(
            d.abs() < tol_latency,
            "{file}, offered {r}: model {:.2} cycles, BookSim2 {lat:.2}",
            f.packet_latency_cycles
        );
    }
    assert_eq!(
        checked,
        loads.len(),
        "{file}: loads not in the curve or above 90% of {sat}"
    );
    let (last, point) = curve
        .iter()
        .rev()
        .find_map(|(r, p)| p.map(|p| (*r, p)))
        .unwrap();
    let (f, _) = run(last);
    let acc = f.packets_per_cycle / f64::from(k * k);
    let d = (acc - point.1) / point.1;
    assert!(
        d.abs() < tol_throughput,
        "{file}: saturation throughput: model {acc:.4}, BookSim2 {:.4} at offered {last}",
        point.1
    );
    eprintln!(
        "{file}: worst latency difference up to 90% of saturation ({sat}): {:.1}%, saturation throughput {:+.1}%",
        worst * 100.0,
        d * 100.0
    );
    (worst, d)
}

/// Uniform 8x8, 1-flit packets, the reference configuration: latency within 10% up to
/// 90% of saturation (measured: within 0.5%), saturation throughput within 5% (measured:
/// +0.2%).
#[test]
fn matches_booksim2_uniform_8x8() {
    against_booksim(
        "mesh8_uniform.csv",
        8,
        Pattern::Uniform,
        1,
        &[0.1, 0.2, 0.3, 0.34, 0.36],
        0.10,
        0.05,
    );
}

/// The same with 4-flit packets (VCs of 8 flits; rates in packets): measured within 2.3%
/// and -0.6%.
#[test]
fn matches_booksim2_uniform_8x8_four_flit_packets() {
    against_booksim(
        "mesh8_uniform_p4.csv",
        8,
        Pattern::Uniform,
        4,
        &[0.02, 0.05, 0.07, 0.09],
        0.10,
        0.05,
    );
}

/// Uniform 16x16: measured within 0.2% and -0.1%.
#[test]
fn matches_booksim2_uniform_16x16() {
    against_booksim(
        "mesh16_uniform.csv",
        16,
        Pattern::Uniform,
        1,
        &[0.1, 0.16, 0.18],
        0.10,
        0.05,
    );
}

/// BookSim's transpose on 8x8 ((x, y) sends to (y, x), the diagonal to itself):
/// measured within 0.8%,
/// saturation throughput +0.1%.
#[test]
fn matches_booksim2_transpose_8x8() {
    against_booksim(
        "mesh8_transpose.csv",
        8,
        Pattern::Transpose,
        1,
        &[0.04, 0.1, 0.12],
        0.10,
        0.05,
    );
}

/// 90% uniform and 10% to node 0 on 8x8: measured within 0.1%, +0.2%.
#[test]
fn matches_booksim2_hotspot_8x8() {
    against_booksim(
        "mesh8_hotspot.csv",
        8,
        HOT,
        1,
        &[0.05, 0.1, 0.12],
        0.10,
        0.05,
    );
}

/// The 8x8 hotspot near saturation on BookSim2's 0.001 grid (recorded 2026-12-07): on its
/// 0.01 grid the model's saturation was one step (7.1%) below BookSim's. On the fine grid
/// both saturate at the hot node's ejection port, 1 / (0.1 x 64 + 0.9) = 0.1370: BookSim
/// accepts within 1% up to 0.141, the model (highest load accepted within 1% and drained,
/// from 0.130 up) within 5% of that (measured: 0.141 here, 10,000 cycles with seed 3;
/// 0.139 with 20,000 cycles and seed 1, the table's runs: past the ejection bound the 1%
/// test depends on the run), and the analytic estimate too (0.1368, -3.0%).
#[test]
fn hotspot_8x8_saturation_on_a_fine_grid_is_within_5_percent_of_booksim2() {
    let curve = booksim("mesh8_hotspot_fine.csv");
    let bs = booksim_saturation(&curve);
    assert!((bs - 0.141).abs() < 1e-9, "{bs}");
    let m = iq(8, 8, &[]);
    let c = DesConfig {
        seed: 3,
        warmup_cycles: 3_000,
        measure_cycles: 10_000,
        drain_cycles: 20_000,
    };
    let mut sat = 0.0;
    for (r, _) in curve.iter().filter(|(r, _)| *r >= 0.13 - 1e-9) {
        let res = simulate(&m, &booksim_workload(8, HOT, *r, 1), &c).unwrap();
        let acc = res.figures.packets_per_cycle / 64.0;
        if !(res.stats.drained && res.figures.packet_latency_cycles < 500.0 && acc >= 0.99 * r) {
            break;
        }
        sat = *r;
    }
    assert!((sat - bs).abs() <= 0.05 * bs, "model {sat}, BookSim2 {bs}");
    let an = numalab_model::analytic::SyntheticCurve::new(
        &m,
        &Synthetic {
            pattern: HOT,
            rate: 1e-9,
            flits: 1,
        },
    );
    let est = an.router_saturation_rate();
    assert!(
        (est - bs).abs() <= 0.05 * bs,
        "analytic {est}, BookSim2 {bs}"
    );
    eprintln!("8x8 hotspot, fine grid: BookSim2 {bs}, model {sat}, analytic {est:.4}");
}

/// Transpose on 16x16 (recorded 2026-11-27): measured within 1.6%, -0.3%.
#[test]
fn matches_booksim2_transpose_16x16() {
    against_booksim(
        "mesh16_transpose.csv",
        16,
        Pattern::Transpose,
        1,
        &[0.02, 0.05, 0.06],
        0.10,
        0.05,
    );
}

/// 90% uniform and 10% to node 0 on 16x16, where the hot node's ejection port binds
/// (at 1 / 25.6 = 0.039; recorded 2026-11-27): measured within 0.2%, -0.1%.
#[test]
fn matches_booksim2_hotspot_16x16() {
    against_booksim(
        "mesh16_hotspot.csv",
        16,
        HOT,
        1,
        &[0.008, 0.02, 0.032],
        0.10,
        0.05,
    );
}

/// BookSim's `hotspot({0})` class at a tenth of the packets.
const HOT: Pattern = Pattern::Hotspot {
    stop: 0,
    fraction: 0.1,
};

/// `--set noc.router=input-queued` reaches the uniform experiment of the discrete-event
/// engine: its points use the pipeline's zero-load latency for the stability test, and
/// on 4x4 the observed saturation lies below the ideal routers' (about 85-90% of 4/k).
#[test]
fn the_uniform_experiment_runs_on_input_queued_routers() {
    use numalab_model::experiments::{self, Engine, Experiment, Options};
    let run = |router: &str| {
        let m = Model::load(
            "mesh",
            &[
                "noc.cols=4".into(),
                "noc.rows=4".into(),
                format!("noc.router={router}"),
            ],
        )
        .unwrap();
        let opts = Options {
            engine: Engine::Des,
            des: DesConfig {
                seed: 2,
                warmup_cycles: 1_000,
                measure_cycles: 8_000,
                drain_cycles: 8_000,
            },
            loads: Some(vec![0.2, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0]),
            ..Default::default()
        };
        let mut out: Vec<numalab_schema::Record> = Vec::new();
        experiments::run(&m, Experiment::Uniform, &opts, &mut out).unwrap();
        let rec = out.iter().find(|r| r.kind == "model.traffic").unwrap();
        let points = rec.data["points"].as_array().unwrap().clone();
        let observed = rec.data["saturation_observed"].as_f64().unwrap();
        (points, observed)
    };
    let (iq_points, iq_sat) = run("input-queued");
    let (_, oq_sat) = run("output-queued");
    // The lowest load is stable with the pipeline's latency (6 + 4 x 2.5 = 16 cycles).
    assert_eq!(iq_points[0]["stable"], true);
    let l0 = iq_points[0]["latency_cycles"].as_f64().unwrap();
    assert!(l0 > 15.0 && l0 < 22.0, "{l0}");
    assert!(
        iq_sat < oq_sat,
        "input-queued saturates at {iq_sat}, output-queued at {oq_sat}"
    );
}

/// `--engine check` on synthetic traffic shows the three engines side by side: the
/// analytic and discrete-event engines with the configured (input-queued) router, and
/// the discrete-event engine with the output-queued router, at the same offered loads,
/// with their differences; the third curve is the one `--engine des` gives with
/// `noc.router=output-queued`.
#[test]
fn check_shows_analytic_input_queued_and_output_queued_side_by_side() {
    use numalab_model::analytic::SyntheticCurve;
    use numalab_model::experiments::{self, Engine, Experiment, Options};
    let des = DesConfig {
        seed: 4,
        warmup_cycles: 300,
        measure_cycles: 3_000,
        drain_cycles: 3_000,
    };
    let loads = vec![0.3, 0.6, 0.95];
    let run = |m: &Model, engine: Engine| {
        let opts = Options {
            engine,
            des,
            loads: Some(loads.clone()),
            ..Default::default()
        };
        let mut out: Vec<numalab_schema::Record> = Vec::new();
        experiments::run(m, Experiment::Uniform, &opts, &mut out).unwrap();
        out
    };
    let m = iq(4, 4, &[]);
    let out = run(&m, Engine::Check);
    let engines: Vec<&str> = out
        .iter()
        .filter(|r| r.kind == "model.traffic")
        .map(|r| r.data["engine"].as_str().unwrap())
        .collect();
    assert_eq!(engines, ["analytic", "des", "des-output-queued"]);
    let check = out.iter().find(|r| r.kind == "model.check").unwrap();
    assert_eq!(check.data["router"], "input-queued");
    assert_eq!(check.data["other_router"], "output-queued");
    assert!(check.data.get("not_run").is_none(), "{}", check.data);
    let curve = |r: &numalab_schema::Record| {
        r.data["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["latency_cycles"].as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    let oq_rec = out
        .iter()
        .find(|r| r.data["engine"] == "des-output-queued")
        .unwrap();
    // The same curve as the discrete-event engine run alone with output-queued routers
    // at the same offered rates (its `--loads` are fractions of its own saturation,
    // the link bound, so they are scaled to land on the same rates).
    let oq_spec = iq(4, 4, &["noc.router=output-queued"]);
    let t = Synthetic {
        pattern: Pattern::Uniform,
        rate: 1e-9,
        flits: 1,
    };
    let (iq_sat, oq_sat) = (
        SyntheticCurve::new(&m, &t).router_saturation_rate(),
        SyntheticCurve::new(&oq_spec, &t).saturation_rate(),
    );
    assert!(iq_sat < oq_sat);
    let opts = Options {
        engine: Engine::Des,
        des,
        loads: Some(loads.iter().map(|l| l * iq_sat / oq_sat).collect()),
        ..Default::default()
    };
    let mut alone: Vec<numalab_schema::Record> = Vec::new();
    experiments::run(&oq_spec, Experiment::Uniform, &opts, &mut alone).unwrap();
    let oq = curve(oq_rec);
    for (a, b) in curve(&alone[0]).iter().zip(&oq) {
        assert!((a - b).abs() <= 1e-9 * b, "{a} vs {b}");
    }
    let metrics = check.data["metrics"].as_array().unwrap();
    let lat: Vec<&serde_json::Value> = metrics
        .iter()
        .filter(|x| x["name"].as_str().unwrap().starts_with("latency_cycles"))
        .collect();
    assert_eq!(lat.len(), 3, "{}", check.data);
    let iq_des = curve(out.iter().find(|r| r.data["engine"] == "des").unwrap());
    for (k, x) in lat.iter().enumerate() {
        let (d, o) = (
            x["des"].as_f64().unwrap(),
            x["other_router_des"].as_f64().unwrap(),
        );
        assert_eq!(d, iq_des[k]);
        assert_eq!(o, oq[k]);
        let diff = x["other_router_difference"].as_f64().unwrap();
        assert!((diff - (o - d) / d).abs() < 1e-12);
    }
    // Near saturation the ideal output-queued routers answer lower latency than the
    // input-queued ones (the error the issue measured against BookSim2).
    assert!(oq[2] < iq_des[2], "{oq:?} vs {iq_des:?}");
    assert!(metrics
        .iter()
        .any(|x| x["name"].as_str().unwrap().starts_with("saturation")));
    // The routers' zero-load latencies differ by their pipelines: 4 stages per router
    // (6 + 4H = 16 cycles at 2.5 mean hops on 4x4) against one router cycle per hop.
    let z = metrics
        .iter()
        .find(|x| x["name"] == "zero_load_latency_cycles")
        .unwrap();
    assert!((z["des"].as_f64().unwrap() - 16.0).abs() < 1e-9, "{z}");
    assert!(z["other_router_des"].as_f64().unwrap() < 10.0, "{z}");
}

/// A two-socket spec cannot run the input-queued router: `--engine check` runs the
/// analytic and output-queued discrete-event engines and says why the third is missing.
#[test]
fn check_says_why_the_input_queued_router_is_not_run_on_two_sockets() {
    use numalab_model::experiments::other_router;
    use numalab_model::spec::RouterKind;
    let two = Model::load("altra-q80-2s", &[]).unwrap();
    assert_eq!(two.spec.noc.router, RouterKind::OutputQueued);
    let why = other_router(&two).unwrap_err();
    assert!(why.contains("models one socket"), "{why}");
    assert!(why.contains("has 2"), "{why}");
    let one = iq(4, 4, &[]);
    let o = other_router(&one).unwrap();
    assert_eq!(o.spec.noc.router, RouterKind::OutputQueued);
}

/// `--loads` are fractions of the configured router's own saturation estimate: with
/// input-queued routers the analytic estimate with allocation losses, so the default
/// loads up to 95% are stable in the analytic engine; with output-queued ones the link
/// bound.
#[test]
fn loads_are_fractions_of_the_configured_routers_saturation() {
    use numalab_model::analytic::SyntheticCurve;
    use numalab_model::experiments::{self, offered_loads, Engine, Experiment, Options};
    let t = Synthetic {
        pattern: Pattern::Uniform,
        rate: 1e-9,
        flits: 1,
    };
    let opts = Options {
        loads: Some(vec![0.5, 0.95]),
        ..Default::default()
    };
    let m = iq(8, 8, &[]);
    let c = SyntheticCurve::new(&m, &t);
    let (rates, sat) = offered_loads(&m, Pattern::Uniform, &opts).unwrap();
    assert_eq!(sat, c.router_saturation_rate());
    assert!(
        sat < 0.95 * c.saturation_rate(),
        "{sat} vs {}",
        c.saturation_rate()
    );
    assert_eq!(rates, vec![0.5 * sat, 0.95 * sat]);
    let oq = iq(8, 8, &["noc.router=output-queued"]);
    let (_, oq_sat) = offered_loads(&oq, Pattern::Uniform, &opts).unwrap();
    assert_eq!(oq_sat, SyntheticCurve::new(&oq, &t).saturation_rate());
    // The analytic curve of the input-queued spec: stable at every default load below 1.
    let mut out: Vec<numalab_schema::Record> = Vec::new();
    let run = Options {
        engine: Engine::Analytic,
        ..Default::default()
    };
    experiments::run(&m, Experiment::Uniform, &run, &mut out).unwrap();
    let points = out[0].data["points"].as_array().unwrap();
    let below: Vec<_> = experiments::DEFAULT_LOADS
        .iter()
        .filter(|&&l| l < 1.0)
        .collect();
    assert_eq!(points.len(), below.len());
    assert!(points.iter().all(|p| p["stable"] == true), "{points:?}");
    let last = points.last().unwrap()["offered"].as_f64().unwrap();
    assert!((last - 0.95 * sat).abs() < 1e-12);
}

/// The same seed gives the same figures; another seed other figures.
#[test]
fn input_queued_runs_are_deterministic_per_seed() {
    let m = iq(4, 4, &[]);
    let t = Synthetic {
        pattern: Pattern::Uniform,
        rate: 0.4,
        flits: 2,
    };
    let c = DesConfig {
        seed: 9,
        warmup_cycles: 200,
        measure_cycles: 3_000,
        drain_cycles: 3_000,
    };
    let (a, _) = des::synthetic(&m, &t, &c).unwrap();
    let (b, _) = des::synthetic(&m, &t, &c).unwrap();
    assert_eq!(a, b);
    let (d, _) = des::synthetic(&m, &t, &DesConfig { seed: 10, ..c }).unwrap();
    assert_ne!(a.packet_latency_cycles, d.packet_latency_cycles);
}

/// A curve's points simulated side by side (`Options::jobs`, `model run --jobs`) are the
/// points simulated one after the other, in the same order, to the last bit; and the
/// record does not say how many ran at once.
#[test]
fn a_curve_simulated_on_several_threads_is_the_curve_simulated_on_one() {
    use numalab_model::experiments::{self, Engine, Experiment, Options};
    let small = iq(4, 4, &[]);
    let run_on = |m: &Model, jobs: usize, exp: Experiment, loads: &[f64]| {
        let opts = Options {
            engine: Engine::Check,
            des: DesConfig {
                seed: 3,
                warmup_cycles: 200,
                measure_cycles: 2_000,
                drain_cycles: 2_000,
            },
            loads: Some(loads.to_vec()),
            jobs,
            ..Default::default()
        };
        let mut out: Vec<numalab_schema::Record> = Vec::new();
        experiments::run(m, exp, &opts, &mut out).unwrap();
        out.iter().map(|r| r.data.to_string()).collect::<Vec<_>>()
    };
    let run = |jobs: usize, exp: Experiment| run_on(&small, jobs, exp, &[0.9, 0.1, 0.5, 1.1, 0.3]);
    for exp in [Experiment::Uniform, Experiment::Transpose] {
        let one = run(1, exp);
        // Records: the analytic curve, the discrete-event curve, the discrete-event
        // curve with output-queued routers, the check.
        assert_eq!(one.len(), 4);
        assert!(one[1].contains("\"engine\":\"des\""), "{}", one[1]);
        for jobs in [2, 5, 64] {
            assert_eq!(run(jobs, exp), one, "{jobs} jobs");
        }
        assert!(!one.iter().any(|r| r.contains("jobs")));
    }
    // Fewer points than jobs: each point's simulation is sharded on the spare threads
    // (8x8: two shards), the same curve.
    let m = iq(8, 8, &[]);
    let one = run_on(&m, 1, Experiment::Uniform, &[0.5, 0.9]);
    assert_eq!(run_on(&m, 4, Experiment::Uniform, &[0.5, 0.9]), one);
}

/// The application experiments' simulations (stream-triad: one per data node; policy:
/// one per configuration and application) run side by side too, and the records are
/// the same records in the same order, whatever the number of threads.
#[test]
fn application_experiments_on_several_threads_are_the_same_records_in_the_same_order() {
    use numalab_model::experiments::{self, Engine, Experiment, Options};
    let m = Model::load("neoverse-v1-64", &[]).unwrap();
    let run = |jobs: usize, exp: Experiment| {
        let opts = Options {
            engine: Engine::Check,
            des: DesConfig {
                seed: 5,
                warmup_cycles: 200,
                measure_cycles: 1_500,
                drain_cycles: 1_500,
            },
            data_nodes: Some(vec![3, 0, 1]),
            base_preset: "neoverse-v1-64".into(),
            jobs,
            ..Default::default()
        };
        let mut out: Vec<numalab_schema::Record> = Vec::new();
        experiments::run(&m, exp, &opts, &mut out).unwrap();
        out.iter()
            .map(|r| format!("{} {}", r.key, r.data))
            .collect::<Vec<_>>()
    };
    for (exp, records) in [(Experiment::StreamTriad, 9), (Experiment::Policy, 27)] {
        let one = run(1, exp);
        // Analytic, discrete-event and check per data node, or per configuration and
        // application.
        assert_eq!(one.len(), records, "{exp:?}");
        assert!(one[1].contains("/des/"), "{}", one[1]);
        assert_eq!(run(3, exp), one, "{exp:?}");
    }
}

/// BookSim's transpose on a k x k mesh at unit rate: (x, y) sends to (y, x), the diagonal
/// nodes to themselves (numalab's `Pattern::Transpose` leaves them silent).
fn booksim_transpose(k: u32) -> Vec<Flow> {
    (0..k * k)
        .map(|s| Flow {
            src: s,
            dst: (s % k) * k + s / k,
            rate: 1.0,
            vn: 0,
        })
        .collect()
}

/// The analytic engine with input-queued routers against a recorded BookSim2 curve
/// (transpose: BookSim's, as flows):
/// latency within `tol_latency` at every recorded stable load up to 90% of BookSim's
/// saturation load, and its saturation estimate within `tol_sat` of that load. No
/// simulation runs: this is the fast first answer, and these are its stated errors.
fn analytic_against_booksim(
    file: &str,
    k: u32,
    pattern: Pattern,
    flits: u32,
    tol_latency: f64,
    tol_sat: f64,
) -> (f64, f64) {
    let m = iq(k, k, &[]);
    let curve = booksim(file);
    let sat = booksim_saturation(&curve);
    let an = if pattern == Pattern::Transpose {
        numalab_model::analytic::SyntheticCurve::from_flows(&m, &booksim_transpose(k), flits)
    } else {
        numalab_model::analytic::SyntheticCurve::new(
            &m,
            &Synthetic {
                pattern,
                rate: 1e-9,
                flits,
            },
        )
    };
    let mut worst: f64 = 0.0;
    let mut checked = 0;
    for (r, p) in &curve {
        let Some((lat, _)) = p else { continue };
        if *r > 0.9 * sat + 1e-9 {
            continue;
        }
        let f = an.at(*r);
        assert!(!f.saturated, "{file}: the analytic engine saturates at {r}");
        let d = (f.packet_latency_cycles - lat) / lat;
        worst = worst.max(d.abs());
        checked += 1;
        assert!(
            d.abs() < tol_latency,
            "{file}, offered {r}: analytic {:.2} cycles, BookSim2 {lat:.2}",
            f.packet_latency_cycles
        );
    }
    assert!(checked >= 3, "{file}: {checked} points checked");
    let est = an.router_saturation_rate();
    let ds = (est - sat) / sat;
    assert!(
        ds.abs() < tol_sat,
        "{file}: analytic saturation {est:.4}, BookSim2 {sat:.4}"
    );
    // Input-queued routers saturate below the link bound; output-queued ones at it.
    assert!(est < an.saturation_rate() + 1e-12);
    eprintln!(
        "{file}: analytic worst latency difference up to 90% of saturation: {:.1}%, saturation {:+.1}%",
        worst * 100.0,
        ds * 100.0
    );
    (worst, ds)
}

/// Measured (latency up to 90% of BookSim's saturation load; saturation estimate):
/// uniform 8x8 2.0%, -0.4%; 4-flit packets 2.8%, +4.6%; 16x16 1.4%, +0.7%; hotspot
/// 1.0%, -2.3%; transpose (BookSim's: the diagonal sends to itself) 1.0%, +1.9%.
#[test]
fn the_analytic_engine_follows_booksim2_with_input_queued_routers() {
    analytic_against_booksim("mesh8_uniform.csv", 8, Pattern::Uniform, 1, 0.05, 0.05);
    analytic_against_booksim("mesh8_uniform_p4.csv", 8, Pattern::Uniform, 4, 0.05, 0.08);
    analytic_against_booksim("mesh16_uniform.csv", 16, Pattern::Uniform, 1, 0.05, 0.05);
    analytic_against_booksim(
        "mesh8_hotspot.csv",
        8,
        Pattern::Hotspot {
            stop: 0,
            fraction: 0.1,
        },
        1,
        0.05,
        0.05,
    );
    analytic_against_booksim("mesh8_transpose.csv", 8, Pattern::Transpose, 1, 0.05, 0.05);
    analytic_against_booksim(
        "mesh16_transpose.csv",
        16,
        Pattern::Transpose,
        1,
        0.05,
        0.05,
    );
    analytic_against_booksim("mesh16_hotspot.csv", 16, HOT, 1, 0.05, 0.05);
}

/// A packet a stop sends to itself passes its own router's pipeline once (injection input
/// to ejection output, no link), as in the discrete-event router and BookSim: 6 cycles
/// with the reference delays, in both engines. BookSim's transpose then has 5.25 mean
/// hops on 8x8 (the 8 diagonal stops at 0) and a zero-load latency of 6 + 4 x 5.25.
#[test]
fn self_addressed_packets_pass_their_own_router() {
    let m = iq(8, 8, &[]);
    let zero = numalab_model::router::zero_load_latency(&m, 0.0, 1, 1.0);
    assert!((zero - 6.0).abs() < 1e-12);
    let one = vec![Flow {
        src: 9,
        dst: 9,
        rate: 1.0,
        vn: 0,
    }];
    let an = numalab_model::analytic::SyntheticCurve::from_flows(&m, &one, 1);
    let f = an.at(1e-6);
    assert!(
        (f.packet_latency_cycles - zero).abs() < 1e-6,
        "{}",
        f.packet_latency_cycles
    );
    assert_eq!(f.mean_hops, 0.0);
    let des = flows(
        &m,
        vec![Flow {
            src: 9,
            dst: 9,
            rate: 0.01,
            vn: 0,
        }],
        &DesConfig {
            drain_cycles: 5_000,
            ..cfg(20_000)
        },
    );
    assert!(
        (des.flows[0].latency_cycles - zero).abs() < 1e-9,
        "discrete-event self packet: {}",
        des.flows[0].latency_cycles
    );
    let tr = numalab_model::analytic::SyntheticCurve::from_flows(&m, &booksim_transpose(8), 1);
    let f = tr.at(1e-6);
    assert!((f.mean_hops - 5.25).abs() < 1e-12, "{}", f.mean_hops);
    assert!((f.packet_latency_cycles - (6.0 + 4.0 * 5.25)).abs() < 1e-4);
    // No output takes two transpose streams: with unbounded buffers the estimate is the
    // link bound, 1/7 (7 streams share the busiest link); the reference buffers take a
    // little off it (the queue before that link holds the credits of the links into it).
    let unbounded =
        numalab_model::analytic::SyntheticCurve::from_flows(&m, &booksim_transpose(8), 1)
            .infinite_buffers()
            .router_saturation_rate();
    assert!((unbounded - 1.0 / 7.0).abs() < 1e-6, "{unbounded}");
    let est = tr.router_saturation_rate();
    eprintln!("transpose saturation estimate {est:.5}, unbounded buffers {unbounded:.5}");
    assert!(est <= unbounded && est > 0.995 * unbounded, "{est}");
}

/// Switch-allocation losses are the mechanism, not a constant: output-queued routers keep
/// the link bound, and with input-queued ones the analytic latency at a given load rises
/// above the output-queued one by more than the pipeline's fixed cost as the load grows.
#[test]
fn input_queued_losses_grow_with_load() {
    let t = Synthetic {
        pattern: Pattern::Uniform,
        rate: 1e-9,
        flits: 1,
    };
    let oq = Model::load("mesh", &["noc.router=output-queued".into()]).unwrap();
    let iqm = iq(8, 8, &[]);
    let a = numalab_model::analytic::SyntheticCurve::new(&oq, &t);
    let b = numalab_model::analytic::SyntheticCurve::new(&iqm, &t);
    assert!((a.router_saturation_rate() - a.saturation_rate()).abs() < 1e-12);
    assert!(b.router_saturation_rate() < 0.9 * b.saturation_rate());
    let gap = |r: f64| b.at(r).packet_latency_cycles - a.at(r).packet_latency_cycles;
    // At zero load the gap is the pipeline difference alone.
    let zero = gap(1e-6);
    let h = numalab_model::geometry::mean_hops_formula(8);
    let expected = numalab_model::router::zero_load_latency(&iqm, h, 1, 1.0) - (2.0 * h + 2.0);
    assert!((zero - expected).abs() < 1e-4, "{zero} against {expected}");
    assert!(gap(0.2) > zero + 0.2);
    assert!(gap(0.38) > gap(0.2) + 1.0);
}

/// The analytic curve of a pattern on an 8x8 mesh with input-queued routers of `vcs`
/// VCs of `buf` flits, with the finite-buffer correction and without it.
fn buffered_curves(
    m: &Model,
    pattern: Pattern,
    flits: u32,
) -> (
    numalab_model::analytic::SyntheticCurve<'_>,
    numalab_model::analytic::SyntheticCurve<'_>,
) {
    let t = Synthetic {
        pattern,
        rate: 1e-9,
        flits,
    };
    (
        numalab_model::analytic::SyntheticCurve::new(m, &t),
        numalab_model::analytic::SyntheticCurve::new(m, &t).infinite_buffers(),
    )
}

/// One VC of two flits: credits and the single VC bring the saturation far below the
/// unbounded-buffer estimate, and latency rises with load above the unbounded one's. The
/// discrete-event router (credits modelled exactly) is already unstable half-way between
/// the two estimates, so the corrected one is the closer (`buffer_compare`: discrete-event
/// saturation 0.090, corrected 0.075, unbounded buffers 0.419).
#[test]
fn short_buffers_bring_the_analytic_saturation_down() {
    let m = iq(8, 8, &["noc.vcs=1", "noc.buffer_flits=2"]);
    let (buffered, unbounded) = buffered_curves(&m, Pattern::Uniform, 1);
    let (s1, s0) = (
        buffered.router_saturation_rate(),
        unbounded.router_saturation_rate(),
    );
    assert!(
        s1 < 0.25 * s0,
        "corrected {s1:.4}, unbounded buffers {s0:.4}"
    );
    let mut last = 0.0;
    for f in [0.25, 0.5, 0.75] {
        let (a1, a0) = (buffered.at(f * s1), unbounded.at(f * s1));
        assert!(!a1.saturated);
        assert!(
            a1.packet_latency_cycles > last && a1.packet_latency_cycles > a0.packet_latency_cycles,
            "at {:.4}: {:.2} (previous {last:.2}), unbounded {:.2}",
            f * s1,
            a1.packet_latency_cycles,
            a0.packet_latency_cycles
        );
        last = a1.packet_latency_cycles;
    }
    assert!(buffered.at(1.01 * s1).saturated);
    let mid = 0.5 * (s0 + s1);
    let c = DesConfig {
        seed: 1,
        warmup_cycles: 2_000,
        measure_cycles: 6_000,
        drain_cycles: 0,
    };
    let run = |rate: f64| {
        let t = Synthetic {
            pattern: Pattern::Uniform,
            rate,
            flits: 1,
        };
        let (f, _) = des::synthetic(&m, &t, &c).unwrap();
        f.packets_per_cycle / 64.0
    };
    let acc = run(mid);
    assert!(
        acc < 0.9 * mid,
        "discrete-event router accepts {acc:.4} at {mid:.4}"
    );
    let low = 0.5 * s1;
    let acc = run(low);
    assert!(
        acc > 0.97 * low,
        "discrete-event router accepts {acc:.4} at {low:.4}"
    );
}

/// With BookSim's reference buffers (8 VCs of 8 flits) the correction changes nothing
/// that matters: every curve compared with BookSim keeps its figures (latency within
/// 0.1% up to 95% of the saturation estimate, the estimate within 0.5%: the hotspot's
/// falls by 0.17%, from 0.1370 to 0.1368, where only 2 of its 8 ejection VCs are busy).
#[test]
fn reference_buffers_keep_the_analytic_figures() {
    for (k, pattern, flits) in [
        (8, Pattern::Uniform, 1),
        (8, Pattern::Uniform, 4),
        (16, Pattern::Uniform, 1),
        (
            8,
            Pattern::Hotspot {
                stop: 0,
                fraction: 0.1,
            },
            1,
        ),
    ] {
        let m = iq(k, k, &[]);
        let (buffered, unbounded) = buffered_curves(&m, pattern, flits);
        let (s1, s0) = (
            buffered.router_saturation_rate(),
            unbounded.router_saturation_rate(),
        );
        assert!(
            (s1 - s0).abs() / s0 < 5e-3,
            "{k} {pattern:?} {flits}: {s1} vs {s0}"
        );
        let mut worst: f64 = 0.0;
        for f in [0.1, 0.3, 0.5, 0.7, 0.9, 0.95] {
            let (a1, a0) = (
                buffered.at(f * s0).packet_latency_cycles,
                unbounded.at(f * s0).packet_latency_cycles,
            );
            worst = worst.max((a1 - a0).abs() / a0);
            assert!(
                (a1 - a0).abs() / a0 < 1e-3,
                "{k} {pattern:?} {flits} at {:.4}: {a1:.3} vs {a0:.3}",
                f * s0
            );
        }
        eprintln!(
            "{k}x{k} {pattern:?}, {flits}-flit packets: saturation estimate {:+.3}%, latency at most {:.4}% apart",
            100.0 * (s1 - s0) / s0,
            100.0 * worst
        );
    }
}

/// The corrected analytic engine against the discrete-event router on short-buffer
/// configurations of uniform 8x8 traffic, at 25/50/75% of the discrete-event saturation
/// load (measured by `buffer_compare`'s bisection, same seed and run lengths). Measured
/// worst latency differences (unbounded buffers in brackets): 1 VC of 8 flits 3.7%
/// (-11.7%); 4-flit packets on 2 VCs of 2 flits 6.9% (-24.0%); 4-flit packets on 8 VCs
/// of 2 flits 5.7% (-12.0%). Saturation estimate: +1.1% (+116%), +7.8% (+144%), +9.9%
/// (+9.9%).
#[test]
fn the_buffer_correction_follows_the_discrete_event_router() {
    let c = DesConfig {
        seed: 1,
        warmup_cycles: 3_000,
        measure_cycles: 10_000,
        drain_cycles: 20_000,
    };
    for (vcs, buf, flits, des_sat, tol_latency, tol_sat) in [
        (1, 8, 1, 0.193359375, 0.06, 0.05),
        (2, 2, 4, 0.04296875, 0.10, 0.12),
        (8, 2, 4, 0.09521484375, 0.09, 0.12),
    ] {
        let m = iq(
            8,
            8,
            &[
                &format!("noc.vcs={vcs}"),
                &format!("noc.buffer_flits={buf}"),
            ],
        );
        let (buffered, unbounded) = buffered_curves(&m, Pattern::Uniform, flits);
        let mut worst: f64 = 0.0;
        for f in [0.25, 0.5, 0.75] {
            let rate = f * des_sat;
            let t = Synthetic {
                pattern: Pattern::Uniform,
                rate,
                flits,
            };
            let (d, s) = des::synthetic(&m, &t, &c).unwrap();
            assert!(s.drained);
            let des_lat = d.packet_latency_cycles;
            let an = buffered.at(rate).packet_latency_cycles;
            let before = unbounded.at(rate).packet_latency_cycles;
            let e = (an - des_lat) / des_lat;
            worst = worst.max(e.abs());
            assert!(
                e.abs() < tol_latency,
                "{vcs} VCs x {buf} flits, {flits}-flit packets at {rate:.4}: analytic {an:.2}, discrete-event {des_lat:.2}"
            );
            if f == 0.75 {
                assert!(
                    e.abs() < ((before - des_lat) / des_lat).abs(),
                    "the correction must help at 75%: {an:.2} vs {before:.2} (discrete-event {des_lat:.2})"
                );
            }
        }
        let est = buffered.router_saturation_rate();
        let ds = (est - des_sat) / des_sat;
        assert!(
            ds.abs() < tol_sat,
            "{vcs} VCs x {buf} flits, {flits}-flit packets: saturation {est:.4} vs {des_sat:.4}"
        );
        eprintln!(
            "{vcs} VCs x {buf} flits, {flits}-flit packets: worst latency difference up to 75%: {:.1}%, saturation {:+.1}%",
            100.0 * worst,
            100.0 * ds
        );
    }
}

/// The figures of a few runs, exactly as the first implementation (a time wheel of flit
/// and credit events, all arrivals of a cycle taken before any router steps, hop counts
/// kept per packet) gave them: the per-router delay lines that replaced it, the arrivals
/// taken router by router and the Manhattan hop counts change the speed, not the model.
/// The runs cover shared links with four networks, the routing and credit delays (and the
/// arrival cycles they need), one VC with 2-flit buffers, YX routing with two allocator
/// iterations, and hotspot traffic of 4-flit packets.
#[test]
fn input_queued_figures_are_those_of_the_first_implementation() {
    let c = |seed| DesConfig {
        seed,
        warmup_cycles: 500,
        measure_cycles: 4_000,
        drain_cycles: 20_000,
    };
    let synthetic = |pattern, rate, flits, networks| Workload::Synthetic {
        traffic: Synthetic {
            pattern,
            rate,
            flits,
        },
        networks,
    };
    // Packets per cycle, latency, mean hops, delivered, cycles run, router steps.
    type Want = (f64, f64, f64, u64, u64, u64);
    // (model, workload, seed, measured cycles, figures)
    let runs: Vec<(Model, Workload, u64, u64, Want)> = vec![
        (
            iq(8, 8, &["noc.shared_links=true", "noc.vcs=2"]),
            synthetic(Pattern::Uniform, 0.2, 2, 4),
            3,
            3_000,
            (
                12.858,
                51.596399700405485,
                5.26831788011054,
                38_719,
                3_774,
                238_682,
            ),
        ),
        (
            iq(
                8,
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
            2,
            4_000,
            (
                11.89175,
                2190.8325439958594,
                5.247916666666667,
                77_280,
                12_785,
                817_972,
            ),
        ),
        (
            iq(
                6,
                4,
                &[
                    "noc.vcs=1",
                    "noc.buffer_flits=2",
                    "noc.routing=yx",
                    "noc.alloc_iters=2",
                ],
            ),
            synthetic(Pattern::Uniform, 0.2, 3, 1),
            1,
            4_000,
            (
                0.966,
                9561.035454344948,
                3.1902845169827967,
                18_136,
                24_500,
                587_907,
            ),
        ),
        (
            iq(8, 8, &[]),
            synthetic(
                Pattern::Hotspot {
                    stop: 27,
                    fraction: 0.2,
                },
                0.03,
                4,
                1,
            ),
            1,
            4_000,
            (
                1.3555,
                2126.79702970297,
                4.893564356435643,
                7_272,
                24_500,
                1_333_913,
            ),
        ),
    ];
    for (m, w, seed, measure, want) in &runs {
        let r = simulate(
            m,
            w,
            &DesConfig {
                measure_cycles: *measure,
                ..c(*seed)
            },
        )
        .expect("simulation");
        let f = &r.figures;
        let delivered: u64 = r.flows.iter().map(|x| x.delivered).sum();
        assert_eq!(
            (
                f.packets_per_cycle,
                f.packet_latency_cycles,
                f.mean_hops,
                delivered,
                r.stats.cycles,
                r.stats.events
            ),
            *want,
            "{w:?}"
        );
    }
}

/// The queueing an input-queued run reports is its latency beyond the zero-load latency
/// of each packet's own path, slower boundary links included. On the V1 preset (3-cycle
/// links across quadrants) at one request in flight per core there is almost nothing to
/// queue behind, wherever the data is; a figure that took the mean of the x and y link
/// cycles for every hop showed 1.3 and 2.5 cycles of "queueing" for data one and two
/// quadrants away.
#[test]
fn input_queued_queueing_counts_the_boundary_links_as_path_not_queue() {
    use numalab_model::traffic::{App, Data, Op};
    let m = Model::load(
        "neoverse-v1-64",
        &[
            "noc.router=input-queued".into(),
            "cores.max_outstanding=1".into(),
        ],
    )
    .unwrap();
    let c = DesConfig {
        seed: 5,
        warmup_cycles: 2_000,
        measure_cycles: 20_000,
        drain_cycles: 0,
    };
    let mut latency = Vec::new();
    for node in [0, 1, 3] {
        let app = App {
            cores: m.nodes[0].cores.clone(),
            data: Data::Node { node },
            mix: vec![Op::Read, Op::Read, Op::Write],
            slc_hit: 0.0,
            msc_hit: 0.0,
            snoop: 0.0,
            outstanding: 1,
            think_cycles: 0,
        };
        let (f, _) = des::app(&m, &app, &c).unwrap();
        for v in &f.vns {
            assert!(
                v.queueing_cycles < 0.3,
                "data on node {node}, {}: {} cycles of queueing at one request per core",
                v.vn,
                v.queueing_cycles
            );
        }
        latency.push(f.vns[0].latency_cycles);
    }
    // The remote requests do take the longer path: more hops and 2 extra cycles per
    // boundary link crossed.
    assert!(latency[1] > latency[0] + 2.0, "{latency:?}");
    assert!(latency[2] > latency[1] + 2.0, "{latency:?}");
}

/// Reads by node 0's cores (8 in flight each, no SLC hits) of data on `node` of the V1
/// preset (`preset` with its variants) with input-queued routers and `set` (none if
/// empty), for 10,000 measured cycles at `seed`; the model and the figures.
fn v1_reads(
    preset: &str,
    set: &str,
    node: u32,
    seed: u64,
) -> (Model, numalab_model::traffic::Figures) {
    use numalab_model::traffic::{App, Data, Op};
    let mut sets = vec![
        "noc.router=input-queued".to_string(),
        "cores.max_outstanding=8".to_string(),
    ];
    if !set.is_empty() {
        sets.push(set.to_string());
    }
    let m = Model::load(preset, &sets).unwrap();
    let app = App {
        cores: m.nodes[0].cores.clone(),
        data: Data::Node { node },
        mix: vec![Op::Read],
        slc_hit: 0.0,
        msc_hit: 0.0,
        snoop: 0.0,
        outstanding: 8,
        think_cycles: 0,
    };
    let c = DesConfig {
        seed,
        warmup_cycles: 2_000,
        measure_cycles: 10_000,
        drain_cycles: 0,
    };
    let (f, _) = des::app(&m, &app, &c).unwrap();
    (m, f)
}

/// A controller whose queue holds `queue_depth` requests takes no more off the network:
/// each request stays held from leaving the network until its access is done, at least
/// the access latency plus one channel's service, so by Little's law a controller serves
/// at most `depth / (latency + service)` requests per cycle; the requests it does not take
/// wait in the request network, whose queueing rises while the data network's does not.
#[test]
fn a_full_controller_queue_holds_requests_in_the_request_network() {
    use numalab_model::model::{DAT, REQ};
    let (m, free) = v1_reads("neoverse-v1-64", "", 0, 9);
    let (_, held) = v1_reads("neoverse-v1-64", "memory.hbm.queue_depth=2", 0, 9);
    let bound = |k: usize| 2.0 / (m.mcs[k].latency_cycles + m.mcs[k].service_cycles);
    let busy: Vec<usize> = (0..m.mcs.len())
        .filter(|&k| free.mc_accesses_per_cycle[k] > 0.0)
        .collect();
    assert!(
        !busy.is_empty(),
        "node 0's data is read from some controller"
    );
    for &k in &busy {
        assert!(
            held.mc_accesses_per_cycle[k] <= bound(k) * 1.01,
            "controller {k}: {} accesses per cycle with 2 entries, bound {}",
            held.mc_accesses_per_cycle[k],
            bound(k)
        );
        assert!(
            held.mc_accesses_per_cycle[k] > bound(k) * 0.5,
            "controller {k}: {} accesses per cycle, far under its bound {}: something else limits",
            held.mc_accesses_per_cycle[k],
            bound(k)
        );
    }
    assert!(
        busy.iter()
            .any(|&k| free.mc_accesses_per_cycle[k] > bound(k) * 1.5),
        "unbounded, the controllers serve beyond the 2-entry bound: {:?}",
        free.mc_accesses_per_cycle
    );
    let (q_free, q_held) = (free.vns[REQ].queueing_cycles, held.vns[REQ].queueing_cycles);
    assert!(
        q_held > 10.0 * q_free.max(0.1) && q_held > 20.0,
        "request queueing {q_free} -> {q_held} cycles"
    );
    assert!(
        held.vns[DAT].queueing_cycles < 1.0,
        "the data network stays flat: {} cycles",
        held.vns[DAT].queueing_cycles
    );
}

#[test]
fn a_bounded_controller_queue_is_refused_where_it_is_not_modeled() {
    use numalab_model::traffic::{App, Data, Op};
    // Zero entries would take nothing.
    let e = Model::load("neoverse-v1-64", &["memory.hbm.queue_depth=0".into()]).unwrap_err();
    assert!(e.to_string().contains("memory.hbm.queue_depth = 0"), "{e}");
    // The output-queued engine cannot hold a request in the network.
    let m = Model::load("neoverse-v1-64", &["memory.hbm.queue_depth=4".into()]).unwrap();
    let app = App {
        cores: m.nodes[0].cores.clone(),
        data: Data::Node { node: 0 },
        mix: vec![Op::Read],
        slc_hit: 0.0,
        msc_hit: 0.0,
        snoop: 0.0,
        outstanding: 1,
        think_cycles: 0,
    };
    let e = des::app(&m, &app, &cfg(100)).unwrap_err().to_string();
    assert!(
        e.contains("memory.hbm.queue_depth") && e.contains("--set noc.router=input-queued"),
        "{e}"
    );
    assert!(m.check_queue_depth(true).is_ok());
    // The same for home trackers.
    let e = Model::load("neoverse-v1-64", &["slc.tracker_entries=0".into()]).unwrap_err();
    assert!(e.to_string().contains("slc.tracker_entries = 0"), "{e}");
    let m = Model::load("neoverse-v1-64", &["slc.tracker_entries=4".into()]).unwrap();
    let e = des::app(&m, &app, &cfg(100)).unwrap_err().to_string();
    assert!(e.starts_with("slc.tracker_entries bounds"), "{e}");
}

/// A home whose trackers hold `slc.tracker_entries` requests per slice makes the others
/// wait off the network (CHI's retry), and keeps each entry until the request completes
/// there: a read's until the requester's CompAck arrives, so requesters one quadrant away
/// hold entries longer and get less bandwidth from the same trackers; without the bound
/// the quadrants are level.
#[test]
fn a_full_home_tracker_holds_remote_requests_longer() {
    use numalab_model::model::{DAT, REQ};
    let run = |set: &str, node| v1_reads("neoverse-v1-64:numa4-grouped", set, node, 4);
    let (_, free0) = run("", 0);
    let (_, free3) = run("", 3);
    // Unbounded, node 3 loses only what the longer trip costs 8 requests in flight.
    let level = free3.requests_per_cycle / free0.requests_per_cycle;
    let (m, held0) = run("slc.tracker_entries=2", 0);
    let (_, held3) = run("slc.tracker_entries=2", 3);
    // Each entry is held at least for the memory access: a bound per home stop.
    for (node, f) in [(0u32, &held0), (3, &held3)] {
        let homes = m.slices.iter().filter(|s| s.node == node).count() as f64;
        let mc = &m.mcs[0];
        let bound = homes * 2.0 / (mc.latency_cycles + mc.service_cycles);
        assert!(
            f.requests_per_cycle <= bound * 1.01 && f.requests_per_cycle > 0.0,
            "node {node}: {} requests per cycle, bound {bound}",
            f.requests_per_cycle
        );
        // The wait is off the network: no queueing there.
        for v in [REQ, DAT] {
            assert!(
                f.vns[v].queueing_cycles < 1.0,
                "node {node}, {}: {} cycles",
                f.vns[v].vn,
                f.vns[v].queueing_cycles
            );
        }
    }
    let remote = held3.requests_per_cycle / held0.requests_per_cycle;
    assert!(
        remote < 0.9 * level,
        "with 2 entries per slice, node 3 gets {remote:.3} of node 0's rate, unbounded {level:.3}"
    );
    assert!(held0.requests_per_cycle < 0.8 * free0.requests_per_cycle);
}

/// One simulation sharded on several threads (`simulate_shards`: contiguous ranges of
/// routers stepped side by side, flits and credits across a shard boundary handed over
/// at the cycle's end) is the same simulation: figures, flows and statistics equal to
/// the last bit on 1, 2, 3 and 5 threads, for every mechanism that crosses a boundary
/// (multi-flit packets, several and shared networks, routing and allocation delays,
/// long credit loops, YX routing, explicit flows, a saturated mesh that does not drain),
/// whether the shards start at the first cycle or take over a run one thread began (in
/// an odd cycle, in the warm-up or in the measured window). `simulate_threads`, which
/// times cycles of the run on one thread and on a sharded copy to choose, gives the
/// same figures too, and the choice `choose_shards` makes from what it measured.
#[test]
fn one_simulation_sharded_on_several_threads_is_the_same_simulation() {
    use numalab_model::router::{choose_shards, simulate_shards, simulate_threads, SPLIT_CYCLE};
    let synth = |pattern, rate, flits, networks| Workload::Synthetic {
        traffic: Synthetic {
            pattern,
            rate,
            flits,
        },
        networks,
    };
    let hot = Pattern::Hotspot {
        stop: 27,
        fraction: 0.2,
    };
    let delays = [
        "noc.routing_delay=1",
        "noc.credit_delay=4",
        "noc.vc_alloc_delay=2",
        "noc.vcs=3",
        "noc.buffer_flits=5",
    ];
    let small = [
        "noc.vcs=1",
        "noc.buffer_flits=2",
        "noc.routing=yx",
        "noc.alloc_iters=2",
    ];
    let fast = [
        "noc.link_cycles_x=0",
        "noc.link_cycles_y=0",
        "noc.st_final_delay=0",
        "noc.credit_delay=0",
    ];
    let transposed = Workload::Flows {
        flows: (0..64)
            .map(|s| Flow {
                src: s,
                dst: (s % 8) * 8 + s / 8,
                rate: 0.3,
                vn: (s % 2) as u8,
            })
            .collect(),
        flits: 2,
    };
    let cases: Vec<(&str, Model, Workload)> = vec![
        (
            "uniform",
            iq(16, 8, &[]),
            synth(Pattern::Uniform, 0.3, 1, 1),
        ),
        (
            "saturated",
            iq(8, 8, &[]),
            synth(Pattern::Uniform, 0.6, 1, 1),
        ),
        ("hotspot 4 flits", iq(16, 8, &[]), synth(hot, 0.03, 4, 1)),
        (
            "transpose",
            iq(8, 8, &[]),
            synth(Pattern::Transpose, 0.1, 2, 1),
        ),
        (
            "3 networks",
            iq(8, 8, &[]),
            synth(Pattern::Uniform, 0.25, 2, 3),
        ),
        (
            "shared links",
            iq(16, 8, &["noc.shared_links=true", "noc.vcs=2"]),
            synth(Pattern::Uniform, 0.2, 2, 4),
        ),
        (
            "delays",
            iq(16, 8, &delays),
            synth(Pattern::Uniform, 0.25, 2, 1),
        ),
        (
            "12x8 yx",
            iq(12, 8, &small),
            synth(Pattern::Uniform, 0.2, 3, 1),
        ),
        // Flits and credits that arrive in the cycle after they are sent: a handover one
        // cycle late would be too late.
        (
            "one-cycle hops",
            iq(16, 8, &fast),
            synth(Pattern::Uniform, 0.3, 2, 1),
        ),
        ("flows", iq(8, 8, &[]), transposed),
    ];
    let c = DesConfig {
        seed: 7,
        warmup_cycles: 300,
        measure_cycles: 1_500,
        drain_cycles: 2_000,
    };
    for (name, m, w) in &cases {
        let one = simulate_threads(m, w, &c, 1).unwrap();
        assert_eq!(one.threads, 1);
        assert!(
            one.stats.events > 0 && one.figures.packets_per_cycle > 0.0,
            "{name}"
        );
        assert!(one.stats.routers >= 64, "{name}");
        for (shards, from) in [(2, 0), (3, 301), (5, 1)] {
            let r = simulate_shards(m, w, &c, shards, from).unwrap();
            assert_eq!(r.threads, shards, "{name}: {shards} shards");
            assert_eq!(
                (&r.figures, &r.flows, &r.stats),
                (&one.figures, &one.flows, &one.stats),
                "{name}: {shards} shards from cycle {from}"
            );
        }
        let r = simulate_threads(m, w, &c, 2).unwrap();
        assert_eq!(
            (&r.figures, &r.flows, &r.stats),
            (&one.figures, &one.flows, &one.stats),
            "{name}: up to 2 threads"
        );
        // It measured (unless this host lets the process use one CPU only) and did
        // what the rule says of its measurements.
        if let Some(choice) = &r.sharding {
            let half = SPLIT_CYCLE / 2;
            assert_eq!(choice.cycles, (half, SPLIT_CYCLE), "{name}");
            assert!(choice.one_ns > 0.0, "{choice:?}");
            assert_eq!(choice.max, 2, "{name}");
            assert_eq!(choice.trials.len(), 1, "{choice:?}");
            assert!(
                choice.trials[0].0 == 2 && choice.trials[0].1 > 0.0,
                "{choice:?}"
            );
            assert_eq!(choice.shards, choose_shards(choice.one_ns, &choice.trials));
            assert_eq!(r.threads, choice.shards);
        } else {
            assert_eq!(r.threads, 1);
        }
        if *name == "saturated" {
            assert!(
                !one.stats.drained,
                "the saturated mesh drains: not a saturated case"
            );
        }
    }
    // A closed loop (application traffic) stays on one thread.
    let v1 = Model::load("neoverse-v1-64", &["noc.router=input-queued".to_string()]).unwrap();
    let app = numalab_model::traffic::App {
        cores: (0..16).collect(),
        data: numalab_model::traffic::Data::Node { node: 0 },
        mix: vec![
            numalab_model::traffic::Op::Read,
            numalab_model::traffic::Op::Write,
        ],
        slc_hit: 0.0,
        msc_hit: 0.0,
        snoop: 0.0,
        outstanding: 4,
        think_cycles: 0,
    };
    let short = DesConfig {
        measure_cycles: 500,
        ..c
    };
    let r = simulate_threads(&v1, &Workload::App(app.clone()), &short, 4).unwrap();
    assert_eq!((r.threads, &r.sharding), (1, &None));
    assert_eq!(
        r,
        simulate(&v1, &Workload::App(app.clone()), &short).unwrap()
    );
    let r = simulate_shards(&v1, &Workload::App(app.clone()), &short, 4, 0).unwrap();
    assert_eq!(r, simulate(&v1, &Workload::App(app), &short).unwrap());
}

/// The rule that chooses the shards from the same cycles timed on one thread and on
/// trial shards: the fastest, if it saves a tenth.
#[test]
fn shards_are_the_fastest_trial_that_saves_a_tenth() {
    use numalab_model::router::choose_shards;
    // Slower sharded (4x4 on the development VM): one thread.
    assert_eq!(choose_shards(5_000.0, &[(2, 5_600.0)]), 1);
    // Faster by less than a tenth: one thread; by a tenth or more: sharded.
    assert_eq!(choose_shards(10_000.0, &[(2, 9_100.0)]), 1);
    assert_eq!(choose_shards(10_000.0, &[(2, 9_000.0)]), 2);
    // The fastest of several, wherever it is in the list.
    assert_eq!(
        choose_shards(20_000.0, &[(2, 11_000.0), (4, 7_000.0), (8, 9_000.0)]),
        4
    );
    assert_eq!(choose_shards(20_000.0, &[(2, 11_000.0), (4, 12_000.0)]), 2);
    // Nothing measured, nothing tried or nonsense: one thread.
    assert_eq!(choose_shards(0.0, &[(2, 1.0)]), 1);
    assert_eq!(choose_shards(f64::NAN, &[(2, 1.0)]), 1);
    assert_eq!(choose_shards(10_000.0, &[]), 1);
    assert_eq!(choose_shards(10_000.0, &[(2, f64::NAN), (1, 1.0)]), 1);
}

/// The default router: input-queued where it is modelled (the `mesh` preset names it,
/// and a spec that names none gets it), output-queued for two sockets with the reason as
/// the value's source unless the command line asks for input-queued (then the
/// discrete-event engine refuses, naming the remedy); results of output-queued routers
/// carry their known error.
#[test]
fn the_default_router_is_input_queued_where_it_is_modelled() {
    use numalab_model::spec::RouterKind;
    let mesh = Model::load("mesh", &[]).unwrap();
    assert_eq!(mesh.spec.noc.router, RouterKind::InputQueued);
    assert!(numalab_model::experiments::router_warning(&mesh).is_empty());
    assert_eq!(
        Model::load("altra-q80-2s", &[]).unwrap().spec.noc.router,
        RouterKind::OutputQueued
    );
    // A preset of its own that names no router: the spec's default.
    let dir = std::env::temp_dir().join(format!("numalab-router-default-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/mesh.toml")).unwrap();
    let unnamed: String = text
        .lines()
        .filter(|l| !l.starts_with("router ="))
        .map(|l| format!("{l}\n"))
        .collect();
    let one = dir.join("one.toml");
    std::fs::write(&one, &unnamed).unwrap();
    let m = Model::load(one.to_str().unwrap(), &[]).unwrap();
    assert_eq!(m.spec.noc.router, RouterKind::InputQueued);
    // Two sockets.
    let two = dir.join("two.toml");
    let socket = "[socket]\ncount = { value = 2, source = \"test\" }\ngateway = { value = [7, 3], source = \"test\" }\nlink_gbps = { value = 50.0, source = \"test\" }\nlink_latency_ns = { value = 100.0, source = \"test\" }\n";
    let two_text = text.replacen("[cores]", &format!("{socket}\n[cores]"), 1);
    std::fs::write(&two, two_text).unwrap();
    let m = Model::load(two.to_str().unwrap(), &[]).unwrap();
    assert_eq!(m.geo.sockets, 2);
    assert_eq!(m.spec.noc.router, RouterKind::OutputQueued);
    assert!(
        m.sources["noc.router"].contains("models one socket"),
        "{}",
        m.sources["noc.router"]
    );
    let w = numalab_model::experiments::router_warning(&m);
    assert_eq!(w.len(), 1);
    assert!(
        w[0].message
            .contains("saturation on uniform traffic is 14-19% high"),
        "{}",
        w[0].message
    );
    let asked = Model::load(two.to_str().unwrap(), &["noc.router=input-queued".into()]).unwrap();
    assert_eq!(asked.spec.noc.router, RouterKind::InputQueued);
    let work = Workload::Synthetic {
        traffic: Synthetic {
            pattern: Pattern::Uniform,
            rate: 0.1,
            flits: 1,
        },
        networks: 1,
    };
    let err = simulate(&asked, &work, &cfg(1000)).unwrap_err().to_string();
    assert!(err.contains("models one socket"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
