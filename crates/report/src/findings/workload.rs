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
        // That mode's own run at that thread count (another mode's busy run says
        // nothing about this one).
        let shared = low
            .iter()
            .any(|r| r.threads == full.threads && r.mode.name() == *mode);
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

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use numalab_records::workload::{CpuOrder, EaParams, GraphSummary, MemorySummary, Mode};
    use numalab_schema::memory::PageKind;

    /// A complete run: `threads` clients in `mode`, `rps` requests/s, the process
    /// keeping `util` of its CPUs busy, nothing else on them.
    fn wrun(mode: Mode, threads: usize, rps: f64, util: f64) -> WorkloadRun {
        WorkloadRun {
            threads,
            placement: CpuOrder::Compact,
            mode,
            pus: (0..threads as u32).collect(),
            pu_nodes: vec![0; threads],
            route_share: 0.5,
            ea: EaParams::default(),
            graph: GraphSummary {
                seed: 1,
                nodes: 100,
                edges: 200,
                width: 10,
                height: 10,
                mean_degree: 4.0,
                degree_histogram: vec![],
                weight_median_ms: 10,
                bytes: 1 << 20,
                bytes_per_node: 100.0,
                fingerprint: "00".into(),
                generation_s: 0.1,
                placement_s: 0.1,
            },
            duration_s: 10.0,
            warmup_s: 1.0,
            measured_s: 10.0,
            requests: (rps * 10.0) as u64,
            requests_route: 0,
            requests_itinerary: 0,
            requests_per_s: rps,
            requests_per_s_per_thread: rps / threads as f64,
            requests_per_s_slices: vec![rps],
            slice_s: 10.0,
            requests_per_s_interval: None,
            clients: vec![],
            latency: None,
            latency_route: None,
            latency_itinerary: None,
            settled_per_request: 100.0,
            cpu_utilization: util,
            requests_per_cpu_s: None,
            cpu_s: util * threads as f64 * 10.0,
            worker_cpus_busy: Some(util),
            worker_cpus_steal: Some(0.0),
            pages_per_node: vec![],
            memory: MemorySummary {
                numa_nodes: 1,
                modes_equivalent_here: true,
                page_kind: PageKind::Base,
                copies: vec![],
                state_bytes_per_client: 0,
            },
            power_watts: None,
            power_covers: None,
            power_unavailable_reason: None,
            requests_per_joule: None,
            power_sensors: vec![],
            temperatures: vec![],
            interrupted: false,
        }
    }

    fn findings_of(runs: Vec<WorkloadRun>, m: Option<&Machine>) -> Vec<Finding> {
        let records = runs
            .iter()
            .enumerate()
            .map(|(i, r)| rec(&format!("workload/{i}"), r))
            .collect();
        run(&loaded(records), |l, out| workload(l, m, out))
    }

    fn two_nodes() -> Machine {
        machine(
            &[&[0, 1, 2, 3, 4, 5, 6, 7]],
            &[(0, &[0, 1, 2, 3]), (1, &[4, 5, 6, 7])],
        )
    }

    const SHARED: Mode = Mode::SharedFirstTouch;

    // ------------------------------------------------------------ workload_cpus_idle

    #[test]
    fn a_shared_machine_is_a_warning_with_the_others_share() {
        // 8 clients at 30%: 2.4 CPUs busy; the CPUs were 90% busy in all, so other
        // processes used 90% - 30% = 60% of them.
        let mut r = wrun(SHARED, 8, 800.0, 0.3);
        r.worker_cpus_busy = Some(0.9);
        let f = findings_of(vec![r], None);
        let t = says(
            &f,
            "workload_cpus_idle",
            Severity::Warning,
            &[
                "kept 2.4 of 8 CPUs busy at 8 threads",
                "the machine was shared (other processes used 60% of these CPUs)",
            ],
        );
        assert!(
            !t.contains("stole") && !t.contains("runs were below"),
            "{t}"
        );
    }

    #[test]
    fn steal_time_is_named_as_the_hypervisors() {
        let mut r = wrun(SHARED, 1, 100.0, 0.5);
        r.worker_cpus_steal = Some(0.1);
        let f = findings_of(vec![r], None);
        says(
            &f,
            "workload_cpus_idle",
            Severity::Warning,
            &[
                "kept 0.5 of 1 CPU busy at 1 thread:",
                "other processes used 0% of these CPUs, the hypervisor stole 10%)",
            ],
        );
    }

    #[test]
    fn an_idle_machine_means_the_clients_waited_and_the_worst_run_is_named() {
        let runs = vec![
            wrun(SHARED, 1, 100.0, 0.95),
            wrun(SHARED, 2, 150.0, 0.6),
            wrun(SHARED, 4, 200.0, 0.5),
        ];
        let f = findings_of(runs, None);
        says(
            &f,
            "workload_cpus_idle",
            Severity::Warning,
            &[
                "kept 2.0 of 4 CPUs busy at 4 threads",
                "the clients waited",
                "; 2 of 3 runs were below 75%",
            ],
        );
    }

    #[test]
    fn busy_clients_or_no_complete_run_say_nothing() {
        absent(
            &findings_of(vec![wrun(SHARED, 4, 400.0, 0.75)], None),
            "workload_cpus_idle",
        );
        // Interrupted runs and runs without a request are not results.
        let mut cut = wrun(SHARED, 4, 400.0, 0.1);
        cut.interrupted = true;
        let mut none = wrun(SHARED, 4, 0.0, 0.1);
        none.requests = 0;
        assert!(findings_of(vec![cut, none], Some(&two_nodes())).is_empty());
    }

    // ------------------------------------------------------------ workload_scaling

    #[test]
    fn poor_per_thread_scaling_is_a_notice_with_both_ratios() {
        // 1 thread: 100/s; 8 threads: 400/s = 50/s per thread: 0.50x per thread,
        // 4.00x in total.
        let f = findings_of(
            vec![wrun(SHARED, 1, 100.0, 1.0), wrun(SHARED, 8, 400.0, 1.0)],
            None,
        );
        let t = says(
            &f,
            "workload_scaling",
            Severity::Notice,
            &[
                "reference workload (shared-first-touch): per-thread throughput at 8 threads is 0.50x of one thread's (total requests/s: 4.00x one thread's)",
            ],
        );
        assert!(!t.contains("shared during that run"), "{t}");
    }

    #[test]
    fn poor_scaling_on_a_shared_run_says_it_is_not_the_machines() {
        let f = findings_of(
            vec![wrun(SHARED, 1, 100.0, 1.0), wrun(SHARED, 8, 400.0, 0.5)],
            None,
        );
        says(
            &f,
            "workload_scaling",
            Severity::Notice,
            &["0.50x", ": the CPUs were shared during that run"],
        );
    }

    #[test]
    fn another_modes_busy_run_does_not_mark_this_ones_scaling_as_shared() {
        // Replicated at 8 threads ran on busy CPUs (50%); shared-first-touch at 8
        // threads had its CPUs (100%): its poor scaling is its own.
        let f = findings_of(
            vec![
                wrun(SHARED, 1, 100.0, 1.0),
                wrun(SHARED, 8, 400.0, 1.0),
                wrun(Mode::Replicated, 1, 100.0, 1.0),
                wrun(Mode::Replicated, 8, 400.0, 0.5),
            ],
            None,
        );
        let texts: Vec<&str> = f
            .iter()
            .filter(|x| x.id == "workload_scaling")
            .map(|x| x.text.as_str())
            .collect();
        let of = |m: &str| texts.iter().find(|t| t.contains(m)).copied().unwrap();
        assert!(
            !of("(shared-first-touch)").contains("shared during that run"),
            "{texts:?}"
        );
        assert!(
            of("(replicated)").contains("shared during that run"),
            "{texts:?}"
        );
    }

    #[test]
    fn good_scaling_is_info_per_mode() {
        // 8 threads: 720/s, 0.90x of one thread per thread, 7.20x in total.
        let f = findings_of(
            vec![
                wrun(SHARED, 1, 100.0, 1.0),
                wrun(SHARED, 8, 720.0, 1.0),
                wrun(Mode::Replicated, 1, 100.0, 1.0),
                wrun(Mode::Replicated, 8, 200.0, 1.0),
            ],
            None,
        );
        let v = of(&f, "workload_scaling");
        assert_eq!(v.len(), 2, "{f:#?}");
        // Modes in name order: replicated, then shared-first-touch.
        assert_eq!(v[0].severity, Severity::Notice);
        assert!(v[0].text.starts_with("reference workload (replicated)"));
        assert_eq!(v[1].severity, Severity::Info);
        assert_eq!(
            v[1].text,
            "reference workload (shared-first-touch): 8 threads give 7.20x the requests/s of one thread (0.90x of one thread's per thread)"
        );
    }

    #[test]
    fn scaling_needs_one_thread_and_more() {
        absent(
            &findings_of(
                vec![wrun(SHARED, 4, 400.0, 1.0), wrun(SHARED, 8, 500.0, 1.0)],
                None,
            ),
            "workload_scaling",
        );
        absent(
            &findings_of(vec![wrun(SHARED, 1, 100.0, 1.0)], None),
            "workload_scaling",
        );
    }

    // ------------------------------------------------------------ workload_remote_data

    #[test]
    fn replicated_data_faster_than_a_shared_copy_is_a_notice() {
        // 660 / 300 = 2.20x.
        let runs = vec![
            wrun(SHARED, 8, 300.0, 1.0),
            wrun(Mode::Replicated, 8, 660.0, 1.0),
        ];
        let f = findings_of(runs.clone(), Some(&two_nodes()));
        says(
            &f,
            "workload_remote_data",
            Severity::Notice,
            &["at 8 threads, replicated data gives 2.20x the requests/s of one shared copy"],
        );
        // One node with CPUs: the modes cannot differ by remote memory.
        let one = machine(
            &[&[0, 1, 2, 3, 4, 5, 6, 7]],
            &[(0, &[0, 1, 2, 3, 4, 5, 6, 7])],
        );
        absent(
            &findings_of(runs.clone(), Some(&one)),
            "workload_remote_data",
        );
        absent(&findings_of(runs, None), "workload_remote_data");
    }

    #[test]
    fn replicated_within_10_percent_or_at_other_thread_counts_is_not_remote_data() {
        let close = vec![
            wrun(SHARED, 8, 300.0, 1.0),
            wrun(Mode::Replicated, 8, 320.0, 1.0),
        ];
        absent(
            &findings_of(close, Some(&two_nodes())),
            "workload_remote_data",
        );
        let apart = vec![
            wrun(SHARED, 8, 300.0, 1.0),
            wrun(Mode::Replicated, 4, 600.0, 1.0),
        ];
        absent(
            &findings_of(apart, Some(&two_nodes())),
            "workload_remote_data",
        );
    }

    // ------------------------------------------------------------ workload_per_watt

    #[test]
    fn requests_per_joule_at_the_most_threads_measured_with_power() {
        let mut small = wrun(SHARED, 1, 100.0, 1.0);
        small.requests_per_joule = Some(5.0);
        small.power_watts = Some(20.0);
        let mut big = wrun(SHARED, 8, 720.0, 1.0);
        big.requests_per_joule = Some(7.2);
        big.power_watts = Some(100.0);
        big.power_covers = Some("package".into());
        // The largest run has no power figure: not chosen.
        let unpowered = wrun(SHARED, 16, 900.0, 1.0);
        let f = findings_of(vec![small, big, unpowered], None);
        let x = one(&f, "workload_per_watt");
        assert_eq!(x.severity, Severity::Info);
        assert_eq!(
            x.text,
            "reference workload at 8 threads: 7.2 requests per joule (100 W, package)"
        );
        absent(
            &findings_of(vec![wrun(SHARED, 8, 720.0, 1.0)], None),
            "workload_per_watt",
        );
    }
}
