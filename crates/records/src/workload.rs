//! Records of the reference workload (`workload.run`): one measured run of the request
//! workload, with its road network, response times, clients, pages and power, and the
//! vocabulary it names (thread order, data placement mode, search parameters).

use numalab_schema::memory::PageKind;
use numalab_schema::RecordKind;
use numalab_stats::Interval;
use serde::{Deserialize, Serialize};

/// Where the graph's pages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One copy, built by one thread (on the first client's PU), default policy.
    SharedFirstTouch,
    /// One copy interleaved page by page over all NUMA nodes.
    SharedInterleaved,
    /// One copy per NUMA node running clients; each client reads its node's copy.
    Replicated,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 3] = [
        Mode::SharedFirstTouch,
        Mode::SharedInterleaved,
        Mode::Replicated,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::SharedFirstTouch => "shared-first-touch",
            Mode::SharedInterleaved => "shared-interleaved",
            Mode::Replicated => "replicated",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The order in which client threads take PUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuOrder {
    /// Fill a NUMA node's cores before moving to the next node.
    Compact,
    /// Deal cores to the NUMA nodes in turn.
    Scatter,
}

impl CpuOrder {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            CpuOrder::Compact => "compact",
            CpuOrder::Scatter => "scatter",
        }
    }
}

impl std::fmt::Display for CpuOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Parameters of the evolutionary search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EaParams {
    /// Tours per generation.
    pub population: usize,
    /// Generations.
    pub generations: usize,
}

impl Default for EaParams {
    fn default() -> Self {
        EaParams {
            population: 40,
            generations: 250,
        }
    }
}

/// Where a copy's pages were found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyReport {
    /// The NUMA node this copy is for (replicated), or None for a shared copy.
    pub for_node: Option<u32>,
    /// The memory policy set before first touch.
    pub policy: String,
    /// The PU of the thread that wrote the copy (first touch).
    pub built_on_pu: u32,
    /// Bytes of the copy.
    pub bytes: u64,
    /// Pages of the copy.
    pub pages: u64,
    /// Page size, bytes.
    pub page_bytes: u64,
    /// Pages found on each node, as the kernel reports them: `[node, pages]`.
    pub pages_per_node: Vec<(u32, u64)>,
    /// Pages not present (never touched or swapped out).
    pub not_present: u64,
    /// Nodes the pages should be on.
    pub expected_nodes: Vec<u32>,
    /// Fraction of present pages on the expected nodes (None when the kernel could not
    /// be asked: then nothing about the placement is claimed).
    pub fraction_on_expected: Option<f64>,
    /// The clients (by index) reading this copy.
    pub readers: Vec<usize>,
}

/// The road network used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphSummary {
    /// Seed.
    pub seed: u64,
    /// Nodes (intersections).
    pub nodes: u32,
    /// Streets (undirected edges).
    pub edges: u64,
    /// Grid width x height.
    pub width: u32,
    /// Grid height.
    pub height: u32,
    /// Mean degree.
    pub mean_degree: f64,
    /// Nodes by degree.
    pub degree_histogram: Vec<u64>,
    /// Median edge travel time, ms.
    pub weight_median_ms: u32,
    /// Bytes of one copy (CSR arrays).
    pub bytes: u64,
    /// Bytes per node of one copy.
    pub bytes_per_node: f64,
    /// FNV-1a hash of the arrays: equal on two machines = the same graph.
    pub fingerprint: String,
    /// Time to generate, seconds.
    pub generation_s: f64,
    /// Time to build and verify the copies, seconds.
    pub placement_s: f64,
}

/// Response times of a set of requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Requests.
    pub requests: u64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Median with its bootstrap interval, ns.
    pub p50_ns: Interval,
    /// 95th percentile, ns.
    pub p95_ns: Interval,
    /// 99th percentile, ns.
    pub p99_ns: Interval,
    /// Slowest, ns.
    pub max_ns: f64,
}

/// One client thread's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientResult {
    /// PU it was pinned to.
    pub pu: u32,
    /// NUMA node of that PU.
    pub node: u32,
    /// Index of the graph copy it read.
    pub copy: usize,
    /// Requests completed in the window.
    pub requests: u64,
    /// Its requests per second.
    pub requests_per_s: f64,
    /// CPU time it used from its first request in the window to its last, seconds.
    pub cpu_s: f64,
    /// That CPU time over the same wall time (1.0 = never descheduled).
    pub cpu_utilization: f64,
}

/// A power sensor's reading over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerReading {
    /// Sensor id.
    pub id: String,
    /// Its label.
    pub label: String,
    /// What it covers.
    pub covers: String,
    /// Mean power over the window, W (None when it could not be read).
    pub watts: Option<f64>,
    /// Readings taken (hwmon) or 2 (energy counters: start and end).
    pub readings: u32,
}

/// A temperature sensor over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemperatureReading {
    /// Sensor id.
    pub id: String,
    /// Its label.
    pub label: String,
    /// Highest reading, degrees C.
    pub max_c: f64,
    /// Mean reading, degrees C.
    pub mean_c: f64,
}

/// Placement summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySummary {
    /// NUMA nodes of the machine.
    pub numa_nodes: usize,
    /// True when the machine has one NUMA node, so the three modes place every page
    /// on the same node and cannot differ.
    pub modes_equivalent_here: bool,
    /// Page kind asked for.
    pub page_kind: PageKind,
    /// Each copy of the graph, with its pages per node as the kernel reports them.
    pub copies: Vec<CopyReport>,
    /// Bytes of search state per client (allocated on the client's node).
    pub state_bytes_per_client: u64,
}

/// `workload.run`: one measured run of the reference workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadRun {
    /// Client threads.
    pub threads: usize,
    /// Thread placement (`compact` or `scatter`).
    pub placement: CpuOrder,
    /// Data placement mode.
    pub mode: Mode,
    /// PUs of the clients, in order.
    pub pus: Vec<u32>,
    /// NUMA node of each client's PU.
    pub pu_nodes: Vec<u32>,
    /// Share of route queries asked for.
    pub route_share: f64,
    /// Evolutionary search parameters.
    pub ea: EaParams,
    /// The road network.
    pub graph: GraphSummary,
    /// Window asked for, seconds.
    pub duration_s: f64,
    /// Warm-up, seconds.
    pub warmup_s: f64,
    /// Window actually measured, seconds (shorter when interrupted).
    pub measured_s: f64,
    /// Requests completed in the window.
    pub requests: u64,
    /// Of which route queries.
    pub requests_route: u64,
    /// Of which itinerary plans.
    pub requests_itinerary: u64,
    /// Requests per second, all clients: requests / measured_s. The headline figure.
    pub requests_per_s: f64,
    /// Requests per second per client thread: requests_per_s / threads.
    pub requests_per_s_per_thread: f64,
    /// Requests per second in each time slice of the window.
    pub requests_per_s_slices: Vec<f64>,
    /// Length of a slice, seconds.
    pub slice_s: f64,
    /// Bootstrap interval of the median slice rate (None with fewer than 3 slices).
    pub requests_per_s_interval: Option<Interval>,
    /// Each client.
    pub clients: Vec<ClientResult>,
    /// Response times of all requests.
    pub latency: Option<LatencySummary>,
    /// Response times of route queries.
    pub latency_route: Option<LatencySummary>,
    /// Response times of itinerary plans.
    pub latency_itinerary: Option<LatencySummary>,
    /// Graph nodes settled per request, mean (the work per request; equal seeds give
    /// the same request streams on every machine).
    pub settled_per_request: f64,
    /// Process CPU time in the window / (window x threads).
    pub cpu_utilization: f64,
    /// Requests per CPU-second: requests / cpu_s. On a shared machine or a VM with
    /// steal time this is steadier than requests/s, but it hides waiting (it is not
    /// what a user sees).
    pub requests_per_cpu_s: Option<f64>,
    /// Process CPU time in the window, seconds.
    pub cpu_s: f64,
    /// Busy fraction of the clients' CPUs in the window, any process (/proc/stat).
    pub worker_cpus_busy: Option<f64>,
    /// Fraction of the clients' CPU time stolen by the hypervisor (/proc/stat).
    pub worker_cpus_steal: Option<f64>,
    /// Pages per NUMA node, all copies together: `[node, pages]`.
    pub pages_per_node: Vec<(u32, u64)>,
    /// Placement details.
    pub memory: MemorySummary,
    /// Power over the window, W, from the sensors named in `power_covers` (None when
    /// not available; see `power_unavailable_reason`).
    pub power_watts: Option<f64>,
    /// What `power_watts` includes.
    pub power_covers: Option<String>,
    /// Why there is no power figure.
    pub power_unavailable_reason: Option<String>,
    /// Requests per joule (requests_per_s / power_watts).
    pub requests_per_joule: Option<f64>,
    /// Every power sensor read.
    pub power_sensors: Vec<PowerReading>,
    /// Temperatures during the window.
    pub temperatures: Vec<TemperatureReading>,
    /// True when a stop request ended the window early (partial result).
    pub interrupted: bool,
}

impl RecordKind for WorkloadRun {
    const KIND: &'static str = "workload.run";
}
