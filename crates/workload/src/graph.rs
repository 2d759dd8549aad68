//! The synthetic road network every request reads.
//!
//! A real routing engine answers requests over a road graph of millions of nodes that
//! no cache holds; that shared, read-mostly data is what makes such engines sensitive to
//! NUMA placement. We cannot ship a real map, so the network is generated from a seed and
//! a node count, deterministically (the same seed and size give the same bytes on every
//! machine, checked by [`OwnedGraph::fingerprint`]), in seconds:
//!
//! - intersections on a grid with 100 m spacing, each moved by up to 25 m;
//! - a random spanning tree of the grid (so the network is connected), plus 45% of the
//!   other grid streets and a few diagonal shortcuts: dead ends, bends, T and X
//!   junctions, mean degree about 3, like the intersection graph of a real city;
//! - a road hierarchy: residential streets (30-50 km/h), an arterial every 8th line
//!   (60-70 km/h), and highways every 16-64 lines with interchanges every 800 m
//!   (110 km/h express edges in parallel with the local road);
//! - edge weights are travel times in milliseconds: length (straight line times a
//!   curvature factor of 1.0-1.3) divided by speed.
//!
//! Streets are two-way (the graph is undirected; each edge is stored in both
//! directions). The graph is kept in compressed sparse row form: `offsets` (n + 1
//! entries) and `adj`, pairs `[target, weight_ms]` so that one cache line holds a node's
//! whole neighbourhood. Only integer and correctly rounded float operations (no `ln`,
//! `sin`) are used, so the bytes do not depend on the platform's libm.

use crate::WorkloadError;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Smallest graph accepted.
pub const MIN_NODES: u32 = 16;
/// Largest graph accepted (u32 node ids and edge offsets).
pub const MAX_NODES: u32 = 500_000_000;
/// Default size: about 2 million intersections (about 55 MB of graph).
pub const DEFAULT_NODES: u32 = 2_000_000;

/// A node count as people write it: digits with optional `_` separators and an optional
/// `k`/`K` (thousand) or `m`/`M` (million) suffix, fractions allowed before a suffix
/// (`1.5M`), rounded to the nearest node; an error, in words, when it is not a number or
/// does not fit a `u32`.
pub fn parse_node_count(text: &str) -> Result<u32, String> {
    let t = text.trim().replace('_', "");
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000u64),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000u64),
        _ => (t.as_str(), 1u64),
    };
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{text:?} is not a node count (e.g. 2000000, 2M, 500k)"))?;
    let n = value * mult as f64;
    if !(n.is_finite() && n >= 0.0 && n <= u32::MAX as f64) {
        return Err(format!("{text:?} is out of range"));
    }
    Ok(n.round() as u32)
}

/// Grid spacing between intersections, metres.
pub const GRID_SPACING_M: f32 = 100.0;
const JITTER_M: f32 = 25.0;
/// Share of non-tree grid streets kept.
const KEEP_EXTRA: f64 = 0.45;
/// Chance of a diagonal shortcut from each intersection.
const DIAGONAL: f64 = 0.03;
/// An arterial road every this many grid lines.
const ARTERIAL_EVERY: u32 = 8;
/// Highway interchanges every this many intersections along a highway line.
const INTERCHANGE_EVERY: u32 = 8;
/// Highway speed, km/h.
pub const HIGHWAY_KMH: f32 = 110.0;

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphSpec {
    /// Random seed.
    pub seed: u64,
    /// Number of intersections (nodes).
    pub nodes: u32,
}

impl GraphSpec {
    /// Checks the size.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.nodes < MIN_NODES || self.nodes > MAX_NODES {
            return Err(WorkloadError::Usage(format!(
                "--graph-nodes {}: the road network needs between {MIN_NODES} and {MAX_NODES} nodes (default {DEFAULT_NODES})",
                self.nodes
            )));
        }
        Ok(())
    }

    /// Grid width (intersections per row): ceil(sqrt(nodes)).
    pub fn width(&self) -> u32 {
        let mut w = (self.nodes as f64).sqrt() as u32;
        while (w as u64) * (w as u64) < self.nodes as u64 {
            w += 1;
        }
        w.max(1)
    }

    /// Grid height (rows; the last one may be partial).
    pub fn height(&self) -> u32 {
        self.nodes.div_ceil(self.width())
    }

    /// Highway spacing in grid lines for this size.
    pub fn highway_every(&self) -> u32 {
        (self.width() / 8).clamp(16, 64)
    }
}

/// A read-only view of a graph in CSR form, wherever its arrays live (a `Vec` or a
/// NUMA-placed region).
#[derive(Debug, Clone, Copy)]
pub struct GraphRef<'a> {
    width: u32,
    nodes: u32,
    offsets: &'a [u32],
    adj: &'a [u32],
}

impl<'a> GraphRef<'a> {
    /// A view over CSR arrays. `offsets` has `nodes + 1` entries counting directed edges;
    /// `adj` holds `2 * offsets[nodes]` words (target, weight pairs).
    pub fn new(width: u32, offsets: &'a [u32], adj: &'a [u32]) -> Self {
        assert!(!offsets.is_empty(), "CSR offsets hold at least one entry");
        let nodes = (offsets.len() - 1) as u32;
        let edges = offsets[nodes as usize] as usize;
        assert!(
            adj.len() >= 2 * edges,
            "CSR adjacency shorter than its offsets"
        );
        GraphRef {
            width,
            nodes,
            offsets,
            adj: &adj[..2 * edges],
        }
    }

    /// Number of nodes.
    #[inline]
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// Grid width.
    #[inline]
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Grid height.
    pub fn height(&self) -> u32 {
        self.nodes.div_ceil(self.width)
    }

    /// Directed edges (twice the streets).
    pub fn directed_edges(&self) -> u32 {
        self.offsets[self.nodes as usize]
    }

    /// The neighbourhood of `u` as `[target, weight_ms, target, weight_ms, ...]`;
    /// iterate with `.chunks_exact(2)`.
    #[inline]
    pub fn edges(&self, u: u32) -> &'a [u32] {
        let a = self.offsets[u as usize] as usize * 2;
        let b = self.offsets[u as usize + 1] as usize * 2;
        &self.adj[a..b]
    }

    /// Number of neighbours of `u`.
    #[inline]
    pub fn degree(&self, u: u32) -> u32 {
        self.offsets[u as usize + 1] - self.offsets[u as usize]
    }

    /// Grid position of a node.
    #[inline]
    pub fn xy(&self, u: u32) -> (u32, u32) {
        (u % self.width, u / self.width)
    }

    /// The node at a grid position, if it exists (the last row may be partial).
    #[inline]
    pub fn node_at(&self, x: u32, y: u32) -> Option<u32> {
        if x >= self.width {
            return None;
        }
        let id = y as u64 * self.width as u64 + x as u64;
        (id < self.nodes as u64).then_some(id as u32)
    }

    /// The offsets array.
    pub fn offsets(&self) -> &'a [u32] {
        self.offsets
    }

    /// The adjacency array.
    pub fn adj(&self) -> &'a [u32] {
        self.adj
    }

    /// Bytes of the two arrays.
    pub fn bytes(&self) -> u64 {
        (self.offsets.len() as u64 + self.adj.len() as u64) * 4
    }

    /// FNV-1a hash of the arrays: equal graphs have equal fingerprints on any machine.
    pub fn fingerprint(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &word in self.offsets.iter().chain(self.adj.iter()) {
            for b in word.to_le_bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }
}

/// A generated graph held in ordinary vectors (before it is placed).
#[derive(Debug, Clone)]
pub struct OwnedGraph {
    /// What was generated.
    pub spec: GraphSpec,
    /// Grid width.
    pub width: u32,
    /// CSR offsets (n + 1), in directed edges.
    pub offsets: Vec<u32>,
    /// CSR adjacency, `[target, weight_ms]` pairs.
    pub adj: Vec<u32>,
}

impl OwnedGraph {
    /// A view.
    pub fn view(&self) -> GraphRef<'_> {
        GraphRef::new(self.width, &self.offsets, &self.adj)
    }

    /// Bytes of the CSR arrays.
    pub fn bytes(&self) -> u64 {
        self.view().bytes()
    }

    /// See [`GraphRef::fingerprint`].
    pub fn fingerprint(&self) -> u64 {
        self.view().fingerprint()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Line {
    Residential,
    Arterial,
    Highway,
}

fn line_class(i: u32, highway_every: u32) -> Line {
    if i % highway_every == highway_every / 2 {
        Line::Highway
    } else if i % ARTERIAL_EVERY == ARTERIAL_EVERY / 2 {
        Line::Arterial
    } else {
        Line::Residential
    }
}

fn local_speed_kmh(class: Line, rng: &mut ChaCha8Rng) -> f32 {
    match class {
        Line::Residential => match rng.random_range(0..10u32) {
            0..=4 => 30.0,
            5..=7 => 40.0,
            _ => 50.0,
        },
        // The local road along a highway or an arterial.
        Line::Arterial | Line::Highway => {
            if rng.random_bool(0.5) {
                60.0
            } else {
                70.0
            }
        }
    }
}

/// Travel time in ms for a length in metres at a speed in km/h (at least 1 ms).
fn travel_ms(length_m: f32, speed_kmh: f32) -> u32 {
    ((length_m * 3600.0 / speed_kmh).round() as u32).max(1)
}

/// Generates the road network for a spec (deterministic).
pub fn generate(spec: &GraphSpec) -> Result<OwnedGraph, WorkloadError> {
    spec.validate()?;
    let n = spec.nodes;
    let w = spec.width();
    let h = spec.height();
    let hw_every = spec.highway_every();
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);

    // Jittered positions.
    let mut px = Vec::with_capacity(n as usize);
    let mut py = Vec::with_capacity(n as usize);
    for i in 0..n {
        let (x, y) = (i % w, i / w);
        px.push(x as f32 * GRID_SPACING_M + rng.random_range(-JITTER_M..JITTER_M));
        py.push(y as f32 * GRID_SPACING_M + rng.random_range(-JITTER_M..JITTER_M));
    }
    let dist = |a: u32, b: u32| -> f32 {
        let dx = px[a as usize] - px[b as usize];
        let dy = py[a as usize] - py[b as usize];
        (dx * dx + dy * dy).sqrt()
    };

    // Random spanning tree: every node but 0 links to its north or west neighbour
    // ("binary tree" maze); true = north.
    let mut tree_north = vec![false; n as usize];
    for i in 1..n {
        let (x, y) = (i % w, i / w);
        tree_north[i as usize] = match (x > 0, y > 0) {
            (true, true) => rng.random_bool(0.5),
            (false, true) => true,
            _ => false,
        };
    }

    let mut edges: Vec<(u32, u32, u32)> =
        Vec::with_capacity((n as usize) * 3 / 2 + (n as usize) / 64 + 16);
    for i in 0..n {
        let (x, y) = (i % w, i / w);
        // East: (i, i+1) on row y.
        if x + 1 < w && i + 1 < n {
            let j = i + 1;
            if !tree_north[j as usize] || rng.random_bool(KEEP_EXTRA) {
                let speed = local_speed_kmh(line_class(y, hw_every), &mut rng);
                let curve = 1.0 + rng.random_range(0.0f32..0.3);
                edges.push((i, j, travel_ms(dist(i, j) * curve, speed)));
            }
        }
        // South: (i, i+w) on column x.
        if (i as u64 + w as u64) < n as u64 {
            let j = i + w;
            if tree_north[j as usize] || rng.random_bool(KEEP_EXTRA) {
                let speed = local_speed_kmh(line_class(x, hw_every), &mut rng);
                let curve = 1.0 + rng.random_range(0.0f32..0.3);
                edges.push((i, j, travel_ms(dist(i, j) * curve, speed)));
            }
        }
        // A diagonal shortcut.
        if x + 1 < w && (i as u64 + w as u64 + 1) < n as u64 && rng.random_bool(DIAGONAL) {
            let j = i + w + 1;
            let curve = 1.0 + rng.random_range(0.0f32..0.3);
            edges.push((i, j, travel_ms(dist(i, j) * curve, 30.0)));
        }
    }
    // Highways: express edges between interchanges along highway rows and columns.
    let s = INTERCHANGE_EVERY;
    let mut y = hw_every / 2;
    while y < h {
        let mut x = 0;
        while x + s < w {
            let a = y * w + x;
            let b = a + s;
            if b < n {
                edges.push((a, b, travel_ms(dist(a, b) * 1.02, HIGHWAY_KMH)));
            }
            x += s;
        }
        y += hw_every;
    }
    let mut x = hw_every / 2;
    while x < w {
        let mut y = 0;
        while y + s < h {
            let a = y * w + x;
            let b = a as u64 + (s * w) as u64;
            if b < n as u64 {
                let b = b as u32;
                edges.push((a, b, travel_ms(dist(a, b) * 1.02, HIGHWAY_KMH)));
            }
            y += s;
        }
        x += hw_every;
    }
    drop(px);
    drop(py);
    drop(tree_north);

    // CSR, both directions.
    let mut offsets = vec![0u32; n as usize + 1];
    for &(a, b, _) in &edges {
        offsets[a as usize + 1] += 1;
        offsets[b as usize + 1] += 1;
    }
    for i in 0..n as usize {
        offsets[i + 1] += offsets[i];
    }
    let directed = offsets[n as usize] as usize;
    let mut adj = vec![0u32; 2 * directed];
    let mut cursor: Vec<u32> = offsets[..n as usize].to_vec();
    for &(a, b, wt) in &edges {
        for (from, to) in [(a, b), (b, a)] {
            let p = cursor[from as usize] as usize;
            adj[2 * p] = to;
            adj[2 * p + 1] = wt;
            cursor[from as usize] += 1;
        }
    }
    Ok(OwnedGraph {
        spec: *spec,
        width: w,
        offsets,
        adj,
    })
}

/// Shape statistics of a graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphStats {
    /// Nodes.
    pub nodes: u32,
    /// Streets (undirected edges).
    pub edges: u64,
    /// Mean number of neighbours.
    pub mean_degree: f64,
    /// Nodes by degree: `degree_histogram[d]` = nodes with d neighbours.
    pub degree_histogram: Vec<u64>,
    /// Smallest edge weight, ms.
    pub weight_min_ms: u32,
    /// Median edge weight, ms.
    pub weight_median_ms: u32,
    /// Largest edge weight, ms.
    pub weight_max_ms: u32,
    /// Connected components (None when not computed).
    pub components: Option<u32>,
}

impl GraphStats {
    /// Computes the statistics; `components` needs a full traversal and an n-byte
    /// scratch array, so it is optional.
    pub fn of(g: &GraphRef<'_>, components: bool) -> GraphStats {
        let n = g.nodes();
        let mut hist = Vec::new();
        for u in 0..n {
            let d = g.degree(u) as usize;
            if hist.len() <= d {
                hist.resize(d + 1, 0u64);
            }
            hist[d] += 1;
        }
        // Weight distribution from a histogram (weights are ms; cap the bins).
        let mut wmin = u32::MAX;
        let mut wmax = 0;
        let mut whist = vec![0u64; 1 << 16];
        for pair in g.adj().chunks_exact(2) {
            let wt = pair[1];
            wmin = wmin.min(wt);
            wmax = wmax.max(wt);
            let bins = whist.len();
            whist[(wt as usize).min(bins - 1)] += 1;
        }
        let total: u64 = whist.iter().sum();
        let mut acc = 0;
        let mut median = 0;
        for (i, c) in whist.iter().enumerate() {
            acc += c;
            if acc * 2 >= total && total > 0 {
                median = i as u32;
                break;
            }
        }
        let components = components.then(|| count_components(g));
        GraphStats {
            nodes: n,
            edges: g.directed_edges() as u64 / 2,
            mean_degree: g.directed_edges() as f64 / n as f64,
            degree_histogram: hist,
            weight_min_ms: if total == 0 { 0 } else { wmin },
            weight_median_ms: median,
            weight_max_ms: wmax,
            components,
        }
    }
}

fn count_components(g: &GraphRef<'_>) -> u32 {
    let n = g.nodes() as usize;
    let mut seen = vec![false; n];
    let mut stack = Vec::new();
    let mut comps = 0;
    for s in 0..n {
        if seen[s] {
            continue;
        }
        comps += 1;
        seen[s] = true;
        stack.push(s as u32);
        while let Some(u) = stack.pop() {
            for e in g.edges(u).chunks_exact(2) {
                let v = e[0] as usize;
                if !seen[v] {
                    seen[v] = true;
                    stack.push(e[0]);
                }
            }
        }
    }
    comps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_counts_take_suffixes_separators_and_fractions() {
        assert_eq!(parse_node_count(" 4M "), Ok(4_000_000));
        assert_eq!(parse_node_count("2.5k"), Ok(2_500));
        assert_eq!(parse_node_count("1_000_000"), Ok(1_000_000));
        assert_eq!(parse_node_count("12"), Ok(12));
        assert_eq!(
            parse_node_count("lots"),
            Err("\"lots\" is not a node count (e.g. 2000000, 2M, 500k)".into())
        );
        assert_eq!(
            parse_node_count("5000M"),
            Err("\"5000M\" is out of range".into())
        );
        assert!(parse_node_count("-1").is_err());
        // As `numalab workload run --graph-nodes` takes them.
        assert_eq!(parse_node_count("2000000"), Ok(2_000_000));
        assert_eq!(parse_node_count("1.5m"), Ok(1_500_000));
        assert_eq!(parse_node_count("500k"), Ok(500_000));
        assert!(parse_node_count("9000M").is_err());
    }

    #[test]
    fn sizes() {
        let s = GraphSpec { seed: 1, nodes: 10 };
        assert_eq!((s.width(), s.height()), (4, 3));
        let s = GraphSpec {
            seed: 1,
            nodes: 1_000_000,
        };
        assert_eq!((s.width(), s.height()), (1000, 1000));
        assert!(GraphSpec { seed: 1, nodes: 3 }.validate().is_err());
    }

    #[test]
    fn partial_last_row_is_connected() {
        let g = generate(&GraphSpec {
            seed: 9,
            nodes: 103,
        })
        .unwrap();
        let st = GraphStats::of(&g.view(), true);
        assert_eq!(st.nodes, 103);
        assert_eq!(st.components, Some(1));
        assert_eq!(g.view().node_at(4, 9), None);
        assert_eq!(g.view().node_at(3, 9), Some(102));
    }

    #[test]
    fn edges_are_symmetric() {
        let g = generate(&GraphSpec {
            seed: 4,
            nodes: 2000,
        })
        .unwrap();
        let v = g.view();
        for u in 0..v.nodes() {
            for e in v.edges(u).chunks_exact(2) {
                let back = v
                    .edges(e[0])
                    .chunks_exact(2)
                    .any(|f| f[0] == u && f[1] == e[1]);
                assert!(back, "edge {u}->{} has no reverse", e[0]);
            }
        }
    }
}
