//! `numalab db`: bundles into the history and back out, through the real binary: stored
//! once, listed, a figure over time as a table, CSV and JSON, verdicts, hostile labels
//! shown escaped, bad input refused with its exit code.

use crate::common::{fixture, numalab, p, refused, stdout};
use serde_json::Value;

fn db(dir: &std::path::Path) -> String {
    p(&dir.join("history.sqlite")).to_string()
}

#[test]
fn ingest_is_idempotent_and_queries_read_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let run1 = fixture("bundles", "vm-quick-run-1");
    let run2 = fixture("bundles", "vm-quick-run-2");
    let out = numalab(&[
        "db", "--db", &db, "ingest", "--tag", "rack=3", "--json", &run1, &run2,
    ]);
    let v: Value = crate::common::json(&out);
    let statuses: Vec<&str> = v["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["stored", "stored"], "{v}");
    assert_eq!(v["runs"], 2);
    // The same bundle again is already there, and nothing is added.
    let again = numalab(&["db", "--db", &db, "ingest", &run1]);
    crate::common::assert_ok(&again);
    assert!(
        stdout(&again).contains("already present as run 1"),
        "{}",
        stdout(&again)
    );
    let runs: Value =
        crate::common::json(&numalab(&["db", "--db", &db, "runs", "--format", "json"]));
    assert_eq!(runs.as_array().unwrap().len(), 2);
    assert_eq!(runs[0]["tags"]["rack"], "3");
    // A tag filter that matches nothing.
    let none: Value = crate::common::json(&numalab(&[
        "db", "--db", &db, "runs", "--tag", "rack=4", "--format", "json",
    ]));
    assert_eq!(none.as_array().unwrap().len(), 0);
    // Every figure of both runs, then one figure: the same values as CSV and JSON.
    let all: Value =
        crate::common::json(&numalab(&["db", "--db", &db, "query", "--format", "json"]));
    let points = all["points"].as_array().expect("points");
    assert!(points.len() > 4, "{all}");
    let id = points[0]["metric_id"].as_str().unwrap().to_string();
    let one: Value = crate::common::json(&numalab(&[
        "db", "--db", &db, "query", "--metric", &id, "--format", "json",
    ]));
    let one = one["points"].as_array().unwrap();
    assert_eq!(one.len(), 2, "{id}: one point per run");
    assert!(one.iter().all(|p| p["metric_id"] == id.as_str()));
    let csv = numalab(&[
        "db", "--db", &db, "query", "--metric", &id, "--format", "csv",
    ]);
    crate::common::assert_ok(&csv);
    assert_eq!(stdout(&csv).lines().count(), 3, "{}", stdout(&csv));
    let table = numalab(&["db", "--db", &db, "query", "--metric", &id]);
    crate::common::assert_ok(&table);
    assert!(stdout(&table).contains(&format!("{id} over time")));
    // Verdicts of every figure: baseline run 1, latest run 2.
    let verdicts: Value = crate::common::json(&numalab(&[
        "db",
        "--db",
        &db,
        "regressions",
        "--all",
        "--json",
    ]));
    let rows = verdicts.as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        assert_eq!(r["baseline_runs"], serde_json::json!([1]), "{r}");
        assert_eq!(r["latest_runs"], serde_json::json!([2]), "{r}");
    }
    // `regressions` without --all shows only what got worse.
    let worse: Value = crate::common::json(&numalab(&["db", "--db", &db, "regressions", "--json"]));
    assert!(worse
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["verdict"] == "worse"));
}

#[test]
fn hostile_labels_are_stored_verbatim_and_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let label = "x'); DROP TABLE run; -- <script>\u{1b}[2J";
    crate::common::assert_ok(&numalab(&[
        "db",
        "--db",
        &db,
        "ingest",
        "--label",
        label,
        &fixture("bundles", "vm-policy"),
    ]));
    let runs: Value =
        crate::common::json(&numalab(&["db", "--db", &db, "runs", "--format", "json"]));
    assert_eq!(runs[0]["label"], label);
    let table = numalab(&["db", "--db", &db, "runs"]);
    crate::common::assert_ok(&table);
    let text = stdout(&table);
    assert!(
        !text.contains('\u{1b}'),
        "no raw escape on the terminal: {text:?}"
    );
    assert!(text.contains("DROP TABLE"), "{text}");
}

#[test]
fn bad_input_is_refused_with_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let bundle = fixture("bundles", "vm-policy");
    refused(
        &["db", "--db", &db, "ingest", "--tag", "rack", &bundle],
        2,
        "give KEY=VALUE",
    );
    refused(
        &["db", "--db", &db, "query", "--since", "yesterday"],
        2,
        "RFC 3339",
    );
    refused(
        &["db", "--db", &db, "regressions", "--baseline", "run:x"],
        2,
        "run:N",
    );
    refused(
        &["db", "--db", &db, "regressions", "--latest-runs", "0"],
        2,
        "at least 1",
    );
    refused(
        &["db", "--db", &db, "runs", "--format", "csv"],
        2,
        "db query",
    );
    // Not a bundle: an input error; nothing stored.
    let missing = dir.path().join("nope");
    refused(&["db", "--db", &db, "ingest", p(&missing)], 3, "nope");
    // Not a history: a text file given as the database.
    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "not a database, just some text that is long enough ".repeat(100),
    )
    .unwrap();
    refused(
        &["db", "--db", p(&text), "runs"],
        3,
        "not a numalab history",
    );
    // One good and one bad bundle: the good one is stored, exit 5.
    let out = numalab(&["db", "--db", &db, "ingest", &bundle, p(&missing)]);
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        crate::common::stderr(&out)
    );
    let runs: Value =
        crate::common::json(&numalab(&["db", "--db", &db, "runs", "--format", "json"]));
    assert_eq!(runs.as_array().unwrap().len(), 1);
}
