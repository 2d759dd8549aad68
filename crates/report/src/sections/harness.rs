//! Studies of the user's program: scaling curves (speedup against threads with the
//! topology boundaries marked), memory policies (throughput relative to local, pages
//! per node, the class of program), parameter sweeps, and the individual runs.

use super::{iv, opt, table};
use crate::anchors;
use crate::doc::Section;
use crate::draw::harness::{policy_svg, scale_chart, sweep_svg};
use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::harness::RunRecord;
use numalab_records::harness::{PointStats, PolicySummary, ScaleSummary, SweepSummary};
use numalab_schema::Record;

fn short(cmd: &[String]) -> String {
    crate::shorten(&cmd.join(" "), 70)
}

/// Why a point has no figure: its first failure.
fn why(p: &PointStats) -> String {
    p.failures
        .first()
        .cloned()
        .unwrap_or_else(|| "no successful run".into())
}

fn busy(p: &PointStats) -> Cell {
    match (p.cpus_busy, p.utilisation) {
        (Some(b), Some(u)) => Cell::text(format!("{b:.2} ({:.0}%)", u * 100.0)),
        (Some(b), None) => Cell::num(b, 2),
        _ => Cell::missing("no successful run"),
    }
}

fn power(p: &PointStats) -> Cell {
    match (p.power_w, &p.power_not_available) {
        (Some(w), _) => Cell::num(w, 1),
        (None, Some(why)) => Cell::missing(why),
        (None, None) => Cell::missing("not sampled"),
    }
}

/// What the power figures cover, and why there is no frequency figure.
fn extras(stats: &[&PointStats]) -> Vec<String> {
    let mut out = Vec::new();
    // (Why there is no power figure is the power column's own note.)
    if let Some(c) = stats.iter().find_map(|s| s.power_covers.clone()) {
        out.push(format!("power figures: {c}"));
    }
    if let Some(f) = stats.iter().find_map(|s| s.frequency_not_available.clone()) {
        out.push(format!("frequency: {f}"));
    }
    out
}

/// One scaling study: its sentences, the speedup chart and the table of its points.
fn scale_section(b: usize, sc: &ScaleSummary, of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, &format!("scale-section-{}", sc.study_id)),
        &format!("Scaling of {}{of}", short(&sc.command)),
    );
    s.para(if sc.metric == sc.throughput_unit {
        format!(
            "{} placement, {} run(s) per point, metric {}.",
            sc.placement, sc.repeat, sc.metric
        )
    } else {
        format!(
            "{} placement, {} run(s) per point, metric {} (throughput: {}).",
            sc.placement, sc.repeat, sc.metric, sc.throughput_unit
        )
    });
    s.list(sc.findings.clone());
    s.chart(
        &anchors::scale_chart(b, &sc.study_id),
        scale_chart(sc).to_svg(),
        "Speedup over the smallest thread count with 95% intervals; dashed: ideal; marks: topology boundaries crossed",
    );
    // Energy, frequency and response-time columns only where a point has them.
    let has = |f: fn(&PointStats) -> bool| sc.points.iter().any(|p| f(&p.stats));
    let (joules, mhz) = (
        has(|p| p.work_per_joule.is_some()),
        has(|p| p.mean_khz.is_some()),
    );
    let resp = sc
        .points
        .iter()
        .find_map(|p| p.stats.response.as_ref().map(|r| r.unit.clone()));
    let mut cols: Vec<(&str, Option<&str>)> = vec![
        ("threads", None),
        ("CPUs", None),
        ("boundaries", None),
        ("throughput", None),
        ("per thread", None),
        ("speedup", None),
        ("efficiency", None),
        ("CPUs busy", None),
        ("power", Some("W")),
    ];
    if joules {
        cols.push(("work per joule", None));
    }
    if mhz {
        cols.push(("frequency", Some("MHz")));
    }
    if let Some(u) = &resp {
        cols.extend([
            ("p50", Some(u.as_str())),
            ("p95", Some(u.as_str())),
            ("p99", Some(u.as_str())),
        ]);
    }
    cols.push(("runs ok", None));
    let mut t = table(
        &anchors::id(b, &format!("scale-points-{}", sc.study_id)),
        "Points",
        &cols,
    );
    for p in &sc.points {
        let why = why(&p.stats);
        let mut row = vec![
            Cell::num(p.threads as f64, 0),
            Cell::text(&p.cpus),
            Cell::text(p.boundaries.join(", ")),
            iv(p.stats.throughput.as_ref(), 1.0, 3, &why),
            iv(p.per_thread.as_ref(), 1.0, 3, &why),
            iv(p.speedup.as_ref(), 1.0, 2, &why),
            iv(p.efficiency.as_ref(), 1.0, 2, &why),
            busy(&p.stats),
            power(&p.stats),
        ];
        if joules {
            row.push(opt(p.stats.work_per_joule, 3, "no power figure"));
        }
        if mhz {
            row.push(opt(p.stats.mean_khz.map(|k| k / 1000.0), 0, "not sampled"));
        }
        if resp.is_some() {
            let r = p.stats.response.as_ref();
            row.push(iv(r.map(|r| &r.p50), 1.0, 3, "no response times"));
            row.push(iv(r.map(|r| &r.p95), 1.0, 3, "no response times"));
            row.push(iv(r.map(|r| &r.p99), 1.0, 3, "no response times"));
        }
        row.push(Cell::text(format!("{}/{}", p.stats.ok, p.stats.runs)));
        t.push(row);
    }
    t.notes.push(format!("throughput: {}", sc.throughput_unit));
    t.notes.extend(extras(
        &sc.points.iter().map(|p| &p.stats).collect::<Vec<_>>(),
    ));
    s.table(t);
    s
}

/// One memory-policy study: its sentences, the chart and the table of its policies.
fn policy_section(b: usize, po: &PolicySummary, of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, &format!("policy-section-{}", po.study_id)),
        &format!("Memory policies of {}{of}", short(&po.command)),
    );
    if po.findings.is_empty() {
        s.para(format!("{} {}", po.classification, po.recommendation));
    }
    s.list(po.findings.clone());
    if let Some(c) = &po.command_line {
        s.para(format!("Command line: {c}"));
    }
    s.chart(
        &anchors::policy_chart(b, &po.study_id),
        policy_svg(po),
        "Throughput relative to first-touch local placement, with 95% intervals; green: the recommendation",
    );
    let mut t = table(
        &anchors::id(b, &format!("policy-results-{}", po.study_id)),
        "Policies",
        &[
            ("policy", None),
            ("throughput", None),
            ("vs local", None),
            ("largest node share", None),
            ("evenness", None),
            ("pages per node", None),
            ("data pages", None),
            ("CPUs busy", None),
        ],
    );
    for r in &po.results {
        let why = why(&r.stats);
        t.push(vec![
            Cell::text(r.policy.name()),
            iv(r.stats.throughput.as_ref(), 1.0, 3, &why),
            iv(r.vs_local.as_ref(), 1.0, 2, "no local baseline"),
            opt(r.max_node_fraction, 2, "pages not sampled"),
            opt(r.evenness, 2, "pages not sampled"),
            Cell::text(
                r.fractions
                    .iter()
                    .map(|(n, f)| format!("node {n}: {:.0}%", f * 100.0))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            r.pages
                .as_ref()
                .map_or(Cell::missing("pages not sampled"), |p| {
                    Cell::text(numalab_schema::units::bytes(p.data_total()))
                }),
            busy(&r.stats),
        ]);
    }
    t.notes.push(format!(
        "{} thread(s) on CPUs {}, bind/preferred node {}, metric {}, {} run(s) each; throughput: {}",
        po.plan.threads,
        po.plan
            .cpus
            .as_ref()
            .map_or("all (not pinned)".into(), |c| numalab_schema::cpulist::format(c)),
        po.plan.node,
        po.metric,
        po.repeat,
        po.throughput_unit
    ));
    t.notes.extend(extras(
        &po.results.iter().map(|r| &r.stats).collect::<Vec<_>>(),
    ));
    s.table(t);
    s
}

/// One sweep: its sentences, the speedup chart and the table of its values.
fn sweep_section(b: usize, sw: &SweepSummary, of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, &format!("sweep-section-{}", sw.study_id)),
        &format!("Sweep of {}{of}", short(&sw.command)),
    );
    s.list(sw.findings.clone());
    s.chart(
        &anchors::sweep_chart(b, &sw.study_id),
        sweep_svg(sw),
        "Speedup over the first value, with 95% intervals; green: the best value when it is measurably better",
    );
    let mut t = table(
        &anchors::id(b, &format!("sweep-points-{}", sw.study_id)),
        "Values",
        &[
            ("value", None),
            ("metric", None),
            ("throughput", None),
            ("speedup", None),
            ("CPUs busy", None),
            ("runs ok", None),
        ],
    );
    for p in &sw.points {
        let why = if p.build_failed {
            "the build failed".to_string()
        } else {
            why(&p.stats)
        };
        t.push(vec![
            Cell::text(&p.label),
            iv(p.stats.metric.as_ref(), 1.0, 3, &why),
            iv(p.stats.throughput.as_ref(), 1.0, 3, &why),
            iv(p.speedup.as_ref(), 1.0, 2, &why),
            busy(&p.stats),
            Cell::text(format!("{}/{}", p.stats.ok, p.stats.runs)),
        ]);
    }
    t.notes.push(format!(
        "metric {}, {} run(s) per value; throughput: {}",
        sw.metric, sw.repeat, sw.throughput_unit
    ));
    t.notes.extend(extras(
        &sw.points.iter().map(|p| &p.stats).collect::<Vec<_>>(),
    ));
    s.table(t);
    s
}

/// Every run of the user's program (the first 200) in one table.
fn runs_section(b: usize, runs: &[(&Record, RunRecord)], of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "runs"),
        &format!("Runs of your program{of}"),
    );
    let mut t = table(
        &anchors::id(b, "runs-table"),
        "Every run (first 200)",
        &[
            ("study", None),
            ("point", None),
            ("repetition", None),
            ("ok", None),
            ("metric", None),
            ("throughput", None),
            ("CPUs busy", None),
            ("wall", Some("s")),
            ("failure", None),
        ],
    );
    for (_, r) in runs.iter().take(200) {
        t.push(vec![
            Cell::text(&r.study),
            Cell::text(&r.point),
            Cell::num(r.repetition as f64, 0),
            Cell::text(if r.ok { "yes" } else { "no" }),
            opt(r.metric_value, 4, "not read"),
            opt(r.throughput, 4, "not read"),
            opt(r.cpus_busy, 2, "not measured"),
            opt(
                r.outcome.as_ref().map(|o| o.wall_ns as f64 / 1e9),
                3,
                "did not start",
            ),
            Cell::text(r.failure.clone().unwrap_or_default()),
        ]);
    }
    if runs.len() > 200 {
        t.notes
            .push(format!("{} more runs in the bundle", runs.len() - 200));
    }
    s.table(t);
    s
}

/// Sections of the study summaries and runs of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let mut out = Vec::new();
    for (_, sc) in l.records_of::<ScaleSummary>() {
        out.push(scale_section(b, &sc, of));
    }
    for (_, po) in l.records_of::<PolicySummary>() {
        out.push(policy_section(b, &po, of));
    }
    for (_, sw) in l.records_of::<SweepSummary>() {
        out.push(sweep_section(b, &sw, of));
    }
    let runs = l.records_of::<RunRecord>();
    if !runs.is_empty() {
        out.push(runs_section(b, &runs, of));
    }
    out
}
