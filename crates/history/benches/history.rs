//! How fast the history stores and answers: prints figures, asserts nothing about time.
//!
//! 1. Ingest rate of real bundle folders (copies of the `vm-quick-run-1` fixture with
//!    distinct start times): parse, extract figures, store; then the rate of ingesting
//!    them again (already present).
//! 2. Ingest rate of synthetic runs through the API ([`History::ingest_with_metrics`],
//!    no files), up to `NUMALAB_HISTORY_BENCH_RUNS` runs (default 100,000) of 8 figures
//!    with 5 samples each, over 4 machines and 2 clusters.
//! 3. Query times over those runs: one figure over all runs, with a machine filter,
//!    with a tag filter and a time window, regressions of one figure and of every
//!    figure, and a CSV export.
//!
//! Run: `cargo bench -p numalab-history` (about a minute after the build).

use numalab_history::{History, IngestOptions, Metric, Query, RegressionQuery, RunFilter};
use numalab_schema::journal::{read_bundle, Journal};
use numalab_schema::Bundle;
use std::path::Path;
use std::time::{Duration, Instant, UNIX_EPOCH};

const FILE_BUNDLES: usize = 200;
const METRICS: usize = 8;
const SAMPLES: usize = 5;

fn rfc3339(secs: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(secs)).to_string()
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed())
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn synthetic_metrics(run: usize, seed: &mut u64) -> Vec<Metric> {
    (0..METRICS)
        .map(|k| {
            let base = 100.0 * (k + 1) as f64;
            let samples = (0..SAMPLES)
                .map(|_| {
                    *seed ^= *seed << 13;
                    *seed ^= *seed >> 7;
                    *seed ^= *seed << 17;
                    base * (1.0 + ((*seed % 1000) as f64 - 500.0) / 50_000.0)
                        * if run % 1000 == 999 && k == 0 {
                            0.8
                        } else {
                            1.0
                        }
                })
                .collect();
            Metric::new(
                &format!("synthetic.figure{k}"),
                if k % 2 == 0 {
                    "memory bandwidth"
                } else {
                    "memory latency"
                },
                &format!("synthetic figure {k}"),
                if k % 2 == 0 { "GB/s" } else { "ns" },
                k % 2 == 0,
                samples,
            )
        })
        .collect()
}

fn main() {
    let runs: usize = std::env::var("NUMALAB_HISTORY_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("temporary folder");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bundles/vm-quick-run-1");
    let (template, _) = read_bundle(&fixture).expect("the fixture reads");

    // 1. Bundle folders.
    let folders: Vec<_> = (0..FILE_BUNDLES)
        .map(|i| {
            let mut b = template.clone();
            b.envelope.created_utc = rfc3339(1_767_225_600 + i as u64 * 60);
            let d = dir.path().join(format!("bundle{i}"));
            let mut j = Journal::open(&d, &b.envelope)
                .unwrap()
                .journal
                .without_fsync();
            for r in &b.records {
                j.append(r).unwrap();
            }
            d
        })
        .collect();
    let size = std::fs::metadata(folders[0].join("results.jsonl"))
        .unwrap()
        .len();
    let mut h = History::open(&dir.path().join("files.db")).unwrap();
    let (figures, t) = time(|| {
        folders
            .iter()
            .map(|f| match h.ingest(f).unwrap() {
                numalab_history::IngestOutcome::Stored { metrics, .. } => metrics,
                _ => 0,
            })
            .sum::<usize>()
    });
    println!(
        "ingest, bundle folders ({} KiB, {} figures each): {:.0} bundles/s ({FILE_BUNDLES} in {})",
        size / 1024,
        figures / FILE_BUNDLES,
        FILE_BUNDLES as f64 / t.as_secs_f64(),
        ms(t)
    );
    let (_, t) = time(|| {
        for f in &folders {
            h.ingest(f).unwrap();
        }
    });
    println!(
        "ingest again, already present: {:.0} bundles/s",
        FILE_BUNDLES as f64 / t.as_secs_f64()
    );
    drop(h);

    // 2. Synthetic runs through the API.
    let db = dir.path().join("synthetic.db");
    let mut h = History::open(&db).unwrap();
    let mut envelopes: Vec<Bundle> = Vec::new();
    for m in 0..4u32 {
        let mut b = template.clone();
        b.records.clear();
        let topo = b.envelope.host.topology.as_mut().unwrap();
        topo.cpu.model = Some(100 + m);
        b.envelope.host.hostname = Some(format!("node{m}"));
        envelopes.push(b);
    }
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let start = Instant::now();
    for i in 0..runs {
        let b = &mut envelopes[i % 4];
        b.envelope.created_utc = rfc3339(1_600_000_000 + i as u64 * 600);
        let opts = IngestOptions {
            label: None,
            tags: serde_json::json!({"cluster": if i % 8 < 4 { "a" } else { "b" }, "i": i}),
        };
        h.ingest_with_metrics(b, &synthetic_metrics(i / 4, &mut seed), &opts)
            .unwrap();
        if (i + 1) % 20_000 == 0 {
            eprintln!("  {} runs stored", i + 1);
        }
    }
    let t = start.elapsed();
    let bytes = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(db.with_extension("db-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    println!(
        "ingest, synthetic runs ({METRICS} figures x {SAMPLES} samples): {:.0} runs/s ({runs} in {:.1} s; file {} MiB)",
        runs as f64 / t.as_secs_f64(),
        t.as_secs_f64(),
        bytes >> 20
    );

    // 3. Queries over them.
    let machine = h
        .runs(&RunFilter {
            host: Some("node1".into()),
            until: Some(UNIX_EPOCH + Duration::from_secs(1_600_010_000)),
            ..RunFilter::default()
        })
        .unwrap()[0]
        .machine
        .fingerprint
        .clone();
    let q = Query::metric("synthetic.figure0");
    let (n, t) = time(|| h.query(&q).unwrap().len());
    println!("query one figure over all runs: {} ({n} points)", ms(t));
    let mut qm = q.clone();
    qm.runs.machine = Some(machine);
    let (n, t) = time(|| h.query(&qm).unwrap().len());
    println!("query one figure, one machine: {} ({n} points)", ms(t));
    let mut qt = q.clone();
    qt.runs.tags = vec![("cluster".into(), "b".into())];
    qt.runs.since = Some(UNIX_EPOCH + Duration::from_secs(1_600_000_000 + runs as u64 * 300));
    let (n, t) = time(|| h.query(&qt).unwrap().len());
    println!(
        "query one figure, tag filter, second half of the time: {} ({n} points)",
        ms(t)
    );
    let rq = RegressionQuery {
        metric_id: Some("synthetic.figure0".into()),
        ..RegressionQuery::default()
    };
    let (n, t) = time(|| h.verdicts(&rq).unwrap().len());
    println!(
        "regressions of one figure (first vs latest run, per machine): {} ({n} verdicts)",
        ms(t)
    );
    let rq = RegressionQuery {
        latest_runs: 3,
        baseline_runs: 3,
        ..RegressionQuery::default()
    };
    let (n, t) = time(|| h.verdicts(&rq).unwrap().len());
    println!(
        "regressions of every figure (3 runs per side): {} ({n} verdicts)",
        ms(t)
    );
    let (n, t) = time(|| h.export_csv(&q, std::io::sink()).unwrap());
    println!("CSV export of one figure: {} ({n} rows)", ms(t));
}
