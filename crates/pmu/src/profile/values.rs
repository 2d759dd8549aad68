//! From counter readings to event values: per run and group, the wall clock, the
//! median of software events over runs, one value per event, run-to-run spreads, and
//! the metrics and tree of a live profile.

use super::*;

pub(super) fn values_of(
    events: &[EventRef],
    reading: Option<&Result<count::GroupReading, String>>,
    statuses: Option<&Vec<EventStatus>>,
    no_hw_reason: &str,
    run: usize,
) -> Vec<EventValue> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut v = EventValue {
                name: e.name.clone(),
                code: match e.encoding {
                    catalog::Encoding::Raw(c) => Some(format!("r{c:x}")),
                    _ => None,
                },
                value: None,
                raw_count: None,
                running_fraction: None,
                time_enabled_ns: None,
                time_running_ns: None,
                supported: false,
                state: EventState::NotSupported,
                reason: Some(no_hw_reason.to_string()),
                unit: if matches!(e.encoding, catalog::Encoding::Software(0 | 1)) {
                    Some("ns".into())
                } else {
                    None
                },
                software: e.encoding.is_software(),
                run: Some(run),
                advertised: None,
                uncertainty: None,
            };
            let (Some(reading), Some(st)) = (reading, statuses) else {
                return v;
            };
            let (state, reason) = state_of(&st[i]);
            v.state = state;
            v.reason = reason;
            v.supported = state != EventState::NotSupported;
            if state != EventState::Counted {
                return v;
            }
            match reading {
                Err(why) => {
                    v.state = EventState::Failed;
                    v.reason = Some(why.clone());
                }
                Ok(r) => {
                    v.time_enabled_ns = Some(r.time_enabled_ns);
                    v.time_running_ns = Some(r.time_running_ns);
                    let count = r.counts.get(i).copied().flatten();
                    v.raw_count = count;
                    if r.time_running_ns == 0 {
                        if r.time_enabled_ns == 0 && count == Some(0) {
                            // The child never ran on a CPU with the event enabled
                            // (e.g. it exited at once): a true zero.
                            v.value = Some(0.0);
                            v.running_fraction = Some(1.0);
                        } else {
                            v.state = EventState::NotCounted;
                            v.reason = Some("the kernel never scheduled its group on the counters (too many events at once, or a counter taken by the NMI watchdog)".into());
                        }
                    } else {
                        let f = r.time_running_ns as f64 / r.time_enabled_ns.max(1) as f64;
                        v.running_fraction = Some(f.min(1.0));
                        v.value = count.map(|c| c as f64 / f.min(1.0));
                    }
                }
            }
            v
        })
        .collect()
}

pub(super) fn group_record(
    id: usize,
    g: &count::PlanGroup,
    reading: Option<&Result<count::GroupReading, String>>,
    statuses: Option<&Vec<EventStatus>>,
    no_hw_reason: &str,
    run: usize,
) -> GroupRecord {
    let values = values_of(&g.events, reading, statuses, no_hw_reason, run);
    let (te, tr) = match reading {
        Some(Ok(r)) => (Some(r.time_enabled_ns), Some(r.time_running_ns)),
        _ => (None, None),
    };
    GroupRecord {
        id,
        run,
        metrics: g.metrics.clone(),
        time_enabled_ns: te,
        time_running_ns: tr,
        running_fraction: match (te, tr) {
            (Some(e), Some(r)) if e > 0 => Some((r as f64 / e as f64).min(1.0)),
            _ => None,
        },
        values,
    }
}

pub(super) fn wall_value(outcome: &Outcome, run: usize) -> EventValue {
    EventValue {
        name: "DURATION_TIME".into(),
        code: None,
        value: Some(outcome.wall_ns as f64),
        raw_count: Some(outcome.wall_ns),
        running_fraction: Some(1.0),
        time_enabled_ns: Some(outcome.wall_ns),
        time_running_ns: Some(outcome.wall_ns),
        supported: true,
        state: EventState::Counted,
        reason: None,
        unit: Some("ns".into()),
        software: true,
        run: Some(run),
        advertised: None,
        uncertainty: None,
    }
}

pub(super) fn median_software(runs: &[Vec<EventValue>]) -> Vec<EventValue> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .map(|e| {
            let vals: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.iter().find(|x| x.name == e.name))
                .filter_map(|x| x.value)
                .collect();
            let mut out = e.clone();
            if runs.len() > 1 {
                out.run = None;
                out.value = numalab_stats::Summary::of(&vals).map(|s| s.median);
            }
            out
        })
        .collect()
}

/// One value per event: software events, then for each hardware event the value from
/// the group with the best coverage (highest running fraction).
pub(super) fn summarize_events(groups: &[GroupRecord], software: &[EventValue]) -> Vec<EventValue> {
    let mut out: Vec<EventValue> = Vec::new();
    for g in groups {
        for v in &g.values {
            match out.iter_mut().find(|x| x.name == v.name) {
                None => out.push(v.clone()),
                Some(x) => {
                    let better = match (x.state, v.state) {
                        (EventState::Counted, EventState::Counted) => {
                            v.running_fraction.unwrap_or(0.0) > x.running_fraction.unwrap_or(0.0)
                        }
                        (_, EventState::Counted) => true,
                        _ => false,
                    };
                    if better {
                        *x = v.clone();
                    }
                }
            }
        }
    }
    out.extend(software.iter().cloned());
    out
}

pub(super) fn spreads(catalog: &Catalog, groups: &[GroupRecord]) -> Vec<Spread> {
    catalog
        .anchors()
        .iter()
        .filter_map(|a| {
            let vals: Vec<f64> = groups
                .iter()
                .filter_map(|g| g.values.iter().find(|v| v.name == *a))
                .filter_map(|v| v.value)
                .collect();
            let s = numalab_stats::Summary::of(&vals)?;
            (vals.len() >= 2).then(|| Spread {
                event: a.to_string(),
                runs: vals.len(),
                min: s.min,
                median: s.median,
                max: s.max,
                spread_pct: if s.median > 0.0 {
                    (s.max - s.min) / s.median * 100.0
                } else {
                    0.0
                },
            })
        })
        .collect()
}

/// Evaluates metrics from live groups: each metric from the group planned for it (one
/// time base); in `--exact` a metric whose events span runs is normalised by each
/// run's instructions.
pub(super) fn evaluate_live(
    catalog: &Catalog,
    names: &[String],
    profile: &Profile,
    exact: bool,
) -> Vec<MetricValue> {
    let software: Vec<&EventValue> = profile.events.iter().filter(|e| e.software).collect();
    let instr_name = catalog.anchors()[1];
    let instr_ref = profile
        .spread
        .iter()
        .find(|s| s.event == instr_name)
        .map(|s| s.median);
    names
        .iter()
        .filter_map(|n| catalog.metric(n))
        .map(|def| {
            let evs = def.events();
            let hw: Vec<&String> = evs
                .iter()
                .filter(|e| !software.iter().any(|s| &&s.name == e))
                .collect();
            // A group holding all its hardware events, preferring one planned for it.
            let home = profile
                .groups
                .iter()
                .filter(|g| hw.iter().all(|e| g.values.iter().any(|v| &&v.name == e)))
                .max_by_key(|g| g.metrics.contains(&def.name));
            let mut across = false;
            let table: Vec<EventValue> = match home {
                Some(g) if !hw.is_empty() => g.values.clone(),
                _ if exact && !hw.is_empty() => {
                    across = true;
                    hw.iter()
                        .filter_map(|e| {
                            let g = profile
                                .groups
                                .iter()
                                .find(|g| g.values.iter().any(|v| &&v.name == e))?;
                            let mut v = g.values.iter().find(|v| &&v.name == e)?.clone();
                            let run_instr = g
                                .values
                                .iter()
                                .find(|v| v.name == instr_name)
                                .and_then(|v| v.value);
                            if let (Some(x), Some(ri), Some(rr)) = (v.value, run_instr, instr_ref) {
                                if ri > 0.0 {
                                    v.value = Some(x * rr / ri);
                                }
                            }
                            Some(v)
                        })
                        .collect()
                }
                _ => profile.events.clone(),
            };
            let mut all = table;
            all.extend(software.iter().map(|s| (*s).clone()));
            let look = metrics::lookup(&all, "not counted");
            let mut m = metrics::evaluate(def, &look);
            m.across_runs = across;
            m.min_running_fraction = evs
                .iter()
                .filter_map(|e| all.iter().find(|v| &v.name == e))
                .filter_map(|v| v.running_fraction)
                .reduce(f64::min);
            metrics::set_interval(&mut m, def, &all);
            m
        })
        .collect()
}
