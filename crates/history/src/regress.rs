//! Regressions: figures that moved beyond their run-to-run noise since a baseline.
//!
//! Why: a history is mostly read to answer "what got worse". The statistics are
//! `numalab compare`'s ([`numalab_report::compare::compare_sides`]), not new ones: per
//! machine and figure, the baseline run(s) and the latest run(s) are two sides; with one
//! run per side the within-run bootstrap interval of the ratio of medians is widened by
//! an assumed run-to-run spread, with two or more runs on a side the spread between the
//! runs is measured (t interval of the difference of log values, joined with the
//! within-run interval). A figure moved when the 95% interval of the ratio excludes 1;
//! it is a regression when it moved in the worse direction (lower when higher is
//! better, higher when lower is better). A single run per side with fewer than 3
//! samples and no interval gives no verdict ([`Verdict::Unknown`]), never a
//! regression; figures measured with different parameters are "not comparable". Each
//! verdict names what differs between the two sides' runs beside the figure (kernel,
//! firmware, memory in GiB: [`Regression::changed`]), since these are not part of the
//! machine's identity and are often the cause.

use crate::query::{Query, Row, RunFilter};
use crate::{unix_seconds, History, HistoryError};
use numalab_report::compare::{compare_sides, Options, RunNoise, Side, Verdict};
use numalab_report::metrics::Metric;
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// Where each figure's baseline starts (per machine and figure).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Baseline {
    /// The figure's first run on the machine.
    First,
    /// This run (figures and machines it does not have get no row).
    Run(i64),
    /// The figure's first run at or after this time.
    Time(SystemTime),
}

/// What to check for regressions.
#[derive(Debug, Clone, PartialEq)]
pub struct RegressionQuery {
    /// Where the baseline starts.
    pub baseline: Baseline,
    /// Runs in the baseline side, from its start (at least 1).
    pub baseline_runs: usize,
    /// The most recent runs that form the other side (at least 1; never runs of the
    /// baseline side).
    pub latest_runs: usize,
    /// Only this figure.
    pub metric_id: Option<String>,
    /// Only figures of this group.
    pub group: Option<String>,
    /// Which runs.
    pub runs: RunFilter,
    /// Relative run-to-run standard deviation assumed when both sides have one run
    /// (`compare --run-noise`; default [`numalab_report::compare::DEFAULT_RUN_SPREAD`]).
    pub assumed_run_spread: f64,
}

impl Default for RegressionQuery {
    /// First run against the latest run of every figure, with `compare`'s default
    /// assumed run-to-run spread.
    fn default() -> Self {
        RegressionQuery {
            baseline: Baseline::First,
            baseline_runs: 1,
            latest_runs: 1,
            metric_id: None,
            group: None,
            runs: RunFilter::default(),
            assumed_run_spread: numalab_report::compare::DEFAULT_RUN_SPREAD,
        }
    }
}

/// One figure of one machine, baseline against latest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    /// Machine fingerprint.
    pub machine: String,
    /// Figure id.
    pub metric_id: String,
    /// Group.
    pub group: String,
    /// Name (with the setup when both sides share it).
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Whether higher is better.
    pub higher_is_better: bool,
    /// Runs of the baseline side.
    pub baseline_runs: Vec<i64>,
    /// Runs of the latest side.
    pub latest_runs: Vec<i64>,
    /// Baseline value: the median, or the geometric mean of the runs' medians.
    pub baseline: Option<f64>,
    /// Latest value, the same way.
    pub latest: Option<f64>,
    /// latest / baseline.
    pub ratio: Option<f64>,
    /// 95% interval of the ratio.
    pub interval: Option<(f64, f64)>,
    /// Better, worse, within noise, no verdict (too few samples) or not comparable.
    pub verdict: Verdict,
    /// How the run-to-run noise was known.
    pub noise: Option<RunNoise>,
    /// Why the sides cannot be compared (different setups).
    pub not_comparable: Option<String>,
    /// What differs between the two sides' runs beside the figure, often its cause:
    /// "kernel 6.8.0 -> 6.19.0", "firmware ... -> ...", "memory 20 GiB -> 11 GiB" (a side
    /// with several values lists them; memory in whole GiB, so MemTotal's megabytes of
    /// drift are not a change). Empty when nothing differs or nothing is known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

impl Regression {
    /// Whether the figure got worse beyond the noise.
    pub fn is_regression(&self) -> bool {
        self.verdict == Verdict::Worse
    }
}

impl History {
    /// The figures that got worse beyond their run-to-run noise (see the module
    /// documentation): the [`Verdict::Worse`] rows of [`History::verdicts`].
    pub fn regressions(&self, q: &RegressionQuery) -> Result<Vec<Regression>, HistoryError> {
        Ok(self
            .verdicts(q)?
            .into_iter()
            .filter(Regression::is_regression)
            .collect())
    }

    /// Every figure checked, with its verdict: per machine and figure, ordered by
    /// machine then by the figure's first appearance. Figures with no run after the
    /// baseline side are left out.
    pub fn verdicts(&self, q: &RegressionQuery) -> Result<Vec<Regression>, HistoryError> {
        let rows = self.rows(&Query {
            metric_id: q.metric_id.clone(),
            group: q.group.clone(),
            runs: q.runs.clone(),
            limit: None,
        })?;
        self.check_selection(q, &rows)?;
        // Groups by (machine, figure) in first-seen order; rows are in time order.
        let mut groups: Vec<Vec<Row>> = Vec::new();
        let mut index = std::collections::HashMap::new();
        for r in rows {
            let k = (r.point.machine.clone(), r.point.metric_id.clone());
            let i = *index.entry(k).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[i].push(r);
        }
        let mut out = Vec::new();
        for group in &groups {
            if let Some(r) = self.check(group, q)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// A filter that selects no run, or a baseline run that is not among the selected
    /// ones, is refused: "no figure got worse" would be a verdict on nothing.
    fn check_selection(&self, q: &RegressionQuery, rows: &[Row]) -> Result<(), HistoryError> {
        let invalid = |reason: String| HistoryError::Invalid {
            path: self.path.clone(),
            reason,
        };
        let selected = self.runs(&q.runs)?;
        if selected.is_empty() {
            let all = self.runs(&crate::query::RunFilter::default())?;
            return Err(invalid(if all.is_empty() {
                "the history holds no run; store bundles with `numalab db ingest` first".into()
            } else {
                format!(
                    "no stored run matches the filter (the history holds {} run(s)); see `numalab db runs`",
                    all.len()
                )
            }));
        }
        if let Baseline::Run(id) = q.baseline {
            if !selected.iter().any(|r| r.run_id == id) {
                let ids: Vec<String> = selected.iter().map(|r| r.run_id.to_string()).collect();
                let shown = if ids.len() > 12 {
                    format!(
                        "{} ... {}",
                        ids[..6].join(", "),
                        ids[ids.len() - 3..].join(", ")
                    )
                } else {
                    ids.join(", ")
                };
                return Err(invalid(format!(
                    "--baseline run:{id}: no run {id} among the runs selected (runs {shown}); see `numalab db runs`"
                )));
            }
            if !rows.iter().any(|r| r.point.run_id == id) {
                return Err(invalid(format!(
                    "--baseline run:{id}: run {id} holds none of the figures asked for"
                )));
            }
        }
        Ok(())
    }

    fn check(&self, g: &[Row], q: &RegressionQuery) -> Result<Option<Regression>, HistoryError> {
        let n = g.len();
        let start = match q.baseline {
            Baseline::First => Some(0),
            Baseline::Run(id) => g.iter().position(|r| r.point.run_id == id),
            Baseline::Time(t) => {
                let t = unix_seconds(t);
                g.iter().position(|r| r.point.time_s >= t)
            }
        };
        let Some(start) = start else { return Ok(None) };
        let base_end = (start + q.baseline_runs.max(1)).min(n);
        let latest_start = base_end.max(n.saturating_sub(q.latest_runs.max(1)));
        if latest_start >= n {
            return Ok(None);
        }
        let metric = |r: &Row| -> Result<Metric, HistoryError> {
            let p = &r.point;
            Ok(Metric {
                id: p.metric_id.clone(),
                group: p.group.clone(),
                name: p.name.clone(),
                unit: p.unit.clone(),
                higher_is_better: p.higher_is_better,
                samples: self.samples(r.metric_row)?,
                bounds: p.bounds,
                setup: p.setup.clone(),
            })
        };
        let side = |label: &str, rows: &[Row]| -> Result<Side, HistoryError> {
            Ok(Side {
                label: label.into(),
                runs: rows
                    .iter()
                    .map(|r| metric(r).map(|m| vec![m]))
                    .collect::<Result<_, _>>()?,
            })
        };
        let base = &g[start..base_end];
        let latest = &g[latest_start..];
        let a = side("baseline", base)?;
        let b = side("latest", latest)?;
        let cmp = compare_sides(
            &a,
            &b,
            Options {
                assumed_run_spread: q.assumed_run_spread,
            },
        );
        let first = &g[start].point;
        let ids = |rows: &[Row]| rows.iter().map(|r| r.point.run_id).collect();
        let mut reg = Regression {
            machine: first.machine.clone(),
            metric_id: first.metric_id.clone(),
            group: first.group.clone(),
            name: first.name.clone(),
            unit: first.unit.clone(),
            higher_is_better: first.higher_is_better,
            baseline_runs: ids(base),
            latest_runs: ids(latest),
            baseline: None,
            latest: None,
            ratio: None,
            interval: None,
            verdict: Verdict::Unknown,
            noise: None,
            not_comparable: None,
            changed: self.changed(&ids(base), &ids(latest))?,
        };
        // compare leaves out figures without a positive median: no verdict.
        if let Some(row) = cmp.rows.into_iter().next() {
            reg.name = row.name;
            reg.baseline = Some(row.baseline);
            reg.latest = Some(row.other);
            reg.ratio = Some(row.ratio);
            reg.interval = row.interval.map(|i| (i.low, i.high));
            reg.verdict = row.verdict;
            reg.noise = row.run_noise;
            reg.not_comparable = row.not_comparable;
        }
        Ok(Some(reg))
    }

    /// Kernel, firmware and memory (GiB) of the runs of two sides, where they differ.
    fn changed(&self, base: &[i64], latest: &[i64]) -> Result<Vec<String>, HistoryError> {
        let e = |e| self.sql_err("reading the runs' kernels", e);
        let mut st = self
            .conn
            .prepare_cached("SELECT kernel, firmware, memory_bytes FROM run WHERE id = ?1")
            .map_err(e)?;
        // Per side: the distinct values of each attribute, in run order.
        let mut sides: [[Vec<String>; 3]; 2] = Default::default();
        for (side, ids) in sides.iter_mut().zip([base, latest]) {
            for &id in ids {
                let (k, f, m): (Option<String>, Option<String>, Option<i64>) = st
                    .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .map_err(e)?;
                let m = m
                    .and_then(|b| u64::try_from(b).ok())
                    .map(|b| format!("{} GiB", numalab_report::fingerprint::gib(b)));
                for (values, v) in side.iter_mut().zip([k, f, m]) {
                    let v = v.unwrap_or_else(|| "unknown".into());
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
            }
        }
        let [a, b] = sides;
        Ok(["kernel", "firmware", "memory"]
            .iter()
            .zip(a.iter().zip(b.iter()))
            .filter(|(_, (x, y))| x.len() != y.len() || x.iter().any(|v| !y.contains(v)))
            .map(|(name, (x, y))| format!("{name} {} -> {}", x.join(", "), y.join(", ")))
            .collect())
    }
}
