//! Before/after: two profiles compared metric by metric and count by count, as
//! `numalab_pmu::compare` records it (with the MPKI trap named when instruction counts
//! differ).

use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// One metric, before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricChange {
    /// Metric.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Baseline value.
    pub base: Option<f64>,
    /// New value.
    pub new: Option<f64>,
    /// (new - base) / base, percent.
    pub change_pct: Option<f64>,
    /// False for per-instruction metrics when instruction counts differ.
    pub comparable: bool,
    /// Why there is no change, or why it is not comparable.
    #[serde(default)]
    pub note: Option<String>,
}

/// One event count, before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountChange {
    /// Event.
    pub name: String,
    /// Baseline count.
    pub base: Option<f64>,
    /// New count.
    pub new: Option<f64>,
    /// (new - base) / base, percent.
    pub change_pct: Option<f64>,
}

/// A comparison (`pmu.comparison`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Where the baseline came from.
    pub base: String,
    /// Where the new profile came from.
    pub new: String,
    /// The instruction event used ("INST_RETIRED", "INSTRUCTIONS").
    #[serde(default)]
    pub instructions_event: Option<String>,
    /// Change of the instruction count, percent.
    #[serde(default)]
    pub instructions_change_pct: Option<f64>,
    /// Whether per-instruction metrics (MPKI) are comparable.
    pub mpki_comparable: bool,
    /// The note about MPKI, when not comparable.
    #[serde(default)]
    pub note: Option<String>,
    /// Metrics.
    pub metrics: Vec<MetricChange>,
    /// Raw counts.
    pub counts: Vec<CountChange>,
}

impl RecordKind for Comparison {
    const KIND: &'static str = "pmu.comparison";
}
