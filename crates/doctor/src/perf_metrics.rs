//! The `perf-metrics` check: numalab's formulas beside the installed perf's of the same
//! name, evaluated on two constructed sets of counts
//! ([`numalab_pmu::catalog::perf::compare_probed`]: each event a distinct prime, so two
//! formulas that differ in an event or a constant give different values there; see
//! `probe_counts` for what such points cannot show). perf's listing (`perf list -j`, run once per
//! process with `run_perf`'s timeout) is a fact given to [`crate::assess`], so the check
//! is tested on constructed listings.

use crate::{check, valued};
use numalab_pmu::catalog::perf::{self, MachineFacts, PerfError, PerfList};
use numalab_pmu::catalog::{self, Catalog, CpuMatch};
use numalab_records::doctor::{Check, Verdict};
use numalab_schema::Machine;
use numalab_topo::system::SysRoot;

const NAME: &str = "perf-metrics";

/// An informational check: why nothing was compared.
fn info(detail: String, value: &str) -> Check {
    valued(check(NAME, Verdict::Info, detail, None), value)
}

/// The check: what the installed perf's `listing` says of the metrics numalab has for
/// this machine's CPU.
pub(crate) fn perf_metrics(
    machine: &Machine,
    sys: &SysRoot,
    listing: &Result<PerfList, PerfError>,
) -> Check {
    let list = match listing {
        Ok(l) => l,
        Err(e) => {
            let value = match e {
                PerfError::NotRun(_) => "no-perf",
                PerfError::NoJson { .. } => "no-json",
                _ => "unreadable",
            };
            return info(
                format!("{e}: numalab's formulas are not compared with perf's"),
                value,
            );
        }
    };
    let midr = catalog::midr_from_sysfs(sys.root());
    let (m, shipped) = match catalog::detect(&machine.cpu, midr)
        .and_then(|m| catalog::load_match(&m).map(|c| (m, c)))
    {
        Ok(found) => found,
        Err(e) => {
            return info(
                format!(
                    "numalab has no catalog for this CPU ({e}): no formula of numalab's to compare with perf {}'s",
                    list.version
                ),
                "no-catalog",
            )
        }
    };
    let facts = MachineFacts::from_sysfs(sys.root());
    let p = match perf::catalog_for(&m, list, sys.root(), &facts) {
        Ok(p) => p,
        Err(e) => {
            return info(
                format!("{e}: nothing to compare with numalab's formulas"),
                "no-metrics",
            )
        }
    };
    let cmp = perf::compare_probed(&shipped, &p);
    let head = format!(
        "{} knows {} of numalab's {} metrics for {}",
        cmp.perf,
        cmp.metrics.len(),
        shipped.metrics.len(),
        m.cpu
    );
    if cmp.metrics.is_empty() {
        return info(
            format!("{head} (by name): nothing to compare"),
            "none-shared",
        );
    }
    let agreeing = cmp.metrics.iter().filter(|f| f.agree == Some(true)).count();
    let unevaluated: Vec<&str> = cmp
        .metrics
        .iter()
        .filter(|f| f.agree.is_none())
        .map(|f| f.metric.as_str())
        .collect();
    let not_computed = if unevaluated.is_empty() {
        String::new()
    } else {
        format!(
            "; {} not computed on one side, so not compared ({})",
            unevaluated.len(),
            unevaluated.join(", ")
        )
    };
    let diffs = cmp.differences();
    if diffs.is_empty() {
        let all = if unevaluated.is_empty() {
            "all agree".to_string()
        } else {
            format!("{agreeing} agree")
        };
        return valued(
            check(
                NAME,
                Verdict::Ok,
                format!("{head}; {all} on two constructed sets of counts{not_computed}"),
                None,
            ),
            "agree",
        );
    }
    let smt = smt_explained(&m, &shipped, list, sys, &facts);
    let findings: Vec<String> = diffs
        .iter()
        .zip(cmp.findings())
        .map(|(d, f)| {
            if smt.contains(&d.metric) {
                format!("{f} (perf takes the core-wide branch of #smt_on, as SMT is on; numalab the per-thread one: with #smt_on = 0 they agree)")
            } else {
                f
            }
        })
        .collect();
    let used = if m.catalog == catalog::X86_ID || m.catalog == catalog::ARM_GENERIC_ID {
        "`numalab profile` uses perf's catalog on this CPU where perf gives one, but numalab's own metric of a name shadows perf's, so it computes numalab's formula".to_string()
    } else {
        format!(
            "`numalab profile` computes numalab's formula (catalog {}); nothing in numalab selects perf's formulas for a CPU numalab ships a catalog for (no flag, no environment variable: perf's catalog replaces only the generic ones)",
            shipped.id
        )
    };
    valued(
        check(
            NAME,
            Verdict::Warn,
            format!(
                "{head}; {} differ{}, {agreeing} agree{not_computed}: {}",
                diffs.len(),
                if diffs.len() == 1 { "s" } else { "" },
                findings.join("; ")
            ),
            Some(&format!(
                "{used}; `perf stat -M {}` prints perf's value",
                diffs[0].metric
            )),
        ),
        "differ",
    )
}

/// The metrics whose difference is the `#smt_on` branch alone: on an Intel catalog
/// (numalab takes the per-thread branch of Intel's formulas, `#SMT_on` = 0) where SMT is
/// on, the metrics that agree once perf's catalog is built with `#smt_on` = 0.
fn smt_explained(
    m: &CpuMatch,
    shipped: &Catalog,
    list: &PerfList,
    sys: &SysRoot,
    facts: &MachineFacts,
) -> Vec<String> {
    if !m.catalog.starts_with("intel-") || facts.values.get("#smt_on") != Some(&1.0) {
        return Vec::new();
    }
    let mut off = facts.clone();
    off.values.insert("#smt_on".into(), 0.0);
    let Ok(p) = perf::catalog_for(m, list, sys.root(), &off) else {
        return Vec::new();
    };
    perf::compare_probed(shipped, &p)
        .metrics
        .into_iter()
        .filter(|f| f.agree == Some(true))
        .map(|f| f.metric)
        .collect()
}
