//! A journal kept as an index (its payloads read back from the file when a section asks)
//! gives the same report as the journal read whole, and the raw-data appendix stays
//! bounded whatever the size of a record.

use numalab_records::mem::BandwidthRecord;
use numalab_report::load::{load, load_indexed, Loaded, INDEX_FROM, PER_KIND};
use numalab_report::sections::document;
use numalab_report::table::Format;
use numalab_schema::record::{Host, Tool, SCHEMA_VERSION};
use numalab_schema::{Bundle, Envelope, Origin, Record};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bundles")
        .join(name)
}

#[test]
fn an_indexed_journal_gives_the_same_report_as_one_read_whole() {
    let names = [
        "vm-evaluate",
        "vm-scale",
        "vm-policy",
        "vm-sweep",
        "vm-profile",
        "model-neoverse-v1",
        "c2c-dual-xeon-gold-6242",
        "two-node-handmade",
    ];
    for name in names {
        let whole = load(&fixture(name)).unwrap();
        let indexed = load_indexed(&fixture(name)).unwrap();
        assert!(!whole.indexed(), "{name}: a small journal is kept whole");
        assert!(indexed.indexed(), "{name}");
        // The index holds no payload, and gives every one back.
        assert!(indexed.bundle.records.iter().all(|r| r.data.is_null()));
        assert_eq!(indexed.to_bundle().unwrap(), whole.bundle, "{name}");
        assert_eq!(indexed.warnings, whole.warnings, "{name}");
        let (a, b) = (document(&[whole]), document(&[indexed]));
        assert_eq!(a.to_html(), b.to_html(), "{name}: HTML");
        assert_eq!(
            a.to_text(Format::Markdown),
            b.to_text(Format::Markdown),
            "{name}: Markdown"
        );
    }
    // Two bundles, as compare and a report of several do.
    let set = |f: fn(&Path) -> Result<Loaded, _>| {
        ["vm-quick-run-1", "vm-quick-run-2"].map(|n| f(&fixture(n)).unwrap())
    };
    assert_eq!(
        document(&set(load)).to_html(),
        document(&set(load_indexed)).to_html()
    );
}

#[test]
fn a_record_over_the_appendix_limit_is_replaced_by_a_note() {
    let huge = "x".repeat(3 << 20);
    let record = Record {
        key: "huge/one".into(),
        kind: "test.huge".into(),
        origin: Origin::Measured,
        time_utc: "2026-01-01T00:00:00Z".into(),
        data: serde_json::json!({ "pad": huge }),
        warnings: Vec::new(),
    };
    let l = Loaded::from_bundle(
        "m",
        Bundle {
            schema_version: SCHEMA_VERSION,
            envelope: Envelope {
                schema_version: SCHEMA_VERSION,
                tool: Tool::this("0"),
                created_utc: "2026-01-01T00:00:00Z".into(),
                command: vec!["numalab".into(), "test".into()],
                config: serde_json::json!({}),
                origin: Origin::Measured,
                host: Host::unknown("x"),
            },
            records: vec![record],
        },
    );
    let html = document(&[l]).to_html();
    assert!(html.len() < 1 << 20, "{} bytes", html.len());
    assert!(
        html.contains("record &quot;huge/one&quot;: 3 MiB of JSON left out (over the 1 MiB a record may take here); it is in the bundle"),
        "{}",
        &html[html.find("test.huge").unwrap_or(0)..][..400.min(html.len())]
    );
}

/// A journal of the `vm-evaluate` fixture's envelope and `extra` more bandwidth records
/// than [`PER_KIND`] (its first bandwidth record with unique keys, medians 1, 2, ...).
fn many_bandwidth_records(dir: &Path, extra: usize) -> PathBuf {
    let text = std::fs::read_to_string(fixture("vm-evaluate").join("results.jsonl")).unwrap();
    let envelope = text.lines().next().unwrap();
    let bw = text
        .lines()
        .find(|l| l.contains("\"kind\":\"mem.bandwidth\""))
        .unwrap();
    let mut out = format!("{envelope}\n");
    for i in 0..PER_KIND + extra {
        let mut v: serde_json::Value = serde_json::from_str(bw).unwrap();
        v["key"] = format!("mem/bandwidth/copy-{i}").into();
        v["data"]["bandwidth_gbps"]["median"] = (i as f64 + 1.0).into();
        out.push_str(&v.to_string());
        out.push('\n');
    }
    let path = dir.join("results.jsonl");
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn a_kind_over_the_bound_is_read_to_the_bound_named_and_aggregated_in_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = many_bandwidth_records(dir.path(), 7);
    let n = PER_KIND + 7;
    for l in [load(&path).unwrap(), load_indexed(&path).unwrap()] {
        // What sections, findings and figures read: the first PER_KIND, in order.
        let first = l.records_of::<BandwidthRecord>();
        assert_eq!(first.len(), PER_KIND);
        assert_eq!(first[0].0.key, "mem/bandwidth/copy-0");
        assert_eq!(
            first[PER_KIND - 1].0.key,
            format!("mem/bandwidth/copy-{}", PER_KIND - 1)
        );
        assert_eq!(l.over_bound(), vec![("mem.bandwidth".to_string(), n)]);
        // A streaming aggregate sees every record: the largest median is the last's.
        let (mut count, mut max, mut last) = (0, 0.0_f64, String::new());
        l.each_of::<BandwidthRecord>(|r, b| {
            count += 1;
            max = max.max(b.bandwidth_gbps.median);
            last = r.key.clone();
            true
        });
        assert_eq!(count, n);
        assert_eq!(max, n as f64);
        assert_eq!(last, format!("mem/bandwidth/copy-{}", n - 1));
        // Every record held: all of them read whole; the index holds the first PER_KIND.
        let all = l.records_of_bounded::<BandwidthRecord>(usize::MAX);
        assert_eq!(all.len(), if l.indexed() { PER_KIND } else { n });
        assert_eq!(l.record_count(), n);
        // The report says so, once, with the count and the remedy.
        let doc = document(std::slice::from_ref(&l));
        let note: Vec<&String> = doc
            .problems
            .iter()
            .filter(|p| p.contains("mem.bandwidth"))
            .collect();
        assert_eq!(note.len(), 1, "{:?}", doc.problems);
        assert!(
            note[0].contains(&format!("{n} records of kind mem.bandwidth")),
            "{}",
            note[0]
        );
        assert!(
            note[0].contains("first 1000") && note[0].contains("7 more are in the journal"),
            "{}",
            note[0]
        );
        assert!(doc.to_html().contains("7 more are in the journal"));
    }
}

/// `to_bundle` of a journal kept as an index gives every record with its payload, not
/// only the indexed ones; a journal of 32 MiB or more is refused as too large to hold
/// whole, with an error naming it.
#[test]
fn to_bundle_holds_every_record_or_refuses_a_large_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = many_bandwidth_records(dir.path(), 7);
    let whole = load(&path).unwrap();
    let indexed = load_indexed(&path).unwrap();
    assert_eq!(indexed.bundle.records.len(), PER_KIND);
    let bundle = indexed.to_bundle().unwrap();
    assert_eq!(bundle.records.len(), PER_KIND + 7);
    assert_eq!(bundle, whole.bundle);
    // Past INDEX_FROM: 40 records of about 1 MiB each.
    let big = dir.path().join("big");
    std::fs::create_dir(&big).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = format!("{}\n", text.lines().next().unwrap());
    let pad = "x".repeat(1 << 20);
    for i in 0..(INDEX_FROM >> 20) + 8 {
        out.push_str(&format!(
            r#"{{"line":"record","key":"pad-{i}","kind":"test.pad","origin":"measured","time_utc":"t","data":"{pad}"}}"#
        ));
        out.push('\n');
    }
    std::fs::write(big.join("results.jsonl"), out).unwrap();
    let large = load(&big).unwrap();
    assert!(large.indexed());
    let e = large.to_bundle().unwrap_err();
    assert!(
        e.message.contains("results.jsonl") && e.message.contains("too large to hold whole"),
        "{}",
        e.message
    );
    assert_eq!(
        numalab_schema::Classify::class(&e),
        numalab_schema::ErrorClass::Input
    );
}

/// The index of a journal does not grow with its records: a journal of many records of
/// one kind keeps [`PER_KIND`] of them, and everything counted of all of them (records
/// per kind, records that do not decode, unknown kinds, the warnings they carry) is
/// what the journal read whole says; the report's problems and its appendix counts
/// are the same.
#[test]
fn the_index_holds_per_kind_records_and_counts_every_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = many_bandwidth_records(dir.path(), 2 * PER_KIND);
    // Past the index: records with a warning, damaged records, an unknown kind.
    let mut text = std::fs::read_to_string(&path).unwrap();
    let bw = text.lines().nth(1).unwrap().to_string();
    for i in 0..30 {
        let mut v: serde_json::Value = serde_json::from_str(&bw).unwrap();
        v["key"] = format!("late/{i}").into();
        if i % 3 == 0 {
            v["data"] = serde_json::json!({"not": "a bandwidth record"});
        }
        v["warnings"] = serde_json::json!([{"code": "late", "message": format!("late {}", i % 2)}]);
        text.push_str(&format!("{v}\n"));
        text.push_str(&format!(
            "{{\"line\":\"record\",\"key\":\"new/{i}\",\"kind\":\"future.kind\",\"origin\":\"measured\",\"time_utc\":\"t\",\"data\":{{}}}}\n"
        ));
    }
    std::fs::write(&path, text).unwrap();
    let n = 3 * PER_KIND + 30;
    let (whole, indexed) = (load(&path).unwrap(), load_indexed(&path).unwrap());
    assert!(!whole.indexed() && indexed.indexed());
    assert_eq!(whole.bundle.records.len(), n + 30);
    // The bound: PER_KIND of the big kind, all 30 of the other.
    assert_eq!(indexed.bundle.records.len(), PER_KIND + 30);
    for l in [&whole, &indexed] {
        assert_eq!(l.record_count(), n + 30);
        let kinds = l.kinds();
        assert_eq!(kinds.len(), 2);
        assert_eq!(
            (kinds[0].kind.as_str(), kinds[0].count, kinds[0].damaged),
            ("mem.bandwidth", n, 10)
        );
        assert_eq!(
            (kinds[1].kind.as_str(), kinds[1].count, kinds[1].unknown),
            ("future.kind", 30, true)
        );
        assert_eq!(l.over_bound(), vec![("mem.bandwidth".to_string(), n)]);
        let mut count = 0;
        l.each_of::<BandwidthRecord>(|_, _| {
            count += 1;
            true
        });
        assert_eq!(count, n - 10, "the damaged ones do not decode");
    }
    // The bytes of a kind are those of its lines.
    let lines: u64 = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"kind\":\"mem.bandwidth\""))
        .map(|l| l.len() as u64)
        .sum();
    assert_eq!(indexed.kinds()[0].bytes, lines);
    // The first damaged record is named with serde's reason, past the index as well:
    // the index's first pass keeps it, nothing is looked up among the indexed records.
    assert_eq!(indexed.unreadable(), whole.unreadable());
    let shown: Vec<_> = indexed
        .unreadable()
        .into_iter()
        .map(|u| (u.kind, u.count, u.damaged, u.first.is_some()))
        .collect();
    assert_eq!(
        shown,
        vec![
            ("mem.bandwidth".to_string(), 10, true, true),
            ("future.kind".to_string(), 30, false, false)
        ]
    );
    let (key, why) = indexed.unreadable()[0].first.clone().unwrap();
    assert_eq!(key, "late/0");
    assert!(why.contains("missing field"), "{why}");
    assert_eq!(indexed.record_warnings(), whole.record_warnings());
    let w = indexed.record_warnings();
    assert_eq!(w.len(), 2);
    assert_eq!((w[0].warning.message.as_str(), w[0].count), ("late 0", 15));
    let (a, b) = (document(&[whole]), document(&[indexed]));
    assert_eq!(a.problems, b.problems);
    assert!(
        a.problems.iter().any(|p| p.contains(
            "10 record(s) of kind mem.bandwidth could not be decoded (the first, late/0: missing field"
        )),
        "{:?}",
        a.problems
    );
    let heading = format!("mem.bandwidth ({n} records)");
    assert!(a.to_html().contains(&heading) && b.to_html().contains(&heading));
    for d in [&a, &b] {
        let html = d.to_html();
        let warnings = &html[html.find("warnings-table").unwrap()..];
        assert!(
            warnings.contains("late 0"),
            "{}",
            &warnings[..2000.min(warnings.len())]
        );
    }
}

/// Records in key order, every one once, the same whether the journal is read whole
/// or kept as an index (the keys then sorted on disk).
#[test]
fn every_record_in_key_order_from_the_index_as_from_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = many_bandwidth_records(dir.path(), 500);
    let keys = |l: &Loaded| {
        let mut out = Vec::new();
        assert!(l.each_in_key_order(&mut |r| {
            assert!(!r.data.is_null());
            out.push(r.key.clone());
            true
        }));
        out
    };
    let (whole, indexed) = (load(&path).unwrap(), load_indexed(&path).unwrap());
    let a = keys(&whole);
    assert_eq!(a.len(), PER_KIND + 500);
    assert!(a.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(a, keys(&indexed));
}

/// Records carrying large warnings fill the index (at most `INDEX_BYTES`): the records
/// past it are counted, named in a warning, and still visited by a streaming pass, in
/// the journal's order.
#[test]
fn a_full_index_takes_no_more_records_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = many_bandwidth_records(dir.path(), 0);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let mut out = format!("{}\n", lines.next().unwrap());
    let first = lines.next().unwrap();
    let big = "w".repeat(1 << 20);
    let n = (numalab_report::load::INDEX_BYTES >> 20) + 8;
    for i in 0..n {
        let mut v: serde_json::Value = serde_json::from_str(first).unwrap();
        v["key"] = format!("big/{i:03}").into();
        v["warnings"] = serde_json::json!([{"code": "big", "message": big}]);
        out.push_str(&format!("{v}\n"));
    }
    std::fs::write(&path, out).unwrap();
    let l = load_indexed(&path).unwrap();
    assert!(l.bundle.records.len() < n, "{}", l.bundle.records.len());
    assert_eq!(l.record_count(), n);
    let held = l.bundle.records.len();
    let note = l
        .warnings
        .iter()
        .find(|w| w.code == "records_not_indexed")
        .expect("a warning names the records left out of the index");
    assert!(
        note.message.contains(&format!("{} record(s)", n - held)),
        "{}",
        note.message
    );
    let mut keys = Vec::new();
    l.each_of::<BandwidthRecord>(|r, _| {
        keys.push(r.key.clone());
        true
    });
    let expected: Vec<String> = (0..n).map(|i| format!("big/{i:03}")).collect();
    assert_eq!(keys, expected);
    assert_eq!(l.record_warnings()[0].count, n);
}

/// A journal of 32 MiB or more is read with one first pass (its repeated keys listed
/// once), however often it is read again in the same process: the records of a kind
/// past the index read on from the journal, every record in key order (taken from the
/// first pass), the same records as the journal read whole.
#[test]
fn a_large_journal_is_listed_once_however_often_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("vm-evaluate").join("results.jsonl")).unwrap();
    let mut out = format!("{}\n", text.lines().next().unwrap());
    let bw = text
        .lines()
        .find(|l| l.contains("\"kind\":\"mem.bandwidth\""))
        .unwrap();
    let n = PER_KIND + 5;
    for i in 0..n {
        let mut v: serde_json::Value = serde_json::from_str(bw).unwrap();
        v["key"] = format!("mem/bandwidth/copy-{}", (i * 7919) % n).into();
        out.push_str(&format!("{v}\n"));
        if i == 3 || i == PER_KIND + 2 {
            // A repeat, in the index and past it.
            out.push_str(&format!("{v}\n"));
        }
    }
    let pad = "x".repeat(1 << 20);
    for i in 0..33 {
        out.push_str(&format!(
            r#"{{"line":"record","key":"pad/{i}","kind":"bench.pad","origin":"measured","time_utc":"t","data":{{"pad":"{pad}"}}}}"#
        ));
        out.push('\n');
    }
    let path = dir.path().join("results.jsonl");
    std::fs::write(&path, out).unwrap();
    assert!(
        std::fs::metadata(&path).unwrap().len() >= numalab_schema::journal::DUPLICATES_ON_DISK_FROM
    );

    let passes = numalab_schema::journal::first_passes();
    let l = load(&path).unwrap();
    assert!(l.indexed());
    let mut of_kind = Vec::new();
    assert!(l.each_record("mem.bandwidth", &mut |r| {
        of_kind.push(r.key.clone());
        true
    }));
    let mut in_order = Vec::new();
    for _ in 0..2 {
        in_order.clear();
        assert!(l.each_in_key_order(&mut |r| {
            in_order.push(r.clone());
            true
        }));
    }
    assert_eq!(numalab_schema::journal::first_passes() - passes, 1);

    let (whole, warnings) = numalab_schema::journal::read_bundle(&path).unwrap();
    let repeats = warnings
        .iter()
        .filter(|w| w.code == "duplicate_record")
        .count();
    assert_eq!(repeats, 2);
    let mut expected = whole.records.clone();
    expected.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(in_order, expected);
    let bw_keys: Vec<String> = whole
        .records
        .iter()
        .filter(|r| r.kind == "mem.bandwidth")
        .map(|r| r.key.clone())
        .collect();
    assert_eq!(bw_keys.len(), n);
    assert_eq!(of_kind, bw_keys);
    assert_eq!(l.warnings, warnings);
}
