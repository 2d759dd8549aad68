//! Comparing machines or runs: every metric two bundles share, as a ratio with a
//! bootstrap interval, and a verdict that calls a difference within the noise so.
//!
//! Metrics are extracted from typed records (see [`crate::metrics`]); this module only
//! knows numbers with a direction ("higher is better") and their raw samples.

use crate::svg::{Bar, BarChart};
use crate::table::{Cell, Column, Table};
use numalab_stats::{ratio_interval, Interval, Summary, DEFAULT_SEED};
use serde::{Deserialize, Serialize};

/// One comparable quantity of a bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Stable id, the same on every machine (e.g. `mem.bandwidth.triad.all`).
    pub id: String,
    /// Group for the summary ("memory bandwidth", "latency", "throughput"...).
    pub group: String,
    /// Name for people.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Whether a larger value is better.
    pub higher_is_better: bool,
    /// Raw samples (repetitions); one sample gives a ratio without an interval.
    pub samples: Vec<f64>,
    /// A 95% interval of the value when the raw samples are not kept (response-time
    /// percentiles): the ratio then gets the conservative interval
    /// [low_b / high_a, high_b / low_a].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<(f64, f64)>,
}

impl Metric {
    /// A metric from its samples.
    pub fn new(
        id: &str,
        group: &str,
        name: &str,
        unit: &str,
        higher_is_better: bool,
        samples: Vec<f64>,
    ) -> Self {
        Metric {
            id: id.into(),
            group: group.into(),
            name: name.into(),
            unit: unit.into(),
            higher_is_better,
            samples,
            bounds: None,
        }
    }
}

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

/// Compares `other` with `baseline`.
pub fn compare(
    baseline_label: &str,
    baseline: &[Metric],
    other_label: &str,
    other: &[Metric],
) -> Comparison {
    let mut rows = Vec::new();
    for a in baseline {
        let Some(b) = other.iter().find(|m| m.id == a.id) else {
            continue;
        };
        let (Some(sa), Some(sb)) = (Summary::of(&a.samples), Summary::of(&b.samples)) else {
            continue;
        };
        if sa.median == 0.0 {
            continue;
        }
        let ratio = sb.median / sa.median;
        let interval = if a.samples.len() >= 3 && b.samples.len() >= 3 {
            ratio_interval(&b.samples, &a.samples, 0.95, 2000, DEFAULT_SEED)
        } else {
            match (a.bounds, b.bounds) {
                (Some((alo, ahi)), Some((blo, bhi))) if alo > 0.0 && ahi > 0.0 => Some(Interval {
                    estimate: ratio,
                    low: blo / ahi,
                    high: bhi / alo,
                    level: 0.95,
                    resamples: 0,
                    seed: 0,
                }),
                _ => None,
            }
        };
        let verdict = match &interval {
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
            name: a.name.clone(),
            unit: a.unit.clone(),
            higher_is_better: a.higher_is_better,
            baseline: sa.median,
            other: sb.median,
            ratio,
            interval,
            verdict,
        });
    }
    let ids = |v: &[Metric], w: &[Metric]| -> Vec<String> {
        v.iter()
            .filter(|m| !w.iter().any(|x| x.id == m.id))
            .map(|m| m.id.clone())
            .collect()
    };
    Comparison {
        baseline: baseline_label.into(),
        other: other_label.into(),
        rows,
        only_baseline: ids(baseline, other),
        only_other: ids(other, baseline),
    }
}

impl Comparison {
    /// Whether the two bundles share nothing comparable.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table of ratios.
    pub fn table(&self) -> Table {
        let mut t = Table::new(
            "comparison",
            &format!("{} relative to {}", self.other, self.baseline),
            vec![
                Column::new("metric", None),
                Column::new("unit", None),
                Column::new(&self.baseline, None),
                Column::new(&self.other, None),
                Column::new("ratio", None),
                Column::new("verdict", None),
            ],
        );
        for r in &self.rows {
            let ratio = match &r.interval {
                Some(i) => Cell::Interval {
                    estimate: r.ratio,
                    low: i.low,
                    high: i.high,
                    digits: 3,
                },
                None => Cell::num(r.ratio, 3),
            };
            let verdict = match r.verdict {
                Verdict::Better => "better",
                Verdict::Worse => "worse",
                Verdict::WithinNoise => "within noise",
                Verdict::Unknown => "single sample: noise unknown",
            };
            t.push(vec![
                Cell::text(&r.name),
                Cell::text(&r.unit),
                Cell::num(r.baseline, 2),
                Cell::num(r.other, 2),
                ratio,
                Cell::text(verdict),
            ]);
        }
        t.notes.push("ratio = other / baseline; intervals are 95% bootstrap intervals of the ratio of medians".into());
        t
    }

    /// Ratio bars with intervals and a line at 1.
    pub fn chart(&self) -> BarChart {
        BarChart {
            title: format!("{} / {}", self.other, self.baseline),
            x_label: "ratio (1 = same)".into(),
            bars: self
                .rows
                .iter()
                .map(|r| {
                    Bar::new(
                        &r.name,
                        r.ratio,
                        r.interval.as_ref().map(|i| (i.low, i.high)),
                    )
                })
                .collect(),
            reference: Some(1.0),
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
            let unknown = rows.len() - better - worse - noise;
            let detail: Vec<String> = rows
                .iter()
                .map(|r| match &r.interval {
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
    fn percentiles_without_samples_use_their_bounds() {
        let mut a = m("lat.p99", false, &[100.0]);
        a.bounds = Some((95.0, 105.0));
        let mut b = m("lat.p99", false, &[200.0]);
        b.bounds = Some((190.0, 210.0));
        let c = compare("A", &[a.clone()], "B", &[b]);
        let i = c.rows[0].interval.clone().unwrap();
        assert!((i.low - 190.0 / 105.0).abs() < 1e-9 && (i.high - 210.0 / 95.0).abs() < 1e-9);
        assert_eq!(c.rows[0].verdict, Verdict::Worse);
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
        let c = compare("A", &a, "B", &b);
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
        assert_eq!(c.table().rows.len(), 4);
        assert_eq!(c.chart().bars.len(), 4);
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
}

impl Report {
    /// Whether no pair of bundles shares a metric.
    pub fn nothing_in_common(&self) -> bool {
        self.comparisons.iter().all(Comparison::is_empty)
    }

    /// The comparison as a document (tables, ratio charts, the summary as findings).
    pub fn document(&self, metrics_of: &[(String, Vec<Metric>)]) -> crate::doc::Document {
        use crate::doc::{Document, Section};
        use crate::findings::{Finding, Severity};
        let mut findings = Vec::new();
        let mut sections = Vec::new();
        for (i, c) in self.comparisons.iter().enumerate() {
            let chart_id = format!("ratios-{}", i + 1);
            for line in c.summary() {
                findings.push(Finding {
                    id: "compare".into(),
                    severity: if line.contains("no difference beyond the noise")
                        || line.contains("cannot tell")
                    {
                        Severity::Info
                    } else {
                        Severity::Notice
                    },
                    text: if self.comparisons.len() > 1 {
                        format!("{} vs {}: {line}", c.other, c.baseline)
                    } else {
                        line
                    },
                    anchor: Some(chart_id.clone()),
                    modeled: false,
                    source: c.other.clone(),
                });
            }
            let mut s = Section::new(
                &format!("comparison-{}", i + 1),
                &format!("{} relative to {}", c.other, c.baseline),
            );
            if c.is_empty() {
                s.para(format!(
                    "{} and {} share no comparable figure.",
                    c.other, c.baseline
                ));
            } else {
                s.chart(
                    &chart_id,
                    c.chart().to_svg(),
                    "other / baseline for each shared figure, with the 95% interval of the ratio; the dashed line is 1 (no difference). For times (latency, response) a ratio above 1 is worse",
                );
                s.table(c.table());
            }
            if !c.only_baseline.is_empty() {
                s.para(format!(
                    "Only in {}: {}",
                    c.baseline,
                    c.only_baseline.join(", ")
                ));
            }
            if !c.only_other.is_empty() {
                s.para(format!("Only in {}: {}", c.other, c.only_other.join(", ")));
            }
            sections.push(s);
        }
        for line in self
            .summary
            .iter()
            .filter(|l| l.contains(": not compared ("))
        {
            findings.push(Finding {
                id: "compare_missing".into(),
                severity: Severity::Info,
                text: line.clone(),
                anchor: Some("figures".into()),
                modeled: false,
                source: self.baseline.clone(),
            });
        }
        let mut figures = Section::new("figures", "Figures of each bundle");
        for (label, ms) in metrics_of {
            let mut t = Table::new(
                &format!("figures-{}", crate::anchors::slug(label)),
                label,
                vec![
                    Column::new("perspective", None),
                    Column::new("figure", None),
                    Column::new("median", None),
                    Column::new("unit", None),
                    Column::new("samples", None),
                ],
            );
            for m in ms {
                let Some(s) = Summary::of(&m.samples) else {
                    continue;
                };
                t.push(vec![
                    Cell::text(&m.group),
                    Cell::text(&m.name),
                    Cell::num(s.median, 3),
                    Cell::text(&m.unit),
                    Cell::num(m.samples.len() as f64, 0),
                ]);
            }
            if t.rows.is_empty() {
                figures.para(format!("{label}: no comparable figure (no workload, scaling, core-to-core, policy, sweep or model records)."));
            }
            figures.table(t);
        }
        sections.push(figures);
        Document {
            title: format!("numalab comparison: {}", self.bundles.join(" vs ")),
            subtitle: vec![format!(
                "Baseline: {}. Ratios are other / baseline; 95% bootstrap intervals of the ratio of medians; a ratio whose interval contains 1 is within the noise.",
                self.baseline
            )],
            problems: self.problems.clone(),
            findings,
            sections,
        }
    }
}

/// Compares every bundle after the first with the first.
pub fn compare_all(set: &[(String, Vec<Metric>)], problems: Vec<String>) -> Report {
    let (base_label, base) = match set.first() {
        Some((l, m)) => (l.clone(), m.as_slice()),
        None => (String::new(), &[][..]),
    };
    let comparisons: Vec<Comparison> = set
        .iter()
        .skip(1)
        .map(|(l, m)| compare(&base_label, base, l, m))
        .collect();
    let mut summary: Vec<String> = comparisons
        .iter()
        .flat_map(|c| {
            let prefix = if set.len() > 2 {
                format!("{} vs {}: ", c.other, c.baseline)
            } else {
                String::new()
            };
            c.summary().into_iter().map(move |s| format!("{prefix}{s}"))
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
        let lacking: Vec<&str> = set
            .iter()
            .filter(|(_, m)| !m.iter().any(|m| m.group == g))
            .map(|(l, _)| l.as_str())
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
        baseline: base_label.clone(),
        bundles: set.iter().map(|(l, _)| l.clone()).collect(),
        comparisons,
        summary,
        problems,
    }
}
