//! From what the clients recorded to the run's figures: requests and response times in
//! the window, per client and per time slice, CPU use, and the warnings about their
//! quality.

use super::window::Window;
use super::*;
use crate::placement::Placement;

/// The requests that completed in the window, counted and sorted.
pub(super) struct Tally {
    /// Per client.
    pub(super) clients: Vec<ClientResult>,
    /// Every response time, ns.
    pub(super) all: Vec<f64>,
    /// Route queries' response times, ns.
    pub(super) route: Vec<f64>,
    /// Itinerary plans' response times, ns.
    pub(super) itinerary: Vec<f64>,
    /// Search nodes settled, summed over the requests.
    pub(super) settled: u64,
    /// How many time slices the window was cut into.
    pub(super) slices: usize,
    /// One slice's length, seconds.
    pub(super) slice_s: f64,
    /// Requests/s in each slice.
    pub(super) slice_rates: Vec<f64>,
}

/// How the clients' CPUs were used during the window.
pub(super) struct CpuUse {
    /// The clients' CPU time / (wall time x threads).
    pub(super) utilization: f64,
    /// Busy fraction of the worker CPUs (/proc/stat), if read.
    pub(super) busy: Option<f64>,
    /// Steal fraction of the worker CPUs, if read.
    pub(super) steal: Option<f64>,
}

/// Counts the requests that completed within the window, per client, kind and slice.
pub(super) fn tally(w: &Window, slots: &[Slot], placed: &Placement, measured_s: f64) -> Tally {
    let (t0, stop_at) = (w.t0, w.stop_at);
    let in_window = |s: &&Sample| s.end_ns >= t0 && s.end_ns <= stop_at;
    let mut clients = Vec::new();
    let mut all = Vec::new();
    let mut route = Vec::new();
    let mut itinerary = Vec::new();
    let mut settled = 0u64;
    for (i, out) in w.outs.iter().enumerate() {
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
    let slices = ((measured_s / 0.5).floor() as usize).clamp(1, 20);
    let slice_ns = (stop_at - t0) / slices as u64;
    let mut slice_counts = vec![0u64; slices];
    for out in &w.outs {
        for s in out.samples.iter().filter(in_window) {
            let k = (((s.end_ns - t0) / slice_ns.max(1)) as usize).min(slices - 1);
            slice_counts[k] += 1;
        }
    }
    let slice_s = slice_ns as f64 / 1e9;
    let slice_rates: Vec<f64> = slice_counts.iter().map(|&c| c as f64 / slice_s).collect();
    Tally {
        clients,
        all,
        route,
        itinerary,
        settled,
        slices,
        slice_s,
        slice_rates,
    }
}

/// The clients' CPU utilisation and the worker CPUs' busy and steal fractions.
pub(super) fn cpu_use(w: &Window, config: &RunConfig) -> CpuUse {
    let utilization = w.cpu_s / (w.cpu_wall_s * config.threads as f64);
    let (busy, steal) = match w.ticks {
        Some(((b0, s0, t0), (b1, s1, t1))) if t1 > t0 => {
            let dt = (t1 - t0) as f64;
            (
                Some((b1.saturating_sub(b0)) as f64 / dt),
                Some((s1.saturating_sub(s0)) as f64 / dt),
            )
        }
        _ => (None, None),
    };
    CpuUse {
        utilization,
        busy,
        steal,
    }
}

/// Warnings about the quality of the figures: interrupted, few requests, CPUs not fully
/// the clients'.
pub(super) fn quality_warnings(
    warnings: &mut Vec<Warning>,
    config: &RunConfig,
    interrupted: bool,
    measured_s: f64,
    t: &Tally,
    cpu: &CpuUse,
) {
    if interrupted {
        warnings.push(Warning::new(
            "interrupted",
            format!("stopped after {measured_s:.1} s of the {} s asked for; the figures cover only that part", config.duration_s),
        ).with_remedy("rerun for the full duration"));
    }
    let fewest = t.clients.iter().map(|c| c.requests).min().unwrap_or(0);
    if fewest < 20 {
        warnings.push(
            Warning::new(
                "few_requests",
                format!("a client completed only {fewest} requests in the window: rates and percentiles are coarse"),
            )
            .with_remedy("use a longer --duration or a smaller --graph-nodes"),
        );
    }
    warnings.extend(cpu_warnings(
        config.threads,
        cpu.utilization,
        cpu.busy,
        cpu.steal,
    ));
}

/// The warnings on how the clients' `threads` CPUs were used in the window: the clients'
/// share of their time (`utilization`, `cpu_underused` below 90%), the CPUs' `steal`
/// (`cpu_steal` above 5%) and other processes' share (`busy` less the clients',
/// `cpu_contention` above 10%). A sweep of many runs gives them once per run, each with
/// its figure: the terminal folds them ([`numalab_schema::fold`]), the worst first.
pub fn cpu_warnings(
    threads: usize,
    utilization: f64,
    busy: Option<f64>,
    steal: Option<f64>,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let cpu_utilization = utilization;
    if cpu_utilization < 0.9 {
        warnings.push(Warning::new(
            "cpu_underused",
            format!(
                "the clients used only {:.0}% of their {threads} CPUs' time: the rest went to other processes, the hypervisor, or waiting (page faults, locks)",
                cpu_utilization * 100.0,
            ),
        ).with_remedy("stop other work on these CPUs (see the busy and steal fractions), or check `numalab doctor`"));
    }
    if let Some(steal) = steal {
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
    if let Some(busy) = busy {
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
    warnings
}
