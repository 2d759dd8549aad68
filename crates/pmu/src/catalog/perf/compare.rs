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

/// The value of `name` in `catalog` from `keys` (each count's name resolved in the same
/// catalog, so aliases and codes match; the first count of the event's name or code).
fn count_of(catalog: &Catalog, keys: &[(Option<EventRef>, f64)], name: &str) -> Input {
    let Some(want) = catalog.event(name) else {
        return Input::Missing(format!("not an event of {}", catalog.id));
    };
    keys.iter()
        .find(|(r, _)| {
            r.as_ref()
                .is_some_and(|r| r.name == want.name || r.encoding == want.encoding)
        })
        .map_or_else(
            || Input::Missing("not in the counts".into()),
            |(_, v)| Input::Value(*v),
        )
}

/// The metrics that `shipped` and `perf` both name: (shipped, perf's), in perf's order.
fn pairs<'a>(shipped: &'a Catalog, perf: &'a PerfCatalog) -> Vec<(&'a MetricDef, &'a MetricDef)> {
    let perf_metric = |n: &str| {
        perf.catalog
            .metrics
            .iter()
            .chain(&perf.catalog.shadowed)
            .find(|m| m.name == n && m.origin == MetricOrigin::Vendor)
    };
    perf.metrics
        .iter()
        .filter_map(|name| Some((shipped.metric(name)?, perf_metric(name)?)))
        .collect()
}

/// Evaluates every metric that `shipped` and `perf` both name on the same `counts`
/// (event name to value) and says where they differ.
pub fn compare(
    shipped: &Catalog,
    perf: &PerfCatalog,
    counts: &BTreeMap<String, f64>,
) -> PerfComparison {
    // Each count's name resolved once per catalog.
    let keys = |c: &Catalog| -> Vec<(Option<EventRef>, f64)> {
        counts
            .iter()
            .map(|(k, v)| (c.lookup_event(k), *v))
            .collect()
    };
    let (shipped_keys, perf_keys) = (keys(shipped), keys(&perf.catalog));
    let mut metrics = Vec::new();
    for (s, p) in pairs(shipped, perf) {
        let sv = s.expr.eval(&|v| count_of(shipped, &shipped_keys, v));
        let pv = p.expr.eval(&|v| count_of(&perf.catalog, &perf_keys, v));
        let agree = match (&sv, &pv) {
            (Ok(a), Ok(b)) => Some((a - b).abs() <= 1e-9 * a.abs().max(b.abs())),
            _ => None,
        };
        metrics.push(FormulaCheck {
            metric: s.name.clone(),
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

/// The first prime at or above 1009 scaled by 1000 is the first count; each further
/// event gets the next prime (scaled the same), so counts are of a run's order (about 1e6).
const FIRST_PRIME: u64 = 1009;
const PRIME_SCALE: f64 = 1000.0;

/// The primes from `from` up.
fn primes(from: u64) -> impl Iterator<Item = u64> {
    (from.max(2)..).filter(|n| (2..).take_while(|d| d * d <= *n).all(|d| n % d != 0))
}

/// One constructed set of counts on which to [`compare`] the metrics `shipped` and `perf`
/// both name: every event either side's formula of such a metric reads gets its own
/// value, a distinct prime times 1000, and an event is one input on both sides (one value)
/// when it has the same name or the same code in the two catalogs.
///
/// Why a difference shows: two formulas that read different events, or the same events
/// with a different constant (a ratio against a percentage, a missing factor of 2), give
/// different values at such a point, because distinct primes share no factor: a product
/// or ratio of counts is equal to another only if the same counts appear with the same
/// powers (unique factorisation), and a sum of them is equal to another only by
/// coincidence. What it cannot show: formulas that differ only where this one point does
/// not look (the branch of an `if`/`min`/`max` that is not taken, a clamp such as
/// `max(0, x)` that both sides hit; [`compare_probed`] adds a second point with the
/// primes in the other order, which sees many of those), a coincidence of sums, and an event of the same name
/// whose code differs between the two catalogs (one input here: the definitions of
/// events are not compared, only the formulas over them).
pub fn probe_counts(shipped: &Catalog, perf: &PerfCatalog) -> BTreeMap<String, f64> {
    probe(shipped, perf, false)
}

/// [`probe_counts`] with the primes in the other order (the first event gets the largest).
fn probe(shipped: &Catalog, perf: &PerfCatalog, reversed: bool) -> BTreeMap<String, f64> {
    // Each event's name and code, in order of appearance; then a value per code.
    let mut named: Vec<(String, Encoding)> = Vec::new();
    let mut codes: Vec<Encoding> = Vec::new();
    for (s, p) in pairs(shipped, perf) {
        for (catalog, expr) in [(shipped, &s.expr), (&perf.catalog, &p.expr)] {
            for v in expr.ordered_variables() {
                let Some(e) = catalog.event(&v) else {
                    continue;
                };
                if named.iter().any(|(k, _)| k.eq_ignore_ascii_case(&e.name)) {
                    continue;
                }
                if !codes.contains(&e.encoding) {
                    codes.push(e.encoding);
                }
                named.push((e.name.clone(), e.encoding));
            }
        }
    }
    let mut values: Vec<f64> = primes(FIRST_PRIME)
        .take(codes.len())
        .map(|p| p as f64 * PRIME_SCALE)
        .collect();
    if reversed {
        values.reverse();
    }
    named
        .into_iter()
        .map(|(name, code)| {
            let k = codes.iter().position(|c| *c == code).unwrap_or(0);
            (name, values[k])
        })
        .collect()
}

/// [`compare`] on two constructed points: [`probe_counts`], and the same events with
/// the primes in the other order. A metric differs when it differs on either (with the
/// values of the point where it does): a difference under a clamp such as `max(0, a -
/// b)` that both sides hit at one point (`a` < `b`) shows at the other (`a` > `b`).
pub fn compare_probed(shipped: &Catalog, perf: &PerfCatalog) -> PerfComparison {
    let mut first = compare(shipped, perf, &probe(shipped, perf, false));
    let second = compare(shipped, perf, &probe(shipped, perf, true));
    for (a, b) in first.metrics.iter_mut().zip(second.metrics) {
        if a.agree != Some(false) && b.agree == Some(false) {
            *a = b;
        }
    }
    first
}
