//! The history's guarantees, end to end: idempotent ingest of real bundles, queries,
//! regressions, exports, hostile input, migrations, and several processes (some killed
//! with SIGKILL) writing one file.
//!
//! Child processes are this test binary run again with `child_process` as the only
//! test and `NUMALAB_HISTORY_CHILD` set; without that variable `child_process` does
//! nothing.

use numalab_history::schema::MIGRATIONS;
use numalab_history::{
    Baseline, History, HistoryError, IngestOptions, IngestOutcome, Limits, Query, RegressionQuery,
    RunFilter, Verdict, SCHEMA_VERSION,
};
use numalab_schema::journal::{read_bundle, Journal, JOURNAL_FILE};
use numalab_schema::{Bundle, Record};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, UNIX_EPOCH};

const CHILD_ENV: &str = "NUMALAB_HISTORY_CHILD";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bundles")
        .join(name)
}

fn time(i: u64) -> String {
    // 2026-01-01T00:00:00Z plus i hours.
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(1_767_225_600 + i * 3600))
        .to_string()
}

/// A bundle of the `vm-policy` fixture's machine with one placement figure (`local`,
/// higher is better) whose samples are `throughput`, and a core-to-core matrix of three
/// pairs (lower is better) whose pair latencies are `latency`.
fn bundle(created: &str, throughput: &[f64], latency: [f64; 3]) -> Bundle {
    let (mut b, _) = read_bundle(&fixture("vm-policy")).unwrap();
    b.envelope.created_utc = created.into();
    let (c2c, _) = read_bundle(&fixture("c2c-dual-xeon-gold-6242")).unwrap();
    let mut matrix = c2c.records[0].clone();
    let [a, bb, c] = latency;
    matrix.data["cpus"] = json!([0, 1, 2]);
    matrix.data["matrix_ns"] = json!([[null, a, bb], [a, null, c], [bb, c, null]]);
    matrix.data["groups"] = json!([]);
    matrix.data["levels"] = json!([]);
    matrix.data["variant"] = json!("cas");
    let mut records: Vec<Record> = Vec::new();
    for r in &b.records {
        let mut r = r.clone();
        if r.kind == "harness.policy" {
            let first = r.data["results"][0].clone();
            r.data["results"] = json!([first]);
            r.data["results"][0]["stats"]["throughput_values"] = json!(throughput);
        }
        records.push(r);
    }
    records.push(matrix);
    b.records = records;
    b
}

const POLICY: &str = "policy.sh -c i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done.local";

/// Writes `b` as an output folder (a journal) with the schema crate's writer.
fn write_journal(dir: &Path, b: &Bundle) -> PathBuf {
    let mut j = Journal::open(dir, &b.envelope)
        .unwrap()
        .journal
        .without_fsync();
    for r in &b.records {
        assert!(j.append(r).unwrap());
    }
    dir.to_path_buf()
}

fn open(dir: &Path) -> History {
    History::open(&dir.join("history.db")).unwrap()
}

fn stored(o: &IngestOutcome) -> i64 {
    match o {
        IngestOutcome::Stored { run_id, .. } => *run_id,
        other => panic!("expected a new run, got {other:?}"),
    }
}

#[test]
fn the_same_content_is_stored_once_wherever_it_lives() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    let b = bundle(&time(0), &[100.0, 101.0, 99.0], [50.0, 51.0, 49.0]);
    let a = write_journal(&dir.path().join("a"), &b);
    let id = stored(&h.ingest(&a).unwrap());
    let again = h.ingest(&a).unwrap();
    assert!(matches!(again, IngestOutcome::AlreadyPresent { run_id, .. } if run_id == id));
    // A copy in another folder, later modification time.
    std::fs::create_dir(dir.path().join("copy")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::copy(
        a.join(JOURNAL_FILE),
        dir.path().join("copy").join(JOURNAL_FILE),
    )
    .unwrap();
    assert_eq!(h.ingest(&dir.path().join("copy")).unwrap().run_id(), id);
    // The same bundle as a single JSON document, records in another order.
    let mut shuffled = b.clone();
    shuffled.records.reverse();
    let file = dir.path().join("bundle.json");
    std::fs::write(&file, serde_json::to_vec(&shuffled).unwrap()).unwrap();
    assert!(matches!(
        h.ingest(&file).unwrap(),
        IngestOutcome::AlreadyPresent { run_id, .. } if run_id == id
    ));
    // Another run (another time) is new.
    let other = write_journal(
        &dir.path().join("b"),
        &bundle(&time(1), &[1.0], [1.0, 2.0, 3.0]),
    );
    assert_ne!(stored(&h.ingest(&other).unwrap()), id);
    assert_eq!(h.run_count().unwrap(), 2);

    let run = h.run(id).unwrap().unwrap();
    assert_eq!(run.label, "vm");
    assert_eq!(run.host.as_deref(), Some("vm"));
    assert_eq!(run.time_utc, time(0));
    assert_eq!(run.tool_version, b.envelope.tool.version);
    assert_eq!(run.kernel.as_deref(), Some("6.18.44-fc-v595"));
    assert_eq!(run.machine.vendor.as_deref(), Some("AuthenticAMD"));
    assert_eq!(
        run.machine.cpu_id.as_deref(),
        Some("family 25 model 17 stepping 1")
    );
    assert_eq!(
        (
            run.machine.cores,
            run.machine.pus,
            run.machine.numa_nodes,
            run.machine.memory_gib
        ),
        (Some(2), Some(2), Some(1), Some(20))
    );
    assert_eq!(run.metric_count, 4);
    assert!(h.verify().unwrap().is_empty());
}

#[test]
fn every_fixture_bundle_is_stored_with_all_its_figures_and_samples() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    let mut total = 0;
    for entry in std::fs::read_dir(fixture("")).unwrap() {
        let path = entry.unwrap().path();
        let loaded = numalab_report::load::load(&path).unwrap();
        let metrics = numalab_report::metrics::metrics(&loaded);
        let outcome = h.ingest(&path).unwrap();
        let id = stored(&outcome);
        assert!(matches!(outcome, IngestOutcome::Stored { metrics: n, .. } if n == metrics.len()));
        for m in &metrics {
            let samples = h.metric_samples(id, &m.id).unwrap().unwrap();
            assert_eq!(samples, m.samples, "{} of {}", m.id, path.display());
        }
        total += metrics.len();
    }
    assert!(total > 50, "the fixtures hold {total} figures");
    assert_eq!(h.query(&Query::default()).unwrap().len(), total);
    assert!(h.verify().unwrap().is_empty());
}

#[test]
fn kernel_and_firmware_are_beside_the_fingerprint_not_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    let a = bundle(&time(0), &[1.0], [1.0, 2.0, 3.0]);
    let mut b = bundle(&time(1), &[1.0], [1.0, 2.0, 3.0]);
    b.envelope.host.kernel = Some("6.19.0".into());
    let topo = b.envelope.host.topology.as_mut().unwrap();
    topo.infos.insert("DMIBIOSVersion".into(), "2.1".into());
    let mut c = bundle(&time(2), &[1.0], [1.0, 2.0, 3.0]);
    c.envelope.host.topology.as_mut().unwrap().cpu.stepping = Some(2);
    let opts = IngestOptions::default();
    let ids: Vec<i64> = [a, b, c]
        .iter()
        .map(|b| h.ingest_with_metrics(b, &[], &opts).unwrap().run_id())
        .collect();
    let runs: Vec<_> = ids.iter().map(|i| h.run(*i).unwrap().unwrap()).collect();
    assert_eq!(runs[0].machine, runs[1].machine);
    assert_eq!(runs[1].kernel.as_deref(), Some("6.19.0"));
    assert_eq!(runs[1].firmware.as_deref(), Some("2.1"));
    assert_eq!(runs[0].firmware, None);
    assert_ne!(runs[0].machine.fingerprint, runs[2].machine.fingerprint);
}

#[test]
fn queries_filter_by_figure_machine_tags_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    for i in 0..6u64 {
        let b = bundle(
            &time(i),
            &[100.0 + i as f64, 102.0, 98.0],
            [50.0, 52.0, 48.0],
        );
        let tags = json!({"cluster": if i % 2 == 0 { "even" } else { "odd" }, "rack": i});
        let path = write_journal(&dir.path().join(format!("b{i}")), &b);
        let opts = IngestOptions {
            label: Some(format!("run {i}")),
            tags,
        };
        h.ingest_with(&path, &opts).unwrap();
    }
    let all = h.query(&Query::metric(POLICY)).unwrap();
    assert_eq!(all.len(), 6);
    assert!(all.windows(2).all(|w| w[0].time_s < w[1].time_s));
    assert_eq!(all[0].median, Some(100.0));
    assert_eq!(all[0].mad, Some(2.0));
    assert_eq!(all[0].samples, 3);
    assert!(all[0].higher_is_better);
    assert_eq!(all[3].label, "run 3");
    assert_eq!(all[3].tags["rack"], json!(3));

    let mut q = Query::metric(POLICY);
    q.runs.tags = vec![("cluster".into(), "odd".into())];
    assert_eq!(h.query(&q).unwrap().len(), 3);
    q.runs.tags.push(("rack".into(), "3".into()));
    let p = h.query(&q).unwrap();
    assert_eq!(
        p.iter().map(|p| p.label.as_str()).collect::<Vec<_>>(),
        ["run 3"]
    );

    let mut q = Query::metric(POLICY);
    q.runs.since = Some(humantime::parse_rfc3339(&time(2)).unwrap());
    q.runs.until = Some(humantime::parse_rfc3339(&time(4)).unwrap());
    assert_eq!(h.query(&q).unwrap().len(), 3);

    let mut q = Query::metric(POLICY);
    q.runs.machine = Some(all[0].machine.clone());
    assert_eq!(h.query(&q).unwrap().len(), 6);
    q.runs.machine = Some("0000000000000000".into());
    assert!(h.query(&q).unwrap().is_empty());

    let q = Query {
        group: Some("core-to-core".into()),
        ..Query::default()
    };
    let ids: std::collections::BTreeSet<String> = h
        .query(&q)
        .unwrap()
        .into_iter()
        .map(|p| p.metric_id)
        .collect();
    assert_eq!(
        ids.into_iter().collect::<Vec<_>>(),
        ["c2c.cas.max", "c2c.cas.median", "c2c.cas.min"]
    );
    let q = Query {
        limit: Some(2),
        ..Query::metric(POLICY)
    };
    assert_eq!(h.query(&q).unwrap().len(), 2);
}

fn verdict_of(h: &History, q: &RegressionQuery, id: &str) -> numalab_history::Regression {
    h.verdicts(q)
        .unwrap()
        .into_iter()
        .find(|r| r.metric_id == id)
        .unwrap_or_else(|| panic!("no verdict for {id}"))
}

#[test]
fn a_true_regression_is_found_noise_and_improvements_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    let opts = IngestOptions::default();
    let mut ingest = |i: u64, tp: &[f64], lat: [f64; 3], upgraded: bool| {
        let mut b = bundle(&time(i), tp, lat);
        if upgraded {
            // Another kernel, and 4 GiB less memory seen: the same machine.
            b.envelope.host.kernel = Some("6.19.0".into());
            b.envelope.host.topology.as_mut().unwrap().summary.numa[0].memory_bytes -= 4 << 30;
        }
        let p = write_journal(&dir.path().join(format!("r{i}")), &b);
        h.ingest_with(&p, &opts).unwrap().run_id()
    };
    let base = ingest(
        0,
        &[100.0, 101.0, 99.0, 100.5, 99.5],
        [50.0, 51.0, 49.0],
        false,
    );
    let mid = ingest(
        1,
        &[99.0, 101.5, 100.0, 98.5, 100.0],
        [50.5, 49.5, 50.0],
        false,
    );
    // Throughput halved (higher is better: a regression); core-to-core latency halved
    // (lower is better: an improvement).
    ingest(2, &[50.0, 51.0, 49.0, 50.5, 49.5], [25.0, 25.5, 24.5], true);

    let q = RegressionQuery::default();
    let r = verdict_of(&h, &q, POLICY);
    assert_eq!(r.verdict, Verdict::Worse);
    assert!(r.is_regression());
    // What changed beside the figure is named with it.
    assert_eq!(
        r.changed,
        [
            "kernel 6.18.44-fc-v595 -> 6.19.0",
            "memory 20 GiB -> 16 GiB"
        ]
    );
    assert_eq!(r.baseline_runs, [base]);
    assert!((r.ratio.unwrap() - 0.5).abs() < 0.01, "{r:?}");
    let (lo, hi) = r.interval.unwrap();
    assert!(lo < 0.5 && hi < 1.0);
    assert!(matches!(
        r.noise,
        Some(numalab_history::RunNoise::Assumed { .. })
    ));

    let c2c = verdict_of(&h, &q, "c2c.cas.median");
    assert!(!c2c.higher_is_better);
    assert_eq!(c2c.verdict, Verdict::Better);
    let regs = h.regressions(&q).unwrap();
    assert_eq!(
        regs.iter()
            .map(|r| r.metric_id.as_str())
            .collect::<Vec<_>>(),
        [POLICY],
        "{regs:#?}"
    );

    // Baseline run 1 against the same latest run; then run 0 against run 1 only: a 1%
    // change within the noise.
    let q = RegressionQuery {
        baseline: Baseline::Run(mid),
        ..RegressionQuery::default()
    };
    assert_eq!(verdict_of(&h, &q, POLICY).baseline_runs, [mid]);
    let q = RegressionQuery {
        runs: RunFilter {
            until: Some(humantime::parse_rfc3339(&time(1)).unwrap()),
            ..RunFilter::default()
        },
        ..RegressionQuery::default()
    };
    let r = verdict_of(&h, &q, POLICY);
    assert_eq!(r.verdict, Verdict::WithinNoise, "{r:?}");
    assert!(r.changed.is_empty(), "{:?}", r.changed);
    assert!(h.regressions(&q).unwrap().is_empty());

    // A baseline time after every run: nothing to compare.
    let q = RegressionQuery {
        baseline: Baseline::Time(humantime::parse_rfc3339(&time(9)).unwrap()),
        ..RegressionQuery::default()
    };
    assert!(h.verdicts(&q).unwrap().is_empty());

    // A baseline run that is not stored, or not among the runs selected, and a filter
    // that selects nothing are refused: "nothing got worse" would be a verdict on nothing.
    let q = RegressionQuery {
        baseline: Baseline::Run(999),
        ..RegressionQuery::default()
    };
    let e = h.regressions(&q).unwrap_err();
    assert_eq!(
        numalab_schema::Classify::class(&e),
        numalab_schema::ErrorClass::Input
    );
    assert!(
        e.to_string()
            .contains("no run 999 among the runs selected (runs 1, 2, 3)"),
        "{e}"
    );
    let q = RegressionQuery {
        baseline: Baseline::Run(base),
        runs: RunFilter {
            since: Some(humantime::parse_rfc3339(&time(1)).unwrap()),
            ..RunFilter::default()
        },
        ..RegressionQuery::default()
    };
    assert!(h
        .verdicts(&q)
        .unwrap_err()
        .to_string()
        .contains(&format!("no run {base} among")));
    let q = RegressionQuery {
        runs: RunFilter {
            host: Some("nosuch".into()),
            ..RunFilter::default()
        },
        ..RegressionQuery::default()
    };
    let e = h.regressions(&q).unwrap_err().to_string();
    assert!(
        e.contains("no stored run matches the filter (the history holds 3 run(s))"),
        "{e}"
    );
}

#[test]
fn a_folder_or_a_device_is_no_history_file() {
    let dir = tempfile::tempdir().unwrap();
    for (path, kind) in [
        (dir.path().to_path_buf(), "a folder"),
        (PathBuf::from("/dev/null"), "a device"),
    ] {
        let e = History::open(&path).unwrap_err();
        assert_eq!(
            numalab_schema::Classify::class(&e),
            numalab_schema::ErrorClass::Input
        );
        assert!(
            e.to_string().contains(&format!("it is {kind}, not a file")),
            "{e}"
        );
    }
    assert!(!Path::new("/dev/null-wal").exists());
}

/// Issue 50: `schedule --history-db` only reads the history. An empty file given to it
/// became a 60 KB numalab history, and another program's SQLite database was switched
/// to WAL mode (its header rewritten) before being refused: both stay as they were, and
/// no side file (-wal, -shm, -journal) is left beside them.
#[test]
fn schedule_history_db_leaves_an_empty_file_and_another_programs_database_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    assert!(numalab_history::task_history_file(&empty)
        .unwrap()
        .is_empty());
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);

    let other = dir.path().join("other.sqlite");
    {
        let c = rusqlite::Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    let before = std::fs::read(&other).unwrap();
    let e = numalab_history::task_history_file(&other).unwrap_err();
    assert!(
        e.to_string().contains("not a numalab history database"),
        "{e}"
    );
    assert_eq!(
        numalab_schema::Classify::class(&e),
        numalab_schema::ErrorClass::Input
    );
    assert!(
        std::fs::read(&other).unwrap() == before,
        "another program's file was written"
    );
    // The same refusal, unchanged, when a command that writes histories is given it.
    assert!(History::open(&other).is_err());
    assert!(std::fs::read(&other).unwrap() == before);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["empty.sqlite", "other.sqlite"]);
}

/// Reading a history that does not exist yet creates nothing (`db runs` once left a
/// new history file behind); an existing one reads as `open` does, and a device is
/// still refused.
#[test]
fn reading_a_missing_history_creates_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.sqlite");
    let h = History::open_read(&path).unwrap();
    assert!(h.runs(&RunFilter::default()).unwrap().is_empty());
    assert!(h.query(&Query::default()).unwrap().is_empty());
    assert_eq!(h.path(), path);
    drop(h);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let mut w = open(dir.path());
    let b = bundle(&time(1), &[100.0], [50.0, 51.0, 49.0]);
    w.ingest_with_metrics(&b, &metrics_of(&b), &IngestOptions::default())
        .unwrap();
    let stored = w.path().to_path_buf();
    drop(w);
    let r = History::open_read(&stored).unwrap();
    assert_eq!(r.runs(&RunFilter::default()).unwrap().len(), 1);
    assert!(History::open_read(Path::new("/dev/null")).is_err());
}

#[test]
fn too_few_samples_give_no_verdict_not_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    let opts = IngestOptions::default();
    for (i, tp) in [[100.0, 100.0], [10.0, 10.0]].iter().enumerate() {
        let b = bundle(&time(i as u64), tp, [50.0, 51.0, 49.0]);
        h.ingest_with_metrics(&b, &metrics_of(&b), &opts).unwrap();
    }
    // Two samples of the throughput, one of the closest pair: no interval.
    let q = RegressionQuery::default();
    for id in [POLICY, "c2c.cas.min"] {
        let r = verdict_of(&h, &q, id);
        assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
        assert_eq!(r.interval, None);
    }
    assert!(h.regressions(&q).unwrap().is_empty());
}

fn metrics_of(b: &Bundle) -> Vec<numalab_history::Metric> {
    numalab_report::metrics::metrics(&numalab_report::Loaded::from_bundle("x", b.clone()))
}

#[test]
fn several_runs_per_side_measure_the_run_to_run_noise() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    let opts = IngestOptions::default();
    // Runs that wander by +-5% between runs although each is tight inside.
    let levels = [100.0, 95.0, 105.0, 98.0, 103.0, 96.0];
    for (i, l) in levels.iter().enumerate() {
        let tp = [*l, l * 1.001, l * 0.999];
        let b = bundle(&time(i as u64), &tp, [50.0, 51.0, 49.0]);
        h.ingest_with_metrics(&b, &metrics_of(&b), &opts).unwrap();
    }
    // One run per side: run 1 vs run 5 (95 -> 96) is within the assumed 10%.
    // Three runs per side: the measured spread keeps 100/95/105 vs 98/103/96 within noise.
    let q = RegressionQuery {
        baseline_runs: 3,
        latest_runs: 3,
        ..RegressionQuery::default()
    };
    let r = verdict_of(&h, &q, POLICY);
    assert_eq!(r.baseline_runs.len(), 3);
    assert_eq!(r.latest_runs.len(), 3);
    assert!(matches!(
        r.noise,
        Some(numalab_history::RunNoise::Measured {
            runs_baseline: 3,
            runs_other: 3,
            ..
        })
    ));
    assert_eq!(r.verdict, Verdict::WithinNoise, "{r:?}");
}

#[test]
fn hostile_strings_are_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    let evil = "x'); DROP TABLE run; --";
    let script = "<script>alert(\"1\")</script>\u{1b}[2J\u{0}\r\n,;";
    let mut b = bundle(&time(0), &[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]);
    for r in &mut b.records {
        if r.kind == "harness.policy" {
            r.data["command"] = json!([evil, script]);
        }
    }
    b.envelope.host.hostname = Some(format!("{evil}{script}"));
    let path = write_journal(&dir.path().join("evil"), &b);
    let tags = json!({evil: script, "quote\"key": "a'b"});
    let opts = IngestOptions {
        label: Some(format!("{evil} {script}")),
        tags,
    };
    let id = stored(&h.ingest_with(&path, &opts).unwrap());
    let run = h.run(id).unwrap().unwrap();
    assert_eq!(run.label, format!("{evil} {script}"));
    assert_eq!(run.host, Some(format!("{evil}{script}")));
    let metric_id = format!("policy.{evil} {script}.local");
    let points = h.query(&Query::metric(&metric_id)).unwrap();
    assert_eq!(points.len(), 1);
    assert!(points[0].name.contains(evil));
    let mut q = Query::metric(&metric_id);
    q.runs.tags = vec![
        (evil.into(), script.into()),
        ("quote\"key".into(), "a'b".into()),
    ];
    q.runs.host = Some(format!("{evil}{script}"));
    assert_eq!(h.query(&q).unwrap().len(), 1);
    q.runs.tags = vec![(evil.into(), "' OR 1=1 --".into())];
    assert!(h.query(&q).unwrap().is_empty());
    // Still there, still consistent, still writable.
    assert_eq!(h.run_count().unwrap(), 1);
    assert!(h.verify().unwrap().is_empty());
    let more = write_journal(
        &dir.path().join("more"),
        &bundle(&time(1), &[1.0], [1.0, 2.0, 3.0]),
    );
    stored(&h.ingest(&more).unwrap());
}

#[test]
fn oversized_malformed_and_odd_input_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let b = bundle(&time(0), &[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]);
    let path = write_journal(&dir.path().join("b"), &b);
    let mut h = open(dir.path()).with_limits(Limits {
        max_bundle_bytes: 4096,
        ..Limits::default()
    });
    let e = h.ingest(&path).unwrap_err();
    assert!(matches!(e, HistoryError::TooLarge { .. }), "{e}");
    assert!(e.to_string().contains("over the limit of 4 KiB"), "{e}");

    let mut h = h.with_limits(Limits {
        max_samples_per_metric: 2,
        ..Limits::default()
    });
    let e = h.ingest(&path).unwrap_err();
    assert!(e.to_string().contains("sample count"), "{e}");
    let mut h = h.with_limits(Limits {
        max_text_bytes: 10,
        ..Limits::default()
    });
    let e = h.ingest(&path).unwrap_err();
    assert!(e.to_string().contains("over the limit of 10 B"), "{e}");
    let mut h = h.with_limits(Limits::default());

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"line\":\"envelope\", not json\n").unwrap();
    let e = h.ingest(&bad).unwrap_err();
    assert!(matches!(e, HistoryError::Load(_)), "{e}");
    assert!(e.to_string().contains("not JSON"), "{e}");

    let mut no_time = b.clone();
    no_time.envelope.created_utc = "yesterday'); --".into();
    let e = h
        .ingest_with_metrics(&no_time, &[], &IngestOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("not an RFC 3339 time"), "{e}");

    let opts = IngestOptions {
        label: None,
        tags: json!(["not", "an", "object"]),
    };
    let e = h.ingest_with(&path, &opts).unwrap_err();
    assert!(e.to_string().contains("tags must be a JSON object"), "{e}");

    // Nothing was stored by the refusals.
    assert_eq!(h.run_count().unwrap(), 0);
    stored(&h.ingest(&path).unwrap());
}

#[test]
fn a_newer_or_foreign_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    drop(History::open(&path).unwrap());
    let c = rusqlite::Connection::open(&path).unwrap();
    c.pragma_update(None, "user_version", SCHEMA_VERSION + 7)
        .unwrap();
    drop(c);
    let e = History::open(&path).unwrap_err();
    assert!(
        matches!(e, HistoryError::NewerSchema { found, supported, .. }
        if found == SCHEMA_VERSION + 7 && supported == SCHEMA_VERSION)
    );
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("version {}", SCHEMA_VERSION + 7))
            && msg.contains(&format!("up to version {SCHEMA_VERSION}"))
            && msg.contains("upgrade numalab"),
        "{msg}"
    );

    let other = dir.path().join("other.db");
    let c = rusqlite::Connection::open(&other).unwrap();
    c.execute_batch("CREATE TABLE accounts (id INTEGER)")
        .unwrap();
    drop(c);
    assert!(matches!(
        History::open(&other),
        Err(HistoryError::NotAHistory { .. })
    ));
    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "hello, this is not a database at all, just some words",
    )
    .unwrap();
    let e = History::open(&text).unwrap_err();
    assert!(matches!(e, HistoryError::NotAHistory { .. }), "{e}");
}

/// A history file at layout `version`, as that numalab made it (the SQL steps only: no
/// step up to version 3 had code).
fn history_at_version(path: &Path, version: u32) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(path).unwrap();
    for m in &MIGRATIONS[..version as usize] {
        assert!(m.code.is_none());
        c.execute_batch(m.sql).unwrap();
    }
    c.pragma_update(None, "user_version", version).unwrap();
    c.pragma_update(
        None,
        "application_id",
        numalab_history::schema::APPLICATION_ID,
    )
    .unwrap();
    c
}

#[test]
fn a_version_1_database_is_migrated_to_the_current_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let c = history_at_version(&path, 1);
    c.execute_batch(
        r#"
        INSERT INTO machine (id, fingerprint, description) VALUES (1, 'f00df00df00df00d', 'old machine');
        INSERT INTO run (id, content_key, label, time_utc, time_s, tool_version, origin, machine_id,
                         topology_hash, ingested_utc, tags, metric_count, envelope)
            VALUES (1, 'k1', 'old run', '2025-01-01T00:00:00Z', 1735689600, '0.0.1', 'measured', 1,
                    'abc', '2025-01-02T00:00:00Z', '{"cluster":"c1","rack":3,"odd''key":"it''s"}', 1, '{}');
        INSERT INTO metric (id, run_id, metric_id, metric_group, name, unit, higher_is_better, n, median, mad, min, max)
            VALUES (1, 1, 'mem.bandwidth.triad.all', 'memory bandwidth', 'triad', 'GB/s', 1, 2, 10.5, 0.5, 10, 11);
        INSERT INTO sample (metric_row, idx, value) VALUES (1, 0, 10), (1, 1, 11);
        "#,
    )
    .unwrap();
    drop(c);

    let mut h = History::open(&path).unwrap();
    assert_eq!(h.schema_version().unwrap(), SCHEMA_VERSION);
    let mut q = Query::metric("mem.bandwidth.triad.all");
    q.runs.tags = vec![
        ("cluster".into(), "c1".into()),
        ("rack".into(), "3".into()),
        ("odd'key".into(), "it's".into()),
    ];
    let p = h.query(&q).unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].label, "old run");
    assert_eq!(p[0].median, Some(10.5));
    assert!(h.task_history(&RunFilter::default()).unwrap().is_empty());
    assert!(h.verify().unwrap().is_empty());
    // The migrated history takes new runs.
    let b = write_journal(
        &dir.path().join("new"),
        &bundle(&time(0), &[1.0], [1.0, 2.0, 3.0]),
    );
    stored(&h.ingest(&b).unwrap());
    assert_eq!(h.run_count().unwrap(), 2);
    drop(h);
    // Opening again changes nothing.
    assert_eq!(
        History::open(&path).unwrap().schema_version().unwrap(),
        SCHEMA_VERSION
    );
}

#[test]
fn a_machine_whose_memory_moved_is_one_machine_with_each_runs_memory_beside() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    let a = bundle(&time(0), &[1.0], [1.0, 2.0, 3.0]);
    let mut b = bundle(&time(1), &[1.0], [1.0, 2.0, 3.0]);
    // The same VM an hour later: its lazily filled memory map grew by 9 GiB.
    b.envelope.host.topology.as_mut().unwrap().summary.numa[0].memory_bytes -= 9 << 30;
    let opts = IngestOptions::default();
    let id = h.ingest_with_metrics(&a, &[], &opts).unwrap().run_id();
    let ra = h.run(id).unwrap().unwrap();
    let id = h.ingest_with_metrics(&b, &[], &opts).unwrap().run_id();
    let rb = h.run(id).unwrap().unwrap();
    assert_eq!(ra.machine.fingerprint, rb.machine.fingerprint);
    assert_eq!(ra.machine_description, rb.machine_description);
    assert!(
        !ra.machine_description.contains("GiB"),
        "{}",
        ra.machine_description
    );
    assert_eq!(ra.machine.memory_gib, Some(20));
    assert_eq!(rb.machine.memory_gib, Some(11));
    assert_eq!(ra.memory_bytes.unwrap() - rb.memory_bytes.unwrap(), 9 << 30);
    // Another core count is another machine.
    let mut c = bundle(&time(2), &[1.0], [1.0, 2.0, 3.0]);
    c.envelope.host.topology.as_mut().unwrap().summary.cores = 4;
    let id = h.ingest_with_metrics(&c, &[], &opts).unwrap().run_id();
    let rc = h.run(id).unwrap().unwrap();
    assert_ne!(rc.machine.fingerprint, ra.machine.fingerprint);
}

#[test]
fn a_version_3_history_is_rekeyed_so_that_memory_no_longer_splits_a_machine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let c = history_at_version(&path, 3);
    // Machines 1 and 2: one VM fingerprinted (recipe 1) at 15 and 24 GiB; machine 3 has
    // another core count. Runs 1-3 on them in turn, run 4 on machine 2 again.
    c.execute_batch(
        r#"
        INSERT INTO machine (id, fingerprint, vendor, model_name, cpu_id, cores, pus, numa_nodes, memory_gib, description) VALUES
            (1, '1111111111111111', 'GenuineIntel', 'Xeon', 'family 6 model 143 stepping 8', 2, 2, 1, 15, 'old, 15 GiB'),
            (2, '2222222222222222', 'GenuineIntel', 'Xeon', 'family 6 model 143 stepping 8', 2, 2, 1, 24, 'old, 24 GiB'),
            (3, '3333333333333333', 'GenuineIntel', 'Xeon', 'family 6 model 143 stepping 8', 4, 4, 1, 24, 'old, 24 GiB');
        INSERT INTO run (id, content_key, label, time_utc, time_s, tool_version, origin, machine_id,
                         topology_hash, memory_bytes, ingested_utc, tags, metric_count, envelope) VALUES
            (1, 'k1', 'boot', '2025-01-01T00:00:00Z', 1735689600, '0.0.1', 'measured', 1, 'abc', 16106127360, '2025-01-02T00:00:00Z', '{}', 0, '{}'),
            (2, 'k2', 'later', '2025-01-01T01:00:00Z', 1735693200, '0.0.1', 'measured', 2, 'abc', 25769803776, '2025-01-02T00:00:00Z', '{}', 0, '{}'),
            (3, 'k3', 'other', '2025-01-01T02:00:00Z', 1735696800, '0.0.1', 'measured', 3, 'abc', 25769803776, '2025-01-02T00:00:00Z', '{}', 0, '{}'),
            (4, 'k4', 'again', '2025-01-01T03:00:00Z', 1735700400, '0.0.1', 'measured', 2, 'abc', 25769803776, '2025-01-02T00:00:00Z', '{}', 0, '{}');
        "#,
    )
    .unwrap();
    drop(c);

    let h = History::open(&path).unwrap();
    assert_eq!(h.schema_version().unwrap(), SCHEMA_VERSION);
    let runs = h.runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 4);
    let fp = |i: usize| runs[i].machine.fingerprint.clone();
    assert_eq!(fp(0), fp(1));
    assert_eq!(fp(1), fp(3));
    assert_ne!(fp(0), fp(2));
    // The new key is the current recipe's, from the stored fields.
    let want = numalab_history::Fingerprint {
        fingerprint: String::new(),
        vendor: Some("GenuineIntel".into()),
        model_name: Some("Xeon".into()),
        cpu_id: Some("family 6 model 143 stepping 8".into()),
        cores: Some(2),
        pus: Some(2),
        numa_nodes: Some(1),
        memory_gib: None,
    };
    assert_eq!(fp(0), want.hash());
    assert_eq!(runs[0].machine_description, want.identity_description());
    assert_eq!(
        runs.iter()
            .map(|r| r.machine.memory_gib)
            .collect::<Vec<_>>(),
        [Some(15), Some(24), Some(24), Some(24)]
    );
    assert!(h.verify().unwrap().is_empty());
    drop(h);
    let c = rusqlite::Connection::open(&path).unwrap();
    let machines: Vec<(i64, Option<i64>)> = c
        .prepare("SELECT id, memory_gib FROM machine ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(machines, [(1, None), (3, None)]);
}

#[test]
fn exports_escape_commas_quotes_and_newlines() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    let b = bundle(&time(0), &[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]);
    let opts = IngestOptions {
        label: Some("a, \"quoted\"\nlabel".into()),
        tags: json!({"note": "x,y"}),
    };
    h.ingest_with_metrics(&b, &metrics_of(&b), &opts).unwrap();
    let mut csv = Vec::new();
    let n = h.export_csv(&Query::metric(POLICY), &mut csv).unwrap();
    assert_eq!(n, 1);
    let csv = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert_eq!(lines[0], numalab_history::CSV_HEADER.join(","));
    assert!(csv.contains(",\"a, \"\"quoted\"\"\nlabel\","), "{csv}");
    assert!(csv.contains(",\"{\"\"note\"\":\"\"x,y\"\"}\"\r\n"), "{csv}");
    // The policy's name holds "; " and "$": no quoting needed, written as it is.
    assert!(csv.contains(",2,1,1,3,"), "{csv}");

    let mut js = Vec::new();
    h.export_json(&Query::metric(POLICY), &mut js).unwrap();
    let doc: Value = serde_json::from_slice(&js).unwrap();
    assert_eq!(doc["format"], "numalab-history-points");
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["points"][0]["label"], "a, \"quoted\"\nlabel");
    assert_eq!(doc["points"][0]["median"], 2.0);
    let back: Vec<numalab_history::Point> = serde_json::from_value(doc["points"].clone()).unwrap();
    assert_eq!(back, h.query(&Query::metric(POLICY)).unwrap());
}

#[test]
fn task_history_returns_the_runs_schedule_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = open(dir.path());
    for name in ["vm-scale", "vm-policy", "c2c-dual-xeon-gold-6242"] {
        h.ingest(&fixture(name)).unwrap();
    }
    let bundles = h.task_history(&RunFilter::default()).unwrap();
    assert_eq!(bundles.len(), 2);
    for (got, name) in bundles.iter().zip(["vm-scale", "vm-policy"]) {
        let (orig, _) = read_bundle(&fixture(name)).unwrap();
        let runs: Vec<&Record> = orig
            .records
            .iter()
            .filter(|r| r.kind == "harness.run")
            .collect();
        assert_eq!(got.records.iter().collect::<Vec<_>>(), {
            let mut r = runs.clone();
            r.sort_by(|a, b| a.key.cmp(&b.key));
            r
        });
        assert_eq!(got.envelope.command, orig.envelope.command);
        // What schedule's `history::gather` decodes.
        let decoded = got.records_of::<numalab_records::harness::RunRecord>();
        assert_eq!(decoded.len(), runs.len());
    }
    let f = RunFilter {
        tags: vec![("cluster".into(), "none".into())],
        ..RunFilter::default()
    };
    assert!(h.task_history(&f).unwrap().is_empty());
}

// ---- several processes ----

fn child(db: &Path, bundles: &[PathBuf]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "child_process",
        "--exact",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(CHILD_ENV, "ingest")
    .env("NUMALAB_HISTORY_DB", db)
    .env(
        "NUMALAB_HISTORY_BUNDLES",
        bundles
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    c
}

/// The child: `ingest` ingests every bundle listed, in order; `loop` writes and
/// ingests new bundles (12,000 samples each) until it is killed, saying on stderr when
/// each ingest starts and ends. Does nothing in a normal test run.
#[test]
fn child_process() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let db = PathBuf::from(std::env::var("NUMALAB_HISTORY_DB").unwrap());
    let mut h = History::open(&db).unwrap();
    if role == "ingest" {
        let list = std::env::var("NUMALAB_HISTORY_BUNDLES").unwrap();
        for p in list.lines() {
            h.ingest(Path::new(p)).unwrap();
        }
        return;
    }
    let dir = db
        .parent()
        .unwrap()
        .join(format!("child{}", std::process::id()));
    let big: Vec<f64> = (0..12_000).map(|i| 100.0 + (i % 7) as f64).collect();
    for i in 0.. {
        let b = bundle(
            &time(u64::from(std::process::id()) * 1000 + i),
            &big,
            [50.0, 51.0, 49.0],
        );
        let p = write_journal(&dir.join(i.to_string()), &b);
        eprintln!("start {i}");
        h.ingest(&p).unwrap();
        eprintln!("done {i}");
    }
}

#[test]
fn several_processes_ingesting_at_once_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    const PROCS: u64 = 4;
    const OWN: u64 = 10;
    const SHARED: u64 = 5;
    let make = |i: u64| {
        let b = bundle(
            &time(i),
            &[100.0 + i as f64, 101.0, 99.0],
            [50.0, 51.0, 49.0],
        );
        write_journal(&dir.path().join(format!("b{i}")), &b)
    };
    let shared: Vec<PathBuf> = (0..SHARED).map(|i| make(1000 + i)).collect();
    let mut children = Vec::new();
    for p in 0..PROCS {
        let mut list: Vec<PathBuf> = (0..OWN).map(|i| make(p * 100 + i)).collect();
        // The shared bundles first for half of the processes, last for the others.
        if p % 2 == 0 {
            list.splice(0..0, shared.iter().cloned());
        } else {
            list.extend(shared.iter().cloned());
        }
        children.push(child(&db, &list).spawn().unwrap());
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let h = History::open(&db).unwrap();
    assert_eq!(h.run_count().unwrap(), PROCS * OWN + SHARED);
    assert_eq!(
        h.query(&Query::metric(POLICY)).unwrap().len() as u64,
        PROCS * OWN + SHARED
    );
    assert!(h.verify().unwrap().is_empty());
}

/// A small xorshift generator: random kill moments without a dependency.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn a_process_killed_during_ingest_leaves_a_consistent_history() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    drop(History::open(&db).unwrap());
    let nanos = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let mut seed = (u64::from(std::process::id()) << 32) ^ u64::from(nanos) | 1;
    let mut waits = Vec::new();
    let (mut kills, mut inside) = (0, 0);
    let start = Instant::now();
    for _ in 0..8 {
        let mut c = child(&db, &[]);
        c.env(CHILD_ENV, "loop");
        let mut c = c.spawn().unwrap();
        let wait = 100 + next(&mut seed) % 300;
        waits.push(wait);
        std::thread::sleep(Duration::from_millis(wait));
        assert!(c.try_wait().unwrap().is_none(), "the child ended by itself");
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
        kills += 1;
        let mut log = String::new();
        c.stderr.take().unwrap().read_to_string(&mut log).unwrap();
        if log
            .lines()
            .rev()
            .find(|l| l.starts_with("start") || l.starts_with("done"))
            .is_some_and(|l| l.starts_with("start"))
        {
            inside += 1;
        }
        let h = History::open(&db).unwrap();
        let problems = h.verify().unwrap();
        assert!(problems.is_empty(), "after kill {kills}: {problems:?}");
        for p in h.query(&Query::metric(POLICY)).unwrap() {
            assert_eq!(p.samples, 12_000, "run {}", p.run_id);
        }
        if start.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    let h = History::open(&db).unwrap();
    let integrity: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let runs = h.run_count().unwrap();
    eprintln!("{kills} kills (after {waits:?} ms), {inside} of them during an ingest call; {runs} runs stored");
    assert!(runs > 0);
    // Every stored run has every figure (the rest of the figures per run: 3 of c2c).
    for r in h.runs(&RunFilter::default()).unwrap() {
        assert_eq!(r.metric_count, 4);
    }
}

#[test]
fn a_fleet_folder_stands_for_its_nodes_bundles_tagged_and_labelled_by_node() {
    let d = tempfile::tempdir().unwrap();
    let fleet = d.path().join("nightly");
    for (node, bundle) in [("n1", true), ("n2", false), ("n3", true)] {
        let dir = fleet.join("nodes").join(node);
        std::fs::create_dir_all(&dir).unwrap();
        if bundle {
            std::fs::write(dir.join(JOURNAL_FILE), "").unwrap();
        }
    }
    std::fs::write(fleet.join("nodes").join("not-a-node.txt"), "").unwrap();
    let single = fixture("vm-evaluate");
    let opts = IngestOptions {
        label: None,
        tags: json!({"node": "given wins"}),
    };
    // Without fleet.json the folder is no fleet: it stands for itself.
    let (plain, skipped) = numalab_history::expand_fleets(std::slice::from_ref(&fleet), &opts);
    assert_eq!(plain.len(), 1);
    assert_eq!(plain[0].0, fleet);
    assert!(skipped.is_empty());
    std::fs::write(fleet.join("fleet.json"), "{}").unwrap();
    let (out, skipped) = numalab_history::expand_fleets(&[single.clone(), fleet.clone()], &opts);
    let got: Vec<(PathBuf, Option<String>, Value)> =
        out.into_iter().map(|(p, o)| (p, o.label, o.tags)).collect();
    assert_eq!(
        got,
        vec![
            (single, None, json!({"node": "given wins"})),
            (
                fleet.join("nodes/n1"),
                Some("n1".into()),
                json!({"fleet": "nightly", "node": "given wins"})
            ),
            (
                fleet.join("nodes/n3"),
                Some("n3".into()),
                json!({"fleet": "nightly", "node": "given wins"})
            ),
        ]
    );
    assert_eq!(skipped.len(), 1);
    assert!(
        skipped[0].ends_with("node n2 has no bundle (see its status.json); not ingested"),
        "{skipped:?}"
    );
}

/// `dir/big/results.jsonl`: vm-evaluate's envelope and `n` copies of its first bandwidth
/// record, the i-th keyed `mem/bandwidth/copy-{key(i)}`, the copy at `repeat` written
/// twice, then `pads` records of 1 MiB (kind `bench.pad`).
fn bandwidth_journal(
    dir: &Path,
    n: usize,
    key: impl Fn(usize) -> usize,
    repeat: Option<usize>,
    pads: usize,
) -> PathBuf {
    let text = std::fs::read_to_string(fixture("vm-evaluate").join(JOURNAL_FILE)).unwrap();
    let mut out = format!("{}\n", text.lines().next().unwrap());
    let bw = text
        .lines()
        .find(|l| l.contains("\"kind\":\"mem.bandwidth\""))
        .unwrap();
    for i in 0..n {
        let mut v: Value = serde_json::from_str(bw).unwrap();
        v["key"] = format!("mem/bandwidth/copy-{}", key(i)).into();
        let line = format!("{v}\n");
        out.push_str(&line);
        if repeat == Some(i) {
            out.push_str(&line);
        }
    }
    let pad = "x".repeat(1 << 20);
    for i in 0..pads {
        out.push_str(&format!(
            r#"{{"line":"record","key":"pad/{i}","kind":"bench.pad","origin":"measured","time_utc":"2026-12-07T10:00:00Z","data":{{"pad":"{pad}"}}}}"#
        ));
        out.push('\n');
    }
    let journal = dir.join("big").join(JOURNAL_FILE);
    std::fs::create_dir_all(journal.parent().unwrap()).unwrap();
    std::fs::write(&journal, out).unwrap();
    journal
}

/// A journal larger than the figures' bound of a kind ([`numalab_report::load::PER_KIND`]
/// bandwidth records and 5 more) is stored with default limits, whether read whole or
/// streamed into an index (one record at a time): the same content key and figures, and
/// a warning naming the kind whose figures use its first records.
#[test]
fn a_journal_past_the_bound_is_streamed_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let n = numalab_report::load::PER_KIND + 5;
    let journal = bandwidth_journal(dir.path(), n, |i| i, None, 0);
    let mut whole = History::open(&dir.path().join("whole.db")).unwrap();
    let mut streamed = History::open(&dir.path().join("streamed.db")).unwrap();
    let a = whole.ingest(&journal).unwrap();
    let indexed = numalab_report::load::load_indexed(&journal).unwrap();
    assert!(indexed.indexed());
    let b = streamed
        .ingest_loaded(&indexed, &IngestOptions::default())
        .unwrap();
    match (a, b) {
        (
            IngestOutcome::Stored {
                content_key: ka,
                metrics: ma,
                warnings: wa,
                ..
            },
            IngestOutcome::Stored {
                content_key: kb,
                metrics: mb,
                warnings: wb,
                ..
            },
        ) => {
            assert_eq!(ka, kb);
            assert_eq!(ma, mb);
            assert!(ma > 0);
            assert_eq!(wa, wb);
            assert!(
                wa.iter().any(|w| w
                    .message
                    .contains(&format!("{n} records of kind mem.bandwidth"))),
                "{wa:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// A journal of 32 MiB or more (1,005 bandwidth records, one of them repeated, and
/// padding records of 1 MiB) is ingested with one first pass over it (its repeated keys
/// listed once: the content key's order comes from that pass, not from reading it
/// again), and stores the same run as the same records held in memory.
#[test]
fn a_large_journal_is_ingested_with_one_first_pass() {
    let dir = tempfile::tempdir().unwrap();
    let n = numalab_report::load::PER_KIND + 5;
    // Keys out of order, one repeated (read past by the reader whichever way it finds it),
    // and 33 padding records of 1 MiB.
    let journal = bandwidth_journal(dir.path(), n, |i| (i * 7919) % n, Some(3), 33);
    assert!(
        std::fs::metadata(&journal).unwrap().len()
            >= numalab_schema::journal::DUPLICATES_ON_DISK_FROM
    );

    let passes = numalab_schema::journal::first_passes();
    let mut streamed = History::open(&dir.path().join("streamed.db")).unwrap();
    let a = streamed.ingest(&journal).unwrap();
    assert_eq!(numalab_schema::journal::first_passes() - passes, 1);

    let (bundle, warnings) = read_bundle(&journal).unwrap();
    assert!(
        warnings.iter().any(|w| w.code == "duplicate_record"),
        "{warnings:?}"
    );
    let whole = numalab_report::load::Loaded::from_bundle("whole", bundle);
    let mut memory = History::open(&dir.path().join("memory.db")).unwrap();
    let b = memory
        .ingest_loaded(&whole, &IngestOptions::default())
        .unwrap();
    match (a, b) {
        (
            IngestOutcome::Stored {
                content_key: ka,
                metrics: ma,
                ..
            },
            IngestOutcome::Stored {
                content_key: kb,
                metrics: mb,
                ..
            },
        ) => {
            assert_eq!(ka, kb);
            assert_eq!(ma, mb);
            assert!(ma > 0);
        }
        other => panic!("{other:?}"),
    }
}
