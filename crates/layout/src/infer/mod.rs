//! Floorplan inference (experiments.md C2): where on the mesh each core (and each target:
//! directory slice, memory controller) sits, from measured latencies alone.
//!
//! Why: OS core numbers and directory numbers do not say where a tile sits, and which
//! tiles are disabled differs from chip to chip. A latency matrix does: the time between
//! two cores, or from a core to a line homed at a slice, grows with the hops between them.
//!
//! # Method
//!
//! The model of an observation between stops a and b is linear (see [`crate::grid`]):
//! `latency = base + same_stop [a == b] + sum_k cost_k links_k(a, b)`. For a candidate
//! placement its constants are solved by least squares ([`crate::fit`]) and the placement
//! is scored by the squared error they leave. The placement with the least squared error
//! is searched for by simulated annealing on the logarithm of that error (scale-free: the
//! same schedule works for 2 ns and 200 ns matrices), from random starts with seeded
//! restarts, each ended by a best-improvement local search over every single move.
//!
//! Moves relocate one unit (a core, or cores known to share a tile, or a target) to another
//! allowed stop, sending units already there back to the freed stop when the stop is full.
//! A move changes only the observations of the moved units, so its cost is O(n) updates of
//! the sufficient statistics plus a solve of at most 6 unknowns.
//!
//! Confidence of a unit: at the final placement, the best alternative stop for it (every
//! other stop tried) and how much the squared error grows there, `delta`. With the residual
//! variance `sigma^2` (floored at 0.1% of the median latency, the resolution), the
//! probability that the chosen stop rather than the alternative is right, for Gaussian
//! noise and equal priors, is `1 / (1 + exp(-delta / (2 sigma^2)))`.
//!
//! A placement is only defined up to the symmetries of the mesh that keep every pair's
//! features (mirror images; rotations on a square mesh with equal hop costs): restarts are
//! compared modulo those, and so is a ground truth.

mod anneal;

use anneal::*;

use crate::error::LayoutError;
use crate::fit::{Acc, Solution};
use crate::grid::{Grid, Symmetry};
use numalab_c2c::LatencyMatrix;
use numalab_model::geometry::StopId;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use numalab_records::layout::{Kind, Restart};

/// One measured latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Obs {
    /// Core (position in `cpus`).
    pub a: u32,
    /// Core (core-to-core) or target (core-to-target), by position.
    pub b: u32,
    /// Latency, ns.
    pub y: f64,
}

/// A measured matrix, as observations.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// What it relates.
    pub kind: Kind,
    /// CPU ids (OS indices) of the rows.
    pub cpus: Vec<u32>,
    /// Target names (columns) of a core-to-target matrix.
    pub targets: Vec<String>,
    /// The observations (each unordered core pair once).
    pub obs: Vec<Obs>,
}

impl Measured {
    /// Observations of a core-to-core matrix: every measured pair, once. Cells that are
    /// not positive finite numbers are left out.
    pub fn from_c2c(m: &LatencyMatrix) -> Measured {
        let mut obs = Vec::new();
        for i in 0..m.n() {
            for j in 0..i {
                if let Some(y) = m.get(i, j).filter(|v| v.is_finite() && *v > 0.0) {
                    obs.push(Obs {
                        a: i as u32,
                        b: j as u32,
                        y,
                    });
                }
            }
        }
        Measured {
            kind: Kind::CoreToCore,
            cpus: m.cpus().to_vec(),
            targets: Vec::new(),
            obs,
        }
    }

    /// Observations of a core x target matrix (`rows[i][j]`: core i to target j).
    pub fn from_targets(
        cpus: Vec<u32>,
        targets: Vec<String>,
        rows: &[Vec<Option<f64>>],
    ) -> Measured {
        let mut obs = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            for (j, v) in r.iter().enumerate() {
                if let Some(y) = v.filter(|v| v.is_finite() && *v > 0.0) {
                    obs.push(Obs {
                        a: i as u32,
                        b: j as u32,
                        y,
                    });
                }
            }
        }
        Measured {
            kind: Kind::CoreToTarget,
            cpus,
            targets,
            obs,
        }
    }

    /// Median latency, ns.
    pub fn median(&self) -> f64 {
        let v: Vec<f64> = self.obs.iter().map(|o| o.y).collect();
        numalab_stats::median(&v).unwrap_or(0.0)
    }
}

/// Search settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Seed of the first restart (restart r uses a seed derived from it and r).
    pub seed: u64,
    /// Restarts from random placements.
    pub restarts: usize,
    /// Annealing moves per unit and restart.
    pub sweeps: usize,
    /// Threads running restarts (results do not depend on it).
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: 1,
            restarts: 8,
            sweeps: 400,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// How sure the search is of one unit's stop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Margin {
    /// The best other stop for the unit.
    pub alternative: Option<StopId>,
    /// Growth of the squared error there, ns^2.
    pub delta_sse: f64,
    /// Probability that the chosen stop, rather than the alternative, is right.
    pub confidence: f64,
}

/// The inferred placement.
#[derive(Debug, Clone, PartialEq)]
pub struct Inference {
    /// Stop of each core (by position in `Measured::cpus`).
    pub core_stop: Vec<StopId>,
    /// Stop of each target.
    pub target_stop: Vec<StopId>,
    /// Fitted constants and squared error.
    pub solution: Solution,
    /// Per core.
    pub core_margin: Vec<Margin>,
    /// Per target.
    pub target_margin: Vec<Margin>,
    /// Residual standard deviation, ns (unfloored).
    pub sigma_ns: f64,
    /// Every restart.
    pub restarts: Vec<Restart>,
    /// The symmetries placements are compared modulo.
    pub symmetries: Vec<Symmetry>,
    /// Stopped early by Ctrl-C (fewer restarts than asked).
    pub interrupted: bool,
}

/// A prepared problem: grid, observations, units; validated before any search.
pub struct Problem<'a> {
    grid: &'a Grid,
    m: &'a Measured,
    /// Core units then target units; members are core or target positions.
    units: Vec<Vec<u32>>,
    core_units: usize,
    unit_of_core: Vec<u32>,
    obs_of_unit: Vec<Vec<u32>>,
    /// Units at the two ends of each observation.
    ends: Vec<(u32, u32)>,
    /// Observations minus their mean.
    yc: Vec<f64>,
    core_stops: Vec<StopId>,
    target_stops: Vec<StopId>,
    /// Mean latency (observations are centred on it).
    offset: f64,
    /// Variance floor (resolution), ns^2.
    floor: f64,
}

impl<'a> Problem<'a> {
    /// Checks the sizes and constraints. `tiles` lists groups of cores (positions) that
    /// share a stop; other cores are free. Errors say what does not fit.
    pub fn new(
        grid: &'a Grid,
        m: &'a Measured,
        tiles: &[Vec<u32>],
    ) -> Result<Problem<'a>, LayoutError> {
        let n = m.cpus.len();
        if n == 0 {
            return Err(LayoutError::input("matrix", "has no CPUs"));
        }
        let room = grid.core_room();
        if n > room {
            return Err(LayoutError::Usage(format!(
                "the matrix has {n} CPUs but the {} x {} mesh has room for {room} ({} tiles that may hold cores x {} per tile): give a larger geometry, more cores per tile, or fewer disabled tiles",
                grid.geo.rows,
                grid.geo.cols,
                grid.core_stops().len(),
                grid.capacity
            )));
        }
        let t = m.targets.len();
        if m.kind == Kind::CoreToTarget && t > grid.target_stops().len() {
            return Err(LayoutError::Usage(format!(
                "the matrix has {t} targets but the mesh has {} stops that may hold one",
                grid.target_stops().len()
            )));
        }
        let mut unit_of_core = vec![u32::MAX; n];
        let mut units: Vec<Vec<u32>> = Vec::new();
        for g in tiles {
            if g.len() > grid.capacity as usize {
                return Err(LayoutError::Usage(format!(
                    "{} cores must share a tile but a tile holds {}: raise the cores per tile or drop the tile constraint",
                    g.len(),
                    grid.capacity
                )));
            }
            for &c in g {
                if c as usize >= n || unit_of_core[c as usize] != u32::MAX {
                    return Err(LayoutError::Usage(format!(
                        "tile groups: core position {c} is outside the matrix or in two groups"
                    )));
                }
                unit_of_core[c as usize] = units.len() as u32;
            }
            if !g.is_empty() {
                units.push(g.clone());
            }
        }
        for (c, u) in unit_of_core.iter_mut().enumerate() {
            if *u == u32::MAX {
                *u = units.len() as u32;
                units.push(vec![c as u32]);
            }
        }
        let core_units = units.len();
        let big = units.iter().filter(|u| u.len() > 1).count();
        let tiles_free = grid.core_stops().len();
        if grid.capacity > 1 && big > tiles_free {
            return Err(LayoutError::Usage(format!(
                "{big} groups of cores must each share a tile but only {tiles_free} tiles may hold cores"
            )));
        }
        let targets = if m.kind == Kind::CoreToTarget { t } else { 0 };
        for j in 0..targets {
            units.push(vec![j as u32]);
        }
        let mut obs_of_unit: Vec<Vec<u32>> = vec![Vec::new(); units.len()];
        let mut ends = Vec::with_capacity(m.obs.len());
        let mut seen_core = vec![false; n];
        for (k, o) in m.obs.iter().enumerate() {
            if o.a as usize >= n
                || (m.kind == Kind::CoreToCore && o.b as usize >= n)
                || (m.kind == Kind::CoreToTarget && o.b as usize >= targets)
            {
                return Err(LayoutError::input(
                    "matrix",
                    "an observation names a CPU or target outside the matrix",
                ));
            }
            let ua = unit_of_core[o.a as usize] as usize;
            let ub = match m.kind {
                Kind::CoreToCore => unit_of_core[o.b as usize] as usize,
                Kind::CoreToTarget => core_units + o.b as usize,
            };
            ends.push((ua as u32, ub as u32));
            obs_of_unit[ua].push(k as u32);
            if ub != ua {
                obs_of_unit[ub].push(k as u32);
            }
            seen_core[o.a as usize] = true;
            if m.kind == Kind::CoreToCore {
                seen_core[o.b as usize] = true;
            }
        }
        if let Some(c) = seen_core.iter().position(|s| !s) {
            return Err(LayoutError::input(
                "matrix",
                format!("CPU {} has no measured latency: its position cannot be inferred; measure its pairs or leave it out", m.cpus[c]),
            ));
        }
        if m.obs.len() < grid.feature_count() + 2 {
            return Err(LayoutError::input(
                "matrix",
                format!(
                    "{} measured latencies are too few to fit {} constants",
                    m.obs.len(),
                    grid.feature_count() + 1
                ),
            ));
        }
        let offset = m.obs.iter().map(|o| o.y).sum::<f64>() / m.obs.len() as f64;
        let floor = (1e-3 * m.median()).powi(2).max(1e-12);
        let yc = m.obs.iter().map(|o| o.y - offset).collect();
        Ok(Problem {
            ends,
            yc,
            grid,
            m,
            units,
            core_units,
            unit_of_core,
            obs_of_unit,
            core_stops: grid.core_stops(),
            target_stops: grid.target_stops(),
            offset,
            floor,
        })
    }

    /// Units that must share a tile (more than one core).
    pub fn tile_groups(&self) -> usize {
        self.units[..self.core_units]
            .iter()
            .filter(|u| u.len() > 1)
            .count()
    }

    /// Squared error and constants of a full placement (stops per core and per target).
    pub fn evaluate(&self, core_stop: &[StopId], target_stop: &[StopId]) -> Solution {
        let mut acc = Acc::new(self.grid.feature_count());
        for o in &self.m.obs {
            let (a, b) = (
                core_stop[o.a as usize],
                self.other(o, core_stop, target_stop),
            );
            acc.add(self.grid.features(a, b), o.y - self.offset, 1.0);
        }
        self.unshift(acc.solve(2))
    }

    /// Dissimilarity between core units (row-major), from the matrix: mean latency
    /// between their cores (core-to-core), or the mean absolute difference of their
    /// latencies to the same targets (core-to-target). Missing pairs get the mean.
    fn unit_dissimilarity(&self) -> Vec<f64> {
        let u = self.core_units;
        let mut sum = vec![0.0; u * u];
        let mut cnt = vec![0.0; u * u];
        match self.m.kind {
            Kind::CoreToCore => {
                for o in &self.m.obs {
                    let (a, b) = (
                        self.unit_of_core[o.a as usize] as usize,
                        self.unit_of_core[o.b as usize] as usize,
                    );
                    if a != b {
                        sum[a * u + b] += o.y;
                        cnt[a * u + b] += 1.0;
                        sum[b * u + a] += o.y;
                        cnt[b * u + a] += 1.0;
                    }
                }
            }
            Kind::CoreToTarget => {
                let n = self.m.cpus.len();
                let t = self.m.targets.len();
                let mut row = vec![f64::NAN; n * t];
                for o in &self.m.obs {
                    row[o.a as usize * t + o.b as usize] = o.y;
                }
                for i in 0..n {
                    for k in 0..i {
                        let (mut s, mut c) = (0.0, 0.0);
                        for j in 0..t {
                            let (x, y) = (row[i * t + j], row[k * t + j]);
                            if x.is_finite() && y.is_finite() {
                                s += (x - y).abs();
                                c += 1.0;
                            }
                        }
                        if c > 0.0 {
                            let (a, b) =
                                (self.unit_of_core[i] as usize, self.unit_of_core[k] as usize);
                            if a != b {
                                sum[a * u + b] += s / c;
                                cnt[a * u + b] += 1.0;
                                sum[b * u + a] += s / c;
                                cnt[b * u + a] += 1.0;
                            }
                        }
                    }
                }
            }
        }
        let known: Vec<f64> = (0..u * u)
            .filter(|&k| cnt[k] > 0.0)
            .map(|k| sum[k] / cnt[k])
            .collect();
        let mean = if known.is_empty() {
            0.0
        } else {
            known.iter().sum::<f64>() / known.len() as f64
        };
        (0..u * u)
            .map(|k| {
                if k / u == k % u {
                    0.0
                } else if cnt[k] > 0.0 {
                    sum[k] / cnt[k]
                } else {
                    mean
                }
            })
            .collect()
    }

    /// Placements of the core units from the spectral embedding (see
    /// [`crate::spectral`]), best first by the squared error of the cores alone.
    pub fn spectral_starts(&self) -> Vec<Vec<StopId>> {
        let u = self.core_units;
        if u < 3 {
            return Vec::new();
        }
        let d = self.unit_dissimilarity();
        let b = crate::spectral::double_centre(&d, u);
        let vecs = crate::spectral::leading_eigenvectors(&b, u, 3, 300);
        let stops = &self.core_stops;
        let xs: Vec<f64> = stops
            .iter()
            .map(|&s| f64::from(self.grid.xy(s).0))
            .collect();
        let ys: Vec<f64> = stops
            .iter()
            .map(|&s| f64::from(self.grid.xy(s).1))
            .collect();
        let span = |v: &[f64]| {
            (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            )
        };
        let (x0, x1) = span(&xs);
        let (y0, y1) = span(&ys);
        let mut out: Vec<(f64, Vec<StopId>)> = Vec::new();
        let pairs = [(0usize, 1usize), (0, 2), (1, 2)];
        for &(e1, e2) in pairs.iter().take(if vecs.len() >= 3 { 3 } else { 1 }) {
            // The rotation that makes both coordinates least Gaussian (see spectral).
            let th = crate::spectral::unmix(&vecs[e1], &vecs[e2]);
            {
                let (c, s) = (th.cos(), th.sin());
                let p: Vec<f64> = (0..u).map(|i| c * vecs[e1][i] + s * vecs[e2][i]).collect();
                let q: Vec<f64> = (0..u).map(|i| -s * vecs[e1][i] + c * vecs[e2][i]).collect();
                let (rp, rq) = (
                    crate::spectral::rank_scale(&p),
                    crate::spectral::rank_scale(&q),
                );
                for swap in [false, true] {
                    for refl in 0..4 {
                        let coords: Vec<(f64, f64)> = (0..u)
                            .map(|i| {
                                let (mut a, mut b) =
                                    if swap { (rq[i], rp[i]) } else { (rp[i], rq[i]) };
                                if refl & 1 == 1 {
                                    a = 1.0 - a;
                                }
                                if refl & 2 == 2 {
                                    b = 1.0 - b;
                                }
                                (
                                    x0 - 0.5 + a * (x1 - x0 + 1.0),
                                    y0 - 0.5 + b * (y1 - y0 + 1.0),
                                )
                            })
                            .collect();
                        if let Some(pl) = self.assign(&coords) {
                            let sse = self.core_sse(&pl);
                            if !out.iter().any(|(_, q)| *q == pl) {
                                out.push((sse, pl));
                            }
                        }
                    }
                }
            }
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        out.into_iter().map(|(_, p)| p).collect()
    }

    /// Greedy assignment of core units to stops nearest their coordinates (groups first).
    fn assign(&self, coords: &[(f64, f64)]) -> Option<Vec<StopId>> {
        let u = self.core_units;
        let mut used = vec![0u32; self.grid.stops()];
        let mut out = vec![u32::MAX; u];
        for big in [true, false] {
            let mut cand: Vec<(f64, usize, StopId)> = Vec::new();
            for (i, &(x, y)) in coords.iter().enumerate() {
                if (self.units[i].len() > 1) != big {
                    continue;
                }
                for &s in &self.core_stops {
                    let (sx, sy) = self.grid.xy(s);
                    let d = (f64::from(sx) - x).powi(2) + (f64::from(sy) - y).powi(2);
                    cand.push((d, i, s));
                }
            }
            cand.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (_, i, s) in cand {
                let size = self.units[i].len() as u32;
                if out[i] == u32::MAX && used[s as usize] + size <= self.grid.capacity {
                    out[i] = s;
                    used[s as usize] += size;
                }
            }
        }
        out.iter().all(|&s| s != u32::MAX).then_some(out)
    }

    /// Squared error of the core-to-core observations for core units at these stops
    /// (core-to-target matrices: 0, the targets are not placed yet).
    fn core_sse(&self, unit_stops: &[StopId]) -> f64 {
        if self.m.kind != Kind::CoreToCore {
            return 0.0;
        }
        let mut acc = Acc::new(self.grid.feature_count());
        for o in &self.m.obs {
            let a = unit_stops[self.unit_of_core[o.a as usize] as usize];
            let b = unit_stops[self.unit_of_core[o.b as usize] as usize];
            acc.add(self.grid.features(a, b), o.y - self.offset, 1.0);
        }
        acc.solve(2).sse
    }

    fn other(&self, o: &Obs, core_stop: &[StopId], target_stop: &[StopId]) -> StopId {
        match self.m.kind {
            Kind::CoreToCore => core_stop[o.b as usize],
            Kind::CoreToTarget => target_stop[o.b as usize],
        }
    }

    fn unshift(&self, mut s: Solution) -> Solution {
        s.beta[0] += self.offset;
        s
    }
}

/// A move with the statistics and solution it leads to.
type Candidate = (Vec<(usize, StopId)>, Acc, Solution);

/// Whether two placements are the same modulo one of the symmetries.
pub fn equivalent(syms: &[Symmetry], a: (&[StopId], &[StopId]), b: (&[StopId], &[StopId])) -> bool {
    syms.iter().any(|g| {
        a.0.iter().zip(b.0).all(|(x, y)| g.map[*x as usize] == *y)
            && a.1.iter().zip(b.1).all(|(x, y)| g.map[*x as usize] == *y)
    })
}

/// Runs the search: `opts.restarts` annealing runs from random placements, each polished,
/// the best kept; then the margins of every unit at the best placement.
pub fn infer(
    p: &Problem,
    opts: &Options,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Inference, LayoutError> {
    let restarts = opts.restarts.max(1);
    let seeds: Vec<u64> = (0..restarts as u64)
        .map(|r| {
            opts.seed
                .wrapping_add(r.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        })
        .collect();
    let threads = opts.threads.clamp(1, restarts);
    // Half the restarts (rounded up) start from the best spectral placements, the rest
    // from random ones; spectral starts are annealed at a low temperature only.
    let starts = p.spectral_starts();
    let spectral = starts.len().min(restarts.div_ceil(2));
    let done = std::sync::atomic::AtomicUsize::new(0);
    type Out = (u64, Vec<StopId>, Vec<StopId>, f64);
    let results: Vec<Result<Option<Out>, LayoutError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let seeds = &seeds;
                let done = &done;
                let starts = &starts;
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for (r, &seed) in seeds.iter().enumerate().skip(t).step_by(threads) {
                        if numalab_schema::interrupt::requested() {
                            out.push(Ok(None));
                            continue;
                        }
                        let mut rng = ChaCha8Rng::seed_from_u64(seed);
                        let r = if r < spectral {
                            let mut s = State::from_units(p, &starts[r], &mut rng);
                            s.anneal(opts.sweeps / 2, 2.0, 0.01, &mut rng);
                            s.polish();
                            Ok(Some((seed, s.core_stops(), s.target_stops(), s.sol.sse)))
                        } else {
                            State::random(p, &mut rng).map(|mut s| {
                                let n = p.m.obs.len() as f64;
                                s.anneal(opts.sweeps, 0.3 * n, 1e-3 * n, &mut rng);
                                s.polish();
                                Some((seed, s.core_stops(), s.target_stops(), s.sol.sse))
                            })
                        };
                        let k = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        progress(k);
                        out.push(r);
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut runs: Vec<Out> = Vec::new();
    let mut interrupted = false;
    for r in results {
        match r? {
            Some(o) => runs.push(o),
            None => interrupted = true,
        }
    }
    runs.sort_by_key(|r| seeds.iter().position(|s| *s == r.0));
    let Some(best) = runs.iter().min_by(|a, b| a.3.total_cmp(&b.3)).cloned() else {
        return Err(LayoutError::Interrupted);
    };
    let syms = p.grid.symmetries();
    let restarts_out = runs
        .iter()
        .map(|r| Restart {
            seed: r.0,
            sse: r.3,
            same_as_best: equivalent(&syms, (&r.1, &r.2), (&best.1, &best.2)),
        })
        .collect();
    // Margins at the best placement.
    let mut s = State::at_placement(p, &best.1, &best.2);
    let dof = (p.m.obs.len() as f64 - s.sol.free as f64).max(1.0);
    let sigma2 = s.sol.sse / dof;
    let var = sigma2.max(p.floor);
    let mut unit_margin = Vec::with_capacity(p.units.len());
    for u in 0..p.units.len() {
        let m = match s.best_alternative(u) {
            Some((moves, _, sol)) => {
                let delta = (sol.sse - s.sol.sse).max(0.0);
                Margin {
                    alternative: Some(moves[0].1),
                    delta_sse: delta,
                    confidence: 1.0 / (1.0 + (-delta / (2.0 * var)).exp()),
                }
            }
            None => Margin {
                alternative: None,
                delta_sse: 0.0,
                confidence: 1.0,
            },
        };
        unit_margin.push(m);
    }
    let core_margin = (0..p.m.cpus.len())
        .map(|c| unit_margin[p.unit_of_core[c] as usize])
        .collect();
    let target_margin = unit_margin[p.core_units..].to_vec();
    Ok(Inference {
        solution: p.unshift(s.sol),
        core_stop: best.1,
        target_stop: best.2,
        core_margin,
        target_margin,
        sigma_ns: sigma2.sqrt(),
        restarts: restarts_out,
        symmetries: syms,
        interrupted,
    })
}

/// Tile groups from a c2c structure: the finest level whose groups (of more than one CPU)
/// all have at most `capacity` CPUs, as positions in `cpus`. Empty when there is none.
pub fn tile_groups(
    structure: &numalab_c2c::Structure,
    cpus: &[u32],
    capacity: u32,
) -> Vec<Vec<u32>> {
    for level in &structure.levels {
        if level.multi_groups() == 0 {
            continue;
        }
        if level
            .groups
            .iter()
            .all(|g| g.cpus.len() <= capacity as usize)
        {
            return level
                .groups
                .iter()
                .filter(|g| g.cpus.len() > 1)
                .map(|g| {
                    g.cpus
                        .iter()
                        .filter_map(|c| cpus.iter().position(|x| x == c).map(|p| p as u32))
                        .collect()
                })
                .collect();
        }
        return Vec::new();
    }
    Vec::new()
}
