//! The driver of a simulation (`run`): checks the workload, builds the simulator, runs
//! its cycle loop on one thread or sharded, and turns its counts into figures.

use super::shards::run_sharded;
use super::state::{Iq, EV_ISSUE, NONE32, PORTS};
use super::{
    choose_shards, zero_load_latency, FlowFigures, IqResult, ShardChoice, Sharding, Workload,
    SPLIT_CYCLE,
};
use crate::error::ModelError;
use crate::model::Model;
use crate::traffic::{node_matrices, App, DesConfig, Figures, VnFigures};
use numalab_records::model::SimStats;
use rand::RngExt;
use std::collections::VecDeque;

/// The most bytes the input buffers of a simulation (all its copies together) may take.
const MAX: u64 = 4 << 30;

/// What [`check_workload`] finds of a workload: its virtual networks, its packets'
/// flits, and the bytes of one simulator's input buffers.
struct Shape {
    networks: usize,
    flits: u32,
    need: u64,
}

/// Simulates `work` on one thread or sharded (the body of [`super::simulate`] and its
/// threaded forms): checks, builds the simulator, runs its cycles, collects the figures.
pub(super) fn run(
    model: &Model,
    work: &Workload,
    cfg: &DesConfig,
    sharding: Sharding,
) -> Result<IqResult, ModelError> {
    let Shape {
        networks,
        flits,
        need,
    } = check_workload(model, work)?;
    let w0 = cfg.warmup_cycles;
    let w1 = w0 + cfg.measure_cycles.max(1);
    let mut sim = Iq::new(model, networks, cfg.seed, (w0, w1));
    let stops = model.geo.stops_per_socket();
    let n_stats = match work {
        Workload::Synthetic { .. } | Workload::App(_) => networks,
        Workload::Flows { flows, .. } => flows.len(),
    };
    if let Workload::App(app) = work {
        setup_closed_loop(&mut sim, model, app);
    }
    sim.acc = vec![0; n_stats];
    sim.lat_sum = vec![0; n_stats];
    sim.lat_n = vec![0; n_stats];
    sim.hop_sum = vec![0; n_stats];
    sim.link_sum = vec![0; n_stats];
    for f in match work {
        Workload::Flows { flows, .. } => flows.as_slice(),
        _ => &[],
    } {
        if f.src >= stops || f.dst >= stops {
            return Err(ModelError::Usage {
                msg: format!("flow {} -> {}: stops are 0-{}", f.src, f.dst, stops - 1),
            });
        }
    }
    let limit = w1 + cfg.drain_cycles;
    let (shards, choice) = run_cycles(&mut sim, model, work, sharding, need, (w0, w1), limit)?;
    let (figures, flows, stats) = results(&sim, model, work, networks, flits, n_stats, (w0, w1));
    Ok(IqResult {
        figures,
        flows,
        stats,
        threads: shards,
        sharding: choice,
    })
}

/// Refuses what the input-queued router does not model (two sockets, more than four
/// virtual networks or 64 VCs per port, packets over 1024 flits, more than 65536 stops,
/// input buffers over [`MAX`]) and returns the workload's [`Shape`].
fn check_workload(model: &Model, work: &Workload) -> Result<Shape, ModelError> {
    let g = &model.geo;
    if g.sockets > 1 {
        return Err(ModelError::Usage {
            msg: "the input-queued router (noc.router = \"input-queued\") models one socket; use noc.router = \"output-queued\" for two sockets".into(),
        });
    }
    let networks = match work {
        Workload::Synthetic { networks, .. } => usize::from((*networks).clamp(1, 4)),
        Workload::Flows { flows, .. } => flows
            .iter()
            .map(|f| usize::from(f.vn) + 1)
            .max()
            .unwrap_or(1),
        Workload::App(_) => 4,
    };
    if networks > 4 {
        return Err(ModelError::Usage {
            msg: "flows: virtual networks are 0-3".into(),
        });
    }
    let n = &model.spec.noc;
    if n.shared_links && networks as u32 * n.vcs > 64 {
        return Err(ModelError::Usage {
            msg: format!(
                "input-queued router with shared links: {networks} virtual networks x noc.vcs = {} is more than 64 VCs per port",
                n.vcs
            ),
        });
    }
    let flits = match work {
        Workload::Synthetic { traffic, .. } => traffic.flits,
        Workload::Flows { flits, .. } => *flits,
        Workload::App(_) => model.flits.iter().copied().max().unwrap_or(1),
    };
    if flits > 1024 {
        return Err(ModelError::Usage {
            msg: format!("input-queued router: packets of at most 1024 flits (got {flits})"),
        });
    }
    if g.stops_per_socket() > 1 << 16 {
        return Err(ModelError::Usage {
            msg: format!(
                "input-queued router: at most 65536 stops (got {})",
                g.stops_per_socket()
            ),
        });
    }
    // Input buffers: 16 bytes per flit slot; refuse what would not fit comfortably.
    let vcs_per_port =
        (n.vcs as usize * if n.shared_links { networks } else { 1 }).next_power_of_two() as u64;
    let planes = if n.shared_links { 1 } else { networks as u64 };
    let need = planes
        * u64::from(g.stops_per_socket())
        * PORTS as u64
        * vcs_per_port
        * (n.buffer_flits as u64).next_power_of_two()
        * 16;
    if need > MAX {
        return Err(ModelError::Usage {
            msg: format!(
                "input-queued router: the input buffers of {} stops need {}, more than the {} allowed; use fewer or shallower VCs (noc.vcs, noc.buffer_flits) or a smaller mesh",
                g.stops_per_socket(),
                numalab_schema::units::bytes(need),
                numalab_schema::units::bytes(MAX)
            ),
        });
    }
    Ok(Shape {
        networks,
        flits,
        need,
    })
}

/// Readies the closed loop of application traffic: memory channels, the bounded queues
/// of controllers and home trackers (gates), the acknowledgement figures, and every
/// core's first requests.
fn setup_closed_loop(sim: &mut Iq, model: &Model, app: &App) {
    sim.app_mode = true;
    let c = &mut sim.closed;
    for mc in &model.mcs {
        c.mc_first.push(c.chan_free.len());
        c.chan_free
            .extend(std::iter::repeat_n(0.0, mc.channels as usize));
    }
    c.mc_first.push(c.chan_free.len());
    c.mc_count = vec![0; model.mcs.len()];
    c.mc_local = vec![0; model.mcs.len()];
    c.mc_busy = vec![0.0; model.mcs.len()];
    c.n_mcs = model.mcs.len();
    c.gate_depth = model
        .mcs
        .iter()
        .map(|m| m.queue_depth.unwrap_or(u32::MAX))
        .collect();
    // Home trackers: the entries of every slice at the stop.
    let mut per_stop = vec![0u32; sim.n_stops];
    for sl in &model.slices {
        per_stop[sl.stop as usize] += 1;
    }
    c.gate_depth.extend(
        per_stop
            .iter()
            .map(|&k| match model.spec.slc.tracker_entries {
                Some(e) if k > 0 => e.saturating_mul(k),
                _ => u32::MAX,
            }),
    );
    c.gate_held = vec![0; c.gate_depth.len()];
    c.homes_bounded = c.gate_depth[c.n_mcs..].iter().any(|&d| d < u32::MAX);
    c.home_wait = vec![VecDeque::new(); sim.n_stops];
    let zero = zero_load_latency(model, 0.0, 1, 0.0);
    c.ack = (zero, zero_load_latency(model, 1.0, 1, 0.0) - zero);
    sim.gated = c.gate_depth[..c.n_mcs].iter().any(|&d| d < u32::MAX);
    c.slot_node = app.cores.iter().map(|&k| model.cores[k].node).collect();
    c.issue_counter = (0..app.cores.len() as u32).collect();
    // Stagger the first requests as the output-queued engine does.
    for slot in 0..app.cores.len() as u32 {
        for j in 0..app.outstanding {
            sim.event(u64::from(j) + u64::from(slot % 4), EV_ISSUE, slot);
        }
    }
}

/// Runs the simulation's cycles, on one thread or on the shards `sharding` asks for (if
/// the workload can be sharded), from cycle 0 to the end of the run (`limit` at most);
/// returns the shards the run ended on and, when they were measured, how they were
/// chosen.
fn run_cycles(
    sim: &mut Iq,
    model: &Model,
    work: &Workload,
    sharding: Sharding,
    need: u64,
    (w0, w1): (u64, u64),
    limit: u64,
) -> Result<(usize, Option<ShardChoice>), ModelError> {
    let routers = sim.planes * sim.n_stops;
    // A delay of zero cycles between routers (a flit or credit arriving in the cycle it
    // is sent) would need one thread's order; the pipeline's switch allocation takes a
    // cycle at least (the spec's check), so this is a guard.
    // Every shard holds a whole simulator's arrays (it uses its own routers' part), so
    // the shards, this thread's simulator and a trial's copy of it ([`SPLIT_CYCLE`])
    // together stay within the buffers' bound.
    let copies = (MAX / need.max(1)).max(1) as usize;
    let asked = match sharding {
        Sharding::Auto(threads) => threads.min(
            std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1),
        ),
        Sharding::Exactly { shards, .. } => shards,
    };
    let max_shards = asked
        .min(routers / 2)
        .min(usize::from(u16::MAX))
        .min(copies.saturating_sub(2))
        .max(1);
    let zero_delay = (0..routers * 4).any(|k| sim.down[k] != u32::MAX && sim.down_cycles[k] == 0);
    let shardable = max_shards > 1 && !sim.app_mode && !sim.gated && !zero_delay;
    let mut choice = None;
    // The shards, and whether the run ended on one thread before it could split.
    let (shards, ended) = match sharding {
        _ if !shardable => (1, false),
        Sharding::Exactly { shards, from } => {
            if run_one(sim, model, work, w1, limit, Some(from))? {
                (1, true)
            } else {
                (shards.min(max_shards), false)
            }
        }
        Sharding::Auto(_) => {
            let (shards, ended, measured) =
                measure_shards(sim, model, work, max_shards, (w0, w1), limit)?;
            choice = measured;
            (shards, ended)
        }
    };
    if shards > 1 {
        run_sharded(sim, model, work, shards, (w0, w1), limit)?;
    } else if !ended {
        run_one(sim, model, work, w1, limit, None)?;
    }
    Ok((shards, choice))
}

/// [`Sharding::Auto`]: runs to the middle of [`SPLIT_CYCLE`] on one thread, times trial
/// shards on copies of the simulation and the same cycles on one thread, and chooses
/// ([`choose_shards`]). Returns the shards, whether the run ended on one thread before
/// the split, and the measurements (none when it ended before the trials).
fn measure_shards(
    sim: &mut Iq,
    model: &Model,
    work: &Workload,
    max_shards: usize,
    (w0, w1): (u64, u64),
    limit: u64,
) -> Result<(usize, bool, Option<ShardChoice>), ModelError> {
    let half = SPLIT_CYCLE / 2;
    if run_one(sim, model, work, w1, limit, Some(half))? {
        return Ok((1, true, None));
    }
    // Trials first, on copies from this cycle, each over the cycles one
    // thread runs next (to the split or the run's end, whichever is first).
    let last = (SPLIT_CYCLE - 1).min(limit);
    let mut trials: Vec<(usize, f64)> = Vec::new();
    let mut k = 2;
    loop {
        let mut copy = sim.clone();
        let ns = run_sharded(&mut copy, model, work, k, (w0, w1), last)?;
        let better = trials.iter().all(|&(_, t)| ns < t);
        trials.push((k, ns));
        if !better || k == max_shards {
            break;
        }
        k = (k * 2).min(max_shards);
    }
    let from = sim.now;
    let t0 = std::time::Instant::now();
    let ended = run_one(sim, model, work, w1, limit, Some(SPLIT_CYCLE))?;
    // Cycles run: to the split, or through the last one.
    let to = sim.now + u64::from(ended);
    let one_ns = t0.elapsed().as_nanos() as f64 / (to - from).max(1) as f64;
    let shards = if ended {
        1
    } else {
        choose_shards(one_ns, &trials)
    };
    let choice = Some(ShardChoice {
        cycles: (from, to),
        one_ns,
        trials,
        max: max_shards,
        shards,
    });
    Ok((shards, ended, choice))
}

/// The figures of a finished simulation: whole-network figures, per flow or network,
/// and the simulation's statistics.
fn results(
    sim: &Iq,
    model: &Model,
    work: &Workload,
    networks: usize,
    flits: u32,
    n_stats: usize,
    (w0, w1): (u64, u64),
) -> (Figures, Vec<FlowFigures>, SimStats) {
    let drained = sim.app_mode || sim.measured_in_flight == 0;
    let m = (w1 - w0) as f64;
    let flows: Vec<FlowFigures> = (0..n_stats)
        .map(|k| FlowFigures {
            accepted: sim.acc[k] as f64 / m,
            latency_cycles: sim.lat_sum[k] as f64 / sim.lat_n[k].max(1) as f64,
            delivered: sim.lat_n[k],
        })
        .collect();
    let total_n: u64 = sim.lat_n.iter().sum();
    let tf = total_n.max(1) as f64;
    let mut f = Figures {
        engine: "des".into(),
        measured_cycles: w1 - w0,
        ..Default::default()
    };
    f.packets_per_cycle = sim.acc.iter().sum::<u64>() as f64 / m;
    f.packet_latency_cycles = sim.lat_sum.iter().sum::<u64>() as f64 / tf;
    let hops_all: Vec<u64> = sim.hops_hist.chunks(4).map(|c| c.iter().sum()).collect();
    f.mean_hops = hops_all
        .iter()
        .enumerate()
        .map(|(h, n)| h as f64 * *n as f64)
        .sum::<f64>()
        / tf;
    f.hop_histogram = hops_all.iter().map(|&n| n as f64 / tf).collect();
    let counts: Vec<f64> = sim.node_pkts.iter().map(|&n| n as f64).collect();
    // Application packets count by delivery in the window (a rate over it); others are
    // those created in the window (all delivered when drained).
    let (all, mut per_vn) = node_matrices(&counts, sim.n_nodes, m);
    f.node_packets_per_cycle = all;
    f.max_link_utilization = sim
        .link_busy
        .iter()
        .map(|&b| b as f64 / m)
        .fold(0.0, f64::max);
    if let Workload::Synthetic { .. } | Workload::App(_) = work {
        // Queueing: latency beyond the pipeline's zero-load latency for the packets' hops
        // and the link cycles of their paths (boundary links included).
        f.vns = (0..4)
            .map(|v| {
                let fl = flows.get(v).copied().unwrap_or_default();
                let vn_flits = match work {
                    Workload::App(_) => model.flits[v],
                    _ => flits,
                };
                let queueing = if fl.delivered > 0 {
                    let hops = sim.hop_sum[v] as f64 / fl.delivered as f64;
                    let link = if sim.hop_sum[v] > 0 {
                        sim.link_sum[v] as f64 / sim.hop_sum[v] as f64
                    } else {
                        0.0
                    };
                    (fl.latency_cycles - zero_load_latency(model, hops, vn_flits, link)).max(0.0)
                } else {
                    0.0
                };
                let nv = fl.delivered.max(1) as f64;
                VnFigures {
                    vn: crate::model::VN_NAMES[v].into(),
                    packets_per_cycle: fl.accepted,
                    queueing_cycles: queueing,
                    latency_cycles: fl.latency_cycles,
                    max_link_utilization: if v < networks {
                        f.max_link_utilization
                    } else {
                        0.0
                    },
                    hop_histogram: sim.hops_hist.chunks(4).map(|c| c[v] as f64 / nv).collect(),
                    node_packets_per_cycle: std::mem::take(&mut per_vn[v]),
                }
            })
            .collect();
    }
    f.saturated = !drained || f.max_link_utilization > 0.98;
    if sim.app_mode {
        let c = &sim.closed;
        // A closed loop has packets in flight at the end by design: not a drain failure.
        crate::traffic::AppCounts {
            done_count: c.done_count,
            done_latency: c.done_latency,
            mc_count: &c.mc_count,
            mc_local: &c.mc_local,
            mc_busy: &c.mc_busy,
        }
        .fill(&mut f, model, m);
    }
    let stats = SimStats {
        cycles: sim.now,
        routers: (sim.planes * sim.n_stops) as u64,
        events: sim.router_cycles,
        drained,
    };
    (f, flows, stats)
}

/// The cycle loop on this thread, from the current cycle until the run ends (true) or
/// cycle `until` is about to start (false).
fn run_one(
    sim: &mut Iq,
    model: &Model,
    work: &Workload,
    w1: u64,
    limit: u64,
    until: Option<u64>,
) -> Result<bool, ModelError> {
    loop {
        if until.is_some_and(|u| sim.now >= u) {
            return Ok(false);
        }
        if sim.now & 0xffff == 0 && numalab_schema::interrupt::requested() {
            return Err(ModelError::Interrupted);
        }
        sim.step_routers::<false>();
        sim.inject::<false>();
        // New packets (injected from the next cycle on).
        if let Workload::App(app) = work {
            sim.run_events(model, app);
            // A closed loop is measured over its window only.
            if sim.now + 1 >= w1 {
                return Ok(true);
            }
        } else {
            generate(sim, model, work);
        }
        if sim.now >= limit || (sim.now >= w1 && sim.measured_in_flight == 0) {
            return Ok(true);
        }
        sim.now += 1;
    }
}

/// New packets of a synthetic or flow workload in this cycle (injected from the next on).
pub(super) fn generate(sim: &mut Iq, model: &Model, work: &Workload) {
    let stops = model.geo.stops_per_socket();
    match work {
        Workload::Synthetic { traffic, networks } => {
            let networks = usize::from((*networks).clamp(1, 4));
            let p = traffic.rate;
            if p > 0.0 {
                for s in 0..stops {
                    if sim.rng.random::<f64>() < p {
                        let (u, v) = (sim.rng.random::<f64>(), sim.rng.random::<f64>());
                        if let Some(d) = traffic.sample(model, s, u, v) {
                            let vn = if networks > 1 {
                                sim.rng.random_range(0..networks) as u8
                            } else {
                                0
                            };
                            sim.create(s, d, vn, traffic.flits.max(1), u32::from(vn), NONE32);
                        }
                    }
                }
            }
        }
        Workload::Flows { flows, flits } => {
            for (k, f) in flows.iter().enumerate() {
                if sim.rng.random::<f64>() < f.rate {
                    sim.create(f.src, f.dst, f.vn, (*flits).max(1), k as u32, NONE32);
                }
            }
        }
        Workload::App(_) => {}
    }
}
