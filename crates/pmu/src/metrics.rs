//! Event values and the metrics derived from them, as they appear in records.
//!
//! Counting, importing and comparing all end in the same two lists: events (each with
//! its value, how much of the run it was actually counted, and whether the PMU supports
//! it at all) and metrics (each a value or "not available" with the reason). Keeping
//! one representation means one report, one JSON schema and one comparison for live
//! runs and imported `perf stat` files alike. A metric whose inputs carry a multiplexing
//! uncertainty (`mux`) also gets its range, the formula evaluated over intervals.

use crate::catalog::{Catalog, MetricDef};
use crate::expr::{Input, Interval, NotAvailable};

// The record types and their formatting live in numalab-records.
pub use numalab_records::pmu::{
    fmt_count, fmt_metric, fmt_pct, fmt_sig, EventState, EventValue, MetricInterval, MetricValue,
};

/// What the expression engine sees of an event (an event value is a record of
/// `numalab-records`, so this is a function rather than a method).
pub fn input(e: &EventValue) -> Input {
    match (e.state, e.value) {
        (EventState::Counted, Some(v)) => Input::Value(v),
        _ => Input::Missing(why_missing(e)),
    }
}

fn why_missing(e: &EventValue) -> String {
    let what = match e.state {
        EventState::Counted => "without a value",
        EventState::NotSupported => "not supported by this PMU",
        EventState::NotCounted => "never scheduled on a counter",
        EventState::Denied => "denied (perf_event_paranoid)",
        EventState::Failed => "could not be counted",
        EventState::Untrusted => "not counted here (read 0)",
    };
    // The short words only: the long reason is in the event's record and is said
    // once per event, not once per metric. Errors keep their detail.
    match (&e.reason, e.state) {
        (Some(r), EventState::Denied | EventState::Failed) if !r.is_empty() => {
            format!("{what} ({r})")
        }
        _ => what.to_string(),
    }
}

/// Looks events up by name for the expression engine.
pub fn lookup<'a>(events: &'a [EventValue], absent: &'a str) -> impl Fn(&str) -> Input + 'a {
    move |name: &str| match events.iter().find(|e| e.name == name) {
        Some(e) => input(e),
        None => Input::Missing(absent.to_string()),
    }
}

/// Evaluates one metric with `input`.
pub fn evaluate(def: &MetricDef, input: &dyn Fn(&str) -> Input) -> MetricValue {
    let (value, reason) = match def.expr.eval(input) {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(reason_text(&e))),
    };
    MetricValue {
        name: def.name.clone(),
        title: def.title.clone(),
        unit: def.unit.clone(),
        group: def.group.clone(),
        formula: def.formula.clone(),
        origin: def.origin,
        value,
        reason,
        events: def.events(),
        min_running_fraction: None,
        across_runs: false,
        interval: None,
    }
}

fn reason_text(e: &NotAvailable) -> String {
    e.to_string()
}

/// Evaluates the named metrics from one table of events (imports, comparisons).
pub fn evaluate_all(
    catalog: &Catalog,
    names: &[String],
    events: &[EventValue],
) -> Vec<MetricValue> {
    let look = lookup(events, "not counted");
    names
        .iter()
        .filter_map(|n| catalog.metric(n))
        .map(|def| {
            let mut m = evaluate(def, &look);
            m.min_running_fraction = m
                .events
                .iter()
                .filter_map(|e| events.iter().find(|v| &v.name == e))
                .filter_map(|v| v.running_fraction)
                .reduce(f64::min);
            set_interval(&mut m, def, events);
            m
        })
        .collect()
}

/// The interval a value is known to lie in (typical or worst), None when it is exact.
pub fn range(v: &EventValue, worst: bool) -> Option<Interval> {
    let u = v.uncertainty.as_ref()?;
    let x = v.value?;
    Some(Interval::relative(
        x,
        if worst { u.worst } else { u.typical },
    ))
}

/// A metric's range over `events` (the table it was evaluated from); None when no
/// input carries an uncertainty or the formula has no value.
pub fn metric_interval(def: &MetricDef, events: &[EventValue]) -> Option<MetricInterval> {
    let find = |n: &str| events.iter().find(|e| e.name == n);
    if !def
        .events()
        .iter()
        .any(|n| find(n).is_some_and(|e| e.uncertainty.is_some()))
    {
        return None;
    }
    let look = lookup(events, "not counted");
    let over = |worst: bool| {
        def.expr
            .eval_interval(&look, &|n| find(n).and_then(|e| range(e, worst)))
            .ok()
    };
    let (t, w) = (over(false)?, over(true)?);
    let fin = |x: f64| x.is_finite().then_some(x);
    Some(MetricInterval {
        low: fin(t.lo),
        high: fin(t.hi),
        worst_low: fin(w.lo),
        worst_high: fin(w.hi),
    })
}

/// Sets each metric's range from the events it was evaluated from.
pub fn set_interval(m: &mut MetricValue, def: &MetricDef, events: &[EventValue]) {
    m.interval = if m.value.is_some() {
        metric_interval(def, events)
    } else {
        None
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_input_names_itself() {
        let c = crate::catalog::load("neoverse-n1").unwrap();
        let events = vec![
            EventValue {
                name: "INST_RETIRED".into(),
                code: Some("r8".into()),
                value: Some(1e6),
                raw_count: Some(1_000_000),
                running_fraction: Some(0.5),
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
            },
            EventValue {
                name: "CPU_CYCLES".into(),
                code: Some("r11".into()),
                value: None,
                raw_count: None,
                running_fraction: None,
                time_enabled_ns: None,
                time_running_ns: None,
                supported: false,
                state: EventState::NotSupported,
                reason: None,
                unit: None,
                software: false,
                run: None,
                advertised: None,
                uncertainty: None,
            },
        ];
        let m = evaluate_all(&c, &["ipc".into(), "l1d_mpki".into()], &events);
        assert_eq!(m[0].value, None);
        assert_eq!(
            m[0].reason.as_deref(),
            Some("missing input: CPU_CYCLES not supported by this PMU")
        );
        assert_eq!(
            m[1].reason.as_deref(),
            Some("missing input: L1D_CACHE_REFILL not counted")
        );
        assert_eq!(m[1].min_running_fraction, Some(0.5));
    }
}
