//! What the first pass over a large journal finds ([`super::RecordReader`] on a journal
//! of [`super::DUPLICATES_ON_DISK_FROM`] bytes or more), kept so that one command reads
//! each line of a journal it opens again only once more, not twice: the offsets of the
//! lines that repeat an earlier line's key (in the file's order), and the lines of the
//! records a reader gives in the order of their keys (what `db ingest`'s content key
//! needs). Both are on anonymous temporary files (gone when the last handle closes,
//! whatever happens), read through cursors of their own, so that any number of readers
//! of the same journal share one [`FirstPass`].

use super::Span;
use std::cell::Cell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

thread_local! {
    static PASSES: Cell<usize> = const { Cell::new(0) };
}

/// How many first passes (every line of a large journal read to list its repeated keys)
/// this thread has run: what shows, in tests, that a command opening one journal several
/// times lists its keys once.
pub fn first_passes() -> usize {
    PASSES.with(Cell::get)
}

/// The first pass over a journal: shared (cheap to clone) by the readers of that journal
/// ([`super::RecordReader::first_pass`], [`super::RecordReader::open_after`]).
#[derive(Debug, Clone)]
pub struct FirstPass(Arc<Found>);

#[derive(Debug)]
struct Found {
    /// The journal, and its device and inode when it was read.
    file: PathBuf,
    id: (u64, u64),
    /// The offset past the envelope, where the pass started.
    start: u64,
    /// The per-line cap the pass read with.
    cap: u64,
    /// Where the lines read ended.
    end: u64,
    /// The repeats' offsets (8 bytes each, little-endian), in the file's order.
    repeats: File,
    repeat_count: u64,
    /// The kept records' spans (offset and length, 16 bytes), in the order of keys.
    order: File,
    order_count: u64,
    /// How many runs the repeats were sorted in on disk (0: in memory).
    runs: usize,
}

/// The files a [`FirstPass`] is written to, as the pass goes.
pub(super) struct Writer {
    repeats: BufWriter<File>,
    repeat_count: u64,
    order: BufWriter<File>,
    order_count: u64,
}

impl Writer {
    pub(super) fn new() -> std::io::Result<Writer> {
        PASSES.with(|p| p.set(p.get() + 1));
        Ok(Writer {
            repeats: BufWriter::new(tempfile::tempfile()?),
            repeat_count: 0,
            order: BufWriter::new(tempfile::tempfile()?),
            order_count: 0,
        })
    }

    /// The next kept record in the order of keys.
    pub(super) fn kept(&mut self, span: Span) -> std::io::Result<()> {
        self.order.write_all(&span.offset.to_le_bytes())?;
        self.order.write_all(&span.len.to_le_bytes())?;
        self.order_count += 1;
        Ok(())
    }

    /// The next repeat in the file's order.
    pub(super) fn repeat(&mut self, offset: u64) -> std::io::Result<()> {
        self.repeats.write_all(&offset.to_le_bytes())?;
        self.repeat_count += 1;
        Ok(())
    }

    /// The pass over `file` (lines from `start` to `end`, read with the cap `cap`).
    pub(super) fn finish(
        self,
        file: &Path,
        (start, cap, end): (u64, u64, u64),
        runs: usize,
    ) -> std::io::Result<FirstPass> {
        let meta = std::fs::metadata(file)?;
        Ok(FirstPass(Arc::new(Found {
            file: file.to_path_buf(),
            id: (meta.dev(), meta.ino()),
            start,
            cap,
            end,
            repeats: self.repeats.into_inner().map_err(|e| e.into_error())?,
            repeat_count: self.repeat_count,
            order: self.order.into_inner().map_err(|e| e.into_error())?,
            order_count: self.order_count,
            runs,
        })))
    }
}

impl FirstPass {
    /// Whether this pass is of the journal `file` as it is now, read from `start` with
    /// the cap `cap` (the same file, not replaced since, not shorter than what was read).
    pub(super) fn fits(&self, file: &Path, start: u64, cap: u64) -> bool {
        let f = &self.0;
        std::fs::metadata(file).is_ok_and(|m| {
            f.file == file
                && (m.dev(), m.ino()) == f.id
                && m.len() >= f.end
                && f.start == start
                && f.cap == cap
        })
    }

    /// Where the lines read ended.
    pub(super) fn end(&self) -> u64 {
        self.0.end
    }

    /// The offsets of the lines that repeat an earlier line's key, in the file's order.
    pub(super) fn repeats(&self) -> Words {
        Words::new(self.clone(), false)
    }

    /// How many runs the repeats were sorted in on disk (0: in memory): the list of
    /// repeats is bounded in memory, not one entry a record.
    pub fn runs(&self) -> usize {
        self.0.runs
    }

    /// How many lines repeat an earlier line's key.
    pub fn repeat_count(&self) -> u64 {
        self.0.repeat_count
    }

    /// The lines of the records a reader of the journal gives (every record line that
    /// reads, within the cap, the first of its key), in the order of their keys (equal
    /// to the order of the records' keys).
    pub fn key_order(&self) -> KeyOrder {
        KeyOrder(Words::new(self.clone(), true))
    }
}

/// The spans of a [`FirstPass`]'s records in the order of their keys.
#[derive(Debug)]
pub struct KeyOrder(Words);

impl KeyOrder {
    /// The next span, `None` after the last; an error when the temporary file cannot be
    /// read back.
    pub fn next_span(&mut self) -> std::io::Result<Option<Span>> {
        let Some(offset) = self.0.next()? else {
            return Ok(None);
        };
        let len = self.0.next()?.ok_or(std::io::ErrorKind::UnexpectedEof)?;
        Ok(Some(Span { offset, len }))
    }
}

/// A cursor over the 8-byte words of one of a [`FirstPass`]'s files, read 64 KiB at a
/// time.
#[derive(Debug)]
pub(super) struct Words {
    pass: FirstPass,
    order: bool,
    /// The byte offset in the file of the end of `buf`.
    at: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl Words {
    fn new(pass: FirstPass, order: bool) -> Words {
        Words {
            pass,
            order,
            at: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }

    pub(super) fn next(&mut self) -> std::io::Result<Option<u64>> {
        if self.pos == self.buf.len() {
            let f = &self.pass.0;
            let (file, words) = if self.order {
                (&f.order, f.order_count * 2)
            } else {
                (&f.repeats, f.repeat_count)
            };
            let left = (words * 8).saturating_sub(self.at);
            if left == 0 {
                return Ok(None);
            }
            self.buf.resize(left.min(64 << 10) as usize, 0);
            file.read_exact_at(&mut self.buf, self.at)?;
            self.at += self.buf.len() as u64;
            self.pos = 0;
        }
        let mut word = [0u8; 8];
        word.copy_from_slice(&self.buf[self.pos..self.pos + 8]);
        self.pos += 8;
        Ok(Some(u64::from_le_bytes(word)))
    }
}
