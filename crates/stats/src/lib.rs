//! Robust statistics, pure and deterministic.
//!
//! Measurements on shared machines are noisy and skewed (a timer interrupt, another
//! tenant), so numalab reports medians and percentiles, flags outliers by the modified
//! z-score, and gives bootstrap confidence intervals whose seed is written into the
//! output so that anyone can recompute them.

pub mod knee;
pub mod plateau;
pub mod quantiles;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The default seed for bootstrap resampling (recorded in every [`Interval`]).
pub const DEFAULT_SEED: u64 = 0x6e75_6d61_6c61_6221; // "numalab!"

/// Summary of a sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (p50).
    pub median: f64,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Summary {
    /// Summarises a non-empty sample; `None` if it is empty or holds a NaN.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| v.is_nan()) {
            return None;
        }
        let mut s = values.to_vec();
        s.sort_by(f64::total_cmp);
        let median = percentile_sorted(&s, 50.0);
        let mut dev: Vec<f64> = s.iter().map(|v| (v - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        Some(Summary {
            n: s.len(),
            min: s[0],
            max: s[s.len() - 1],
            mean: s.iter().sum::<f64>() / s.len() as f64,
            median,
            mad: percentile_sorted(&dev, 50.0),
            p10: percentile_sorted(&s, 10.0),
            p90: percentile_sorted(&s, 90.0),
            p99: percentile_sorted(&s, 99.0),
        })
    }

    /// Relative spread, MAD / median (0 when the median is 0).
    pub fn relative_mad(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            self.mad / self.median.abs()
        }
    }
}

/// Percentile `p` (0-100) of an ascending-sorted slice, by linear interpolation between
/// closest ranks (the definition NumPy uses by default). Panics on an empty slice.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    assert!(!sorted.is_empty(), "percentile of an empty sample");
    let p = p.clamp(0.0, 100.0);
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// Percentile `p` (0-100) of an unsorted sample; `None` if empty.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    Some(percentile_sorted(&s, p))
}

/// Median of a sample; `None` if empty.
pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50.0)
}

/// Median of an ascending-sorted slice by the midpoint convention: the middle value,
/// or `(a + b) / 2` of the two middle values for an even length; `None` if empty.
///
/// [`median`] interpolates as `a + (b - a) / 2`, which can differ from this in the last
/// bit (and where `b - a` overflows); callers whose figures were defined by the
/// midpoint keep it through this function.
pub fn median_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The upper median: the value at index `n / 2` of the sample sorted by
/// [`f64::total_cmp`] (for an even length the higher of the two middle values, so the
/// result is always one of the sample's values); `None` if empty.
pub fn upper_median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    let mid = v.len() / 2;
    let (_, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    Some(*m)
}

/// Modified z-scores (Iglewicz and Hoaglin): 0.6745 (x - median) / MAD.
/// All zeros when the MAD is 0.
pub fn modified_z_scores(values: &[f64]) -> Vec<f64> {
    let Some(s) = Summary::of(values) else {
        return vec![0.0; values.len()];
    };
    if s.mad == 0.0 {
        return vec![0.0; values.len()];
    }
    values
        .iter()
        .map(|v| 0.6745 * (v - s.median) / s.mad)
        .collect()
}

/// Indices of outliers: |modified z| > 3.5, the threshold Iglewicz and Hoaglin recommend.
pub fn outliers(values: &[f64]) -> Vec<usize> {
    modified_z_scores(values)
        .iter()
        .enumerate()
        .filter(|(_, z)| z.abs() > 3.5)
        .map(|(i, _)| i)
        .collect()
}

/// The sample without its outliers (see [`outliers`]).
pub fn without_outliers(values: &[f64]) -> Vec<f64> {
    let out = outliers(values);
    values
        .iter()
        .enumerate()
        .filter(|(i, _)| !out.contains(i))
        .map(|(_, v)| *v)
        .collect()
}

/// A confidence interval for a statistic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The statistic on the whole sample.
    pub estimate: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Confidence level (e.g. 0.95).
    pub level: f64,
    /// Bootstrap resamples used.
    pub resamples: usize,
    /// Seed of the resampling.
    pub seed: u64,
    /// Set when a sample was too large to resample whole ([`RESAMPLE_MAX_SAMPLES`]) and
    /// its evenly spaced quantiles were resampled instead; absent (and not written)
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinned: Option<Thinned>,
}

/// How a bootstrap bounded its work: every sample of more than `quantiles` values was
/// resampled as `quantiles` evenly spaced quantiles of it ([`quantile_sample`]). The
/// statistic itself (`estimate`) is still that of the whole sample; the interval is that
/// of a sample of `quantiles` values, so it is wider than a bootstrap of every value
/// would be (for a median, by about the square root of `samples / quantiles`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thinned {
    /// Quantiles resampled in place of the sample.
    pub quantiles: usize,
    /// Values of the largest sample thinned.
    pub samples: usize,
}

/// The most values of one sample that a bootstrap ([`bootstrap`], [`ratio_interval`])
/// resamples: a larger sample is replaced by this many evenly spaced quantiles of it
/// ([`quantile_sample`]) and the interval says so ([`Interval::thinned`]). 2,000
/// resamples of the 1,999,000 pairs of a 2,000-CPU core-to-core matrix never ended;
/// of 5,000 quantiles, they take about a second (less in a release build). Samples up to
/// this size are resampled whole, as before.
pub const RESAMPLE_MAX_SAMPLES: usize = 5_000;

/// A computation given up because its caller asked it to stop (the `stop` check of
/// [`bootstrap_until`] and [`ratio_interval_until`] said so).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// How often (in resamples) a bootstrap asks its `stop` check.
const STOP_EVERY: usize = 16;

/// `values` as resampled: whole up to [`RESAMPLE_MAX_SAMPLES`], else that many evenly
/// spaced quantiles, with the thinning.
fn bounded(values: &[f64]) -> (std::borrow::Cow<'_, [f64]>, Option<Thinned>) {
    if values.len() <= RESAMPLE_MAX_SAMPLES {
        (std::borrow::Cow::Borrowed(values), None)
    } else {
        (
            std::borrow::Cow::Owned(quantile_sample(values, RESAMPLE_MAX_SAMPLES)),
            Some(Thinned {
                quantiles: RESAMPLE_MAX_SAMPLES,
                samples: values.len(),
            }),
        )
    }
}

impl Interval {
    /// Whether two intervals overlap (a difference "within the noise").
    pub fn overlaps(&self, other: &Interval) -> bool {
        self.low <= other.high && other.low <= self.high
    }
}

/// Percentile bootstrap interval of `statistic` over `values`. `None` if empty. A sample
/// of more than [`RESAMPLE_MAX_SAMPLES`] values is resampled as that many of its
/// quantiles ([`Interval::thinned`]).
pub fn bootstrap(
    values: &[f64],
    statistic: impl Fn(&[f64]) -> f64,
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    bootstrap_until(values, statistic, level, resamples, seed, &|| false).unwrap_or(None)
}

/// [`bootstrap`], asking `stop` every few resamples and giving up ([`Stopped`]) when it
/// says so: for callers that honour Ctrl-C within a large computation.
pub fn bootstrap_until(
    values: &[f64],
    statistic: impl Fn(&[f64]) -> f64,
    level: f64,
    resamples: usize,
    seed: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Interval>, Stopped> {
    if values.is_empty() || resamples == 0 {
        return Ok(None);
    }
    let estimate = statistic(values);
    let (from, thinned) = bounded(values);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf = vec![0.0; from.len()];
    let mut stats = Vec::with_capacity(resamples);
    for r in 0..resamples {
        if r % STOP_EVERY == 0 && stop() {
            return Err(Stopped);
        }
        resample(&mut rng, &from, &mut buf);
        stats.push(statistic(&buf));
    }
    let mut i = percentile_interval(stats, estimate, level, resamples, seed);
    i.thinned = thinned;
    Ok(Some(i))
}

/// Fills `into` with values drawn from `from` with replacement.
pub(crate) fn resample(rng: &mut ChaCha8Rng, from: &[f64], into: &mut [f64]) {
    for slot in into.iter_mut() {
        *slot = from[rng.random_range(0..from.len())];
    }
}

/// The percentile interval at `level` of the bootstrap statistics `stats`.
pub(crate) fn percentile_interval(
    mut stats: Vec<f64>,
    estimate: f64,
    level: f64,
    resamples: usize,
    seed: u64,
) -> Interval {
    stats.sort_by(f64::total_cmp);
    let alpha = (1.0 - level) / 2.0 * 100.0;
    Interval {
        estimate,
        low: percentile_sorted(&stats, alpha),
        high: percentile_sorted(&stats, 100.0 - alpha),
        level,
        resamples,
        seed,
        thinned: None,
    }
}

/// 95% bootstrap interval of the median with 2000 resamples and the default seed; for
/// more than [`RESAMPLE_MAX_SAMPLES`] values, [`median_rank_interval`] (no resampling:
/// `resamples` 0): the bootstrap would resample their quantiles, an interval wider than
/// the sample's own, where the rank interval of so many values agrees with a bootstrap of
/// every value to within a few rank steps and takes one sort (2000 resamples of the 4
/// million pairs of a 2,000-CPU core-to-core matrix took hours).
pub fn median_interval(values: &[f64]) -> Option<Interval> {
    if values.len() > RESAMPLE_MAX_SAMPLES {
        return median_rank_interval(values);
    }
    bootstrap(
        values,
        |v| median(v).unwrap_or(f64::NAN),
        0.95,
        2000,
        DEFAULT_SEED,
    )
}

/// The distribution-free 95% interval of the median from order statistics: the values
/// at ranks n/2 -+ 1.96 sqrt(n)/2 of the sorted sample (the normal approximation of the
/// binomial count of values below the median), in O(n log n). Not a bootstrap:
/// `resamples` and `seed` are 0.
pub fn median_rank_interval(values: &[f64]) -> Option<Interval> {
    if values.is_empty() {
        return None;
    }
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    let half = 1.959_963_984_540_054 * n.sqrt() / 2.0;
    let low = (n / 2.0 - half).floor().max(0.0) as usize;
    let high = ((n / 2.0 + half).ceil() as usize).min(s.len() - 1);
    Some(Interval {
        estimate: percentile_sorted(&s, 50.0),
        low: s[low.min(s.len() - 1)],
        high: s[high],
        level: 0.95,
        resamples: 0,
        seed: 0,
        thinned: None,
    })
}

/// Interval of the ratio of medians a/b, by resampling both samples independently. A
/// sample of more than [`RESAMPLE_MAX_SAMPLES`] values is resampled as that many of its
/// quantiles ([`Interval::thinned`]); the estimate is the ratio of the whole samples'
/// medians.
pub fn ratio_interval(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    ratio_interval_until(a, b, level, resamples, seed, &|| false).unwrap_or(None)
}

/// [`ratio_interval`], asking `stop` between its steps and every few resamples and
/// giving up ([`Stopped`]) when it says so.
pub fn ratio_interval_until(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Option<Interval>, Stopped> {
    if a.is_empty() || b.is_empty() || resamples == 0 {
        return Ok(None);
    }
    let check = || if stop() { Err(Stopped) } else { Ok(()) };
    let (Some(ma), Some(mb)) = (median(a), median(b)) else {
        return Ok(None);
    };
    check()?;
    let estimate = ma / mb;
    let (fa, ta) = bounded(a);
    check()?;
    let (fb, tb) = bounded(b);
    let thinned = match (ta, tb) {
        (Some(x), Some(y)) => Some(if x.samples >= y.samples { x } else { y }),
        (x, y) => x.or(y),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ba = vec![0.0; fa.len()];
    let mut bb = vec![0.0; fb.len()];
    let mut stats = Vec::with_capacity(resamples);
    for r in 0..resamples {
        if r % STOP_EVERY == 0 {
            check()?;
        }
        resample(&mut rng, &fa, &mut ba);
        resample(&mut rng, &fb, &mut bb);
        let (Some(x), Some(y)) = (median(&ba), median(&bb)) else {
            return Ok(None);
        };
        stats.push(x / y);
    }
    let mut i = percentile_interval(stats, estimate, level, resamples, seed);
    i.thinned = thinned;
    Ok(Some(i))
}

/// `k` evenly spaced order statistics of `values` (the ((i + 1/2) / k)-th quantiles,
/// i = 0..k): the same distribution in a sample of `k`, for a bootstrap of a sample too
/// large to resample. All of `values`, sorted, when `k` is at least their number.
pub fn quantile_sample(values: &[f64], k: usize) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if k >= n {
        return sorted;
    }
    (0..k)
        .map(|i| sorted[((2 * i + 1) * n) / (2 * k)])
        .collect()
}

/// Distribution-free confidence interval of the `p`-th percentile (0-100) from order
/// statistics: the ranks n q -+ z sqrt(n q (1 - q)) of the sorted sample (normal
/// approximation of the binomial), clamped to the sample. Fast for large samples (one
/// sort, no resampling), so it suits per-request response times; `resamples` and `seed`
/// of the result are 0. Assumes independent values. `None` for an empty sample or a NaN.
pub fn quantile_interval(values: &[f64], p: f64, level: f64) -> Option<Interval> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    let q = (p / 100.0).clamp(0.0, 1.0);
    let z = normal_quantile(0.5 + level.clamp(0.0, 0.9999) / 2.0);
    let spread = z * (n * q * (1.0 - q)).sqrt();
    // 1-based ranks, turned into 0-based indices.
    let lo = ((n * q - spread).floor().max(1.0) as usize).min(s.len()) - 1;
    let hi = ((n * q + spread).ceil().max(1.0) as usize).min(s.len()) - 1;
    Some(Interval {
        estimate: percentile_sorted(&s, p),
        low: s[lo],
        high: s[hi],
        level,
        resamples: 0,
        seed: 0,
        thinned: None,
    })
}

/// Quantile of the standard normal distribution (Acklam's rational approximation,
/// relative error below 1.2e-9), for `prob` in (0, 1).
pub fn normal_quantile(prob: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = prob.clamp(1e-300, 1.0 - 1e-16);
    let low = 0.02425;
    if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -normal_quantile(1.0 - p)
    }
}

/// Quantile of Student's t distribution with `df` degrees of freedom, for `prob` in
/// (0, 1): exact for 1 and 2 degrees of freedom, else the Cornish-Fisher expansion
/// around the normal quantile (Abramowitz and Stegun 26.7.5; within 0.3% of the exact
/// value at df = 3 for the 97.5% quantile, closer as df grows).
pub fn t_quantile(prob: f64, df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1 => (std::f64::consts::PI * (prob - 0.5)).tan(),
        2 => (2.0 * prob - 1.0) / (2.0 * prob * (1.0 - prob)).sqrt(),
        _ => {
            let z = normal_quantile(prob);
            let n = df as f64;
            let z3 = z.powi(3);
            let z5 = z.powi(5);
            let z7 = z.powi(7);
            let z9 = z.powi(9);
            z + (z3 + z) / (4.0 * n)
                + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * n * n)
                + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * n.powi(3))
                + (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z)
                    / (92160.0 * n.powi(4))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quantile_sample_keeps_the_distribution_in_k_values() {
        let v: Vec<f64> = (0..1000).rev().map(f64::from).collect();
        let q = quantile_sample(&v, 10);
        assert_eq!(
            q,
            vec![50.0, 150.0, 250.0, 350.0, 450.0, 550.0, 650.0, 750.0, 850.0, 950.0]
        );
        assert_eq!(quantile_sample(&[3.0, 1.0, 2.0], 5), vec![1.0, 2.0, 3.0]);
    }

    /// Past the bootstrap's size the rank interval is used: the same estimate, bounds
    /// around it inside the (wider) bootstrap of the sample's quantiles; at the size the
    /// bootstrap takes whole, the two intervals agree to within a few rank steps.
    #[test]
    fn large_samples_get_the_rank_interval_of_the_median() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let v: Vec<f64> = (0..100_000)
            .map(|_| rng.random_range(0.0..1000.0))
            .collect();
        let r = median_interval(&v).unwrap();
        assert_eq!((r.resamples, r.thinned), (0, None));
        assert_eq!(r.estimate, median(&v).unwrap());
        assert!(r.low < r.estimate && r.estimate < r.high, "{r:?}");
        let b = bootstrap(&v, |x| median(x).unwrap(), 0.95, 200, DEFAULT_SEED).unwrap();
        assert!(b.thinned.is_some());
        assert!(
            b.low < r.low && r.high < b.high,
            "rank {r:?} in thinned {b:?}"
        );
        // One value past the bootstrap's size: the rank interval; at it, the bootstrap.
        let past = &v[..RESAMPLE_MAX_SAMPLES + 1];
        assert_eq!(
            median_interval(past).unwrap(),
            median_rank_interval(past).unwrap()
        );
        // A sample the bootstrap takes whole (uniform on 0..1000, n = 5000: the interval
        // is about +-14 wide): both intervals agree.
        let w = &v[..RESAMPLE_MAX_SAMPLES];
        let r = median_rank_interval(w).unwrap();
        let b = median_interval(w).unwrap();
        assert_eq!((b.resamples, b.thinned), (2000, None));
        for (x, y) in [(r.low, b.low), (r.high, b.high)] {
            assert!((x - y).abs() < 4.0, "rank {r:?} against bootstrap {b:?}");
        }
        let small = median_rank_interval(&[3.0]).unwrap();
        assert_eq!((small.low, small.estimate, small.high), (3.0, 3.0, 3.0));
        assert!(median_rank_interval(&[]).is_none());
    }

    #[test]
    fn median_sorted_takes_the_middle_or_the_midpoint() {
        assert_eq!(median_sorted(&[]), None);
        assert_eq!(median_sorted(&[3.0]), Some(3.0));
        assert_eq!(median_sorted(&[1.0, 2.0, 9.0]), Some(2.0));
        assert_eq!(median_sorted(&[1.0, 2.0, 4.0, 9.0]), Some(3.0));
        // The midpoint, not a + (b - a) / 2: both middle values near the top of f64.
        assert_eq!(
            median_sorted(&[-f64::MAX, f64::MAX]),
            Some(0.0),
            "(a + b) / 2 of opposite extremes"
        );
        assert_eq!(
            median_sorted(&[1.0, f64::INFINITY, 5.0]),
            Some(f64::INFINITY)
        );
    }

    #[test]
    fn upper_median_is_a_value_of_the_sample() {
        assert_eq!(upper_median(&[]), None);
        assert_eq!(upper_median(&[7.0]), Some(7.0));
        assert_eq!(upper_median(&[9.0, 1.0, 4.0]), Some(4.0));
        assert_eq!(upper_median(&[9.0, 1.0, 4.0, 2.0]), Some(4.0));
        assert_eq!(upper_median(&[f64::NAN, 1.0, 2.0]), Some(2.0));
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // 97.5% quantiles from the standard tables.
        for (df, t) in [
            (1, 12.706),
            (2, 4.303),
            (3, 3.182),
            (4, 2.776),
            (8, 2.306),
            (30, 2.042),
        ] {
            let q = t_quantile(0.975, df);
            assert!((q - t).abs() / t < 0.003, "df {df}: {q} vs {t}");
        }
        assert!((t_quantile(0.025, 5) + t_quantile(0.975, 5)).abs() < 1e-9);
        assert!(t_quantile(0.975, 100_000) - normal_quantile(0.975) < 1e-4);
    }

    #[test]
    fn summary_by_hand() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(
            (s.n, s.min, s.max, s.median, s.mean),
            (5, 1.0, 5.0, 3.0, 3.0)
        );
        // deviations from 3: 2,2,0,1,1 -> sorted 0,1,1,2,2 -> median 1
        assert_eq!(s.mad, 1.0);
        assert!((s.p90 - 4.6).abs() < 1e-12);
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn percentiles_interpolate() {
        let v = [10.0, 20.0, 30.0, 40.0];
        assert_eq!(percentile(&v, 0.0), Some(10.0));
        assert_eq!(percentile(&v, 100.0), Some(40.0));
        assert_eq!(percentile(&v, 50.0), Some(25.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn outliers_by_modified_z() {
        let v = [10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 55.0];
        assert_eq!(outliers(&v), vec![6]);
        assert_eq!(without_outliers(&v).len(), 6);
        assert!(outliers(&[1.0, 1.0, 1.0]).is_empty());
    }

    #[test]
    fn bootstrap_is_seeded_and_covers_the_estimate() {
        let v: Vec<f64> = (0..50).map(|i| (i % 7) as f64 + 100.0).collect();
        let a = median_interval(&v).unwrap();
        let b = median_interval(&v).unwrap();
        assert_eq!(a, b);
        assert!(a.low <= a.estimate && a.estimate <= a.high);
        let c = bootstrap(&v, |x| median(x).unwrap(), 0.95, 2000, 7).unwrap();
        assert_eq!(c.seed, 7);
    }

    #[test]
    fn ratio_of_medians() {
        let a = [20.0, 21.0, 19.0, 20.0, 20.5];
        let b = [10.0, 10.5, 9.5, 10.0, 10.2];
        let r = ratio_interval(&a, &b, 0.95, 1000, 1).unwrap();
        assert!((r.estimate - 2.0).abs() < 1e-12);
        assert!(r.low > 1.7 && r.high < 2.3, "{r:?}");
        let x = Interval {
            estimate: 1.0,
            low: 0.9,
            high: 1.1,
            level: 0.95,
            resamples: 1,
            seed: 0,
            thinned: None,
        };
        let y = Interval {
            estimate: 1.2,
            low: 1.05,
            high: 1.3,
            level: 0.95,
            resamples: 1,
            seed: 0,
            thinned: None,
        };
        assert!(x.overlaps(&y));
    }

    /// A sample past RESAMPLE_MAX_SAMPLES is resampled as that many quantiles: the
    /// estimate is the whole samples' ratio, the interval covers it and says it was
    /// thinned (and of which sample); small samples resample every value, unchanged.
    #[test]
    fn large_samples_are_resampled_from_their_quantiles_and_say_so() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = RESAMPLE_MAX_SAMPLES * 40 + 1;
        let a: Vec<f64> = (0..n).map(|_| rng.random_range(100.0..200.0)).collect();
        let b: Vec<f64> = (0..500).map(|i| 50.0 + (i % 100) as f64).collect();
        let r = ratio_interval(&a, &b, 0.95, 200, 1).unwrap();
        assert_eq!(r.estimate, median(&a).unwrap() / median(&b).unwrap());
        assert!(r.low < r.estimate && r.estimate < r.high, "{r:?}");
        assert_eq!(
            r.thinned,
            Some(Thinned {
                quantiles: RESAMPLE_MAX_SAMPLES,
                samples: n
            })
        );
        // The same as resampling the quantiles by hand: the thinning is all that changed.
        let q = quantile_sample(&a, RESAMPLE_MAX_SAMPLES);
        let by_hand = ratio_interval(&q, &b, 0.95, 200, 1).unwrap();
        assert_eq!((r.low, r.high), (by_hand.low, by_hand.high));
        assert_eq!(by_hand.thinned, None);
        // Either side can be the large one; the larger thinned sample is named.
        let flipped = ratio_interval(&b, &a, 0.95, 200, 1).unwrap();
        assert_eq!(flipped.thinned.map(|t| t.samples), Some(n));
        let one = bootstrap(&a, |x| median(x).unwrap(), 0.95, 100, 2).unwrap();
        assert_eq!(one.thinned.map(|t| t.quantiles), Some(RESAMPLE_MAX_SAMPLES));
        assert!(one.low <= one.estimate && one.estimate <= one.high);
        // Written to JSON only when set: older intervals read and write as before.
        let small = ratio_interval(&b, &b, 0.95, 50, 1).unwrap();
        let json = serde_json::to_string(&small).unwrap();
        assert!(!json.contains("thinned"), "{json}");
        let back: Interval = serde_json::from_str(&json).unwrap();
        assert_eq!(back, small);
        assert!(serde_json::to_string(&r).unwrap().contains("\"thinned\":{"));
    }

    /// A stop request ends a bootstrap within a few resamples, whatever its size.
    #[test]
    fn a_stop_request_ends_the_resampling() {
        use std::cell::Cell;
        let v: Vec<f64> = (0..2000).map(f64::from).collect();
        let asked = Cell::new(0usize);
        let stop_third = || {
            asked.set(asked.get() + 1);
            asked.get() >= 3
        };
        assert_eq!(
            ratio_interval_until(&v, &v, 0.95, 2000, 1, &stop_third),
            Err(Stopped)
        );
        assert!(asked.get() == 3);
        assert_eq!(
            bootstrap_until(&v, |x| median(x).unwrap(), 0.95, 2000, 1, &|| true),
            Err(Stopped)
        );
        assert_eq!(
            ratio_interval_until(&v, &v, 0.95, 100, 1, &|| false).unwrap(),
            ratio_interval(&v, &v, 0.95, 100, 1)
        );
    }

    #[test]
    fn normal_quantiles() {
        assert!((normal_quantile(0.975) - 1.959_963_985).abs() < 1e-6);
        assert!((normal_quantile(0.5)).abs() < 1e-9);
        assert!((normal_quantile(0.01) + 2.326_347_874).abs() < 1e-6);
        assert!((normal_quantile(0.999) - 3.090_232_306).abs() < 1e-6);
    }

    #[test]
    fn quantile_intervals_by_order_statistics() {
        // 1..=1000: p50 = 500.5; ranks 500 -+ 1.96 * sqrt(250) = 469.0..531.0
        let v: Vec<f64> = (1..=1000).map(|i| i as f64).collect();
        let i = quantile_interval(&v, 50.0, 0.95).unwrap();
        assert_eq!(i.estimate, 500.5);
        assert_eq!((i.low, i.high), (469.0, 531.0));
        // p99: 990 -+ 1.96 * sqrt(9.9) = 983.8..996.2 -> ranks 983 and 997
        let i = quantile_interval(&v, 99.0, 0.95).unwrap();
        assert_eq!((i.low, i.high), (983.0, 997.0));
        assert!(i.low <= i.estimate && i.estimate <= i.high);
        // Tiny samples clamp to the sample.
        let i = quantile_interval(&[3.0, 1.0, 2.0], 99.0, 0.95).unwrap();
        assert_eq!(i.high, 3.0);
        assert!(quantile_interval(&[], 50.0, 0.95).is_none());
        assert!(quantile_interval(&[f64::NAN], 50.0, 0.95).is_none());
    }
}
