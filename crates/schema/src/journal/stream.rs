//! Reading a journal one line at a time, so that the memory a reader needs is a small
//! constant plus the largest record, whatever the size of the journal.
//!
//! [`RecordReader`] gives the envelope, then each record with where its line lies in
//! the file ([`Span`]); [`super::SpanReader`] reads one record back from its span. A line
//! longer than the per-line cap ([`RECORD_LINE`]) is skipped with a warning ("record N
//! skipped: larger than X") instead of being read. A single-document bundle file (the
//! `--json` output: one JSON object) is not a journal: it is read whole, within the
//! bundle size limit ([`crate::input::BUNDLE`]), and its records come from memory.

use super::keysort::{KeySorter, RUN_BYTES};
use super::pass::{FirstPass, Words};
use super::{io_err, parse_bundle, JournalError, Line, JOURNAL_FILE};
use crate::record::{Envelope, Record, Warning, SCHEMA_VERSION};
use serde_json::Value;
use std::collections::HashSet;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The longest journal line (one record) that is read: 128 MiB. A longer one is skipped
/// with a warning; the other records are read.
pub const RECORD_LINE: u64 = 128 << 20;

/// Where a record's line lies in its journal: the byte offset of its first byte and
/// its length without the line end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// Length of the line in bytes, without the newline.
    pub len: u64,
}

/// A record read by [`RecordReader`], with its place in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned {
    /// The record.
    pub record: Record,
    /// Where its line is; `None` for a record of a single-document bundle file.
    pub span: Option<Span>,
}

/// A streaming reader of a bundle: a journal line by line, a bundle file whole.
#[derive(Debug)]
pub struct RecordReader {
    file: PathBuf,
    cap: u64,
    envelope: Envelope,
    warnings: Vec<Warning>,
    /// Warnings met past [`MAX_WARNINGS`]: counted, not kept.
    dropped: usize,
    dups: Dups,
    mode: Mode,
    /// Records whose line is this long or longer are given without their payload.
    heads_from: u64,
    /// Whether the last record was given without its payload.
    skipped: bool,
}

/// Journals of at least this size (32 MiB, where the report keeps a journal as an index)
/// find their repeated keys before their records are read, by sorting the keys on disk
/// ([`super::keysort`]): the reader then holds no state per record. Smaller ones keep a
/// digest of each key met in memory ([`Seen`]).
pub const DUPLICATES_ON_DISK_FROM: u64 = 32 << 20;

/// How a reader knows that a record repeats the key of an earlier one (the first
/// occurrence is kept, the later ones are skipped with a warning).
#[derive(Debug)]
enum Dups {
    /// The digests of the keys met so far.
    Memory(Seen),
    /// The offsets of the lines that repeat an earlier line's key, in the file's order,
    /// found before the records were read ([`listed_repeats`]).
    Listed {
        pass: FirstPass,
        repeats: Words,
        /// The next offset of `repeats` not yet passed.
        next: Option<u64>,
    },
}

impl Dups {
    /// Whether the record `key` on the line at `offset` is the first with its key.
    fn first(&mut self, key: &str, offset: u64) -> std::io::Result<bool> {
        match self {
            Dups::Memory(seen) => Ok(seen.insert(key)),
            Dups::Listed { repeats, next, .. } => {
                while next.is_some_and(|n| n < offset) {
                    *next = repeats.next()?;
                }
                Ok(*next != Some(offset))
            }
        }
    }
}

/// The most warnings a [`RecordReader`] keeps (one per unreadable line, repeated key...):
/// the rest are counted and named in one last warning, so that a journal of millions of
/// bad lines does not make millions of warnings.
pub const MAX_WARNINGS: usize = 1000;

/// The keys met so far, each as a 128-bit digest (16 bytes a record, whatever the
/// key's length), to skip a repeated key: the only state a reader of a journal smaller
/// than [`DUPLICATES_ON_DISK_FROM`] keeps per record.
#[derive(Debug, Default)]
pub(super) struct Seen(HashSet<u128>);

impl Seen {
    /// Whether `key` is new (then it is remembered).
    pub(super) fn insert(&mut self, key: &str) -> bool {
        let half = |salt: u8| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            salt.hash(&mut h);
            key.hash(&mut h);
            h.finish()
        };
        self.0
            .insert((u128::from(half(0)) << 64) | u128::from(half(1)))
    }
}

#[derive(Debug)]
enum Mode {
    Lines(Lines),
    Whole(std::vec::IntoIter<Record>),
}

#[derive(Debug)]
struct Lines {
    input: BufReader<File>,
    /// Lines consumed so far.
    line_no: usize,
    /// Record lines met so far (read or skipped).
    records: usize,
    /// Offset of the next line.
    offset: u64,
    /// Where the file ends for this reader (what was there when its repeated keys
    /// were listed; `u64::MAX`: wherever it ends).
    end: u64,
    /// The current line, without its newline (empty when it was over the cap).
    buf: Vec<u8>,
}

/// One line as read by [`Lines::next`].
struct LineRead {
    start: u64,
    len: u64,
    ended: bool,
    over: bool,
}

impl Lines {
    /// Reads the next line into `buf` unless it is longer than `cap` (then it is
    /// consumed and dropped). `None` at the end of the file.
    fn next(&mut self, cap: u64) -> std::io::Result<Option<LineRead>> {
        self.buf.clear();
        let start = self.offset;
        let (mut len, mut ended, mut over) = (0u64, false, false);
        loop {
            let room = usize::try_from(self.end - self.offset).unwrap_or(usize::MAX);
            let chunk = self.input.fill_buf()?;
            let chunk = &chunk[..chunk.len().min(room)];
            if chunk.is_empty() {
                break;
            }
            let (n, nl) = match chunk.iter().position(|&b| b == b'\n') {
                Some(p) => (p + 1, true),
                None => (chunk.len(), false),
            };
            let content = if nl { n - 1 } else { n };
            len += content as u64;
            if !over && len > cap {
                over = true;
                self.buf = Vec::new();
            }
            if !over {
                self.buf.extend_from_slice(&chunk[..content]);
            }
            self.input.consume(n);
            self.offset += n as u64;
            if nl {
                ended = true;
                break;
            }
        }
        if self.offset == start {
            return Ok(None);
        }
        self.line_no += 1;
        Ok(Some(LineRead {
            start,
            len,
            ended,
            over,
        }))
    }

    fn blank(&self) -> bool {
        self.buf.iter().all(u8::is_ascii_whitespace)
    }
}

impl RecordReader {
    /// Opens an output folder (its `results.jsonl`), a journal or a bundle file, with
    /// the per-line cap [`RECORD_LINE`]. Reads the envelope (the first line of a
    /// journal); the errors are those of [`super::read_bundle`].
    pub fn open(path: &Path) -> Result<RecordReader, JournalError> {
        RecordReader::open_with_cap(path, RECORD_LINE)
    }

    /// [`RecordReader::open`] with another per-line cap (bytes).
    pub fn open_with_cap(path: &Path, cap: u64) -> Result<RecordReader, JournalError> {
        RecordReader::open_with(path, cap, DUPLICATES_ON_DISK_FROM, RUN_BYTES)
    }

    /// [`RecordReader::open`] of a journal already read in this command: its repeated
    /// keys are taken from `pass` ([`RecordReader::first_pass`] of the earlier reader)
    /// instead of being listed again, and the records read are those the earlier reader
    /// read (up to where its first pass ended). A `pass` of another file, or of this
    /// file since replaced (another inode) or cut shorter, is not used: the keys are
    /// listed again.
    pub fn open_after(path: &Path, pass: Option<&FirstPass>) -> Result<RecordReader, JournalError> {
        let sizes = (DUPLICATES_ON_DISK_FROM, RUN_BYTES);
        RecordReader::open_with_pass(path, RECORD_LINE, sizes, pass)
    }

    /// [`RecordReader::open_with_cap`], the repeated keys of a journal of `on_disk_from`
    /// bytes or more listed by sorting its keys `run` bytes at a time.
    pub(crate) fn open_with(
        path: &Path,
        cap: u64,
        on_disk_from: u64,
        run: usize,
    ) -> Result<RecordReader, JournalError> {
        RecordReader::open_with_pass(path, cap, (on_disk_from, run), None)
    }

    /// [`RecordReader::open_with`], the repeated keys taken from `pass` if it fits.
    pub(crate) fn open_with_pass(
        path: &Path,
        cap: u64,
        (on_disk_from, run): (u64, usize),
        pass: Option<&FirstPass>,
    ) -> Result<RecordReader, JournalError> {
        let meta = std::fs::metadata(path).map_err(io_err(path))?;
        let file = if meta.is_dir() {
            let f = path.join(JOURNAL_FILE);
            if !f.exists() {
                return Err(JournalError::NotABundle {
                    path: path.to_path_buf(),
                    reason: format!("the folder has no {JOURNAL_FILE}"),
                });
            }
            f
        } else {
            path.to_path_buf()
        };
        let not_bundle = |reason: String| JournalError::NotABundle {
            path: file.clone(),
            reason,
        };
        crate::input::check_file(&file, "a numalab bundle", crate::input::BUNDLE)
            .map_err(|e| not_bundle(e.reason))?;
        let f = File::open(&file).map_err(|e| not_bundle(crate::input::io_reason(&e)))?;
        let mut lines = Lines {
            input: BufReader::with_capacity(64 << 10, f),
            line_no: 0,
            records: 0,
            offset: 0,
            end: u64::MAX,
            buf: Vec::new(),
        };
        // The first line that is not blank: a journal's envelope, or something else
        // (a bundle file, or not a bundle), which is read whole as before.
        loop {
            let line = match lines.next(cap).map_err(io_err(&file))? {
                None => break,
                Some(l) => l,
            };
            if !line.over && lines.blank() {
                if line.ended {
                    continue;
                }
                break;
            }
            if line.over || (!line.ended && line.start > 0) {
                break;
            }
            let value = match serde_json::from_slice::<Value>(&lines.buf) {
                Ok(v) if v.get("line").and_then(Value::as_str) == Some("envelope") => v,
                _ => break,
            };
            let (envelope, warnings) = envelope_value(&file, value)?;
            lines.buf = Vec::new();
            let size = std::fs::metadata(&file).map_err(io_err(&file))?.len();
            let dups = if size >= on_disk_from {
                let pass = match pass {
                    Some(p) if p.fits(&file, lines.offset, cap) => p.clone(),
                    _ => listed_repeats(&file, lines.offset, cap, run)?.0,
                };
                lines.end = pass.end();
                let mut repeats = pass.repeats();
                let next = repeats.next().map_err(io_err(&file))?;
                Dups::Listed {
                    pass,
                    repeats,
                    next,
                }
            } else {
                Dups::Memory(Seen::default())
            };
            return Ok(RecordReader {
                file,
                cap,
                envelope,
                warnings,
                dropped: 0,
                dups,
                mode: Mode::Lines(lines),
                heads_from: u64::MAX,
                skipped: false,
            });
        }
        drop(lines);
        let text = crate::input::read(&file, "a numalab bundle", crate::input::BUNDLE)
            .map_err(|e| not_bundle(e.reason))?;
        let (bundle, warnings) = parse_bundle(&file, &text)?;
        Ok(RecordReader {
            file,
            cap,
            envelope: bundle.envelope,
            warnings,
            dropped: 0,
            dups: Dups::Memory(Seen::default()),
            mode: Mode::Whole(bundle.records.into_iter()),
            heads_from: u64::MAX,
            skipped: false,
        })
    }

    /// The file read (the journal of a folder).
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The envelope.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// What the first pass over the journal found, when it had one (a journal of
    /// [`DUPLICATES_ON_DISK_FROM`] bytes or more): give it to
    /// [`RecordReader::open_after`] to read the journal again without a first pass, or
    /// walk its records in the order of their keys ([`FirstPass::key_order`]).
    pub fn first_pass(&self) -> Option<&FirstPass> {
        match &self.dups {
            Dups::Listed { pass, .. } => Some(pass),
            Dups::Memory(_) => None,
        }
    }

    /// Whether records come from a journal read line by line (they have a [`Span`]),
    /// not from a bundle file read whole.
    pub fn streaming(&self) -> bool {
        matches!(self.mode, Mode::Lines(_))
    }

    /// From now on, records of a journal whose line is `len` bytes or longer are given
    /// without their payload (`data` null; [`RecordReader::payload_skipped`]): the
    /// payload is checked to be JSON but not made into a tree of values, which for a
    /// large record (a 2,000-CPU `c2c.matrix`) is several times its line. The records
    /// and warnings are otherwise the same. Read the payload from the record's line
    /// ([`super::SpanReader::decode`]) when needed.
    pub fn skip_payloads_from(&mut self, len: u64) {
        self.heads_from = len;
    }

    /// Whether the last record given came without its payload
    /// ([`RecordReader::skip_payloads_from`]).
    pub fn payload_skipped(&self) -> bool {
        self.skipped
    }

    /// The next record, `None` after the last one. Unreadable lines, repeated keys, a
    /// cut-off last line and lines over the cap are skipped with a warning.
    pub fn next_record(&mut self) -> Result<Option<Spanned>, JournalError> {
        self.skipped = false;
        let lines = match &mut self.mode {
            Mode::Whole(records) => {
                return Ok(records.next().map(|record| Spanned { record, span: None }))
            }
            Mode::Lines(lines) => lines,
        };
        loop {
            let line = match lines.next(self.cap).map_err(io_err(&self.file))? {
                None => return Ok(None),
                Some(l) => l,
            };
            if !line.over && lines.blank() {
                continue;
            }
            let kept = self.warnings.len();
            if !line.ended {
                self.warnings.push(Warning::new(
                    "journal_truncated",
                    format!(
                        "{}: the last line is incomplete and was skipped",
                        self.file.display()
                    ),
                ));
                bound(&mut self.warnings, &mut self.dropped, kept);
                continue;
            }
            lines.records += 1;
            if line.over {
                self.warnings.push(
                    Warning::new(
                        "record_too_large",
                        format!(
                            "{}: record {} skipped: larger than {} (line {}, {}); the other records are read",
                            self.file.display(),
                            lines.records,
                            crate::units::bytes(self.cap),
                            lines.line_no,
                            crate::units::bytes(line.len)
                        ),
                    )
                    .with_remedy("the record stays in the journal; a line that large is most likely damaged"),
                );
                bound(&mut self.warnings, &mut self.dropped, kept);
                continue;
            }
            let (dups, mut failed) = (&mut self.dups, None);
            let mut first = |key: &str| {
                dups.first(key, line.start).unwrap_or_else(|e| {
                    failed = Some(e);
                    true
                })
            };
            let head = if line.len >= self.heads_from {
                super::head::head_line(&lines.buf)
            } else {
                None
            };
            self.skipped = head.is_some();
            let record = match head {
                // The same warning as [`record_line`] for a repeated key.
                Some(r) => keep_first(&self.file, lines.line_no, r, &mut first, &mut self.warnings),
                None => record_line(
                    &self.file,
                    lines.line_no,
                    &lines.buf,
                    &mut first,
                    &mut self.warnings,
                ),
            };
            if let Some(e) = failed {
                return Err(io_err(&self.file)(e));
            }
            bound(&mut self.warnings, &mut self.dropped, kept);
            if lines.buf.capacity() > 1 << 20 {
                lines.buf = Vec::new();
            }
            if let Some(record) = record {
                return Ok(Some(Spanned {
                    record,
                    span: Some(Span {
                        offset: line.start,
                        len: line.len,
                    }),
                }));
            }
        }
    }

    /// The envelope and every warning met, once the records were read (at most
    /// [`MAX_WARNINGS`] of those about lines, then one saying how many more there were).
    pub fn finish(mut self) -> (Envelope, Vec<Warning>) {
        if self.dropped > 0 {
            self.warnings.push(Warning::new(
                "warnings_left_out",
                format!(
                    "{}: {} more problem(s) with its lines (unreadable lines, repeated keys...) were met and not listed: only the first {MAX_WARNINGS} are",
                    self.file.display(),
                    self.dropped
                ),
            ).with_remedy("the journal is most likely damaged; `jq -c . FILE` shows which lines do not read"));
        }
        (self.envelope, self.warnings)
    }
}

/// Drops the warnings added since there were `kept` once [`MAX_WARNINGS`] are held
/// (they are counted in `dropped` instead).
fn bound(warnings: &mut Vec<Warning>, dropped: &mut usize, kept: usize) {
    let room = MAX_WARNINGS.max(kept);
    if warnings.len() > room {
        *dropped += warnings.len() - room;
        warnings.truncate(room);
    }
}

/// The envelope of a journal's first line, with a warning if its schema is newer.
pub(super) fn envelope_line(
    path: &Path,
    first: &[u8],
) -> Result<(Envelope, Vec<Warning>), JournalError> {
    let value: Value = serde_json::from_slice(first).map_err(|e| JournalError::NotABundle {
        path: path.to_path_buf(),
        reason: format!("line 1 is not JSON ({e})"),
    })?;
    envelope_value(path, value)
}

fn envelope_value(path: &Path, value: Value) -> Result<(Envelope, Vec<Warning>), JournalError> {
    let not_bundle = |reason: String| JournalError::NotABundle {
        path: path.to_path_buf(),
        reason,
    };
    let mut warnings = Vec::new();
    let version = value
        .get("schema_version")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| {
            not_bundle("line 1 has no schema_version: it is not a numalab journal".into())
        })?;
    if version > u64::from(SCHEMA_VERSION) {
        warnings.push(
            Warning::new(
                "newer_schema",
                format!(
                    "{} was written with results schema {version}, newer than this numalab's {SCHEMA_VERSION}; showing what can be read",
                    path.display()
                ),
            )
            .with_remedy("upgrade numalab to read every field"),
        );
    }
    match serde_json::from_value::<Line>(value) {
        Ok(Line::Envelope(e)) => Ok((*e, warnings)),
        Ok(Line::Record(_)) => Err(not_bundle("line 1 is a record, not the envelope".into())),
        Err(e) => Err(not_bundle(format!(
            "line 1 is not a readable envelope ({e})"
        ))),
    }
}

/// `r` if its key is new, else `None` with a warning.
fn keep_first(
    path: &Path,
    line_no: usize,
    r: Record,
    first: &mut dyn FnMut(&str) -> bool,
    warnings: &mut Vec<Warning>,
) -> Option<Record> {
    if first(&r.key) {
        return Some(r);
    }
    warnings.push(Warning::new(
        "duplicate_record",
        format!(
            "{}: line {line_no} repeats key {:?}; the first one is kept",
            path.display(),
            r.key
        ),
    ));
    None
}

/// The record of line `line_no`, or `None` with a warning (unreadable, a second
/// envelope, a repeated key).
pub(super) fn record_line(
    path: &Path,
    line_no: usize,
    line: &[u8],
    first: &mut dyn FnMut(&str) -> bool,
    warnings: &mut Vec<Warning>,
) -> Option<Record> {
    match serde_json::from_slice::<Line>(line) {
        Ok(Line::Record(r)) => return keep_first(path, line_no, r, first, warnings),
        Ok(Line::Envelope(_)) => warnings.push(Warning::new(
            "unreadable_line",
            format!(
                "{}: line {line_no} is a second envelope; ignored",
                path.display()
            ),
        )),
        Err(e) => warnings.push(Warning::new(
            "unreadable_line",
            format!(
                "{}: line {line_no} could not be read ({e}); ignored",
                path.display()
            ),
        )),
    }
    None
}

/// The first pass over the journal `file` (from offset `start`, past its envelope): the
/// offsets of the record lines that repeat the key of an earlier record line, in the
/// file's order, the spans of the others in the order of their keys, and the offset
/// where the lines read ended ([`FirstPass`]). Every line that the reader would read as
/// a record (ended, within `cap`, a record) is read, its key and offset sorted on disk
/// `run` bytes at a time ([`KeySorter`]); of each key, every offset but the first is a
/// repeat, and those are sorted again, by offset. Memory: two runs and the merge
/// buffers, whatever the number of records. Ctrl-C or SIGTERM stops it, between
/// records, with an error.
fn listed_repeats(
    file: &Path,
    start: u64,
    cap: u64,
    run: usize,
) -> Result<(FirstPass, u64), JournalError> {
    let interrupted = || {
        io_err(file)(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "interrupted (Ctrl-C, SIGTERM) while looking for repeated keys",
        ))
    };
    let mut f = File::open(file).map_err(io_err(file))?;
    f.seek(SeekFrom::Start(start)).map_err(io_err(file))?;
    let mut lines = Lines {
        input: BufReader::with_capacity(64 << 10, f),
        line_no: 0,
        records: 0,
        offset: start,
        end: u64::MAX,
        buf: Vec::new(),
    };
    let mut keys = KeySorter::new(run);
    while let Some(line) = lines.next(cap).map_err(io_err(file))? {
        if crate::interrupt::requested() {
            return Err(interrupted());
        }
        if line.over || !line.ended || lines.blank() {
            continue;
        }
        // The key without the payload's tree of values (what a reader accepts as a
        // record: [`super::head`]); the line read whole when that does not read.
        let key = super::head::head_line(&lines.buf)
            .map(|r| r.key)
            .or_else(|| match serde_json::from_slice::<Line>(&lines.buf) {
                Ok(Line::Record(r)) => Some(r.key),
                _ => None,
            });
        if let Some(key) = key {
            let span = Span {
                offset: line.start,
                len: line.len,
            };
            keys.push(key.into_bytes(), span).map_err(io_err(file))?;
        }
        if lines.buf.capacity() > 1 << 20 {
            lines.buf = Vec::new();
        }
    }
    let end = lines.offset;
    drop(lines);
    let mut keys = keys.finish().map_err(io_err(file))?;
    let mut out = super::pass::Writer::new().map_err(io_err(file))?;
    let mut repeats = KeySorter::new(run);
    let mut last: Option<Vec<u8>> = None;
    while let Some((key, span)) = keys.next_entry().map_err(io_err(file))? {
        if crate::interrupt::requested() {
            return Err(interrupted());
        }
        if last.as_ref() == Some(&key) {
            // Big-endian: the bytes sort as the numbers do.
            repeats
                .push(span.offset.to_be_bytes().to_vec(), span)
                .map_err(io_err(file))?;
        } else {
            out.kept(span).map_err(io_err(file))?;
            last = Some(key);
        }
    }
    drop(keys);
    let mut repeats = repeats.finish().map_err(io_err(file))?;
    let runs = repeats.runs();
    while let Some((_, span)) = repeats.next_entry().map_err(io_err(file))? {
        out.repeat(span.offset).map_err(io_err(file))?;
    }
    let pass = out.finish(file, (start, cap, end), runs);
    Ok((pass.map_err(io_err(file))?, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::SpanReader;
    use crate::record::RecordKind;

    /// Every record and warning of `path` as read with the repeated keys found in
    /// memory (`on_disk_from` past the file's size) or on disk.
    fn read_all(path: &Path, on_disk_from: u64, run: usize) -> (Vec<Spanned>, Vec<Warning>) {
        let mut reader = RecordReader::open_with(path, 4096, on_disk_from, run).unwrap();
        assert_eq!(
            matches!(reader.dups, Dups::Listed { .. }),
            on_disk_from == 0
        );
        let mut records = Vec::new();
        while let Some(r) = reader.next_record().unwrap() {
            records.push(r);
        }
        (records, reader.finish().1)
    }

    /// A journal whose keys repeat far apart (the first record's key again at the end,
    /// keys repeated three times, a repeated key whose first line does not read, an
    /// unreadable line, a line over the cap, a second envelope, blank lines, a cut-off
    /// last line) gives the same records, in the same order, and the same warnings read
    /// through the large-journal path (keys sorted on disk in many small runs) as
    /// through the small one (key digests in memory).
    #[test]
    fn repeated_keys_found_on_disk_as_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let fixture = include_str!("../../../../tests/fixtures/bundles/vm-evaluate/results.jsonl");
        let envelope = fixture.lines().next().unwrap();
        let line = |key: &str, i: usize| {
            format!(
                r#"{{"line":"record","key":"{key}","kind":"test.x","origin":"measured","time_utc":"t","data":{{"i":{i}}}}}"#
            )
        };
        let mut text = format!("{envelope}\n");
        text.push_str(&line("first", 0));
        text.push('\n');
        text.push_str("{\"line\":\"record\",\"key\":\"broken\"\n\n");
        for i in 1..1000 {
            // Keys k0..k399, each two or three times, spread over the whole journal.
            text.push_str(&line(&format!("k{}", (i * 7919) % 400), i));
            text.push('\n');
            if i == 300 {
                text.push_str(&format!("{envelope}\n"));
                text.push_str(&format!("{}\n", line(&"x".repeat(5000), i)));
            }
            if i == 600 {
                text.push_str(&format!("{}\n   \n", line("broken", i)));
            }
        }
        text.push_str(&format!("{}\n", line("first", 1000)));
        text.push_str(&line("cut", 1001));
        std::fs::write(&path, &text).unwrap();

        let (memory, memory_warnings) = read_all(&path, u64::MAX, RUN_BYTES);
        let (disk, disk_warnings) = read_all(&path, 0, 200);
        assert_eq!(disk, memory);
        assert_eq!(disk_warnings, memory_warnings);
        // 400 distinct k keys, "first" and "broken" once each.
        assert_eq!(memory.len(), 402);
        let repeats = memory_warnings
            .iter()
            .filter(|w| w.code == "duplicate_record")
            .count();
        assert_eq!(repeats, 999 - 400 + 1);
        assert!(memory_warnings.iter().any(|w| w
            .message
            .contains("repeats key \"first\"; the first one is kept")));
        assert_eq!(memory[0].record.data["i"], 0);
        for code in ["unreadable_line", "record_too_large", "journal_truncated"] {
            assert!(memory_warnings.iter().any(|w| w.code == code), "{code}");
        }
        // Many runs: the repeats list is bounded, not one entry a record in memory.
        let (repeats, _) = listed_repeats(&path, envelope.len() as u64 + 1, 4096, 200).unwrap();
        assert!(repeats.runs() > 10, "{} runs", repeats.runs());
    }
    /// Read with every payload skipped ([`RecordReader::skip_payloads_from`] 0), the
    /// journal of `repeated_keys_found_on_disk_as_in_memory` gives the same records but
    /// their payloads, and the same warnings, whichever way its repeated keys are found;
    /// each payload is decoded from its line as from the record read whole.
    #[test]
    fn records_read_without_their_payloads_are_the_same_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        let fixture = include_str!("../../../../tests/fixtures/bundles/vm-evaluate/results.jsonl");
        let mut text = String::new();
        for (i, line) in fixture.lines().enumerate() {
            text.push_str(line);
            text.push('\n');
            if i % 7 == 3 {
                // A repeat, a line that does not read, a second envelope.
                text.push_str(&format!("{line}\n{{\"line\":\"record\",\"key\":1}}\n"));
                text.push_str(fixture.lines().next().unwrap());
                text.push('\n');
            }
        }
        std::fs::write(&path, &text).unwrap();
        for on_disk_from in [0, u64::MAX] {
            let (whole, whole_warnings) = read_all(&path, on_disk_from, 200);
            let mut reader = RecordReader::open_with(&path, 4096, on_disk_from, 200).unwrap();
            reader.skip_payloads_from(0);
            let mut spans = SpanReader::open(&path).unwrap();
            let mut heads = Vec::new();
            while let Some(r) = reader.next_record().unwrap() {
                assert!(reader.payload_skipped());
                assert!(r.record.data.is_null());
                heads.push(r);
            }
            assert_eq!(reader.finish().1, whole_warnings);
            assert_eq!(heads.len(), whole.len());
            assert!(whole.len() > 10);
            for (head, full) in heads.iter().zip(&whole) {
                let mut full = full.clone();
                let data = std::mem::take(&mut full.record.data);
                assert_eq!(head, &full);
                let read = spans.record(head.span.unwrap()).unwrap();
                assert_eq!(read.data, data);
                // Decoded straight from the line as from the record read whole (a kind
                // that decodes, and one that is not the record's).
                let as_value = spans
                    .decode::<AnyPayload>(head.span.unwrap())
                    .unwrap()
                    .map(|(k, v)| (k, v.0));
                let expected = (read.kind == AnyPayload::KIND).then(|| (read.key.clone(), data));
                assert_eq!(as_value, expected);
            }
        }
    }

    /// Any payload of the kind `mem.bandwidth` (what [`SpanReader::decode`] is tested
    /// with).
    #[derive(serde::Serialize, serde::Deserialize)]
    struct AnyPayload(Value);

    impl RecordKind for AnyPayload {
        const KIND: &'static str = "mem.bandwidth";
    }
}
