//! Robust statistics, pure and deterministic.
//!
//! Measurements on shared machines are noisy and skewed (a timer interrupt, another
//! tenant), so numalab reports medians and percentiles, flags outliers by the modified
//! z-score, and gives bootstrap confidence intervals whose seed is written into the
//! output so that anyone can recompute them.

pub mod knee;

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
}

impl Interval {
    /// Whether two intervals overlap (a difference "within the noise").
    pub fn overlaps(&self, other: &Interval) -> bool {
        self.low <= other.high && other.low <= self.high
    }
}

/// Percentile bootstrap interval of `statistic` over `values`. `None` if empty.
pub fn bootstrap(
    values: &[f64],
    statistic: impl Fn(&[f64]) -> f64,
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    if values.is_empty() || resamples == 0 {
        return None;
    }
    let estimate = statistic(values);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf = vec![0.0; values.len()];
    let mut stats = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in buf.iter_mut() {
            *slot = values[rng.random_range(0..values.len())];
        }
        stats.push(statistic(&buf));
    }
    stats.sort_by(f64::total_cmp);
    let alpha = (1.0 - level) / 2.0 * 100.0;
    Some(Interval {
        estimate,
        low: percentile_sorted(&stats, alpha),
        high: percentile_sorted(&stats, 100.0 - alpha),
        level,
        resamples,
        seed,
    })
}

/// 95% bootstrap interval of the median with 2000 resamples and the default seed.
pub fn median_interval(values: &[f64]) -> Option<Interval> {
    bootstrap(
        values,
        |v| median(v).unwrap_or(f64::NAN),
        0.95,
        2000,
        DEFAULT_SEED,
    )
}

/// Interval of the ratio of medians a/b, by resampling both samples independently.
pub fn ratio_interval(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    if a.is_empty() || b.is_empty() || resamples == 0 {
        return None;
    }
    let ma = median(a)?;
    let mb = median(b)?;
    let estimate = ma / mb;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ba = vec![0.0; a.len()];
    let mut bb = vec![0.0; b.len()];
    let mut stats = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for s in ba.iter_mut() {
            *s = a[rng.random_range(0..a.len())];
        }
        for s in bb.iter_mut() {
            *s = b[rng.random_range(0..b.len())];
        }
        stats.push(median(&ba)? / median(&bb)?);
    }
    stats.sort_by(f64::total_cmp);
    let alpha = (1.0 - level) / 2.0 * 100.0;
    Some(Interval {
        estimate,
        low: percentile_sorted(&stats, alpha),
        high: percentile_sorted(&stats, 100.0 - alpha),
        level,
        resamples,
        seed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        let y = Interval {
            estimate: 1.2,
            low: 1.05,
            high: 1.3,
            level: 0.95,
            resamples: 1,
            seed: 0,
        };
        assert!(x.overlaps(&y));
    }
}
