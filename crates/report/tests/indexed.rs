//! A journal kept as an index (its payloads read back from the file when a section asks)
//! gives the same report as the journal read whole, and the raw-data appendix stays
//! bounded whatever the size of a record.

use numalab_records::mem::BandwidthRecord;
use numalab_report::load::{load, load_indexed, Loaded, PER_KIND};
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
        assert_eq!(indexed.to_bundle(), whole.bundle, "{name}");
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
        let all = l.records_of_bounded::<BandwidthRecord>(usize::MAX);
        assert_eq!(all.len(), n);
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
