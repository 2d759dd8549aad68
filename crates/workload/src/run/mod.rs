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
    let placed = placement::place(
        graph,
        config.mode,
        &slots,
        machine,
        placer,
        config.page_kind,
    )?;
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
    let view = graph.view();
    let stats = GraphStats::of(&view, false);
    let graph_summary = GraphSummary {
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
    };
    if interrupt::requested() {
        return Err(WorkloadError::Interrupted(
            "stopped while placing the graph; nothing was measured".into(),
        ));
    }

    let shared = Shared {
        t0: AtomicU64::new(0),
        t1: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        ready: Gate::new(slots.len() + 1),
        go: Gate::new(slots.len() + 1),
        completed: AtomicU64::new(0),
        failure: Mutex::new(None),
    };
    let pus: Vec<u32> = slots.iter().map(|s| s.pu).collect();
    let mut meter = PowerMeter::new(&config.sys_root);
    let window = std::thread::scope(|scope| -> Result<_, WorkloadError> {
        let mut handles = Vec::new();
        for (i, slot) in slots.iter().enumerate() {
            let view = placed.copies[placed.copy_of_client[i]].view();
            let shared = &shared;
            let h = std::thread::Builder::new()
                .name(format!("numalab-wl-{i}"))
                .spawn_scoped(scope, move || {
                    client(i, *slot, view, config, placer, shared)
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // Threads already started wait at the gates: release them.
                    shared.stop.store(true, Ordering::SeqCst);
                    shared.ready.cancel();
                    shared.go.cancel();
                    return Err(WorkloadError::Runtime(format!(
                        "cannot start client thread {i}: {e}; use fewer --threads"
                    )));
                }
            }
        }
        shared.ready.wait();
        let failed = shared.failure.lock().unwrap().take();
        let begin = now_ns();
        let t0 = begin + (config.warmup_s * 1e9) as u64;
        let t1 = t0 + (config.duration_s * 1e9) as u64;
        if failed.is_some() {
            shared.stop.store(true, Ordering::SeqCst);
        }
        shared.t0.store(t0, Ordering::SeqCst);
        shared.t1.store(t1, Ordering::SeqCst);
        shared.go.wait();
        let join = |handles: Vec<std::thread::ScopedJoinHandle<'_, ClientOut>>| {
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect::<Vec<ClientOut>>()
        };
        if let Some(e) = failed {
            join(handles);
            return Err(e);
        }
        // Warm-up.
        while now_ns() < t0 {
            if interrupt::requested() {
                shared.stop.store(true, Ordering::SeqCst);
                join(handles);
                return Err(WorkloadError::Interrupted(
                    "stopped during the warm-up; nothing was measured".into(),
                ));
            }
            observer(Progress::Warmup {
                elapsed_s: (now_ns() - begin) as f64 / 1e9,
                total_s: config.warmup_s,
            });
            sleep_until(t0, 50_000_000);
        }
        let cpu0 = process_cpu_s();
        let wall0 = now_ns();
        let ticks0 = cpu_ticks(&sys, &pus);
        meter.start();
        let mut stop_at = t1;
        let mut interrupted = false;
        loop {
            let now = now_ns();
            if now >= t1 {
                break;
            }
            if interrupt::requested() {
                stop_at = now;
                interrupted = true;
                shared.stop.store(true, Ordering::SeqCst);
                break;
            }
            observer(Progress::Measuring {
                elapsed_s: (now.saturating_sub(t0)) as f64 / 1e9,
                total_s: config.duration_s,
                requests: shared.completed.load(Ordering::Relaxed),
            });
            meter.sample();
            sleep_until(t1, 250_000_000);
        }
        let cpu1 = process_cpu_s();
        let wall1 = now_ns();
        let ticks1 = cpu_ticks(&sys, &pus);
        let outs = join(handles);
        Ok((
            outs,
            stop_at,
            t0,
            interrupted,
            (cpu1 - cpu0, (wall1 - wall0) as f64 / 1e9),
            ticks0.zip(ticks1),
        ))
    })?;
    let (outs, stop_at, t0, interrupted, (cpu_s, cpu_wall_s), ticks) = window;
    observer(Progress::Summarizing);
    let measured_s = (stop_at - t0) as f64 / 1e9;
    let completed = outs
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
    let in_window = |s: &&Sample| s.end_ns >= t0 && s.end_ns <= stop_at;

    let mut clients = Vec::new();
    let mut all = Vec::new();
    let mut route = Vec::new();
    let mut itinerary = Vec::new();
    let mut settled = 0u64;
    for (i, out) in outs.iter().enumerate() {
        let mut n = 0;
        for s in out.samples.iter().filter(in_window) {
            n += 1;
            settled += s.settled;
            all.push(s.latency_ns as f64);
            match s.kind {
                RequestKind::Route => route.push(s.latency_ns as f64),
                RequestKind::Itinerary => itinerary.push(s.latency_ns as f64),
            }
        }
        clients.push(ClientResult {
            pu: slots[i].pu,
            node: slots[i].node,
            copy: placed.copy_of_client[i],
            requests: n,
            requests_per_s: n as f64 / measured_s,
            cpu_s: out.cpu_s,
            cpu_utilization: if out.wall_s > 0.0 {
                out.cpu_s / out.wall_s
            } else {
                0.0
            },
        });
    }
    let requests = all.len() as u64;
    let requests_per_s = requests as f64 / measured_s;
    let slices = ((measured_s / 0.5).floor() as usize).clamp(1, 20);
    let slice_ns = (stop_at - t0) / slices as u64;
    let mut slice_counts = vec![0u64; slices];
    for out in &outs {
        for s in out.samples.iter().filter(in_window) {
            let k = (((s.end_ns - t0) / slice_ns.max(1)) as usize).min(slices - 1);
            slice_counts[k] += 1;
        }
    }
    let slice_s = slice_ns as f64 / 1e9;
    let slice_rates: Vec<f64> = slice_counts.iter().map(|&c| c as f64 / slice_s).collect();
    let seed = config.bootstrap_seed;
    let cpu_utilization = cpu_s / (cpu_wall_s * config.threads as f64);
    let (worker_cpus_busy, worker_cpus_steal) = match ticks {
        Some(((b0, s0, t0), (b1, s1, t1))) if t1 > t0 => {
            let dt = (t1 - t0) as f64;
            (
                Some((b1.saturating_sub(b0)) as f64 / dt),
                Some((s1.saturating_sub(s0)) as f64 / dt),
            )
        }
        _ => (None, None),
    };

    // Warnings about the quality of the figures.
    if interrupted {
        warnings.push(Warning::new(
            "interrupted",
            format!("stopped after {measured_s:.1} s of the {} s asked for; the figures cover only that part", config.duration_s),
        ).with_remedy("rerun for the full duration"));
    }
    let fewest = clients.iter().map(|c| c.requests).min().unwrap_or(0);
    if fewest < 20 {
        warnings.push(
            Warning::new(
                "few_requests",
                format!("a client completed only {fewest} requests in the window: rates and percentiles are coarse"),
            )
            .with_remedy("use a longer --duration or a smaller --graph-nodes"),
        );
    }
    if cpu_utilization < 0.9 {
        warnings.push(Warning::new(
            "cpu_underused",
            format!(
                "the clients used {:.0}% of their {} CPUs' time: the rest went to other processes, the hypervisor, or waiting (page faults, locks)",
                cpu_utilization * 100.0,
                config.threads
            ),
        ).with_remedy("stop other work on these CPUs (see the busy and steal fractions), or check `numalab doctor`"));
    }
    if let Some(steal) = worker_cpus_steal {
        if steal > 0.05 {
            warnings.push(Warning::new(
                "cpu_steal",
                format!(
                    "the hypervisor took {:.0}% of the clients' CPU time (steal)",
                    steal * 100.0
                ),
            ));
        }
    }
    if let Some(busy) = worker_cpus_busy {
        let others = busy - cpu_utilization;
        if others > 0.1 {
            warnings.push(
                Warning::new(
                    "cpu_contention",
                    format!(
                        "other processes used about {:.0}% of the clients' CPUs during the window",
                        others * 100.0
                    ),
                )
                .with_remedy("rerun on an idle machine, or compare only runs made side by side"),
            );
        }
    }

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
        requests_route: route.len() as u64,
        requests_itinerary: itinerary.len() as u64,
        requests_per_s,
        requests_per_s_per_thread: requests_per_s / config.threads as f64,
        requests_per_s_interval: if slices >= 3 {
            median_interval(&slice_rates)
        } else {
            None
        },
        requests_per_s_slices: slice_rates,
        slice_s,
        clients,
        latency: latency_summary(&all, seed),
        latency_route: latency_summary(&route, seed),
        latency_itinerary: latency_summary(&itinerary, seed),
        settled_per_request: if requests > 0 {
            settled as f64 / requests as f64
        } else {
            0.0
        },
        cpu_utilization,
        requests_per_cpu_s: (cpu_s > 0.0).then(|| requests as f64 / cpu_s),
        cpu_s,
        worker_cpus_busy,
        worker_cpus_steal,
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

/// Bytes of one client's search state for a graph of `nodes` nodes (distances of both
/// directions, touched lists, heaps), without allocating it.
pub fn state_bytes_estimate(nodes: u32) -> u64 {
    let n = nodes as u64;
    2 * (n * 4 + n * 4 + (n / 4 + 1024) * 8)
}
