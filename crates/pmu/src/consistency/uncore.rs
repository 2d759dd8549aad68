//! The consistency rules over the uncore's per-socket figures (`data/rules/uncore.toml`),
//! checked by the same [`check`] as a catalog's rules: each socket's figures become the
//! metric values the rules read, and each check is said of its socket.

use super::{check, files, CatalogError, Counting, Rule, RuleKind};
use crate::metrics::MetricValue;
use numalab_records::pmu::{MetricOrigin, RuleCheck, RuleStatus};
use numalab_records::uncore::{Derived, SocketFigures, UncoreReport};

/// A socket's figures that rules may name: (name, unit, figure).
fn socket_figures(s: &SocketFigures) -> [(&'static str, &'static str, &Derived); 5] {
    [
        ("all_cas_bytes", "bytes", &s.all_cas_bytes),
        (
            "read_percent_of_all_cas",
            "percent",
            &s.read_percent_of_all_cas,
        ),
        (
            "write_percent_of_all_cas",
            "percent",
            &s.write_percent_of_all_cas,
        ),
        (
            "numa_reads_addressed_to_local_dram",
            "percent",
            &s.numa_reads_addressed_to_local_dram,
        ),
        (
            "numa_reads_addressed_to_remote_dram",
            "percent",
            &s.numa_reads_addressed_to_remote_dram,
        ),
    ]
}

/// Checks the uncore rules on every socket of `report` that has a device of the rule's
/// class. A rule whose figures have no value is recorded as not checked, with the
/// figures' reasons; a violation is recorded with its figures and never adjusted.
pub fn check_uncore(report: &UncoreReport) -> Result<Vec<RuleCheck>, CatalogError> {
    let mut out = Vec::new();
    for (path, f) in files()? {
        if !f.is_uncore() {
            continue;
        }
        for def in &f.rule {
            let class = def.class.as_deref().unwrap_or_default();
            if def.kind != RuleKind::Sum || !report.devices.iter().any(|d| d.class == class) {
                continue;
            }
            for s in &report.sockets {
                let figures = socket_figures(s);
                let known = |n: &str| figures.iter().any(|(name, _, _)| *name == n);
                if !def.terms.iter().all(|t| known(t))
                    || def.equals_metric.as_deref().is_some_and(|m| !known(m))
                {
                    continue;
                }
                let metrics: Vec<MetricValue> = figures
                    .iter()
                    .map(|(name, unit, d)| figure_as_metric(name, unit, d))
                    .collect();
                let rule = Rule {
                    def: def.clone(),
                    file: path,
                    inputs: def.terms.clone(),
                    target: def.equals_metric.clone(),
                    bound: None,
                };
                let mut c = check(&[rule], &metrics, &Counting::default())
                    .pop()
                    .expect("one rule, one check");
                said_of_socket(&mut c, s.socket, class, &metrics);
                out.push(c);
            }
        }
    }
    Ok(out)
}

fn figure_as_metric(name: &str, unit: &str, d: &Derived) -> MetricValue {
    MetricValue {
        name: name.to_string(),
        title: name.to_string(),
        unit: unit.to_string(),
        group: "uncore".into(),
        formula: String::new(),
        origin: MetricOrigin::Vendor,
        value: d.value,
        reason: d.reason.clone(),
        events: Vec::new(),
        min_running_fraction: None,
        across_runs: false,
        interval: None,
    }
}

/// The check's text names its socket; a rule not checked says why its figures have no
/// value; a violation's cause is the uncore's, not the core counters'.
fn said_of_socket(c: &mut RuleCheck, socket: Option<u32>, class: &str, metrics: &[MetricValue]) {
    let on = socket.map_or("socket ?".to_string(), |n| format!("socket {n}"));
    c.text = format!("{on}: {}", c.text);
    match c.status {
        RuleStatus::NotChecked => {
            let why: Vec<String> = c
                .figures
                .iter()
                .filter(|f| f.value.is_none())
                .filter_map(|f| {
                    let m = metrics.iter().find(|m| m.name == f.name)?;
                    Some(format!("{}: {}", f.name, m.reason.as_deref()?))
                })
                .collect();
            if !why.is_empty() {
                c.text = format!("{} ({})", c.text, why.join("; "));
            }
        }
        RuleStatus::Violated if class == "intel_imc" => {
            c.cause = Some(format!(
                "UNC_M_CAS_COUNT.RD, .WR and .ALL are counted in one group on each memory-controller channel of {on} (the same running time, so multiplexing cannot part them) and ALL's umask is the union of RD's and WR's in Intel's event files: a CAS count is not what its event says on this CPU (ALL's encoding is chosen by the generation the kernel's cas_count_read and cas_count_write identify, crates/uncore/data/intel/imc-cas.json), or the counters were read while counting; report it with the uncore record"
            ));
        }
        RuleStatus::Violated => {
            c.cause = Some(format!(
                "the figures come from the uncore counted system-wide on {on}, each from the same counts of its boxes (crates/uncore/data/formulas.toml), so multiplexing cannot part them: the formulas do not split the same counts, or a count is not what its event says on this CPU; report it with the uncore record"
            ));
        }
        RuleStatus::Held => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_records::uncore::UncoreDevice;

    const RULE: &str = "intel-numa-local-remote-dram";

    fn device(name: &str, class: &str) -> UncoreDevice {
        UncoreDevice {
            name: name.into(),
            class: class.into(),
            pmu_type: 40,
            cpus: vec![0, 56],
            sockets: vec![0, 1],
            named_events: 0,
            counters: Some(4),
            counters_source: String::new(),
        }
    }

    fn socket(n: u32, local: Derived, remote: Derived) -> SocketFigures {
        let no = || Derived::absent("not asked for");
        SocketFigures {
            socket: Some(n),
            controllers: 0,
            read_bytes: no(),
            write_bytes: no(),
            total_bytes: no(),
            read_gbps: no(),
            write_gbps: no(),
            total_gbps: no(),
            llc_lookups: no(),
            llc_misses: no(),
            llc_hit_ratio: no(),
            directory_lookups: no(),
            directory_snoop_share: no(),
            snoops_sent: no(),
            link_tx_bytes: no(),
            numa_reads_addressed_to_local_dram: local,
            numa_reads_addressed_to_remote_dram: remote,
            all_cas_bytes: no(),
            read_percent_of_all_cas: no(),
            write_percent_of_all_cas: no(),
        }
    }

    const IMC_RULE: &str = "intel-imc-read-write-total";

    /// A socket of an iMC-only report: the CAS shares of the counted total.
    fn imc_socket(n: u32, read: Derived, write: Derived) -> SocketFigures {
        let no = || Derived::absent("no CHA counted");
        SocketFigures {
            all_cas_bytes: Derived::of(64e9),
            read_percent_of_all_cas: read,
            write_percent_of_all_cas: write,
            ..socket(n, no(), no())
        }
    }

    fn imc_report(sockets: Vec<SocketFigures>) -> UncoreReport {
        UncoreReport {
            devices: vec![device("uncore_imc_0", "intel_imc")],
            sockets,
            ..Default::default()
        }
    }

    fn report(class: &str, sockets: Vec<SocketFigures>) -> UncoreReport {
        UncoreReport {
            devices: vec![device("uncore_cha_0", class)],
            sockets,
            ..Default::default()
        }
    }

    #[test]
    fn every_uncore_rule_names_socket_figures_and_has_intels_source() {
        // A machine with every class the rules name (CHA and iMC).
        let mut r = report(
            "intel_cha",
            vec![socket(0, Derived::of(1.0), Derived::of(1.0))],
        );
        r.devices.push(device("uncore_imc_0", "intel_imc"));
        let checks = check_uncore(&r).unwrap();
        let (_, f) = files()
            .unwrap()
            .into_iter()
            .find(|(_, f)| f.is_uncore())
            .unwrap();
        for def in &f.rule {
            assert!(
                checks.iter().any(|c| c.rule == def.id),
                "{} names a figure a socket does not have",
                def.id
            );
        }
        let c = checks.iter().find(|c| c.rule == RULE).unwrap();
        assert!(c.source.contains("Intel perfmon") && c.source.contains("numalab's own"));
    }

    #[test]
    fn shares_that_add_up_hold() {
        // 74.99999895833346 + 25.000001041666536: the golden's SPR figures.
        let r = report(
            "intel_cha",
            vec![
                socket(
                    0,
                    Derived::of(74.999_998_958_333_46),
                    Derived::of(25.000_001_041_666_536),
                ),
                socket(1, Derived::of(62.5), Derived::of(37.5)),
            ],
        );
        let checks = check_uncore(&r).unwrap();
        assert_eq!(checks.len(), 2);
        for c in &checks {
            assert_eq!(c.status, RuleStatus::Held, "{}", c.text);
            assert!((c.actual.unwrap() - 100.0).abs() < 1e-9);
        }
        assert!(
            checks[1].text.starts_with("socket 1: "),
            "{}",
            checks[1].text
        );
    }

    #[test]
    fn shares_that_do_not_add_up_are_a_violation_with_the_figures_never_adjusted() {
        let r = report(
            "intel_cha",
            vec![socket(1, Derived::of(80.0), Derived::of(35.0))],
        );
        let c = check_uncore(&r).unwrap().pop().unwrap();
        assert_eq!(c.status, RuleStatus::Violated);
        assert_eq!(c.actual, Some(115.0));
        let values: Vec<Option<f64>> = c.figures.iter().map(|f| f.value).collect();
        assert_eq!(values, [Some(80.0), Some(35.0)]);
        assert!(c.text.starts_with("socket 1: "), "{}", c.text);
        assert!(c.text.contains("115%"), "{}", c.text);
        assert!(c.cause.as_deref().unwrap().contains("formulas"));
        // Just outside the tolerance (0.01 points) is a violation too.
        let r = report(
            "intel_cha",
            vec![socket(0, Derived::of(75.0), Derived::of(25.02))],
        );
        assert_eq!(check_uncore(&r).unwrap()[0].status, RuleStatus::Violated);
    }

    #[test]
    fn a_share_without_a_value_leaves_the_rule_unchecked_with_the_reason() {
        let why = "UNC_CHA_TOR_INSERTS.IA_MISS_DRD_PREF_REMOTE on uncore_cha_0 (CPU 0) not opened";
        let r = report(
            "intel_cha",
            vec![socket(0, Derived::of(75.0), Derived::absent(why))],
        );
        let c = check_uncore(&r).unwrap().pop().unwrap();
        assert_eq!(c.status, RuleStatus::NotChecked);
        assert!(
            c.text.contains("numa_reads_addressed_to_remote_dram"),
            "{}",
            c.text
        );
        assert!(c.text.contains(why), "{}", c.text);
        assert!(c.cause.is_none());
    }

    #[test]
    fn cas_reads_and_writes_that_make_the_counted_total_hold() {
        // 187_500_003 + 62_500_001 of 250_000_004 CAS, and just inside 0.1 points.
        let r = imc_report(vec![
            imc_socket(
                0,
                Derived::of(100.0 * 187_500_003.0 / 250_000_004.0),
                Derived::of(100.0 * 62_500_001.0 / 250_000_004.0),
            ),
            imc_socket(1, Derived::of(75.05), Derived::of(25.0)),
        ]);
        let checks = check_uncore(&r).unwrap();
        assert_eq!(checks.len(), 2, "only the iMC rule applies: {checks:?}");
        for c in &checks {
            assert_eq!(c.rule, IMC_RULE);
            assert_eq!(c.status, RuleStatus::Held, "{}", c.text);
        }
        assert!(checks[1].text.starts_with("socket 1: "));
    }

    #[test]
    fn cas_reads_and_writes_of_one_fifth_more_than_the_total_are_a_violation() {
        // RD + WR = 1.2 x ALL: 90% + 30% of the independently counted total.
        let r = imc_report(vec![imc_socket(0, Derived::of(90.0), Derived::of(30.0))]);
        let c = check_uncore(&r).unwrap().pop().unwrap();
        assert_eq!(c.rule, IMC_RULE);
        assert_eq!(c.status, RuleStatus::Violated);
        assert_eq!(c.actual, Some(120.0));
        let values: Vec<Option<f64>> = c.figures.iter().map(|f| f.value).collect();
        assert_eq!(values, [Some(90.0), Some(30.0)]);
        assert!(c.text.contains("120%"), "{}", c.text);
        let cause = c.cause.as_deref().unwrap();
        assert!(
            cause.contains("one group") && cause.contains("imc-cas.json"),
            "{cause}"
        );
        // Just outside the tolerance (0.1 points).
        let r = imc_report(vec![imc_socket(0, Derived::of(75.0), Derived::of(25.11))]);
        assert_eq!(check_uncore(&r).unwrap()[0].status, RuleStatus::Violated);
        assert!(c.source.contains("numalab's own") && c.source.contains("6dadedf"));
    }

    #[test]
    fn a_total_not_counted_leaves_the_cas_rule_unchecked_with_the_reason() {
        let why = "uncore_imc_0 has 3 counter(s) per box: UNC_M_CAS_COUNT.ALL needs one beside the clock, cas_count_read and cas_count_write";
        let r = imc_report(vec![imc_socket(
            0,
            Derived::absent(why),
            Derived::absent(why),
        )]);
        let c = check_uncore(&r).unwrap().pop().unwrap();
        assert_eq!(c.rule, IMC_RULE);
        assert_eq!(c.status, RuleStatus::NotChecked);
        assert!(c.text.contains("read_percent_of_all_cas"), "{}", c.text);
        assert!(c.text.contains(why), "{}", c.text);
        assert!(c.cause.is_none());
    }

    #[test]
    fn a_machine_without_the_rules_class_gets_no_check() {
        let none = || Derived::absent("no CHA");
        let r = report("amd_umc", vec![socket(0, none(), none())]);
        assert!(check_uncore(&r).unwrap().is_empty());
    }
}
