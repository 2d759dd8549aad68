//! Counting a real child process on this machine (software events everywhere, hardware
//! events where a PMU exists), and the default/--exact orchestration with replayed
//! hardware counts (the development VM has no PMU).

use numalab_pmu::capability::{self, Capability, EventStatus};
use numalab_pmu::catalog::{self, CpuMatch};
use numalab_pmu::count::{Replay, ReplayBackend};
use numalab_pmu::metrics::EventState;
use numalab_pmu::profile::{self, ProfileConfig, ProfileError};
use numalab_proc::Spec;

fn hotspot() -> &'static str {
    env!("CARGO_BIN_EXE_numalab-pmu-hotspot")
}

fn this_cpu() -> CpuMatch {
    if std::env::consts::ARCH == "x86_64" {
        catalog::resolve_model("x86-64").unwrap()
    } else {
        catalog::resolve_model("neoverse-n1").unwrap()
    }
}

#[test]
fn software_events_of_a_real_run_with_threads() {
    let cap = capability::probe();
    let spec = Spec::new([hotspot(), "40", "2"]);
    let p = profile::profile(&spec, &ProfileConfig::new(this_cpu())).unwrap();
    let prof = &p.profile;
    assert_eq!(prof.runs.len(), 1);
    let outcome = &prof.runs[0].outcome;
    assert!(outcome.success(), "{}", outcome.describe());

    // The task clock (perf, inherited over both threads) agrees with the CPU time the
    // kernel reports through wait4: two independent measurements of the same thing.
    let task = prof.event("TASK_CLOCK").unwrap();
    assert_eq!(task.state, EventState::Counted);
    let task_ns = task.value.unwrap();
    let rusage_ns = (outcome.user_cpu_ns + outcome.sys_cpu_ns) as f64;
    assert!(
        (task_ns - rusage_ns).abs() <= 0.15 * rusage_ns + 5e6,
        "task-clock {task_ns} ns vs rusage {rusage_ns} ns"
    );
    assert!(prof.event("PAGE_FAULTS").unwrap().value.unwrap() > 10.0);
    for name in ["CONTEXT_SWITCHES", "CPU_MIGRATIONS"] {
        assert_eq!(
            prof.event(name).unwrap().state,
            EventState::Counted,
            "{name}"
        );
    }
    let wall = prof.event("DURATION_TIME").unwrap().value.unwrap();
    assert_eq!(wall, outcome.wall_ns as f64);
    let cpus = prof.metric("cpus_utilized").unwrap().value.unwrap();
    assert!((cpus - task_ns / wall).abs() < 1e-9);

    let ipc = prof.metric("ipc").unwrap();
    if cap.hardware_pmu() {
        assert!(ipc.value.unwrap() > 0.0, "{ipc:?}");
    } else {
        // No PMU: said once, and hardware metrics are n/a with the reason, never 0.
        assert!(p.warnings.iter().any(|w| w.code == "pmu.no_hardware"));
        assert_eq!(ipc.value, None);
        assert!(
            ipc.reason
                .as_deref()
                .unwrap()
                .contains("not supported by this PMU"),
            "{ipc:?}"
        );
        let cyc = &prof.events[0];
        assert!(!cyc.supported && cyc.value.is_none(), "{cyc:?}");
        assert!(prof
            .tree
            .as_ref()
            .unwrap()
            .verdict
            .starts_with("no verdict: this machine exposes no hardware PMU"));
    }
}

#[test]
fn failing_and_missing_commands() {
    let p = profile::profile(&Spec::new(["false"]), &ProfileConfig::new(this_cpu())).unwrap();
    assert_eq!(p.profile.runs[0].outcome.exit_code, Some(1));
    let w = p
        .warnings
        .iter()
        .find(|w| w.code == "pmu.workload_failed")
        .unwrap();
    assert!(w.message.contains("exited with status 1"), "{w}");

    let e = profile::profile(
        &Spec::new(["/nonexistent/numalab-no-such-program"]),
        &ProfileConfig::new(this_cpu()),
    )
    .unwrap_err();
    assert!(matches!(e, ProfileError::Proc(_)), "{e}");
    assert!(e.to_string().contains("command not found"), "{e}");
}

fn pmu_capability() -> Capability {
    Capability {
        paranoid: Some(2),
        privileged: true,
        cycles: EventStatus::Works,
        instructions: EventStatus::Works,
        task_clock: EventStatus::Works,
        page_faults: EventStatus::Works,
        context_switches: EventStatus::Works,
        pmus: vec!["armv8_pmuv3_0".into()],
    }
}

const N1_COUNTS: &[(&str, u64)] = &[
    ("CPU_CYCLES", 1_000_000_000),
    ("INST_RETIRED", 200_000_000),
    ("STALL_FRONTEND", 20_000_000),
    ("STALL_BACKEND", 830_000_000),
    ("L1D_CACHE", 60_000_000),
    ("L1D_CACHE_REFILL", 21_200_000),
    ("LL_CACHE_RD", 10_000_000),
    ("LL_CACHE_MISS_RD", 9_900_000),
    ("TASK_CLOCK", 400_000_000),
    ("CONTEXT_SWITCHES", 3),
    ("CPU_MIGRATIONS", 1),
    ("PAGE_FAULTS", 120),
];

#[test]
fn default_mode_scales_multiplexed_groups_and_warns() {
    let mut backend = ReplayBackend::with_counts(N1_COUNTS);
    backend.events.insert(
        "L1D_CACHE".into(),
        Replay::Count {
            value: 60_000_000,
            fraction: 0.5,
        },
    );
    backend
        .events
        .insert("L1D_CACHE_RD".into(), Replay::NotSupported);
    let mut cfg = ProfileConfig::new(catalog::resolve_model("neoverse-n1").unwrap());
    cfg.metrics = "cycles,l1d_mpki,l1d_miss_rate,ll_read_miss_rate".into();
    cfg.events = vec!["L1D_CACHE_RD".into()];
    let p = profile::profile_with(
        &Spec::new(["true"]),
        &cfg,
        &mut backend,
        &pmu_capability(),
        &mut |_, _| {},
    )
    .unwrap();
    let prof = &p.profile;
    assert_eq!(backend.opened, 1);
    // Metrics computed by hand from the counts above.
    let m = |n: &str| prof.metric(n).unwrap().value.unwrap();
    assert!((m("ipc") - 0.2).abs() < 1e-12);
    assert!((m("backend_stall_rate") - 0.83).abs() < 1e-12);
    assert!((m("l1d_mpki") - 106.0).abs() < 1e-9);
    // Half the time on a counter, scaled back up: 21.2e6 / 60e6.
    assert!((m("l1d_miss_rate") - 21.2 / 60.0).abs() < 1e-9);
    assert_eq!(
        prof.metric("l1d_miss_rate").unwrap().min_running_fraction,
        Some(0.5)
    );
    let l1d = prof
        .groups
        .iter()
        .find(|g| g.metrics.contains(&"l1d_miss_rate".to_string()))
        .unwrap();
    assert_eq!(l1d.running_fraction, Some(0.5));
    let w = p
        .warnings
        .iter()
        .find(|w| w.code == "pmu.multiplexed")
        .unwrap();
    assert!(w.message.contains("L1D_CACHE 50%"), "{w}");
    // An unsupported event is named, never 0.
    let rd = prof.event("L1D_CACHE_RD").unwrap();
    assert_eq!((rd.state, rd.value), (EventState::NotSupported, None));
    assert!(p
        .warnings
        .iter()
        .any(|w| w.code == "pmu.unsupported" && w.message.contains("L1D_CACHE_RD")));
    assert!(prof
        .tree
        .as_ref()
        .unwrap()
        .verdict
        .starts_with("back-end bound: 83% of cycles stalled in the back end"));
}

#[test]
fn exact_mode_runs_once_per_group_and_reports_the_spread() {
    let mut backend = ReplayBackend::with_counts(N1_COUNTS);
    backend.run_factors = vec![1.0, 1.02, 0.98, 1.0];
    let mut cfg = ProfileConfig::new(catalog::resolve_model("neoverse-n1").unwrap());
    cfg.metrics = "ipc,l1d_mpki,l1d_miss_rate,ll_read_miss_rate".into();
    cfg.exact = true;
    // Two counters: INST_RETIRED takes one (cycles is fixed), leaving one per run, so
    // l1d_miss_rate and ll_read_miss_rate must span runs.
    cfg.counters = Some(2);
    let mut seen = Vec::new();
    let p = profile::profile_with(
        &Spec::new(["true"]),
        &cfg,
        &mut backend,
        &pmu_capability(),
        &mut |run, runs| seen.push((run, runs)),
    )
    .unwrap();
    let prof = &p.profile;
    assert_eq!(prof.runs.len(), 4);
    assert_eq!(backend.opened, 4);
    assert_eq!(seen.len(), 4);
    for asked in &backend.asked {
        let hw = &asked[0];
        assert_eq!(&hw[..2], ["CPU_CYCLES", "INST_RETIRED"]);
        assert!(hw.len() <= 3, "{hw:?}");
    }
    let s = prof
        .spread
        .iter()
        .find(|s| s.event == "INST_RETIRED")
        .unwrap();
    assert_eq!(s.runs, 4);
    assert!((s.spread_pct - 4.0).abs() < 1e-6, "{s:?}");
    // Ratios within one run are exact; across runs they are normalised by instructions,
    // which removes the per-run factor here.
    let m = |n: &str| prof.metric(n).unwrap();
    assert!((m("ipc").value.unwrap() - 0.2).abs() < 1e-9);
    assert!((m("l1d_mpki").value.unwrap() - 106.0).abs() < 1e-6);
    assert!(m("l1d_miss_rate").across_runs);
    assert!((m("l1d_miss_rate").value.unwrap() - 21.2 / 60.0).abs() < 1e-9);
    assert!((m("ll_read_miss_rate").value.unwrap() - 0.99).abs() < 1e-9);
    assert!(p
        .warnings
        .iter()
        .any(|w| w.code == "pmu.metric_across_runs"));
}

#[test]
fn kernel_counting_denied_falls_back_to_user_space() {
    let mut backend = ReplayBackend::default();
    for (n, v) in N1_COUNTS {
        backend
            .events
            .insert(n.to_string(), Replay::DeniedWithKernel { value: *v });
    }
    let mut cfg = ProfileConfig::new(catalog::resolve_model("neoverse-n1").unwrap());
    cfg.metrics = "cycles".into();
    let p = profile::profile_with(
        &Spec::new(["true"]),
        &cfg,
        &mut backend,
        &pmu_capability(),
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(backend.opened, 2, "opened with kernel, then user only");
    assert_eq!(p.profile.scope.as_deref(), Some("user"));
    assert!(p.warnings.iter().any(|w| w.code == "pmu.user_only"));
    let ipc = p.profile.metric("ipc").unwrap();
    assert!((ipc.value.unwrap_or(0.0) - 0.2).abs() < 1e-12, "{ipc:?}");

    // Denied even in user space: an error naming the paranoid value needed.
    let mut backend = ReplayBackend::default();
    for (n, _) in N1_COUNTS {
        backend.events.insert(n.to_string(), Replay::Denied);
    }
    let mut cap = pmu_capability();
    cap.privileged = false;
    cap.paranoid = Some(3);
    let e = profile::profile_with(
        &Spec::new(["true"]),
        &cfg,
        &mut backend,
        &cap,
        &mut |_, _| {},
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with("perf_event_paranoid = 3 forbids counting"),
        "{msg}"
    );
    assert!(msg.contains("<= 2"), "{msg}");
}

/// The real backend with a multi-event group, inherited over a child's threads: the
/// same perf_event_open path hardware groups take, exercised with software events.
#[test]
fn real_backend_reads_an_inherited_group() {
    use numalab_pmu::count::{Backend, OpenOptions, PerfBackend};
    let cat = catalog::load_match(&this_cpu()).unwrap();
    let group: Vec<_> = ["TASK_CLOCK", "PAGE_FAULTS", "CONTEXT_SWITCHES"]
        .iter()
        .map(|n| cat.resolve_event(n).unwrap())
        .collect();
    let mut spec = Spec::new([hotspot(), "20", "2"]);
    spec.gated = true;
    let mut running = numalab_proc::spawn(&spec).unwrap();
    let mut session = PerfBackend.open(
        running.pid(),
        &[group],
        OpenOptions {
            include_kernel: false,
        },
    );
    assert!(
        session.statuses()[0].iter().all(|s| s.works()),
        "{:?}",
        session.statuses()
    );
    running.release().unwrap();
    let outcome = running.wait();
    assert!(outcome.success());
    let r = session.read().remove(0).unwrap();
    assert!(
        r.time_enabled_ns > 0 && r.time_running_ns == r.time_enabled_ns,
        "{r:?}"
    );
    let task = r.counts[0].unwrap() as f64;
    let cpu = (outcome.user_cpu_ns + outcome.sys_cpu_ns) as f64;
    assert!(
        (task - cpu).abs() <= 0.15 * cpu + 5e6,
        "task {task} vs cpu {cpu}"
    );
    assert!(r.counts[1].unwrap() > 10, "{r:?}");
    assert!(r.counts[2].is_some());
}
