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
        if let Some(t) = &p.tree {
            let what = if p.command.is_empty() {
                p.source
                    .path
                    .clone()
                    .unwrap_or_else(|| "the profile".into())
            } else {
                format!("`{}`", cmd(&p.command))
            };
            out.push(
                "profile_verdict",
                Severity::Notice,
                format!("profile of {what}: {}", t.verdict),
                Some(anchors::pmu_tree(out.b, &r.key)),
            );
        }
    }
}
