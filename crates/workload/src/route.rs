//! Shortest-path search on the road network: bidirectional Dijkstra for point-to-point
//! routes, and a one-to-many search for the itinerary planner's distance lookups.
//!
//! A request must not allocate (an allocator shared by 160 threads would become the
//! bottleneck being measured), so each worker thread owns one [`SearchState`], sized for
//! the graph once: tentative distances for both directions (set to "unreached" once,
//! then reset through the list of nodes a search touched, not by clearing n entries),
//! and binary heaps whose capacity is reserved up front. The heaps use lazy deletion:
//! an improved node is pushed again and stale entries are skipped when popped.
//!
//! Distances are travel times in milliseconds, in `u32` (a path across a 100-million
//! node grid takes about 10^8 ms, far from 2^32).

use crate::graph::GraphRef;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// "Not reached yet".
pub const UNREACHED: u32 = u32::MAX;

/// The answer to a point-to-point query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteAnswer {
    /// Travel time of the fastest route, ms (None when the target is unreachable).
    pub distance_ms: Option<u32>,
    /// Nodes settled by both searches (the work done).
    pub settled: u32,
}

/// One direction of a search.
#[derive(Debug)]
struct Side {
    dist: Vec<u32>,
    touched: Vec<u32>,
    heap: BinaryHeap<Reverse<u64>>,
}

#[inline]
fn key(d: u32, v: u32) -> u64 {
    ((d as u64) << 32) | v as u64
}

impl Side {
    fn new(nodes: usize) -> Self {
        Side {
            dist: vec![UNREACHED; nodes],
            touched: Vec::with_capacity(nodes),
            // The live heap holds at most the search frontier plus stale entries; a
            // quarter of the nodes is far above what a grid search ever keeps, and a
            // larger need grows the heap once (amortised; never again afterwards).
            heap: BinaryHeap::with_capacity(nodes / 4 + 1024),
        }
    }

    fn reset(&mut self) {
        for &v in &self.touched {
            self.dist[v as usize] = UNREACHED;
        }
        self.touched.clear();
        self.heap.clear();
    }

    #[inline]
    fn set(&mut self, v: u32, d: u32) {
        let slot = &mut self.dist[v as usize];
        if *slot == UNREACHED {
            self.touched.push(v);
        }
        *slot = d;
        self.heap.push(Reverse(key(d, v)));
    }

    #[inline]
    fn top(&self) -> Option<u32> {
        self.heap.peek().map(|r| (r.0 >> 32) as u32)
    }
}

/// Per-thread, reusable search state (no allocation per query once built).
#[derive(Debug)]
pub struct SearchState {
    fwd: Side,
    rev: Side,
}

impl SearchState {
    /// State for a graph of `nodes` nodes. Builds (and first-touches) about 8 bytes per
    /// node, so the thread that will use it should create it.
    pub fn new(nodes: u32) -> Self {
        SearchState {
            fwd: Side::new(nodes as usize),
            rev: Side::new(nodes as usize),
        }
    }

    /// Bytes this state holds (allocated, not necessarily touched).
    pub fn bytes(&self) -> u64 {
        let side =
            |s: &Side| s.dist.capacity() * 4 + s.touched.capacity() * 4 + s.heap.capacity() * 8;
        (side(&self.fwd) + side(&self.rev)) as u64
    }

    /// Fastest route from `s` to `t` by bidirectional Dijkstra.
    ///
    /// Both searches advance the side whose smallest key is lower; the best meeting
    /// value `mu` is updated whenever a node reached by one side is improved by the
    /// other; the search stops once the two smallest keys add up to `mu` or more, the
    /// classical criterion that makes `mu` exact.
    pub fn route(&mut self, g: &GraphRef<'_>, s: u32, t: u32) -> RouteAnswer {
        self.fwd.reset();
        self.rev.reset();
        if s == t {
            return RouteAnswer {
                distance_ms: Some(0),
                settled: 0,
            };
        }
        self.fwd.set(s, 0);
        self.rev.set(t, 0);
        let mut mu = u64::MAX;
        let mut settled = 0u32;
        while let (Some(a), Some(b)) = (self.fwd.top(), self.rev.top()) {
            if a as u64 + b as u64 >= mu {
                break;
            }
            let (this, other) = if a <= b {
                (&mut self.fwd, &self.rev)
            } else {
                (&mut self.rev, &self.fwd)
            };
            let Reverse(k) = this.heap.pop().expect("peeked");
            let (d, u) = ((k >> 32) as u32, k as u32);
            if d > this.dist[u as usize] {
                continue; // stale entry
            }
            settled += 1;
            for e in g.edges(u).chunks_exact(2) {
                let (v, w) = (e[0], e[1]);
                let nd = d.saturating_add(w);
                if nd < this.dist[v as usize] {
                    this.set(v, nd);
                    let o = other.dist[v as usize];
                    if o != UNREACHED {
                        mu = mu.min(nd as u64 + o as u64);
                    }
                }
            }
        }
        RouteAnswer {
            distance_ms: (mu < UNREACHED as u64).then_some(mu as u32),
            settled,
        }
    }

    /// Distances from `s` to every node of `targets` (forward Dijkstra stopped when the
    /// last target is settled), written to `out` (same length; `UNREACHED` when a
    /// target cannot be reached). Returns the number of nodes settled.
    pub fn one_to_many(
        &mut self,
        g: &GraphRef<'_>,
        s: u32,
        targets: &[u32],
        out: &mut [u32],
    ) -> u32 {
        assert_eq!(targets.len(), out.len(), "one output slot per target");
        self.fwd.reset();
        self.rev.reset();
        // The reverse side's distance array marks the targets (0 = target), so that
        // checking whether a settled node is one is a single load.
        let mut remaining = 0u32;
        for &t in targets {
            if self.rev.dist[t as usize] == UNREACHED {
                self.rev.dist[t as usize] = 0;
                self.rev.touched.push(t);
                remaining += 1;
            }
        }
        self.fwd.set(s, 0);
        let mut settled = 0;
        while remaining > 0 {
            let Some(Reverse(k)) = self.fwd.heap.pop() else {
                break;
            };
            let (d, u) = ((k >> 32) as u32, k as u32);
            if d > self.fwd.dist[u as usize] {
                continue;
            }
            settled += 1;
            if self.rev.dist[u as usize] == 0 {
                self.rev.dist[u as usize] = 1; // counted once
                remaining -= 1;
                if remaining == 0 {
                    break;
                }
            }
            for e in g.edges(u).chunks_exact(2) {
                let (v, w) = (e[0], e[1]);
                let nd = d.saturating_add(w);
                if nd < self.fwd.dist[v as usize] {
                    self.fwd.set(v, nd);
                }
            }
        }
        for (o, &t) in out.iter_mut().zip(targets) {
            *o = self.fwd.dist[t as usize];
        }
        settled
    }
}
