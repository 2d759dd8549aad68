//! The machine and the run itself: bundle problems, host facts (VM, debug build), the topology, evaluate steps, the doctor.

#[allow(unused_imports)]
use super::*;

pub(super) fn bundle_problems(l: &Loaded, out: &mut Out<'_>) {
    for w in &l.warnings {
        out.push("bundle_problem", Severity::Warning, w.to_string(), None);
    }
}

pub(super) fn host(l: &Loaded, out: &mut Out<'_>) {
    let env = &l.bundle.envelope;
    if env.origin == Origin::Modeled {
        return;
    }
    if env.tool.profile == "debug" {
        out.push(
            "debug_build",
            Severity::Warning,
            "written by a debug build of numalab: measured speeds (bandwidth, throughput) are not representative; rebuild with --release".into(),
            None,
        );
    }
    // The doctor's own hypervisor check says the same, with a remedy.
    let doctor_says = l.records_of::<DoctorReport>().iter().any(|(_, d)| {
        d.checks
            .iter()
            .any(|c| c.name == "hypervisor" && c.verdict != Verdict::Ok)
    });
    if let Some(h) = crate::facts::hypervisor(l).filter(|_| !doctor_says) {
        out.push(
            "virtual_machine",
            Severity::Info,
            format!("measured in a virtual machine ({h}): vCPUs share physical cores with other tenants and the NUMA layout is what the hypervisor shows; compare figures only within one run"),
            None,
        );
    }
}

pub(super) fn topology(l: &Loaded, m: Option<&Machine>, out: &mut Out<'_>) {
    // Only bundles that set out to describe the machine (evaluate) say this.
    if l.records_of::<TopologyRecord>().is_empty() {
        return;
    }
    let Some(m) = m else { return };
    let anchor = Some(anchors::topology(out.b));
    let cpu_nodes = m.numa_nodes.iter().filter(|n| n.has_cpus).count();
    if m.packages.len() > 1 {
        let parts: Vec<String> = m
            .packages
            .iter()
            .enumerate()
            .map(|(i, p)| format!("CPUs {} on package {i}", cpulist::format(&p.cpus)))
            .collect();
        out.push(
            "packages",
            Severity::Info,
            format!(
                "{} packages, {} NUMA node(s): {}; threads placed past the first package's CPUs run on another socket, and their memory may be remote",
                m.packages.len(),
                m.numa_nodes.len(),
                parts.join(", ")
            ),
            anchor.clone(),
        );
    }
    if cpu_nodes <= 1 {
        out.push(
            "one_numa_node",
            Severity::Info,
            "one NUMA node with CPUs: local and remote memory cannot be told apart here; remote-memory costs need a machine with several nodes".into(),
            anchor.clone(),
        );
    }
    for n in m.numa_nodes.iter().filter(|n| !n.has_cpus) {
        out.push(
            "memory_only_node",
            Severity::Info,
            format!(
                "NUMA node {} has memory but no CPUs ({}{}): data placed there is remote to every thread",
                n.os_index,
                numalab_schema::units::bytes(n.memory_bytes),
                n.subtype.as_deref().map(|s| format!(", {s}")).unwrap_or_default()
            ),
            anchor.clone(),
        );
    }
}

pub(super) fn steps(l: &Loaded, out: &mut Out<'_>) {
    let anchor = Some(anchors::steps(out.b));
    let latest =
        crate::records::latest_steps(l.records_of::<StepRecord>().into_iter().map(|(_, s)| s));
    for s in latest {
        match &s.outcome {
            StepStatus::Done => {}
            StepStatus::Failed { error } => out.push(
                "step_failed",
                Severity::Warning,
                format!("the {} step failed: {error}", s.title),
                anchor.clone(),
            ),
            StepStatus::Skipped { reason } => out.push(
                "step_skipped",
                Severity::Info,
                format!("not measured: {} ({reason})", s.title),
                anchor.clone(),
            ),
        }
    }
}

pub(super) fn doctor(l: &Loaded, out: &mut Out<'_>) {
    let has_pmu_check = !l.records_of::<PmuCheck>().is_empty();
    let anchor = Some(anchors::doctor(out.b));
    for (_, d) in l.records_of::<DoctorReport>() {
        for c in &d.checks {
            let Check {
                name,
                verdict,
                detail,
                remedy,
                ..
            } = c;
            if name == "pmu" && has_pmu_check {
                continue;
            }
            let severity = match verdict {
                Verdict::Fail => Severity::Warning,
                Verdict::Warn => Severity::Notice,
                _ => continue,
            };
            let text = match remedy {
                Some(r) => format!("{name}: {detail} ({r})"),
                None => format!("{name}: {detail}"),
            };
            out.push("doctor", severity, text, anchor.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use numalab_schema::Warning;

    fn check(name: &str, verdict: Verdict, remedy: Option<&str>) -> Check {
        Check {
            name: name.into(),
            verdict,
            value: None,
            detail: format!("{name} detail"),
            remedy: remedy.map(String::from),
        }
    }

    fn doctor_report(checks: Vec<Check>) -> numalab_schema::Record {
        rec(
            "doctor",
            &DoctorReport {
                schema_version: 1,
                hostname: None,
                checks,
            },
        )
    }

    fn step(id: &str, title: &str, outcome: StepStatus) -> numalab_schema::Record {
        rec(
            &format!("step/{id}"),
            &StepRecord {
                step: id.into(),
                title: title.into(),
                outcome,
                seconds: 1.0,
                run: None,
            },
        )
    }

    fn topo(m: &Machine) -> numalab_schema::Record {
        rec(
            "topo",
            &TopologyRecord {
                machine: m.clone(),
                summary_text: String::new(),
            },
        )
    }

    fn topology_of(l: &Loaded) -> Vec<Finding> {
        let m = machine_of(l);
        run(l, |l, out| topology(l, m.as_ref(), out))
    }

    // ------------------------------------------------------------ bundle_problems

    #[test]
    fn every_reading_problem_is_a_warning_with_its_remedy() {
        let mut l = loaded(vec![]);
        l.warnings
            .push(Warning::new("cut", "the last line was cut"));
        l.warnings
            .push(Warning::new("newer", "written by numalab 9").with_remedy("upgrade"));
        let f = run(&l, bundle_problems);
        let texts: Vec<&str> = of(&f, "bundle_problem")
            .iter()
            .map(|x| x.text.as_str())
            .collect();
        assert_eq!(
            texts,
            ["the last line was cut", "written by numalab 9 (upgrade)"]
        );
        assert!(f.iter().all(|x| x.severity == Severity::Warning));
    }

    #[test]
    fn a_clean_bundle_has_no_problem() {
        assert!(run(&loaded(vec![]), bundle_problems).is_empty());
    }

    // ------------------------------------------------------------ host

    #[test]
    fn a_debug_build_is_a_warning_unless_modeled() {
        let mut env = envelope();
        env.tool.profile = "debug".into();
        let f = run(&loaded_with(env.clone(), vec![]), host);
        says(&f, "debug_build", Severity::Warning, &["--release"]);
        // A model measures nothing: the build does not matter.
        env.origin = Origin::Modeled;
        assert!(run(&loaded_with(env, vec![]), host).is_empty());
        // A release build says nothing.
        absent(&run(&loaded(vec![]), host), "debug_build");
    }

    #[test]
    fn a_virtual_machine_is_named() {
        let mut env = envelope();
        env.host.hypervisor = Some("KVM".into());
        let f = run(&loaded_with(env.clone(), vec![]), host);
        says(
            &f,
            "virtual_machine",
            Severity::Info,
            &["measured in a virtual machine (KVM)"],
        );
        // An empty, "none" or absent hypervisor is bare metal.
        env.host.hypervisor = Some(String::new());
        absent(
            &run(&loaded_with(env.clone(), vec![]), host),
            "virtual_machine",
        );
        env.host.hypervisor = Some("none".into());
        absent(&run(&loaded_with(env, vec![]), host), "virtual_machine");
        absent(&run(&loaded(vec![]), host), "virtual_machine");
    }

    #[test]
    fn the_doctors_hypervisor_check_replaces_the_vm_sentence() {
        let mut env = envelope();
        env.host.hypervisor = Some("KVM".into());
        let warned = loaded_with(
            env.clone(),
            vec![doctor_report(vec![check(
                "hypervisor",
                Verdict::Warn,
                None,
            )])],
        );
        absent(&run(&warned, host), "virtual_machine");
        // A doctor that found nothing wrong with the hypervisor does not say it.
        let ok = loaded_with(
            env,
            vec![doctor_report(vec![check("hypervisor", Verdict::Ok, None)])],
        );
        one(&run(&ok, host), "virtual_machine");
    }

    // ------------------------------------------------------------ topology

    #[test]
    fn two_packages_are_listed_with_their_cpus() {
        let m = machine(
            &[&[0, 1, 2, 3], &[4, 5, 6, 7]],
            &[(0, &[0, 1, 2, 3]), (1, &[4, 5, 6, 7])],
        );
        let f = topology_of(&loaded(vec![topo(&m)]));
        says(
            &f,
            "packages",
            Severity::Info,
            &[
                "2 packages, 2 NUMA node(s)",
                "CPUs 0-3 on package 0, CPUs 4-7 on package 1",
            ],
        );
        // Two nodes with CPUs: remote memory can be measured.
        absent(&f, "one_numa_node");
        assert_eq!(f[0].anchor.as_deref(), Some("topology"));
    }

    #[test]
    fn one_node_with_cpus_says_remote_memory_cannot_be_measured() {
        let m = machine(&[&[0, 1]], &[(0, &[0, 1])]);
        let f = topology_of(&loaded(vec![topo(&m)]));
        one(&f, "one_numa_node");
        absent(&f, "packages");
        absent(&f, "memory_only_node");
    }

    #[test]
    fn a_memory_only_node_is_named_with_its_size_and_kind() {
        let mut m = machine(&[&[0, 1]], &[(0, &[0, 1])]);
        add_memory_node(&mut m, 2, 16 << 30, Some("HBM"));
        add_memory_node(&mut m, 3, 3 << 29, None);
        let f = topology_of(&loaded(vec![topo(&m)]));
        let texts: Vec<&str> = of(&f, "memory_only_node")
            .iter()
            .map(|x| x.text.as_str())
            .collect();
        assert_eq!(texts.len(), 2, "{f:#?}");
        assert!(texts[0].starts_with("NUMA node 2 has memory but no CPUs (16 GiB, HBM)"));
        assert!(texts[1].starts_with("NUMA node 3 has memory but no CPUs (1.5 GiB)"));
        // Memory-only nodes do not count as nodes with CPUs.
        one(&f, "one_numa_node");
    }

    #[test]
    fn the_topology_is_described_only_by_bundles_that_describe_the_machine() {
        // The envelope's machine alone (a study, not an evaluation): nothing.
        let mut env = envelope();
        env.host.topology = Some(machine(&[&[0], &[1]], &[(0, &[0]), (1, &[1])]));
        assert!(topology_of(&loaded_with(env, vec![])).is_empty());
    }

    // ------------------------------------------------------------ steps

    #[test]
    fn failed_and_skipped_steps_are_said_done_ones_not() {
        let l = loaded(vec![
            step("mem", "memory", StepStatus::Done),
            step(
                "c2c",
                "core-to-core",
                StepStatus::Failed {
                    error: "no second CPU".into(),
                },
            ),
            step(
                "power",
                "power and frequency",
                StepStatus::Skipped {
                    reason: "no sensors".into(),
                },
            ),
        ]);
        let f = run(&l, steps);
        assert_eq!(f.len(), 2, "{f:#?}");
        says(
            &f,
            "step_failed",
            Severity::Warning,
            &["the core-to-core step failed: no second CPU"],
        );
        says(
            &f,
            "step_skipped",
            Severity::Info,
            &["not measured: power and frequency (no sensors)"],
        );
    }

    #[test]
    fn a_step_completed_by_a_later_run_is_not_a_failure() {
        let l = loaded(vec![
            step(
                "c2c",
                "core-to-core",
                StepStatus::Failed {
                    error: "killed".into(),
                },
            ),
            step("c2c", "core-to-core", StepStatus::Done),
        ]);
        assert!(run(&l, steps).is_empty());
        // The other way round: the last outcome (failed) is what counts.
        let l = loaded(vec![
            step("c2c", "core-to-core", StepStatus::Done),
            step(
                "c2c",
                "core-to-core",
                StepStatus::Failed {
                    error: "killed".into(),
                },
            ),
        ]);
        one(&run(&l, steps), "step_failed");
    }

    // ------------------------------------------------------------ doctor

    #[test]
    fn doctor_failures_are_warnings_and_caveats_notices() {
        let l = loaded(vec![doctor_report(vec![
            check("numa", Verdict::Fail, Some("install libnuma")),
            check("smt", Verdict::Warn, None),
            check("clock", Verdict::Ok, None),
            check("kernel", Verdict::Info, None),
        ])]);
        let f = run(&l, doctor);
        let got: Vec<(Severity, &str)> = f.iter().map(|x| (x.severity, x.text.as_str())).collect();
        assert_eq!(
            got,
            [
                (Severity::Warning, "numa: numa detail (install libnuma)"),
                (Severity::Notice, "smt: smt detail"),
            ]
        );
    }

    #[test]
    fn the_pmu_check_record_replaces_the_doctors_pmu_line() {
        let report = || doctor_report(vec![check("pmu", Verdict::Warn, None)]);
        one(&run(&loaded(vec![report()]), doctor), "doctor");
        let c = pmu_check(true, None);
        let both = loaded(vec![report(), rec("pmu", &c)]);
        absent(&run(&both, doctor), "doctor");
    }

    #[test]
    fn no_doctor_report_no_doctor_finding() {
        assert!(run(&loaded(vec![]), doctor).is_empty());
    }
}
