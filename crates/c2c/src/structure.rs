//! The machine's latency structure, inferred from a core-to-core matrix alone.
//!
//! Why: hwloc says what the firmware says. Latency says where cores really are relative
//! to each other: SMT siblings, cores sharing a cache or a cluster, dies, sockets. This
//! module turns a [`LatencyMatrix`] into nested groups of CPUs with their latencies,
//! without looking at any topology, so that it works on imported matrices of machines we
//! have never seen and can be compared with hwloc afterwards ([`crate::compare`]).
//!
//! # Method
//!
//! A *level* is a partition of the CPUs into groups such that, for most CPUs, every
//! group-mate is nearer than every outsider. "Near" is read in two views:
//!
//! - **latency**: the half round-trip time itself. SMT siblings, cores sharing an L2/L3,
//!   a die or a socket form latency *bands*.
//! - **profile**: how alike two CPUs see the rest of the machine, the root mean square of
//!   `ln D[i][k] - ln D[j][k]` over every other CPU `k`. Some groups are not faster
//!   inside than outside, but their members are interchangeable: the 4-core clusters of
//!   a Kunpeng 920, where the latency between two clusters depends on which clusters they
//!   are and not on which core of the cluster runs.
//!
//! For each view, average-linkage (UPGMA) clustering of the distances gives a sequence
//! of nested partitions, from one group per CPU to a single group. Each partition is
//! scored CPU by CPU: `s_i = ln(nearest outsider of i / farthest group-mate of i)`. A
//! CPU is *separated* when `s_i` exceeds a noise margin `tau`; a CPU alone in its group
//! never is. The margin comes from the matrix itself: `tau = 2 sigma`, where `sigma` is
//! the median over CPUs of the profile distance to the most similar other CPU (what two
//! interchangeable CPUs, such as SMT siblings, differ by: the measurement noise; on
//! machines without such pairs it overestimates the noise, which only makes the test
//! stricter), floored at [`RESOLUTION`].
//!
//! Along the sequence, the fraction of separated CPUs rises to a peak at each true level
//! (every CPU is in a complete group of that level) and falls between levels (CPUs in
//! half-merged groups have a group-mate farther than an outsider). A level is a peak
//! where more than half of the CPUs are separated and which stands out, by at least a
//! quarter of the CPUs, from the lowest point toward any higher peak (its topographic
//! prominence); among equal peak values, the partition with the largest median `s_i`.
//! A level must also separate its typical CPU by more than twice the margin.
//!
//! Levels of both views are combined into one hierarchy: identical partitions merge
//! ([`Evidence::Both`]); a candidate made only of groups of other candidates (half of
//! the machine at one level, the rest at another) is dropped; then, strongest first
//! (median separation), a level is kept if it nests with every level kept so far.
//!
//! Each group then gets its median latency inside (`intra_ns`) and to the other groups
//! of the same parent group (`inter_ns`; for the outermost level: to every other CPU).
//!
//! On matrices of up to [`SHUFFLE_TEST_MAX_CPUS`] CPUs, where noise alone readily forms
//! groups (with 4 to 8 CPUs of uniform noise, 70% got a level), a level must separate
//! better than every level found in [`SHUFFLES`] copies of the matrix with its values
//! shuffled over the pairs (p < 0.05), unless it is a latency-view level with a clear
//! contrast ([`CLEAR_SEPARATION`]); what is dropped is said in the notes.
//!
//! # Limits
//!
//! A mesh without clusters (most Xeons inside a socket) has no level, and none is
//! reported. Groups smaller than 2 CPUs are not levels. When two groups of a level are
//! much closer to each other than the rest (two CCDs next to each other on the I/O die,
//! two Kunpeng clusters whose latencies differ by under 1 ns), the level may show them
//! merged. A sampled matrix (holes) is handled (averages and extremes use the measured
//! pairs), but sparse samples weaken the evidence; [`Structure::confidence`] says so.
//! The quarter-of-the-CPUs prominence and the factor 2 on the margin are conventions
//! (like the 1.5 of Tukey's fences), checked on 29 published matrices from 8-core
//! desktops to 256-thread dual EPYCs, not fitted to any one of them.

use crate::matrix::LatencyMatrix;
use serde::{Deserialize, Serialize};

/// Relative differences below this (0.5%, about one core cycle in a 60-ns round trip) are
/// treated as measurement resolution, whatever the matrix's own noise suggests.
pub const RESOLUTION: f64 = 0.005;

/// A level must stand out from the valleys toward higher peaks by this fraction of CPUs.
pub const PROMINENCE: f64 = 0.25;

/// Which view of the matrix revealed a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// Group-mates are faster to each other than to outsiders.
    Latency,
    /// Group-mates see the rest of the machine alike (interchangeable CPUs).
    Profile,
    /// Both views agree on this partition.
    Both,
}

/// One group of a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// CPU ids (OS indices), ascending.
    pub cpus: Vec<u32>,
    /// Median latency between two CPUs of the group (ns); `None` for one CPU or no
    /// measured pair.
    pub intra_ns: Option<f64>,
    /// Median latency from the group to the other groups of its parent group (ns);
    /// `None` if the group has no sibling or no measured pair.
    pub inter_ns: Option<f64>,
}

/// One level of the inferred hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// The groups (every CPU of the matrix in exactly one group), by first CPU.
    pub groups: Vec<Group>,
    /// Which view found the level.
    pub evidence: Evidence,
    /// Median per-CPU separation (nearest outsider / farthest mate); above 1 by
    /// construction, larger is cleaner.
    pub separation: f64,
    /// Median latency of the pairs inside groups (ns).
    pub intra_ns: Option<f64>,
    /// Median latency of pairs in different groups of the same parent group (ns).
    pub inter_ns: Option<f64>,
}

impl Level {
    /// Sizes of the groups, as "16 x 8" or "8 x 2, 8 x 1".
    pub fn shape(&self) -> String {
        let mut sizes: Vec<usize> = self.groups.iter().map(|g| g.cpus.len()).collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < sizes.len() {
            let j = sizes[i..].iter().take_while(|&&s| s == sizes[i]).count();
            parts.push(format!("{j} x {}", sizes[i]));
            i += j;
        }
        parts.join(", ")
    }

    /// Number of groups with more than one CPU.
    pub fn multi_groups(&self) -> usize {
        self.groups.iter().filter(|g| g.cpus.len() > 1).count()
    }
}

/// How much to trust the structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// The matrix is complete and clean.
    High,
    /// The matrix has holes, bad cells or too few CPUs: read the notes.
    Low,
}

/// The inferred structure of a matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Structure {
    /// CPU ids, in matrix order.
    pub cpus: Vec<u32>,
    /// Levels, finest first (most groups first).
    pub levels: Vec<Level>,
    /// Confidence in the result.
    pub confidence: Confidence,
    /// Why the confidence is low, and other facts about the input, in sentences.
    pub notes: Vec<String>,
}

/// Infers the latency structure of a matrix. Pure: matrix in, structure out.
///
/// Cells that are missing, zero, negative or not finite are ignored (and make the
/// confidence low). Runs in O(n^3) time and O(n^2) memory.
pub fn infer(m: &LatencyMatrix) -> Structure {
    let n = m.n();
    let mut notes = Vec::new();
    let mut confidence = Confidence::High;
    // Clean copy: only positive finite cells.
    let mut clean = LatencyMatrix::new(m.cpus().to_vec());
    let mut bad = 0usize;
    for i in 0..n {
        for j in 0..i {
            if let Some(v) = m.get(i, j) {
                if v.is_finite() && v > 0.0 {
                    clean.set(i, j, v);
                } else {
                    bad += 1;
                }
            }
        }
    }
    let total = m.total_pairs();
    let measured = clean.measured_pairs();
    if bad > 0 {
        confidence = Confidence::Low;
        notes.push(format!(
            "{bad} cell(s) were zero, negative or not a number and were ignored"
        ));
    }
    if measured < total {
        confidence = Confidence::Low;
        notes.push(format!(
            "{} of {} pairs are measured ({:.0}%): groups are inferred from the pairs present",
            measured,
            total,
            100.0 * measured as f64 / total.max(1) as f64
        ));
    }
    if n < 3 {
        confidence = Confidence::Low;
        notes.push(format!(
            "{n} CPU(s): at least 3 are needed to tell groups apart"
        ));
        return Structure {
            cpus: m.cpus().to_vec(),
            levels: Vec::new(),
            confidence,
            notes,
        };
    }

    let mut candidates: Vec<(Vec<Vec<usize>>, Evidence, f64)> = candidate_levels(&clean);
    // On small matrices noise alone forms groups (the clustering finds the best of few
    // partitions): a level must separate better than every level found in the same
    // values shuffled over the pairs, which have no structure, unless it separates
    // clearly (with 4 CPUs even a 10x contrast recurs by chance in a fifth of shuffles).
    if n <= SHUFFLE_TEST_MAX_CPUS && !candidates.is_empty() {
        let mut null_best = [0.0f64; 2];
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ n as u64);
        for _ in 0..SHUFFLES {
            for (_, e, score) in candidate_levels(&shuffled(&clean, &mut rng)) {
                let v = &mut null_best[usize::from(e != Evidence::Latency)];
                *v = v.max(score);
            }
        }
        candidates.retain(|(p, e, score)| {
            let best = null_best[usize::from(*e != Evidence::Latency)];
            // The bypass is for latency ratios only: profile separations are ratios of
            // RMS log-differences, which noise can make large.
            let keep = *score > best || (*e == Evidence::Latency && *score >= CLEAR_SEPARATION);
            if !keep {
                notes.push(format!(
                    "a grouping into {} groups was dropped: the same latencies shuffled over the pairs (no structure) group as clearly (separation {:.3} against up to {:.3} in {} shuffles), so it cannot be told apart from noise",
                    p.len(),
                    score,
                    best,
                    SHUFFLES
                ));
            }
            keep
        });
    }
    // A candidate made only of groups that other candidates have (part of the machine
    // at one level, the rest at another) is not a level of its own.
    let all_groups: Vec<Vec<Vec<usize>>> = candidates.iter().map(|c| c.0.clone()).collect();
    candidates.retain(|c| {
        let others: Vec<&Vec<Vec<usize>>> = all_groups.iter().filter(|p| **p != c.0).collect();
        !c.0.iter()
            .filter(|g| g.len() > 1)
            .all(|g| others.iter().any(|p| p.contains(g)))
    });
    // Strongest first; keep a level if it nests with every kept one.
    candidates.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut kept: Vec<(Vec<Vec<usize>>, Evidence, f64)> = Vec::new();
    for (p, e, s) in candidates {
        if let Some(k) = kept.iter_mut().find(|k| k.0 == p) {
            if k.1 != e {
                k.1 = Evidence::Both;
            }
            continue;
        }
        if kept.iter().all(|k| nested(&k.0, &p, n)) {
            kept.push((p, e, s));
        }
    }
    // Finest first.
    kept.sort_by_key(|k| std::cmp::Reverse(k.0.len()));
    let parents: Vec<Option<Vec<usize>>> = (0..kept.len())
        .map(|li| kept.get(li + 1).map(|coarser| membership(&coarser.0, n)))
        .collect();
    let levels = kept
        .iter()
        .zip(parents)
        .map(|((p, e, s), parent)| describe(&clean, p, *e, *s, parent.as_deref()))
        .collect();
    Structure {
        cpus: m.cpus().to_vec(),
        levels,
        confidence,
        notes,
    }
}

/// Matrices up to this many CPUs get the shuffle test (larger ones rarely group noise,
/// and the clustering is O(n^3) per shuffle).
pub const SHUFFLE_TEST_MAX_CPUS: usize = 32;

/// Shuffles in the test: a level must beat all of them (p < 0.05).
pub const SHUFFLES: usize = 19;

/// A latency-view level whose typical CPU has its nearest outsider this much farther than
/// its farthest group-mate (25%) is kept without the shuffle test: per-pair medians of the
/// ping-pong are stable to a few percent, so a contrast this large is not noise. A
/// convention, like the others here.
pub const CLEAR_SEPARATION: f64 = 1.25;

/// Levels of both views of a matrix: (partition, view, exp(median separation)).
fn candidate_levels(m: &LatencyMatrix) -> Vec<(Vec<Vec<usize>>, Evidence, f64)> {
    let lat = Dist::latency(m);
    let prof = Dist::profile(m);
    let tau = 2.0 * prof.nearest_neighbour_median().max(RESOLUTION);
    let mut out = Vec::new();
    for (dist, evidence) in [(&lat, Evidence::Latency), (&prof, Evidence::Profile)] {
        for (partition, score) in levels_of(dist, tau) {
            out.push((partition, evidence, score));
        }
    }
    out
}

/// A small deterministic generator for the shuffles (same matrix, same answer).
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The matrix with its measured values shuffled over its measured pairs.
fn shuffled(m: &LatencyMatrix, rng: &mut XorShift) -> LatencyMatrix {
    let n = m.n();
    let pairs: Vec<(usize, usize)> = (0..n)
        .flat_map(|i| (0..i).map(move |j| (i, j)))
        .filter(|&(i, j)| m.get(i, j).is_some())
        .collect();
    let mut values: Vec<f64> = pairs.iter().filter_map(|&(i, j)| m.get(i, j)).collect();
    for k in (1..values.len()).rev() {
        values.swap(k, rng.below(k + 1));
    }
    let mut out = LatencyMatrix::new(m.cpus().to_vec());
    for (&(i, j), v) in pairs.iter().zip(values) {
        out.set(i, j, v);
    }
    out
}

/// A symmetric distance table with holes.
struct Dist {
    n: usize,
    d: Vec<Option<f64>>,
}

impl Dist {
    fn get(&self, i: usize, j: usize) -> Option<f64> {
        self.d[i * self.n + j]
    }

    fn latency(m: &LatencyMatrix) -> Dist {
        let n = m.n();
        let mut d = vec![None; n * n];
        for i in 0..n {
            for j in 0..n {
                d[i * n + j] = m.get(i, j);
            }
        }
        Dist { n, d }
    }

    /// Median over CPUs of the distance to the nearest other CPU.
    fn nearest_neighbour_median(&self) -> f64 {
        let nn: Vec<f64> = (0..self.n)
            .filter_map(|i| {
                (0..self.n)
                    .filter(|&j| j != i)
                    .filter_map(|j| self.get(i, j))
                    .min_by(f64::total_cmp)
            })
            .collect();
        numalab_stats::median(&nn).unwrap_or(0.0)
    }

    /// RMS of log-latency differences over the CPUs measured with both.
    fn profile(m: &LatencyMatrix) -> Dist {
        let n = m.n();
        let logs: Vec<Option<f64>> = (0..n * n)
            .map(|x| m.get(x / n, x % n).map(f64::ln))
            .collect();
        let mut d = vec![None; n * n];
        for i in 0..n {
            for j in 0..i {
                let (mut ss, mut c) = (0.0, 0usize);
                for k in 0..n {
                    if k == i || k == j {
                        continue;
                    }
                    if let (Some(a), Some(b)) = (logs[i * n + k], logs[j * n + k]) {
                        ss += (a - b) * (a - b);
                        c += 1;
                    }
                }
                if c > 0 {
                    let v = (ss / c as f64).sqrt();
                    d[i * n + j] = Some(v);
                    d[j * n + i] = Some(v);
                }
            }
        }
        Dist { n, d }
    }
}

/// Average-linkage clustering; returns the partitions after each merge, scored, and
/// picks one level per run of partitions scoring above 1.
fn levels_of(dist: &Dist, tau: f64) -> Vec<(Vec<Vec<usize>>, f64)> {
    let n = dist.n;
    // Cluster-pair sums and counts of measured distances.
    let mut sum = vec![0.0f64; n * n];
    let mut cnt = vec![0u32; n * n];
    for i in 0..n {
        for j in 0..n {
            if let Some(v) = dist.get(i, j) {
                sum[i * n + j] = v;
                cnt[i * n + j] = 1;
            }
        }
    }
    let mut active = vec![true; n];
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut group_of: Vec<usize> = (0..n).collect();
    // The sequence of partitions (as merges) and their scores.
    let mut seq: Vec<(usize, usize)> = Vec::with_capacity(n);
    let mut score: Vec<(f64, f64)> = vec![(0.0, 0.0)];
    for _ in 1..n {
        // Closest pair of clusters by average distance; pairs with no measured distance
        // come last, in index order.
        let mut best: Option<(usize, usize)> = None;
        let mut best_v = f64::INFINITY;
        for a in 0..n {
            if !active[a] {
                continue;
            }
            for b in a + 1..n {
                if !active[b] {
                    continue;
                }
                let c = cnt[a * n + b];
                let v = if c > 0 {
                    sum[a * n + b] / c as f64
                } else {
                    f64::INFINITY
                };
                if best.is_none() || v < best_v {
                    best_v = v;
                    best = Some((a, b));
                }
            }
        }
        let Some((a, b)) = best else { break };
        for z in 0..n {
            if active[z] && z != a && z != b {
                sum[a * n + z] += sum[b * n + z];
                cnt[a * n + z] += cnt[b * n + z];
                sum[z * n + a] = sum[a * n + z];
                cnt[z * n + a] = cnt[a * n + z];
            }
        }
        active[b] = false;
        let moved = std::mem::take(&mut members[b]);
        for &x in &moved {
            group_of[x] = a;
        }
        members[a].extend(moved);
        seq.push((a, b));
        score.push(separation(dist, &group_of, &members, tau));
    }
    // score[k] is the partition after k merges (n - k groups). Levels are the peaks of
    // the separated fraction that stand out by a quarter of the CPUs from the valleys
    // toward any higher peak (topographic prominence).
    let frac: Vec<f64> = score.iter().map(|s| s.0).collect();
    let mut out = Vec::new();
    let mut k = 0;
    while k < frac.len() {
        // A plateau of equal values is one candidate peak.
        let mut e = k;
        while e + 1 < frac.len() && frac[e + 1] == frac[k] {
            e += 1;
        }
        let left_higher = (0..k).rev().find(|&x| frac[x] > frac[k]);
        let right_higher = (e + 1..frac.len()).find(|&x| frac[x] > frac[k]);
        let is_peak =
            (k == 0 || frac[k - 1] < frac[k]) && (e + 1 == frac.len() || frac[e + 1] < frac[k]);
        if is_peak && frac[k] > 0.5 {
            let lmin = frac[left_higher.unwrap_or(0)..k]
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            let rmin = frac[e + 1..=right_higher.unwrap_or(frac.len() - 1)]
                .iter()
                .copied()
                .fold(f64::INFINITY, f64::min);
            let base = match (left_higher, right_higher) {
                (Some(_), Some(_)) => lmin.max(rmin),
                (Some(_), None) => lmin.max(if e + 1 < frac.len() { rmin } else { 0.0 }),
                (None, Some(_)) => rmin.max(if k > 0 { lmin } else { 0.0 }),
                (None, None) => 0.0,
            };
            let base = if base.is_finite() { base } else { 0.0 };
            if frac[k] - base >= PROMINENCE {
                // Best median separation on the plateau.
                let best = (k..=e)
                    .max_by(|&x, &y| score[x].1.total_cmp(&score[y].1))
                    .unwrap_or(k);
                out.push(best);
            }
        }
        k = e + 1;
    }
    // Rebuild the chosen partitions by replaying the merges.
    let mut groups: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut chosen = Vec::new();
    for (step, &(a, b)) in std::iter::once(&(usize::MAX, usize::MAX))
        .chain(seq.iter())
        .enumerate()
    {
        if a != usize::MAX {
            let moved = std::mem::take(&mut groups[b]);
            groups[a].extend(moved);
        }
        if out.contains(&step) {
            chosen.push((canonical(&groups), score[step].1.exp()));
        }
    }
    let mut out = chosen;
    // A partition into one group is not a level; nor is one whose typical CPU is
    // separated by less than twice the noise margin.
    out.retain(|(p, s)| p.len() > 1 && p.iter().any(|g| g.len() > 1) && s.ln() > 2.0 * tau);
    out
}

/// Per-CPU separation: ln((nearest outsider) / (farthest group-mate)), 0 for CPUs alone
/// in their group or without measured distances on either side. Returns the fraction of
/// CPUs whose separation exceeds `tau`, and the median separation.
fn separation(dist: &Dist, group_of: &[usize], members: &[Vec<usize>], tau: f64) -> (f64, f64) {
    let n = dist.n;
    let mut s: Vec<f64> = Vec::with_capacity(n);
    for i in 0..n {
        let g = group_of[i];
        if members[g].len() < 2 {
            s.push(0.0);
            continue;
        }
        let mut far_mate: Option<f64> = None;
        let mut near_out: Option<f64> = None;
        for (j, &gj) in group_of.iter().enumerate() {
            if j == i {
                continue;
            }
            let Some(v) = dist.get(i, j) else { continue };
            if gj == g {
                far_mate = Some(far_mate.map_or(v, |f: f64| f.max(v)));
            } else {
                near_out = Some(near_out.map_or(v, |f: f64| f.min(v)));
            }
        }
        s.push(match (far_mate, near_out) {
            (Some(f), Some(o)) if f > 0.0 && o > 0.0 => (o / f).ln(),
            (Some(_), Some(o)) if o > 0.0 => f64::MAX,
            _ => 0.0,
        });
    }
    let frac = s.iter().filter(|&&v| v > tau).count() as f64 / n as f64;
    (frac, numalab_stats::median(&s).unwrap_or(0.0))
}

/// Groups sorted inside and by first member.
fn canonical(members: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut p: Vec<Vec<usize>> = members
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| {
            let mut m = m.clone();
            m.sort_unstable();
            m
        })
        .collect();
    p.sort();
    p
}

/// Group index of each position.
fn membership(p: &[Vec<usize>], n: usize) -> Vec<usize> {
    let mut g = vec![usize::MAX; n];
    for (gi, grp) in p.iter().enumerate() {
        for &x in grp {
            g[x] = gi;
        }
    }
    g
}

/// Whether one partition refines the other.
fn nested(a: &[Vec<usize>], b: &[Vec<usize>], n: usize) -> bool {
    let refines = |fine: &[Vec<usize>], coarse: &[Vec<usize>]| {
        let gc = membership(coarse, n);
        fine.iter().all(|g| g.iter().all(|&x| gc[x] == gc[g[0]]))
    };
    refines(a, b) || refines(b, a)
}

fn describe(
    m: &LatencyMatrix,
    p: &[Vec<usize>],
    evidence: Evidence,
    separation: f64,
    parent: Option<&[usize]>,
) -> Level {
    let n = m.n();
    let own = membership(p, n);
    let same_parent = |i: usize, j: usize| parent.is_none_or(|pg| pg[i] == pg[j]);
    let mut level_intra = Vec::new();
    let mut level_inter = Vec::new();
    for i in 0..n {
        for j in 0..i {
            if let Some(v) = m.get(i, j) {
                if own[i] == own[j] {
                    level_intra.push(v);
                } else if same_parent(i, j) {
                    level_inter.push(v);
                }
            }
        }
    }
    let groups = p
        .iter()
        .map(|g| {
            let mut intra = Vec::new();
            let mut inter = Vec::new();
            for (a, &i) in g.iter().enumerate() {
                for &j in &g[..a] {
                    if let Some(v) = m.get(i, j) {
                        intra.push(v);
                    }
                }
                for j in 0..n {
                    if own[j] != own[i] && same_parent(i, j) {
                        if let Some(v) = m.get(i, j) {
                            inter.push(v);
                        }
                    }
                }
            }
            let mut cpus: Vec<u32> = g.iter().map(|&i| m.cpus()[i]).collect();
            cpus.sort_unstable();
            Group {
                cpus,
                intra_ns: numalab_stats::median(&intra),
                inter_ns: numalab_stats::median(&inter),
            }
        })
        .collect();
    Level {
        groups,
        evidence,
        separation,
        intra_ns: numalab_stats::median(&level_intra),
        inter_ns: numalab_stats::median(&level_inter),
    }
}
