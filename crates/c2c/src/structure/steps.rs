//! Levels from discrete steps in the sorted latencies: where the latency jumps between
//! groups of pairs, and the groups each step separates.

use super::*;

/// The step test of one partition, in log distance.
#[derive(Debug, Clone, Copy)]
pub(super) struct Step {
    /// Trimmed maximum inside groups.
    pub(super) hi: f64,
    /// Trimmed minimum between groups.
    pub(super) lo: f64,
    /// Gap required (noise margin).
    pub(super) required: f64,
    /// Pairs on the wrong side of the midpoint of the gap, untrimmed.
    pub(super) violations: usize,
}

impl Step {
    pub(super) fn gap(&self) -> f64 {
        self.lo - self.hi
    }
    pub(super) fn holds(&self) -> bool {
        self.gap() >= self.required
    }
}

/// The ranks (0 = the fastest) of the step test's two trimmed values: the slowest pair
/// inside after [`TRIM`] of the `inside` pairs are set aside, and the fastest pair between
/// after as many are set aside, but never more than the same share of the `between` pairs:
/// a level that sets a few CPUs apart has few pairs between, and trimming as many as the
/// big groups have inside would leave only the slowest of them (one CPU apart from the
/// rest would be a "step" whenever its slowest pair is slow). Both counts are at least 1.
/// One rule for [`step`] and its incremental form (`incremental.rs`).
pub(super) fn trimmed_ranks(inside: usize, between: usize) -> (usize, usize) {
    let k = (TRIM * inside as f64).floor() as usize;
    let hi_at = inside - 1 - k.min(inside - 1);
    let lo_at = k
        .min((TRIM * between as f64).floor() as usize)
        .min(between - 1);
    (hi_at, lo_at)
}

/// Is the partition (group of each position) a step: are the slowest pairs inside its
/// groups clearly below the fastest pairs between them? `lnd` holds log distances. Both
/// sides are trimmed by [`TRIM`] of the pairs inside (not of the pairs between: on a big
/// machine most pairs between are far, and 2% of them would hide the nearest groups), the
/// pairs between by at most [`TRIM`] of their own number.
pub(super) fn step(lnd: &[Option<f64>], n: usize, group_of: &[usize], floor: f64) -> Option<Step> {
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
    let (hi_at, lo_at) = trimmed_ranks(inside.len(), between.len());
    let hi = *inside.select_nth_unstable_by(hi_at, f64::total_cmp).1;
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
pub(super) fn step_levels(
    lnd: &[Option<f64>],
    n: usize,
    seq: &[(usize, usize)],
    floor: f64,
    stop: Stop,
) -> Vec<(Vec<Vec<usize>>, Step)> {
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    // The step test kept up to date merge by merge (`incremental.rs`): the same values
    // as `step` of each partition, without a pass over every pair per merge.
    let mut steps = Steps::new(lnd, n);
    let mut chosen: Vec<(usize, Step)> = Vec::new();
    let mut current: Option<(usize, Step)> = None;
    let mut previous: Option<Step> = None;
    let mut in_multi = 0usize;
    for (k, &(a, b)) in seq.iter().enumerate() {
        if stop() {
            break;
        }
        in_multi += usize::from(members[a].len() == 1) + usize::from(members[b].len() == 1);
        let moved = std::mem::take(&mut members[b]);
        members[a].extend(moved);
        steps.merge(a, b);
        let groups = n - (k + 1);
        // A level has at least 2 groups, and most CPUs are in a group of several.
        let st = if groups >= 2 && 2 * in_multi >= n {
            steps.step(floor).filter(Step::holds)
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

/// Completes a level whose groups are mostly of one size: a CPU left alone joins the
/// group nearest to it on average when that group is incomplete (fewer members than the
/// most common size, another lone CPU among them), the CPU is nearer to each new mate
/// than the fastest pairs the level separates, and the step still holds (its trimming
/// allows a few pairs on the wrong side: the outliers). The clustering merges by averages, so a noisier CPU can join a
/// neighbouring group before its own sibling and be left out of the level where its group
/// is whole (an SMT pair whose pairs are noisier than the rest).
pub(super) fn complete(
    lnd: &[Option<f64>],
    n: usize,
    partition: Vec<Vec<usize>>,
    mut st: Step,
    floor: f64,
) -> (Vec<Vec<usize>>, Step) {
    let mut sizes: Vec<usize> = partition.iter().map(Vec::len).filter(|&s| s > 1).collect();
    sizes.sort_unstable();
    // The most common size (the larger among equals).
    let mut modal = 0;
    let mut best = 0;
    let mut i = 0;
    while i < sizes.len() {
        let run = sizes[i..].iter().take_while(|&&s| s == sizes[i]).count();
        if run >= best {
            best = run;
            modal = sizes[i];
        }
        i += run;
    }
    let mut p = partition;
    if modal < 2 {
        return (p, st);
    }
    loop {
        let mut changed = false;
        for s in 0..p.len() {
            if p[s].len() != 1 {
                continue;
            }
            let cpu = p[s][0];
            // The group nearest to it on average, of any size: it must be incomplete.
            let nearest = (0..p.len())
                .filter(|&g| g != s && !p[g].is_empty())
                .filter_map(|g| {
                    let v: Vec<f64> = p[g].iter().filter_map(|&x| lnd[cpu * n + x]).collect();
                    (!v.is_empty()).then(|| (g, v.iter().sum::<f64>() / v.len() as f64))
                })
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let Some((g, _)) = nearest.filter(|&(g, _)| p[g].len() < modal) else {
                continue;
            };
            // Nearer to each new mate than the fastest pairs the level separates: a
            // sibling measured with more noise, not a CPU whose sibling is missing.
            if !p[g]
                .iter()
                .all(|&x| lnd[cpu * n + x].is_some_and(|v| v < st.lo))
            {
                continue;
            }
            let mut trial = p.clone();
            trial[s].clear();
            trial[g].push(cpu);
            // The step must still hold, its pairs on the wrong side within what the
            // trimming allows.
            let Some(t) = step(lnd, n, &membership(&trial, n), floor) else {
                continue;
            };
            if t.holds() {
                p = trial;
                st = t;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    (canonical(&p), st)
}
