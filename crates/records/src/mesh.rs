//! Mesh geometry: the grid, stop numbering, dimension-order routing and hop costs, one
//! definition for the machine model (`numalab_model::geometry`, which re-exports it) and
//! the records that hold a mesh (a `layout.inference` record's `geo`, written as
//! [`Geometry`]'s JSON). Pure functions of a small [`Geometry`] value; no presets, no
//! engines.
//!
//! Stops are numbered `socket * cols * rows + y * cols + x`. A directed link is named by
//! the stop it leaves and its direction: `link = stop * 4 + dir` with [`Dir`] E (+x),
//! W (-x), N (+y), S (-y). A packet between sockets goes to the gateway stop of its
//! socket, through the socket link, and on from the gateway of the other socket.

use serde::{Deserialize, Serialize};

/// Dimension-order routing (a preset's `noc.routing`, `"xy"` or `"yx"` in TOML and JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Routing {
    /// X (columns) first, then Y.
    Xy,
    /// Y (rows) first, then X (Xeon Phi).
    Yx,
}

/// A stop (router) id.
pub type StopId = u32;
/// A directed mesh link id (`stop * 4 + dir`).
pub type LinkId = u32;

/// Link directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum Dir {
    /// +x.
    E = 0,
    /// -x.
    W = 1,
    /// +y.
    N = 2,
    /// -y.
    S = 3,
}

impl Dir {
    /// All four.
    pub const ALL: [Dir; 4] = [Dir::E, Dir::W, Dir::N, Dir::S];

    /// From the low two bits of a link id.
    pub fn from_index(i: u32) -> Dir {
        Dir::ALL[(i & 3) as usize]
    }

    /// Horizontal (E or W)?
    pub fn horizontal(self) -> bool {
        matches!(self, Dir::E | Dir::W)
    }
}

/// The next step of a packet at a stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// Take this mesh link.
    Link(LinkId),
    /// Take the socket link out of this socket (the packet is at its gateway).
    Socket(u32),
    /// The packet is at its destination stop.
    Arrived,
}

/// A mesh (or one mesh per socket) with routing and per-link cycle costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    /// Columns (x).
    pub cols: u32,
    /// Rows (y).
    pub rows: u32,
    /// Sockets (each a copy of the mesh).
    pub sockets: u32,
    /// XY or YX.
    pub routing: Routing,
    /// Cycles in a router before an output link.
    pub router_cycles: u32,
    /// Cycles device -> stop.
    pub inject_cycles: u32,
    /// Cycles stop -> device.
    pub eject_cycles: u32,
    /// Cycles of each directed link of one socket (index `local_stop * 4 + dir`; 0 for
    /// links that leave the mesh).
    pub link_cycles: Vec<u32>,
    /// Gateway stop (local index) of the socket link, if there are 2 sockets.
    pub gateway: Option<u32>,
    /// One-way cycles through the socket link.
    pub socket_cycles: u32,
}

impl Geometry {
    /// A mesh with uniform per-direction costs and no boundaries.
    pub fn uniform(cols: u32, rows: u32, routing: Routing, router: u32, x: u32, y: u32) -> Self {
        let mut g = Geometry {
            cols,
            rows,
            sockets: 1,
            routing,
            router_cycles: router,
            inject_cycles: 1,
            eject_cycles: 1,
            link_cycles: Vec::new(),
            gateway: None,
            socket_cycles: 0,
        };
        g.link_cycles = (0..cols * rows * 4)
            .map(|l| {
                let d = Dir::from_index(l);
                if g.neighbor(l / 4, d).is_none() {
                    0
                } else if d.horizontal() {
                    x
                } else {
                    y
                }
            })
            .collect();
        g
    }

    /// Stops per socket.
    pub fn stops_per_socket(&self) -> u32 {
        self.cols * self.rows
    }

    /// All stops.
    pub fn stops(&self) -> u32 {
        self.stops_per_socket() * self.sockets
    }

    /// Stop id of (socket, x, y).
    pub fn stop(&self, socket: u32, x: u32, y: u32) -> StopId {
        socket * self.stops_per_socket() + y * self.cols + x
    }

    /// (socket, x, y) of a stop.
    pub fn coords(&self, s: StopId) -> (u32, u32, u32) {
        let per = self.stops_per_socket();
        let local = s % per;
        (s / per, local % self.cols, local / self.cols)
    }

    /// The stop one step in `d`, if inside the mesh.
    pub fn neighbor(&self, s: StopId, d: Dir) -> Option<StopId> {
        let (k, x, y) = self.coords(s);
        let (nx, ny) = match d {
            Dir::E if x + 1 < self.cols => (x + 1, y),
            Dir::W if x > 0 => (x - 1, y),
            Dir::N if y + 1 < self.rows => (x, y + 1),
            Dir::S if y > 0 => (x, y - 1),
            _ => return None,
        };
        Some(self.stop(k, nx, ny))
    }

    /// The stop a link leads to.
    pub fn link_target(&self, l: LinkId) -> StopId {
        self.neighbor(l / 4, Dir::from_index(l))
            .expect("link ids name links inside the mesh")
    }

    /// Cycles of a link (the same on every socket).
    pub fn link_cost(&self, l: LinkId) -> u32 {
        self.link_cycles[(l % (self.stops_per_socket() * 4)) as usize]
    }

    /// Dimension-order next step from `cur` toward `dst`.
    pub fn next_hop(&self, cur: StopId, dst: StopId) -> Hop {
        let (cs, cx, cy) = self.coords(cur);
        let (ds, dx, dy) = self.coords(dst);
        let (tx, ty) = if cs != ds {
            let g = self.gateway.expect("two sockets have a gateway");
            let (gx, gy) = (g % self.cols, g / self.cols);
            if (cx, cy) == (gx, gy) {
                return Hop::Socket(cs);
            }
            (gx, gy)
        } else {
            if (cx, cy) == (dx, dy) {
                return Hop::Arrived;
            }
            (dx, dy)
        };
        let horizontal = |x: u32| if tx > x { Dir::E } else { Dir::W };
        let vertical = |y: u32| if ty > y { Dir::N } else { Dir::S };
        let d = match self.routing {
            Routing::Xy if cx != tx => horizontal(cx),
            Routing::Xy => vertical(cy),
            Routing::Yx if cy != ty => vertical(cy),
            Routing::Yx => horizontal(cx),
        };
        Hop::Link(cur * 4 + d as u32)
    }

    /// The stop on the other side of the socket link leaving socket `from`.
    pub fn across(&self, from: u32) -> StopId {
        let g = self.gateway.expect("two sockets have a gateway");
        let to = if from == 0 { 1 } else { 0 };
        to * self.stops_per_socket() + g
    }

    /// The route from `a` to `b`: the mesh links taken, in order, and how many times the
    /// socket link is crossed (0 or 1).
    pub fn route(&self, a: StopId, b: StopId) -> (Vec<LinkId>, u32) {
        let mut links = Vec::new();
        let mut crossings = 0;
        let mut cur = a;
        loop {
            match self.next_hop(cur, b) {
                Hop::Arrived => return (links, crossings),
                Hop::Link(l) => {
                    links.push(l);
                    cur = self.link_target(l);
                }
                Hop::Socket(s) => {
                    crossings += 1;
                    cur = self.across(s);
                }
            }
        }
    }

    /// Mesh hops from `a` to `b` (socket crossings not counted).
    pub fn hops(&self, a: StopId, b: StopId) -> u32 {
        self.route(a, b).0.len() as u32
    }

    /// Zero-load cycles of the network part of a one-way trip: routers and links, plus
    /// the socket link if crossed (no injection, ejection or serialization).
    pub fn path_cycles(&self, a: StopId, b: StopId) -> u32 {
        let (links, crossings) = self.route(a, b);
        links
            .iter()
            .map(|&l| self.router_cycles + self.link_cost(l))
            .sum::<u32>()
            + crossings * self.socket_cycles
    }

    /// Zero-load cycles of a one-way packet of `flits` flits from device at `a` to device
    /// at `b`: `t_inject + H (t_router + t_link) + t_eject + (flits - 1)`.
    pub fn packet_cycles(&self, a: StopId, b: StopId, flits: u32) -> u32 {
        self.inject_cycles + self.path_cycles(a, b) + self.eject_cycles + flits.saturating_sub(1)
    }

    /// Zero-load round-trip network cycles `a -> b -> a` (one-flit packets, no service
    /// at `b`): what a core measures to a line held at `b`, minus fixed costs.
    pub fn round_trip_cycles(&self, a: StopId, b: StopId) -> u32 {
        self.packet_cycles(a, b, 1) + self.packet_cycles(b, a, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xy_and_yx_take_different_first_steps() {
        let g = Geometry::uniform(4, 4, Routing::Xy, 1, 1, 1);
        let a = g.stop(0, 0, 0);
        let b = g.stop(0, 2, 3);
        let (links, _) = g.route(a, b);
        assert_eq!(links.len(), 5);
        assert_eq!(Dir::from_index(links[0]), Dir::E);
        assert_eq!(Dir::from_index(links[4]), Dir::N);
        let g = Geometry {
            routing: Routing::Yx,
            ..g
        };
        let (links, _) = g.route(a, b);
        assert_eq!(Dir::from_index(links[0]), Dir::N);
        assert_eq!(Dir::from_index(links[4]), Dir::E);
    }

    #[test]
    fn per_direction_costs() {
        // Xeon Phi: 2 cycles per horizontal hop, 1 per vertical, no router extra.
        let g = Geometry::uniform(6, 7, Routing::Yx, 0, 2, 1);
        let a = g.stop(0, 0, 0);
        let b = g.stop(0, 5, 6);
        assert_eq!(g.path_cycles(a, b), 5 * 2 + 6);
        assert_eq!(g.round_trip_cycles(a, b), 2 * (1 + 16 + 1));
    }

    #[test]
    fn two_sockets_route_through_the_gateway() {
        let mut g = Geometry::uniform(3, 3, Routing::Xy, 1, 1, 1);
        g.sockets = 2;
        g.gateway = Some(g.stop(0, 2, 1));
        g.socket_cycles = 100;
        let a = g.stop(0, 0, 0);
        let b = g.stop(1, 0, 0);
        let (links, crossings) = g.route(a, b);
        assert_eq!(crossings, 1);
        assert_eq!(links.len(), 3 + 3);
        assert_eq!(g.path_cycles(a, b), 6 * 2 + 100);
    }

    #[test]
    fn json_keeps_the_record_format() {
        // The form a `layout.inference` record's `geo` has in users' bundles.
        let mut g = Geometry::uniform(2, 1, Routing::Yx, 1, 2, 3);
        g.sockets = 2;
        g.gateway = Some(1);
        g.socket_cycles = 40;
        let json = serde_json::to_string(&g).unwrap();
        assert_eq!(
            json,
            "{\"cols\":2,\"rows\":1,\"sockets\":2,\"routing\":\"yx\",\"router_cycles\":1,\
             \"inject_cycles\":1,\"eject_cycles\":1,\"link_cycles\":[2,0,0,0,0,2,0,0],\
             \"gateway\":1,\"socket_cycles\":40}"
        );
        assert_eq!(serde_json::from_str::<Geometry>(&json).unwrap(), g);
        assert_eq!(serde_json::to_string(&Routing::Xy).unwrap(), "\"xy\"");
    }
}
