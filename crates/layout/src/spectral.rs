//! Starting placements for the search from a spectral embedding of the matrix.
//!
//! Why: annealing from random placements gets stuck on full meshes, where a mirrored
//! block of cores is internally consistent and undoing it takes many moves at once. A
//! classical-scaling embedding sees the whole matrix at once: on a mesh, latency is a sum
//! of a function of the columns and a function of the rows (`|dx| h + |dy| v`), so the
//! double-centred matrix `B = -1/2 J D J` splits into an x part and a y part, and its
//! leading eigenvectors are monotone functions of x and of y. Ranking the cores along two
//! of them and matching ranks to grid coordinates gives a placement that is right up to
//! local errors, which the search then repairs.
//!
//! The embedding is only defined up to a rotation (equal eigenvalues on a square mesh with
//! equal hop costs) and a reflection, and which eigenvector is x is not known, so starts
//! are made for a set of rotations, both axis assignments and the four reflections, and
//! ranked by the squared error of the model fitted to each.

/// Leading `k` eigenvectors (largest magnitude) of a symmetric matrix (row-major n x n)
/// by subspace iteration; columns orthonormal. The double-centred matrix of mesh
/// latencies is positive semi-definite (L1 distances are of negative type), up to noise,
/// so largest magnitude is largest.
pub fn leading_eigenvectors(b: &[f64], n: usize, k: usize, iterations: usize) -> Vec<Vec<f64>> {
    let k = k.min(n);
    let shift = 0.0;
    // Deterministic start: smooth, distinct vectors.
    let mut q: Vec<Vec<f64>> = (0..k)
        .map(|c| {
            (0..n)
                .map(|i| ((i as f64 + 1.0) * (c as f64 + 1.0) * 0.618_034).sin() + 1e-3 * c as f64)
                .collect()
        })
        .collect();
    orthonormalize(&mut q);
    let mut next = vec![vec![0.0; n]; k];
    for _ in 0..iterations {
        for (c, col) in q.iter().enumerate() {
            for i in 0..n {
                let row = &b[i * n..(i + 1) * n];
                next[c][i] = row.iter().zip(col).map(|(x, y)| x * y).sum::<f64>() + shift * col[i];
            }
        }
        std::mem::swap(&mut q, &mut next);
        orthonormalize(&mut q);
    }
    q
}

fn orthonormalize(q: &mut [Vec<f64>]) {
    for c in 0..q.len() {
        for d in 0..c {
            let dot: f64 = q[c].iter().zip(&q[d]).map(|(a, b)| a * b).sum();
            let qd = q[d].clone();
            for (x, y) in q[c].iter_mut().zip(qd) {
                *x -= dot * y;
            }
        }
        let norm = q[c].iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 0.0 {
            q[c].iter_mut().for_each(|x| *x /= norm);
        }
    }
}

/// The rotation angle (radians, in [0, pi/2)) of the plane of two embedding vectors that
/// minimises the fourth moments of the rotated coordinates. On a mesh the pure x and y
/// modes are cosine-shaped (kurtosis 1.5, below a Gaussian's 3); a rotated mix of the two
/// is a sum of independent variables, closer to Gaussian, so the least kurtotic rotation
/// separates them (the idea of independent component analysis). 1-degree steps.
pub fn unmix(a: &[f64], b: &[f64]) -> f64 {
    let mut best = (f64::INFINITY, 0.0);
    for step in 0..90 {
        let th = f64::from(step).to_radians();
        let (c, s) = (th.cos(), th.sin());
        let m: f64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| (c * x + s * y).powi(4) + (-s * x + c * y).powi(4))
            .sum();
        if m < best.0 {
            best = (m, th);
        }
    }
    best.1
}

/// `-1/2 J D J` of a dissimilarity matrix (row-major n x n).
pub fn double_centre(d: &[f64], n: usize) -> Vec<f64> {
    let row: Vec<f64> = (0..n)
        .map(|i| d[i * n..(i + 1) * n].iter().sum::<f64>() / n as f64)
        .collect();
    let all = row.iter().sum::<f64>() / n as f64;
    let mut b = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            b[i * n + j] = -0.5 * (d[i * n + j] - row[i] - row[j] + all);
        }
    }
    b
}

/// Ranks of values as fractions of the way through the sample, at the middle of each
/// rank's share: (r + 0.5) / n. Scaled onto `k` grid columns as `-0.5 + f k`, the n/k
/// smallest values land nearest column 0, the next n/k nearest column 1, and so on.
pub fn rank_scale(v: &[f64]) -> Vec<f64> {
    let n = v.len();
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]).then(a.cmp(&b)));
    let mut out = vec![0.0; n];
    for (r, &i) in idx.iter().enumerate() {
        out[i] = (r as f64 + 0.5) / n as f64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eigenvectors_of_a_diagonal_matrix() {
        let n = 4;
        let mut b = vec![0.0; n * n];
        for (i, v) in [1.0, 5.0, 3.0, 0.5].iter().enumerate() {
            b[i * n + i] = *v;
        }
        let q = leading_eigenvectors(&b, n, 2, 200);
        assert!(q[0][1].abs() > 0.999, "{q:?}");
        assert!(q[1][2].abs() > 0.999, "{q:?}");
    }

    #[test]
    fn a_line_embeds_in_order() {
        // Points on a line at 0..6: distances |i - j|; the leading eigenvector is monotone.
        let n = 7;
        let d: Vec<f64> = (0..n * n)
            .map(|k| ((k / n) as f64 - (k % n) as f64).abs())
            .collect();
        let b = double_centre(&d, n);
        let q = leading_eigenvectors(&b, n, 1, 300);
        let s = rank_scale(&q[0]);
        let increasing = s.windows(2).all(|w| w[0] < w[1]);
        let decreasing = s.windows(2).all(|w| w[0] > w[1]);
        assert!(increasing || decreasing, "{s:?}");
    }
}
