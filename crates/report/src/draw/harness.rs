//! The charts of the harness studies, drawn (by `numalab_chart`) from their summaries
//! alone, so a report redraws them from the records. Every string that goes into an
//! SVG is escaped: labels come from the user's command line and program output.

use numalab_records::harness::{PolicySummary, ScaleSummary, SweepSummary};
use numalab_stats::Interval;

/// One bar of a policy or sweep chart: a label, a value and its interval.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Label of the bar.
    pub label: String,
    /// The value (None: no result).
    pub value: Option<Interval>,
    /// Highlight it (the best value).
    pub highlight: bool,
}

/// A bar chart with interval whiskers (drawn by `numalab_chart`).
pub fn bar_chart(title: &str, y_label: &str, bars: &[Bar]) -> String {
    numalab_chart::BarChart {
        title: title.into(),
        x_label: y_label.into(),
        bars: bars
            .iter()
            .map(|b| match &b.value {
                Some(v) => {
                    let mut bar =
                        numalab_chart::Bar::new(&b.label, v.estimate, Some((v.low, v.high)));
                    bar.highlight = b.highlight;
                    bar
                }
                None => numalab_chart::Bar::missing(&b.label, "failed"),
            })
            .collect(),
        reference: Some(1.0),
    }
    .to_svg()
}

/// The scaling chart: speedup (with intervals) against threads on a log axis, the
/// ideal line, and dashed lines at the topology boundaries.
pub fn scale_chart(s: &ScaleSummary) -> numalab_chart::LineChart {
    use numalab_chart::{LineChart, Series};
    let mut c = LineChart::new(
        &format!(
            "speedup of {} ({} placement)",
            s.command.join(" "),
            s.placement
        ),
        "threads (log scale)",
        "speedup (x)",
    );
    c.x_log = true;
    c.x_ticks = s.points.iter().map(|p| p.threads as f64).collect();
    let mut measured = Series::new(
        "measured",
        s.points
            .iter()
            .filter_map(|p| Some((p.threads as f64, p.speedup.as_ref()?.estimate)))
            .collect(),
    );
    measured.band = s
        .points
        .iter()
        .filter_map(|p| {
            let v = p.speedup.as_ref()?;
            Some((p.threads as f64, v.low, v.high))
        })
        .collect();
    c.series.push(measured);
    let base = s.base_threads.unwrap_or(1).max(1) as f64;
    c.series.push(Series::reference(
        "ideal",
        s.points
            .iter()
            .map(|p| (p.threads as f64, p.threads as f64 / base))
            .collect(),
    ));
    c.marks = s
        .points
        .iter()
        .filter(|p| !p.boundaries.is_empty())
        .map(|p| (p.threads as f64, p.boundaries.join(", ")))
        .collect();
    c
}

/// [`scale_chart`] as an SVG document.
pub fn scale_svg(s: &ScaleSummary) -> String {
    scale_chart(s).to_svg()
}

/// The policy chart: throughput relative to local, per policy.
pub fn policy_svg(s: &PolicySummary) -> String {
    let bars: Vec<Bar> = s
        .results
        .iter()
        .map(|r| Bar {
            label: r.policy.name().to_string(),
            value: r.vs_local.clone(),
            highlight: s.recommended == Some(r.policy),
        })
        .collect();
    bar_chart(
        &format!("{}: throughput relative to local", s.command.join(" ")),
        "x local",
        &bars,
    )
}

/// The sweep chart: speedup over the first value, the best highlighted.
pub fn sweep_svg(s: &SweepSummary) -> String {
    let bars: Vec<Bar> = s
        .points
        .iter()
        .map(|p| Bar {
            label: p.label.clone(),
            value: p.speedup.clone(),
            highlight: s.best.as_deref() == Some(p.label.as_str()),
        })
        .collect();
    bar_chart(
        &format!("{}: speedup over the first value", s.command.join(" ")),
        "speedup (x)",
        &bars,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bar_chart_escapes_labels_and_marks_failures() {
        let svg = bar_chart(
            "t<1>",
            "y",
            &[
                Bar {
                    label: "A=<script>".into(),
                    value: Some(Interval {
                        estimate: 1.5,
                        low: 1.4,
                        high: 1.6,
                        level: 0.95,
                        resamples: 0,
                        seed: 0,
                        thinned: None,
                    }),
                    highlight: true,
                },
                Bar {
                    label: "B".into(),
                    value: None,
                    highlight: false,
                },
            ],
        );
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("A=&lt;script&gt;") && svg.contains("t&lt;1&gt;"));
        assert!(svg.contains("failed"));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
}
