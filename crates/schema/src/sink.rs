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

/// How the execution of a plan ended: records written, cells skipped because an
/// earlier run had delivered them, cells that failed (with their key; the others went
/// on), and whether Ctrl-C stopped it.
#[derive(Debug)]
pub struct Outcome<E> {
    /// Records written in this run.
    pub written: usize,
    /// Cells skipped because their record already existed.
    pub skipped: usize,
    /// Cells that failed, with their key and error.
    pub failed: Vec<(String, E)>,
    /// Stopped by an interrupt before the end.
    pub interrupted: bool,
}

impl<E> Default for Outcome<E> {
    fn default() -> Self {
        Outcome {
            written: 0,
            skipped: 0,
            failed: Vec::new(),
            interrupted: false,
        }
    }
}

impl<E: crate::Classify> Outcome<E> {
    /// The error class the whole run ends with, if not success: interrupted; partial
    /// when some cells failed and others have records; else the first failure's.
    pub fn class(&self) -> Option<crate::ErrorClass> {
        if self.interrupted {
            Some(crate::ErrorClass::Interrupted)
        } else if self.failed.is_empty() {
            None
        } else if self.written > 0 || self.skipped > 0 {
            Some(crate::ErrorClass::Partial)
        } else {
            Some(self.failed[0].1.class())
        }
    }
}

/// The part of every executor's loop that is the same whatever it measures, written
/// once: stop at an interrupt, skip a cell whose record the sink already has, hand each
/// finished record to the sink (a record the sink refuses is a failed cell), keep
/// failures by key, report progress. Each executor keeps its own control flow (cells
/// of one record or of several, progress in cells or in finer steps) and calls these.
pub struct Cells<'s, E> {
    sink: &'s mut dyn Sink,
    label: String,
    total: u64,
    /// What happened so far.
    pub outcome: Outcome<E>,
}

impl<'s, E: From<SinkError>> Cells<'s, E> {
    /// An executor's loop over `total` progress units, named `label` in progress reports.
    pub fn new(sink: &'s mut dyn Sink, label: &str, total: u64) -> Self {
        Cells {
            sink,
            label: label.to_string(),
            total,
            outcome: Outcome::default(),
        }
    }

    /// Whether to stop before the next cell: an interrupt was asked for (then the
    /// outcome says so).
    pub fn stop(&mut self) -> bool {
        if crate::interrupt::requested() {
            self.outcome.interrupted = true;
        }
        self.outcome.interrupted
    }

    /// Marks the run interrupted (the measuring code saw the interrupt itself).
    pub fn interrupted(&mut self) {
        self.outcome.interrupted = true;
    }

    /// Whether the record `key` was delivered by an earlier run: then its cell is
    /// skipped, and counted so.
    pub fn skip(&mut self, key: &str) -> bool {
        let done = self.sink.done(key);
        if done {
            self.outcome.skipped += 1;
        }
        done
    }

    /// The record with this key from an earlier run, if the sink keeps them.
    pub fn previous(&self, key: &str) -> Option<Record> {
        self.sink.previous(key)
    }

    /// The sink itself, for measuring code that reports finer progress.
    pub fn sink(&mut self) -> &mut dyn Sink {
        &mut *self.sink
    }

    /// Hands a finished record to the sink: written, or a failed cell under its key.
    pub fn deliver(&mut self, record: Record) {
        let key = record.key.clone();
        match self.sink.push(record) {
            Ok(()) => self.outcome.written += 1,
            Err(e) => self.outcome.failed.push((key, e.into())),
        }
    }

    /// A cell that failed; the others go on.
    pub fn fail(&mut self, key: impl Into<String>, e: E) {
        self.outcome.failed.push((key.into(), e));
    }

    /// Progress: `position` of the total units.
    pub fn progress(&mut self, position: u64) {
        self.sink
            .progress(&self.label, position.min(self.total), self.total);
    }

    /// The end: progress at the total, and what happened.
    pub fn finish(self) -> Outcome<E> {
        self.sink.progress(&self.label, self.total, self.total);
        self.outcome
    }
}

/// Progress said as log lines where no bar is drawn (stderr not a terminal: a log file,
/// a batch job, a guest's console): at most one line per interval, so that a long step
/// (a bandwidth sweep or 6,000 core pairs on a 160-CPU server) shows that it moves and
/// where it is, without flooding the log.
#[derive(Debug, Clone)]
pub struct ProgressLines {
    every: std::time::Duration,
    last: std::time::Instant,
}

impl ProgressLines {
    /// The interval of [`ProgressLines::new`] the command line uses.
    pub const EVERY: std::time::Duration = std::time::Duration::from_secs(60);

    /// Lines at most one per `every`, the first `every` from now.
    pub fn new(every: std::time::Duration) -> Self {
        ProgressLines {
            every,
            last: std::time::Instant::now(),
        }
    }

    /// [`ProgressLines::line`] now.
    pub fn now(&mut self, label: &str, done: u64, total: u64) -> Option<String> {
        self.line(label, done, total, std::time::Instant::now())
    }

    /// The line for `done` of `total` units of `label` at `now`, when one is due.
    pub fn line(
        &mut self,
        label: &str,
        done: u64,
        total: u64,
        now: std::time::Instant,
    ) -> Option<String> {
        if total == 0 || now.saturating_duration_since(self.last) < self.every {
            return None;
        }
        self.last = now;
        let pct = 100.0 * done.min(total) as f64 / total as f64;
        Some(format!("{label}: {done} of {total} ({pct:.0}%)"))
    }
}

/// A line a minute ([`ProgressLines::EVERY`]).
impl Default for ProgressLines {
    fn default() -> Self {
        ProgressLines::new(ProgressLines::EVERY)
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

    #[derive(Debug, PartialEq)]
    struct Oops(String);
    impl From<SinkError> for Oops {
        fn from(e: SinkError) -> Self {
            Oops(e.0)
        }
    }
    impl crate::Classify for Oops {
        fn class(&self) -> crate::ErrorClass {
            crate::ErrorClass::Runtime
        }
    }

    /// A sink that refuses one key and records progress reports.
    #[derive(Default)]
    struct Picky {
        inner: MemorySink,
        progress: Vec<(String, u64, u64)>,
    }
    impl Sink for Picky {
        fn previous(&self, key: &str) -> Option<Record> {
            self.inner.previous(key)
        }
        fn push(&mut self, record: Record) -> Result<(), SinkError> {
            if record.key == "refused" {
                return Err(SinkError("disk full".into()));
            }
            Sink::push(&mut self.inner, record)
        }
        fn progress(&mut self, label: &str, done: u64, total: u64) {
            self.progress.push((label.into(), done, total));
        }
    }

    #[test]
    fn cells_skip_deliver_fail_and_report_in_one_place() {
        let mut sink = Picky::default();
        sink.inner.previous.push(rec("old"));
        let mut cells: Cells<'_, Oops> = Cells::new(&mut sink, "probe", 4);
        assert!(!cells.stop());
        // An earlier run's cell is skipped; a new one is delivered.
        assert!(cells.skip("old"));
        assert!(!cells.skip("new"));
        cells.deliver(rec("new"));
        cells.progress(2);
        // The sink refuses one: a failed cell under its key, not a lost record.
        cells.deliver(rec("refused"));
        cells.fail("broken", Oops("no memory".into()));
        cells.progress(99);
        let out = cells.finish();
        assert_eq!((out.written, out.skipped, out.interrupted), (1, 1, false));
        assert_eq!(
            out.failed,
            vec![
                ("refused".to_string(), Oops("disk full".into())),
                ("broken".to_string(), Oops("no memory".into()))
            ]
        );
        // Some written, some failed: partial.
        assert_eq!(out.class(), Some(crate::ErrorClass::Partial));
        assert_eq!(
            sink.progress,
            vec![
                ("probe".to_string(), 2, 4),
                ("probe".to_string(), 4, 4),
                ("probe".to_string(), 4, 4)
            ]
        );
        assert_eq!(sink.inner.records.len(), 1);
    }

    #[test]
    fn an_outcome_says_how_the_run_ended() {
        let mut o: Outcome<Oops> = Outcome::default();
        assert_eq!(o.class(), None);
        o.failed.push(("a".into(), Oops("x".into())));
        // Nothing written or skipped: the failure's own class.
        assert_eq!(o.class(), Some(crate::ErrorClass::Runtime));
        o.interrupted = true;
        assert_eq!(o.class(), Some(crate::ErrorClass::Interrupted));
    }

    #[test]
    fn progress_lines_come_at_most_once_an_interval() {
        use std::time::{Duration, Instant};
        let mut p = ProgressLines::new(Duration::from_secs(60));
        let t0 = Instant::now();
        assert_eq!(
            p.line("pairs", 1, 10, t0),
            None,
            "none before the first interval"
        );
        let t1 = t0 + Duration::from_secs(61);
        assert_eq!(
            p.line("pair 3-17", 1234, 6321, t1).as_deref(),
            Some("pair 3-17: 1234 of 6321 (20%)")
        );
        assert_eq!(
            p.line("pairs", 1300, 6321, t1 + Duration::from_secs(59)),
            None
        );
        let t2 = t1 + Duration::from_secs(60);
        assert_eq!(
            p.line("bandwidth", 12, 12, t2).as_deref(),
            Some("bandwidth: 12 of 12 (100%)")
        );
        assert_eq!(p.line("empty", 0, 0, t2 + Duration::from_secs(600)), None);
    }
}
