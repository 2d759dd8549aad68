//! The perf-metrics check on constructed facts: a `perf list -j` in perf's own shape
//! (tests/fixtures/pmu/perf-list/constructed-x86.json) and a sysfs tree built here, on a
//! machine whose CPU has a shipped catalog (a Xeon Platinum 8259CL: Cascade Lake).

use numalab_doctor::{assess, BindingProbe, Check, Verdict};
use numalab_pmu::capability::{Capability, EventStatus};
use numalab_pmu::catalog::perf::{PerfError, PerfList};
use numalab_schema::Machine;
use numalab_testkit::write;
use numalab_topo::system::SysRoot;
use std::path::Path;

fn fixture(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel)
}

fn cascade_lake() -> Machine {
    numalab_topo::machine(&numalab_topo::Input::Xml(fixture(
        "topology/llnl-g4dnmetal.xml",
    )))
    .unwrap()
}

fn listing() -> String {
    std::fs::read_to_string(fixture("pmu/perf-list/constructed-x86.json")).unwrap()
}

/// The core PMU `cpu` with Intel's format terms, and 4 online CPUs (2 cores), SMT
/// `smt` ("0" or "1").
fn sysroot(smt: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let pmu = "sys/bus/event_source/devices/cpu/format";
    for (term, bits) in [
        ("event", "config:0-7"),
        ("umask", "config:8-15"),
        ("edge", "config:18"),
        ("inv", "config:23"),
        ("cmask", "config:24-31"),
        ("in_tx", "config:32"),
        ("in_tx_cp", "config:33"),
        ("offcore_rsp", "config1:0-63"),
    ] {
        write(r, &format!("{pmu}/{term}"), &format!("{bits}\n"));
    }
    let cpu = "sys/devices/system/cpu";
    write(r, &format!("{cpu}/smt/active"), &format!("{smt}\n"));
    write(r, &format!("{cpu}/possible"), "0-3\n");
    write(r, &format!("{cpu}/online"), "0-3\n");
    for c in 0..4 {
        write(
            r,
            &format!("{cpu}/cpu{c}/topology/physical_package_id"),
            "0\n",
        );
        write(r, &format!("{cpu}/cpu{c}/topology/die_id"), "0\n");
        write(
            r,
            &format!("{cpu}/cpu{c}/topology/core_id"),
            &format!("{}\n", c / 2),
        );
    }
    dir
}

fn perf_check(root: &Path, perf: &Result<PerfList, PerfError>) -> Check {
    let binding = BindingProbe {
        hwloc_version: "2.9.0".into(),
        cpu_binding: Ok(0),
        memory_binding: Ok((0, 1.0)),
    };
    let pmu = Capability {
        paranoid: Some(2),
        privileged: false,
        cycles: EventStatus::Works,
        instructions: EventStatus::Works,
        task_clock: EventStatus::Works,
        page_faults: EventStatus::Works,
        context_switches: EventStatus::Works,
        pmus: vec![],
    };
    let checks = assess(
        &cascade_lake(),
        &SysRoot::at(root),
        &binding,
        &pmu,
        &[],
        perf,
    );
    checks
        .into_iter()
        .find(|c| c.name == "perf-metrics")
        .expect("a perf-metrics check")
}

/// The differences part of a check's detail: the metrics named there.
fn differing(c: &Check) -> Vec<String> {
    c.detail
        .split("metric ")
        .skip(1)
        .map(|f| f.split(':').next().unwrap().to_string())
        .collect()
}

#[test]
fn one_differing_formula_is_named_and_the_others_agree() {
    // The fixture as perf would print it: branch_misprediction_rate in percent (numalab's
    // is a ratio), ipc and tma_info_core_coreipc (SMT off) with numalab's formulas.
    let root = sysroot("0");
    let c = perf_check(root.path(), &PerfList::from_json("6.8.0", &listing()));
    assert_eq!(c.verdict, Verdict::Warn);
    assert_eq!(c.value.as_deref(), Some("differ"));
    assert!(
        c.detail.starts_with(
            "perf 6.8.0 knows 3 of numalab's 234 metrics for Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz; 1 differs, 2 agree: metric branch_misprediction_rate: numalab's formula gives "
        ),
        "{}",
        c.detail
    );
    assert_eq!(differing(&c), ["branch_misprediction_rate"]);
    // Both formulas and both values: perf's is 100 times numalab's on the same counts.
    let values: Vec<f64> = c
        .detail
        .split(" gives ")
        .skip(1)
        .map(|v| v.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(values.len(), 2);
    assert!((values[1] / values[0] - 100.0).abs() < 1e-9, "{values:?}");
    assert!(
        c.detail.contains("(BRANCH_MISSES / BRANCHES)"),
        "{}",
        c.detail
    );
    assert!(
        c.detail
            .contains("(100 * d_ratio(BRANCH_MISSES, BRANCHES))"),
        "{}",
        c.detail
    );
    let remedy = c.remedy.as_deref().unwrap();
    assert!(remedy.starts_with("`numalab profile` computes numalab's formula (catalog intel-clx); nothing in numalab selects perf's formulas"), "{remedy}");
    assert!(
        remedy.ends_with("`perf stat -M branch_misprediction_rate` prints perf's value"),
        "{remedy}"
    );

    // Another listing: the rate as a plain ratio (agrees), ipc over other events.
    let edited = listing()
        .replace(
            "\"ScaleUnit\": \"100%\",\n\t\"BriefDescription\": \"Same name",
            "\"BriefDescription\": \"Same name",
        )
        .replace("\"instructions / cycles\"", "\"instructions / branches\"");
    assert_ne!(edited, listing());
    let c = perf_check(root.path(), &PerfList::from_json("6.8.0", &edited));
    assert_eq!(c.verdict, Verdict::Warn);
    assert_eq!(differing(&c), ["ipc"]);
    assert!(c.detail.contains("; 1 differs, 2 agree: "), "{}", c.detail);
    assert!(c.detail.contains("(INSTRUCTIONS / CYCLES)"), "{}", c.detail);
    assert!(
        c.detail.contains("(INSTRUCTIONS / BRANCHES)"),
        "{}",
        c.detail
    );

    // All agree.
    let same = listing().replace(
        "\"ScaleUnit\": \"100%\",\n\t\"BriefDescription\": \"Same name",
        "\"BriefDescription\": \"Same name",
    );
    let c = perf_check(root.path(), &PerfList::from_json("6.8.0", &same));
    assert_eq!(c.verdict, Verdict::Ok);
    assert_eq!(c.value.as_deref(), Some("agree"));
    assert_eq!(
        c.detail,
        "perf 6.8.0 knows 3 of numalab's 234 metrics for Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz; all agree on two constructed sets of counts"
    );
    assert_eq!(c.remedy, None);
}

#[test]
fn a_difference_from_the_smt_branch_is_said_so() {
    // SMT on: perf's tma_info_core_coreipc takes its core-wide branch, numalab Intel's
    // per-thread one.
    let root = sysroot("1");
    let c = perf_check(root.path(), &PerfList::from_json("6.8.0", &listing()));
    assert_eq!(
        differing(&c),
        ["branch_misprediction_rate", "tma_info_core_coreipc"]
    );
    assert!(c.detail.contains("; 2 differ, 1 agree: "), "{}", c.detail);
    assert!(
        c.detail.ends_with("(inst_retired.any / (cpu_clk_unhalted.thread / 2)) on the same counts (perf takes the core-wide branch of #smt_on, as SMT is on; numalab the per-thread one: with #smt_on = 0 they agree)"),
        "{}",
        c.detail
    );
    assert_eq!(c.detail.matches("#smt_on = 0 they agree").count(), 1);
}

#[test]
fn a_perf_without_json_is_one_line_and_no_failure() {
    let root = sysroot("0");
    let no_json = PerfList::installed(&|args: &[&str]| match args {
        ["--version"] => Ok("perf version 6.1.192\n".into()),
        _ => Err("exited with code 129; Error: unknown switch `j'".into()),
    });
    let c = perf_check(root.path(), &no_json);
    assert_eq!(c.verdict, Verdict::Info);
    assert_eq!(c.value.as_deref(), Some("no-json"));
    assert_eq!(
        c.detail,
        "perf 6.1.192 cannot list metrics as JSON (`perf list -j` failed: exited with code 129; Error: unknown switch `j'): numalab's formulas are not compared with perf's"
    );
    assert_eq!(c.remedy, None);
    let missing = perf_check(
        root.path(),
        &Err(PerfError::NotRun("command not found: \"perf\"".into())),
    );
    assert_eq!(missing.verdict, Verdict::Info);
    assert_eq!(missing.value.as_deref(), Some("no-perf"));
    let bad = perf_check(root.path(), &PerfList::from_json("6.8.0", "{}"));
    assert_eq!(bad.verdict, Verdict::Info);
    assert_eq!(bad.value.as_deref(), Some("unreadable"));
    assert!(
        bad.detail
            .starts_with("perf 6.8.0's `perf list -j` output is not the JSON"),
        "{}",
        bad.detail
    );
}

#[test]
fn no_core_pmu_means_nothing_to_compare() {
    // A VM: no core PMU in sysfs, so perf's events cannot be encoded.
    let root = tempfile::tempdir().unwrap();
    let c = perf_check(root.path(), &PerfList::from_json("6.8.0", &listing()));
    assert_eq!(c.verdict, Verdict::Info);
    assert_eq!(c.value.as_deref(), Some("no-metrics"));
    assert!(
        c.detail
            .starts_with("perf 6.8.0 lists no metric over this CPU's own events"),
        "{}",
        c.detail
    );
}
