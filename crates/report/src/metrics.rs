//! Comparable metrics extracted from the records of a bundle, one rule per record kind.
//!
//! A metric has a stable id that is the same on every machine, a group (the
//! perspective of a server evaluation: per server, per watt, single thread, per
//! thread, response time; then memory, core-to-core, placement, model), a direction
//! and its raw samples, so that `compare` can put two machines side by side with ratio
//! intervals. Thread counts differ between machines, so "all CPUs" is its own point:
//! 2 threads here and 160 there is exactly the per-server comparison.

use crate::load::Loaded;
use numalab_records::c2c::{MatrixRecord, PairRecord};
use numalab_records::harness::{PolicySummary, ScaleSummary, SweepSummary};
use numalab_records::model;
use numalab_records::workload::{LatencySummary, WorkloadRun};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One comparable quantity of a bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Stable id, the same on every machine (e.g. `mem.bandwidth.triad.all`).
    pub id: String,
    /// Group for the summary ("memory bandwidth", "latency", "throughput"...).
    pub group: String,
    /// Name for people.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Whether a larger value is better.
    pub higher_is_better: bool,
    /// Raw samples (repetitions); one sample gives a ratio without an interval.
    pub samples: Vec<f64>,
    /// A 95% interval of the value when the raw samples are not kept (response-time
    /// percentiles): the ratio then gets the conservative interval
    /// [low_b / high_a, high_b / low_a].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<(f64, f64)>,
    /// The parameters the figure depends on that a user or mode chose (e.g. "8192
    /// pages"): figures with different setups are never compared under one label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
}

impl Metric {
    /// A metric from its samples.
    pub fn new(
        id: &str,
        group: &str,
        name: &str,
        unit: &str,
        higher_is_better: bool,
        samples: Vec<f64>,
    ) -> Self {
        Metric {
            id: id.into(),
            group: group.into(),
            name: name.into(),
            unit: unit.into(),
            higher_is_better,
            samples,
            bounds: None,
            setup: None,
        }
    }

    /// The name with the setup, for tables of figures ("memcpy of 64 KiB pages
    /// (same-node baseline), 2048 pages").
    pub fn label(&self) -> String {
        match &self.setup {
            Some(s) => format!("{}, {s}", self.name),
            None => self.name.clone(),
        }
    }

    /// The same metric with the parameters it depends on.
    pub fn with_setup(mut self, setup: impl Into<String>) -> Self {
        self.setup = Some(setup.into());
        self
    }
}

/// Per server: throughput with every CPU loaded.
pub const PER_SERVER: &str = "per server";
/// Per watt.
pub const PER_WATT: &str = "per watt";
/// One thread.
pub const SINGLE_THREAD: &str = "single thread";
/// Throughput per thread at a thread count.
pub const PER_THREAD: &str = "per thread";
/// Response times.
pub const RESPONSE: &str = "response time";
/// Core-to-core latency.
pub const C2C: &str = "core-to-core";
/// Memory placement policies of the user's program.
pub const PLACEMENT: &str = "placement";
/// Parameter sweeps.
pub const SWEEP: &str = "parameters";
/// Modeled figures.
pub const MODEL: &str = "model (modeled)";
/// Memory bandwidth.
pub const MEM_BW: &str = "memory bandwidth";
/// Memory latency.
pub const MEM_LAT: &str = "memory latency";
/// Page migration.
pub const MIGRATION: &str = "page migration";
/// Node power at the wall (BMC) during a measurement.
pub const POWER: &str = "node power";

fn short(cmd: &[String]) -> String {
    crate::shorten(&cmd.join(" "), 40)
}

/// The reference workload's complete runs (not cut short, at least one request).
pub(crate) fn complete_runs(l: &Loaded) -> Vec<WorkloadRun> {
    l.records_of::<WorkloadRun>()
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| !r.interrupted && r.requests > 0)
        .collect()
}

/// The measured pair latencies of a matrix, each pair once (the lower triangle; the
/// whole matrix when only the upper one holds values), taken out of the record: they
/// are gathered in the cells' own memory ([`SquareMatrix::into_pair_values`]), so a
/// 2,000-CPU matrix (32 MB) and its 1,999,000 pairs are never held side by side.
///
/// [`SquareMatrix::into_pair_values`]: numalab_records::c2c::SquareMatrix::into_pair_values
pub(crate) fn take_pair_values(m: &mut MatrixRecord) -> Vec<f64> {
    std::mem::take(&mut m.matrix_ns).into_pair_values()
}

fn percentile(
    id: &str,
    name: &str,
    l: &LatencySummary,
    pick: fn(&LatencySummary) -> &numalab_stats::Interval,
) -> Metric {
    let i = pick(l);
    let mut m = Metric::new(id, RESPONSE, name, "ms", false, vec![i.estimate / 1e6]);
    m.bounds = Some((i.low / 1e6, i.high / 1e6));
    m
}

/// The perspectives of a server evaluation (experiments.md A), in the order a
/// comparison reports them; then the other groups.
pub const ORDER: [&str; 13] = [
    PER_SERVER,
    PER_WATT,
    SINGLE_THREAD,
    PER_THREAD,
    RESPONSE,
    MEM_BW,
    MEM_LAT,
    C2C,
    MIGRATION,
    POWER,
    PLACEMENT,
    SWEEP,
    MODEL,
];

/// The five perspectives every server comparison should cover.
pub const PERSPECTIVES: [&str; 5] = [PER_SERVER, PER_WATT, SINGLE_THREAD, PER_THREAD, RESPONSE];

/// Every comparable metric of a bundle, grouped in [`ORDER`].
pub fn metrics(l: &Loaded) -> Vec<Metric> {
    metrics_until(l, &|| false).unwrap_or_default()
}

/// [`metrics`], asking `stop` between the kinds of record (a 2,000-CPU core-to-core
/// matrix alone takes a second to decode): `None` once it says so.
pub fn metrics_until(l: &Loaded, stop: &dyn Fn() -> bool) -> Option<Vec<Metric>> {
    let mut out = Vec::new();
    let kinds: [fn(&Loaded, &mut Vec<Metric>); 8] = [
        workload,
        workload_wall,
        wall_power,
        scale,
        c2c,
        mem,
        placement,
        models,
    ];
    for kind in kinds {
        if stop() {
            return None;
        }
        kind(l, &mut out);
    }
    // Ids are unique: the first occurrence wins (a resumed bundle never repeats keys,
    // but two studies of the same command could).
    let mut seen = std::collections::HashSet::new();
    out.retain(|m| seen.insert(m.id.clone()));
    let rank = |g: &str| ORDER.iter().position(|x| *x == g).unwrap_or(ORDER.len());
    out.sort_by_key(|m| rank(&m.group));
    (!stop()).then_some(out)
}

/// Requests per joule at the wall: the all-CPU run of each mode over the BMC's mean
/// power in its window (`power.bmc` samples taken during the run). A figure of its own,
/// beside the sensors' per-joule figure, so that two machines are compared on the
/// same source.
fn workload_wall(l: &Loaded, out: &mut Vec<Metric>) {
    let mut full: BTreeMap<String, (&numalab_schema::Record, WorkloadRun)> = BTreeMap::new();
    for (rec, r) in l.records_of::<WorkloadRun>() {
        if r.interrupted || r.requests == 0 || r.threads < 2 {
            continue;
        }
        let mode = r.mode.name().to_string();
        if full.get(&mode).is_none_or(|(_, b)| r.threads >= b.threads) {
            full.insert(mode, (rec, r));
        }
    }
    for (mode, (rec, r)) in full {
        let Some(w) = crate::power::wall_power(l, &rec.time_utc, r.measured_s) else {
            continue;
        };
        out.push(Metric::new(
            &format!("workload.{mode}.all_cpus.per_joule_wall"),
            PER_WATT,
            &format!(
                "requests per joule at the wall, all CPUs ({mode}; BMC: {}, {} sample(s))",
                w.source, w.samples
            ),
            "requests/J",
            true,
            vec![r.requests_per_s / w.watts],
        ));
    }
}

/// Node power at the wall during each measurement a BMC was sampled in (lower is
/// better for the same measurement: the `during` text is the figure's setup, so only
/// the same measurement is compared). In a fleet, a node that draws more than its
/// peers for the same work stands out here.
fn wall_power(l: &Loaded, out: &mut Vec<Metric>) {
    use numalab_records::bmc::BmcPowerRecord;
    for (rec, b) in l.records_of::<BmcPowerRecord>() {
        let watts: Vec<f64> = b
            .samples
            .iter()
            .map(|s| s.reading.watts)
            .filter(|w| w.is_finite() && *w > 0.0)
            .collect();
        if watts.is_empty() {
            continue;
        }
        let during = b.during.clone().unwrap_or_else(|| rec.key.clone());
        let mut m = Metric::new(
            &format!(
                "power.bmc.{}",
                rec.key.trim_start_matches("power/bmc/").replace('/', ".")
            ),
            POWER,
            &format!("node power at the wall during {during} (BMC)"),
            "W",
            false,
            watts,
        );
        m.setup = Some(during);
        out.push(m);
    }
}

fn workload(l: &Loaded, out: &mut Vec<Metric>) {
    let runs = complete_runs(l);
    let mut by_mode: BTreeMap<&str, Vec<&WorkloadRun>> = BTreeMap::new();
    for r in &runs {
        by_mode.entry(r.mode.name()).or_default().push(r);
    }
    for (mode, mut of) in by_mode {
        of.sort_by_key(|r| r.threads);
        let samples = |r: &WorkloadRun| -> Vec<f64> {
            if r.requests_per_s_slices.is_empty() {
                vec![r.requests_per_s]
            } else {
                r.requests_per_s_slices.clone()
            }
        };
        let per_thread = |r: &WorkloadRun| -> Vec<f64> {
            samples(r).iter().map(|v| v / r.threads as f64).collect()
        };
        let id = |what: &str| format!("workload.{mode}.{what}");
        if let Some(one) = of.iter().find(|r| r.threads == 1) {
            out.push(Metric::new(
                &id("single_thread"),
                SINGLE_THREAD,
                &format!("reference workload, 1 thread ({mode})"),
                "requests/s",
                true,
                samples(one),
            ));
            if let Some(lat) = &one.latency {
                out.push(percentile(
                    &id("single_thread.p50"),
                    &format!("response p50, 1 thread ({mode})"),
                    lat,
                    |l| &l.p50_ns,
                ));
                out.push(percentile(
                    &id("single_thread.p99"),
                    &format!("response p99, 1 thread ({mode})"),
                    lat,
                    |l| &l.p99_ns,
                ));
            }
        }
        let Some(full) = of.last() else { continue };
        if full.threads > 1 {
            out.push(Metric::new(
                &id("all_cpus"),
                PER_SERVER,
                &format!("reference workload, all CPUs ({mode})"),
                "requests/s",
                true,
                samples(full),
            ));
            out.push(Metric::new(
                &id("all_cpus.per_thread"),
                PER_THREAD,
                &format!("per thread, all CPUs ({mode})"),
                "requests/s",
                true,
                per_thread(full),
            ));
            if let Some(lat) = &full.latency {
                out.push(percentile(
                    &id("all_cpus.p50"),
                    &format!("response p50, all CPUs ({mode})"),
                    lat,
                    |l| &l.p50_ns,
                ));
                out.push(percentile(
                    &id("all_cpus.p99"),
                    &format!("response p99, all CPUs ({mode})"),
                    lat,
                    |l| &l.p99_ns,
                ));
            }
        }
        if let Some(j) = full.requests_per_joule {
            out.push(Metric::new(
                &id("all_cpus.per_joule"),
                PER_WATT,
                &format!(
                    "requests per joule, all CPUs ({mode}; {})",
                    full.power_covers.as_deref().unwrap_or("power sensors")
                ),
                "requests/J",
                true,
                vec![j],
            ));
        }
        for r in of.iter().filter(|r| r.threads > 1) {
            out.push(Metric::new(
                &id(&format!("t{}.per_thread", r.threads)),
                PER_THREAD,
                &format!("per thread at {} threads ({mode})", r.threads),
                "requests/s",
                true,
                per_thread(r),
            ));
        }
    }
}

fn scale(l: &Loaded, out: &mut Vec<Metric>) {
    for (_, s) in l.records_of::<ScaleSummary>() {
        let c = format!("{} ({})", short(&s.command), s.placement);
        let id = |what: &str| format!("scale.{}.{}.{what}", s.command.join(" "), s.placement);
        let unit = s.throughput_unit.clone();
        let ok: Vec<_> = s
            .points
            .iter()
            .filter(|p| !p.stats.throughput_values.is_empty())
            .collect();
        if let Some(one) = ok.iter().find(|p| p.threads == 1) {
            out.push(Metric::new(
                &id("single_thread"),
                SINGLE_THREAD,
                &format!("{c}, 1 thread"),
                &unit,
                true,
                one.stats.throughput_values.clone(),
            ));
        }
        if let Some(full) = ok.last().filter(|p| p.threads > 1) {
            out.push(Metric::new(
                &id("all_cpus"),
                PER_SERVER,
                &format!("{c}, largest thread count"),
                &unit,
                true,
                full.stats.throughput_values.clone(),
            ));
            out.push(Metric::new(
                &id("all_cpus.per_thread"),
                PER_THREAD,
                &format!("{c}, per thread at the largest count"),
                &unit,
                true,
                full.stats
                    .throughput_values
                    .iter()
                    .map(|v| v / full.threads as f64)
                    .collect(),
            ));
            if let Some(j) = full.stats.work_per_joule {
                out.push(Metric::new(
                    &id("all_cpus.per_joule"),
                    PER_WATT,
                    &format!(
                        "{c}, work per joule ({})",
                        full.stats
                            .power_covers
                            .as_deref()
                            .unwrap_or("power sensors")
                    ),
                    &format!("({unit}) / W"),
                    true,
                    vec![j],
                ));
            }
        }
        for p in ok.iter().filter(|p| p.threads > 1) {
            out.push(Metric::new(
                &id(&format!("t{}.per_thread", p.threads)),
                PER_THREAD,
                &format!("{c}, per thread at {} threads", p.threads),
                &unit,
                true,
                p.stats
                    .throughput_values
                    .iter()
                    .map(|v| v / p.threads as f64)
                    .collect(),
            ));
        }
    }
}

fn c2c(l: &Loaded, out: &mut Vec<Metric>) {
    let pairs: Vec<PairRecord> = l
        .records_of::<PairRecord>()
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    for (_, mut m) in l.iter_of::<MatrixRecord>() {
        let vals = take_pair_values(&mut m);
        if vals.is_empty() {
            continue;
        }
        let n = vals.len();
        let closest = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let farthest = vals.iter().copied().fold(0.0, f64::max);
        // With few pairs, the samples of the pairs measured give the interval. Every
        // pair is kept however many (moved, not copied): a comparison's bootstrap bounds
        // its own work (numalab_stats::RESAMPLE_MAX_SAMPLES) and names it in the row.
        let samples = if n >= 3 {
            vals
        } else {
            let s: Vec<f64> = pairs
                .iter()
                .filter(|p| p.variant == m.variant)
                .flat_map(|p| p.samples_ns.iter().copied())
                .collect();
            if s.is_empty() {
                vals
            } else {
                s
            }
        };
        let v = &m.variant;
        out.push(Metric::new(
            &format!("c2c.{v}.median"),
            C2C,
            &format!("core-to-core latency, median pair ({v})"),
            "ns",
            false,
            samples,
        ));
        out.push(Metric::new(
            &format!("c2c.{v}.min"),
            C2C,
            &format!("core-to-core latency, closest pair ({v})"),
            "ns",
            false,
            vec![closest],
        ));
        if n > 1 {
            out.push(Metric::new(
                &format!("c2c.{v}.max"),
                C2C,
                &format!("core-to-core latency, farthest pair ({v})"),
                "ns",
                false,
                vec![farthest],
            ));
        }
    }
}

fn placement(l: &Loaded, out: &mut Vec<Metric>) {
    for (_, s) in l.records_of::<PolicySummary>() {
        for r in &s.results {
            if r.stats.throughput_values.is_empty() {
                continue;
            }
            out.push(Metric::new(
                &format!("policy.{}.{}", s.command.join(" "), r.policy.name()),
                PLACEMENT,
                &format!("{} under {}", short(&s.command), r.policy.name()),
                &s.throughput_unit,
                true,
                r.stats.throughput_values.clone(),
            ));
        }
    }
    for (_, s) in l.records_of::<SweepSummary>() {
        for p in &s.points {
            if p.stats.throughput_values.is_empty() {
                continue;
            }
            out.push(Metric::new(
                &format!("sweep.{}.{}", s.command.join(" "), p.label),
                SWEEP,
                &format!("{} with {}", short(&s.command), p.label),
                &s.throughput_unit,
                true,
                p.stats.throughput_values.clone(),
            ));
        }
    }
}

fn models(l: &Loaded, out: &mut Vec<Metric>) {
    for (_, t) in l.records_of::<model::StreamTriad>() {
        out.push(Metric::new(
            &format!(
                "model.triad.{}.cores{}.node{}",
                t.engine,
                t.cores.len(),
                t.data_node
            ),
            MODEL,
            &format!(
                "triad, {} cores, data on node {} ({}, {})",
                t.cores.len(),
                t.data_node,
                t.engine,
                t.preset
            ),
            "GB/s",
            true,
            vec![t.bandwidth_gbps],
        ));
    }
    for (_, h) in l.records_of::<model::LatencyHeatmap>() {
        out.push(Metric::new(
            &format!("model.latency.{}.{}", h.engine, h.target),
            MODEL,
            &format!("mean latency to {} ({}, {})", h.target, h.engine, h.preset),
            "ns",
            false,
            vec![h.mean_ns],
        ));
    }
    for (_, p) in l.records_of::<model::Policy>() {
        out.push(Metric::new(
            &format!(
                "model.policy.{}.{}.{}",
                p.engine, p.configuration, p.application
            ),
            MODEL,
            &format!(
                "{} application on {} ({}, {})",
                p.application, p.configuration, p.engine, p.preset
            ),
            "GB/s",
            true,
            vec![p.bandwidth_gbps],
        ));
    }
    for (_, t) in l.records_of::<model::Traffic>() {
        out.push(Metric::new(
            &format!("model.traffic.{}.{}", t.engine, t.pattern),
            MODEL,
            &format!(
                "{} traffic saturation ({}, {})",
                t.pattern, t.engine, t.preset
            ),
            "packets/stop/cycle",
            true,
            vec![t.saturation_rate],
        ));
    }
}

/// Samples of several cells: their medians when there are 3 or more cells (the spread
/// between node pairs), else every raw sample of the few there are.
fn pooled(cells: &[(f64, Vec<f64>)]) -> Vec<f64> {
    if cells.len() >= 3 {
        cells.iter().map(|(m, _)| *m).collect()
    } else {
        cells.iter().flat_map(|(_, s)| s.iter().copied()).collect()
    }
}

/// Memory figures: bandwidth, idle and loaded latency, page migration (in this order).
fn mem(l: &Loaded, out: &mut Vec<Metric>) {
    mem_bandwidth(l, out);
    mem_latency(l, out);
    mem_loaded(l, out);
    mem_migrate(l, out);
}

/// Bandwidth per kernel: one thread, all threads, and node pairs local and remote.
fn mem_bandwidth(l: &Loaded, out: &mut Vec<Metric>) {
    use crate::facts::round_gbps;
    use numalab_records::mem::BandwidthRecord;
    let bw: Vec<BandwidthRecord> = l
        .records_of::<BandwidthRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let mut kernels: Vec<String> = Vec::new();
    for r in &bw {
        if !kernels.contains(&r.kernel.name()) {
            kernels.push(r.kernel.name());
        }
    }
    for k in &kernels {
        let sweep: Vec<&BandwidthRecord> = bw
            .iter()
            .filter(|r| r.matrix.is_none() && r.kernel.name() == *k)
            .collect();
        if let Some(one) = sweep.iter().find(|r| r.threads == 1) {
            out.push(Metric::new(
                &format!("mem.bandwidth.{k}.t1"),
                MEM_BW,
                &format!("memory bandwidth, 1 thread ({k})"),
                "GB/s",
                true,
                round_gbps(one),
            ));
        }
        if let Some(all) = sweep
            .iter()
            .filter(|r| r.threads > 1)
            .max_by_key(|r| r.threads)
        {
            out.push(Metric::new(
                &format!("mem.bandwidth.{k}.all"),
                MEM_BW,
                &format!("memory bandwidth, all threads ({k})"),
                "GB/s",
                true,
                round_gbps(all),
            ));
        }
        for (what, local) in [("local", true), ("remote", false)] {
            let cells: Vec<(f64, Vec<f64>)> = bw
                .iter()
                .filter(|r| r.kernel.name() == *k)
                .filter(|r| {
                    r.matrix
                        .is_some_and(|m| (m.cpu_node == m.mem_node) == local)
                })
                .map(|r| (r.bandwidth_gbps.median, round_gbps(r)))
                .collect();
            if !cells.is_empty() {
                out.push(Metric::new(
                    &format!("mem.bandwidth.{k}.{what}"),
                    MEM_BW,
                    &format!("{what} bandwidth, one node's threads ({k})"),
                    "GB/s",
                    true,
                    pooled(&cells),
                ));
            }
        }
    }
}

/// Idle latency: the curve's largest working set, the node matrix's local and remote
/// pairs of the headline kind, and the local pairs on base pages beside it.
fn mem_latency(l: &Loaded, out: &mut Vec<Metric>) {
    use numalab_records::mem::latency::LatencyRecord;
    let lat: Vec<LatencyRecord> = l
        .records_of::<LatencyRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    for r in lat.iter().filter(|r| r.matrix.is_none()) {
        if let Some(p) = r.points.last() {
            let pages = r.pages.requested.name();
            // The order, pages and working set make the figure: figures of two bundles
            // that differ in any of them are not comparable.
            out.push(
                Metric::new(
                    &format!("mem.latency.curve.{pages}.largest"),
                    MEM_LAT,
                    "latency curve, largest working set",
                    "ns",
                    false,
                    p.sample_ns.clone(),
                )
                .with_setup(crate::facts::latency_kind_text(
                    &r.kind(),
                    p.working_set_bytes,
                )),
            );
        }
    }
    // Idle memory latency of the node matrix: the headline kind (huge pages where
    // obtained), then the local pairs on base pages when measured beside it.
    let headline = crate::facts::headline_matrix(&lat);
    // "memory latency" only for what is: random over a working set past the LLC.
    let memory = |recs: &[&LatencyRecord]| {
        recs.iter().all(|r| {
            r.points
                .first()
                .is_some_and(|p| r.kind().is_memory(p.working_set_bytes))
        })
    };
    let cells_of =
        |recs: &[&LatencyRecord], local: bool| -> (Vec<(f64, Vec<f64>)>, Option<String>) {
            let of: Vec<&&LatencyRecord> = recs
                .iter()
                .filter(|r| {
                    r.matrix
                        .is_some_and(|m| (m.cpu_node == m.mem_node) == local)
                })
                .collect();
            let setup = of.first().and_then(|r| {
                Some(crate::facts::latency_kind_text(
                    &r.kind(),
                    r.points.first()?.working_set_bytes,
                ))
            });
            let cells = of
                .iter()
                .filter_map(|r| {
                    let p = r.points.first()?;
                    Some((p.latency_ns.median, p.sample_ns.clone()))
                })
                .collect();
            (cells, setup)
        };
    for (what, local) in [("local", true), ("remote", false)] {
        let (cells, setup) = cells_of(&headline, local);
        if !cells.is_empty() {
            let m = Metric::new(
                &format!("mem.latency.{what}"),
                MEM_LAT,
                &if memory(&headline) {
                    format!("idle {what} memory latency")
                } else {
                    format!("idle {what} latency, node matrix")
                },
                "ns",
                false,
                pooled(&cells),
            );
            out.push(match setup {
                Some(s) => m.with_setup(s),
                None => m,
            });
        }
    }
    let base: Vec<&LatencyRecord> = lat
        .iter()
        .filter(|r| r.matrix.is_some() && r.pages.obtained == "base")
        .filter(|r| !headline.iter().any(|h| std::ptr::eq(*h, *r)))
        .collect();
    let (cells, setup) = cells_of(&base, true);
    if !cells.is_empty() {
        let m = Metric::new(
            "mem.latency.local.base",
            MEM_LAT,
            if memory(&base) {
                "idle local memory latency"
            } else {
                "idle local latency, node matrix"
            },
            "ns",
            false,
            pooled(&cells),
        );
        out.push(match setup {
            Some(s) => m.with_setup(s),
            None => m,
        });
    }
}

/// Loaded latency: the latency at the other CPUs' full traffic, and that traffic.
fn mem_loaded(l: &Loaded, out: &mut Vec<Metric>) {
    use numalab_records::mem::LoadedRecord;
    for (_, r) in l.records_of::<LoadedRecord>() {
        if let Some(p) = r.points.last().filter(|p| p.delay_ns.is_some()) {
            out.push(
                Metric::new(
                    "mem.loaded.saturated",
                    MEM_LAT,
                    "latency with the other CPUs at full traffic",
                    "ns",
                    false,
                    p.sample_ns.clone(),
                )
                .with_setup(crate::facts::latency_kind_text(&r.kind(), r.chase_bytes)),
            );
            out.push(Metric::new(
                "mem.loaded.traffic",
                MEM_BW,
                "traffic of the other CPUs at full load",
                "GB/s",
                true,
                vec![p.traffic_gbps],
            ));
        }
    }
}

/// Page migration throughput per pair, method and unit, at its largest page count.
fn mem_migrate(l: &Loaded, out: &mut Vec<Metric>) {
    use numalab_records::mem::MigrateRecord;
    let mig: Vec<MigrateRecord> = l
        .records_of::<MigrateRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let mut done: Vec<(String, String, u64)> = Vec::new();
    for r in &mig {
        for m in &r.methods {
            let key = (
                r.pair_role.clone(),
                m.method.name().to_string(),
                r.unit_bytes,
            );
            if m.throughput_gbps.is_none() || done.contains(&key) {
                continue;
            }
            done.push(key);
            // The largest page count of this pair, method and unit.
            let Some(big) = mig
                .iter()
                .filter(|x| x.pair_role == r.pair_role && x.unit_bytes == r.unit_bytes)
                .max_by_key(|x| x.pages)
            else {
                continue;
            };
            let Some(bm) = big.methods.iter().find(|x| x.method == m.method) else {
                continue;
            };
            let samples: Vec<f64> = bm
                .sample_ns
                .iter()
                .filter(|ns| **ns > 0.0)
                .map(|ns| big.bytes as f64 / ns)
                .collect();
            if samples.is_empty() {
                continue;
            }
            // The page count changes the figure (fixed costs per call): it is the setup,
            // not part of the name, so runs with other counts are "not comparable".
            out.push(
                Metric::new(
                    &format!(
                        "mem.migrate.{}.{}.{}",
                        crate::anchors::slug(&r.pair_role),
                        m.method.name(),
                        r.unit_bytes
                    ),
                    MIGRATION,
                    &format!(
                        "{} of {} pages ({})",
                        m.method.name(),
                        numalab_schema::units::bytes(r.unit_bytes),
                        r.pair_role
                    ),
                    "GB/s",
                    true,
                    samples,
                )
                .with_setup(format!("{} pages", big.pages)),
            );
        }
    }
}
