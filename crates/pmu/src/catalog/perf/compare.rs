//! The comparison of a shipped catalog's formulas with perf's of the same name: both
//! evaluated on one set of counts, each difference a finding.

use super::*;

/// One metric whose shipped and perf formulas were evaluated on the same counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormulaCheck {
    /// The metric's name (the same in both).
    pub metric: String,
    /// numalab's shipped formula.
    pub shipped_formula: String,
    /// perf's formula (its ScaleUnit applied).
    pub perf_formula: String,
    /// numalab's value, or why there is none.
    pub shipped: Result<f64, NotAvailable>,
    /// perf's value, or why there is none.
    pub perf: Result<f64, NotAvailable>,
    /// Whether the values agree (relative difference at most 1e-9); None when either
    /// has no value.
    pub agree: Option<bool>,
}

/// The comparison of a shipped catalog's formulas with perf's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerfComparison {
    /// "perf 6.8.12".
    pub perf: String,
    /// The shipped catalog's id.
    pub catalog: String,
    /// Every metric both have.
    pub metrics: Vec<FormulaCheck>,
}

impl PerfComparison {
    /// The metrics whose values differ.
    pub fn differences(&self) -> Vec<&FormulaCheck> {
        self.metrics
            .iter()
            .filter(|m| m.agree == Some(false))
            .collect()
    }

    /// One finding per difference: "metric ipc: numalab 2 (INSTRUCTIONS / CYCLES), perf
    /// 2.5 (...)".
    pub fn findings(&self) -> Vec<String> {
        self.differences()
            .iter()
            .map(|d| {
                format!(
                    "metric {}: numalab's formula gives {} ({}), {}'s gives {} ({}) on the same counts",
                    d.metric,
                    d.shipped.as_ref().map_or(f64::NAN, |v| *v),
                    d.shipped_formula,
                    self.perf,
                    d.perf.as_ref().map_or(f64::NAN, |v| *v),
                    d.perf_formula
                )
            })
            .collect()
    }
}

/// The value of `name` in `catalog` from `counts` (by event name, each count's name
/// resolved in the same catalog, so aliases and codes match).
fn count_of(catalog: &Catalog, counts: &BTreeMap<String, f64>, name: &str) -> Input {
    let Some(want) = catalog.event(name) else {
        return Input::Missing(format!("not an event of {}", catalog.id));
    };
    counts
        .iter()
        .find(|(k, _)| {
            catalog
                .resolve_event(k)
                .is_ok_and(|r| r.name == want.name || r.encoding == want.encoding)
        })
        .map_or_else(
            || Input::Missing("not in the counts".into()),
            |(_, v)| Input::Value(*v),
        )
}

/// Evaluates every metric that `shipped` and `perf` both name on the same `counts`
/// (event name to value) and says where they differ.
pub fn compare(
    shipped: &Catalog,
    perf: &PerfCatalog,
    counts: &BTreeMap<String, f64>,
) -> PerfComparison {
    let perf_metric = |n: &str| {
        perf.catalog
            .metrics
            .iter()
            .chain(&perf.catalog.shadowed)
            .find(|m| m.name == n && m.origin == MetricOrigin::Vendor)
    };
    let mut metrics = Vec::new();
    for name in &perf.metrics {
        let (Some(s), Some(p)) = (shipped.metric(name), perf_metric(name)) else {
            continue;
        };
        let sv = s.expr.eval(&|v| count_of(shipped, counts, v));
        let pv = p.expr.eval(&|v| count_of(&perf.catalog, counts, v));
        let agree = match (&sv, &pv) {
            (Ok(a), Ok(b)) => Some((a - b).abs() <= 1e-9 * a.abs().max(b.abs())),
            _ => None,
        };
        metrics.push(FormulaCheck {
            metric: name.clone(),
            shipped_formula: s.formula.clone(),
            perf_formula: p.formula.clone(),
            shipped: sv,
            perf: pv,
            agree,
        });
    }
    PerfComparison {
        perf: format!("perf {}", perf.version),
        catalog: shipped.id.clone(),
        metrics,
    }
}
