//! Plateaus and transitions on a measured curve (cache levels on a latency curve).
//!
//! A latency-versus-working-set curve is a staircase: flat while the working set fits
//! a cache level, rising when it spills into the next one. Finding those steps by eye
//! is what people do with MLC or lmbench output; this module does it reproducibly, so
//! that numalab can report "L2: 3.1 ns up to 1 MiB" from the data alone.
//!
//! Method: the curve is taken in log scale (a step from 1 ns to 4 ns weighs as much as
//! one from 25 to 100 ns), cut into contiguous segments by an optimal partition that
//! minimises the sum of absolute deviations from each segment's median plus a penalty
//! per segment (dynamic programming, exact, O(n^3) for the few dozen points of a
//! sweep). The penalty scales with the noise estimated from the curve itself (median
//! absolute step between neighbours) and with the smallest level change worth
//! reporting. Segments whose levels differ by less than that change are merged; edge
//! points that sit off a segment's level (a transition point the partition attached
//! to a plateau) are peeled off; what is too short or drifts end to end is a ramp, not
//! a plateau; plateaus of one level split by a stray point are joined. Nothing here
//! knows about caches: labelling plateaus is the caller's business.

use serde::{Deserialize, Serialize};

/// Tuning of [`plateaus`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeOptions {
    /// Smallest level ratio that counts as a step (1.15 = 15%). Neighbouring segments
    /// closer than this are one plateau.
    pub min_ratio: f64,
    /// Fewest points a plateau has.
    pub min_points: usize,
    /// A plateau may swallow this many stray points (outliers) between two flat runs of
    /// the same level.
    pub max_outlier_run: usize,
}

impl Default for KneeOptions {
    fn default() -> Self {
        KneeOptions {
            min_ratio: 1.15,
            min_points: 2,
            max_outlier_run: 1,
        }
    }
}

/// A flat run of the curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plateau {
    /// Index of its first point.
    pub start: usize,
    /// Index of its last point (inclusive).
    pub end: usize,
    /// Its level: the median y of its points.
    pub level: f64,
}

/// A step between two consecutive plateaus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Transition {
    /// Index of the last point of the plateau before the step.
    pub last_before: usize,
    /// Index of the first point of the plateau after the step.
    pub first_after: usize,
    /// x where the curve crosses the geometric mean of the two levels (interpolated
    /// linearly in log x and log y): the middle of the step.
    pub x_mid: f64,
    /// Level after / level before (> 1 for a rise).
    pub ratio: f64,
}

/// Why a curve cannot be analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KneeError {
    /// x and y differ in length.
    Lengths,
    /// A value is not finite and positive (index given); logs need y > 0, x > 0.
    NotPositive(usize),
    /// x is not strictly increasing at this index.
    NotIncreasing(usize),
}

impl std::fmt::Display for KneeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KneeError::Lengths => write!(f, "x and y have different lengths"),
            KneeError::NotPositive(i) => write!(f, "point {i} is not finite and positive"),
            KneeError::NotIncreasing(i) => write!(f, "x is not increasing at point {i}"),
        }
    }
}

impl std::error::Error for KneeError {}

fn check(xs: &[f64], ys: &[f64]) -> Result<(), KneeError> {
    if xs.len() != ys.len() {
        return Err(KneeError::Lengths);
    }
    for (i, (&x, &y)) in xs.iter().zip(ys).enumerate() {
        if !(x.is_finite() && x > 0.0 && y.is_finite() && y > 0.0) {
            return Err(KneeError::NotPositive(i));
        }
        if i > 0 && x <= xs[i - 1] {
            return Err(KneeError::NotIncreasing(i));
        }
    }
    Ok(())
}

/// Sorts `v` and returns its midpoint median (see [`crate::median_sorted`]); panics when
/// `v` is empty (segments never are).
fn median_of(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    crate::median_sorted(v).expect("the median of an empty segment")
}

/// Sum of absolute deviations of `z[a..=b]` from their median.
fn l1_cost(z: &[f64], a: usize, b: usize) -> f64 {
    let mut seg = z[a..=b].to_vec();
    let m = median_of(&mut seg);
    z[a..=b].iter().map(|v| (v - m).abs()).sum()
}

/// Optimal partition of `z` into segments (list of (start, end) inclusive).
fn segment(z: &[f64], penalty: f64) -> Vec<(usize, usize)> {
    let n = z.len();
    // best[i] = min cost of partitioning z[..i]; from[i] = start of the last segment.
    let mut best = vec![f64::INFINITY; n + 1];
    let mut from = vec![0usize; n + 1];
    best[0] = 0.0;
    for end in 1..=n {
        for start in 0..end {
            let c = best[start] + l1_cost(z, start, end - 1) + penalty;
            if c < best[end] {
                best[end] = c;
                from[end] = start;
            }
        }
    }
    let mut out = Vec::new();
    let mut end = n;
    while end > 0 {
        let start = from[end];
        out.push((start, end - 1));
        end = start;
    }
    out.reverse();
    out
}

/// The flat runs of the curve `(xs[i], ys[i])`, in order of x.
///
/// `xs` must increase strictly and every value must be finite and positive.
pub fn plateaus(xs: &[f64], ys: &[f64], opts: &KneeOptions) -> Result<Vec<Plateau>, KneeError> {
    check(xs, ys)?;
    let n = ys.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let z: Vec<f64> = ys.iter().map(|y| y.ln()).collect();
    let step = opts.min_ratio.max(1.0 + 1e-9).ln();
    // Noise: the median absolute difference between neighbours (steps are few, so they
    // barely move the median), as a standard deviation of one point.
    let noise = if n >= 3 {
        let mut d: Vec<f64> = z.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
        median_of(&mut d) * 1.4826 / std::f64::consts::SQRT_2
    } else {
        0.0
    };
    // A segment must pay for itself: splitting off two points that sit one minimal step
    // away saves about 2 * step; noise must not buy segments.
    let penalty = step.max(3.0 * noise);
    let segs = segment(&z, penalty);

    // Levels of each segment.
    #[derive(Clone)]
    struct Seg {
        start: usize,
        end: usize,
        level: f64,
        flat: bool,
    }
    let level = |a: usize, b: usize| -> f64 {
        let mut v = z[a..=b].to_vec();
        median_of(&mut v)
    };
    let mut segs: Vec<Seg> = segs
        .iter()
        .map(|&(a, b)| Seg {
            start: a,
            end: b,
            level: level(a, b),
            flat: false,
        })
        .collect();

    // 1. Neighbours whose levels are within one minimal step are one segment.
    let mut i = 0;
    while i + 1 < segs.len() {
        if (segs[i + 1].level - segs[i].level).abs() < step {
            let (a, b) = (segs[i].start, segs[i + 1].end);
            segs.splice(
                i..=i + 1,
                [Seg {
                    start: a,
                    end: b,
                    level: level(a, b),
                    flat: false,
                }],
            );
            i = i.saturating_sub(1);
        } else {
            i += 1;
        }
    }

    // 2. Peel edge points that sit off the segment's level (a transition point the
    // partition attached to a plateau) into ramp pieces; what remains is flat if it is
    // long enough and does not drift end to end (a ramp cut into pieces fails this).
    let half = 0.75 * step;
    let mut out: Vec<Seg> = Vec::new();
    for s in segs {
        let (mut a, mut b) = (s.start, s.end);
        loop {
            let m = level(a, b);
            if a < b && (z[a] - m).abs() > half && (z[a] - m).abs() >= (z[b] - m).abs() {
                a += 1;
            } else if a < b && (z[b] - m).abs() > half {
                b -= 1;
            } else {
                break;
            }
        }
        let n = b + 1 - a;
        let k = (n / 3).max(1);
        let mut head = z[a..a + k].to_vec();
        let mut tail = z[b + 1 - k..=b].to_vec();
        let flat = n >= opts.min_points.max(1)
            && (median_of(&mut tail) - median_of(&mut head)).abs() < step;
        if !flat {
            out.push(Seg {
                start: s.start,
                end: s.end,
                level: s.level,
                flat: false,
            });
            continue;
        }
        if a > s.start {
            out.push(Seg {
                start: s.start,
                end: a - 1,
                level: level(s.start, a - 1),
                flat: false,
            });
        }
        out.push(Seg {
            start: a,
            end: b,
            level: level(a, b),
            flat: true,
        });
        if b < s.end {
            out.push(Seg {
                start: b + 1,
                end: s.end,
                level: level(b + 1, s.end),
                flat: false,
            });
        }
    }

    // 3. Plateaus of the same level separated by a few stray points are one plateau
    // (its level taken from the flat parts only).
    let mut i = 0;
    while i < out.len() {
        if !out[i].flat {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let mut skipped = 0;
        while j < out.len() && !out[j].flat {
            skipped += out[j].end + 1 - out[j].start;
            j += 1;
        }
        if j < out.len()
            && skipped <= opts.max_outlier_run
            && (out[j].level - out[i].level).abs() < step
        {
            let mut v: Vec<f64> = z[out[i].start..=out[i].end]
                .iter()
                .chain(&z[out[j].start..=out[j].end])
                .copied()
                .collect();
            let lvl = median_of(&mut v);
            let (a, b) = (out[i].start, out[j].end);
            out.splice(
                i..=j,
                [Seg {
                    start: a,
                    end: b,
                    level: lvl,
                    flat: true,
                }],
            );
        } else {
            i += 1;
        }
    }
    Ok(out
        .into_iter()
        .filter(|s| s.flat)
        .map(|s| Plateau {
            start: s.start,
            end: s.end,
            level: s.level.exp(),
        })
        .collect())
}

/// The steps between consecutive plateaus found by [`plateaus`].
pub fn transitions(
    xs: &[f64],
    ys: &[f64],
    plateaus: &[Plateau],
) -> Result<Vec<Transition>, KneeError> {
    check(xs, ys)?;
    let mut out = Vec::new();
    for w in plateaus.windows(2) {
        let (p, q) = (&w[0], &w[1]);
        if p.end >= q.start || q.start >= xs.len() {
            continue;
        }
        let target = (p.level.ln() + q.level.ln()) / 2.0;
        let rising = q.level > p.level;
        let mut x_mid = xs[q.start];
        for i in p.end + 1..=q.start {
            let (z0, z1) = (ys[i - 1].ln(), ys[i].ln());
            let crossed = if rising { z1 >= target } else { z1 <= target };
            if crossed {
                let t = if (z1 - z0).abs() > 0.0 {
                    ((target - z0) / (z1 - z0)).clamp(0.0, 1.0)
                } else {
                    1.0
                };
                let (l0, l1) = (xs[i - 1].ln(), xs[i].ln());
                x_mid = (l0 + t * (l1 - l0)).exp();
                break;
            }
        }
        out.push(Transition {
            last_before: p.end,
            first_after: q.start,
            x_mid,
            ratio: q.level / p.level,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A latency staircase: `levels[k]` ns while the working set fits `caps[k]` bytes,
    /// with a ramp of one octave after each capacity (as real caches show), sampled at
    /// `per_octave` points per octave from 4 KiB to 512 MiB, with multiplicative noise.
    fn staircase(
        levels: &[f64],
        caps: &[f64],
        per_octave: usize,
        noise: f64,
        seed: u64,
    ) -> (Vec<f64>, Vec<f64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        let n = 17 * per_octave;
        for i in 0..=n {
            let x = 4096.0 * 2f64.powf(i as f64 / per_octave as f64);
            // Level index and a ramp fraction inside the octave after a capacity.
            let mut y = levels[0].ln();
            for (k, &cap) in caps.iter().enumerate() {
                if x > cap {
                    let f = ((x / cap).log2()).min(1.0);
                    y = levels[k].ln() + f * (levels[k + 1].ln() - levels[k].ln());
                }
            }
            let e: f64 = rng.random_range(-noise..=noise);
            xs.push(x);
            ys.push((y + e).exp());
        }
        (xs, ys)
    }

    #[test]
    fn finds_four_levels_of_a_cache_staircase() {
        let levels = [1.2, 4.0, 12.0, 95.0];
        let caps = [32768.0, 1048576.0, 33554432.0];
        for seed in 0..20 {
            for per_octave in [1, 2, 4] {
                let (xs, ys) = staircase(&levels, &caps, per_octave, 0.03, seed);
                let p = plateaus(&xs, &ys, &KneeOptions::default()).unwrap();
                assert_eq!(p.len(), 4, "seed {seed} per_octave {per_octave}: {p:?}");
                for (pl, want) in p.iter().zip(levels) {
                    assert!((pl.level / want - 1.0).abs() < 0.06, "{pl:?} vs {want}");
                }
                let t = transitions(&xs, &ys, &p).unwrap();
                assert_eq!(t.len(), 3);
                for (tr, cap) in t.iter().zip(caps) {
                    // The middle of the step lies within the octave after the capacity.
                    assert!(
                        tr.x_mid >= cap * 0.99 && tr.x_mid <= cap * 2.01,
                        "seed {seed}: step at {} for capacity {cap}",
                        tr.x_mid
                    );
                    assert!(tr.ratio > 1.15);
                }
            }
        }
    }

    #[test]
    fn a_flat_noisy_curve_is_one_plateau() {
        for seed in 0..20 {
            let (xs, ys) = staircase(&[80.0], &[], 2, 0.05, seed);
            let p = plateaus(&xs, &ys, &KneeOptions::default()).unwrap();
            assert_eq!(p.len(), 1, "{p:?}");
            assert_eq!((p[0].start, p[0].end), (0, xs.len() - 1));
            assert!(transitions(&xs, &ys, &p).unwrap().is_empty());
        }
    }

    #[test]
    fn a_single_outlier_does_not_split_a_plateau() {
        let xs: Vec<f64> = (1..=20).map(|i| i as f64).collect();
        let mut ys = vec![10.0; 20];
        ys[9] = 30.0;
        let p = plateaus(&xs, &ys, &KneeOptions::default()).unwrap();
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!((p[0].start, p[0].end), (0, 19));
        assert!((p[0].level - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_steady_ramp_has_no_plateau_inside() {
        // Flat, then a long steady rise of 25% per point, then flat.
        let mut ys = vec![5.0; 6];
        let mut y = 5.0;
        for _ in 0..8 {
            y *= 1.25;
            ys.push(y);
        }
        ys.extend(std::iter::repeat_n(y, 6));
        let xs: Vec<f64> = (1..=ys.len()).map(|i| i as f64).collect();
        let p = plateaus(&xs, &ys, &KneeOptions::default()).unwrap();
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].end <= 6 && p[1].start >= 13, "{p:?}");
    }

    #[test]
    fn small_steps_below_the_threshold_are_ignored_and_falls_are_found() {
        let xs: Vec<f64> = (1..=12).map(|i| i as f64).collect();
        // 8% bump: below min_ratio 1.15, one plateau.
        let ys: Vec<f64> = (0..12).map(|i| if i < 6 { 10.0 } else { 10.8 }).collect();
        assert_eq!(
            plateaus(&xs, &ys, &KneeOptions::default()).unwrap().len(),
            1
        );
        // A fall (bandwidth curves fall as the working set grows).
        let ys: Vec<f64> = (0..12).map(|i| if i < 6 { 100.0 } else { 20.0 }).collect();
        let p = plateaus(&xs, &ys, &KneeOptions::default()).unwrap();
        assert_eq!(p.len(), 2);
        let t = transitions(&xs, &ys, &p).unwrap();
        assert_eq!(t.len(), 1);
        assert!(t[0].ratio < 1.0);
        assert!(t[0].x_mid > 6.0 && t[0].x_mid <= 7.0, "{t:?}");
    }

    /// Regression: a real curve from the development VM (page-local chase, base pages,
    /// one point per octave, 4 KiB to 128 MiB) where the L2 plateau was missed because
    /// the partition attached the 32 KiB transition point to it.
    #[test]
    fn l2_plateau_survives_a_transition_point_attached_to_it() {
        let ys = [
            1.08, 1.08, 1.08, 1.86, 2.43, 2.40, 2.47, 2.45, 3.70, 6.46, 57.88, 63.08, 63.15, 96.09,
            99.20, 131.93,
        ];
        let xs: Vec<f64> = (0..ys.len())
            .map(|i| 4096.0 * 2f64.powi(i as i32))
            .collect();
        let p = plateaus(&xs, &ys, &KneeOptions::default()).unwrap();
        let spans: Vec<(usize, usize)> = p.iter().map(|p| (p.start, p.end)).collect();
        assert_eq!(spans, vec![(0, 2), (4, 7), (10, 12), (13, 14)], "{p:?}");
        assert!((p[1].level - 2.44).abs() < 0.03);
        // And its huge-page twin: the memory plateau with a low first and a high last
        // point.
        let ys = [
            1.14, 1.18, 1.41, 3.94, 3.99, 4.03, 4.34, 6.01, 44.81, 30.96, 100.27, 126.60, 127.32,
            123.21, 127.13, 141.29,
        ];
        let p = plateaus(&xs, &ys, &KneeOptions::default()).unwrap();
        let last = p.last().unwrap();
        assert!(last.level > 120.0 && last.level < 130.0, "{p:?}");
        assert!(last.start <= 11 && last.end >= 14, "{p:?}");
        assert!(p.iter().any(|q| (q.level - 4.0).abs() < 0.2), "{p:?}");
    }

    #[test]
    fn bad_input_is_refused() {
        let o = KneeOptions::default();
        assert_eq!(plateaus(&[1.0], &[], &o), Err(KneeError::Lengths));
        assert_eq!(
            plateaus(&[1.0, 2.0], &[1.0, 0.0], &o),
            Err(KneeError::NotPositive(1))
        );
        assert_eq!(
            plateaus(&[1.0, 2.0], &[1.0, f64::NAN], &o),
            Err(KneeError::NotPositive(1))
        );
        assert_eq!(
            plateaus(&[2.0, 1.0], &[1.0, 1.0], &o),
            Err(KneeError::NotIncreasing(1))
        );
        assert!(plateaus(&[], &[], &o).unwrap().is_empty());
        let one = plateaus(&[1.0], &[3.0], &KneeOptions { min_points: 1, ..o }).unwrap();
        assert_eq!(one.len(), 1);
    }
}
