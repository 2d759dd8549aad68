//! Consistency rules: each catalog's vendor invariants as data (`data/rules/*.toml`),
//! checked against a profile's metrics wherever they were counted.
//!
//! A rule says how metrics must relate: top-down level 1 sums to 100%, each level-2
//! group to its parent, reads and writes to all accesses, a share lies in [0, 100%], CPI
//! is no lower than the pipeline allows. Every rule names its source (a vendor document,
//! or "numalab's own" and why). A rule is attached to a catalog only when the catalog has
//! every metric it names, and checked only where every input has a value. A violated rule
//! is a finding with its figures and its likely cause (most often multiplexing); the
//! values are never normalised to make it hold.
//!
//! The same rules engine checks the uncore's per-socket figures (`data/rules/uncore.toml`,
//! [`check_uncore`]): Intel's local + remote DRAM read shares.

use crate::catalog::{Catalog, CatalogError, MetricOrigin};
use crate::expr::{self, Expr, Input};
use crate::metrics::MetricValue;
use numalab_records::pmu::GroupRecord;
use serde::Deserialize;

pub use numalab_records::pmu::{consistency_lines, RuleCheck, RuleFigure, RuleStatus};

/// The shipped rule files: (path under `data/`, text).
const FILES: &[(&str, &str)] = &[
    ("rules/intel.toml", include_str!("../data/rules/intel.toml")),
    ("rules/amd.toml", include_str!("../data/rules/amd.toml")),
    ("rules/arm.toml", include_str!("../data/rules/arm.toml")),
    (
        "rules/common.toml",
        include_str!("../data/rules/common.toml"),
    ),
    (
        "rules/uncore.toml",
        include_str!("../data/rules/uncore.toml"),
    ),
];

/// The `applies_to` of the rules over the uncore's per-socket figures.
pub const UNCORE_SCOPE: &str = "uncore";

/// What a rule asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// `terms` add up to `equals` or to the metric `equals_metric`.
    Sum,
    /// Every matching metric lies in [`min`, `max`].
    Range,
    /// `metric` is at least `bound`.
    AtLeast,
    /// `metric` is at most `bound`.
    AtMost,
}

/// One rule as written in a rules file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleDef {
    /// Unique id (`intel-tma-level1`).
    pub id: String,
    /// What the rule says.
    pub title: String,
    /// What it asserts.
    pub kind: RuleKind,
    /// Sum: the metrics added up.
    #[serde(default)]
    pub terms: Vec<String>,
    /// Sum: the value they add up to.
    #[serde(default)]
    pub equals: Option<f64>,
    /// Sum: the metric they add up to.
    #[serde(default)]
    pub equals_metric: Option<String>,
    /// Absolute tolerance, in the metrics' unit.
    #[serde(default)]
    pub tolerance: f64,
    /// Range: metrics with one of these units.
    #[serde(default)]
    pub units: Vec<String>,
    /// Range: only metrics of these groups (empty: any).
    #[serde(default)]
    pub groups: Vec<String>,
    /// Range: only metrics of these origins (empty: any).
    #[serde(default)]
    pub origins: Vec<MetricOrigin>,
    /// Range: lower bound.
    #[serde(default)]
    pub min: Option<f64>,
    /// Range: upper bound.
    #[serde(default)]
    pub max: Option<f64>,
    /// At least / at most: the metric.
    #[serde(default)]
    pub metric: Option<String>,
    /// At least / at most: the bound, a formula over `slots`.
    #[serde(default)]
    pub bound: Option<String>,
    /// Uncore rules: the device class whose figures the rule reads.
    #[serde(default)]
    pub class: Option<String>,
    /// Where the rule comes from.
    pub source: String,
}

/// Pipeline slots per cycle of a catalog that does not carry them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotsDef {
    /// Catalog id.
    pub catalog: String,
    /// Slots per cycle.
    pub slots: u32,
    /// Where the number comes from.
    pub source: String,
}

/// One rules file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesFile {
    /// Catalog id prefixes the file is for (`""`: every catalog).
    pub applies_to: Vec<String>,
    /// Its rules.
    #[serde(default)]
    pub rule: Vec<RuleDef>,
    /// Slots of catalogs that do not carry them.
    #[serde(default)]
    pub slots: Vec<SlotsDef>,
}

impl RulesFile {
    /// Whether the file holds the uncore's rules (not a catalog's).
    pub fn is_uncore(&self) -> bool {
        self.applies_to.iter().any(|p| p == UNCORE_SCOPE)
    }

    fn applies(&self, catalog: &str) -> bool {
        !self.is_uncore()
            && self
                .applies_to
                .iter()
                .any(|p| catalog.starts_with(p.as_str()))
    }
}

/// A rule attached to one catalog: the metrics it reads, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// The rule as written.
    pub def: RuleDef,
    /// The rules file it comes from.
    pub file: &'static str,
    /// Sum: the terms; range: the matching metrics; bound: the metric.
    pub inputs: Vec<String>,
    /// Sum against a metric: that metric.
    pub target: Option<String>,
    /// At least / at most: the bound's value for this catalog.
    pub bound: Option<f64>,
}

fn err(file: &str, message: impl Into<String>) -> CatalogError {
    CatalogError::Data {
        file: file.to_string(),
        message: message.into(),
    }
}

/// Every shipped rules file, parsed and checked (each rule has a source, the fields its
/// kind needs, a bound formula over `slots` only; ids are unique).
pub fn files() -> Result<Vec<(&'static str, RulesFile)>, CatalogError> {
    let mut out = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    for (path, text) in FILES {
        let f: RulesFile = toml::from_str(text).map_err(|e| err(path, e.to_string()))?;
        for r in &f.rule {
            validate(path, r)?;
            if f.is_uncore() != r.class.is_some() || (f.is_uncore() && r.kind != RuleKind::Sum) {
                return Err(err(
                    path,
                    format!(
                        "rule {}: an uncore rule is a sum with a class, a catalog rule has no class",
                        r.id
                    ),
                ));
            }
            if !ids.insert(r.id.clone()) {
                return Err(err(path, format!("rule id {} is used twice", r.id)));
            }
        }
        out.push((*path, f));
    }
    Ok(out)
}

fn validate(file: &str, r: &RuleDef) -> Result<(), CatalogError> {
    let bad = |m: &str| Err(err(file, format!("rule {}: {m}", r.id)));
    if r.source.trim().is_empty() {
        return bad("no source");
    }
    if r.tolerance < 0.0 {
        return bad("negative tolerance");
    }
    match r.kind {
        RuleKind::Sum => {
            if r.terms.len() < 2 {
                return bad("a sum needs at least two terms");
            }
            if r.equals.is_some() == r.equals_metric.is_some() {
                return bad("a sum needs exactly one of equals and equals_metric");
            }
        }
        RuleKind::Range => {
            if r.units.is_empty() || r.min.is_none() || r.max.is_none() {
                return bad("a range needs units, min and max");
            }
        }
        RuleKind::AtLeast | RuleKind::AtMost => {
            let (Some(_), Some(b)) = (&r.metric, &r.bound) else {
                return bad("a bound needs metric and bound");
            };
            let e = expr::parse(b).map_err(|e| err(file, format!("rule {}: {e}", r.id)))?;
            if e.variables().iter().any(|v| v != "slots") {
                return bad("a bound may only use slots");
            }
        }
    }
    Ok(())
}

/// The catalog's pipeline slots per cycle: its own, else a rules file's table.
pub fn slots_of(catalog: &Catalog, files: &[(&'static str, RulesFile)]) -> Option<u32> {
    catalog.slots.or_else(|| {
        files
            .iter()
            .flat_map(|(_, f)| &f.slots)
            .find(|s| s.catalog == catalog.id)
            .map(|s| s.slots)
    })
}

/// The rules that apply to `catalog`: those of its vendor family's file and numalab's
/// own whose every metric the catalog has (a range rule: at least one metric matches;
/// a bound rule: the catalog's slots are known).
pub fn rules_for(catalog: &Catalog) -> Result<Vec<Rule>, CatalogError> {
    let files = files()?;
    let slots = slots_of(catalog, &files);
    let has = |m: &str| catalog.metric(m).is_some();
    let mut out = Vec::new();
    for (path, f) in &files {
        if !f.applies(&catalog.id) {
            continue;
        }
        for def in &f.rule {
            let mut rule = Rule {
                def: def.clone(),
                file: path,
                inputs: Vec::new(),
                target: None,
                bound: None,
            };
            match def.kind {
                RuleKind::Sum => {
                    if !def.terms.iter().all(|t| has(t))
                        || def.equals_metric.as_deref().is_some_and(|m| !has(m))
                    {
                        continue;
                    }
                    rule.inputs = def.terms.clone();
                    rule.target = def.equals_metric.clone();
                }
                RuleKind::Range => {
                    rule.inputs = catalog
                        .metrics
                        .iter()
                        .filter(|m| def.units.contains(&m.unit))
                        .filter(|m| def.groups.is_empty() || def.groups.contains(&m.group))
                        .filter(|m| def.origins.is_empty() || def.origins.contains(&m.origin))
                        .map(|m| m.name.clone())
                        .collect();
                    if rule.inputs.is_empty() {
                        continue;
                    }
                }
                RuleKind::AtLeast | RuleKind::AtMost => {
                    let (Some(m), Some(b), Some(s)) = (&def.metric, &def.bound, slots) else {
                        continue;
                    };
                    if !has(m) {
                        continue;
                    }
                    let e: Expr = expr::parse(b).map_err(|e| err(path, e.to_string()))?;
                    let v = e
                        .eval(&|_: &str| Input::Value(f64::from(s)))
                        .map_err(|e| err(path, format!("rule {}: {e}", def.id)))?;
                    rule.inputs = vec![m.clone()];
                    rule.bound = Some(v);
                }
            }
            out.push(rule);
        }
    }
    Ok(out)
}

/// How the counts behind a profile were taken, for naming a violation's likely cause.
#[derive(Debug, Clone, Default)]
pub struct Counting<'a> {
    /// The perf groups (live runs; empty for imports).
    pub groups: &'a [GroupRecord],
    /// `--exact`: each group counted in a run of its own.
    pub exact: bool,
}

/// Checks every rule against `metrics` (the values as counted; nothing is changed).
pub fn check(rules: &[Rule], metrics: &[MetricValue], counting: &Counting) -> Vec<RuleCheck> {
    let value = |n: &str| metrics.iter().find(|m| m.name == n).and_then(|m| m.value);
    rules
        .iter()
        .map(|r| check_one(r, &value, metrics, counting))
        .collect()
}

/// Checks the catalog's rules against a profile's metrics.
pub fn check_profile(
    catalog: &Catalog,
    profile: &numalab_records::pmu::Profile,
) -> Result<Vec<RuleCheck>, CatalogError> {
    let rules = rules_for(catalog)?;
    let counting = Counting {
        groups: &profile.groups,
        exact: profile.mode == "exact",
    };
    Ok(check(&rules, &profile.metrics, &counting))
}

/// A figure as a rule's text shows it: shares in percent (a ratio 0.42 as 42%, a
/// metric in percent 181 as 181%), other units as the number.
fn show(v: f64, unit: &str) -> String {
    use crate::metrics::{fmt_pct, fmt_sig};
    match unit {
        "ratio" => fmt_pct(v),
        u if u.starts_with("percent") => fmt_pct(v / 100.0),
        _ => fmt_sig(v),
    }
}

fn check_one(
    r: &Rule,
    value: &dyn Fn(&str) -> Option<f64>,
    metrics: &[MetricValue],
    counting: &Counting,
) -> RuleCheck {
    let d = &r.def;
    let mut names = r.inputs.clone();
    names.extend(r.target.clone());
    let figures: Vec<RuleFigure> = names
        .iter()
        .map(|n| RuleFigure {
            name: n.clone(),
            value: value(n),
        })
        .collect();
    let tol = d.tolerance;
    let unit = metrics
        .iter()
        .find(|m| names.contains(&m.name))
        .map_or(String::new(), |m| m.unit.clone());
    let num = |v: f64| show(v, &unit);
    let mut out = RuleCheck {
        rule: d.id.clone(),
        title: d.title.clone(),
        status: RuleStatus::NotChecked,
        figures,
        actual: None,
        expected: String::new(),
        text: String::new(),
        cause: None,
        source: d.source.clone(),
    };
    let missing: Vec<&str> = out
        .figures
        .iter()
        .filter(|f| f.value.is_none())
        .map(|f| f.name.as_str())
        .collect();
    match d.kind {
        RuleKind::Sum => {
            let target_text = match (&r.target, d.equals) {
                (Some(m), _) => m.clone(),
                (None, Some(v)) => num(v),
                (None, None) => String::new(),
            };
            out.expected = format!("{target_text} ± {}", num(tol));
            if !missing.is_empty() {
                out.text = format!("not checked: no value for {}", missing.join(", "));
                return out;
            }
            let sum: f64 = r.inputs.iter().filter_map(|n| value(n)).sum();
            let target = match &r.target {
                Some(m) => value(m).unwrap_or(f64::NAN),
                None => d.equals.unwrap_or(f64::NAN),
            };
            out.actual = Some(sum);
            let terms = r.inputs.join(" + ");
            if (sum - target).abs() <= tol {
                out.status = RuleStatus::Held;
                out.text = format!("{terms} = {} (expected {})", num(sum), out.expected);
            } else {
                out.status = RuleStatus::Violated;
                let of = match &r.target {
                    Some(m) => format!("{m} is {}", num(target)),
                    None => format!("expected {}", out.expected),
                };
                out.text = format!("{}: {terms} sums to {}, {of}", d.title, num(sum));
            }
        }
        RuleKind::Range => {
            let (lo, hi) = (d.min.unwrap_or(f64::NAN), d.max.unwrap_or(f64::NAN));
            out.expected = format!("within [{}, {}] ± {}", num(lo), num(hi), num(tol));
            // A range checks the metrics that have values; one without a value is
            // simply not part of this profile.
            out.figures.retain(|f| f.value.is_some());
            if out.figures.is_empty() {
                out.text = "not checked: none of its metrics has a value".into();
                return out;
            }
            let outside: Vec<&RuleFigure> = out
                .figures
                .iter()
                .filter(|f| f.value.is_some_and(|v| v < lo - tol || v > hi + tol))
                .collect();
            if outside.is_empty() {
                out.status = RuleStatus::Held;
                out.text = format!("{} metrics {}", out.figures.len(), out.expected);
            } else {
                out.status = RuleStatus::Violated;
                let worst = outside
                    .iter()
                    .max_by(|a, b| {
                        let off = |f: &RuleFigure| {
                            let v = f.value.unwrap_or(0.0);
                            (lo - v).max(v - hi)
                        };
                        off(a).total_cmp(&off(b))
                    })
                    .and_then(|f| f.value);
                out.actual = worst;
                out.text = format!(
                    "{}: {} outside [{}, {}]",
                    d.title,
                    outside
                        .iter()
                        .map(|f| format!("{} = {}", f.name, num(f.value.unwrap_or(f64::NAN))))
                        .collect::<Vec<_>>()
                        .join(", "),
                    num(lo),
                    num(hi)
                );
                out.figures = outside.into_iter().cloned().collect();
            }
        }
        RuleKind::AtLeast | RuleKind::AtMost => {
            let bound = r.bound.unwrap_or(f64::NAN);
            let least = d.kind == RuleKind::AtLeast;
            let word = if least { "at least" } else { "at most" };
            out.expected = format!("{word} {}", num(bound));
            if !missing.is_empty() {
                out.text = format!("not checked: no value for {}", missing.join(", "));
                return out;
            }
            let m = &r.inputs[0];
            let v = value(m).unwrap_or(f64::NAN);
            out.actual = Some(v);
            let held = if least { v >= bound } else { v <= bound };
            if held {
                out.status = RuleStatus::Held;
                out.text = format!("{m} = {} ({})", num(v), out.expected);
            } else {
                out.status = RuleStatus::Violated;
                out.text = format!(
                    "{}: {m} is {}, the pipeline allows {word} {}",
                    d.title,
                    num(v),
                    num(bound)
                );
            }
        }
    }
    if out.status == RuleStatus::Violated {
        let used: Vec<&str> = out.figures.iter().map(|f| f.name.as_str()).collect();
        out.cause = Some(cause(&used, metrics, counting));
    }
    out
}

/// The likely cause of a violation and its remedy, from how the inputs were counted.
fn cause(inputs: &[&str], metrics: &[MetricValue], counting: &Counting) -> String {
    let of: Vec<&MetricValue> = metrics
        .iter()
        .filter(|m| inputs.contains(&m.name.as_str()))
        .collect();
    let fraction = of
        .iter()
        .filter_map(|m| m.min_running_fraction)
        .reduce(f64::min);
    let across = of.iter().any(|m| m.across_runs);
    if let Some(f) = fraction.filter(|f| *f < 0.999) {
        // The groups that shared the counters in the run: those counted part of it.
        let mut runs: std::collections::BTreeMap<usize, usize> = Default::default();
        for g in counting.groups {
            if g.running_fraction.is_some_and(|f| f < 0.999) {
                *runs.entry(g.run).or_default() += 1;
            }
        }
        let ways = runs.values().max().copied();
        let how = match ways {
            Some(n) if n > 1 => format!("the groups were multiplexed {n} ways"),
            _ => "the counters were multiplexed".to_string(),
        };
        return format!(
            "{how}: its inputs were counted {:.0}% of the run and scaled up, so they come from different parts of it; rerun with --exact",
            f * 100.0
        );
    }
    if across || counting.exact {
        return "its inputs were counted in separate runs (--exact), so run-to-run variation enters the figures; check the runs' spread, or count the rule's metrics alone (--metrics NAMES) so they share one group".into();
    }
    "the inputs were counted over the whole run without multiplexing: the counts themselves disagree (an event that does not count what its description says on this CPU, or a counter erratum); report it with the counts".into()
}

mod uncore;
pub use uncore::check_uncore;

#[cfg(test)]
mod tests;
