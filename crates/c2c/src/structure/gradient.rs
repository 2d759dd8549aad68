//! Gradients inside groups: latency that grows with position (a mesh, a ring) rather
//! than in steps, told apart from noise by shuffling.

use super::*;

/// Bands of pairs without a level whose latency spreads widely: between the groups of
/// each level inside the groups of the next (single CPUs below the finest level, the
/// whole machine above the coarsest).
/// Gives up early (partial results) once `stop` fires.
pub(super) fn gradients(
    m: &LatencyMatrix,
    kept: &[Vec<Vec<usize>>],
    noise: f64,
    stop: Stop,
) -> Vec<Gradient> {
    let n = m.n();
    let mem: Vec<Vec<usize>> = kept.iter().map(|p| membership(p, n)).collect();
    let top = kept.len();
    let mut out = Vec::new();
    for b in 0..=top {
        if stop() {
            break;
        }
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
pub(super) fn positional(rel: &[(usize, usize, f64)], n: usize) -> f64 {
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
pub(super) fn gradient_note(g: &Gradient) -> String {
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
pub(super) struct XorShift(pub(super) u64);

impl XorShift {
    pub(super) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// The matrix with its measured values shuffled over its measured pairs.
pub(super) fn shuffled(m: &LatencyMatrix, rng: &mut XorShift) -> LatencyMatrix {
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
