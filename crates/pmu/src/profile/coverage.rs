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

pub(super) fn multiplex_warnings(profile: &Profile, warnings: &mut Vec<Warning>) {
    let partial: Vec<String> = profile
        .events
        .iter()
        .filter(|e| e.state == EventState::Counted)
        .filter_map(|e| {
            let f = e.running_fraction?;
            (f < 0.999).then(|| format!("{} {:.0}%", e.name, f * 100.0))
        })
        .collect();
    if !partial.is_empty() {
        warnings.push(
            Warning::new(
                "pmu.multiplexed",
                format!(
                    "the kernel multiplexed the counters: only part of the run was counted for {} (values are scaled up)",
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
