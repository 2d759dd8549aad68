//! The decision tree: from cycle accounting down the dominant branch to a verdict.
//!
//! A table of forty metrics explains nothing by itself. The methodology reads them in
//! order: IPC and the share of cycles stalled in the front end and the back end first;
//! then only the groups behind the dominant side (instruction TLB, instruction cache
//! and branches for the front end; data TLB, the data cache hierarchy, memory traffic
//! and the instruction mix for the back end); then a verdict in words and the events
//! worth sampling to find where it happens. The tree's shape and the thresholds that
//! make a metric "notable" are data (`[tree]` and `notable` in data/metrics/*.toml);
//! this module only walks them.

use crate::catalog::{own_threshold, BranchDef, Catalog, TreeDef, VendorNode, VendorTree};
use crate::expr::{self, Input};
use crate::metrics::{fmt_metric, fmt_pct, fmt_sig, MetricValue};
use numalab_records::pmu::MetricInterval;

// The walk's record lives in numalab-records.
pub use numalab_records::pmu::{Finding, SideStall, StepMetric, TreeReport, TreeStep, Unevaluated};

/// Groups walked whose metrics all lack a value.
fn unevaluated_steps(steps: &[TreeStep]) -> Vec<Unevaluated> {
    steps
        .iter()
        .filter(|s| !s.metrics.is_empty() && s.metrics.iter().all(|m| m.value.is_none()))
        .map(|s| Unevaluated {
            part: s.group.clone(),
            reason: "no metric computable".into(),
        })
        .collect()
}

fn find<'a>(metrics: &'a [MetricValue], name: &str) -> Option<&'a MetricValue> {
    metrics.iter().find(|m| m.name == name)
}

/// The phrase of a finding: `{value}` and `{pct}` filled in.
fn phrase(template: &str, value: f64) -> String {
    template
        .replace("{value}", &fmt_sig(value))
        .replace("{pct}", &fmt_pct(value))
}

/// Walks the groups of `groups` and collects steps and findings.
fn walk(
    catalog: &Catalog,
    metrics: &[MetricValue],
    groups: &[String],
    steps: &mut Vec<TreeStep>,
    findings: &mut Vec<Finding>,
) {
    for gname in groups {
        let Some(g) = catalog.group(gname) else {
            continue;
        };
        if steps.iter().any(|s| &s.group == gname) {
            continue;
        }
        let mut step = TreeStep {
            group: g.name.clone(),
            title: g.title.clone(),
            metrics: Vec::new(),
        };
        for mname in &g.metrics {
            let Some(def) = catalog.metric(mname) else {
                continue;
            };
            let mv = find(metrics, mname);
            let value = mv.and_then(|m| m.value);
            let notable = match (value, def.notable) {
                (Some(v), Some(t)) => v >= t,
                _ => false,
            };
            if notable {
                let (v, t) = (value.unwrap_or(0.0), def.notable.unwrap_or(1.0));
                findings.push(Finding {
                    metric: def.name.clone(),
                    group: g.name.clone(),
                    label: g.label.clone().unwrap_or_else(|| g.title.clone()),
                    value: v,
                    threshold: t,
                    severity: if t > 0.0 { v / t } else { f64::INFINITY },
                    rank: def.rank,
                    text: phrase(def.finding.as_deref().unwrap_or(&def.name), v),
                    description: None,
                    within_uncertainty: false,
                });
            }
            step.metrics.push(StepMetric {
                name: def.name.clone(),
                value,
                unit: def.unit.clone(),
                notable,
                reason: match mv {
                    Some(m) => m.reason.clone(),
                    None => Some("not in the selected metric set".into()),
                },
                within_uncertainty: false,
            });
        }
        steps.push(step);
    }
}

/// "memory bound: 99% of last-level reads miss, L1D MPKI 106; data-TLB bound: ..."
/// At most three findings per label (headline rank first, then the most severe), labels
/// ordered by their most severe finding.
fn findings_text(findings: &[Finding]) -> String {
    let mut labels: Vec<(&str, f64)> = Vec::new();
    for f in findings {
        match labels.iter_mut().find(|(l, _)| *l == f.label) {
            Some((_, s)) => *s = s.max(f.severity),
            None => labels.push((&f.label, f.severity)),
        }
    }
    labels.sort_by(|a, b| b.1.total_cmp(&a.1));
    labels
        .iter()
        .map(|(label, _)| {
            let mut mine: Vec<&Finding> = findings.iter().filter(|f| f.label == *label).collect();
            mine.sort_by(|a, b| a.rank.cmp(&b.rank).then(b.severity.total_cmp(&a.severity)));
            mine.truncate(3);
            let texts: Vec<&str> = mine.iter().map(|f| f.text.as_str()).collect();
            format!("{label}: {}", texts.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn sample_next(base: &[String], findings: &[Finding], catalog: &Catalog) -> Vec<String> {
    let mut out: Vec<String> = base.to_vec();
    let mut sorted: Vec<&Finding> = findings.iter().collect();
    sorted.sort_by(|a, b| b.severity.total_cmp(&a.severity));
    for f in sorted {
        if let Some(def) = catalog.metric(&f.metric) {
            for s in &def.sample {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        }
    }
    out
}

/// The largest values of the info group ("loads 31%, integer 40%") for "core bound".
fn info_text(catalog: &Catalog, metrics: &[MetricValue], branch: &BranchDef) -> Option<String> {
    let g = catalog.group(branch.info_group.as_deref()?)?;
    let mut vals: Vec<(&MetricValue, f64)> = g
        .metrics
        .iter()
        .filter_map(|n| find(metrics, n))
        .filter_map(|m| m.value.map(|v| (m, v)))
        .collect();
    if vals.is_empty() {
        return None;
    }
    vals.sort_by(|a, b| b.1.total_cmp(&a.1));
    let parts: Vec<String> = vals
        .iter()
        .take(3)
        .map(|(m, v)| format!("{} {}", m.name, crate::metrics::fmt_metric(*v, &m.unit)))
        .collect();
    Some(format!("{}: {}", g.title, parts.join(", ")))
}

/// Walks the tree over evaluated metrics; where a comparison it made lies within the
/// multiplexing uncertainty of the metrics compared, it says so ([`mark_uncertain`]).
pub fn walk_tree(catalog: &Catalog, metrics: &[MetricValue]) -> TreeReport {
    let mut report = walk_unmarked(catalog, metrics);
    mark_uncertain(catalog, metrics, &mut report);
    report
}

/// A range as text: "38%..52%" (an absent bound: "..").
fn span(r: &MetricInterval, unit: &str, scale: f64) -> String {
    let end = |x: Option<f64>| x.map(|v| fmt_metric(v * scale, unit)).unwrap_or_default();
    format!("{}..{}", end(r.low), end(r.high))
}

/// Marks each finding, step metric and side whose comparison lies within its
/// metric's multiplexing range (`within_uncertainty`), and adds one clause after the
/// verdict naming them: "within the multiplexing uncertainty: backend stall 38%..52%
/// against 40%". The verdict itself stands: the clause says how firm it is. A side's
/// comparison is with numalab's `stall_notable` (the cycle tree) and with the other
/// sides' ranges (does another side's range reach the dominant one's?).
pub fn mark_uncertain(catalog: &Catalog, metrics: &[MetricValue], report: &mut TreeReport) {
    let range = |name: &str| find(metrics, name).and_then(|m| m.interval.clone());
    let mut said: Vec<String> = Vec::new();
    // Sides: their stall shares' ranges.
    let tree = &catalog.tree;
    let ranges: Vec<Option<(f64, f64, MetricInterval)>> = report
        .sides
        .iter()
        .map(|s| {
            let b = tree.branches.iter().find(|b| b.side == s.side)?;
            let r = range(&s.metric)?;
            let k = b.stall_scale.unwrap_or(1.0);
            let lo = r.low.map_or(f64::NEG_INFINITY, |v| v * k);
            let hi = r.high.map_or(f64::INFINITY, |v| v * k);
            Some((lo, hi, r))
        })
        .collect();
    let vendor = catalog
        .vendor_tree
        .as_ref()
        .is_some_and(|vt| !vt.nodes.is_empty());
    let dom = report
        .dominant
        .as_ref()
        .and_then(|d| report.sides.iter().position(|s| &s.side == d));
    for i in 0..report.sides.len() {
        let Some((lo, hi, r)) = &ranges[i] else {
            continue;
        };
        let notable = !vendor && *lo <= tree.stall_notable && tree.stall_notable <= *hi;
        let rival = match dom {
            Some(d) if d != i => ranges[d].as_ref().is_some_and(|(dlo, _, _)| hi >= dlo),
            _ => false,
        };
        if notable || rival {
            let s = &mut report.sides[i];
            s.within_uncertainty = true;
            let k = tree
                .branches
                .iter()
                .find(|b| b.side == s.side)
                .and_then(|b| b.stall_scale)
                .unwrap_or(1.0);
            let against = if notable {
                format!("against {}", fmt_pct(tree.stall_notable))
            } else {
                "overlapping the dominant side".to_string()
            };
            said.push(format!(
                "{} stall {} {against}",
                s.side,
                span(r, "ratio", k)
            ));
            if rival {
                if let Some(d) = dom {
                    report.sides[d].within_uncertainty = true;
                }
            }
        }
    }
    for f in &mut report.findings {
        let Some(r) = range(&f.metric) else { continue };
        if r.contains(f.threshold) {
            f.within_uncertainty = true;
            let unit = find(metrics, &f.metric).map_or("", |m| m.unit.as_str());
            said.push(format!(
                "{} {} against {}",
                f.metric,
                span(&r, unit, 1.0),
                fmt_metric(f.threshold, unit)
            ));
        }
    }
    for step in &mut report.steps {
        for m in &mut step.metrics {
            let threshold = catalog.metric(&m.name).and_then(|d| d.notable).or_else(|| {
                report
                    .findings
                    .iter()
                    .find(|f| f.metric == m.name)
                    .map(|f| f.threshold)
            });
            if let (Some(t), Some(r)) = (threshold, range(&m.name)) {
                m.within_uncertainty = r.contains(t);
            }
        }
    }
    if !said.is_empty() && report.no_verdict.is_none() {
        let more = said.len().saturating_sub(3);
        said.truncate(3);
        let mut clause = said.join(", ");
        if more > 0 {
            clause.push_str(&format!(" and {more} more"));
        }
        report
            .verdict
            .push_str(&format!("; within the multiplexing uncertainty: {clause}"));
    }
}

fn walk_unmarked(catalog: &Catalog, metrics: &[MetricValue]) -> TreeReport {
    if let Some(vt) = catalog
        .vendor_tree
        .as_ref()
        .filter(|vt| !vt.nodes.is_empty())
    {
        return walk_topdown(catalog, metrics, vt);
    }
    let mut report = walk_cycles(catalog, metrics);
    if let Some(vt) = &catalog.vendor_tree {
        let ours: Vec<&str> = catalog
            .tree
            .branches
            .iter()
            .filter_map(|b| b.vendor_root.as_deref())
            .collect();
        report.vendor_topdown = vt
            .roots
            .iter()
            .filter(|r| !ours.contains(&r.name.as_str()))
            .filter_map(|r| {
                let m = find(metrics, &r.name)?;
                Some((m.name.clone(), m.value?, m.unit.clone()))
            })
            .collect();
    }
    report
}

/// The report when no side dominates: every branch is walked, and what stands out
/// follows `verdict` after `notable`.
fn undecided(
    catalog: &Catalog,
    metrics: &[MetricValue],
    ipc: Option<f64>,
    sides: Vec<SideStall>,
    mut verdict: String,
    notable: &str,
) -> TreeReport {
    let mut steps = Vec::new();
    let mut findings = Vec::new();
    for b in &catalog.tree.branches {
        walk(catalog, metrics, &b.groups, &mut steps, &mut findings);
    }
    if !findings.is_empty() {
        verdict.push_str(&format!("; {notable}: {}", findings_text(&findings)));
    }
    let sample = sample_next(&[], &findings, catalog);
    let unevaluated = unevaluated_steps(&steps);
    TreeReport {
        ipc,
        sides,
        dominant: None,
        steps,
        findings,
        unevaluated,
        verdict,
        sample_next: sample,
        vendor_topdown: Vec::new(),
        no_verdict: None,
    }
}

/// Each side's stall rate (its stall metric, scaled), or why it has none.
fn side_stalls(tree: &TreeDef, metrics: &[MetricValue]) -> Vec<SideStall> {
    tree.branches
        .iter()
        .map(|b| {
            let m = find(metrics, &b.stall);
            SideStall {
                side: b.side.clone(),
                metric: b.stall.clone(),
                stall_rate: m
                    .and_then(|m| m.value)
                    .map(|v| v * b.stall_scale.unwrap_or(1.0)),
                reason: match m {
                    Some(m) => m.reason.clone(),
                    None => Some("not in the selected metric set".into()),
                },
                within_uncertainty: false,
            }
        })
        .collect()
}

/// No cycle accounting (a side's stall rate is missing): say so, then report what
/// stands out anywhere.
fn without_cycle_accounting(
    catalog: &Catalog,
    metrics: &[MetricValue],
    ipc: Option<f64>,
    sides: Vec<SideStall>,
    ipc_text: &str,
) -> TreeReport {
    let missing: Vec<String> = sides
        .iter()
        .filter(|s| s.stall_rate.is_none())
        .map(|s| {
            format!(
                "{} {}",
                s.metric,
                s.reason.as_deref().unwrap_or("has no value")
            )
        })
        .collect();
    let why = format!(
        "front-end/back-end stall shares not available{ipc_text}: {}",
        missing.join("; ")
    );
    let mut r = undecided(
        catalog,
        metrics,
        ipc,
        sides,
        format!("no verdict: {why}"),
        "notable anyway",
    );
    r.no_verdict = Some(why);
    let stalls: Vec<String> = r
        .sides
        .iter()
        .filter(|s| s.stall_rate.is_none())
        .map(|s| s.metric.clone())
        .collect();
    r.unevaluated.insert(
        0,
        Unevaluated {
            part: "cycle accounting".into(),
            reason: format!("no metric computable ({})", stalls.join(", ")),
        },
    );
    r
}

/// The verdict for the dominant side (branch `bi`, stalling `best_rate` of the
/// cycles): its groups walked, the findings or what it otherwise means.
fn dominant_side(
    catalog: &Catalog,
    metrics: &[MetricValue],
    ipc: Option<f64>,
    sides: Vec<SideStall>,
    bi: usize,
    best_rate: f64,
    ipc_text: &str,
) -> TreeReport {
    let branch = &catalog.tree.branches[bi];
    let mut steps = Vec::new();
    let mut findings = Vec::new();
    walk(catalog, metrics, &branch.groups, &mut steps, &mut findings);
    let mut verdict = format!(
        "{}: {} of cycles stalled in the {}{ipc_text}",
        branch.bound,
        fmt_pct(best_rate),
        branch.words
    );
    if findings.is_empty() {
        verdict.push_str(&format!("; {}", branch.otherwise));
        if let Some(info) = info_text(catalog, metrics, branch) {
            verdict.push_str(&format!(" ({info})"));
        }
    } else {
        verdict.push_str(&format!("; {}", findings_text(&findings)));
    }
    let sample = sample_next(&branch.sample, &findings, catalog);
    let unevaluated = unevaluated_steps(&steps);
    TreeReport {
        ipc,
        sides,
        dominant: Some(branch.side.clone()),
        steps,
        findings,
        unevaluated,
        verdict,
        sample_next: sample,
        vendor_topdown: Vec::new(),
        no_verdict: None,
    }
}

/// The generic tree: the side (front end, back end) with the larger stall rate, when
/// it is notable, walked down its groups.
fn walk_cycles(catalog: &Catalog, metrics: &[MetricValue]) -> TreeReport {
    let tree = &catalog.tree;
    let ipc = find(metrics, &tree.ipc).and_then(|m| m.value);
    let sides = side_stalls(tree, metrics);
    let ipc_text = ipc
        .map(|v| format!(" (IPC {})", fmt_sig(v)))
        .unwrap_or_default();
    if !sides.iter().all(|s| s.stall_rate.is_some()) {
        return without_cycle_accounting(catalog, metrics, ipc, sides, &ipc_text);
    }
    let (bi, best) = sides
        .iter()
        .enumerate()
        .max_by(|a, b| {
            a.1.stall_rate
                .unwrap_or(0.0)
                .total_cmp(&b.1.stall_rate.unwrap_or(0.0))
        })
        .expect("the tree has sides");
    let best_rate = best.stall_rate.unwrap_or(0.0);
    if best_rate < tree.stall_notable {
        let shares: Vec<String> = tree
            .branches
            .iter()
            .zip(&sides)
            .map(|(b, s)| format!("{} {}", b.words, fmt_pct(s.stall_rate.unwrap_or(0.0))))
            .collect();
        let verdict = format!(
            "neither side dominates: cycles stalled {}{ipc_text}; most cycles do useful work",
            shares.join(", ")
        );
        return undecided(catalog, metrics, ipc, sides, verdict, "still notable");
    }
    dominant_side(catalog, metrics, ipc, sides, bi, best_rate, &ipc_text)
}

// ---------------------------------------------------------------------------------
// x86 top-down (Intel TMA, AMD pipeline utilization): the same report, with the
// vendor's level-1 categories as the sides and its hierarchy walked below the dominant
// one.

/// What the expression engine sees of a metric value (thresholds are formulas over
/// metrics).
fn metric_input<'a>(metrics: &'a [MetricValue]) -> impl Fn(&str) -> Input + 'a {
    move |name: &str| match find(metrics, name) {
        Some(MetricValue { value: Some(v), .. }) => Input::Value(*v),
        Some(m) => Input::Missing(m.reason.clone().unwrap_or_else(|| "has no value".into())),
        None => Input::Missing("not in the selected metric set".into()),
    }
}

/// Whether the vendor's threshold of a node holds: None when it has none or it cannot
/// be evaluated (a metric it names has no value).
fn holds(node: &VendorNode, metrics: &[MetricValue]) -> Option<bool> {
    let t = expr::parse_extended(node.threshold.as_deref()?).ok()?;
    t.eval(&metric_input(metrics)).ok().map(|v| v != 0.0)
}

/// The first sentence of a vendor description.
fn first_sentence(s: &str) -> &str {
    match s.find(". ") {
        Some(i) => &s[..=i],
        None => s,
    }
}

/// Walks the children of `parent` whose thresholds hold, depth first; returns the
/// phrase of what held ("tma_memory_bound 35% (tma_dram_bound 22%)").
fn descend(
    vt: &VendorTree,
    metrics: &[MetricValue],
    parent: &VendorNode,
    label: &str,
    steps: &mut Vec<TreeStep>,
    findings: &mut Vec<Finding>,
    sample: &mut Vec<String>,
) -> Vec<String> {
    let children: Vec<&VendorNode> = vt
        .nodes
        .iter()
        .filter(|n| n.parent.as_deref() == Some(parent.name.as_str()))
        .collect();
    if children.is_empty() {
        return Vec::new();
    }
    let mut step = TreeStep {
        group: parent.name.clone(),
        title: format!(
            "{} (top-down level {})",
            parent.name,
            children[0].level.unwrap_or(0)
        ),
        metrics: Vec::new(),
    };
    let mut held = Vec::new();
    for c in &children {
        let mv = find(metrics, &c.name);
        let value = mv.and_then(|m| m.value);
        let notable = value.is_some() && holds(c, metrics) == Some(true);
        step.metrics.push(StepMetric {
            name: c.name.clone(),
            value,
            unit: mv.map(|m| m.unit.clone()).unwrap_or_default(),
            notable,
            reason: match mv {
                Some(m) => m.reason.clone(),
                None => Some("not in the selected metric set".into()),
            },
            within_uncertainty: false,
        });
        if notable {
            held.push((
                *c,
                value.unwrap_or(0.0),
                mv.map(|m| m.unit.clone()).unwrap_or_default(),
            ));
        }
    }
    steps.push(step);
    let mut phrases = Vec::new();
    for (c, v, unit) in held {
        let threshold = c
            .threshold
            .as_deref()
            .and_then(|t| expr::parse_extended(t).ok())
            .and_then(|t| own_threshold(&c.name, &t))
            .unwrap_or(0.0);
        let text = format!("{} {}", c.name, fmt_metric(v, &unit));
        findings.push(Finding {
            metric: c.name.clone(),
            group: parent.name.clone(),
            label: label.to_string(),
            value: v,
            threshold,
            severity: if threshold > 0.0 { v / threshold } else { 1.0 },
            rank: c.level.unwrap_or(9),
            text: text.clone(),
            description: c
                .description
                .as_deref()
                .map(|d| first_sentence(d).to_string()),
            within_uncertainty: false,
        });
        for s in &c.sample_events {
            if !sample.contains(s) {
                sample.push(s.clone());
            }
        }
        let below = descend(vt, metrics, c, label, steps, findings, sample);
        phrases.push(if below.is_empty() {
            text
        } else {
            format!("{text} ({})", below.join(", "))
        });
    }
    phrases
}

fn walk_topdown(catalog: &Catalog, metrics: &[MetricValue], vt: &VendorTree) -> TreeReport {
    let tree = &catalog.tree;
    let ipc = find(metrics, &tree.ipc).and_then(|m| m.value);
    let ipc_text = ipc
        .map(|v| format!(" (IPC {})", fmt_sig(v)))
        .unwrap_or_default();
    let node = |name: &str| vt.roots.iter().chain(&vt.nodes).find(|n| n.name == name);
    // Without every level-1 share there is no verdict: the cycle walk says why.
    let sides: Vec<SideStall> = walk_cycles(catalog, metrics).sides;
    if sides.iter().any(|s| s.stall_rate.is_none()) {
        return walk_cycles(catalog, metrics);
    }
    // A side dominates when the vendor's threshold for it holds (numalab's
    // `stall_notable` for a side without one) and it is the largest such share.
    let mut best: Option<usize> = None;
    for (i, (b, s)) in tree.branches.iter().zip(&sides).enumerate() {
        let rate = s.stall_rate.unwrap_or(0.0);
        let significant = match b
            .vendor_root
            .as_deref()
            .and_then(node)
            .and_then(|n| holds(n, metrics))
        {
            Some(h) => h,
            None => rate >= tree.stall_notable,
        };
        if significant && best.is_none_or(|j| rate > sides[j].stall_rate.unwrap_or(0.0)) {
            best = Some(i);
        }
    }
    let Some(bi) = best else {
        let shares: Vec<String> = tree
            .branches
            .iter()
            .zip(&sides)
            .map(|(b, s)| format!("{} {}", b.words, fmt_pct(s.stall_rate.unwrap_or(0.0))))
            .collect();
        let verdict = format!(
            "no top-down category stands out: pipeline slots {}{ipc_text}",
            shares.join(", ")
        );
        return undecided(catalog, metrics, ipc, sides, verdict, "still notable");
    };
    let branch = &tree.branches[bi];
    let rate = sides[bi].stall_rate.unwrap_or(0.0);
    let mut steps = Vec::new();
    let mut findings = Vec::new();
    let mut sample: Vec<String> = branch.sample.clone();
    let mut verdict = format!(
        "{}: {} of pipeline slots ({}){ipc_text}",
        branch.bound,
        fmt_pct(rate),
        branch.stall
    );
    if let Some(root) = branch.vendor_root.as_deref().and_then(node) {
        for s in &root.sample_events {
            if !sample.contains(s) {
                sample.push(s.clone());
            }
        }
        let held = descend(
            vt,
            metrics,
            root,
            &branch.bound,
            &mut steps,
            &mut findings,
            &mut sample,
        );
        if !held.is_empty() {
            verdict.push_str(&format!("; {}", held.join(", ")));
        }
    }
    let vendor_findings = findings.len();
    walk(catalog, metrics, &branch.groups, &mut steps, &mut findings);
    if findings.len() > vendor_findings {
        verdict.push_str(&format!(
            "; {}",
            findings_text(&findings[vendor_findings..])
        ));
    } else if vendor_findings == 0 {
        verdict.push_str(&format!("; {}", branch.otherwise));
    }
    let sample = sample_next(&sample, &findings[vendor_findings..], catalog);
    let unevaluated = unevaluated_steps(&steps);
    TreeReport {
        ipc,
        sides,
        dominant: Some(branch.side.clone()),
        steps,
        findings,
        unevaluated,
        verdict,
        sample_next: sample,
        vendor_topdown: Vec::new(),
        no_verdict: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::load;
    use crate::metrics::{evaluate_all, EventState, EventValue};

    fn counts(pairs: &[(&str, f64)]) -> Vec<EventValue> {
        pairs
            .iter()
            .map(|(n, v)| EventValue {
                name: n.to_string(),
                code: None,
                value: Some(*v),
                raw_count: Some(*v as u64),
                running_fraction: Some(1.0),
                time_enabled_ns: None,
                time_running_ns: None,
                supported: true,
                state: EventState::Counted,
                reason: None,
                unit: None,
                software: false,
                run: None,
                advertised: None,
                uncertainty: None,
            })
            .collect()
    }

    fn report(id: &str, pairs: &[(&str, f64)]) -> TreeReport {
        let c = load(id).unwrap();
        let names = c.select_metrics("first-pass").unwrap();
        let m = evaluate_all(&c, &names, &counts(pairs));
        walk_tree(&c, &m)
    }

    /// The pointer-chasing counts with some events counted a fraction of the run
    /// (name, fraction), `rotations` rotations: the walk over their ranges.
    fn multiplexed(fractions: &[(&str, f64)], rotations: Option<f64>) -> TreeReport {
        let c = load("neoverse-n1").unwrap();
        let names = c.select_metrics("first-pass").unwrap();
        let mut ev = counts(&[
            ("CPU_CYCLES", 1.0e9),
            ("INST_RETIRED", 2.0e8),
            ("STALL_FRONTEND", 2.0e7),
            ("STALL_BACKEND", 8.3e8),
            ("L1D_CACHE", 6.0e7),
            ("L1D_CACHE_REFILL", 2.12e7),
            ("L2D_CACHE", 2.2e7),
            ("L2D_CACHE_REFILL", 1.1e7),
            ("LL_CACHE_RD", 1.0e7),
            ("LL_CACHE_MISS_RD", 6.0e6), // 60% miss: threshold 50%
            ("L1D_TLB", 6.0e7),
            ("DTLB_WALK", 1.0e5),
        ]);
        for e in &mut ev {
            if let Some((_, f)) = fractions.iter().find(|(n, _)| *n == e.name) {
                e.running_fraction = Some(*f);
            }
        }
        crate::mux::apply(&mut ev, rotations);
        walk_tree(&c, &evaluate_all(&c, &names, &ev))
    }

    #[test]
    fn a_verdict_outside_its_multiplexing_margin_stands_plain() {
        // 90% of the run, 100 rotations: +-1% typical; 60% against 50% stays clear.
        let r = multiplexed(
            &[("LL_CACHE_RD", 0.9), ("LL_CACHE_MISS_RD", 0.9)],
            Some(100.0),
        );
        let f = r
            .findings
            .iter()
            .find(|f| f.metric == "ll_read_miss_rate")
            .unwrap();
        assert!(!f.within_uncertainty);
        assert!(!r.verdict.contains("uncertainty"), "{}", r.verdict);
        assert!(r.sides.iter().all(|s| !s.within_uncertainty));
    }

    #[test]
    fn a_verdict_inside_its_multiplexing_margin_says_so() {
        // A quarter of the run, rotations unknown: +-75% on each count, so the miss
        // rate's range (60% x 0.25/1.75 .. 60% x 1.75/0.25) holds the 50% threshold.
        let r = multiplexed(&[("LL_CACHE_RD", 0.25), ("LL_CACHE_MISS_RD", 0.25)], None);
        let f = r
            .findings
            .iter()
            .find(|f| f.metric == "ll_read_miss_rate")
            .unwrap();
        assert!(f.within_uncertainty);
        // The verdict is kept, and one clause says how firm it is.
        assert!(
            r.verdict.starts_with("back-end bound: 83% of cycles"),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict.contains(
                "; within the multiplexing uncertainty: ll_read_miss_rate 8.6%..420% against 50%"
            ),
            "{}",
            r.verdict
        );
        let step = r
            .steps
            .iter()
            .flat_map(|s| &s.metrics)
            .find(|m| m.name == "ll_read_miss_rate")
            .unwrap();
        assert!(step.within_uncertainty && step.notable);
        // The back-end stall counted a fifth of the run: 83% +-80% reaches the 20%
        // threshold (a quarter would not: its low end, 20.75%, stays above).
        let r = multiplexed(&[("STALL_BACKEND", 0.2)], None);
        let back = r.sides.iter().find(|s| s.side == "backend").unwrap();
        assert!(back.within_uncertainty, "{:?}", r.sides);
        assert!(
            r.verdict.contains("backend stall 17%..149% against 20%"),
            "{}",
            r.verdict
        );
    }

    /// The methodology's pointer-chasing example: IPC about 0.2, memory bound.
    #[test]
    fn pointer_chasing_is_back_end_and_memory_bound() {
        let r = report(
            "neoverse-n1",
            &[
                ("CPU_CYCLES", 1.0e9),
                ("INST_RETIRED", 2.0e8),
                ("STALL_FRONTEND", 2.0e7),
                ("STALL_BACKEND", 8.3e8),
                ("L1D_CACHE", 6.0e7),
                ("L1D_CACHE_REFILL", 2.12e7), // 106 MPKI
                ("L2D_CACHE", 2.2e7),
                ("L2D_CACHE_REFILL", 1.1e7),
                ("LL_CACHE_RD", 1.0e7),
                ("LL_CACHE_MISS_RD", 9.9e6), // 99% miss
                ("L1D_TLB", 6.0e7),
                ("DTLB_WALK", 1.0e5),
            ],
        );
        assert_eq!(r.dominant.as_deref(), Some("backend"));
        assert!((r.ipc.unwrap() - 0.2).abs() < 1e-12);
        assert!(
            r.verdict.starts_with("back-end bound: 83% of cycles stalled in the back end (IPC 0.200); memory bound: 99% of last-level reads miss, L1D MPKI 106, "),
            "{}",
            r.verdict
        );
        assert!(!r.verdict.contains("data-TLB"), "{}", r.verdict);
        // Only back-end groups were walked.
        let groups: Vec<&str> = r.steps.iter().map(|s| s.group.as_str()).collect();
        assert_eq!(groups, ["dtlb", "l1d", "l2", "ll", "memory", "mix"]);
        assert_eq!(r.sample_next[0], "STALL_BACKEND");
        assert!(r.sample_next.contains(&"L1D_CACHE_REFILL".to_string()));
        assert!(r.sample_next.contains(&"LL_CACHE_MISS_RD".to_string()));
    }

    /// A large-code, branchy workload: front-end bound on instruction cache and branches.
    #[test]
    fn front_end_bound() {
        let r = report(
            "neoverse-n1",
            &[
                ("CPU_CYCLES", 1.0e9),
                ("INST_RETIRED", 8.0e8),
                ("STALL_FRONTEND", 5.5e8),
                ("STALL_BACKEND", 1.0e8),
                ("L1I_CACHE", 4.0e8),
                ("L1I_CACHE_REFILL", 2.4e7), // 30 MPKI, 6% miss
                ("BR_RETIRED", 1.6e8),
                ("BR_MIS_PRED_RETIRED", 1.2e7), // 15 MPKI, 7.5%
                ("L1I_TLB", 4.0e8),
                ("ITLB_WALK", 8.0e4), // 0.1 MPKI: not notable
            ],
        );
        assert_eq!(r.dominant.as_deref(), Some("frontend"));
        assert!(
            r.verdict.starts_with(
                "front-end bound: 55% of cycles stalled in the front end (IPC 0.800); "
            ),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict.contains("instruction-cache bound: L1I MPKI 30.0"),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict
                .contains("branch bound: branch MPKI 15.0, 7.5% of branches mispredicted"),
            "{}",
            r.verdict
        );
        assert!(!r.verdict.contains("instruction-TLB"), "{}", r.verdict);
        let groups: Vec<&str> = r.steps.iter().map(|s| s.group.as_str()).collect();
        assert_eq!(groups, ["branch", "itlb", "l1i", "l2", "ll"]);
        assert_eq!(r.sample_next[0], "STALL_FRONTEND");
        assert!(r.sample_next.contains(&"L1I_CACHE_REFILL".to_string()));
    }

    #[test]
    fn back_end_bound_without_findings_is_core_bound() {
        let r = report(
            "neoverse-n1",
            &[
                ("CPU_CYCLES", 1.0e9),
                ("INST_RETIRED", 1.2e9),
                ("STALL_FRONTEND", 5.0e7),
                ("STALL_BACKEND", 4.0e8),
                ("L1D_CACHE", 3.0e8),
                ("L1D_CACHE_REFILL", 1.0e6),
                ("INST_SPEC", 1.3e9),
                ("DP_SPEC", 6.5e8),
                ("LD_SPEC", 3.0e8),
                ("VFP_SPEC", 1.0e8),
            ],
        );
        assert!(r.verdict.contains("core bound"), "{}", r.verdict);
        assert!(
            r.verdict
                .contains("mix_dp_pct 50%, mix_ld_pct 23%, mix_vfp_pct 7.7%"),
            "{}",
            r.verdict
        );
        assert!(r.findings.is_empty());
    }

    #[test]
    fn no_cycle_accounting_says_why() {
        // What the generic x86 events give on most Intel models.
        let c = load("x86-64").unwrap();
        let names = c.select_metrics("first-pass").unwrap();
        let mut ev = counts(&[
            ("CYCLES", 1.0e9),
            ("INSTRUCTIONS", 5.0e8),
            ("LLC_LOADS", 1.0e7),
            ("LLC_LOAD_MISSES", 8.0e6),
        ]);
        for n in ["STALLED_CYCLES_FRONTEND", "STALLED_CYCLES_BACKEND"] {
            ev.push(EventValue {
                value: None,
                raw_count: None,
                supported: false,
                state: EventState::NotSupported,
                ..ev[0].clone()
            });
            ev.last_mut().unwrap().name = n.into();
        }
        let r = walk_tree(&c, &evaluate_all(&c, &names, &ev));
        assert_eq!(r.dominant, None);
        assert!(r.verdict.starts_with("no verdict: front-end/back-end stall shares not available (IPC 0.500): frontend_stall_rate missing input: STALLED_CYCLES_FRONTEND not supported by this PMU"), "{}", r.verdict);
        assert!(r.no_verdict.is_some());
        assert_eq!(r.unevaluated[0].part, "cycle accounting");
        assert!(r.verdict.contains("notable anyway: memory bound: 80% of last-level reads miss, last-level read MPKI 16.0"), "{}", r.verdict);
    }

    #[test]
    fn n2_reports_the_vendor_topdown_level_when_counted() {
        let c = load("neoverse-n2").unwrap();
        let mut names = c.select_metrics("first-pass").unwrap();
        names.extend(c.select_metrics("topdown").unwrap());
        let ev = counts(&[
            ("CPU_CYCLES", 1.0e9),
            ("INST_RETIRED", 1.0e9),
            ("STALL_FRONTEND", 1.0e8),
            ("STALL_BACKEND", 5.0e8),
            ("STALL_SLOT_BACKEND", 2.5e9),
            ("BR_MIS_PRED", 1.0e6),
        ]);
        let r = walk_tree(&c, &evaluate_all(&c, &names, &ev));
        // 100 * (2.5e9 / (5 * 1e9) - 1e6 * 3 / 1e9) = 49.7
        assert_eq!(r.vendor_topdown.len(), 1, "{:?}", r.vendor_topdown);
        assert_eq!(r.vendor_topdown[0].0, "backend_bound");
        assert!((r.vendor_topdown[0].1 - 49.7).abs() < 1e-9);
        assert_eq!(r.dominant.as_deref(), Some("backend"));
    }

    #[test]
    fn balanced_run_has_no_dominant_side() {
        let r = report(
            "neoverse-n1",
            &[
                ("CPU_CYCLES", 1.0e9),
                ("INST_RETIRED", 3.0e9),
                ("STALL_FRONTEND", 5.0e7),
                ("STALL_BACKEND", 1.0e8),
            ],
        );
        assert_eq!(r.dominant, None);
        assert!(
            r.verdict.starts_with(
                "neither side dominates: cycles stalled front end 5.0%, back end 10% (IPC 3.00)"
            ),
            "{}",
            r.verdict
        );
    }
}
