//! The vendor's invariants over a profile's metrics, as checked (`numalab_pmu::consistency`
//! checks them): top-down level 1 sums to 100%, children sum to their parent, reads and
//! writes make the total, shares stay within [0, 100%], CPI no lower than the pipeline
//! allows. A violated rule is reported with its figures; the values are never adjusted.

use serde::{Deserialize, Serialize};

/// Whether a rule held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleStatus {
    /// Every input had a value and the rule held within its tolerance.
    Held,
    /// Every input had a value and the rule did not hold.
    Violated,
    /// An input had no value (not selected, not counted): nothing to check.
    NotChecked,
}

/// One input of a rule and its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleFigure {
    /// Metric (or uncore figure).
    pub name: String,
    /// Its value (None: not available).
    pub value: Option<f64>,
}

/// One rule checked against one profile (or one uncore controller or socket).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleCheck {
    /// Rule id from the rules file (`intel-tma-level1`).
    pub rule: String,
    /// What the rule says ("top-down level 1 sums to 100%").
    pub title: String,
    /// Held, violated or not checked.
    pub status: RuleStatus,
    /// The inputs and their values.
    pub figures: Vec<RuleFigure>,
    /// The figure the rule compares (the sum, the value), when checked.
    #[serde(default)]
    pub actual: Option<f64>,
    /// What it should be, in words ("100 ± 5", "within [0, 100]", "at least 0.083").
    pub expected: String,
    /// The finding in one sentence (violated), what held (held), or why the rule could
    /// not be checked.
    pub text: String,
    /// The likely cause of a violation (multiplexing, separate runs), with the remedy.
    #[serde(default)]
    pub cause: Option<String>,
    /// Where the rule comes from (a vendor document, or "numalab's own: why").
    pub source: String,
}

impl RuleCheck {
    /// Whether the rule was violated.
    pub fn violated(&self) -> bool {
        self.status == RuleStatus::Violated
    }
}

/// How a profile's rules fared, for printing: one line per violated rule (its finding
/// and likely cause), then one line counting held, violated and unchecked rules; nothing
/// when no rule applies.
pub fn consistency_lines(checks: &[RuleCheck]) -> Vec<String> {
    let count = |s: RuleStatus| checks.iter().filter(|c| c.status == s).count();
    let mut out: Vec<String> = checks
        .iter()
        .filter(|c| c.violated())
        .map(|c| match &c.cause {
            Some(why) => format!("{}: {why}.", c.text),
            None => format!("{}.", c.text),
        })
        .collect();
    if !checks.is_empty() {
        out.push(format!(
            "Consistency rules: {} held, {} violated, {} not checked (inputs without values).",
            count(RuleStatus::Held),
            count(RuleStatus::Violated),
            count(RuleStatus::NotChecked)
        ));
    }
    out
}
