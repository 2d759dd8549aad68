//! Tables for the terminal, rendered from the summaries alone (so a report can be
//! redrawn later from the records). The charts of the summaries are drawn by
//! `numalab-report` (`draw::harness`), from the records too.

use crate::policy::PolicySummary;
use crate::scale::ScaleSummary;
use crate::sweep::SweepSummary;
use numalab_stats::Interval;
use std::fmt::Write;

/// The one escaper every picture and page of numalab uses.
pub use numalab_chart::escape;

/// A number with 4 significant digits and a thousands-friendly form.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a >= 1e6 || (a > 0.0 && a < 1e-3) {
        format!("{x:.3e}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

fn iv(i: &Option<Interval>) -> String {
    match i {
        Some(i) => format!("{} [{}, {}]", num(i.estimate), num(i.low), num(i.high)),
        None => "-".into(),
    }
}

fn ratio(i: &Option<Interval>) -> String {
    match i {
        Some(i) => format!("{:.2}x [{:.2}, {:.2}]", i.estimate, i.low, i.high),
        None => "-".into(),
    }
}

fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<width$}", width = w[i]))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    out.push_str(&line(headers.iter().map(|h| h.to_string()).collect()));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.clone()));
        out.push('\n');
    }
    out
}

fn util(p: &crate::run::PointStats) -> String {
    match (p.cpus_busy, p.utilisation) {
        (Some(b), Some(u)) => format!("{b:.2} ({:.0}%)", u * 100.0),
        (Some(b), None) => format!("{b:.2}"),
        _ => "-".into(),
    }
}

fn runs(p: &crate::run::PointStats) -> String {
    if p.ok == p.runs {
        p.runs.to_string()
    } else {
        format!("{}/{} ok", p.ok, p.runs)
    }
}

fn extras(stats: &[&crate::run::PointStats]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = stats.iter().find_map(|s| s.power_not_available.clone()) {
        out.push(format!("power: {p}"));
    } else if let Some(c) = stats.iter().find_map(|s| s.power_covers.clone()) {
        out.push(format!("power figures: {c}"));
    }
    if let Some(f) = stats.iter().find_map(|s| s.frequency_not_available.clone()) {
        out.push(format!("frequency: {f}"));
    }
    out
}

/// The scaling table, findings included.
pub fn scale_text(s: &ScaleSummary) -> String {
    let has_power = s.points.iter().any(|p| p.stats.power_w.is_some());
    let has_freq = s.points.iter().any(|p| p.stats.mean_khz.is_some());
    let has_resp = s.points.iter().any(|p| p.stats.response.is_some());
    let mut headers = vec![
        "threads",
        "cpus",
        "runs",
        "throughput [95% CI]",
        "per thread",
        "speedup",
        "efficiency",
        "cpus busy",
    ];
    if has_power {
        headers.extend(["power W", "work/J"]);
    }
    if has_freq {
        headers.push("MHz");
    }
    if has_resp {
        headers.extend(["p50", "p95", "p99"]);
    }
    let rows: Vec<Vec<String>> = s
        .points
        .iter()
        .map(|p| {
            let mut r = vec![
                p.threads.to_string(),
                p.cpus.clone(),
                runs(&p.stats),
                iv(&p.stats.throughput),
                p.per_thread
                    .as_ref()
                    .map_or("-".into(), |i| num(i.estimate)),
                ratio(&p.speedup),
                p.efficiency
                    .as_ref()
                    .map_or("-".into(), |e| format!("{:.0}%", e.estimate * 100.0)),
                util(&p.stats),
            ];
            if has_power {
                r.push(p.stats.power_w.map_or("-".into(), |w| format!("{w:.1}")));
                r.push(p.stats.work_per_joule.map_or("-".into(), num));
            }
            if has_freq {
                r.push(
                    p.stats
                        .mean_khz
                        .map_or("-".into(), |k| format!("{:.0}", k / 1000.0)),
                );
            }
            if has_resp {
                let q = |f: fn(&crate::run::ResponseStats) -> &Interval| {
                    p.stats
                        .response
                        .as_ref()
                        .map_or("-".into(), |r| num(f(r).estimate))
                };
                r.push(q(|r| &r.p50));
                r.push(q(|r| &r.p95));
                r.push(q(|r| &r.p99));
            }
            r
        })
        .collect();
    let mut out = format!(
        "scale: {}  (placement {}, metric {}, {} run(s) per point)\nthroughput in {}\n\n",
        s.command.join(" "),
        s.placement,
        s.metric,
        s.repeat,
        s.throughput_unit
    );
    let stats: Vec<&crate::run::PointStats> = s.points.iter().map(|p| &p.stats).collect();
    push_body(&mut out, &headers, &rows, &stats, &s.findings);
    out
}

/// The policy table, classification and advice included.
pub fn policy_text(s: &PolicySummary) -> String {
    let nodes: Vec<u32> = s.plan.memory_nodes.clone();
    let mut headers: Vec<String> = ["policy", "runs", "throughput [95% CI]", "vs local"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    for n in &nodes {
        headers.push(format!("node {n}"));
    }
    headers.push("data pages".into());
    let rows: Vec<Vec<String>> = s
        .results
        .iter()
        .map(|r| {
            let mut row = vec![
                r.policy.name().to_string(),
                runs(&r.stats),
                iv(&r.stats.throughput),
                ratio(&r.vs_local),
            ];
            for n in &nodes {
                row.push(
                    r.fractions
                        .get(n)
                        .map_or("-".into(), |f| format!("{:.0}%", f * 100.0)),
                );
            }
            row.push(r.pages.as_ref().map_or("not sampled".into(), |p| {
                numalab_schema::units::bytes(p.data_total())
            }));
            row
        })
        .collect();
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut out = format!(
        "policy: {}  ({} threads on CPUs {}, bind/preferred node {}, metric {}, {} run(s) each)\nthroughput in {}\n\n",
        s.command.join(" "),
        s.plan.threads,
        s.plan
            .cpus
            .as_ref()
            .map_or("all (not pinned)".into(), |c| numalab_schema::cpulist::format(c)),
        s.plan.node,
        s.metric,
        s.repeat,
        s.throughput_unit
    );
    let stats: Vec<&crate::run::PointStats> = s.results.iter().map(|r| &r.stats).collect();
    push_body(&mut out, &h, &rows, &stats, &s.findings);
    if let Some(c) = &s.command_line {
        let _ = writeln!(out, "\nrun it as:\n  {c}");
    }
    out
}

/// The sweep table and the best value.
pub fn sweep_text(s: &SweepSummary) -> String {
    let rows: Vec<Vec<String>> = s
        .points
        .iter()
        .map(|p| {
            vec![
                p.label.clone(),
                if p.build_failed {
                    "build failed".into()
                } else {
                    runs(&p.stats)
                },
                iv(&p.stats.metric),
                iv(&p.stats.throughput),
                ratio(&p.speedup),
                util(&p.stats),
            ]
        })
        .collect();
    let mut out = format!(
        "sweep: {}  (metric {}, {} run(s) per value)\nthroughput in {}\n\n",
        s.command.join(" "),
        s.metric,
        s.repeat,
        s.throughput_unit
    );
    let stats: Vec<&crate::run::PointStats> = s.points.iter().map(|p| &p.stats).collect();
    push_body(
        &mut out,
        &[
            "value",
            "runs",
            "metric [95% CI]",
            "throughput",
            "speedup vs first",
            "cpus busy",
        ],
        &rows,
        &stats,
        &s.findings,
    );
    out
}

/// What follows a study's heading: its table, the notes on its statistics, its findings.
fn push_body(
    out: &mut String,
    headers: &[&str],
    rows: &[Vec<String>],
    stats: &[&crate::run::PointStats],
    findings: &[String],
) {
    out.push_str(&table(headers, rows));
    for e in extras(stats) {
        let _ = writeln!(out, "{e}");
    }
    out.push('\n');
    for f in findings {
        let _ = writeln!(out, "- {f}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'b'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;b&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(num(1234.5678), "1234.6");
        assert_eq!(num(2.5), "2.500");
    }
}
