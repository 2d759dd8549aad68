//! What a profile could not count and why: the cause of each metric that is not
//! computable, the coverage summary, and the warnings about multiplexing and
//! unsupported events.

use super::*;

/// The cause of a metric's missing value, from its inputs' states (first match wins).
pub(super) fn missing_cause(
    m: &MetricValue,
    events: &[EventValue],
    no_hw: bool,
) -> (String, Vec<String>) {
    let by = |st: EventState| -> Vec<String> {
        m.events
            .iter()
            .filter(|n| events.iter().any(|e| &e.name == *n && e.state == st))
            .cloned()
            .collect()
    };
    if no_hw {
        return ("no_hardware".into(), by(EventState::NotSupported));
    }
    for (st, cause) in [
        (EventState::NotSupported, "unsupported"),
        (EventState::Untrusted, "untrusted"),
        (EventState::NotCounted, "not_scheduled"),
        (EventState::Denied, "denied"),
        (EventState::Failed, "failed"),
    ] {
        let evs = by(st);
        if !evs.is_empty() {
            return (cause.into(), evs);
        }
    }
    let absent: Vec<String> = m
        .events
        .iter()
        .filter(|n| !events.iter().any(|e| &e.name == *n))
        .cloned()
        .collect();
    if !absent.is_empty() {
        return ("not_counted".into(), absent);
    }
    ("other".into(), Vec::new())
}

/// Metrics without a value, grouped by cause, each group one line.
pub fn not_computable(
    metrics: &[MetricValue],
    events: &[EventValue],
    no_hw: bool,
) -> Vec<NotComputable> {
    let mut out: Vec<NotComputable> = Vec::new();
    for m in metrics.iter().filter(|m| m.value.is_none()) {
        let (cause, evs) = missing_cause(m, events, no_hw);
        // "other" causes (a zero denominator...) group by their own reason.
        let key = if cause == "other" {
            m.reason.clone().unwrap_or_else(|| "no value".into())
        } else {
            String::new()
        };
        let slot = out
            .iter_mut()
            .find(|g| g.cause == cause && (cause != "other" || g.text == key));
        let g = match slot {
            Some(g) => g,
            None => {
                out.push(NotComputable {
                    cause: cause.clone(),
                    text: key.clone(),
                    metrics: Vec::new(),
                    events: Vec::new(),
                });
                out.last_mut().expect("just pushed")
            }
        };
        g.metrics.push(m.name.clone());
        for e in evs {
            if !g.events.contains(&e) {
                g.events.push(e);
            }
        }
    }
    for g in &mut out {
        let n = g.metrics.len();
        let (head, their) = if n == 1 {
            ("1 metric not computable".to_string(), "its events")
        } else {
            (format!("{n} metrics not computable"), "their events")
        };
        let list = g.events.join(", ");
        g.text = match g.cause.as_str() {
            "no_hardware" => format!("{head}: no hardware PMU here"),
            "unsupported" => format!("{head}: {their} are not counted by this PMU ({list})"),
            "untrusted" => format!(
                "{head}: {their} read 0 where hardware must count, so they are not counted here ({list})"
            ),
            "not_scheduled" => {
                format!("{head}: {their} were never scheduled on a counter ({list})")
            }
            "denied" => format!("{head}: {their} were denied (perf_event_paranoid) ({list})"),
            "failed" => format!("{head}: {their} could not be counted ({list})"),
            "not_counted" => format!("{head}: {their} were not counted ({list})"),
            _ => format!("{head}: {}", g.text),
        };
    }
    out
}

/// The coverage of a profile (the core PMU fields are filled in by the caller).
pub(super) fn coverage_of(profile: &Profile) -> Coverage {
    let hw: Vec<&EventValue> = profile.events.iter().filter(|e| !e.software).collect();
    let named = |st: EventState| -> Vec<String> {
        hw.iter()
            .filter(|e| e.state == st)
            .map(|e| e.name.clone())
            .collect()
    };
    let no_hw = profile.hardware_pmu == Some(false);
    Coverage {
        hardware_asked: hw.len(),
        hardware_counted: hw.iter().filter(|e| e.state == EventState::Counted).count(),
        unsupported: named(EventState::NotSupported),
        untrusted: named(EventState::Untrusted),
        not_scheduled: named(EventState::NotCounted),
        denied_or_failed: hw
            .iter()
            .filter(|e| matches!(e.state, EventState::Denied | EventState::Failed))
            .map(|e| e.name.clone())
            .collect(),
        on_trust: hw
            .iter()
            .filter(|e| e.state == EventState::Counted && e.advertised == Some(Advertised::OnTrust))
            .map(|e| e.name.clone())
            .collect(),
        not_computable: not_computable(&profile.metrics, &profile.events, no_hw),
        ..Default::default()
    }
}

pub(super) fn state_of(s: &EventStatus) -> (EventState, Option<String>) {
    match s {
        EventStatus::Works => (EventState::Counted, None),
        EventStatus::NotSupported(d) => (EventState::NotSupported, Some(d.clone())),
        EventStatus::Denied(d) => (EventState::Denied, Some(d.clone())),
        EventStatus::Failed(d) => (EventState::Failed, Some(d.clone())),
    }
}

/// `pmu.multiplexed` when the kernel counted some events for part of the run only: the
/// events, least counted first ("cycles only 40%"), so that the first share is the
/// worst (profiles of many runs or CPUs fold by it, [`numalab_schema::fold`]).
pub(super) fn multiplex_warnings(profile: &Profile, warnings: &mut Vec<Warning>) {
    let mut partial: Vec<(f64, &str)> = profile
        .events
        .iter()
        .filter(|e| e.state == EventState::Counted)
        .filter_map(|e| {
            let f = e.running_fraction?;
            (f < 0.999).then_some((f, e.name.as_str()))
        })
        .collect();
    partial.sort_by(|a, b| a.0.total_cmp(&b.0));
    let partial: Vec<String> = partial
        .iter()
        .map(|(f, name)| format!("{name} only {:.0}%", f * 100.0))
        .collect();
    if !partial.is_empty() {
        warnings.push(
            Warning::new(
                "pmu.multiplexed",
                format!(
                    "the kernel multiplexed the counters, so part of the run was not counted (values are scaled up): {} of the run",
                    partial.join(", ")
                ),
            )
            .with_remedy("use --exact for short runs and hot loops"),
        );
    }
}

pub(super) fn unsupported_warning(profile: &Profile, hardware: bool, warnings: &mut Vec<Warning>) {
    if !hardware {
        return; // one line (pmu.no_hardware) says it all
    }
    let names: Vec<&str> = profile
        .events
        .iter()
        .filter(|e| e.state == EventState::NotSupported)
        .map(|e| e.name.as_str())
        .collect();
    if !names.is_empty() {
        warnings.push(Warning::new(
            "pmu.unsupported",
            format!(
                "not supported by this PMU (reported as not available, not 0): {}",
                names.join(", ")
            ),
        ));
    }
    let untrusted: Vec<&str> = profile
        .events
        .iter()
        .filter(|e| e.state == EventState::Untrusted)
        .map(|e| e.name.as_str())
        .collect();
    if !untrusted.is_empty() {
        warnings.push(Warning::new(
            "pmu.untrusted",
            format!(
                "read 0 where real hardware must count, so not counted here (kept in the record, left out of every metric and the verdict): {}",
                untrusted.join(", ")
            ),
        ));
    }
    let never: Vec<&str> = profile
        .events
        .iter()
        .filter(|e| e.state == EventState::NotCounted)
        .map(|e| e.name.as_str())
        .collect();
    if !never.is_empty() {
        warnings.push(
            Warning::new(
                "pmu.not_counted",
                format!("never scheduled on a counter: {}", never.join(", ")),
            )
            .with_remedy("use --exact, or free the counter the NMI watchdog holds (sysctl kernel.nmi_watchdog=0, as an administrator)"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Source;

    fn event(name: &str, running_fraction: f64) -> EventValue {
        EventValue {
            name: name.into(),
            code: None,
            value: Some(1e6),
            raw_count: Some((1e6 * running_fraction) as u64),
            running_fraction: Some(running_fraction),
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
        }
    }

    fn profile(events: Vec<EventValue>) -> Profile {
        Profile {
            cpu: crate::catalog::resolve_model("n1").unwrap(),
            source: Source {
                kind: "measured".into(),
                path: None,
                format: None,
            },
            mode: "count".into(),
            scope: None,
            hardware_pmu: None,
            counters: None,
            metric_set: "x".into(),
            command: vec![],
            metrics: vec![],
            events,
            groups: vec![],
            runs: vec![],
            spread: vec![],
            tree: None,
            consistency: Vec::new(),
            coverage: None,
            attach: None,
            interval_ms: None,
            timeline: vec![],
            uncore: None,
            uncore_note: None,
            multiplexing: None,
        }
    }

    /// Profiles of 24 runs of a sweep, each multiplexed by its own share: each warning
    /// names its least counted event first, and the folded line names the three runs
    /// counted least, least first, with the remedy.
    #[test]
    fn multiplexing_of_many_runs_folds_least_counted_first() {
        let mut fold = numalab_schema::fold::Fold::default();
        let mut shown = 0;
        for run in 0..24u32 {
            // The l2 event's share falls from 90% to 44%; run 9 is the worst at 12%.
            let l2 = if run == 9 {
                0.12
            } else {
                0.90 - 0.02 * run as f64
            };
            let p = profile(vec![
                event("cycles", 1.0),
                event("instructions", 0.95),
                event("l2d_cache", l2),
            ]);
            let mut w = Vec::new();
            multiplex_warnings(&p, &mut w);
            assert_eq!(w.len(), 1);
            if run == 0 {
                assert_eq!(
                    w[0].message,
                    "the kernel multiplexed the counters, so part of the run was not counted (values are scaled up): l2d_cache only 90%, instructions only 95% of the run"
                );
            }
            shown += usize::from(fold.note(&format!("harness/scale/t{run}"), &w[0]));
        }
        assert_eq!(shown, 1);
        let folded = fold.folded();
        assert_eq!(folded.len(), 1);
        let m = &folded[0].message;
        assert!(
            m.starts_with("pmu.multiplexed: 23 more records had this warning, each its own message (24 in all"),
            "{m}"
        );
        let at = |x: &str| m.find(x).unwrap_or_else(|| panic!("{x} in {m}"));
        assert!(at("t9: the kernel") < at("t23: the kernel"));
        assert!(at("t23: the kernel") < at("t22: the kernel"));
        assert!(m.contains("t23: the kernel multiplexed the counters, so part of the run was not counted (values are scaled up): l2d_cache only 44%"), "{m}");
        assert!(!m.contains("t21:"), "{m}");
        assert_eq!(
            folded[0].remedy.as_deref(),
            Some("use --exact for short runs and hot loops")
        );
    }
}
