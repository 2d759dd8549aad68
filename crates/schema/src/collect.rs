//! One run's records: each appended to its journal (`--out DIR`) as soon as it exists,
//! kept for the run's bundle, beside the records an earlier run left in that journal.

use crate::journal::{Journal, JournalError};
use crate::record::SCHEMA_VERSION;
use crate::record::{now_utc, Bundle, Envelope, Host, Origin, Record, Tool, Warning};
use crate::sink::{Sink, SinkError};
use std::collections::HashMap;
use std::path::Path;

/// This process's command line, each argument as lossless text.
pub fn this_command() -> Vec<String> {
    std::env::args_os()
        .map(|a| crate::text::os_text(&a))
        .collect()
}

impl Envelope {
    /// The envelope of a run of this process: numalab `version`, started now, the
    /// process's command line (lossless text), its effective `config`, `origin` and
    /// `host`.
    pub fn of_this_process(
        version: &str,
        config: serde_json::Value,
        origin: Origin,
        host: Host,
    ) -> Envelope {
        Envelope {
            schema_version: SCHEMA_VERSION,
            tool: Tool::this(version),
            created_utc: now_utc(),
            command: this_command(),
            config,
            origin,
            host,
        }
    }
}

/// A run's records, in its journal when it has one.
#[derive(Debug)]
pub struct Collector {
    envelope: Envelope,
    journal: Option<Journal>,
    records: Vec<Record>,
    /// Records found in the journal from an earlier run (resume).
    pub previous: Vec<Record>,
    /// The envelope of the run that created the journal, when this run resumes one.
    pub previous_envelope: Option<Envelope>,
}

impl Collector {
    /// Starts collecting: into `dir`'s journal when one is given (created, or resumed:
    /// its records become [`Collector::previous`]; a journal of a machine with another
    /// topology is refused), else in memory only. The warnings are those found reading
    /// the journal back (a cut-off last line).
    pub fn open(
        dir: Option<&Path>,
        envelope: Envelope,
    ) -> Result<(Collector, Vec<Warning>), JournalError> {
        let mut run = Collector {
            envelope,
            journal: None,
            records: Vec::new(),
            previous: Vec::new(),
            previous_envelope: None,
        };
        let Some(dir) = dir else {
            return Ok((run, Vec::new()));
        };
        let opened = Journal::open(dir, &run.envelope)?;
        let (theirs, here) = (
            &opened.envelope.host.topology_hash,
            &run.envelope.host.topology_hash,
        );
        if opened.resumed && theirs != here {
            return Err(JournalError::OtherMachine {
                path: dir.to_path_buf(),
                theirs: theirs.clone(),
                here: here.clone(),
            });
        }
        run.previous = opened.records;
        if opened.resumed {
            run.previous_envelope = Some(opened.envelope);
        }
        run.journal = Some(opened.journal);
        Ok((run, opened.warnings))
    }

    /// Whether a record with this key is in the journal (an earlier run's or this one's).
    pub fn done(&self, key: &str) -> bool {
        self.journal.as_ref().is_some_and(|j| j.contains(key))
    }

    /// The envelope.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// The records of earlier runs of this journal and of this run, one per key (this
    /// run's when both have it), in the order keys first appeared.
    pub fn latest(&self) -> Vec<Record> {
        let mut order: Vec<&str> = Vec::new();
        let mut by_key: HashMap<&str, &Record> = HashMap::new();
        for r in self.previous.iter().chain(&self.records) {
            if by_key.insert(r.key.as_str(), r).is_none() {
                order.push(r.key.as_str());
            }
        }
        order.iter().map(|k| by_key[k].clone()).collect()
    }

    /// Records pushed in this run.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Adds a record: written to the journal at once (if any), kept for the bundle.
    pub fn push(&mut self, record: Record) -> Result<(), JournalError> {
        if let Some(j) = &mut self.journal {
            j.append(&record)?;
        }
        self.records.push(record);
        Ok(())
    }

    /// Closes the journal (its last sync, for a run of a second or more); the bundle of
    /// this run's records.
    pub fn finish(self) -> Result<Bundle, JournalError> {
        if let Some(j) = self.journal {
            j.close()?;
        }
        Ok(Bundle {
            schema_version: SCHEMA_VERSION,
            envelope: self.envelope,
            records: self.records,
        })
    }
}

/// Records go to the journal at once; an earlier run's records (same journal) make
/// their cells skip.
impl Sink for Collector {
    fn done(&self, key: &str) -> bool {
        Collector::done(self, key)
    }

    fn previous(&self, key: &str) -> Option<Record> {
        if !Collector::done(self, key) {
            return None;
        }
        self.previous.iter().find(|r| r.key == key).cloned()
    }

    fn push(&mut self, record: Record) -> Result<(), SinkError> {
        Collector::push(self, record).map_err(|e| SinkError(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Classify, ErrorClass};

    fn envelope(topology: &str) -> Envelope {
        Envelope::of_this_process(
            "0.1",
            serde_json::json!({}),
            Origin::Measured,
            Host::unknown(topology),
        )
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Sample(u32);
    impl crate::RecordKind for Sample {
        const KIND: &'static str = "test";
    }

    fn rec(key: &str, n: u32) -> Record {
        Record::new(key, Origin::Measured, &Sample(n))
    }

    #[test]
    fn a_rerun_resumes_its_journal_and_keeps_the_latest_record_of_each_key() {
        let dir = tempfile::tempdir().unwrap();
        let (mut first, warnings) = Collector::open(Some(dir.path()), envelope("t1")).unwrap();
        assert!(warnings.is_empty() && first.previous_envelope.is_none());
        first.push(rec("a", 1)).unwrap();
        first.push(rec("b", 1)).unwrap();
        assert!(first.done("a") && !first.done("c"));
        assert_eq!(first.finish().unwrap().records.len(), 2);

        let (mut again, _) = Collector::open(Some(dir.path()), envelope("t1")).unwrap();
        assert!(again.previous_envelope.is_some());
        assert_eq!(again.previous.len(), 2);
        assert!(Sink::previous(&again, "b").is_some());
        assert!(Sink::previous(&again, "c").is_none());
        again.push(rec("c", 2)).unwrap();
        let keys: Vec<String> = again.latest().into_iter().map(|r| r.key).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(again.records().len(), 1);
        drop(again);

        let e = Collector::open(Some(dir.path()), envelope("t2")).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Usage);
        assert_eq!(
            e.to_string(),
            format!(
                "{}: holds results of another machine (topology t1 here t2); choose another --out folder",
                dir.path().display()
            )
        );
    }

    #[test]
    fn without_a_folder_records_stay_in_memory() {
        let (mut run, _) = Collector::open(None, envelope("t")).unwrap();
        run.push(rec("a", 1)).unwrap();
        assert!(!run.done("a"));
        assert_eq!(run.latest().len(), 1);
        assert_eq!(run.envelope().host.topology_hash, "t");
        assert_eq!(run.envelope().command, this_command());
        assert!(!this_command().is_empty());
        assert_eq!(run.finish().unwrap().records.len(), 1);
    }
}
