//! A preset turned into a machine: where every core, slice and memory controller sits,
//! the NUMA nodes, and the address map (which node, home slice and controller a line
//! goes to). Validation happens here: coordinates inside the mesh, counts consistent,
//! every node with its memory. Both engines and the latency matrices read a [`Model`].

use crate::error::ModelError;
use crate::geometry::{Dir, Geometry, StopId};
use crate::spec::{HomeGroup, Loaded, PoolRole, SliceHash, Spec, Stops};
use std::collections::BTreeMap;

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
        let s = &l.spec;
        let what = l.label.as_str();
        let n = &s.noc;
        if n.cols == 0 || n.rows == 0 || n.cols > 256 || n.rows > 256 {
            return Err(bad(
                what,
                format!(
                    "noc.cols and noc.rows must be 1-256 (got {} x {})",
                    n.cols, n.rows
                ),
            ));
        }
        if n.virtual_networks != 4 {
            return Err(bad(what, format!("noc.virtual_networks = {}: the model has the four CHI networks (request, snoop, response, data); set it to 4", n.virtual_networks)));
        }
        for (k, v) in [
            ("noc.clock_ghz", n.clock_ghz),
            ("cores.clock_ghz", s.cores.clock_ghz),
        ] {
            if !positive(v) {
                return Err(bad(
                    what,
                    format!("{k} must be a positive number (got {v})"),
                ));
            }
        }
        if n.link_bytes == 0 || n.links_per_vn == 0 || n.links_per_vn > 8 {
            return Err(bad(
                what,
                "noc.link_bytes must be > 0 and noc.links_per_vn 1-8",
            ));
        }
        if n.vcs == 0
            || n.vcs > 16
            || n.buffer_flits == 0
            || n.buffer_flits > 1024
            || n.vc_alloc_delay == 0
            || n.sw_alloc_delay == 0
            || n.alloc_iters == 0
            || n.alloc_iters > 16
            || n.credit_delay > 1000
            || n.routing_delay > 1000
            || n.vc_alloc_delay > 1000
            || n.sw_alloc_delay > 1000
            || n.st_final_delay > 1000
        {
            return Err(bad(
                what,
                format!(
                    "input-queued router: noc.vcs must be 1-16 (got {}), noc.buffer_flits 1-1024 (got {}), noc.alloc_iters 1-16 (got {}), noc.vc_alloc_delay and noc.sw_alloc_delay 1-1000 (got {} and {}), the other delays 0-1000",
                    n.vcs, n.buffer_flits, n.alloc_iters, n.vc_alloc_delay, n.sw_alloc_delay
                ),
            ));
        }
        if s.cores.per_stop == 0
            || s.slc.per_stop == 0
            || s.cores.max_outstanding == 0
            || s.cores.threads_per_core == 0
        {
            return Err(bad(what, "cores.per_stop, slc.per_stop, cores.max_outstanding and cores.threads_per_core must be at least 1"));
        }
        if s.cores.line_bytes == 0 || !s.cores.line_bytes.is_power_of_two() {
            return Err(bad(what, "cores.line_bytes must be a power of two"));
        }
        let sockets = match &s.socket {
            None => 1,
            Some(k) if k.count == 1 || k.count == 2 => k.count,
            Some(k) => {
                return Err(bad(
                    what,
                    format!("socket.count = {}: 1 or 2 sockets are modeled", k.count),
                ))
            }
        };
        let mut geo = Geometry::uniform(
            n.cols,
            n.rows,
            n.routing,
            n.router_cycles,
            n.link_cycles_x,
            n.link_cycles_y,
        );
        geo.inject_cycles = n.inject_cycles;
        geo.eject_cycles = n.eject_cycles;
        if let Some(b) = &n.boundary {
            for &c in &b.cols {
                if c == 0 || c >= n.cols {
                    return Err(bad(what, format!("noc.boundary.cols: {c} is not between 1 and {} (a boundary lies between column c-1 and c)", n.cols - 1)));
                }
            }
            for &r in &b.rows {
                if r == 0 || r >= n.rows {
                    return Err(bad(
                        what,
                        format!("noc.boundary.rows: {r} is not between 1 and {}", n.rows - 1),
                    ));
                }
            }
            for l in 0..geo.stops_per_socket() * 4 {
                let d = Dir::from_index(l);
                let Some(t) = geo.neighbor(l / 4, d) else {
                    continue;
                };
                let (_, x0, y0) = geo.coords(l / 4);
                let (_, x1, y1) = geo.coords(t);
                let crosses = if d.horizontal() {
                    b.cols.contains(&x0.max(x1))
                } else {
                    b.rows.contains(&y0.max(y1))
                };
                if crosses {
                    geo.link_cycles[l as usize] = b.link_cycles;
                }
            }
        }
        let inside = |p: [u32; 2], key: &str| -> Result<(), ModelError> {
            if p[0] >= n.cols || p[1] >= n.rows {
                Err(bad(
                    what,
                    format!(
                        "{key}: stop [{}, {}] is outside the {} x {} mesh (x 0-{}, y 0-{})",
                        p[0],
                        p[1],
                        n.cols,
                        n.rows,
                        n.cols - 1,
                        n.rows - 1
                    ),
                ))
            } else {
                Ok(())
            }
        };
        let expand = |stops: &Stops,
                      exclude: &[[u32; 2]],
                      key: &str|
         -> Result<Vec<[u32; 2]>, ModelError> {
            for &p in exclude {
                inside(p, &format!("{key} exclude"))?;
            }
            let all = (0..n.rows).flat_map(|y| (0..n.cols).map(move |x| [x, y]));
            let v: Vec<[u32; 2]> = match stops {
                Stops::Pattern(p) => match p.as_str() {
                    "all" => all.collect(),
                    "checker-even" => all.filter(|[x, y]| (x + y) % 2 == 0).collect(),
                    "checker-odd" => all.filter(|[x, y]| (x + y) % 2 == 1).collect(),
                    "corners" => {
                        let mut c = vec![[0, 0], [n.cols - 1, 0], [0, n.rows - 1], [n.cols - 1, n.rows - 1]];
                        c.dedup();
                        c
                    }
                    other => return Err(bad(what, format!("{key}: unknown stop pattern '{other}' (all, checker-even, checker-odd, corners, or a list of [x, y])"))),
                },
                Stops::List(l) => {
                    for &p in l {
                        inside(p, key)?;
                    }
                    l.clone()
                }
            };
            Ok(v.into_iter().filter(|p| !exclude.contains(p)).collect())
        };
        let core_stops = expand(&s.cores.stops, &s.cores.exclude, "cores.stops")?;
        let slice_stops = expand(&s.slc.stops, &s.slc.exclude, "slc.stops")?;
        // NUMA grid (local node per stop).
        let grid: Vec<u32> = match (&s.numa.grid, s.numa.split) {
            (Some(g), _) => {
                if g.len() != n.rows as usize || g.iter().any(|r| r.len() != n.cols as usize) {
                    return Err(bad(
                        what,
                        format!(
                            "numa.grid must have {} rows of {} node numbers (grid[y][x])",
                            n.rows, n.cols
                        ),
                    ));
                }
                g.iter().flatten().copied().collect()
            }
            (None, Some([sx, sy])) => {
                if sx == 0 || sy == 0 || sx > n.cols || sy > n.rows {
                    return Err(bad(
                        what,
                        format!(
                            "numa.split = [{sx}, {sy}] does not divide a {} x {} mesh",
                            n.cols, n.rows
                        ),
                    ));
                }
                (0..n.rows)
                    .flat_map(|y| {
                        (0..n.cols).map(move |x| (y * sy / n.rows) * sx + x * sx / n.cols)
                    })
                    .collect()
            }
            (None, None) => vec![0; (n.cols * n.rows) as usize],
        };
        let local_nodes = grid.iter().max().map_or(1, |m| m + 1);
        for id in 0..local_nodes {
            if !grid.contains(&id) {
                return Err(bad(
                    what,
                    format!(
                        "numa.grid: node numbers must be 0-{} without gaps; {id} is missing",
                        local_nodes - 1
                    ),
                ));
            }
        }
        let node_of =
            |socket: u32, p: [u32; 2]| socket * local_nodes + grid[(p[1] * n.cols + p[0]) as usize];
        let mut cores = Vec::new();
        let mut slices = Vec::new();
        for k in 0..sockets {
            for &p in &core_stops {
                for _ in 0..s.cores.per_stop {
                    cores.push(CoreInfo {
                        stop: geo.stop(k, p[0], p[1]),
                        node: node_of(k, p),
                        socket: k,
                    });
                }
            }
            for &p in &slice_stops {
                for _ in 0..s.slc.per_stop {
                    slices.push(SliceInfo {
                        stop: geo.stop(k, p[0], p[1]),
                        node: node_of(k, p),
                        socket: k,
                    });
                }
            }
        }
        let per_socket_cores = core_stops.len() as u32 * s.cores.per_stop;
        let per_socket_slices = slice_stops.len() as u32 * s.slc.per_stop;
        if let Some(c) = s.cores.count {
            if c != per_socket_cores {
                return Err(bad(what, format!("cores.count = {c} but the placement gives {} stops x {} = {per_socket_cores} cores per socket; fix cores.stops/exclude or cores.count", core_stops.len(), s.cores.per_stop)));
            }
        }
        if let Some(c) = s.slc.count {
            if c != per_socket_slices {
                return Err(bad(what, format!("slc.count = {c} but the placement gives {} stops x {} = {per_socket_slices} slices per socket; fix slc.stops/exclude or slc.count", slice_stops.len(), s.slc.per_stop)));
            }
        }
        if cores.is_empty() || slices.is_empty() {
            return Err(bad(what, "the placement gives no cores or no slices"));
        }
        // Pools and controllers.
        let clock = n.clock_ghz;
        let line = f64::from(s.cores.line_bytes);
        let mut pools = Vec::new();
        let mut mcs = Vec::new();
        let mut pool_mc_stops: Vec<Vec<[u32; 2]>> = Vec::new();
        if s.slc.tracker_entries == Some(0) {
            return Err(bad(
                what,
                "slc.tracker_entries = 0 would take no request: give at least 1, or leave it out for unbounded trackers",
            ));
        }
        for (name, p) in &s.memory {
            if !p.enabled {
                continue;
            }
            let key = format!("memory.{name}");
            if !positive(p.channel_gbps)
                || p.channels_per_controller == 0
                || !not_negative(p.latency_ns)
            {
                return Err(bad(what, format!("{key}: channel_gbps and channels_per_controller must be positive, latency_ns not negative")));
            }
            if let Some(h) = p.cache_hit_ratio {
                if !(0.0..=1.0).contains(&h) {
                    return Err(bad(
                        what,
                        format!("{key}.cache_hit_ratio = {h} is not between 0 and 1"),
                    ));
                }
            }
            if p.queue_depth == Some(0) {
                return Err(bad(
                    what,
                    format!("{key}.queue_depth = 0 would take no request: give at least 1, or leave it out for an unbounded queue"),
                ));
            }
            let stops = expand(&p.controllers, &[], &format!("{key}.controllers"))?;
            if stops.is_empty() {
                return Err(bad(what, format!("{key}: no controllers")));
            }
            let pi = pools.len();
            pools.push(PoolInfo {
                name: name.clone(),
                kind: p.kind.clone(),
                role: p.role,
                capacity_bytes: p.capacity_bytes,
                peak_gbps: p.channel_gbps
                    * f64::from(p.channels_per_controller)
                    * stops.len() as f64,
                cache_hit_ratio: p.cache_hit_ratio,
            });
            pool_mc_stops.push(stops);
            let _ = pi;
        }
        let mains: Vec<usize> = pools
            .iter()
            .enumerate()
            .filter(|(_, p)| p.role == PoolRole::Main)
            .map(|(i, _)| i)
            .collect();
        if mains.len() != 1 {
            return Err(bad(what, format!("exactly one enabled memory pool must have role = \"main\" (found {}: {}); enable or disable pools with memory.NAME.enabled", mains.len(), mains.iter().map(|&i| pools[i].name.as_str()).collect::<Vec<_>>().join(", "))));
        }
        let main_pool = mains[0];
        let caches: Vec<usize> = pools
            .iter()
            .enumerate()
            .filter(|(_, p)| p.role == PoolRole::Cache)
            .map(|(i, _)| i)
            .collect();
        if caches.len() > 1 {
            return Err(bad(
                what,
                "at most one memory pool may have role = \"cache\"",
            ));
        }
        let cache_pool = caches.first().copied();
        let mut mc_local = Vec::new(); // (pool, local node of its stop)
        for k in 0..sockets {
            for (pi, stops) in pool_mc_stops.iter().enumerate() {
                let p = &s.memory[&pools[pi].name];
                for &st in stops {
                    mcs.push(McInfo {
                        stop: geo.stop(k, st[0], st[1]),
                        pool: pi,
                        channels: p.channels_per_controller,
                        service_cycles: line * clock / p.channel_gbps,
                        latency_cycles: p.latency_ns * clock,
                        socket: k,
                        node: node_of(k, st),
                        queue_depth: p.queue_depth,
                    });
                    mc_local.push(node_of(k, st));
                }
            }
        }
        // CPU nodes.
        let mut nodes: Vec<NodeInfo> = Vec::new();
        for k in 0..sockets {
            for g in 0..local_nodes {
                let id = k * local_nodes + g;
                let node_cores: Vec<usize> = cores
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.node == id)
                    .map(|(i, _)| i)
                    .collect();
                if node_cores.is_empty() {
                    return Err(bad(what, format!("NUMA node {id} has no cores; check numa.split/numa.grid against cores.stops")));
                }
                let node_slices: Vec<usize> = slices
                    .iter()
                    .enumerate()
                    .filter(|(_, sl)| sl.node == id)
                    .map(|(i, _)| i)
                    .collect();
                if node_slices.is_empty() && s.slc.home_group == HomeGroup::Node {
                    return Err(bad(
                        what,
                        format!("NUMA node {id} has no SLC slices but slc.home_group = \"node\""),
                    ));
                }
                let mut own: Vec<usize> = (0..mcs.len())
                    .filter(|&m| mcs[m].pool == main_pool && mc_local[m] == id)
                    .collect();
                if own.is_empty() {
                    // Nearest controllers of the socket by mean zero-load cycles from the node's cores.
                    let cost = |m: usize| -> u64 {
                        node_cores
                            .iter()
                            .map(|&c| u64::from(geo.path_cycles(cores[c].stop, mcs[m].stop)))
                            .sum()
                    };
                    let cands: Vec<usize> = (0..mcs.len())
                        .filter(|&m| mcs[m].pool == main_pool && mcs[m].socket == k)
                        .collect();
                    let best = cands.iter().map(|&m| cost(m)).min().unwrap_or(0);
                    own = cands.into_iter().filter(|&m| cost(m) == best).collect();
                }
                nodes.push(NodeInfo {
                    id,
                    socket: k,
                    cores: node_cores,
                    mcs: own,
                    pool: main_pool,
                    slices: node_slices,
                    memory_bytes: 0,
                });
            }
        }
        // Memory-only nodes.
        for (pi, p) in pools.iter().enumerate() {
            if p.role != PoolRole::OwnNode {
                continue;
            }
            for k in 0..sockets {
                for g in 0..local_nodes {
                    let cpu_node = k * local_nodes + g;
                    let own: Vec<usize> = (0..mcs.len())
                        .filter(|&m| mcs[m].pool == pi && mc_local[m] == cpu_node)
                        .collect();
                    if own.is_empty() {
                        continue;
                    }
                    let id = nodes.len() as u32;
                    let sl = nodes[cpu_node as usize].slices.clone();
                    nodes.push(NodeInfo {
                        id,
                        socket: k,
                        cores: Vec::new(),
                        mcs: own,
                        pool: pi,
                        slices: sl,
                        memory_bytes: 0,
                    });
                }
            }
        }
        // Memory sizes: a controller's share of its pool, split among the nodes it serves.
        let mut served = vec![0u32; mcs.len()];
        for nd in &nodes {
            for &m in &nd.mcs {
                served[m] += 1;
            }
        }
        let pool_channels: Vec<u32> = (0..pools.len())
            .map(|pi| {
                mcs.iter()
                    .filter(|m| m.pool == pi && m.socket == 0)
                    .map(|m| m.channels)
                    .sum()
            })
            .collect();
        for nd in &mut nodes {
            let bytes: f64 = nd
                .mcs
                .iter()
                .map(|&m| {
                    let p = &pools[mcs[m].pool];
                    p.capacity_bytes as f64 * f64::from(mcs[m].channels)
                        / f64::from(pool_channels[mcs[m].pool])
                        / f64::from(served[m])
                })
                .sum();
            nd.memory_bytes = bytes.round() as u64;
        }
        // Regions for mc-region homing.
        let region_slices = match (s.slc.home_group, s.slc.region_split) {
            (HomeGroup::McRegion, None) => {
                return Err(bad(
                    what,
                    "slc.home_group = \"mc-region\" needs slc.region_split = [columns, rows]",
                ))
            }
            (_, Some([rx, ry])) if rx == 0 || ry == 0 || rx > n.cols || ry > n.rows => {
                return Err(bad(
                    what,
                    format!(
                        "slc.region_split = [{rx}, {ry}] does not divide a {} x {} mesh",
                        n.cols, n.rows
                    ),
                ))
            }
            (_, split) => {
                let [rx, ry] = split.unwrap_or([1, 1]);
                let mut v = vec![vec![Vec::new(); (rx * ry) as usize]; sockets as usize];
                for (i, sl) in slices.iter().enumerate() {
                    let (k, x, y) = geo.coords(sl.stop);
                    v[k as usize][((y * ry / n.rows) * rx + x * rx / n.cols) as usize].push(i);
                }
                if s.slc.home_group == HomeGroup::McRegion
                    && v.iter().flatten().any(|r| r.is_empty())
                {
                    return Err(bad(what, "slc.region_split leaves a region without slices"));
                }
                v
            }
        };
        let cache_mcs = (0..sockets)
            .map(|k| {
                (0..mcs.len())
                    .filter(|&m| Some(mcs[m].pool) == cache_pool && mcs[m].socket == k)
                    .collect()
            })
            .collect();
        let (socket_cycles_per_flit, gateway, socket_cycles) = match &s.socket {
            Some(k) if k.count == 2 => {
                inside(k.gateway, "socket.gateway")?;
                if !positive(k.link_gbps) || !not_negative(k.link_latency_ns) {
                    return Err(bad(
                        what,
                        "socket.link_gbps must be positive and socket.link_latency_ns not negative",
                    ));
                }
                (
                    f64::from(n.link_bytes) * clock / k.link_gbps,
                    Some(k.gateway[1] * n.cols + k.gateway[0]),
                    (k.link_latency_ns * clock).round() as u32,
                )
            }
            _ => (0.0, None, 0),
        };
        geo.sockets = sockets;
        geo.gateway = gateway;
        geo.socket_cycles = socket_cycles;
        let dat = s.cores.line_bytes.div_ceil(n.link_bytes);
        let socket_slices = (0..sockets)
            .map(|k| {
                (0..slices.len())
                    .filter(|&i| slices[i].socket == k)
                    .collect()
            })
            .collect();
        let stop_node = (0..geo.stops())
            .map(|st| {
                let (k, x, y) = geo.coords(st);
                node_of(k, [x, y])
            })
            .collect();
        Ok(Model {
            label: l.label.clone(),
            spec: l.spec.clone(),
            sources: l.sources.clone(),
            geo,
            cores,
            slices,
            mcs,
            pools,
            nodes,
            stop_node,
            flits: [1, 1, 1, dat],
            lanes: n.links_per_vn,
            socket_cycles_per_flit,
            cache_pool,
            main_pool,
            region_slices,
            cache_mcs,
            socket_slices,
        })
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
