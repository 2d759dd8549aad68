//! Past run times of a mix's tasks, and a run-time model per task fitted to them.
//!
//! Why: the "load" schedule gives each task the cores that make all tasks end together,
//! which needs each task's run time as a function of its thread count. `numalab scale
//! --out DIR -- CMD` records every run (`harness.run`: argv, threads, placement, wall
//! time); this module finds the runs of each task in such bundles (the task's command
//! with its placeholders matching anything), discards outliers per thread count (modified
//! z-score, `numalab_stats::outliers`), takes medians, and fits
//!
//! - Amdahl: `T(t) = s + p / t` (a serial and a parallel part, both >= 0), or
//! - Amdahl with an overhead: `T(t) = s + p / t + k (t - 1)` (time that grows with threads:
//!   synchronisation, remote memory), kept only with 4 or more thread counts when it
//!   halves the squared error,
//!
//! by least squares on relative errors (a 10% miss counts the same at 1 s and at 100 s).
//! The residual (root mean square relative error) says how far to trust a prediction.
//! Runs under other placements than the most frequent one give a factor per placement
//! (median ratio at the thread counts both have).

use crate::mix::{Mix, Task};
use numalab_harness::RunRecord;
use numalab_schema::Bundle;
use serde::{Deserialize, Serialize};

pub use numalab_records::schedule::{Point, RuntimeModel};
use std::collections::BTreeMap;

/// One past run of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Threads given.
    pub threads: usize,
    /// Placement strategy ("compact", "scatter", "none", ...).
    pub placement: String,
    /// Wall time, s.
    pub seconds: f64,
}

fn matches(task: &Task, r: &RunRecord, re: &[regex::Regex]) -> bool {
    if r.shell != task.shell {
        return false;
    }
    if task.shell {
        return re[0].is_match(&r.argv.join(" "));
    }
    r.argv.len() == re.len() && r.argv.iter().zip(re).all(|(a, re)| re.is_match(a))
}

fn pattern(arg: &str) -> regex::Regex {
    // Literal text, placeholders ({name}) match anything; {{ and }} are literal braces.
    let mut out = String::from("^");
    let mut rest = arg.replace("{{", "\u{0}").replace("}}", "\u{1}");
    while let Some(i) = rest.find('{') {
        match rest[i..].find('}') {
            Some(j) => {
                out.push_str(&regex::escape(&rest[..i]));
                out.push_str(".*");
                rest = rest[i + j + 1..].to_string();
            }
            None => break,
        }
    }
    out.push_str(&regex::escape(&rest));
    out.push('$');
    let out = out.replace('\u{0}', "\\{").replace('\u{1}', "\\}");
    regex::Regex::new(&out).unwrap_or_else(|_| regex::Regex::new("^$").expect("valid"))
}

/// The successful past runs of each task (in mix order) found in the bundles.
pub fn gather(mix: &Mix, bundles: &[Bundle]) -> Vec<Vec<Observation>> {
    mix.tasks
        .iter()
        .map(|task| {
            let re: Vec<regex::Regex> = if task.shell {
                vec![pattern(&task.command.join(" "))]
            } else {
                task.command.iter().map(|a| pattern(a)).collect()
            };
            bundles
                .iter()
                .flat_map(|b| b.records_of::<RunRecord>())
                .filter(|(_, r)| r.ok && matches(task, r, &re))
                .filter_map(|(_, r)| {
                    let wall = r.outcome.as_ref()?.wall_ns as f64 / 1e9;
                    Some(Observation {
                        threads: r.threads.or_else(|| {
                            r.cpus
                                .as_ref()
                                .and_then(|c| numalab_schema::cpulist::parse(c).ok())
                                .map(|v| v.len())
                        })?,
                        placement: r.placement.clone().unwrap_or_else(|| "none".into()),
                        seconds: wall,
                    })
                })
                .filter(|o| o.seconds > 0.0 && o.threads > 0)
                .collect()
        })
        .collect()
}

fn points(obs: &[&Observation]) -> Vec<Point> {
    let mut by: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for o in obs {
        by.entry(o.threads).or_default().push(o.seconds);
    }
    by.into_iter()
        .filter_map(|(t, v)| {
            let kept = numalab_stats::without_outliers(&v);
            Some(Point {
                threads: t,
                median_s: numalab_stats::median(&kept)?,
                runs: kept.len(),
                outliers: v.len() - kept.len(),
            })
        })
        .collect()
}

/// Fits `y ~ sum_k c_k f_k(t)` with `c >= 0`, minimising relative squared error, over
/// every subset of the columns (at most 3): the best feasible solution.
fn nnls(pts: &[Point], cols: &[fn(f64) -> f64]) -> Option<(Vec<f64>, f64)> {
    let m = cols.len();
    let mut best: Option<(Vec<f64>, f64)> = None;
    for mask in 1u32..(1 << m) {
        let idx: Vec<usize> = (0..m).filter(|k| mask & (1 << k) != 0).collect();
        let q = idx.len();
        let mut a = vec![vec![0.0; q]; q];
        let mut b = vec![0.0; q];
        for p in pts {
            let t = p.threads as f64;
            let w = 1.0 / (p.median_s * p.median_s);
            for (r, &i) in idx.iter().enumerate() {
                b[r] += w * cols[i](t) * p.median_s;
                for (c, &j) in idx.iter().enumerate() {
                    a[r][c] += w * cols[i](t) * cols[j](t);
                }
            }
        }
        let Some(x) = solve(a, b) else { continue };
        if x.iter().any(|v| *v < 0.0 || !v.is_finite()) {
            continue;
        }
        let mut coef = vec![0.0; m];
        for (r, &i) in idx.iter().enumerate() {
            coef[i] = x[r];
        }
        let sse: f64 = pts
            .iter()
            .map(|p| {
                let t = p.threads as f64;
                let pred: f64 = (0..m).map(|k| coef[k] * cols[k](t)).sum();
                ((pred - p.median_s) / p.median_s).powi(2)
            })
            .sum();
        if best.as_ref().is_none_or(|b| sse < b.1 - 1e-15) {
            best = Some((coef, sse));
        }
    }
    best
}

fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for k in 0..n {
        let piv = (k..n).max_by(|&i, &j| a[i][k].abs().total_cmp(&a[j][k].abs()))?;
        if a[piv][k].abs() < 1e-12 * a[k][k].abs().max(1e-300) || a[piv][k] == 0.0 {
            return None;
        }
        a.swap(k, piv);
        b.swap(k, piv);
        let pivot_row = a[k].clone();
        for i in k + 1..n {
            let f = a[i][k] / pivot_row[k];
            for (aij, akj) in a[i][k..n].iter_mut().zip(&pivot_row[k..n]) {
                *aij -= f * akj;
            }
            b[i] -= f * b[k];
        }
    }
    let mut x = vec![0.0; n];
    for k in (0..n).rev() {
        let s: f64 = (k + 1..n).map(|j| a[k][j] * x[j]).sum();
        x[k] = (b[k] - s) / a[k][k];
    }
    Some(x)
}

/// Fits a task's run-time model to its past runs; None without runs.
pub fn fit(obs: &[Observation]) -> Option<RuntimeModel> {
    if obs.is_empty() {
        return None;
    }
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for o in obs {
        *count.entry(o.placement.as_str()).or_default() += 1;
    }
    let reference = count
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(p, _)| p.to_string())?;
    let mine: Vec<&Observation> = obs.iter().filter(|o| o.placement == reference).collect();
    let pts = points(&mine);
    let one = |_: f64| 1.0;
    let inv = |t: f64| 1.0 / t;
    let lin = |t: f64| t - 1.0;
    let (form, coef, sse) = if pts.len() == 1 {
        let p = &pts[0];
        (
            "one-point".to_string(),
            vec![0.0, p.median_s * p.threads as f64, 0.0],
            0.0,
        )
    } else {
        let (c2, s2) = nnls(&pts, &[one, inv])?;
        let mut chosen = ("amdahl".to_string(), vec![c2[0], c2[1], 0.0], s2);
        if pts.len() >= 4 {
            if let Some((c3, s3)) = nnls(&pts, &[one, inv, lin]) {
                if c3[2] > 0.0 && s3 < 0.5 * s2 {
                    chosen = ("amdahl+overhead".to_string(), c3, s3);
                }
            }
        }
        chosen
    };
    let mut model = RuntimeModel {
        form,
        serial_s: coef[0],
        parallel_s: coef[1],
        overhead_s_per_thread: coef[2],
        residual_rel: (sse / pts.len() as f64).sqrt(),
        placement: reference.clone(),
        points: pts,
        placement_factors: BTreeMap::new(),
    };
    for other in count.keys().filter(|p| **p != reference) {
        let theirs: Vec<&Observation> = obs.iter().filter(|o| o.placement == *other).collect();
        let ratios: Vec<f64> = points(&theirs)
            .iter()
            .filter_map(|q| {
                model
                    .points
                    .iter()
                    .find(|p| p.threads == q.threads)
                    .map(|p| q.median_s / p.median_s)
            })
            .collect();
        if let Some(f) = numalab_stats::median(&ratios) {
            model.placement_factors.insert(other.to_string(), f);
        }
    }
    Some(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(t: usize, s: f64) -> Observation {
        Observation {
            threads: t,
            placement: "compact".into(),
            seconds: s,
        }
    }

    #[test]
    fn amdahl_is_recovered_exactly() {
        // s = 2, p = 8: T(1) = 10, T(2) = 6, T(4) = 4, T(8) = 3.
        let o: Vec<Observation> = [(1, 10.0), (2, 6.0), (4, 4.0), (8, 3.0)]
            .iter()
            .map(|&(t, s)| obs(t, s))
            .collect();
        let m = fit(&o).unwrap();
        assert_eq!(m.form, "amdahl");
        assert!(
            (m.serial_s - 2.0).abs() < 1e-9 && (m.parallel_s - 8.0).abs() < 1e-9,
            "{m:?}"
        );
        assert!(m.residual_rel < 1e-9);
        assert!((m.predict(16) - 2.5).abs() < 1e-9);
    }

    #[test]
    fn slowdown_with_threads_needs_the_overhead_term_and_outliers_are_dropped() {
        // T = 1 + 16/t + 0.5 (t - 1): 17, 9.5, 6.5, 6.5, 9.5 s, plus a wild run at 4.
        let mut o: Vec<Observation> = [(1, 17.0), (2, 9.5), (4, 6.5), (8, 6.5), (16, 9.5)]
            .iter()
            .flat_map(|&(t, s)| vec![obs(t, s), obs(t, s * 1.01), obs(t, s * 0.99)])
            .collect();
        o.push(obs(4, 60.0));
        let m = fit(&o).unwrap();
        assert_eq!(m.form, "amdahl+overhead", "{m:?}");
        let p4 = m.points.iter().find(|p| p.threads == 4).unwrap();
        assert_eq!(p4.outliers, 1);
        assert!(m.overhead_s_per_thread > 0.0);
    }

    #[test]
    fn placeholders_match_anything_and_literals_must_match() {
        let re = pattern("--threads={threads}");
        assert!(re.is_match("--threads=8"));
        assert!(!re.is_match("--thread=8"));
        assert!(pattern("a{{b}}").is_match("a{b}"));
        assert!(pattern("x.y").is_match("x.y") && !pattern("x.y").is_match("xzy"));
    }
}
