//! A journal's records in the order of their keys, in bounded memory: the keys and
//! where their lines are, sorted in runs of at most [`RUN_BYTES`] written to anonymous
//! temporary files (gone when closed, whatever happens), then merged; each record is
//! read back from its line when its turn comes. What `db ingest`'s content key needs
//! (every record, in key order) without holding every key.

use numalab_schema::journal::{RecordReader, Span, SpanReader};
use numalab_schema::Record;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// The most key bytes sorted in memory at once (a run).
pub const RUN_BYTES: usize = 8 << 20;

/// The buffer of each run while merging (a 2 GiB journal of short keys makes a few
/// hundred runs at most).
const MERGE_BUFFER: usize = 16 << 10;

/// Visits every record of the journal `file` (as its reader skips repeated keys and
/// unreadable lines) in the order of their keys; `visit` returns whether to go on.
/// `false` when the journal or a temporary file cannot be read or written, or a
/// record cannot be read back.
pub(crate) fn each_in_key_order(file: &Path, visit: &mut dyn FnMut(&Record) -> bool) -> bool {
    let Some(sorted) = sort_keys(file, RUN_BYTES) else {
        return false;
    };
    let Ok(mut lines) = SpanReader::open(file) else {
        return false;
    };
    let mut ok = true;
    sorted.each(&mut |span| match lines.record(span) {
        Ok(r) => visit(&r),
        Err(_) => {
            ok = false;
            false
        }
    }) && ok
}

/// The keys of a journal, sorted: in memory when they fit in one run, else in runs on
/// disk.
enum Sorted {
    Memory(Vec<(String, Span)>),
    Runs(Vec<File>),
}

impl Sorted {
    /// Visits the spans in key order; `false` when a run cannot be read.
    fn each(self, visit: &mut dyn FnMut(Span) -> bool) -> bool {
        match self {
            Sorted::Memory(keys) => {
                for (_, span) in keys {
                    if !visit(span) {
                        break;
                    }
                }
                true
            }
            Sorted::Runs(files) => merge(files, visit),
        }
    }
}

/// Reads the journal's keys and spans, sorting them `run` bytes of keys at a time.
fn sort_keys(file: &Path, run: usize) -> Option<Sorted> {
    let mut reader = RecordReader::open(file).ok()?;
    let (mut chunk, mut bytes, mut runs) = (Vec::new(), 0usize, Vec::new());
    while let Some(r) = reader.next_record().ok()? {
        let span = r.span?;
        bytes += r.record.key.len() + std::mem::size_of::<(String, Span)>();
        chunk.push((r.record.key, span));
        if bytes >= run {
            runs.push(write_run(&mut chunk)?);
            bytes = 0;
        }
    }
    if runs.is_empty() {
        chunk.sort_by(|a, b| a.0.cmp(&b.0));
        return Some(Sorted::Memory(chunk));
    }
    if !chunk.is_empty() {
        runs.push(write_run(&mut chunk)?);
    }
    Some(Sorted::Runs(runs))
}

/// Sorts `chunk`, writes it to an anonymous temporary file and empties it.
fn write_run(chunk: &mut Vec<(String, Span)>) -> Option<File> {
    chunk.sort_by(|a, b| a.0.cmp(&b.0));
    let mut f = BufWriter::new(tempfile::tempfile().ok()?);
    for (key, span) in chunk.drain(..) {
        f.write_all(&(key.len() as u64).to_le_bytes()).ok()?;
        f.write_all(key.as_bytes()).ok()?;
        f.write_all(&span.offset.to_le_bytes()).ok()?;
        f.write_all(&span.len.to_le_bytes()).ok()?;
    }
    let mut f = f.into_inner().ok()?;
    f.seek(SeekFrom::Start(0)).ok()?;
    *chunk = Vec::new();
    Some(f)
}

/// The next entry of a run, `None` at its end (or if it cannot be read).
fn next_entry(r: &mut BufReader<File>) -> Option<(String, Span)> {
    let mut n = [0u8; 8];
    r.read_exact(&mut n).ok()?;
    let mut key = vec![0u8; usize::try_from(u64::from_le_bytes(n)).ok()?];
    r.read_exact(&mut key).ok()?;
    r.read_exact(&mut n).ok()?;
    let offset = u64::from_le_bytes(n);
    r.read_exact(&mut n).ok()?;
    let len = u64::from_le_bytes(n);
    Some((String::from_utf8(key).ok()?, Span { offset, len }))
}

/// Merges the sorted runs, visiting the spans in key order (equal keys: the earlier
/// run first, as a stable sort would).
fn merge(files: Vec<File>, visit: &mut dyn FnMut(Span) -> bool) -> bool {
    let mut runs: Vec<BufReader<File>> = files
        .into_iter()
        .map(|f| BufReader::with_capacity(MERGE_BUFFER, f))
        .collect();
    let mut heap = BinaryHeap::new();
    for (i, r) in runs.iter_mut().enumerate() {
        if let Some((key, span)) = next_entry(r) {
            heap.push(Reverse((key, i, span.offset, span.len)));
        }
    }
    while let Some(Reverse((_, i, offset, len))) = heap.pop() {
        if !visit(Span { offset, len }) {
            return true;
        }
        if let Some((key, span)) = next_entry(&mut runs[i]) {
            heap.push(Reverse((key, i, span.offset, span.len)));
        }
    }
    true
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

    fn keys(file: &Path, run: usize) -> Vec<String> {
        let sorted = sort_keys(file, run).unwrap();
        let mut lines = SpanReader::open(file).unwrap();
        let mut out = Vec::new();
        assert!(sorted.each(&mut |span| {
            out.push(lines.record(span).unwrap().key);
            true
        }));
        out
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
        assert!(matches!(sort_keys(&file, 100), Some(Sorted::Runs(r)) if r.len() > 100));
        assert_eq!(keys(&file, 100), expected);
        assert!(matches!(
            sort_keys(&file, RUN_BYTES),
            Some(Sorted::Memory(_))
        ));
        assert_eq!(keys(&file, RUN_BYTES), expected);
    }
}
