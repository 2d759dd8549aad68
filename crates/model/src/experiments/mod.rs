//! The studies of experiments.md run on a modeled machine: STREAM triad with the data on
//! each node in turn (B1), the latency heatmap over the floorplan (C1), synthetic
//! traffic curves (uniform, hotspot, transpose) and the NUMA/SLC policy comparison (B5).
//! Each produces typed records ([`crate::records`]) through a callback as soon as it has
//! them, under stable keys, so a killed run resumes where it stopped.

mod flags;
mod heatmap;
mod policy;
mod traffic;
mod triad;

pub use flags::{parse_cores, run_config, RunFlags};
use heatmap::*;
pub use heatmap::{first_heatmap, heatmap_cells};
pub use policy::slc_hit_ratio;
use policy::*;
use traffic::*;
pub use traffic::{
    all_pairs_bytes, offered_loads, other_router, traffic_point, DEFAULT_LOADS,
    STABLE_LATENCY_FACTOR,
};
use triad::*;

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
    /// Both, plus a `model.check` record with their differences; for synthetic traffic
    /// also the discrete-event engine with the other router (where the spec can model
    /// it; the record says why not otherwise), so that the analytic, input-queued and
    /// output-queued figures stand side by side.
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
    /// Offered loads as fractions of the configured router's analytic saturation
    /// estimate ([`offered_loads`]).
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
    /// Discrete-event simulations run side by side on this many threads (at least 1): a
    /// curve's points, stream-triad's data nodes, policy's configurations and
    /// applications; a curve with fewer points than jobs shards each point's
    /// input-queued simulation on the spare threads ([`crate::router::simulate_threads`]).
    /// Each is its own seeded simulation and the records are made in the same order, so
    /// the figures do not depend on it; it is not part of a run's recorded options.
    #[serde(skip, default = "one")]
    pub jobs: usize,
}

fn one() -> usize {
    1
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
            jobs: 1,
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

/// Runs `work(k)` for `k` in `0..n` on up to `jobs` worker threads of `scope`, ahead of
/// the loop that records the results: [`Ahead::take`] hands result `k` over, waiting for
/// it, so that the loop keeps its order and records each result as soon as it has it
/// (a killed run keeps every record already taken). Each worker checks for an interrupt
/// before it starts an item; once the `Ahead` is dropped (the loop ended or failed) no
/// new item starts.
fn ahead<'scope, 'env, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    jobs: usize,
    n: usize,
    work: &'scope (dyn Fn(usize) -> Result<T, ModelError> + Sync),
) -> Ahead<T> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    for _ in 0..jobs.clamp(1, n.max(1)) {
        let (tx, stop, next) = (tx.clone(), stop.clone(), next.clone());
        scope.spawn(move || loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let k = next.fetch_add(1, Ordering::Relaxed);
            if k >= n {
                break;
            }
            let r = check_interrupt().and_then(|()| work(k));
            if tx.send((k, r)).is_err() {
                break;
            }
        });
    }
    Ahead {
        rx,
        waiting: std::collections::HashMap::new(),
        stop,
    }
}

/// Results computed ahead by [`ahead`]'s workers.
struct Ahead<T> {
    rx: std::sync::mpsc::Receiver<(usize, Result<T, ModelError>)>,
    waiting: std::collections::HashMap<usize, Result<T, ModelError>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<T> Ahead<T> {
    /// Result `k`, once its worker has it (each `k` below `n` once).
    fn take(&mut self, k: usize) -> Result<T, ModelError> {
        loop {
            if let Some(r) = self.waiting.remove(&k) {
                return r;
            }
            match self.rx.recv() {
                Ok((i, r)) => {
                    self.waiting.insert(i, r);
                }
                // Every worker ended without it: only after a stop.
                Err(_) => return Err(ModelError::Interrupted),
            }
        }
    }
}

impl<T> Drop for Ahead<T> {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
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
    model.check_queue_depth(
        engine != "analytic" && model.spec.noc.router == crate::spec::RouterKind::InputQueued,
    )?;
    if engine == "analytic" {
        Ok((analytic::app(model, app), None))
    } else {
        let (f, s) = des::app(model, app, cfg)?;
        Ok((f, Some(s)))
    }
}

/// The output-queued router's known error against BookSim2's input-queued router, as
/// measured in docs/model.md ("Router microarchitecture", the table of every engine and
/// router): printed with every result that used it.
pub const OUTPUT_QUEUED_ERROR: &str = "output-queued routers (noc.router = \"output-queued\") are ideal: against BookSim2's input-queued routers (8x8, 12x12 and 16x16 meshes) their saturation on uniform traffic is 14-19% high in the analytic engine and 18-24% in the discrete-event one, and their latency near saturation low (at 0.40 packets/node/cycle on 8x8, 1.21-1.26x their zero-load latency where BookSim2 has 1.42x); docs/model.md, \"Every engine and router against BookSim2\"";

/// The note printed with results of output-queued routers ([`OUTPUT_QUEUED_ERROR`]),
/// none for input-queued ones.
pub fn router_warning(model: &Model) -> Vec<Warning> {
    if model.spec.noc.router != crate::spec::RouterKind::OutputQueued {
        return Vec::new();
    }
    let remedy = if model.geo.sockets > 1 {
        "the input-queued router models one socket: for a one-socket machine, --set noc.router=input-queued"
    } else {
        "--set noc.router=input-queued (the default) for figures within 2% of BookSim2 up to the knee"
    };
    vec![Warning::new("model_output_queued", OUTPUT_QUEUED_ERROR).with_remedy(remedy)]
}

/// The warnings of an application result: saturation, and the router's known error.
fn app_warnings(model: &Model, f: &Figures) -> Vec<Warning> {
    let mut w = saturation_warning(f);
    w.extend(router_warning(model));
    w
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
