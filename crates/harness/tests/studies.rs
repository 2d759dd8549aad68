//! Real studies on this machine (2 PUs, 1 NUMA node here): small CPU-bound `sh`
//! programs run through the whole protocol. Structure and sanity are asserted, never
//! wall-clock figures.

use numalab_harness::run::{MemorySink, Progress, RunRecord, Study};
use numalab_harness::{
    policy, scale, sweep, HarnessError, Metric, Param, Placement, PolicySummary, ScalePlan,
    ScaleSummary, SweepSummary,
};
use numalab_schema::{Machine, RecordKind};

fn machine() -> Machine {
    numalab_topo::live().expect("live topology")
}

fn sh(script: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

/// A CPU-bound program: {threads} shell loops in parallel.
const BUSY: &str =
    "for k in $(seq {threads}); do (i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done) & done; wait";

fn quiet(_: &Progress) {}

fn kinds(sink: &MemorySink) -> Vec<&str> {
    sink.records.iter().map(|r| r.kind.as_str()).collect()
}

#[test]
fn a_real_scaling_run_on_this_machine() {
    let m = machine();
    let mut study = Study::new(sh(BUSY));
    study.repeat = 2;
    let plan = ScalePlan::new(&m, Placement::Compact, None, None).unwrap();
    let counts: Vec<usize> = plan.points.iter().map(|p| p.threads).collect();
    assert_eq!(counts.first(), Some(&1));
    assert_eq!(counts.last(), Some(&m.pus.len()));
    let mut sink = MemorySink::default();
    let mut seen = Vec::new();
    let s = scale(&m, &plan, &study, &mut sink, &mut |p: &Progress| {
        seen.push(p.clone())
    })
    .unwrap();
    let runs = counts.len() * 2;
    assert_eq!(seen.len(), runs);
    assert_eq!(seen.last().unwrap().done, runs);
    assert_eq!(sink.records.len(), runs + 1);
    assert_eq!(
        kinds(&sink)
            .iter()
            .filter(|k| **k == RunRecord::KIND)
            .count(),
        runs
    );
    assert_eq!(*kinds(&sink).last().unwrap(), ScaleSummary::KIND);
    let mut keys: Vec<&str> = sink.records.iter().map(|r| r.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), runs + 1, "keys are unique");
    assert_eq!(s.failed_runs, 0, "{:?}", s.findings);
    assert_eq!(s.base_threads, Some(1));
    for p in &s.points {
        assert_eq!(p.stats.ok, 2);
        let t = p.stats.throughput.as_ref().unwrap();
        assert!(t.estimate > 0.0 && t.low <= t.estimate && t.estimate <= t.high);
        // The program ran on the CPUs it was given: at most that many busy.
        let busy = p.stats.cpus_busy.unwrap();
        assert!(
            busy > 0.0 && busy <= p.threads as f64 * 1.05 + 0.05,
            "{busy}"
        );
        assert!(p.speedup.is_some() && p.efficiency.is_some());
    }
    // Each run record says where it ran and what the machine could sample.
    let r: RunRecord = sink.records[0].decode().unwrap().unwrap();
    assert!(r.ok && r.cpus.is_some() && r.outcome.is_some());
    let power = r.samples.power.unwrap();
    if numalab_sensors::discover(std::path::Path::new("/")).is_empty() {
        assert!(power
            .not_available
            .unwrap()
            .contains("no readable power sensors"));
    }
    // The summary decodes from the record written.
    let back: ScaleSummary = sink.records.last().unwrap().decode().unwrap().unwrap();
    assert_eq!(back.points.len(), counts.len());
    // Every point has its speedup over the first (its own is 1 exactly).
    assert!(
        s.points.iter().all(|p| p.speedup.is_some()),
        "{:?}",
        s.points
    );
    assert_eq!(s.points[0].speedup.as_ref().unwrap().estimate, 1.0);
}

#[test]
fn a_printed_metric_like_the_builtin_workload() {
    // Prints what `numalab workload run` prints: a requests_per_s=N line, plus per-request
    // latencies, among other output.
    let m = machine();
    let script = "echo starting {threads} threads; for i in 1 2 3 4 5 6 7 8 9 10; do echo latency_us=$((i*10)); done; echo requests_per_s=$((1000*{threads})).5";
    let mut study = Study::new(sh(script));
    study.repeat = 2;
    study.metric = Metric::parse("regex:requests_per_s=([0-9.]+)").unwrap();
    study.response = Some(Metric::parse(r"regex:latency_us=([0-9]+)").unwrap());
    study.response_unit = "us".into();
    let plan = ScalePlan::new(&m, Placement::Compact, Some(&[1]), None).unwrap();
    let mut sink = MemorySink::default();
    let s = scale(&m, &plan, &study, &mut sink, &mut quiet).unwrap();
    let p = &s.points[0];
    assert_eq!(p.stats.throughput.as_ref().unwrap().estimate, 1000.5);
    let resp = p.stats.response.as_ref().unwrap();
    assert_eq!(resp.count, 20);
    assert_eq!(resp.unit, "us");
    assert_eq!(resp.p50.estimate, 55.0);
    assert!(resp.p99.estimate <= 100.0 && resp.p99.high == 100.0);
}

#[test]
fn a_metric_that_never_matches_stops_at_the_pilot_with_the_output() {
    let m = machine();
    let mut study = Study::new(sh("echo hello; echo the-last-line"));
    study.metric = Metric::parse("regex:rps=([0-9]+)").unwrap();
    let plan = ScalePlan::new(&m, Placement::Compact, None, None).unwrap();
    let mut sink = MemorySink::default();
    let err = scale(&m, &plan, &study, &mut sink, &mut quiet).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, HarnessError::PilotMetric { .. }), "{msg}");
    assert!(
        msg.contains("the-last-line") && msg.contains("--metric"),
        "{msg}"
    );
    // The failed pilot is recorded; nothing else ran.
    assert_eq!(sink.records.len(), 1);
    let r: RunRecord = sink.records[0].decode().unwrap().unwrap();
    assert!(!r.ok && r.failure.unwrap().contains("no match"));
}

#[test]
fn a_missing_command_is_an_error_before_anything_is_recorded() {
    let m = machine();
    let study = Study::new(vec!["numalab-no-such-program".into()]);
    let plan = ScalePlan::new(&m, Placement::Compact, Some(&[1]), None).unwrap();
    let mut sink = MemorySink::default();
    let err = scale(&m, &plan, &study, &mut sink, &mut quiet).unwrap_err();
    assert!(err.to_string().contains("command not found"), "{err}");
    assert!(sink.records.is_empty());
    let bad = Study::new(sh("echo {thread}"));
    let err = scale(&m, &plan, &bad, &mut sink, &mut quiet).unwrap_err();
    assert!(
        err.to_string().contains("unknown placeholder {thread}"),
        "{err}"
    );
}

#[test]
fn failures_are_recorded_and_the_study_goes_on_unless_fail_fast() {
    let m = machine();
    if m.pus.len() < 2 {
        return; // needs two thread counts
    }
    // Fails at 2 threads only.
    let mut study = Study::new(sh("[ {threads} -eq 1 ] || { echo broken >&2; exit 3; }"));
    study.repeat = 2;
    let plan = ScalePlan::new(&m, Placement::Compact, Some(&[1, 2]), None).unwrap();
    let mut sink = MemorySink::default();
    let s = scale(&m, &plan, &study, &mut sink, &mut quiet).unwrap();
    assert_eq!(s.failed_runs, 2);
    assert_eq!(s.points[0].stats.ok, 2);
    assert!(s.points[1].stats.failures[0].contains("exited with status 3"));
    assert!(s.findings.iter().any(|f| f.contains("2 run(s) failed")));
    study.fail_fast = true;
    let mut sink = MemorySink::default();
    let err = scale(&m, &plan, &study, &mut sink, &mut quiet).unwrap_err();
    assert!(matches!(err, HarnessError::FailFast(_)), "{err}");
    assert_eq!(sink.records.len(), 2, "run 1 ok, run 2 failed, then stop");
}

#[test]
fn a_resumed_study_does_not_rerun_what_it_has() {
    let m = machine();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs.log");
    let mut study = Study::new(sh(&format!("echo ran >> {}", log.display())));
    study.repeat = 2;
    let plan = ScalePlan::new(&m, Placement::Compact, Some(&[1]), None).unwrap();
    let mut first = MemorySink::default();
    scale(&m, &plan, &study, &mut first, &mut quiet).unwrap();
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);
    // Keep only the first run, as if the study had been killed after it.
    let mut resumed = MemorySink {
        previous: first.records[..1].to_vec(),
        ..Default::default()
    };
    let mut statuses = Vec::new();
    let s = scale(&m, &plan, &study, &mut resumed, &mut |p: &Progress| {
        statuses.push(p.status.clone())
    })
    .unwrap();
    assert_eq!(statuses[0], "resumed");
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 3);
    assert_eq!(s.points[0].stats.runs, 2);
}

#[test]
fn a_policy_study_on_one_node_says_the_comparison_is_trivial() {
    let m = machine();
    let mut study = Study::new(sh("x=$(seq 1 20000); sleep 0.3"));
    study.repeat = 1;
    study.sampling.interval_ms = 20;
    let plan = policy::new_plan(&m, None, Placement::Compact, None, &[]).unwrap();
    let mut sink = MemorySink::default();
    let s = policy(&m, &plan, &study, &mut sink, &mut quiet).unwrap();
    assert_eq!(sink.records.len(), 5);
    assert_eq!(sink.records.last().unwrap().kind, PolicySummary::KIND);
    assert_eq!(s.results.len(), 4);
    if m.numa_nodes.iter().filter(|n| n.memory_bytes > 0).count() == 1 {
        let node = m.numa_nodes[0].os_index;
        assert!(s.single_node);
        assert!(s.classification.contains("trivial"), "{}", s.classification);
        for r in &s.results {
            assert_eq!(r.stats.ok, 1, "{:?}: {:?}", r.policy, r.stats.failures);
            assert_eq!(r.fractions.get(&node), Some(&1.0), "{:?}", r.policy);
            assert!(r.pages.as_ref().unwrap().data_total() > 0);
        }
        assert!(s.command_line.is_none());
    }
    assert!(s
        .results
        .iter()
        .any(|r| r.policy == policy::PolicyKind::Interleave));
}

#[test]
fn a_policy_the_kernel_refuses_is_a_recorded_failure() {
    let m = machine();
    // A plan made for a node this machine does not have: set_mempolicy fails in the
    // child, the run is recorded as failed, the study goes on.
    let mut plan = policy::new_plan(&m, Some(1), Placement::Compact, None, &[]).unwrap();
    plan.node = 63;
    plan.policies = vec![policy::PolicyKind::Local, policy::PolicyKind::Bind];
    let mut study = Study::new(sh("true"));
    study.repeat = 1;
    let mut sink = MemorySink::default();
    let s = policy(&m, &plan, &study, &mut sink, &mut quiet).unwrap();
    assert_eq!(s.results[0].stats.ok, 1);
    assert_eq!(s.results[1].stats.ok, 0);
    assert!(
        s.results[1].stats.failures[0].contains("refused the placement"),
        "{:?}",
        s.results[1].stats.failures
    );
}

#[test]
fn a_run_time_sweep_names_the_best_value() {
    let m = machine();
    let mut study = Study::new(sh("echo rate={V}"));
    study.metric = Metric::parse("regex:rate=([0-9]+)").unwrap();
    study.repeat = 2;
    let plan = sweep::new_plan(
        &m,
        vec!["V=10,40,20".parse::<Param>().unwrap()],
        None,
        None,
        Placement::Compact,
        &study,
    )
    .unwrap();
    let mut sink = MemorySink::default();
    let s = sweep(&m, &plan, &study, &mut sink, &mut quiet).unwrap();
    assert_eq!(sink.records.len(), 7);
    assert_eq!(sink.records.last().unwrap().kind, SweepSummary::KIND);
    let sp: Vec<f64> = s
        .points
        .iter()
        .map(|p| p.speedup.as_ref().unwrap().estimate)
        .collect();
    assert_eq!(sp, vec![1.0, 4.0, 2.0]);
    assert_eq!(s.best.as_deref(), Some("V=40"));
    assert!(
        s.findings[0].starts_with("best: V=40 at 4.00x"),
        "{:?}",
        s.findings
    );
}

#[test]
fn a_compile_time_sweep_builds_once_per_value_and_records_build_failures() {
    let m = machine();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("built.txt");
    let mut study = Study::new(sh(&format!("cat {}", out.display())));
    study.metric = Metric::parse("regex:value=([0-9]+)").unwrap();
    study.repeat = 2;
    // The build writes the value into a file the program reads; value 0 fails to build.
    let build = format!(
        "/bin/sh -c '[ {{N}} -ne 0 ] && echo value={{N}} > {}'",
        out.display()
    );
    let plan = sweep::new_plan(
        &m,
        vec!["N=5,0,15".parse::<Param>().unwrap()],
        Some(&build),
        None,
        Placement::Compact,
        &study,
    )
    .unwrap();
    let mut sink = MemorySink::default();
    let s = sweep(&m, &plan, &study, &mut sink, &mut quiet).unwrap();
    assert!(s.points[1].build_failed);
    assert_eq!(s.points[1].stats.ok, 0);
    assert_eq!(s.points[2].speedup.as_ref().unwrap().estimate, 3.0);
    assert_eq!(s.best.as_deref(), Some("N=15"));
    let first: RunRecord = sink.records[0].decode().unwrap().unwrap();
    assert!(first.build.as_ref().unwrap().ok);
    assert!(s
        .findings
        .iter()
        .any(|f| f.contains("N=0: the build failed")));
}

/// A program that fails on every run, each time its own way (exit 1, 2, ... 6): every
/// failed run's record carries a `run_failed` warning, and folded as the terminal does
/// they are the first at once and one line naming the next three with the remedy.
#[test]
fn failed_runs_warn_and_fold_into_one_line() {
    let m = machine();
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("n");
    let count = count.display();
    let script = format!(
        "c=$(( $(cat '{count}' 2>/dev/null || echo 0) + 1 )); echo $c > '{count}'; echo broken >&2; exit $c"
    );
    let mut study = Study::new(sh(&script));
    study.repeat = 6;
    let plan = ScalePlan::new(&m, Placement::Compact, Some(&[1]), None).unwrap();
    let mut sink = MemorySink::default();
    let s = scale(&m, &plan, &study, &mut sink, &mut quiet).unwrap();
    assert_eq!(s.failed_runs, 6);
    let mut fold = numalab_schema::fold::Fold::default();
    let mut shown = Vec::new();
    for r in sink.records.iter().filter(|r| r.kind == RunRecord::KIND) {
        assert_eq!(r.warnings.len(), 1, "{r:?}");
        assert_eq!(r.warnings[0].code, "run_failed");
        if fold.note(&r.key, &r.warnings[0]) {
            shown.push(r.warnings[0].message.clone());
        }
    }
    assert_eq!(shown.len(), 1);
    assert!(shown[0].contains("exited with status 1"), "{shown:?}");
    let folded = fold.folded();
    assert_eq!(folded.len(), 1);
    let m = &folded[0].message;
    assert!(
        m.starts_with("run_failed: 5 more records had this warning, each its own message (6 in all; the first is above); the next: "),
        "{m}"
    );
    let at = |x: &str| m.find(x).unwrap_or_else(|| panic!("{x} in {m}"));
    assert!(at("exited with status 2") < at("exited with status 3"));
    assert!(at("exited with status 3") < at("exited with status 4"));
    assert!(!m.contains("status 5") && !m.contains("status 6"), "{m}");
    assert!(folded[0]
        .remedy
        .as_deref()
        .is_some_and(|r| r.contains("fix the command or its options")));
}
