//! Reading the bundles a report or a comparison is made of: output folders, journals or
//! single-document bundle files, each with a label people recognise (the host name,
//! else the file name) and the warnings met while reading it (a cut-off last line, a
//! newer schema, unreadable lines). A file that cannot be read at all is an error that
//! names it and says what to do; callers show the other bundles anyway.
//!
//! A journal is read one line at a time and only a bounded index of it is kept: the
//! first [`PER_KIND`] records of each kind (key, kind, origin, time and warnings, where
//! its line is in the file and whether it decodes), at most [`INDEX_BYTES`] of them in
//! all, and for every record its count, size and readability per kind ([`KindCount`])
//! and its warnings tallied ([`RecordWarning`]). The payloads are read back from the
//! file when a section asks for the records of one kind ([`Loaded::records_of`]) or for
//! one record ([`Payloads`]); what must see every record reads the journal again
//! ([`Loaded::each_record`], [`Loaded::each_in_key_order`]). So the memory a report, a
//! comparison or an ingest needs is a constant plus the largest record, whatever the
//! number or the size of the journal's records (the reader finds the repeated keys of
//! a journal of [`INDEX_FROM`] bytes or more by sorting its keys on disk first:
//! [`numalab_schema::journal::DUPLICATES_ON_DISK_FROM`]). A bundle file (one JSON document) and a bundle
//! built in memory keep their records whole.

use crate::decodes::{decode_error, decodes_line};
pub use crate::decodes::{decodes, Unreadable};
use numalab_schema::journal::{FirstPass, JournalError, RecordReader, Span, SpanReader};
use numalab_schema::record::SCHEMA_VERSION;
use numalab_schema::{Bundle, Classify, ErrorClass, Record, RecordKind, Warning};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// A bundle read from disk (or built in memory), with its label.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Where it came from (empty when built in memory).
    pub path: PathBuf,
    /// Short name for tables and headings: the host name, made unique.
    pub label: String,
    /// The bundle: the envelope and every record. For a journal read from disk, the
    /// index: the first [`PER_KIND`] records of each kind, without their payloads
    /// (`data` is null: [`Loaded::records_of`] and [`Loaded::payloads`] read them from
    /// the file); [`Loaded::record_count`] and [`Loaded::kinds`] count every record.
    pub bundle: Bundle,
    /// Problems met while reading it.
    pub warnings: Vec<Warning>,
    /// Where the payloads are.
    source: Source,
}

/// Where the payloads of a [`Loaded`] are.
#[derive(Debug, Clone)]
enum Source {
    /// In `bundle.records`.
    Memory,
    /// In a journal: each record's line, and whether it decodes (as
    /// [`decodes`] said while the journal was read); for a large journal, what its
    /// first pass found (its repeated keys, its records in key order), so that reading
    /// it again does not list its keys again.
    Journal {
        file: PathBuf,
        spans: Vec<Span>,
        decodes: Vec<Option<bool>>,
        summary: Summary,
        pass: Option<FirstPass>,
    },
}

/// What was counted of every record of a journal kept as an index.
#[derive(Debug, Clone, Default)]
struct Summary {
    total: usize,
    kinds: Vec<KindCount>,
    warnings: Vec<RecordWarning>,
}

/// One record kind of a bundle, counted over every record (not only the indexed ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindCount {
    /// The kind.
    pub kind: String,
    /// How many records.
    pub count: usize,
    /// The bytes of their lines in the journal (0 when they are in memory).
    pub bytes: u64,
    /// How many of a kind this numalab knows do not decode (newer or damaged).
    pub damaged: usize,
    /// A kind this numalab does not know.
    pub unknown: bool,
    /// The place (in the journal's order) of its first record that cannot be shown.
    first_bad: Option<usize>,
    /// A known kind's first record that does not decode: its key and serde's reason.
    first_damage: Option<(String, String)>,
}

/// A warning carried by records (same code and message), the kinds that carry it and
/// how many records do.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordWarning {
    /// The warning (as the first record carrying it has it).
    pub warning: Warning,
    /// The kinds of the records carrying it, in the order met.
    pub kinds: Vec<String>,
    /// How many records carry it.
    pub count: usize,
}

/// Reads the payloads of a [`Loaded`]'s records one at a time ([`Loaded::payloads`]).
#[derive(Debug)]
pub struct Payloads<'a> {
    loaded: &'a Loaded,
    file: Option<SpanReader>,
}

impl<'a> Payloads<'a> {
    /// Record `i` of `bundle.records` with its payload: borrowed when the bundle is in
    /// memory (or the record was given a payload since), read from the journal
    /// otherwise (`None` if it cannot be read back: the journal was rewritten since,
    /// or the records were changed and its line is not this record's).
    pub fn get(&mut self, i: usize) -> Option<Cow<'a, Record>> {
        let here = self.loaded.bundle.records.get(i)?;
        match &self.loaded.source {
            Source::Journal { file, spans, .. } if here.data.is_null() => {
                let span = *spans.get(i)?;
                if self.file.is_none() {
                    self.file = SpanReader::open(file).ok();
                }
                let r = self.file.as_mut()?.record(span).ok()?;
                (r.key == here.key).then_some(Cow::Owned(r))
            }
            _ => Some(Cow::Borrowed(here)),
        }
    }

    /// Record `i`'s payload decoded as `T` ([`Record::decode`] of [`Payloads::get`]),
    /// read from the journal straight into `T` when it is there: the payload's JSON
    /// tree (for a large record, several times its line) is never built.
    pub fn decode<T: RecordKind>(&mut self, i: usize) -> Option<Result<T, serde_json::Error>> {
        let here = self.loaded.bundle.records.get(i)?;
        match &self.loaded.source {
            Source::Journal { file, spans, .. } if here.data.is_null() => {
                if here.kind != T::KIND {
                    return None;
                }
                let span = *spans.get(i)?;
                if self.file.is_none() {
                    self.file = SpanReader::open(file).ok();
                }
                let (key, t) = self.file.as_mut()?.decode::<T>(span).ok()??;
                (key == here.key).then_some(Ok(t))
            }
            _ => here.decode::<T>(),
        }
    }
}

/// Why a bundle could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct LoadError {
    /// The whole message: the input, what is wrong, the remedy.
    pub message: String,
    class: ErrorClass,
}

impl Classify for LoadError {
    fn class(&self) -> ErrorClass {
        self.class
    }
}

impl Loaded {
    /// A bundle already in memory.
    pub fn from_bundle(label: &str, bundle: Bundle) -> Self {
        Loaded {
            path: PathBuf::new(),
            label: label.into(),
            bundle,
            warnings: Vec::new(),
            source: Source::Memory,
        }
    }

    /// Records of one type, decoded, with their records (for a journal read from disk,
    /// the record without its payload; the payloads of this kind are read from the
    /// file, one at a time). Records that fail to decode are skipped.
    ///
    /// At most [`PER_KIND`] records are returned: the first ones of the kind, in the
    /// journal's order (the reading stops there), so that what a section, a finding or
    /// a figure holds of one kind is bounded whatever the journal's size;
    /// [`Loaded::over_bound`] says which kinds have more, and how many.
    pub fn records_of<T: RecordKind>(&self) -> Vec<(&Record, T)> {
        self.records_of_bounded::<T>(PER_KIND)
    }

    /// [`Loaded::records_of`] with another bound (`usize::MAX`: every record held: all
    /// of a bundle in memory, the indexed ones of a journal, [`PER_KIND`] at most).
    pub fn records_of_bounded<T: RecordKind>(&self, bound: usize) -> Vec<(&Record, T)> {
        self.iter_of_bounded::<T>(bound).collect()
    }

    /// The records of [`Loaded::records_of`], decoded one at a time as the iterator is
    /// advanced: a loop over them holds one (a 2,000-CPU `c2c.matrix` is 32 MB), not
    /// all of them.
    pub fn iter_of<T: RecordKind>(&self) -> impl Iterator<Item = (&Record, T)> + '_ {
        self.iter_of_bounded::<T>(PER_KIND)
    }

    fn iter_of_bounded<T: RecordKind>(
        &self,
        bound: usize,
    ) -> impl Iterator<Item = (&Record, T)> + '_ {
        let mut payloads = self.payloads();
        self.bundle
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.kind == T::KIND)
            .filter_map(move |(i, r)| match payloads.decode::<T>(i) {
                Some(Ok(t)) => Some((r, t)),
                _ => None,
            })
            .take(bound)
    }

    /// Visits every record of one type in the journal's order, each decoded, one in
    /// memory at a time (a streaming pass: an aggregate over every record of a kind
    /// holds no more than the aggregate; past the indexed records of a journal, the
    /// journal is read again). The indexed records of a journal are decoded straight
    /// from their lines ([`Payloads::decode`]) and visited as indexed (without their
    /// payload). `visit` returns whether to go on.
    pub fn each_of<T: RecordKind>(&self, mut visit: impl FnMut(&Record, T) -> bool) {
        let mut decoded = |r: &Record, t: Option<Result<T, serde_json::Error>>| match t {
            Some(Ok(t)) => visit(r, t),
            _ => true,
        };
        let Source::Journal { spans, .. } = &self.source else {
            self.each_record(T::KIND, &mut |r| decoded(r, r.decode::<T>()));
            return;
        };
        let mut payloads = self.payloads();
        let (mut last, mut seen) = (None, 0usize);
        for (i, r) in self.bundle.records.iter().enumerate() {
            if r.kind != T::KIND {
                continue;
            }
            seen += 1;
            last = spans.get(i).map(|s| s.offset);
            if !decoded(r, payloads.decode::<T>(i)) {
                return;
            }
        }
        self.read_on(T::KIND, seen, last, &mut |r| decoded(r, r.decode::<T>()));
    }

    /// Visits every record of `kind` with its payload, in the journal's order, one in
    /// memory at a time; `visit` returns whether to go on. The indexed records are read
    /// back from their lines; a kind with more records than were indexed is read on
    /// from the journal, again from its start. Returns `false` if a record could not be
    /// read back (the journal changed since it was read).
    pub fn each_record(&self, kind: &str, visit: &mut dyn FnMut(&Record) -> bool) -> bool {
        let mut payloads = self.payloads();
        let mut last: Option<u64> = None;
        let (mut seen, mut ok) = (0usize, true);
        for (i, r) in self.bundle.records.iter().enumerate() {
            if r.kind != kind {
                continue;
            }
            seen += 1;
            let Some(full) = payloads.get(i) else {
                ok = false;
                continue;
            };
            if let Source::Journal { spans, .. } = &self.source {
                last = spans.get(i).map(|s| s.offset);
            }
            if !visit(&full) {
                return ok;
            }
        }
        let rest = self.read_on(kind, seen, last, visit);
        ok && rest
    }

    /// Visits the records of `kind` past the `seen` indexed ones (the last of them at
    /// offset `last`), read on from the journal; `false` if it could not be read.
    fn read_on(
        &self,
        kind: &str,
        seen: usize,
        last: Option<u64>,
        visit: &mut dyn FnMut(&Record) -> bool,
    ) -> bool {
        let Source::Journal {
            file,
            summary,
            pass,
            ..
        } = &self.source
        else {
            return true;
        };
        let count = summary
            .kinds
            .iter()
            .find(|k| k.kind == kind)
            .map_or(0, |k| k.count);
        if seen >= count {
            return true;
        }
        // The rest of the kind: read on from the journal (its keys as listed when it
        // was read first).
        let Ok(mut reader) = RecordReader::open_after(file, pass.as_ref()) else {
            return false;
        };
        loop {
            match reader.next_record() {
                Ok(Some(r)) => {
                    let after = match (r.span, last) {
                        (Some(s), Some(l)) => s.offset > l,
                        _ => true,
                    };
                    if after && r.record.kind == kind && !visit(&r.record) {
                        return true;
                    }
                }
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    }

    /// Visits every record with its payload in the order of their keys, one in memory
    /// at a time (for a journal kept as an index, the keys are sorted on disk:
    /// [`crate::keyorder`]); `visit` returns whether to go on. Returns `false` if a
    /// record could not be read back.
    pub fn each_in_key_order(&self, visit: &mut dyn FnMut(&Record) -> bool) -> bool {
        match &self.source {
            Source::Memory => {
                let records = &self.bundle.records;
                let mut order: Vec<usize> = (0..records.len()).collect();
                order.sort_by(|&a, &b| records[a].key.cmp(&records[b].key));
                for i in order {
                    if !visit(&records[i]) {
                        break;
                    }
                }
                true
            }
            Source::Journal { file, pass, .. } => {
                crate::keyorder::each_in_key_order(file, pass.as_ref(), visit)
            }
        }
    }

    /// How many records the bundle has (every one, indexed or not).
    pub fn record_count(&self) -> usize {
        match &self.source {
            Source::Memory => self.bundle.records.len(),
            Source::Journal { summary, .. } => summary.total,
        }
    }

    /// Each record kind with its counts, in the order the kinds first appear, counted
    /// over every record (for a journal, as it was read: nothing decoded again).
    pub fn kinds(&self) -> Vec<KindCount> {
        match &self.source {
            Source::Journal { summary, .. } => summary.kinds.clone(),
            Source::Memory => {
                let mut kinds: Vec<KindCount> = Vec::new();
                for (i, r) in self.bundle.records.iter().enumerate() {
                    let p = count_kind(&mut kinds, r, (i, decodes(r), 0), false);
                    first_damage(p.map(|p| &mut kinds[p]), i, || Some(r.clone()));
                }
                kinds
            }
        }
    }

    /// The warnings the records carry, each (code and message) once with the kinds
    /// carrying it and how many records do, in the order met.
    pub fn record_warnings(&self) -> Vec<RecordWarning> {
        match &self.source {
            Source::Journal { summary, .. } => summary.warnings.clone(),
            Source::Memory => {
                let mut tally = Tally::new(usize::MAX);
                for r in &self.bundle.records {
                    tally.add(r);
                }
                tally.rows
            }
        }
    }

    /// Each kind with more than [`PER_KIND`] records and its record count, in the order
    /// the kinds first appear (counted from the index, nothing decoded), but for the
    /// [`STREAMED_KINDS`].
    pub fn over_bound(&self) -> Vec<(String, usize)> {
        self.kinds()
            .into_iter()
            .filter(|k| k.count > PER_KIND && !STREAMED_KINDS.contains(&k.kind.as_str()))
            .map(|k| (k.kind, k.count))
            .collect()
    }

    /// The records that cannot be shown, a kind at a time, in the order the first of
    /// each appears.
    pub fn unreadable(&self) -> Vec<Unreadable> {
        let mut bad: Vec<(usize, Unreadable)> = self
            .kinds()
            .into_iter()
            .filter_map(|k| {
                let at = k.first_bad?;
                let count = if k.unknown { k.count } else { k.damaged };
                let u = Unreadable {
                    kind: k.kind,
                    count,
                    damaged: !k.unknown,
                    first: k.first_damage,
                };
                Some((at, u))
            })
            .collect();
        bad.sort_by_key(|b| b.0);
        bad.into_iter().map(|(_, u)| u).collect()
    }

    /// A reader of the records' payloads, one at a time.
    pub fn payloads(&self) -> Payloads<'_> {
        Payloads {
            loaded: self,
            file: None,
        }
    }

    /// Whether record `i` decodes ([`decodes`]).
    pub fn decodes(&self, i: usize) -> Option<bool> {
        match &self.source {
            Source::Memory => self.bundle.records.get(i).and_then(decodes),
            Source::Journal { decodes, .. } => match self.bundle.records.get(i) {
                Some(r) if !r.data.is_null() => self::decodes(r),
                _ => decodes.get(i).copied().flatten(),
            },
        }
    }

    /// The length in bytes of record `i`'s line in the journal (`None` when its payload
    /// is in memory).
    pub fn stored_len(&self, i: usize) -> Option<u64> {
        match &self.source {
            Source::Journal { spans, .. }
                if self.bundle.records.get(i).is_some_and(|r| r.data.is_null()) =>
            {
                spans.get(i).map(|s| s.len)
            }
            _ => None,
        }
    }

    /// Whether the payloads are read from the journal when asked ([`load_indexed`]).
    pub fn indexed(&self) -> bool {
        matches!(self.source, Source::Journal { .. })
    }

    /// The whole bundle, every record with its payload, in memory (for callers that need
    /// it so). A journal kept as an index is read again, one record at a time, and every
    /// record kept (not only the indexed ones); one of [`INDEX_FROM`] bytes or more is
    /// refused: too large to hold whole (read it with [`Loaded::each_record`] or
    /// [`Loaded::payloads`] instead).
    pub fn to_bundle(&self) -> Result<Bundle, LoadError> {
        let Source::Journal { file, .. } = &self.source else {
            return Ok(self.bundle.clone());
        };
        let input = |message: String| LoadError {
            message,
            class: ErrorClass::Input,
        };
        let size = std::fs::metadata(file)
            .map_err(|e| {
                input(format!(
                    "{}: {}; check that the journal is still there",
                    file.display(),
                    numalab_schema::input::io_reason(&e)
                ))
            })?
            .len();
        if size >= INDEX_FROM {
            return Err(input(format!(
                "{}: {} is too large to hold whole in memory (the limit is {}); its records are read one at a time instead",
                file.display(),
                numalab_schema::units::bytes(size),
                numalab_schema::units::bytes(INDEX_FROM)
            )));
        }
        let (bundle, _) = numalab_schema::journal::read_bundle(file).map_err(|e| {
            input(format!(
                "{e}; the journal changed since it was read: read it again"
            ))
        })?;
        Ok(bundle)
    }

    /// Whether the bundle was written by a newer numalab than this one.
    pub fn newer_schema(&self) -> bool {
        self.bundle.schema_version > SCHEMA_VERSION
    }
}

/// The most records of one kind that [`Loaded::records_of`] gives (the first ones, in
/// the journal's order): what the report's tables, charts and findings, and the figures
/// of `compare` and `db ingest`, are made of. A kind with more records is named in the
/// report's problems with its count ([`over_bound_note`]); the rest are in the journal.
/// A thousand is more than any one command writes of a kind (an `evaluate` writes tens),
/// so that only journals appended to many times reach it.
pub const PER_KIND: usize = 1000;

/// Kinds that one command writes by the thousand (`c2c` writes a `c2c.pair` record per
/// pair of CPUs) and whose section reads them all in one streaming pass
/// ([`Loaded::each_of`]: exact counts, the first rows shown); their figures use them only
/// when a matrix has fewer than 3 pairs. [`Loaded::over_bound`] leaves them out.
pub const STREAMED_KINDS: &[&str] = &["c2c.pair"];

/// The line saying that a kind has more records than [`PER_KIND`].
pub fn over_bound_note(label: &str, kind: &str, n: usize) -> String {
    format!(
        "{label}: {n} records of kind {kind}; the tables, charts, findings and figures use the first {PER_KIND} of them (in the journal's order), {} more are in the journal (`jq` reads them all)",
        n - PER_KIND
    )
}

/// Journals of at least this size (32 MiB) are kept as an index, their payloads read
/// back when asked; smaller ones are kept whole (at most a few hundred MB decoded, and
/// no file read twice).
pub const INDEX_FROM: u64 = 32 << 20;

/// Reads one bundle: an output folder, a `results.jsonl` journal or a bundle file. A
/// journal of [`INDEX_FROM`] bytes or more is kept as an index ([`load_indexed`]).
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    load_as(path, None)
}

/// [`load`], a journal kept as an index whatever its size: its payloads are read from
/// the file when asked.
pub fn load_indexed(path: &Path) -> Result<Loaded, LoadError> {
    load_as(path, Some(true))
}

fn load_as(path: &Path, index: Option<bool>) -> Result<Loaded, LoadError> {
    let read = read(path, index);
    // Ctrl-C or SIGTERM while reading: the reading stopped at the next record.
    if numalab_schema::interrupt::requested() {
        return Err(LoadError {
            message: format!(
                "interrupted (Ctrl-C, SIGTERM) while reading {}; nothing was written",
                path.display()
            ),
            class: ErrorClass::Interrupted,
        });
    }
    let (bundle, warnings, source) = read.map_err(|e| {
        let (class, message) = match &e {
            JournalError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => (
                ErrorClass::Input,
                format!("{}: no such file or folder; give an output folder of numalab (with results.jsonl) or a bundle file", path.display()),
            ),
            JournalError::Io { .. } => (ErrorClass::Input, format!("{e}; check the path and its permissions")),
            JournalError::NotABundle { .. } => (
                e.class(),
                format!("{e}; give an output folder of numalab (with results.jsonl), a results.jsonl file or a bundle written with --json"),
            ),
            JournalError::Locked { .. }
            | JournalError::NotAFolder { .. }
            | JournalError::OtherMachine { .. } => {
                (e.class(), e.to_string())
            }
        };
        LoadError { message, class }
    })?;
    let label = bundle
        .envelope
        .host
        .hostname
        .clone()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| {
            path.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.display().to_string())
        });
    Ok(Loaded {
        path: path.to_path_buf(),
        label,
        bundle,
        warnings,
        source,
    })
}

/// The most distinct record kinds counted and indexed in a journal (numalab writes
/// about forty); the records of further kinds, or of a kind named with more than
/// [`MAX_KIND_NAME`] bytes, are counted in the total and named in a warning.
pub const MAX_KINDS: usize = 256;

/// The longest kind name counted as a kind of its own (bytes).
pub const MAX_KIND_NAME: usize = 200;

/// The most the index of a journal holds (its records without payloads: keys, times,
/// warnings, about 200 bytes a record besides): 32 MiB. Records past it are counted but
/// not indexed, with a warning; real journals stay far below ([`PER_KIND`] records of
/// each of a few tens of kinds).
pub const INDEX_BYTES: usize = 32 << 20;

/// The most text (codes, messages, remedies, kinds) the tally of the distinct warnings
/// of a journal's records holds: 8 MiB (an older 160-CPU core-to-core journal, one
/// message per pair, takes about 4); warnings with further messages are counted in a
/// warning.
pub const TALLY_BYTES: usize = 8 << 20;

/// Counts record `r` (the `at`-th, decoding as `d`, its line `bytes` long) in `kinds`;
/// the place of its kind, `None` when `bounded` and it is past [`MAX_KINDS`] (or its
/// name longer than [`MAX_KIND_NAME`]).
fn count_kind(
    kinds: &mut Vec<KindCount>,
    r: &Record,
    (at, d, bytes): (usize, Option<bool>, u64),
    bounded: bool,
) -> Option<usize> {
    let p = match kinds.iter().position(|k| k.kind == r.kind) {
        Some(p) => p,
        None if !bounded || (kinds.len() < MAX_KINDS && r.kind.len() <= MAX_KIND_NAME) => {
            kinds.push(KindCount {
                kind: r.kind.clone(),
                count: 0,
                bytes: 0,
                damaged: 0,
                unknown: d.is_none(),
                first_bad: None,
                first_damage: None,
            });
            kinds.len() - 1
        }
        None => return None,
    };
    let k = &mut kinds[p];
    k.count += 1;
    k.bytes += bytes;
    if d == Some(false) {
        k.damaged += 1;
    }
    if d != Some(true) && k.first_bad.is_none() {
        k.first_bad = Some(at);
    }
    Some(p)
}

/// Notes serde's reason for the record at place `at` (given by `read`) when it is the first
/// record of its known kind `k` that does not decode.
fn first_damage(k: Option<&mut KindCount>, at: usize, read: impl FnOnce() -> Option<Record>) {
    let Some(k) = k else { return };
    if k.unknown || k.first_bad != Some(at) || k.first_damage.is_some() {
        return;
    }
    let why = match read() {
        Some(r) => match decode_error(&r) {
            Some(Err(why)) => (r.key, why),
            _ => return,
        },
        None => return,
    };
    k.first_damage = Some(why);
}

/// The records' warnings, each distinct one once ([`RecordWarning`]), within
/// [`TALLY_BYTES`].
struct Tally {
    rows: Vec<RecordWarning>,
    limit: usize,
    at: std::collections::HashMap<(String, String), usize>,
    bytes: usize,
    /// Warnings met past the bound, not tallied.
    left_out: usize,
}

impl Tally {
    fn new(limit: usize) -> Self {
        Tally {
            rows: Vec::new(),
            limit,
            at: std::collections::HashMap::new(),
            bytes: 0,
            left_out: 0,
        }
    }

    fn add(&mut self, r: &Record) {
        for w in &r.warnings {
            match self.at.get(&(w.code.clone(), w.message.clone())) {
                Some(&i) => {
                    let row = &mut self.rows[i];
                    row.count += 1;
                    if !row.kinds.contains(&r.kind) {
                        self.bytes += r.kind.len();
                        row.kinds.push(r.kind.clone());
                    }
                }
                None => {
                    let cost = 2 * (w.code.len() + w.message.len())
                        + w.remedy.as_ref().map_or(0, String::len)
                        + r.kind.len()
                        + 64;
                    if self.bytes + cost > self.limit {
                        self.left_out += 1;
                        continue;
                    }
                    self.bytes += cost;
                    self.at
                        .insert((w.code.clone(), w.message.clone()), self.rows.len());
                    self.rows.push(RecordWarning {
                        warning: w.clone(),
                        kinds: vec![r.kind.clone()],
                        count: 1,
                    });
                }
            }
        }
    }
}

/// The bytes a record takes in the index (besides its payload, which is not kept).
fn header_bytes(r: &Record) -> usize {
    let warnings: usize = r
        .warnings
        .iter()
        .map(|w| w.code.len() + w.message.len() + w.remedy.as_ref().map_or(0, String::len) + 80)
        .sum();
    std::mem::size_of::<Record>()
        + std::mem::size_of::<Span>()
        + 8
        + r.key.len()
        + r.kind.len()
        + r.time_utc.len()
        + warnings
}

/// Reads a bundle: a journal line by line into a bounded index (each payload decoded
/// once, to know whether it decodes, then dropped; the first [`PER_KIND`] records of
/// each kind kept without it, every record counted), a bundle file whole.
fn read(path: &Path, index: Option<bool>) -> Result<(Bundle, Vec<Warning>, Source), JournalError> {
    let mut reader = RecordReader::open(path)?;
    let file = reader.file().to_path_buf();
    let streaming = reader.streaming()
        && index
            .unwrap_or_else(|| std::fs::metadata(&file).map_or(true, |m| m.len() >= INDEX_FROM));
    // The payloads are not kept in an index: a large one is not even made into a tree
    // of values, only decoded from its line to know that it decodes.
    let mut lines: Option<SpanReader> = None;
    if streaming {
        reader.skip_payloads_from(PAYLOAD_FROM_LINE);
    }
    let (mut records, mut spans, mut decodes) = (Vec::new(), Vec::new(), Vec::new());
    let mut summary = Summary::default();
    let mut tally = Tally::new(TALLY_BYTES);
    let mut kept_of: Vec<usize> = Vec::new();
    let (mut index_bytes, mut other_kinds, mut over_index) = (0usize, 0usize, 0usize);
    while let Some(r) = reader.next_record()? {
        // Ctrl-C or SIGTERM: stop here ([`load_as`] says so).
        if numalab_schema::interrupt::requested() {
            break;
        }
        let mut record = r.record;
        let (true, Some(span)) = (streaming, r.span) else {
            records.push(record);
            continue;
        };
        let d = if reader.payload_skipped() {
            if lines.is_none() {
                lines = Some(SpanReader::open(&file)?);
            }
            lines
                .as_mut()
                .and_then(|l| decodes_line(l, &record.kind, span))
        } else {
            self::decodes(&record)
        };
        let at = summary.total;
        summary.total += 1;
        tally.add(&record);
        let Some(p) = count_kind(&mut summary.kinds, &record, (at, d, span.len), true) else {
            other_kinds += 1;
            continue;
        };
        // The first damaged record of a kind is read back whole once, for serde's reason.
        first_damage(Some(&mut summary.kinds[p]), at, || match &record.data {
            serde_json::Value::Null => lines.as_mut().and_then(|l| l.record(span).ok()),
            _ => Some(record.clone()),
        });
        if kept_of.len() <= p {
            kept_of.resize(p + 1, 0);
        }
        if kept_of[p] >= PER_KIND {
            continue;
        }
        // Once full, the index takes no more records (so that what it holds of each
        // kind is the kind's first records, which [`Loaded::each_record`] reads on from).
        let cost = header_bytes(&record);
        if over_index > 0 || index_bytes + cost > INDEX_BYTES {
            over_index += 1;
            continue;
        }
        index_bytes += cost;
        kept_of[p] += 1;
        decodes.push(d);
        spans.push(span);
        record.data = serde_json::Value::Null;
        records.push(record);
    }
    let pass = reader.first_pass().cloned();
    let (envelope, mut warnings) = reader.finish();
    let source = if streaming {
        let name = file.display();
        if other_kinds > 0 {
            warnings.push(Warning::new(
                "kinds_not_indexed",
                format!("{name}: {other_kinds} record(s) of kinds past the first {MAX_KINDS} (or named with more than {MAX_KIND_NAME} bytes) are counted but not shown"),
            ).with_remedy("`jq` reads them from the journal"));
        }
        if over_index > 0 {
            warnings.push(Warning::new(
                "records_not_indexed",
                format!("{name}: {over_index} record(s) are counted but not shown: the index of a journal holds at most {} of keys, times and warnings", numalab_schema::units::bytes(INDEX_BYTES as u64)),
            ).with_remedy("`jq` reads them from the journal"));
        }
        if tally.left_out > 0 {
            warnings.push(Warning::new(
                "warnings_not_tallied",
                format!("{name}: {} warning(s) carried by records are not in the Warnings table: their distinct messages are over the {} it holds", tally.left_out, numalab_schema::units::bytes(TALLY_BYTES as u64)),
            ).with_remedy("`jq` reads them from the journal"));
        }
        summary.warnings = tally.rows;
        Source::Journal {
            file,
            spans,
            decodes,
            summary,
            pass,
        }
    } else {
        Source::Memory
    };
    let bundle = Bundle {
        schema_version: envelope.schema_version,
        envelope,
        records,
    };
    Ok((bundle, warnings, source))
}

/// The length of line (1 MiB) from which a journal kept as an index reads a record
/// without its payload ([`RecordReader::skip_payloads_from`]), then decodes the payload
/// straight from the line to know whether it decodes.
pub const PAYLOAD_FROM_LINE: u64 = 1 << 20;

/// Makes labels unique: bundles of the same host get the folder or file name added
/// ("node1 (run-a)"), then a number if that is not enough.
pub fn unique_labels(set: &mut [Loaded]) {
    let n = set.len();
    for i in 0..n {
        let same: Vec<usize> = (0..n).filter(|&j| set[j].label == set[i].label).collect();
        if same.len() < 2 {
            continue;
        }
        for j in same {
            let name = set[j]
                .path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !name.is_empty() && !set[j].label.contains(&name) {
                set[j].label = format!("{} ({name})", set[j].label);
            }
        }
    }
    for i in 0..n {
        let mut k = 1;
        for j in i + 1..n {
            if set[j].label == set[i].label {
                k += 1;
                set[j].label = format!("{} #{k}", set[j].label);
            }
        }
    }
}

/// A loaded bundle of `records` from an unknown host, made with `command` (tests).
#[cfg(test)]
pub(crate) fn test_loaded(
    command: &str,
    origin: numalab_schema::Origin,
    records: Vec<numalab_schema::Record>,
) -> Loaded {
    use numalab_schema::record::{Host, Tool, SCHEMA_VERSION};
    use numalab_schema::{Bundle, Envelope};
    Loaded::from_bundle(
        "m",
        Bundle {
            schema_version: SCHEMA_VERSION,
            envelope: Envelope {
                schema_version: SCHEMA_VERSION,
                tool: Tool::this("0"),
                created_utc: "2026-01-01T00:00:00Z".into(),
                command: vec!["numalab".into(), command.into()],
                config: serde_json::json!({}),
                origin,
                host: Host::unknown("x"),
            },
            records,
        },
    )
}
