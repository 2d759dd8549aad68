//! The input-queued router's corrections: cycles lost in switch allocation and
//! blocking for virtual channels and credits in finite buffers.

use super::network::{Loads, Network};
use super::queueing::mdc_wait;
use super::{LOCAL, RHO_MAX};

impl Network<'_> {
    /// The router stop and virtual network of an output resource (a mesh link or an
    /// ejection port), `None` for other resources.
    pub(super) fn output_router(&self, r: usize) -> Option<(usize, usize)> {
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
    pub(super) fn allocation_losses(&self, l: &mut Loads, block: &[f64]) -> Vec<f64> {
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
    pub(super) fn buffer_blocking(&self, l: &mut Loads) {
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
