//! Comparisons rendered: the ratio table and chart of one comparison and the document
//! of a whole [`Report`] (only with the `render` feature).

use super::{Comparison, Metric, Report, Verdict};
use crate::doc::{Document, Section};
use crate::findings::{Finding, Severity};
use crate::svg::{Bar, BarChart};
use crate::table::{Cell, Column, Table};
use numalab_stats::Summary;

impl Comparison {
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
                _ if r.verdict == Verdict::NotComparable => Cell::text("-"),
                Some(i) => Cell::Interval {
                    estimate: r.ratio,
                    low: i.low,
                    high: i.high,
                    digits: 3,
                },
                None => Cell::num(r.ratio, 3),
            };
            let verdict = match r.verdict {
                Verdict::Better => "better".to_string(),
                Verdict::Worse => "worse".to_string(),
                Verdict::WithinNoise => "within noise".to_string(),
                Verdict::Unknown => "single sample: noise unknown".to_string(),
                Verdict::NotComparable => format!(
                    "not comparable: {}",
                    r.not_comparable
                        .as_deref()
                        .unwrap_or("different parameters")
                ),
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
        t.notes
            .push("ratio = other / baseline (for times, above 1 is worse); 95% intervals".into());
        if let Some(n) = self.run_noise_note() {
            t.notes.push(n);
        }
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
                .filter(|r| r.verdict != Verdict::NotComparable)
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
}

impl Report {
    /// The comparison in `format`: the report itself as pretty JSON (with a final
    /// newline), else its [`Report::document`] rendered ([`Document::render`]).
    pub fn render(
        &self,
        format: crate::table::Format,
        metrics_of: &[(String, Vec<Metric>)],
    ) -> String {
        match format {
            crate::table::Format::Json => {
                serde_json::to_string_pretty(self).expect("comparison serializes") + "\n"
            }
            f => self.document(metrics_of).render(f),
        }
    }

    /// The comparison as a document (tables, ratio charts, the summary as findings).
    pub fn document(&self, metrics_of: &[(String, Vec<Metric>)]) -> Document {
        let mut findings = Vec::new();
        let mut sections = Vec::new();
        for (i, c) in self.comparisons.iter().enumerate() {
            let chart_id = format!("ratios-{}", i + 1);
            for line in c.summary() {
                findings.push(Finding {
                    id: "compare".into(),
                    severity: if line.contains("no difference beyond the noise")
                        || line.contains("cannot tell")
                        || line.contains("not comparable (")
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
            if let Some(note) = c.run_noise_note() {
                findings.push(Finding {
                    id: "compare_noise".into(),
                    severity: Severity::Info,
                    text: if self.comparisons.len() > 1 {
                        format!("{} vs {}: {note}", c.other, c.baseline)
                    } else {
                        note
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
        for line in self.summary.iter().filter(|l| l.starts_with("power: ")) {
            findings.push(Finding {
                id: "compare_power".into(),
                severity: if line.contains("used different power sources") {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                text: line.clone(),
                anchor: None,
                modeled: false,
                source: self.baseline.clone(),
            });
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
                    Cell::text(m.label()),
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
                "Baseline: {}. Ratios are other / baseline, with 95% intervals that include run-to-run noise (measured from several runs per side, or assumed when a side has one run); a ratio whose interval contains 1 is within the noise.",
                self.baseline
            )],
            problems: self.problems.clone(),
            findings,
            sections,
        }
    }
}
