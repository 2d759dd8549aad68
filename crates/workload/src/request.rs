//! Requests: what the closed-loop clients ask, and the per-thread worker that answers.
//!
//! A [`RequestGen`] draws requests from a seeded stream (one stream per client thread,
//! so a run is reproducible and two machines answer the same sequence): a share of
//! route queries (the rest itinerary plans). Trips have a log-uniform length, from a
//! few streets (200-400 m) to 25.6 km (or half the map if smaller), as real trip lengths
//! are heavy-tailed; so are response times. Itineraries gather 10-30 points of interest
//! within 1.2 km of a random hotel.
//!
//! A [`Worker`] holds one thread's reusable state ([`SearchState`], [`Planner`]), so
//! serving a request allocates nothing.

use crate::graph::GraphRef;
use crate::itinerary::{EaParams, Instance, ItineraryAnswer, Planner, MAX_POIS};
use crate::route::SearchState;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Fewest points of interest in a generated itinerary request.
pub const MIN_POIS: usize = 10;
/// Points of interest lie within this many grid cells (100 m each) of the hotel.
pub const POI_RADIUS_CELLS: u32 = 12;
/// Longest trip: destinations lie within this many grid cells of the origin (25.6 km).
pub const MAX_TRIP_CELLS: u32 = 256;
/// A day: travel plus visits must fit in 8 hours.
pub const DAY_MS: u64 = 8 * 3600 * 1000;
/// Money for entry prices.
pub const MONEY_BUDGET: u32 = 60;

/// The two kinds of requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// Fastest route between two nodes.
    Route,
    /// An itinerary plan through points of interest.
    Itinerary,
}

/// One request (a reusable buffer: [`RequestGen::next`] overwrites it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Request {
    /// Which kind.
    pub kind: RequestKind,
    /// Route: origin node.
    pub from: u32,
    /// Route: destination node.
    pub to: u32,
    /// Itinerary: the problem.
    pub itinerary: Instance,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            kind: RequestKind::Route,
            from: 0,
            to: 0,
            itinerary: Instance::empty(),
        }
    }
}

/// A seeded stream of requests.
#[derive(Debug)]
pub struct RequestGen {
    rng: ChaCha8Rng,
    route_share: f64,
    width: u32,
    height: u32,
    nodes: u32,
    min_level: u32,
    max_level: u32,
}

/// SplitMix64: spreads (seed, stream) pairs into independent seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl RequestGen {
    /// Stream number `stream` (the client thread's index) of a run with this seed;
    /// `route_share` is the fraction of route queries (0-1).
    pub fn new(g: &GraphRef<'_>, seed: u64, stream: u64, route_share: f64) -> Self {
        let reach = (g.width().max(g.height()) / 2).clamp(2, MAX_TRIP_CELLS);
        let max_level = 31 - reach.leading_zeros(); // floor(log2(reach)), >= 1
        RequestGen {
            rng: ChaCha8Rng::seed_from_u64(mix(seed ^ mix(stream.wrapping_add(1)))),
            route_share,
            width: g.width(),
            height: g.height(),
            nodes: g.nodes(),
            min_level: max_level.min(2),
            max_level,
        }
    }

    /// A node near (x, y) + (dx, dy), clamped to the map.
    fn near(&self, x: u32, y: u32, dx: i64, dy: i64) -> u32 {
        let nx = (x as i64 + dx).clamp(0, self.width as i64 - 1) as u64;
        let mut ny = (y as i64 + dy).clamp(0, self.height as i64 - 1) as u64;
        if ny * self.width as u64 + nx >= self.nodes as u64 {
            ny -= 1; // the partial last row
        }
        (ny * self.width as u64 + nx) as u32
    }

    /// Draws the next request into `out` (allocation-free).
    pub fn next(&mut self, out: &mut Request) {
        let from = self.rng.random_range(0..self.nodes);
        let (x, y) = (from % self.width, from / self.width);
        if self.rng.random_bool(self.route_share) {
            // Log-uniform trip radius: an octave, then a radius inside it.
            let level = self.rng.random_range(self.min_level..=self.max_level);
            let r = self
                .rng
                .random_range((1i64 << (level - 1))..=(1i64 << level));
            let dx = self.rng.random_range(-r..=r);
            let dy = self.rng.random_range(-r..=r);
            out.kind = RequestKind::Route;
            out.from = from;
            out.to = self.near(x, y, dx, dy);
        } else {
            let inst = &mut out.itinerary;
            inst.seed = self.rng.random();
            inst.k = self.rng.random_range(MIN_POIS..=MAX_POIS);
            inst.nodes[0] = from;
            let r = POI_RADIUS_CELLS as i64;
            for i in 0..inst.k {
                let dx = self.rng.random_range(-r..=r);
                let dy = self.rng.random_range(-r..=r);
                inst.nodes[1 + i] = self.near(x, y, dx, dy);
                inst.value[i] = self.rng.random_range(1..=10);
                inst.visit_ms[i] = self.rng.random_range(3..=24) * 5 * 60_000;
                inst.price[i] = self.rng.random_range(0..=25);
            }
            inst.time_budget_ms = DAY_MS;
            inst.money_budget = MONEY_BUDGET;
            out.kind = RequestKind::Itinerary;
            out.from = from;
            out.to = from;
        }
    }
}

/// The result of serving a request, condensed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Answer {
    /// Which kind was served.
    pub kind: RequestKind,
    /// Graph nodes settled (the work done on the shared graph).
    pub settled: u64,
    /// Route: travel time, ms; itinerary: best attractiveness found.
    pub value: u64,
    /// Itinerary details.
    pub itinerary: Option<ItineraryAnswer>,
}

/// One client thread's reusable state.
#[derive(Debug)]
pub struct Worker {
    /// Shortest-path state.
    pub search: SearchState,
    /// Evolutionary planner state.
    pub planner: Planner,
}

impl Worker {
    /// State for a graph of `nodes` nodes (create it on the thread that will use it, so
    /// its memory is local to that thread's node).
    pub fn new(nodes: u32, ea: EaParams) -> Self {
        Worker {
            search: SearchState::new(nodes),
            planner: Planner::new(ea),
        }
    }

    /// Serves one request.
    pub fn serve(&mut self, g: &GraphRef<'_>, req: &Request) -> Answer {
        match req.kind {
            RequestKind::Route => {
                let a = self.search.route(g, req.from, req.to);
                Answer {
                    kind: RequestKind::Route,
                    settled: a.settled as u64,
                    value: a.distance_ms.map_or(u64::MAX, |d| d as u64),
                    itinerary: None,
                }
            }
            RequestKind::Itinerary => {
                let a = self.planner.plan(&mut self.search, g, &req.itinerary);
                Answer {
                    kind: RequestKind::Itinerary,
                    settled: a.settled,
                    value: a.best_value as u64,
                    itinerary: Some(a),
                }
            }
        }
    }
}
