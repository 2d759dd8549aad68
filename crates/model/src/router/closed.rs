//! The closed loop of application traffic: requests and their timed steps, memory
//! controllers' and home trackers' bounded queues (gates), and acknowledgements.

use super::state::{
    Closed, Iq, Pkt, Txn, VcState, EV_DELIVERED, EV_HOME_FREE, EV_ISSUE, EV_MEM_DONE, EV_STEP,
    HEAD, NONE32,
};
use crate::model::Model;
use crate::traffic::{draw_request, App, Step};
use std::cmp::Reverse;

impl Iq {
    /// `e` without the VCs of `local` (VCs bound for the ejection port, the first at
    /// `vc0`) whose front packet a full controller queue cannot take: they stay at the
    /// ejection port. Out of line: only bounded controller queues call it.
    #[cold]
    #[inline(never)]
    pub(super) fn ungated(
        vcs: &[VcState],
        pkts: &[Pkt],
        cl: &Closed,
        vc0: usize,
        local: u64,
        e: u64,
    ) -> u64 {
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
    pub(super) fn admit(&mut self, pkt: u32) {
        let p = &self.pkts[pkt as usize];
        if p.gate != NONE32 {
            let cl = &mut self.closed;
            cl.gate_held[p.gate as usize] += 1;
            cl.txns[p.flow as usize].admitted = true;
        }
    }

    #[inline]
    pub(super) fn event(&mut self, at: u64, kind: u8, id: u32) {
        self.closed.seq += 1;
        self.closed
            .events
            .push(Reverse((at, self.closed.seq, kind, id)));
    }

    /// Runs the application events due by now (new packets are injected from the next
    /// cycle on).
    pub(super) fn run_events(&mut self, model: &Model, app: &App) {
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
}
