//! Bootstrap intervals of several percentiles at once.
//!
//! Response-time reports need p50, p95 and p99 with intervals over samples of up to
//! hundreds of thousands of requests. Calling [`crate::bootstrap`] once per percentile
//! sorts every resample three times; here each resample is drawn once (with the same
//! random stream as `bootstrap`, so the results are identical) and the percentiles are
//! read by selection (`select_nth_unstable`, linear time) instead of a sort.

use crate::{percentile_interval, percentile_sorted, resample, Interval};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Percentile `p` (0-100) of an unsorted buffer, by selection; reorders the buffer.
/// Same definition as [`crate::percentile_sorted`] (linear interpolation between
/// closest ranks). Panics on an empty buffer.
pub fn percentile_select(buf: &mut [f64], p: f64) -> f64 {
    assert!(!buf.is_empty(), "percentile of an empty sample");
    let p = p.clamp(0.0, 100.0);
    let rank = p / 100.0 * (buf.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    let (_, v_lo, right) = buf.select_nth_unstable_by(lo, f64::total_cmp);
    let v_lo = *v_lo;
    let v_hi = if hi > lo {
        right.iter().copied().fold(f64::INFINITY, f64::min)
    } else {
        v_lo
    };
    v_lo + (v_hi - v_lo) * frac
}

/// Percentile bootstrap intervals of the percentiles `ps` (0-100) of `values`, one
/// [`Interval`] per entry of `ps`. Each is identical to
/// `bootstrap(values, |v| percentile(v, p).unwrap(), level, resamples, seed)`.
/// `None` if `values` is empty, holds a NaN, or `resamples` is 0.
///
/// Unlike [`crate::bootstrap`], every value is resampled whatever the sample's size (no
/// [`crate::RESAMPLE_MAX_SAMPLES`] thinning): the high percentiles of response times
/// rest on the few slowest requests, which quantiles would blur. The work is `resamples`
/// times the sample's size, so a caller with a large sample lowers `resamples` (the
/// workload's runs take 300 above 50,000 requests); `compare` and `report` do not call it.
pub fn bootstrap_percentiles(
    values: &[f64],
    ps: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<Vec<Interval>> {
    if values.is_empty() || resamples == 0 || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let estimates: Vec<f64> = ps.iter().map(|&p| percentile_sorted(&sorted, p)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf = vec![0.0; values.len()];
    let mut stats: Vec<Vec<f64>> = ps.iter().map(|_| Vec::with_capacity(resamples)).collect();
    for _ in 0..resamples {
        resample(&mut rng, values, &mut buf);
        for (s, &p) in stats.iter_mut().zip(ps) {
            s.push(percentile_select(&mut buf, p));
        }
    }
    Some(
        stats
            .into_iter()
            .zip(estimates)
            .map(|(s, estimate)| percentile_interval(s, estimate, level, resamples, seed))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bootstrap, percentile};

    #[test]
    fn selection_matches_sorting() {
        let v: Vec<f64> = (0..101).map(|i| ((i * 37) % 101) as f64 * 1.5).collect();
        for p in [0.0, 1.0, 50.0, 95.0, 99.0, 99.9, 100.0] {
            let mut buf = v.clone();
            assert_eq!(
                percentile_select(&mut buf, p),
                percentile(&v, p).unwrap(),
                "p{p}"
            );
        }
        let mut two = [3.0, 1.0];
        assert_eq!(percentile_select(&mut two, 50.0), 2.0);
    }

    #[test]
    fn same_intervals_as_one_at_a_time() {
        let v: Vec<f64> = (0..300)
            .map(|i| 1000.0 + ((i * 7919) % 311) as f64 + if i % 50 == 0 { 5000.0 } else { 0.0 })
            .collect();
        let ps = [50.0, 95.0, 99.0];
        let all = bootstrap_percentiles(&v, &ps, 0.95, 200, 42).unwrap();
        for (iv, &p) in all.iter().zip(&ps) {
            let one = bootstrap(&v, |x| percentile(x, p).unwrap(), 0.95, 200, 42).unwrap();
            assert_eq!(*iv, one, "p{p}");
            assert!(iv.low <= iv.estimate && iv.estimate <= iv.high);
        }
        assert!(
            all[0].high < all[2].low,
            "p50 and p99 of a skewed sample differ"
        );
        assert!(bootstrap_percentiles(&[], &ps, 0.95, 10, 1).is_none());
        assert!(bootstrap_percentiles(&[1.0, f64::NAN], &ps, 0.95, 10, 1).is_none());
    }
}
