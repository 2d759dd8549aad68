//! The recorder's journal: a run that folded repeated warnings on the terminal writes
//! the folded lines into its journal (`warnings.folded`), and the readers of a journal
//! (report, compare, db ingest) take it.

use crate::common::{fixture_path, numalab, p, stderr};
use numalab_cli::recorder::{OutputArgs, Recorder};
use numalab_records::evaluate::PowerCheck;
use numalab_records::warnings::FoldedWarnings;
use numalab_schema::{Origin, Record, Warning};

/// Appends to a copy of an evaluate journal 8 records whose placement warning has its
/// own share each (and one record without): the journal gets one `warnings.folded`
/// record with the count, the worst three shares with their keys and the remedy; the
/// report's warnings row names them as the run did; compare and db ingest take it; a
/// second run with repeated warnings gets the next key.
#[test]
fn folded_warnings_are_in_the_journal_and_its_readers_take_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    std::fs::create_dir(&out).unwrap();
    let src = fixture_path("bundles", "vm-quick-run-1").join("results.jsonl");
    std::fs::copy(&src, out.join("results.jsonl")).unwrap();
    let (fixture, _) = numalab_schema::journal::read_bundle(&out).unwrap();
    let args = OutputArgs {
        json: false,
        out: Some(out.clone()),
    };
    let run = |shares: &[f64], tag: &str| {
        let host = fixture.envelope.host.clone();
        let mut rec = Recorder::new(&args, serde_json::json!({}), Origin::Measured, host).unwrap();
        for (i, share) in shares.iter().enumerate() {
            let w = Warning::new(
                "placement_mismatch",
                format!("only {share:.1}% of the pages are on node(s) 1 as asked"),
            )
            .with_remedy("check free memory on that node");
            let payload = PowerCheck {
                sensors: Vec::new(),
                frequencies: Vec::new(),
            };
            let r = Record::new(format!("test/{tag}/cell{i}"), Origin::Measured, &payload);
            rec.push(r.with_warnings(vec![w])).unwrap();
        }
        rec.finish().unwrap()
    };
    let bundle = run(&[70.0, 55.5, 90.0, 12.0, 64.0, 30.0, 81.0, 47.5], "a");
    let folded: Vec<&Record> = bundle
        .records
        .iter()
        .filter(|r| r.kind == "warnings.folded")
        .collect();
    assert_eq!(folded.len(), 1);
    // Read back from the journal, not from memory.
    let (journal, _) = numalab_schema::journal::read_bundle(&out).unwrap();
    let r = journal
        .records
        .iter()
        .find(|r| r.key == "warnings/folded/1")
        .expect("the folded record in the journal");
    assert_eq!(r, folded[0]);
    let f = r.decode::<FoldedWarnings>().unwrap().unwrap();
    assert_eq!(f.codes.len(), 1, "{f:?}");
    let c = &f.codes[0];
    assert_eq!((c.code.as_str(), c.messages), ("placement_mismatch", 8));
    assert_eq!(c.first.key, "test/a/cell0");
    let worst: Vec<(&str, &str)> = c
        .named
        .iter()
        .map(|n| (n.key.as_str(), &n.message[5..10]))
        .collect();
    assert_eq!(
        worst,
        [
            ("test/a/cell3", "12.0%"),
            ("test/a/cell5", "30.0%"),
            ("test/a/cell7", "47.5%")
        ]
    );
    assert_eq!(c.remedy.as_deref(), Some("check free memory on that node"));
    assert!(c.warning().message.starts_with(
        "placement_mismatch: 7 more records had this warning, each its own message (8 in all; the first is above); the worst: test/a/cell3: only 12.0%"
    ));

    // The report knows the kind and names the records of the worst three.
    let md = dir.path().join("report.md");
    let o = numalab(&["report", p(&out), "--format", "markdown", "-o", p(&md)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("does not know"), "{}", stderr(&o));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.contains("8 different messages, the worst: test/a/cell3: only 12.0%"),
        "{text}"
    );
    // compare and db ingest take the journal.
    let other = fixture_path("bundles", "vm-quick-run-2");
    let o = numalab(&["compare", p(&out), p(&other), "--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let db = dir.path().join("h.db");
    let o = numalab(&["db", "--db", p(&db), "ingest", p(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));

    // A second run (resumed journal) that folds again: the next key; one that does not
    // fold writes none.
    let bundle = run(&[20.0, 10.0], "b");
    let keys: Vec<&str> = bundle
        .records
        .iter()
        .filter(|r| r.kind == "warnings.folded")
        .map(|r| r.key.as_str())
        .collect();
    assert_eq!(keys, ["warnings/folded/2"]);
    let bundle = run(&[20.0], "c");
    assert!(bundle.records.iter().all(|r| r.kind != "warnings.folded"));
}
