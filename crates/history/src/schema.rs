//! The database layout and its migrations.
//!
//! Why: a history outlives the numalab that created it, so its layout is versioned and
//! every change is a migration step, never an edit of an earlier step. `PRAGMA
//! user_version` holds the number of steps applied; opening a database applies the
//! missing steps in order, each in one transaction together with the new version, so a
//! crash during a migration leaves the previous version intact. A database with a
//! higher version than [`SCHEMA_VERSION`] was written by a newer numalab and is refused.

use crate::HistoryError;
use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;

/// One step of the layout: the SQL (and code) that takes version `version - 1` to
/// `version`.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The version after this step (1 for the first step).
    pub version: u32,
    /// What the step changes, for people.
    pub summary: &'static str,
    /// The SQL, run as one batch inside the step's transaction.
    pub sql: &'static str,
    /// What SQL cannot do, run after `sql` in the same transaction.
    pub code: Option<fn(&Connection) -> rusqlite::Result<()>>,
}

/// `PRAGMA application_id` of a numalab history ("nlhi"): a SQLite file of another
/// program is refused instead of being migrated.
pub const APPLICATION_ID: i32 = 0x6e6c_6869;

/// Every migration step, in order; step `i` has version `i + 1`. Append only.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        summary: "machines, runs, metrics and their samples",
        sql: r#"
CREATE TABLE machine (
    id          INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL UNIQUE,
    vendor      TEXT,
    model_name  TEXT,
    cpu_id      TEXT,
    cores       INTEGER,
    pus         INTEGER,
    numa_nodes  INTEGER,
    memory_gib  INTEGER,
    description TEXT NOT NULL
);
CREATE TABLE run (
    id            INTEGER PRIMARY KEY,
    content_key   TEXT NOT NULL UNIQUE,
    label         TEXT NOT NULL,
    time_utc      TEXT NOT NULL,
    time_s        INTEGER NOT NULL,
    tool_version  TEXT NOT NULL,
    origin        TEXT NOT NULL,
    host_name     TEXT,
    machine_id    INTEGER NOT NULL REFERENCES machine(id),
    topology_hash TEXT NOT NULL,
    kernel        TEXT,
    firmware      TEXT,
    memory_bytes  INTEGER,
    source_path   TEXT,
    ingested_utc  TEXT NOT NULL,
    tags          TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(tags)),
    metric_count  INTEGER NOT NULL,
    envelope      TEXT NOT NULL CHECK (json_valid(envelope))
);
CREATE INDEX run_by_time ON run(time_s, id);
CREATE INDEX run_by_machine ON run(machine_id, time_s);
CREATE TABLE metric (
    id               INTEGER PRIMARY KEY,
    run_id           INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    metric_id        TEXT NOT NULL,
    metric_group     TEXT NOT NULL,
    name             TEXT NOT NULL,
    unit             TEXT NOT NULL,
    higher_is_better INTEGER NOT NULL CHECK (higher_is_better IN (0, 1)),
    setup            TEXT,
    bound_low        REAL,
    bound_high       REAL,
    n                INTEGER NOT NULL,
    median           REAL,
    mad              REAL,
    min              REAL,
    max              REAL,
    UNIQUE (run_id, metric_id)
);
CREATE INDEX metric_by_id ON metric(metric_id, run_id);
CREATE TABLE sample (
    metric_row INTEGER NOT NULL REFERENCES metric(id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    value      REAL NOT NULL,
    PRIMARY KEY (metric_row, idx)
) WITHOUT ROWID;
"#,
        code: None,
    },
    Migration {
        version: 2,
        summary: "tags as rows (key, value) for filtering, filled from run.tags",
        sql: r#"
CREATE TABLE tag (
    run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX tag_by_value ON tag(key, value, run_id);
INSERT INTO tag (run_id, key, value)
    SELECT run.id, j.key,
           CASE j.type
               WHEN 'text' THEN j.value
               WHEN 'true' THEN 'true'
               WHEN 'false' THEN 'false'
               WHEN 'null' THEN 'null'
               ELSE CAST(j.value AS TEXT)
           END
    FROM run, json_each(run.tags) AS j
    WHERE json_type(run.tags) = 'object';
"#,
        code: None,
    },
    Migration {
        version: 3,
        summary: "records kept verbatim for task histories (harness.run)",
        sql: r#"
CREATE TABLE kept_record (
    run_id INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    kind   TEXT NOT NULL,
    record TEXT NOT NULL CHECK (json_valid(record)),
    PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE INDEX kept_by_kind ON kept_record(kind, run_id);
"#,
        code: None,
    },
    Migration {
        version: 4,
        summary: "machines re-keyed without memory (fingerprint recipe 2): one machine whose \
                  MemTotal moved is one machine; memory stays per run (run.memory_bytes)",
        sql: "UPDATE machine SET memory_gib = NULL;",
        code: Some(rekey_machines),
    },
];

/// Layout 4: every machine's fingerprint and description from the current recipe
/// ([`crate::Fingerprint::hash`], memory left out), and machines that now share a
/// fingerprint merged into the one with the lowest id (their runs moved to it).
fn rekey_machines(conn: &Connection) -> rusqlite::Result<()> {
    let u = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok());
    let machines: Vec<(i64, crate::Fingerprint)> = conn
        .prepare(
            "SELECT id, vendor, model_name, cpu_id, cores, pus, numa_nodes FROM machine ORDER BY id",
        )?
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                crate::Fingerprint {
                    fingerprint: String::new(),
                    vendor: r.get(1)?,
                    model_name: r.get(2)?,
                    cpu_id: r.get(3)?,
                    cores: u(r.get(4)?),
                    pus: u(r.get(5)?),
                    numa_nodes: u(r.get(6)?),
                    memory_gib: None,
                },
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut keep: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    let mut kept: Vec<(i64, crate::Fingerprint)> = Vec::new();
    for (id, mut fp) in machines {
        fp.fingerprint = fp.hash();
        match keep.get(&fp.fingerprint) {
            Some(&first) => {
                conn.execute(
                    "UPDATE run SET machine_id = ?1 WHERE machine_id = ?2",
                    [first, id],
                )?;
                conn.execute("DELETE FROM machine WHERE id = ?1", [id])?;
            }
            None => {
                keep.insert(fp.fingerprint.clone(), id);
                kept.push((id, fp));
            }
        }
    }
    // Old fingerprints are 16 hex digits too: clear them all before writing the new
    // ones, so that no update meets a stale value under the UNIQUE constraint.
    for (id, _) in &kept {
        conn.execute(
            "UPDATE machine SET fingerprint = 'rekeying-' || id WHERE id = ?1",
            [id],
        )?;
    }
    for (id, fp) in &kept {
        conn.execute(
            "UPDATE machine SET fingerprint = ?1, description = ?2 WHERE id = ?3",
            rusqlite::params![fp.fingerprint, fp.identity_description(), id],
        )?;
    }
    Ok(())
}

/// The layout version this numalab writes: the number of [`MIGRATIONS`].
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

fn version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
        .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
}

/// Applies the missing migration steps, each in its own immediate transaction (the
/// version is read again inside it, so concurrent openers apply each step once).
/// What the first bytes of an existing file say it is, read without SQLite (which would
/// switch a file to WAL mode, a write, before numalab could tell whose it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// Zero bytes: a history to be (`touch`ed, or made by `mktemp`).
    Empty,
    /// A numalab history (its application id), or an empty SQLite database (no table).
    Ours,
    /// A SQLite database of another program: never to be written.
    Foreign,
    /// No SQLite header: SQLite says what it is (not a database, or damaged).
    Other,
}

/// Reads the SQLite header of `path` (the first 108 bytes: the magic, the user version at
/// 60 and the application id at 68, both big-endian; the schema table's cell count at
/// 103 on page 1). A database whose application id is not numalab's, or with a version
/// or a table but no id, is another program's.
pub(crate) fn found(path: &Path) -> std::io::Result<Found> {
    use std::io::Read;
    let mut head = Vec::with_capacity(108);
    std::fs::File::open(path)?
        .take(108)
        .read_to_end(&mut head)?;
    if head.is_empty() {
        return Ok(Found::Empty);
    }
    if head.len() < 100 || !head.starts_with(b"SQLite format 3\0") {
        return Ok(Found::Other);
    }
    let be32 = |at: usize| i32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let (version, app) = (be32(60), be32(68));
    if app == APPLICATION_ID {
        return Ok(Found::Ours);
    }
    // Page 1's b-tree header follows the 100-byte file header: its cell count is the
    // number of schema entries (tables, indexes) at the root.
    let cells = head
        .get(103..105)
        .map_or(0, |c| u16::from_be_bytes([c[0], c[1]]));
    Ok(if app != 0 || version != 0 || cells > 0 {
        Found::Foreign
    } else {
        Found::Ours
    })
}

pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), HistoryError> {
    loop {
        let step = crate::retry(|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let v = version(&tx)?;
            let app: i32 = tx.query_row("PRAGMA application_id", [], |r| r.get(0))?;
            if v > SCHEMA_VERSION {
                return Ok(Err(v));
            }
            if v == 0 {
                // A fresh file, or a SQLite database of another program.
                let tables: i64 = tx.query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
                    [],
                    |r| r.get(0),
                )?;
                if tables > 0 || (app != 0 && app != APPLICATION_ID) {
                    return Ok(Err(0));
                }
            } else if app != APPLICATION_ID {
                return Ok(Err(0));
            }
            if v == SCHEMA_VERSION {
                return Ok(Ok(false));
            }
            let m = &MIGRATIONS[v as usize];
            tx.execute_batch(m.sql)?;
            if let Some(code) = m.code {
                code(&tx)?;
            }
            tx.pragma_update(None, "user_version", m.version)?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
            tx.commit()?;
            Ok(Ok(true))
        })
        .map_err(|e| HistoryError::sqlite(path, "migrating the history", e))?;
        match step {
            Ok(true) => continue,
            Ok(false) => return Ok(()),
            Err(0) => {
                return Err(HistoryError::NotAHistory {
                    path: path.to_path_buf(),
                })
            }
            Err(found) => {
                return Err(HistoryError::NewerSchema {
                    path: path.to_path_buf(),
                    found,
                    supported: SCHEMA_VERSION,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1);
        }
    }
}
