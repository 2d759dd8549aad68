//! Levels from clustering: the distance between CPUs' latency profiles, groups at each
//! threshold, and how well a grouping separates inside from between.

use super::*;

/// A symmetric distance table with holes.
pub(super) struct Dist {
    pub(super) n: usize,
    pub(super) d: Vec<Option<f64>>,
}

impl Dist {
    pub(super) fn get(&self, i: usize, j: usize) -> Option<f64> {
        self.d[i * self.n + j]
    }

    pub(super) fn latency(m: &LatencyMatrix) -> Dist {
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
    pub(super) fn nearest_neighbour_median(&self) -> f64 {
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
    /// Rows not reached when `stop` fires stay holes.
    pub(super) fn profile(m: &LatencyMatrix, stop: Stop) -> Dist {
        let n = m.n();
        let scale = numalab_stats::median(&m.measured_values())
            .filter(|v| *v > 0.0)
            .unwrap_or(1.0);
        // Latencies relative to the median, missing ones (and the diagonal: k = i or
        // k = j never counts) as NaN, so the inner loop is branch-free and vectorises.
        let mut vals: Vec<f64> = (0..n * n)
            .map(|x| m.get(x / n, x % n).map_or(f64::NAN, |v| v / scale))
            .collect();
        // A full matrix (every pair measured, the usual case) takes the loop without
        // a presence test: the diagonal is 0 there and its two terms are taken out.
        let full = (0..n * n).all(|x| x / n == x % n || !vals[x].is_nan());
        if full {
            for i in 0..n {
                vals[i * n + i] = 0.0;
            }
        }
        // Rows in parallel (O(n^3) in all: 2,000 CPUs are 4e9 steps), interleaved so
        // each thread gets long and short rows alike.
        let threads = std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .clamp(1, 64)
            .min(n.max(1));
        let rows: Vec<Vec<(usize, Vec<Option<f64>>)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let vals = &vals;
                    scope.spawn(move || {
                        (t..n)
                            .step_by(threads)
                            .take_while(|_| !stop())
                            .map(|i| {
                                let ri = &vals[i * n..(i + 1) * n];
                                let row = (0..i)
                                    .map(|j| {
                                        let rj = &vals[j * n..(j + 1) * n];
                                        if full {
                                            full_profile_distance(ri, rj, i, j)
                                        } else {
                                            profile_distance(ri, rj)
                                        }
                                    })
                                    .collect();
                                (i, row)
                            })
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a profile thread panicked"))
                .collect()
        });
        let mut d = vec![None; n * n];
        for (i, row) in rows.into_iter().flatten() {
            for (j, v) in row.into_iter().enumerate() {
                d[i * n + j] = v;
                d[j * n + i] = v;
            }
        }
        Dist { n, d }
    }

    /// Log distances.
    pub(super) fn logs(&self) -> Vec<Option<f64>> {
        self.d
            .iter()
            .map(|v| v.map(|x| x.max(f64::MIN_POSITIVE).ln()))
            .collect()
    }
}

/// The profile distance of two CPUs from their rows (relative latencies, NaN where
/// missing): the standard deviation of the differences measured on both rows.
fn profile_distance(a: &[f64], b: &[f64]) -> Option<f64> {
    const LANES: usize = 8;
    let (mut s1, mut s2, mut c) = ([0.0f64; LANES], [0.0f64; LANES], [0u32; LANES]);
    let chunks = a.chunks_exact(LANES).zip(b.chunks_exact(LANES));
    let tail = a.len() - a.len() % LANES;
    for (ca, cb) in chunks {
        for l in 0..LANES {
            let x = ca[l] - cb[l];
            let ok = !x.is_nan();
            let x = if ok { x } else { 0.0 };
            s1[l] += x;
            s2[l] += x * x;
            c[l] += u32::from(ok);
        }
    }
    let (mut t1, mut t2, mut tc) = (s1.iter().sum::<f64>(), s2.iter().sum::<f64>(), 0u64);
    tc += c.iter().map(|&v| u64::from(v)).sum::<u64>();
    for k in tail..a.len() {
        let x = a[k] - b[k];
        if !x.is_nan() {
            t1 += x;
            t2 += x * x;
            tc += 1;
        }
    }
    (tc > 0).then(|| {
        let mean = t1 / tc as f64;
        (t2 / tc as f64 - mean * mean).max(0.0).sqrt()
    })
}

/// [`profile_distance`] of two rows of a full matrix (no NaN; 0 on the diagonal):
/// every column summed, then the two diagonal columns `i` and `j` taken out.
fn full_profile_distance(a: &[f64], b: &[f64], i: usize, j: usize) -> Option<f64> {
    const LANES: usize = 8;
    let (mut s1, mut s2) = ([0.0f64; LANES], [0.0f64; LANES]);
    for (ca, cb) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for l in 0..LANES {
            let x = ca[l] - cb[l];
            s1[l] += x;
            s2[l] += x * x;
        }
    }
    let (mut t1, mut t2) = (s1.iter().sum::<f64>(), s2.iter().sum::<f64>());
    for k in a.len() - a.len() % LANES..a.len() {
        let x = a[k] - b[k];
        t1 += x;
        t2 += x * x;
    }
    for k in [i, j] {
        let x = a[k] - b[k];
        t1 -= x;
        t2 -= x * x;
    }
    let c = a.len().checked_sub(2).filter(|&c| c > 0)? as f64;
    let mean = t1 / c;
    Some((t2 / c - mean * mean).max(0.0).sqrt())
}

/// Average-linkage clustering: the merges, in order, and the partitions along them that
/// the separation peaks propose (scored by their median separation).
#[allow(clippy::type_complexity)]
pub(super) fn levels_of(
    dist: &Dist,
    tau: f64,
    stop: Stop,
) -> (Vec<(Vec<Vec<usize>>, f64)>, Vec<(usize, usize)>) {
    let n = dist.n;
    // Average linkage with a cached closest cluster per row, and the separation kept
    // up to date merge by merge (`incremental.rs`): the same merges and scores as a scan
    // of every pair and CPU, in O(n^2 log n) instead of O(n^3).
    let mut link = Linkage::new(dist);
    let mut sep = Separation::new(dist);
    // The sequence of partitions (as merges) and their scores.
    let mut seq: Vec<(usize, usize)> = Vec::with_capacity(n);
    let mut score: Vec<(f64, f64)> = vec![(0.0, 0.0)];
    for _ in 1..n {
        // Closest pair of clusters by average distance; pairs with no measured distance
        // come last, in index order.
        let Some((a, b)) = link.closest().filter(|_| !stop()) else {
            break;
        };
        link.merge(a, b);
        sep.merge(dist, a, b);
        seq.push((a, b));
        score.push(sep.score(dist, tau));
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
/// CPUs whose separation exceeds `tau`, and the median separation. The clustering keeps
/// it up to date with [`Separation`]; this direct form is what the tests check that with.
#[cfg(test)]
pub(super) fn separation(
    dist: &Dist,
    group_of: &[usize],
    members: &[Vec<usize>],
    tau: f64,
) -> (f64, f64) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The full-matrix loop gives the general one's distance (to rounding), with the
    /// two diagonal columns left out.
    #[test]
    fn full_rows_give_the_general_distance() {
        let n = 37;
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1000) as f64 / 300.0
        };
        let mut rows: Vec<Vec<f64>> = (0..n).map(|_| (0..n).map(|_| rnd()).collect()).collect();
        for (i, row) in rows.iter_mut().enumerate() {
            row[i] = f64::NAN;
        }
        for (i, j) in [(5, 2), (36, 0), (1, 0), (20, 19)] {
            let general = profile_distance(&rows[i], &rows[j]).unwrap();
            let (mut a, mut b) = (rows[i].clone(), rows[j].clone());
            a[i] = 0.0;
            b[j] = 0.0;
            let full = full_profile_distance(&a, &b, i, j).unwrap();
            assert!(
                (general - full).abs() <= 1e-12 * general.max(1.0),
                "{general} {full}"
            );
        }
    }
}
