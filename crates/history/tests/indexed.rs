//! Ingesting a journal kept as an index (its records read back from the file one at a
//! time) stores exactly what ingesting it whole stores: the same content key, figures
//! and kept records.

use numalab_history::{content_key, History, IngestOptions, IngestOutcome, RunFilter};
use numalab_report::load::{load, load_indexed};
use numalab_schema::journal::read_bundle;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bundles")
        .join(name)
}

#[test]
fn an_indexed_journal_is_stored_as_the_whole_one() {
    for name in ["vm-scale", "vm-policy", "vm-evaluate"] {
        let (whole, _) = read_bundle(&fixture(name)).unwrap();
        let indexed = load_indexed(&fixture(name)).unwrap();
        assert!(indexed.indexed());
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let mut a = History::open(&dirs[0].path().join("h.db")).unwrap();
        let mut b = History::open(&dirs[1].path().join("h.db")).unwrap();
        let opts = IngestOptions::default();
        let got_a = a
            .ingest_loaded(&load(&fixture(name)).unwrap(), &opts)
            .unwrap();
        let got_b = b.ingest_loaded(&indexed, &opts).unwrap();
        let key = |o: &IngestOutcome| match o {
            IngestOutcome::Stored {
                content_key,
                metrics,
                ..
            } => (content_key.clone(), *metrics),
            other => panic!("{name}: {other:?}"),
        };
        assert_eq!(key(&got_a), key(&got_b), "{name}");
        assert_eq!(key(&got_b).0, content_key(&whole), "{name}");
        let f = RunFilter::default();
        assert_eq!(
            a.task_history(&f).unwrap(),
            b.task_history(&f).unwrap(),
            "{name}"
        );
    }
}
