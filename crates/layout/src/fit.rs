//! Least squares for the latency model of a candidate placement, from sufficient
//! statistics that a move updates in O(observations it touches).
//!
//! Why: the search tries millions of placements, and for each it needs the best
//! constants (base latency, same-stop offset, hop costs) and the squared error they leave.
//! The normal equations only need `X'X`, `X'y` and `y'y`, which a move changes by the
//! rows of the observations involving the moved cores; solving a system of at most 6
//! unknowns is then cheaper than touching the matrix.
//!
//! Hop costs are constrained to be non-negative (a link cannot make a trip shorter): a
//! negative one is fixed at 0 and the rest refitted (an active-set pass). Columns that
//! carry no information for a placement (no pair shares a stop, no vertical hop on a
//! one-row mesh) are dropped and their coefficient reported as 0.

/// Most parameters: the constant, the same-stop offset and up to 4 hop costs.
pub const MAXP: usize = 6;

/// Sufficient statistics of a linear least-squares problem with a constant column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Acc {
    /// Parameters (constant included).
    pub p: usize,
    /// Upper triangle of X'X.
    pub xtx: [[f64; MAXP]; MAXP],
    /// X'y.
    pub xty: [f64; MAXP],
    /// y'y.
    pub yy: f64,
    /// Observations.
    pub n: f64,
}

/// A solved fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Solution {
    /// Coefficients (constant first); dropped or clamped ones are 0.
    pub beta: [f64; MAXP],
    /// Sum of squared residuals.
    pub sse: f64,
    /// Coefficients actually estimated.
    pub free: usize,
}

impl Acc {
    /// Empty statistics for `features` features plus the constant.
    pub fn new(features: usize) -> Acc {
        assert!(features < MAXP, "at most {} features", MAXP - 1);
        Acc {
            p: features + 1,
            xtx: [[0.0; MAXP]; MAXP],
            xty: [0.0; MAXP],
            yy: 0.0,
            n: 0.0,
        }
    }

    /// Adds (`sign = 1`) or removes (`sign = -1`) one observation.
    #[inline]
    pub fn add(&mut self, f: &[f64], y: f64, sign: f64) {
        let p = self.p;
        let mut x = [0.0; MAXP];
        x[0] = 1.0;
        x[1..p].copy_from_slice(&f[..p - 1]);
        for i in 0..p {
            let xi = x[i] * sign;
            if xi == 0.0 {
                continue;
            }
            self.xty[i] += xi * y;
            for (j, xj) in x.iter().enumerate().take(p).skip(i) {
                self.xtx[i][j] += xi * xj;
            }
        }
        self.yy += sign * y * y;
        self.n += sign;
    }

    /// Replaces one observation's features `old` by `new` (same y): what a move does.
    /// The constant column does not change, so only the feature entries are touched.
    #[inline]
    pub fn replace(&mut self, old: &[f64], new: &[f64], y: f64) {
        let q = self.p - 1;
        for i in 0..q {
            let (o, n) = (old[i], new[i]);
            if o == 0.0 && n == 0.0 {
                continue;
            }
            let d = n - o;
            self.xty[i + 1] += d * y;
            self.xtx[0][i + 1] += d;
            for j in i..q {
                self.xtx[i + 1][j + 1] += n * new[j] - o * old[j];
            }
        }
    }

    /// The least-squares solution; coefficients from index `nonneg_from` on are kept
    /// non-negative.
    pub fn solve(&self, nonneg_from: usize) -> Solution {
        let p = self.p;
        let mut active = [false; MAXP];
        for a in active.iter_mut().take(p) {
            *a = true;
        }
        // Columns without information.
        for (i, a) in active.iter_mut().enumerate().take(p) {
            if self.xtx[i][i] <= 0.0 {
                *a = false;
            }
        }
        loop {
            let mut idx = [0usize; MAXP];
            let mut m = 0;
            for (i, &a) in active.iter().enumerate().take(p) {
                if a {
                    idx[m] = i;
                    m += 1;
                }
            }
            let idx = &idx[..m];
            let mut a = [[0.0; MAXP]; MAXP];
            let mut b = [0.0; MAXP];
            for (r, &i) in idx.iter().enumerate() {
                b[r] = self.xty[i];
                for (c, &j) in idx.iter().enumerate() {
                    a[r][c] = if i <= j {
                        self.xtx[i][j]
                    } else {
                        self.xtx[j][i]
                    };
                }
            }
            match eliminate(&mut a, &mut b, m) {
                Err(dead) => {
                    active[idx[dead]] = false;
                    continue;
                }
                Ok(x) => {
                    // The most negative constrained coefficient is fixed at 0.
                    let worst = idx
                        .iter()
                        .enumerate()
                        .filter(|(r, &i)| i >= nonneg_from && x[*r] < 0.0)
                        .min_by(|a, b| x[a.0].total_cmp(&x[b.0]));
                    if let Some((_, &i)) = worst {
                        active[i] = false;
                        continue;
                    }
                    let mut beta = [0.0; MAXP];
                    let mut fit = 0.0;
                    for (r, &i) in idx.iter().enumerate() {
                        beta[i] = x[r];
                        fit += x[r] * self.xty[i];
                    }
                    return Solution {
                        beta,
                        sse: (self.yy - fit).max(0.0),
                        free: m,
                    };
                }
            }
        }
    }
}

/// Gaussian elimination with partial pivoting on the leading m x m block. Returns the
/// solution, or the row index of a column without information (pivot too small).
fn eliminate(
    a: &mut [[f64; MAXP]; MAXP],
    b: &mut [f64; MAXP],
    m: usize,
) -> Result<[f64; MAXP], usize> {
    let mut scale = [0.0; MAXP];
    for (i, s) in scale.iter_mut().enumerate().take(m) {
        *s = a[i][i].abs().max(1e-300);
    }
    // Track which original column each position holds: rows are swapped, columns are not.
    for k in 0..m {
        let piv = (k..m)
            .max_by(|&i, &j| (a[i][k].abs()).total_cmp(&a[j][k].abs()))
            .unwrap_or(k);
        if a[piv][k].abs() <= 1e-10 * scale[k] {
            return Err(k);
        }
        a.swap(k, piv);
        b.swap(k, piv);
        let pivot_row = a[k];
        for i in k + 1..m {
            let f = a[i][k] / pivot_row[k];
            if f == 0.0 {
                continue;
            }
            for (aij, akj) in a[i][k..m].iter_mut().zip(&pivot_row[k..m]) {
                *aij -= f * akj;
            }
            b[i] -= f * b[k];
        }
    }
    let mut x = [0.0; MAXP];
    for k in (0..m).rev() {
        let mut s = b[k];
        for j in k + 1..m {
            s -= a[k][j] * x[j];
        }
        x[k] = s / a[k][k];
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_exact_coefficients() {
        // y = 80 - 40 same + 2 h + 1 v
        let mut acc = Acc::new(3);
        let obs = [
            ([1.0, 0.0, 0.0], 40.0),
            ([0.0, 2.0, 0.0], 84.0),
            ([0.0, 0.0, 4.0], 84.0),
            ([0.0, 4.0, 2.0], 90.0),
            ([0.0, 6.0, 6.0], 98.0),
        ];
        for (f, y) in obs {
            acc.add(&f, y, 1.0);
        }
        let s = acc.solve(2);
        assert!((s.beta[0] - 80.0).abs() < 1e-9);
        assert!((s.beta[1] + 40.0).abs() < 1e-9);
        assert!((s.beta[2] - 2.0).abs() < 1e-9);
        assert!((s.beta[3] - 1.0).abs() < 1e-9);
        assert!(s.sse < 1e-9);
        // Replacing features equals removing and adding.
        let mut r = acc;
        r.replace(&[0.0, 4.0, 2.0], &[1.0, 0.0, 3.0], 90.0);
        let mut q = acc;
        q.add(&[0.0, 4.0, 2.0], 90.0, -1.0);
        q.add(&[1.0, 0.0, 3.0], 90.0, 1.0);
        for i in 0..4 {
            assert!((r.xty[i] - q.xty[i]).abs() < 1e-9);
            for j in i..4 {
                assert!((r.xtx[i][j] - q.xtx[i][j]).abs() < 1e-9, "{i} {j}");
            }
        }
        // Removing an observation is the inverse of adding it.
        let mut b = acc;
        b.add(&[0.0, 6.0, 6.0], 98.0, -1.0);
        b.add(&[0.0, 6.0, 6.0], 98.0, 1.0);
        assert!((b.xty[2] - acc.xty[2]).abs() < 1e-9);
    }

    #[test]
    fn negative_hop_cost_is_clamped_and_dead_columns_dropped() {
        // Latency falls with vertical hops: the fit keeps the vertical cost at 0.
        let mut acc = Acc::new(3);
        for (h, v, y) in [
            (1.0, 0.0, 10.0),
            (2.0, 1.0, 11.0),
            (3.0, 2.0, 12.0),
            (0.0, 3.0, 6.0),
        ] {
            acc.add(&[0.0, h, v], y, 1.0);
        }
        let s = acc.solve(2);
        assert!(s.beta[3] == 0.0);
        assert!(s.beta[2] > 0.0);
        // The same-stop column never varies: dropped, reported 0.
        assert_eq!(s.beta[1], 0.0);
        assert_eq!(s.free, 2);
    }
}
