//! Linear least squares for a handful of parameters, with the parameters the data
//! cannot tell apart found and left out: columns are taken in order of preference, and
//! one whose part orthogonal to the columns already taken is below
//! [`DEPENDENT`] of its length adds nothing the others do not (the figures depend on
//! it only in the proportions they depend on the others) and is not identifiable.
//!
//! Rows come in groups (kinds of figure) whose noise differs: a core-to-core figure is
//! the mean of thousands of cells, a memory latency one chase. [`least_squares`] fits
//! once unweighted, estimates each group's residual variance (its share of the degrees
//! of freedom), and fits again weighted by the inverse variances (feasible generalized
//! least squares); standard errors come from that weighted fit.

/// Relative length below which a column counts as a combination of earlier ones.
pub const DEPENDENT: f64 = 1e-3;

/// The outcome for one column.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// Fitted: the estimate and its standard error (None without residual degrees of
    /// freedom).
    Fitted {
        /// Estimate.
        value: f64,
        /// Standard error.
        std_error: Option<f64>,
    },
    /// Every coefficient is zero: no figure depends on it.
    NoData,
    /// A combination of the columns at these indices.
    Dependent(Vec<usize>),
}

/// Solves `y ~ X beta` for the columns of `x` (`x[col][row]`), taken in order; `group`
/// gives each row's group (rows of one group share a noise level).
pub fn least_squares(x: &[Vec<f64>], y: &[f64], group: &[usize]) -> Vec<Column> {
    let rows = y.len();
    let (first, residuals) = weighted(x, y, &vec![1.0; rows], None);
    let p = first
        .iter()
        .filter(|c| matches!(c, Column::Fitted { .. }))
        .count();
    if p == 0 || rows <= p {
        return first;
    }
    let groups = group.iter().copied().max().map_or(0, |g| g + 1);
    let var: Vec<f64> = (0..groups)
        .map(|g| {
            let n_g = group.iter().filter(|&&x| x == g).count() as f64;
            if n_g == 0.0 {
                return 0.0;
            }
            let rss: f64 = (0..rows)
                .filter(|&r| group[r] == g)
                .map(|r| residuals[r].powi(2))
                .sum();
            rss / (n_g * (rows - p) as f64 / rows as f64)
        })
        .collect();
    let top = var.iter().copied().fold(0.0, f64::max);
    if top <= 0.0 {
        return first; // an exact fit: nothing to weigh
    }
    // A group that fits exactly would get infinite weight; a millionth of the noisiest
    // group's variance is its floor.
    let w: Vec<f64> = group
        .iter()
        .map(|&g| 1.0 / var[g].max(1e-6 * top))
        .collect();
    // The same columns: which parameters the figures identify does not depend on
    // how much each figure is trusted.
    weighted(x, y, &w, Some(&first)).0
}

/// Weighted least squares: weights `w` per row. Without `chosen`, columns are chosen
/// here and standard errors use the residual variance (unit weights); with it, its
/// fitted columns are taken as they are and the weights are inverse variances.
fn weighted(
    x: &[Vec<f64>],
    y: &[f64],
    w: &[f64],
    chosen: Option<&[Column]>,
) -> (Vec<Column>, Vec<f64>) {
    let scale = chosen.is_none();
    let rows = y.len();
    let sw: Vec<f64> = w.iter().map(|v| v.sqrt()).collect();
    let x: Vec<Vec<f64>> = x
        .iter()
        .map(|c| c.iter().zip(&sw).map(|(a, s)| a * s).collect())
        .collect();
    let y: Vec<f64> = y.iter().zip(&sw).map(|(a, s)| a * s).collect();
    let x = &x[..];
    let y = &y[..];
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let mut taken: Vec<usize> = Vec::new();
    let mut out: Vec<Column> = Vec::with_capacity(x.len());
    for (k, col) in x.iter().enumerate() {
        if let Some(c) = chosen {
            if matches!(c[k], Column::Fitted { .. }) {
                taken.push(k);
            }
            out.push(c[k].clone());
            continue;
        }
        let norm = dot(col, col).sqrt();
        if norm == 0.0 || !norm.is_finite() {
            out.push(Column::NoData);
            continue;
        }
        // Gram-Schmidt twice against the basis.
        let mut r: Vec<f64> = col.clone();
        for _ in 0..2 {
            for q in &basis {
                let c = dot(&r, q);
                for (ri, qi) in r.iter_mut().zip(q) {
                    *ri -= c * qi;
                }
            }
        }
        let rn = dot(&r, &r).sqrt();
        if rn < DEPENDENT * norm || taken.len() >= rows {
            out.push(Column::Dependent(taken.clone()));
            continue;
        }
        basis.push(r.iter().map(|v| v / rn).collect());
        taken.push(k);
        out.push(Column::Fitted {
            value: 0.0,
            std_error: None,
        });
    }
    if taken.is_empty() {
        return (out, y.iter().zip(&sw).map(|(a, s)| a / s).collect());
    }
    // Normal equations on the taken columns, inverted by Gauss-Jordan (p is small and
    // the columns passed the independence test above).
    let p = taken.len();
    let mut a = vec![vec![0.0; 2 * p]; p];
    let mut b = vec![0.0; p];
    for i in 0..p {
        for j in 0..p {
            a[i][j] = dot(&x[taken[i]], &x[taken[j]]);
        }
        a[i][p + i] = 1.0;
        b[i] = dot(&x[taken[i]], y);
    }
    for c in 0..p {
        let piv = (c..p)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap_or(c);
        a.swap(c, piv);
        let d = a[c][c];
        for v in a[c].iter_mut() {
            *v /= d;
        }
        for r in 0..p {
            if r != c {
                let f = a[r][c];
                if f != 0.0 {
                    let row_c = a[c].clone();
                    for (v, w) in a[r].iter_mut().zip(&row_c) {
                        *v -= f * w;
                    }
                }
            }
        }
    }
    let inv: Vec<Vec<f64>> = a.iter().map(|r| r[p..].to_vec()).collect();
    let beta: Vec<f64> = (0..p).map(|i| dot(&inv[i], &b)).collect();
    let residuals: Vec<f64> = (0..rows)
        .map(|r| {
            let fit: f64 = (0..p).map(|i| x[taken[i]][r] * beta[i]).sum();
            (y[r] - fit) / sw[r]
        })
        .collect();
    let rss: f64 = residuals.iter().zip(w).map(|(r, w)| r * r * w).sum();
    let sigma2 = (rows > p).then(|| if scale { rss / (rows - p) as f64 } else { 1.0 });
    for (i, &k) in taken.iter().enumerate() {
        out[k] = Column::Fitted {
            value: beta[i],
            std_error: sigma2.map(|s| (s * inv[i][i]).max(0.0).sqrt()),
        };
    }
    (out, residuals)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_an_exact_line_and_flags_a_copy() {
        // y = 2 + 3 t; the third column is twice the first.
        let t = [0.0, 1.0, 2.0, 3.0];
        let ones = vec![1.0; 4];
        let y: Vec<f64> = t.iter().map(|t| 2.0 + 3.0 * t).collect();
        let out = least_squares(
            &[ones.clone(), t.to_vec(), vec![2.0; 4], vec![0.0; 4]],
            &y,
            &[0; 4],
        );
        match (&out[0], &out[1]) {
            (Column::Fitted { value: a, .. }, Column::Fitted { value: b, .. }) => {
                assert!((a - 2.0).abs() < 1e-9 && (b - 3.0).abs() < 1e-9, "{a} {b}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(out[2], Column::Dependent(vec![0, 1]));
        assert_eq!(out[3], Column::NoData);
    }

    #[test]
    fn standard_error_matches_the_textbook_line() {
        // Slope of y on t with residuals +-1: s^2 = 4/2, se(slope) = sqrt(2/5).
        let t = [-2.0, -1.0, 0.0, 1.0, 2.0];
        let y = [1.0, -1.0, 0.0, 1.0, -1.0];
        let out = least_squares(&[vec![1.0; 5], t.to_vec()], &y, &[0; 5]);
        let Column::Fitted { value, std_error } = &out[1] else {
            panic!("{out:?}")
        };
        // beta = sum(t y) / sum(t^2) = (-2 + 1 + 0 + 1 - 2) / 10 = -0.2.
        assert!((value + 0.2).abs() < 1e-12);
        let res: Vec<f64> = t.iter().zip(&y).map(|(t, y)| y - (-0.2 * t)).collect();
        let s2 = res.iter().map(|r| r * r).sum::<f64>() / 3.0;
        assert!((std_error.unwrap() - (s2 / 10.0).sqrt()).abs() < 1e-12);
    }

    #[test]
    fn a_noisy_group_weighs_less_than_an_exact_one() {
        // y = 1 + 2 t exactly in group 0; group 1 carries +-3 of noise. Weighted by the
        // groups' residual variances (one reweighting step from the unweighted fit), the
        // fit follows group 0 much more closely than the unweighted one.
        let t: Vec<f64> = (0..12).map(f64::from).collect();
        let group: Vec<usize> = (0..12).map(|i| usize::from(i % 2 == 1)).collect();
        let y: Vec<f64> = t
            .iter()
            .zip(&group)
            .enumerate()
            .map(|(i, (t, g))| {
                1.0 + 2.0 * t
                    + if *g == 1 {
                        [3.0, -3.0, 2.0][i % 3]
                    } else {
                        0.0
                    }
            })
            .collect();
        let out = least_squares(&[vec![1.0; 12], t.clone()], &y, &group);
        let Column::Fitted { value, std_error } = &out[1] else {
            panic!("{out:?}")
        };
        let unweighted = least_squares(&[vec![1.0; 12], t], &y, &[0; 12]);
        let Column::Fitted { value: u, .. } = &unweighted[1] else {
            panic!()
        };
        assert!((u - 2.0).abs() > 3.0 * (value - 2.0).abs(), "{u} {value}");
        let Column::Fitted { std_error: su, .. } = &unweighted[1] else {
            panic!()
        };
        assert!(std_error.unwrap() < su.unwrap(), "{std_error:?} {su:?}");
    }
}
