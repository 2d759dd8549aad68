//! Importing `perf stat` output (CSV and JSON) written by hand from known counts: every
//! derived metric is checked against the value computed by hand, and the tree against
//! the methodology's pointer-chasing verdict.

use numalab_pmu::catalog;
use numalab_pmu::compare;
use numalab_pmu::metrics::EventState;
use numalab_pmu::profile::{self, Profile};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/pmu/perf-stat")
        .join(name)
}

fn import(name: &str) -> (Profile, Vec<numalab_schema::Warning>) {
    let p = profile::from_import(&fixture(name), None, None, "first-pass", &[]).unwrap();
    (p.profile, p.warnings)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn check_pointer_chase(p: &Profile) {
    assert_eq!(p.cpu.catalog, "neoverse-n1");
    let m = |n: &str| {
        p.metric(n)
            .unwrap_or_else(|| panic!("{n} missing"))
            .value
            .unwrap_or_else(|| panic!("{n} has no value: {:?}", p.metric(n)))
    };
    // By hand, from the counts in the file.
    let by_hand = [
        ("ipc", 200e6 / 1000e6),
        ("frontend_stall_rate", 20e6 / 1000e6),
        ("backend_stall_rate", 830e6 / 1000e6),
        ("l1d_mpki", 21.2e6 / 200e6 * 1000.0),
        ("l1d_miss_rate", 21.2e6 / 60e6),
        ("l2_mpki", 11e6 / 200e6 * 1000.0),
        ("l2_miss_rate", 11e6 / 22e6),
        ("ll_read_mpki", 9.9e6 / 200e6 * 1000.0),
        ("ll_read_miss_rate", 9.9e6 / 10e6),
        ("slc_read_hit_pct", (10e6 - 9.9e6) / 10e6 * 100.0),
        ("dtlb_mpki", 0.1e6 / 200e6 * 1000.0),
        ("dtlb_walk_rate", 0.1e6 / 60e6),
        ("branch_mpki", 0.05e6 / 200e6 * 1000.0),
        ("branch_misprediction_rate", 0.05e6 / 25e6),
        ("branch_pki", 25e6 / 200e6 * 1000.0),
        ("speculation_waste", 1.0 - 200e6 / 210e6),
        ("mix_ld_pct", 50e6 / 210e6 * 100.0),
        ("mix_st_pct", 10e6 / 210e6 * 100.0),
        ("mix_dp_pct", 100e6 / 210e6 * 100.0),
        ("memory_instruction_pct", 60e6 / 210e6 * 100.0),
        ("cpus_utilized", 412.5e6 / 415e6),
        ("context_switches_per_s", 2.0 / 415e6 * 1e9),
        ("page_faults_per_s", 4200.0 / 415e6 * 1e9),
    ];
    for (name, want) in by_hand {
        assert!(close(m(name), want), "{name}: {} vs {want}", m(name));
    }
    assert!(close(m("l1d_mpki"), 106.0));
    // Not measured: n/a with the reason, never 0.
    let remote = p.metric("remote_access_pki").unwrap();
    assert_eq!(remote.value, None);
    assert!(
        remote
            .reason
            .as_deref()
            .unwrap()
            .contains("REMOTE_ACCESS not supported by this PMU"),
        "{remote:?}"
    );
    let l1i = p.metric("l1i_mpki").unwrap();
    assert!(
        l1i.reason
            .as_deref()
            .unwrap()
            .contains("L1I_CACHE_REFILL never scheduled"),
        "{l1i:?}"
    );
    assert!(p
        .metric("mix_ase_pct")
        .unwrap()
        .reason
        .as_deref()
        .unwrap()
        .contains("ASE_SPEC not counted"));
    // Multiplexing carried through.
    assert_eq!(p.event("CPU_CYCLES").unwrap().running_fraction, Some(0.5));
    assert_eq!(p.event("CPU_CYCLES").unwrap().code.as_deref(), Some("r11"));
    assert_eq!(p.metric("ipc").unwrap().min_running_fraction, Some(0.5));
    assert_eq!(
        p.event("REMOTE_ACCESS").unwrap().state,
        EventState::NotSupported
    );
    // The verdict.
    let t = p.tree.as_ref().unwrap();
    assert_eq!(t.dominant.as_deref(), Some("backend"));
    assert_eq!(
        t.verdict,
        "back-end bound: 83% of cycles stalled in the back end (IPC 0.200); memory bound: 99% of last-level reads miss, L1D MPKI 106, last-level read MPKI 49.5"
    );
    assert_eq!(&t.sample_next[..2], ["STALL_BACKEND", "LL_CACHE_MISS_RD"]);
}

#[test]
fn csv_import_matches_hand_computed_metrics() {
    let (p, w) = import("n1-pointer-chase.csv");
    assert_eq!(p.source.format.as_deref(), Some("perf stat -x, (CSV)"));
    check_pointer_chase(&p);
    assert!(w.iter().any(|w| w.code == "pmu.import.cpu_guessed"));
    assert!(w
        .iter()
        .any(|w| w.code == "pmu.multiplexed" && w.message.contains("CPU_CYCLES only 50%")));
    // Half the run, rotations not in the file: +-50%, and the verdict's comparisons
    // stay clear of it (83% x [1/3, 3] of cycles is above 20%, and above the front end's
    // range).
    let mux = p.multiplexing.as_ref().unwrap();
    assert_eq!(
        mux.line(),
        "multiplexed: groups and rotations not recorded; values carry +-50% (worst 50%)"
    );
    let r = p
        .metric("backend_stall_rate")
        .unwrap()
        .interval
        .clone()
        .unwrap();
    assert!((r.low.unwrap() - 0.83 / 3.0).abs() < 1e-9, "{r:?}");
    assert!(p
        .tree
        .as_ref()
        .unwrap()
        .sides
        .iter()
        .all(|s| !s.within_uncertainty));
}

#[test]
fn json_import_gives_the_same_profile() {
    let (csv, _) = import("n1-pointer-chase.csv");
    let (json, _) = import("n1-pointer-chase.json");
    assert_eq!(json.source.format.as_deref(), Some("perf stat -j (JSON)"));
    check_pointer_chase(&json);
    assert_eq!(csv.metrics, json.metrics);
    assert_eq!(csv.tree, json.tree);
}

#[test]
fn cpu_model_is_honoured_and_other_catalogs_work() {
    let v1 = catalog::resolve_model("neoverse-v1").unwrap();
    let p = profile::from_import(
        &fixture("n1-pointer-chase.csv"),
        Some(v1),
        None,
        "first-pass",
        &[],
    )
    .unwrap();
    assert_eq!(p.profile.cpu.catalog, "neoverse-v1");
    assert!(p.profile.cpu.how.starts_with("--cpu-model"));
    assert!(close(p.profile.metric("ipc").unwrap().value.unwrap(), 0.2));
    // This VM's own perf output: software metrics only, hardware ones n/a.
    let x86 = catalog::resolve_model("x86-64").unwrap();
    let p = profile::from_import(
        &fixture("x86-vm-software.csv"),
        None,
        Some(x86),
        "first-pass",
        &[],
    )
    .unwrap();
    assert!(p
        .warnings
        .iter()
        .any(|w| w.code == "pmu.import.cpu_assumed"));
    let prof = p.profile;
    assert!(close(
        prof.metric("cpus_utilized").unwrap().value.unwrap(),
        0.96e6 / 103075309.0
    ));
    assert!(prof
        .metric("ipc")
        .unwrap()
        .reason
        .as_deref()
        .unwrap()
        .contains("not supported"));
}

#[test]
fn compare_before_and_after_prefetch() {
    let (base, _) =
        compare::load(&fixture("n1-pointer-chase.csv"), None, None, "first-pass").unwrap();
    let (new, _) = compare::load(
        &fixture("n1-pointer-chase-prefetch.csv"),
        None,
        None,
        "first-pass",
    )
    .unwrap();
    let c = compare::compare(&base, &new, "base", "new");
    assert!(close(c.instructions_change_pct.unwrap(), 15.0));
    assert!(!c.mpki_comparable);
    let ipc = c.metrics.iter().find(|m| m.name == "ipc").unwrap();
    assert!(close(ipc.change_pct.unwrap(), (0.46 - 0.2) / 0.2 * 100.0));
    let mpki = c.metrics.iter().find(|m| m.name == "l1d_mpki").unwrap();
    assert!(!mpki.comparable);
    let cyc = c.counts.iter().find(|x| x.name == "CPU_CYCLES").unwrap();
    assert!(close(cyc.change_pct.unwrap(), -50.0));
}

#[test]
fn a_multiplexed_topdown_level_1_is_a_finding_with_its_figures() {
    // The first-pass set: Arm's level 1 is computed for the tree and checked with it.
    let v2 = catalog::resolve_model("neoverse-v2").unwrap();
    let imported = profile::from_import(
        &fixture("v2-topdown-multiplexed.csv"),
        Some(v2),
        None,
        "first-pass",
        &[],
    )
    .unwrap();
    let (p, warnings) = (imported.profile, imported.warnings);
    let c = p
        .consistency
        .iter()
        .find(|c| c.rule == "arm-topdown-level1")
        .expect("level-1 rule checked");
    assert!(c.violated(), "{c:?}");
    // By hand: 100 * (3e9 + 4e9 - 0.52e9) / 8e9 + 100.
    assert!(close(c.actual.unwrap(), 181.0), "{:?}", c.actual);
    assert!(c.text.contains("sums to 181%"), "{}", c.text);
    let cause = c.cause.as_deref().unwrap();
    assert!(
        cause.contains("17% of the run") && cause.ends_with("rerun with --exact"),
        "{cause}"
    );
    // The values stay as counted: nothing is normalised to make the rule hold.
    for f in &c.figures {
        let tree = p.tree.as_ref().unwrap();
        let shown = tree.vendor_topdown.iter().find(|(m, _, _)| *m == f.name);
        assert_eq!(shown.map(|s| s.1), f.value, "{}", f.name);
    }
    assert!(warnings
        .iter()
        .any(|w| w.code == "pmu.inconsistent" && w.message.contains("181%")));
    // The counts of the pointer chase hold every rule they can be checked by.
    let (n1, w) = import("n1-pointer-chase.csv");
    assert!(
        n1.consistency.iter().all(|c| !c.violated()),
        "{:?}",
        n1.consistency
    );
    assert!(
        n1.consistency
            .iter()
            .any(|c| c.rule == "ratio-range"
                && c.status == numalab_pmu::consistency::RuleStatus::Held)
    );
    assert!(!w.iter().any(|w| w.code == "pmu.inconsistent"));
}

/// An uncore socket as `numalab-uncore` records it, with Intel's two NUMA read shares.
fn uncore_socket(socket: u32, local: f64, remote: f64) -> serde_json::Value {
    let no = serde_json::json!({"value": null, "reason": "not asked for"});
    serde_json::json!({
        "socket": socket, "controllers": 0,
        "read_bytes": no, "write_bytes": no, "total_bytes": no,
        "read_gbps": no, "write_gbps": no, "total_gbps": no,
        "llc_lookups": no, "llc_misses": no, "llc_hit_ratio": no,
        "directory_lookups": no, "directory_snoop_share": no,
        "snoops_sent": no, "link_tx_bytes": no,
        "numa_reads_addressed_to_local_dram": {"value": local},
        "numa_reads_addressed_to_remote_dram": {"value": remote},
    })
}

#[test]
fn the_uncore_figures_beside_a_profile_are_checked_by_the_same_rules() {
    let mut p = profile::from_import(
        &fixture("n1-pointer-chase.csv"),
        None,
        None,
        "first-pass",
        &[],
    )
    .unwrap();
    let core_checks = p.profile.consistency.len();
    // Without uncore figures nothing is added.
    p.check_uncore_consistency();
    assert_eq!(p.profile.consistency.len(), core_checks);
    p.profile.uncore = Some(
        serde_json::from_value(serde_json::json!({
            "sysfs_root": "/",
            "devices": [{"name": "uncore_cha_0", "class": "intel_cha", "pmu_type": 40,
                         "cpus": [0, 56]}],
            "sockets": [uncore_socket(0, 75.0, 25.0), uncore_socket(1, 70.0, 41.0)],
        }))
        .unwrap(),
    );
    p.check_uncore_consistency();
    let added = &p.profile.consistency[core_checks..];
    assert_eq!(added.len(), 2);
    assert!(added
        .iter()
        .all(|c| c.rule == "intel-numa-local-remote-dram"));
    assert!(!added[0].violated(), "{}", added[0].text);
    assert!(added[1].violated());
    assert_eq!(added[1].actual, Some(111.0));
    let w = p
        .warnings
        .iter()
        .find(|w| w.code == "pmu.inconsistent" && w.message.starts_with("socket 1: "))
        .expect("a warning for socket 1");
    assert!(w.message.contains("111%"), "{}", w.message);
    let lines = numalab_pmu::consistency::consistency_lines(&p.profile.consistency);
    assert!(
        lines.iter().any(|l| l.starts_with("socket 1: ")),
        "{lines:?}"
    );
}

/// An uncore socket with the iMC's CAS reads and writes as shares of all CAS commands.
fn imc_socket(socket: u32, read: f64, write: f64) -> serde_json::Value {
    let mut s = uncore_socket(socket, 0.0, 0.0);
    let no = serde_json::json!({"value": null, "reason": "no CHA counted"});
    s["numa_reads_addressed_to_local_dram"] = no.clone();
    s["numa_reads_addressed_to_remote_dram"] = no;
    s["all_cas_bytes"] = serde_json::json!({"value": 128e9});
    s["read_percent_of_all_cas"] = serde_json::json!({"value": read});
    s["write_percent_of_all_cas"] = serde_json::json!({"value": write});
    s
}

#[test]
fn cas_reads_and_writes_beyond_the_counted_total_are_a_finding_beside_a_profile() {
    let mut p = profile::from_import(
        &fixture("n1-pointer-chase.csv"),
        None,
        None,
        "first-pass",
        &[],
    )
    .unwrap();
    let core_checks = p.profile.consistency.len();
    p.profile.uncore = Some(
        serde_json::from_value(serde_json::json!({
            "sysfs_root": "/",
            "devices": [{"name": "uncore_imc_0", "class": "intel_imc", "pmu_type": 41,
                         "cpus": [0, 56]}],
            // Socket 1: RD + WR = 1.2 x ALL.
            "sockets": [imc_socket(0, 75.0, 25.0), imc_socket(1, 90.0, 30.0)],
        }))
        .unwrap(),
    );
    p.check_uncore_consistency();
    let added = &p.profile.consistency[core_checks..];
    assert_eq!(added.len(), 2);
    assert!(added.iter().all(|c| c.rule == "intel-imc-read-write-total"));
    assert!(!added[0].violated(), "{}", added[0].text);
    assert!(added[1].violated());
    assert_eq!(added[1].actual, Some(120.0));
    let w = p
        .warnings
        .iter()
        .find(|w| w.code == "pmu.inconsistent" && w.message.starts_with("socket 1: "))
        .expect("a warning for socket 1");
    assert!(w.message.contains("120%"), "{}", w.message);
}
