//! Reading a journal one line at a time, so that the memory a reader needs is a small
//! constant plus the largest record, whatever the size of the journal.
//!
//! [`RecordReader`] gives the envelope, then each record with where its line lies in
//! the file ([`Span`]); [`SpanReader`] reads one record back from its span. A line
//! longer than the per-line cap ([`RECORD_LINE`]) is skipped with a warning ("record N
//! skipped: larger than X") instead of being read. A single-document bundle file (the
//! `--json` output: one JSON object) is not a journal: it is read whole, within the
//! bundle size limit ([`crate::input::BUNDLE`]), and its records come from memory.

use super::{io_err, parse_bundle, JournalError, Line, JOURNAL_FILE};
use crate::record::{Envelope, Record, Warning, SCHEMA_VERSION};
use serde_json::Value;
use std::collections::HashSet;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
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
    seen: Seen,
    mode: Mode,
}

/// The most warnings a [`RecordReader`] keeps (one per unreadable line, repeated key...):
/// the rest are counted and named in one last warning, so that a journal of millions of
/// bad lines does not make millions of warnings.
pub const MAX_WARNINGS: usize = 1000;

/// The keys met so far, each as a 128-bit digest (16 bytes a record, whatever the
/// key's length), to skip a repeated key: the only state a reader keeps per record.
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
            let chunk = self.input.fill_buf()?;
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
            return Ok(RecordReader {
                file,
                cap,
                envelope,
                warnings,
                dropped: 0,
                seen: Seen::default(),
                mode: Mode::Lines(lines),
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
            seen: Seen::default(),
            mode: Mode::Whole(bundle.records.into_iter()),
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

    /// Whether records come from a journal read line by line (they have a [`Span`]),
    /// not from a bundle file read whole.
    pub fn streaming(&self) -> bool {
        matches!(self.mode, Mode::Lines(_))
    }

    /// The next record, `None` after the last one. Unreadable lines, repeated keys, a
    /// cut-off last line and lines over the cap are skipped with a warning.
    pub fn next_record(&mut self) -> Result<Option<Spanned>, JournalError> {
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
            let record = record_line(
                &self.file,
                lines.line_no,
                &lines.buf,
                &mut self.seen,
                &mut self.warnings,
            );
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

/// Reads records back from their [`Span`]s in a journal.
#[derive(Debug)]
pub struct SpanReader {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
}

impl SpanReader {
    /// Opens the journal `file` (as given by [`RecordReader::file`]).
    pub fn open(file: &Path) -> Result<SpanReader, JournalError> {
        let f = File::open(file).map_err(io_err(file))?;
        Ok(SpanReader {
            path: file.to_path_buf(),
            file: f,
            buf: Vec::new(),
        })
    }

    /// The record whose line is at `span`.
    pub fn record(&mut self, span: Span) -> Result<Record, JournalError> {
        self.buf.clear();
        self.file
            .seek(SeekFrom::Start(span.offset))
            .map_err(io_err(&self.path))?;
        (&self.file)
            .take(span.len)
            .read_to_end(&mut self.buf)
            .map_err(io_err(&self.path))?;
        let parsed = serde_json::from_slice::<Line>(&self.buf);
        if self.buf.capacity() > 1 << 20 {
            self.buf = Vec::new();
        }
        match parsed {
            Ok(Line::Record(r)) => Ok(r),
            _ => Err(JournalError::NotABundle {
                path: self.path.clone(),
                reason: format!(
                    "the record at byte {} changed since the journal was read; read it again (was it rewritten meanwhile?)",
                    span.offset
                ),
            }),
        }
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

/// The record of line `line_no`, or `None` with a warning (unreadable, a second
/// envelope, a repeated key).
pub(super) fn record_line(
    path: &Path,
    line_no: usize,
    line: &[u8],
    seen: &mut Seen,
    warnings: &mut Vec<Warning>,
) -> Option<Record> {
    match serde_json::from_slice::<Line>(line) {
        Ok(Line::Record(r)) => {
            if seen.insert(&r.key) {
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
        }
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
