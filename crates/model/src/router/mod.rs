//! The input-queued router of the discrete-event engine (`noc.router = "input-queued"`):
//! virtual channels, credit-based flow control and separable iSLIP allocators, stepped
//! cycle by cycle, with the semantics of BookSim2's `IQRouter` under its reference
//! configuration (docs/model.md, "Router microarchitecture").
//!
//! Per router: five input ports (four neighbours and the local injection port), each with
//! `C` virtual channels (VCs) of `buffer_flits` flits; five output ports. A flit that
//! reaches an input buffer at cycle `A`:
//! - its packet's head is routed (XY or YX) and may request a VC of the downstream input
//!   (of its virtual network's class) from cycle `A + routing_delay`; a VC is held by one
//!   packet at a time and released when the packet's tail is sent (BookSim's
//!   `wait_for_tail_credit = 0`);
//! - VC allocation (iSLIP over input VCs x output VCs, `alloc_iters` iterations) at cycle
//!   `v` makes it eligible for switch allocation from `v + vc_alloc_delay`;
//! - switch allocation (iSLIP over input ports x output ports; an input port offers, per
//!   output, its VCs in round-robin order) at cycle `s` needs a credit of the downstream
//!   VC; the flit leaves the buffer at `s` and reaches the next input buffer at
//!   `s + sw_alloc_delay + st_final_delay + link cycles`; its credit is usable upstream
//!   from `s + link cycles + credit_delay`.
//!
//! Sources are Bernoulli at the offered rate with an infinite queue per node and network,
//! inject one flit per cycle from the cycle after a packet's creation (with a credit of a
//! free injection VC; the injection link takes `inject_cycles`, its credit comes back
//! after `inject_cycles`); ejection takes `eject_cycles` and always has room. Latency runs
//! from creation to ejection of the tail (BookSim's packet latency). The zero-load latency
//! is therefore `1 + t_inject + (H + 1)(routing + va + sa + st) + H t_link + t_eject +
//! flits - 1` (27.0 cycles for uniform traffic on 8x8 with the reference delays, as
//! BookSim reports).
//!
//! Virtual networks: with `shared_links = false` every network has its own routers and
//! links (independent planes, as the output-queued model); with `shared_links = true` one
//! set of links carries all networks, each owning `vcs` of the input VCs, and their flits
//! interleave on the links.
//!
//! One simulation may run sharded on several threads ([`simulate_threads`]): contiguous
//! ranges of routers stepped side by side, with the same figures to the last bit.
//!
//! The code: `state` (the simulator's data and its construction), `transport` (flits and
//! credits moving, delivery), `allocation` (the VC and switch allocators), `closed` (the
//! closed loop of application traffic), `engine` (the driver, [`simulate`]'s body) and
//! `shards` (the sharded cycle loop).

mod allocation;
mod closed;
mod engine;
mod shards;
mod state;
mod transport;

use crate::error::ModelError;
use crate::model::Model;
use crate::traffic::{App, DesConfig, Figures, Synthetic};
use engine::run;
use numalab_records::model::SimStats;

/// One stream of packets for [`simulate`]: from `src` to `dst` (stops of socket 0) at
/// `rate` packets per cycle (Bernoulli) on virtual network `vn`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flow {
    /// Sending stop.
    pub src: u32,
    /// Receiving stop.
    pub dst: u32,
    /// Packets per cycle.
    pub rate: f64,
    /// Virtual network (0-3).
    pub vn: u8,
}

/// What the sources send.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// A synthetic pattern at `traffic.rate` packets per stop per cycle, each packet on a
    /// virtual network drawn uniformly from `0..networks`.
    Synthetic {
        /// Pattern, rate, flits.
        traffic: Synthetic,
        /// Virtual networks used (1-4).
        networks: u8,
    },
    /// Explicit flows, each with its own figures.
    Flows {
        /// The flows.
        flows: Vec<Flow>,
        /// Flits per packet.
        flits: u32,
    },
    /// Closed-loop application traffic: the same request scripts as the output-queued
    /// engine (packets on the four networks, SLC lookups, memory channels), with the
    /// packets carried by the input-queued routers; per-network figures.
    App(App),
}

/// Figures of one flow (or of one virtual network of a synthetic workload).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FlowFigures {
    /// Packets per cycle ejected during the measured window.
    pub accepted: f64,
    /// Mean latency (creation to ejection of the tail) of the packets created in the
    /// window, cycles.
    pub latency_cycles: f64,
    /// Packets created in the window and delivered.
    pub delivered: u64,
}

/// What [`simulate`] returns.
#[derive(Debug, Clone, PartialEq)]
pub struct IqResult {
    /// Whole-network figures (in the engines' common form).
    pub figures: Figures,
    /// Per flow (explicit flows) or per virtual network (synthetic).
    pub flows: Vec<FlowFigures>,
    /// Simulation statistics: `routers` counts router planes x stops, `events` the
    /// router steps taken (a router is stepped in a cycle when it holds a flit).
    pub stats: SimStats,
    /// Threads the cycle loop ran on: 1, or the shards of [`simulate_threads`] (the
    /// figures, flows and statistics do not depend on it).
    pub threads: usize,
    /// How [`simulate_threads`] chose the shards, when it measured (it did when it
    /// was given more than one thread and the workload can be sharded).
    pub sharding: Option<ShardChoice>,
}

/// The measurements behind [`simulate_threads`]'s choice of shards ([`choose_shards`]):
/// the same cycles of the run timed on one thread and on trial shards.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardChoice {
    /// The cycles timed (from, to): [`SPLIT_CYCLE`]` / 2 .. `[`SPLIT_CYCLE`] unless the
    /// run ended before.
    pub cycles: (u64, u64),
    /// Nanoseconds per cycle on one thread.
    pub one_ns: f64,
    /// Per number of shards tried: nanoseconds per cycle (a copy of the simulation ran
    /// those cycles on them and was discarded).
    pub trials: Vec<(usize, f64)>,
    /// The most shards allowed (threads given, CPUs usable, two routers per shard, the
    /// buffers' memory bound).
    pub max: usize,
    /// The shards chosen (1: the run stayed on one thread).
    pub shards: usize,
}

/// The zero-load packet latency of the input-queued router for a packet of `hops` link
/// hops and `flits` flits on a mesh whose links all take `link` cycles.
pub fn zero_load_latency(model: &Model, hops: f64, flits: u32, link: f64) -> f64 {
    let n = &model.spec.noc;
    let g = &model.geo;
    let router =
        f64::from(n.routing_delay + n.vc_alloc_delay + n.sw_alloc_delay + n.st_final_delay);
    1.0 + f64::from(g.inject_cycles)
        + (hops + 1.0) * router
        + hops * link
        + f64::from(g.eject_cycles)
        + f64::from(flits.max(1) - 1)
}

/// Simulates a workload on input-queued routers. Packets created during the measured
/// window are followed until delivered (or the drain limit).
pub fn simulate(model: &Model, work: &Workload, cfg: &DesConfig) -> Result<IqResult, ModelError> {
    run(model, work, cfg, Sharding::Exactly { shards: 1, from: 0 })
}

/// The cycle at which [`simulate_threads`] starts its shards, if it does. The cycles
/// before run on one thread; the second half of them is its trial: timed on one thread,
/// and on copies of the simulation sharded 2, 4, 8, ... ways (and the most allowed) while
/// that keeps paying, and [`choose_shards`] takes the fastest.
pub const SPLIT_CYCLE: u64 = 256;

/// [`simulate`] on up to `threads` threads, with the same figures, bit for bit. The
/// mesh's routers are cut into contiguous shards, each stepped by its own thread, which
/// meet once per simulated cycle ([`run_sharded`](shards::run_sharded)). How many is
/// measured, not assumed: the same cycles are timed on one thread and sharded
/// ([`SPLIT_CYCLE`]), and the fastest wins ([`choose_shards`]; a small mesh on a host
/// where threads meet slowly stays on one thread, a large one or a host where they meet
/// fast takes more).
/// Application workloads (a closed loop whose events are ordered across the whole
/// mesh), bounded controller queues and zero-cycle hops run on one thread.
pub fn simulate_threads(
    model: &Model,
    work: &Workload,
    cfg: &DesConfig,
    threads: usize,
) -> Result<IqResult, ModelError> {
    run(model, work, cfg, Sharding::Auto(threads))
}

/// [`simulate`] on exactly `shards` threads from cycle `from` on (the cycles before
/// run on one thread), whatever they cost: for tests and benchmarks. Fewer when the
/// mesh has fewer than two routers per shard, the buffers' memory bound allows fewer
/// copies, or the workload is not sharded (see [`simulate_threads`]).
pub fn simulate_shards(
    model: &Model,
    work: &Workload,
    cfg: &DesConfig,
    shards: usize,
    from: u64,
) -> Result<IqResult, ModelError> {
    run(model, work, cfg, Sharding::Exactly { shards, from })
}

/// How many shards, and from which cycle.
#[derive(Debug, Clone, Copy)]
enum Sharding {
    /// Measure, then choose up to this many threads.
    Auto(usize),
    /// This many, from this cycle.
    Exactly { shards: usize, from: u64 },
}

/// The shards to run on, from one thread's `one_ns` per cycle and the `trials`' (shards,
/// nanoseconds per cycle) over the same cycles: the fastest trial if it takes at most
/// nine tenths of one thread's time (a margin for the noise of a short trial), else one.
pub fn choose_shards(one_ns: f64, trials: &[(usize, f64)]) -> usize {
    if one_ns.is_nan() || one_ns <= 0.0 {
        return 1;
    }
    trials
        .iter()
        .filter(|(k, ns)| *k > 1 && ns.is_finite() && *ns >= 0.0)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .filter(|(_, ns)| *ns <= 0.9 * one_ns)
        .map_or(1, |&(k, _)| k)
}
