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

use crate::error::ModelError;
use crate::model::Model;
use crate::traffic::DesConfig;
use crate::traffic::{draw_request, node_matrices, App, Figures, Plan, Step, Synthetic, VnFigures};
use numalab_records::model::SimStats;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

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

#[derive(Debug, Clone, Copy)]
struct Pkt {
    dx: u16,
    dy: u16,
    flits: u16,
    vn: u8,
    measured: bool,
    /// Statistics index (flow or network), or the request id of application traffic.
    flow: u32,
    hops: u16,
    /// NUMA node of the sending stop.
    snode: u16,
    created: u64,
}

/// One application request in flight.
#[derive(Debug, Clone, Copy)]
struct Txn {
    plan: Plan,
    step: u8,
    slot: u32,
    start: u64,
}

const EV_DELIVERED: u8 = 0;
const EV_STEP: u8 = 1;
const EV_ISSUE: u8 = 2;

/// The closed-loop side of an application workload: requests, their timed steps
/// (lookups, memory accesses, think time; a heap, as they are few next to flits), the
/// memory channels and the request statistics.
#[derive(Default)]
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
    done_count: u64,
    done_latency: u64,
}

/// One input VC: the cycle its front flit may take its next step, its ring buffer's head
/// and length, and the output port and downstream VC of the packet at its front.
#[derive(Debug, Clone, Copy)]
struct VcState {
    ready: u64,
    head: u16,
    len: u16,
    out_port: u8,
    out_vc: u8,
}

#[derive(Debug, Clone, Copy, Default)]
struct Flit {
    pkt: u32,
    seq: u16,
    arr: u64,
}

struct Source {
    queue: VecDeque<u32>,
    /// Packet being injected, its next flit and its VC.
    cur: u32,
    seq: u16,
    vc: u8,
    rr: u8,
}

struct Iq {
    n_stops: usize,
    cols: u32,
    yx: bool,
    planes: usize,
    /// Index stride of the VCs of one port: a power of two, at least the VCs per port
    /// (`vcs` per class; the VCs of class `k` are `k*vcs .. (k+1)*vcs`).
    c: usize,
    shift: u32,
    vcs: usize,
    shared: bool,
    buf_flits: usize,
    /// Ring capacity per VC (a power of two, at least `buf_flits`).
    buf_cap: usize,
    rd: u64,
    va: u64,
    sa_st: u64,
    credit_delay: u64,
    iters: usize,
    inject: u64,
    eject: u64,
    /// Coordinates of each stop.
    xy: Vec<(u16, u16)>,
    /// Neighbour router (within the plane) per stop and direction, or u32::MAX.
    nbr: Vec<u32>,
    /// Link cycles per stop and direction.
    link: Vec<u64>,
    // Input VCs: index ((router * PORTS + port) * c + vc).
    buf: Vec<Flit>,
    /// State of each input VC.
    vc: Vec<VcState>,
    /// Non-empty VCs per (router, port).
    mask: Vec<u64>,
    /// VCs whose front flit is a head waiting for VC allocation, per (router, port).
    need_va: Vec<u64>,
    /// Non-empty ports per router (bit per port).
    busy: Vec<u8>,
    // Output VCs: index ((router * PORTS + port) * c + vc); source VCs follow at
    // `src_base + (plane * n_stops + stop) * c + vc`.
    credits: Vec<u32>,
    /// Source VCs held by a packet being injected.
    in_use: Vec<bool>,
    /// Output VCs held by a packet, a bit per VC, per (router, output port).
    out_busy: Vec<u64>,
    src_base: usize,
    // iSLIP pointers.
    va_gptr: Vec<u16>,
    va_aptr: Vec<u16>,
    sa_gptr: Vec<u8>,
    sa_aptr: Vec<u8>,
    sa_vc_rr: Vec<u8>,
    // Time wheels for flits on links and credits on their way back.
    wheel_mask: u64,
    flit_wheel: Vec<Vec<(u32, Flit)>>,
    credit_wheel: Vec<Vec<u32>>,
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
    link_busy: Vec<u64>,
    router_cycles: u64,
    // Scratch for the allocators.
    va_req: Vec<(u16, u8, u8)>,
    /// Scratch: output VCs granted to each request (64 entries).
    va_gmask: Vec<u64>,
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
        let inject = u64::from(g.inject_cycles);
        let span = (sa_st + max_link + credit_delay + inject + u64::from(g.eject_cycles) + 4)
            .next_power_of_two();
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
            cols: g.cols,
            yx: g.routing == crate::spec::Routing::Yx,
            planes,
            c,
            shift: c.trailing_zeros(),
            vcs,
            shared,
            buf_flits,
            buf_cap,
            rd: u64::from(n.routing_delay),
            va: u64::from(n.vc_alloc_delay),
            sa_st,
            credit_delay,
            iters: n.alloc_iters as usize,
            inject,
            eject: u64::from(g.eject_cycles),
            xy: (0..n_stops as u32)
                .map(|s| ((s % g.cols) as u16, (s / g.cols) as u16))
                .collect(),
            nbr,
            link,
            buf: vec![Flit::default(); nivc * buf_cap],
            vc: vec![
                VcState {
                    ready: 0,
                    head: 0,
                    len: 0,
                    out_port: NONE8,
                    out_vc: NONE8,
                };
                nivc
            ],
            mask: vec![0; routers * PORTS],
            need_va: vec![0; routers * PORTS],
            busy: vec![0; routers],
            credits,
            in_use,
            out_busy: vec![0; routers * PORTS],
            src_base,
            va_gptr: vec![0; nivc],
            va_aptr: vec![0; nivc],
            sa_gptr: vec![0; routers * PORTS],
            sa_aptr: vec![0; routers * PORTS],
            sa_vc_rr: vec![0; routers * PORTS],
            wheel_mask: span - 1,
            flit_wheel: vec![Vec::new(); span as usize],
            credit_wheel: vec![Vec::new(); span as usize],
            sources: (0..planes * n_stops)
                .map(|_| Source {
                    queue: VecDeque::new(),
                    cur: u32::MAX,
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
            hops_hist: Vec::new(),
            stop_node: model.stop_node.iter().map(|&n| n as u16).collect(),
            n_nodes: model.nodes.len(),
            node_pkts: vec![0; model.nodes.len() * model.nodes.len() * 4],
            app_mode: false,
            closed: Closed::default(),
            link_busy: vec![0; routers * 4],
            router_cycles: 0,
            va_req: Vec::new(),
            va_gmask: vec![0; 64],
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

    fn create(&mut self, src: u32, dst: u32, vn: u8, flits: u32, flow: u32) {
        let measured = self.now >= self.window.0 && self.now < self.window.1;
        let p = Pkt {
            dx: (dst % self.cols) as u16,
            dy: (dst / self.cols) as u16,
            flits: flits as u16,
            vn,
            measured,
            flow,
            hops: 0,
            snode: self.stop_node[src as usize],
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
        self.sources[plane * self.n_stops + src as usize]
            .queue
            .push_back(id);
    }

    #[inline]
    fn plane_stop(&self, r: usize) -> (usize, usize) {
        if self.planes == 1 {
            (0, r)
        } else {
            (r / self.n_stops, r % self.n_stops)
        }
    }

    #[inline]
    fn schedule_flit(&mut self, at: u64, ivc: usize, f: Flit) {
        self.flit_wheel[(at & self.wheel_mask) as usize].push((ivc as u32, f));
    }

    #[inline]
    fn schedule_credit(&mut self, at: u64, ovc: usize) {
        self.credit_wheel[(at & self.wheel_mask) as usize].push(ovc as u32);
    }

    /// Output port of a packet at stop `s`.
    #[inline]
    fn route(&self, s: usize, p: &Pkt) -> u8 {
        let (x, y) = self.xy[s];
        let horizontal = |dx: u16| if dx > x { 0 } else { 1 };
        let vertical = |dy: u16| if dy > y { 2 } else { 3 };
        if x == p.dx && y == p.dy {
            LOCAL as u8
        } else if self.yx {
            if y != p.dy {
                vertical(p.dy)
            } else {
                horizontal(p.dx)
            }
        } else if x != p.dx {
            horizontal(p.dx)
        } else {
            vertical(p.dy)
        }
    }

    fn inject(&mut self) {
        let now = self.now;
        let c = self.c;
        for si in 0..self.sources.len() {
            let src = &self.sources[si];
            let id = if src.cur != u32::MAX {
                src.cur
            } else {
                match src.queue.front() {
                    Some(&id) if self.pkts[id as usize].created < now => id,
                    _ => continue,
                }
            };
            let plane = si / self.n_stops;
            let stop = si % self.n_stops;
            let pk = self.pkts[id as usize];
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
                src.seq = seq + 1;
                src.vc = vc;
                self.in_use[o] = true;
            }
            let r = plane * self.n_stops + stop;
            let ivc = (r * PORTS + LOCAL) * c + usize::from(vc);
            self.schedule_flit(
                now + self.inject,
                ivc,
                Flit {
                    pkt: id,
                    seq,
                    arr: 0,
                },
            );
        }
    }

    fn receive(&mut self) {
        let slot = (self.now & self.wheel_mask) as usize;
        let mut credits = std::mem::take(&mut self.credit_wheel[slot]);
        for &o in &credits {
            self.credits[o as usize] += 1;
        }
        credits.clear();
        self.credit_wheel[slot] = credits;
        let mut flits = std::mem::take(&mut self.flit_wheel[slot]);
        for &(ivc, mut f) in &flits {
            let ivc = ivc as usize;
            f.arr = self.now;
            let l = usize::from(self.vc[ivc].len);
            debug_assert!(
                l < self.buf_flits,
                "credit flow control overflowed a buffer"
            );
            let pos = (usize::from(self.vc[ivc].head) + l) & (self.buf_cap - 1);
            self.buf[ivc * self.buf_cap + pos] = f;
            self.vc[ivc].len += 1;
            if l == 0 {
                let rp = ivc >> self.shift;
                self.mask[rp] |= 1u64 << (ivc & (self.c - 1));
                self.busy[rp / PORTS] |= 1 << (rp % PORTS);
                self.vc[ivc].ready = if f.seq == 0 {
                    self.need_va[rp] |= 1u64 << (ivc & (self.c - 1));
                    self.now + self.rd
                } else {
                    self.now
                };
            }
        }
        flits.clear();
        self.flit_wheel[slot] = flits;
    }

    #[inline]
    fn front(&self, ivc: usize) -> Flit {
        self.buf[ivc * self.buf_cap + usize::from(self.vc[ivc].head)]
    }

    /// VC allocation at router `r` (iSLIP: output VCs grant, input VCs accept).
    fn vc_alloc(&mut self, r: usize) {
        let c = self.c;
        let now = self.now;
        let (_, stop) = self.plane_stop(r);
        self.va_req.clear();
        for p in 0..PORTS {
            let mut m = self.need_va[r * PORTS + p];
            while m != 0 {
                let v = m.trailing_zeros() as usize;
                m &= m - 1;
                let ivc = (r * PORTS + p) * c + v;
                if self.vc[ivc].ready > now {
                    continue;
                }
                let f = self.front(ivc);
                debug_assert!(f.seq == 0 && self.vc[ivc].out_vc == NONE8);
                let pk = self.pkts[f.pkt as usize];
                let o = self.route(stop, &pk);
                self.vc[ivc].out_port = o;
                let (_, class) = self.plane_class(pk.vn);
                self.va_req
                    .push(((p * c + v) as u16, o, (class * self.vcs) as u8));
            }
        }
        let nreq = self.va_req.len();
        if nreq == 0 {
            return;
        }
        let nv = PORTS * c;
        if nreq == 1 {
            // One requester: every free VC of its class grants it, and it accepts the
            // one closest after its pointer.
            let (iv, o, lo) = self.va_req[0];
            let o = usize::from(o);
            let bits = if self.vcs == 64 {
                u64::MAX
            } else {
                (1u64 << self.vcs) - 1
            } << lo;
            let free = bits & !self.out_busy[r * PORTS + o];
            if free == 0 {
                return;
            }
            let a = usize::from(self.va_aptr[r * nv + usize::from(iv)]);
            let ov = if a > o * c && a < (o + 1) * c {
                let after = free & (u64::MAX << (a - o * c));
                if after != 0 {
                    after.trailing_zeros() as usize
                } else {
                    free.trailing_zeros() as usize
                }
            } else {
                free.trailing_zeros() as usize
            };
            let oi = o * c + ov;
            let next = usize::from(iv) + 1;
            self.va_gptr[r * nv + oi] = if next == nv { 0 } else { next } as u16;
            let next = oi + 1;
            self.va_aptr[r * nv + usize::from(iv)] = if next == nv { 0 } else { next } as u16;
            let ivc = r * PORTS * c + usize::from(iv);
            self.need_va[ivc >> self.shift] &= !(1u64 << (ivc & (c - 1)));
            self.vc[ivc].out_vc = ov as u8;
            self.out_busy[r * PORTS + o] |= 1 << ov;
            self.vc[ivc].ready = now + self.va;
            return;
        }
        let class_bits = |lo: u8| -> u64 {
            let bits = if self.vcs == 64 {
                u64::MAX
            } else {
                (1u64 << self.vcs) - 1
            };
            bits << lo
        };
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
                    class_bits(lo) & !self.out_busy[r * PORTS + o] & !outmatch[o] & !granted[o];
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
                let o = usize::from(o);
                let a = usize::from(self.va_aptr[r * nv + usize::from(iv)]);
                let best = if a > o * c && a < (o + 1) * c {
                    let after = g & (u64::MAX << (a - o * c));
                    if after != 0 {
                        after.trailing_zeros() as usize
                    } else {
                        g.trailing_zeros() as usize
                    }
                } else {
                    g.trailing_zeros() as usize
                };
                let oi = o * c + best;
                inmatch |= 1 << k;
                outmatch[o] |= 1 << best;
                if iter == 0 {
                    let next = usize::from(iv) + 1;
                    self.va_gptr[r * nv + oi] = if next == nv { 0 } else { next } as u16;
                    let next = oi + 1;
                    self.va_aptr[r * nv + usize::from(iv)] =
                        if next == nv { 0 } else { next } as u16;
                }
                let ivc = r * PORTS * c + usize::from(iv);
                self.need_va[ivc >> self.shift] &= !(1u64 << (ivc & (c - 1)));
                self.vc[ivc].out_vc = best as u8;
                self.out_busy[r * PORTS + o] |= 1 << best;
                self.vc[ivc].ready = now + self.va;
            }
        }
        self.va_gmask = gmask;
    }

    /// Whether input VC `ivc` may bid for the switch now.
    #[inline]
    fn sa_ready(&self, r: usize, ivc: usize) -> bool {
        let ov = self.vc[ivc].out_vc;
        if ov == NONE8 || self.vc[ivc].ready > self.now {
            return false;
        }
        let o = usize::from(self.vc[ivc].out_port);
        self.credits[(r * PORTS + o) * self.c + usize::from(ov)] > 0
    }

    /// Switch allocation and traversal at router `r`.
    fn sw_alloc(&mut self, r: usize) {
        let c = self.c;
        let now = self.now;
        // Per input port: per output port, the VC it offers (round robin from the
        // port's pointer), as a small table.
        let mut offer = [[NONE8; PORTS]; PORTS];
        let mut want = [0u8; PORTS]; // bit per output
        let mut any = false;
        for p in 0..PORTS {
            let m = self.mask[r * PORTS + p] & !self.need_va[r * PORTS + p];
            if m == 0 {
                continue;
            }
            let start = u32::from(self.sa_vc_rr[r * PORTS + p]);
            let rot = if start == 0 {
                m
            } else {
                (m >> start) | (m << (c as u32 - start))
            } & if c == 64 { u64::MAX } else { (1u64 << c) - 1 };
            let start = start as usize;
            let mut mm = rot;
            while mm != 0 {
                let k = mm.trailing_zeros();
                mm &= mm - 1;
                let v = (k as usize + start) & (c - 1);
                let ivc = (r * PORTS + p) * c + v;
                if !self.sa_ready(r, ivc) {
                    continue;
                }
                let o = usize::from(self.vc[ivc].out_port);
                if offer[p][o] == NONE8 {
                    offer[p][o] = v as u8;
                    want[p] |= 1 << o;
                    any = true;
                }
            }
        }
        if !any {
            return;
        }
        // iSLIP on bit masks: requests per output (bit per input), grants per input (bit
        // per output); the first set bit at or after a pointer wins.
        let first_after = |m: u8, start: usize| -> usize {
            let rot = ((m >> start) | (m << (PORTS - start))) & 0x1f;
            let k = rot.trailing_zeros() as usize + start;
            if k >= PORTS {
                k - PORTS
            } else {
                k
            }
        };
        let mut req_by_out = [0u8; PORTS];
        for (p, &w) in want.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let o = w.trailing_zeros() as usize;
                w &= w - 1;
                req_by_out[o] |= 1 << p;
            }
        }
        let mut inmatch = [NONE8; PORTS];
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
                let p = first_after(m, usize::from(self.sa_gptr[r * PORTS + o]));
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
                let o = first_after(g, usize::from(self.sa_aptr[r * PORTS + p]));
                inmatch[p] = o as u8;
                in_free &= !(1 << p);
                out_free &= !(1 << o);
                if iter == 0 {
                    self.sa_gptr[r * PORTS + o] = ((p + 1) % PORTS) as u8;
                    self.sa_aptr[r * PORTS + p] = ((o + 1) % PORTS) as u8;
                }
            }
        }
        for p in 0..PORTS {
            let o = inmatch[p];
            if o == NONE8 {
                continue;
            }
            let o = usize::from(o);
            let v = usize::from(offer[p][o]);
            self.sa_vc_rr[r * PORTS + p] = ((v + 1) & (c - 1)) as u8;
            let ivc = (r * PORTS + p) * c + v;
            self.traverse(r, p, ivc, o, now);
        }
    }

    /// Moves the front flit of `ivc` (input port `p` of router `r`) through output `o`.
    fn traverse(&mut self, r: usize, p: usize, ivc: usize, o: usize, now: u64) {
        let c = self.c;
        let f = self.front(ivc);
        let ov = usize::from(self.vc[ivc].out_vc);
        let oi = (r * PORTS + o) * c + ov;
        if o != LOCAL {
            self.credits[oi] -= 1;
        }
        let pk = self.pkts[f.pkt as usize];
        let tail = f.seq + 1 == pk.flits;
        // Leave the buffer.
        self.vc[ivc].head = ((usize::from(self.vc[ivc].head) + 1) & (self.buf_cap - 1)) as u16;
        self.vc[ivc].len -= 1;
        let (plane, stop) = self.plane_stop(r);
        let vbit = ivc & (c - 1);
        // The credit of the freed slot goes upstream.
        if p == LOCAL {
            let si = plane * self.n_stops + stop;
            self.schedule_credit(now + self.inject, self.src_base + si * c + vbit);
        } else {
            // Input port p holds flits that travelled in direction p; upstream is the
            // neighbour in the opposite direction, whose output port is p.
            let back = p ^ 1;
            let up = self.nbr[stop * 4 + back] as usize;
            let link = self.link[up * 4 + p];
            let up_r = plane * self.n_stops + up;
            self.schedule_credit(
                now + link + self.credit_delay,
                (up_r * PORTS + p) * c + vbit,
            );
        }
        if tail {
            self.out_busy[r * PORTS + o] &= !(1u64 << ov);
            self.vc[ivc].out_vc = NONE8;
        }
        if self.vc[ivc].len == 0 {
            let rp = r * PORTS + p;
            self.mask[rp] &= !(1u64 << vbit);
            if self.mask[rp] == 0 {
                self.busy[r] &= !(1 << p);
            }
        } else {
            let next = self.front(ivc);
            self.vc[ivc].ready = if next.seq == 0 {
                self.need_va[r * PORTS + p] |= 1u64 << vbit;
                (next.arr + self.rd).max(now + 1)
            } else {
                now + 1
            };
        }
        if o == LOCAL {
            if tail {
                let at = now + self.sa_st + self.eject;
                self.deliver(f.pkt, at);
            }
        } else {
            let next = self.nbr[stop * 4 + o] as usize;
            let at = now + self.sa_st + self.link[stop * 4 + o];
            if now >= self.window.0 && now < self.window.1 {
                self.link_busy[r * 4 + o] += 1;
            }
            if f.seq == 0 {
                self.pkts[f.pkt as usize].hops += 1;
            }
            let nr = plane * self.n_stops + next;
            self.schedule_flit(at, (nr * PORTS + o) * c + ov, f);
        }
    }

    fn deliver(&mut self, id: u32, at: u64) {
        let p = self.pkts[id as usize];
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
            let v = usize::from(p.vn);
            let h = usize::from(p.hops) * 4 + v;
            if self.hops_hist.len() <= h {
                self.hops_hist.resize(h + 4 - h % 4, 0);
            }
            self.hops_hist[h] += 1;
            let d = self.stop_node[usize::from(p.dy) * self.cols as usize + usize::from(p.dx)];
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
                    self.closed.txns[id as usize].step += 1;
                    self.advance(model, app, id);
                }
                EV_STEP => self.advance(model, app, id),
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
                    self.create(from, to, vn, model.flits[vn as usize], t);
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
                    self.event(done.max(now), EV_STEP, t);
                    return;
                }
                Step::Complete => {
                    self.closed.txns[t as usize].step += 1;
                    if in_window {
                        self.closed.done_count += 1;
                        self.closed.done_latency += now - tx.start;
                    }
                    self.event(now + u64::from(app.think_cycles), EV_ISSUE, tx.slot);
                }
            }
        }
    }

    fn step_routers(&mut self) {
        let routers = self.planes * self.n_stops;
        for r in 0..routers {
            if self.busy[r] == 0 {
                continue;
            }
            self.router_cycles += 1;
            self.vc_alloc(r);
            self.sw_alloc(r);
        }
    }
}

/// Simulates a workload on input-queued routers. Packets created during the measured
/// window are followed until delivered (or the drain limit).
pub fn simulate(model: &Model, work: &Workload, cfg: &DesConfig) -> Result<IqResult, ModelError> {
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
    loop {
        if sim.now & 0xffff == 0 && numalab_schema::interrupt::requested() {
            return Err(ModelError::Interrupted);
        }
        sim.receive();
        sim.step_routers();
        sim.inject();
        // New packets (injected from the next cycle on).
        match work {
            Workload::Synthetic { traffic, .. } => {
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
                                sim.create(s, d, vn, traffic.flits.max(1), u32::from(vn));
                            }
                        }
                    }
                }
            }
            Workload::Flows { flows, flits } => {
                for (k, f) in flows.iter().enumerate() {
                    if sim.rng.random::<f64>() < f.rate {
                        sim.create(f.src, f.dst, f.vn, (*flits).max(1), k as u32);
                    }
                }
            }
            Workload::App(app) => {
                sim.run_events(model, app);
                // A closed loop is measured over its window only.
                if sim.now + 1 >= w1 {
                    break;
                }
            }
        }
        if sim.now >= limit || (sim.now >= w1 && sim.measured_in_flight == 0) {
            break;
        }
        sim.now += 1;
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
        // Queueing: latency beyond the pipeline's zero-load latency for the packets' hops.
        let link = f64::from(n.link_cycles_x + n.link_cycles_y) / 2.0;
        f.vns = (0..4)
            .map(|v| {
                let fl = flows.get(v).copied().unwrap_or_default();
                let vn_flits = match work {
                    Workload::App(_) => model.flits[v],
                    _ => flits,
                };
                let queueing = if fl.delivered > 0 {
                    let hops = sim.hop_sum[v] as f64 / fl.delivered as f64;
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
    })
}
