//! The reference workload: CPU use, scaling, shared against replicated data, per watt.

#[allow(unused_imports)]
use super::*;

pub(super) fn workload(l: &Loaded, m: Option<&Machine>, out: &mut Out<'_>) {
    let runs = crate::metrics::complete_runs(l);
    if runs.is_empty() {
        return;
    }
    let table = Some(anchors::workload_table(out.b));
    let chart = Some(anchors::workload_chart(out.b));
    // Under-use of the CPUs given: the worst run.
    let low: Vec<&WorkloadRun> = runs.iter().filter(|r| r.cpu_utilization < 0.75).collect();
    if let Some(w) = low
        .iter()
        .min_by(|a, b| a.cpu_utilization.total_cmp(&b.cpu_utilization))
    {
        let busy = w.cpu_utilization * w.threads as f64;
        let others = w
            .worker_cpus_busy
            .map(|b| (b - w.cpu_utilization).max(0.0))
            .unwrap_or(0.0);
        let steal = w.worker_cpus_steal.unwrap_or(0.0);
        let cause = if others > 0.2 || steal > 0.05 {
            let mut c = format!(
                "the machine was shared (other processes used {} of these CPUs",
                pct(others)
            );
            if steal >= 0.005 {
                c.push_str(&format!(", the hypervisor stole {}", pct(steal)));
            }
            c.push(')');
            c
        } else {
            "the clients waited (page faults, locks or I/O), not other processes".into()
        };
        let more = if low.len() > 1 {
            format!("; {} of {} runs were below 75%", low.len(), runs.len())
        } else {
            String::new()
        };
        out.push(
            "workload_cpus_idle",
            Severity::Warning,
            format!(
                "the workload kept {busy:.1} of {} CPU{} busy at {} thread{}: {cause}{more}",
                w.threads,
                if w.threads == 1 { "" } else { "s" },
                w.threads,
                if w.threads == 1 { "" } else { "s" },
            ),
            table.clone(),
        );
    }
    // Scaling: one thread against the most threads, per data mode.
    let modes: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.mode.name()).collect();
    for mode in &modes {
        let of: Vec<&WorkloadRun> = runs.iter().filter(|r| r.mode.name() == *mode).collect();
        let (Some(one), Some(full)) = (
            of.iter().find(|r| r.threads == 1),
            of.iter().max_by_key(|r| r.threads),
        ) else {
            continue;
        };
        if full.threads <= 1 || one.requests_per_s <= 0.0 {
            continue;
        }
        let total = full.requests_per_s / one.requests_per_s;
        let per = full.requests_per_s_per_thread / one.requests_per_s_per_thread;
        let shared = low.iter().any(|r| r.threads == full.threads);
        let (severity, text) = if per < 0.8 {
            (
                Severity::Notice,
                format!(
                    "reference workload ({mode}): per-thread throughput at {} threads is {} of one thread's (total requests/s: {} one thread's){}",
                    full.threads,
                    x(per),
                    x(total),
                    if shared {
                        ": the CPUs were shared during that run, so this is not the machine's scaling"
                    } else {
                        ""
                    }
                ),
            )
        } else {
            (
                Severity::Info,
                format!(
                    "reference workload ({mode}): {} threads give {} the requests/s of one thread ({} of one thread's per thread)",
                    full.threads,
                    x(total),
                    x(per)
                ),
            )
        };
        out.push("workload_scaling", severity, text, chart.clone());
    }
    // Shared against replicated data at the same load (experiments A: remote memory).
    let multi_node = m.is_some_and(|m| m.numa_nodes.iter().filter(|n| n.has_cpus).count() > 1);
    if multi_node {
        for shared in runs
            .iter()
            .filter(|r| r.mode.name() == "shared-first-touch")
        {
            if let Some(rep) = runs
                .iter()
                .find(|r| r.mode.name() == "replicated" && r.threads == shared.threads)
            {
                let ratio = rep.requests_per_s / shared.requests_per_s;
                if ratio > 1.1 {
                    out.push(
                        "workload_remote_data",
                        Severity::Notice,
                        format!(
                            "at {} threads, replicated data gives {} the requests/s of one shared copy: remote memory accesses limit the shared mode",
                            shared.threads,
                            x(ratio)
                        ),
                        table.clone(),
                    );
                }
            }
        }
    }
    if let Some(r) = runs
        .iter()
        .filter(|r| r.requests_per_joule.is_some())
        .max_by_key(|r| r.threads)
    {
        out.push(
            "workload_per_watt",
            Severity::Info,
            format!(
                "reference workload at {} threads: {:.1} requests per joule ({:.0} W, {})",
                r.threads,
                r.requests_per_joule.unwrap_or(0.0),
                r.power_watts.unwrap_or(0.0),
                r.power_covers.as_deref().unwrap_or("sensors")
            ),
            table.clone(),
        );
    }
}
