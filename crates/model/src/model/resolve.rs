//! Resolving a loaded preset into a [`Model`]: each section of the spec checked in turn
//! (NoC and cores, sockets, mesh, placement, NUMA, memory, homing regions, the socket
//! link), then cores, slices, controllers and NUMA nodes placed on the mesh.

use super::{bad, not_negative, positive, CoreInfo, McInfo, Model, NodeInfo, PoolInfo, SliceInfo};
use crate::error::ModelError;
use crate::geometry::{Dir, Geometry};
use crate::spec::{HomeGroup, Loaded, NocSpec, PoolRole, Spec, Stops};

/// Resolves a loaded spec, checking it ([`Model::from_loaded`]): the sections in the
/// order their errors are reported.
pub(super) fn model(mut l: Loaded) -> Result<Model, ModelError> {
    super::bounds::check(&l)?;
    default_router(&mut l);
    let s = &l.spec;
    let what = l.label.as_str();
    let n = &s.noc;
    check_noc_and_cores(s, what)?;
    let cx = Ctx {
        s,
        n,
        what,
        sockets: socket_count(s, what)?,
    };
    let sockets = cx.sockets;
    let mut geo = mesh_geometry(n, what)?;
    let core_stops = cx.expand(&s.cores.stops, &s.cores.exclude, "cores.stops")?;
    let slice_stops = cx.expand(&s.slc.stops, &s.slc.exclude, "slc.stops")?;
    let numa = Numa::new(&cx)?;
    let (cores, slices) = place(&cx, &geo, &numa, &core_stops, &slice_stops)?;
    // Pools and controllers.
    let (pools, pool_mc_stops) = memory_pools(&cx)?;
    let (main_pool, cache_pool) = main_and_cache(&pools, what)?;
    let mcs = controllers(&cx, &geo, &numa, &pools, &pool_mc_stops);
    let mut nodes = cpu_nodes(
        &cx,
        &geo,
        numa.local_nodes,
        &cores,
        &slices,
        &mcs,
        main_pool,
    )?;
    add_memory_only_nodes(&mut nodes, &pools, &mcs, sockets, numa.local_nodes);
    size_node_memory(&mut nodes, &pools, &mcs);
    let region_slices = region_slices(&cx, &geo, &slices)?;
    let cache_mcs = (0..sockets)
        .map(|k| {
            (0..mcs.len())
                .filter(|&m| Some(mcs[m].pool) == cache_pool && mcs[m].socket == k)
                .collect()
        })
        .collect();
    let (socket_cycles_per_flit, gateway, socket_cycles) = socket_link(&cx)?;
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
            numa.node_of(k, [x, y])
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

/// What [`default_router`] records as the source of `noc.router` when it chooses the
/// output-queued router for two sockets.
pub const TWO_SOCKET_ROUTER_SOURCE: &str = "two sockets: the input-queued router (the default) models one socket, so the output-queued router is used; its known error is printed with the results (docs/model.md, \"Router microarchitecture\")";

/// The router rule: input-queued where it is modelled (one socket, the spec's default);
/// with two sockets the output-queued router, recorded with
/// [`TWO_SOCKET_ROUTER_SOURCE`] as the value's source, unless the command line asks for
/// `noc.router=input-queued` (which the discrete-event engine then refuses with the
/// remedy).
fn default_router(l: &mut Loaded) {
    let two = l.spec.socket.as_ref().is_some_and(|k| k.count > 1);
    let asked = l
        .sources
        .get("noc.router")
        .is_some_and(|s| s == "command line --set");
    if two && !asked && l.spec.noc.router == crate::spec::RouterKind::InputQueued {
        l.spec.noc.router = crate::spec::RouterKind::OutputQueued;
        l.sources
            .insert("noc.router".into(), TWO_SOCKET_ROUTER_SOURCE.into());
        if let Some(toml::Value::Table(noc)) = l.values.get_mut("noc") {
            noc.insert("router".into(), toml::Value::String("output-queued".into()));
        }
    }
}

/// The spec being resolved, its label (`what`, for errors) and its socket count.
struct Ctx<'a> {
    s: &'a Spec,
    n: &'a NocSpec,
    what: &'a str,
    sockets: u32,
}

impl Ctx<'_> {
    /// Refuses a stop `p` outside the mesh (`key` names the setting).
    fn inside(&self, p: [u32; 2], key: &str) -> Result<(), ModelError> {
        let (n, what) = (self.n, self.what);
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
    }

    /// The stops of a pattern or list, less `exclude` (`key` names the setting).
    fn expand(
        &self,
        stops: &Stops,
        exclude: &[[u32; 2]],
        key: &str,
    ) -> Result<Vec<[u32; 2]>, ModelError> {
        let (n, what) = (self.n, self.what);
        for &p in exclude {
            self.inside(p, &format!("{key} exclude"))?;
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
                    self.inside(p, key)?;
                }
                l.clone()
            }
        };
        Ok(v.into_iter().filter(|p| !exclude.contains(p)).collect())
    }
}

/// Checks the `noc` and `cores` sections: mesh size, virtual networks, clocks, links,
/// the input-queued router's figures, per-stop counts and the line size.
fn check_noc_and_cores(s: &Spec, what: &str) -> Result<(), ModelError> {
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
    Ok(())
}

/// The `socket` section's count: 1 or 2.
fn socket_count(s: &Spec, what: &str) -> Result<u32, ModelError> {
    match &s.socket {
        None => Ok(1),
        Some(k) if k.count == 1 || k.count == 2 => Ok(k.count),
        Some(k) => Err(bad(
            what,
            format!("socket.count = {}: 1 or 2 sockets are modeled", k.count),
        )),
    }
}

/// The mesh of one socket: uniform links, then the slower links of `noc.boundary`.
fn mesh_geometry(n: &NocSpec, what: &str) -> Result<Geometry, ModelError> {
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
    Ok(geo)
}

/// The `numa` section resolved: the local node of every stop of a socket (`grid`, row by
/// row) and the nodes per socket.
struct Numa {
    grid: Vec<u32>,
    local_nodes: u32,
    cols: u32,
}

impl Numa {
    /// From `numa.grid` or `numa.split` (one node without either), checked.
    fn new(cx: &Ctx) -> Result<Self, ModelError> {
        let (s, n, what) = (cx.s, cx.n, cx.what);
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
        Ok(Numa {
            grid,
            local_nodes,
            cols: n.cols,
        })
    }

    /// The NUMA node of stop `p` of `socket`.
    fn node_of(&self, socket: u32, p: [u32; 2]) -> u32 {
        socket * self.local_nodes + self.grid[(p[1] * self.cols + p[0]) as usize]
    }
}

/// Cores and slices on every socket at their stops, checked against `cores.count` and
/// `slc.count`.
fn place(
    cx: &Ctx,
    geo: &Geometry,
    numa: &Numa,
    core_stops: &[[u32; 2]],
    slice_stops: &[[u32; 2]],
) -> Result<(Vec<CoreInfo>, Vec<SliceInfo>), ModelError> {
    let (s, what) = (cx.s, cx.what);
    let mut cores = Vec::new();
    let mut slices = Vec::new();
    for k in 0..cx.sockets {
        for &p in core_stops {
            for _ in 0..s.cores.per_stop {
                cores.push(CoreInfo {
                    stop: geo.stop(k, p[0], p[1]),
                    node: numa.node_of(k, p),
                    socket: k,
                });
            }
        }
        for &p in slice_stops {
            for _ in 0..s.slc.per_stop {
                slices.push(SliceInfo {
                    stop: geo.stop(k, p[0], p[1]),
                    node: numa.node_of(k, p),
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
    Ok((cores, slices))
}

/// The controllers' stops (`[x, y]`) of each enabled pool, on one socket.
type PoolStops = Vec<Vec<[u32; 2]>>;

/// The enabled pools of the `memory` section (after the check of `slc.tracker_entries`),
/// each with its controllers' stops on one socket.
fn memory_pools(cx: &Ctx) -> Result<(Vec<PoolInfo>, PoolStops), ModelError> {
    let (s, what) = (cx.s, cx.what);
    let mut pools = Vec::new();
    let mut pool_mc_stops: PoolStops = Vec::new();
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
        let stops = cx.expand(&p.controllers, &[], &format!("{key}.controllers"))?;
        if stops.is_empty() {
            return Err(bad(what, format!("{key}: no controllers")));
        }
        pools.push(PoolInfo {
            name: name.clone(),
            kind: p.kind.clone(),
            role: p.role,
            capacity_bytes: p.capacity_bytes,
            peak_gbps: p.channel_gbps * f64::from(p.channels_per_controller) * stops.len() as f64,
            cache_hit_ratio: p.cache_hit_ratio,
        });
        pool_mc_stops.push(stops);
    }
    Ok((pools, pool_mc_stops))
}

/// The main pool (exactly one) and the memory-side cache pool (at most one).
fn main_and_cache(pools: &[PoolInfo], what: &str) -> Result<(usize, Option<usize>), ModelError> {
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
    Ok((main_pool, caches.first().copied()))
}

/// The memory controllers of every pool on every socket, socket by socket.
fn controllers(
    cx: &Ctx,
    geo: &Geometry,
    numa: &Numa,
    pools: &[PoolInfo],
    pool_mc_stops: &[Vec<[u32; 2]>],
) -> Vec<McInfo> {
    let s = cx.s;
    let clock = cx.n.clock_ghz;
    let line = f64::from(s.cores.line_bytes);
    let mut mcs = Vec::new();
    for k in 0..cx.sockets {
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
                    node: numa.node_of(k, st),
                    queue_depth: p.queue_depth,
                });
            }
        }
    }
    mcs
}

/// The CPU nodes, socket by socket: their cores, slices and main-memory controllers
/// (the socket's nearest ones when none sits in the node's region).
fn cpu_nodes(
    cx: &Ctx,
    geo: &Geometry,
    local_nodes: u32,
    cores: &[CoreInfo],
    slices: &[SliceInfo],
    mcs: &[McInfo],
    main_pool: usize,
) -> Result<Vec<NodeInfo>, ModelError> {
    let (s, what) = (cx.s, cx.what);
    let mut nodes: Vec<NodeInfo> = Vec::new();
    for k in 0..cx.sockets {
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
                .filter(|&m| mcs[m].pool == main_pool && mcs[m].node == id)
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
    Ok(nodes)
}

/// Appends the memory-only nodes: per own-node pool, socket and CPU node, the pool's
/// controllers in that node's region (homed at the CPU node's slices).
fn add_memory_only_nodes(
    nodes: &mut Vec<NodeInfo>,
    pools: &[PoolInfo],
    mcs: &[McInfo],
    sockets: u32,
    local_nodes: u32,
) {
    for (pi, p) in pools.iter().enumerate() {
        if p.role != PoolRole::OwnNode {
            continue;
        }
        for k in 0..sockets {
            for g in 0..local_nodes {
                let cpu_node = k * local_nodes + g;
                let own: Vec<usize> = (0..mcs.len())
                    .filter(|&m| mcs[m].pool == pi && mcs[m].node == cpu_node)
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
}

/// Memory sizes: a controller's share of its pool, split among the nodes it serves.
fn size_node_memory(nodes: &mut [NodeInfo], pools: &[PoolInfo], mcs: &[McInfo]) {
    let mut served = vec![0u32; mcs.len()];
    for nd in nodes.iter() {
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
    for nd in nodes.iter_mut() {
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
}

/// Regions for mc-region homing (`slc.region_split`): the slices of each region, by
/// socket.
fn region_slices(
    cx: &Ctx,
    geo: &Geometry,
    slices: &[SliceInfo],
) -> Result<Vec<Vec<Vec<usize>>>, ModelError> {
    let (s, n, what) = (cx.s, cx.n, cx.what);
    match (s.slc.home_group, s.slc.region_split) {
        (HomeGroup::McRegion, None) => Err(bad(
            what,
            "slc.home_group = \"mc-region\" needs slc.region_split = [columns, rows]",
        )),
        (_, Some([rx, ry])) if rx == 0 || ry == 0 || rx > n.cols || ry > n.rows => Err(bad(
            what,
            format!(
                "slc.region_split = [{rx}, {ry}] does not divide a {} x {} mesh",
                n.cols, n.rows
            ),
        )),
        (_, split) => {
            let [rx, ry] = split.unwrap_or([1, 1]);
            let mut v = vec![vec![Vec::new(); (rx * ry) as usize]; cx.sockets as usize];
            for (i, sl) in slices.iter().enumerate() {
                let (k, x, y) = geo.coords(sl.stop);
                v[k as usize][((y * ry / n.rows) * rx + x * rx / n.cols) as usize].push(i);
            }
            if s.slc.home_group == HomeGroup::McRegion && v.iter().flatten().any(|r| r.is_empty()) {
                return Err(bad(what, "slc.region_split leaves a region without slices"));
            }
            Ok(v)
        }
    }
}

/// The socket link of two sockets: cycles per flit, the gateway stop and the link's
/// cycles (none with one socket).
fn socket_link(cx: &Ctx) -> Result<(f64, Option<u32>, u32), ModelError> {
    let (n, what) = (cx.n, cx.what);
    let clock = n.clock_ghz;
    match &cx.s.socket {
        Some(k) if k.count == 2 => {
            cx.inside(k.gateway, "socket.gateway")?;
            if !positive(k.link_gbps) || !not_negative(k.link_latency_ns) {
                return Err(bad(
                    what,
                    "socket.link_gbps must be positive and socket.link_latency_ns not negative",
                ));
            }
            Ok((
                f64::from(n.link_bytes) * clock / k.link_gbps,
                Some(k.gateway[1] * n.cols + k.gateway[0]),
                (k.link_latency_ns * clock).round() as u32,
            ))
        }
        _ => Ok((0.0, None, 0)),
    }
}
