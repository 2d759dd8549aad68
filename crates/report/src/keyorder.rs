//! A journal's records in the order of their keys, in bounded memory: the keys and
//! where their lines are, sorted in runs of at most [`RUN_BYTES`] written to anonymous
//! temporary files (gone when closed, whatever happens), then merged
//! ([`numalab_schema::journal::keysort`], which the journal reader also uses to find
//! repeated keys); each record is read back from its line when its turn comes. What `db ingest`'s content key needs
//! (every record, in key order) without holding every key. A large journal's first pass
//! already sorted its keys ([`FirstPass::key_order`]): its order is used as it is, and
//! the journal is not read again to sort them.

use numalab_schema::journal::keysort::{KeySorter, SortedKeys, RUN_BYTES};
use numalab_schema::journal::{FirstPass, RecordReader, Span, SpanReader};
use numalab_schema::Record;
use std::path::Path;

/// Visits every record of the journal `file` (as its reader skips repeated keys and
/// unreadable lines) in the order of their keys, taken from its first pass `pass` when
/// it has one (a large journal), else sorted here; `visit` returns whether to go on.
/// `false` when the journal or a temporary file cannot be read or written, or a
/// record cannot be read back.
pub(crate) fn each_in_key_order(
    file: &Path,
    pass: Option<&FirstPass>,
    visit: &mut dyn FnMut(&Record) -> bool,
) -> bool {
    let mut next: Box<dyn FnMut() -> std::io::Result<Option<Span>>> = match pass {
        Some(p) => {
            let mut order = p.key_order();
            Box::new(move || order.next_span())
        }
        None => {
            let Some(mut sorted) = sort_keys(file, RUN_BYTES) else {
                return false;
            };
            Box::new(move || Ok(sorted.next_entry()?.map(|(_, span)| span)))
        }
    };
    let Ok(mut lines) = SpanReader::open(file) else {
        return false;
    };
    loop {
        match next() {
            Ok(Some(span)) => match lines.record(span) {
                Ok(r) if visit(&r) => {}
                Ok(_) => return true,
                Err(_) => return false,
            },
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}

/// Reads the journal's keys and spans, sorted `run` bytes of keys at a time
/// ([`KeySorter`]).
fn sort_keys(file: &Path, run: usize) -> Option<SortedKeys> {
    let mut reader = RecordReader::open(file).ok()?;
    let mut sorter = KeySorter::new(run);
    while let Some(r) = reader.next_record().ok()? {
        sorter.push(r.record.key.into_bytes(), r.span?).ok()?;
    }
    sorter.finish().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal of `n` records whose keys are not in order.
    fn journal(dir: &Path, n: usize) -> std::path::PathBuf {
        let out = dir.join("results.jsonl");
        let fixture = include_str!("../../../tests/fixtures/bundles/vm-evaluate/results.jsonl");
        let mut text = fixture.lines().next().unwrap().to_string();
        text.push('\n');
        for i in 0..n {
            // 7919 is prime: i * 7919 mod n visits every number once, out of order.
            let k = (i * 7919) % n;
            text.push_str(&format!(
                r#"{{"line":"record","key":"k{k:06}","kind":"test.x","origin":"measured","time_utc":"t","data":{{"i":{i}}}}}"#
            ));
            text.push('\n');
        }
        std::fs::write(&out, text).unwrap();
        out
    }

    fn keys(file: &Path, run: usize) -> (usize, Vec<String>) {
        let mut sorted = sort_keys(file, run).unwrap();
        let runs = sorted.runs();
        let mut lines = SpanReader::open(file).unwrap();
        let mut out = Vec::new();
        while let Some((_, span)) = sorted.next_entry().unwrap() {
            out.push(lines.record(span).unwrap().key);
        }
        (runs, out)
    }

    /// Sorted on disk in many small runs, the keys come in the same order as sorted in
    /// memory, every one once.
    #[test]
    fn runs_on_disk_merge_to_the_sorted_keys() {
        let dir = tempfile::tempdir().unwrap();
        let file = journal(dir.path(), 1000);
        let mut expected: Vec<String> = (0..1000).map(|k| format!("k{k:06}")).collect();
        expected.sort();
        // 100 bytes a run: a few entries each, about 300 runs.
        let (runs, on_disk) = keys(&file, 100);
        assert!(runs > 100, "{runs} runs");
        assert_eq!(on_disk, expected);
        assert_eq!(keys(&file, RUN_BYTES), (0, expected));
    }
}
