//! Counting a real child process on this machine (software events everywhere, hardware
//! events where a PMU exists), and the default/--exact orchestration with replayed
//! hardware counts (the development VM has no PMU).

use numalab_pmu::capability::{self, Capability, EventStatus};
use numalab_pmu::catalog::{self, CpuMatch};
use numalab_pmu::count::{self, Replay, ReplayBackend};
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
    let lost_before = time_not_charged_ns();
    let p = profile::profile(&spec, &ProfileConfig::new(this_cpu())).unwrap();
    let lost = time_not_charged_ns() - lost_before;
    let prof = &p.profile;
    assert_eq!(prof.runs.len(), 1);
    let outcome = &prof.runs[0].outcome;
    assert!(outcome.success(), "{}", outcome.describe());

    // The task clock (perf, inherited over both threads) agrees with the CPU time the
    // kernel reports through wait4: two independent measurements of the same thing, up
    // to what the hypervisor stole and interrupt time (in perf's clock only; CI's VM on
    // a busy host: task-clock 400.2 ms vs 145.6 ms charged), bounded by the whole
    // machine's steal and interrupt time over the run plus one tick of /proc/stat.
    let task = prof.event("TASK_CLOCK").unwrap();
    assert_eq!(task.state, EventState::Counted);
    let task_ns = task.value.unwrap();
    let rusage_ns = (outcome.user_cpu_ns + outcome.sys_cpu_ns) as f64;
    let slack = 0.15 * rusage_ns + 5e6;
    assert!(
        task_ns - rusage_ns <= slack + lost + 1e7 && rusage_ns - task_ns <= slack,
        "task-clock {task_ns} ns vs rusage {rusage_ns} ns (steal and interrupt time over the run: {lost} ns)"
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
    let mut cfg = n1_config(None);
    cfg.metrics = "cycles,l1d_mpki,l1d_miss_rate,ll_read_miss_rate".into();
    cfg.events = vec!["L1D_CACHE_RD".into()];
    // Two programmable counters, so the metrics need several groups.
    cfg.counters = Some(2);
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
    assert!(w.message.contains("L1D_CACHE only 50%"), "{w}");
    // The uncertainty: half the run, rotations unknown (no sysfs interval under this
    // sysroot), so +-50% on each of the group's values, and the miss rate's range is
    // the ratio over those intervals: 21.2/60 x [0.5/1.5, 1.5/0.5].
    let refill = l1d
        .values
        .iter()
        .find(|v| v.name == "L1D_CACHE_REFILL")
        .unwrap();
    let u = refill.uncertainty.as_ref().unwrap();
    assert_eq!(
        (u.typical, u.worst, u.basis.as_str()),
        (0.5, 0.5, "fraction only")
    );
    let r = prof
        .metric("l1d_miss_rate")
        .unwrap()
        .interval
        .clone()
        .unwrap();
    let rate = 21.2 / 60.0;
    assert!((r.low.unwrap() - rate / 3.0).abs() < 1e-9, "{r:?}");
    assert!((r.high.unwrap() - rate * 3.0).abs() < 1e-9, "{r:?}");
    // Fully counted metrics carry no range.
    assert_eq!(prof.metric("ipc").unwrap().interval, None);
    let mux = prof.multiplexing.as_ref().unwrap();
    assert_eq!(mux.rotations, None);
    assert_eq!(mux.min_running_fraction, 0.5);
    assert_eq!((mux.typical, mux.worst), (0.5, 0.5));
    // Default mode packs: the groups are the fewest the counters allow, fewer than
    // one group per metric.
    let c = catalog::load_match(&cfg.cpu).unwrap();
    let (names, extra) = profile::selection(&c, &cfg.metrics, &cfg.events).unwrap();
    let per_metric = count::plan_default(&c, &names, &extra, 2).groups.len();
    let packed = count::plan_packed(&c, &names, &extra, 2).groups.len();
    assert!(packed < per_metric, "{packed} {per_metric}");
    assert_eq!(
        (mux.groups, mux.fewest_groups),
        (Some(packed), Some(packed))
    );
    let hw_asked = backend.asked[0].len() - 4; // the 4 software events, one group each
    assert_eq!(hw_asked, packed, "{:?}", backend.asked[0]);
    assert_eq!(
        numalab_pmu::mux::line(mux),
        format!("multiplexed: {packed} groups, rotations unknown in 1.00 s; values carry +-50% (worst 50%)")
    );
    // The fields survive the record's JSON.
    let back: numalab_pmu::profile::Profile =
        serde_json::from_value(serde_json::to_value(prof).unwrap()).unwrap();
    assert_eq!(&back, prof);
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
    let mut cfg = n1_config(None);
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
    let mut cfg = n1_config(None);
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

/// Steal, interrupt and soft-interrupt time of every CPU so far (`/proc/stat`'s first
/// line, USER_HZ ticks of 10 ms), ns: time a task's perf clock counts but the kernel does
/// not charge it.
fn time_not_charged_ns() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let f: Vec<f64> = stat
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().unwrap())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    (f[5] + f[6] + f[7]) * 1e7
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
        &numalab_pmu::count::Target::Child(running.pid()),
        &[group],
        OpenOptions {
            include_kernel: false,
            raw_type: None,
        },
    );
    assert!(
        session.statuses()[0].iter().all(|s| s.works()),
        "{:?}",
        session.statuses()
    );
    let lost_before = time_not_charged_ns();
    running.release().unwrap();
    let outcome = running.wait();
    assert!(outcome.success());
    let lost = time_not_charged_ns() - lost_before;
    let r = session.read().remove(0).unwrap();
    assert!(
        r.time_enabled_ns > 0 && r.time_running_ns == r.time_enabled_ns,
        "{r:?}"
    );
    let task = r.counts[0].unwrap() as f64;
    let cpu = (outcome.user_cpu_ns + outcome.sys_cpu_ns) as f64;
    // task-clock runs on perf's clock while the task is on a CPU; the CPU time the kernel
    // charges the process leaves out what the hypervisor stole and interrupt time
    // (CI's VM: task 65.7 ms vs 51.9 ms charged on a busy host). So task-clock may exceed
    // the charged time by up to the steal and interrupt time of the whole machine over
    // the run (an upper bound), plus one tick of /proc/stat's resolution.
    assert!(
        task - cpu <= 0.15 * cpu + 5e6 + lost + 1e7 && cpu - task <= 0.15 * cpu + 5e6,
        "task {task} vs cpu {cpu} (steal and interrupt time over the run: {lost} ns)"
    );
    assert!(r.counts[1].unwrap() > 10, "{r:?}");
    assert!(r.counts[2].is_some());
}

/// The N1 catalog, with the core PMU read under `sysroot` (None: a root with no sysfs,
/// so nothing is filtered whatever machine runs the test).
fn n1_config(sysroot: Option<&std::path::Path>) -> ProfileConfig {
    let mut cfg = ProfileConfig::new(catalog::resolve_model("neoverse-n1").unwrap());
    cfg.sysroot = sysroot
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| "/nonexistent-numalab-sysroot".into());
    cfg
}

/// Writes a fake Arm core PMU under `root` (as the kernel's arm_pmuv3 driver shows it).
fn fake_pmu(root: &std::path::Path, name: &str, ty: u32, events: &[(&str, u64)]) {
    let d = root.join("sys/bus/event_source/devices").join(name);
    std::fs::create_dir_all(d.join("events")).unwrap();
    std::fs::write(d.join("type"), format!("{ty}\n")).unwrap();
    std::fs::write(d.join("cpus"), "0-1\n").unwrap();
    for (n, c) in events {
        std::fs::write(d.join("events").join(n), format!("event=0x{c:04x}\n")).unwrap();
    }
}

/// What QEMU `-cpu neoverse-n1` shows (without -icount).
const EMULATED_N1: &[(&str, u64)] = &[
    ("cpu_cycles", 0x11),
    ("stall_frontend", 0x23),
    ("stall_backend", 0x24),
];

/// A backend where every catalog event opens and reads 0 (what the emulated PMU did),
/// except cycles (1e8) and the software events.
fn emulator_backend() -> ReplayBackend {
    let c = catalog::load("neoverse-n1").unwrap();
    let mut b = ReplayBackend::default();
    for e in &c.events {
        b.events.insert(
            e.name.clone(),
            Replay::Count {
                value: 0,
                fraction: 1.0,
            },
        );
    }
    for (n, v) in [
        ("CPU_CYCLES", 100_000_000u64),
        ("TASK_CLOCK", 45_000_000),
        ("CONTEXT_SWITCHES", 1),
        ("PAGE_FAULTS", 150),
    ] {
        b.events.insert(
            n.into(),
            Replay::Count {
                value: v,
                fraction: 1.0,
            },
        );
    }
    b
}

#[test]
fn emulated_n1_unlisted_events_are_not_opened_and_zero_stalls_are_not_trusted() {
    let root = tempfile::tempdir().unwrap();
    fake_pmu(root.path(), "armv8_pmuv3", 8, EMULATED_N1);
    let mut backend = emulator_backend();
    let cfg = n1_config(Some(root.path()));
    let p = profile::profile_with(
        &Spec::new(["true"]),
        &cfg,
        &mut backend,
        &pmu_capability(),
        &mut |_, _| {},
    )
    .unwrap();
    let prof = &p.profile;
    // Only the advertised events were opened, with the PMU's own type.
    let opened: std::collections::BTreeSet<String> =
        backend.asked[0].iter().flatten().cloned().collect();
    let hw: Vec<&String> = opened
        .iter()
        .filter(|n| {
            ![
                "TASK_CLOCK",
                "CONTEXT_SWITCHES",
                "CPU_MIGRATIONS",
                "PAGE_FAULTS",
            ]
            .contains(&n.as_str())
        })
        .collect();
    assert_eq!(
        hw,
        ["CPU_CYCLES", "STALL_BACKEND", "STALL_FRONTEND"],
        "{opened:?}"
    );
    assert_eq!(backend.raw_types, [Some(8)]);

    // Not advertised: named unsupported, never a zero.
    for n in ["BR_RETIRED", "L1D_CACHE", "INST_RETIRED", "LD_SPEC"] {
        let e = prof.event(n).unwrap_or_else(|| panic!("{n} in the record"));
        assert_eq!(e.state, EventState::NotSupported, "{n}: {e:?}");
        assert_eq!(e.value, None, "{n}");
        assert!(
            e.reason
                .as_deref()
                .unwrap()
                .contains("not advertised by armv8_pmuv3"),
            "{e:?}"
        );
        assert_eq!(
            e.advertised,
            Some(numalab_pmu::advertised::Advertised::NotListed)
        );
    }
    // Listed but 0 over 1e8 cycles: not trusted, kept with its raw count.
    for n in ["STALL_FRONTEND", "STALL_BACKEND"] {
        let e = prof.event(n).unwrap();
        assert_eq!(e.state, EventState::Untrusted, "{n}: {e:?}");
        assert_eq!((e.value, e.raw_count), (None, Some(0)));
        assert!(
            e.reason
                .as_deref()
                .unwrap()
                .contains("read 0 over 100,000,000 cycles"),
            "{e:?}"
        );
    }
    let cyc = prof.event("CPU_CYCLES").unwrap();
    assert_eq!(cyc.state, EventState::Counted);
    assert_eq!(cyc.value, Some(1e8));

    let cov = prof.coverage.as_ref().unwrap();
    assert_eq!(cov.untrusted, ["STALL_FRONTEND", "STALL_BACKEND"]);
    assert!(cov.unsupported.contains(&"BR_RETIRED".to_string()));
    assert_eq!(cov.hardware_counted, 1);
    assert_eq!(cov.raw_type, Some(8));
    assert_eq!(cov.common_set_complete, Some(false));
    assert_eq!(cov.core_pmu.as_ref().unwrap().name, "armv8_pmuv3");

    // No metric computed from a zero that stands for "not counted".
    assert!(
        prof.metrics
            .iter()
            .filter(|m| m.origin != numalab_pmu::catalog::MetricOrigin::Software)
            .all(|m| m.value.is_none()),
        "{:?}",
        prof.metrics
    );
    // Not computable, grouped by cause, each cause once.
    let causes: Vec<&str> = cov
        .not_computable
        .iter()
        .map(|g| g.cause.as_str())
        .collect();
    assert_eq!(
        causes,
        ["unsupported", "untrusted"],
        "{:?}",
        cov.not_computable
    );
    let unsup = &cov.not_computable[0];
    assert!(unsup.metrics.len() > 5, "{unsup:?}");
    assert!(
        unsup.text.starts_with(&format!(
            "{} metrics not computable: their events are not counted by this PMU (",
            unsup.metrics.len()
        )),
        "{}",
        unsup.text
    );
    assert!(
        cov.not_computable[1]
            .text
            .contains("STALL_FRONTEND, STALL_BACKEND"),
        "{:?}",
        cov.not_computable[1]
    );
    // A metric's own reason is short (the long one is said once, on the event).
    for m in &prof.metrics {
        if let Some(r) = &m.reason {
            assert!(!r.contains("advertised") && r.len() < 90, "{}: {r}", m.name);
        }
    }
    // No verdict from partial data.
    let t = prof.tree.as_ref().unwrap();
    assert_eq!(t.dominant, None);
    assert!(t.findings.is_empty());
    assert!(t.verdict.starts_with("no verdict: "), "{}", t.verdict);
    assert!(!t.verdict.contains("useful work"), "{}", t.verdict);
    assert!(t.no_verdict.is_some());
    assert_eq!(t.unevaluated[0].part, "cycle accounting");
    assert!(
        t.unevaluated.iter().any(|u| u.part == "branch"),
        "{:?}",
        t.unevaluated
    );
    // Said once each.
    let count = |c: &str| p.warnings.iter().filter(|w| w.code == c).count();
    assert_eq!((count("pmu.untrusted"), count("pmu.unsupported")), (1, 1));
}

#[test]
fn emulated_pmu_with_icount_counts_instructions_and_still_no_verdict() {
    let root = tempfile::tempdir().unwrap();
    let mut ev = EMULATED_N1.to_vec();
    ev.push(("inst_retired", 0x08));
    fake_pmu(root.path(), "armv8_pmuv3", 8, &ev);
    let mut backend = emulator_backend();
    backend.events.insert(
        "INST_RETIRED".into(),
        Replay::Count {
            value: 50_000_000,
            fraction: 1.0,
        },
    );
    let p = profile::profile_with(
        &Spec::new(["true"]),
        &n1_config(Some(root.path())),
        &mut backend,
        &pmu_capability(),
        &mut |_, _| {},
    )
    .unwrap();
    let prof = &p.profile;
    assert!((prof.metric("ipc").unwrap().value.unwrap() - 0.5).abs() < 1e-12);
    let t = prof.tree.as_ref().unwrap();
    assert!(
        t.verdict
            .starts_with("no verdict: front-end/back-end stall shares not available (IPC 0.500)"),
        "{}",
        t.verdict
    );
    assert_eq!(prof.coverage.as_ref().unwrap().hardware_counted, 2);
}

#[test]
fn pmu_that_lists_no_event_counts_no_hardware_event() {
    let root = tempfile::tempdir().unwrap();
    fake_pmu(root.path(), "armv8_pmuv3_0", 10, &[]);
    let mut backend = emulator_backend();
    let p = profile::profile_with(
        &Spec::new(["true"]),
        &n1_config(Some(root.path())),
        &mut backend,
        &pmu_capability(),
        &mut |_, _| {},
    )
    .unwrap();
    let cov = p.profile.coverage.as_ref().unwrap();
    assert_eq!(cov.hardware_counted, 0);
    assert!(cov.hardware_asked > 10);
    // Nothing hardware was opened at all.
    assert!(backend.asked[0]
        .iter()
        .flatten()
        .all(|n| !n.contains("CYCLES")));
    let t = p.profile.tree.as_ref().unwrap();
    assert!(
        t.verdict
            .starts_with("no verdict: no hardware event could be counted here"),
        "{}",
        t.verdict
    );
}

#[test]
fn real_n1_sysfs_changes_nothing_and_counts_impdef_events_on_trust() {
    let mut counts = N1_COUNTS.to_vec();
    counts.extend([
        ("INST_SPEC", 260_000_000),
        ("LD_SPEC", 60_000_000),
        ("ST_SPEC", 20_000_000),
        ("DP_SPEC", 100_000_000),
        ("ASE_SPEC", 0), // a scalar loop: 0 is believable
        ("VFP_SPEC", 0),
        ("CRYPTO_SPEC", 0),
        ("REMOTE_ACCESS", 0), // one socket
        ("BR_IMMED_SPEC", 30_000_000),
        ("BR_INDIRECT_SPEC", 1_000_000),
        ("BR_RETIRED", 31_000_000),
        ("BR_MIS_PRED_RETIRED", 100_000),
    ]);
    let run = |root: Option<&std::path::Path>| {
        let mut backend = ReplayBackend::with_counts(&counts);
        let p = profile::profile_with(
            &Spec::new(["true"]),
            &n1_config(root),
            &mut backend,
            &pmu_capability(),
            &mut |_, _| {},
        )
        .unwrap();
        (p, backend)
    };
    let root = tempfile::tempdir().unwrap();
    let listed: Vec<(&str, u64)> = vec![
        ("sw_incr", 0x00),
        ("l1i_cache_refill", 0x01),
        ("l1i_tlb_refill", 0x02),
        ("l1d_cache_refill", 0x03),
        ("l1d_cache", 0x04),
        ("l1d_tlb_refill", 0x05),
        ("inst_retired", 0x08),
        ("br_mis_pred", 0x10),
        ("cpu_cycles", 0x11),
        ("br_pred", 0x12),
        ("mem_access", 0x13),
        ("l1i_cache", 0x14),
        ("l2d_cache", 0x16),
        ("l2d_cache_refill", 0x17),
        ("inst_spec", 0x1b),
        ("l2d_cache_allocate", 0x20),
        ("br_retired", 0x21),
        ("br_mis_pred_retired", 0x22),
        ("stall_frontend", 0x23),
        ("stall_backend", 0x24),
        ("l1d_tlb", 0x25),
        ("l1i_tlb", 0x26),
        ("l3d_cache_allocate", 0x29),
        ("l3d_cache_refill", 0x2a),
        ("l3d_cache", 0x2b),
        ("l2d_tlb_refill", 0x2d),
        ("l2d_tlb", 0x2f),
        ("remote_access", 0x31),
        ("dtlb_walk", 0x34),
        ("itlb_walk", 0x35),
        ("ll_cache_rd", 0x36),
        ("ll_cache_miss_rd", 0x37),
    ];
    fake_pmu(root.path(), "armv8_pmuv3_0", 8, &listed);
    let (with, backend) = run(Some(root.path()));
    let (without, _) = run(None);
    assert_eq!(backend.raw_types, [Some(8)]);
    let (a, b) = (&with.profile, &without.profile);
    assert_eq!(
        a.tree.as_ref().unwrap().verdict,
        b.tree.as_ref().unwrap().verdict
    );
    assert!(
        a.tree
            .as_ref()
            .unwrap()
            .verdict
            .starts_with("back-end bound: 83% of cycles stalled"),
        "{}",
        a.tree.as_ref().unwrap().verdict
    );
    for (x, y) in a.metrics.iter().zip(&b.metrics) {
        if x.origin == numalab_pmu::catalog::MetricOrigin::Software {
            continue; // wall time differs between the two runs
        }
        assert_eq!((&x.name, x.value), (&y.name, y.value));
    }
    let cov = a.coverage.as_ref().unwrap();
    assert_eq!(cov.common_set_complete, Some(true));
    assert!(cov.untrusted.is_empty(), "{:?}", cov.untrusted);
    for n in ["LD_SPEC", "DP_SPEC"] {
        assert!(
            cov.on_trust.contains(&n.to_string()),
            "{n}: {:?}",
            cov.on_trust
        );
    }
    // Zeros of events that may be 0 stay zeros.
    for n in ["ASE_SPEC", "REMOTE_ACCESS"] {
        let e = a.event(n).unwrap();
        assert_eq!((e.state, e.value), (EventState::Counted, Some(0.0)), "{n}");
    }
    assert_eq!(
        a.event("REMOTE_ACCESS").unwrap().advertised,
        Some(numalab_pmu::advertised::Advertised::Listed)
    );
}

/// The codes in Arm's recorded event files are the raw configs numalab opens and the
/// numbers the kernel writes in sysfs (`event=0x0011`).
#[test]
fn arm_event_codes_map_to_raw_configs() {
    use numalab_pmu::catalog::Encoding;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pmu");
    for id in ["neoverse-n1", "neoverse-n2", "neoverse-v1"] {
        let c = catalog::load(id).unwrap();
        let t: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("arm-telemetry/{id}.json"))).unwrap(),
        )
        .unwrap();
        let p: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("arm-data/{id}.json"))).unwrap(),
        )
        .unwrap();
        let mut checked = 0;
        for (name, e) in t["events"].as_object().unwrap() {
            let code = e["code"].as_str().unwrap(); // "0x0011"
            let sysfs = format!("event={code}");
            let n = numalab_pmu::advertised::parse_event_term(&sysfs).unwrap();
            assert_eq!(
                c.event(name).unwrap().encoding,
                Encoding::Raw(n),
                "{id} {name}"
            );
            checked += 1;
        }
        for e in p["events"].as_array().unwrap() {
            if let Some(def) = c.event(e["name"].as_str().unwrap()) {
                assert_eq!(def.encoding, Encoding::Raw(e["code"].as_u64().unwrap()));
            }
        }
        assert!(checked > 50, "{id}: {checked}");
        assert_eq!(c.event("CPU_CYCLES").unwrap().encoding, Encoding::Raw(0x11));
        assert_eq!(
            c.event("STALL_FRONTEND").unwrap().encoding,
            Encoding::Raw(0x23)
        );
        assert_eq!(
            c.event("INST_RETIRED").unwrap().raw_code().as_deref(),
            Some("r8")
        );
    }
}

/// QEMU without -icount: the generic instructions event is refused (INST_RETIRED is not
/// in PMCEID) but cycles count, so this is a PMU, not "no PMU".
#[test]
fn pmu_counting_cycles_only_is_still_a_pmu() {
    let root = tempfile::tempdir().unwrap();
    fake_pmu(root.path(), "armv8_pmuv3", 8, EMULATED_N1);
    let mut cap = pmu_capability();
    cap.instructions = EventStatus::NotSupported("No such file or directory".into());
    let mut backend = emulator_backend();
    let p = profile::profile_with(
        &Spec::new(["true"]),
        &n1_config(Some(root.path())),
        &mut backend,
        &cap,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(p.profile.hardware_pmu, Some(true));
    assert!(!p.warnings.iter().any(|w| w.code == "pmu.no_hardware"));
    let cov = p.profile.coverage.as_ref().unwrap();
    assert_eq!(cov.hardware_counted, 1);
    assert!(cov.unsupported.contains(&"INST_RETIRED".to_string()));
    assert_eq!(
        p.profile.event("CPU_CYCLES").unwrap().state,
        EventState::Counted
    );
}
