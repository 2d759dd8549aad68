//! A stop requested (Ctrl-C, SIGTERM) while a report is built: the core-to-core
//! sections, which decode a matrix of n^2 cells at a time, check the process-wide flag
//! before each matrix and after its heatmap, and the report ends as interrupted; a
//! comparison checks it before each figure and ends as interrupted too.
//!
//! Its own test binary: the flag is process-wide, and other tests render reports.

use numalab_report::compare;
use numalab_report::load::load;
use numalab_report::sections::{c2c, try_document, REPORT_INTERRUPTED};
use numalab_schema::interrupt;
use numalab_schema::{Classify, ErrorClass};
use std::path::Path;
use std::sync::atomic::Ordering;

#[test]
fn a_stop_request_ends_the_core_to_core_sections_and_the_report() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bundles/c2c-dual-xeon-gold-6242");
    let l = load(&path).unwrap();
    let set = std::slice::from_ref(&l);
    assert!(!c2c::sections(0, &l, "").is_empty());
    assert!(try_document(set).is_ok());
    interrupt::request();
    let stopped = c2c::sections(0, &l, "");
    let doc = try_document(set);
    interrupt::flag().store(false, Ordering::SeqCst);
    assert!(stopped.is_empty(), "no matrix is decoded after the stop");
    assert_eq!(doc.unwrap_err(), REPORT_INTERRUPTED);
    assert!(!c2c::sections(0, &l, "").is_empty());
    // A stop while reading (a 2,000-CPU matrix is a 33 MB line): the load ends as
    // interrupted (exit 130), for a journal kept whole or as an index.
    interrupt::request();
    let whole = load(&path).map(|_| ());
    let indexed = numalab_report::load::load_indexed(&path).map(|_| ());
    interrupt::flag().store(false, Ordering::SeqCst);
    for r in [whole, indexed] {
        let e = r.unwrap_err();
        assert_eq!(e.class(), ErrorClass::Interrupted, "{}", e.message);
        assert!(e.message.contains("interrupted"), "{}", e.message);
    }
    assert!(load(&path).is_ok());
    // A stop while comparing (a 2,000-CPU matrix's figures took minutes): the
    // comparison ends as interrupted, so that `numalab compare` writes nothing.
    let args = [path.clone(), path.join("../vm-evaluate")];
    let sides = compare::sides::load_arguments(&args).unwrap();
    assert!(compare::sides::compare_loaded(&sides, false, 10.0).is_ok());
    interrupt::request();
    let stopped = compare::sides::compare_loaded(&sides, false, 10.0).map(|_| ());
    interrupt::flag().store(false, Ordering::SeqCst);
    let e = stopped.unwrap_err();
    assert_eq!(e.class(), ErrorClass::Interrupted, "{}", e.message);
    assert_eq!(
        e.message,
        "interrupted (Ctrl-C, SIGTERM) while comparing the bundles; nothing was written"
    );
}
