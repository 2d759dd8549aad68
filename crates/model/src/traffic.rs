//! Workloads both engines run, and what they report.
//!
//! Two kinds: open-loop synthetic traffic between stops ([`Synthetic`]: uniform, hotspot,
//! transpose; one virtual network, a fixed injection rate), and closed-loop application
//! traffic ([`App`]: cores with a bounded number of outstanding line requests, reading
//! and writing lines of a chosen NUMA node). An application request is a short script of
//! [`Step`]s (packets on the four virtual networks, an SLC lookup, a memory access), built
//! by [`plan`] without allocation so that the discrete-event engine and the analytic
//! engine walk exactly the same protocol.

use crate::geometry::StopId;
use crate::model::{Location, Model, DAT, REQ, RSP, SNP};
use serde::{Deserialize, Serialize};

/// Synthetic traffic patterns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "pattern")]
pub enum Pattern {
    /// Every stop sends to every stop (itself included) with equal probability.
    Uniform,
    /// A fraction of all packets goes to one stop, the rest is uniform.
    Hotspot {
        /// The hot stop.
        stop: StopId,
        /// Fraction of packets sent to it.
        fraction: f64,
    },
    /// (x, y) sends to (y, x); stops on the diagonal send nothing. Square meshes only.
    Transpose,
}

/// Open-loop synthetic traffic on socket 0's stops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Synthetic {
    /// Destination pattern.
    pub pattern: Pattern,
    /// Packets per stop per cycle (offered load) at each sending stop.
    pub rate: f64,
    /// Flits per packet.
    pub flits: u32,
}

impl Synthetic {
    /// The stops that send and receive (socket 0).
    pub fn stops(model: &Model) -> u32 {
        model.geo.stops_per_socket()
    }

    /// Destinations of `src` with their probabilities (empty: `src` sends nothing).
    pub fn destinations(&self, model: &Model, src: StopId) -> Vec<(StopId, f64)> {
        let n = Self::stops(model);
        match self.pattern {
            Pattern::Uniform => (0..n).map(|d| (d, 1.0 / f64::from(n))).collect(),
            Pattern::Hotspot { stop, fraction } => (0..n)
                .map(|d| {
                    let p =
                        (1.0 - fraction) / f64::from(n) + if d == stop { fraction } else { 0.0 };
                    (d, p)
                })
                .collect(),
            Pattern::Transpose => {
                let (_, x, y) = model.geo.coords(src);
                if x == y {
                    Vec::new()
                } else {
                    vec![(model.geo.stop(0, y, x), 1.0)]
                }
            }
        }
    }

    /// One destination for `src` from a uniform random number `u` in [0, 1) (and a
    /// second one `v` for the hotspot choice); `None` when `src` sends nothing.
    pub fn sample(&self, model: &Model, src: StopId, u: f64, v: f64) -> Option<StopId> {
        let n = Self::stops(model);
        let pick = |u: f64| ((u * f64::from(n)) as u32).min(n - 1);
        match self.pattern {
            Pattern::Uniform => Some(pick(u)),
            Pattern::Hotspot { stop, fraction } => Some(if v < fraction { stop } else { pick(u) }),
            Pattern::Transpose => {
                let (_, x, y) = model.geo.coords(src);
                (x != y).then(|| model.geo.stop(0, y, x))
            }
        }
    }
}

/// A line operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Read a line (ReadShared/ReadUnique).
    Read,
    /// Write a whole line without reading it (streaming store, WriteNoSnp).
    Write,
}

/// Where the lines an application touches live.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Data {
    /// All on one NUMA node (`numactl --membind=N`).
    Node {
        /// Node id.
        node: u32,
    },
    /// Pages spread round-robin over all nodes (`numactl --interleave=all`).
    Interleave,
    /// Each core's lines on its own node (first touch by the thread that uses them).
    Local,
    /// One line at a fixed home and controller (latency probes); `hit` = served at home.
    Fixed {
        /// Home slice.
        home: usize,
        /// Memory controller.
        mc: usize,
        /// Served at the home slice (true) or from memory (false).
        hit: bool,
    },
}

/// Closed-loop application traffic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct App {
    /// Active cores (indices into `Model::cores`).
    pub cores: Vec<usize>,
    /// Where the data is.
    pub data: Data,
    /// The per-core operation cycle, e.g. `[Read, Read, Write]` for STREAM triad.
    pub mix: Vec<Op>,
    /// Probability that a line is found in the SLC.
    pub slc_hit: f64,
    /// Probability that an SLC miss hits the memory-side cache (if the machine has one).
    pub msc_hit: f64,
    /// Probability that a read needs a snoop of another core.
    pub snoop: f64,
    /// Outstanding requests per core.
    pub outstanding: u32,
    /// Cycles between a completion and the next request of that slot.
    pub think_cycles: u32,
}

/// Lines per page for interleaving (4 KiB pages of 64 B lines).
pub const LINES_PER_PAGE: u64 = 64;

impl App {
    /// The node holding line `line` of core `core`'s data.
    pub fn node_of(&self, model: &Model, core: usize, line: u64) -> u32 {
        match self.data {
            Data::Node { node } => node,
            Data::Interleave => ((line / LINES_PER_PAGE) % model.nodes.len() as u64) as u32,
            Data::Local | Data::Fixed { .. } => model.cores[core].node,
        }
    }

    /// Where line `line` of core `core`'s data lives.
    pub fn locate(&self, model: &Model, core: usize, line: u64) -> Location {
        match self.data {
            Data::Fixed { home, mc, .. } => Location {
                home,
                mc,
                cache_mc: None,
            },
            _ => model.locate(self.node_of(model, core, line), line),
        }
    }
}

/// One step of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A packet on a virtual network.
    Packet {
        /// From stop.
        from: StopId,
        /// To stop.
        to: StopId,
        /// Virtual network.
        vn: u8,
    },
    /// SLC (or directory) lookup at the home slice.
    Lookup,
    /// Access at a memory controller (queue, channel, DRAM).
    Memory {
        /// Controller.
        mc: u32,
    },
    /// The requesting core's slot is free from here on (later steps are posted).
    Complete,
}

/// A request's steps (at most 12, no allocation).
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Steps, `len` of them used.
    pub steps: [Step; 12],
    /// Used length.
    pub len: u8,
}

impl Plan {
    fn new() -> Self {
        Plan {
            steps: [Step::Complete; 12],
            len: 0,
        }
    }
    fn push(&mut self, s: Step) {
        self.steps[self.len as usize] = s;
        self.len += 1;
    }
    fn packet(&mut self, from: StopId, to: StopId, vn: usize) {
        self.push(Step::Packet {
            from,
            to,
            vn: vn as u8,
        });
    }
    /// The used steps.
    pub fn steps(&self) -> &[Step] {
        &self.steps[..self.len as usize]
    }
}

/// What happened to one request: which caches hit, which core was snooped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Hit in the SLC.
    pub slc_hit: bool,
    /// Hit in the memory-side cache (only used on SLC misses with such a cache).
    pub msc_hit: bool,
    /// Stop of the snooped core, if any.
    pub snoop: Option<StopId>,
}

/// The steps of one request (CHI-like protocol, see docs/model.md):
/// - read hit: REQ core->home, lookup, DAT home->core;
/// - read miss: REQ core->home, lookup, REQ home->controller, memory, DAT controller->core
///   (direct memory transfer); with a memory-side cache the request visits its controller
///   first and goes on to main memory only on a miss;
/// - a snoop adds SNP home->core' and RSP core'->home before the lookup completes;
/// - write: REQ core->home, lookup, RSP home->core (buffer ready), DAT core->home, then
///   (posted, after the core's slot is free) on an SLC miss DAT home->controller and a
///   memory access.
pub fn plan(model: &Model, op: Op, core_stop: StopId, loc: Location, o: Outcome) -> Plan {
    let mut p = Plan::new();
    let home = model.slices[loc.home].stop;
    let mc_stop = model.mcs[loc.mc].stop;
    p.packet(core_stop, home, REQ);
    if let (Op::Read, Some(s)) = (op, o.snoop) {
        p.packet(home, s, SNP);
        p.packet(s, home, RSP);
    }
    p.push(Step::Lookup);
    match op {
        Op::Read if o.slc_hit => {
            p.packet(home, core_stop, DAT);
            p.push(Step::Complete);
        }
        Op::Read => match loc.cache_mc {
            Some(e) => {
                let e_stop = model.mcs[e].stop;
                p.packet(home, e_stop, REQ);
                p.push(Step::Memory { mc: e as u32 });
                if o.msc_hit {
                    p.packet(e_stop, core_stop, DAT);
                } else {
                    p.packet(e_stop, mc_stop, REQ);
                    p.push(Step::Memory { mc: loc.mc as u32 });
                    p.packet(mc_stop, core_stop, DAT);
                }
                p.push(Step::Complete);
            }
            None => {
                p.packet(home, mc_stop, REQ);
                p.push(Step::Memory { mc: loc.mc as u32 });
                p.packet(mc_stop, core_stop, DAT);
                p.push(Step::Complete);
            }
        },
        Op::Write => {
            p.packet(home, core_stop, RSP);
            p.packet(core_stop, home, DAT);
            p.push(Step::Complete);
            if !o.slc_hit {
                let t = loc.cache_mc.unwrap_or(loc.mc);
                p.packet(home, model.mcs[t].stop, DAT);
                p.push(Step::Memory { mc: t as u32 });
            }
        }
    }
    p
}

pub use numalab_records::model::VnFigures;

/// Flat per-(source node, destination node, network) packet counts to matrices: the
/// whole-machine matrix and one per network, each count divided by `per`.
pub(crate) fn node_matrices(
    counts: &[f64],
    nodes: usize,
    per: f64,
) -> (Vec<Vec<f64>>, [Vec<Vec<f64>>; 4]) {
    let at = |s: usize, d: usize, v: usize| counts[(s * nodes + d) * 4 + v] / per;
    let all = (0..nodes)
        .map(|s| {
            (0..nodes)
                .map(|d| (0..4).map(|v| at(s, d, v)).sum())
                .collect()
        })
        .collect();
    let vn = std::array::from_fn(|v| {
        (0..nodes)
            .map(|s| (0..nodes).map(|d| at(s, d, v)).collect())
            .collect()
    });
    (all, vn)
}

/// Draws the next request of core slot `slot` (its `k`-th): operation, line, SLC and
/// memory-side cache outcome, snooped core; the plan both discrete-event routers run.
pub(crate) fn draw_request(
    model: &Model,
    app: &App,
    slot: usize,
    k: u32,
    rng: &mut rand::rngs::Xoshiro256PlusPlus,
) -> Plan {
    use rand::RngExt;
    let core = app.cores[slot];
    let op = app.mix[k as usize % app.mix.len()];
    let line: u64 = rng.random::<u64>() >> 24;
    let loc = app.locate(model, core, line);
    let slc_hit = match app.data {
        Data::Fixed { hit, .. } => hit,
        _ => rng.random::<f64>() < app.slc_hit,
    };
    let msc_hit = loc.cache_mc.is_some() && !slc_hit && rng.random::<f64>() < app.msc_hit;
    let snoop = if op == Op::Read
        && app.snoop > 0.0
        && app.cores.len() > 1
        && rng.random::<f64>() < app.snoop
    {
        // Another active core, uniformly.
        let mut j = rng.random_range(0..app.cores.len() - 1);
        if j >= slot {
            j += 1;
        }
        Some(model.cores[app.cores[j]].stop)
    } else {
        None
    };
    plan(
        model,
        op,
        model.cores[core].stop,
        loc,
        Outcome {
            slc_hit,
            msc_hit,
            snoop,
        },
    )
}

/// What an engine reports for a workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// "analytic" or "des".
    pub engine: String,
    /// Cycles simulated in the measured window (DES), 0 for the analytic engine.
    pub measured_cycles: u64,
    /// Packets per cycle delivered (whole machine).
    pub packets_per_cycle: f64,
    /// Mean packet latency, cycles.
    pub packet_latency_cycles: f64,
    /// Mean hops per packet.
    pub mean_hops: f64,
    /// Fraction of packets by hop count (index = hops).
    pub hop_histogram: Vec<f64>,
    /// Per virtual network.
    pub vns: Vec<VnFigures>,
    /// Busiest link's utilization.
    pub max_link_utilization: f64,
    /// Application: completed requests per cycle (whole machine).
    pub requests_per_cycle: f64,
    /// Application: mean request latency as the core sees it, cycles.
    pub request_latency_cycles: f64,
    /// Application: accesses per cycle at each memory controller.
    pub mc_accesses_per_cycle: Vec<f64>,
    /// Application: utilization of each memory controller's channels.
    pub mc_utilization: Vec<f64>,
    /// Packets per cycle from each source NUMA node (row: node of the sending stop) to
    /// each destination node (column: node of the receiving stop), all virtual networks;
    /// per network in [`VnFigures::node_packets_per_cycle`].
    pub node_packets_per_cycle: Vec<Vec<f64>>,
    /// Application: accesses per cycle at each memory controller from cores of the
    /// controller's NUMA node ([`crate::model::McInfo::node`]).
    pub mc_local_accesses_per_cycle: Vec<f64>,
    /// Application: accesses per cycle at each memory controller from cores of other
    /// nodes.
    pub mc_remote_accesses_per_cycle: Vec<f64>,
    /// Whether some resource is at or beyond its capacity (results are a bound).
    pub saturated: bool,
}

/// A simulated application's counts over the measured window, as both discrete-event
/// engines keep them.
pub(crate) struct AppCounts<'a> {
    /// Requests completed.
    pub done_count: u64,
    /// Their summed latency, cycles.
    pub done_latency: u64,
    /// Accesses per memory controller.
    pub mc_count: &'a [u64],
    /// Of those, from cores on the controller's node.
    pub mc_local: &'a [u64],
    /// Channel-busy cycles per controller.
    pub mc_busy: &'a [f64],
}

impl AppCounts<'_> {
    /// The application figures of `f` over `cycles` measured cycles, and `saturated`
    /// from the busiest link and controller.
    pub(crate) fn fill(&self, f: &mut Figures, model: &Model, cycles: f64) {
        let m = cycles;
        f.requests_per_cycle = self.done_count as f64 / m;
        f.request_latency_cycles = self.done_latency as f64 / self.done_count.max(1) as f64;
        f.mc_accesses_per_cycle = self.mc_count.iter().map(|&k| k as f64 / m).collect();
        f.mc_local_accesses_per_cycle = self.mc_local.iter().map(|&k| k as f64 / m).collect();
        f.mc_remote_accesses_per_cycle = self
            .mc_count
            .iter()
            .zip(self.mc_local)
            .map(|(&k, &l)| (k - l) as f64 / m)
            .collect();
        f.mc_utilization = self
            .mc_busy
            .iter()
            .zip(&model.mcs)
            .map(|(b, mc)| b / m / f64::from(mc.channels))
            .collect();
        f.saturated = f.max_link_utilization > 0.98 || f.mc_utilization.iter().any(|&u| u > 0.98);
    }
}

/// How long to simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesConfig {
    /// Random seed.
    pub seed: u64,
    /// Cycles simulated before measuring (discarded).
    pub warmup_cycles: u64,
    /// Cycles measured.
    pub measure_cycles: u64,
    /// Synthetic traffic: extra cycles allowed to deliver the packets created while
    /// measuring; packets still in flight after that make the point unstable.
    pub drain_cycles: u64,
}

impl Default for DesConfig {
    fn default() -> Self {
        DesConfig {
            seed: 1,
            warmup_cycles: 2_000,
            measure_cycles: 20_000,
            drain_cycles: 20_000,
        }
    }
}
