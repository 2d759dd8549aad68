//! One bundle of a batch ingest (`numalab db ingest A B C`) as people and scripts are
//! told about it: its status, a line for people, an entry of the JSON outcome.

use crate::{HistoryError, IngestOutcome};
use std::path::PathBuf;

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
    }
}
