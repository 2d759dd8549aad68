//! Reading the bundles a report or a comparison is made of: output folders, journals or
//! single-document bundle files, each with a label people recognise (the host name,
//! else the file name) and the warnings met while reading it (a cut-off last line, a
//! newer schema, unreadable lines). A file that cannot be read at all is an error that
//! names it and says what to do; callers show the other bundles anyway.
//!
//! A journal is read one line at a time and only an index of it is kept: each record's
//! key, kind, origin, time and warnings, where its line is in the file and whether it
//! decodes. The payloads are read back from the file when a section asks for the
//! records of one kind ([`Loaded::records_of`]) or for one record ([`Payloads`]), so
//! that the memory a report needs does not grow with the size of the journal's
//! payloads. A bundle file (one JSON document) and a bundle built in memory keep their
//! records whole.

use numalab_schema::journal::{JournalError, RecordReader, Span, SpanReader};
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
    /// The bundle: the envelope and every record. For a journal read from disk the
    /// records hold no payload (`data` is null): [`Loaded::records_of`] and
    /// [`Loaded::payloads`] read it from the file.
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
    /// [`decodes`] said while the journal was read).
    Journal {
        file: PathBuf,
        spans: Vec<Span>,
        decodes: Vec<Option<bool>>,
    },
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

    /// [`Loaded::records_of`] with another bound (`usize::MAX`: every record).
    pub fn records_of_bounded<T: RecordKind>(&self, bound: usize) -> Vec<(&Record, T)> {
        let mut out = Vec::new();
        self.each_of::<T>(|r, t| {
            out.push((r, t));
            out.len() < bound
        });
        out
    }

    /// Visits the records of one type in the journal's order, each decoded, one in
    /// memory at a time (a streaming pass: an aggregate over every record of a kind
    /// holds no more than the aggregate). `visit` returns whether to go on.
    pub fn each_of<'s, T: RecordKind>(&'s self, mut visit: impl FnMut(&'s Record, T) -> bool) {
        let mut payloads = self.payloads();
        for (i, r) in self.bundle.records.iter().enumerate() {
            if r.kind != T::KIND {
                continue;
            }
            let decoded = match &self.source {
                Source::Memory => r.decode::<T>(),
                Source::Journal { .. } => match payloads.get(i) {
                    Some(full) => full.decode::<T>(),
                    None => None,
                },
            };
            if let Some(Ok(t)) = decoded {
                if !visit(r, t) {
                    return;
                }
            }
        }
    }

    /// Each kind with more than [`PER_KIND`] records and its record count, in the order
    /// the kinds first appear (counted from the index, nothing decoded), but for the
    /// [`STREAMED_KINDS`].
    pub fn over_bound(&self) -> Vec<(String, usize)> {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for r in &self.bundle.records {
            match counts.iter_mut().find(|(k, _)| *k == r.kind) {
                Some(c) => c.1 += 1,
                None => counts.push((r.kind.clone(), 1)),
            }
        }
        counts.retain(|(k, n)| *n > PER_KIND && !STREAMED_KINDS.contains(&k.as_str()));
        counts
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

    /// The whole bundle, every payload read back (for callers that need it in memory;
    /// a record that cannot be read back keeps a null payload).
    pub fn to_bundle(&self) -> Bundle {
        let mut payloads = self.payloads();
        let records = (0..self.bundle.records.len())
            .map(|i| {
                payloads
                    .get(i)
                    .map_or_else(|| self.bundle.records[i].clone(), Cow::into_owned)
            })
            .collect();
        Bundle {
            schema_version: self.bundle.schema_version,
            envelope: self.bundle.envelope.clone(),
            records,
        }
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
    let (bundle, warnings, source) = read(path, index).map_err(|e| {
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

/// Reads a bundle: a journal line by line into an index (each payload decoded once, to
/// know whether it decodes, then dropped), a bundle file whole.
fn read(path: &Path, index: Option<bool>) -> Result<(Bundle, Vec<Warning>, Source), JournalError> {
    let mut reader = RecordReader::open(path)?;
    let file = reader.file().to_path_buf();
    let streaming = reader.streaming()
        && index
            .unwrap_or_else(|| std::fs::metadata(&file).map_or(true, |m| m.len() >= INDEX_FROM));
    let (mut records, mut spans, mut decodes) = (Vec::new(), Vec::new(), Vec::new());
    while let Some(r) = reader.next_record()? {
        let mut record = r.record;
        if let (true, Some(span)) = (streaming, r.span) {
            decodes.push(self::decodes(&record));
            spans.push(span);
            record.data = serde_json::Value::Null;
        }
        records.push(record);
    }
    let (envelope, warnings) = reader.finish();
    let source = if streaming {
        Source::Journal {
            file,
            spans,
            decodes,
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

/// Whether a record decodes: `Some(true)` yes, `Some(false)` a known kind that does not
/// decode (newer or damaged), `None` a kind this numalab does not know.
pub fn decodes(r: &Record) -> Option<bool> {
    fn ok<T: RecordKind>(r: &Record) -> Option<bool> {
        r.decode::<T>().map(|x| x.is_ok())
    }
    use crate::records::*;
    use numalab_records::model as m;
    [
        ok::<TopologyRecord>,
        ok::<DoctorReport>,
        ok::<StepRecord>,
        ok::<RunRecord>,
        ok::<PowerCheck>,
        ok::<numalab_records::c2c::PairRecord>,
        ok::<numalab_records::c2c::MatrixRecord>,
        ok::<numalab_records::workload::WorkloadRun>,
        ok::<numalab_records::harness::RunRecord>,
        ok::<numalab_records::harness::ScaleSummary>,
        ok::<numalab_records::harness::PolicySummary>,
        ok::<numalab_records::harness::SweepSummary>,
        ok::<numalab_records::pmu::PmuCheck>,
        ok::<numalab_records::pmu::Profile>,
        ok::<numalab_records::pmu::SampleReport>,
        ok::<numalab_records::pmu::Comparison>,
        ok::<numalab_records::memaccess::MemAccessRecord>,
        ok::<m::StreamTriad>,
        ok::<m::LatencyHeatmap>,
        ok::<m::Traffic>,
        ok::<m::Policy>,
        ok::<m::Check>,
        ok::<numalab_records::mem::BandwidthRecord>,
        ok::<numalab_records::mem::latency::LatencyRecord>,
        ok::<numalab_records::mem::LoadedRecord>,
        ok::<numalab_records::mem::MigrateRecord>,
        ok::<numalab_records::layout::InferenceRecord>,
        ok::<numalab_records::layout::GroundTruthRecord>,
        ok::<numalab_records::layout::AffinityRecord>,
        ok::<numalab_records::schedule::PlanRecord>,
        ok::<numalab_records::schedule::RunRecord>,
        ok::<numalab_records::schedule::SummaryRecord>,
        ok::<numalab_records::home::HomeMapRecord>,
        ok::<numalab_records::home::AccuracyRecord>,
        ok::<numalab_records::home::BenchRecord>,
        ok::<numalab_records::home::slices::HomeHashRecord>,
        ok::<numalab_records::home::slices::HomeCompareRecord>,
        ok::<numalab_records::home::slices::HomeConflictsRecord>,
        ok::<numalab_records::uncore::UncoreCounts>,
        ok::<numalab_records::memconfig::MemConfig>,
        ok::<numalab_records::bmc::BmcPowerRecord>,
        ok::<m::Calibration>,
    ]
    .iter()
    .find_map(|f| f(r))
}

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
