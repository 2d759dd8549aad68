//! What the model says for each kind of figure, and for latencies how the value splits
//! into terms linear in the free parameters: mesh hops (each costs `router_cycles` plus
//! its link), home lookups, socket-link crossings and memory reads per pool. The value
//! itself comes from the model's own functions ([`latency::memory_read_cycles`],
//! [`latency::core_to_core_matrix`], [`analytic::app`]); the counts say how it moves
//! when a parameter does.

use crate::analytic;
use crate::latency::{self, Placement};
use crate::model::Model;
use crate::traffic::{App, Data, Op};

/// Lines of a node's memory a latency figure averages over (homes and controllers
/// follow the line address).
pub const LINES: u64 = 1024;

/// A latency figure of the model and its linear terms (means over the cores and lines
/// the figure covers).
#[derive(Debug, Clone, PartialEq)]
pub struct Terms {
    /// The model's value, ns.
    pub ns: f64,
    /// Mesh hops (each pays `noc.router_cycles`).
    pub hops: f64,
    /// Home lookups (each pays `slc.lookup_cycles`).
    pub lookups: f64,
    /// Socket-link crossings (each pays `socket.link_latency_ns`).
    pub crossings: f64,
    /// Memory reads served by each pool (each pays its `latency_ns`).
    pub pool_reads: Vec<f64>,
}

impl Terms {
    /// Nothing yet but the one home lookup every latency figure pays.
    fn one_lookup(model: &Model) -> Terms {
        Terms {
            ns: 0.0,
            hops: 0.0,
            lookups: 1.0,
            crossings: 0.0,
            pool_reads: vec![0.0; model.pools.len()],
        }
    }
}

fn hops_and_crossings(model: &Model, a: u32, b: u32) -> (f64, f64) {
    let (links, crossings) = model.geo.route(a, b);
    (links.len() as f64, f64::from(crossings))
}

/// Idle latency of a read by the cores of `cpu_node` from memory of `mem_node`: the
/// mean over those cores and [`LINES`] lines. None if the node has no cores.
pub fn mem_latency(model: &Model, cpu_node: u32, mem_node: u32) -> Option<Terms> {
    let cores = &model.nodes.get(cpu_node as usize)?.cores;
    model.nodes.get(mem_node as usize)?;
    if cores.is_empty() {
        return None;
    }
    let mut t = Terms::one_lookup(model);
    let locs: Vec<_> = (0..LINES).map(|l| model.locate(mem_node, l)).collect();
    let n = (cores.len() * locs.len()) as f64;
    for &c in cores {
        let cs = model.cores[c].stop;
        for loc in &locs {
            let home = model.slices[loc.home].stop;
            let mc = model.mcs[loc.mc].stop;
            t.ns += latency::memory_read_cycles(model, cs, home, loc.mc) / n;
            for (a, b) in [(cs, home), (home, mc), (mc, cs)] {
                let (h, x) = hops_and_crossings(model, a, b);
                t.hops += h / n;
                t.crossings += x / n;
            }
            t.pool_reads[model.mcs[loc.mc].pool] += 1.0 / n;
        }
    }
    t.ns = model.ns(t.ns);
    Some(t)
}

/// Core-to-core latency between the cores of nodes `a` and `b`: the mean over every
/// pair of distinct cores, the line homed with its owner. None if a node has no cores
/// or the pair has no two distinct cores.
pub fn c2c(model: &Model, a: u32, b: u32) -> Option<Terms> {
    let ca = &model.nodes.get(a as usize)?.cores;
    let cb = &model.nodes.get(b as usize)?.cores;
    let cores: Vec<usize> = ca.iter().chain(cb.iter()).copied().collect();
    let p = Placement {
        cores: cores.iter().map(|&c| model.cores[c].stop).collect(),
        targets: Vec::new(),
    };
    let m = latency::core_to_core_matrix(model, &p, None);
    let mut t = Terms::one_lookup(model);
    let mut n = 0usize;
    for (i, &x) in ca.iter().enumerate() {
        for (jj, &y) in cb.iter().enumerate() {
            if x == y {
                continue;
            }
            let j = ca.len() + jj;
            let (si, sj) = (p.cores[i], p.cores[j]);
            t.ns += m[i][j];
            // REQ i -> home (with j), SNP home -> j (no hop), DAT j -> i.
            for (u, v) in [(si, sj), (sj, si)] {
                let (h, c) = hops_and_crossings(model, u, v);
                t.hops += h;
                t.crossings += c;
            }
            n += 1;
        }
    }
    if n == 0 {
        return None;
    }
    let n = n as f64;
    t.ns = model.ns(t.ns / n);
    t.hops /= n;
    t.crossings /= n;
    Some(t)
}

/// Bandwidth (bytes moved, GB/s) of `threads` cores of `node` streaming over its own
/// memory with `reads` line reads and `writes` line writes per step, from the analytic
/// engine (no SLC hits: the arrays are far larger than the cache).
pub fn bandwidth(model: &Model, node: u32, threads: usize, reads: usize, writes: usize) -> f64 {
    let Some(nd) = model.nodes.get(node as usize) else {
        return f64::NAN;
    };
    let cores: Vec<usize> = nd.cores.iter().copied().take(threads.max(1)).collect();
    if cores.is_empty() || reads + writes == 0 {
        return f64::NAN;
    }
    let mut mix = vec![Op::Read; reads];
    mix.extend(std::iter::repeat_n(Op::Write, writes));
    let app = App {
        cores,
        data: Data::Node { node },
        mix,
        slc_hit: 0.0,
        msc_hit: 0.0,
        snoop: 0.0,
        outstanding: model.spec.cores.max_outstanding,
        think_cycles: 0,
    };
    let f = analytic::app(model, &app);
    f.requests_per_cycle * f64::from(model.line_bytes()) * model.spec.noc.clock_ghz
}
