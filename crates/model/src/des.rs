//! The discrete-event engine: packets on the four virtual networks, contention for links,
//! ports, the socket link and memory channels, and closed-loop cores that each keep a
//! bounded number of requests in flight. For what the analytic engine cannot capture:
//! saturation, hot spots, unbalanced memory.
//!
//! How it stays fast and deterministic:
//! - Every resource is an FCFS server described by the time it is next free. A packet
//!   that reaches a router books its output link at `max(ready, free)`; since events are
//!   processed in time order, booking in arrival order is exactly a FIFO output queue
//!   (with unbounded buffers: there is no back-pressure, see docs/model.md).
//! - Events sit in a timing wheel of 4096 one-cycle buckets (O(1) insert and pop) with a
//!   binary heap only for events further ahead (memory accesses behind long queues);
//!   packets and requests live in slabs with free lists. Nothing is allocated per event
//!   once the slabs and buckets have grown.
//! - Random numbers come from one xoshiro256++ generator seeded by the caller; events at
//!   the same cycle run in insertion order. The same seed gives the same figures.

use crate::error::ModelError;
use crate::geometry::Hop;
use crate::model::{Model, VN_NAMES};
use crate::traffic::{draw_request, node_matrices, App, Figures, Plan, Step, Synthetic, VnFigures};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub use crate::traffic::DesConfig;
pub use numalab_records::model::SimStats;

const NONE: u32 = u32::MAX;
const WHEEL: usize = 4096;

const EV_ARRIVE: u8 = 0;
const EV_DELIVER: u8 = 1;
const EV_STEP: u8 = 2;
const EV_ISSUE: u8 = 3;
const EV_SOURCE: u8 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    kind: u8,
    id: u32,
}

#[derive(Debug, Clone, Copy)]
struct Pkt {
    cur: u32,
    dst: u32,
    /// Current and destination coordinates (single-socket fast path).
    cx: u16,
    cy: u16,
    dx: u16,
    dy: u16,
    vn: u8,
    flits: u8,
    hops: u16,
    /// NUMA node of the sending stop.
    snode: u16,
    txn: u32,
    created: u64,
    waited: u64,
    measured: bool,
}

#[derive(Debug, Clone, Copy)]
struct Txn {
    plan: Plan,
    step: u8,
    core: u32,
    start: u64,
}

/// Next-hop table entry: link id, or one of these.
const NH_ARRIVED: u32 = u32::MAX;
const NH_SOCKET: u32 = u32::MAX - 1;

struct Sim<'a> {
    model: &'a Model,
    now: u64,
    wheel: Vec<Vec<Ev>>,
    spare: Vec<Ev>,
    in_wheel: usize,
    far: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    events: u64,
    next_hop: Vec<u32>,
    n_stops: u32,
    cols: u32,
    yx: bool,
    link_to: Vec<u32>,
    lanes: usize,
    link_free: Vec<u64>,
    link_cost: Vec<u32>,
    inj_free: Vec<u64>,
    ej_free: Vec<u64>,
    sock_free: [f64; 2],
    mc_first: Vec<usize>,
    chan_free: Vec<f64>,
    pkts: Vec<Pkt>,
    free_pkts: Vec<u32>,
    txns: Vec<Txn>,
    free_txns: Vec<u32>,
    rng: Xoshiro256PlusPlus,
    // Measurement.
    window: (u64, u64),
    vn_count: [u64; 4],
    vn_wait: [u64; 4],
    vn_lat: [u64; 4],
    /// Delivered packets by hop count and network: index `hops * 4 + vn`.
    hops_hist: Vec<u64>,
    /// NUMA node of every stop, and the node count.
    stop_node: Vec<u16>,
    n_nodes: usize,
    /// Delivered packets by (source node, destination node, network):
    /// index `(src * n_nodes + dst) * 4 + vn`.
    node_pkts: Vec<u64>,
    busy: Vec<u64>,
    mc_count: Vec<u64>,
    /// Accesses at each controller from cores of its own node.
    mc_local: Vec<u64>,
    /// NUMA node of each core slot of the application.
    slot_node: Vec<u32>,
    mc_busy: Vec<f64>,
    measured_in_flight: u64,
    done_count: u64,
    done_latency: u64,
    // Workloads.
    app: Option<&'a App>,
    issue_counter: Vec<u32>,
    synth: Option<&'a Synthetic>,
    gap_log: f64,
}

impl<'a> Sim<'a> {
    fn new(model: &'a Model, seed: u64, window: (u64, u64)) -> Self {
        let g = &model.geo;
        let n_stops = g.stops();
        let next_hop = if g.sockets > 1 {
            let mut t = vec![0u32; (n_stops * n_stops) as usize];
            for a in 0..n_stops {
                for b in 0..n_stops {
                    t[(a * n_stops + b) as usize] = match g.next_hop(a, b) {
                        Hop::Arrived => NH_ARRIVED,
                        Hop::Socket(_) => NH_SOCKET,
                        Hop::Link(l) => l,
                    };
                }
            }
            t
        } else {
            Vec::new()
        };
        let lanes = model.lanes as usize;
        let mut mc_first = Vec::new();
        let mut n_chan = 0;
        for mc in &model.mcs {
            mc_first.push(n_chan);
            n_chan += mc.channels as usize;
        }
        mc_first.push(n_chan);
        Sim {
            model,
            now: 0,
            wheel: vec![Vec::new(); WHEEL],
            spare: Vec::new(),
            in_wheel: 0,
            far: BinaryHeap::new(),
            seq: 0,
            events: 0,
            next_hop,
            n_stops,
            cols: g.cols,
            yx: g.routing == crate::spec::Routing::Yx,
            link_to: (0..n_stops * 4)
                .map(|l| {
                    g.neighbor(l / 4, crate::geometry::Dir::from_index(l))
                        .unwrap_or(NH_ARRIVED)
                })
                .collect(),
            lanes,
            link_free: vec![0; (n_stops * 16) as usize * lanes],
            link_cost: (0..n_stops * 4).map(|l| g.link_cost(l)).collect(),
            inj_free: vec![0; (n_stops * 4) as usize],
            ej_free: vec![0; (n_stops * 4) as usize],
            sock_free: [0.0; 2],
            mc_first,
            chan_free: vec![0.0; n_chan],
            pkts: Vec::new(),
            free_pkts: Vec::new(),
            txns: Vec::new(),
            free_txns: Vec::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            window,
            vn_count: [0; 4],
            vn_wait: [0; 4],
            vn_lat: [0; 4],
            hops_hist: Vec::new(),
            stop_node: model.stop_node.iter().map(|&n| n as u16).collect(),
            n_nodes: model.nodes.len(),
            node_pkts: vec![0; model.nodes.len() * model.nodes.len() * 4],
            busy: vec![0; (n_stops * 16) as usize],
            mc_count: vec![0; model.mcs.len()],
            mc_local: vec![0; model.mcs.len()],
            slot_node: Vec::new(),
            mc_busy: vec![0.0; model.mcs.len()],
            measured_in_flight: 0,
            done_count: 0,
            done_latency: 0,
            app: None,
            issue_counter: Vec::new(),
            synth: None,
            gap_log: 0.0,
        }
    }

    #[inline]
    fn push(&mut self, t: u64, ev: Ev) {
        if t - self.now < WHEEL as u64 {
            self.wheel[(t as usize) & (WHEEL - 1)].push(ev);
            self.in_wheel += 1;
        } else {
            self.seq += 1;
            self.far.push(Reverse((t, self.seq, ev)));
        }
    }

    #[inline]
    fn in_window(&self, t: u64) -> bool {
        t >= self.window.0 && t < self.window.1
    }

    /// The next hop of a packet: by comparing coordinates on one socket (no table, no
    /// division), from the precomputed table with two sockets.
    #[inline]
    fn hop(&self, p: &Pkt) -> u32 {
        if !self.next_hop.is_empty() {
            return self.next_hop[(p.cur * self.n_stops + p.dst) as usize];
        }
        let horizontal = || if p.dx > p.cx { 0 } else { 1 };
        let vertical = || if p.dy > p.cy { 2 } else { 3 };
        let dir = if p.cx == p.dx && p.cy == p.dy {
            return NH_ARRIVED;
        } else if self.yx {
            if p.cy != p.dy {
                vertical()
            } else {
                horizontal()
            }
        } else if p.cx != p.dx {
            horizontal()
        } else {
            vertical()
        };
        p.cur * 4 + dir
    }

    fn send(&mut self, from: u32, to: u32, vn: u8, flits: u8, txn: u32, t: u64) {
        let measured = self.in_window(t);
        let cols = self.cols;
        let local = self.model.geo.stops_per_socket();
        let p = Pkt {
            cur: from,
            dst: to,
            cx: ((from % local) % cols) as u16,
            cy: ((from % local) / cols) as u16,
            dx: ((to % local) % cols) as u16,
            dy: ((to % local) / cols) as u16,
            vn,
            flits,
            hops: 0,
            snode: self.stop_node[from as usize],
            txn,
            created: t,
            waited: 0,
            measured,
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
        let r = (from * 4 + u32::from(vn)) as usize;
        let start = t.max(self.inj_free[r]);
        self.inj_free[r] = start + u64::from(flits);
        self.pkts[id as usize].waited = start - t;
        let at = start + u64::from(self.model.geo.inject_cycles);
        self.push(
            at,
            Ev {
                kind: EV_ARRIVE,
                id,
            },
        );
    }

    fn arrive(&mut self, id: u32) {
        let now = self.now;
        let p = self.pkts[id as usize];
        let flits = u64::from(p.flits);
        let nh = self.hop(&p);
        let g = &self.model.geo;
        if nh == NH_ARRIVED {
            let r = (p.cur * 4 + u32::from(p.vn)) as usize;
            let start = now.max(self.ej_free[r]);
            self.ej_free[r] = start + flits;
            self.pkts[id as usize].waited += start - now;
            let at = start + u64::from(g.eject_cycles) + flits - 1;
            if p.txn == NONE {
                // Nothing waits for a synthetic packet: account for it now, at its
                // (already determined) delivery time, and save an event.
                self.deliver_at(id, at);
            } else {
                self.push(
                    at,
                    Ev {
                        kind: EV_DELIVER,
                        id,
                    },
                );
            }
        } else if nh == NH_SOCKET {
            let (k, _, _) = g.coords(p.cur);
            let ready = (now + u64::from(g.router_cycles)) as f64;
            let start_f = ready.max(self.sock_free[k as usize]);
            self.sock_free[k as usize] = start_f + flits as f64 * self.model.socket_cycles_per_flit;
            let start = start_f.ceil() as u64;
            let pk = &mut self.pkts[id as usize];
            pk.waited += start - ready as u64;
            pk.cur = g.across(k);
            let (_, x, y) = g.coords(pk.cur);
            pk.cx = x as u16;
            pk.cy = y as u16;
            let at = start + u64::from(g.socket_cycles);
            self.push(
                at,
                Ev {
                    kind: EV_ARRIVE,
                    id,
                },
            );
        } else {
            let ready = now + u64::from(g.router_cycles);
            let base = ((nh * 4 + u32::from(p.vn)) as usize) * self.lanes;
            let mut lane = base;
            for i in base + 1..base + self.lanes {
                if self.link_free[i] < self.link_free[lane] {
                    lane = i;
                }
            }
            let start = ready.max(self.link_free[lane]);
            self.link_free[lane] = start + flits;
            if self.in_window(start) {
                self.busy[(nh * 4 + u32::from(p.vn)) as usize] += flits;
            }
            let target = self.link_to[nh as usize];
            let pk = &mut self.pkts[id as usize];
            pk.waited += start - ready;
            pk.cur = target;
            match nh & 3 {
                0 => pk.cx += 1,
                1 => pk.cx -= 1,
                2 => pk.cy += 1,
                _ => pk.cy -= 1,
            }
            pk.hops += 1;
            let at = start + u64::from(self.link_cost[nh as usize]);
            self.push(
                at,
                Ev {
                    kind: EV_ARRIVE,
                    id,
                },
            );
        }
    }

    fn deliver(&mut self, id: u32) {
        self.deliver_at(id, self.now);
    }

    fn deliver_at(&mut self, id: u32, at: u64) {
        let p = self.pkts[id as usize];
        self.free_pkts.push(id);
        let counted = match self.synth {
            Some(_) => p.measured,
            None => self.in_window(at),
        };
        if p.measured {
            self.measured_in_flight -= 1;
        }
        if counted {
            let v = p.vn as usize;
            self.vn_count[v] += 1;
            self.vn_wait[v] += p.waited;
            self.vn_lat[v] += at - p.created;
            let h = p.hops as usize * 4 + v;
            if self.hops_hist.len() <= h {
                self.hops_hist.resize(h + 4 - h % 4, 0);
            }
            self.hops_hist[h] += 1;
            let d = usize::from(self.stop_node[p.dst as usize]);
            self.node_pkts[(usize::from(p.snode) * self.n_nodes + d) * 4 + v] += 1;
        }
        if p.txn != NONE {
            self.txns[p.txn as usize].step += 1;
            self.advance(p.txn);
        }
    }

    /// Runs a request's steps from its current one until it waits for something.
    fn advance(&mut self, t_id: u32) {
        let now = self.now;
        loop {
            let tx = self.txns[t_id as usize];
            if tx.step >= tx.plan.len {
                self.free_txns.push(t_id);
                return;
            }
            match tx.plan.steps[tx.step as usize] {
                Step::Packet { from, to, vn } => {
                    let flits = self.model.flits[vn as usize] as u8;
                    self.send(from, to, vn, flits, t_id, now);
                    return;
                }
                Step::Lookup => {
                    self.txns[t_id as usize].step += 1;
                    let c = u64::from(self.model.spec.slc.lookup_cycles);
                    if c > 0 {
                        self.push(
                            now + c,
                            Ev {
                                kind: EV_STEP,
                                id: t_id,
                            },
                        );
                        return;
                    }
                }
                Step::Memory { mc } => {
                    self.txns[t_id as usize].step += 1;
                    let m = mc as usize;
                    let info = &self.model.mcs[m];
                    let (a, b) = (self.mc_first[m], self.mc_first[m + 1]);
                    let mut ch = a;
                    for i in a + 1..b {
                        if self.chan_free[i] < self.chan_free[ch] {
                            ch = i;
                        }
                    }
                    let start = (now as f64).max(self.chan_free[ch]);
                    self.chan_free[ch] = start + info.service_cycles;
                    if self.in_window(now) {
                        self.mc_count[m] += 1;
                        if self.slot_node[tx.core as usize] == info.node {
                            self.mc_local[m] += 1;
                        }
                        self.mc_busy[m] += info.service_cycles;
                    }
                    let done = (start + info.service_cycles + info.latency_cycles).ceil() as u64;
                    self.push(
                        done.max(now),
                        Ev {
                            kind: EV_STEP,
                            id: t_id,
                        },
                    );
                    return;
                }
                Step::Complete => {
                    self.txns[t_id as usize].step += 1;
                    if self.in_window(now) {
                        self.done_count += 1;
                        self.done_latency += now - tx.start;
                    }
                    let think = u64::from(self.app.map_or(0, |a| a.think_cycles));
                    self.push(
                        now + think,
                        Ev {
                            kind: EV_ISSUE,
                            id: tx.core,
                        },
                    );
                }
            }
        }
    }

    fn issue(&mut self, core_slot: u32) {
        let app = self.app.expect("application workload");
        let k = self.issue_counter[core_slot as usize];
        self.issue_counter[core_slot as usize] = k.wrapping_add(1);
        let pl = draw_request(self.model, app, core_slot as usize, k, &mut self.rng);
        let tx = Txn {
            plan: pl,
            step: 0,
            core: core_slot,
            start: self.now,
        };
        let id = match self.free_txns.pop() {
            Some(i) => {
                self.txns[i as usize] = tx;
                i
            }
            None => {
                self.txns.push(tx);
                (self.txns.len() - 1) as u32
            }
        };
        self.advance(id);
    }

    fn gap(&mut self) -> u64 {
        // Bernoulli arrivals: geometric gaps of at least one cycle.
        if self.gap_log == 0.0 {
            return 1;
        }
        let u: f64 = 1.0 - self.rng.random::<f64>();
        1 + (u.ln() / self.gap_log) as u64
    }

    fn source(&mut self, stop: u32) {
        let s = self.synth.expect("synthetic workload");
        let (u, v) = (self.rng.random::<f64>(), self.rng.random::<f64>());
        if let Some(dst) = s.sample(self.model, stop, u, v) {
            self.send(stop, dst, 0, s.flits as u8, NONE, self.now);
        }
        let g = self.gap();
        self.push(
            self.now + g,
            Ev {
                kind: EV_SOURCE,
                id: stop,
            },
        );
    }

    fn handle(&mut self, ev: Ev) {
        self.events += 1;
        match ev.kind {
            EV_ARRIVE => self.arrive(ev.id),
            EV_DELIVER => self.deliver(ev.id),
            EV_STEP => self.advance(ev.id),
            EV_ISSUE => self.issue(ev.id),
            _ => self.source(ev.id),
        }
    }

    /// Runs until `stop(self)` says so (checked once per cycle).
    fn run(&mut self, stop: impl Fn(&Sim) -> bool) -> Result<(), ModelError> {
        loop {
            let b = (self.now as usize) & (WHEEL - 1);
            if !self.wheel[b].is_empty() {
                let mut bucket = std::mem::take(&mut self.spare);
                std::mem::swap(&mut bucket, &mut self.wheel[b]);
                while !bucket.is_empty() {
                    self.in_wheel -= bucket.len();
                    for &ev in &bucket {
                        self.handle(ev);
                    }
                    bucket.clear();
                    std::mem::swap(&mut bucket, &mut self.wheel[b]);
                }
                self.spare = bucket;
            }
            while let Some(Reverse((t, _, ev))) = self.far.peek().copied() {
                if t != self.now {
                    break;
                }
                self.far.pop();
                self.handle(ev);
            }
            if self.now & 0xffff == 0 && numalab_schema::interrupt::requested() {
                return Err(ModelError::Interrupted);
            }
            if stop(self) {
                return Ok(());
            }
            self.now += 1;
            if self.in_wheel == 0 {
                // Jump over empty time.
                match self.far.peek() {
                    Some(Reverse((t, _, _))) if *t > self.now => {
                        self.now = *t;
                    }
                    Some(_) => {}
                    None => return Ok(()),
                }
            }
        }
    }

    fn figures(&self) -> Figures {
        let m = (self.window.1 - self.window.0) as f64;
        let total: u64 = self.vn_count.iter().sum();
        let mut f = Figures {
            engine: "des".into(),
            measured_cycles: self.window.1 - self.window.0,
            ..Default::default()
        };
        let tf = total.max(1) as f64;
        f.packets_per_cycle = total as f64 / m;
        f.packet_latency_cycles = self.vn_lat.iter().sum::<u64>() as f64 / tf;
        let hops_all: Vec<u64> = self.hops_hist.chunks(4).map(|c| c.iter().sum()).collect();
        f.mean_hops = hops_all
            .iter()
            .enumerate()
            .map(|(h, n)| h as f64 * *n as f64)
            .sum::<f64>()
            / tf;
        f.hop_histogram = hops_all.iter().map(|&n| n as f64 / tf).collect();
        let counts: Vec<f64> = self.node_pkts.iter().map(|&n| n as f64).collect();
        let (all, mut per_vn) = node_matrices(&counts, self.n_nodes, m);
        f.node_packets_per_cycle = all;
        let mut vn_max = [0.0f64; 4];
        for (r, &b) in self.busy.iter().enumerate() {
            let v = r % 4;
            vn_max[v] = vn_max[v].max(b as f64 / m / self.lanes as f64);
        }
        f.vns = (0..4)
            .map(|v| {
                let n = self.vn_count[v].max(1) as f64;
                VnFigures {
                    vn: VN_NAMES[v].into(),
                    packets_per_cycle: self.vn_count[v] as f64 / m,
                    queueing_cycles: self.vn_wait[v] as f64 / n,
                    latency_cycles: self.vn_lat[v] as f64 / n,
                    max_link_utilization: vn_max[v],
                    hop_histogram: self.hops_hist.chunks(4).map(|c| c[v] as f64 / n).collect(),
                    node_packets_per_cycle: std::mem::take(&mut per_vn[v]),
                }
            })
            .collect();
        f.max_link_utilization = vn_max.iter().copied().fold(0.0, f64::max);
        crate::traffic::AppCounts {
            done_count: self.done_count,
            done_latency: self.done_latency,
            mc_count: &self.mc_count,
            mc_local: &self.mc_local,
            mc_busy: &self.mc_busy,
        }
        .fill(&mut f, self.model, m);
        f
    }
}

/// Simulates open-loop synthetic traffic. Packets created during the measurement window
/// are followed until delivered (or the drain limit); figures count them only.
pub fn synthetic(
    model: &Model,
    traffic: &Synthetic,
    cfg: &DesConfig,
) -> Result<(Figures, SimStats), ModelError> {
    synthetic_threads(model, traffic, cfg, 1)
}

/// [`synthetic`], with input-queued routers sharded on up to `threads` threads
/// ([`crate::router::simulate_threads`]; the same figures). The output-queued engine
/// runs on one.
pub fn synthetic_threads(
    model: &Model,
    traffic: &Synthetic,
    cfg: &DesConfig,
    threads: usize,
) -> Result<(Figures, SimStats), ModelError> {
    if model.spec.noc.router == crate::spec::RouterKind::InputQueued {
        let r = crate::router::simulate_threads(
            model,
            &crate::router::Workload::Synthetic {
                traffic: *traffic,
                networks: 1,
            },
            cfg,
            threads,
        )?;
        return Ok((r.figures, r.stats));
    }
    check_next_hop_table(model)?;
    let w0 = cfg.warmup_cycles;
    let w1 = w0 + cfg.measure_cycles.max(1);
    let mut sim = Sim::new(model, cfg.seed, (w0, w1));
    sim.synth = Some(traffic);
    let p = traffic.rate.clamp(0.0, 1.0);
    sim.gap_log = if p >= 1.0 { 0.0 } else { (1.0 - p).ln() };
    if p > 0.0 {
        for s in 0..Synthetic::stops(model) {
            let g = sim.gap();
            sim.push(
                g - 1,
                Ev {
                    kind: EV_SOURCE,
                    id: s,
                },
            );
        }
    }
    let limit = w1 + cfg.drain_cycles;
    sim.run(|s| s.now >= limit || (s.now >= w1 && s.measured_in_flight == 0))?;
    let drained = sim.measured_in_flight == 0;
    let mut f = sim.figures();
    if !drained {
        f.saturated = true;
    }
    // Offered packets are counted at creation; accepted = delivered ones per window.
    let stats = SimStats {
        cycles: sim.now,
        routers: u64::from(model.geo.stops()),
        events: sim.events,
        drained,
    };
    Ok((f, stats))
}

/// A machine of several sockets keeps a next-hop table of every stop pair (4 bytes
/// each); refuse before allocating one that would not fit in memory.
fn check_next_hop_table(model: &Model) -> Result<(), ModelError> {
    if model.geo.sockets <= 1 {
        return Ok(());
    }
    let stops = u64::from(model.geo.stops());
    let need = stops * stops * 4;
    // 8 GiB is far beyond any preset (two 16x16 sockets: 1 MiB); it only stops a
    // --set that would abort on allocation.
    const MAX: u64 = 8 << 30;
    if need > MAX {
        return Err(ModelError::Usage {
            msg: format!(
                "the discrete-event engine needs a next-hop table of {} for {stops} stops on {} sockets, more than the {} it may take; use smaller meshes (--set noc.rows=... --set noc.cols=...) or --engine analytic",
                numalab_schema::units::bytes(need),
                model.geo.sockets,
                numalab_schema::units::bytes(MAX)
            ),
        });
    }
    Ok(())
}

/// Simulates closed-loop application traffic for warm-up plus the measured window.
pub fn app(model: &Model, app: &App, cfg: &DesConfig) -> Result<(Figures, SimStats), ModelError> {
    if model.spec.noc.router == crate::spec::RouterKind::InputQueued {
        let r = crate::router::simulate(model, &crate::router::Workload::App(app.clone()), cfg)?;
        return Ok((r.figures, r.stats));
    }
    model.check_queue_depth(false)?;
    check_next_hop_table(model)?;
    let w0 = cfg.warmup_cycles;
    let w1 = w0 + cfg.measure_cycles.max(1);
    let mut sim = Sim::new(model, cfg.seed, (w0, w1));
    sim.app = Some(app);
    sim.slot_node = app.cores.iter().map(|&c| model.cores[c].node).collect();
    sim.issue_counter = vec![0; app.cores.len()];
    for slot in 0..app.cores.len() as u32 {
        // Stagger the first requests so cores do not start in lockstep.
        sim.issue_counter[slot as usize] = slot;
        for j in 0..app.outstanding {
            let t = u64::from(j) + u64::from(slot % 4);
            sim.push(
                t,
                Ev {
                    kind: EV_ISSUE,
                    id: slot,
                },
            );
        }
    }
    sim.run(|s| s.now >= w1)?;
    let f = sim.figures();
    let stats = SimStats {
        cycles: sim.now,
        routers: u64::from(model.geo.stops()),
        events: sim.events,
        drained: true,
    };
    Ok((f, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::Pattern;

    #[test]
    fn same_seed_same_figures_other_seed_other_figures() {
        let m = Model::load("mesh", &["noc.cols=4".into(), "noc.rows=4".into()]).unwrap();
        let t = Synthetic {
            pattern: Pattern::Uniform,
            rate: 0.3,
            flits: 1,
        };
        let cfg = DesConfig {
            seed: 7,
            warmup_cycles: 200,
            measure_cycles: 2000,
            drain_cycles: 2000,
        };
        let (a, _) = synthetic(&m, &t, &cfg).unwrap();
        let (b, _) = synthetic(&m, &t, &cfg).unwrap();
        assert_eq!(a, b);
        let (c, _) = synthetic(&m, &t, &DesConfig { seed: 8, ..cfg }).unwrap();
        assert_ne!(a.packet_latency_cycles, c.packet_latency_cycles);
    }

    #[test]
    fn a_lone_packet_takes_the_zero_load_latency() {
        // Transpose on 2x2: (0,1) <-> (1,0) only, 2 hops each, at a load so low that
        // packets never meet.
        // The output-queued router's formula (the input-queued pipeline's is checked in
        // tests/router.rs).
        let m = Model::load(
            "mesh",
            &[
                "noc.cols=2".into(),
                "noc.rows=2".into(),
                "noc.router=output-queued".into(),
            ],
        )
        .unwrap();
        let t = Synthetic {
            pattern: Pattern::Transpose,
            rate: 0.001,
            flits: 3,
        };
        let cfg = DesConfig {
            seed: 3,
            warmup_cycles: 0,
            measure_cycles: 200_000,
            drain_cycles: 1000,
        };
        let (f, s) = synthetic(&m, &t, &cfg).unwrap();
        assert!(s.drained);
        assert!(f.packets_per_cycle > 0.0);
        // t_inject + 2 (t_router + t_link) + t_eject + (flits - 1) = 1 + 4 + 1 + 2.
        assert!(
            (f.packet_latency_cycles - 8.0).abs() < 0.05,
            "{}",
            f.packet_latency_cycles
        );
        assert_eq!(f.mean_hops, 2.0);
    }
}
