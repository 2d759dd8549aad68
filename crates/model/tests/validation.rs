//! The validation the model promises (issue "Machine model", shared spec machines.md and
//! experiments.md B1, C1): the engines agree, the mesh relations hold, the Xeon Phi
//! heatmap has the spread its geometry implies, and moving STREAM data away on the V1
//! design costs what it should. Every tolerance is explained where it is used.
//!
//! Simulation lengths are kept short enough for the test profile (opt-level 1); longer
//! runs are in `cargo bench -p numalab-model`.

use numalab_model::analytic;
use numalab_model::des::{self, DesConfig};
use numalab_model::experiments::{self, heatmap_cells, Engine, Experiment, Options, Target};
use numalab_model::geometry::{mean_hops_formula, saturation_formula};
use numalab_model::model::REQ;
use numalab_model::records::{Policy, StreamTriad};
use numalab_model::traffic::{App, Data, Op, Pattern, Synthetic};
use numalab_model::Model;
use numalab_schema::Record;

fn mesh(k: u32) -> Model {
    Model::load("mesh", &[format!("noc.cols={k}"), format!("noc.rows={k}")]).unwrap()
}

fn uniform(rate: f64) -> Synthetic {
    Synthetic {
        pattern: Pattern::Uniform,
        rate,
        flits: 1,
    }
}

/// Runs an experiment and returns its records.
fn records(model: &Model, exp: Experiment, opts: &Options) -> Vec<Record> {
    let mut out: Vec<Record> = Vec::new();
    experiments::run(model, exp, opts, &mut out).unwrap();
    out
}

#[test]
fn engines_agree_within_5_percent_below_70_percent_link_load() {
    // Offered loads of 10%, 40% and 70% of saturation are 10%, 40% and 70% peak link
    // load for uniform traffic (the busiest links carry k/4 of the per-node rate).
    //
    // Tolerance 5% (the issue's): the analytic engine uses M/D/1 waits with the
    // finite-input correction of an output queue and treats successive links as
    // independent (Kleinrock's independence approximation). Downstream arrivals are in
    // fact burstier than that, so the simulation is a little slower: about +0.5% at 40%
    // and +3% at 70% load. The simulation's own sampling error (over 10^5 packets or
    // more, latency standard deviation a few cycles) is below 0.1%.
    for (k, measure) in [(8u32, 12_000u64), (16, 5_000)] {
        let m = mesh(k);
        let sat = saturation_formula(k);
        for f in [0.1, 0.4, 0.7] {
            let t = uniform(f * sat);
            let a = analytic::synthetic(&m, &t);
            let cfg = DesConfig {
                seed: 11,
                warmup_cycles: 1_000,
                measure_cycles: measure,
                drain_cycles: 5_000,
            };
            let (d, s) = des::synthetic(&m, &t, &cfg).unwrap();
            assert!(s.drained, "k={k} f={f}: not drained");
            assert!(
                (a.max_link_utilization - f).abs() < 1e-9,
                "k={k}: {}",
                a.max_link_utilization
            );
            let rel = (d.packet_latency_cycles - a.packet_latency_cycles) / a.packet_latency_cycles;
            assert!(
                rel.abs() < 0.05,
                "k={k} load {f}: analytic {} des {} ({:+.2}%)",
                a.packet_latency_cycles,
                d.packet_latency_cycles,
                rel * 100.0
            );
        }
    }
}

#[test]
fn mean_hops_match_the_formula() {
    for k in [8u32, 16] {
        let m = mesh(k);
        let t = uniform(0.05);
        // Analytic: exact over all source-destination pairs, so only rounding remains.
        let a = analytic::synthetic(&m, &t);
        assert!(
            (a.mean_hops - mean_hops_formula(k)).abs() < 1e-9,
            "k={k}: {}",
            a.mean_hops
        );
        // Simulated: a sample of about 0.05 * k^2 * 6000 >= 19,000 packets; hop counts
        // have a standard deviation below k/2, so the standard error is below 0.06 hops
        // on 16 x 16 (0.5%); 2% is several standard errors.
        let cfg = DesConfig {
            seed: 5,
            warmup_cycles: 500,
            measure_cycles: 6_000,
            drain_cycles: 2_000,
        };
        let (d, _) = des::synthetic(&m, &t, &cfg).unwrap();
        let rel = (d.mean_hops - mean_hops_formula(k)).abs() / mean_hops_formula(k);
        assert!(
            rel < 0.02,
            "k={k}: simulated {} formula {}",
            d.mean_hops,
            mean_hops_formula(k)
        );
    }
}

#[test]
fn uniform_saturation_is_between_80_and_100_percent_of_4_over_k() {
    // Saturation throughput = the highest offered load that is still stable: every packet
    // created while measuring is delivered within the drain time and the mean latency
    // stays under 3x the zero-load latency. 100% of 4/k is a hard limit (the central
    // links carry k/4 of every node's rate and move one flit per cycle: beyond it their
    // queues grow without bound); 80% is the low end of what cycle-accurate simulators
    // reach (85-90%, machines.md). Our routers queue at the output with unbounded
    // buffers, so they sit near the top of that range.
    for (k, fractions, measure) in [
        (
            8u32,
            vec![0.8, 0.84, 0.88, 0.92, 0.96, 1.0, 1.04],
            10_000u64,
        ),
        (16, vec![0.8, 0.96, 1.04], 5_000),
    ] {
        let m = mesh(k);
        let bound = saturation_formula(k);
        let t0 = analytic::synthetic(&m, &uniform(1e-9)).packet_latency_cycles;
        let cfg = DesConfig {
            seed: 2,
            warmup_cycles: 1_000,
            measure_cycles: measure,
            drain_cycles: measure,
        };
        let mut observed = None;
        for f in fractions {
            let (p, _) =
                experiments::traffic_point(&m, &uniform(f * bound), "des", &cfg, t0, 1).unwrap();
            if !p.stable {
                break;
            }
            observed = Some(f);
        }
        let s = observed.expect("the lowest load is stable");
        assert!((0.8..=1.0).contains(&s), "k={k}: saturation at {s} of 4/k");
    }
}

#[test]
fn xeon_phi_heatmap_spread_is_the_round_trip_hop_cost() {
    // machines.md: YX routing, 1 cycle per vertical hop, 2 per horizontal. The latency
    // from a core to a line held at a CHA differs between cores only by the round trip's
    // hop cost, 2 (|dy| * 1 + |dx| * 2), computed here from coordinates alone. The model
    // is deterministic at zero load, so the spread must be exact (no tolerance), and the
    // discrete-event engine must give the same cells.
    let m = Model::load("knl-7210", &[]).unwrap();
    for slice in [0usize, 7, 20, 37] {
        let (_, tx, ty) = m.geo.coords(m.slices[slice].stop);
        let cost = |c: &numalab_model::model::CoreInfo| {
            let (_, x, y) = m.geo.coords(c.stop);
            2.0 * (f64::from(y.abs_diff(ty)) + 2.0 * f64::from(x.abs_diff(tx)))
        };
        let expected = m.cores.iter().map(cost).fold(0.0, f64::max)
            - m.cores.iter().map(cost).fold(f64::INFINITY, f64::min);
        for engine in ["analytic", "des"] {
            let cells =
                heatmap_cells(&m, Target::Slice(slice), engine, &DesConfig::default()).unwrap();
            let max = cells.iter().map(|c| c.latency_cycles).fold(0.0, f64::max);
            let min = cells
                .iter()
                .map(|c| c.latency_cycles)
                .fold(f64::INFINITY, f64::min);
            assert_eq!(max - min, expected, "slice {slice} ({engine})");
        }
    }
    // The CHA in the corner tile (0, 0): the farthest core sits in the opposite corner,
    // 6 rows and 5 columns away: 12 vertical + 10 horizontal hops round trip, as
    // machines.md describes the whole mesh, 12 + 20 = 32 cycles.
    let cells = heatmap_cells(&m, Target::Slice(0), "analytic", &DesConfig::default()).unwrap();
    let max = cells.iter().map(|c| c.latency_cycles).fold(0.0, f64::max);
    let min = cells
        .iter()
        .map(|c| c.latency_cycles)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(max - min, 32.0);
}

fn triad(m: &Model, node: u32) -> App {
    App {
        cores: m.nodes[0].cores.clone(),
        data: Data::Node { node },
        mix: vec![Op::Read, Op::Read, Op::Write],
        slc_hit: 0.0,
        msc_hit: 0.0,
        snoop: 0.0,
        outstanding: m.spec.cores.max_outstanding,
        think_cycles: 0,
    }
}

#[test]
fn v1_stream_data_farther_away_lowers_bandwidth_and_raises_request_queueing() {
    // experiments.md B1 on the V1 preset (4 quadrant nodes, SLC grouped): threads on
    // node 0, arrays on node 0, then on each other node. Farther data means longer
    // request paths converging on the quadrant-boundary links, so the request network
    // queues more; and longer round trips, so the cores, limited to 8 requests each,
    // move less data. Both engines see the request-network queueing rise (by 25-35%, far
    // beyond the simulation's sampling error of about 3% over some 10^4 request packets).
    // The bandwidth drop is small in this preset (about 1% analytic: a quadrant's 16 cores
    // nearly saturate its 76.8 GB/s of HBM even with remote data), so it is asserted on
    // the deterministic analytic engine; the simulation stays within 1% of its peak.
    let m = Model::load("neoverse-v1-64", &[]).unwrap();
    let local = analytic::app(&m, &triad(&m, 0));
    let cfg = DesConfig {
        seed: 3,
        warmup_cycles: 2_000,
        measure_cycles: 15_000,
        drain_cycles: 0,
    };
    let (local_des, _) = des::app(&m, &triad(&m, 0), &cfg).unwrap();
    for node in 1..4 {
        let far = analytic::app(&m, &triad(&m, node));
        assert!(
            far.requests_per_cycle < local.requests_per_cycle,
            "node {node}: bandwidth"
        );
        assert!(
            far.vns[REQ].queueing_cycles > local.vns[REQ].queueing_cycles,
            "node {node}: queueing"
        );
        assert!(far.mean_hops > local.mean_hops);
        let (far_des, _) = des::app(&m, &triad(&m, node), &cfg).unwrap();
        assert!(
            far_des.vns[REQ].queueing_cycles > 1.1 * local_des.vns[REQ].queueing_cycles,
            "node {node}: des queueing {} vs local {}",
            far_des.vns[REQ].queueing_cycles,
            local_des.vns[REQ].queueing_cycles
        );
    }
    // With fewer requests in flight the cores are latency bound and distance shows
    // plainly: at 4 outstanding requests per core the farthest quadrant delivers at
    // least 10% less.
    let m4 = Model::load("neoverse-v1-64", &["cores.max_outstanding=4".into()]).unwrap();
    let near = analytic::app(&m4, &triad(&m4, 0)).requests_per_cycle;
    let far = analytic::app(&m4, &triad(&m4, 3)).requests_per_cycle;
    assert!(far < 0.9 * near, "{far} vs {near}");
}

#[test]
fn stream_experiment_records_report_percent_of_peak() {
    let m = Model::load("neoverse-v1-64:ddr4", &[]).unwrap();
    let recs = records(
        &m,
        Experiment::StreamTriad,
        &Options {
            data_nodes: Some(vec![0, 3]),
            ..Default::default()
        },
    );
    let t: Vec<StreamTriad> = recs
        .iter()
        .filter_map(|r| r.decode::<StreamTriad>().map(|x| x.unwrap()))
        .collect();
    assert_eq!(t.len(), 2);
    for x in &t {
        // One DDR4-3200 channel per quadrant: 25.6 GB/s is the ceiling.
        assert!((x.peak_gbps - 25.6).abs() < 1e-9);
        assert!(
            x.bandwidth_gbps <= x.peak_gbps * 1.001,
            "{}",
            x.bandwidth_gbps
        );
        assert!((x.percent_of_peak - 100.0 * x.bandwidth_gbps / 25.6).abs() < 1e-9);
        assert_eq!(x.memory_kind, "DRAM");
    }
}

#[test]
fn policy_shows_what_grouping_and_placement_do() {
    // experiments.md B5 on the V1 preset: the same application under 1 node, 4 nodes with
    // SLC grouped, 4 nodes with SLC spread.
    let m = Model::load("neoverse-v1-64", &[]).unwrap();
    let opts = Options {
        base_preset: "neoverse-v1-64".into(),
        engine: Engine::Analytic,
        ..Default::default()
    };
    let recs = records(&m, Experiment::Policy, &opts);
    let p: Vec<Policy> = recs
        .iter()
        .filter_map(|r| r.decode::<Policy>().map(|x| x.unwrap()))
        .collect();
    assert_eq!(p.len(), 9);
    let get = |c: &str, a: &str| {
        p.iter()
            .find(|x| x.configuration == c && x.application == a)
            .unwrap()
    };
    // All data touched by one thread lands on node 0: grouped, it may only use node 0's
    // quarter of the SLC; spread over all slices, all of it.
    assert!(
        get("numa4-grouped", "main-thread").slc_hit_ratio
            < get("numa4-ungrouped", "main-thread").slc_hit_ratio
    );
    // ...and it concentrates the accesses on node 0's controllers (2 of 8).
    assert!(get("numa4-grouped", "main-thread").mc_imbalance > 3.9);
    assert!(get("numa1", "main-thread").mc_imbalance < 1.1);
    // Balanced data homed in its own quadrant travels less than data homed anywhere.
    assert!(
        get("numa4-grouped", "balanced").mean_hops < get("numa4-ungrouped", "balanced").mean_hops
    );
    assert!(get("numa4-grouped", "balanced").mean_hops < get("numa1", "balanced").mean_hops);
    // Interleave over the 4 nodes: every controller gets its eighth, a quarter of the
    // accesses is local (pages round-robin over nodes, each node's 2 controllers in its
    // quadrant), and every node sends to every node.
    for c in ["numa4-grouped", "numa4-ungrouped"] {
        let x = get(c, "interleave");
        assert!(x.mc_imbalance < 1.01, "{c}: {}", x.mc_imbalance);
        assert!(
            (x.local_share - 0.25).abs() < 1e-6,
            "{c}: {}",
            x.local_share
        );
        assert_eq!(x.node_packets_per_cycle.len(), 4);
        assert!(x.node_packets_per_cycle.iter().flatten().all(|&v| v > 0.0));
    }
    // Main-thread data: all accesses on node 0's controllers (> 95%, experiments.md B2),
    // the remote ones from the other 3 quadrants' cores; balanced data: all local.
    let mt = get("numa4-grouped", "main-thread");
    let on0: f64 = mt
        .mc_node
        .iter()
        .zip(&mt.mc_share)
        .filter(|(&n, _)| n == 0)
        .map(|(_, s)| s)
        .sum();
    assert!(on0 > 0.95, "{on0}");
    assert!(
        mt.local_share > 0.0 && mt.local_share < 0.5,
        "{}",
        mt.local_share
    );
    assert!((get("numa4-grouped", "balanced").local_share - 1.0).abs() < 1e-9);
}

#[test]
fn two_links_per_network_cut_queueing() {
    let one = Model::load("neoverse-v1-64:half", &[]).unwrap();
    let two = Model::load("neoverse-v1-64:half,links2", &[]).unwrap();
    let t = Synthetic {
        pattern: Pattern::Uniform,
        rate: 0.3,
        flits: 1,
    };
    let a = analytic::synthetic(&one, &t);
    let b = analytic::synthetic(&two, &t);
    assert!(b.vns[0].queueing_cycles < 0.5 * a.vns[0].queueing_cycles);
    assert!(
        (analytic::saturation_rate(&two, &t) / analytic::saturation_rate(&one, &t) - 2.0).abs()
            < 1e-9
    );
}

#[test]
fn des_is_deterministic_for_applications() {
    let m = Model::load("altra-q80-2s", &[]).unwrap();
    let app = App {
        cores: (70..90).collect(),
        data: Data::Interleave,
        snoop: 0.1,
        ..triad(&m, 0)
    };
    let cfg = DesConfig {
        seed: 9,
        warmup_cycles: 500,
        measure_cycles: 4_000,
        drain_cycles: 0,
    };
    let (a, _) = des::app(&m, &app, &cfg).unwrap();
    let (b, _) = des::app(&m, &app, &cfg).unwrap();
    assert_eq!(a, b);
    assert!(a.requests_per_cycle > 0.0);
    assert!(a.vns[1].packets_per_cycle > 0.0, "snoops were simulated");
}
