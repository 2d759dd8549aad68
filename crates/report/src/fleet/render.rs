//! The fleet report for people: one [`Document`] (findings, tables, charts) rendered as
//! a self-contained HTML page or as terminal text by the report's own renderers, which
//! escape every string; and the [`FleetReport`] itself as JSON.

use super::analyse::{fmt_value, Direction, FigureStats, FleetReport, Group};
use crate::doc::{Document, Section};
use crate::findings::{Finding, Severity};
use crate::svg::{Dot, DotKind, Strip, StripChart};
use crate::table::{Cell, Column, Format, Table};

/// Nodes listed in the terminal's node table before it keeps only the nodes with
/// something to say (outliers, failures, problems).
pub const TERMINAL_NODE_ROWS: usize = 50;

/// Outlier names written on a chart (the rest are in the outlier table).
const LABELLED: usize = 12;

fn chart_id(group: usize, figure: usize) -> String {
    format!("fleet-g{group}-f{figure}")
}

fn opt(v: &Option<String>) -> Cell {
    match v {
        Some(s) => Cell::text(s.clone()),
        None => Cell::missing("not recorded"),
    }
}

fn opt_num(v: Option<f64>, digits: usize) -> Cell {
    match v {
        Some(v) => Cell::num(v, digits),
        None => Cell::missing("not measured"),
    }
}

fn samples_text(s: &[f64]) -> String {
    const MAX: usize = 12;
    let mut t: Vec<String> = s.iter().take(MAX).map(|v| fmt_value(*v)).collect();
    if s.len() > MAX {
        t.push(format!("... ({} more)", s.len() - MAX));
    }
    t.join(", ")
}

/// The distribution of one figure in a group as one strip: a dot per node at its
/// deviation from the group median (percent; the value itself when the median is 0),
/// the median line with its 1.4826 x MAD band, outliers in their own colours and
/// named (the most extreme first).
pub fn figure_chart(g: &Group, f: &FigureStats) -> StripChart {
    let relative = f.median != 0.0;
    let x = |v: f64| {
        if relative {
            (v - f.median) / f.median.abs() * 100.0
        } else {
            v
        }
    };
    // Outliers first, the most extreme first, so the labels go to them.
    let mut order: Vec<usize> = (0..f.nodes.len()).collect();
    order.sort_by(|a, b| {
        let (na, nb) = (&f.nodes[*a], &f.nodes[*b]);
        nb.outlier
            .is_some()
            .cmp(&na.outlier.is_some())
            .then_with(|| {
                let za = na.z.map_or(f64::INFINITY, f64::abs);
                let zb = nb.z.map_or(f64::INFINITY, f64::abs);
                zb.total_cmp(&za)
            })
            .then_with(|| na.node.cmp(&nb.node))
    });
    let dots = order
        .into_iter()
        .map(|i| {
            let n = &f.nodes[i];
            Dot {
                x: x(n.value),
                kind: match n.outlier {
                    None => DotKind::Normal,
                    Some(Direction::Worse) => DotKind::Worse,
                    Some(Direction::Better) => DotKind::Better,
                },
                label: n.outlier.map(|_| crate::shorten(&n.node, 24)),
                tip: format!("{}: {} {}", n.node, fmt_value(n.value), f.figure.unit),
            }
        })
        .collect();
    let (mid, half) = if relative {
        (0.0, f.sigma / f.median.abs() * 100.0)
    } else {
        (f.median, f.sigma)
    };
    StripChart {
        title: format!("{} (group {})", f.figure.label, g.id),
        x_label: if relative {
            format!(
                "deviation from the group median {} {} (%); band: 1.4826 x MAD",
                fmt_value(f.median),
                f.figure.unit
            )
        } else {
            format!("{}; band: 1.4826 x MAD", f.figure.unit)
        },
        strips: vec![Strip {
            label: format!("{} nodes", f.nodes.len()),
            dots,
            median: Some(mid),
            band: Some((mid - half, mid + half)),
        }],
        max_labels: LABELLED,
    }
}

fn node_table(r: &FleetReport, only_notable: bool) -> Table {
    let mut cols = vec![
        Column::new("node", None),
        Column::new("host", None),
        Column::new("group", None),
        Column::new("state", None),
        Column::new("kernel", None),
        Column::new("firmware", None),
        Column::new("memory", Some("GiB")),
    ];
    for h in &r.headline {
        cols.push(Column::new(&h.label, Some(&h.unit)));
    }
    cols.push(Column::new("outliers worse", None));
    cols.push(Column::new("outliers better", None));
    let title = if only_notable {
        "Nodes with outliers, failures or problems"
    } else {
        "Nodes"
    };
    let mut t = Table::new("fleet-nodes", title, cols);
    for n in &r.nodes {
        let notable = n.worse + n.better > 0 || n.state != "done" || !n.problems.is_empty();
        if only_notable && !notable {
            continue;
        }
        let mut row = vec![
            Cell::text(n.node.clone()),
            opt(&n.host),
            match n.group {
                Some(g) => Cell::text(g.to_string()),
                None => Cell::missing("no bundle"),
            },
            Cell::text(n.state.clone()),
            opt(&n.kernel),
            opt(&n.firmware),
            match n.memory_gib {
                Some(g) => Cell::num(g as f64, 0),
                None => Cell::missing("not recorded"),
            },
        ];
        for v in &n.headline {
            row.push(opt_num(*v, 2));
        }
        row.push(Cell::num(n.worse as f64, 0));
        row.push(Cell::num(n.better as f64, 0));
        t.push(row);
    }
    if only_notable {
        t.notes.push(format!(
            "{} nodes in all; the HTML and JSON reports list every one.",
            r.nodes.len()
        ));
    }
    t
}

fn group_table(r: &FleetReport) -> Table {
    let mut t = Table::new(
        "fleet-groups",
        "Groups (same hardware fingerprint and memory configuration)",
        vec![
            Column::new("group", None),
            Column::new("nodes", None),
            Column::new("fingerprint", None),
            Column::new("machine", None),
            Column::new("kernel (most nodes)", None),
            Column::new("firmware (most nodes)", None),
            Column::new("verdict", None),
        ],
    );
    for g in &r.groups {
        let verdict = match &g.differs_from {
            Some(d) => format!("{}; differs from {d}", g.verdict),
            None => g.verdict.clone(),
        };
        t.push(vec![
            Cell::text(g.id.to_string()),
            Cell::num(g.nodes.len() as f64, 0),
            Cell::text(g.fingerprint.fingerprint.clone()),
            Cell::text(g.description.clone()),
            opt(&g.kernel_majority),
            opt(&g.firmware_majority),
            Cell::text(verdict),
        ]);
    }
    t
}

fn figure_table(g: &Group) -> Table {
    let mut t = Table::new(
        &format!("fleet-g{}-figures", g.id),
        &format!("Figures of group {}", g.id),
        vec![
            Column::new("figure", None),
            Column::new("unit", None),
            Column::new("nodes", None),
            Column::new("median", None),
            Column::new("MAD", None),
            Column::new("1.4826 x MAD", None),
            Column::new("outliers worse", None),
            Column::new("outliers better", None),
        ],
    );
    for f in &g.figures {
        let count = |d: Direction| f.nodes.iter().filter(|n| n.outlier == Some(d)).count();
        t.push(vec![
            Cell::text(f.figure.label.clone()),
            Cell::text(f.figure.unit.clone()),
            Cell::num(f.nodes.len() as f64, 0),
            Cell::num(f.median, 3),
            Cell::num(f.mad, 3),
            Cell::num(f.sigma, 3),
            Cell::num(count(Direction::Worse) as f64, 0),
            Cell::num(count(Direction::Better) as f64, 0),
        ]);
    }
    if g.figures.iter().any(|f| f.mad_zero) {
        t.notes.push(
            "MAD 0 (half the nodes or more have the same value): outliers of those figures are judged on the relative floor alone.".into(),
        );
    }
    t
}

fn outlier_table(r: &FleetReport) -> Table {
    let mut t = Table::new(
        "fleet-outliers",
        "Outliers: the evidence",
        vec![
            Column::new("node", None),
            Column::new("group", None),
            Column::new("figure", None),
            Column::new("direction", None),
            Column::new("value", None),
            Column::new("group median", None),
            Column::new("1.4826 x MAD", None),
            Column::new("robust z", None),
            Column::new("deviation", Some("%")),
            Column::new("node's samples", None),
            Column::new("node's own spread", None),
            Column::new("kernel", None),
            Column::new("firmware", None),
        ],
    );
    for o in &r.outliers {
        let unit = &o.figure.unit;
        let beside = |mine: &Option<String>, others: &Option<String>| {
            let m = mine.clone().unwrap_or_else(|| "unknown".into());
            match others {
                Some(x) => Cell::text(format!("{m} (most of the group: {x})")),
                None => Cell::text(m),
            }
        };
        t.push(vec![
            Cell::text(o.node.clone()),
            Cell::text(o.group.to_string()),
            Cell::text(o.figure.label.clone()),
            Cell::text(o.direction.word()),
            Cell::text(format!("{} {unit}", fmt_value(o.value))),
            Cell::text(format!("{} {unit}", fmt_value(o.median))),
            Cell::text(format!("{} {unit}", fmt_value(o.sigma))),
            match o.z {
                Some(z) => Cell::num(z, 1),
                None => Cell::missing("MAD 0"),
            },
            Cell::num(o.deviation_pct, 1),
            Cell::text(samples_text(&o.samples)),
            match o.own_spread {
                Some(s) => Cell::text(format!("{} {unit}", fmt_value(s))),
                None => Cell::missing("one sample"),
            },
            beside(&o.kernel, &o.kernel_others),
            beside(&o.firmware, &o.firmware_others),
        ]);
    }
    t
}

fn failed_table(r: &FleetReport) -> Table {
    let mut t = Table::new(
        "fleet-failed",
        "Nodes that did not complete",
        vec![
            Column::new("node", None),
            Column::new("state", None),
            Column::new("exit code", None),
            Column::new("duration", Some("s")),
            Column::new("figures kept", None),
            Column::new("message", None),
            Column::new("last line of stderr", None),
        ],
    );
    for f in &r.failed {
        let last = f
            .stderr_tail
            .as_deref()
            .and_then(|s| s.lines().rev().find(|l| !l.trim().is_empty()))
            .map(|l| crate::shorten(l, 160));
        t.push(vec![
            Cell::text(f.node.clone()),
            Cell::text(f.state.clone()),
            match f.exit_code {
                Some(c) => Cell::text(c.to_string()),
                None => Cell::missing("not known"),
            },
            opt_num(f.duration_s, 1),
            Cell::text(if f.has_bundle { "yes" } else { "no" }),
            match (&f.message, f.problems.is_empty()) {
                (Some(m), _) => Cell::text(crate::shorten(m, 200)),
                (None, false) => Cell::text(crate::shorten(&f.problems.join("; "), 200)),
                (None, true) => Cell::missing("none"),
            },
            match last {
                Some(l) => Cell::text(l),
                None => Cell::missing("no stderr"),
            },
        ]);
    }
    t
}

/// The fleet report as a document. `charts`: draw the distribution charts (HTML);
/// `all_nodes`: list every node (else only the notable ones past
/// [`TERMINAL_NODE_ROWS`]).
pub fn document(r: &FleetReport, charts: bool, all_nodes: bool) -> Document {
    let worse = r
        .outliers
        .iter()
        .filter(|o| o.direction == Direction::Worse)
        .count();
    let done = r.nodes.iter().filter(|n| n.state == "done").count();
    let mut subtitle = vec![
        format!("Fleet folder: {}", r.source),
        format!(
            "{} nodes ({done} done, {} did not complete), {} groups, {} outliers ({worse} worse, {} better)",
            r.nodes.len(),
            r.failed.len(),
            r.groups.len(),
            r.outliers.len(),
            r.outliers.len() - worse
        ),
    ];
    subtitle.push(format!("Report format version {}", r.version));
    let mut problems: Vec<String> = r
        .nodes
        .iter()
        .flat_map(|n| n.problems.iter().map(move |p| format!("{}: {p}", n.node)))
        .collect();
    const MAX_PROBLEMS: usize = 100;
    if problems.len() > MAX_PROBLEMS {
        let more = problems.len() - MAX_PROBLEMS;
        problems.truncate(MAX_PROBLEMS);
        problems.push(format!(
            "... and {more} more (see the node table and the JSON report)"
        ));
    }
    let mut findings = Vec::new();
    for o in &r.outliers {
        let fig = r
            .groups
            .iter()
            .find(|g| g.id == o.group)
            .and_then(|g| g.figures.iter().position(|f| f.figure.key == o.figure.key));
        findings.push(Finding {
            id: format!("fleet_outlier_{}", o.direction.word()),
            severity: if o.direction == Direction::Worse {
                Severity::Warning
            } else {
                Severity::Notice
            },
            text: o.sentence.clone(),
            anchor: match (charts, fig) {
                (true, Some(i)) => Some(chart_id(o.group, i)),
                _ => Some("fleet-outliers".into()),
            },
            modeled: false,
            source: o.node.clone(),
        });
    }
    for f in &r.failed {
        findings.push(Finding {
            id: "fleet_node_failed".into(),
            severity: Severity::Warning,
            text: format!(
                "{}: {}{}{}",
                f.node,
                f.state,
                f.exit_code
                    .map_or(String::new(), |c| format!(", exit code {c}")),
                if f.has_bundle {
                    "; its figures so far are judged with the others"
                } else {
                    "; no figures"
                }
            ),
            anchor: Some("fleet-failed".into()),
            modeled: false,
            source: f.node.clone(),
        });
    }
    for g in r.groups.iter().filter(|g| !g.judged) {
        findings.push(Finding {
            id: "fleet_group_too_small".into(),
            severity: Severity::Info,
            text: format!(
                "group {} ({}): {}{}",
                g.id,
                crate::shorten(&g.nodes.join(", "), 200),
                g.verdict,
                g.differs_from
                    .as_ref()
                    .map_or(String::new(), |d| format!("; differs from {d}"))
            ),
            anchor: Some("fleet-groups".into()),
            modeled: false,
            source: g.nodes.first().cloned().unwrap_or_default(),
        });
    }
    let mut sections = Vec::new();
    let mut s = Section::new("fleet-node-table", "Nodes");
    let notable = !all_nodes && r.nodes.len() > TERMINAL_NODE_ROWS;
    s.table(node_table(r, notable));
    sections.push(s);
    let mut s = Section::new("fleet-group-table", "Groups");
    s.table(group_table(r));
    sections.push(s);
    for g in r.groups.iter().filter(|g| g.judged) {
        let mut s = Section::new(
            &format!("fleet-group-{}", g.id),
            &format!("Group {}: {} nodes", g.id, g.nodes.len()),
        );
        s.para(g.description.clone());
        s.para(g.verdict.clone());
        s.table(figure_table(g));
        if charts {
            for (i, f) in g.figures.iter().enumerate() {
                let flagged: Vec<&str> = f
                    .nodes
                    .iter()
                    .filter(|n| n.outlier.is_some())
                    .map(|n| n.node.as_str())
                    .collect();
                let caption = format!(
                    "{}: {} nodes, median {} {}, 1.4826 x MAD {} {}{}; {}",
                    f.figure.label,
                    f.nodes.len(),
                    fmt_value(f.median),
                    f.figure.unit,
                    fmt_value(f.sigma),
                    f.figure.unit,
                    if f.mad_zero {
                        " (MAD 0: the relative floor alone decides)"
                    } else {
                        ""
                    },
                    if flagged.is_empty() {
                        "no outlier".to_string()
                    } else {
                        format!("outliers: {}", crate::shorten(&flagged.join(", "), 300))
                    }
                );
                s.chart(&chart_id(g.id, i), figure_chart(g, f).to_svg(), caption);
            }
        }
        sections.push(s);
    }
    let mut s = Section::new("fleet-outlier-list", "Outliers");
    if r.outliers.is_empty() {
        s.para("No node is off on any figure judged.");
    } else {
        s.list(r.outliers.iter().map(|o| o.sentence.clone()).collect());
        s.table(outlier_table(r));
    }
    sections.push(s);
    let mut s = Section::new("fleet-failed-list", "Failed nodes");
    if r.failed.is_empty() {
        s.para("Every node completed.");
    } else {
        s.table(failed_table(r));
        for f in &r.failed {
            if let Some(t) = &f.stderr_tail {
                s.details(format!("{}: end of stderr", f.node), t.clone());
            }
        }
    }
    sections.push(s);
    let mut s = Section::new("fleet-method", "Method");
    for n in &r.notes {
        s.para(n.clone());
    }
    sections.push(s);
    Document {
        title: format!("Fleet report: {} nodes", r.nodes.len()),
        subtitle,
        problems,
        findings,
        sections,
    }
}

/// The self-contained HTML fleet report: node table, groups, a distribution chart per
/// figure and group, the outliers with their evidence, the failed nodes with the end of
/// their stderr. No external resources; every string escaped.
pub fn render_html(r: &FleetReport) -> String {
    document(r, true, true).to_html()
}

/// The fleet report for a terminal (control characters made visible; the node table
/// cut to the notable nodes past [`TERMINAL_NODE_ROWS`]).
pub fn render_text(r: &FleetReport) -> String {
    document(r, false, false).to_text(Format::Terminal)
}

/// The report as JSON (the [`FleetReport`] itself).
pub fn render_json(r: &FleetReport) -> String {
    serde_json::to_string_pretty(r).expect("fleet reports serialize") + "\n"
}
