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
//! The pairs between are trimmed by the same count as the pairs inside, but never by
//! more than [`TRIM`] of their own number: a partition that sets a few CPUs apart (a
//! slowed vCPU) has few pairs between, and trimming as many as the big groups have inside
//! would leave only their slowest (the emulated 160-CPU server's "1 x 155, 1 x 3, 1 x 2").
//!
//! A level whose groups are mostly of one size is **completed**: a CPU left alone joins
//! the group nearest to it on average when that group is incomplete, the CPU is nearer to
//! each new mate than the fastest pairs the level separates, and the step still holds
//! (an SMT pair noisier than the rest, whose CPUs the average-linkage merges joined to
//! neighbours before each other; a CPU whose sibling is not in the matrix stays alone).
//!
//! A latency-view level of groups of unequal sizes must **outlast each CPU's offset**
//! ([`offsets`]; a level of one group size is replicated hardware and spared): with the
//! least-squares fit of `c + a_i + a_j` to the log latencies divided out, its step must
//! still hold. Otherwise its groups are CPUs nearer to or farther from everyone (near the
//! line's home on a mesh, a slowed vCPU), not CPUs that share something; it is dropped
//! with a note. Balanced levels (sockets, complexes, SMT pairs) keep their steps whole.
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
//! reported. Core pairs on a mesh whose home gradient is wider than their own step (one
//! stop's two cores only 10-20% nearer each other than their neighbours) are found only
//! where they are a step in the latency or profile view: the offsets serve as a check,
//! not as a view of their own (a view from them, tried, found junk groupings on
//! hierarchical machines). Groups smaller than 2 CPUs are not levels. Groups whose members differ only
//! by a uniform offset (the Kunpeng 920 clusters in the published file) are not found.
//! A sampled matrix (holes) is handled (quantiles use the measured pairs), but sparse
//! samples weaken the evidence; [`Structure::confidence`] says so. The 2% trim, the 5%
//! gap, the one deviation of margin, the 10% spread are conventions (like the 1.5 of
//! Tukey's fences), chosen from what per-pair medians resolve and what outliers
//! measurements show, then checked on 29 published matrices from 8-core desktops to
//! 256-thread dual EPYCs; none was fitted to any one of them.

mod cluster;
mod gradient;
mod incremental;
mod offsets;
mod steps;

use cluster::*;
pub use gradient::GRADIENT_POSITION;
use gradient::*;
use incremental::*;
use offsets::*;
use steps::*;

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
        shape_of(self.groups.iter().map(|g| g.cpus.len()).collect())
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
/// confidence low). Runs in O(n^3) time for the profile distances (spread over the CPUs'
/// threads) and O(n^2 log n) for the clustering and its scores, in O(n^2) memory: a
/// 2,000-CPU matrix takes seconds of CPU time (docs/benchmarks.md).
pub fn infer(m: &LatencyMatrix) -> Structure {
    match infer_until(m, &|| false) {
        Ok(s) => s,
        Err(_) => unreachable!("a stop that never fires cannot interrupt"),
    }
}

/// [`infer`] that stops at Ctrl-C or SIGTERM: polls the process-wide stop flag
/// ([`numalab_schema::interrupt`]) between units of work (a row of profile distances, a
/// merge of the clustering, a candidate level) and returns [`Interrupted`] within a
/// fraction of a second of the request, whatever the size of the matrix. What every
/// caller in a command uses.
pub fn try_infer(m: &LatencyMatrix) -> Result<Structure, Interrupted> {
    infer_until(m, &numalab_schema::interrupt::requested)
}

pub use numalab_schema::interrupt::Interrupted;

/// What [`try_infer`] returns when stopped.
pub const INFERENCE_INTERRUPTED: Interrupted = Interrupted {
    during: "inferring the latency structure",
    left: "nothing of it was kept: run the command again to infer it",
};

/// Asked between units of work: whether to give up (true once, true ever after).
pub(super) type Stop<'a> = &'a (dyn Fn() -> bool + Sync);

/// [`infer`], giving up with [`Interrupted`] once `stop` says so. Inner loops only break
/// early when `stop` fires; the result is checked here, so a partial one never leaves.
fn infer_until(m: &LatencyMatrix, stop: Stop) -> Result<Structure, Interrupted> {
    let halt = || {
        if stop() {
            Err(INFERENCE_INTERRUPTED)
        } else {
            Ok(())
        }
    };
    halt()?;
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
        return Ok(Structure {
            cpus: m.cpus().to_vec(),
            levels: Vec::new(),
            confidence,
            notes,
            gradients: Vec::new(),
        });
    }

    halt()?;
    let (mut candidates, refused, nearest_profile) = candidate_levels(&clean, stop);
    halt()?;
    notes.extend(refused);
    // On small matrices noise alone forms groups (the clustering finds the best of few
    // partitions): a level must separate better than every level found in the same
    // values shuffled over the pairs, which have no structure, unless it separates
    // clearly (with 4 CPUs even a 10x contrast recurs by chance in a fifth of shuffles).
    if n <= SHUFFLE_TEST_MAX_CPUS && !candidates.is_empty() {
        let mut null_best = [0.0f64; 2];
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ n as u64);
        for _ in 0..SHUFFLES {
            halt()?;
            for (_, e, score) in candidate_levels(&shuffled(&clean, &mut rng), stop).0 {
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
    halt()?;
    let gradients = gradients(&clean, &partitions, noise, stop);
    halt()?;
    notes.extend(gradients.iter().map(gradient_note));
    Ok(Structure {
        cpus: m.cpus().to_vec(),
        levels,
        confidence,
        notes,
        gradients,
    })
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
/// Gives up early (partial results) once `stop` fires.
fn candidate_levels(m: &LatencyMatrix, stop: Stop) -> (Vec<Candidate>, Vec<String>, f64) {
    let n = m.n();
    let lat = Dist::latency(m);
    let prof = Dist::profile(m, stop);
    // The latency with each CPU's own offset removed (its distance to the line's home on
    // a mesh, a slowed vCPU): the check of the latency view's steps.
    let adj_logs = Dist::latency(&offsets_removed(m)).logs();
    let tau = 2.0 * prof.nearest_neighbour_median().max(RESOLUTION);
    let mut out = Vec::new();
    let mut refused = Vec::new();
    let views = [
        (&lat, Evidence::Latency, "latency"),
        (&prof, Evidence::Profile, "profile"),
    ];
    for (dist, evidence, view) in views {
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
        if stop() {
            break;
        }
        let (proposals, seq) = levels_of(dist, tau, stop);
        let accepted = step_levels(&lnd, n, &seq, floor, stop);
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
        for (partition, _) in &proposals {
            if stop() {
                break;
            }
            if accepted.iter().any(|(p, _)| p == partition) {
                continue;
            }
            let Some(st) = step(&lnd, n, &membership(partition, n), floor).filter(|st| !st.holds())
            else {
                continue;
            };
            refused.push(format!(
                "a grouping into {} groups ({view} view) was dropped: its slowest pairs inside groups ({}) are not clearly below its fastest pairs between groups ({}): a gap of {} where {} is required, so it cannot be told apart from noise or a gradient",
                partition.len(),
                shape(st.hi),
                shape(st.lo),
                pct(st.gap()),
                pct(st.required),
            ));
        }
        for (partition, st) in accepted {
            if stop() {
                break;
            }
            let (partition, st) = complete(&lnd, n, partition, st, floor);
            // A latency step of groups of unequal sizes must outlast the removal of each
            // CPU's offset: otherwise its groups are CPUs nearer to or farther from
            // everyone (near the line's home on a mesh, a slowed vCPU), not CPUs that
            // share something. Groups of one size (replicated hardware: tiles, SMT
            // pairs, complexes, sockets) are spared: on a mesh whose latency grows with
            // the distance between the cores, dividing out the offsets inflates the
            // central tiles' pairs more than their step.
            let uniform = partition.iter().all(|g| g.len() == partition[0].len());
            if evidence == Evidence::Latency && !uniform {
                if let Some(a) =
                    step(&adj_logs, n, &membership(&partition, n), floor).filter(|a| !a.holds())
                {
                    refused.push(format!(
                        "a grouping into {} groups ({}) was dropped: it is a step of the latencies ({} inside against {} between), but once each CPU's own offset is removed (how much nearer or farther it is from every other CPU: its distance to the line's home on a mesh, a slowed vCPU) the gap is {} where {} is required: its CPUs differ in where they are, not in what they share",
                        partition.len(),
                        shape_of(partition.iter().map(Vec::len).collect()),
                        shape(st.hi),
                        shape(st.lo),
                        pct(a.gap()),
                        pct(a.required),
                    ));
                    continue;
                }
            }
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

/// Group sizes as "36 x 2, 1 x 8", largest first.
fn shape_of(mut sizes: Vec<usize>) -> String {
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

#[cfg(test)]
mod interrupt_tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// 120 CPUs in SMT pairs, 4 sockets, a little deterministic scatter.
    fn machine() -> LatencyMatrix {
        let n = 120;
        let mut m = LatencyMatrix::new((0..n as u32).collect());
        for i in 0..n {
            for j in 0..i {
                let base = if i / 2 == j / 2 {
                    10.0
                } else if i / 30 == j / 30 {
                    50.0
                } else {
                    150.0
                };
                m.set(i, j, base * (1.0 + 0.01 * ((i * 7 + j * 13) % 5) as f64));
            }
        }
        m
    }

    /// A stop that fires at its `after`-th question (and ever after), and how many
    /// questions were asked.
    fn stop_after(after: usize, asked: &AtomicUsize) -> impl Fn() -> bool + Sync + '_ {
        move || asked.fetch_add(1, Ordering::SeqCst) + 1 >= after
    }

    #[test]
    fn a_stop_at_any_point_of_the_inference_ends_it_as_interrupted() {
        let m = machine();
        let never = AtomicUsize::new(0);
        let whole = infer_until(&m, &stop_after(usize::MAX, &never)).unwrap();
        assert_eq!(whole, infer(&m));
        assert!(!whole.levels.is_empty(), "{whole:?}");
        let asked = never.load(Ordering::SeqCst);
        // Polled between units of work: every merge of both clusterings at least.
        assert!(asked >= 2 * (m.n() - 1), "asked {asked} times");
        for after in [1, 2, 50, m.n(), asked / 2, asked - 1, asked] {
            let count = AtomicUsize::new(0);
            assert_eq!(
                infer_until(&m, &stop_after(after, &count)),
                Err(INFERENCE_INTERRUPTED),
                "stop at question {after} of {asked}"
            );
            // Once stopped, nothing more is worked on: a few more questions at most (one
            // per thread of the profile distances, one per phase).
            let extra = count.load(Ordering::SeqCst) - after;
            assert!(extra <= 80, "{extra} questions after the stop at {after}");
        }
    }

    #[test]
    fn the_interruption_exits_as_interrupted_and_says_so() {
        use numalab_schema::Classify;
        let e = INFERENCE_INTERRUPTED;
        assert_eq!(e.class(), numalab_schema::ErrorClass::Interrupted);
        assert!(e
            .to_string()
            .starts_with("interrupted (Ctrl-C, SIGTERM) while inferring the latency structure"));
    }
}
