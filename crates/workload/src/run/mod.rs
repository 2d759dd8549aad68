//! A measured run: closed-loop clients pinned to PUs, answering requests for a fixed
//! time, and the figures the server evaluation needs.
//!
//! Protocol: generate the graph; check memory; place it (copies, policies, first touch)
//! and verify where its pages are; start one client per PU, each pinned and building
//! its own search state on its own node; release all clients together; discard a
//! warm-up; then count, for `duration` seconds, the requests that complete, with each
//! one's response time. Around the measured window the process's CPU time (getrusage),
//! the worker CPUs' busy and steal time (/proc/stat) and the power sensors (powercap
//! energy counters, hwmon power readings) are read. A stop request (Ctrl-C) ends the
//! window early; what was measured is kept and flagged as partial.
//!
//! Reported: requests/s in total and per client thread, the spread of requests/s over
//! time slices (bootstrap interval of the median slice), response-time percentiles
//! (p50/p95/p99 with bootstrap intervals) overall and per request kind, CPU
//! utilisation (CPU time / (wall time x threads)), pages per NUMA node of every graph
//! copy, and power with what the sensors cover, or why power is not available.

mod client;
mod power;
mod tally;
pub use tally::cpu_warnings;
mod window;

use client::*;
use power::*;

use crate::graph::{self, GraphSpec, GraphStats, OwnedGraph};
use crate::itinerary::{self, EaParams};
use crate::placement::{self, CpuOrder, Mode, Slot};
use crate::request::{Request, RequestGen, RequestKind, Worker};
use crate::WorkloadError;
use numalab_clock::now_ns;
use numalab_schema::{interrupt, Machine, Origin, Record, Warning};
use numalab_sensors::{Sensor, SensorKind};
use numalab_stats::median_interval;
use numalab_stats::quantiles::bootstrap_percentiles;
use numalab_topo::bind::{PageKind, Placer};
use numalab_topo::system::SysRoot;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

pub use numalab_records::workload::{
    ClientResult, GraphSummary, LatencySummary, MemorySummary, PowerReading, TemperatureReading,
    WorkloadRun,
};

/// Everything a run needs to know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// Client threads (one per PU).
    pub threads: usize,
    /// Order in which clients take PUs.
    pub placement: CpuOrder,
    /// Where the graph lives.
    pub mode: Mode,
    /// Measured window, seconds.
    pub duration_s: f64,
    /// Warm-up before the window (requests served, not counted), seconds.
    pub warmup_s: f64,
    /// The road network (its seed also seeds the request streams).
    pub graph: GraphSpec,
    /// Fraction of route queries (the rest are itinerary plans), 0-1.
    pub route_share: f64,
    /// Evolutionary search parameters of itinerary requests.
    pub ea: EaParams,
    /// Pages backing the graph copies (base pages or transparent huge pages).
    pub page_kind: PageKind,
    /// Filesystem root for /proc and /sys (memory checks, CPU accounting, power
    /// sensors): `/` normally, a fixture tree in tests.
    pub sys_root: PathBuf,
    /// Seed of the bootstrap resampling.
    pub bootstrap_seed: u64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            threads: 1,
            placement: CpuOrder::Compact,
            mode: Mode::SharedFirstTouch,
            duration_s: 10.0,
            warmup_s: 1.0,
            graph: GraphSpec {
                seed: 1,
                nodes: graph::DEFAULT_NODES,
            },
            route_share: 0.8,
            ea: EaParams::default(),
            page_kind: PageKind::Base,
            sys_root: PathBuf::from("/"),
            bootstrap_seed: numalab_stats::DEFAULT_SEED,
        }
    }
}

impl RunConfig {
    /// A short run for `evaluate`: 5 s measured after 1 s of warm-up, default graph.
    pub fn quick(threads: usize) -> Self {
        RunConfig {
            threads,
            duration_s: 5.0,
            ..Default::default()
        }
    }

    /// Checks the configuration without touching the machine.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        self.graph.validate()?;
        itinerary::validate(&self.ea)?;
        if self.threads == 0 {
            return Err(WorkloadError::Usage(
                "--threads 0: at least one client thread is needed".into(),
            ));
        }
        if !(self.duration_s.is_finite() && self.duration_s > 0.0 && self.duration_s <= 86_400.0) {
            return Err(WorkloadError::Usage(format!(
                "--duration {}: give a number of seconds above 0 (and at most a day)",
                self.duration_s
            )));
        }
        if !(self.warmup_s.is_finite() && self.warmup_s >= 0.0 && self.warmup_s <= 3600.0) {
            return Err(WorkloadError::Usage(format!(
                "--warmup {}: give 0 to 3600 seconds",
                self.warmup_s
            )));
        }
        if !(0.0..=1.0).contains(&self.route_share) {
            return Err(WorkloadError::Usage(format!(
                "--mix {}: the share of route queries must be between 0 and 1 (e.g. 0.8 = 80% routes, 20% itineraries)",
                self.route_share
            )));
        }
        Ok(())
    }

    /// The record key of this run (a resumed run with the same key is skipped).
    pub fn key(&self) -> String {
        format!(
            "workload/run/{}/{}/t{}/n{}/seed{}/routes{}",
            self.mode,
            self.placement,
            self.threads,
            self.graph.nodes,
            self.graph.seed,
            self.route_share
        )
    }

    /// The configuration as the run's envelope records it (and a resumed run is
    /// compared by): this value serialized.
    pub fn config_json(&self) -> Result<serde_json::Value, WorkloadError> {
        serde_json::to_value(self)
            .map_err(|e| WorkloadError::Runtime(format!("cannot serialize the configuration: {e}")))
    }

    /// The clients' PUs, in order, or a usage error when there are too few.
    pub fn slots(&self, machine: &Machine) -> Result<Vec<Slot>, WorkloadError> {
        let order = placement::cpu_order(machine, self.placement);
        if self.threads > order.len() {
            return Err(WorkloadError::Usage(format!(
                "--threads {}: this machine has {} PUs; each client thread gets its own PU (use --threads {} or fewer)",
                self.threads,
                order.len(),
                order.len()
            )));
        }
        Ok(order[..self.threads].to_vec())
    }
}

/// What the run is doing (for progress displays).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Progress {
    /// Generating the road network.
    Generating {
        /// Nodes.
        nodes: u32,
    },
    /// Building and verifying graph copies.
    Placing {
        /// Copies to build.
        copies: usize,
    },
    /// Warming up.
    Warmup {
        /// Seconds elapsed.
        elapsed_s: f64,
        /// Warm-up length.
        total_s: f64,
    },
    /// Measuring.
    Measuring {
        /// Seconds elapsed.
        elapsed_s: f64,
        /// Window length.
        total_s: f64,
        /// Requests completed so far (including warm-up).
        requests: u64,
    },
    /// Computing statistics.
    Summarizing,
}

impl Progress {
    /// What the run of `threads` clients with the graph placed as `mode` is doing, in
    /// words for a progress display ("warming up 4 clients: 0.5/1.0 s").
    pub fn describe(&self, threads: usize, mode: Mode) -> String {
        match *self {
            Progress::Generating { nodes } => {
                format!("generating a road network of {nodes} nodes")
            }
            Progress::Placing { copies } => format!(
                "placing {copies} cop{} of the graph ({mode})",
                if copies == 1 { "y" } else { "ies" }
            ),
            Progress::Warmup { elapsed_s, total_s } => {
                format!("warming up {threads} clients: {elapsed_s:.1}/{total_s:.1} s")
            }
            Progress::Measuring {
                elapsed_s,
                total_s,
                requests,
            } => format!("{elapsed_s:.0}/{total_s:.0} s, {requests} requests"),
            Progress::Summarizing => "computing statistics".to_string(),
        }
    }

    /// How far the measured window is, in thousandths (0 to 1000, for a bar of 1000
    /// steps); `None` outside the window.
    pub fn permille(&self) -> Option<u64> {
        match *self {
            Progress::Measuring {
                elapsed_s, total_s, ..
            } => Some(((elapsed_s / total_s) * 1000.0).clamp(0.0, 1000.0) as u64),
            _ => None,
        }
    }
}

/// The response times `values` (ns) in a summary, the intervals from bootstrap `seed`.
fn latency_summary(values: &[f64], seed: u64) -> Option<LatencySummary> {
    if values.is_empty() {
        return None;
    }
    let resamples = if values.len() <= 50_000 { 1000 } else { 300 };
    let iv = bootstrap_percentiles(values, &[50.0, 95.0, 99.0], 0.95, resamples, seed)?;
    Some(LatencySummary {
        requests: values.len() as u64,
        mean_ns: values.iter().sum::<f64>() / values.len() as f64,
        p50_ns: iv[0].clone(),
        p95_ns: iv[1].clone(),
        p99_ns: iv[2].clone(),
        max_ns: values.iter().copied().fold(0.0, f64::max),
    })
}

/// A finished run: the payload, its warnings and its record key.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The record key ([`RunConfig::key`]).
    pub key: String,
    /// The payload.
    pub run: WorkloadRun,
    /// Warnings about the run.
    pub warnings: Vec<Warning>,
}

impl Outcome {
    /// The run with this key that an earlier run left in `sink` (a resumed command
    /// measures nothing new), when the sink has it and it decodes as a `workload.run`.
    pub fn previous(sink: &dyn numalab_schema::sink::Sink, key: &str) -> Option<Outcome> {
        let run = sink.previous(key)?.decode::<WorkloadRun>()?.ok()?;
        Some(Outcome {
            key: key.to_string(),
            run,
            warnings: Vec::new(),
        })
    }

    /// The error a run cut short by Ctrl-C ends its command with (its partial record is
    /// kept, marked interrupted); `None` for a run measured whole.
    pub fn cut_short(&self) -> Option<WorkloadError> {
        self.run.interrupted.then(|| {
            WorkloadError::Interrupted(format!(
                "stopped after {:.1} s of {} s; the partial result was kept (marked interrupted)",
                self.run.measured_s, self.run.duration_s
            ))
        })
    }

    /// The `workload.run` record.
    pub fn record(&self) -> Record {
        Record::new(&self.key, Origin::Measured, &self.run).with_warnings(self.warnings.clone())
    }

    /// One machine-readable line: `requests_per_s=... requests_per_s_per_thread=...`.
    pub fn metric_line(&self) -> String {
        let r = &self.run;
        let p = |l: &Option<LatencySummary>, f: fn(&LatencySummary) -> f64| {
            l.as_ref()
                .map_or("nan".to_string(), |l| format!("{:.0}", f(l)))
        };
        format!(
            "requests_per_s={:.3} requests_per_s_per_thread={:.3} latency_p50_ns={} latency_p95_ns={} latency_p99_ns={} cpu_utilization={:.4} threads={} interrupted={}",
            r.requests_per_s,
            r.requests_per_s_per_thread,
            p(&r.latency, |l| l.p50_ns.estimate),
            p(&r.latency, |l| l.p95_ns.estimate),
            p(&r.latency, |l| l.p99_ns.estimate),
            r.cpu_utilization,
            r.threads,
            r.interrupted
        )
    }
}

/// Generates the graph and runs (see [`run_on`]).
pub fn run(
    config: &RunConfig,
    machine: &Machine,
    placer: &dyn Placer,
) -> Result<Outcome, WorkloadError> {
    run_observed(config, machine, placer, &mut |_| {})
}

/// [`run`] with a progress callback (called from the calling thread).
pub fn run_observed(
    config: &RunConfig,
    machine: &Machine,
    placer: &dyn Placer,
    observer: &mut dyn FnMut(Progress),
) -> Result<Outcome, WorkloadError> {
    config.validate()?;
    config.slots(machine)?;
    observer(Progress::Generating {
        nodes: config.graph.nodes,
    });
    let (graph, generation_s) = timed_generate(&config.graph)?;
    if interrupt::requested() {
        return Err(WorkloadError::Interrupted(
            "stopped while generating the road network; nothing was measured".into(),
        ));
    }
    run_on(&graph, generation_s, config, machine, placer, observer)
}

/// Generates a graph and says how long it took (seconds).
pub fn timed_generate(spec: &GraphSpec) -> Result<(OwnedGraph, f64), WorkloadError> {
    let t = now_ns();
    let g = graph::generate(spec)?;
    Ok((g, (now_ns() - t) as f64 / 1e9))
}

/// Runs the workload on an already generated graph (so `evaluate` and benchmarks can
/// run several configurations on one graph). `generation_s` is recorded as given.
pub fn run_on(
    graph: &OwnedGraph,
    generation_s: f64,
    config: &RunConfig,
    machine: &Machine,
    placer: &dyn Placer,
    observer: &mut dyn FnMut(Progress),
) -> Result<Outcome, WorkloadError> {
    config.validate()?;
    if graph.spec != config.graph {
        return Err(WorkloadError::Usage(format!(
            "the graph given ({} nodes, seed {}) is not the one configured ({} nodes, seed {})",
            graph.spec.nodes, graph.spec.seed, config.graph.nodes, config.graph.seed
        )));
    }
    let slots = config.slots(machine)?;
    let sys = SysRoot::at(&config.sys_root);
    let mut warnings = Vec::new();
    let state_bytes = state_bytes_estimate(graph.spec.nodes);
    warnings.extend(placement::check_memory(
        config.mode,
        graph.bytes(),
        state_bytes,
        &slots,
        &sys,
    )?);
    let (placed, placement_s) = place_graph(
        graph,
        config,
        machine,
        placer,
        &slots,
        &mut warnings,
        observer,
    )?;
    let graph_summary = graph_summary(graph, generation_s, placement_s);
    let numa_nodes = machine.numa_nodes.len().max(1);

    let pus: Vec<u32> = slots.iter().map(|s| s.pu).collect();
    let mut meter = PowerMeter::new(&config.sys_root);
    let window = window::measure(config, placer, &slots, &placed, &sys, &mut meter, observer)?;
    let (t0, stop_at, interrupted) = (window.t0, window.stop_at, window.interrupted);
    observer(Progress::Summarizing);
    let measured_s = (stop_at - t0) as f64 / 1e9;
    let completed = window
        .outs
        .iter()
        .flat_map(|o| &o.samples)
        .filter(|s| s.end_ns >= t0 && s.end_ns <= stop_at)
        .count();
    if interrupted && (completed == 0 || measured_s < 0.1) {
        return Err(WorkloadError::Interrupted(format!(
            "stopped {measured_s:.2} s into the window, before a useful measurement ({completed} requests); nothing was kept"
        )));
    }
    let (power_sensors, temperatures, power_watts, power_covers, power_unavailable_reason) =
        meter.finish(measured_s);
    let t = tally::tally(&window, &slots, &placed, measured_s);
    let requests = t.all.len() as u64;
    let requests_per_s = requests as f64 / measured_s;
    let seed = config.bootstrap_seed;
    let cpu = tally::cpu_use(&window, config);
    tally::quality_warnings(&mut warnings, config, interrupted, measured_s, &t, &cpu);

    let run = WorkloadRun {
        threads: config.threads,
        placement: config.placement,
        mode: config.mode,
        pus,
        pu_nodes: slots.iter().map(|s| s.node).collect(),
        route_share: config.route_share,
        ea: config.ea,
        graph: graph_summary,
        duration_s: config.duration_s,
        warmup_s: config.warmup_s,
        measured_s,
        requests,
        requests_route: t.route.len() as u64,
        requests_itinerary: t.itinerary.len() as u64,
        requests_per_s,
        requests_per_s_per_thread: requests_per_s / config.threads as f64,
        requests_per_s_interval: if t.slices >= 3 {
            median_interval(&t.slice_rates)
        } else {
            None
        },
        requests_per_s_slices: t.slice_rates,
        slice_s: t.slice_s,
        clients: t.clients,
        latency: latency_summary(&t.all, seed),
        latency_route: latency_summary(&t.route, seed),
        latency_itinerary: latency_summary(&t.itinerary, seed),
        settled_per_request: if requests > 0 {
            t.settled as f64 / requests as f64
        } else {
            0.0
        },
        cpu_utilization: cpu.utilization,
        requests_per_cpu_s: (window.cpu_s > 0.0).then(|| requests as f64 / window.cpu_s),
        cpu_s: window.cpu_s,
        worker_cpus_busy: cpu.busy,
        worker_cpus_steal: cpu.steal,
        pages_per_node: placed.pages_per_node(),
        memory: MemorySummary {
            numa_nodes,
            modes_equivalent_here: numa_nodes == 1,
            page_kind: config.page_kind,
            copies: placed.reports.clone(),
            state_bytes_per_client: state_bytes,
        },
        requests_per_joule: power_watts.filter(|w| *w > 0.0).map(|w| requests_per_s / w),
        power_watts,
        power_covers,
        power_unavailable_reason,
        power_sensors,
        temperatures,
        interrupted,
    };
    Ok(Outcome {
        key: config.key(),
        run,
        warnings,
    })
}

/// Places the graph (copies, policies, first touch) and says how long it took (seconds),
/// adding the placement's warnings and those about the machine and the build; stops if
/// a stop request came meanwhile.
fn place_graph(
    graph: &OwnedGraph,
    config: &RunConfig,
    machine: &Machine,
    placer: &dyn Placer,
    slots: &[Slot],
    warnings: &mut Vec<Warning>,
    observer: &mut dyn FnMut(Progress),
) -> Result<(placement::Placement, f64), WorkloadError> {
    let copies = match config.mode {
        Mode::Replicated => {
            let mut n: Vec<u32> = slots.iter().map(|s| s.node).collect();
            n.sort_unstable();
            n.dedup();
            n.len()
        }
        _ => 1,
    };
    observer(Progress::Placing { copies });
    let t_place = now_ns();
    let placed = placement::place(graph, config.mode, slots, machine, placer, config.page_kind)?;
    let placement_s = (now_ns() - t_place) as f64 / 1e9;
    warnings.extend(placed.warnings.iter().cloned());
    let numa_nodes = machine.numa_nodes.len().max(1);
    if numa_nodes == 1 {
        warnings.push(Warning::new(
            "single_numa_node",
            "this machine has one NUMA node: shared-first-touch, shared-interleaved and replicated all put every page on node 0, so the three modes are equivalent here and their figures differ only by noise",
        ).with_remedy("compare the modes on a machine with several NUMA nodes"));
    }
    if cfg!(debug_assertions) {
        warnings.push(Warning::new(
            "debug_build",
            "numalab was built without optimisations: request rates are far below what a release build reaches",
        ).with_remedy("build with `cargo build --release`"));
    }
    if interrupt::requested() {
        return Err(WorkloadError::Interrupted(
            "stopped while placing the graph; nothing was measured".into(),
        ));
    }
    Ok((placed, placement_s))
}

/// The graph's figures for the record, with how long generating and placing it took.
fn graph_summary(graph: &OwnedGraph, generation_s: f64, placement_s: f64) -> GraphSummary {
    let view = graph.view();
    let stats = GraphStats::of(&view, false);
    GraphSummary {
        seed: graph.spec.seed,
        nodes: graph.spec.nodes,
        edges: stats.edges,
        width: graph.width,
        height: view.height(),
        mean_degree: stats.mean_degree,
        degree_histogram: stats.degree_histogram,
        weight_median_ms: stats.weight_median_ms,
        bytes: graph.bytes(),
        bytes_per_node: graph.bytes() as f64 / graph.spec.nodes as f64,
        fingerprint: format!("{:016x}", graph.fingerprint()),
        generation_s,
        placement_s,
    }
}

/// Bytes of one client's search state for a graph of `nodes` nodes (distances of both
/// directions, touched lists, heaps), without allocating it.
pub fn state_bytes_estimate(nodes: u32) -> u64 {
    let n = nodes as u64;
    2 * (n * 4 + n * 4 + (n / 4 + 1024) * 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_configuration_is_the_config_itself() {
        let c = RunConfig {
            threads: 3,
            ..Default::default()
        };
        let v = c.config_json().unwrap();
        assert_eq!(v["threads"], 3);
        let back: RunConfig = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn progress_in_words_and_thousandths() {
        let mode = Mode::Replicated;
        assert_eq!(
            Progress::Placing { copies: 1 }.describe(4, mode),
            format!("placing 1 copy of the graph ({mode})")
        );
        assert!(Progress::Placing { copies: 2 }
            .describe(4, mode)
            .starts_with("placing 2 copies of the graph ("));
        let warm = Progress::Warmup {
            elapsed_s: 0.5,
            total_s: 1.0,
        };
        assert_eq!(warm.describe(4, mode), "warming up 4 clients: 0.5/1.0 s");
        assert_eq!(warm.permille(), None);
        let m = Progress::Measuring {
            elapsed_s: 3.0,
            total_s: 10.0,
            requests: 77,
        };
        assert_eq!(m.describe(4, mode), "3/10 s, 77 requests");
        assert_eq!(m.permille(), Some(300));
        let over = Progress::Measuring {
            elapsed_s: 11.0,
            total_s: 10.0,
            requests: 0,
        };
        assert_eq!(over.permille(), Some(1000));
        assert_eq!(
            Progress::Generating { nodes: 9 }.describe(1, mode),
            "generating a road network of 9 nodes"
        );
    }
}
