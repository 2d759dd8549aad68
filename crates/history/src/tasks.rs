//! Task histories for `numalab schedule`.
//!
//! Why: `schedule` fits each task's run-time model to the `harness.run` records of past
//! `numalab scale` runs (`numalab_schedule::history::gather(&mix, &bundles)`, which
//! takes `&[Bundle]`). The history keeps those records verbatim ([`crate::KEPT_KINDS`]),
//! so it can hand `schedule` the same bundles without the original folders.

use crate::query::{filter_sql, RunFilter};
use crate::{History, HistoryError};
use numalab_schema::record::{Bundle, Envelope, Record};
use rusqlite::types::Value as SqlValue;
use std::path::Path;

/// The task history of the history file `db` (`numalab schedule --history-db`): every
/// stored run's task records ([`History::task_history`], no filter). A file that does
/// not exist is refused ([`HistoryError::NoHistoryFile`], with how to create one) rather
/// than created empty, as [`History::open`] would.
pub fn task_history_file(db: &Path) -> Result<Vec<Bundle>, HistoryError> {
    if !db.exists() {
        return Err(HistoryError::NoHistoryFile {
            path: db.to_path_buf(),
        });
    }
    // Read only: an empty file stays empty (no history written into it).
    History::open_read(db)?.task_history(&RunFilter::default())
}

impl History {
    /// The stored runs that kept task records (`harness.run`), oldest first, each as a
    /// [`Bundle`] of its envelope (without the machine description) and those records:
    /// what `numalab_schedule::history::gather` consumes. Runs stored before layout
    /// version 3 kept no records and are absent.
    pub fn task_history(&self, f: &RunFilter) -> Result<Vec<Bundle>, HistoryError> {
        let mut sql = String::from(
            "SELECT r.id, r.envelope, k.record
             FROM kept_record k
             JOIN run r ON r.id = k.run_id
             JOIN machine ma ON ma.id = r.machine_id
             WHERE k.kind = 'harness.run'",
        );
        let mut args: Vec<SqlValue> = Vec::new();
        filter_sql(f, &mut sql, &mut args);
        sql.push_str(" ORDER BY r.time_s, r.id, k.key");
        let e = |e| self.sql_err("reading task histories", e);
        let mut st = self.conn.prepare_cached(&sql).map_err(e)?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(e)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(e)?;
        let mut out: Vec<Bundle> = Vec::new();
        let mut last = None;
        for (run, envelope, record) in rows {
            let bad = |what: &str, err: serde_json::Error| {
                HistoryError::Invalid {
                path: self.path.clone(),
                reason: format!("run {run}: the stored {what} cannot be read ({err}); the history was changed by another program"),
            }
            };
            let record: Record = serde_json::from_str(&record).map_err(|e| bad("record", e))?;
            if last != Some(run) {
                let envelope: Envelope =
                    serde_json::from_str(&envelope).map_err(|e| bad("envelope", e))?;
                out.push(Bundle {
                    schema_version: envelope.schema_version,
                    envelope,
                    records: Vec::new(),
                });
                last = Some(run);
            }
            out.last_mut().expect("pushed").records.push(record);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_schema::{Classify, ErrorClass};

    #[test]
    fn a_missing_history_file_is_refused_and_an_empty_one_has_no_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("h.sqlite");
        let e = task_history_file(&db).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Input);
        let p = db.display();
        assert_eq!(
            e.to_string(),
            format!(
                "--history-db {p}: no such file; create it with `numalab db ingest --db {p} DIR`"
            )
        );
        assert!(!db.exists(), "a refused file is not created");
        History::open(&db).unwrap();
        assert!(task_history_file(&db).unwrap().is_empty());
    }
}
