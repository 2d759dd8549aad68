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
    if let Some(h) = env
        .host
        .hypervisor
        .as_deref()
        .filter(|h| !h.is_empty() && !doctor_says)
    {
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
