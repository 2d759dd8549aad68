//! The simulator's state: packets, flits, input VCs and their buffers, credits, delay
//! lines, sources and the closed loop's records, and how a simulator is built.

use crate::model::Model;
use crate::traffic::Plan;
use rand::rngs::Xoshiro256PlusPlus;
use rand::SeedableRng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Ports of a router: four neighbours and the local one.
pub(super) const PORTS: usize = 5;
/// The local (injection and ejection) port.
pub(super) const LOCAL: usize = 4;
/// No VC, port or flag (a `u8` unset).
pub(super) const NONE8: u8 = u8::MAX;

/// The link cycles of a dimension-order path, from running sums along every row and
/// column per direction: `east[y * cols + x]` is the cost of the east links from column 0
/// to `x` in row `y`, `west[y * cols + x]` of the west links from `x` down to 0, and
/// `north`/`south` the same per column (`x * rows + y`).
#[derive(Debug, Clone, Default)]
pub(super) struct PathLinks {
    pub(super) cols: usize,
    pub(super) rows: usize,
    pub(super) yx: bool,
    pub(super) east: Vec<u32>,
    pub(super) west: Vec<u32>,
    pub(super) north: Vec<u32>,
    pub(super) south: Vec<u32>,
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
    pub(super) fn cycles(&self, (sx, sy): (u16, u16), (dx, dy): (u16, u16)) -> u32 {
        if self.yx {
            self.column(sx, sy, dy) + self.row(dy, sx, dx)
        } else {
            self.row(sy, sx, dx) + self.column(dx, sy, dy)
        }
    }
}

/// A packet in flight: what delivery and the statistics need.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pkt {
    /// Receiving stop.
    pub(super) dst: u16,
    pub(super) vn: u8,
    pub(super) measured: bool,
    /// Statistics index (flow or network), or the request id of application traffic.
    pub(super) flow: u32,
    /// Link hops from source to destination: with dimension-order routing on a mesh, the
    /// Manhattan distance (set at creation; debug builds count the hops taken and check).
    pub(super) hops: u16,
    /// Link cycles of those hops (the path's, at zero load).
    pub(super) links: u16,
    /// NUMA node of the sending stop.
    pub(super) snode: u16,
    /// The memory controller whose bounded queue must take this packet before it leaves
    /// the network (the read request of that controller's access; `Closed::gate_depth`),
    /// else NONE32. Home trackers take requests after they leave it (`Closed::home_wait`).
    pub(super) gate: u32,
    pub(super) created: u64,
}

/// One application request in flight.
#[derive(Debug, Clone, Copy)]
pub(super) struct Txn {
    pub(super) plan: Plan,
    pub(super) step: u8,
    pub(super) slot: u32,
    pub(super) start: u64,
    /// Taken by its controller's bounded queue (counted in `Closed::gate_held`) when its
    /// packet left the network.
    pub(super) admitted: bool,
    /// The home tracker (gate) holding an entry for it, else NONE32.
    pub(super) home: u32,
}

pub(super) const EV_DELIVERED: u8 = 0;
pub(super) const EV_STEP: u8 = 1;
pub(super) const EV_ISSUE: u8 = 2;
/// A memory access done: its controller's bounded queue frees the request's entry.
pub(super) const EV_MEM_DONE: u8 = 3;
/// A home tracker's entry freed (the event's id is the gate, not a request: the request
/// may be over and its slot reused by then).
pub(super) const EV_HOME_FREE: u8 = 4;
pub(super) const NONE32: u32 = u32::MAX;

/// The closed-loop side of an application workload: requests, their timed steps
/// (lookups, memory accesses, think time; a heap, as they are few next to flits), the
/// memory channels and the request statistics.
#[derive(Clone, Default)]
pub(super) struct Closed {
    pub(super) txns: Vec<Txn>,
    pub(super) free_txns: Vec<u32>,
    pub(super) events: BinaryHeap<Reverse<(u64, u64, u8, u32)>>,
    pub(super) seq: u64,
    pub(super) issue_counter: Vec<u32>,
    pub(super) slot_node: Vec<u32>,
    pub(super) mc_first: Vec<usize>,
    pub(super) chan_free: Vec<f64>,
    pub(super) mc_count: Vec<u64>,
    pub(super) mc_local: Vec<u64>,
    pub(super) mc_busy: Vec<f64>,
    /// Bounded resources that take packets off the network ("gates"): memory
    /// controllers' queues (index = controller), then home stops' trackers (index =
    /// controllers + stop). Their bounds (u32::MAX: unbounded) and the requests each holds.
    pub(super) gate_depth: Vec<u32>,
    pub(super) gate_held: Vec<u32>,
    pub(super) n_mcs: usize,
    /// A one-flit packet's zero-load latency at zero hops, and its router cycles per hop.
    pub(super) ack: (f64, f64),
    /// Some home tracker is bounded; the requests waiting for an entry of each home stop's
    /// trackers (off the network).
    pub(super) homes_bounded: bool,
    pub(super) home_wait: Vec<VecDeque<u32>>,
    pub(super) done_count: u64,
    pub(super) done_latency: u64,
}

/// One input VC: the cycle its front flit may take its next step, its flits (`len`, the
/// front one here and the others in its ring buffer from `head`), and the output port
/// and downstream VC of the packet at its front. The front flit is kept here, beside
/// what the allocators read, so that a VC holding one flit (most of them) never touches
/// its ring buffer.
#[derive(Debug, Clone, Copy)]
pub(super) struct VcState {
    pub(super) ready: u64,
    pub(super) head: u16,
    pub(super) len: u16,
    pub(super) out_port: u8,
    pub(super) out_vc: u8,
    pub(super) front: Flit,
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
pub(super) struct Flit {
    pub(super) w: u64,
    /// Links this flit has crossed (debug builds check it against the packet's hops).
    #[cfg(debug_assertions)]
    pub(super) hops: u16,
}

impl Flit {
    #[inline(always)]
    pub(super) fn new(pkt: u32, dst: u16, vn: u8, flags: u8) -> Self {
        Flit {
            w: u64::from(pkt) | u64::from(dst) << 32 | u64::from(vn) << 48 | u64::from(flags) << 56,
            #[cfg(debug_assertions)]
            hops: 0,
        }
    }
    #[inline(always)]
    pub(super) fn pkt(self) -> u32 {
        self.w as u32
    }
    #[inline(always)]
    pub(super) fn dst(self) -> u16 {
        (self.w >> 32) as u16
    }
    #[inline(always)]
    pub(super) fn vn(self) -> u8 {
        (self.w >> 48) as u8
    }
    /// `HEAD` and/or `TAIL`.
    #[inline(always)]
    pub(super) fn flags(self) -> u8 {
        (self.w >> 56) as u8
    }
}

/// A packet waiting at its source: what injection needs, so that it never reads the
/// packet table (which a sharded simulation keeps on one thread).
#[derive(Debug, Clone, Copy)]
pub(super) struct Queued {
    pub(super) id: u32,
    pub(super) dst: u16,
    pub(super) flits: u16,
    pub(super) vn: u8,
    pub(super) created: u64,
}

pub(super) const HEAD: u8 = 1;
pub(super) const TAIL: u8 = 2;

/// A slot of an input port's delay line: the flit arriving in that cycle and its VC (or
/// NONE8).
#[derive(Debug, Clone, Copy)]
pub(super) struct Arrival {
    pub(super) flit: Flit,
    pub(super) vc: u8,
}

/// The state of one router that the allocators read and write every cycle, together (a
/// few cache lines) rather than spread over a vector each: masks of its input VCs and
/// output VCs, switch allocation's view of the requests, and the switch allocator's
/// iSLIP pointers. Masks have a bit per VC of a port (`c` bits).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RouterState {
    /// Non-empty VCs, per input port.
    pub(super) mask: [u64; PORTS],
    /// VCs whose front flit is a head waiting for VC allocation, per input port.
    pub(super) need_va: [u64; PORTS],
    /// Output VCs held by a packet, per output port.
    pub(super) out_busy: [u64; PORTS],
    /// Per input port and output port: the input port's VCs whose front packet holds an
    /// output VC of that output port (kept up to date by VC allocation and traversal, so
    /// that a switch request is a few word operations per port instead of a visit of
    /// every waiting VC).
    pub(super) vc_out: [[u64; PORTS]; PORTS],
    /// Per input port: VCs whose output VC has no credit.
    pub(super) blocked: [u64; PORTS],
    /// Per input port: VCs given an output VC whose `ready` cycle may still be ahead
    /// (cleared by switch allocation once it has come).
    pub(super) pending: [u64; PORTS],
    /// Switch allocator: grant pointer per output port, accept pointer per input port,
    /// and per input port the round-robin pointer over its VCs.
    pub(super) sa_gptr: [u8; PORTS],
    pub(super) sa_aptr: [u8; PORTS],
    pub(super) sa_vc_rr: [u8; PORTS],
    /// Non-empty input ports, a bit each.
    pub(super) busy: u8,
}

/// A source: its queue of packets and the packet it is injecting.
#[derive(Clone)]
pub(super) struct Source {
    pub(super) queue: VecDeque<Queued>,
    /// Packet being injected (`cur` its id, else u32::MAX), its next flit and its VC.
    pub(super) cur: u32,
    pub(super) pk: Queued,
    pub(super) seq: u16,
    pub(super) vc: u8,
    pub(super) rr: u8,
}

/// One input-queued simulation (or one shard of a sharded one): its routers, sources,
/// packets and statistics.
#[derive(Clone)]
pub(super) struct Iq {
    pub(super) n_stops: usize,
    pub(super) yx: bool,
    pub(super) planes: usize,
    /// Index stride of the VCs of one port: a power of two, at least the VCs per port
    /// (`vcs` per class; the VCs of class `k` are `k*vcs .. (k+1)*vcs`).
    pub(super) c: usize,
    pub(super) shift: u32,
    pub(super) vcs: usize,
    pub(super) shared: bool,
    pub(super) buf_flits: usize,
    /// Ring capacity per VC (a power of two, at least `buf_flits`) and its log2.
    pub(super) buf_cap: usize,
    pub(super) cap_shift: u32,
    /// The VCs of class 0 of a port, a bit each (`vcs` low bits).
    pub(super) class_bits: u64,
    pub(super) rd: u64,
    pub(super) va: u64,
    pub(super) sa_st: u64,
    pub(super) iters: usize,
    pub(super) eject: u64,
    /// Coordinates of each stop, and of each router's stop.
    pub(super) xy: Vec<(u16, u16)>,
    pub(super) router_xy: Vec<(u16, u16)>,
    /// Per router and output direction: the downstream router (its input port is the
    /// direction) and the cycles from switch allocation to the flit's arrival there.
    pub(super) down: Vec<u32>,
    pub(super) down_cycles: Vec<u64>,
    /// Per router and input direction: the upstream router (its output port is the
    /// direction) and the cycles from a flit's departure until its credit is usable there.
    pub(super) up: Vec<u32>,
    pub(super) up_cycles: Vec<u64>,
    // Input VCs: index ((router * PORTS + port) * c + vc).
    pub(super) buf: Vec<Flit>,
    /// Arrival cycle of each buffered flit (beside `buf`; kept only with a routing delay).
    pub(super) arr: Vec<u64>,
    /// State of each input VC.
    pub(super) vc: Vec<VcState>,
    /// Per router: its allocators' state.
    pub(super) rs: Vec<RouterState>,
    // Output VCs: index ((router * PORTS + port) * c + vc); source VCs follow at
    // `src_base + (plane * n_stops + stop) * c + vc`.
    pub(super) credits: Vec<u32>,
    /// Source VCs held by a packet being injected.
    pub(super) in_use: Vec<bool>,
    pub(super) src_base: usize,
    // iSLIP pointers.
    pub(super) va_gptr: Vec<u16>,
    pub(super) va_aptr: Vec<u16>,
    // Delay lines: per router, `1 << line_shift` slots, a slot per arrival cycle (modulo
    // the length). Every port takes at most one flit or credit per cycle, each after its
    // link's fixed delay.
    pub(super) line_shift: u32,
    pub(super) line_mask: u64,
    /// Per router and slot: a bit per input port with an arriving flit (bits 0-4) and
    /// per output port with an arriving credit (bits 8-11).
    pub(super) line_bits: Vec<u16>,
    /// The arriving flits: index `((router << line_shift) + slot) * PORTS + port`.
    pub(super) flit_line: Vec<Arrival>,
    /// The arriving credits' VCs: index `((router << line_shift) + slot) * 4 + port`.
    pub(super) credit_line: Vec<u8>,
    /// Credits (the VC, or NONE8) on their way back to each source: index
    /// `(source << line_shift) + slot`.
    pub(super) source_credit_line: Vec<u8>,
    /// Injection delay as the delay lines apply it.
    pub(super) inject_line: u64,
    pub(super) sources: Vec<Source>,
    pub(super) pkts: Vec<Pkt>,
    pub(super) free_pkts: Vec<u32>,
    pub(super) rng: Xoshiro256PlusPlus,
    pub(super) now: u64,
    pub(super) window: (u64, u64),
    pub(super) measured_in_flight: u64,
    // Per flow (or per vn): accepted in window, latency sum and count of measured.
    pub(super) acc: Vec<u64>,
    pub(super) lat_sum: Vec<u64>,
    pub(super) lat_n: Vec<u64>,
    pub(super) hop_sum: Vec<u64>,
    /// Link cycles of the delivered packets' paths, per statistics index.
    pub(super) link_sum: Vec<u64>,
    pub(super) path_links: PathLinks,
    /// Delivered packets by hop count and network: index `hops * 4 + vn`.
    pub(super) hops_hist: Vec<u64>,
    /// NUMA node of every stop, the node count, and delivered packets by (source node,
    /// destination node, network): index `(src * n_nodes + dst) * 4 + vn`.
    pub(super) stop_node: Vec<u16>,
    pub(super) n_nodes: usize,
    pub(super) node_pkts: Vec<u64>,
    /// Application traffic (counted by delivery in the window, as the output-queued
    /// engine does), and its closed-loop state.
    pub(super) app_mode: bool,
    pub(super) closed: Closed,
    /// Some controller's queue is bounded: ejection checks it (`Iq::ungated`, `Iq::admit`).
    pub(super) gated: bool,
    pub(super) link_busy: Vec<u64>,
    pub(super) router_cycles: u64,
    // Scratch for the allocators.
    pub(super) va_req: Vec<(u16, u8, u8)>,
    /// Scratch: output VCs granted to each request (64 entries).
    pub(super) va_gmask: Vec<u64>,
    /// A router's input VCs fit one word (`PORTS * c <= 64`): VC allocation on bit
    /// matrices ([`Iq::vc_alloc_bits`]).
    pub(super) bits_va: bool,
    /// Per output VC (indexed as `credits`): the input VC (`port * c + vc`) holding it,
    /// valid while its `out_busy` bit is set.
    pub(super) holder: Vec<u16>,
    /// The routers (and their sources) this simulator steps: `lo .. lo + span`, all of
    /// them unless it is one shard of a sharded simulation ([`simulate_threads`]).
    pub(super) lo: usize,
    pub(super) span: usize,
    /// Flits and credits for routers of other shards, per destination shard, sent at
    /// the end of the cycle; the shard of each router (empty unless sharded).
    pub(super) outbox: Vec<Vec<Msg>>,
    pub(super) shard_of: Vec<u16>,
    /// The coordinating simulator of a sharded run: new packets go to `new_pkts` (for
    /// the shard of their source) instead of a source queue. A shard's step
    /// (`step_routers::<true>`) puts delivered packets in `delivered` instead of calling
    /// [`Iq::deliver`] (the packet table and the statistics are on one thread).
    pub(super) handoff: bool,
    pub(super) new_pkts: Vec<(u32, Queued)>,
    pub(super) delivered: Vec<(u32, u64, u16)>,
}

/// A flit (`credit` false) or a credit for router `r` of another shard.
#[derive(Debug, Clone, Copy)]
pub(super) struct Msg {
    pub(super) at: u64,
    pub(super) r: u32,
    pub(super) port: u8,
    pub(super) vc: u8,
    pub(super) credit: bool,
    pub(super) flit: Flit,
}

impl Iq {
    pub(super) fn new(model: &Model, networks: usize, seed: u64, window: (u64, u64)) -> Self {
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
    pub(super) fn plane_class(&self, vn: u8) -> (usize, usize) {
        if self.shared {
            (0, vn as usize)
        } else {
            (vn as usize, 0)
        }
    }

    pub(super) fn create(&mut self, src: u32, dst: u32, vn: u8, flits: u32, flow: u32, gate: u32) {
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
}
