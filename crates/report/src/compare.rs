//! Comparing machines or runs: every metric two bundles share, as a ratio with a
//! bootstrap interval, and a verdict that calls a difference within the noise so.
//!
//! Metrics are extracted from typed records (see [`crate::metrics`]); this module only
//! knows numbers with a direction ("higher is better") and their raw samples.

use numalab_stats::{ratio_interval_until, Interval, Stopped, Summary, DEFAULT_SEED};
use serde::{Deserialize, Serialize};

pub use crate::metrics::Metric;

#[cfg(feature = "render")]
mod render;
pub mod sides;

/// The verdict on one ratio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Better than the baseline, beyond the noise.
    Better,
    /// Worse than the baseline, beyond the noise.
    Worse,
    /// The interval of the ratio includes 1.
    WithinNoise,
    /// Too few samples for an interval.
    Unknown,
    /// Measured with different parameters (see the row's `not_comparable`).
    NotComparable,
}

/// How the run-to-run noise behind a row's interval is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum RunNoise {
    /// From the spread between runs (two or more runs on at least one side): the
    /// standard deviation of the runs' log values, a relative spread.
    Measured {
        /// Pooled standard deviation of ln(value) between runs.
        spread: f64,
        /// Runs of the baseline.
        runs_baseline: usize,
        /// Runs of the other side.
        runs_other: usize,
    },
    /// One run per side: the spread between runs is unknown, so this relative
    /// run-to-run spread (standard deviation of one run's value) was assumed and the
    /// within-run interval widened by it.
    Assumed {
        /// The assumed relative standard deviation of a run's value.
        spread: f64,
    },
}

/// Options of a comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The run-to-run relative standard deviation assumed when a side has one run
    /// (`compare --run-noise`).
    pub assumed_run_spread: f64,
}

/// The default [`Options::assumed_run_spread`]: 10%, what repeated runs of cloud VMs
/// and of page migration show; bare-metal servers are often at 1-3% (say so with
/// `--run-noise`, or better, give several runs per side).
pub const DEFAULT_RUN_SPREAD: f64 = 0.10;

impl Default for Options {
    fn default() -> Self {
        Options {
            assumed_run_spread: DEFAULT_RUN_SPREAD,
        }
    }
}

/// One side of a comparison: a machine (or configuration) and its runs, each run the
/// metrics of one bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// Label for people.
    pub label: String,
    /// The metrics of each run.
    pub runs: Vec<Vec<Metric>>,
}

impl Side {
    /// A side of one run.
    pub fn single(label: &str, metrics: Vec<Metric>) -> Self {
        Side {
            label: label.into(),
            runs: vec![metrics],
        }
    }

    /// Metric ids in first-seen order over the runs.
    fn ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = Vec::new();
        for m in self.runs.iter().flatten() {
            if !ids.contains(&m.id.as_str()) {
                ids.push(&m.id);
            }
        }
        ids
    }

    /// The metric `id` in each run that has it.
    fn of(&self, id: &str) -> Vec<&Metric> {
        self.runs
            .iter()
            .filter_map(|r| r.iter().find(|m| m.id == id))
            .collect()
    }
}

/// One metric compared between the baseline and another bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The metric (from the baseline).
    pub id: String,
    /// Group.
    pub group: String,
    /// Name.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Whether higher is better.
    pub higher_is_better: bool,
    /// Median of the baseline.
    pub baseline: f64,
    /// Median of the other bundle.
    pub other: f64,
    /// other / baseline, with its interval when both sides have >= 3 samples.
    pub ratio: f64,
    /// The interval of the ratio.
    pub interval: Option<Interval>,
    /// The verdict.
    pub verdict: Verdict,
    /// How the run-to-run noise was known (absent in comparisons written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_noise: Option<RunNoise>,
    /// Why the figures cannot be compared ("8192 pages vs 2048 pages").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_comparable: Option<String>,
}

/// A comparison of one bundle against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Label of the baseline (host name or path).
    pub baseline: String,
    /// Label of the other bundle.
    pub other: String,
    /// Shared metrics.
    pub rows: Vec<Row>,
    /// Metric ids only in the baseline.
    pub only_baseline: Vec<String>,
    /// Metric ids only in the other.
    pub only_other: Vec<String>,
}

/// Compares `other` with `baseline`, one run each, with the default options.
pub fn compare(
    baseline_label: &str,
    baseline: &[Metric],
    other_label: &str,
    other: &[Metric],
) -> Comparison {
    compare_sides(
        &Side::single(baseline_label, baseline.to_vec()),
        &Side::single(other_label, other.to_vec()),
        Options::default(),
    )
}

fn log_mean(v: &[f64]) -> f64 {
    v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64
}

/// The interval of other/baseline from within-run samples (one run per side): a
/// bootstrap of the ratio of medians with 3 or more samples each, else the
/// conservative ratio of the given bounds, else none. [`Stopped`] at a stop request
/// (Ctrl-C, SIGTERM) during the bootstrap.
fn within_run_interval(a: &Metric, b: &Metric, ratio: f64) -> Result<Option<Interval>, Stopped> {
    if a.samples.len() >= 3 && b.samples.len() >= 3 {
        ratio_interval_until(&b.samples, &a.samples, 0.95, 2000, DEFAULT_SEED, &stop)
    } else {
        Ok(match (a.bounds, b.bounds) {
            (Some((alo, ahi)), Some((blo, bhi))) if alo > 0.0 && ahi > 0.0 => Some(Interval {
                estimate: ratio,
                low: blo / ahi,
                high: bhi / alo,
                level: 0.95,
                resamples: 0,
                seed: 0,
                thinned: None,
            }),
            _ => None,
        })
    }
}

/// The stop check of a comparison's bootstraps: Ctrl-C or SIGTERM
/// ([`numalab_schema::interrupt`]).
fn stop() -> bool {
    numalab_schema::interrupt::requested()
}

/// Compares the other side with the baseline, metric by metric.
///
/// With one run per side the spread between runs is unknown: the within-run interval
/// is widened by the assumed run-to-run spread `s` (by exp(±1.96·s·√2), the 95% range of
/// the difference of two runs). With two or more runs on a side, the runs' medians give
/// the spread: a t interval on the difference of the mean log values (pooled variance),
/// joined with the within-run interval of the pooled samples so that it is never
/// narrower than what one run already shows.
pub fn compare_sides(baseline: &Side, other: &Side, opts: Options) -> Comparison {
    let mut rows = Vec::new();
    for id in baseline.ids() {
        // A stop request (Ctrl-C, SIGTERM) ends the rows here; the caller
        // ([`sides::compare_loaded`]) then ends the comparison as interrupted.
        if numalab_schema::interrupt::requested() {
            break;
        }
        let ra = baseline.of(id);
        let rb = other.of(id);
        if rb.is_empty() {
            continue;
        }
        let a = ra[0];
        // A run's value is the median of its samples.
        let values = |runs: &[&Metric]| -> Vec<f64> {
            runs.iter()
                .filter_map(|m| Summary::of(&m.samples).map(|s| s.median))
                .filter(|v| *v > 0.0 && v.is_finite())
                .collect()
        };
        let (va, vb) = (values(&ra), values(&rb));
        if va.is_empty() || vb.is_empty() {
            continue;
        }
        let (ka, kb) = (va.len(), vb.len());
        // Different parameters: shown, never compared.
        let setups = |runs: &[&Metric]| -> Vec<String> {
            let mut v: Vec<String> = Vec::new();
            for s in runs.iter().filter_map(|m| m.setup.clone()) {
                if !v.contains(&s) {
                    v.push(s);
                }
            }
            v
        };
        let (sa, sb) = (setups(&ra), setups(&rb));
        let mut all = sa.clone();
        for s in &sb {
            if !all.contains(s) {
                all.push(s.clone());
            }
        }
        let not_comparable = (all.len() > 1).then(|| {
            format!(
                "{} ({}) vs {} ({})",
                if sa.is_empty() {
                    "unknown".to_string()
                } else {
                    sa.join(" / ")
                },
                baseline.label,
                if sb.is_empty() {
                    "unknown".to_string()
                } else {
                    sb.join(" / ")
                },
                other.label
            )
        });
        let (base_value, other_value, ratio, interval, run_noise) = if ka == 1 && kb == 1 {
            let (ma, mb) = (va[0], vb[0]);
            let ratio = mb / ma;
            let widen = (1.96 * opts.assumed_run_spread * std::f64::consts::SQRT_2).exp();
            // A stop request ends the rows; the caller ends the comparison as interrupted.
            let Ok(within) = within_run_interval(a, rb[0], ratio) else {
                break;
            };
            let interval = within.map(|i| Interval {
                low: i.low / widen,
                high: i.high * widen,
                ..i
            });
            (
                ma,
                mb,
                ratio,
                interval,
                RunNoise::Assumed {
                    spread: opts.assumed_run_spread,
                },
            )
        } else {
            let (la, lb) = (log_mean(&va), log_mean(&vb));
            let ss = |v: &[f64], m: f64| v.iter().map(|x| (x.ln() - m).powi(2)).sum::<f64>();
            let df = (ka - 1) + (kb - 1);
            let spread = ((ss(&va, la) + ss(&vb, lb)) / df as f64).sqrt();
            let half = numalab_stats::t_quantile(0.975, df)
                * spread
                * (1.0 / ka as f64 + 1.0 / kb as f64).sqrt();
            let d = lb - la;
            let ratio = d.exp();
            let pooled = |runs: &[&Metric]| -> Vec<f64> {
                runs.iter()
                    .flat_map(|m| m.samples.iter().copied())
                    .collect()
            };
            let within = if ra.iter().chain(&rb).all(|m| m.samples.len() >= 3) {
                let Ok(w) = ratio_interval_until(
                    &pooled(&rb),
                    &pooled(&ra),
                    0.95,
                    2000,
                    DEFAULT_SEED,
                    &stop,
                ) else {
                    break;
                };
                w
            } else {
                None
            };
            let (mut low, mut high) = ((d - half).exp(), (d + half).exp());
            if let Some(w) = &within {
                low = low.min(w.low);
                high = high.max(w.high);
            }
            (
                la.exp(),
                lb.exp(),
                ratio,
                Some(Interval {
                    estimate: ratio,
                    low,
                    high,
                    level: 0.95,
                    resamples: 0,
                    seed: 0,
                    thinned: within.and_then(|w| w.thinned),
                }),
                RunNoise::Measured {
                    spread,
                    runs_baseline: ka,
                    runs_other: kb,
                },
            )
        };
        let verdict = match &interval {
            _ if not_comparable.is_some() => Verdict::NotComparable,
            None => Verdict::Unknown,
            Some(i) if i.low <= 1.0 && i.high >= 1.0 => Verdict::WithinNoise,
            Some(_) => {
                if (ratio > 1.0) == a.higher_is_better {
                    Verdict::Better
                } else {
                    Verdict::Worse
                }
            }
        };
        rows.push(Row {
            id: a.id.clone(),
            group: a.group.clone(),
            // The setup belongs to the name when both sides share it; when they do
            // not, `not_comparable` names both.
            name: thinned_note(
                if not_comparable.is_some() {
                    a.name.clone()
                } else {
                    a.label()
                },
                interval.as_ref(),
            ),
            unit: a.unit.clone(),
            higher_is_better: a.higher_is_better,
            baseline: base_value,
            other: other_value,
            ratio,
            interval,
            verdict,
            run_noise: Some(run_noise),
            not_comparable,
        });
    }
    let ids = |v: &Side, w: &Side| -> Vec<String> {
        let theirs = w.ids();
        v.ids()
            .into_iter()
            .filter(|id| !theirs.contains(id))
            .map(String::from)
            .collect()
    };
    Comparison {
        baseline: baseline.label.clone(),
        other: other.label.clone(),
        rows,
        only_baseline: ids(baseline, other),
        only_other: ids(other, baseline),
    }
}

/// A figure's name, with the note "interval from K quantiles of N samples" when its
/// interval resampled quantiles of a sample too large to resample whole
/// ([`numalab_stats::RESAMPLE_MAX_SAMPLES`]).
fn thinned_note(name: String, interval: Option<&Interval>) -> String {
    match interval.and_then(|i| i.thinned) {
        Some(t) => format!(
            "{name} (interval from {} quantiles of {} samples)",
            t.quantiles, t.samples
        ),
        None => name,
    }
}

impl Comparison {
    /// Whether the two bundles share nothing comparable.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// How run-to-run noise entered the intervals, for people.
    pub fn run_noise_note(&self) -> Option<String> {
        let mut assumed = None;
        let mut measured = None;
        for r in &self.rows {
            match &r.run_noise {
                Some(RunNoise::Assumed { spread }) => assumed = Some(*spread),
                Some(RunNoise::Measured {
                    runs_baseline,
                    runs_other,
                    ..
                }) => measured = Some((*runs_baseline, *runs_other)),
                None => {}
            }
        }
        if let Some(s) = assumed {
            let widen = (1.96 * s * std::f64::consts::SQRT_2).exp();
            Some(format!(
                "run-to-run noise unknown: one run per side, so each within-run interval (bootstrap of the ratio of medians) is widened by x{widen:.2} for an assumed {:.0}% run-to-run spread (--run-noise); give several runs per side (A1,A2,A3 B1,B2,B3) to measure it",
                s * 100.0
            ))
        } else {
            measured.map(|(a, b)| format!(
                "run-to-run noise measured from {a} run(s) of {} and {b} of {}: values are geometric means of the runs' medians, intervals t intervals of the difference of the runs' log values joined with the within-run interval",
                self.baseline, self.other
            ))
        }
    }

    /// "Which is better for what", one sentence per group.
    pub fn summary(&self) -> Vec<String> {
        let mut groups: Vec<&str> = self.rows.iter().map(|r| r.group.as_str()).collect();
        groups.dedup();
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for g in groups {
            if seen.contains(&g) {
                continue;
            }
            seen.push(g);
            let rows: Vec<&Row> = self.rows.iter().filter(|r| r.group == g).collect();
            let better = rows.iter().filter(|r| r.verdict == Verdict::Better).count();
            let worse = rows.iter().filter(|r| r.verdict == Verdict::Worse).count();
            let noise = rows
                .iter()
                .filter(|r| r.verdict == Verdict::WithinNoise)
                .count();
            let apart = rows
                .iter()
                .filter(|r| r.verdict == Verdict::NotComparable)
                .count();
            let unknown = rows.len() - better - worse - noise - apart;
            let detail: Vec<String> = rows
                .iter()
                .map(|r| match &r.interval {
                    _ if r.verdict == Verdict::NotComparable => format!(
                        "{}: not comparable, {}",
                        r.name,
                        r.not_comparable
                            .as_deref()
                            .unwrap_or("different parameters")
                    ),
                    Some(i) => format!("{} {:.2}x [{:.2}, {:.2}]", r.name, r.ratio, i.low, i.high),
                    None => format!("{} {:.2}x", r.name, r.ratio),
                })
                .collect();
            let verdict = if better > 0 && worse == 0 {
                format!("{} is better", self.other)
            } else if worse > 0 && better == 0 {
                format!("{} is better", self.baseline)
            } else if better > 0 && worse > 0 {
                "mixed".to_string()
            } else if noise > 0 && unknown == 0 {
                "no difference beyond the noise".to_string()
            } else if noise > 0 {
                format!("no difference beyond the noise ({unknown} single-sample figure(s) without an interval)")
            } else if noise + unknown == 0 {
                "not comparable (measured with different parameters)".to_string()
            } else {
                "cannot tell (single samples, no interval)".to_string()
            };
            out.push(format!("{g}: {verdict} ({})", detail.join(", ")));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: &str, higher: bool, samples: &[f64]) -> Metric {
        let group = if id.starts_with("bw") {
            "memory bandwidth"
        } else {
            "latency"
        };
        Metric::new(id, group, id, "x", higher, samples.to_vec())
    }

    #[test]
    fn power_sources_are_named_and_different_ones_warned_about_per_watt() {
        let pw = |v: f64| {
            Metric::new(
                "w.per_joule",
                crate::metrics::PER_WATT,
                "requests per joule",
                "requests/J",
                true,
                vec![v],
            )
        };
        let sides = [
            Side::single("arm", vec![pw(10.0)]),
            Side::single("x86", vec![pw(8.0)]),
        ];
        let power = |a: &[&str], b: &[&str]| {
            vec![
                SidePower {
                    side: "arm".into(),
                    sources: a.iter().map(|s| s.to_string()).collect(),
                },
                SidePower {
                    side: "x86".into(),
                    sources: b.iter().map(|s| s.to_string()).collect(),
                },
            ]
        };
        let differ = compare_groups(&sides, vec![], Options::default())
            .with_power(power(&["sensors: SoC CPU power"], &["sensors: package"]));
        assert!(differ
            .summary
            .contains(&"power: arm used sensors: SoC CPU power".to_string()));
        assert!(
            differ
                .summary
                .iter()
                .any(|l| l.starts_with("power: arm and x86 used different power sources")),
            "{:?}",
            differ.summary
        );
        #[cfg(feature = "render")]
        {
            let doc = differ.document(&[]);
            assert!(doc.findings.iter().any(
                |f| f.id == "compare_power" && f.severity == crate::findings::Severity::Warning
            ));
        }
        let same = compare_groups(&sides, vec![], Options::default())
            .with_power(power(&["wall (BMC)"], &["wall (BMC)"]));
        assert!(!same
            .summary
            .iter()
            .any(|l| l.contains("different power sources")));
        // Without a per-watt figure compared, different sources are only named.
        let bw = [
            Side::single("arm", vec![m("bw.triad", true, &[1.0])]),
            Side::single("x86", vec![m("bw.triad", true, &[1.0])]),
        ];
        let r = compare_groups(&bw, vec![], Options::default()).with_power(power(&["a"], &[]));
        assert!(r
            .summary
            .contains(&"power: x86 has no power figure".to_string()));
        assert!(!r
            .summary
            .iter()
            .any(|l| l.contains("different power sources")));
        let back: Report = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.power, r.power);
    }

    #[test]
    fn percentiles_without_samples_use_their_bounds() {
        let mut a = m("lat.p99", false, &[100.0]);
        a.bounds = Some((95.0, 105.0));
        let mut b = m("lat.p99", false, &[200.0]);
        b.bounds = Some((190.0, 210.0));
        let exact = Options {
            assumed_run_spread: 0.0,
        };
        let one = |label: &str, m: &Metric| Side::single(label, vec![m.clone()]);
        let c = compare_sides(&one("A", &a), &one("B", &b), exact);
        let i = c.rows[0].interval.clone().unwrap();
        assert!((i.low - 190.0 / 105.0).abs() < 1e-9 && (i.high - 210.0 / 95.0).abs() < 1e-9);
        assert_eq!(c.rows[0].verdict, Verdict::Worse);
        // With the default assumed run-to-run spread, the interval widens around it.
        let wide = compare("A", &[a.clone()], "B", &[b]);
        let w = wide.rows[0].interval.clone().unwrap();
        assert!(w.low < i.low && w.high > i.high);
        assert_eq!(wide.rows[0].verdict, Verdict::Worse);
        let mut close = m("lat.p99", false, &[101.0]);
        close.bounds = Some((96.0, 106.0));
        assert_eq!(
            compare("A", &[a], "B", &[close]).rows[0].verdict,
            Verdict::WithinNoise
        );
    }

    #[test]
    fn ratios_verdicts_and_noise() {
        let a = vec![
            m("bw.triad", true, &[10.0, 10.2, 9.9, 10.1, 10.0]),
            m("lat.idle", false, &[100.0, 101.0, 99.0, 100.0, 100.5]),
            m("bw.copy", true, &[8.0, 8.1, 7.9, 8.0, 8.05]),
            m("lat.single", false, &[50.0]),
            m("only.a", true, &[1.0]),
        ];
        let b = vec![
            m("bw.triad", true, &[20.0, 20.5, 19.8, 20.2, 20.1]),
            m("lat.idle", false, &[120.0, 121.0, 119.0, 120.0, 120.5]),
            m("bw.copy", true, &[8.02, 7.95, 8.1, 7.9, 8.0]),
            m("lat.single", false, &[40.0]),
            m("only.b", true, &[1.0]),
        ];
        // Within-run noise only (as if the runs were known to repeat exactly).
        let exact = Options {
            assumed_run_spread: 0.0,
        };
        let c = compare_sides(
            &Side::single("A", a.clone()),
            &Side::single("B", b.clone()),
            exact,
        );
        let row = |id: &str| c.rows.iter().find(|r| r.id == id).unwrap();
        assert!((row("bw.triad").ratio - 2.0).abs() < 0.02);
        assert_eq!(row("bw.triad").verdict, Verdict::Better);
        // Higher latency is worse.
        assert_eq!(row("lat.idle").verdict, Verdict::Worse);
        assert_eq!(row("bw.copy").verdict, Verdict::WithinNoise);
        assert_eq!(row("lat.single").verdict, Verdict::Unknown);
        assert_eq!(c.only_baseline, vec!["only.a"]);
        assert_eq!(c.only_other, vec!["only.b"]);
        let s = c.summary();
        assert!(
            s.iter()
                .any(|l| l.starts_with("memory bandwidth: B is better")),
            "{s:?}"
        );
        assert!(
            s.iter().any(|l| l.starts_with("latency: A is better")),
            "{s:?}"
        );
        assert!(!c.is_empty());
        #[cfg(feature = "render")]
        {
            assert_eq!(c.table().rows.len(), 4);
            assert_eq!(c.chart().bars.len(), 4);
        }
    }

    /// Three runs per side whose medians spread by about 3% between runs, each run
    /// with its own within-run samples; `other` is `factor` times the baseline.
    fn runs(id: &str, higher: bool, factor: f64) -> Vec<Vec<Metric>> {
        [1.0, 1.03, 0.97]
            .iter()
            .map(|run| {
                let v = 100.0 * run * factor;
                vec![m(
                    id,
                    higher,
                    &[v * 0.995, v, v * 1.005, v * 0.998, v * 1.002],
                )]
            })
            .collect()
    }

    fn side(label: &str, runs: Vec<Vec<Metric>>) -> Side {
        Side {
            label: label.into(),
            runs,
        }
    }

    #[test]
    fn run_to_run_noise_decides_with_several_runs() {
        let base = side("A", runs("bw.triad", true, 1.0));
        let ten = compare_sides(
            &base,
            &side("B", runs("bw.triad", true, 1.10)),
            Options::default(),
        );
        let r = &ten.rows[0];
        assert_eq!(r.verdict, Verdict::Better, "{r:?}");
        assert!((r.ratio - 1.10).abs() < 1e-9);
        match &r.run_noise {
            Some(RunNoise::Measured {
                spread,
                runs_baseline: 3,
                runs_other: 3,
            }) => assert!((0.025..0.035).contains(spread), "{spread}"),
            other => panic!("{other:?}"),
        }
        // 2% is inside the 3% spread between runs, though each run alone is tight
        // (within-run noise 0.5%): no difference.
        let two = compare_sides(
            &base,
            &side("B", runs("bw.triad", true, 1.02)),
            Options::default(),
        );
        assert_eq!(
            two.rows[0].verdict,
            Verdict::WithinNoise,
            "{:?}",
            two.rows[0]
        );
        // The same 2% between two single runs looks significant from within-run noise
        // alone; with run-to-run noise unknown (assumed 10%) it is not called.
        let single = |f: f64| {
            compare(
                "A",
                &[m("bw.triad", true, &[100.0, 100.5, 99.5, 100.2, 99.8])],
                "B",
                &[m(
                    "bw.triad",
                    true,
                    &[100.0 * f, 100.5 * f, 99.5 * f, 100.2 * f, 99.8 * f],
                )],
            )
        };
        assert_eq!(single(1.02).rows[0].verdict, Verdict::WithinNoise);
        assert!(single(1.02)
            .run_noise_note()
            .unwrap()
            .contains("run-to-run noise unknown"));
        assert!(single(1.02).summary()[0].contains("no difference beyond the noise"));
        // A large difference is still found from one run per side.
        assert_eq!(single(2.0).rows[0].verdict, Verdict::Better);
        assert!(ten
            .run_noise_note()
            .unwrap()
            .contains("measured from 3 run(s)"));
    }

    #[test]
    fn figures_of_different_setups_are_not_compared() {
        let a = m("mig.memcpy", true, &[2.0, 2.1, 1.9]).with_setup("8192 pages");
        let b = m("mig.memcpy", true, &[4.0, 4.1, 3.9]).with_setup("2048 pages");
        let c = compare("A", std::slice::from_ref(&a), "B", &[b]);
        let r = &c.rows[0];
        assert_eq!(r.verdict, Verdict::NotComparable);
        assert_eq!(
            r.not_comparable.as_deref(),
            Some("8192 pages (A) vs 2048 pages (B)")
        );
        #[cfg(feature = "render")]
        assert!(c.chart().bars.is_empty());
        let s = c.summary();
        assert!(s[0].contains("not comparable"), "{s:?}");
        assert!(!s[0].contains("better"), "{s:?}");
        // The same setup compares.
        let same = m("mig.memcpy", true, &[4.0, 4.1, 3.9]).with_setup("8192 pages");
        assert_eq!(
            compare("A", &[a], "B", &[same]).rows[0].verdict,
            Verdict::Better
        );
    }

    #[test]
    fn nothing_in_common() {
        let c = compare("A", &[m("x", true, &[1.0])], "B", &[m("y", true, &[1.0])]);
        assert!(c.is_empty());
        assert_eq!(c.only_baseline, vec!["x"]);
    }
}

/// Several bundles compared with the first (the baseline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Layout version of this document.
    pub schema_version: u32,
    /// Label of the baseline.
    pub baseline: String,
    /// Every bundle's label, the baseline first.
    pub bundles: Vec<String>,
    /// One comparison per other bundle.
    pub comparisons: Vec<Comparison>,
    /// "Which is better for what", one sentence per group and comparison.
    pub summary: Vec<String>,
    /// Problems met while reading the bundles.
    pub problems: Vec<String>,
    /// The power sources of each side (see [`Report::with_power`]); empty when not
    /// given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub power: Vec<SidePower>,
}

/// The power sources one side's figures rest on ([`crate::power::sources`] of its
/// bundles).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SidePower {
    /// The side's label.
    pub side: String,
    /// Its sources, one sentence each; empty: no power figure.
    pub sources: Vec<String>,
}

impl Report {
    /// Adds which power source each side used, and a warning to the summary when
    /// per-watt figures were compared on sides whose sources differ (a RAPL package
    /// counter and a BMC's wall power are different quantities).
    pub fn with_power(mut self, power: Vec<SidePower>) -> Self {
        let per_watt_compared = self
            .comparisons
            .iter()
            .any(|c| c.rows.iter().any(|r| r.group == crate::metrics::PER_WATT));
        for p in &power {
            self.summary.push(if p.sources.is_empty() {
                format!("power: {} has no power figure", p.side)
            } else {
                format!("power: {} used {}", p.side, p.sources.join("; "))
            });
        }
        if per_watt_compared {
            if let Some(first) = power.first() {
                for p in power.iter().skip(1).filter(|p| p.sources != first.sources) {
                    self.summary.push(format!(
                        "power: {} and {} used different power sources, so their per-watt ratios compare different quantities; sample both with the same source (e.g. --bmc on both)",
                        first.side, p.side
                    ));
                }
            }
        }
        self.power = power;
        self
    }

    /// Whether no pair of bundles shares a metric.
    pub fn nothing_in_common(&self) -> bool {
        self.comparisons.iter().all(Comparison::is_empty)
    }
}

/// Compares every bundle after the first with the first, one run per bundle.
pub fn compare_all(set: &[(String, Vec<Metric>)], problems: Vec<String>) -> Report {
    let sides: Vec<Side> = set
        .iter()
        .map(|(l, m)| Side::single(l, m.clone()))
        .collect();
    compare_groups(&sides, problems, Options::default())
}

/// Compares every side after the first with the first.
pub fn compare_groups(sides: &[Side], problems: Vec<String>, opts: Options) -> Report {
    let empty = Side {
        label: String::new(),
        runs: Vec::new(),
    };
    let base = sides.first().unwrap_or(&empty);
    let comparisons: Vec<Comparison> = sides
        .iter()
        .skip(1)
        .map(|o| compare_sides(base, o, opts))
        .collect();
    let mut summary: Vec<String> = comparisons
        .iter()
        .flat_map(|c| {
            let prefix = if sides.len() > 2 {
                format!("{} vs {}: ", c.other, c.baseline)
            } else {
                String::new()
            };
            c.summary()
                .into_iter()
                .chain(c.run_noise_note())
                .map(move |s| format!("{prefix}{s}"))
        })
        .collect();
    // The perspectives of a server evaluation that could not be compared, and why.
    for g in crate::metrics::PERSPECTIVES {
        if comparisons
            .iter()
            .any(|c| c.rows.iter().any(|r| r.group == g))
        {
            continue;
        }
        let lacking: Vec<&str> = sides
            .iter()
            .filter(|s| !s.runs.iter().flatten().any(|m| m.group == g))
            .map(|s| s.label.as_str())
            .collect();
        summary.push(if lacking.is_empty() {
            format!("{g}: not compared (the bundles measured it differently)")
        } else {
            format!(
                "{g}: not compared (no such figure in {})",
                lacking.join(", ")
            )
        });
    }
    Report {
        schema_version: 1,
        baseline: base.label.clone(),
        bundles: sides.iter().map(|s| s.label.clone()).collect(),
        comparisons,
        summary,
        problems,
        power: Vec::new(),
    }
}
