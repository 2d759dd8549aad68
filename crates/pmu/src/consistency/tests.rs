use super::*;
use crate::catalog::{self, MetricOrigin};

/// A metric as a profile would hold it, with the catalog's unit.
fn mv(catalog: &Catalog, name: &str, value: f64) -> MetricValue {
    let def = catalog.metric(name).expect("metric of the catalog");
    MetricValue {
        name: name.into(),
        title: def.title.clone(),
        unit: def.unit.clone(),
        group: def.group.clone(),
        formula: def.formula.clone(),
        origin: def.origin,
        value: Some(value),
        reason: None,
        events: Vec::new(),
        min_running_fraction: None,
        across_runs: false,
        interval: None,
    }
}

fn all_catalogs() -> Vec<Catalog> {
    catalog::shipped()
        .into_iter()
        .map(|id| catalog::load(id).expect("shipped catalog loads"))
        .collect()
}

fn one(rule: &Rule, metrics: &[MetricValue]) -> RuleCheck {
    let mut c = check(std::slice::from_ref(rule), metrics, &Counting::default());
    c.remove(0)
}

/// Values that satisfy `rule`, and values that violate it (by `off` tolerances).
fn constructed(c: &Catalog, rule: &Rule, violate: bool) -> Vec<MetricValue> {
    let d = &rule.def;
    match d.kind {
        RuleKind::Sum => {
            let target = match &rule.target {
                // A parent at 40% of slots (0.4 as a ratio).
                Some(t) => {
                    let v = if c.metric(t).unwrap().unit == "ratio" {
                        0.4
                    } else {
                        40.0
                    };
                    Some((t.clone(), v))
                }
                None => None,
            };
            let total = match &target {
                Some(t) => t.1,
                None => d.equals.unwrap(),
            };
            let sum = if violate {
                total * 1.81
            } else {
                total + 0.9 * d.tolerance
            };
            let n = rule.inputs.len() as f64;
            let mut out: Vec<MetricValue> = rule.inputs.iter().map(|m| mv(c, m, sum / n)).collect();
            if let Some((t, v)) = target {
                out.push(mv(c, &t, v));
            }
            out
        }
        RuleKind::Range => {
            let (lo, hi) = (d.min.unwrap(), d.max.unwrap());
            rule.inputs
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let v = match (violate, i) {
                        (true, 0) => hi + 2.0 * d.tolerance + 0.01 * (hi - lo),
                        (true, 1) => lo - 2.0 * d.tolerance - 0.01 * (hi - lo),
                        _ => (lo + hi) / 2.0,
                    };
                    mv(c, m, v)
                })
                .collect()
        }
        RuleKind::AtLeast | RuleKind::AtMost => {
            let b = rule.bound.unwrap();
            let above = (d.kind == RuleKind::AtLeast) != violate;
            vec![mv(
                c,
                &rule.inputs[0],
                if above { b * 1.5 } else { b * 0.5 },
            )]
        }
    }
}

#[test]
fn every_rules_file_parses_and_every_rule_has_a_source() {
    let files = files().expect("rules files parse");
    assert_eq!(files.len(), FILES.len());
    let ids: Vec<&str> = catalog::shipped();
    for (path, f) in &files {
        assert!(!f.rule.is_empty(), "{path} has no rule");
        for r in &f.rule {
            assert!(
                r.source.len() > 20,
                "{path}: rule {} has no real source",
                r.id
            );
            let own = r.source.starts_with("numalab's own");
            let vendor = ["Intel", "Yasin", "AMD", "Arm", "Linux perf"]
                .iter()
                .any(|v| r.source.contains(v));
            assert!(
                own || vendor,
                "{path}: rule {}: source names no document",
                r.id
            );
        }
        for s in &f.slots {
            assert!(
                ids.contains(&s.catalog.as_str()),
                "{path}: slots for unknown {}",
                s.catalog
            );
            assert!(!s.source.is_empty());
        }
    }
}

#[test]
fn every_rule_names_metrics_of_a_shipped_catalog_and_is_attached_somewhere() {
    let catalogs = all_catalogs();
    for (path, f) in files().unwrap() {
        // The uncore's rules name uncore figures, not catalog metrics (their own tests
        // in consistency/uncore.rs).
        if f.is_uncore() {
            assert!(catalogs
                .iter()
                .all(|c| rules_for(c).unwrap().iter().all(|a| a.file != path)));
            continue;
        }
        for r in &f.rule {
            let named: Vec<&String> = r
                .terms
                .iter()
                .chain(&r.equals_metric)
                .chain(&r.metric)
                .collect();
            for m in named {
                assert!(
                    catalogs.iter().any(|c| c.metric(m).is_some()),
                    "{path}: rule {} names {m}, which no shipped catalog has",
                    r.id
                );
            }
            let attached = catalogs
                .iter()
                .filter(|c| rules_for(c).unwrap().iter().any(|a| a.def.id == r.id))
                .count();
            assert!(
                attached > 0,
                "{path}: rule {} is attached to no catalog",
                r.id
            );
        }
    }
}

#[test]
fn every_catalog_with_a_level_1_tree_has_its_level_1_rule() {
    let mut with_level1 = 0;
    for c in all_catalogs() {
        let Some(g) = c.group("Topdown_L1") else {
            continue;
        };
        with_level1 += 1;
        let rules = rules_for(&c).unwrap();
        assert!(
            rules.iter().any(|r| r.def.kind == RuleKind::Sum
                && r.def.equals.is_some()
                && g.metrics.iter().all(|m| r.inputs.contains(m))),
            "{}: level 1 ({}) has no sum rule",
            c.id,
            g.metrics.join(", ")
        );
    }
    // Intel (7), AMD Zen 4/5, Neoverse N2, N3, V1, V2, V3.
    assert!(
        with_level1 >= 14,
        "only {with_level1} catalogs with level 1"
    );
}

#[test]
fn rules_with_a_metric_the_catalog_lacks_are_not_attached() {
    let n1 = catalog::load("neoverse-n1").unwrap();
    let ids: Vec<String> = rules_for(&n1)
        .unwrap()
        .into_iter()
        .map(|r| r.def.id)
        .collect();
    // N1 has cycle accounting, not Arm's slot-based level 1.
    assert!(!ids.contains(&"arm-topdown-level1".to_string()), "{ids:?}");
    assert!(ids.contains(&"arm-read-write-total".to_string()), "{ids:?}");
    // The x86-64 generic catalog has no pipeline width: no IPC bound.
    let x86 = catalog::load("x86-64").unwrap();
    let ids: Vec<String> = rules_for(&x86)
        .unwrap()
        .into_iter()
        .map(|r| r.def.id)
        .collect();
    assert!(!ids.iter().any(|i| i.starts_with("ipc-")), "{ids:?}");
    assert!(ids.contains(&"ratio-range".to_string()), "{ids:?}");
    // Arm's frontend_bound is not AMD's: each family's file stays with its catalogs.
    let zen4 = catalog::load("amd-zen4").unwrap();
    assert!(rules_for(&zen4)
        .unwrap()
        .iter()
        .all(|r| !r.def.id.starts_with("arm-")));
}

#[test]
fn constructed_counts_satisfy_and_violate_each_rule_of_every_catalog() {
    let mut checked = 0;
    for c in all_catalogs() {
        for rule in rules_for(&c).unwrap() {
            let good = constructed(&c, &rule, false);
            let held = one(&rule, &good);
            assert_eq!(
                held.status,
                RuleStatus::Held,
                "{} {}: {}",
                c.id,
                rule.def.id,
                held.text
            );
            assert!(held.cause.is_none());
            let bad = constructed(&c, &rule, true);
            let v = one(&rule, &bad);
            assert_eq!(
                v.status,
                RuleStatus::Violated,
                "{} {}: {}",
                c.id,
                rule.def.id,
                v.text
            );
            assert!(v.text.starts_with(&rule.def.title), "{}", v.text);
            assert!(v.cause.is_some());
            // The figures are the values as given: nothing is normalised.
            for f in &v.figures {
                let given = bad.iter().find(|m| m.name == f.name).unwrap().value;
                assert_eq!(f.value, given, "{} {}: {}", c.id, rule.def.id, f.name);
            }
            // Without one input there is nothing to check (a range: without all).
            let partial: Vec<MetricValue> = match rule.def.kind {
                RuleKind::Range => Vec::new(),
                _ => good[1..].to_vec(),
            };
            let n = one(&rule, &partial);
            assert_eq!(n.status, RuleStatus::NotChecked, "{} {}", c.id, rule.def.id);
            assert!(n.text.starts_with("not checked"), "{}", n.text);
            checked += 1;
        }
    }
    assert!(checked > 60, "only {checked} attached rules");
}

#[test]
fn a_multiplexed_level_1_names_the_ways_and_the_remedy() {
    let c = catalog::load("intel-icx").unwrap();
    let rules: Vec<Rule> = rules_for(&c)
        .unwrap()
        .into_iter()
        .filter(|r| r.def.id == "intel-tma-level1")
        .collect();
    let mut metrics: Vec<MetricValue> = [
        ("tma_frontend_bound", 52.0),
        ("tma_bad_speculation", 31.0),
        ("tma_backend_bound", 63.0),
        ("tma_retiring", 35.0),
    ]
    .iter()
    .map(|(n, v)| mv(&c, n, *v))
    .collect();
    for m in &mut metrics {
        m.min_running_fraction = Some(1.0 / 6.0);
    }
    let groups: Vec<GroupRecord> = (0..6)
        .map(|id| GroupRecord {
            id,
            run: 0,
            metrics: Vec::new(),
            time_enabled_ns: Some(600),
            time_running_ns: Some(100),
            running_fraction: Some(1.0 / 6.0),
            values: Vec::new(),
        })
        .collect();
    let checks = check(
        &rules,
        &metrics,
        &Counting {
            groups: &groups,
            exact: false,
        },
    );
    let v = &checks[0];
    assert_eq!(v.status, RuleStatus::Violated);
    assert_eq!(v.actual, Some(181.0));
    assert_eq!(
        v.text,
        "top-down level 1 sums to 100%: tma_frontend_bound + tma_bad_speculation + tma_backend_bound + tma_retiring sums to 181%, expected 100% ± 5.0%"
    );
    let cause = v.cause.as_deref().unwrap();
    assert!(
        cause.starts_with("the groups were multiplexed 6 ways"),
        "{cause}"
    );
    assert!(cause.contains("counted 17% of the run"), "{cause}");
    assert!(cause.ends_with("rerun with --exact"), "{cause}");
    let lines = consistency_lines(&checks);
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains("181%") && lines[0].contains("--exact"));
    assert_eq!(
        lines[1],
        "Consistency rules: 0 held, 1 violated, 0 not checked (inputs without values)."
    );
}

#[test]
fn without_multiplexing_the_cause_says_so() {
    let c = catalog::load("neoverse-v2").unwrap();
    let rule = rules_for(&c)
        .unwrap()
        .into_iter()
        .find(|r| r.def.id == "arm-read-write-total")
        .unwrap();
    let mut m = vec![mv(&c, "mem_read_pct", 70.0), mv(&c, "mem_write_pct", 45.0)];
    for x in &mut m {
        x.min_running_fraction = Some(1.0);
    }
    let v = one(&rule, &m);
    assert_eq!(v.status, RuleStatus::Violated);
    assert!(v.cause.as_deref().unwrap().contains("without multiplexing"));
    m[1].across_runs = true;
    let v = one(&rule, &m);
    assert!(v
        .cause
        .as_deref()
        .unwrap()
        .contains("separate runs (--exact)"));
}

#[test]
fn range_rules_take_only_the_metrics_their_filters_name() {
    let c = catalog::load("neoverse-n2").unwrap();
    let rules = rules_for(&c).unwrap();
    let ratio = rules.iter().find(|r| r.def.id == "ratio-range").unwrap();
    assert!(ratio
        .inputs
        .iter()
        .all(|m| c.metric(m).unwrap().origin == MetricOrigin::Methodology));
    assert!(ratio.inputs.contains(&"speculation_waste".to_string()));
    let spr = catalog::load("intel-spr").unwrap();
    let r = rules_for(&spr).unwrap();
    let tma = r.iter().find(|r| r.def.id == "intel-tma-range").unwrap();
    assert!(tma.inputs.contains(&"tma_l1_bound".to_string()));
    assert!(tma.inputs.iter().all(|m| m.starts_with("tma_")));
    assert!(!tma.inputs.iter().any(|m| m.starts_with("tma_info_")));
    // The CPI floor: 6 slots, two instructions a slot.
    let cpi = r.iter().find(|r| r.def.id == "intel-cpi-minimum").unwrap();
    assert_eq!(cpi.bound, Some(1.0 / 12.0));
}
