//! Flits and credits on the move: injection from the sources, delay lines, switch
//! traversal, ejection and delivery statistics, and one cycle of a range of routers.

use super::state::{Arrival, Flit, Iq, Msg, EV_DELIVERED, HEAD, LOCAL, NONE8, PORTS, TAIL};

impl Iq {
    /// Sends flit `f` to VC `vc` of input port `p` of router `r`, arriving at cycle `at`.
    #[inline]
    pub(super) fn send_flit<const SHARD: bool>(
        &mut self,
        at: u64,
        r: usize,
        p: usize,
        vc: usize,
        f: Flit,
    ) {
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
    pub(super) fn send_credit<const SHARD: bool>(
        &mut self,
        at: u64,
        r: usize,
        o: usize,
        vc: usize,
    ) {
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

    pub(super) fn inject<const SHARD: bool>(&mut self) {
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

    /// Moves the front flit of VC `v` of input port `p` of router `r` through output `o`.
    #[inline]
    pub(super) fn traverse<const SHARD: bool>(
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
    pub(super) fn deliver(&mut self, id: u32, at: u64, hops: u16) {
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

    pub(super) fn step_routers<const SHARD: bool>(&mut self) {
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
