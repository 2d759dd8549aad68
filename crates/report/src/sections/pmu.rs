//! Counters: what the machine can count (`pmu.check`), profiles with their metrics,
//! events and the front-end/back-end decision tree (`pmu.profile`), hot spots
//! (`pmu.samples`) and before/after comparisons (`pmu.comparison`).

use super::{opt, table};
use crate::anchors;
use crate::doc::{OutlineItem, Section};
use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::pmu::Profile;
use numalab_records::pmu::SampleReport;
use numalab_records::pmu::{
    fmt_count, fmt_metric, Comparison, Coverage, EventState, EventStatus, PmuCheck, TreeReport,
};

fn status(s: &EventStatus) -> Cell {
    match s {
        EventStatus::Works => Cell::text("works"),
        EventStatus::NotSupported(why) => Cell::missing(format!("not supported here ({why})")),
        EventStatus::Denied(why) => {
            Cell::missing(format!("denied ({why}): see perf_event_paranoid"))
        }
        EventStatus::Failed(why) => Cell::missing(format!("failed ({why})")),
    }
}

/// What a profile could not count, each fact once: events by state, then the metrics
/// not computable grouped by cause.
pub fn coverage_lines(c: &Coverage) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(pmu) = &c.core_pmu {
        out.push(format!(
            "Core PMU {} (type {}, CPUs {}): {} events advertised{}.",
            pmu.name,
            pmu.pmu_type.map_or("unknown".into(), |t| t.to_string()),
            pmu.cpus.as_deref().unwrap_or("unknown"),
            pmu.events.len(),
            if c.common_set_complete == Some(true) {
                "; IMPLEMENTATION DEFINED events are counted on trust"
            } else {
                ", not the architecture's required set: unlisted events are not opened"
            }
        ));
    }
    for (what, names) in [
        ("Not supported by this PMU", &c.unsupported),
        (
            "Not counted here (read 0 where hardware must count)",
            &c.untrusted,
        ),
        ("Never scheduled on a counter", &c.not_scheduled),
        ("Denied or failed", &c.denied_or_failed),
        ("Counted on trust (not advertised)", &c.on_trust),
    ] {
        if !names.is_empty() {
            out.push(format!("{what}: {}.", names.join(", ")));
        }
    }
    for g in &c.not_computable {
        out.push(format!("{}.", g.text));
    }
    out
}

/// Up to 8 names, then how many more.
fn names_short(names: &[&str]) -> String {
    if names.len() <= 8 {
        return names.join(", ");
    }
    format!("{}, and {} more", names[..8].join(", "), names.len() - 8)
}

/// The decision tree as an outline: IPC and stall shares, then the groups looked at on
/// the dominant side, notable metrics emphasised, then the verdict.
pub fn tree_outline(t: &TreeReport) -> Vec<OutlineItem> {
    let item = |depth, text: String, emphasis| OutlineItem {
        depth,
        text,
        emphasis,
    };
    let mut out = vec![item(
        0,
        format!(
            "IPC {}",
            t.ipc.map_or("not available".into(), |v| format!("{v:.2}"))
        ),
        false,
    )];
    // Without any stall share (no PMU, or none of their events counted) the sides are
    // one line, and the groups below list only the metrics that have a value: the
    // "not evaluated" line names the groups with none.
    let no_side = !t.sides.is_empty() && t.sides.iter().all(|s| s.stall_rate.is_none());
    if no_side {
        let reasons: Vec<&str> = t.sides.iter().filter_map(|s| s.reason.as_deref()).collect();
        out.push(item(
            1,
            format!(
                "stall shares ({}): n/a{}",
                t.sides
                    .iter()
                    .map(|s| s.side.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if reasons.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", reasons[0])
                }
            ),
            false,
        ));
    }
    for s in t.sides.iter().filter(|_| !no_side) {
        let dominant = t.dominant.as_deref() == Some(s.side.as_str());
        out.push(item(
            1,
            format!(
                "{} stalls ({}): {}",
                s.side,
                s.metric,
                match (s.stall_rate, &s.reason) {
                    (Some(v), _) => format!("{:.1}% of cycles", v * 100.0),
                    (None, Some(r)) => format!("n/a ({r})"),
                    (None, None) => "n/a".into(),
                }
            ),
            dominant,
        ));
        if !dominant {
            continue;
        }
        for st in &t.steps {
            out.push(item(2, st.title.clone(), false));
            for m in &st.metrics {
                out.push(item(
                    3,
                    format!(
                        "{}: {}",
                        m.name,
                        match (m.value, &m.reason) {
                            (Some(v), _) => fmt_metric(v, &m.unit),
                            (None, Some(r)) => format!("n/a ({r})"),
                            (None, None) => "n/a".into(),
                        }
                    ),
                    m.notable,
                ));
            }
        }
    }
    // Groups with no metric at all, said on one line when the record does not name
    // them itself (records before `unevaluated`).
    let mut empty: Vec<&str> = Vec::new();
    if t.dominant.is_none() {
        for st in &t.steps {
            if st.metrics.iter().all(|m| m.value.is_none()) {
                empty.push(&st.title);
                continue;
            }
            out.push(item(1, st.title.clone(), false));
            for m in st.metrics.iter().filter(|m| m.value.is_some()) {
                out.push(item(
                    2,
                    format!(
                        "{}: {}",
                        m.name,
                        m.value.map_or("n/a".into(), |v| fmt_metric(v, &m.unit))
                    ),
                    m.notable,
                ));
            }
        }
    }
    for (name, v, unit) in &t.vendor_topdown {
        out.push(item(
            1,
            format!("vendor topdown {name}: {}", fmt_metric(*v, unit)),
            false,
        ));
    }
    if t.unevaluated.is_empty() && !empty.is_empty() {
        out.push(item(
            1,
            format!("no metric available for: {}", empty.join(", ")),
            false,
        ));
    }
    if !t.unevaluated.is_empty() {
        let parts: Vec<&str> = t.unevaluated.iter().map(|u| u.part.as_str()).collect();
        out.push(item(
            1,
            format!("not evaluated (no metric computable): {}", parts.join(", ")),
            false,
        ));
    }
    out.push(item(0, format!("verdict: {}", t.verdict), true));
    if !t.sample_next.is_empty() {
        out.push(item(
            1,
            format!(
                "worth sampling next: {} (numalab profile --sample EVENT -- CMD)",
                t.sample_next.join(", ")
            ),
            false,
        ));
    }
    out
}

/// Interval mode: one chart per unit of the metrics over time (up to 6 metrics each),
/// and the whole timeline as a table.
fn timeline(s: &mut Section, b: usize, key: &str, p: &Profile) {
    use numalab_chart::{LineChart, Series};
    // Metrics with a value in some interval, in the profile's order, by unit.
    let mut by_unit: Vec<(String, Vec<&str>)> = Vec::new();
    for m in &p.metrics {
        if !p.timeline.iter().any(|pt| pt.metrics.contains_key(&m.name)) {
            continue;
        }
        match by_unit.iter_mut().find(|(u, _)| *u == m.unit) {
            Some((_, v)) if v.len() < 6 => v.push(&m.name),
            Some(_) => {}
            None => by_unit.push((m.unit.clone(), vec![&m.name])),
        }
    }
    for (i, (unit, names)) in by_unit.iter().enumerate().take(3) {
        let percent = unit == "ratio";
        let mut c = LineChart::new(
            "Metrics over time",
            "seconds",
            if percent { "%" } else { unit },
        );
        for n in names {
            let pts = p
                .timeline
                .iter()
                .filter_map(|pt| {
                    let v = *pt.metrics.get(*n)?;
                    Some((pt.end_s, if percent { 100.0 * v } else { v }))
                })
                .collect();
            c.series.push(Series::new(n, pts));
        }
        s.chart(
            &anchors::id(b, &format!("pmu-timeline-{i}-{key}")),
            c.to_svg(),
            format!(
                "{} per interval of {} ms, at each interval's end (interval mode); an interval whose events were not counted has no point",
                names.join(", "),
                p.interval_ms.unwrap_or(0)
            ),
        );
    }
    let names: Vec<&str> = by_unit
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    let mut cols: Vec<(&str, Option<&str>)> = vec![("from", Some("s")), ("to", Some("s"))];
    cols.extend(names.iter().map(|n| (*n, None)));
    cols.push(("counted", None));
    let mut t = table(
        &anchors::id(b, &format!("pmu-timeline-{key}")),
        "Timeline",
        &cols,
    );
    let units: Vec<&str> = names
        .iter()
        .map(|n| p.metric(n).map_or("", |m| m.unit.as_str()))
        .collect();
    for pt in &p.timeline {
        let mut row = vec![Cell::num(pt.start_s, 3), Cell::num(pt.end_s, 3)];
        for (n, u) in names.iter().zip(&units) {
            row.push(match pt.metrics.get(*n) {
                Some(v) => Cell::text(fmt_metric(*v, u)),
                None => Cell::missing("not counted in this interval"),
            });
        }
        row.push(opt(pt.running_fraction, 2, "software events only"));
        t.push(row);
    }
    t.notes.push(
        "counted = the smallest share of the interval any hardware group was on a counter".into(),
    );
    s.table(t);
}

/// The table of one `pmu.check`: what the machine can count, after its verdict.
fn check(s: &mut Section, b: usize, c: &PmuCheck) {
    s.para(c.verdict.clone());
    let mut t = table(
        &anchors::id(b, "pmu-check"),
        "PMU check",
        &[("what", None), ("result", None)],
    );
    t.push(vec![Cell::text("cycles"), status(&c.capability.cycles)]);
    t.push(vec![
        Cell::text("instructions"),
        status(&c.capability.instructions),
    ]);
    t.push(vec![
        Cell::text("task clock"),
        status(&c.capability.task_clock),
    ]);
    t.push(vec![
        Cell::text("page faults"),
        status(&c.capability.page_faults),
    ]);
    t.push(vec![
        Cell::text("perf_event_paranoid"),
        opt(c.capability.paranoid.map(f64::from), 0, "not readable"),
    ]);
    t.push(vec![
        Cell::text("PMUs listed by the kernel"),
        Cell::text(c.capability.pmus.join(", ")),
    ]);
    t.push(vec![
        Cell::text("event catalog"),
        match (&c.cpu, &c.cpu_problem) {
            (Some(m), _) => Cell::text(format!("{} ({}, {})", m.catalog, m.cpu, m.how)),
            (None, Some(p)) => Cell::missing(p),
            (None, None) => Cell::missing("no catalog fits this CPU"),
        },
    ]);
    t.push(vec![
        Cell::text("task clock / thread CPU time"),
        opt(c.task_clock_agreement, 4, "not measured"),
    ]);
    t.push(vec![
        Cell::text("IPC of the check loop"),
        opt(c.loop_ipc, 2, "no hardware PMU"),
    ]);
    s.table(t);
}

/// One `pmu.profile`: its sentence, spreads and coverage, the decision tree, the
/// timeline, the uncore, the metrics and the events.
fn profile(s: &mut Section, b: usize, key: &str, p: &Profile) {
    profile_intro(s, p);
    if let Some(t) = &p.tree {
        tree(s, b, key, t);
    }
    if !p.timeline.is_empty() {
        timeline(s, b, key, p);
    }
    match (&p.uncore, &p.uncore_note) {
        (Some(u), _) => {
            s.para("Uncore PMUs counted system-wide over the same time (every process on the machine, not only this one):");
            super::uncore::render(s, &anchors::id(b, &format!("pmu-uncore-{key}")), u);
        }
        (None, Some(n)) => {
            s.para(format!("Uncore: {n}."));
        }
        (None, None) => {}
    }
    profile_metrics(s, b, key, p);
    profile_events(s, b, key, p);
}

/// What a profile counted and how (its sentence), the run-to-run spreads and what it
/// could not count.
fn profile_intro(s: &mut Section, p: &Profile) {
    let what = match (&p.attach, p.command.is_empty()) {
        (Some(a), _) if a.kind == "pid" => format!(
            "process {} ({})",
            a.pid.map_or("?".into(), |p| p.to_string()),
            a.comm.as_deref().unwrap_or("?")
        ),
        (Some(a), true) if a.kind == "system-wide" => {
            format!("every CPU ({} CPUs)", a.cpus.len())
        }
        (Some(_), false) => format!("every CPU while {} ran", p.command.join(" ")),
        (_, true) => p
            .source
            .path
            .clone()
            .unwrap_or_else(|| "imported counts".into()),
        (_, false) => p.command.join(" "),
    };
    let mut facts = vec![match p.mode.as_str() {
        "exact" => format!("exact mode: {} run(s), no multiplexing", p.runs.len()),
        "default" => "default mode: one run, the kernel multiplexes groups".into(),
        _ => format!(
            "imported from {}",
            p.source.format.as_deref().unwrap_or("a perf file")
        ),
    }];
    if let Some(sc) = &p.scope {
        facts.push(format!("{sc} counting"));
    }
    if let Some(a) = &p.attach {
        let threads = a
            .threads
            .map(|t| format!(" ({t} threads when attached, and those they created)"))
            .unwrap_or_default();
        facts.push(format!(
            "counted for {:.2} s{threads}, stopped by {}",
            a.seconds, a.stopped_by
        ));
    }
    if let Some(ms) = p.interval_ms {
        facts.push(format!(
            "read every {ms} ms: {} intervals",
            p.timeline.len()
        ));
    }
    if let Some(run) = p.runs.last() {
        facts.push(format!(
            "the command {} (wall time {:.3} s)",
            run.outcome.describe(),
            run.outcome.wall_ns as f64 / 1e9
        ));
    }
    s.para(format!(
        "Profile of {what}: {} ({}), catalog {}, metric set {}; {}.",
        p.cpu.cpu,
        p.cpu.how,
        p.cpu.catalog,
        p.metric_set,
        facts.join("; ")
    ));
    if let Some(m) = &p.multiplexing {
        s.para(format!("{}.", m.line()));
    }
    s.list(
        p.spread
            .iter()
            .map(|sp| {
                format!(
                    "run-to-run spread of {} over {} runs: {:.2}% (median {})",
                    sp.event,
                    sp.runs,
                    sp.spread_pct,
                    fmt_count(sp.median)
                )
            })
            .collect(),
    );
    if let Some(c) = &p.coverage {
        for line in coverage_lines(c) {
            s.para(line);
        }
    }
    // The vendor's invariants: each violated rule with its figures, then the count.
    for line in numalab_records::pmu::consistency_lines(&p.consistency) {
        s.para(line);
    }
}

/// The decision tree of a profile: its outline and the table of its findings.
fn tree(s: &mut Section, b: usize, key: &str, t: &TreeReport) {
    s.outline(tree_outline(t));
    let mut anchor = table(
        &anchors::pmu_tree(b, key),
        "Decision tree findings",
        &[
            ("metric", None),
            ("group", None),
            ("verdict", None),
            ("value", None),
            ("threshold", None),
            ("finding", None),
        ],
    );
    for f in &t.findings {
        anchor.push(vec![
            Cell::text(&f.metric),
            Cell::text(&f.group),
            Cell::text(&f.label),
            Cell::num(f.value, 3),
            Cell::num(f.threshold, 3),
            Cell::text(&f.text),
        ]);
    }
    if anchor.rows.is_empty() {
        anchor.push(vec![
            Cell::text("-"),
            Cell::text("-"),
            Cell::text("nothing notable"),
            Cell::missing("no metric reached its threshold"),
            Cell::missing("no metric reached its threshold"),
            Cell::text(&t.verdict),
        ]);
    }
    s.table(anchor);
}

/// The metrics table of a profile (the metrics it could not compute folded into a
/// note when its coverage already says why).
fn profile_metrics(s: &mut Section, b: usize, key: &str, p: &Profile) {
    let mut m = table(
        &anchors::id(b, &format!("pmu-metrics-{key}")),
        "Metrics",
        &[
            ("group", None),
            ("metric", None),
            ("value", None),
            ("unit", None),
            ("counted", None),
            ("note", None),
        ],
    );
    // With the coverage lines above (what was not counted, the metrics not
    // computable by cause), a row per n/a metric only repeats them (30 rows on a
    // machine without a PMU): they are folded into one note; every one is in the
    // raw data with its reason.
    let fold = p.coverage.is_some();
    let folded: Vec<&str> = p
        .metrics
        .iter()
        .filter(|v| fold && v.value.is_none())
        .map(|v| v.name.as_str())
        .collect();
    for v in p.metrics.iter().filter(|v| !(fold && v.value.is_none())) {
        m.push(vec![
            Cell::text(&v.group),
            Cell::text(&v.name),
            match v.value {
                Some(x) => Cell::text(fmt_metric(x, &v.unit)),
                None => Cell::missing(v.reason.clone().unwrap_or_else(|| "not available".into())),
            },
            Cell::text(&v.unit),
            opt(v.min_running_fraction, 2, "not counted"),
            Cell::text(if v.across_runs {
                "events from different runs, normalised by instructions".to_string()
            } else {
                v.reason.clone().unwrap_or_default()
            }),
        ]);
    }
    m.notes.push("counted = the smallest share of the run its events were on a counter (multiplexed values are extrapolated)".into());
    if !folded.is_empty() {
        m.notes.push(format!(
            "{} metric{} not available, not listed (why: above; each with its reason in the raw data): {}",
            folded.len(),
            if folded.len() == 1 { "" } else { "s" },
            names_short(&folded)
        ));
    }
    if !m.rows.is_empty() || !folded.is_empty() {
        s.table(m);
    }
}

/// The events table of a profile (the events this PMU does not support folded into
/// a note when its coverage already lists them).
fn profile_events(s: &mut Section, b: usize, key: &str, p: &Profile) {
    let fold = p.coverage.is_some();
    let mut e = table(
        &anchors::id(b, &format!("pmu-events-{key}")),
        "Events",
        &[
            ("event", None),
            ("code", None),
            ("value", None),
            ("unit", None),
            ("counted", None),
            ("state", None),
        ],
    );
    let unsupported: Vec<&str> = p
        .events
        .iter()
        .filter(|v| fold && v.state == EventState::NotSupported)
        .map(|v| v.name.as_str())
        .collect();
    for v in p
        .events
        .iter()
        .filter(|v| !(fold && v.state == EventState::NotSupported))
    {
        e.push(vec![
            Cell::text(&v.name),
            Cell::text(v.code.clone().unwrap_or_default()),
            opt(v.value, 0, "no value"),
            Cell::text(v.unit.clone().unwrap_or_default()),
            opt(v.running_fraction, 3, "not counted"),
            Cell::text(match v.state {
                EventState::Counted => "counted",
                EventState::NotSupported => "not supported",
                EventState::NotCounted => "not scheduled",
                EventState::Denied => "denied",
                EventState::Failed => "failed",
                EventState::Untrusted => "not counted here (read 0)",
            }),
        ]);
    }
    if !unsupported.is_empty() {
        e.notes.push(format!(
            "{} event{} not supported by this PMU, not listed: {}",
            unsupported.len(),
            if unsupported.len() == 1 { "" } else { "s" },
            names_short(&unsupported)
        ));
    }
    s.table(e);
}

/// One `pmu.samples`: its sentence, the hot functions and the hottest lines.
fn samples(s: &mut Section, b: usize, key: &str, sr: &SampleReport) {
    s.para(format!(
        "Samples of {}: {} samples of {} ({} lost, {} attributed to a function). {}",
        sr.command.join(" "),
        sr.samples,
        sr.event,
        sr.lost,
        sr.attributed,
        sr.skid
    ));
    let mut t = table(
        &anchors::id(b, &format!("pmu-functions-{key}")),
        "Hot functions",
        &[
            ("function", None),
            ("object", None),
            ("self", Some("%")),
            ("total", Some("%")),
            ("hottest line", None),
        ],
    );
    for f in sr.functions.iter().take(30) {
        t.push(vec![
            Cell::text(&f.function),
            Cell::text(&f.object),
            Cell::num(f.self_pct, 1),
            Cell::num(f.total_pct, 1),
            Cell::text(f.hottest_line.clone().unwrap_or_default()),
        ]);
    }
    if let Some(d) = sr.callchain_depth_median {
        t.notes.push(format!("median call-chain depth {d:.0} frames (code built without frame pointers gives short chains: `total` then undercounts callers)"));
    }
    s.table(t);
    if !sr.lines.is_empty() {
        let mut lt = table(
            &anchors::id(b, &format!("pmu-lines-{key}")),
            "Hottest lines",
            &[
                ("share", Some("%")),
                ("file", None),
                ("line", None),
                ("function", None),
            ],
        );
        for l in sr.lines.iter().take(16) {
            lt.push(vec![
                Cell::num(l.pct, 1),
                Cell::text(&l.file),
                Cell::num(f64::from(l.line), 0),
                Cell::text(&l.function),
            ]);
        }
        s.table(lt);
    }
}

/// One `pmu.comparison`: the metrics before and after, then the counts.
fn comparison(s: &mut Section, b: usize, key: &str, c: &Comparison) {
    let mut t = table(
        &anchors::id(b, &format!("pmu-comparison-{key}")),
        &format!("{} against {}", c.new, c.base),
        &[
            ("metric", None),
            ("unit", None),
            ("before", None),
            ("after", None),
            ("change", Some("%")),
            ("note", None),
        ],
    );
    for m in &c.metrics {
        t.push(vec![
            Cell::text(&m.name),
            Cell::text(&m.unit),
            opt(m.base, 4, "not available"),
            opt(m.new, 4, "not available"),
            opt(m.change_pct, 1, "not comparable"),
            Cell::text(m.note.clone().unwrap_or_default()),
        ]);
    }
    if let Some(n) = &c.note {
        t.notes.push(n.clone());
    }
    s.table(t);
    let mut ct = table(
        &anchors::id(b, &format!("pmu-comparison-counts-{key}")),
        "Counts",
        &[
            ("event", None),
            ("before", None),
            ("after", None),
            ("change", Some("%")),
        ],
    );
    for e in &c.counts {
        ct.push(vec![
            Cell::text(&e.name),
            opt(e.base, 0, "not counted"),
            opt(e.new, 0, "not counted"),
            opt(e.change_pct, 1, "not comparable"),
        ]);
    }
    s.table(ct);
}

/// The PMU sections of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let checks = l.records_of::<PmuCheck>();
    let profiles = l.records_of::<Profile>();
    let samples_of = l.records_of::<SampleReport>();
    let comparisons = l.records_of::<Comparison>();
    if checks.is_empty() && profiles.is_empty() && samples_of.is_empty() && comparisons.is_empty() {
        return Vec::new();
    }
    let mut s = Section::new(&anchors::pmu(b), &format!("Performance counters{of}"));
    for (_, c) in &checks {
        check(&mut s, b, c);
    }
    for (r, p) in &profiles {
        profile(&mut s, b, &r.key, p);
    }
    for (r, sr) in &samples_of {
        samples(&mut s, b, &r.key, sr);
    }
    for (r, c) in &comparisons {
        comparison(&mut s, b, &r.key, c);
    }
    vec![s]
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_records::pmu::NotComputable;

    #[test]
    fn coverage_is_said_once_per_fact() {
        let c = Coverage {
            hardware_asked: 30,
            hardware_counted: 1,
            unsupported: vec!["BR_RETIRED".into(), "L1D_CACHE".into()],
            untrusted: vec!["STALL_FRONTEND".into(), "STALL_BACKEND".into()],
            common_set_complete: Some(false),
            not_computable: vec![NotComputable {
                cause: "unsupported".into(),
                text: "2 metrics not computable: their events are not counted by this PMU (BR_RETIRED, L1D_CACHE)".into(),
                metrics: vec!["branch_pki".into(), "l1d_miss_rate".into()],
                events: vec!["BR_RETIRED".into(), "L1D_CACHE".into()],
            }],
            ..Default::default()
        };
        let lines = coverage_lines(&c);
        assert_eq!(
            lines,
            [
                "Not supported by this PMU: BR_RETIRED, L1D_CACHE.",
                "Not counted here (read 0 where hardware must count): STALL_FRONTEND, STALL_BACKEND.",
                "2 metrics not computable: their events are not counted by this PMU (BR_RETIRED, L1D_CACHE).",
            ]
        );
    }
}
