//! Before/after: two profiles of the same workload compared metric by metric and count
//! by count, with the percentage change.
//!
//! One trap is named explicitly: MPKI (and anything else per 1000 instructions) is not
//! comparable when the optimisation changed the instruction count — fewer instructions
//! make the same number of misses look worse. When instruction counts differ, the
//! comparison says so and points at miss ratios and absolute counts instead.

use crate::catalog::CpuMatch;
use crate::import::ImportError;
use crate::metrics::EventState;
use crate::profile::{self, Profile, ProfileError};
use numalab_schema::journal::read_bundle;
use numalab_schema::{RecordKind, Warning};
use std::path::Path;

// The comparison's record lives in numalab-records.
pub use numalab_records::pmu::{Comparison, CountChange, MetricChange};

/// Instruction counts further apart than this (percent) make MPKI not comparable.
pub const INSTRUCTIONS_TOLERANCE_PCT: f64 = 1.0;

fn change(base: Option<f64>, new: Option<f64>) -> (Option<f64>, Option<String>) {
    match (base, new) {
        (Some(b), Some(n)) if b != 0.0 => (Some((n - b) / b * 100.0), None),
        (Some(_), Some(_)) => (None, Some("the baseline is 0".into())),
        (None, _) => (None, Some("no baseline value".into())),
        (_, None) => (None, Some("no new value".into())),
    }
}

fn per_instruction(unit: &str, formula: &str) -> bool {
    let u = unit.to_ascii_lowercase();
    u.contains("mpki")
        || u.contains("per 1000 instructions")
        || u.contains("per kilo")
        || (formula.contains("INST") && formula.contains("* 1000"))
}

/// Compares two profiles.
pub fn compare(base: &Profile, new: &Profile, base_label: &str, new_label: &str) -> Comparison {
    let instr_event = ["INST_RETIRED", "INSTRUCTIONS"]
        .into_iter()
        .find(|n| base.event(n).is_some() || new.event(n).is_some());
    let value = |p: &Profile, n: &str| {
        p.event(n)
            .filter(|e| e.state == EventState::Counted)
            .and_then(|e| e.value)
    };
    let instr_change = instr_event.and_then(|n| change(value(base, n), value(new, n)).0);
    let mpki_comparable = instr_change.is_none_or(|c| c.abs() <= INSTRUCTIONS_TOLERANCE_PCT);
    let note = (!mpki_comparable).then(|| {
        format!(
            "instructions changed by {:+.1}%: MPKI and other per-instruction metrics are not comparable between these runs; compare miss ratios and absolute counts instead",
            instr_change.unwrap_or(0.0)
        )
    });
    let mut names: Vec<&str> = base.metrics.iter().map(|m| m.name.as_str()).collect();
    for m in &new.metrics {
        if !names.contains(&m.name.as_str()) {
            names.push(&m.name);
        }
    }
    let metrics = names
        .into_iter()
        .map(|n| {
            let b = base.metric(n);
            let nw = new.metric(n);
            let def = b.or(nw).expect("name comes from one of them");
            let (pct, why) = change(b.and_then(|m| m.value), nw.and_then(|m| m.value));
            let per_instr = per_instruction(&def.unit, &def.formula);
            let comparable = !per_instr || mpki_comparable;
            MetricChange {
                name: n.to_string(),
                unit: def.unit.clone(),
                base: b.and_then(|m| m.value),
                new: nw.and_then(|m| m.value),
                change_pct: pct,
                comparable,
                note: if comparable {
                    why
                } else {
                    Some("per-instruction: instruction counts differ".into())
                },
            }
        })
        .collect();
    let mut count_names: Vec<&str> = base.events.iter().map(|e| e.name.as_str()).collect();
    for e in &new.events {
        if !count_names.contains(&e.name.as_str()) {
            count_names.push(&e.name);
        }
    }
    let counts = count_names
        .into_iter()
        .map(|n| {
            let (b, nw) = (value(base, n), value(new, n));
            CountChange {
                name: n.to_string(),
                base: b,
                new: nw,
                change_pct: change(b, nw).0,
            }
        })
        .collect();
    Comparison {
        base: base_label.to_string(),
        new: new_label.to_string(),
        instructions_event: instr_event.map(str::to_string),
        instructions_change_pct: instr_change,
        mpki_comparable,
        note,
        metrics,
        counts,
    }
}

/// Loads a profile for comparison: a numalab bundle, journal or output folder holding a
/// `pmu.profile` record (the first one), or a `perf stat` file (imported).
pub fn load(
    path: &Path,
    cpu: Option<CpuMatch>,
    fallback: Option<CpuMatch>,
    metrics: &str,
) -> Result<(Profile, Vec<Warning>), ProfileError> {
    if let Ok((bundle, mut warnings)) = read_bundle(path) {
        let found: Vec<Profile> = bundle
            .records
            .iter()
            .filter(|r| r.kind == Profile::KIND)
            .filter_map(|r| r.decode::<Profile>().and_then(Result::ok))
            .collect();
        let n = found.len();
        if let Some(p) = found.into_iter().next() {
            if n > 1 {
                warnings.push(Warning::new(
                    "pmu.compare.several",
                    format!("{}: holds {n} profiles; the first is used", path.display()),
                ));
            }
            return Ok((p, warnings));
        }
        if !bundle.records.is_empty() {
            return Err(ProfileError::Import(ImportError::Empty {
                path: path.display().to_string(),
                message: "this numalab bundle holds no pmu.profile record (save one with `numalab profile --out DIR ...`)".into(),
            }));
        }
    }
    let p = profile::from_import(path, cpu, fallback, metrics, &[])?;
    Ok((p.profile, p.warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;
    use crate::metrics::{evaluate_all, EventValue};
    use crate::profile::Source;

    fn prof(pairs: &[(&str, f64)]) -> Profile {
        let c = catalog::load("neoverse-n1").unwrap();
        let events: Vec<EventValue> = pairs
            .iter()
            .map(|(n, v)| EventValue {
                name: n.to_string(),
                code: None,
                value: Some(*v),
                raw_count: None,
                running_fraction: Some(1.0),
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
            })
            .collect();
        let names = c.select_metrics("ipc,l1d_mpki,l1d_miss_rate").unwrap();
        Profile {
            cpu: catalog::resolve_model("n1").unwrap(),
            source: Source {
                kind: "imported".into(),
                path: None,
                format: None,
            },
            mode: "import".into(),
            scope: None,
            hardware_pmu: None,
            counters: None,
            metric_set: "x".into(),
            command: vec![],
            metrics: evaluate_all(&c, &names, &events),
            events,
            groups: vec![],
            runs: vec![],
            spread: vec![],
            tree: None,
            consistency: Vec::new(),
            coverage: None,
            attach: None,
            interval_ms: None,
            timeline: vec![],
            uncore: None,
            uncore_note: None,
            multiplexing: None,
        }
    }

    #[test]
    fn percent_change_and_mpki_caveat() {
        let base = prof(&[
            ("CPU_CYCLES", 1e9),
            ("INST_RETIRED", 2e8),
            ("L1D_CACHE", 6e7),
            ("L1D_CACHE_REFILL", 2e7),
        ]);
        // A prefetching version: same misses per access, but 25% more instructions
        // (the prefetch instructions) and half the cycles.
        let new = prof(&[
            ("CPU_CYCLES", 5e8),
            ("INST_RETIRED", 2.5e8),
            ("L1D_CACHE", 6e7),
            ("L1D_CACHE_REFILL", 2e7),
        ]);
        let c = compare(&base, &new, "base", "new");
        assert!((c.instructions_change_pct.unwrap() - 25.0).abs() < 1e-9);
        assert!(!c.mpki_comparable);
        assert!(c.note.as_deref().unwrap().contains("+25.0%"));
        let m = |n: &str| c.metrics.iter().find(|m| m.name == n).unwrap();
        // IPC 0.2 -> 0.5: +150%.
        assert!((m("ipc").change_pct.unwrap() - 150.0).abs() < 1e-9);
        assert!(m("ipc").comparable);
        assert!(!m("l1d_mpki").comparable);
        assert!(m("l1d_miss_rate").comparable);
        assert_eq!(m("l1d_miss_rate").change_pct, Some(0.0));
        let cyc = c.counts.iter().find(|x| x.name == "CPU_CYCLES").unwrap();
        assert_eq!(cyc.change_pct, Some(-50.0));
        // Same instruction count: MPKI comparable.
        let c = compare(&base, &base, "a", "b");
        assert!(c.mpki_comparable && c.note.is_none());
    }
}
