//! The typed records the model writes, in the results schema measurements use (flagged
//! `Origin::Modeled`), so `report` and `compare` put a modeled machine beside a measured
//! one. Units are in field names; cycles are NoC cycles.

use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// What the simulation cost, for speed figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SimStats {
    /// Cycles simulated (warm-up, measurement and drain).
    pub cycles: u64,
    /// Routers (stops) simulated.
    pub routers: u64,
    /// Events processed.
    pub events: u64,
    /// Whether every measured packet was delivered (synthetic traffic).
    pub drained: bool,
}

/// Per-virtual-network figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VnFigures {
    /// "request", "snoop", "response", "data".
    pub vn: String,
    /// Packets per cycle on this network (whole machine).
    pub packets_per_cycle: f64,
    /// Mean cycles a packet waits for links and ports (queueing only).
    pub queueing_cycles: f64,
    /// Mean packet latency, cycles (injection to ejection).
    pub latency_cycles: f64,
    /// Utilization of its busiest link.
    pub max_link_utilization: f64,
    /// Fraction of this network's packets by hop count (index = hops). Empty in records
    /// written before it was reported.
    #[serde(default)]
    pub hop_histogram: Vec<f64>,
    /// Packets per cycle on this network from each source NUMA node (row: node of the
    /// sending stop) to each destination node (column: node of the receiving stop).
    /// Empty in records written before it was reported.
    #[serde(default)]
    pub node_packets_per_cycle: Vec<Vec<f64>>,
}

/// B1: STREAM triad with threads on a set of cores and the arrays on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamTriad {
    /// Preset as given (`name:variants`, overrides listed in the envelope's config).
    pub preset: String,
    /// "analytic" or "des".
    pub engine: String,
    /// Cores running the threads.
    pub cores: Vec<usize>,
    /// NUMA node holding the arrays.
    pub data_node: u32,
    /// Technology of that node's memory.
    pub memory_kind: String,
    /// Triad bandwidth (2 reads + 1 write per line, no write-allocate).
    pub bandwidth_gbps: f64,
    /// Peak bandwidth of the node's memory controllers.
    pub peak_gbps: f64,
    /// `bandwidth_gbps / peak_gbps * 100`.
    pub percent_of_peak: f64,
    /// Mean request latency as a core sees it.
    pub request_latency_ns: f64,
    /// Mean packet latency (all networks).
    pub packet_latency_cycles: f64,
    /// Mean hops per packet.
    pub mean_hops: f64,
    /// Fraction of packets by hop count.
    pub hop_histogram: Vec<f64>,
    /// Per virtual network: rate, queueing, latency, busiest link.
    pub vns: Vec<VnFigures>,
    /// SLC hit ratio used (0 when the arrays exceed the SLC the node can reach).
    pub slc_hit_ratio: f64,
    /// Accesses per cycle at each memory controller.
    pub mc_accesses_per_cycle: Vec<f64>,
    /// Whether a resource is at capacity (the figures are a bound).
    pub saturated: bool,
    /// Discrete-event cost, when simulated.
    pub simulation: Option<SimStats>,
}
impl RecordKind for StreamTriad {
    const KIND: &'static str = "model.stream_triad";
}

/// One core of a latency heatmap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeatCell {
    /// Core (OS number).
    pub core: usize,
    /// Socket.
    pub socket: u32,
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// Latency in NoC cycles.
    pub latency_cycles: f64,
    /// Latency in ns.
    pub latency_ns: f64,
}

/// C1: latency from every core to a line homed at one slice or served by one controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyHeatmap {
    /// Preset.
    pub preset: String,
    /// Engine.
    pub engine: String,
    /// "slice:N" or "mc:N".
    pub target: String,
    /// Target stop `[socket, x, y]`.
    pub target_stop: [u32; 3],
    /// Home slice of the line.
    pub home_slice: usize,
    /// Every core.
    pub cells: Vec<HeatCell>,
    /// Fastest core.
    pub min_cycles: f64,
    /// Slowest core.
    pub max_cycles: f64,
    /// `max - min`: what the "uniform" average hides.
    pub spread_cycles: f64,
    /// Mean over cores, ns.
    pub mean_ns: f64,
    /// Spread in ns.
    pub spread_ns: f64,
}
impl RecordKind for LatencyHeatmap {
    const KIND: &'static str = "model.latency_heatmap";
}

/// One point of a latency-versus-load curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficPoint {
    /// Offered packets per stop per cycle.
    pub offered: f64,
    /// Delivered packets per stop per cycle.
    pub accepted: f64,
    /// Mean packet latency, cycles.
    pub latency_cycles: f64,
    /// Busiest link's utilization.
    pub max_link_utilization: f64,
    /// Below saturation: delivered everything, latency under 3x zero-load.
    pub stable: bool,
}

/// Synthetic traffic: latency-versus-load curve and saturation throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Traffic {
    /// Preset.
    pub preset: String,
    /// Engine.
    pub engine: String,
    /// "uniform", "hotspot", "transpose".
    pub pattern: String,
    /// Flits per packet.
    pub flits: u32,
    /// The curve.
    pub points: Vec<TrafficPoint>,
    /// Zero-load latency, cycles.
    pub zero_load_latency_cycles: f64,
    /// Mean hops.
    pub mean_hops: f64,
    /// Offered load at which the busiest link reaches 100% (analytic, exact).
    pub saturation_rate: f64,
    /// Input-queued routers: the offered load at which the analytic model's busiest
    /// resource reaches 100% once input ports lose cycles in switch allocation (below
    /// `saturation_rate`; absent for output-queued routers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_saturation_rate: Option<f64>,
    /// Highest offered load of the curve that was stable (this engine).
    pub saturation_observed: Option<f64>,
    /// `4/k` on a square k x k mesh under uniform traffic (machines.md), for comparison.
    pub bisection_bound: Option<f64>,
    /// Discrete-event cost, summed over points.
    pub simulation: Option<SimStats>,
}
impl RecordKind for Traffic {
    const KIND: &'static str = "model.traffic";
}

/// B5: one NUMA/SLC configuration under the same application traffic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Preset with the configuration's variant.
    pub preset: String,
    /// Engine.
    pub engine: String,
    /// The variant (configuration) name.
    pub configuration: String,
    /// "balanced" (each thread's data on its node), "main-thread" (all data first
    /// touched by one thread, on node 0) or "interleave" (pages spread round-robin over
    /// all nodes, `numactl --interleave=all`).
    pub application: String,
    /// NUMA nodes of the configuration.
    pub numa_nodes: usize,
    /// Working set, bytes.
    pub working_set_bytes: u64,
    /// SLC hit ratio (capacity model: reachable slices over working set).
    pub slc_hit_ratio: f64,
    /// Mean hops per packet.
    pub mean_hops: f64,
    /// Fraction of memory accesses at each controller of the main memory (and of the
    /// memory-side cache, if any), in controller order.
    pub mc_share: Vec<f64>,
    /// Busiest controller's share over the mean share (1 = perfectly balanced).
    pub mc_imbalance: f64,
    /// Line requests served per second times the line size (SLC hits included).
    pub bandwidth_gbps: f64,
    /// Mean request latency.
    pub request_latency_ns: f64,
    /// Per virtual network (with each network's hop distribution and node x node
    /// packet matrix).
    pub vns: Vec<VnFigures>,
    /// A resource at capacity.
    pub saturated: bool,
    /// Packets per cycle from each source NUMA node (row: node of the sending stop) to
    /// each destination node (column: node of the receiving stop), all virtual networks.
    #[serde(default)]
    pub node_packets_per_cycle: Vec<Vec<f64>>,
    /// NUMA node of each controller of `mc_share` (the node of its stop).
    #[serde(default)]
    pub mc_node: Vec<u32>,
    /// Accesses per cycle at each controller of `mc_share` from cores of its own node.
    #[serde(default)]
    pub mc_local_accesses_per_cycle: Vec<f64>,
    /// Accesses per cycle at each controller of `mc_share` from cores of other nodes.
    #[serde(default)]
    pub mc_remote_accesses_per_cycle: Vec<f64>,
    /// Local accesses over all accesses at those controllers (0 without accesses).
    #[serde(default)]
    pub local_share: f64,
}
impl RecordKind for Policy {
    const KIND: &'static str = "model.policy";
}

/// One metric in both engines (and, for synthetic traffic, in the discrete-event engine
/// with the other router).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckMetric {
    /// Metric name.
    pub name: String,
    /// Analytic value (the configured router's model).
    pub analytic: f64,
    /// Discrete-event value (the configured router).
    pub des: f64,
    /// `(des - analytic) / analytic`.
    pub relative_difference: f64,
    /// Discrete-event value with the other router ([`Check::other_router`]), where run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_router_des: Option<f64>,
    /// `(other_router_des - des) / des`: the other router against the configured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_router_difference: Option<f64>,
}

/// `--engine check`: the same experiment point in both engines.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Preset.
    pub preset: String,
    /// Experiment.
    pub experiment: String,
    /// Which point (data node, offered load, configuration...).
    pub point: String,
    /// The metrics.
    pub metrics: Vec<CheckMetric>,
    /// The configured router (`noc.router`) of the `analytic` and `des` values, where
    /// the check says (synthetic traffic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<String>,
    /// The router of `other_router_des`: the discrete-event engine run again with the
    /// other router (synthetic traffic), where the spec can model it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_router: Option<String>,
    /// Engines or routers not run, each with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
}
impl RecordKind for Check {
    const KIND: &'static str = "model.check";
}

impl CheckMetric {
    /// A metric from both values.
    pub fn new(name: &str, analytic: f64, des: f64) -> Self {
        CheckMetric {
            name: name.into(),
            analytic,
            des,
            relative_difference: if analytic != 0.0 {
                (des - analytic) / analytic
            } else {
                0.0
            },
            ..Default::default()
        }
    }

    /// The same metric with the other router's discrete-event value beside it.
    pub fn with_other_router(mut self, other: f64) -> Self {
        self.other_router_des = Some(other);
        self.other_router_difference = Some(if self.des != 0.0 {
            (other - self.des) / self.des
        } else {
            0.0
        });
        self
    }
}

/// One free parameter of a calibration (`model.calibration`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibratedParameter {
    /// Preset key, e.g. `noc.router_cycles`, `memory.ddr.latency_ns`.
    pub key: String,
    /// Unit of the values ("cycles", "ns", "GB/s").
    pub unit: String,
    /// What it stands for, in words.
    pub meaning: String,
    /// Value in the base preset (the starting value).
    pub start: f64,
    /// Fitted value (unrounded); equal to `start` when not fitted.
    pub value: f64,
    /// Standard error of `value` from the residuals (None: not fitted, or as many
    /// figures as parameters so no residual is left to estimate it from).
    pub std_error: Option<f64>,
    /// Value written to the calibrated preset (integer keys rounded, negative clamped).
    pub saved: f64,
    /// "fitted", "not-identifiable" (figures depend on it only together with other
    /// parameters, or hardly at all), "no-data" (no figure depends on it) or
    /// "not-used" (the configured engines ignore it, e.g. `noc.router_cycles` with
    /// input-queued routers: no fitted value is reported).
    pub status: String,
    /// Why it was not fitted, or what limits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One measured figure set against the model (`model.calibration`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationFigure {
    /// "mem.latency" (idle, largest working set), "c2c" (core-to-core, mean of a node
    /// pair's cells) or "mem.bandwidth" (peak of a node on its own memory).
    pub kind: String,
    /// Node of the CPUs.
    pub cpu_node: u32,
    /// Node of the memory (c2c: node of the second CPU).
    pub mem_node: u32,
    /// "ns" or "GB/s".
    pub unit: String,
    /// Measured value.
    pub measured: f64,
    /// The base preset's value.
    pub modeled_before: f64,
    /// The calibrated preset's value.
    pub modeled: f64,
    /// `modeled - measured`.
    pub residual: f64,
    /// `residual / measured * 100`.
    pub residual_percent: f64,
    /// Keys of the records it comes from (bundle name: record key).
    pub sources: Vec<String>,
}

/// RMS residual of one kind of figure (`model.calibration`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRms {
    /// Figure kind, as in [`CalibrationFigure::kind`].
    pub kind: String,
    /// "ns" or "GB/s".
    pub unit: String,
    /// Figures of this kind.
    pub figures: usize,
    /// RMS of the base preset's residuals.
    pub rms_before: f64,
    /// RMS of the calibrated preset's residuals.
    pub rms: f64,
    /// RMS of the relative residuals, percent.
    pub rms_percent: f64,
}

/// `numalab model calibrate`: a preset's free parameters fitted to measurements of a
/// real machine, the residuals, and where the calibrated preset was saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Base preset as given (`name:variants` or a file).
    pub preset: String,
    /// `--set` overrides applied to the base.
    pub sets: Vec<String>,
    /// Bundles the figures come from, as given.
    pub bundles: Vec<String>,
    /// Free parameters, fitted or not.
    pub parameters: Vec<CalibratedParameter>,
    /// Every figure, measured against modeled.
    pub figures: Vec<CalibrationFigure>,
    /// RMS residual per figure kind.
    pub rms: Vec<CalibrationRms>,
    /// The `--set` overrides that turn the base into the calibrated preset.
    pub calibrated_sets: Vec<String>,
    /// Facts about the input: records skipped and why, how nodes were matched.
    pub notes: Vec<String>,
    /// Where the calibrated preset was written, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset_file: Option<String>,
}
impl RecordKind for Calibration {
    const KIND: &'static str = "model.calibration";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_records_written_before_the_node_figures_still_read() {
        // A model.policy record as written before the node x node matrix, the local and
        // remote accesses and the per-network hop distributions were reported.
        let old = r#"{"preset":"mesh:slc-all","engine":"analytic","configuration":"slc-all",
            "application":"balanced","numa_nodes":1,"working_set_bytes":268435456,
            "slc_hit_ratio":0.25,"mean_hops":2.6,"mc_share":[0.25,0.25,0.25,0.25],
            "mc_imbalance":1.0,"bandwidth_gbps":200.0,"request_latency_ns":70.0,
            "vns":[{"vn":"request","packets_per_cycle":1.0,"queueing_cycles":0.1,
            "latency_cycles":7.0,"max_link_utilization":0.2}],"saturated":false}"#;
        let p: Policy = serde_json::from_str(old).unwrap();
        assert!(p.node_packets_per_cycle.is_empty() && p.mc_node.is_empty());
        assert!(p.mc_local_accesses_per_cycle.is_empty());
        assert!(p.mc_remote_accesses_per_cycle.is_empty());
        assert_eq!(p.local_share, 0.0);
        assert!(p.vns[0].hop_histogram.is_empty());
        assert!(p.vns[0].node_packets_per_cycle.is_empty());
        // And the new fields survive a round trip.
        let mut q = p.clone();
        q.node_packets_per_cycle = vec![vec![0.5, 0.1], vec![0.1, 0.5]];
        q.mc_node = vec![0, 1];
        q.local_share = 0.8;
        q.vns[0].hop_histogram = vec![0.25, 0.75];
        let back: Policy = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!(back, q);
    }
}
