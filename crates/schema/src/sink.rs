//! The one way records leave a probe: a [`Sink`].
//!
//! Every probe (memory, core-to-core, PMU, the workload harness, the reference
//! workload, the model) runs as `plan -> cells -> executor -> sink`: before a cell runs
//! the executor asks [`Sink::done`] whether an earlier, killed run already delivered its
//! record (then the cell is skipped: resume), [`Sink::previous`] when it needs that
//! record itself (a study's summary is computed from all its runs, old and new), hands
//! each finished record to [`Sink::push`] at once (a killed run loses nothing already
//! pushed), and reports [`Sink::progress`] for long steps. The command line's sink
//! writes to the journal (`DIR/results.jsonl`) and draws the progress bar; tests and
//! library callers use [`MemorySink`] or a plain `Vec<Record>`.

use crate::Record;

/// Why a sink could not take a record (disk full, journal locked...), in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SinkError(pub String);

/// A record that cannot be stored is a runtime failure (disk full, journal gone).
impl crate::Classify for SinkError {
    fn class(&self) -> crate::ErrorClass {
        crate::ErrorClass::Runtime
    }
}

/// Where a probe's records go, and where a resumed run finds earlier ones.
pub trait Sink: Send {
    /// Whether a record with this key was already delivered (by an earlier run of the
    /// same command into the same journal): the executor skips its cell.
    fn done(&self, key: &str) -> bool {
        self.previous(key).is_some()
    }

    /// The record with this key from an earlier run, if the sink keeps them.
    fn previous(&self, _key: &str) -> Option<Record> {
        None
    }

    /// Takes a finished record (stored at once: a killed run must not lose it).
    fn push(&mut self, record: Record) -> Result<(), SinkError>;

    /// Progress: `done` of `total` units of the current step, named `label`.
    fn progress(&mut self, _label: &str, _done: u64, _total: u64) {}
}

impl Sink for Vec<Record> {
    fn previous(&self, key: &str) -> Option<Record> {
        self.iter().find(|r| r.key == key).cloned()
    }

    fn push(&mut self, record: Record) -> Result<(), SinkError> {
        Vec::push(self, record);
        Ok(())
    }
}

/// A sink that keeps records in memory, with records "from an earlier run" to resume
/// from (tests, library callers).
#[derive(Debug, Default, Clone)]
pub struct MemorySink {
    /// Records pushed.
    pub records: Vec<Record>,
    /// Records of an earlier run: their cells are skipped.
    pub previous: Vec<Record>,
}

impl Sink for MemorySink {
    fn previous(&self, key: &str) -> Option<Record> {
        self.previous.iter().find(|r| r.key == key).cloned()
    }

    fn push(&mut self, record: Record) -> Result<(), SinkError> {
        self.records.push(record);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Origin;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Probe {
        k: String,
    }
    impl crate::RecordKind for Probe {
        const KIND: &'static str = "test.probe";
    }

    fn rec(key: &str) -> Record {
        Record::new(key, Origin::Measured, &Probe { k: key.into() })
    }

    #[test]
    fn done_follows_previous_and_pushes_are_kept() {
        let mut s = MemorySink {
            previous: vec![rec("a")],
            ..Default::default()
        };
        assert!(s.done("a"));
        assert!(!s.done("b"));
        assert_eq!(s.previous("a").unwrap().key, "a");
        Sink::push(&mut s, rec("b")).unwrap();
        assert_eq!(s.records.len(), 1);
        // Pushed records are not "previous": only an earlier run's are.
        assert!(!s.done("b"));

        let mut v: Vec<Record> = Vec::new();
        assert!(!v.done("x"));
        Sink::push(&mut v, rec("x")).unwrap();
        assert!(v.done("x"));
    }
}
