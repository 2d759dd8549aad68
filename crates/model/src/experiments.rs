//! The studies of experiments.md run on a modeled machine: STREAM triad with the data on
//! each node in turn (B1), the latency heatmap over the floorplan (C1), synthetic
//! traffic curves (uniform, hotspot, transpose) and the NUMA/SLC policy comparison (B5).
//! Each produces typed records ([`crate::records`]) through a callback as soon as it has
//! them, under stable keys, so a killed run resumes where it stopped.

use crate::analytic;
use crate::des::{self, DesConfig, SimStats};
use crate::error::{usage, ModelError};
use crate::geometry::StopId;
use crate::latency;
use crate::model::{Model, REQ};
use crate::records::*;
use crate::spec::HomeGroup;
use crate::traffic::{App, Data, Figures, Op, Pattern, Synthetic};
use numalab_schema::{Origin, Record, Warning};
use serde::{Deserialize, Serialize};

/// Which engine(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// Analytic only.
    Analytic,
    /// Discrete-event only.
    Des,
    /// Both, plus a `model.check` record with their differences.
    Check,
}

impl Engine {
    fn names(self) -> &'static [&'static str] {
        match self {
            Engine::Analytic => &["analytic"],
            Engine::Des => &["des"],
            Engine::Check => &["analytic", "des"],
        }
    }
}

/// The experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Experiment {
    /// B1.
    StreamTriad,
    /// C1.
    LatencyHeatmap,
    /// Uniform random traffic.
    Uniform,
    /// Hotspot traffic.
    Hotspot,
    /// Transpose traffic.
    Transpose,
    /// B5.
    Policy,
}

impl Experiment {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::StreamTriad => "stream-triad",
            Experiment::LatencyHeatmap => "latency-heatmap",
            Experiment::Uniform => "uniform",
            Experiment::Hotspot => "hotspot",
            Experiment::Transpose => "transpose",
            Experiment::Policy => "policy",
        }
    }
}

/// The heatmap's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "index")]
pub enum Target {
    /// A line homed (and held) at this slice.
    Slice(usize),
    /// A line in this memory controller (homed at the slice nearest to it).
    Mc(usize),
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, n) = s
            .split_once(':')
            .ok_or_else(|| format!("'{s}': expected slice:N or mc:N"))?;
        let n: usize = n
            .parse()
            .map_err(|_| format!("'{s}': {n} is not a number"))?;
        match kind {
            "slice" => Ok(Target::Slice(n)),
            "mc" => Ok(Target::Mc(n)),
            _ => Err(format!("'{s}': expected slice:N or mc:N")),
        }
    }
}

/// Options of a run (defaults in [`Options::default`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Engine(s).
    pub engine: Engine,
    /// Discrete-event length and seed.
    pub des: DesConfig,
    /// Cores running the application (default: node 0's cores for stream-triad, all for
    /// policy).
    pub cores: Option<Vec<usize>>,
    /// Data nodes for stream-triad (default: every node in turn).
    pub data_nodes: Option<Vec<u32>>,
    /// Heatmap target (default: slice 0).
    pub target: Option<Target>,
    /// Hotspot stop and fraction (default: the stop nearest the centre, 0.2).
    pub hotspot: Option<(StopId, f64)>,
    /// Offered loads as fractions of the analytic saturation rate.
    pub loads: Option<Vec<f64>>,
    /// Flits per synthetic packet.
    pub flits: u32,
    /// Working set (policy; stream-triad: arrays total), bytes.
    pub working_set_bytes: Option<u64>,
    /// The preset as the user gave it (`name[:variants]`), to load the policy
    /// configurations on top of it (with the `--set` overrides).
    pub base_preset: String,
    /// `--set` overrides.
    pub sets: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            engine: Engine::Analytic,
            des: DesConfig::default(),
            cores: None,
            data_nodes: None,
            target: None,
            hotspot: None,
            loads: None,
            flits: 1,
            working_set_bytes: None,
            base_preset: String::new(),
            sets: Vec::new(),
        }
    }
}

/// Where records go: the one protocol of every probe (`done(key)`: a resumed run has
/// it; `push`: stored at once; `progress`).
pub use numalab_schema::sink::Sink;

fn check_interrupt() -> Result<(), ModelError> {
    if numalab_schema::interrupt::requested() {
        Err(ModelError::Interrupted)
    } else {
        Ok(())
    }
}

/// Runs an experiment.
pub fn run(
    model: &Model,
    exp: Experiment,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<(), ModelError> {
    match exp {
        Experiment::StreamTriad => stream_triad(model, opts, sink),
        Experiment::LatencyHeatmap => heatmap(model, opts, sink),
        Experiment::Uniform => traffic(model, Pattern::Uniform, opts, sink),
        Experiment::Hotspot => {
            let (stop, fraction) = opts.hotspot.unwrap_or_else(|| {
                let g = &model.geo;
                (g.stop(0, g.cols / 2, g.rows / 2), 0.2)
            });
            if stop >= model.geo.stops_per_socket() || !(0.0..=1.0).contains(&fraction) {
                return Err(usage(format!(
                    "hotspot stop {stop} / fraction {fraction}: the stop must be 0-{} (socket 0) and the fraction 0-1",
                    model.geo.stops_per_socket() - 1
                )));
            }
            traffic(model, Pattern::Hotspot { stop, fraction }, opts, sink)
        }
        Experiment::Transpose => {
            if model.geo.cols != model.geo.rows {
                return Err(usage(format!(
                    "transpose needs a square mesh; {} is {} x {}",
                    model.label, model.geo.cols, model.geo.rows
                )));
            }
            traffic(model, Pattern::Transpose, opts, sink)
        }
        Experiment::Policy => policy(model, opts, sink),
    }
}

fn check_cores(model: &Model, cores: &[usize]) -> Result<(), ModelError> {
    if cores.is_empty() {
        return Err(usage("no cores selected"));
    }
    if let Some(&c) = cores.iter().find(|&&c| c >= model.cores.len()) {
        return Err(usage(format!(
            "core {c} does not exist: {} has cores 0-{}",
            model.label,
            model.cores.len() - 1
        )));
    }
    Ok(())
}

fn cores_label(cores: &[usize]) -> String {
    let ids: Vec<u32> = cores.iter().map(|&c| c as u32).collect();
    numalab_schema::cpulist::format(&ids)
}

fn run_app(
    model: &Model,
    app: &App,
    engine: &str,
    cfg: &DesConfig,
) -> Result<(Figures, Option<SimStats>), ModelError> {
    if engine == "analytic" {
        Ok((analytic::app(model, app), None))
    } else {
        let (f, s) = des::app(model, app, cfg)?;
        Ok((f, Some(s)))
    }
}

fn saturation_warning(f: &Figures) -> Vec<Warning> {
    if !f.saturated {
        return Vec::new();
    }
    if f.engine == "analytic" {
        vec![Warning::new(
            "model_saturated",
            "a link, port or memory controller is at capacity: the analytic figures are the capacity bound",
        )
        .with_remedy("use --engine des to see how queues build up")]
    } else {
        vec![Warning::new(
            "model_saturated",
            "a link, port or memory controller ran at capacity: it limits the cores",
        )]
    }
}

/// B1: STREAM triad, data on each node in turn.
fn stream_triad(model: &Model, opts: &Options, sink: &mut dyn Sink) -> Result<(), ModelError> {
    let cores = opts
        .cores
        .clone()
        .unwrap_or_else(|| model.nodes[0].cores.clone());
    check_cores(model, &cores)?;
    let nodes: Vec<u32> = opts
        .data_nodes
        .clone()
        .unwrap_or_else(|| model.nodes.iter().map(|n| n.id).collect());
    if let Some(&n) = nodes.iter().find(|&&n| n as usize >= model.nodes.len()) {
        return Err(usage(format!(
            "node {n} does not exist: {} has nodes 0-{}",
            model.label,
            model.nodes.len() - 1
        )));
    }
    let clabel = cores_label(&cores);
    let engines = opts.engine.names();
    let total = nodes.len() * engines.len();
    let mut done = 0;
    for &node in &nodes {
        // Streaming arrays: the SLC helps only if they fit in what the node can reach.
        let ws = opts
            .working_set_bytes
            .unwrap_or(4 * model.spec.slc.bytes.max(1 << 20)) as f64;
        let slc_hit = if ws <= model.slc_reach_bytes(node) {
            1.0
        } else {
            0.0
        };
        let msc_hit = match model.cache_pool {
            Some(p) => model.pools[p].cache_hit_ratio.unwrap_or(
                if ws <= model.pools[p].capacity_bytes as f64 {
                    1.0
                } else {
                    0.0
                },
            ),
            None => 0.0,
        };
        let app = App {
            cores: cores.clone(),
            data: Data::Node { node },
            mix: vec![Op::Read, Op::Read, Op::Write],
            slc_hit,
            msc_hit,
            snoop: 0.0,
            outstanding: model.spec.cores.max_outstanding,
            think_cycles: 0,
        };
        let mut both: Vec<StreamTriad> = Vec::new();
        for &engine in engines {
            let key = format!(
                "model/stream-triad/{}/{engine}/cores{clabel}/node{node}",
                model.label
            );
            sink.progress(
                &format!("stream-triad node {node} ({engine})"),
                done as u64,
                total as u64,
            );
            done += 1;
            if sink.done(&key) {
                continue;
            }
            check_interrupt()?;
            let (f, sim) = run_app(model, &app, engine, &opts.des)?;
            let peak = model.node_peak_gbps(node);
            let bw =
                f.requests_per_cycle * f64::from(model.line_bytes()) * model.spec.noc.clock_ghz;
            let nd = &model.nodes[node as usize];
            let rec = StreamTriad {
                preset: model.label.clone(),
                engine: engine.into(),
                cores: cores.clone(),
                data_node: node,
                memory_kind: model.pools[nd.pool].kind.clone(),
                bandwidth_gbps: bw,
                peak_gbps: peak,
                percent_of_peak: 100.0 * bw / peak,
                request_latency_ns: model.ns(f.request_latency_cycles),
                packet_latency_cycles: f.packet_latency_cycles,
                mean_hops: f.mean_hops,
                hop_histogram: f.hop_histogram.clone(),
                vns: f.vns.clone(),
                slc_hit_ratio: slc_hit,
                mc_accesses_per_cycle: f.mc_accesses_per_cycle.clone(),
                saturated: f.saturated,
                simulation: sim,
            };
            sink.push(
                Record::new(key, Origin::Modeled, &rec).with_warnings(saturation_warning(&f)),
            )?;
            both.push(rec);
        }
        if opts.engine == Engine::Check && both.len() == 2 {
            let (a, d) = (&both[0], &both[1]);
            let c = Check {
                preset: model.label.clone(),
                experiment: "stream-triad".into(),
                point: format!("cores {clabel}, data on node {node}"),
                metrics: vec![
                    CheckMetric::new("bandwidth_gbps", a.bandwidth_gbps, d.bandwidth_gbps),
                    CheckMetric::new(
                        "request_latency_ns",
                        a.request_latency_ns,
                        d.request_latency_ns,
                    ),
                    CheckMetric::new(
                        "packet_latency_cycles",
                        a.packet_latency_cycles,
                        d.packet_latency_cycles,
                    ),
                    CheckMetric::new(
                        "request_queueing_cycles",
                        a.vns[REQ].queueing_cycles,
                        d.vns[REQ].queueing_cycles,
                    ),
                    CheckMetric::new("mean_hops", a.mean_hops, d.mean_hops),
                ],
            };
            let key = format!(
                "model/check/stream-triad/{}/cores{clabel}/node{node}",
                model.label
            );
            if !sink.done(&key) {
                sink.push(Record::new(key, Origin::Modeled, &c))?;
            }
        }
    }
    sink.progress("stream-triad", total as u64, total as u64);
    Ok(())
}

/// The heatmap target's home slice, controller and stop.
fn resolve_target(model: &Model, t: Target) -> Result<(usize, Option<usize>, StopId), ModelError> {
    match t {
        Target::Slice(s) => {
            if s >= model.slices.len() {
                return Err(usage(format!(
                    "slice {s} does not exist: {} has slices 0-{}",
                    model.label,
                    model.slices.len() - 1
                )));
            }
            Ok((s, None, model.slices[s].stop))
        }
        Target::Mc(m) => {
            if m >= model.mcs.len() {
                return Err(usage(format!(
                    "memory controller {m} does not exist: {} has controllers 0-{}",
                    model.label,
                    model.mcs.len() - 1
                )));
            }
            let stop = model.mcs[m].stop;
            let home = (0..model.slices.len())
                .min_by_key(|&s| model.geo.path_cycles(model.slices[s].stop, stop))
                .expect("a model has slices");
            Ok((home, Some(m), stop))
        }
    }
}

/// The latency heatmap: zero-load latency from every core to one target.
pub fn heatmap_cells(
    model: &Model,
    target: Target,
    engine: &str,
    cfg: &DesConfig,
) -> Result<Vec<HeatCell>, ModelError> {
    let (home, mc, _) = resolve_target(model, target)?;
    let hstop = model.slices[home].stop;
    let mut cells = Vec::new();
    for (c, core) in model.cores.iter().enumerate() {
        let cycles = if engine == "analytic" {
            match mc {
                None => latency::home_read_cycles(model, core.stop, hstop),
                Some(m) => latency::memory_read_cycles(model, core.stop, hstop, m),
            }
        } else {
            check_interrupt()?;
            // One core, one request at a time: the simulated zero-load latency.
            let app = App {
                cores: vec![c],
                data: Data::Fixed {
                    home,
                    mc: mc.unwrap_or(0),
                    hit: mc.is_none(),
                },
                mix: vec![Op::Read],
                slc_hit: 0.0,
                msc_hit: 0.0,
                snoop: 0.0,
                outstanding: 1,
                think_cycles: 0,
            };
            let short = DesConfig {
                warmup_cycles: 0,
                measure_cycles: cfg.measure_cycles.min(5_000),
                ..*cfg
            };
            des::app(model, &app, &short)?.0.request_latency_cycles
        };
        let (socket, x, y) = model.geo.coords(core.stop);
        cells.push(HeatCell {
            core: c,
            socket,
            x,
            y,
            latency_cycles: cycles,
            latency_ns: model.ns(cycles),
        });
    }
    Ok(cells)
}

fn heatmap(model: &Model, opts: &Options, sink: &mut dyn Sink) -> Result<(), ModelError> {
    let target = opts.target.unwrap_or(Target::Slice(0));
    let (home, _, tstop) = resolve_target(model, target)?;
    let tname = match target {
        Target::Slice(s) => format!("slice:{s}"),
        Target::Mc(m) => format!("mc:{m}"),
    };
    let engines = opts.engine.names();
    let mut both: Vec<LatencyHeatmap> = Vec::new();
    for (i, &engine) in engines.iter().enumerate() {
        sink.progress(
            &format!("latency heatmap ({engine})"),
            i as u64,
            engines.len() as u64,
        );
        let key = format!("model/latency-heatmap/{}/{engine}/{tname}", model.label);
        if sink.done(&key) {
            continue;
        }
        let cells = heatmap_cells(model, target, engine, &opts.des)?;
        let min = cells
            .iter()
            .map(|c| c.latency_cycles)
            .fold(f64::INFINITY, f64::min);
        let max = cells.iter().map(|c| c.latency_cycles).fold(0.0, f64::max);
        let mean = cells.iter().map(|c| c.latency_cycles).sum::<f64>() / cells.len() as f64;
        let (k, x, y) = model.geo.coords(tstop);
        let rec = LatencyHeatmap {
            preset: model.label.clone(),
            engine: engine.into(),
            target: tname.clone(),
            target_stop: [k, x, y],
            home_slice: home,
            cells,
            min_cycles: min,
            max_cycles: max,
            spread_cycles: max - min,
            mean_ns: model.ns(mean),
            spread_ns: model.ns(max - min),
        };
        sink.push(Record::new(key, Origin::Modeled, &rec))?;
        both.push(rec);
    }
    if both.len() == 2 {
        let (a, d) = (&both[0], &both[1]);
        let c = Check {
            preset: model.label.clone(),
            experiment: "latency-heatmap".into(),
            point: tname.clone(),
            metrics: vec![
                CheckMetric::new("mean_ns", a.mean_ns, d.mean_ns),
                CheckMetric::new("spread_cycles", a.spread_cycles, d.spread_cycles),
                CheckMetric::new("max_cycles", a.max_cycles, d.max_cycles),
            ],
        };
        let key = format!("model/check/latency-heatmap/{}/{tname}", model.label);
        if !sink.done(&key) {
            sink.push(Record::new(key, Origin::Modeled, &c))?;
        }
    }
    sink.progress(
        "latency heatmap",
        engines.len() as u64,
        engines.len() as u64,
    );
    Ok(())
}

/// Default offered loads, as fractions of the analytic saturation rate.
pub const DEFAULT_LOADS: &[f64] = &[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05];

/// A point is stable when everything created was delivered and the mean latency is
/// under this multiple of the zero-load latency.
pub const STABLE_LATENCY_FACTOR: f64 = 3.0;

fn analytic_point(curve: &analytic::SyntheticCurve, rate: f64, t0: f64) -> TrafficPoint {
    let f = curve.at(rate);
    let stable =
        f.max_link_utilization < 1.0 && f.packet_latency_cycles < STABLE_LATENCY_FACTOR * t0;
    TrafficPoint {
        offered: rate,
        accepted: if f.max_link_utilization < 1.0 {
            rate
        } else {
            rate / f.max_link_utilization
        },
        latency_cycles: f.packet_latency_cycles,
        max_link_utilization: f.max_link_utilization,
        stable,
    }
}

/// One point of a synthetic curve in one engine (`t0`: zero-load latency, for the
/// stability test).
pub fn traffic_point(
    model: &Model,
    t: &Synthetic,
    engine: &str,
    cfg: &DesConfig,
    t0: f64,
) -> Result<(TrafficPoint, Option<SimStats>), ModelError> {
    if engine == "analytic" {
        let curve = analytic::SyntheticCurve::new(model, t);
        return Ok((analytic_point(&curve, t.rate, t0), None));
    }
    let stops = f64::from(Synthetic::stops(model));
    let (f, s) = des::synthetic(model, t, cfg)?;
    let stable = s.drained && f.packet_latency_cycles < STABLE_LATENCY_FACTOR * t0;
    Ok((
        TrafficPoint {
            offered: t.rate,
            accepted: f.packets_per_cycle / stops,
            latency_cycles: f.packet_latency_cycles,
            max_link_utilization: f.max_link_utilization,
            stable,
        },
        Some(s),
    ))
}

/// Bytes the analytic network of every ordered pair of stops takes (a leg, its index
/// entry and its route of resources per pair), estimated from measured footprints:
/// about 290 MB for a 32x32 mesh and 1.8 GB for 48x48 (the estimate is 10-15% above).
pub fn all_pairs_bytes(model: &Model) -> u64 {
    let g = &model.geo;
    let stops = u64::from(g.stops());
    let mean_hops = u64::from(g.cols + g.rows) * 2 / 3 + 2;
    stops * stops * (120 + 8 * mean_hops)
}

/// Memory the system has available (`MemAvailable` of /proc/meminfo), if readable.
fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Refuses a synthetic-traffic experiment whose all-pairs network would take more than
/// half the available memory, with the estimate, the limit and the remedy, before
/// anything is allocated.
fn check_all_pairs(model: &Model, what: &str) -> Result<(), ModelError> {
    let need = all_pairs_bytes(model);
    let Some(avail) = available_bytes() else {
        return Ok(());
    };
    if need <= avail / 2 {
        return Ok(());
    }
    let g = &model.geo;
    // The largest square mesh of this many sockets that fits.
    let mut n = 2u64;
    while {
        let s = u64::from(g.sockets.max(1)) * (n + 1) * (n + 1);
        s * s * (120 + 8 * ((2 * (n + 1)) * 2 / 3 + 2)) <= avail / 2
    } {
        n += 1;
    }
    Err(ModelError::Usage {
        msg: format!(
            "{what} on a {}x{} mesh ({} socket(s), {} stops) needs about {} for its {} routes between stop pairs, more than half of the {} this machine has available; use a mesh of at most about {n}x{n} (--set noc.rows=... --set noc.cols=...), or a machine with more memory",
            g.cols,
            g.rows,
            g.sockets,
            g.stops(),
            numalab_schema::units::bytes(need),
            u64::from(g.stops()) * u64::from(g.stops()),
            numalab_schema::units::bytes(avail)
        ),
    })
}

fn traffic(
    model: &Model,
    pattern: Pattern,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<(), ModelError> {
    check_all_pairs(model, "synthetic traffic")?;
    let base = Synthetic {
        pattern,
        rate: 1e-9,
        flits: opts.flits.max(1),
    };
    let curve = analytic::SyntheticCurve::new(model, &base);
    let zero = curve.at(1e-9);
    let t0 = zero.packet_latency_cycles;
    let sat = curve.saturation_rate();
    let loads = opts.loads.clone().unwrap_or_else(|| DEFAULT_LOADS.to_vec());
    if loads.iter().any(|&l| l.is_nan() || l <= 0.0 || l > 4.0) {
        return Err(usage(
            "--loads: fractions of the saturation rate must be in (0, 4]",
        ));
    }
    let name = match pattern {
        Pattern::Uniform => "uniform",
        Pattern::Hotspot { .. } => "hotspot",
        Pattern::Transpose => "transpose",
    };
    let bisection = (model.geo.cols == model.geo.rows && pattern == Pattern::Uniform)
        .then(|| crate::geometry::saturation_formula(model.geo.cols) / f64::from(base.flits));
    let engines = opts.engine.names();
    let total = engines.len() * loads.len();
    let mut done = 0;
    let mut both: Vec<Traffic> = Vec::new();
    for &engine in engines {
        let key = format!(
            "model/traffic/{}/{engine}/{name}/flits{}",
            model.label, base.flits
        );
        if sink.done(&key) {
            done += loads.len();
            continue;
        }
        let mut points = Vec::new();
        let mut sim_total: Option<SimStats> = None;
        for &l in &loads {
            sink.progress(
                &format!("{name} at {:.0}% of saturation ({engine})", l * 100.0),
                done as u64,
                total as u64,
            );
            done += 1;
            check_interrupt()?;
            if engine == "analytic" && l >= 1.0 {
                continue; // no steady state: queues grow without bound
            }
            let t = Synthetic {
                rate: l * sat,
                ..base
            };
            let (p, s) = if engine == "analytic" {
                (analytic_point(&curve, t.rate, t0), None)
            } else {
                traffic_point(model, &t, engine, &opts.des, t0)?
            };
            if let Some(s) = s {
                let acc = sim_total.get_or_insert(SimStats {
                    drained: true,
                    ..Default::default()
                });
                acc.cycles += s.cycles;
                acc.routers = s.routers;
                acc.events += s.events;
                acc.drained &= s.drained;
            }
            points.push(p);
        }
        let observed = points
            .iter()
            .take_while(|p| p.stable)
            .map(|p| p.offered)
            .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
        let rec = Traffic {
            preset: model.label.clone(),
            engine: engine.into(),
            pattern: name.into(),
            flits: base.flits,
            points,
            zero_load_latency_cycles: t0,
            mean_hops: zero.mean_hops,
            saturation_rate: sat,
            saturation_observed: observed,
            bisection_bound: bisection,
            simulation: sim_total,
        };
        sink.push(Record::new(key, Origin::Modeled, &rec))?;
        both.push(rec);
    }
    if both.len() == 2 {
        let (a, d) = (&both[0], &both[1]);
        let mut metrics = Vec::new();
        for pa in &a.points {
            if let Some(pd) = d.points.iter().find(|p| p.offered == pa.offered) {
                metrics.push(CheckMetric::new(
                    &format!(
                        "latency_cycles at {:.0}% of saturation",
                        100.0 * pa.offered / sat
                    ),
                    pa.latency_cycles,
                    pd.latency_cycles,
                ));
            }
        }
        let key = format!(
            "model/check/traffic/{}/{name}/flits{}",
            model.label, base.flits
        );
        if !sink.done(&key) {
            sink.push(Record::new(
                key,
                Origin::Modeled,
                &Check {
                    preset: model.label.clone(),
                    experiment: name.into(),
                    point: "latency versus offered load".into(),
                    metrics,
                },
            ))?;
        }
    }
    sink.progress(name, total as u64, total as u64);
    Ok(())
}

/// SLC hit ratio of random accesses to a working set under the model's home grouping:
/// the capacity the data can use over the data (each node's share when grouped).
pub fn slc_hit_ratio(model: &Model, app: &App, working_set: f64) -> f64 {
    let cap = model.spec.slc.bytes as f64;
    if cap == 0.0 || working_set <= 0.0 {
        return if cap == 0.0 { 0.0 } else { 1.0 };
    }
    match model.spec.slc.home_group {
        HomeGroup::All => (cap * f64::from(model.geo.sockets) / working_set).min(1.0),
        _ => {
            // Data per node (by the cores that touch it), hit ratio per node, weighted.
            let mut per_node = vec![0.0; model.nodes.len()];
            for &c in &app.cores {
                match app.data {
                    Data::Node { node } => per_node[node as usize] += 1.0,
                    Data::Local | Data::Fixed { .. } => {
                        per_node[model.cores[c].node as usize] += 1.0
                    }
                    Data::Interleave => per_node
                        .iter_mut()
                        .for_each(|v| *v += 1.0 / model.nodes.len() as f64),
                }
            }
            let n: f64 = per_node.iter().sum();
            per_node
                .iter()
                .enumerate()
                .filter(|(_, &w)| w > 0.0)
                .map(|(i, &w)| {
                    let ws = working_set * w / n;
                    w / n * (model.slc_reach_bytes(i as u32) / ws).min(1.0)
                })
                .sum()
        }
    }
}

/// B5: the same application under each configuration the preset lists.
fn policy(model: &Model, opts: &Options, sink: &mut dyn Sink) -> Result<(), ModelError> {
    let variants = model.spec.policy_variants.clone();
    if variants.is_empty() {
        return Err(usage(format!(
            "{} lists no policy_variants to compare; add them to the preset",
            model.label
        )));
    }
    let engines = opts.engine.names();
    let apps = ["balanced", "main-thread"];
    let total = variants.len() * apps.len() * engines.len();
    let mut done = 0;
    // The user's preset (with any variants it already has), then each configuration.
    let base = if opts.base_preset.is_empty() {
        model.label.clone()
    } else {
        opts.base_preset.clone()
    };
    for v in &variants {
        let label = if base.contains(':') {
            format!("{base},{v}")
        } else {
            format!("{base}:{v}")
        };
        let m = Model::load(&label, &opts.sets)?;
        let cores = opts
            .cores
            .clone()
            .unwrap_or_else(|| (0..m.cores.len()).collect());
        check_cores(&m, &cores)?;
        let ws = opts
            .working_set_bytes
            .unwrap_or((2 * m.spec.slc.bytes).max(256 << 20));
        for app_name in apps {
            let data = if app_name == "balanced" {
                Data::Local
            } else {
                Data::Node { node: 0 }
            };
            let mut app = App {
                cores: cores.clone(),
                data,
                mix: vec![Op::Read, Op::Read, Op::Read, Op::Write],
                slc_hit: 0.0,
                msc_hit: 0.0,
                snoop: 0.05,
                outstanding: m.spec.cores.max_outstanding,
                think_cycles: 0,
            };
            app.slc_hit = slc_hit_ratio(&m, &app, ws as f64);
            app.msc_hit = match m.cache_pool {
                Some(p) => m.pools[p]
                    .cache_hit_ratio
                    .unwrap_or((m.pools[p].capacity_bytes as f64 / ws as f64).min(1.0)),
                None => 0.0,
            };
            let mut both: Vec<Policy> = Vec::new();
            for &engine in engines {
                sink.progress(
                    &format!("policy {v} {app_name} ({engine})"),
                    done as u64,
                    total as u64,
                );
                done += 1;
                let key = format!("model/policy/{label}/{engine}/{app_name}");
                if sink.done(&key) {
                    continue;
                }
                check_interrupt()?;
                let (f, _) = run_app(&m, &app, engine, &opts.des)?;
                // Controllers that serve these accesses: main memory and, if any, the
                // memory-side cache in front of it.
                let mains: Vec<usize> = (0..m.mcs.len())
                    .filter(|&i| {
                        m.mcs[i].pool == m.main_pool || Some(m.mcs[i].pool) == m.cache_pool
                    })
                    .collect();
                let acc: Vec<f64> = mains
                    .iter()
                    .map(|&i| f.mc_accesses_per_cycle.get(i).copied().unwrap_or(0.0))
                    .collect();
                let sum: f64 = acc.iter().sum();
                let share: Vec<f64> = acc
                    .iter()
                    .map(|a| if sum > 0.0 { a / sum } else { 0.0 })
                    .collect();
                let mean = 1.0 / share.len() as f64;
                let imbalance = share.iter().copied().fold(0.0, f64::max) / mean;
                let rec = Policy {
                    preset: label.clone(),
                    engine: engine.into(),
                    configuration: v.clone(),
                    application: app_name.into(),
                    numa_nodes: m.nodes.len(),
                    working_set_bytes: ws,
                    slc_hit_ratio: app.slc_hit,
                    mean_hops: f.mean_hops,
                    mc_share: share,
                    mc_imbalance: imbalance,
                    bandwidth_gbps: f.requests_per_cycle
                        * f64::from(m.line_bytes())
                        * m.spec.noc.clock_ghz,
                    request_latency_ns: m.ns(f.request_latency_cycles),
                    vns: f.vns.clone(),
                    saturated: f.saturated,
                };
                sink.push(
                    Record::new(key, Origin::Modeled, &rec).with_warnings(saturation_warning(&f)),
                )?;
                both.push(rec);
            }
            if both.len() == 2 {
                let (a, d) = (&both[0], &both[1]);
                let key = format!("model/check/policy/{label}/{app_name}");
                if !sink.done(&key) {
                    sink.push(Record::new(
                        key,
                        Origin::Modeled,
                        &Check {
                            preset: label.clone(),
                            experiment: "policy".into(),
                            point: format!("{v}, {app_name}"),
                            metrics: vec![
                                CheckMetric::new(
                                    "bandwidth_gbps",
                                    a.bandwidth_gbps,
                                    d.bandwidth_gbps,
                                ),
                                CheckMetric::new(
                                    "request_latency_ns",
                                    a.request_latency_ns,
                                    d.request_latency_ns,
                                ),
                                CheckMetric::new("mean_hops", a.mean_hops, d.mean_hops),
                                CheckMetric::new("mc_imbalance", a.mc_imbalance, d.mc_imbalance),
                            ],
                        },
                    ))?;
                }
            }
        }
    }
    sink.progress("policy", total as u64, total as u64);
    Ok(())
}
