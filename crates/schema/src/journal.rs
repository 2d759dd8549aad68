//! The journal: a results bundle written as JSON Lines, one record per line, each line
//! written (one `write` call) as soon as the record exists.
//!
//! A killed process therefore loses nothing already recorded: the kernel holds what was
//! written. Against a machine crash or power loss the journal syncs (`fdatasync`) at
//! most once a second while records come in ([`SYNC_INTERVAL`]): a record written a
//! second or more after the last sync is synced at once, the records in between with it
//! or at the close. A crash loses at most the last second of records. A journal closed
//! less than a second after it was opened is not synced at all: such a run measured for
//! less than a second, and its sync (a new file's inode and data, 1-10 ms here) would
//! be a large share of the run.
//!
//! Line 1 is the envelope; every following line is a record. Opening an existing
//! journal resumes it: its records are read back (their keys tell the caller what is
//! already done), a half-written last line (the process was killed mid-write, or the
//! disk filled up) is cut off with a warning, and new records are appended. A key is
//! never written twice, so a record survives a kill exactly once. An exclusive lock
//! stops two processes from writing the same journal.

use crate::error::{Classify, ErrorClass};
use crate::record::{Bundle, Envelope, Record, Warning, SCHEMA_VERSION};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod head;
pub mod keysort;
mod pass;
mod span;
mod stream;
pub use pass::{first_passes, FirstPass, KeyOrder};
pub use span::SpanReader;
pub use stream::{RecordReader, Span, Spanned, DUPLICATES_ON_DISK_FROM, RECORD_LINE};

/// The shortest time between two syncs of a journal, and the shortest run whose journal
/// is synced when it closes.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// The journal file name inside an output folder.
pub const JOURNAL_FILE: &str = "results.jsonl";

/// One line of a journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "line", rename_all = "snake_case")]
pub enum Line {
    /// The first line.
    Envelope(Box<Envelope>),
    /// Any other line.
    Record(Record),
}

/// Journal and bundle errors.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The file or folder could not be read or written.
    #[error(
        "{}: {}",
        crate::text::path_text(path),
        crate::input::io_reason(source)
    )]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An output folder that is a file.
    #[error("{}: this is a file, not a folder; give --out a folder (numalab writes results.jsonl and the reports into it), e.g. {}-out", crate::text::path_text(path), crate::text::path_text(path))]
    NotAFolder {
        /// The path.
        path: PathBuf,
    },
    /// Another process holds the journal.
    #[error("{path}: another numalab process is writing this journal; wait for it or choose another --out folder")]
    Locked {
        /// The path.
        path: PathBuf,
    },
    /// The file is not a numalab journal or bundle.
    #[error("{path}: not a numalab results file: {reason}")]
    NotABundle {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A journal to resume that holds results of a machine with another topology.
    #[error("{}: holds results of another machine (topology {theirs} here {here}); choose another --out folder", path.display())]
    OtherMachine {
        /// The output folder.
        path: PathBuf,
        /// The topology hash of the journal's machine.
        theirs: String,
        /// The topology hash of this one.
        here: String,
    },
}

impl Classify for JournalError {
    fn class(&self) -> ErrorClass {
        match self {
            JournalError::Io { .. } => ErrorClass::Runtime,
            JournalError::Locked { .. } => ErrorClass::Busy,
            JournalError::NotAFolder { .. } | JournalError::OtherMachine { .. } => {
                ErrorClass::Usage
            }
            JournalError::NotABundle { .. } => ErrorClass::Input,
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// An open journal.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    keys: HashSet<String>,
    sync: bool,
    /// When the journal was opened.
    opened: Instant,
    /// The last sync (the opening until there is one).
    last_sync: Instant,
    /// Lines written since the last sync.
    unsynced: bool,
    /// How many times the journal was synced (for tests and the benchmark's breakdown).
    syncs: u32,
}

/// What [`Journal::open`] found.
#[derive(Debug)]
pub struct Opened {
    /// The journal, ready for appends.
    pub journal: Journal,
    /// The envelope on disk: the one given if the journal is new, else the original one.
    pub envelope: Envelope,
    /// Records already in the journal (empty if new).
    pub records: Vec<Record>,
    /// Whether the journal existed before.
    pub resumed: bool,
    /// Problems found while reading it back (a cut-off last line, unreadable lines).
    pub warnings: Vec<Warning>,
}

impl Journal {
    /// Opens `dir/results.jsonl`, creating `dir` and the journal if needed.
    pub fn open(dir: &Path, envelope: &Envelope) -> Result<Opened, JournalError> {
        if dir.exists() && !dir.is_dir() {
            return Err(JournalError::NotAFolder {
                path: dir.to_path_buf(),
            });
        }
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let path = dir.join(JOURNAL_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io_err(&path))?;
        match crate::lock::try_exclusive(&file, &path, "another numalab process", "--out folder") {
            Ok(()) => {}
            Err(crate::lock::LockError::Busy { .. }) => return Err(JournalError::Locked { path }),
            Err(crate::lock::LockError::Io { source, .. }) => return Err(io_err(&path)(source)),
        }
        let mut text = Vec::new();
        file.read_to_end(&mut text).map_err(io_err(&path))?;
        let mut warnings = Vec::new();

        // Cut off a half-written last line.
        let good_len = match text.iter().rposition(|&b| b == b'\n') {
            Some(pos) => pos + 1,
            None => 0,
        };
        if good_len < text.len() {
            warnings.push(
                Warning::new(
                    "journal_truncated",
                    format!(
                        "{}: the last line was half-written ({} bytes, the run was probably killed while writing it); it was discarded and that step will be redone",
                        path.display(),
                        text.len() - good_len
                    ),
                ),
            );
            file.set_len(good_len as u64).map_err(io_err(&path))?;
            file.seek(SeekFrom::End(0)).map_err(io_err(&path))?;
            text.truncate(good_len);
        }

        if text.is_empty() {
            let mut journal = Journal::new(path.clone(), file, HashSet::new());
            // The envelope reaches the disk with the first sync: alone it holds nothing
            // measured, and a kill keeps it either way (one write).
            journal.write_line(&Line::Envelope(Box::new(envelope.clone())))?;
            return Ok(Opened {
                journal,
                envelope: envelope.clone(),
                records: Vec::new(),
                resumed: false,
                warnings,
            });
        }

        let parsed = parse_lines(&path, &text)?;
        warnings.extend(parsed.warnings);
        let keys = parsed.records.iter().map(|r| r.key.clone()).collect();
        Ok(Opened {
            journal: Journal::new(path, file, keys),
            envelope: parsed.envelope,
            records: parsed.records,
            resumed: true,
            warnings,
        })
    }

    fn new(path: PathBuf, file: File, keys: HashSet<String>) -> Journal {
        let now = Instant::now();
        Journal {
            path,
            file,
            keys,
            sync: true,
            opened: now,
            last_sync: now,
            unsynced: false,
            syncs: 0,
        }
    }

    /// Turns off syncing altogether (for tests and bulk imports). Records are still
    /// written with one `write` each, so a killed process loses at most the line being
    /// written; only a machine crash or power loss can lose more.
    pub fn without_fsync(mut self) -> Self {
        self.sync = false;
        self
    }

    /// How many times this journal was synced so far.
    pub fn syncs(&self) -> u32 {
        self.syncs
    }

    /// Closes the journal: syncs the lines written since the last sync, unless it was
    /// opened less than [`SYNC_INTERVAL`] ago (see the module's notes). Dropping a
    /// journal does the same but cannot report a failed sync.
    pub fn close(mut self) -> Result<(), JournalError> {
        self.sync_at_close()
    }

    fn sync_at_close(&mut self) -> Result<(), JournalError> {
        if self.close_sync_due(Instant::now()) {
            self.sync_now()?;
        }
        self.unsynced = false;
        Ok(())
    }

    /// Whether a record appended at `now` is synced at once.
    fn append_sync_due(&self, now: Instant) -> bool {
        self.sync && now.saturating_duration_since(self.last_sync) >= SYNC_INTERVAL
    }

    /// Whether closing at `now` syncs.
    fn close_sync_due(&self, now: Instant) -> bool {
        self.sync && self.unsynced && now.saturating_duration_since(self.opened) >= SYNC_INTERVAL
    }

    fn sync_now(&mut self) -> Result<(), JournalError> {
        self.file.sync_data().map_err(io_err(&self.path))?;
        self.last_sync = Instant::now();
        self.unsynced = false;
        self.syncs += 1;
        Ok(())
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a record with this key is already in the journal.
    pub fn contains(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    /// Appends a record (one `write`), and syncs the journal if the last sync was at
    /// least [`SYNC_INTERVAL`] ago. Returns `false` (and writes nothing) if a record
    /// with the same key is already there.
    pub fn append(&mut self, record: &Record) -> Result<bool, JournalError> {
        if self.keys.contains(&record.key) {
            return Ok(false);
        }
        self.write_line(&Line::Record(record.clone()))?;
        self.keys.insert(record.key.clone());
        if self.append_sync_due(Instant::now()) {
            self.sync_now()?;
        }
        Ok(true)
    }

    fn write_line(&mut self, line: &Line) -> Result<(), JournalError> {
        let mut bytes = serde_json::to_vec(line).expect("journal lines serialize");
        bytes.push(b'\n');
        // One write call per line: a kill can only leave this line half-written.
        self.file.write_all(&bytes).map_err(io_err(&self.path))?;
        self.unsynced = true;
        Ok(())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // Best effort: a failed sync here has no one to report to (`close` reports it).
        let _ = self.sync_at_close();
    }
}

struct Parsed {
    envelope: Envelope,
    records: Vec<Record>,
    warnings: Vec<Warning>,
}

fn parse_lines(path: &Path, text: &[u8]) -> Result<Parsed, JournalError> {
    let text = std::str::from_utf8(text).map_err(|e| JournalError::NotABundle {
        path: path.to_path_buf(),
        reason: format!("not UTF-8 text ({e})"),
    })?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, first) = lines.next().ok_or_else(|| JournalError::NotABundle {
        path: path.to_path_buf(),
        reason: "the file is empty".into(),
    })?;
    let (envelope, mut warnings) = stream::envelope_line(path, first.as_bytes())?;
    let mut records = Vec::new();
    let mut seen = stream::Seen::default();
    for (idx, line) in lines {
        if let Some(r) = stream::record_line(
            path,
            idx + 1,
            line.as_bytes(),
            &mut |key| seen.insert(key),
            &mut warnings,
        ) {
            records.push(r);
        }
    }
    Ok(Parsed {
        envelope,
        records,
        warnings,
    })
}

/// Reads a bundle from an output folder (its `results.jsonl`), a journal file, or a
/// single JSON bundle file. Never writes. Returns what could be read and warnings.
/// A journal is read one line at a time ([`RecordReader`]); this function still
/// gathers every record, so callers that need bounded memory use the reader.
pub fn read_bundle(path: &Path) -> Result<(Bundle, Vec<Warning>), JournalError> {
    let mut reader = RecordReader::open(path)?;
    let mut records = Vec::new();
    while let Some(r) = reader.next_record()? {
        records.push(r.record);
    }
    let (envelope, warnings) = reader.finish();
    Ok((
        Bundle {
            schema_version: envelope.schema_version,
            envelope,
            records,
        },
        warnings,
    ))
}

/// Parses the bytes of a bundle: a single JSON bundle document or a journal (JSON
/// Lines); `file` names it in messages. The parser `read_bundle` uses, for tests and
/// fuzzing.
pub fn parse_bundle(file: &Path, text: &[u8]) -> Result<(Bundle, Vec<Warning>), JournalError> {
    let file = file.to_path_buf();
    // A single JSON document (a Bundle) or JSON Lines.
    if let Ok(bundle) = serde_json::from_slice::<Bundle>(text) {
        let mut warnings = Vec::new();
        if bundle.schema_version > SCHEMA_VERSION {
            warnings.push(
                Warning::new(
                    "newer_schema",
                    format!(
                        "{} was written with results schema {}, newer than this numalab's {SCHEMA_VERSION}",
                        file.display(),
                        bundle.schema_version
                    ),
                )
                .with_remedy("upgrade numalab to read every field"),
            );
        }
        return Ok((bundle, warnings));
    }
    let good_len = text.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let mut warnings = Vec::new();
    let body = if good_len < text.len() && good_len > 0 {
        warnings.push(Warning::new(
            "journal_truncated",
            format!(
                "{}: the last line is incomplete and was skipped",
                file.display()
            ),
        ));
        &text[..good_len]
    } else {
        text
    };
    let parsed = parse_lines(&file, body)?;
    warnings.extend(parsed.warnings);
    Ok((
        Bundle {
            schema_version: parsed.envelope.schema_version,
            envelope: parsed.envelope,
            records: parsed.records,
        },
        warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Host, Origin, RecordKind, Tool};

    #[derive(Serialize, Deserialize)]
    struct Sample {
        value: u32,
    }
    impl RecordKind for Sample {
        const KIND: &'static str = "test.sample";
    }

    fn envelope() -> Envelope {
        Envelope {
            schema_version: SCHEMA_VERSION,
            tool: Tool::this("0.0.0"),
            created_utc: crate::record::now_utc(),
            command: vec!["numalab".into(), "test".into()],
            config: serde_json::json!({}),
            origin: Origin::Measured,
            host: Host::unknown("00"),
        }
    }

    #[test]
    fn append_resume_and_dedup() {
        let dir = tempfile::tempdir().unwrap();
        let opened = Journal::open(dir.path(), &envelope()).unwrap();
        assert!(!opened.resumed);
        let mut j = opened.journal;
        assert!(j
            .append(&Record::new("a", Origin::Measured, &Sample { value: 1 }))
            .unwrap());
        assert!(!j
            .append(&Record::new("a", Origin::Measured, &Sample { value: 2 }))
            .unwrap());
        assert!(j
            .append(&Record::new("b", Origin::Measured, &Sample { value: 3 }))
            .unwrap());
        drop(j);
        let again = Journal::open(dir.path(), &envelope()).unwrap();
        assert!(again.resumed);
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        let values: Vec<u32> = again
            .records
            .iter()
            .map(|r| r.decode::<Sample>().unwrap().unwrap().value)
            .collect();
        assert_eq!(values, vec![1, 3]);
        assert!(again.journal.contains("a") && again.journal.contains("b"));
    }

    /// A journal of many bad lines makes at most `MAX_WARNINGS` warnings about them and
    /// one saying how many more there were; its good records are all read, a repeated
    /// key skipped as before.
    #[test]
    fn a_reader_lists_a_bounded_number_of_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), &envelope()).unwrap().journal;
        j.append(&Record::new("a", Origin::Measured, &Sample { value: 1 }))
            .unwrap();
        drop(j);
        let path = dir.path().join(JOURNAL_FILE);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        let a = serde_json::to_string(&Line::Record(Record::new(
            "a",
            Origin::Measured,
            &Sample { value: 2 },
        )))
        .unwrap();
        for _ in 0..stream::MAX_WARNINGS + 4 {
            f.write_all(b"not json\n").unwrap();
        }
        f.write_all(format!("{a}\n").as_bytes()).unwrap();
        drop(f);
        let mut reader = RecordReader::open(&path).unwrap();
        let mut values = Vec::new();
        while let Some(r) = reader.next_record().unwrap() {
            values.push(r.record.decode::<Sample>().unwrap().unwrap().value);
        }
        assert_eq!(values, vec![1], "the repeated key is skipped");
        let (_, warnings) = reader.finish();
        assert_eq!(warnings.len(), stream::MAX_WARNINGS + 1);
        let last = warnings.last().unwrap();
        assert_eq!(last.code, "warnings_left_out");
        assert!(
            last.message.contains(" 5 more problem(s)"),
            "{}",
            last.message
        );
    }

    #[test]
    fn half_written_line_is_cut_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), &envelope()).unwrap().journal;
        j.append(&Record::new("a", Origin::Measured, &Sample { value: 1 }))
            .unwrap();
        drop(j);
        let path = dir.path().join(JOURNAL_FILE);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"line\":\"record\",\"key\":\"b\",\"ki")
            .unwrap();
        drop(f);
        let opened = Journal::open(dir.path(), &envelope()).unwrap();
        assert_eq!(opened.records.len(), 1);
        assert_eq!(opened.warnings.len(), 1);
        assert_eq!(opened.warnings[0].code, "journal_truncated");
        let mut j = opened.journal;
        assert!(j
            .append(&Record::new("b", Origin::Measured, &Sample { value: 2 }))
            .unwrap());
        drop(j);
        let (bundle, warnings) = read_bundle(dir.path()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(bundle.records.len(), 2);
    }

    #[test]
    fn syncs_at_most_once_a_second_and_not_for_a_run_shorter_than_that() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), &envelope()).unwrap().journal;
        let t0 = j.opened;
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // The envelope alone: nothing measured, nothing to sync at once.
        assert!(j.unsynced);
        assert!(!j.append_sync_due(at(10)) && !j.append_sync_due(at(999)));
        assert!(j.append_sync_due(at(1000)));
        // A run closed within its first second is not synced; after it, it is.
        assert!(!j.close_sync_due(at(400)));
        assert!(j.close_sync_due(at(1500)));
        // After a sync the clock restarts from it, and a close with nothing new to
        // write does not sync again.
        j.sync_now().unwrap();
        assert_eq!(j.syncs(), 1);
        let last = j.last_sync;
        assert!(!j.close_sync_due(last + Duration::from_secs(5)));
        assert!(!j.append_sync_due(last + Duration::from_millis(500)));
        assert!(j.append_sync_due(last + Duration::from_secs(1)));
        // Switched off: never.
        j.append(&Record::new("a", Origin::Measured, &Sample { value: 1 }))
            .unwrap();
        let j = j.without_fsync();
        assert!(!j.append_sync_due(last + Duration::from_secs(60)));
        assert!(!j.close_sync_due(t0 + Duration::from_secs(60)));
    }

    #[test]
    fn a_journal_open_for_more_than_a_second_syncs_on_append_and_close() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), &envelope()).unwrap().journal;
        // As if opened two seconds ago (no test waits for the clock).
        let back = Duration::from_secs(2);
        j.opened = j.opened.checked_sub(back).unwrap();
        j.last_sync = j.opened;
        j.append(&Record::new("a", Origin::Measured, &Sample { value: 1 }))
            .unwrap();
        assert_eq!(j.syncs(), 1, "the first record, two seconds in, is synced");
        assert!(!j.unsynced);
        j.last_sync = j.last_sync.checked_sub(back).unwrap();
        j.append(&Record::new("b", Origin::Measured, &Sample { value: 2 }))
            .unwrap();
        assert_eq!(j.syncs(), 2);
        // A record within the second after a sync waits for the close (the sync set an
        // hour ahead, so that no pause of this test can reach the second).
        j.last_sync = Instant::now() + Duration::from_secs(3600);
        j.append(&Record::new("c", Origin::Measured, &Sample { value: 3 }))
            .unwrap();
        assert!(j.unsynced);
        j.close().unwrap();
        let (bundle, _) = read_bundle(dir.path()).unwrap();
        assert_eq!(bundle.records.len(), 3);
    }

    #[test]
    fn second_writer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = Journal::open(dir.path(), &envelope()).unwrap();
        let second = Journal::open(dir.path(), &envelope());
        assert!(matches!(second, Err(JournalError::Locked { .. })));
        drop(first);
        assert!(Journal::open(dir.path(), &envelope()).is_ok());
    }

    #[test]
    fn not_a_journal_and_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        std::fs::write(&p, "hello\n").unwrap();
        let err = read_bundle(&p).unwrap_err();
        assert!(err.to_string().contains("not JSON"), "{err}");
        assert_eq!(err.class(), ErrorClass::Input);

        let mut env = serde_json::to_value(Line::Envelope(Box::new(envelope()))).unwrap();
        env["schema_version"] = serde_json::json!(SCHEMA_VERSION + 1);
        std::fs::write(&p, format!("{env}\n")).unwrap();
        let (_, warnings) = read_bundle(&p).unwrap();
        assert_eq!(warnings[0].code, "newer_schema");
    }

    #[test]
    fn a_line_over_the_cap_is_skipped_with_a_warning_and_the_rest_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), &envelope()).unwrap().journal;
        j.append(&Record::new("a", Origin::Measured, &Sample { value: 1 }))
            .unwrap();
        let mut big = Record::new("big", Origin::Measured, &Sample { value: 2 });
        big.data = serde_json::json!({ "value": 2, "pad": "x".repeat(10_000) });
        j.append(&big).unwrap();
        j.append(&Record::new("c", Origin::Measured, &Sample { value: 3 }))
            .unwrap();
        drop(j);
        let mut reader = RecordReader::open_with_cap(dir.path(), 4096).unwrap();
        assert!(reader.streaming());
        let mut got = Vec::new();
        while let Some(r) = reader.next_record().unwrap() {
            got.push(r);
        }
        let keys: Vec<&str> = got.iter().map(|r| r.record.key.as_str()).collect();
        assert_eq!(keys, ["a", "c"]);
        let (_, warnings) = reader.finish();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].code, "record_too_large");
        assert!(
            warnings[0]
                .message
                .contains("record 2 skipped: larger than 4 KiB"),
            "{}",
            warnings[0].message
        );
        // The spans read the records back.
        let mut spans = SpanReader::open(&dir.path().join(JOURNAL_FILE)).unwrap();
        for r in &got {
            assert_eq!(spans.record(r.span.unwrap()).unwrap(), r.record);
        }
        // With the default cap everything is read, as read_bundle does.
        let (bundle, warnings) = read_bundle(dir.path()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(bundle.records.len(), 3);
    }

    #[test]
    fn streaming_read_matches_parse_bundle() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        let env = serde_json::to_string(&Line::Envelope(Box::new(envelope()))).unwrap();
        let rec = |k: &str, v: u32| {
            serde_json::to_string(&Line::Record(Record::new(
                k,
                Origin::Measured,
                &Sample { value: v },
            )))
            .unwrap()
        };
        let text = format!(
            "{env}\n\n{}\nnot json\n{}\n{env}\n{}\n{{\"line\":\"rec",
            rec("a", 1),
            rec("a", 2),
            rec("b", 3)
        );
        std::fs::write(&p, &text).unwrap();
        let (streamed, mut w1) = read_bundle(&p).unwrap();
        let (whole, mut w2) = parse_bundle(&p, text.as_bytes()).unwrap();
        assert_eq!(streamed, whole);
        let codes = |w: &mut Vec<Warning>| {
            let mut c: Vec<String> = w.iter().map(|w| w.message.clone()).collect();
            c.sort();
            c
        };
        assert_eq!(codes(&mut w1), codes(&mut w2));
        assert_eq!(w1.len(), 4, "{w1:?}");
        // A bundle file (one JSON document, the --json output) is read whole.
        let doc = dir.path().join("b.json");
        std::fs::write(&doc, serde_json::to_string_pretty(&whole).unwrap()).unwrap();
        let reader = RecordReader::open(&doc).unwrap();
        assert!(!reader.streaming());
        assert_eq!(read_bundle(&doc).unwrap().0, whole);
    }
}
