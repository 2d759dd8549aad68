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
//! A *level* is a partition of the CPUs into groups that is a **step holding for every
//! member**: the slowest pairs inside the groups are clearly below the fastest pairs
//! between groups. A gradient (latency growing smoothly with the distance on a mesh to
//! the line's home) is no level, however it is cut; it is reported as a [`Gradient`].
//! "Near" is read in two views:
//!
//! - **latency**: the half round-trip time itself. SMT siblings, cores sharing an L2/L3,
//!   a die or a socket form latency *bands*.
//! - **profile**: how differently two CPUs see the rest of the machine, the standard
//!   deviation over every other CPU `k` of `D[i][k] - D[j][k]`, relative to the median
//!   latency. Centred: a CPU uniformly farther from everyone (farther from the line's
//!   home on a mesh) is not different. Some groups are not faster inside than outside
//!   but their members are interchangeable: the 4-core E-core modules of an i9-12900K.
//!
//! For each view, average-linkage (UPGMA) clustering of the distances gives a sequence
//! of nested partitions, from one group per CPU to a single group. Every partition of
//! the sequence in which at least half of the CPUs share a group with another gets the
//! **step test**: `hi`, the slowest pair inside groups, and `lo`, the fastest pair
//! between groups, each after dropping [`TRIM`] (2%) of the number of pairs inside
//! (outliers: a preempted measurement, a pair off by 30%), must be a gap apart of at
//! least `max(floor, GAP_SIGMAS x sigma)`, where `sigma` is the noise inside the groups
//! (1.4826 x the median absolute deviation of the pairs of each group of 3 or more CPUs
//! from their group's median). In the latency view the gap is `ln(lo / hi)` and the
//! floor [`MIN_GAP`] (5%); in the profile view the gap is `lo - hi` and the floor twice
//! the median profile distance of a CPU to its most similar other CPU (the matrix's own
//! noise). Consecutive passing partitions whose merges only moved pairs the trimming
//! had left out are the same step (a few CPUs not merged yet); the one with the fewest
//! pairs on the wrong side of the gap's midpoint is kept, then the latest.
//!
//! Levels of both views are combined into one hierarchy: identical partitions merge
//! ([`Evidence::Both`]); a candidate made only of groups of other candidates (half of
//! the machine at one level, the rest at another) is dropped, and so is one that is
//! another candidate with just two groups merged (two groups nearer each other than the
//! rest are not a level of the machine); then, strongest first (the ratio `lo / hi`), a
//! level is kept if it nests with every level kept so far.
//!
//! The separation peaks of the earlier method (the fraction of CPUs whose nearest
//! outsider is farther than their farthest group-mate, with a prominence of a quarter of
//! the CPUs) still propose groupings; those that fail the step test are named in the
//! notes.
//!
//! Each group then gets its median latency inside (`intra_ns`) and to the other groups
//! of the same parent group (`inter_ns`; for the outermost level: to every other CPU).
//!
//! **Gradients.** Between the groups of each level inside the groups of the next
//! (between single CPUs below the finest level, across the whole machine above the
//! coarsest), the pairs have no step. When their spread, the 95th over the 5th
//! percentile of each pair relative to the median of its parent group, exceeds
//! [`GRADIENT_SPREAD`] (10%) and four times the noise of one pair, it is reported as a
//! [`Gradient`] with its range in ns, and a note: "no discrete level ...". The note says
//! whether latency grows with where the CPUs are ([`Gradient::positional`] at least
//! [`GRADIENT_POSITION`]: a mesh with a fixed home, the published Xeon meshes) or depends
//! on the pair only (a home hashed per pair, noise).
//!
//! On matrices of up to [`SHUFFLE_TEST_MAX_CPUS`] CPUs, where noise alone readily forms
//! groups, a level must also separate better than every level found in [`SHUFFLES`]
//! copies of the matrix with its values shuffled over the pairs (p < 0.05), unless it is
//! a latency-view level with a clear contrast ([`CLEAR_SEPARATION`]); what is dropped is
//! said in the notes.
//!
//! # Limits
//!
//! A mesh without clusters (most Xeons inside a socket) has no level; its gradient is
//! reported. Groups smaller than 2 CPUs are not levels. Groups whose members differ only
//! by a uniform offset (the Kunpeng 920 clusters in the published file) are not found.
//! A sampled matrix (holes) is handled (quantiles use the measured pairs), but sparse
//! samples weaken the evidence; [`Structure::confidence`] says so. The 2% trim, the 5%
//! gap, the one deviation of margin, the 10% spread are conventions (like the 1.5 of
//! Tukey's fences), chosen from what per-pair medians resolve and what outliers
//! measurements show, then checked on 29 published matrices from 8-core desktops to
//! 256-thread dual EPYCs; none was fitted to any one of them.

use crate::matrix::LatencyMatrix;
use serde::{Deserialize, Serialize};

/// Relative differences below this (0.5%, about one core cycle in a 60-ns round trip) are
/// treated as measurement resolution, whatever the matrix's own noise suggests.
pub const RESOLUTION: f64 = 0.005;

/// A level must stand out from the valleys toward higher peaks by this fraction of CPUs.
pub const PROMINENCE: f64 = 0.25;

pub use numalab_records::c2c::{Confidence, Evidence};

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
    /// Bands of pairs whose latency spreads widely without a step: gradients (a mesh, a
    /// ring), reported as such rather than cut into levels.
    #[serde(default)]
    pub gradients: Vec<Gradient>,
}

/// Pairs whose latency spreads over a wide range with no step that separates a partition
/// of their CPUs: a gradient (distance on a mesh or ring, to the line's home), not a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gradient {
    /// The pairs lie inside the groups of this level (index into [`Structure::levels`]);
    /// `None`: anywhere in the machine.
    pub within: Option<usize>,
    /// The pairs lie between different groups of this level; `None`: between any two CPUs.
    pub between: Option<usize>,
    /// Measured pairs in the band.
    pub pairs: usize,
    /// 5th percentile of their latency (ns).
    pub low_ns: f64,
    /// Median (ns).
    pub median_ns: f64,
    /// 95th percentile (ns).
    pub high_ns: f64,
    /// How much the CPUs' mean latencies in the band differ, against independent scatter
    /// of the pairs: mean number of partners x variance of the CPUs' means / variance of
    /// the pairs (log latency relative to the scope's median). About 1 when every pair
    /// scatters on its own (noise, or a line home hashed per pair); at least
    /// [`GRADIENT_POSITION`] when latency grows with where the CPUs are (a fixed home on
    /// a mesh gives up to about half the number of partners).
    #[serde(default)]
    pub positional: f64,
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
            gradients: Vec::new(),
        };
    }

    let (mut candidates, refused, nearest_profile) = candidate_levels(&clean);
    notes.extend(refused);
    // On small matrices noise alone forms groups (the clustering finds the best of few
    // partitions): a level must separate better than every level found in the same
    // values shuffled over the pairs, which have no structure, unless it separates
    // clearly (with 4 CPUs even a 10x contrast recurs by chance in a fifth of shuffles).
    if n <= SHUFFLE_TEST_MAX_CPUS && !candidates.is_empty() {
        let mut null_best = [0.0f64; 2];
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ n as u64);
        for _ in 0..SHUFFLES {
            for (_, e, score) in candidate_levels(&shuffled(&clean, &mut rng)).0 {
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
    // A partition that is another candidate with just two of its groups merged is not a
    // level of the machine: two groups nearer each other than the rest are.
    let all_groups: Vec<Vec<Vec<usize>>> = candidates.iter().map(|c| c.0.clone()).collect();
    candidates.retain(|c| !all_groups.iter().any(|f| one_merge_apart(f, &c.0, n)));
    // Strongest first; keep a level if it nests with every kept one.
    candidates.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut kept: Vec<Candidate> = Vec::new();
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
    let partitions: Vec<Vec<Vec<usize>>> = kept.into_iter().map(|k| k.0).collect();
    // The noise of one pair, relative: two CPUs that see the machine alike differ by
    // about sqrt(2) times it (median over CPUs of the profile distance to the most
    // similar other CPU).
    let noise = nearest_profile / std::f64::consts::SQRT_2;
    let gradients = gradients(&clean, &partitions, noise);
    notes.extend(gradients.iter().map(gradient_note));
    Structure {
        cpus: m.cpus().to_vec(),
        levels,
        confidence,
        notes,
        gradients,
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

/// A candidate level: partition (positions), view, and its step ratio (trimmed fastest
/// between over trimmed slowest inside).
type Candidate = (Vec<Vec<usize>>, Evidence, f64);

/// Levels of both views of a matrix: (partition, view, step ratio), a sentence for each
/// grouping the separation peaks proposed but the step test refused, and the median
/// profile distance of a CPU to its most similar other CPU.
fn candidate_levels(m: &LatencyMatrix) -> (Vec<Candidate>, Vec<String>, f64) {
    let n = m.n();
    let lat = Dist::latency(m);
    let prof = Dist::profile(m);
    let tau = 2.0 * prof.nearest_neighbour_median().max(RESOLUTION);
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for (dist, evidence) in [(&lat, Evidence::Latency), (&prof, Evidence::Profile)] {
        // Latency steps are relative (log latency); profile distances are already relative
        // to the median latency, and their steps are read in those units.
        let linear = evidence == Evidence::Profile;
        // The smallest gap: 5% in latency; in the profile view twice what a CPU and its
        // most similar other CPU differ by (median over CPUs): the matrix's own noise.
        let floor = if linear {
            2.0 * prof.nearest_neighbour_median()
        } else {
            MIN_GAP.ln_1p()
        };
        let lnd = if linear { dist.d.clone() } else { dist.logs() };
        let (proposals, seq) = levels_of(dist, tau);
        let accepted = step_levels(&lnd, n, &seq, floor);
        for (partition, _) in &proposals {
            if accepted.iter().any(|(p, _)| p == partition) {
                continue;
            }
            let Some(st) = step(&lnd, n, &membership(partition, n), floor).filter(|st| !st.holds())
            else {
                continue;
            };
            let shape = |v: f64| match evidence {
                Evidence::Profile => format!("profile distance {:.2}%", 100.0 * v),
                _ => format!("{:.1} ns", v.exp()),
            };
            let pct = |v: f64| {
                if linear {
                    format!("{:+.2} points", 100.0 * v)
                } else {
                    format!("{:+.1}%", 100.0 * v.exp_m1())
                }
            };
            refused.push(format!(
                "a grouping into {} groups ({} view) was dropped: its slowest pairs inside groups ({}) are not clearly below its fastest pairs between groups ({}): a gap of {} where {} is required, so it cannot be told apart from noise or a gradient",
                partition.len(),
                match evidence {
                    Evidence::Profile => "profile",
                    _ => "latency",
                },
                shape(st.hi),
                shape(st.lo),
                pct(st.gap()),
                pct(st.required),
            ));
        }
        for (partition, st) in accepted {
            let ratio = if linear {
                st.lo / st.hi.max(RESOLUTION)
            } else {
                st.gap().exp()
            };
            out.push((partition, evidence, ratio));
        }
    }
    (out, refused, prof.nearest_neighbour_median())
}

/// Pairs allowed on the wrong side of a step: 2% of the pairs inside the groups (outliers,
/// a preempted measurement). A convention.
pub const TRIM: f64 = 0.02;

/// The smallest gap that makes a step, relative (5%): per-pair medians of the ping-pong are
/// stable to a few percent, so a smaller gap is not evidence. A convention.
pub const MIN_GAP: f64 = 0.05;

/// The gap must also exceed this many standard deviations of the noise inside the groups
/// (1.4826 MAD of the pairs inside a group around the group's median). One is enough: the
/// trimmed extremes the gap is measured between already lie about two deviations out on
/// each side, so the two bands' centres must be about five deviations apart. A convention.
pub const GAP_SIGMAS: f64 = 1.0;

/// Pairs without a step whose spread (95th over 5th percentile, each pair relative to the
/// median of its scope) exceeds this (10%) and four times the noise of one pair are
/// reported as a gradient: noise alone spreads pairs by about 3.3 deviations between
/// those percentiles. A convention.
pub const GRADIENT_SPREAD: f64 = 0.10;

/// The step test of one partition, in log distance.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Trimmed maximum inside groups.
    hi: f64,
    /// Trimmed minimum between groups.
    lo: f64,
    /// Gap required (noise margin).
    required: f64,
    /// Pairs on the wrong side of the midpoint of the gap, untrimmed.
    violations: usize,
}

impl Step {
    fn gap(&self) -> f64 {
        self.lo - self.hi
    }
    fn holds(&self) -> bool {
        self.gap() >= self.required
    }
}

/// Is the partition (group of each position) a step: are the slowest pairs inside its
/// groups clearly below the fastest pairs between them? `lnd` holds log distances. Both
/// sides are trimmed by [`TRIM`] of the pairs inside (not of the pairs between: on a big
/// machine most pairs between are far, and 2% of them would hide the nearest groups).
fn step(lnd: &[Option<f64>], n: usize, group_of: &[usize], floor: f64) -> Option<Step> {
    let mut inside = Vec::new();
    let mut between = Vec::with_capacity(n * n / 2);
    for i in 0..n {
        for j in 0..i {
            if let Some(v) = lnd[i * n + j] {
                if group_of[i] == group_of[j] {
                    inside.push(v);
                } else {
                    between.push(v);
                }
            }
        }
    }
    if inside.is_empty() || between.is_empty() {
        return None;
    }
    let k = (TRIM * inside.len() as f64).floor() as usize;
    let hi_at = inside.len() - 1 - k.min(inside.len() - 1);
    let hi = *inside.select_nth_unstable_by(hi_at, f64::total_cmp).1;
    let lo_at = k.min(between.len() - 1);
    let lo = *between.select_nth_unstable_by(lo_at, f64::total_cmp).1;
    if lo - hi < floor {
        // Fails whatever the noise: no need to estimate it.
        return Some(Step {
            hi,
            lo,
            required: floor,
            violations: 0,
        });
    }
    // Noise: spread of the pairs of a group around the group's median, for groups with
    // at least 3 pairs (one pair has no spread).
    let mut per_group: Vec<Vec<f64>> = vec![Vec::new(); n];
    for i in 0..n {
        for j in 0..i {
            if group_of[i] == group_of[j] {
                if let Some(v) = lnd[i * n + j] {
                    per_group[group_of[i]].push(v);
                }
            }
        }
    }
    let mut dev = Vec::new();
    for g in per_group.iter().filter(|g| g.len() >= 3) {
        if let Some(med) = numalab_stats::median(g) {
            dev.extend(g.iter().map(|v| (v - med).abs()));
        }
    }
    let sigma = 1.4826 * numalab_stats::median(&dev).unwrap_or(0.0);
    let required = floor.max(GAP_SIGMAS * sigma);
    let t = 0.5 * (hi + lo);
    let violations =
        inside.iter().filter(|&&v| v > t).count() + between.iter().filter(|&&v| v < t).count();
    Some(Step {
        hi,
        lo,
        required,
        violations,
    })
}

/// Every partition along the clustering's merges that passes the step test. Consecutive
/// passing partitions whose merges only moved pairs the trimming had left out (a few CPUs
/// not yet merged) are the same step; of them, the one with the fewest pairs on the wrong
/// side, then the latest. A merge that lifts the inside above the previous gap and still
/// passes is another level.
fn step_levels(
    lnd: &[Option<f64>],
    n: usize,
    seq: &[(usize, usize)],
    floor: f64,
) -> Vec<(Vec<Vec<usize>>, Step)> {
    let mut group_of: Vec<usize> = (0..n).collect();
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut chosen: Vec<(usize, Step)> = Vec::new();
    let mut current: Option<(usize, Step)> = None;
    let mut previous: Option<Step> = None;
    let mut in_multi = 0usize;
    for (k, &(a, b)) in seq.iter().enumerate() {
        in_multi += usize::from(members[a].len() == 1) + usize::from(members[b].len() == 1);
        let moved = std::mem::take(&mut members[b]);
        for &x in &moved {
            group_of[x] = a;
        }
        members[a].extend(moved);
        let groups = n - (k + 1);
        // A level has at least 2 groups, and most CPUs are in a group of several.
        let st = if groups >= 2 && 2 * in_multi >= n {
            step(lnd, n, &group_of, floor).filter(Step::holds)
        } else {
            None
        };
        match st {
            Some(st) => {
                // The merge moved only pairs the previous partition's trimmed minimum
                // between already left out (a CPU or a group that had not joined yet):
                // the same step. Otherwise the inside now reaches above the previous
                // gap: another step.
                if previous.is_some_and(|p| st.hi > p.lo) {
                    chosen.extend(current.take());
                }
                previous = Some(st);
                // Fewest pairs on the wrong side; among equals the later partition, the
                // one with every CPU of the step merged (a CPU left out of its group sits
                // in the gap and can make it look wider).
                let better = current
                    .as_ref()
                    .is_none_or(|(_, c)| st.violations <= c.violations);
                if better {
                    current = Some((k + 1, st));
                }
            }
            None => {
                previous = None;
                chosen.extend(current.take());
            }
        }
    }
    chosen.extend(current.take());
    // Rebuild the chosen partitions by replaying the merges.
    let mut groups: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    let mut out = Vec::new();
    for (k, &(a, b)) in seq.iter().enumerate() {
        let moved = std::mem::take(&mut groups[b]);
        groups[a].extend(moved);
        if let Some((_, st)) = chosen.iter().find(|(at, _)| *at == k + 1) {
            out.push((canonical(&groups), *st));
        }
    }
    out
}

/// Bands of pairs without a level whose latency spreads widely: between the groups of
/// each level inside the groups of the next (single CPUs below the finest level, the
/// whole machine above the coarsest).
fn gradients(m: &LatencyMatrix, kept: &[Vec<Vec<usize>>], noise: f64) -> Vec<Gradient> {
    let n = m.n();
    let mem: Vec<Vec<usize>> = kept.iter().map(|p| membership(p, n)).collect();
    let top = kept.len();
    let mut out = Vec::new();
    for b in 0..=top {
        // Pairs of the band, by scope (group of level b; the whole machine above the top).
        let mut by_scope: std::collections::BTreeMap<usize, Vec<(usize, usize, f64)>> =
            Default::default();
        for i in 0..n {
            for j in 0..i {
                let same_parent = b == top || mem[b][i] == mem[b][j];
                let diff_child = b == 0 || mem[b - 1][i] != mem[b - 1][j];
                if same_parent && diff_child {
                    if let Some(x) = m.get(i, j) {
                        let scope = if b == top { 0 } else { mem[b][i] };
                        by_scope.entry(scope).or_default().push((i, j, x));
                    }
                }
            }
        }
        let mut v: Vec<f64> = Vec::new();
        let mut rel: Vec<(usize, usize, f64)> = Vec::new();
        for pairs in by_scope.values() {
            let xs: Vec<f64> = pairs.iter().map(|p| p.2).collect();
            let Some(med) = numalab_stats::median(&xs) else {
                continue;
            };
            v.extend(&xs);
            rel.extend(pairs.iter().map(|&(i, j, x)| (i, j, (x / med).ln())));
        }
        if v.len() < 10 {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let q = |s: &[f64], p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
        let mut r: Vec<f64> = rel.iter().map(|t| t.2).collect();
        r.sort_by(f64::total_cmp);
        let spread = q(&r, 0.95) - q(&r, 0.05);
        if spread < GRADIENT_SPREAD.ln_1p().max(4.0 * noise) {
            continue;
        }
        out.push(Gradient {
            within: (b < top).then_some(b),
            between: b.checked_sub(1),
            pairs: v.len(),
            low_ns: q(&v, 0.05),
            median_ns: q(&v, 0.5),
            high_ns: q(&v, 0.95),
            positional: positional(&rel, n),
        });
    }
    out
}

/// How much the CPUs' mean latencies in a band differ, against what independent scatter
/// of the pairs would make them differ (see [`Gradient::positional`]).
fn positional(rel: &[(usize, usize, f64)], n: usize) -> f64 {
    let mut sum = vec![0.0; n];
    let mut cnt = vec![0usize; n];
    for &(i, j, x) in rel {
        for c in [i, j] {
            sum[c] += x;
            cnt[c] += 1;
        }
    }
    let means: Vec<f64> = (0..n)
        .filter(|&c| cnt[c] > 0)
        .map(|c| sum[c] / cnt[c] as f64)
        .collect();
    if means.len() < 3 || rel.len() < 3 {
        return 0.0;
    }
    let var = |v: &[f64]| {
        let mu = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / (v.len() - 1) as f64
    };
    let pairs: Vec<f64> = rel.iter().map(|t| t.2).collect();
    let var_pairs = var(&pairs);
    if var_pairs <= 0.0 {
        return 0.0;
    }
    let degree = cnt.iter().sum::<usize>() as f64 / means.len() as f64;
    degree * var(&means) / var_pairs
}

/// A spread band is called a gradient with position when its CPUs' mean latencies differ
/// this many times more than independent scatter of the pairs would make them (see
/// [`Gradient::positional`]): latency depends on where the CPUs are. A convention (for
/// pure noise the ratio is about 1, give or take sqrt(2 / CPUs)).
pub const GRADIENT_POSITION: f64 = 3.0;

/// The sentence for a gradient (levels numbered from 1, finest first, as printed).
fn gradient_note(g: &Gradient) -> String {
    let scope = match (g.within, g.between) {
        (None, None) => "between any two CPUs".to_string(),
        (None, Some(b)) => format!("between the groups of level {}", b + 1),
        (Some(w), None) => format!("inside the groups of level {}", w + 1),
        (Some(w), Some(b)) => format!(
            "between the groups of level {} inside those of level {}",
            b + 1,
            w + 1
        ),
    };
    let what = if g.positional >= GRADIENT_POSITION {
        format!(
            "it grows with where the CPUs are (their mean latencies differ {:.1} times more than scatter alone would make them), e.g. with the distance on a mesh or ring to the line's home: a gradient, not a level",
            g.positional
        )
    } else {
        format!(
            "no CPU is consistently nearer or farther than the others ({:.1} times the scatter of independent pairs): it depends on the pair (where each line's home is, or noise), not a level",
            g.positional
        )
    };
    format!(
        "no discrete level {scope}: latency spreads from {:.1} to {:.1} ns (5th to 95th percentile of {} pairs, median {:.1} ns) with no step that separates the CPUs into groups; {what}",
        g.low_ns, g.high_ns, g.pairs, g.median_ns
    )
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

    /// How differently two CPUs see the others: the standard deviation over the other CPUs
    /// `k` of `D[i][k] - D[j][k]` (centred: a CPU that is uniformly farther from everyone,
    /// as on a mesh where latency adds the distance of each core to the line's home, is
    /// not different), relative to the median latency.
    fn profile(m: &LatencyMatrix) -> Dist {
        let n = m.n();
        let scale = numalab_stats::median(&m.measured_values())
            .filter(|v| *v > 0.0)
            .unwrap_or(1.0);
        let vals: Vec<Option<f64>> = (0..n * n).map(|x| m.get(x / n, x % n)).collect();
        let mut d = vec![None; n * n];
        for i in 0..n {
            for j in 0..i {
                let (mut s1, mut s2, mut c) = (0.0, 0.0, 0usize);
                for k in 0..n {
                    if k == i || k == j {
                        continue;
                    }
                    if let (Some(a), Some(b)) = (vals[i * n + k], vals[j * n + k]) {
                        let x = (a - b) / scale;
                        s1 += x;
                        s2 += x * x;
                        c += 1;
                    }
                }
                if c > 0 {
                    let mean = s1 / c as f64;
                    let v = (s2 / c as f64 - mean * mean).max(0.0).sqrt();
                    d[i * n + j] = Some(v);
                    d[j * n + i] = Some(v);
                }
            }
        }
        Dist { n, d }
    }

    /// Log distances.
    fn logs(&self) -> Vec<Option<f64>> {
        self.d
            .iter()
            .map(|v| v.map(|x| x.max(f64::MIN_POSITIVE).ln()))
            .collect()
    }
}

/// Average-linkage clustering: the merges, in order, and the partitions along them that
/// the separation peaks propose (scored by their median separation).
#[allow(clippy::type_complexity)]
fn levels_of(dist: &Dist, tau: f64) -> (Vec<(Vec<Vec<usize>>, f64)>, Vec<(usize, usize)>) {
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
    (out, seq)
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

/// Whether `coarse` is `fine` with exactly two groups merged.
fn one_merge_apart(fine: &[Vec<usize>], coarse: &[Vec<usize>], n: usize) -> bool {
    fine.len() == coarse.len() + 1 && nested(fine, coarse, n) && {
        let new: Vec<&Vec<usize>> = coarse.iter().filter(|g| !fine.contains(g)).collect();
        new.len() == 1
    }
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
