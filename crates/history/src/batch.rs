//! One bundle of a batch ingest (`numalab db ingest A B C`) as people and scripts are
//! told about it: its status, a line for people, an entry of the JSON outcome.

use crate::{History, HistoryError, IngestOptions, IngestOutcome};
use numalab_schema::{Classify, ErrorClass};
use std::path::{Path, PathBuf};

/// What ingesting one bundle of several did; a failure does not stop the others.
#[derive(Debug)]
pub struct BundleResult {
    /// The bundle as given (or a node's bundle of a fleet folder).
    pub bundle: PathBuf,
    /// Its outcome, or why it was not stored.
    pub result: Result<IngestOutcome, HistoryError>,
}

impl BundleResult {
    /// "stored", "already present" or "failed".
    pub fn status(&self) -> &'static str {
        match &self.result {
            Ok(IngestOutcome::Stored { .. }) => "stored",
            Ok(IngestOutcome::AlreadyPresent { .. }) => "already present",
            Err(_) => "failed",
        }
    }

    /// Figures stored (a new run only).
    fn figures(&self) -> Option<usize> {
        match &self.result {
            Ok(IngestOutcome::Stored { metrics, .. }) => Some(*metrics),
            _ => None,
        }
    }

    /// The line for people, control characters of the path made visible: "BUNDLE:
    /// stored as run 3 (12 figures)", "BUNDLE: already present as run 3"; none for a
    /// failure (its error says it).
    pub fn line(&self) -> Option<String> {
        let run_id = self.result.as_ref().ok()?.run_id();
        Some(format!(
            "{}: {} as run {run_id}{}",
            numalab_report::table::plain(&self.bundle.display().to_string()),
            self.status(),
            self.figures()
                .map_or(String::new(), |n| format!(" ({n} figures)"))
        ))
    }

    /// What is said beside the line (on standard error), one line each: "BUNDLE:
    /// WARNING" for each problem met reading a stored bundle, or why it was not stored.
    pub fn notes(&self) -> Vec<String> {
        match &self.result {
            Ok(IngestOutcome::Stored { warnings, .. }) => warnings
                .iter()
                .map(|w| format!("{}: {}", self.bundle.display(), w.message))
                .collect(),
            Ok(IngestOutcome::AlreadyPresent { .. }) => Vec::new(),
            Err(e) => vec![e.to_string()],
        }
    }

    /// The bundle's entry of `db ingest --json`: `bundle`, `status`, and `run_id` with
    /// `figures` (null unless stored now), or `error` for a failure.
    pub fn to_json(&self) -> serde_json::Value {
        let bundle = self.bundle.display().to_string();
        match &self.result {
            Ok(o) => serde_json::json!({
                "bundle": bundle, "status": self.status(),
                "run_id": o.run_id(), "figures": self.figures(),
            }),
            Err(e) => serde_json::json!({
                "bundle": bundle, "status": "failed", "error": e.to_string(),
            }),
        }
    }
}

impl History {
    /// Ingests one bundle of a batch ([`History::ingest_with`]), its result kept with it.
    pub fn ingest_result(&mut self, bundle: PathBuf, opts: &IngestOptions) -> BundleResult {
        BundleResult {
            result: self.ingest_with(&bundle, opts),
            bundle,
        }
    }

    /// Ingests every bundle of a batch in order ([`History::ingest_result`]), each
    /// with its own options (a fleet node's tags): one bad bundle does not stop the
    /// others. `each` hears every result as it is stored, to say so at once.
    pub fn ingest_batch(
        &mut self,
        bundles: Vec<(PathBuf, IngestOptions)>,
        each: &mut dyn FnMut(&BundleResult),
    ) -> Batch {
        let mut batch = Batch::default();
        for (bundle, opts) in bundles {
            let r = self.ingest_result(bundle, &opts);
            each(&r);
            batch.results.push(r);
        }
        batch
    }
}

/// Every bundle of one `db ingest`, in the order ingested.
#[derive(Debug, Default)]
pub struct Batch {
    /// Each bundle's result.
    pub results: Vec<BundleResult>,
}

/// Why a batch did not store every bundle.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// As many bundles failed as were given: the first one's error.
    #[error("{0}")]
    AllFailed(HistoryError),
    /// Some bundles failed, the others were stored (partial).
    #[error("{failed} of {given} bundles were not stored; the others were")]
    SomeFailed {
        /// Bundles not stored.
        failed: usize,
        /// Bundles given.
        given: usize,
    },
}

impl Classify for BatchError {
    fn class(&self) -> ErrorClass {
        match self {
            BatchError::AllFailed(e) => e.class(),
            BatchError::SomeFailed { .. } => ErrorClass::Partial,
        }
    }
}

impl Batch {
    /// `db ingest --json`: the history file `db`, the `runs` it holds now, and each
    /// bundle's entry ([`BundleResult::to_json`]).
    pub fn to_json(&self, db: &Path, runs: u64) -> serde_json::Value {
        serde_json::json!({
            "db": db.display().to_string(),
            "runs": runs,
            "bundles": self.results.iter().map(BundleResult::to_json).collect::<Vec<_>>(),
        })
    }

    /// The batch's verdict for `given` bundles named on the command line: fine when
    /// none failed, the first error when as many failed as were given, else partial.
    pub fn verdict(self, given: usize) -> Result<(), BatchError> {
        let mut failed: Vec<HistoryError> = self
            .results
            .into_iter()
            .filter_map(|r| r.result.err())
            .collect();
        match failed.len() {
            0 => Ok(()),
            n if n == given => Err(BatchError::AllFailed(failed.remove(0))),
            n => Err(BatchError::SomeFailed { failed: n, given }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(result: Result<IngestOutcome, HistoryError>) -> BundleResult {
        BundleResult {
            bundle: "out/\x1b[2Jnode".into(),
            result,
        }
    }

    #[test]
    fn each_outcome_has_its_status_line_and_json() {
        let stored = result(Ok(IngestOutcome::Stored {
            run_id: 3,
            content_key: "k".into(),
            metrics: 12,
            warnings: Vec::new(),
        }));
        assert_eq!(stored.status(), "stored");
        assert_eq!(
            stored.line().unwrap(),
            "out/\\x1b[2Jnode: stored as run 3 (12 figures)"
        );
        assert_eq!(
            stored.to_json(),
            serde_json::json!({"bundle": "out/\x1b[2Jnode", "status": "stored", "run_id": 3, "figures": 12})
        );
        let again = result(Ok(IngestOutcome::AlreadyPresent {
            run_id: 3,
            content_key: "k".into(),
        }));
        assert_eq!(
            again.line().unwrap(),
            "out/\\x1b[2Jnode: already present as run 3"
        );
        assert_eq!(again.to_json()["figures"], serde_json::Value::Null);
        let failed = result(Err(HistoryError::Invalid {
            path: "x".into(),
            reason: "no time".into(),
        }));
        assert_eq!(failed.status(), "failed");
        assert_eq!(failed.line(), None);
        assert_eq!(
            failed.to_json(),
            serde_json::json!({"bundle": "out/\x1b[2Jnode", "status": "failed", "error": "x: no time"})
        );
        assert_eq!(failed.notes(), vec!["x: no time"]);
        assert!(again.notes().is_empty());
    }

    fn stored_with_warning() -> BundleResult {
        BundleResult {
            bundle: "a".into(),
            result: Ok(IngestOutcome::Stored {
                run_id: 1,
                content_key: "k".into(),
                metrics: 2,
                warnings: vec![numalab_schema::Warning::new("cut", "cut off")],
            }),
        }
    }

    fn failure() -> BundleResult {
        result(Err(HistoryError::Invalid {
            path: "b".into(),
            reason: "no time".into(),
        }))
    }

    #[test]
    fn ingest_result_keeps_the_bundle_with_its_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = History::open(&dir.path().join("h.sqlite")).unwrap();
        let r = h.ingest_result(dir.path().join("missing"), &IngestOptions::default());
        assert_eq!(r.status(), "failed");
        assert!(r.bundle.ends_with("missing"));
        assert_eq!(r.notes().len(), 1);
    }

    #[test]
    fn a_batch_ingests_every_bundle_in_order_past_failures() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = History::open(&dir.path().join("h.sqlite")).unwrap();
        let given: Vec<(PathBuf, IngestOptions)> = ["one", "two"]
            .iter()
            .map(|n| (dir.path().join(n), IngestOptions::default()))
            .collect();
        let mut heard = Vec::new();
        let batch = h.ingest_batch(given, &mut |r| heard.push(r.bundle.clone()));
        assert_eq!(heard, [dir.path().join("one"), dir.path().join("two")]);
        let statuses: Vec<&str> = batch.results.iter().map(|r| r.status()).collect();
        assert_eq!(statuses, ["failed", "failed"]);
        assert_eq!(batch.verdict(2).unwrap_err().class(), ErrorClass::Input);
    }

    #[test]
    fn a_batch_is_fine_partial_or_its_first_error() {
        assert_eq!(stored_with_warning().notes(), vec!["a: cut off"]);
        let batch = |results| Batch { results };
        assert!(batch(vec![stored_with_warning()]).verdict(1).is_ok());
        let json = batch(vec![stored_with_warning()]).to_json(Path::new("h.sqlite"), 7);
        assert_eq!(json["db"], "h.sqlite");
        assert_eq!(json["runs"], 7);
        assert_eq!(json["bundles"][0]["status"], "stored");
        let some = batch(vec![stored_with_warning(), failure()])
            .verdict(2)
            .unwrap_err();
        assert_eq!(some.class(), ErrorClass::Partial);
        assert_eq!(
            some.to_string(),
            "1 of 2 bundles were not stored; the others were"
        );
        let all = batch(vec![failure(), failure()]).verdict(2).unwrap_err();
        assert_eq!(all.class(), ErrorClass::Input);
        assert_eq!(all.to_string(), "b: no time");
    }
}
