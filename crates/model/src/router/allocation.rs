//! The separable iSLIP allocators of a router: VC allocation (on bit matrices or per
//! request) and switch allocation, with dimension-order routing and round-robin picks.

use super::state::{Iq, HEAD, LOCAL, NONE8, PORTS};

impl Iq {
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
    pub(super) fn vc_alloc_bits(&mut self, r: usize) {
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
    pub(super) fn vc_alloc(&mut self, r: usize) {
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
    pub(super) fn sw_alloc<const SHARD: bool>(&mut self, r: usize) {
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
