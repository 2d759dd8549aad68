//! Lines grouped by their latency profile: lines served by the same home (or interface)
//! read alike from every probe core, up to measurement noise.
//!
//! # Method
//! The number of groups is not known. Groups are split in two along their principal
//! direction while a split explains more than noise (divisive 2-means; at most
//! [`MAX_GROUPS`]), refined by Lloyd iterations over all groups, then merged back by
//! Ward's rule where the final assignment no longer supports a split, cheapest merge
//! first: merging groups of n1 and n2 lines whose centroids
//! are d apart raises the squared error by `n1 n2 / (n1 + n2) d^2`. Splitting one
//! Gaussian blob of n points in two lowers its squared error by about `2/pi n sigma^2`
//! along the best direction (more for small n, by chance), while two groups a distance
//! D apart cost `n D^2 / 4` to merge. Merging stops at the first merge that would cost
//! more than `MERGE_LAMBDA (n1 + n2) sigma^2 + MERGE_SLACK * dims * sigma^2`, with
//! `sigma` the noise of one profile element. Two homes are therefore told apart when
//! their profiles differ by more than about `2 sqrt(MERGE_LAMBDA) sigma` (Euclidean,
//! over all probe cores); closer groups are reported as one.
//!
//! Every line then goes to its nearest final centroid; its confidence is the Gaussian
//! posterior of that group against all others (priors by group size).

/// Merge threshold, per line, in units of the element noise variance (see module doc).
pub const MERGE_LAMBDA: f64 = 2.0;
/// Merge threshold, per dimension.
pub const MERGE_SLACK: f64 = 4.0;

/// Most groups (a map holds 254 ids).
pub const MAX_GROUPS: usize = 254;

fn mean_of(points: &[Vec<f64>], idx: &[usize], dims: usize) -> Vec<f64> {
    let mut m = vec![0.0; dims];
    for &i in idx {
        for (a, x) in m.iter_mut().zip(&points[i]) {
            *a += x;
        }
    }
    m.iter_mut().for_each(|a| *a /= idx.len().max(1) as f64);
    m
}

/// Splits the group `idx` in two when that lowers its squared error by more than
/// noise explains (see the module doc); `None` otherwise.
fn split(
    points: &[Vec<f64>],
    idx: &[usize],
    var: f64,
    dims: usize,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let n = idx.len();
    if n < 4 {
        return None;
    }
    let m = mean_of(points, idx, dims);
    // Principal direction by power iteration on the scatter matrix.
    let mut v: Vec<f64> = (0..dims).map(|j| 1.0 + j as f64 * 1e-3).collect();
    let mut lambda = 0.0;
    for _ in 0..30 {
        let mut w = vec![0.0; dims];
        for &i in idx {
            let p = &points[i];
            let dot: f64 = p
                .iter()
                .zip(&m)
                .zip(&v)
                .map(|((x, c), u)| (x - c) * u)
                .sum();
            for ((wj, x), c) in w.iter_mut().zip(p).zip(&m) {
                *wj += dot * (x - c);
            }
        }
        let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm <= 0.0 {
            return None;
        }
        lambda = norm / n as f64;
        v = w.into_iter().map(|x| x / norm).collect();
    }
    let spread = lambda.sqrt();
    let mut cs = vec![
        m.iter()
            .zip(&v)
            .map(|(c, u)| c + spread * u)
            .collect::<Vec<f64>>(),
        m.iter()
            .zip(&v)
            .map(|(c, u)| c - spread * u)
            .collect::<Vec<f64>>(),
    ];
    let sub: Vec<Vec<f64>> = idx.iter().map(|&i| points[i].clone()).collect();
    let label = lloyd(&sub, &mut cs, 15);
    if cs.len() < 2 {
        return None;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (&i, &l) in idx.iter().zip(&label) {
        if l == 0 {
            a.push(i);
        } else {
            b.push(i);
        }
    }
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if n1 < 2.0 || n2 < 2.0 {
        return None;
    }
    let gain = n1 * n2 / (n1 + n2) * d2(&cs[0], &cs[1]);
    let needed = MERGE_LAMBDA * (n1 + n2) * var + MERGE_SLACK * dims as f64 * var;
    (gain > needed).then_some((a, b))
}

/// Groups found.
#[derive(Debug, Clone, PartialEq)]
pub struct Clusters {
    /// Group of each profile.
    pub label: Vec<usize>,
    /// Posterior probability of that group.
    pub confidence: Vec<f64>,
    /// Mean profile of each group.
    pub centroids: Vec<Vec<f64>>,
    /// Members of each group.
    pub sizes: Vec<usize>,
    /// Noise of one element used, ns.
    pub sigma: f64,
}

fn d2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The nearest centroid to `p` and its squared distance.
pub fn nearest(p: &[f64], cs: &[Vec<f64>]) -> (usize, f64) {
    let mut best = (0, f64::INFINITY);
    for (k, c) in cs.iter().enumerate() {
        let d = d2(p, c);
        if d < best.1 {
            best = (k, d);
        }
    }
    best
}

fn lloyd(points: &[Vec<f64>], cs: &mut Vec<Vec<f64>>, iters: usize) -> Vec<usize> {
    let dims = points.first().map_or(0, Vec::len);
    let mut label = vec![0usize; points.len()];
    for _ in 0..iters {
        let mut changed = false;
        for (i, p) in points.iter().enumerate() {
            let k = nearest(p, cs).0;
            if k != label[i] {
                changed = true;
                label[i] = k;
            }
        }
        let mut sum = vec![vec![0.0; dims]; cs.len()];
        let mut n = vec![0usize; cs.len()];
        for (i, p) in points.iter().enumerate() {
            n[label[i]] += 1;
            for (s, x) in sum[label[i]].iter_mut().zip(p) {
                *s += x;
            }
        }
        let mut keep = Vec::new();
        for (k, s) in sum.into_iter().enumerate() {
            if n[k] > 0 {
                keep.push(s.into_iter().map(|x| x / n[k] as f64).collect());
            }
        }
        let emptied = keep.len() != cs.len();
        *cs = keep;
        if emptied {
            for (i, p) in points.iter().enumerate() {
                label[i] = nearest(p, cs).0;
            }
            changed = true;
        }
        if !changed {
            break;
        }
    }
    label
}

impl Clusters {
    /// Every point in one group.
    pub fn single(points: &[Vec<f64>], sigma: f64) -> Clusters {
        let dims = points.first().map_or(0, Vec::len);
        let mut c = vec![0.0; dims];
        for p in points {
            for (a, x) in c.iter_mut().zip(p) {
                *a += x / points.len() as f64;
            }
        }
        Clusters {
            label: vec![0; points.len()],
            confidence: vec![1.0; points.len()],
            centroids: if points.is_empty() { vec![] } else { vec![c] },
            sizes: if points.is_empty() {
                vec![]
            } else {
                vec![points.len()]
            },
            sigma,
        }
    }
}

/// Groups `points` (one profile per line, all of the same length) whose elements carry
/// Gaussian noise of standard deviation `sigma`. Deterministic: the method draws
/// nothing at random (`seed` is kept for callers that vary it).
pub fn cluster(points: &[Vec<f64>], sigma: f64, seed: u64) -> Clusters {
    let n = points.len();
    let dims = points.first().map_or(0, Vec::len);
    let sigma = if sigma.is_finite() && sigma > 0.0 {
        sigma
    } else {
        1e-3
    };
    if n == 0 || dims == 0 {
        return Clusters {
            label: vec![0; n],
            confidence: vec![1.0; n],
            centroids: if n == 0 { vec![] } else { vec![vec![]] },
            sizes: if n == 0 { vec![] } else { vec![n] },
            sigma,
        };
    }
    // Divisive: split a group in two along its principal direction (2-means started
    // at the mean -+ the spread along it) while the split lowers the squared error by
    // more than noise would (the merge rule below, reversed). Splitting along the
    // principal direction keeps working in many dimensions, where the separation of two
    // homes lies along one direction and the noise along all of them.
    let var = sigma * sigma;
    let _ = seed;
    let mut groups_idx: Vec<Vec<usize>> = vec![(0..n).collect()];
    let mut k = 0;
    while k < groups_idx.len() {
        if groups_idx.len() >= MAX_GROUPS {
            break;
        }
        match split(points, &groups_idx[k], var, dims) {
            Some((a, b)) => {
                groups_idx[k] = a;
                groups_idx.push(b);
            }
            None => k += 1,
        }
    }
    let mut cs: Vec<Vec<f64>> = groups_idx
        .iter()
        .map(|g| mean_of(points, g, dims))
        .collect();
    let label = lloyd(points, &mut cs, 20);
    let mut sizes = vec![0usize; cs.len()];
    for &l in &label {
        sizes[l] += 1;
    }
    // Ward merging: undo splits the final assignment no longer supports.
    let mut groups: Vec<(Vec<f64>, usize)> = cs.into_iter().zip(sizes).collect();
    loop {
        let mut best: Option<(f64, usize, usize)> = None;
        for i in 0..groups.len() {
            for j in i + 1..groups.len() {
                let (n1, n2) = (groups[i].1 as f64, groups[j].1 as f64);
                let cost = n1 * n2 / (n1 + n2) * d2(&groups[i].0, &groups[j].0);
                let allowed = MERGE_LAMBDA * (n1 + n2) * var + MERGE_SLACK * dims as f64 * var;
                let ratio = cost / allowed;
                if ratio < 1.0 && best.is_none_or(|b| ratio < b.0) {
                    best = Some((ratio, i, j));
                }
            }
        }
        let Some((_, i, j)) = best else { break };
        let (cj, nj) = groups.remove(j);
        let (ci, ni) = &mut groups[i];
        let total = (*ni + nj) as f64;
        for (a, b) in ci.iter_mut().zip(&cj) {
            *a = (*a * *ni as f64 + b * nj as f64) / total;
        }
        *ni += nj;
    }
    let mut cs: Vec<Vec<f64>> = groups.into_iter().map(|g| g.0).collect();
    let label = lloyd(points, &mut cs, 10);
    let mut sizes = vec![0usize; cs.len()];
    for &l in &label {
        sizes[l] += 1;
    }
    let confidence = points
        .iter()
        .zip(&label)
        .map(|(p, &l)| {
            let dl = d2(p, &cs[l]);
            let mut z = 0.0;
            for (k, c) in cs.iter().enumerate() {
                let x = (sizes[k] as f64 / sizes[l] as f64).ln() - (d2(p, c) - dl) / (2.0 * var);
                z += x.exp();
            }
            1.0 / z
        })
        .collect();
    Clusters {
        label,
        confidence,
        centroids: cs,
        sizes,
        sigma,
    }
}

/// The best one-to-one matching of found labels to true labels (greedy on the
/// contingency table, largest overlaps first) and the share of points it gets right.
pub fn matched_accuracy(found: &[usize], truth: &[usize]) -> f64 {
    use std::collections::HashMap;
    let mut table: HashMap<(usize, usize), usize> = HashMap::new();
    for (&f, &t) in found.iter().zip(truth) {
        *table.entry((f, t)).or_default() += 1;
    }
    let mut cells: Vec<((usize, usize), usize)> = table.into_iter().collect();
    cells.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut used_f = std::collections::HashSet::new();
    let mut used_t = std::collections::HashSet::new();
    let mut right = 0;
    for ((f, t), c) in cells {
        if used_f.contains(&f) || used_t.contains(&t) {
            continue;
        }
        used_f.insert(f);
        used_t.insert(t);
        right += c;
    }
    right as f64 / found.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn blobs(
        centres: &[Vec<f64>],
        per: usize,
        sigma: f64,
        seed: u64,
    ) -> (Vec<Vec<f64>>, Vec<usize>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut pts = Vec::new();
        let mut truth = Vec::new();
        for i in 0..per * centres.len() {
            let k = i % centres.len();
            let p = centres[k]
                .iter()
                .map(|c| {
                    let u: f64 = 1.0 - rng.random::<f64>();
                    let v: f64 = rng.random::<f64>();
                    c + sigma * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
                })
                .collect();
            pts.push(p);
            truth.push(k);
        }
        (pts, truth)
    }

    #[test]
    fn separated_groups_are_found_with_their_count() {
        // 12 groups on a grid in 8 dimensions, 5 sigma apart at the closest.
        let centres: Vec<Vec<f64>> = (0..12)
            .map(|k| {
                (0..8)
                    .map(|d| {
                        if d == k % 8 {
                            5.0 * (1 + k / 8) as f64
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        let (pts, truth) = blobs(&centres, 200, 1.0, 7);
        let c = cluster(&pts, 1.0, 1);
        assert_eq!(c.centroids.len(), 12, "sizes {:?}", c.sizes);
        let acc = matched_accuracy(&c.label, &truth);
        assert!(acc > 0.98, "{acc}");
        assert!(c.confidence.iter().all(|p| (0.0..=1.0 + 1e-9).contains(p)));
    }

    #[test]
    fn one_blob_stays_one_group() {
        let (pts, _) = blobs(&[vec![100.0; 16]], 2000, 3.0, 3);
        let c = cluster(&pts, 3.0, 1);
        assert_eq!(c.centroids.len(), 1, "sizes {:?}", c.sizes);
        assert!(c.confidence.iter().all(|&p| p > 0.999));
    }

    #[test]
    fn groups_closer_than_the_noise_are_one() {
        let (pts, _) = blobs(&[vec![0.0; 4], vec![0.3; 4]], 500, 1.0, 5);
        assert_eq!(cluster(&pts, 1.0, 1).centroids.len(), 1);
    }

    #[test]
    fn matching_ignores_label_names() {
        assert_eq!(matched_accuracy(&[5, 5, 7, 7], &[0, 0, 1, 1]), 1.0);
        assert_eq!(matched_accuracy(&[5, 5, 5, 7], &[0, 0, 1, 1]), 0.75);
    }
}
