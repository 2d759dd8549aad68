//! PMU: the check of the counters and the profiles' verdicts.

#[allow(unused_imports)]
use super::*;

pub(super) fn pmu(l: &Loaded, out: &mut Out<'_>) {
    let anchor = Some(anchors::pmu(out.b));
    for (_, c) in l.records_of::<PmuCheck>() {
        if !c.capability.hardware_pmu() {
            out.push(
                "no_hardware_pmu",
                Severity::Notice,
                format!(
                    "no hardware PMU: counters (cycles, instructions, cache misses) were not measured; {}",
                    c.verdict
                ),
                anchor.clone(),
            );
        }
        if let Some(a) = c.task_clock_agreement.filter(|a| (a - 1.0).abs() > 0.05) {
            out.push(
                "pmu_clock_disagrees",
                Severity::Warning,
                format!(
                    "the perf task clock disagrees with the thread's CPU-time clock ({} of it): counts from this machine are suspect",
                    x(a)
                ),
                anchor.clone(),
            );
        }
    }
    for (r, p) in l.records_of::<Profile>() {
        let what = if p.command.is_empty() {
            p.source
                .path
                .clone()
                .unwrap_or_else(|| "imported counts".into())
        } else {
            format!("`{}`", cmd(&p.command))
        };
        // A vendor invariant the metrics break: the figures are suspect, whatever the
        // verdict made of them.
        for c in p.consistency.iter().filter(|c| c.violated()) {
            out.push(
                "pmu_inconsistent",
                Severity::Warning,
                match &c.cause {
                    Some(why) => format!("profile of {what}: {}; {why}", c.text),
                    None => format!("profile of {what}: {}", c.text),
                },
                anchor.clone(),
            );
        }
        if let Some(t) = &p.tree {
            // A verdict is news; "no verdict" (missing or untrusted inputs) is context.
            let severity = if t.verdict.starts_with("no verdict") {
                Severity::Info
            } else {
                Severity::Notice
            };
            out.push(
                "profile_verdict",
                severity,
                format!("profile of {what}: {}", t.verdict),
                Some(anchors::pmu_tree(out.b, &r.key)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use numalab_records::pmu::{CpuMatch, Source, TreeReport};

    fn tree(verdict: &str, no_verdict: Option<&str>) -> TreeReport {
        TreeReport {
            ipc: Some(0.4),
            sides: vec![],
            dominant: Some("memory".into()),
            steps: vec![],
            findings: vec![],
            verdict: verdict.into(),
            sample_next: vec![],
            vendor_topdown: vec![],
            no_verdict: no_verdict.map(String::from),
            unevaluated: vec![],
        }
    }

    fn profile(command: &[&str], path: Option<&str>, tree: Option<TreeReport>) -> Profile {
        Profile {
            cpu: CpuMatch {
                catalog: "x86-64".into(),
                cpu: "some CPU".into(),
                how: "vendor GenuineIntel".into(),
            },
            source: Source {
                kind: if path.is_some() { "import" } else { "live" }.into(),
                path: path.map(String::from),
                format: None,
            },
            mode: "default".into(),
            scope: None,
            hardware_pmu: Some(true),
            counters: None,
            metric_set: "default".into(),
            command: command.iter().map(|s| s.to_string()).collect(),
            events: vec![],
            groups: vec![],
            runs: vec![],
            spread: vec![],
            metrics: vec![],
            tree,
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

    // ------------------------------------------------------------ no_hardware_pmu

    #[test]
    fn no_hardware_pmu_is_a_notice_with_the_checks_verdict() {
        let f = run(&loaded(vec![rec("check", &pmu_check(false, None))]), pmu);
        says(
            &f,
            "no_hardware_pmu",
            Severity::Notice,
            &["no hardware PMU", "; only software events can be counted"],
        );
    }

    #[test]
    fn a_working_pmu_or_no_check_says_nothing() {
        assert!(run(&loaded(vec![rec("check", &pmu_check(true, None))]), pmu).is_empty());
        assert!(run(&loaded(vec![]), pmu).is_empty());
    }

    // ------------------------------------------------------------ pmu_clock_disagrees

    #[test]
    fn a_task_clock_off_by_more_than_5_percent_is_a_warning() {
        for (a, shown) in [(1.2, "1.20x"), (0.9, "0.90x")] {
            let f = run(&loaded(vec![rec("check", &pmu_check(true, Some(a)))]), pmu);
            says(
                &f,
                "pmu_clock_disagrees",
                Severity::Warning,
                &[&format!("({shown} of it)"), "suspect"],
            );
        }
    }

    #[test]
    fn a_task_clock_within_5_percent_or_unknown_is_trusted() {
        for a in [Some(1.0), Some(1.04), Some(0.96), None] {
            let f = run(&loaded(vec![rec("check", &pmu_check(true, a))]), pmu);
            absent(&f, "pmu_clock_disagrees");
        }
    }

    // ------------------------------------------------------------ pmu_inconsistent

    #[test]
    fn a_violated_consistency_rule_is_a_warning_with_its_figures() {
        use numalab_records::pmu::{RuleCheck, RuleStatus};
        let check = |status: RuleStatus, text: &str| RuleCheck {
            rule: "intel-tma-level1".into(),
            title: "top-down level 1 sums to 100%".into(),
            status,
            figures: vec![],
            actual: Some(181.0),
            expected: "100% ± 5.0%".into(),
            text: text.into(),
            cause: Some("the groups were multiplexed 6 ways: ...; rerun with --exact".into()),
            source: "Yasin 2014".into(),
        };
        let mut p = profile(&["./bench"], None, None);
        p.consistency = vec![check(
            RuleStatus::Violated,
            "top-down level 1 sums to 100%: ... sums to 181%, expected 100% ± 5.0%",
        )];
        let f = run(&loaded(vec![rec("profile", &p)]), pmu);
        says(
            &f,
            "pmu_inconsistent",
            Severity::Warning,
            &[
                "profile of `./bench`",
                "sums to 181%",
                "multiplexed 6 ways",
                "--exact",
            ],
        );
        p.consistency = vec![check(RuleStatus::Held, "held")];
        absent(
            &run(&loaded(vec![rec("profile", &p)]), pmu),
            "pmu_inconsistent",
        );
    }

    // ------------------------------------------------------------ profile_verdict

    #[test]
    fn a_profiles_verdict_names_the_command() {
        let p = profile(
            &["./bench", "-n", "4"],
            None,
            Some(tree("memory bound: 62% of cycles stall on loads", None)),
        );
        let f = run(&loaded(vec![rec("pmu/profile/1", &p)]), pmu);
        let x = one(&f, "profile_verdict");
        assert_eq!(x.severity, Severity::Notice);
        assert_eq!(
            x.text,
            "profile of `./bench -n 4`: memory bound: 62% of cycles stall on loads"
        );
        assert!(x.anchor.is_some());
    }

    #[test]
    fn an_imported_profile_is_named_by_its_file_else_generically() {
        let p = profile(
            &[],
            Some("perf-stat.csv"),
            Some(tree("front-end bound", None)),
        );
        let f = run(&loaded(vec![rec("pmu/profile/1", &p)]), pmu);
        says(
            &f,
            "profile_verdict",
            Severity::Notice,
            &["profile of perf-stat.csv: front-end bound"],
        );
        let p = profile(&[], None, Some(tree("front-end bound", None)));
        let f = run(&loaded(vec![rec("pmu/profile/1", &p)]), pmu);
        says(
            &f,
            "profile_verdict",
            Severity::Notice,
            &["profile of imported counts: front-end bound"],
        );
    }

    #[test]
    fn a_profile_without_a_tree_says_nothing_and_no_verdict_is_passed_on() {
        let p = profile(&["./bench"], None, None);
        absent(&run(&loaded(vec![rec("p", &p)]), pmu), "profile_verdict");
        // A tree that reached no verdict says so rather than inventing one.
        let p = profile(
            &["./bench"],
            None,
            Some(tree(
                "no verdict: cycles were not counted",
                Some("cycles were not counted"),
            )),
        );
        let f = run(&loaded(vec![rec("p", &p)]), pmu);
        let v = one(&f, "profile_verdict");
        assert!(
            v.text.ends_with(": no verdict: cycles were not counted"),
            "{}",
            v.text
        );
        // Context, not news: no verdict is not a notice.
        assert_eq!(v.severity, Severity::Info);
    }
}
