//! Sorting the keys of a journal's records in bounded memory: entries (a key and where
//! its line is) are sorted in runs of at most [`RUN_BYTES`], each run written to an
//! anonymous temporary file (gone when closed, whatever happens: nothing is left behind
//! by a kill), then the runs are merged as they are read. What the journal reader needs
//! to find repeated keys in a large journal ([`super::RecordReader`]) and what `db
//! ingest`'s content key needs (every record, in key order), without holding every key.

use super::Span;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// The most key bytes (with about 40 bytes of bookkeeping an entry) sorted in memory at
/// once: a run.
pub const RUN_BYTES: usize = 8 << 20;

/// The buffer of each run while merging (a 2 GiB journal of short keys makes a few
/// hundred runs at most).
const MERGE_BUFFER: usize = 16 << 10;

/// Sorts entries (a key, a [`Span`]) by key; entries with equal keys keep the order in
/// which they were pushed (a stable sort).
#[derive(Debug)]
pub struct KeySorter {
    run: usize,
    chunk: Vec<(Vec<u8>, Span)>,
    bytes: usize,
    runs: Vec<File>,
}

impl KeySorter {
    /// A sorter that keeps at most `run` bytes of entries in memory ([`RUN_BYTES`]).
    pub fn new(run: usize) -> Self {
        KeySorter {
            run: run.max(1),
            chunk: Vec::new(),
            bytes: 0,
            runs: Vec::new(),
        }
    }

    /// Adds an entry; a full run is sorted and written to a temporary file.
    pub fn push(&mut self, key: Vec<u8>, span: Span) -> std::io::Result<()> {
        self.bytes += key.len() + std::mem::size_of::<(Vec<u8>, Span)>();
        self.chunk.push((key, span));
        if self.bytes >= self.run {
            self.runs.push(write_run(&mut self.chunk)?);
            self.bytes = 0;
        }
        Ok(())
    }

    /// The entries, sorted: in memory when they fit in one run, else merged from the
    /// runs on disk.
    pub fn finish(mut self) -> std::io::Result<SortedKeys> {
        if self.runs.is_empty() {
            self.chunk.sort_by(|a, b| a.0.cmp(&b.0));
            return Ok(SortedKeys(Inner::Memory(self.chunk.into_iter())));
        }
        if !self.chunk.is_empty() {
            self.runs.push(write_run(&mut self.chunk)?);
        }
        let mut runs: Vec<BufReader<File>> = self
            .runs
            .into_iter()
            .map(|f| BufReader::with_capacity(MERGE_BUFFER, f))
            .collect();
        let mut heap = BinaryHeap::new();
        for (i, r) in runs.iter_mut().enumerate() {
            if let Some((key, span)) = next_entry(r)? {
                heap.push(Reverse((key, i, span.offset, span.len)));
            }
        }
        Ok(SortedKeys(Inner::Runs { runs, heap }))
    }
}

/// Entries in the order of their keys ([`KeySorter::finish`]).
#[derive(Debug)]
pub struct SortedKeys(Inner);

#[derive(Debug)]
enum Inner {
    Memory(std::vec::IntoIter<(Vec<u8>, Span)>),
    Runs {
        runs: Vec<BufReader<File>>,
        heap: BinaryHeap<Head>,
    },
}

/// The next entry of a run not yet used up: (key, run, offset, length), the smallest
/// key first (then the earliest run).
type Head = Reverse<(Vec<u8>, usize, u64, u64)>;

impl SortedKeys {
    /// The next entry, `None` after the last one; an error when a run cannot be read
    /// back.
    pub fn next_entry(&mut self) -> std::io::Result<Option<(Vec<u8>, Span)>> {
        match &mut self.0 {
            Inner::Memory(entries) => Ok(entries.next()),
            Inner::Runs { runs, heap } => {
                let Some(Reverse((key, i, offset, len))) = heap.pop() else {
                    return Ok(None);
                };
                if let Some((k, span)) = next_entry(&mut runs[i])? {
                    heap.push(Reverse((k, i, span.offset, span.len)));
                }
                Ok(Some((key, Span { offset, len })))
            }
        }
    }

    /// How many runs are merged from disk (0: sorted in memory).
    pub fn runs(&self) -> usize {
        match &self.0 {
            Inner::Memory(_) => 0,
            Inner::Runs { runs, .. } => runs.len(),
        }
    }
}

/// Sorts `chunk`, writes it to an anonymous temporary file and empties it.
fn write_run(chunk: &mut Vec<(Vec<u8>, Span)>) -> std::io::Result<File> {
    chunk.sort_by(|a, b| a.0.cmp(&b.0));
    let mut f = BufWriter::new(tempfile::tempfile()?);
    for (key, span) in chunk.drain(..) {
        f.write_all(&(key.len() as u64).to_le_bytes())?;
        f.write_all(&key)?;
        f.write_all(&span.offset.to_le_bytes())?;
        f.write_all(&span.len.to_le_bytes())?;
    }
    let mut f = f.into_inner().map_err(|e| e.into_error())?;
    f.seek(SeekFrom::Start(0))?;
    *chunk = Vec::new();
    Ok(f)
}

/// The next entry of a run, `None` at its end.
fn next_entry(r: &mut BufReader<File>) -> std::io::Result<Option<(Vec<u8>, Span)>> {
    if r.fill_buf()?.is_empty() {
        return Ok(None);
    }
    let mut n = [0u8; 8];
    let mut word = |r: &mut BufReader<File>| -> std::io::Result<u64> {
        r.read_exact(&mut n)?;
        Ok(u64::from_le_bytes(n))
    };
    let len = usize::try_from(word(r)?).map_err(std::io::Error::other)?;
    let mut key = Vec::new();
    r.by_ref().take(len as u64).read_to_end(&mut key)?;
    if key.len() != len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let offset = word(r)?;
    let len = word(r)?;
    Ok(Some((key, Span { offset, len })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(sorter: KeySorter) -> (usize, Vec<(Vec<u8>, u64)>) {
        let mut s = sorter.finish().unwrap();
        let runs = s.runs();
        let mut out = Vec::new();
        while let Some((k, span)) = s.next_entry().unwrap() {
            out.push((k, span.offset));
        }
        (runs, out)
    }

    /// Sorted on disk in many small runs, the entries come in the same order as sorted
    /// in memory (equal keys in the order pushed), every one once.
    #[test]
    fn runs_on_disk_merge_like_a_stable_sort_in_memory() {
        let entries: Vec<(Vec<u8>, u64)> = (0..1000u64)
            // 7919 is prime: i * 7919 mod 300 repeats each key three or four times.
            .map(|i| (format!("k{:04}", (i * 7919) % 300).into_bytes(), i))
            .collect();
        let mut expected = entries.clone();
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        let (mut small, mut big) = (KeySorter::new(100), KeySorter::new(RUN_BYTES));
        for (k, o) in &entries {
            let span = Span { offset: *o, len: 1 };
            small.push(k.clone(), span).unwrap();
            big.push(k.clone(), span).unwrap();
        }
        let (runs, on_disk) = sorted(small);
        assert!(runs > 100, "{runs} runs");
        assert_eq!(on_disk, expected);
        assert_eq!(sorted(big), (0, expected));
    }
}
