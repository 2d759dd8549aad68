//! Each CPU's own offset, removed: the latency a pair would have if both CPUs were as
//! near to everyone as the average CPU.
//!
//! On a mesh whose cache line has one home (one buffer for every pair, as a ping-pong
//! uses), latency is about `c + a_i + a_j`: each core's distance to the home, added. A
//! vCPU whose host thread is slowed adds the same to every pair it is in. Neither is a
//! group of the machine, but in the latency view the CPUs nearest the home are nearest
//! each other and a slow vCPU is far from everyone, so cuts through such offsets can look
//! like steps. With the offsets removed (the least-squares fit of `c + a_i + a_j` to the
//! log latencies of the measured pairs, divided out), what is left are the steps that
//! are not about where a CPU is but about which CPUs share something: SMT siblings, core
//! pairs on one mesh stop, complexes, sockets. Balanced groups (every CPU with as many
//! partners inside as the others) keep their steps exactly: every CPU's offset absorbs
//! the same share of them. The fit is multiplicative (in logs) because machines are
//! hierarchies: a CCD farther from the I/O die than the others adds to its cross-CCD
//! pairs in proportion, and subtracting that in ns from its 10-ns SMT pairs would leave
//! nothing of them.

use super::*;

/// The matrix with each CPU's offset divided out, in ns.
pub(super) fn offsets_removed(m: &LatencyMatrix) -> LatencyMatrix {
    let n = m.n();
    let mut out = LatencyMatrix::new(m.cpus().to_vec());
    let (mut sum, mut cnt) = (vec![0.0f64; n], vec![0usize; n]);
    let (mut total, mut count) = (0.0f64, 0usize);
    for i in 0..n {
        for j in 0..i {
            if let Some(v) = m.get(i, j).filter(|v| *v > 0.0).map(f64::ln) {
                sum[i] += v;
                sum[j] += v;
                cnt[i] += 1;
                cnt[j] += 1;
                total += v;
                count += 1;
            }
        }
    }
    if n < 3 || count == 0 {
        return m.clone();
    }
    let c = total / count as f64;
    // Row sum S_i = (n - 1) c + (n - 2) a_i when the offsets sum to zero; with holes the
    // CPU's own number of partners stands for n - 1.
    let a: Vec<f64> = (0..n)
        .map(|i| {
            if cnt[i] < 2 {
                return 0.0;
            }
            let k = cnt[i] as f64;
            (sum[i] / k - c) * k / (k - 1.0)
        })
        .collect();
    for i in 0..n {
        for j in 0..i {
            if let Some(v) = m.get(i, j).filter(|v| *v > 0.0) {
                out.set(i, j, v * (-a[i] - a[j]).exp());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_removed_and_a_pair_step_is_kept() {
        // 8 CPUs, CPU i i% farther from everyone, CPUs 2k and 2k+1 share a stop (10%
        // nearer).
        let n = 8;
        let mut m = LatencyMatrix::new((0..n as u32).collect());
        for i in 0..n {
            for j in 0..i {
                let pair = if i / 2 == j / 2 { 0.9 } else { 1.0 };
                m.set(i, j, 100.0 * 1.01f64.powi((i + j) as i32) * pair);
            }
        }
        let r = offsets_removed(&m);
        let mut inside = Vec::new();
        let mut between = Vec::new();
        for i in 0..n {
            for j in 0..i {
                let v = r.get(i, j).unwrap();
                if i / 2 == j / 2 {
                    inside.push(v);
                } else {
                    between.push(v);
                }
            }
        }
        let spread = |v: &[f64]| {
            v.iter().copied().fold(f64::MIN, f64::max) - v.iter().copied().fold(f64::MAX, f64::min)
        };
        // The offsets are gone: each side is flat, and the 10% step is whole.
        assert!(spread(&inside) < 1e-9, "{inside:?}");
        assert!(spread(&between) < 1e-9, "{between:?}");
        assert!((inside[0] / between[0] - 0.9).abs() < 1e-12);
    }

    #[test]
    fn holes_stay_holes() {
        let mut m = LatencyMatrix::new(vec![0, 1, 2, 3]);
        m.set(1, 0, 50.0);
        m.set(2, 0, 60.0);
        m.set(3, 2, 55.0);
        let r = offsets_removed(&m);
        assert!(r.get(2, 1).is_none() && r.get(3, 0).is_none());
        assert!(r.get(1, 0).is_some());
    }
}
