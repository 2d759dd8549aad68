//! The per-merge scores of the clustering kept up to date merge by merge instead of
//! recomputed from the whole matrix: the closest pair of clusters (a cached nearest
//! cluster per row), the per-CPU separation (each CPU's farthest group-mate only grows,
//! its nearest outsider is the next one in its own sorted row) and the step test's
//! order statistics (the pairs inside groups as a Fenwick tree over the ranks of all
//! pairs). Each gives exactly the values of the direct computation in `cluster.rs` and
//! `steps.rs` (tests compare them merge by merge); only the cost changes, from O(n^3)
//! for a whole clustering to about O(n^2 log n), which makes a 2,000-CPU matrix seconds.

use super::*;

/// Average-linkage distances between clusters with a cached closest cluster per row:
/// the closest pair is found in O(n) per merge instead of O(n^2).
pub(super) struct Linkage {
    n: usize,
    sum: Vec<f64>,
    cnt: Vec<u32>,
    active: Vec<bool>,
    /// Per active row `a`: the closest active `b > a` (the first among equals) and its
    /// average distance (infinite when no distance is measured).
    nn: Vec<Option<(f64, usize)>>,
}

impl Linkage {
    pub(super) fn new(dist: &Dist) -> Linkage {
        let n = dist.n;
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
        let mut l = Linkage {
            n,
            sum,
            cnt,
            active: vec![true; n],
            nn: vec![None; n],
        };
        for a in 0..n {
            l.nn[a] = l.row_best(a);
        }
        l
    }

    fn avg(&self, a: usize, b: usize) -> f64 {
        let c = self.cnt[a * self.n + b];
        if c > 0 {
            self.sum[a * self.n + b] / c as f64
        } else {
            f64::INFINITY
        }
    }

    fn row_best(&self, a: usize) -> Option<(f64, usize)> {
        let mut best: Option<(f64, usize)> = None;
        for b in a + 1..self.n {
            if !self.active[b] {
                continue;
            }
            let v = self.avg(a, b);
            if best.is_none_or(|(bv, _)| v < bv) {
                best = Some((v, b));
            }
        }
        best
    }

    /// The closest pair of active clusters `(a, b)`, `a < b`: the first in index order
    /// among equals, pairs with no measured distance last.
    pub(super) fn closest(&self) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        let mut best_v = f64::INFINITY;
        for a in 0..self.n {
            if !self.active[a] {
                continue;
            }
            if let Some((v, b)) = self.nn[a] {
                if best.is_none() || v < best_v {
                    best_v = v;
                    best = Some((a, b));
                }
            }
        }
        best
    }

    /// [`Linkage::closest`] by scanning every pair, as the clustering did before the
    /// cache: what the tests compare the cache with.
    #[cfg(test)]
    fn closest_by_scan(&self) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        let mut best_v = f64::INFINITY;
        for a in (0..self.n).filter(|&a| self.active[a]) {
            for b in (a + 1..self.n).filter(|&b| self.active[b]) {
                let v = self.avg(a, b);
                if best.is_none() || v < best_v {
                    best_v = v;
                    best = Some((a, b));
                }
            }
        }
        best
    }

    /// Merges cluster `b` into `a` (`a < b`).
    pub(super) fn merge(&mut self, a: usize, b: usize) {
        let n = self.n;
        for z in 0..n {
            if self.active[z] && z != a && z != b {
                self.sum[a * n + z] += self.sum[b * n + z];
                self.cnt[a * n + z] += self.cnt[b * n + z];
                self.sum[z * n + a] = self.sum[a * n + z];
                self.cnt[z * n + a] = self.cnt[a * n + z];
            }
        }
        self.active[b] = false;
        self.nn[b] = None;
        self.nn[a] = self.row_best(a);
        for z in 0..n {
            if !self.active[z] || z == a {
                continue;
            }
            let Some((cv, cb)) = self.nn[z] else { continue };
            if cb == a || cb == b {
                self.nn[z] = self.row_best(z);
            } else if z < a {
                let v = self.avg(z, a);
                if v < cv || (v == cv && a < cb) {
                    self.nn[z] = Some((v, a));
                }
            }
        }
    }
}

/// The per-CPU separation of [`separation`] kept up to date over merges.
pub(super) struct Separation {
    n: usize,
    /// Each CPU's measured partners, nearest first.
    sorted: Vec<Vec<u32>>,
    /// Position in `sorted` of the nearest partner not (yet known to be) a group-mate.
    ptr: Vec<usize>,
    far: Vec<Option<f64>>,
    group_of: Vec<usize>,
    members: Vec<Vec<usize>>,
}

impl Separation {
    pub(super) fn new(dist: &Dist) -> Separation {
        let n = dist.n;
        let sorted = (0..n)
            .map(|i| {
                let mut row: Vec<(f64, u32)> = (0..n)
                    .filter(|&j| j != i)
                    .filter_map(|j| dist.get(i, j).map(|v| (v, j as u32)))
                    .collect();
                // Among equal distances any order: only the nearest value is read.
                row.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
                row.into_iter().map(|(_, j)| j).collect()
            })
            .collect();
        Separation {
            n,
            sorted,
            ptr: vec![0; n],
            far: vec![None; n],
            group_of: (0..n).collect(),
            members: (0..n).map(|i| vec![i]).collect(),
        }
    }

    /// Merges group `b` into `a`, as the clustering does.
    pub(super) fn merge(&mut self, dist: &Dist, a: usize, b: usize) {
        for &x in &self.members[a] {
            for &y in &self.members[b] {
                if let Some(v) = dist.get(x, y) {
                    self.far[x] = Some(self.far[x].map_or(v, |f: f64| f.max(v)));
                }
                if let Some(v) = dist.get(y, x) {
                    self.far[y] = Some(self.far[y].map_or(v, |f: f64| f.max(v)));
                }
            }
        }
        let moved = std::mem::take(&mut self.members[b]);
        for &x in &moved {
            self.group_of[x] = a;
        }
        self.members[a].extend(moved);
        for &x in &self.members[a] {
            let row = &self.sorted[x];
            let mut p = self.ptr[x];
            while p < row.len() && self.group_of[row[p] as usize] == a {
                p += 1;
            }
            self.ptr[x] = p;
        }
    }

    /// The fraction of CPUs whose separation exceeds `tau` and the median separation,
    /// as [`separation`] gives them for the current groups.
    pub(super) fn score(&self, dist: &Dist, tau: f64) -> (f64, f64) {
        let s: Vec<f64> = (0..self.n)
            .map(|i| {
                if self.members[self.group_of[i]].len() < 2 {
                    return 0.0;
                }
                let near = self.sorted[i]
                    .get(self.ptr[i])
                    .and_then(|&j| dist.get(i, j as usize));
                match (self.far[i], near) {
                    (Some(f), Some(o)) if f > 0.0 && o > 0.0 => (o / f).ln(),
                    (Some(_), Some(o)) if o > 0.0 => f64::MAX,
                    _ => 0.0,
                }
            })
            .collect();
        let frac = s.iter().filter(|&&v| v > tau).count() as f64 / self.n as f64;
        (frac, numalab_stats::median(&s).unwrap_or(0.0))
    }
}

/// The step test of [`step`] kept up to date over merges: every measured pair ranked
/// once by value, the pairs inside groups counted in a Fenwick tree over the ranks, so
/// the trimmed maximum inside and minimum between are O(log n^2) per merge.
pub(super) struct Steps<'a> {
    lnd: &'a [Option<f64>],
    n: usize,
    vals: Vec<f64>,
    rank: Vec<u32>,
    tree: Vec<u32>,
    inside: usize,
    members: Vec<Vec<usize>>,
}

impl<'a> Steps<'a> {
    pub(super) fn new(lnd: &'a [Option<f64>], n: usize) -> Steps<'a> {
        let mut pairs: Vec<(f64, usize)> = Vec::new();
        for i in 0..n {
            for j in 0..i {
                if let Some(v) = lnd[i * n + j] {
                    pairs.push((v, i * n + j));
                }
            }
        }
        pairs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut rank = vec![u32::MAX; n * n];
        for (r, &(_, idx)) in pairs.iter().enumerate() {
            rank[idx] = r as u32;
        }
        Steps {
            lnd,
            n,
            tree: vec![0; pairs.len() + 1],
            vals: pairs.into_iter().map(|p| p.0).collect(),
            rank,
            inside: 0,
            members: (0..n).map(|i| vec![i]).collect(),
        }
    }

    /// Merges group `b` into `a`: their pairs move inside.
    pub(super) fn merge(&mut self, a: usize, b: usize) {
        let n = self.n;
        for &x in &self.members[a] {
            for &y in &self.members[b] {
                let r = self.rank[x.max(y) * n + x.min(y)];
                if r != u32::MAX {
                    let mut p = r as usize + 1;
                    while p < self.tree.len() {
                        self.tree[p] += 1;
                        p += p & p.wrapping_neg();
                    }
                    self.inside += 1;
                }
            }
        }
        let moved = std::mem::take(&mut self.members[b]);
        self.members[a].extend(moved);
    }

    /// Inside pairs among the `r` lowest ranks.
    fn prefix(&self, r: usize) -> usize {
        let (mut p, mut c) = (r, 0usize);
        while p > 0 {
            c += self.tree[p] as usize;
            p &= p - 1;
        }
        c
    }

    /// The rank of the `k`-th (from 0) pair inside (`inside`) or between groups.
    fn kth(&self, k: usize, inside: bool) -> usize {
        let len = self.tree.len() - 1;
        let (mut pos, mut rem) = (0usize, k);
        let mut step = if len == 0 { 0 } else { 1 << len.ilog2() };
        while step > 0 {
            let next = pos + step;
            if next <= len {
                let here = self.tree[next] as usize;
                let c = if inside { here } else { step - here };
                if c <= rem {
                    pos = next;
                    rem -= c;
                }
            }
            step >>= 1;
        }
        pos
    }

    /// [`step`] of the current groups.
    pub(super) fn step(&self, floor: f64) -> Option<Step> {
        let inside = self.inside;
        let between = self.vals.len() - inside;
        if inside == 0 || between == 0 {
            return None;
        }
        let (hi_at, lo_at) = super::steps::trimmed_ranks(inside, between);
        let hi = self.vals[self.kth(hi_at, true)];
        let lo = self.vals[self.kth(lo_at, false)];
        if lo - hi < floor {
            return Some(Step {
                hi,
                lo,
                required: floor,
                violations: 0,
            });
        }
        let n = self.n;
        let mut dev = Vec::new();
        for g in self.members.iter().filter(|g| g.len() >= 2) {
            let mut vals = Vec::new();
            for (ix, &x) in g.iter().enumerate() {
                for &y in &g[..ix] {
                    if let Some(v) = self.lnd[x.max(y) * n + x.min(y)] {
                        vals.push(v);
                    }
                }
            }
            if vals.len() >= 3 {
                if let Some(med) = numalab_stats::median(&vals) {
                    dev.extend(vals.iter().map(|v| (v - med).abs()));
                }
            }
        }
        let sigma = 1.4826 * numalab_stats::median(&dev).unwrap_or(0.0);
        let required = floor.max(GAP_SIGMAS * sigma);
        let t = 0.5 * (hi + lo);
        let le = self.vals.partition_point(|&v| v <= t);
        let lt = self.vals.partition_point(|&v| v < t);
        let violations = (inside - self.prefix(le)) + (lt - self.prefix(lt));
        Some(Step {
            hi,
            lo,
            required,
            violations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matrix of clusters of 4 in sockets of 16 with noise, some holes and ties.
    fn matrix(n: usize, seed: u64, holes: bool) -> LatencyMatrix {
        let mut m = LatencyMatrix::new((0..n as u32).collect());
        let mut x = seed | 1;
        for i in 0..n {
            for j in 0..i {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if holes && x.is_multiple_of(11) {
                    continue;
                }
                let base = if i / 4 == j / 4 {
                    20.0
                } else if i / 16 == j / 16 {
                    60.0
                } else {
                    150.0
                };
                // Whole ns values give ties.
                m.set(i, j, base + (x % 7) as f64);
            }
        }
        m
    }

    /// Every merge of the clustering: the incremental closest pair, separation and step
    /// test equal the direct ones, bit for bit.
    #[test]
    fn incremental_scores_equal_the_direct_ones_at_every_merge() {
        for (n, seed, holes) in [
            (24, 7, false),
            (40, 99, true),
            (33, 5, true),
            (64, 3, false),
        ] {
            let m = matrix(n, seed, holes);
            for dist in [Dist::latency(&m), Dist::profile(&m, &|| false)] {
                let lnd = dist.logs();
                let mut link = Linkage::new(&dist);
                let mut sep = Separation::new(&dist);
                let mut steps = Steps::new(&lnd, n);
                let mut group_of: Vec<usize> = (0..n).collect();
                let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
                for _ in 1..n {
                    let (a, b) = link.closest().unwrap();
                    assert_eq!(Some((a, b)), link.closest_by_scan(), "{n}");
                    link.merge(a, b);
                    sep.merge(&dist, a, b);
                    steps.merge(a, b);
                    let moved = std::mem::take(&mut members[b]);
                    for &x in &moved {
                        group_of[x] = a;
                    }
                    members[a].extend(moved);
                    let want = separation(&dist, &group_of, &members, 0.05);
                    let got = sep.score(&dist, 0.05);
                    assert_eq!(want.0.to_bits(), got.0.to_bits());
                    assert_eq!(want.1.to_bits(), got.1.to_bits());
                    for floor in [0.0, 0.05, 10.0] {
                        let want = step(&lnd, n, &group_of, floor);
                        let got = steps.step(floor);
                        match (want, got) {
                            (None, None) => {}
                            (Some(w), Some(g)) => {
                                assert_eq!(w.hi.to_bits(), g.hi.to_bits());
                                assert_eq!(w.lo.to_bits(), g.lo.to_bits());
                                assert_eq!(w.required.to_bits(), g.required.to_bits());
                                assert_eq!(w.violations, g.violations);
                            }
                            (w, g) => panic!("{w:?} vs {g:?}"),
                        }
                    }
                }
            }
        }
    }
}
