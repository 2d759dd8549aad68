//! A preset turned into a machine: where every core, slice and memory controller sits,
//! the NUMA nodes, and the address map (which node, home slice and controller a line
//! goes to). Validation happens here: coordinates inside the mesh, counts consistent,
//! every node with its memory. Both engines and the latency matrices read a [`Model`].

use crate::error::ModelError;
use crate::geometry::{Geometry, StopId};
use crate::spec::{HomeGroup, Loaded, PoolRole, SliceHash, Spec};
use std::collections::BTreeMap;

mod bounds;
mod resolve;

/// The four virtual networks (CHI channels).
pub const VN_NAMES: [&str; 4] = ["request", "snoop", "response", "data"];
/// Request network index.
pub const REQ: usize = 0;
/// Snoop network index.
pub const SNP: usize = 1;
/// Response network index.
pub const RSP: usize = 2;
/// Data network index.
pub const DAT: usize = 3;

/// A core.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreInfo {
    /// Its stop.
    pub stop: StopId,
    /// Its NUMA node.
    pub node: u32,
    /// Its socket.
    pub socket: u32,
}

/// An SLC (or directory) slice.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceInfo {
    /// Its stop.
    pub stop: StopId,
    /// NUMA node of its stop.
    pub node: u32,
    /// Its socket.
    pub socket: u32,
}

/// A memory controller.
#[derive(Debug, Clone, PartialEq)]
pub struct McInfo {
    /// Its stop.
    pub stop: StopId,
    /// Index into [`Model::pools`].
    pub pool: usize,
    /// Channels.
    pub channels: u32,
    /// Cycles (NoC clock) to move one line through one channel.
    pub service_cycles: f64,
    /// Fixed access latency in NoC cycles.
    pub latency_cycles: f64,
    /// Its socket.
    pub socket: u32,
    /// NUMA node of its stop (the node whose cores are "local" to it).
    pub node: u32,
    /// Requests it holds at most (`memory.NAME.queue_depth`); `None`: unbounded.
    pub queue_depth: Option<u32>,
}

/// A memory pool of the resolved model.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolInfo {
    /// Name in the preset (`memory.NAME`).
    pub name: String,
    /// Technology (node subtype).
    pub kind: String,
    /// Role.
    pub role: PoolRole,
    /// Capacity per socket.
    pub capacity_bytes: u64,
    /// Peak bandwidth per socket, GB/s.
    pub peak_gbps: f64,
    /// Fixed hit ratio (cache role).
    pub cache_hit_ratio: Option<f64>,
}

/// A NUMA node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeInfo {
    /// OS-style index.
    pub id: u32,
    /// Socket.
    pub socket: u32,
    /// Cores (indices into [`Model::cores`]); empty for memory-only nodes.
    pub cores: Vec<usize>,
    /// Controllers holding its memory.
    pub mcs: Vec<usize>,
    /// Pool of its memory.
    pub pool: usize,
    /// Slices its addresses may be homed at (`home_group = "node"`); for memory-only
    /// nodes, those of the CPU node whose region holds its controllers.
    pub slices: Vec<usize>,
    /// Memory in bytes.
    pub memory_bytes: u64,
}

/// Where one line lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Home slice.
    pub home: usize,
    /// Memory controller.
    pub mc: usize,
    /// Memory-side cache controller in front of it, if any.
    pub cache_mc: Option<usize>,
}

/// The resolved machine.
#[derive(Debug, Clone)]
pub struct Model {
    /// What the user asked for (`name:variants` or a file).
    pub label: String,
    /// The spec after variants and overrides.
    pub spec: Spec,
    /// Source of every value.
    pub sources: BTreeMap<String, String>,
    /// Mesh, routing, costs.
    pub geo: Geometry,
    /// Cores, in OS numbering order.
    pub cores: Vec<CoreInfo>,
    /// Slices.
    pub slices: Vec<SliceInfo>,
    /// Memory controllers.
    pub mcs: Vec<McInfo>,
    /// Enabled pools.
    pub pools: Vec<PoolInfo>,
    /// NUMA nodes by id (CPU nodes first, then memory-only nodes).
    pub nodes: Vec<NodeInfo>,
    /// NUMA node of every stop (by [`StopId`]): the CPU node of its region of the mesh.
    pub stop_node: Vec<u32>,
    /// Flits per packet on each virtual network.
    pub flits: [u32; 4],
    /// Packets per cycle each link of a virtual network can carry (links per VN).
    pub lanes: u32,
    /// Cycles the socket link is busy per flit (0 without sockets).
    pub socket_cycles_per_flit: f64,
    /// Index of the memory-side cache pool, if any.
    pub cache_pool: Option<usize>,
    /// Index of the main pool.
    pub main_pool: usize,
    /// Slices by socket, by mesh region (for `mc-region`): `region_slices[socket][region]`.
    region_slices: Vec<Vec<Vec<usize>>>,
    /// Memory-side cache controllers by socket.
    cache_mcs: Vec<Vec<usize>>,
    /// All slices by socket.
    socket_slices: Vec<Vec<usize>>,
}

fn bad(what: &str, msg: impl Into<String>) -> ModelError {
    ModelError::Input {
        what: what.to_string(),
        msg: msg.into(),
    }
}

impl Model {
    /// Refuses bounded controller queues (`memory.NAME.queue_depth`) and home trackers
    /// (`slc.tracker_entries`) outside the one engine that models them: the
    /// discrete-event engine with input-queued routers (`des_iq`), whose network can hold
    /// a request at its destination.
    pub fn check_queue_depth(&self, des_iq: bool) -> Result<(), ModelError> {
        let mut bounded: Vec<String> = self
            .pools
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                self.mcs
                    .iter()
                    .any(|m| m.pool == *i && m.queue_depth.is_some())
            })
            .map(|(_, p)| format!("memory.{}.queue_depth", p.name))
            .collect();
        if self.spec.slc.tracker_entries.is_some() {
            bounded.push("slc.tracker_entries".into());
        }
        if des_iq || bounded.is_empty() {
            return Ok(());
        }
        Err(ModelError::Usage {
            msg: format!(
                "{} bounds what a controller or home takes off the network, which only the discrete-event engine with input-queued routers models (its network holds the requests a full one does not take); run with --engine des --set noc.router=input-queued, or leave it out",
                bounded.join(" and ")
            ),
        })
    }

    /// Loads and resolves a preset (`name[:variants]` or a file) with `--set` overrides.
    pub fn load(what: &str, sets: &[String]) -> Result<Model, ModelError> {
        Model::from_loaded(crate::spec::load(what, sets)?)
    }

    /// Resolves a loaded spec, checking it.
    pub fn from_loaded(l: Loaded) -> Result<Model, ModelError> {
        resolve::model(l)
    }

    /// NoC cycles to nanoseconds.
    pub fn ns(&self, cycles: f64) -> f64 {
        cycles / self.spec.noc.clock_ghz
    }

    /// Cache line bytes.
    pub fn line_bytes(&self) -> u32 {
        self.spec.cores.line_bytes
    }

    /// Nodes with cores.
    pub fn cpu_nodes(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.iter().filter(|n| !n.cores.is_empty())
    }

    /// Where line `line` of node `node`'s memory lives.
    pub fn locate(&self, node: u32, line: u64) -> Location {
        let nd = &self.nodes[node as usize];
        let mc = nd.mcs[(line % nd.mcs.len() as u64) as usize];
        let group: &[usize] = match self.spec.slc.home_group {
            HomeGroup::All => &self.socket_slices[nd.socket as usize],
            HomeGroup::Node => &nd.slices,
            HomeGroup::McRegion => {
                let [rx, ry] = self.spec.slc.region_split.unwrap_or([1, 1]);
                let (k, x, y) = self.geo.coords(self.mcs[mc].stop);
                &self.region_slices[k as usize]
                    [((y * ry / self.geo.rows) * rx + x * rx / self.geo.cols) as usize]
            }
        };
        let home = if group.is_empty() {
            0
        } else {
            group[slice_index(self.spec.slc.hash, line, group.len())]
        };
        let cache_mc = self.cache_pool.map(|_| {
            let c = &self.cache_mcs[nd.socket as usize];
            c[((line >> 1) % c.len() as u64) as usize]
        });
        Location { home, mc, cache_mc }
    }

    /// Total SLC bytes an address of `node` can be cached in.
    pub fn slc_reach_bytes(&self, node: u32) -> f64 {
        let per_slice = self.spec.slc.bytes as f64
            / self.slices.iter().filter(|s| s.socket == 0).count() as f64;
        let n = match self.spec.slc.home_group {
            HomeGroup::All => self
                .slices
                .iter()
                .filter(|s| s.socket == self.nodes[node as usize].socket)
                .count(),
            HomeGroup::Node => self.nodes[node as usize].slices.len(),
            HomeGroup::McRegion => {
                let mut set: Vec<usize> = Vec::new();
                for l in 0..4096 {
                    let h = self.locate(node, l).home;
                    if !set.contains(&h) {
                        set.push(h);
                    }
                }
                set.len()
            }
        };
        per_slice * n as f64
    }

    /// Peak bandwidth of a node's memory, GB/s (its controllers' channels).
    pub fn node_peak_gbps(&self, node: u32) -> f64 {
        let nd = &self.nodes[node as usize];
        nd.mcs
            .iter()
            .map(|&m| {
                let mc = &self.mcs[m];
                f64::from(mc.channels) * f64::from(self.line_bytes()) / mc.service_cycles
                    * self.spec.noc.clock_ghz
            })
            .sum()
    }

    /// Human name of a stop, `(x,y)` or `s1(x,y)`.
    pub fn stop_name(&self, s: StopId) -> String {
        let (k, x, y) = self.geo.coords(s);
        if self.geo.sockets > 1 {
            format!("s{k}({x},{y})")
        } else {
            format!("({x},{y})")
        }
    }
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn not_negative(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// The slice index of `line` among `n` slices.
pub fn slice_index(hash: SliceHash, line: u64, n: usize) -> usize {
    let n64 = n as u64;
    match hash {
        SliceHash::Modulo => (line % n64) as usize,
        SliceHash::XorFold => {
            // Fold to 6 bits more than the slice index needs, so that the final modulo
            // of a non-power-of-two count is biased by less than 1/64.
            let width = 64 - (n64.max(2) - 1).leading_zeros() + 6;
            let mask = (1u64 << width) - 1;
            let mut x = 0u64;
            let mut l = line;
            while l != 0 {
                x ^= l & mask;
                l >>= width;
            }
            (x % n64) as usize
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_has_the_published_counts() {
        let m = Model::load("neoverse-v1-64", &[]).unwrap();
        assert_eq!(m.cores.len(), 64);
        assert_eq!(m.slices.len(), 64);
        assert_eq!(m.nodes.len(), 4);
        assert!(m.nodes.iter().all(|n| n.cores.len() == 16));
        let peak: f64 = (0..4).map(|n| m.node_peak_gbps(n)).sum();
        assert!((peak - 307.2).abs() < 1e-6, "{peak}");
        // Quadrant links cost 3 cycles.
        let a = m.geo.stop(0, 3, 0);
        assert_eq!(m.geo.path_cycles(a, m.geo.stop(0, 4, 0)), 1 + 3);
        assert_eq!(m.geo.path_cycles(a, m.geo.stop(0, 2, 0)), 1 + 1);
        let d = Model::load("neoverse-v1-64:ddr4", &[]).unwrap();
        assert!(d.nodes.iter().all(|n| n.mcs.len() == 1));
    }

    #[test]
    fn knl_modes_give_the_documented_nodes() {
        let m = Model::load("knl-7210", &[]).unwrap();
        assert_eq!(m.cores.len(), 64);
        assert_eq!(m.slices.len(), 38);
        // quadrant flat: node 0 = DDR with CPUs, node 1 = MCDRAM.
        assert_eq!(m.nodes.len(), 2);
        assert_eq!(m.pools[m.nodes[1].pool].kind, "MCDRAM");
        let m = Model::load("knl-7210:snc4", &[]).unwrap();
        assert_eq!(m.nodes.len(), 8);
        assert!(m.nodes[4..]
            .iter()
            .all(|n| n.cores.is_empty() && n.mcs.len() == 2));
        let m = Model::load("knl-7210:snc4,cache", &[]).unwrap();
        assert_eq!(m.nodes.len(), 4);
        assert!(m.cache_pool.is_some());
        // Quadrant mode homes a line in its controller's quadrant.
        let m = Model::load("knl-7210:quadrant", &[]).unwrap();
        for line in 0..512 {
            let loc = m.locate(0, line);
            let (_, mx, my) = m.geo.coords(m.mcs[loc.mc].stop);
            let (_, hx, hy) = m.geo.coords(m.slices[loc.home].stop);
            assert_eq!(
                (mx * 2 / 6, my * 2 / 7),
                (hx * 2 / 6, hy * 2 / 7),
                "line {line}"
            );
        }
    }

    #[test]
    fn altra_quadrant_grid_and_two_sockets() {
        let m = Model::load("altra-q80:quadrant", &[]).unwrap();
        assert_eq!(m.nodes.len(), 4);
        assert_eq!(m.cores.len(), 80);
        assert!((m.node_peak_gbps(0) - 51.2).abs() < 1e-9);
        let m = Model::load("altra-q80-2s", &[]).unwrap();
        assert_eq!(m.cores.len(), 160);
        assert_eq!(m.nodes.len(), 2);
        assert_eq!(m.nodes[1].cores[0], 80);
        assert_eq!(m.nodes[0].memory_bytes, 137438953472);
    }

    #[test]
    fn inconsistent_presets_are_refused_with_the_key() {
        let cases: &[(&str, &[&str], &str)] = &[
            ("neoverse-v1-64", &["cores.count=60"], "cores.count = 60"),
            (
                "neoverse-v1-64",
                &["memory.hbm.controllers=[[9, 1]]"],
                "outside the 8 x 8 mesh",
            ),
            (
                "neoverse-v1-64",
                &["memory.ddr4.enabled=true"],
                "exactly one enabled memory pool",
            ),
            (
                "mesh",
                &["numa.grid=[[0, 2]]"],
                "numa.grid must have 8 rows",
            ),
            ("mesh", &["noc.virtual_networks=2"], "four CHI networks"),
            (
                "mesh",
                &["noc.boundary.cols=[9]", "noc.boundary.link_cycles=3"],
                "noc.boundary.cols",
            ),
            ("knl-7210", &["slc.region_split=[0, 1]"], "region_split"),
            (
                "mesh",
                &["cores.stops=\"diagonal\""],
                "unknown stop pattern",
            ),
        ];
        for (p, sets, text) in cases {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let e = Model::load(p, &sets).expect_err(text).to_string();
            assert!(e.contains(text), "{p} {sets:?}: {e}");
        }
    }

    #[test]
    fn slice_hashes_spread_evenly() {
        for hash in [SliceHash::Modulo, SliceHash::XorFold] {
            for n in [20usize, 38, 64] {
                let mut count = vec![0u32; n];
                for l in 0..(n as u64 * 1024) {
                    count[slice_index(hash, l, n)] += 1;
                }
                let (lo, hi) = (count.iter().min().unwrap(), count.iter().max().unwrap());
                // Power-of-two counts are exact; for others the fold keeps 6 spare bits,
                // so the modulo's bias is below 1/64 (3% here leaves room for that).
                assert!(
                    f64::from(*hi) / f64::from(*lo) < 1.03,
                    "{hash:?} {n}: {lo}..{hi}"
                );
            }
        }
    }
}
