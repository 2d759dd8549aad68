//! numalab's result history: every bundle kept in one queryable SQLite file.
//!
//! Why: a bundle answers "how does this machine behave today"; a fleet needs "how did
//! it behave over the last months, and what got worse since the firmware update". This
//! crate keeps the comparable figures of every bundle ([`numalab_report::metrics`], the
//! same figures `numalab compare` uses) in one SQLite file (bundled SQLite, no server),
//! and answers figure-over-time queries ([`History::query`]), regressions beyond the
//! run-to-run noise ([`History::regressions`], with `compare`'s statistics), exports
//! ([`History::export_csv`], [`History::export_json`]) and the task histories the
//! `schedule` command fits its run-time models to ([`History::task_history`]).
//!
//! # Guarantees
//!
//! - **Idempotent ingest.** A run is keyed by its content ([`content_key`]: SHA-256 over
//!   the envelope and the records sorted by key, each in canonical JSON), not by path or
//!   modification time: the same bundle ingested twice, copied to another folder, or
//!   written as a journal and as a bundle file, is stored once
//!   ([`IngestOutcome::AlreadyPresent`]).
//! - **Crash safety.** One immediate transaction per bundle; the run row records how
//!   many figures it has and is written in the same transaction as the figures and their
//!   samples, so a process killed at any moment (kill -9) leaves either the whole run or
//!   nothing. The journal is in WAL mode with `synchronous = NORMAL`: a killed process
//!   loses nothing committed; a power loss can lose the last commits, never consistency.
//!   [`History::verify`] checks all of this.
//! - **Concurrency.** Any number of processes may ingest into one file: writers take
//!   the write lock up front (`BEGIN IMMEDIATE`), wait up to [`BUSY_TIMEOUT`] for it, and
//!   retry on `SQLITE_BUSY` for up to [`RETRY_FOR`]; the content key is unique in the
//!   table, so two processes ingesting the same bundle store it once.
//! - **Hostile input is data.** Every value reaches SQLite as a bound parameter (SQL
//!   text is made only of fixed fragments); strings with quotes, markup or control
//!   characters are stored and returned verbatim. Sizes are capped ([`Limits`]): a
//!   bundle over the cap is refused with an error naming the limit, before it is read.
//! - **Versioned layout.** `PRAGMA user_version` counts the [`schema::MIGRATIONS`]
//!   applied; opening applies the missing ones (one transaction each); a database from a
//!   newer numalab is refused with both versions named ([`HistoryError::NewerSchema`]).
//!
//! # Schema (version 4)
//!
//! | table | columns |
//! |---|---|
//! | `machine` | `id`, `fingerprint` (unique, 16 hex digits, see [`Fingerprint`]), `vendor`, `model_name`, `cpu_id` (x86 "family F model M stepping S" or Arm "MIDR 0x..."), `cores`, `pus`, `numa_nodes`, `memory_gib` (empty since version 4: memory is a run's), `description` (what the fingerprint covers, in words) |
//! | `run` | `id`, `content_key` (unique), `label`, `time_utc` (envelope `created_utc`), `time_s` (Unix seconds), `tool_version`, `origin`, `host_name`, `machine_id` → machine, `topology_hash`, `kernel`, `firmware` (DMI BIOS vendor, version, date), `memory_bytes` (exact), `source_path`, `ingested_utc`, `tags` (JSON object from the caller), `metric_count`, `envelope` (JSON, without the machine description) |
//! | `metric` | `id`, `run_id` → run (cascade), `metric_id`, `metric_group`, `name`, `unit`, `higher_is_better`, `setup`, `bound_low`, `bound_high`, `n` (finite samples), `median`, `mad`, `min`, `max`; unique (`run_id`, `metric_id`) |
//! | `sample` | `metric_row` → metric (cascade), `idx`, `value`: each sample |
//! | `tag` | `run_id` → run, `key`, `value`: the top-level entries of `run.tags` (strings as they are, other values as JSON text), for filters |
//! | `kept_record` | `run_id` → run, `key`, `kind`, `record` (JSON): records kept verbatim ([`KEPT_KINDS`]) |
//!
//! Kernel, firmware and memory size are stored beside the run, not in the fingerprint: a
//! kernel or firmware update, or a DIMM lost, is exactly what a history should show on
//! the same machine, and the memory size every bundle records (MemTotal) moves between
//! boots and, on VMs that fill their memory map lazily, within one boot. Version 4
//! re-keyed the machines of older histories without memory (fingerprint recipe 2),
//! merging those that differed only in it.

#![deny(missing_docs)]

pub mod schema;
pub mod tables;

mod batch;
mod export;
mod ingest;
mod location;
mod options;
mod query;
mod regress;
mod tasks;

pub use batch::{Batch, BatchError, BundleResult};
pub use export::{csv_field, CSV_HEADER, EXPORT_VERSION};
pub use ingest::{
    content_key, expand_fleets, Fingerprint, IngestOptions, IngestOutcome, Limits, KEPT_KINDS,
};
pub use location::{default_folder, default_path, LocationError};
pub use numalab_report::compare::{RunNoise, Verdict};
pub use numalab_report::metrics::Metric;
pub use options::{check_regression_sides, parse_tags, parse_time, tags_object, OptionError};
pub use query::{Point, Query, RunFilter, RunInfo};
pub use regress::{Baseline, Regression, RegressionQuery};
pub use schema::SCHEMA_VERSION;
pub use tasks::task_history_file;

use numalab_schema::{Classify, ErrorClass};
use rusqlite::{Connection, ErrorCode};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long SQLite waits for a lock before it reports `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an operation that met `SQLITE_BUSY` is retried (with backoff) before the
/// error is returned.
pub const RETRY_FOR: Duration = Duration::from_secs(60);

/// Why a history operation failed. Messages name the file and say what to do.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// SQLite failed.
    #[error("{}: {what}: {source}{}", path.display(), hint(source))]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The database was written by a newer numalab.
    #[error("{}: this history was written by a newer numalab (history schema version {found}; this numalab reads up to version {supported}); upgrade numalab, or give another history file", path.display())]
    NewerSchema {
        /// The database.
        path: PathBuf,
        /// Its `user_version`.
        found: u32,
        /// [`SCHEMA_VERSION`].
        supported: u32,
    },
    /// The file is not a numalab history (another SQLite database or another file).
    #[error("{}: not a numalab history database; give a new file name or a history numalab created", path.display())]
    NotAHistory {
        /// The file.
        path: PathBuf,
    },
    /// A bundle could not be read.
    #[error("{0}")]
    Load(#[from] numalab_report::load::LoadError),
    /// A bundle or an option exceeds a [`Limits`] cap.
    #[error("{}: {what} is {actual}, over the limit of {limit}; the bundle was not stored (split it, or raise the limit in Limits)", path.display())]
    TooLarge {
        /// The bundle.
        path: PathBuf,
        /// What is too large ("the bundle file", "the metric count"...).
        what: String,
        /// Its size.
        actual: String,
        /// The limit.
        limit: String,
    },
    /// A bundle or an option is not usable (no readable time, tags not an object...).
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The bundle (or the database, for options).
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The history file named for reading task histories does not exist.
    #[error("--history-db {}: no such file; create it with `numalab db ingest --db {} DIR`", path.display(), path.display())]
    NoHistoryFile {
        /// The file.
        path: PathBuf,
    },
    /// Writing an export failed.
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
}

fn hint(e: &rusqlite::Error) -> &'static str {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            "; another process held the history too long: try again"
        }
        Some(ErrorCode::NotADatabase) => "; the file is not a SQLite database",
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            "; check that the file and its folder are writable"
        }
        Some(ErrorCode::DiskFull) => "; free some disk space",
        Some(ErrorCode::DatabaseCorrupt) => {
            "; the history file is damaged (truncated or overwritten): restore it from a copy, or give another history file"
        }
        _ => "",
    }
}

impl HistoryError {
    pub(crate) fn sqlite(path: &Path, what: &str, source: rusqlite::Error) -> Self {
        if source.sqlite_error_code() == Some(ErrorCode::NotADatabase) {
            return HistoryError::NotAHistory {
                path: path.to_path_buf(),
            };
        }
        HistoryError::Sqlite {
            path: path.to_path_buf(),
            what: what.into(),
            source,
        }
    }
}

impl Classify for HistoryError {
    fn class(&self) -> ErrorClass {
        match self {
            HistoryError::Sqlite { source, .. } => match source.sqlite_error_code() {
                Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => ErrorClass::Busy,
                // A damaged file is a bad input, as one that is not SQLite at all.
                Some(ErrorCode::DatabaseCorrupt) => ErrorClass::Input,
                _ => ErrorClass::Runtime,
            },
            HistoryError::NewerSchema { .. } | HistoryError::NotAHistory { .. } => {
                ErrorClass::Input
            }
            HistoryError::Load(e) => e.class(),
            HistoryError::TooLarge { .. }
            | HistoryError::Invalid { .. }
            | HistoryError::NoHistoryFile { .. } => ErrorClass::Input,
            HistoryError::Io(_) => ErrorClass::Runtime,
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Runs `f` again while it fails with `SQLITE_BUSY`/`SQLITE_LOCKED`, with a growing,
/// jittered pause, for up to [`RETRY_FOR`]. `f` must be a whole transaction.
pub(crate) fn retry<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = Instant::now();
    let mut pause_us: u64 = 500;
    loop {
        match f() {
            Err(e) if is_busy(&e) && start.elapsed() < RETRY_FOR => {
                // Jitter from the clock and the process id: processes that collided
                // do not retry in lockstep.
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_nanos())
                    .unwrap_or(0);
                let jitter = u64::from(nanos ^ std::process::id()) % pause_us.max(1);
                std::thread::sleep(Duration::from_micros(pause_us + jitter));
                pause_us = (pause_us * 2).min(100_000);
            }
            r => return r,
        }
    }
}

/// An open history: one SQLite file.
#[derive(Debug)]
pub struct History {
    conn: Connection,
    path: PathBuf,
    limits: Limits,
}

impl History {
    /// Creates or opens the history at `path`: WAL journal, [`BUSY_TIMEOUT`], foreign
    /// keys on, and the layout migrated to [`SCHEMA_VERSION`].
    ///
    /// Errors: [`HistoryError::NewerSchema`] for a history of a newer numalab,
    /// [`HistoryError::NotAHistory`] for another file, [`HistoryError::Sqlite`] when
    /// SQLite fails (permissions, disk full, a lock held longer than [`RETRY_FOR`]).
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        let err = |what: &str| {
            let what = what.to_string();
            move |e| HistoryError::sqlite(path, &what, e)
        };
        // SQLite would open a folder, a device or a FIFO and fail later, or write its
        // -wal and -shm side files beside a device (/dev/zero-wal).
        if let Ok(m) = std::fs::metadata(path) {
            if !m.is_file() {
                return Err(HistoryError::Invalid {
                    path: path.to_path_buf(),
                    reason: format!(
                        "it is {}, not a file; give the history's file name (e.g. {}/history.sqlite)",
                        numalab_schema::input::kind_of(&m),
                        if m.is_dir() { path.display().to_string() } else { "DIR".into() }
                    ),
                });
            }
        }
        // Another program's SQLite database is refused before SQLite opens it: switching
        // it to WAL mode would already write to it.
        if matches!(schema::found(path), Ok(schema::Found::Foreign)) {
            return Err(HistoryError::NotAHistory {
                path: path.to_path_buf(),
            });
        }
        let mut conn = Connection::open(path).map_err(err("opening the history"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(err("setting the busy timeout"))?;
        let mode: String =
            retry(|| conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)))
                .map_err(err("switching to WAL journal mode"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(HistoryError::Invalid {
                path: path.to_path_buf(),
                reason: format!("SQLite could not use WAL journal mode here (it kept {mode:?}); put the history on a local file system"),
            });
        }
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(err("turning on foreign keys"))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err("setting synchronous mode"))?;
        conn.set_prepared_statement_cache_capacity(32);
        schema::migrate(&mut conn, path)?;
        Ok(History {
            conn,
            path: path.to_path_buf(),
            limits: Limits::default(),
        })
    }

    /// Opens the history at `path` for a command that only reads it (`db runs`, `db
    /// query`, `db regressions`, `schedule --history-db`): as [`History::open`] when the
    /// file holds a history; when it does not exist or is empty (zero bytes), an empty
    /// history in memory, so that reading creates no file and writes none (the runs and
    /// figures are none, as they would be in a new file).
    pub fn open_read(path: &Path) -> Result<History, HistoryError> {
        let empty = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0);
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => History::in_memory(path),
            _ if empty => History::in_memory(path),
            _ => History::open(path),
        }
    }

    /// An empty history in memory that says `path` as its own.
    fn in_memory(path: &Path) -> Result<History, HistoryError> {
        let mut conn = Connection::open_in_memory()
            .map_err(|e| HistoryError::sqlite(path, "opening an empty history", e))?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(|e| HistoryError::sqlite(path, "turning on foreign keys", e))?;
        schema::migrate(&mut conn, path)?;
        Ok(History {
            conn,
            path: path.to_path_buf(),
            limits: Limits::default(),
        })
    }

    /// The same history with other size caps.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The size caps in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The layout version of the open database (always [`SCHEMA_VERSION`] after open).
    pub fn schema_version(&self) -> Result<u32, HistoryError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
            .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
            .map_err(|e| self.sql_err("reading the version", e))
    }

    /// Number of stored runs.
    pub fn run_count(&self) -> Result<u64, HistoryError> {
        self.conn
            .query_row("SELECT count(*) FROM run", [], |r| r.get::<_, i64>(0))
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.sql_err("counting runs", e))
    }

    /// Checks the database: SQLite's `integrity_check` and `foreign_key_check`, and
    /// that every run has all its figures and every figure all its samples. Returns
    /// the problems found (empty when consistent).
    pub fn verify(&self) -> Result<Vec<String>, HistoryError> {
        let e = |e| self.sql_err("checking the history", e);
        let mut problems = Vec::new();
        let mut st = self.conn.prepare("PRAGMA integrity_check").map_err(e)?;
        let rows: Vec<String> = st
            .query_map([], |r| r.get(0))
            .map_err(e)?
            .collect::<Result<_, _>>()
            .map_err(e)?;
        if rows != ["ok"] {
            problems.extend(rows.into_iter().map(|r| format!("integrity: {r}")));
        }
        let mut st = self.conn.prepare("PRAGMA foreign_key_check").map_err(e)?;
        let n = st.query_map([], |_| Ok(())).map_err(e)?.count();
        if n > 0 {
            problems.push(format!("{n} row(s) refer to missing rows"));
        }
        let mut st = self
            .conn
            .prepare(
                "SELECT r.id, r.metric_count, (SELECT count(*) FROM metric m WHERE m.run_id = r.id)
                 FROM run r
                 WHERE r.metric_count <> (SELECT count(*) FROM metric m WHERE m.run_id = r.id)",
            )
            .map_err(e)?;
        let bad: Vec<(i64, i64, i64)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(e)?
            .collect::<Result<_, _>>()
            .map_err(e)?;
        for (id, want, have) in bad {
            problems.push(format!("run {id}: {have} of its {want} figures stored"));
        }
        let mut st = self
            .conn
            .prepare(
                "SELECT m.id, m.n, (SELECT count(*) FROM sample s WHERE s.metric_row = m.id)
                 FROM metric m
                 WHERE m.n <> (SELECT count(*) FROM sample s WHERE s.metric_row = m.id)",
            )
            .map_err(e)?;
        let bad: Vec<(i64, i64, i64)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(e)?
            .collect::<Result<_, _>>()
            .map_err(e)?;
        for (id, want, have) in bad {
            problems.push(format!(
                "figure row {id}: {have} of its {want} samples stored"
            ));
        }
        Ok(problems)
    }

    pub(crate) fn sql_err(&self, what: &str, e: rusqlite::Error) -> HistoryError {
        HistoryError::sqlite(&self.path, what, e)
    }
}

/// Unix seconds of a time (negative before 1970).
pub(crate) fn unix_seconds(t: std::time::SystemTime) -> i64 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}
