//! A journal kept as an index (its payloads read back from the file when a section asks)
//! gives the same report as the journal read whole, and the raw-data appendix stays
//! bounded whatever the size of a record.

use numalab_report::load::{load, load_indexed, Loaded};
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
