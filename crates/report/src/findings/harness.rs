//! The studies of the user's program: scale, policy, sweep.

#[allow(unused_imports)]
use super::*;

pub(super) fn harness(l: &Loaded, out: &mut Out<'_>) {
    for (_, s) in l.records_of::<ScaleSummary>() {
        let anchor = Some(anchors::scale_chart(out.b, &s.study_id));
        for f in &s.findings {
            out.push(
                "scale",
                Severity::Notice,
                format!("scaling of `{}` ({}): {f}", cmd(&s.command), s.placement),
                anchor.clone(),
            );
        }
    }
    for (_, s) in l.records_of::<PolicySummary>() {
        let anchor = Some(anchors::policy_chart(out.b, &s.study_id));
        // The study's findings already hold its class and recommendation.
        let lines = if s.findings.is_empty() {
            vec![format!("{} {}", s.classification, s.recommendation)]
        } else {
            s.findings.clone()
        };
        for f in lines {
            out.push(
                "policy",
                if s.single_node {
                    Severity::Info
                } else {
                    Severity::Notice
                },
                format!("memory policy of `{}`: {f}", cmd(&s.command)),
                anchor.clone(),
            );
        }
    }
    for (_, s) in l.records_of::<SweepSummary>() {
        let anchor = Some(anchors::sweep_chart(out.b, &s.study_id));
        for f in &s.findings {
            out.push(
                "sweep",
                Severity::Notice,
                format!("sweep of `{}`: {f}", cmd(&s.command)),
                anchor.clone(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use numalab_records::harness::{Placement, PolicyPlan, SweepPlan};

    fn command() -> Vec<String> {
        vec!["./bench".into(), "--threads".into(), "{threads}".into()]
    }

    fn scale(findings: &[&str]) -> ScaleSummary {
        ScaleSummary {
            study_id: "s1".into(),
            command: command(),
            placement: Placement::Compact,
            metric: "time".into(),
            throughput_unit: "runs/s".into(),
            repeat: 3,
            base_threads: Some(1),
            points: vec![],
            knees: vec![],
            under_subscribed: vec![],
            findings: findings.iter().map(|s| s.to_string()).collect(),
            failed_runs: 0,
        }
    }

    fn policy(findings: &[&str], single_node: bool) -> PolicySummary {
        PolicySummary {
            study_id: "p1".into(),
            command: command(),
            plan: PolicyPlan {
                threads: 4,
                placement: Placement::Compact,
                cpus: None,
                node: 0,
                interleave_nodes: vec![0, 1],
                cpu_nodes: vec![0],
                policies: vec![],
                memory_nodes: vec![0, 1],
            },
            metric: "time".into(),
            throughput_unit: "runs/s".into(),
            repeat: 3,
            results: vec![],
            single_node,
            class: "concentrated".into(),
            classification: "the pages sit on one node.".into(),
            recommended: None,
            recommendation: "Use interleave.".into(),
            command_line: None,
            findings: findings.iter().map(|s| s.to_string()).collect(),
            failed_runs: 0,
        }
    }

    fn sweep(findings: &[&str]) -> SweepSummary {
        SweepSummary {
            study_id: "w1".into(),
            command: command(),
            plan: SweepPlan {
                params: vec![],
                build: None,
                threads: None,
                placement: Placement::None,
                cpus: None,
            },
            metric: "time".into(),
            throughput_unit: "runs/s".into(),
            repeat: 3,
            points: vec![],
            best: None,
            fastest: None,
            findings: findings.iter().map(|s| s.to_string()).collect(),
            failed_runs: 0,
        }
    }

    #[test]
    fn each_scaling_finding_is_a_notice_naming_the_command_and_placement() {
        let l = loaded(vec![rec(
            "scale",
            &scale(&["knee at 8 threads", "under 75% busy at 16"]),
        )]);
        let f = run(&l, harness);
        let v = of(&f, "scale");
        assert_eq!(v.len(), 2, "{f:#?}");
        assert!(v.iter().all(|x| x.severity == Severity::Notice));
        assert_eq!(
            v[0].text,
            "scaling of `./bench --threads {threads}` (compact): knee at 8 threads"
        );
        assert!(v[1].text.ends_with(": under 75% busy at 16"));
    }

    #[test]
    fn a_study_without_findings_says_nothing_but_a_policy_study() {
        let l = loaded(vec![rec("scale", &scale(&[])), rec("sweep", &sweep(&[]))]);
        assert!(run(&l, harness).is_empty());
        // A policy study always has a class and a recommendation.
        let l = loaded(vec![rec("policy", &policy(&[], false))]);
        let f = run(&l, harness);
        says(
            &f,
            "policy",
            Severity::Notice,
            &["memory policy of `./bench --threads {threads}`: the pages sit on one node. Use interleave."],
        );
    }

    #[test]
    fn policy_findings_replace_the_class_and_are_info_on_one_node() {
        let l = loaded(vec![rec(
            "policy",
            &policy(&["interleave is 1.4x faster"], false),
        )]);
        let f = run(&l, harness);
        let t = says(
            &f,
            "policy",
            Severity::Notice,
            &["interleave is 1.4x faster"],
        );
        assert!(!t.contains("Use interleave."), "{t}");
        // One node with memory: every policy is the same, nothing to act on.
        let l = loaded(vec![rec("policy", &policy(&["all policies alike"], true))]);
        says(
            &run(&l, harness),
            "policy",
            Severity::Info,
            &["all policies alike"],
        );
    }

    #[test]
    fn sweep_findings_are_notices() {
        let l = loaded(vec![rec("sweep", &sweep(&["-O3 is 1.2x faster than -O2"]))]);
        let f = run(&l, harness);
        says(
            &f,
            "sweep",
            Severity::Notice,
            &["sweep of `./bench --threads {threads}`: -O3 is 1.2x faster than -O2"],
        );
        absent(&f, "scale");
        absent(&f, "policy");
    }

    #[test]
    fn long_commands_are_shortened_in_the_sentence() {
        let mut s = sweep(&["x"]);
        s.command = vec!["./a-very-long-program-name".into(); 5];
        let f = run(&loaded(vec![rec("sweep", &s)]), harness);
        let t = &one(&f, "sweep").text;
        let inside = t.split('`').nth(1).unwrap();
        assert_eq!(inside.chars().count(), 60, "{t}");
        assert!(inside.ends_with("..."), "{t}");
    }
}
