//! Default mode's packed plan (`count::plan_packed`), wired into the profile: the events
//! go into as few groups as the counters allow, and its fallback: a packed group in
//! which an event does not open (unsupported, or refused beside another event by a
//! counter constraint) is split so that no metric is lost that one group per metric
//! would have counted. With replayed counts (the development VM has no PMU).

use numalab_pmu::capability::{Capability, EventStatus};
use numalab_pmu::catalog;
use numalab_pmu::count::{self, Replay, ReplayBackend};
use numalab_pmu::profile::{self, ProfileConfig, Profiled};
use numalab_proc::Spec;

const N1_COUNTS: &[(&str, u64)] = &[
    ("CPU_CYCLES", 1_000_000_000),
    ("INST_RETIRED", 200_000_000),
    ("L1D_CACHE", 60_000_000),
    ("L1D_CACHE_REFILL", 21_200_000),
    ("LL_CACHE_RD", 10_000_000),
    ("LL_CACHE_MISS_RD", 9_900_000),
    ("TASK_CLOCK", 400_000_000),
    ("CONTEXT_SWITCHES", 3),
    ("CPU_MIGRATIONS", 1),
    ("PAGE_FAULTS", 120),
];

const METRICS: &str = "l1d_miss_rate,ll_read_miss_rate";

fn capability() -> Capability {
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

/// Neoverse N1 with `counters` programmable counters, under `sysroot`.
fn config(counters: usize, sysroot: &std::path::Path) -> ProfileConfig {
    let mut cfg = ProfileConfig::new(catalog::resolve_model("neoverse-n1").unwrap());
    cfg.sysroot = sysroot.to_path_buf();
    cfg.metrics = METRICS.into();
    cfg.counters = Some(counters);
    cfg
}

fn run(backend: &mut ReplayBackend, cfg: &ProfileConfig) -> Profiled {
    profile::profile_with(
        &Spec::new(["true"]),
        cfg,
        backend,
        &capability(),
        &mut |_, _| {},
    )
    .unwrap()
}

/// The hardware groups opened in the run (software events are one group each).
fn hardware_groups(backend: &ReplayBackend) -> Vec<Vec<String>> {
    let software = [
        "TASK_CLOCK",
        "CONTEXT_SWITCHES",
        "CPU_MIGRATIONS",
        "PAGE_FAULTS",
    ];
    backend.asked[0]
        .iter()
        .filter(|g| !g.iter().all(|e| software.contains(&e.as_str())))
        .cloned()
        .collect()
}

fn value(p: &Profiled, metric: &str) -> Option<f64> {
    p.profile.metric(metric).and_then(|m| m.value)
}

/// The miss rates computed by hand from N1_COUNTS.
const L1D_MISS_RATE: f64 = 21.2 / 60.0;
const LL_READ_MISS_RATE: f64 = 0.99;

#[test]
fn default_mode_packs_the_metrics_into_one_group_when_they_fit() {
    let root = tempfile::tempdir().unwrap();
    let mut backend = ReplayBackend::with_counts(N1_COUNTS);
    let p = run(&mut backend, &config(4, root.path()));
    // Four programmable events, four counters: one group (one per metric would be 2).
    assert_eq!(
        hardware_groups(&backend),
        [[
            "L1D_CACHE",
            "L1D_CACHE_REFILL",
            "LL_CACHE_MISS_RD",
            "LL_CACHE_RD"
        ]]
    );
    // Probed once, as planned; nothing failed, so nothing was split.
    assert_eq!(backend.probed.len(), 1);
    assert!(!p.warnings.iter().any(|w| w.code == "pmu.packed_split"));
    assert!((value(&p, "l1d_miss_rate").unwrap() - L1D_MISS_RATE).abs() < 1e-12);
    assert!((value(&p, "ll_read_miss_rate").unwrap() - LL_READ_MISS_RATE).abs() < 1e-12);
    let g = &p.profile.groups;
    assert!(g.iter().any(|g| g.metrics.len() == 2), "{g:?}");
}

#[test]
fn an_event_refused_beside_another_splits_its_group_and_loses_no_metric() {
    let root = tempfile::tempdir().unwrap();
    let mut backend = ReplayBackend::with_counts(N1_COUNTS);
    // A counter constraint: the kernel will not schedule these two in one group.
    backend.apart = vec![("L1D_CACHE".into(), "LL_CACHE_RD".into())];
    let p = run(&mut backend, &config(4, root.path()));
    // The probe saw LL_CACHE_RD refused in the packed group ...
    assert_eq!(
        backend.probed[0],
        [[
            "L1D_CACHE",
            "L1D_CACHE_REFILL",
            "LL_CACHE_MISS_RD",
            "LL_CACHE_RD"
        ]]
    );
    // ... so its metric got a group of its own and the other kept the packed group.
    assert_eq!(
        hardware_groups(&backend),
        [
            vec!["L1D_CACHE", "L1D_CACHE_REFILL"],
            vec!["LL_CACHE_MISS_RD", "LL_CACHE_RD"]
        ]
    );
    // Both metrics counted, as one group per metric would have counted them.
    assert!((value(&p, "l1d_miss_rate").unwrap() - L1D_MISS_RATE).abs() < 1e-12);
    assert!((value(&p, "ll_read_miss_rate").unwrap() - LL_READ_MISS_RATE).abs() < 1e-12);
    let w = p
        .warnings
        .iter()
        .find(|w| w.code == "pmu.packed_split")
        .expect("the split is said");
    assert!(w.message.contains("ll_read_miss_rate is counted"), "{w}");
    assert!(!w.message.contains("l1d_miss_rate"), "{w}");
    // Without the fallback the packed group would have lost the metric: the replayed
    // kernel refuses the pair in one group.
    let mut plain = ReplayBackend::with_counts(N1_COUNTS);
    plain.apart = backend.apart.clone();
    let c = catalog::load_match(&config(4, root.path()).cpu).unwrap();
    let packed = count::plan_packed(
        &c,
        &["l1d_miss_rate".into(), "ll_read_miss_rate".into()],
        &[],
        4,
    );
    let groups: Vec<_> = packed.groups.iter().map(|g| g.events.clone()).collect();
    let st = count::Backend::probe(&mut plain, &groups, None);
    assert!(st.iter().flatten().any(|s| !s.works()));
}

#[test]
fn an_unsupported_event_in_a_packed_group_costs_only_its_own_metric() {
    let root = tempfile::tempdir().unwrap();
    let mut backend = ReplayBackend::with_counts(N1_COUNTS);
    backend
        .events
        .insert("LL_CACHE_MISS_RD".into(), Replay::NotSupported);
    let p = run(&mut backend, &config(4, root.path()));
    assert_eq!(
        hardware_groups(&backend),
        [
            vec!["L1D_CACHE", "L1D_CACHE_REFILL"],
            vec!["LL_CACHE_MISS_RD", "LL_CACHE_RD"]
        ]
    );
    assert!((value(&p, "l1d_miss_rate").unwrap() - L1D_MISS_RATE).abs() < 1e-12);
    // Its own metric has no value, with the reason: as with one group per metric.
    let ll = p.profile.metric("ll_read_miss_rate").unwrap();
    assert_eq!(ll.value, None);
    assert!(
        ll.reason
            .as_deref()
            .unwrap_or("")
            .contains("LL_CACHE_MISS_RD"),
        "{ll:?}"
    );
}

#[test]
fn the_nmi_watchdog_leaves_a_counter_free_in_packed_groups() {
    let root = tempfile::tempdir().unwrap();
    let proc_kernel = root.path().join("proc/sys/kernel");
    std::fs::create_dir_all(&proc_kernel).unwrap();
    std::fs::write(proc_kernel.join("nmi_watchdog"), "1\n").unwrap();
    let mut backend = ReplayBackend::with_counts(N1_COUNTS);
    let p = run(&mut backend, &config(4, root.path()));
    // Three counters to fill, not four: the two pairs do not fit in one group.
    assert_eq!(hardware_groups(&backend).len(), 2, "{:?}", backend.asked[0]);
    assert!(value(&p, "l1d_miss_rate").is_some());
    assert!(value(&p, "ll_read_miss_rate").is_some());
    // A metric that needs every counter still gets a group of its own.
    std::fs::write(proc_kernel.join("nmi_watchdog"), "1\n").unwrap();
    let mut backend = ReplayBackend::with_counts(N1_COUNTS);
    let mut cfg = config(2, root.path());
    cfg.metrics = "l1d_miss_rate".into();
    let p = run(&mut backend, &cfg);
    assert_eq!(
        hardware_groups(&backend),
        [["L1D_CACHE", "L1D_CACHE_REFILL"]]
    );
    assert!(!p.warnings.iter().any(|w| w.code == "pmu.group_too_large"));
}

#[test]
fn a_denied_event_is_not_a_reason_to_split() {
    let root = tempfile::tempdir().unwrap();
    let mut backend = ReplayBackend::with_counts(N1_COUNTS);
    backend.events.insert("LL_CACHE_RD".into(), Replay::Denied);
    let p = run(&mut backend, &config(4, root.path()));
    // Permission is not a matter of grouping: the packed group stays whole.
    assert_eq!(hardware_groups(&backend).len(), 1, "{:?}", backend.asked[0]);
    assert!(!p.warnings.iter().any(|w| w.code == "pmu.packed_split"));
    assert!(value(&p, "l1d_miss_rate").is_some());
    assert_eq!(value(&p, "ll_read_miss_rate"), None);
}
