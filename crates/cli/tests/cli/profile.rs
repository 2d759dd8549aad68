//! `numalab profile` through the real binary: the JSON contract (read with independent
//! structs), imports, comparisons, a software-event run, clock sampling, and the error
//! table (arguments, exit code, message).

use crate::common::{self, assert_ok, bundle, numalab, refused};
use serde::Deserialize;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> String {
    common::fixture("pmu/perf-stat", name)
}

/// The documented `pmu.profile` fields, read without numalab's types.
#[derive(Deserialize)]
struct ProfileJson {
    cpu: CpuJson,
    mode: String,
    events: Vec<EventJson>,
    metrics: Vec<MetricJson>,
    tree: TreeJson,
    #[serde(default)]
    hardware_pmu: Option<bool>,
    #[serde(default)]
    coverage: Option<CoverageJson>,
}

/// What could not be counted, each fact once (docs/profile.md, "Records").
#[derive(Deserialize)]
struct CoverageJson {
    hardware_asked: usize,
    hardware_counted: usize,
    unsupported: Vec<String>,
    untrusted: Vec<String>,
    not_scheduled: Vec<String>,
    not_computable: Vec<NotComputableJson>,
}

#[derive(Deserialize)]
struct NotComputableJson {
    cause: String,
    text: String,
    metrics: Vec<String>,
}

#[derive(Deserialize)]
struct CpuJson {
    catalog: String,
}

#[derive(Deserialize)]
struct EventJson {
    name: String,
    value: Option<f64>,
    running_fraction: Option<f64>,
    supported: bool,
    state: String,
}

#[derive(Deserialize)]
struct MetricJson {
    name: String,
    value: Option<f64>,
    reason: Option<String>,
}

#[derive(Deserialize)]
struct TreeJson {
    verdict: String,
    sample_next: Vec<String>,
    #[serde(default)]
    no_verdict: Option<String>,
}

#[test]
fn import_json_contract() {
    let out = numalab(&[
        "profile",
        "--import",
        &fixture("n1-pointer-chase.csv"),
        "--json",
    ]);
    let b = bundle(&out);
    assert_eq!(b.records.len(), 1);
    let r = &b.records[0];
    assert_eq!(
        (r.kind.as_str(), r.origin.as_str()),
        ("pmu.profile", "imported")
    );
    assert!(r.warnings.iter().any(|w| w.code == "pmu.multiplexed"));
    let p: ProfileJson = serde_json::from_value(r.data.clone()).unwrap();
    assert_eq!(
        (p.cpu.catalog.as_str(), p.mode.as_str()),
        ("neoverse-n1", "import")
    );
    let ipc = p.metrics.iter().find(|m| m.name == "ipc").unwrap();
    assert!((ipc.value.unwrap() - 0.2).abs() < 1e-12);
    let remote = p
        .metrics
        .iter()
        .find(|m| m.name == "remote_access_pki")
        .unwrap();
    assert_eq!(remote.value, None);
    assert!(remote
        .reason
        .as_deref()
        .unwrap()
        .contains("REMOTE_ACCESS not supported"));
    let cyc = p.events.iter().find(|e| e.name == "CPU_CYCLES").unwrap();
    assert_eq!((cyc.value, cyc.running_fraction), (Some(1e9), Some(0.5)));
    let ra = p.events.iter().find(|e| e.name == "REMOTE_ACCESS").unwrap();
    assert_eq!(
        (ra.supported, ra.state.as_str(), ra.value),
        (false, "not_supported", None)
    );
    assert!(p
        .tree
        .verdict
        .starts_with("back-end bound: 83% of cycles stalled in the back end"));
    assert_eq!(p.tree.sample_next[0], "STALL_BACKEND");
}

#[test]
fn import_report_for_people() {
    let out = numalab(&[
        "profile",
        "--import",
        &fixture("n1-pointer-chase.json"),
        "--cpu-model",
        "ampere-altra",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_ok(&out);
    assert!(
        text.contains("Neoverse N1 (--cpu-model ampere-altra)"),
        "{text}"
    );
    assert!(text.contains("verdict: back-end bound"), "{text}");
    assert!(
        text.contains("memory bound: 99% of last-level reads miss, L1D MPKI 106"),
        "{text}"
    );
    assert!(
        text.contains("worth sampling next: STALL_BACKEND"),
        "{text}"
    );
}

#[test]
fn compare_before_after() {
    let out = numalab(&[
        "profile",
        "--compare",
        &fixture("n1-pointer-chase.csv"),
        &fixture("n1-pointer-chase-prefetch.csv"),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_ok(&out);
    assert!(
        text.contains("instructions changed by +15.0%: MPKI"),
        "{text}"
    );
    // The report's comparison tables: change in percent in its own column.
    let row = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in {text}"))
            .to_string()
    };
    assert!(row("ipc").contains(" 130.0"), "{text}"); // IPC 0.2 -> 0.46
    assert!(row("CPU_CYCLES").contains(" -50.0"), "{text}"); // cycles
                                                             // A saved profile compares like a perf file.
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("base");
    let out = numalab(&[
        "profile",
        "--import",
        &fixture("n1-pointer-chase.csv"),
        "--out",
        &saved.display().to_string(),
    ]);
    assert_ok(&out);
    let out = numalab(&[
        "profile",
        "--json",
        "--compare",
        &saved.display().to_string(),
        &fixture("n1-pointer-chase-prefetch.csv"),
    ]);
    let b = bundle(&out);
    assert_eq!(b.records[0].kind, "pmu.comparison");
    assert_eq!(b.records[0].data["mpki_comparable"], false);
}

/// The bundle of a run that may exit 4 (no hardware event counted): printed all the same.
fn bundle_any(out: &std::process::Output) -> common::BundleJson {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 4)), "{stderr}");
    serde_json::from_slice(&out.stdout).expect("one JSON document on stdout")
}

#[test]
fn software_run_of_a_real_command() {
    let cap = numalab_pmu::capability::probe();
    let out = numalab(&[
        "profile",
        "--json",
        "--",
        "sh",
        "-c",
        "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
    ]);
    let b = bundle_any(&out);
    let r = &b.records[0];
    assert_eq!(
        (r.kind.as_str(), r.origin.as_str()),
        ("pmu.profile", "measured")
    );
    let p: ProfileJson = serde_json::from_value(r.data.clone()).unwrap();
    assert_eq!(p.mode, "default");
    assert_eq!(
        p.hardware_pmu,
        Some(cap.cycles.works() || cap.instructions.works())
    );
    let task = p.events.iter().find(|e| e.name == "TASK_CLOCK").unwrap();
    assert_eq!(task.state, "counted");
    assert!(task.value.unwrap() > 0.0);
    let cov = p.coverage.expect("coverage");
    assert!(cov.hardware_asked > 0);
    // Exit 4 exactly when not one hardware event was counted (README exit codes).
    let expected = if cov.hardware_counted == 0 { 4 } else { 0 };
    assert_eq!(out.status.code(), Some(expected));
    if !cap.cycles.works() && !cap.instructions.works() {
        assert_eq!(cov.hardware_counted, 0);
        // Said once, in one line.
        assert!(r.warnings.iter().any(|w| w.code == "pmu.no_hardware"));
        assert!(p
            .tree
            .verdict
            .starts_with("no verdict: this machine exposes no hardware PMU"));
        assert!(p.tree.no_verdict.is_some());
        // Every hardware metric not computable, for one reason, said once.
        let hw_groups: Vec<&NotComputableJson> = cov
            .not_computable
            .iter()
            .filter(|g| g.cause == "no_hardware")
            .collect();
        assert_eq!(
            hw_groups.len(),
            1,
            "{:?}",
            cov.not_computable
                .iter()
                .map(|g| &g.text)
                .collect::<Vec<_>>()
        );
        assert!(hw_groups[0].metrics.contains(&"ipc".to_string()));
        assert!(hw_groups[0]
            .text
            .ends_with("metrics not computable: no hardware PMU here"));
        let text = numalab(&["profile", "--", "true"]);
        assert_eq!(text.status.code(), Some(4));
        let stderr2 = String::from_utf8_lossy(&text.stderr);
        assert_eq!(
            stderr2.matches("no hardware PMU here").count(),
            1,
            "{stderr2}"
        );
        assert!(
            stderr2.contains("not one hardware event could be counted"),
            "{stderr2}"
        );
        let stdout2 = String::from_utf8_lossy(&text.stdout);
        assert_eq!(
            stdout2.matches("metrics not computable").count(),
            1,
            "{stdout2}"
        );
        assert!(stdout2.contains("verdict: no verdict"), "{stdout2}");
    }
    let _ = (&cov.unsupported, &cov.untrusted, &cov.not_scheduled);
}

/// Software events only: nothing hardware was asked for, so nothing is missing (exit 0).
#[test]
fn software_events_alone_succeed_without_a_pmu() {
    let out = numalab(&[
        "profile",
        "--json",
        "--metrics",
        "none",
        "--events",
        "TASK_CLOCK,PAGE_FAULTS",
        "--",
        "true",
    ]);
    let b = bundle(&out);
    let p: ProfileJson = serde_json::from_value(b.records[0].data.clone()).unwrap();
    let cov = p.coverage.unwrap();
    assert_eq!((cov.hardware_asked, cov.hardware_counted), (0, 0));
}

#[test]
fn clock_sampling_through_the_cli() {
    let out = numalab(&[
        "profile",
        "--json",
        "--metrics",
        "none",
        "--sample",
        "cpu-clock",
        "--sample-freq",
        "2000",
        "--shell",
        "--",
        "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done",
    ]);
    let b = bundle(&out);
    let s = b.records.iter().find(|r| r.kind == "pmu.samples").unwrap();
    assert!(s.data["samples"].as_u64().unwrap() > 10, "{}", s.data);
    assert_eq!(s.data["event"], "CPU_CLOCK");
    assert!(s.data["skid"].as_str().unwrap().contains("timer"));
    let f0 = &s.data["functions"][0];
    // The shell and libc carry no debug info here; the samples still land in files.
    assert!(f0["object"].as_str().unwrap().starts_with('/'), "{f0}");
}

#[test]
fn list_shows_the_catalog() {
    let out = numalab(&["profile", "--list", "metrics", "--cpu-model", "neoverse-n2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("Neoverse N2"), "{text}");
    assert!(text.contains("frontend_bound"), "{text}");
    assert!(
        text.contains("100 * ((STALL_SLOT_FRONTEND - CPU_CYCLES)"),
        "{text}"
    );
    let out = numalab(&["profile", "--list", "events", "--cpu-model", "n1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("CRYPTO_SPEC") && text.contains("r77"),
        "{text}"
    );
}

#[test]
fn error_table() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.csv");
    std::fs::write(&bad, "100,,cycles,10,100.00,,\nnot a perf line\n").unwrap();
    let bad = bad.display().to_string();
    let base = fixture("n1-pointer-chase.csv");
    let nopath: PathBuf = tmp.path().join("nope.csv");
    let nopath = nopath.display().to_string();
    // (args, exit code, text expected on stderr)
    let mut cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["profile"], 2, "nothing to profile"),
        (
            vec!["profile", "--import", &base, "--metrics", "l1d_mkpi"],
            2,
            "l1d_mpki?",
        ),
        (
            vec![
                "profile",
                "--cpu-model",
                "n1",
                "--events",
                "CPU_CYCLE",
                "--",
                "true",
            ],
            2,
            "did you mean CPU_CYCLES",
        ),
        (
            vec!["profile", "--cpu-model", "neoverse-x9", "--", "true"],
            2,
            "unknown CPU model",
        ),
        (
            vec!["profile", "--cpu-model", "cortex-a72", "--", "true"],
            4,
            "known Arm core",
        ),
        (vec!["profile", "--import", &nopath], 3, "no such file"),
        (vec!["profile", "--import", &bad], 3, "line 2"),
        (
            vec!["profile", "--", "/nonexistent/numalab-nothing"],
            2,
            "command not found",
        ),
        (vec!["profile", "--", "false"], 1, "exited with status 1"),
        (
            vec![
                "profile",
                "--cpu-model",
                "n1",
                "--exact",
                "--counters",
                "1",
                "--",
                "true",
            ],
            2,
            "--exact needs more than 1",
        ),
        (
            vec!["profile", "--import", &base, "--exact"],
            2,
            "cannot be used with",
        ),
        (vec!["profile", "--compare", &base], 2, "2 values required"),
        (
            vec!["profile", "--timeout", "soon", "--", "true"],
            2,
            "invalid value",
        ),
        (vec!["profile", "--pid", "2147483646"], 2, "no such process"),
        (
            vec!["profile", "--interval", "5ms", "--", "true"],
            2,
            "below 10 ms",
        ),
        (
            vec!["profile", "--pid", "1", "--exact"],
            2,
            "cannot be used with",
        ),
        (
            vec!["profile", "--duration", "1s", "--", "true"],
            2,
            "cannot be used with",
        ),
    ];
    if !numalab_pmu::capability::probe().hardware_pmu() {
        cases.push((
            vec![
                "profile",
                "--sample",
                "L1D_LOAD_MISSES",
                "--cpu-model",
                "x86-64",
                "--",
                "true",
            ],
            4,
            "no hardware PMU here",
        ));
    }
    for (args, code, text) in cases {
        refused(&args, code, text);
    }
}

/// `--pid` with `--duration` and `--interval`, and `--all-cpus`, through the CLI: the
/// record says what was counted and what stopped it, and the timeline is there.
#[test]
fn attach_system_wide_and_intervals_through_the_cli() {
    let mut child = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let out = numalab(&[
        "profile",
        "--json",
        "--pid",
        &pid,
        "--duration",
        "300ms",
        "--interval",
        "100ms",
    ]);
    let _ = child.kill();
    let _ = child.wait();
    let b = bundle_any(&out);
    assert_eq!(b.records[0].key, format!("profile:pid:{pid}"));
    let d = &b.records[0].data;
    assert_eq!(d["attach"]["kind"], "pid");
    assert_eq!(d["attach"]["comm"], "sleep");
    assert_eq!(d["attach"]["stopped_by"], "duration");
    assert_eq!(d["interval_ms"], 100);
    let points = d["timeline"].as_array().unwrap();
    // Three intervals are expected (ticks at 100 and 200 ms, the rest to the end); a
    // stall of the counting thread past two ticks on a loaded machine merges two of
    // them, so the count is 2-5, and what is asserted exactly is the timeline's shape:
    // contiguous from 0 to the seconds counted, every interval but the last ending at
    // or after its tick.
    assert!((2..=5).contains(&points.len()), "{points:?}");
    let seconds = d["attach"]["seconds"].as_f64().unwrap();
    assert!(seconds >= 0.3, "{seconds}");
    let mut at = 0.0;
    for (k, pt) in points.iter().enumerate() {
        let (start, end) = (
            pt["start_s"].as_f64().unwrap(),
            pt["end_s"].as_f64().unwrap(),
        );
        assert_eq!(
            start, at,
            "interval {k} starts where the last ended: {points:?}"
        );
        assert!(end > start, "{points:?}");
        if k + 1 < points.len() {
            assert!(
                end >= 0.1 * (k + 1) as f64 - 1e-9,
                "interval {k} ends before its tick: {points:?}"
            );
        }
        at = end;
    }
    assert_eq!(
        at, seconds,
        "the timeline covers the seconds counted: {points:?}"
    );
    assert!(points
        .iter()
        .all(|p| p["counts"]["DURATION_TIME"].as_f64().unwrap() > 0.0));
    // The text report draws nothing without a terminal but lists the intervals.
    let mut child = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let text = numalab(&[
        "profile",
        "--pid",
        &child.id().to_string(),
        "--duration",
        "250ms",
        "--interval",
        "100ms",
    ]);
    let _ = child.kill();
    let _ = child.wait();
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("Timeline"), "{stdout}");
    assert!(stdout.contains("stopped by duration"), "{stdout}");

    // System-wide: as root (CI) it counts every online CPU; otherwise it says what it
    // needs.
    let out = numalab(&["profile", "--json", "--all-cpus", "--duration", "200ms"]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let b = bundle_any(&out);
        let d = &b.records[0].data;
        assert_eq!(b.records[0].key, "profile:system-wide");
        assert_eq!(d["attach"]["kind"], "system-wide");
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
        let n = numalab_pmu::profile::parse_cpu_list(&online).unwrap().len();
        assert_eq!(d["attach"]["cpus"].as_array().unwrap().len(), n);
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("perf_event_paranoid <= 0"), "{stderr}");
    }
}

/// `perf script` data-address samples are recognised by content through `--import`,
/// with named regions; `--memory-samples` on a machine without PEBS, IBS or SPE keeps
/// the counts and exits 4 naming what it looked for.
#[test]
fn memory_samples_import_and_live_refusal() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../memaccess/tests/fixtures/graphwalk.script")
        .display()
        .to_string();
    let tmp = tempfile::tempdir().unwrap();
    let regions = tmp.path().join("regions.txt");
    std::fs::write(&regions, "graph.edges 0x7f0000000000 256M 4242\n").unwrap();
    let regions = regions.display().to_string();
    let out = numalab(&[
        "profile",
        "--json",
        "--import",
        &script,
        "--regions",
        &regions,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let b: common::BundleJson = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(b.records.len(), 1);
    let r = &b.records[0];
    assert_eq!(
        (r.kind.as_str(), r.origin.as_str()),
        ("pmu.memaccess", "imported")
    );
    assert_eq!(r.data["samples"], 30);
    let findings = r.data["findings"].to_string();
    assert!(findings.contains("hit graph.edges"), "{findings}");
    // A given threshold replaces the percentile.
    let out = numalab(&["profile", "--json", "--import", &script, "--slow", "200"]);
    let b: common::BundleJson = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(b.records[0].data["threshold"]["value"], 200.0);
    assert_eq!(b.records[0].data["threshold"]["how"], "given");
    // Refusals.
    let out = numalab(&["profile", "--import", &script, "--slow", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--slow 0"));
    let out = numalab(&[
        "profile",
        "--import",
        &script,
        "--regions",
        "/nonexistent/r.txt",
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--regions /nonexistent/r.txt"));
    let bad = tmp.path().join("bad.script");
    let mut text = std::fs::read_to_string(&script).unwrap();
    text.push_str(
        "     graphwalk  4242 [001] 10.000000:  cpu/mem-loads/P: 7f0000001000 |OP LOAD|LVL\n",
    );
    std::fs::write(&bad, text).unwrap();
    let out = numalab(&["profile", "--import", &bad.display().to_string()]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Live: no sampling facility on the development VM and the CI machine.
    let facility = numalab_memaccess::detect(Path::new("/sys"));
    let out = numalab(&["profile", "--json", "--memory-samples", "--", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let b = bundle_any(&out);
    assert!(
        b.records.iter().any(|r| r.kind == "pmu.profile"),
        "the counts are kept"
    );
    // The uncore beside the counts: counted where the machine has uncore PMUs, else a
    // note naming the PMUs it has; `--no-uncore` asks for neither.
    let root = Path::new("/");
    let d = numalab_uncore::discover(root, &numalab_uncore::packages_from_sysfs(root)).unwrap();
    let prof = b.records.iter().find(|r| r.kind == "pmu.profile").unwrap();
    if d.uncore().next().is_none() {
        let note = prof.data["uncore_note"].as_str().unwrap_or_default();
        assert!(note.starts_with("no uncore PMU"), "{}", prof.data);
    } else {
        assert!(
            prof.data["uncore"].is_object(),
            "{}",
            prof.data["uncore_note"]
        );
    }
    let off = numalab(&["profile", "--json", "--no-uncore", "--", "true"]);
    let b2 = bundle_any(&off);
    assert!(b2.records[0].data.get("uncore").is_none());
    assert!(b2.records[0].data.get("uncore_note").is_none());
    if facility.is_err() {
        assert_eq!(out.status.code(), Some(4), "{stderr}");
        assert!(
            stderr.contains("--memory-samples: no data-address sampling facility"),
            "{stderr}"
        );
        assert!(b.records.iter().all(|r| r.kind != "pmu.memaccess"));
    }
}

/// Ctrl-C ends counting a running process and keeps the counts: the designated stop
/// without --duration (exit 0, or 4 without a PMU), an interruption with one (exit 130).
#[test]
fn ctrl_c_keeps_the_counts_of_an_attached_profile() {
    for duration in [None, Some("60s")] {
        let mut target = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = target.id().to_string();
        let mut args = vec!["profile", "--json", "--pid", &pid, "--interval", "50ms"];
        if let Some(d) = duration {
            args.extend(["--duration", d]);
        }
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_numalab"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(700));
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGINT);
        }
        let out = child.wait_with_output().unwrap();
        let _ = target.kill();
        let _ = target.wait();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let b: common::BundleJson =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let d = &b.records[0].data;
        assert_eq!(d["attach"]["stopped_by"], "ctrl-c", "{stderr}");
        assert!(!d["timeline"].as_array().unwrap().is_empty());
        match duration {
            None => assert!(matches!(out.status.code(), Some(0 | 4)), "{stderr}"),
            Some(_) => {
                assert_eq!(out.status.code(), Some(130), "{stderr}");
                assert!(stderr.contains("interrupted after"), "{stderr}");
            }
        }
    }
}

/// scripts/hw-check.sh in its quick mode with this build: every step recorded with its
/// exit status, the kernels' expectations written, and every expectation either
/// satisfied by the counts or said not to be counted here (on this VM, no PMU): a PMU
/// whose counts contradict a known kernel fails here.
#[test]
fn the_hardware_check_records_every_step_and_checks_the_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hw");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/hw-check.sh");
    let run = std::process::Command::new("bash")
        .arg(&script)
        .args([
            "--numalab",
            env!("CARGO_BIN_EXE_numalab"),
            "--quick",
            "--only",
            "doctor,chase,branchy,model",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    for step in ["doctor ", "chase ", "branchy ", "model "] {
        assert!(
            summary.lines().any(|l| l.starts_with(step)),
            "{step} missing from\n{summary}"
        );
    }
    assert!(
        summary.lines().any(|l| l.starts_with("model        0")),
        "{summary}"
    );
    let exp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("branchy-expected.json")).unwrap())
            .unwrap();
    assert_eq!(exp["iterations"], 5_000_000);
    assert_eq!(exp["expected"][1]["event"], "branch-misses");
    let checks: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("  chase:") || l.starts_with("  branchy:"))
        .collect();
    assert_eq!(checks.len(), 4, "{summary}");
    for c in checks {
        assert!(
            c.contains(": ok (") || c.contains("not counted here"),
            "{c}"
        );
    }
    assert!(out.join("profile-chase/results.jsonl").exists());
    assert!(out.join("model/results.jsonl").exists());
}
