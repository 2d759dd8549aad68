//! The analytic engine: exact per-resource loads for a traffic matrix, zero-load
//! latency, queueing per link and virtual network, and bandwidth ceilings. Answers in
//! milliseconds, and is the reference the discrete-event engine is checked against.
//!
//! Resources: every directed mesh link of every virtual network (with `links_per_vn`
//! parallel lanes), the injection and ejection port of every stop and network, the socket
//! link, and every memory controller (its channels as parallel servers). A packet's
//! latency is its zero-load latency (`t_inject + H (t_router + t_link) + t_eject +
//! flits - 1`) plus the mean wait at each resource on its route:
//! - one lane: `W = sum(lambda S^2) / (2 (1 - rho)) * (1 - sum_i rho_i^2 / rho^2)`: the
//!   M/D/1 (Pollaczek-Khinchine) wait, times the finite-input correction of an output
//!   queue fed by a few inputs that each deliver at most one flit per cycle (Karol,
//!   Hluchyj and Morgan 1987); with many equal inputs it tends to M/D/1, with one input
//!   it is 0 (a lone stream never waits);
//! - c lanes or channels: M/D/c by Allen-Cunneen, half the Erlang-C M/M/c wait.
//!
//! With input-queued routers (`noc.router = "input-queued"`) the zero-load latency is
//! their pipeline's, and input ports lose cycles in switch allocation
//! ([`Network::allocation_losses`]), which brings saturation below the link bound; their
//! finite buffers and few VCs block packets for VCs and credits
//! ([`Network::buffer_blocking`]), which brings it lower still.
//!
//! Closed-loop cores (each with `outstanding` requests) are solved as a fixed point of
//! Little's law: rate = outstanding / round trip, with round trips from the loads the
//! rates cause. Resources at or beyond 99.9% utilization make the result a bound and
//! are flagged (`saturated`); the discrete-event engine shows what happens there.

use crate::geometry::Hop;
use crate::model::{Model, VN_NAMES};
use crate::router::Flow;
use crate::traffic::{
    node_matrices, plan, App, Data, Figures, Op, Outcome, Step, Synthetic, VnFigures,
};
use std::collections::HashMap;

const LOCAL: usize = 4;
const RHO_MAX: f64 = 0.999;

/// Resource numbering and routes for one model.
pub struct Network<'a> {
    model: &'a Model,
    n_stops: u32,
    /// Interned legs (from, to, vn).
    index: HashMap<(u32, u32, u8), u32>,
    legs: Vec<Leg>,
    route: Vec<(u32, u8)>,
    n_res: usize,
    servers: Vec<f64>,
    /// Input-queued routers (`noc.router = "input-queued"`): their pipeline's zero-load
    /// latency and the switch allocator's losses (see [`Network::allocation_losses`]).
    iq: bool,
    /// Input-queued routers with their finite buffers and virtual channels (see
    /// [`Network::buffer_blocking`]); off, the input ports' buffers are unbounded.
    finite_buffers: bool,
}

#[derive(Debug, Clone, Copy)]
struct Leg {
    from: u32,
    to: u32,
    vn: u8,
    hops: u32,
    t0: f64,
    start: u32,
    len: u32,
    /// Service time (cycles) this leg's packet takes at each resource kind.
    flits: f64,
}

/// Loads and waits of every resource.
#[derive(Debug, Clone)]
struct Loads {
    lambda: Vec<f64>,
    rho: Vec<f64>,
    s2: Vec<f64>,
    inrho: Vec<[f64; 5]>,
    tracked: Vec<bool>,
    wait: Vec<f64>,
    /// Input-queued routers: cycles a flit spends at the input port it entered by
    /// (index: the output resource and that input port) beyond the output's own wait:
    /// requests lost in switch allocation and the input port's queue they cause.
    extra: Vec<[f64; 5]>,
    /// Finite buffers: cycles a packet's flits are spread by waiting for credits of its
    /// own earlier flits at a channel (see [`Network::buffer_blocking`]); a packet is
    /// delayed by the largest of these on its route, not their sum (once spread, its
    /// flits arrive at the next channel as fast as they leave it).
    serial: Vec<f64>,
    /// Highest utilization of any resource: outputs, and with input-queued routers the
    /// input ports (lost allocation cycles included).
    max_util: f64,
    saturated: bool,
}

impl<'a> Network<'a> {
    /// Resource layout for `model`.
    pub fn new(model: &'a Model) -> Self {
        let n_stops = model.geo.stops();
        let n_res = (n_stops * 24 + 2) as usize + model.mcs.len();
        let mut servers = vec![1.0; n_res];
        servers[..(n_stops * 16) as usize].fill(f64::from(model.lanes));
        for (m, mc) in model.mcs.iter().enumerate() {
            servers[(n_stops * 24 + 2) as usize + m] = f64::from(mc.channels);
        }
        Network {
            model,
            n_stops,
            index: HashMap::new(),
            legs: Vec::new(),
            route: Vec::new(),
            n_res,
            servers,
            iq: model.spec.noc.router == crate::spec::RouterKind::InputQueued,
            finite_buffers: true,
        }
    }

    fn link_res(&self, link: u32, vn: u8) -> u32 {
        link * 4 + u32::from(vn)
    }
    fn inj_res(&self, stop: u32, vn: u8) -> u32 {
        self.n_stops * 16 + stop * 4 + u32::from(vn)
    }
    fn ej_res(&self, stop: u32, vn: u8) -> u32 {
        self.n_stops * 20 + stop * 4 + u32::from(vn)
    }
    fn sock_res(&self, socket: u32) -> u32 {
        self.n_stops * 24 + socket
    }
    /// Resource index of memory controller `m`.
    fn mc_res(&self, m: u32) -> u32 {
        self.n_stops * 24 + 2 + m
    }

    /// Interns the leg (from, to, vn) and returns its id.
    fn leg(&mut self, from: u32, to: u32, vn: u8) -> u32 {
        if let Some(&id) = self.index.get(&(from, to, vn)) {
            return id;
        }
        let g = &self.model.geo;
        let flits = self.model.flits[vn as usize];
        let start = self.route.len() as u32;
        self.route.push((self.inj_res(from, vn), LOCAL as u8));
        let mut cur = from;
        let mut inport = LOCAL as u8;
        let mut hops = 0;
        loop {
            match g.next_hop(cur, to) {
                Hop::Arrived => break,
                Hop::Link(l) => {
                    self.route.push((self.link_res(l, vn), inport));
                    inport = (l & 3) as u8;
                    cur = g.link_target(l);
                    hops += 1;
                }
                Hop::Socket(k) => {
                    self.route.push((self.sock_res(k), LOCAL as u8));
                    inport = LOCAL as u8;
                    cur = g.across(k);
                }
            }
        }
        self.route.push((self.ej_res(to, vn), inport));
        let id = self.legs.len() as u32;
        let mut t0 = f64::from(g.packet_cycles(from, to, flits));
        if self.iq {
            // The input-queued pipeline instead of `t_router` per hop: a cycle to enter
            // the first buffer, then routing, VC and switch allocation and traversal at
            // each of the H + 1 routers on the way (crate::router::zero_load_latency).
            let n = &self.model.spec.noc;
            let stages =
                f64::from(n.routing_delay + n.vc_alloc_delay + n.sw_alloc_delay + n.st_final_delay);
            t0 += 1.0 + f64::from(hops + 1) * stages - f64::from(hops * g.router_cycles);
        }
        self.legs.push(Leg {
            from,
            to,
            vn,
            hops,
            t0,
            start,
            len: self.route.len() as u32 - start,
            flits: f64::from(flits),
        });
        self.index.insert((from, to, vn), id);
        id
    }

    fn service(&self, res: u32, leg: &Leg) -> f64 {
        if res >= self.n_stops * 24 && res < self.n_stops * 24 + 2 {
            leg.flits * self.model.socket_cycles_per_flit
        } else {
            leg.flits
        }
    }

    /// Loads from leg rates (packets/cycle) and memory visit rates (visits/cycle).
    fn loads(&self, leg_rate: &[f64], mc_rate: &[f64]) -> Loads {
        let mut l = Loads {
            lambda: vec![0.0; self.n_res],
            rho: vec![0.0; self.n_res],
            s2: vec![0.0; self.n_res],
            inrho: vec![[0.0; 5]; self.n_res],
            tracked: vec![true; self.n_res],
            wait: vec![0.0; self.n_res],
            extra: vec![[0.0; 5]; self.n_res],
            serial: vec![0.0; self.n_res],
            max_util: 0.0,
            saturated: false,
        };
        for (i, leg) in self.legs.iter().enumerate() {
            let lam = leg_rate[i];
            if lam == 0.0 {
                continue;
            }
            for &(r, inport) in &self.route[leg.start as usize..(leg.start + leg.len) as usize] {
                let s = self.service(r, leg);
                let ri = r as usize;
                l.lambda[ri] += lam;
                l.rho[ri] += lam * s / self.servers[ri];
                l.s2[ri] += lam * s * s;
                l.inrho[ri][inport as usize] += lam * s;
            }
        }
        for (m, &lam) in mc_rate.iter().enumerate() {
            let r = self.mc_res(m as u32) as usize;
            let s = self.model.mcs[m].service_cycles;
            l.lambda[r] += lam;
            l.rho[r] += lam * s / self.servers[r];
            l.s2[r] += lam * s * s;
            l.tracked[r] = false;
        }
        for r in (self.n_stops * 24) as usize..(self.n_stops * 24 + 2) as usize {
            l.tracked[r] = false;
        }
        self.finish_waits(&mut l);
        l
    }

    /// Waits from the accumulated loads.
    fn finish_waits(&self, l: &mut Loads) {
        l.saturated = false;
        l.max_util = 0.0;
        for r in 0..self.n_res {
            if l.lambda[r] == 0.0 {
                continue;
            }
            let rho_true = l.rho[r];
            l.max_util = l.max_util.max(rho_true);
            if rho_true >= RHO_MAX {
                l.saturated = true;
            }
            let rho = rho_true.min(RHO_MAX);
            let c = self.servers[r];
            let mean_s = l.rho[r] * c / l.lambda[r];
            let mut w = if c <= 1.0 {
                let base = l.s2[r] / (2.0 * (1.0 - rho));
                if l.tracked[r] {
                    let sq: f64 = l.inrho[r].iter().map(|x| x * x).sum();
                    base * (1.0 - sq / (rho_true * rho_true)).max(0.0)
                } else {
                    base
                }
            } else {
                erlang_c(c as u32, c * rho) * mean_s / (c * (1.0 - rho)) / 2.0
            };
            if !w.is_finite() {
                w = 0.0;
            }
            l.wait[r] = w;
        }
        if self.iq {
            if self.finite_buffers {
                self.buffer_blocking(l);
            } else {
                self.allocation_losses(l, &[]);
            }
        }
    }

    /// The router stop and virtual network of an output resource (a mesh link or an
    /// ejection port), `None` for other resources.
    fn output_router(&self, r: usize) -> Option<(usize, usize)> {
        let n = self.n_stops as usize;
        if r < n * 16 {
            Some((r / 16, r % 4))
        } else if (n * 20..n * 24).contains(&r) {
            Some(((r - n * 20) / 4, (r - n * 20) % 4))
        } else {
            None
        }
    }

    /// Input-queued routers: what the output-queued wait leaves out. Each input port
    /// sends at most one flit per cycle, chosen by a separable allocator in one
    /// iteration: the input picks one of its waiting flits and requests that flit's
    /// output; the output grants one of the inputs that requested it. A request that
    /// loses wastes the input's cycle. For a flit at input `j` bound for output `o`, the
    /// other inputs request `o` in a cycle with probability about their flit rate to it,
    /// `sum_k!=j f_ko`, and a round-robin output grants each of two contenders half the
    /// time, so the request loses with probability `l = (sum_k!=j f_ko) / 2` and the
    /// flit needs a geometric number of attempts (mean `1 / (1 - l)`). The input port is
    /// then a server of utilization `U = sum_o f_jo / (1 - l_jo)`, and its queue adds
    /// the M/G/1 wait of the attempts beyond the first (a lone stream that never loses
    /// never waits, as in the output-queued case). Saturation comes where some `U` or
    /// some output's utilization reaches 1, below the link bound.
    ///
    /// `block[r]` (empty: none) is the time per packet a flit bound for output `r` holds
    /// the head of its input port without using the switch (waiting for a downstream
    /// VC or credit, [`Network::buffer_blocking`]); it counts against the input port
    /// when that port has a single VC, a FIFO whose head blocks the flits behind it.
    fn allocation_losses(&self, l: &mut Loads, block: &[f64]) -> Vec<f64> {
        let n_in = self.n_stops as usize * 5 * 4;
        let mut util = vec![0.0f64; n_in];
        let mut excess2 = vec![0.0f64; n_in];
        for r in 0..self.n_res {
            let Some((stop, vn)) = self.output_router(r) else {
                continue;
            };
            let total: f64 = l.inrho[r].iter().sum();
            if total == 0.0 {
                continue;
            }
            for j in 0..5 {
                let f = l.inrho[r][j];
                if f == 0.0 {
                    continue;
                }
                let lose = (0.5 * (total - f)).clamp(0.0, 0.95);
                let p = 1.0 - lose;
                let idx = (stop * 5 + j) * 4 + vn;
                util[idx] += f / p;
                // Second moment of the attempts, less the one attempt every flit makes.
                excess2[idx] += f * ((2.0 - p) / (p * p) - 1.0);
                l.extra[r][j] = lose / p;
                if let Some(&b) = block.get(r) {
                    // Head-of-line blocking: the port is held for `b` per packet
                    // (exponentially distributed: second moment 2 b^2).
                    let packets = f * l.lambda[r] / total;
                    util[idx] += packets * b;
                    excess2[idx] += packets * 2.0 * b * b;
                }
            }
        }
        let mut wait_in = vec![0.0f64; n_in];
        for i in 0..n_in {
            if util[i] == 0.0 {
                continue;
            }
            l.max_util = l.max_util.max(util[i]);
            if util[i] >= RHO_MAX {
                l.saturated = true;
            }
            wait_in[i] = excess2[i] / (2.0 * (1.0 - util[i].min(RHO_MAX)));
        }
        for r in 0..self.n_res {
            let Some((stop, vn)) = self.output_router(r) else {
                continue;
            };
            for j in 0..5 {
                if l.inrho[r][j] > 0.0 {
                    l.extra[r][j] += wait_in[(stop * 5 + j) * 4 + vn];
                }
            }
        }
        wait_in
    }

    /// Input-queued routers with finite buffers and few virtual channels: what a packet
    /// waits for besides the switch. Every channel (a mesh link into the next router's
    /// input port, the injection channel from a stop's source into its router, the
    /// ejection port) has `vcs` VCs. A packet holds one from its VC allocation until its
    /// tail has been sent (`wait_for_tail_credit = 0`); each flit holds one of its VC's
    /// `buffer_flits` (B) credits from being sent until the credit is back upstream.
    /// Per channel, for packets of L flits:
    ///
    /// - credit loop of a flit, `h = h0 + e_f`: `h0` for a flit that leaves the next
    ///   buffer as soon as it may (switch allocation and traversal, link, routing and VC
    ///   allocation for a head, link back, `credit_delay`: 7 cycles for a head with the
    ///   reference delays, as `tests/router.rs` derives by hand; the injection channel
    ///   has `inject_cycles` each way and no credit delay), `e_f` the flit's own losses
    ///   in the next router's switch allocation. The head's waits there, `e_p`, hold the
    ///   `min(L, B)` credits of the flits queued behind it, once per packet;
    /// - a packet's VC hold: `vc_alloc_delay + L x switch attempts` (a source takes a
    ///   free VC without allocation), plus, when the packet is longer than the buffer,
    ///   the cycles flit `i` waits for the credit of flit `i - B`
    ///   (`t_i = max(t_{i-1} + 1, t_{i-B} + h)`, the spread) and the head's waits
    ///   downstream `e_p` (it keeps this VC until its tail leaves: wormhole);
    /// - the channel's VCs are `vcs` servers whose service is the larger of the VC hold
    ///   and the packet's share of its VC's credit loop, `(L h + min(L, B) e_p) / B` (a
    ///   VC passes at most B flits per loop). A packet waits for a VC as in M/D/c
    ///   (Allen-Cunneen), times the finite-input factor of the output queue (packets of
    ///   one input port are already serialised by it; not at a source, whose packets
    ///   come at random), and one that finds its VC busy (probability: the VCs'
    ///   utilization) also waits out the service beyond its own hold, for credits;
    /// - its wait at the channel is the larger of the output queue's and the VC wait,
    ///   plus that credit wait; the spread delays it once, by the largest on its route
    ///   (`serial`); with one VC per port it blocks its input port meanwhile
    ///   ([`Network::allocation_losses`]), whose queue then grows.
    ///
    /// `e_p` is taken twice. For the VCs' utilization (saturation) and for what blocks
    /// an input port it holds all the head's waits at the next router (output queue
    /// included: those flits sit in the buffer and keep its credits: tree saturation).
    /// For latency it leaves out the next router's output and input-port queues, which
    /// that router's own terms already count wherever the flits wait.
    ///
    /// Each channel depends only on those after it (dimension-order routes), so the
    /// iteration reaches the fixed point in as many rounds as the longest route has
    /// hops. The VCs' utilization counts in `max_util`: saturation comes where it or an
    /// input port reaches 1. No constant is fitted: `h0`, the hold and B come from the
    /// router's delays and sizes. With 8 VCs of 8 flits (BookSim's reference) the VC
    /// waits are negligible and the figures are those of unbounded buffers.
    fn buffer_blocking(&self, l: &mut Loads) {
        let n = &self.model.spec.noc;
        let g = &self.model.geo;
        let vcs = n.vcs.max(1);
        let v = f64::from(vcs);
        let depth = n.buffer_flits.max(1);
        let b = f64::from(depth);
        let head = f64::from(n.routing_delay + n.vc_alloc_delay);
        let sa_st = f64::from(n.sw_alloc_delay + n.st_final_delay);
        let va = f64::from(n.vc_alloc_delay);
        let credit = f64::from(n.credit_delay);
        let inject = f64::from(g.inject_cycles);
        let ns = self.n_stops as usize;
        let n_in = ns * 5 * 4;
        let base = l.wait.clone();
        let mut eff = base.clone();
        let mut eff_full = base.clone();
        let mut block = vec![0.0f64; self.n_res];
        // Per input port: flit rate, and rate-weighted packet waits (`e_p`) and flit
        // losses (`e_f`) at the router's outputs.
        let mut e_den = vec![0.0f64; n_in];
        let mut e_pkt = vec![0.0f64; n_in];
        let mut e_full = vec![0.0f64; n_in];
        let mut e_flit = vec![0.0f64; n_in];
        let mut vc_util: f64 = 0.0;
        let rounds = 2 * (g.cols + g.rows) as usize + 4;
        for round in 0..=rounds {
            let wait_in = self.allocation_losses(l, if vcs == 1 { &block } else { &[] });
            e_den.fill(0.0);
            e_pkt.fill(0.0);
            e_full.fill(0.0);
            e_flit.fill(0.0);
            for r in 0..self.n_res {
                let Some((stop, vn)) = self.output_router(r) else {
                    continue;
                };
                for j in 0..5 {
                    let f = l.inrho[r][j];
                    if f > 0.0 {
                        let idx = (stop * 5 + j) * 4 + vn;
                        e_den[idx] += f;
                        e_pkt[idx] += f * (eff[r] - base[r]);
                        e_full[idx] += f * eff_full[r];
                        // Switch losses only: `extra` also holds the port's queue.
                        e_flit[idx] += f * (l.extra[r][j] - wait_in[idx]);
                    }
                }
            }
            let mut change: f64 = 0.0;
            vc_util = 0.0;
            for r in 0..self.n_res {
                let lam = l.lambda[r];
                let phi: f64 = l.inrho[r].iter().sum();
                if lam == 0.0 || phi == 0.0 {
                    continue;
                }
                let flits = phi / lam;
                // Mean switch attempts of a flit (as in allocation_losses).
                let attempts: f64 = l.inrho[r]
                    .iter()
                    .filter(|&&f| f > 0.0)
                    .map(|&f| f / (1.0 - (0.5 * (phi - f)).clamp(0.0, 0.95)))
                    .sum::<f64>()
                    / phi;
                // (next input port, h0, VC hold without credits, fed by a source)
                let (down, h0, hold0, source) = if r < ns * 16 {
                    let link = (r / 4) as u32;
                    let t = f64::from(g.link_cost(link));
                    let to = g.link_target(link) as usize;
                    (
                        Some((to * 5 + (link & 3) as usize) * 4 + r % 4),
                        sa_st + 2.0 * t + credit + head / flits,
                        va + flits * attempts,
                        false,
                    )
                } else if r < ns * 20 {
                    let (stop, vn) = ((r - ns * 16) / 4, (r - ns * 16) % 4);
                    (
                        Some((stop * 5 + LOCAL) * 4 + vn),
                        2.0 * inject + head / flits,
                        flits,
                        true,
                    )
                } else if r < ns * 24 {
                    // Ejection: VCs, but credits that never run out.
                    (None, 0.0, va + flits * attempts, false)
                } else {
                    continue;
                };
                // Twice: with the head's waits downstream that hold credits (for the
                // VCs' utilization and what blocks the input port), and with only those
                // not already counted as queueing at the next router (for latency).
                let mut spread = 0.0;
                let mut at = |ep: f64| {
                    let (mut wormhole, mut service) = (0.0, hold0);
                    if let Some(idx) = down.filter(|&i| e_den[i] > 0.0) {
                        let h = h0 + (e_flit[idx] / e_den[idx]).max(0.0);
                        spread = packet_credit_stall(flits, depth, h);
                        if flits > b {
                            wormhole = ep;
                        }
                        service =
                            (hold0 + spread + wormhole).max((flits * h + flits.min(b) * ep) / b);
                    }
                    let hold = hold0 + spread + wormhole;
                    let util = lam * service / v;
                    let mut w_vc = mdc_wait(vcs, lam, service);
                    if !source {
                        let sq: f64 = l.inrho[r].iter().map(|x| x * x).sum();
                        w_vc *= (1.0 - sq / (phi * phi)).max(0.0);
                    }
                    let credit_wait = util.min(1.0) * (service - hold).max(0.0);
                    (util, w_vc, credit_wait, wormhole)
                };
                let per = |sum: &[f64]| {
                    down.filter(|&i| e_den[i] > 0.0)
                        .map_or(0.0, |i| sum[i] / e_den[i])
                };
                let (util, w_full, cw_full, wormhole) = at(per(&e_full));
                let (_, w_lat, cw_lat, _) = at(per(&e_pkt));
                vc_util = vc_util.max(util);
                let e = base[r].max(w_lat) + cw_lat;
                change = change.max((e - eff[r]).abs() + (spread - l.serial[r]).abs());
                eff[r] = e;
                eff_full[r] = base[r].max(w_full) + cw_full;
                l.serial[r] = spread;
                block[r] = w_full + cw_full + spread + wormhole;
            }
            if change < 1e-9 && round > 0 {
                break;
            }
        }
        l.wait = eff;
        l.max_util = l.max_util.max(vc_util);
        if vc_util >= RHO_MAX {
            l.saturated = true;
        }
    }

    fn leg_wait(&self, loads: &Loads, leg: &Leg) -> f64 {
        let route = &self.route[leg.start as usize..(leg.start + leg.len) as usize];
        let waits: f64 = route
            .iter()
            .map(|&(r, inport)| {
                // Every flit of the packet wins the switch on its own.
                loads.wait[r as usize] + leg.flits * loads.extra[r as usize][inport as usize]
            })
            .sum();
        let spread = route
            .iter()
            .map(|&(r, _)| loads.serial[r as usize])
            .fold(0.0, f64::max);
        waits + spread
    }

    /// Figures from leg rates and loads.
    fn figures(&self, leg_rate: &[f64], loads: &Loads) -> Figures {
        let mut f = Figures {
            engine: "analytic".into(),
            ..Default::default()
        };
        let mut total = 0.0;
        let mut lat = 0.0;
        let mut hops = 0.0;
        let mut hist: Vec<f64> = Vec::new();
        let mut vn_hist: [Vec<f64>; 4] = Default::default();
        let nodes = self.model.nodes.len();
        let mut node_rate = vec![0.0; nodes * nodes * 4];
        let mut vn_rate = [0.0; 4];
        let mut vn_wait = [0.0; 4];
        let mut vn_lat = [0.0; 4];
        for (i, leg) in self.legs.iter().enumerate() {
            let lam = leg_rate[i];
            if lam == 0.0 {
                continue;
            }
            let w = self.leg_wait(loads, leg);
            total += lam;
            lat += lam * (leg.t0 + w);
            hops += lam * f64::from(leg.hops);
            let h = leg.hops as usize;
            if hist.len() <= h {
                hist.resize(h + 1, 0.0);
            }
            hist[h] += lam;
            let v = leg.vn as usize;
            if vn_hist[v].len() <= h {
                vn_hist[v].resize(h + 1, 0.0);
            }
            vn_hist[v][h] += lam;
            let sn = self.model.stop_node[leg.from as usize] as usize;
            let dn = self.model.stop_node[leg.to as usize] as usize;
            node_rate[(sn * nodes + dn) * 4 + v] += lam;
            vn_rate[v] += lam;
            vn_wait[v] += lam * w;
            vn_lat[v] += lam * (leg.t0 + w);
        }
        let mut vn_max = [0.0f64; 4];
        for l in 0..self.n_stops * 4 {
            for v in 0..4u8 {
                let r = self.link_res(l, v) as usize;
                vn_max[v as usize] = vn_max[v as usize].max(loads.rho[r]);
            }
        }
        f.packets_per_cycle = total;
        f.packet_latency_cycles = if total > 0.0 { lat / total } else { 0.0 };
        f.mean_hops = if total > 0.0 { hops / total } else { 0.0 };
        f.hop_histogram = hist
            .iter()
            .map(|h| h / total.max(f64::MIN_POSITIVE))
            .collect();
        let (all, mut per_vn) = node_matrices(&node_rate, nodes, 1.0);
        f.node_packets_per_cycle = all;
        f.vns = (0..4)
            .map(|v| VnFigures {
                vn: VN_NAMES[v].into(),
                packets_per_cycle: vn_rate[v],
                queueing_cycles: if vn_rate[v] > 0.0 {
                    vn_wait[v] / vn_rate[v]
                } else {
                    0.0
                },
                latency_cycles: if vn_rate[v] > 0.0 {
                    vn_lat[v] / vn_rate[v]
                } else {
                    0.0
                },
                max_link_utilization: vn_max[v],
                hop_histogram: vn_hist[v]
                    .iter()
                    .map(|h| h / vn_rate[v].max(f64::MIN_POSITIVE))
                    .collect(),
                node_packets_per_cycle: std::mem::take(&mut per_vn[v]),
            })
            .collect();
        f.max_link_utilization = vn_max.iter().copied().fold(0.0, f64::max);
        f.saturated = loads.saturated;
        f
    }
}

/// Erlang C: probability of waiting in M/M/c with offered load `a` (erlangs).
fn erlang_c(c: u32, a: f64) -> f64 {
    // Erlang B by recursion, then C.
    let mut b = 1.0;
    for k in 1..=c {
        b = a * b / (f64::from(k) + a * b);
    }
    let rho = a / f64::from(c);
    if rho >= 1.0 {
        return 1.0;
    }
    b / (1.0 - rho * (1.0 - b))
}

/// The mean wait for one of `c` servers of service `s` (cycles) at arrival rate `lambda`:
/// M/D/c by Allen-Cunneen (half the Erlang-C wait of M/M/c), utilization capped at
/// [`RHO_MAX`] as for every other resource.
fn mdc_wait(c: u32, lambda: f64, s: f64) -> f64 {
    if lambda <= 0.0 || s <= 0.0 {
        return 0.0;
    }
    let cf = f64::from(c);
    let rho = (lambda * s / cf).min(RHO_MAX);
    erlang_c(c, cf * rho) * s / (cf * (1.0 - rho)) / 2.0
}

/// Cycles a packet of `flits` flits loses waiting for credits of its own flits when its
/// VC holds `b` flits and a credit comes back `h` cycles after its flit was sent: flit
/// `i` goes at `t_i = max(t_{i-1} + 1, t_{i-b} + h)`; the stall is `t_last - (flits - 1)`
/// (0 when `flits <= b` or `h <= b`).
fn packet_credit_stall(flits: f64, b: u32, h: f64) -> f64 {
    let n = flits.round().max(1.0) as usize;
    let b = b as usize;
    if n <= b {
        return 0.0;
    }
    let mut t = vec![0.0f64; n];
    for i in 1..n {
        t[i] = t[i - 1] + 1.0;
        if i >= b {
            t[i] = t[i].max(t[i - b] + h);
        }
    }
    t[n - 1] - (n - 1) as f64
}

/// A synthetic pattern's routes and per-unit-rate loads, built once; every offered rate
/// is then a rescaling (loads are linear in the rate), so a whole latency-versus-load
/// curve costs little more than one point.
pub struct SyntheticCurve<'a> {
    net: Network<'a>,
    unit_rate: Vec<f64>,
    unit: Loads,
}

impl<'a> SyntheticCurve<'a> {
    /// Routes every packet of the pattern (socket 0's stops, one virtual network).
    pub fn new(model: &'a Model, traffic: &Synthetic) -> Self {
        let mut flows = Vec::new();
        for src in 0..Synthetic::stops(model) {
            for (dst, p) in traffic.destinations(model, src) {
                if p > 0.0 {
                    flows.push(Flow {
                        src,
                        dst,
                        rate: p,
                        vn: 0,
                    });
                }
            }
        }
        Self::from_flows(model, &flows, traffic.flits)
    }

    /// Routes explicit flows of `flits`-flit packets, each `rate` packets per cycle at
    /// unit offered load: [`Self::at`]`(r)` scales every flow by `r`. A flow whose source
    /// is its destination touches no link: its packets go from the stop's injection port
    /// through its own router to its ejection port, as in the discrete-event router and
    /// BookSim (whose transpose has the diagonal nodes send to themselves).
    pub fn from_flows(model: &'a Model, flows: &[Flow], flits: u32) -> Self {
        let mut net = Network::new(model);
        let mut unit_rate: Vec<f64> = Vec::new();
        for f in flows {
            if f.rate > 0.0 {
                let id = net.leg(f.src, f.dst, f.vn) as usize;
                if unit_rate.len() <= id {
                    unit_rate.resize(id + 1, 0.0);
                }
                unit_rate[id] += f.rate;
            }
        }
        // Synthetic packets may be longer than the request network's 1 flit.
        for leg in &mut net.legs {
            leg.t0 += f64::from(flits) - leg.flits;
            leg.flits = f64::from(flits);
        }
        let unit = net.loads(&unit_rate, &[]);
        SyntheticCurve {
            net,
            unit_rate,
            unit,
        }
    }

    /// The same curve with unbounded input buffers (no finite-buffer correction): the
    /// analytic model before it had one, kept to show what the correction changes.
    pub fn infinite_buffers(mut self) -> Self {
        self.net.finite_buffers = false;
        self.net.finish_waits(&mut self.unit);
        self
    }

    /// Every resource's load and wait at an offered rate: the unit loads scaled.
    fn loads_at(&self, rate: f64) -> Loads {
        let mut l = self.unit.clone();
        for r in 0..l.lambda.len() {
            l.lambda[r] *= rate;
            l.rho[r] *= rate;
            l.s2[r] *= rate;
            for i in &mut l.inrho[r] {
                *i *= rate;
            }
            l.serial[r] = 0.0;
        }
        self.net.finish_waits(&mut l);
        l
    }

    /// Figures at an offered rate (packets per stop per cycle).
    pub fn at(&self, rate: f64) -> Figures {
        let l = self.loads_at(rate);
        let leg_rate: Vec<f64> = self.unit_rate.iter().map(|u| u * rate).collect();
        self.net.figures(&leg_rate, &l)
    }

    /// Utilization of the busiest resource at an offered rate: links and ports, and
    /// with input-queued routers the input ports with their lost allocation cycles.
    fn max_util_at(&self, rate: f64) -> f64 {
        self.loads_at(rate).max_util
    }

    /// The offered rate at which some resource reaches 100% utilization in the model of
    /// its routers: the link bound ([`Self::saturation_rate`]) for output-queued routers;
    /// lower for input-queued ones, whose inputs lose cycles in switch allocation and
    /// whose VCs wait for credits (found by bisection: the input ports' and VCs'
    /// utilization grows faster than the rate).
    pub fn router_saturation_rate(&self) -> f64 {
        let ideal = self.saturation_rate();
        if !self.net.iq || !ideal.is_finite() {
            return ideal;
        }
        let (mut lo, mut hi) = (0.0, ideal);
        for _ in 0..50 {
            let mid = 0.5 * (lo + hi);
            if self.max_util_at(mid) < 1.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The offered rate at which the busiest link (or port) reaches 100% utilization:
    /// the pattern's saturation throughput under ideal flow control.
    pub fn saturation_rate(&self) -> f64 {
        let max = self.unit.rho[..(self.net.n_stops * 24) as usize]
            .iter()
            .copied()
            .fold(0.0, f64::max);
        if max > 0.0 {
            1.0 / max
        } else {
            f64::INFINITY
        }
    }
}

/// Open-loop synthetic traffic: latency, loads and hops at the offered rate.
pub fn synthetic(model: &Model, traffic: &Synthetic) -> Figures {
    SyntheticCurve::new(model, traffic).at(traffic.rate)
}

/// See [`SyntheticCurve::saturation_rate`].
pub fn saturation_rate(model: &Model, traffic: &Synthetic) -> f64 {
    SyntheticCurve::new(model, traffic).saturation_rate()
}

/// Per-core demand of an application: legs and memory visits per request.
struct Profile {
    legs: Vec<(u32, f64, f64)>,
    mems: Vec<(u32, f64, f64)>,
    fixed: f64,
}

/// Samples of lines used to find how a node's addresses spread over homes and
/// controllers (a multiple of every power-of-two count up to 2^14).
const SAMPLE_LINES: u64 = 16384;

/// The distribution of (home, controller) locations of a core's data.
fn classes(model: &Model, app: &App, core: usize) -> Vec<(crate::model::Location, f64)> {
    if let Data::Fixed { .. } = app.data {
        return vec![(app.locate(model, core, 0), 1.0)];
    }
    let mut map: HashMap<(usize, usize, Option<usize>), u32> = HashMap::new();
    for line in 0..SAMPLE_LINES {
        let l = app.locate(model, core, line);
        *map.entry((l.home, l.mc, l.cache_mc)).or_default() += 1;
    }
    let mut v: Vec<_> = map
        .into_iter()
        .map(|((home, mc, cache_mc), n)| {
            (
                crate::model::Location { home, mc, cache_mc },
                f64::from(n) / SAMPLE_LINES as f64,
            )
        })
        .collect();
    v.sort_by_key(|(l, _)| (l.home, l.mc, l.cache_mc));
    v
}

fn build_profile(
    net: &mut Network,
    app: &App,
    core: usize,
    cache: &mut HashMap<u32, Vec<(crate::model::Location, f64)>>,
) -> Profile {
    let model = net.model;
    let key = match app.data {
        Data::Node { node } => node,
        Data::Interleave => u32::MAX,
        Data::Local => model.cores[core].node,
        Data::Fixed { .. } => u32::MAX - 1,
    };
    let cls = cache
        .entry(key)
        .or_insert_with(|| classes(model, app, core))
        .clone();
    let cstop = model.cores[core].stop;
    let lookup = f64::from(model.spec.slc.lookup_cycles);
    let mut legs: HashMap<u32, (f64, f64)> = HashMap::new();
    let mut mems: HashMap<u32, (f64, f64)> = HashMap::new();
    let mut fixed = 0.0;
    let mut snoop_home: HashMap<u32, f64> = HashMap::new();
    let fixed_hit = match app.data {
        Data::Fixed { hit, .. } => Some(hit),
        _ => None,
    };
    let n_ops = app.mix.len() as f64;
    for (loc, p) in &cls {
        for &op in &app.mix {
            let w_op = p / n_ops;
            let slc = match fixed_hit {
                Some(h) => vec![(h, 1.0)],
                None => vec![(true, app.slc_hit), (false, 1.0 - app.slc_hit)],
            };
            for (hit, ph) in slc {
                if ph == 0.0 {
                    continue;
                }
                let msc = if loc.cache_mc.is_some() && !hit {
                    vec![(true, app.msc_hit), (false, 1.0 - app.msc_hit)]
                } else {
                    vec![(false, 1.0)]
                };
                for (mh, pm) in msc {
                    if pm == 0.0 {
                        continue;
                    }
                    let w = w_op * ph * pm;
                    let pl = plan(
                        model,
                        op,
                        cstop,
                        *loc,
                        Outcome {
                            slc_hit: hit,
                            msc_hit: mh,
                            snoop: None,
                        },
                    );
                    let mut crit = true;
                    for st in pl.steps() {
                        match *st {
                            Step::Packet { from, to, vn } => {
                                let id = net.leg(from, to, vn);
                                let e = legs.entry(id).or_default();
                                e.0 += w;
                                if crit {
                                    e.1 += w;
                                }
                            }
                            Step::Lookup => {
                                if crit {
                                    fixed += w * lookup;
                                }
                            }
                            Step::Memory { mc } => {
                                let e = mems.entry(mc).or_default();
                                e.0 += w;
                                if crit {
                                    e.1 += w;
                                }
                            }
                            Step::Complete => crit = false,
                        }
                    }
                    if op == Op::Read && app.snoop > 0.0 {
                        *snoop_home.entry(model.slices[loc.home].stop).or_default() +=
                            w * app.snoop;
                    }
                }
            }
        }
    }
    let others: Vec<u32> = app
        .cores
        .iter()
        .filter(|&&c| c != core)
        .map(|&c| model.cores[c].stop)
        .collect();
    if !others.is_empty() {
        let share = 1.0 / others.len() as f64;
        // In home order: legs get their ids in the order they are first seen, and the
        // sums below depend on the order of their terms, so a map's order would make the
        // figures differ in their last bits from one run to the next.
        let mut snoop_home: Vec<(u32, f64)> = snoop_home.into_iter().collect();
        snoop_home.sort_by_key(|x| x.0);
        for (h, w) in snoop_home {
            for &t in &others {
                for (a, b, vn) in [
                    (h, t, crate::model::SNP as u8),
                    (t, h, crate::model::RSP as u8),
                ] {
                    let id = net.leg(a, b, vn);
                    let e = legs.entry(id).or_default();
                    e.0 += w * share;
                    e.1 += w * share;
                }
            }
        }
    }
    let mut legs: Vec<(u32, f64, f64)> = legs.into_iter().map(|(k, (a, b))| (k, a, b)).collect();
    legs.sort_by_key(|x| x.0);
    let mut mems: Vec<(u32, f64, f64)> = mems.into_iter().map(|(k, (a, b))| (k, a, b)).collect();
    mems.sort_by_key(|x| x.0);
    Profile { legs, mems, fixed }
}

/// Closed-loop application traffic: the fixed point of rates and round trips.
pub fn app(model: &Model, app: &App) -> Figures {
    let mut net = Network::new(model);
    let mut cache = HashMap::new();
    let profiles: Vec<Profile> = app
        .cores
        .iter()
        .map(|&c| build_profile(&mut net, app, c, &mut cache))
        .collect();
    let n_legs = net.legs.len();
    let n_mcs = model.mcs.len();
    let m = f64::from(app.outstanding);
    let think = f64::from(app.think_cycles);
    // Zero-load round trips give the starting rates.
    let rtt0: Vec<f64> = profiles
        .iter()
        .map(|p| {
            p.legs
                .iter()
                .map(|&(l, _, c)| c * net.legs[l as usize].t0)
                .sum::<f64>()
                + p.mems
                    .iter()
                    .map(|&(mc, _, c)| {
                        c * (model.mcs[mc as usize].service_cycles
                            + model.mcs[mc as usize].latency_cycles)
                    })
                    .sum::<f64>()
                + p.fixed
                + think
        })
        .collect();
    let mut x: Vec<f64> = rtt0.iter().map(|r| m / r).collect();
    // Round trips (and loads) at given per-core rates.
    let eval = |x: &[f64]| -> (Vec<f64>, Loads, Vec<f64>, Vec<f64>) {
        let mut leg_rate = vec![0.0; n_legs];
        let mut mc_rate = vec![0.0; n_mcs];
        for (p, &xc) in profiles.iter().zip(x) {
            for &(l, w, _) in &p.legs {
                leg_rate[l as usize] += xc * w;
            }
            for &(mc, w, _) in &p.mems {
                mc_rate[mc as usize] += xc * w;
            }
        }
        let loads = net.loads(&leg_rate, &mc_rate);
        let leg_lat: Vec<f64> = net
            .legs
            .iter()
            .map(|leg| leg.t0 + net.leg_wait(&loads, leg))
            .collect();
        let mem_lat: Vec<f64> = (0..n_mcs)
            .map(|mc| {
                model.mcs[mc].service_cycles
                    + model.mcs[mc].latency_cycles
                    + loads.wait[net.mc_res(mc as u32) as usize]
            })
            .collect();
        let rtt = profiles
            .iter()
            .map(|p| {
                p.legs
                    .iter()
                    .map(|&(l, _, c)| c * leg_lat[l as usize])
                    .sum::<f64>()
                    + p.mems
                        .iter()
                        .map(|&(mc, _, c)| c * mem_lat[mc as usize])
                        .sum::<f64>()
                    + p.fixed
                    + think
            })
            .collect();
        (rtt, loads, leg_rate, mc_rate)
    };
    // Little's law residual: how far each core's rate is from outstanding / round trip.
    let residual = |x: &[f64], rtt: &[f64]| -> f64 {
        x.iter()
            .zip(rtt)
            .map(|(xc, r)| ((m / r - xc) / xc).abs())
            .fold(0.0, f64::max)
    };
    // Fixed-point iteration with a backtracking step: move each rate toward
    // outstanding / round trip, halving the step until the residual shrinks (the round
    // trip is steep near a bottleneck, where full steps oscillate).
    let (mut rtt, mut loads, mut leg_rate, mut mc_rate) = eval(&x);
    let mut r = residual(&x, &rtt);
    // Stop at 0.01% (far below the model's own error), or when steps stall: with waits
    // capped at the ceiling, a machine past its bottleneck has no exact fixed point and
    // is handled by the scaling below.
    let mut stalled = 0;
    for _ in 0..200 {
        if r < 1e-4 || stalled >= 3 {
            break;
        }
        let d: Vec<f64> = x.iter().zip(&rtt).map(|(xc, rt)| m / rt - xc).collect();
        let mut alpha = 1.0;
        loop {
            let xt: Vec<f64> = x
                .iter()
                .zip(&d)
                .map(|(xc, dc)| (xc + alpha * dc).max(xc * 1e-3))
                .collect();
            let (rt, lt, lr, mr) = eval(&xt);
            let res = residual(&xt, &rt);
            if res < r || alpha < 1e-4 {
                stalled = if res < r { 0 } else { stalled + 1 };
                x = xt;
                rtt = rt;
                loads = lt;
                leg_rate = lr;
                mc_rate = mr;
                r = res;
                break;
            }
            alpha *= 0.5;
        }
    }
    // Waits are capped at 99.9% utilization, so a machine with more requests in flight
    // than its bottleneck can serve converges to rates beyond it: scale every core down
    // to the bottleneck's capacity (the bound of a saturated closed network), and take
    // the round trip from Little's law.
    let peak = loads.rho.iter().copied().fold(0.0, f64::max);
    let bound = peak > RHO_MAX;
    if bound {
        let scale = RHO_MAX / peak;
        for xc in &mut x {
            *xc *= scale;
        }
        leg_rate.iter_mut().for_each(|v| *v *= scale);
        mc_rate.iter_mut().for_each(|v| *v *= scale);
        loads = net.loads(&leg_rate, &mc_rate);
        for (i, xc) in x.iter().enumerate() {
            rtt[i] = m / xc;
        }
    }
    let mut f = net.figures(&leg_rate, &loads);
    f.saturated |= bound;
    let total: f64 = x.iter().sum();
    f.requests_per_cycle = total;
    f.request_latency_cycles = x
        .iter()
        .zip(&rtt)
        .map(|(a, r)| a * (r - think))
        .sum::<f64>()
        / total;
    f.mc_accesses_per_cycle = mc_rate.clone();
    // Accesses by whether the requesting core is on the controller's node.
    f.mc_local_accesses_per_cycle = vec![0.0; n_mcs];
    f.mc_remote_accesses_per_cycle = vec![0.0; n_mcs];
    for ((p, &xc), &c) in profiles.iter().zip(&x).zip(&app.cores) {
        for &(mc, w, _) in &p.mems {
            let m = mc as usize;
            if model.cores[c].node == model.mcs[m].node {
                f.mc_local_accesses_per_cycle[m] += xc * w;
            } else {
                f.mc_remote_accesses_per_cycle[m] += xc * w;
            }
        }
    }
    f.mc_utilization = (0..n_mcs)
        .map(|mc| loads.rho[net.mc_res(mc as u32) as usize])
        .collect();
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::Pattern;

    #[test]
    fn erlang_c_known_values() {
        // One server: the probability of waiting is the utilization.
        assert!((erlang_c(1, 0.7) - 0.7).abs() < 1e-12);
        // Two servers at a = 1 erlang: C = 1/3.
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn uniform_saturation_is_the_bisection_bound() {
        for k in [4u32, 8] {
            let m =
                Model::load("mesh", &[format!("noc.cols={k}"), format!("noc.rows={k}")]).unwrap();
            let t = Synthetic {
                pattern: Pattern::Uniform,
                rate: 0.1,
                flits: 1,
            };
            let s = saturation_rate(&m, &t);
            // Even k with XY routing: the central links carry k/4 of the per-node rate.
            assert!((s - 4.0 / f64::from(k)).abs() < 1e-9, "k={k}: {s}");
        }
    }

    #[test]
    fn zero_load_latency_is_the_formula() {
        let m = Model::load("mesh", &[]).unwrap();
        let t = Synthetic {
            pattern: Pattern::Uniform,
            rate: 1e-9,
            flits: 1,
        };
        let f = synthetic(&m, &t);
        let h = crate::geometry::mean_hops_formula(8);
        // T0 = H (t_router + t_link) + t_inject + t_eject, all 1 cycle in the preset.
        assert!(
            (f.packet_latency_cycles - (2.0 * h + 2.0)).abs() < 1e-6,
            "{}",
            f.packet_latency_cycles
        );
        assert!((f.mean_hops - h).abs() < 1e-12);
    }
}
