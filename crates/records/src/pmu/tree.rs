//! The decision tree's walk and verdict, as a profile records it (the walk itself is
//! `numalab_pmu::tree`).

use serde::{Deserialize, Serialize};

/// The stall share of one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideStall {
    /// "frontend" / "backend" (x86 top-down also "bad_speculation" / "retiring").
    pub side: String,
    /// The stall-share metric.
    pub metric: String,
    /// Its value: a ratio of cycles (stall accounting) or of pipeline slots (x86
    /// top-down level 1).
    pub stall_rate: Option<f64>,
    /// Why it has none.
    #[serde(default)]
    pub reason: Option<String>,
    /// Whether the comparison that made it dominant (or not) is within the multiplexing
    /// uncertainty: the notable threshold, or another side, lies in its range.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub within_uncertainty: bool,
}

/// One metric looked at on the way down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepMetric {
    /// Metric.
    pub name: String,
    /// Value.
    pub value: Option<f64>,
    /// Unit.
    pub unit: String,
    /// At or above its rule-of-thumb threshold.
    pub notable: bool,
    /// Why there is no value.
    #[serde(default)]
    pub reason: Option<String>,
    /// Whether its threshold lies in its multiplexing range (`notable` could go either
    /// way).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub within_uncertainty: bool,
}

/// One group looked at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeStep {
    /// Group name.
    pub group: String,
    /// Group title.
    pub title: String,
    /// Its metrics.
    pub metrics: Vec<StepMetric>,
}

/// A notable metric, as a phrase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Metric.
    pub metric: String,
    /// Group.
    pub group: String,
    /// Verdict label ("memory bound").
    pub label: String,
    /// Value.
    pub value: f64,
    /// The threshold it reached.
    pub threshold: f64,
    /// value / threshold.
    pub severity: f64,
    /// Headline order within its label (1 first), from the data file.
    pub rank: u32,
    /// The phrase ("99% of last-level reads miss").
    pub text: String,
    /// The vendor's description of the metric, for nodes of a vendor top-down hierarchy
    /// (Intel TMA, AMD pipeline utilization); none for numalab's own metrics.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether the threshold it reached lies in its multiplexing range (the finding
    /// stands, but is within the uncertainty).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub within_uncertainty: bool,
}

/// The walk and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeReport {
    /// Instructions per cycle.
    pub ipc: Option<f64>,
    /// Stall shares.
    pub sides: Vec<SideStall>,
    /// The dominant side, if one dominates.
    pub dominant: Option<String>,
    /// Groups looked at, in order.
    pub steps: Vec<TreeStep>,
    /// Notable metrics, most severe first.
    pub findings: Vec<Finding>,
    /// The verdict in words.
    pub verdict: String,
    /// Events worth sampling next (`--sample EVENT`).
    pub sample_next: Vec<String>,
    /// The vendor's own top-level breakdown when it differs from cycle accounting and
    /// was measured (Arm's slot-based topdown level 1, every Neoverse core but N1), as
    /// (metric, value, unit).
    #[serde(default)]
    pub vendor_topdown: Vec<(String, f64, String)>,
    /// Why there is no verdict (then `verdict` starts with "no verdict"); None when the
    /// tree reached one.
    #[serde(default)]
    pub no_verdict: Option<String>,
    /// Parts of the tree that could not be evaluated (no metric of them computable).
    #[serde(default)]
    pub unevaluated: Vec<Unevaluated>,
}

/// A part of the tree that could not be evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unevaluated {
    /// "cycle accounting", or a group name ("branch", "l1d").
    pub part: String,
    /// Why (the metrics' shared reason, or their names).
    pub reason: String,
}

impl TreeReport {
    /// Replaces the verdict by "no verdict: {why}" (nothing is concluded from partial
    /// or untrusted data); findings are dropped from the verdict.
    pub fn refuse(&mut self, why: &str) {
        self.verdict = format!("no verdict: {why}");
        self.no_verdict = Some(why.to_string());
        self.dominant = None;
    }
}
