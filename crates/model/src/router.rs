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

use crate::error::ModelError;
use crate::model::Model;
use crate::traffic::DesConfig;
use crate::traffic::{draw_request, node_matrices, App, Figures, Plan, Step, Synthetic, VnFigures};
use numalab_records::model::SimStats;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

const PORTS: usize = 5;
const LOCAL: usize = 4;
const NONE8: u8 = u8::MAX;

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

/// The link cycles of a dimension-order path, from running sums along every row and
/// column per direction: `east[y * cols + x]` is the cost of the east links from column 0
/// to `x` in row `y`, `west[y * cols + x]` of the west links from `x` down to 0, and
/// `north`/`south` the same per column (`x * rows + y`).
#[derive(Debug, Clone, Default)]
struct PathLinks {
    cols: usize,
    rows: usize,
    yx: bool,
    east: Vec<u32>,
    west: Vec<u32>,
    north: Vec<u32>,
    south: Vec<u32>,
}

impl PathLinks {
    fn new(g: &crate::geometry::Geometry) -> Self {
        use crate::geometry::Dir;
        let (cols, rows) = (g.cols as usize, g.rows as usize);
        let cost = |x: usize, y: usize, d: Dir| g.link_cost((y * cols + x) as u32 * 4 + d as u32);
        let mut p = PathLinks {
            cols,
            rows,
            yx: g.routing == crate::spec::Routing::Yx,
            east: vec![0; cols * rows],
            west: vec![0; cols * rows],
            north: vec![0; cols * rows],
            south: vec![0; cols * rows],
        };
        for y in 0..rows {
            for x in 1..cols {
                let i = y * cols + x;
                p.east[i] = p.east[i - 1] + cost(x - 1, y, Dir::E);
                p.west[i] = p.west[i - 1] + cost(x, y, Dir::W);
            }
        }
        for x in 0..cols {
            for y in 1..rows {
                let i = x * rows + y;
                p.north[i] = p.north[i - 1] + cost(x, y - 1, Dir::N);
                p.south[i] = p.south[i - 1] + cost(x, y, Dir::S);
            }
        }
        p
    }

    /// Along row `y` from column `a` to `b`.
    fn row(&self, y: u16, a: u16, b: u16) -> u32 {
        let r = usize::from(y) * self.cols;
        let (a, b) = (r + usize::from(a), r + usize::from(b));
        if b >= a {
            self.east[b] - self.east[a]
        } else {
            self.west[a] - self.west[b]
        }
    }

    /// Along column `x` from row `a` to `b`.
    fn column(&self, x: u16, a: u16, b: u16) -> u32 {
        let c = usize::from(x) * self.rows;
        let (a, b) = (c + usize::from(a), c + usize::from(b));
        if b >= a {
            self.north[b] - self.north[a]
        } else {
            self.south[a] - self.south[b]
        }
    }

    /// From `(sx, sy)` to `(dx, dy)`.
    #[inline(always)]
    fn cycles(&self, (sx, sy): (u16, u16), (dx, dy): (u16, u16)) -> u32 {
        if self.yx {
            self.column(sx, sy, dy) + self.row(dy, sx, dx)
        } else {
            self.row(sy, sx, dx) + self.column(dx, sy, dy)
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Pkt {
    /// Receiving stop.
    dst: u16,
    vn: u8,
    measured: bool,
    /// Statistics index (flow or network), or the request id of application traffic.
    flow: u32,
    /// Link hops from source to destination: with dimension-order routing on a mesh, the
    /// Manhattan distance (set at creation; debug builds count the hops taken and check).
    hops: u16,
    /// Link cycles of those hops (the path's, at zero load).
    links: u16,
    /// NUMA node of the sending stop.
    snode: u16,
    /// The memory controller whose bounded queue must take this packet before it leaves
    /// the network (the read request of that controller's access; `Closed::gate_depth`),
    /// else NONE32. Home trackers take requests after they leave it (`Closed::home_wait`).
    gate: u32,
    created: u64,
}

/// One application request in flight.
#[derive(Debug, Clone, Copy)]
struct Txn {
    plan: Plan,
    step: u8,
    slot: u32,
    start: u64,
    /// Taken by its controller's bounded queue (counted in `Closed::gate_held`) when its
    /// packet left the network.
    admitted: bool,
    /// The home tracker (gate) holding an entry for it, else NONE32.
    home: u32,
}

const EV_DELIVERED: u8 = 0;
const EV_STEP: u8 = 1;
const EV_ISSUE: u8 = 2;
/// A memory access done: its controller's bounded queue frees the request's entry.
const EV_MEM_DONE: u8 = 3;
/// A home tracker's entry freed (the event's id is the gate, not a request: the request
/// may be over and its slot reused by then).
const EV_HOME_FREE: u8 = 4;
const NONE32: u32 = u32::MAX;

/// The closed-loop side of an application workload: requests, their timed steps
/// (lookups, memory accesses, think time; a heap, as they are few next to flits), the
/// memory channels and the request statistics.
#[derive(Clone, Default)]
struct Closed {
    txns: Vec<Txn>,
    free_txns: Vec<u32>,
    events: BinaryHeap<Reverse<(u64, u64, u8, u32)>>,
    seq: u64,
    issue_counter: Vec<u32>,
    slot_node: Vec<u32>,
    mc_first: Vec<usize>,
    chan_free: Vec<f64>,
    mc_count: Vec<u64>,
    mc_local: Vec<u64>,
    mc_busy: Vec<f64>,
    /// Bounded resources that take packets off the network ("gates"): memory
    /// controllers' queues (index = controller), then home stops' trackers (index =
    /// controllers + stop). Their bounds (u32::MAX: unbounded) and the requests each holds.
    gate_depth: Vec<u32>,
    gate_held: Vec<u32>,
    n_mcs: usize,
    /// A one-flit packet's zero-load latency at zero hops, and its router cycles per hop.
    ack: (f64, f64),
    /// Some home tracker is bounded; the requests waiting for an entry of each home stop's
    /// trackers (off the network).
    homes_bounded: bool,
    home_wait: Vec<VecDeque<u32>>,
    done_count: u64,
    done_latency: u64,
}

/// One input VC: the cycle its front flit may take its next step, its flits (`len`, the
/// front one here and the others in its ring buffer from `head`), and the output port
/// and downstream VC of the packet at its front. The front flit is kept here, beside
/// what the allocators read, so that a VC holding one flit (most of them) never touches
/// its ring buffer.
#[derive(Debug, Clone, Copy)]
struct VcState {
    ready: u64,
    head: u16,
    len: u16,
    out_port: u8,
    out_vc: u8,
    front: Flit,
}

/// One flit in a buffer or on a link: its packet, what routing and VC allocation need
/// (destination stop, virtual network) and whether it heads or ends its packet, so that
/// the hot path never reads the packet table. Its arrival cycle is kept beside the buffer
/// (`Iq::arr`) when the routing delay needs it.
///
/// Its packet (bits 0-31), destination (32-47), virtual network (48-55) and `HEAD` /
/// `TAIL` flags (56-63) share one word, so that a flit is copied in one move. As four
/// fields, the compiler copied a flit from its delay line into its VC in two overlapping
/// 4-byte halves through the stack, and reading back the second half (written partly by
/// each store) missed store-to-load forwarding: the costliest instruction of the
/// simulation, about 5% of its samples (`perf record -e cpu-clock` on `iq_speed`). In one
/// word that instruction is gone from the profile; the wall time of whole runs did not
/// change measurably on the development VM (its noise is larger than 5%).
#[derive(Debug, Clone, Copy, Default)]
struct Flit {
    w: u64,
    /// Links this flit has crossed (debug builds check it against the packet's hops).
    #[cfg(debug_assertions)]
    hops: u16,
}

impl Flit {
    #[inline(always)]
    fn new(pkt: u32, dst: u16, vn: u8, flags: u8) -> Self {
        Flit {
            w: u64::from(pkt) | u64::from(dst) << 32 | u64::from(vn) << 48 | u64::from(flags) << 56,
            #[cfg(debug_assertions)]
            hops: 0,
        }
    }
    #[inline(always)]
    fn pkt(self) -> u32 {
        self.w as u32
    }
    #[inline(always)]
    fn dst(self) -> u16 {
        (self.w >> 32) as u16
    }
    #[inline(always)]
    fn vn(self) -> u8 {
        (self.w >> 48) as u8
    }
    /// `HEAD` and/or `TAIL`.
    #[inline(always)]
    fn flags(self) -> u8 {
        (self.w >> 56) as u8
    }
}

/// A packet waiting at its source: what injection needs, so that it never reads the
/// packet table (which a sharded simulation keeps on one thread).
#[derive(Debug, Clone, Copy)]
struct Queued {
    id: u32,
    dst: u16,
    flits: u16,
    vn: u8,
    created: u64,
}

const HEAD: u8 = 1;
const TAIL: u8 = 2;

/// A slot of an input port's delay line: the flit arriving in that cycle and its VC (or
/// NONE8).
#[derive(Debug, Clone, Copy)]
struct Arrival {
    flit: Flit,
    vc: u8,
}

/// The state of one router that the allocators read and write every cycle, together (a
/// few cache lines) rather than spread over a vector each: masks of its input VCs and
/// output VCs, switch allocation's view of the requests, and the switch allocator's
/// iSLIP pointers. Masks have a bit per VC of a port (`c` bits).
#[derive(Debug, Clone, Copy, Default)]
struct RouterState {
    /// Non-empty VCs, per input port.
    mask: [u64; PORTS],
    /// VCs whose front flit is a head waiting for VC allocation, per input port.
    need_va: [u64; PORTS],
    /// Output VCs held by a packet, per output port.
    out_busy: [u64; PORTS],
    /// Per input port and output port: the input port's VCs whose front packet holds an
    /// output VC of that output port (kept up to date by VC allocation and traversal, so
    /// that a switch request is a few word operations per port instead of a visit of
    /// every waiting VC).
    vc_out: [[u64; PORTS]; PORTS],
    /// Per input port: VCs whose output VC has no credit.
    blocked: [u64; PORTS],
    /// Per input port: VCs given an output VC whose `ready` cycle may still be ahead
    /// (cleared by switch allocation once it has come).
    pending: [u64; PORTS],
    /// Switch allocator: grant pointer per output port, accept pointer per input port,
    /// and per input port the round-robin pointer over its VCs.
    sa_gptr: [u8; PORTS],
    sa_aptr: [u8; PORTS],
    sa_vc_rr: [u8; PORTS],
    /// Non-empty input ports, a bit each.
    busy: u8,
}

#[derive(Clone)]
struct Source {
    queue: VecDeque<Queued>,
    /// Packet being injected (`cur` its id, else u32::MAX), its next flit and its VC.
    cur: u32,
    pk: Queued,
    seq: u16,
    vc: u8,
    rr: u8,
}

#[derive(Clone)]
struct Iq {
    n_stops: usize,
    yx: bool,
    planes: usize,
    /// Index stride of the VCs of one port: a power of two, at least the VCs per port
    /// (`vcs` per class; the VCs of class `k` are `k*vcs .. (k+1)*vcs`).
    c: usize,
    shift: u32,
    vcs: usize,
    shared: bool,
    buf_flits: usize,
    /// Ring capacity per VC (a power of two, at least `buf_flits`) and its log2.
    buf_cap: usize,
    cap_shift: u32,
    /// The VCs of class 0 of a port, a bit each (`vcs` low bits).
    class_bits: u64,
    rd: u64,
    va: u64,
    sa_st: u64,
    iters: usize,
    eject: u64,
    /// Coordinates of each stop, and of each router's stop.
    xy: Vec<(u16, u16)>,
    router_xy: Vec<(u16, u16)>,
    /// Per router and output direction: the downstream router (its input port is the
    /// direction) and the cycles from switch allocation to the flit's arrival there.
    down: Vec<u32>,
    down_cycles: Vec<u64>,
    /// Per router and input direction: the upstream router (its output port is the
    /// direction) and the cycles from a flit's departure until its credit is usable there.
    up: Vec<u32>,
    up_cycles: Vec<u64>,
    // Input VCs: index ((router * PORTS + port) * c + vc).
    buf: Vec<Flit>,
    /// Arrival cycle of each buffered flit (beside `buf`; kept only with a routing delay).
    arr: Vec<u64>,
    /// State of each input VC.
    vc: Vec<VcState>,
    /// Per router: its allocators' state.
    rs: Vec<RouterState>,
    // Output VCs: index ((router * PORTS + port) * c + vc); source VCs follow at
    // `src_base + (plane * n_stops + stop) * c + vc`.
    credits: Vec<u32>,
    /// Source VCs held by a packet being injected.
    in_use: Vec<bool>,
    src_base: usize,
    // iSLIP pointers.
    va_gptr: Vec<u16>,
    va_aptr: Vec<u16>,
    // Delay lines: per router, `1 << line_shift` slots, a slot per arrival cycle (modulo
    // the length). Every port takes at most one flit or credit per cycle, each after its
    // link's fixed delay.
    line_shift: u32,
    line_mask: u64,
    /// Per router and slot: a bit per input port with an arriving flit (bits 0-4) and
    /// per output port with an arriving credit (bits 8-11).
    line_bits: Vec<u16>,
    /// The arriving flits: index `((router << line_shift) + slot) * PORTS + port`.
    flit_line: Vec<Arrival>,
    /// The arriving credits' VCs: index `((router << line_shift) + slot) * 4 + port`.
    credit_line: Vec<u8>,
    /// Credits (the VC, or NONE8) on their way back to each source: index
    /// `(source << line_shift) + slot`.
    source_credit_line: Vec<u8>,
    /// Injection delay as the delay lines apply it.
    inject_line: u64,
    sources: Vec<Source>,
    pkts: Vec<Pkt>,
    free_pkts: Vec<u32>,
    rng: Xoshiro256PlusPlus,
    now: u64,
    window: (u64, u64),
    measured_in_flight: u64,
    // Per flow (or per vn): accepted in window, latency sum and count of measured.
    acc: Vec<u64>,
    lat_sum: Vec<u64>,
    lat_n: Vec<u64>,
    hop_sum: Vec<u64>,
    /// Link cycles of the delivered packets' paths, per statistics index.
    link_sum: Vec<u64>,
    path_links: PathLinks,
    /// Delivered packets by hop count and network: index `hops * 4 + vn`.
    hops_hist: Vec<u64>,
    /// NUMA node of every stop, the node count, and delivered packets by (source node,
    /// destination node, network): index `(src * n_nodes + dst) * 4 + vn`.
    stop_node: Vec<u16>,
    n_nodes: usize,
    node_pkts: Vec<u64>,
    /// Application traffic (counted by delivery in the window, as the output-queued
    /// engine does), and its closed-loop state.
    app_mode: bool,
    closed: Closed,
    /// Some controller's queue is bounded: ejection checks it (`Iq::ungated`, `Iq::admit`).
    gated: bool,
    link_busy: Vec<u64>,
    router_cycles: u64,
    // Scratch for the allocators.
    va_req: Vec<(u16, u8, u8)>,
    /// Scratch: output VCs granted to each request (64 entries).
    va_gmask: Vec<u64>,
    /// A router's input VCs fit one word (`PORTS * c <= 64`): VC allocation on bit
    /// matrices ([`Iq::vc_alloc_bits`]).
    bits_va: bool,
    /// Per output VC (indexed as `credits`): the input VC (`port * c + vc`) holding it,
    /// valid while its `out_busy` bit is set.
    holder: Vec<u16>,
    /// The routers (and their sources) this simulator steps: `lo .. lo + span`, all of
    /// them unless it is one shard of a sharded simulation ([`simulate_threads`]).
    lo: usize,
    span: usize,
    /// Flits and credits for routers of other shards, per destination shard, sent at
    /// the end of the cycle; the shard of each router (empty unless sharded).
    outbox: Vec<Vec<Msg>>,
    shard_of: Vec<u16>,
    /// The coordinating simulator of a sharded run: new packets go to `new_pkts` (for
    /// the shard of their source) instead of a source queue. A shard's step
    /// (`step_routers::<true>`) puts delivered packets in `delivered` instead of calling
    /// [`Iq::deliver`] (the packet table and the statistics are on one thread).
    handoff: bool,
    new_pkts: Vec<(u32, Queued)>,
    delivered: Vec<(u32, u64, u16)>,
}

/// A flit (`credit` false) or a credit for router `r` of another shard.
#[derive(Debug, Clone, Copy)]
struct Msg {
    at: u64,
    r: u32,
    port: u8,
    vc: u8,
    credit: bool,
    flit: Flit,
}

impl Iq {
    fn new(model: &Model, networks: usize, seed: u64, window: (u64, u64)) -> Self {
        let n = &model.spec.noc;
        let g = &model.geo;
        let n_stops = g.stops_per_socket() as usize;
        let shared = n.shared_links && networks > 1;
        let planes = if shared { 1 } else { networks };
        let vcs = n.vcs as usize;
        let c_real = vcs * if shared { networks } else { 1 };
        let c = c_real.next_power_of_two();
        debug_assert!(c <= 64);
        let routers = planes * n_stops;
        let nivc = routers * PORTS * c;
        let buf_flits = n.buffer_flits as usize;
        let buf_cap = buf_flits.next_power_of_two();
        let mut nbr = vec![u32::MAX; n_stops * 4];
        let mut link = vec![1u64; n_stops * 4];
        for s in 0..n_stops {
            for d in 0..4u32 {
                let l = s as u32 * 4 + d;
                if let Some(t) = g.neighbor(s as u32, crate::geometry::Dir::from_index(l)) {
                    nbr[l as usize] = t;
                    link[l as usize] = u64::from(g.link_cost(l));
                }
            }
        }
        let max_link = link.iter().copied().max().unwrap_or(1);
        let sa_st = u64::from(n.sw_alloc_delay + n.st_final_delay);
        let credit_delay = u64::from(n.credit_delay);
        let mut down = vec![u32::MAX; routers * 4];
        let mut down_cycles = vec![0u64; routers * 4];
        let mut up = vec![u32::MAX; routers * 4];
        let mut up_cycles = vec![0u64; routers * 4];
        for r in 0..routers {
            let (plane, s) = (r / n_stops, r % n_stops);
            for d in 0..4 {
                let t = nbr[s * 4 + d];
                if t != u32::MAX {
                    let tr = plane * n_stops + t as usize;
                    down[r * 4 + d] = tr as u32;
                    down_cycles[r * 4 + d] = sa_st + link[s * 4 + d];
                }
                // Input port d holds flits that travelled in direction d; upstream is the
                // neighbour in the opposite direction, whose output port is d.
                let u = nbr[s * 4 + (d ^ 1)];
                if u != u32::MAX {
                    let ur = plane * n_stops + u as usize;
                    up[r * 4 + d] = ur as u32;
                    up_cycles[r * 4 + d] = link[u as usize * 4 + d] + credit_delay;
                }
            }
        }
        let xy: Vec<(u16, u16)> = (0..n_stops as u32)
            .map(|s| ((s % g.cols) as u16, (s / g.cols) as u16))
            .collect();
        let inject = u64::from(g.inject_cycles);
        // A delay of zero cycles (zero-cycle links without credit delay, or zero-cycle
        // injection) lands one turn of the former time wheel later, as it did there (the
        // current cycle's arrivals are taken before anything is sent).
        let span = (sa_st + max_link + credit_delay + inject + u64::from(g.eject_cycles) + 4)
            .next_power_of_two();
        let line_delay = |d: u64| if d == 0 { span } else { d };
        for d in up_cycles.iter_mut() {
            *d = line_delay(*d);
        }
        let inject_line = line_delay(inject);
        let longest = down_cycles
            .iter()
            .chain(up_cycles.iter())
            .copied()
            .chain([inject_line])
            .max()
            .unwrap_or(1);
        let line_len = (longest + 1).next_power_of_two();
        let src_base = nivc;
        let mut credits = vec![n.buffer_flits; nivc + planes * n_stops * c];
        let in_use = vec![false; credits.len()];
        // Ejection outputs never run out of credits.
        for r in 0..routers {
            for v in 0..c {
                credits[(r * PORTS + LOCAL) * c + v] = u32::MAX / 2;
            }
        }
        Iq {
            n_stops,
            yx: g.routing == crate::spec::Routing::Yx,
            planes,
            c,
            shift: c.trailing_zeros(),
            vcs,
            shared,
            buf_flits,
            buf_cap,
            cap_shift: buf_cap.trailing_zeros(),
            class_bits: if vcs >= 64 {
                u64::MAX
            } else {
                (1u64 << vcs) - 1
            },
            rd: u64::from(n.routing_delay),
            va: u64::from(n.vc_alloc_delay),
            sa_st,
            iters: n.alloc_iters as usize,
            eject: u64::from(g.eject_cycles),
            router_xy: (0..routers).map(|r| xy[r % n_stops]).collect(),
            xy,
            down,
            down_cycles,
            up,
            up_cycles,
            buf: vec![Flit::default(); nivc * buf_cap],
            arr: if n.routing_delay > 0 {
                vec![0; nivc * buf_cap]
            } else {
                Vec::new()
            },
            vc: vec![
                VcState {
                    ready: 0,
                    head: 0,
                    len: 0,
                    out_port: NONE8,
                    out_vc: NONE8,
                    front: Flit::default(),
                };
                nivc
            ],
            rs: vec![RouterState::default(); routers],
            credits,
            in_use,
            src_base,
            va_gptr: vec![0; nivc],
            va_aptr: vec![0; nivc],
            line_shift: line_len.trailing_zeros(),
            line_mask: line_len - 1,
            flit_line: vec![
                Arrival {
                    flit: Flit::default(),
                    vc: NONE8,
                };
                routers * PORTS * line_len as usize
            ],
            line_bits: vec![0; routers * line_len as usize],
            credit_line: vec![NONE8; routers * 4 * line_len as usize],
            source_credit_line: vec![NONE8; routers * line_len as usize],
            inject_line,
            sources: (0..planes * n_stops)
                .map(|_| Source {
                    queue: VecDeque::new(),
                    cur: u32::MAX,
                    pk: Queued {
                        id: u32::MAX,
                        dst: 0,
                        flits: 0,
                        vn: 0,
                        created: 0,
                    },
                    seq: 0,
                    vc: NONE8,
                    rr: 0,
                })
                .collect(),
            pkts: Vec::new(),
            free_pkts: Vec::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            now: 0,
            window,
            measured_in_flight: 0,
            acc: Vec::new(),
            lat_sum: Vec::new(),
            lat_n: Vec::new(),
            hop_sum: Vec::new(),
            link_sum: Vec::new(),
            path_links: PathLinks::new(g),
            hops_hist: Vec::new(),
            stop_node: model.stop_node.iter().map(|&n| n as u16).collect(),
            n_nodes: model.nodes.len(),
            node_pkts: vec![0; model.nodes.len() * model.nodes.len() * 4],
            app_mode: false,
            closed: Closed::default(),
            gated: false,
            link_busy: vec![0; routers * 4],
            router_cycles: 0,
            va_req: Vec::new(),
            va_gmask: vec![0; 64],
            bits_va: PORTS * c <= 64,
            holder: vec![0; nivc],
            lo: 0,
            span: routers,
            outbox: Vec::new(),
            shard_of: Vec::new(),
            handoff: false,
            new_pkts: Vec::new(),
            delivered: Vec::new(),
        }
    }

    /// Plane and class of a virtual network.
    #[inline]
    fn plane_class(&self, vn: u8) -> (usize, usize) {
        if self.shared {
            (0, vn as usize)
        } else {
            (vn as usize, 0)
        }
    }

    fn create(&mut self, src: u32, dst: u32, vn: u8, flits: u32, flow: u32, gate: u32) {
        let measured = self.now >= self.window.0 && self.now < self.window.1;
        let (sx, sy) = self.xy[src as usize];
        let (dx, dy) = self.xy[dst as usize];
        let p = Pkt {
            dst: dst as u16,
            vn,
            measured,
            flow,
            hops: sx.abs_diff(dx) + sy.abs_diff(dy),
            links: self
                .path_links
                .cycles((sx, sy), (dx, dy))
                .min(u32::from(u16::MAX)) as u16,
            snode: self.stop_node[src as usize],
            gate,
            created: self.now,
        };
        let id = match self.free_pkts.pop() {
            Some(i) => {
                self.pkts[i as usize] = p;
                i
            }
            None => {
                self.pkts.push(p);
                (self.pkts.len() - 1) as u32
            }
        };
        if measured {
            self.measured_in_flight += 1;
        }
        let (plane, _) = self.plane_class(vn);
        let q = Queued {
            id,
            dst: dst as u16,
            flits: flits as u16,
            vn,
            created: self.now,
        };
        let si = plane * self.n_stops + src as usize;
        if self.handoff {
            self.new_pkts.push((si as u32, q));
        } else {
            self.sources[si].queue.push_back(q);
        }
    }

    /// Sends flit `f` to VC `vc` of input port `p` of router `r`, arriving at cycle `at`.
    #[inline]
    fn send_flit<const SHARD: bool>(&mut self, at: u64, r: usize, p: usize, vc: usize, f: Flit) {
        if SHARD && r.wrapping_sub(self.lo) >= self.span {
            self.outbox[usize::from(self.shard_of[r])].push(Msg {
                at,
                r: r as u32,
                port: p as u8,
                vc: vc as u8,
                credit: false,
                flit: f,
            });
            return;
        }
        let line = (r << self.line_shift) + (at & self.line_mask) as usize;
        debug_assert!(self.line_bits[line] & (1 << p) == 0);
        self.line_bits[line] |= 1 << p;
        self.flit_line[line * PORTS + p] = Arrival {
            flit: f,
            vc: vc as u8,
        };
    }

    /// Sends a credit of VC `vc` back to output port `o` of router `r`, arriving at cycle
    /// `at`.
    #[inline]
    fn send_credit<const SHARD: bool>(&mut self, at: u64, r: usize, o: usize, vc: usize) {
        if SHARD && r.wrapping_sub(self.lo) >= self.span {
            self.outbox[usize::from(self.shard_of[r])].push(Msg {
                at,
                r: r as u32,
                port: o as u8,
                vc: vc as u8,
                credit: true,
                flit: Flit::default(),
            });
            return;
        }
        let line = (r << self.line_shift) + (at & self.line_mask) as usize;
        debug_assert!(self.line_bits[line] & (0x100 << o) == 0);
        self.line_bits[line] |= 0x100 << o;
        self.credit_line[line * 4 + o] = vc as u8;
    }

    fn inject<const SHARD: bool>(&mut self) {
        let now = self.now;
        let c = self.c;
        let line = (now & self.line_mask) as usize;
        for si in self.lo..self.lo + self.span {
            // The credit coming back to the source in this cycle.
            let cs = (si << self.line_shift) + line;
            let v = self.source_credit_line[cs];
            if v != NONE8 {
                self.source_credit_line[cs] = NONE8;
                self.credits[self.src_base + si * c + usize::from(v)] += 1;
            }
            let src = &self.sources[si];
            let pk = if src.cur != u32::MAX {
                src.pk
            } else {
                match src.queue.front() {
                    Some(&q) if q.created < now => q,
                    _ => continue,
                }
            };
            let id = pk.id;
            let base = self.src_base + si * c;
            let src = &self.sources[si];
            let (seq, vc) = if src.cur == u32::MAX {
                // A new packet: a free injection VC of its class with a credit, round robin.
                let (_, class) = self.plane_class(pk.vn);
                let lo = class * self.vcs;
                let mut found = NONE8;
                for i in 0..self.vcs {
                    let v = lo + (usize::from(src.rr) + i) % self.vcs;
                    if !self.in_use[base + v] && self.credits[base + v] > 0 {
                        found = v as u8;
                        break;
                    }
                }
                if found == NONE8 {
                    continue;
                }
                (0u16, found)
            } else {
                if self.credits[base + usize::from(src.vc)] == 0 {
                    continue;
                }
                (src.seq, src.vc)
            };
            let o = base + usize::from(vc);
            self.credits[o] -= 1;
            let tail = seq + 1 == pk.flits;
            let src = &mut self.sources[si];
            if seq == 0 {
                src.queue.pop_front();
                src.rr = ((usize::from(vc) % self.vcs + 1) % self.vcs) as u8;
            }
            if tail {
                src.cur = u32::MAX;
                src.vc = NONE8;
                self.in_use[o] = false;
            } else {
                src.cur = id;
                src.pk = pk;
                src.seq = seq + 1;
                src.vc = vc;
                self.in_use[o] = true;
            }
            // Source `si` feeds the local input port of router `si`.
            let flags = if seq == 0 { HEAD } else { 0 } | if tail { TAIL } else { 0 };
            self.send_flit::<SHARD>(
                now + self.inject_line,
                si,
                LOCAL,
                usize::from(vc),
                Flit::new(id, pk.dst, pk.vn, flags),
            );
        }
    }

    /// Takes the flits and credits reaching router `r` in this cycle (`bits` of delay-line
    /// slot `line`; they touch only
    /// the router's own state, so taking them router by router, just before the router's
    /// step, is the same as taking all of them first).
    #[inline(always)]
    fn receive(&mut self, r: usize, line: usize, bits: u16) {
        let now = self.now;
        let c = self.c;
        let mut m = bits >> 8;
        while m != 0 {
            let o = m.trailing_zeros() as usize;
            m &= m - 1;
            let v = usize::from(self.credit_line[line * 4 + o]);
            let k = (r * PORTS + o) * c + v;
            let was = self.credits[k];
            self.credits[k] = was + 1;
            // The first credit back unblocks the input VC holding the output VC.
            let unblock = was == 0 && self.rs[r].out_busy[o] & (1u64 << v) != 0;
            let iv = usize::from(self.holder[k]);
            self.rs[r].blocked[iv >> self.shift] &= !(u64::from(unblock) << (iv & (c - 1)));
        }
        let mut m = bits & 0x1f;
        while m != 0 {
            let p = m.trailing_zeros() as usize;
            m &= m - 1;
            let rp = r * PORTS + p;
            let a = self.flit_line[line * PORTS + p];
            let f = a.flit;
            let v = usize::from(a.vc);
            let ivc = rp * c + v;
            let st = &mut self.vc[ivc];
            let l = usize::from(st.len);
            debug_assert!(
                l < self.buf_flits,
                "credit flow control overflowed a buffer"
            );
            st.len += 1;
            if l == 0 {
                st.front = f;
                let bit = 1u64 << v;
                if f.flags() & HEAD != 0 {
                    st.ready = now + self.rd;
                    self.rs[r].need_va[p] |= bit;
                } else {
                    st.ready = now;
                }
                self.rs[r].mask[p] |= bit;
                self.rs[r].busy |= 1 << p;
            } else {
                // Behind the front flit: into the ring.
                let slot =
                    (ivc << self.cap_shift) + ((usize::from(st.head) + l - 1) & (self.buf_cap - 1));
                self.buf[slot] = f;
                if self.rd > 0 {
                    self.arr[slot] = now;
                }
            }
        }
    }

    /// Grants output VC `ov` of port `o` of router `r` to input VC `iv` (`port * c + vc`)
    /// and, in an allocator's first iteration, moves the iSLIP pointers past the match.
    #[inline]
    fn va_match(&mut self, r: usize, iv: usize, o: usize, ov: usize, first_iter: bool) {
        let c = self.c;
        let nv = PORTS * c;
        if first_iter {
            let oi = o * c + ov;
            let next = iv + 1;
            self.va_gptr[r * nv + oi] = if next == nv { 0 } else { next } as u16;
            let next = oi + 1;
            self.va_aptr[r * nv + iv] = if next == nv { 0 } else { next } as u16;
        }
        let ivc = r * nv + iv;
        let p = iv >> self.shift;
        let bit = 1u64 << (iv & (c - 1));
        self.vc[ivc].out_vc = ov as u8;
        self.vc[ivc].ready = self.now + self.va;
        let k = (r * PORTS + o) * c + ov;
        self.holder[k] = iv as u16;
        let no_credit = self.credits[k] == 0;
        let rs = &mut self.rs[r];
        rs.need_va[p] &= !bit;
        rs.out_busy[o] |= 1 << ov;
        rs.vc_out[p][o] |= bit;
        rs.blocked[p] = if no_credit {
            rs.blocked[p] | bit
        } else {
            rs.blocked[p] & !bit
        };
        rs.pending[p] |= bit;
    }

    /// The output VC of port `o` that input VC `iv` of router `r` accepts among the
    /// granting ones `g`: the first at or after its pointer, else the first.
    #[inline]
    fn va_accept(&self, r: usize, iv: usize, o: usize, g: u64) -> usize {
        let c = self.c;
        let a = usize::from(self.va_aptr[r * PORTS * c + iv]);
        if a > o * c && a < (o + 1) * c {
            let after = g & (u64::MAX << (a - o * c));
            if after != 0 {
                return after.trailing_zeros() as usize;
            }
        }
        g.trailing_zeros() as usize
    }

    /// VC allocation at router `r` when its input VCs fit one word (`PORTS * c <= 64`):
    /// the same iSLIP as [`Iq::vc_alloc`], on bit matrices. The requests are a mask of
    /// input VCs (bit `port * c + vc`) per group of output VCs they compete for (output
    /// port and class); an output VC grants the first requesting input VC at or after its
    /// pointer (else the first), an input VC accepts the first granting output VC at or
    /// after its pointer (else the first), both a `trailing_zeros` of a masked word. The
    /// groups share no output VC and no request, so allocating them one after the other
    /// (all iterations of one, then the next) makes the same choices as iterating over
    /// all of them together.
    // Inlined into both instances of `step_routers` (one thread, sharded), as it was
    // into the one before sharding: a call costs about 4% of all instructions.
    #[inline(always)]
    fn vc_alloc_bits(&mut self, r: usize) {
        let c = self.c;
        let now = self.now;
        let nv = PORTS * c;
        let rp0 = r * PORTS;
        let Iq {
            rs,
            vc,
            router_xy,
            xy,
            va_gptr,
            va_aptr,
            va_gmask,
            holder,
            credits,
            ..
        } = self;
        let rs = &mut rs[r];
        // Input VCs waiting for an output VC, bit `port * c + vc`.
        let mut waiting = 0u64;
        for (p, &m) in rs.need_va.iter().enumerate() {
            waiting |= m << (p * c);
        }
        if waiting == 0 {
            return;
        }
        let vcs = &mut vc[rp0 * c..(rp0 + PORTS) * c];
        let (x, y) = router_xy[r];
        let (shared, yx) = (self.shared, self.yx);
        // Requests per group (output port * 4 + class), and the groups with requests.
        let mut req = [0u64; PORTS * 4];
        let mut groups = 0u32;
        while waiting != 0 {
            let iv = waiting.trailing_zeros() as usize;
            waiting &= waiting - 1;
            let st = &mut vcs[iv];
            let f = st.front;
            debug_assert!(f.flags() & HEAD != 0 && st.out_vc == NONE8);
            let o = dor_port((x, y), xy[usize::from(f.dst())], yx);
            // A request only once its front flit's routing delay has passed (the route
            // is recorded either way, as `vc_alloc` does).
            let ready = st.ready <= now;
            st.out_port = if ready { o } else { st.out_port };
            let class = if shared { usize::from(f.vn()) } else { 0 };
            let g = usize::from(o) * 4 + class;
            req[g] |= u64::from(ready) << iv;
            groups |= u32::from(ready) << g;
        }
        let gptr = &mut va_gptr[r * nv..(r + 1) * nv];
        let aptr = &mut va_aptr[r * nv..(r + 1) * nv];
        let ready = now + self.va;
        let (shift, class_bits, nvcs, iters) = (self.shift, self.class_bits, self.vcs, self.iters);
        // Granted output VCs per input VC (all zero between calls).
        let gm = &mut va_gmask[..nv];
        while groups != 0 {
            let g = groups.trailing_zeros() as usize;
            groups &= groups - 1;
            let (o, class) = (g >> 2, g & 3);
            let ob = o * c;
            let mut reqs = req[g];
            for iter in 0..iters {
                let free = (class_bits << (class * nvcs)) & !rs.out_busy[o];
                if free == 0 || reqs == 0 {
                    break;
                }
                // Grant.
                let winners = if reqs & (reqs - 1) == 0 {
                    // A sole request is granted every free VC.
                    gm[reqs.trailing_zeros() as usize] = free;
                    reqs
                } else {
                    let mut winners = 0u64;
                    let mut f = free;
                    while f != 0 {
                        let ov = f.trailing_zeros() as usize;
                        f &= f - 1;
                        let iv = first_at_or_after(reqs, usize::from(gptr[ob + ov]));
                        gm[iv] |= 1 << ov;
                        winners |= 1 << iv;
                    }
                    winners
                };
                // Accept.
                let mut w = winners;
                while w != 0 {
                    let iv = w.trailing_zeros() as usize;
                    w &= w - 1;
                    let oi = first_at_or_after(gm[iv] << ob, usize::from(aptr[iv]));
                    gm[iv] = 0;
                    let ov = oi - ob;
                    if iter == 0 {
                        gptr[oi] = if iv + 1 == nv { 0 } else { iv + 1 } as u16;
                        aptr[iv] = if oi + 1 == nv { 0 } else { oi + 1 } as u16;
                    }
                    let p = iv >> shift;
                    let bit = 1u64 << (iv & (c - 1));
                    rs.need_va[p] &= !bit;
                    vcs[iv].out_vc = ov as u8;
                    vcs[iv].ready = ready;
                    rs.out_busy[o] |= 1 << ov;
                    let k = (rp0 + o) * c + ov;
                    rs.vc_out[p][o] |= bit;
                    holder[k] = iv as u16;
                    rs.blocked[p] = if credits[k] == 0 {
                        rs.blocked[p] | bit
                    } else {
                        rs.blocked[p] & !bit
                    };
                    rs.pending[p] |= bit;
                }
                reqs &= !winners;
            }
        }
    }

    /// VC allocation at router `r` (iSLIP: output VCs grant, input VCs accept).
    fn vc_alloc(&mut self, r: usize) {
        let c = self.c;
        let now = self.now;
        let rp0 = r * PORTS;
        {
            let Iq {
                rs,
                vc,
                va_req,
                router_xy,
                xy,
                ..
            } = self;
            let need = &rs[r].need_va;
            let vcs = &mut vc[rp0 * c..(rp0 + PORTS) * c];
            let (x, y) = router_xy[r];
            let (shared, yx, nvcs) = (self.shared, self.yx, self.vcs);
            va_req.clear();
            // Ports with requests, a bit each (visited in increasing order: fewer
            // mispredicted branches than testing every port).
            let mut ports = 0u8;
            for (p, &m) in need.iter().enumerate() {
                ports |= u8::from(m != 0) << p;
            }
            while ports != 0 {
                let p = ports.trailing_zeros() as usize;
                ports &= ports - 1;
                let mut m = need[p];
                while m != 0 {
                    let v = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let iv = p * c + v;
                    let st = &mut vcs[iv];
                    if st.ready > now {
                        continue;
                    }
                    let f = st.front;
                    debug_assert!(f.flags() & HEAD != 0 && st.out_vc == NONE8);
                    let o = dor_port((x, y), xy[usize::from(f.dst())], yx);
                    st.out_port = o;
                    let class = if shared { usize::from(f.vn()) } else { 0 };
                    va_req.push((iv as u16, o, (class * nvcs) as u8));
                }
            }
        }
        let nreq = self.va_req.len();
        if nreq == 0 {
            return;
        }
        let nv = PORTS * c;
        // Matched requests (bit per request; at most 64 are considered per cycle) and
        // matched output VCs per port.
        let nreq = nreq.min(64);
        let mut inmatch = 0u64;
        let mut outmatch = [0u64; PORTS];
        // Output VCs granted to each request in the current iteration.
        let mut gmask = std::mem::take(&mut self.va_gmask);
        for iter in 0..self.iters {
            // Grant: every free, unmatched output VC picks the unmatched requesting
            // input VC closest after its pointer.
            let mut granted = [0u64; PORTS];
            let mut any = false;
            gmask[..nreq].fill(0);
            for k in 0..nreq {
                if inmatch & (1 << k) != 0 {
                    continue;
                }
                let (_, o, lo) = self.va_req[k];
                let o = usize::from(o);
                // The group's output VCs (k is its first unmatched request: a group's
                // VCs are all handled when its first request comes).
                let free =
                    (self.class_bits << lo) & !self.rs[r].out_busy[o] & !outmatch[o] & !granted[o];
                if free == 0 {
                    continue;
                }
                granted[o] |= free;
                any = true;
                let sole =
                    self.va_req[..nreq]
                        .iter()
                        .enumerate()
                        .skip(k + 1)
                        .all(|(j, &(_, op, l2))| {
                            inmatch & (1 << j) != 0 || usize::from(op) != o || l2 != lo
                        });
                if sole {
                    gmask[k] |= free;
                    continue;
                }
                let mut f = free;
                while f != 0 {
                    let ov = f.trailing_zeros() as usize;
                    f &= f - 1;
                    let g = usize::from(self.va_gptr[r * nv + o * c + ov]);
                    // Requests are in increasing input-VC order: the closest after g is
                    // the first at or after g, else the first.
                    let mut first = usize::MAX;
                    let mut best = usize::MAX;
                    for (j, &(iv, op, l2)) in self.va_req[..nreq].iter().enumerate().skip(k) {
                        if inmatch & (1 << j) != 0 || usize::from(op) != o || l2 != lo {
                            continue;
                        }
                        if first == usize::MAX {
                            first = j;
                        }
                        if usize::from(iv) >= g {
                            best = j;
                            break;
                        }
                    }
                    if best == usize::MAX {
                        best = first;
                    }
                    gmask[best] |= 1 << ov;
                }
            }
            if !any {
                break;
            }
            // Accept: every input VC takes the granting output VC closest after its
            // pointer.
            for (k, &g) in gmask[..nreq].iter().enumerate() {
                if g == 0 {
                    continue;
                }
                let (iv, o, _) = self.va_req[k];
                let (iv, o) = (usize::from(iv), usize::from(o));
                let best = self.va_accept(r, iv, o, g);
                inmatch |= 1 << k;
                outmatch[o] |= 1 << best;
                self.va_match(r, iv, o, best, iter == 0);
            }
        }
        self.va_gmask = gmask;
    }

    /// Switch allocation and traversal at router `r`.
    fn sw_alloc<const SHARD: bool>(&mut self, r: usize) {
        let c = self.c;
        let now = self.now;
        // Per input port: the VCs that may request the switch (their front flit holds
        // an output VC with a credit and is ready).
        let mut elig = [0u64; PORTS];
        let mut want = [0u8; PORTS]; // bit per output
        let mut req_by_out = [0u8; PORTS]; // bit per input
        let mut wanted = 0u8; // outputs requested by any input
        let mut wanting = 0u8; // inputs requesting an output
        let mut multi = false; // an input requests two outputs or an output has two
        let rp0 = r * PORTS;
        // Ports with VCs that hold an output VC, a bit each (visited in increasing order).
        let va_delay = self.va;
        let gated = self.gated;
        let rs = &mut self.rs[r];
        let mut ports = 0u8;
        for p in 0..PORTS {
            ports |= u8::from(rs.mask[p] & !rs.need_va[p] != 0) << p;
        }
        while ports != 0 {
            let p = ports.trailing_zeros() as usize;
            ports &= ports - 1;
            let rp = rp0 + p;
            // VCs given an output VC lately: those whose ready cycle has come leave the
            // pending set. With a VC-allocation delay of one cycle (the reference
            // configuration) or none, that is every VC but those given one in this cycle
            // (none if no delay), without reading their ready cycles.
            let mut pend = rs.pending[p];
            if va_delay > 1 {
                let mut q = pend;
                while q != 0 {
                    let v = q.trailing_zeros() as usize;
                    q &= q - 1;
                    pend &= !(u64::from(self.vc[rp * c + v].ready <= now) << v);
                }
                rs.pending[p] = pend;
            } else {
                pend &= if va_delay == 1 { u64::MAX } else { 0 };
                rs.pending[p] = 0;
            }
            let mut e = rs.mask[p] & !rs.need_va[p] & !rs.blocked[p] & !pend;
            if gated {
                e = Self::ungated(
                    &self.vc,
                    &self.pkts,
                    &self.closed,
                    rp * c,
                    e & rs.vc_out[p][LOCAL],
                    e,
                );
            }
            let mut w = 0u8;
            for (o, &m) in rs.vc_out[p].iter().enumerate() {
                w |= u8::from(m & e != 0) << o;
            }
            if w == 0 {
                continue;
            }
            elig[p] = e;
            want[p] = w;
            wanting |= 1 << p;
            multi |= w & (w - 1) != 0 || wanted & w != 0;
            wanted |= w;
            let mut ww = w;
            while ww != 0 {
                let o = ww.trailing_zeros() as usize;
                ww &= ww - 1;
                req_by_out[o] |= 1 << p;
            }
        }
        if wanted == 0 {
            return;
        }
        let mut inmatch = [NONE8; PORTS];
        // Matched inputs, a bit each.
        let mut matched = 0u8;
        if !multi {
            // Every input requests one output and no two the same one: all match.
            matched = wanting;
            let mut ps = wanting;
            while ps != 0 {
                let p = ps.trailing_zeros() as usize;
                ps &= ps - 1;
                let o = want[p].trailing_zeros() as usize;
                inmatch[p] = o as u8;
                rs.sa_gptr[o] = NEXT_PORT[p];
                rs.sa_aptr[p] = NEXT_PORT[o];
            }
        } else {
            // iSLIP on bit masks: requests per output (bit per input), grants per input
            // (bit per output); the first set bit at or after a pointer wins.
            let mut in_free: u8 = 0x1f;
            let mut out_free: u8 = 0x1f;
            for iter in 0..self.iters {
                let mut grants_by_in = [0u8; PORTS];
                let mut granted = false;
                for (o, &req) in req_by_out.iter().enumerate() {
                    let m = req & in_free;
                    if m == 0 || out_free & (1 << o) == 0 {
                        continue;
                    }
                    let p = first_after(m, rs.sa_gptr[o]);
                    grants_by_in[p] |= 1 << o;
                    granted = true;
                }
                if !granted {
                    break;
                }
                for (p, &g) in grants_by_in.iter().enumerate() {
                    if g == 0 {
                        continue;
                    }
                    let o = first_after(g, rs.sa_aptr[p]);
                    inmatch[p] = o as u8;
                    matched |= 1 << p;
                    in_free &= !(1 << p);
                    out_free &= !(1 << o);
                    if iter == 0 {
                        rs.sa_gptr[o] = NEXT_PORT[p];
                        rs.sa_aptr[p] = NEXT_PORT[o];
                    }
                }
            }
        }
        let in_window = now >= self.window.0 && now < self.window.1;
        while matched != 0 {
            let p = matched.trailing_zeros() as usize;
            matched &= matched - 1;
            let o = usize::from(inmatch[p]);
            // The port's VC for that output: the first eligible one from the port's
            // round-robin pointer, else the first.
            let rs = &mut self.rs[r];
            let cand = rs.vc_out[p][o] & elig[p];
            let v = first_at_or_after(cand, usize::from(rs.sa_vc_rr[p]));
            rs.sa_vc_rr[p] = ((v + 1) & (c - 1)) as u8;
            self.traverse::<SHARD>(r, p, v, o, in_window);
        }
    }

    /// `e` without the VCs of `local` (VCs bound for the ejection port, the first at
    /// `vc0`) whose front packet a full controller queue cannot take: they stay at the
    /// ejection port. Out of line: only bounded controller queues call it.
    #[cold]
    #[inline(never)]
    fn ungated(vcs: &[VcState], pkts: &[Pkt], cl: &Closed, vc0: usize, local: u64, e: u64) -> u64 {
        let mut e = e;
        let mut q = local;
        while q != 0 {
            let v = q.trailing_zeros() as usize;
            q &= q - 1;
            let f = vcs[vc0 + v].front;
            if f.flags() & HEAD != 0 {
                let g = pkts[f.pkt() as usize].gate as usize;
                if g != NONE32 as usize && cl.gate_held[g] >= cl.gate_depth[g] {
                    e &= !(1u64 << v);
                }
            }
        }
        e
    }

    /// A packet's head leaves the network at its destination: a controller with a
    /// bounded queue takes its request (out of line, as [`Iq::ungated`]).
    #[cold]
    #[inline(never)]
    fn admit(&mut self, pkt: u32) {
        let p = &self.pkts[pkt as usize];
        if p.gate != NONE32 {
            let cl = &mut self.closed;
            cl.gate_held[p.gate as usize] += 1;
            cl.txns[p.flow as usize].admitted = true;
        }
    }

    /// Moves the front flit of VC `v` of input port `p` of router `r` through output `o`.
    #[inline]
    fn traverse<const SHARD: bool>(
        &mut self,
        r: usize,
        p: usize,
        v: usize,
        o: usize,
        in_window: bool,
    ) {
        let c = self.c;
        let now = self.now;
        let rp = r * PORTS + p;
        let ivc = rp * c + v;
        // The credit of the freed slot goes upstream.
        if p == LOCAL {
            // Router r is fed by source r.
            let slot =
                (r << self.line_shift) + ((now + self.inject_line) & self.line_mask) as usize;
            debug_assert!(self.source_credit_line[slot] == NONE8);
            self.source_credit_line[slot] = v as u8;
        } else {
            let up = self.up[r * 4 + p] as usize;
            self.send_credit::<SHARD>(now + self.up_cycles[r * 4 + p], up, p, v);
        }
        let st = &mut self.vc[ivc];
        let f = st.front;
        let ov = usize::from(st.out_vc);
        let k = (r * PORTS + o) * c + ov;
        if o != LOCAL {
            self.credits[k] -= 1;
        }
        let bit = 1u64 << v;
        let rs = &mut self.rs[r];
        // The last credit taken blocks the VC (ejection never runs out).
        rs.blocked[p] |= u64::from(self.credits[k] == 0) << v;
        // Leave the buffer.
        st.len -= 1;
        let tail = f.flags() & TAIL != 0;
        if tail {
            rs.out_busy[o] &= !(1u64 << ov);
            st.out_vc = NONE8;
            rs.vc_out[p][o] &= !bit;
            rs.blocked[p] &= !bit;
        }
        if st.len == 0 {
            rs.mask[p] &= !bit;
            rs.busy &= !(u8::from(rs.mask[p] == 0) << p);
        } else {
            // The next flit comes to the front from the ring.
            let slot = (ivc << self.cap_shift) + usize::from(st.head);
            st.head = ((usize::from(st.head) + 1) & (self.buf_cap - 1)) as u16;
            st.front = self.buf[slot];
            st.ready = if st.front.flags() & HEAD != 0 {
                rs.need_va[p] |= bit;
                if self.rd > 0 {
                    (self.arr[slot] + self.rd).max(now + 1)
                } else {
                    now + 1
                }
            } else {
                now + 1
            };
        }
        if o == LOCAL {
            if self.gated && f.flags() & HEAD != 0 {
                self.admit(f.pkt());
            }
            if tail {
                let at = now + self.sa_st + self.eject;
                #[cfg(debug_assertions)]
                let hops = f.hops;
                #[cfg(not(debug_assertions))]
                let hops = 0;
                if SHARD {
                    self.delivered.push((f.pkt(), at, hops));
                } else {
                    self.deliver(f.pkt(), at, hops);
                }
            }
        } else {
            if in_window {
                self.link_busy[r * 4 + o] += 1;
            }
            #[cfg(debug_assertions)]
            let f = Flit {
                hops: f.hops + 1,
                ..f
            };
            let d = self.down[r * 4 + o] as usize;
            self.send_flit::<SHARD>(now + self.down_cycles[r * 4 + o], d, o, ov, f);
        }
    }

    /// Packet `id` leaves the network at cycle `at`; its tail flit crossed `hops` links
    /// (counted in debug builds only, where it must be the packet's Manhattan distance).
    fn deliver(&mut self, id: u32, at: u64, hops: u16) {
        let p = self.pkts[id as usize];
        #[cfg(debug_assertions)]
        assert_eq!(p.hops, hops, "a packet's hops are its Manhattan distance");
        #[cfg(not(debug_assertions))]
        let _ = hops;
        self.free_pkts.push(id);
        let in_window = at >= self.window.0 && at < self.window.1;
        if p.measured {
            self.measured_in_flight -= 1;
        }
        // Statistics index and whether the packet counts: application packets by their
        // network when delivered in the window; others by flow when created in it.
        let (k, counted) = if self.app_mode {
            (usize::from(p.vn), in_window)
        } else {
            (p.flow as usize, p.measured)
        };
        if in_window {
            self.acc[k] += 1;
        }
        if counted {
            self.lat_sum[k] += at - p.created;
            self.lat_n[k] += 1;
            self.hop_sum[k] += u64::from(p.hops);
            self.link_sum[k] += u64::from(p.links);
            let v = usize::from(p.vn);
            let h = usize::from(p.hops) * 4 + v;
            if self.hops_hist.len() <= h {
                self.hops_hist.resize(h + 4 - h % 4, 0);
            }
            self.hops_hist[h] += 1;
            let d = self.stop_node[usize::from(p.dst)];
            self.node_pkts[(usize::from(p.snode) * self.n_nodes + usize::from(d)) * 4 + v] += 1;
        }
        if self.app_mode {
            self.event(at, EV_DELIVERED, p.flow);
        }
    }

    #[inline]
    fn event(&mut self, at: u64, kind: u8, id: u32) {
        self.closed.seq += 1;
        self.closed
            .events
            .push(Reverse((at, self.closed.seq, kind, id)));
    }

    /// Runs the application events due by now (new packets are injected from the next
    /// cycle on).
    fn run_events(&mut self, model: &Model, app: &App) {
        while let Some(&Reverse((t, _, kind, id))) = self.closed.events.peek() {
            if t > self.now {
                break;
            }
            self.closed.events.pop();
            match kind {
                EV_DELIVERED => {
                    let tx = &mut self.closed.txns[id as usize];
                    tx.step += 1;
                    if tx.step == 1 && self.closed.homes_bounded {
                        // The request reached its home: an entry of its tracker, or a
                        // wait off the network for one (CHI's retry: the home refuses
                        // it and grants a credit when an entry frees; the retry's own
                        // messages are not modeled).
                        let Step::Packet { to, .. } = tx.plan.steps[0] else {
                            unreachable!("a request starts with a packet to its home")
                        };
                        let g = self.closed.n_mcs + to as usize;
                        if self.closed.gate_depth[g] < u32::MAX {
                            if self.closed.gate_held[g] >= self.closed.gate_depth[g] {
                                self.closed.home_wait[g - self.closed.n_mcs].push_back(id);
                                continue;
                            }
                            self.closed.gate_held[g] += 1;
                            self.closed.txns[id as usize].home = g as u32;
                        }
                    }
                    self.advance(model, app, id);
                }
                EV_STEP => self.advance(model, app, id),
                EV_MEM_DONE => {
                    let tx = &mut self.closed.txns[id as usize];
                    tx.admitted = false;
                    if let Step::Memory { mc } = tx.plan.steps[tx.step as usize - 1] {
                        self.closed.gate_held[mc as usize] -= 1;
                    }
                    self.advance(model, app, id);
                }
                EV_HOME_FREE => {
                    let g = id as usize;
                    let next = self.closed.home_wait[g - self.closed.n_mcs].pop_front();
                    match next {
                        // The entry goes straight to the first request waiting for it.
                        Some(t) => {
                            self.closed.txns[t as usize].home = id;
                            self.advance(model, app, t);
                        }
                        None => self.closed.gate_held[g] -= 1,
                    }
                }
                _ => self.issue(model, app, id),
            }
        }
    }

    fn issue(&mut self, model: &Model, app: &App, slot: u32) {
        let k = self.closed.issue_counter[slot as usize];
        self.closed.issue_counter[slot as usize] = k.wrapping_add(1);
        let plan = draw_request(model, app, slot as usize, k, &mut self.rng);
        let tx = Txn {
            plan,
            step: 0,
            slot,
            start: self.now,
            admitted: false,
            home: NONE32,
        };
        let c = &mut self.closed;
        let id = match c.free_txns.pop() {
            Some(i) => {
                c.txns[i as usize] = tx;
                i
            }
            None => {
                c.txns.push(tx);
                (c.txns.len() - 1) as u32
            }
        };
        self.advance(model, app, id);
    }

    /// Runs a request's steps from its current one until it waits for something (as the
    /// output-queued engine's `advance`).
    fn advance(&mut self, model: &Model, app: &App, t: u32) {
        let now = self.now;
        let in_window = now >= self.window.0 && now < self.window.1;
        loop {
            let tx = self.closed.txns[t as usize];
            if tx.step >= tx.plan.len {
                self.closed.free_txns.push(t);
                return;
            }
            match tx.plan.steps[tx.step as usize] {
                Step::Packet { from, to, vn } => {
                    // A read request that a bounded controller queue must take on
                    // arrival. Write data is posted (CHI sends it only into a buffer the
                    // target granted): it takes an entry at the access, never waits for
                    // one in the network.
                    let next = tx.step as usize + 1;
                    let cl = &self.closed;
                    let gate = match tx.plan.steps().get(next) {
                        Some(&Step::Memory { mc })
                            if usize::from(vn) == crate::model::REQ
                                && cl.gate_depth[mc as usize] < u32::MAX =>
                        {
                            mc
                        }
                        _ => NONE32,
                    };
                    self.create(from, to, vn, model.flits[vn as usize], t, gate);
                    return;
                }
                Step::Lookup => {
                    self.closed.txns[t as usize].step += 1;
                    let c = u64::from(model.spec.slc.lookup_cycles);
                    if c > 0 {
                        self.event(now + c, EV_STEP, t);
                        return;
                    }
                }
                Step::Memory { mc } => {
                    self.closed.txns[t as usize].step += 1;
                    let m = mc as usize;
                    let info = &model.mcs[m];
                    let cl = &mut self.closed;
                    let (a, b) = (cl.mc_first[m], cl.mc_first[m + 1]);
                    let mut ch = a;
                    for i in a + 1..b {
                        if cl.chan_free[i] < cl.chan_free[ch] {
                            ch = i;
                        }
                    }
                    let start = (now as f64).max(cl.chan_free[ch]);
                    cl.chan_free[ch] = start + info.service_cycles;
                    if in_window {
                        cl.mc_count[m] += 1;
                        if cl.slot_node[tx.slot as usize] == info.node {
                            cl.mc_local[m] += 1;
                        }
                        cl.mc_busy[m] += info.service_cycles;
                    }
                    let done = (start + info.service_cycles + info.latency_cycles).ceil() as u64;
                    if cl.gate_depth[m] < u32::MAX {
                        // Held from leaving the network (or from here, when no packet
                        // brought it) until the access is done.
                        if !tx.admitted {
                            cl.gate_held[m] += 1;
                        }
                        self.event(done.max(now), EV_MEM_DONE, t);
                    } else {
                        self.event(done.max(now), EV_STEP, t);
                    }
                    return;
                }
                Step::Complete => {
                    self.closed.txns[t as usize].step += 1;
                    if tx.home != NONE32 {
                        self.closed.txns[t as usize].home = NONE32;
                        self.free_home(tx);
                    }
                    if in_window {
                        self.closed.done_count += 1;
                        self.closed.done_latency += now - tx.start;
                    }
                    self.event(now + u64::from(app.think_cycles), EV_ISSUE, tx.slot);
                }
            }
        }
    }

    /// Frees the home tracker entry of a request at its completion: a write's when its
    /// data has reached the home (the step before), a read's when the requester's
    /// CompAck gets there (a response packet of one flit from the requester to the home,
    /// timed at zero load: the response network is the least loaded).
    fn free_home(&mut self, tx: Txn) {
        let g = tx.home as usize;
        let home = (g - self.closed.n_mcs) as u32;
        let Step::Packet { from: core, .. } = tx.plan.steps[0] else {
            self.event(self.now, EV_HOME_FREE, g as u32);
            return;
        };
        let data_to_core = matches!(
            tx.plan.steps[tx.step as usize - 1],
            Step::Packet { to, vn, .. } if to == core && usize::from(vn) == crate::model::DAT
        );
        if !data_to_core {
            self.event(self.now, EV_HOME_FREE, g as u32);
            return;
        }
        let (a, b) = (self.xy[core as usize], self.xy[home as usize]);
        let hops = f64::from(a.0.abs_diff(b.0) + a.1.abs_diff(b.1));
        let links = f64::from(self.path_links.cycles(a, b));
        let link = if hops > 0.0 { links / hops } else { 0.0 };
        // `zero_load_latency` for one flit: the zero-hop figure plus a router and a link
        // per hop.
        let (zero, router) = self.closed.ack;
        let ack = (zero + hops * (router + link)).ceil() as u64;
        self.event(self.now + ack, EV_HOME_FREE, g as u32);
    }

    fn step_routers<const SHARD: bool>(&mut self) {
        for r in self.lo..self.lo + self.span {
            let line = (r << self.line_shift) + (self.now & self.line_mask) as usize;
            let bits = self.line_bits[line];
            if bits != 0 {
                self.line_bits[line] = 0;
                self.receive(r, line, bits);
            }
            if self.rs[r].busy == 0 {
                continue;
            }
            self.router_cycles += 1;
            if self.bits_va {
                self.vc_alloc_bits(r);
            } else {
                self.vc_alloc(r);
            }
            self.sw_alloc::<SHARD>(r);
        }
    }
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
/// meet once per simulated cycle ([`run_sharded`]). How many is measured, not assumed:
/// the same cycles are timed on one thread and sharded ([`SPLIT_CYCLE`]), and the
/// fastest wins ([`choose_shards`]; a small mesh on a host where threads meet slowly
/// stays on one thread, a large one or a host where they meet fast takes more).
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

fn run(
    model: &Model,
    work: &Workload,
    cfg: &DesConfig,
    sharding: Sharding,
) -> Result<IqResult, ModelError> {
    let g = &model.geo;
    if g.sockets > 1 {
        return Err(ModelError::Usage {
            msg: "the input-queued router (noc.router = \"input-queued\") models one socket; use noc.router = \"output-queued\" for two sockets".into(),
        });
    }
    let networks = match work {
        Workload::Synthetic { networks, .. } => usize::from((*networks).clamp(1, 4)),
        Workload::Flows { flows, .. } => flows
            .iter()
            .map(|f| usize::from(f.vn) + 1)
            .max()
            .unwrap_or(1),
        Workload::App(_) => 4,
    };
    if networks > 4 {
        return Err(ModelError::Usage {
            msg: "flows: virtual networks are 0-3".into(),
        });
    }
    let n = &model.spec.noc;
    if n.shared_links && networks as u32 * n.vcs > 64 {
        return Err(ModelError::Usage {
            msg: format!(
                "input-queued router with shared links: {networks} virtual networks x noc.vcs = {} is more than 64 VCs per port",
                n.vcs
            ),
        });
    }
    let flits = match work {
        Workload::Synthetic { traffic, .. } => traffic.flits,
        Workload::Flows { flits, .. } => *flits,
        Workload::App(_) => model.flits.iter().copied().max().unwrap_or(1),
    };
    if flits > 1024 {
        return Err(ModelError::Usage {
            msg: format!("input-queued router: packets of at most 1024 flits (got {flits})"),
        });
    }
    if g.stops_per_socket() > 1 << 16 {
        return Err(ModelError::Usage {
            msg: format!(
                "input-queued router: at most 65536 stops (got {})",
                g.stops_per_socket()
            ),
        });
    }
    // Input buffers: 16 bytes per flit slot; refuse what would not fit comfortably.
    let vcs_per_port =
        (n.vcs as usize * if n.shared_links { networks } else { 1 }).next_power_of_two() as u64;
    let planes = if n.shared_links { 1 } else { networks as u64 };
    let need = planes
        * u64::from(g.stops_per_socket())
        * PORTS as u64
        * vcs_per_port
        * (n.buffer_flits as u64).next_power_of_two()
        * 16;
    const MAX: u64 = 4 << 30;
    if need > MAX {
        return Err(ModelError::Usage {
            msg: format!(
                "input-queued router: the input buffers of {} stops need {}, more than the {} allowed; use fewer or shallower VCs (noc.vcs, noc.buffer_flits) or a smaller mesh",
                g.stops_per_socket(),
                numalab_schema::units::bytes(need),
                numalab_schema::units::bytes(MAX)
            ),
        });
    }
    let w0 = cfg.warmup_cycles;
    let w1 = w0 + cfg.measure_cycles.max(1);
    let mut sim = Iq::new(model, networks, cfg.seed, (w0, w1));
    let stops = g.stops_per_socket();
    let n_stats = match work {
        Workload::Synthetic { .. } | Workload::App(_) => networks,
        Workload::Flows { flows, .. } => flows.len(),
    };
    if let Workload::App(app) = work {
        sim.app_mode = true;
        let c = &mut sim.closed;
        for mc in &model.mcs {
            c.mc_first.push(c.chan_free.len());
            c.chan_free
                .extend(std::iter::repeat_n(0.0, mc.channels as usize));
        }
        c.mc_first.push(c.chan_free.len());
        c.mc_count = vec![0; model.mcs.len()];
        c.mc_local = vec![0; model.mcs.len()];
        c.mc_busy = vec![0.0; model.mcs.len()];
        c.n_mcs = model.mcs.len();
        c.gate_depth = model
            .mcs
            .iter()
            .map(|m| m.queue_depth.unwrap_or(u32::MAX))
            .collect();
        // Home trackers: the entries of every slice at the stop.
        let mut per_stop = vec![0u32; sim.n_stops];
        for sl in &model.slices {
            per_stop[sl.stop as usize] += 1;
        }
        c.gate_depth.extend(
            per_stop
                .iter()
                .map(|&k| match model.spec.slc.tracker_entries {
                    Some(e) if k > 0 => e.saturating_mul(k),
                    _ => u32::MAX,
                }),
        );
        c.gate_held = vec![0; c.gate_depth.len()];
        c.homes_bounded = c.gate_depth[c.n_mcs..].iter().any(|&d| d < u32::MAX);
        c.home_wait = vec![VecDeque::new(); sim.n_stops];
        let zero = zero_load_latency(model, 0.0, 1, 0.0);
        c.ack = (zero, zero_load_latency(model, 1.0, 1, 0.0) - zero);
        sim.gated = c.gate_depth[..c.n_mcs].iter().any(|&d| d < u32::MAX);
        c.slot_node = app.cores.iter().map(|&k| model.cores[k].node).collect();
        c.issue_counter = (0..app.cores.len() as u32).collect();
        // Stagger the first requests as the output-queued engine does.
        for slot in 0..app.cores.len() as u32 {
            for j in 0..app.outstanding {
                sim.event(u64::from(j) + u64::from(slot % 4), EV_ISSUE, slot);
            }
        }
    }
    sim.acc = vec![0; n_stats];
    sim.lat_sum = vec![0; n_stats];
    sim.lat_n = vec![0; n_stats];
    sim.hop_sum = vec![0; n_stats];
    sim.link_sum = vec![0; n_stats];
    for f in match work {
        Workload::Flows { flows, .. } => flows.as_slice(),
        _ => &[],
    } {
        if f.src >= stops || f.dst >= stops {
            return Err(ModelError::Usage {
                msg: format!("flow {} -> {}: stops are 0-{}", f.src, f.dst, stops - 1),
            });
        }
    }
    let limit = w1 + cfg.drain_cycles;
    let routers = sim.planes * sim.n_stops;
    // A delay of zero cycles between routers (a flit or credit arriving in the cycle it
    // is sent) would need one thread's order; the pipeline's switch allocation takes a
    // cycle at least (the spec's check), so this is a guard.
    // Every shard holds a whole simulator's arrays (it uses its own routers' part), so
    // the shards, this thread's simulator and a trial's copy of it ([`SPLIT_CYCLE`])
    // together stay within the buffers' bound.
    let copies = (MAX / need.max(1)).max(1) as usize;
    let asked = match sharding {
        Sharding::Auto(threads) => threads.min(
            std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1),
        ),
        Sharding::Exactly { shards, .. } => shards,
    };
    let max_shards = asked
        .min(routers / 2)
        .min(usize::from(u16::MAX))
        .min(copies.saturating_sub(2))
        .max(1);
    let zero_delay = (0..routers * 4).any(|k| sim.down[k] != u32::MAX && sim.down_cycles[k] == 0);
    let shardable = max_shards > 1 && !sim.app_mode && !sim.gated && !zero_delay;
    let mut choice = None;
    // The shards, and whether the run ended on one thread before it could split.
    let (shards, ended) = match sharding {
        _ if !shardable => (1, false),
        Sharding::Exactly { shards, from } => {
            if run_one(&mut sim, model, work, w1, limit, Some(from))? {
                (1, true)
            } else {
                (shards.min(max_shards), false)
            }
        }
        Sharding::Auto(_) => {
            let half = SPLIT_CYCLE / 2;
            if run_one(&mut sim, model, work, w1, limit, Some(half))? {
                (1, true)
            } else {
                // Trials first, on copies from this cycle, each over the cycles one
                // thread runs next (to the split or the run's end, whichever is first).
                let last = (SPLIT_CYCLE - 1).min(limit);
                let mut trials: Vec<(usize, f64)> = Vec::new();
                let mut k = 2;
                loop {
                    let mut copy = sim.clone();
                    let ns = run_sharded(&mut copy, model, work, k, (w0, w1), last)?;
                    let better = trials.iter().all(|&(_, t)| ns < t);
                    trials.push((k, ns));
                    if !better || k == max_shards {
                        break;
                    }
                    k = (k * 2).min(max_shards);
                }
                let from = sim.now;
                let t0 = std::time::Instant::now();
                let ended = run_one(&mut sim, model, work, w1, limit, Some(SPLIT_CYCLE))?;
                // Cycles run: to the split, or through the last one.
                let to = sim.now + u64::from(ended);
                let one_ns = t0.elapsed().as_nanos() as f64 / (to - from).max(1) as f64;
                let shards = if ended {
                    1
                } else {
                    choose_shards(one_ns, &trials)
                };
                choice = Some(ShardChoice {
                    cycles: (from, to),
                    one_ns,
                    trials,
                    max: max_shards,
                    shards,
                });
                (shards, ended)
            }
        }
    };
    if shards > 1 {
        run_sharded(&mut sim, model, work, shards, (w0, w1), limit)?;
    } else if !ended {
        run_one(&mut sim, model, work, w1, limit, None)?;
    }
    let drained = sim.app_mode || sim.measured_in_flight == 0;
    let m = (w1 - w0) as f64;
    let flows: Vec<FlowFigures> = (0..n_stats)
        .map(|k| FlowFigures {
            accepted: sim.acc[k] as f64 / m,
            latency_cycles: sim.lat_sum[k] as f64 / sim.lat_n[k].max(1) as f64,
            delivered: sim.lat_n[k],
        })
        .collect();
    let total_n: u64 = sim.lat_n.iter().sum();
    let tf = total_n.max(1) as f64;
    let mut f = Figures {
        engine: "des".into(),
        measured_cycles: w1 - w0,
        ..Default::default()
    };
    f.packets_per_cycle = sim.acc.iter().sum::<u64>() as f64 / m;
    f.packet_latency_cycles = sim.lat_sum.iter().sum::<u64>() as f64 / tf;
    let hops_all: Vec<u64> = sim.hops_hist.chunks(4).map(|c| c.iter().sum()).collect();
    f.mean_hops = hops_all
        .iter()
        .enumerate()
        .map(|(h, n)| h as f64 * *n as f64)
        .sum::<f64>()
        / tf;
    f.hop_histogram = hops_all.iter().map(|&n| n as f64 / tf).collect();
    let counts: Vec<f64> = sim.node_pkts.iter().map(|&n| n as f64).collect();
    // Application packets count by delivery in the window (a rate over it); others are
    // those created in the window (all delivered when drained).
    let (all, mut per_vn) = node_matrices(&counts, sim.n_nodes, m);
    f.node_packets_per_cycle = all;
    f.max_link_utilization = sim
        .link_busy
        .iter()
        .map(|&b| b as f64 / m)
        .fold(0.0, f64::max);
    if let Workload::Synthetic { .. } | Workload::App(_) = work {
        // Queueing: latency beyond the pipeline's zero-load latency for the packets' hops
        // and the link cycles of their paths (boundary links included).
        f.vns = (0..4)
            .map(|v| {
                let fl = flows.get(v).copied().unwrap_or_default();
                let vn_flits = match work {
                    Workload::App(_) => model.flits[v],
                    _ => flits,
                };
                let queueing = if fl.delivered > 0 {
                    let hops = sim.hop_sum[v] as f64 / fl.delivered as f64;
                    let link = if sim.hop_sum[v] > 0 {
                        sim.link_sum[v] as f64 / sim.hop_sum[v] as f64
                    } else {
                        0.0
                    };
                    (fl.latency_cycles - zero_load_latency(model, hops, vn_flits, link)).max(0.0)
                } else {
                    0.0
                };
                let nv = fl.delivered.max(1) as f64;
                VnFigures {
                    vn: crate::model::VN_NAMES[v].into(),
                    packets_per_cycle: fl.accepted,
                    queueing_cycles: queueing,
                    latency_cycles: fl.latency_cycles,
                    max_link_utilization: if v < networks {
                        f.max_link_utilization
                    } else {
                        0.0
                    },
                    hop_histogram: sim.hops_hist.chunks(4).map(|c| c[v] as f64 / nv).collect(),
                    node_packets_per_cycle: std::mem::take(&mut per_vn[v]),
                }
            })
            .collect();
    }
    f.saturated = !drained || f.max_link_utilization > 0.98;
    if sim.app_mode {
        let c = &sim.closed;
        // A closed loop has packets in flight at the end by design: not a drain failure.
        crate::traffic::AppCounts {
            done_count: c.done_count,
            done_latency: c.done_latency,
            mc_count: &c.mc_count,
            mc_local: &c.mc_local,
            mc_busy: &c.mc_busy,
        }
        .fill(&mut f, model, m);
    }
    let stats = SimStats {
        cycles: sim.now,
        routers: (sim.planes * sim.n_stops) as u64,
        events: sim.router_cycles,
        drained,
    };
    Ok(IqResult {
        figures: f,
        flows,
        stats,
        threads: shards,
        sharding: choice,
    })
}

/// The cycle loop on this thread, from the current cycle until the run ends (true) or
/// cycle `until` is about to start (false).
fn run_one(
    sim: &mut Iq,
    model: &Model,
    work: &Workload,
    w1: u64,
    limit: u64,
    until: Option<u64>,
) -> Result<bool, ModelError> {
    loop {
        if until.is_some_and(|u| sim.now >= u) {
            return Ok(false);
        }
        if sim.now & 0xffff == 0 && numalab_schema::interrupt::requested() {
            return Err(ModelError::Interrupted);
        }
        sim.step_routers::<false>();
        sim.inject::<false>();
        // New packets (injected from the next cycle on).
        if let Workload::App(app) = work {
            sim.run_events(model, app);
            // A closed loop is measured over its window only.
            if sim.now + 1 >= w1 {
                return Ok(true);
            }
        } else {
            generate(sim, model, work);
        }
        if sim.now >= limit || (sim.now >= w1 && sim.measured_in_flight == 0) {
            return Ok(true);
        }
        sim.now += 1;
    }
}

/// New packets of a synthetic or flow workload in this cycle (injected from the next on).
fn generate(sim: &mut Iq, model: &Model, work: &Workload) {
    let stops = model.geo.stops_per_socket();
    match work {
        Workload::Synthetic { traffic, networks } => {
            let networks = usize::from((*networks).clamp(1, 4));
            let p = traffic.rate;
            if p > 0.0 {
                for s in 0..stops {
                    if sim.rng.random::<f64>() < p {
                        let (u, v) = (sim.rng.random::<f64>(), sim.rng.random::<f64>());
                        if let Some(d) = traffic.sample(model, s, u, v) {
                            let vn = if networks > 1 {
                                sim.rng.random_range(0..networks) as u8
                            } else {
                                0
                            };
                            sim.create(s, d, vn, traffic.flits.max(1), u32::from(vn), NONE32);
                        }
                    }
                }
            }
        }
        Workload::Flows { flows, flits } => {
            for (k, f) in flows.iter().enumerate() {
                if sim.rng.random::<f64>() < f.rate {
                    sim.create(f.src, f.dst, f.vn, (*flits).max(1), k as u32, NONE32);
                }
            }
        }
        Workload::App(_) => {}
    }
}

/// A barrier that spins (then yields) rather than sleeps: a sharded simulation meets at
/// one twice per simulated cycle, a few microseconds apart. A thread that panics poisons
/// it ([`Poison`]), so that the others stop waiting and panic too.
struct SpinBarrier {
    n: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    poisoned: AtomicBool,
}

impl SpinBarrier {
    /// Panics if another thread panicked (it will never arrive).
    fn check(&self) {
        if self.poisoned.load(Ordering::Relaxed) {
            panic!("another thread of the sharded simulation panicked");
        }
    }

    fn wait(&self) {
        let g = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.store(g.wrapping_add(1), Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == g {
            self.check();
            if spins < 256 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// A mailbox's contents (a panic elsewhere poisons the barrier, not this).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Poisons its barrier when dropped by a panicking thread.
struct Poison<'a>(&'a SpinBarrier);

impl Drop for Poison<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poisoned.store(true, Ordering::Relaxed);
        }
    }
}

/// The cycle loop of [`simulate`] on `shards` threads, from `sim`'s current cycle to the
/// end of the run or cycle `limit`; returns the nanoseconds a cycle took. Each
/// shard is an [`Iq`] that steps a contiguous range of routers and their sources; every flit and credit takes at
/// least a cycle to arrive, so within a cycle the routers are independent, and what a
/// router sends to another shard's router is handed over at the cycle's end (a mailbox
/// per shard and cycle parity) and placed in that router's delay line before its next
/// step. `sim` keeps the packet table, the random numbers and the statistics on this
/// thread: after each cycle it takes the delivered packets (in shard order, which is
/// router order) and creates the new ones, exactly as one thread does, so the figures
/// are the same bits on any number of threads.
///
/// One barrier per cycle: while this thread does that bookkeeping for cycle `t`, the
/// other shards already step their routers for `t + 1` (which needs none of it) and wait
/// only before injecting (which needs the packets created in `t`). This thread's own
/// shard is smaller by the bookkeeping's share, so that both sides take about as long.
fn run_sharded(
    sim: &mut Iq,
    model: &Model,
    work: &Workload,
    shards: usize,
    window: (u64, u64),
    limit: u64,
) -> Result<f64, ModelError> {
    let routers = sim.planes * sim.n_stops;
    // Bounds: the first shard (this thread's) gets its share less the bookkeeping's,
    // about a router's step per 16 routers on this host's measurements (it delivers and
    // creates every packet), and at least a quarter of its share.
    let k = shards;
    let first = ((routers * (16 + 1 - k.min(16))) / (16 * k))
        .max(routers / (4 * k))
        .max(1);
    let mut bounds = vec![0, first];
    for i in 1..k {
        bounds.push(first + i * (routers - first) / (k - 1));
    }
    // The shards start from this simulator's state after the cycles it ran on its own
    // (none, or the cycles before the split): each is a copy that steps its own routers
    // and sources from there. The packet table and the statistics stay here; the link
    // counts and router steps each shard adds are summed at the end.
    let mut shard_of = vec![0u16; routers];
    for i in 0..k {
        shard_of[bounds[i]..bounds[i + 1]].fill(i as u16);
    }
    let pkts = std::mem::take(&mut sim.pkts);
    let mut parts: Vec<Iq> = (0..k)
        .map(|i| {
            let mut p = sim.clone();
            p.shard_of.clone_from(&shard_of);
            p.outbox = vec![Vec::new(); k];
            p.lo = bounds[i];
            p.span = bounds[i + 1] - bounds[i];
            p.link_busy.fill(0);
            p.router_cycles = 0;
            p
        })
        .collect();
    sim.pkts = pkts;
    sim.handoff = true;
    // Per shard and cycle parity: flits and credits from other shards, and its delivered
    // packets; per shard: the packets created for its sources.
    type Mailbox<T> = Vec<[Mutex<Vec<T>>; 2]>;
    let mailbox: Mailbox<Msg> = (0..k).map(|_| Default::default()).collect();
    let done: Mailbox<(u32, u64, u16)> = (0..k).map(|_| Default::default()).collect();
    let fresh: Vec<Mutex<Vec<(u32, Queued)>>> = (0..k).map(|_| Mutex::new(Vec::new())).collect();
    let barrier = SpinBarrier {
        n: k,
        arrived: AtomicUsize::new(0),
        generation: AtomicUsize::new(0),
        poisoned: AtomicBool::new(false),
    };
    // Cycles whose bookkeeping is done (new packets handed over), and whether the run
    // ends there.
    let booked = AtomicU64::new(sim.now);
    let stop = AtomicBool::new(false);
    // Router-cycles of each shard up to the end of each cycle parity: a shard may have
    // stepped one cycle past the last when it learns that it was the last.
    let counted: Vec<[AtomicU64; 2]> = (0..k)
        .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
        .collect();
    // A shard's routers in its cycle.
    let step = |p: &mut Iq, i: usize, scratch: &mut Vec<Msg>| {
        let parity = (p.now & 1) as usize;
        std::mem::swap(&mut *lock(&mailbox[i][parity ^ 1]), scratch);
        for m in scratch.drain(..) {
            if m.credit {
                p.send_credit::<true>(m.at, m.r as usize, usize::from(m.port), usize::from(m.vc));
            } else {
                p.send_flit::<true>(
                    m.at,
                    m.r as usize,
                    usize::from(m.port),
                    usize::from(m.vc),
                    m.flit,
                );
            }
        }
        p.step_routers::<true>();
        counted[i][parity].store(p.router_cycles, Ordering::Relaxed);
    };
    // Its sources in its cycle, once the packets created in the cycle before are in.
    let inject = |p: &mut Iq, i: usize| {
        let parity = (p.now & 1) as usize;
        for (si, q) in lock(&fresh[i]).drain(..) {
            p.sources[si as usize].queue.push_back(q);
        }
        p.inject::<true>();
        for (out, slots) in p.outbox.iter_mut().zip(&mailbox) {
            if !out.is_empty() {
                lock(&slots[parity]).append(out);
            }
        }
        lock(&done[i][parity]).append(&mut p.delivered);
        p.now += 1;
    };
    let mut outcome = Ok(());
    let start = sim.now;
    let mut end_cycle = start;
    // The time of the cycles after the first (which waits for the threads to start and
    // finds cold caches) up to the last (not the threads' ending).
    let t0 = std::time::Instant::now();
    let mut timed = (t0, t0);
    std::thread::scope(|scope| {
        let (own, rest) = parts.split_first_mut().expect("at least two shards");
        let (step, inject, barrier, stop, booked) = (&step, &inject, &barrier, &stop, &booked);
        for (j, p) in rest.iter_mut().enumerate() {
            scope.spawn(move || {
                let _poison = Poison(barrier);
                let mut scratch = Vec::new();
                let i = j + 1;
                loop {
                    step(p, i, &mut scratch);
                    // The packets created in the cycle before this one.
                    let mut spins = 0u32;
                    while booked.load(Ordering::Acquire) < p.now {
                        barrier.check();
                        if spins < 256 {
                            std::hint::spin_loop();
                            spins += 1;
                        } else {
                            std::thread::yield_now();
                        }
                    }
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    inject(p, i);
                    barrier.wait();
                }
            });
        }
        let _poison = Poison(barrier);
        let mut scratch = Vec::new();
        loop {
            step(own, 0, &mut scratch);
            inject(own, 0);
            barrier.wait();
            let parity = (sim.now & 1) as usize;
            for d in &done {
                for (id, at, hops) in lock(&d[parity]).drain(..) {
                    sim.deliver(id, at, hops);
                }
            }
            generate(sim, model, work);
            let mut by_shard: Vec<Vec<(u32, Queued)>> = vec![Vec::new(); k];
            for (si, q) in sim.new_pkts.drain(..) {
                by_shard[usize::from(shard_of[si as usize])].push((si, q));
            }
            for (f, b) in fresh.iter().zip(by_shard) {
                lock(f).extend(b);
            }
            let mut end = sim.now >= limit || (sim.now >= window.1 && sim.measured_in_flight == 0);
            end_cycle = sim.now;
            if !end {
                sim.now += 1;
                if sim.now & 0xffff == 0 && numalab_schema::interrupt::requested() {
                    outcome = Err(ModelError::Interrupted);
                    end = true;
                }
            }
            stop.store(end, Ordering::Relaxed);
            booked.store(end_cycle + 1, Ordering::Release);
            if end_cycle == start {
                timed.0 = std::time::Instant::now();
            }
            if end {
                timed.1 = std::time::Instant::now();
                break;
            }
        }
    });
    let ns = if end_cycle > start {
        (timed.1 - timed.0).as_nanos() as f64 / (end_cycle - start) as f64
    } else {
        (timed.1 - t0).as_nanos() as f64
    };
    outcome?;
    let parity = (end_cycle & 1) as usize;
    sim.router_cycles += counted
        .iter()
        .map(|c| c[parity].load(Ordering::Relaxed))
        .sum::<u64>();
    for p in &parts {
        for (a, b) in sim.link_busy.iter_mut().zip(&p.link_busy) {
            *a += b;
        }
    }
    Ok(ns)
}

/// The next port after each port (round robin over the five).
const NEXT_PORT: [u8; PORTS] = [1, 2, 3, 4, 0];

/// The output port of dimension-order routing from the router at `(x, y)` towards
/// `(dx, dy)`: x first (or y first with `yx`), `LOCAL` at the destination. Written as
/// selections rather than branches (fewer mispredictions on random traffic).
#[inline(always)]
fn dor_port((x, y): (u16, u16), (dx, dy): (u16, u16), yx: bool) -> u8 {
    let horizontal = if dx > x { 0 } else { 1 };
    let vertical = if dy > y { 2 } else { 3 };
    let first = if yx { y == dy } else { x != dx };
    let o = if first { horizontal } else { vertical };
    if x == dx && y == dy {
        LOCAL as u8
    } else {
        o
    }
}

/// The first set bit of the five-bit mask `m` at or after `start`, else the first.
#[inline]
fn first_after(m: u8, start: u8) -> usize {
    let after = m & (0x1f << start);
    if after != 0 {
        after.trailing_zeros() as usize
    } else {
        m.trailing_zeros() as usize
    }
}

/// The first set bit of `m` at or after bit `start` (below 64), else the first: a
/// round-robin choice from a pointer.
#[inline]
fn first_at_or_after(m: u64, start: usize) -> usize {
    let after = m & (u64::MAX << start);
    (if after != 0 { after } else { m }).trailing_zeros() as usize
}
