//! Event values and the metrics derived from them, as they appear in records.
//!
//! Counting, importing and comparing all end in the same two lists: events (each with
//! its value, how much of the run it was actually counted, and whether the PMU supports
//! it at all) and metrics (each a value or "not available" with the reason). Keeping
//! one representation means one report, one JSON schema and one comparison for live
//! runs and imported `perf stat` files alike.

use super::advertised::Advertised;
use super::catalog::MetricOrigin;
use serde::{Deserialize, Serialize};

/// What became of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventState {
    /// Counted (possibly only part of the time: see `running_fraction`).
    Counted,
    /// The PMU or kernel does not implement it.
    NotSupported,
    /// Opened but never scheduled on a counter (time_running = 0).
    NotCounted,
    /// Permission denied (perf_event_paranoid).
    Denied,
    /// Another error.
    Failed,
    /// Counted, but read exactly 0 where real hardware must count (an emulated or
    /// virtualised PMU that accepts the event and never increments it): not counted
    /// here, never a zero (`trust`).
    Untrusted,
}

/// One event's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventValue {
    /// Canonical name (catalog name, or "r1b" for an unnamed raw code).
    pub name: String,
    /// Raw code as perf writes it ("r11"), for raw-coded events.
    #[serde(default)]
    pub code: Option<String>,
    /// The value, scaled by time_enabled / time_running when the kernel multiplexed.
    pub value: Option<f64>,
    /// The count as read, before scaling.
    #[serde(default)]
    pub raw_count: Option<u64>,
    /// time_running / time_enabled: the share of the run this event was on a counter.
    pub running_fraction: Option<f64>,
    /// Time the event was enabled, ns.
    #[serde(default)]
    pub time_enabled_ns: Option<u64>,
    /// Time the event was on a counter, ns.
    #[serde(default)]
    pub time_running_ns: Option<u64>,
    /// Whether the PMU supports it.
    pub supported: bool,
    /// What became of it.
    pub state: EventState,
    /// Why it has no value, when it has none.
    #[serde(default)]
    pub reason: Option<String>,
    /// Unit, when not a plain count ("ns").
    #[serde(default)]
    pub unit: Option<String>,
    /// Whether the kernel counts it (no PMU counter needed).
    #[serde(default)]
    pub software: bool,
    /// `--exact`: the run (0-based) it was counted in.
    #[serde(default)]
    pub run: Option<usize>,
    /// Live Arm runs: how the event stands against the core PMU's sysfs list
    /// (`listed`, `on_trust`, `not_listed`); absent when nothing was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertised: Option<Advertised>,
    /// How far the scaled value may be from the count over the whole run, when it was
    /// counted only part of the time (multiplexing); absent when counted all the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<Uncertainty>,
}

/// The multiplexing uncertainty of one scaled value, as relative half-widths
/// (0.1: the value give or take 10%). The model behind the numbers is numalab's own
/// (`numalab_pmu::mux`, docs/profile.md "Multiplexing and uncertainty").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Uncertainty {
    /// Typical: one standard deviation of the model over the run's rotations, or the
    /// run's own evidence when that is larger (`basis`).
    pub typical: f64,
    /// Worst case of the model: what the value is when the slices not counted ran at 0
    /// or at twice the rate of the slices counted.
    pub worst: f64,
    /// `model` (from the running fraction and the rotations), `fraction only` (the
    /// rotations are not known: typical is the worst case), or `intervals` (interval
    /// mode: the sum of the intervals differs from the whole run by more than the
    /// model's typical, and that difference is taken).
    pub basis: String,
}

/// A metric's range when its inputs carry multiplexing uncertainty: the formula
/// evaluated over intervals (`numalab_expr::Interval`). A bound is absent where there
/// is none (a denominator's interval reaches 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricInterval {
    /// Lowest value with every input at its typical range.
    pub low: Option<f64>,
    /// Highest value with every input at its typical range.
    pub high: Option<f64>,
    /// Lowest value with every input at its worst-case range.
    pub worst_low: Option<f64>,
    /// Highest value with every input at its worst-case range.
    pub worst_high: Option<f64>,
}

impl MetricInterval {
    /// Whether `x` lies in the typical range (an absent bound reaches infinitely far).
    pub fn contains(&self, x: f64) -> bool {
        self.low.is_none_or(|l| l <= x) && self.high.is_none_or(|h| x <= h)
    }
}

/// One metric's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    /// Key.
    pub name: String,
    /// What it means.
    pub title: String,
    /// Unit ("ratio" is shown as a percentage).
    pub unit: String,
    /// Metric group.
    pub group: String,
    /// Formula as written in the data file.
    pub formula: String,
    /// Where the metric is defined.
    pub origin: MetricOrigin,
    /// The value, or None.
    pub value: Option<f64>,
    /// Why there is no value.
    #[serde(default)]
    pub reason: Option<String>,
    /// The events it uses.
    pub events: Vec<String>,
    /// The smallest running fraction among its events (multiplexing).
    #[serde(default)]
    pub min_running_fraction: Option<f64>,
    /// `--exact`: its events came from different runs (normalised by instructions).
    #[serde(default)]
    pub across_runs: bool,
    /// Its range from the multiplexing uncertainty of its inputs; absent when every
    /// input was counted all the time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<MetricInterval>,
}

/// A number with about three significant digits, no exponent: 106, 12.4, 0.203.
pub fn fmt_sig(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.2e}")
    }
}

/// A percentage from a ratio: 0.834 -> "83.4%", 0.99 -> "99%".
pub fn fmt_pct(ratio: f64) -> String {
    let p = ratio * 100.0;
    if p.abs() >= 10.0 || p == 0.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// A count with thousands separators: 1234567 -> "1,234,567".
pub fn fmt_count(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let r = v.round();
    if (v - r).abs() > 1e-9 && v.abs() < 1000.0 {
        return fmt_sig(v);
    }
    let s = format!("{:.0}", r.abs());
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if r < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

/// A metric value with its unit, for tables.
pub fn fmt_metric(value: f64, unit: &str) -> String {
    match unit {
        "ratio" => fmt_pct(value),
        u if u.starts_with("percent") => fmt_pct(value / 100.0),
        _ => fmt_sig(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_records_without_uncertainty_still_read() {
        let e: EventValue = serde_json::from_str(
            r#"{"name":"CPU_CYCLES","value":1.0,"running_fraction":0.5,"supported":true,"state":"counted"}"#,
        )
        .unwrap();
        assert_eq!(e.uncertainty, None);
        let m: MetricValue = serde_json::from_str(
            r#"{"name":"ipc","title":"IPC","unit":"ratio","group":"g","formula":"A / B","origin":"methodology","value":0.5,"events":["A","B"]}"#,
        )
        .unwrap();
        assert_eq!(m.interval, None);
        // An absent bound reaches infinitely far.
        let r = MetricInterval {
            low: Some(0.2),
            high: None,
            worst_low: None,
            worst_high: None,
        };
        assert!(r.contains(1e9) && !r.contains(0.1));
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_sig(106.3), "106");
        assert_eq!(fmt_sig(12.44), "12.4");
        assert_eq!(fmt_sig(0.2034), "0.203");
        assert_eq!(fmt_sig(1.5), "1.50");
        assert_eq!(fmt_pct(0.834), "83%");
        assert_eq!(fmt_pct(0.0512), "5.1%");
        assert_eq!(fmt_count(1234567.0), "1,234,567");
        assert_eq!(fmt_count(-1000.0), "-1,000");
        assert_eq!(fmt_count(999.0), "999");
        assert_eq!(fmt_metric(0.99, "ratio"), "99%");
        assert_eq!(fmt_metric(12.5, "percent of cycles"), "12%");
        assert_eq!(fmt_metric(7.69, "percent"), "7.7%");
        assert_eq!(fmt_metric(106.0, "MPKI"), "106");
    }
}
