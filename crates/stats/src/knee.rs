//! Knees of scaling curves.
//!
//! A thread-scaling study gives a short curve (a dozen points at 1, 2, 4, ... threads
//! plus the topology boundaries) and the user wants to know where it bends: "per-thread
//! throughput drops 38% past 80 threads". Two shapes matter and get one detector each:
//!
//! - [`drops`]: sudden falls in a per-unit curve (per-thread throughput, parallel
//!   efficiency). A step is a knee when it falls by at least `min_drop` *and* much more
//!   than the curve's typical step, so a steady decline (Amdahl) is not reported as a
//!   knee at every point. With confidence intervals, the two points' intervals must not
//!   overlap (a drop within the noise is no knee). Consecutive knee steps are merged.
//! - [`saturation`]: where an increasing curve (throughput, speedup) stops growing
//!   quickly, by the Kneedle method (Satopää, Albrecht, Irwin and Raghavan, 2011): both
//!   axes scaled to [0, 1], the knee is the point farthest above the diagonal.
//!
//! Pure functions on plain slices; the harness maps the knees to topology boundaries.

use serde::{Deserialize, Serialize};

/// A knee found by [`drops`]: the curve falls between `x_before` and `x_after`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// Index of the last point before the fall.
    pub index_before: usize,
    /// Index of the first point after the fall.
    pub index_after: usize,
    /// x of the last point before the fall.
    pub x_before: f64,
    /// x of the first point after the fall.
    pub x_after: f64,
    /// y there.
    pub y_before: f64,
    /// y there.
    pub y_after: f64,
    /// y_after / y_before - 1 (negative: a fall).
    pub relative_change: f64,
}

/// Options of [`drops`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DropOptions {
    /// Smallest relative fall that counts (0.10 = 10%).
    pub min_drop: f64,
    /// A fall must also be this many times the median size of the other steps.
    pub vs_typical: f64,
}

impl Default for DropOptions {
    fn default() -> Self {
        DropOptions {
            min_drop: 0.10,
            vs_typical: 2.0,
        }
    }
}

fn usable(xs: &[f64], ys: &[f64]) -> bool {
    xs.len() == ys.len()
        && xs.len() >= 2
        && xs.windows(2).all(|w| w[0] < w[1])
        && ys.iter().all(|y| y.is_finite() && *y > 0.0)
        && xs.iter().all(|x| x.is_finite())
}

/// The midpoint median of `v` (see [`crate::median_sorted`]); 0 when empty.
fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    crate::median_sorted(&v).unwrap_or(0.0)
}

/// Sudden falls of a positive per-unit curve `ys` over increasing `xs`.
///
/// `intervals`, when given, holds a (low, high) confidence interval per point; a fall
/// only counts when the interval after lies wholly below the interval before. Returns an
/// empty list for curves that cannot be judged (fewer than 2 points, x not increasing,
/// non-positive or non-finite y).
pub fn drops(
    xs: &[f64],
    ys: &[f64],
    intervals: Option<&[(f64, f64)]>,
    opts: DropOptions,
) -> Vec<Knee> {
    if !usable(xs, ys) || intervals.is_some_and(|iv| iv.len() != ys.len()) {
        return Vec::new();
    }
    let changes: Vec<f64> = ys.windows(2).map(|w| w[1] / w[0] - 1.0).collect();
    let mut steps = Vec::new();
    for (i, &c) in changes.iter().enumerate() {
        let others: Vec<f64> = changes
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, c)| c.abs())
            .collect();
        let typical = median_of(others);
        let separated = intervals.is_none_or(|iv| iv[i + 1].1 < iv[i].0);
        if c <= -opts.min_drop && c.abs() >= opts.vs_typical * typical && separated {
            steps.push(i);
        }
    }
    // Merge consecutive steps into one knee.
    let mut knees: Vec<Knee> = Vec::new();
    for i in steps {
        match knees.last_mut() {
            Some(k) if k.index_after == i => {
                k.index_after = i + 1;
                k.x_after = xs[i + 1];
                k.y_after = ys[i + 1];
                k.relative_change = k.y_after / k.y_before - 1.0;
            }
            _ => knees.push(Knee {
                index_before: i,
                index_after: i + 1,
                x_before: xs[i],
                x_after: xs[i + 1],
                y_before: ys[i],
                y_after: ys[i + 1],
                relative_change: ys[i + 1] / ys[i] - 1.0,
            }),
        }
    }
    knees
}

/// Where an increasing, concave curve saturates (Kneedle): the index of the point
/// farthest above the chord from the first to the last point, after scaling both axes
/// to [0, 1]. `None` when the curve is not usable, has fewer than 3 points, or never
/// rises `min_gap` (in scaled units, e.g. 0.1) above the chord (a straight line has no
/// knee).
pub fn saturation(xs: &[f64], ys: &[f64], min_gap: f64) -> Option<usize> {
    if !usable(xs, ys) || xs.len() < 3 {
        return None;
    }
    let (x0, x1) = (xs[0], xs[xs.len() - 1]);
    let (y0, y1) = (ys[0], ys[ys.len() - 1]);
    if y1 <= y0 {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    for i in 1..xs.len() - 1 {
        let xn = (xs[i] - x0) / (x1 - x0);
        let yn = (ys[i] - y0) / (y1 - y0);
        let gap = yn - xn;
        if best.is_none_or(|(_, g)| gap > g) {
            best = Some((i, gap));
        }
    }
    best.filter(|(_, g)| *g >= min_gap).map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threads() -> Vec<f64> {
        [1, 2, 4, 8, 16, 32, 64, 80, 96, 128, 160]
            .iter()
            .map(|&t| t as f64)
            .collect()
    }

    #[test]
    fn a_cliff_at_the_socket_boundary_is_one_knee() {
        // Flat per-thread throughput up to 80 threads, then 38% lower.
        let xs = threads();
        let ys: Vec<f64> = xs
            .iter()
            .map(|&t| if t <= 80.0 { 100.0 } else { 62.0 })
            .collect();
        let k = drops(&xs, &ys, None, DropOptions::default());
        assert_eq!(k.len(), 1, "{k:?}");
        assert_eq!((k[0].x_before, k[0].x_after), (80.0, 96.0));
        assert!((k[0].relative_change + 0.38).abs() < 1e-12);
    }

    #[test]
    fn a_steady_decline_has_no_knee() {
        // 12% less per step, every step: no step stands out.
        let xs = threads();
        let ys: Vec<f64> = (0..xs.len())
            .map(|i| 100.0 * 0.88f64.powi(i as i32))
            .collect();
        assert!(drops(&xs, &ys, None, DropOptions::default()).is_empty());
    }

    #[test]
    fn small_wiggles_are_not_knees() {
        let xs = threads();
        let ys = [
            100.0, 98.0, 101.0, 97.0, 99.0, 96.0, 98.0, 95.0, 97.0, 94.0, 96.0,
        ];
        assert!(drops(&xs, &ys, None, DropOptions::default()).is_empty());
    }

    #[test]
    fn two_cliffs_and_a_two_step_fall_are_merged_per_cliff() {
        let xs = threads();
        //          1     2     4     8    16    32    64    80    96   128   160
        let ys = [
            100.0, 100.0, 99.0, 70.0, 50.0, 50.0, 49.0, 49.0, 30.0, 30.0, 29.5,
        ];
        let k = drops(&xs, &ys, None, DropOptions::default());
        assert_eq!(k.len(), 2, "{k:?}");
        // 4 -> 8 -> 16 fall in two steps: merged, 99 -> 50.
        assert_eq!((k[0].x_before, k[0].x_after), (4.0, 16.0));
        assert!((k[0].relative_change - (50.0 / 99.0 - 1.0)).abs() < 1e-12);
        assert_eq!((k[1].x_before, k[1].x_after), (80.0, 96.0));
    }

    #[test]
    fn overlapping_intervals_veto_a_knee() {
        let xs = [1.0, 2.0, 4.0];
        let ys = [100.0, 100.0, 80.0];
        let wide = [(90.0, 110.0), (90.0, 110.0), (70.0, 95.0)];
        let tight = [(99.0, 101.0), (99.0, 101.0), (79.0, 81.0)];
        assert!(drops(&xs, &ys, Some(&wide), DropOptions::default()).is_empty());
        assert_eq!(
            drops(&xs, &ys, Some(&tight), DropOptions::default()).len(),
            1
        );
    }

    #[test]
    fn unusable_curves_give_nothing() {
        let o = DropOptions::default();
        assert!(drops(&[1.0], &[1.0], None, o).is_empty());
        assert!(drops(&[2.0, 1.0], &[1.0, 0.5], None, o).is_empty());
        assert!(drops(&[1.0, 2.0], &[1.0, 0.0], None, o).is_empty());
        assert!(drops(&[1.0, 2.0], &[1.0, f64::NAN], None, o).is_empty());
        assert!(drops(&[1.0, 2.0], &[1.0, 0.5], Some(&[(1.0, 1.0)]), o).is_empty());
    }

    #[test]
    fn saturation_of_an_amdahl_curve_and_none_for_a_line() {
        // Amdahl with 95% parallel work: speedup 1/(0.05 + 0.95/n).
        let xs: Vec<f64> = (1..=64).map(|n| n as f64).collect();
        let ys: Vec<f64> = xs.iter().map(|n| 1.0 / (0.05 + 0.95 / n)).collect();
        let i = saturation(&xs, &ys, 0.1).unwrap();
        // Farthest above the chord where the slope equals the chord's:
        // 0.95 / (0.05 n + 0.95)^2 = (S(64) - 1) / 63 = 0.2289, so n = 21.7.
        assert_eq!(xs[i], 22.0);
        let line: Vec<f64> = xs.iter().map(|n| 3.0 * n).collect();
        assert_eq!(saturation(&xs, &line, 0.1), None);
        // Falling curves have no saturation knee.
        let falling: Vec<f64> = xs.iter().map(|n| 100.0 / n).collect();
        assert_eq!(saturation(&xs, &falling, 0.1), None);
        assert_eq!(saturation(&[1.0, 2.0], &[1.0, 2.0], 0.1), None);
    }
}
