//! The resources of one model and the routes over them: numbering, interned legs,
//! loads and waits per resource, and the figures they give.

use super::queueing::erlang_c;
use super::{LOCAL, RHO_MAX};
use crate::geometry::Hop;
use crate::model::{Model, VN_NAMES};
use crate::traffic::{node_matrices, Figures, VnFigures};
use std::collections::HashMap;

/// Resource numbering and routes for one model.
pub struct Network<'a> {
    pub(super) model: &'a Model,
    pub(super) n_stops: u32,
    /// Interned legs (from, to, vn).
    pub(super) index: HashMap<(u32, u32, u8), u32>,
    pub(super) legs: Vec<Leg>,
    pub(super) route: Vec<(u32, u8)>,
    pub(super) n_res: usize,
    pub(super) servers: Vec<f64>,
    /// Input-queued routers (`noc.router = "input-queued"`): their pipeline's zero-load
    /// latency and the switch allocator's losses (see [`Network::allocation_losses`]).
    pub(super) iq: bool,
    /// Input-queued routers with their finite buffers and virtual channels (see
    /// [`Network::buffer_blocking`]); off, the input ports' buffers are unbounded.
    pub(super) finite_buffers: bool,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Leg {
    pub(super) from: u32,
    pub(super) to: u32,
    pub(super) vn: u8,
    pub(super) hops: u32,
    pub(super) t0: f64,
    pub(super) start: u32,
    pub(super) len: u32,
    /// Service time (cycles) this leg's packet takes at each resource kind.
    pub(super) flits: f64,
}

/// Loads and waits of every resource.
#[derive(Debug, Clone)]
pub(super) struct Loads {
    pub(super) lambda: Vec<f64>,
    pub(super) rho: Vec<f64>,
    pub(super) s2: Vec<f64>,
    pub(super) inrho: Vec<[f64; 5]>,
    pub(super) tracked: Vec<bool>,
    pub(super) wait: Vec<f64>,
    /// Input-queued routers: cycles a flit spends at the input port it entered by
    /// (index: the output resource and that input port) beyond the output's own wait:
    /// requests lost in switch allocation and the input port's queue they cause.
    pub(super) extra: Vec<[f64; 5]>,
    /// Finite buffers: cycles a packet's flits are spread by waiting for credits of its
    /// own earlier flits at a channel (see [`Network::buffer_blocking`]); a packet is
    /// delayed by the largest of these on its route, not their sum (once spread, its
    /// flits arrive at the next channel as fast as they leave it).
    pub(super) serial: Vec<f64>,
    /// Highest utilization of any resource: outputs, and with input-queued routers the
    /// input ports (lost allocation cycles included).
    pub(super) max_util: f64,
    pub(super) saturated: bool,
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

    pub(super) fn link_res(&self, link: u32, vn: u8) -> u32 {
        link * 4 + u32::from(vn)
    }
    pub(super) fn inj_res(&self, stop: u32, vn: u8) -> u32 {
        self.n_stops * 16 + stop * 4 + u32::from(vn)
    }
    pub(super) fn ej_res(&self, stop: u32, vn: u8) -> u32 {
        self.n_stops * 20 + stop * 4 + u32::from(vn)
    }
    pub(super) fn sock_res(&self, socket: u32) -> u32 {
        self.n_stops * 24 + socket
    }
    /// Resource index of memory controller `m`.
    pub(super) fn mc_res(&self, m: u32) -> u32 {
        self.n_stops * 24 + 2 + m
    }

    /// Interns the leg (from, to, vn) and returns its id.
    pub(super) fn leg(&mut self, from: u32, to: u32, vn: u8) -> u32 {
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

    pub(super) fn service(&self, res: u32, leg: &Leg) -> f64 {
        if res >= self.n_stops * 24 && res < self.n_stops * 24 + 2 {
            leg.flits * self.model.socket_cycles_per_flit
        } else {
            leg.flits
        }
    }

    /// Loads from leg rates (packets/cycle) and memory visit rates (visits/cycle).
    pub(super) fn loads(&self, leg_rate: &[f64], mc_rate: &[f64]) -> Loads {
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
    pub(super) fn finish_waits(&self, l: &mut Loads) {
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

    pub(super) fn leg_wait(&self, loads: &Loads, leg: &Leg) -> f64 {
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
    pub(super) fn figures(&self, leg_rate: &[f64], loads: &Loads) -> Figures {
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
