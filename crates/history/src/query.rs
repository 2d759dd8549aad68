//! Figures over time: which runs to look at ([`RunFilter`]), which figures ([`Query`]),
//! and one [`Point`] per run and figure.
//!
//! SQL text is assembled from fixed fragments only; every value (ids, fingerprints,
//! tag keys and values, times) is a bound parameter.

use crate::{unix_seconds, History, HistoryError};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// Which runs: every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    /// Machine fingerprint ([`crate::Fingerprint::fingerprint`]).
    pub machine: Option<String>,
    /// Host name from the envelope.
    pub host: Option<String>,
    /// Tags that must be present with these values (string tags as they are, other
    /// values as JSON text: `("rack", "3")` matches `{"rack": 3}` and `{"rack": "3"}`).
    pub tags: Vec<(String, String)>,
    /// Runs at or after this time (envelope `created_utc`).
    pub since: Option<SystemTime>,
    /// Runs at or before this time.
    pub until: Option<SystemTime>,
}

/// Which figures of which runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// One figure id (e.g. `mem.bandwidth.triad.all`); `None` = every figure.
    pub metric_id: Option<String>,
    /// Figures of one group (e.g. "memory bandwidth"); `None` = every group.
    pub group: Option<String>,
    /// Which runs.
    pub runs: RunFilter,
    /// At most this many points (the earliest first).
    pub limit: Option<usize>,
}

impl Query {
    /// Every run's value of one figure.
    pub fn metric(id: &str) -> Query {
        Query {
            metric_id: Some(id.into()),
            ..Query::default()
        }
    }
}

/// One figure of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The run.
    pub run_id: i64,
    /// When the run started (envelope `created_utc`, RFC 3339).
    pub time_utc: String,
    /// The same as Unix seconds.
    pub time_s: i64,
    /// The run's label.
    pub label: String,
    /// Host name.
    pub host: Option<String>,
    /// Machine fingerprint.
    pub machine: String,
    /// Figure id.
    pub metric_id: String,
    /// Figure group.
    pub group: String,
    /// Figure name.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Whether higher is better.
    pub higher_is_better: bool,
    /// Parameters the figure depends on.
    pub setup: Option<String>,
    /// Number of (finite) samples.
    pub samples: usize,
    /// Median of the samples.
    pub median: Option<f64>,
    /// Spread: median absolute deviation of the samples (unscaled).
    pub mad: Option<f64>,
    /// Smallest sample.
    pub min: Option<f64>,
    /// Largest sample.
    pub max: Option<f64>,
    /// The 95% interval given instead of samples (response-time percentiles).
    pub bounds: Option<(f64, f64)>,
    /// The run's tags.
    pub tags: serde_json::Value,
}

/// A stored run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Id.
    pub run_id: i64,
    /// [`crate::content_key`].
    pub content_key: String,
    /// Label.
    pub label: String,
    /// Envelope `created_utc`.
    pub time_utc: String,
    /// numalab version that wrote the bundle.
    pub tool_version: String,
    /// "measured", "modeled" or "imported".
    pub origin: String,
    /// Host name.
    pub host: Option<String>,
    /// The machine; its `memory_gib` is this run's memory (`memory_bytes` rounded), which
    /// is not part of the machine's identity.
    pub machine: crate::Fingerprint,
    /// Machine description for people.
    pub machine_description: String,
    /// Topology hash of the envelope.
    pub topology_hash: String,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Firmware (DMI BIOS vendor, version, date).
    pub firmware: Option<String>,
    /// Exact total memory, bytes.
    pub memory_bytes: Option<u64>,
    /// Where the bundle was first ingested from.
    pub source_path: Option<String>,
    /// When it was ingested.
    pub ingested_utc: String,
    /// Tags.
    pub tags: serde_json::Value,
    /// Figures stored.
    pub metric_count: usize,
}

/// A point with the row id of its figure, for loading samples.
pub(crate) struct Row {
    pub point: Point,
    pub metric_row: i64,
}

/// Appends the conditions of `f` on `run r` / `machine ma` to `sql`, binding values.
pub(crate) fn filter_sql(f: &RunFilter, sql: &mut String, args: &mut Vec<SqlValue>) {
    let mut bind = |sql: &mut String, frag: &str, v: SqlValue| {
        args.push(v);
        sql.push_str(&frag.replace('?', &format!("?{}", args.len())));
    };
    if let Some(m) = &f.machine {
        bind(sql, " AND ma.fingerprint = ?", SqlValue::Text(m.clone()));
    }
    if let Some(h) = &f.host {
        bind(sql, " AND r.host_name = ?", SqlValue::Text(h.clone()));
    }
    if let Some(t) = f.since {
        bind(
            sql,
            " AND r.time_s >= ?",
            SqlValue::Integer(unix_seconds(t)),
        );
    }
    if let Some(t) = f.until {
        bind(
            sql,
            " AND r.time_s <= ?",
            SqlValue::Integer(unix_seconds(t)),
        );
    }
    for (k, v) in &f.tags {
        bind(
            sql,
            " AND EXISTS (SELECT 1 FROM tag t WHERE t.run_id = r.id AND t.key = ?",
            SqlValue::Text(k.clone()),
        );
        bind(sql, " AND t.value = ?)", SqlValue::Text(v.clone()));
    }
}

fn tags_value(text: String) -> serde_json::Value {
    serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
}

impl History {
    /// The points of the figures `q` selects, oldest run first (then by run id and
    /// figure id).
    pub fn query(&self, q: &Query) -> Result<Vec<Point>, HistoryError> {
        Ok(self.rows(q)?.into_iter().map(|r| r.point).collect())
    }

    pub(crate) fn rows(&self, q: &Query) -> Result<Vec<Row>, HistoryError> {
        let mut sql = String::from(
            "SELECT r.id, r.time_utc, r.time_s, r.label, r.host_name, ma.fingerprint,
                    m.metric_id, m.metric_group, m.name, m.unit, m.higher_is_better, m.setup,
                    m.n, m.median, m.mad, m.min, m.max, m.bound_low, m.bound_high, r.tags, m.id
             FROM metric m
             JOIN run r ON r.id = m.run_id
             JOIN machine ma ON ma.id = r.machine_id
             WHERE 1 = 1",
        );
        let mut args: Vec<SqlValue> = Vec::new();
        if let Some(id) = &q.metric_id {
            args.push(SqlValue::Text(id.clone()));
            sql.push_str(&format!(" AND m.metric_id = ?{}", args.len()));
        }
        if let Some(g) = &q.group {
            args.push(SqlValue::Text(g.clone()));
            sql.push_str(&format!(" AND m.metric_group = ?{}", args.len()));
        }
        filter_sql(&q.runs, &mut sql, &mut args);
        sql.push_str(" ORDER BY r.time_s, r.id, m.metric_id");
        if let Some(n) = q.limit {
            args.push(SqlValue::Integer(i64::try_from(n).unwrap_or(i64::MAX)));
            sql.push_str(&format!(" LIMIT ?{}", args.len()));
        }
        let e = |e| self.sql_err("querying figures", e);
        let mut st = self.conn.prepare_cached(&sql).map_err(e)?;
        let rows = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                let bounds = match (r.get::<_, Option<f64>>(17)?, r.get::<_, Option<f64>>(18)?) {
                    (Some(a), Some(b)) => Some((a, b)),
                    _ => None,
                };
                Ok(Row {
                    point: Point {
                        run_id: r.get(0)?,
                        time_utc: r.get(1)?,
                        time_s: r.get(2)?,
                        label: r.get(3)?,
                        host: r.get(4)?,
                        machine: r.get(5)?,
                        metric_id: r.get(6)?,
                        group: r.get(7)?,
                        name: r.get(8)?,
                        unit: r.get(9)?,
                        higher_is_better: r.get(10)?,
                        setup: r.get(11)?,
                        samples: r.get::<_, i64>(12)?.max(0) as usize,
                        median: r.get(13)?,
                        mad: r.get(14)?,
                        min: r.get(15)?,
                        max: r.get(16)?,
                        bounds,
                        tags: tags_value(r.get(19)?),
                    },
                    metric_row: r.get(20)?,
                })
            })
            .map_err(e)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(e)?;
        Ok(rows)
    }

    /// The samples of one figure row, in their order.
    pub(crate) fn samples(&self, metric_row: i64) -> Result<Vec<f64>, HistoryError> {
        let e = |e| self.sql_err("reading samples", e);
        let mut st = self
            .conn
            .prepare_cached("SELECT value FROM sample WHERE metric_row = ?1 ORDER BY idx")
            .map_err(e)?;
        let v = st
            .query_map(params![metric_row], |r| r.get(0))
            .map_err(e)?
            .collect::<Result<Vec<f64>, _>>()
            .map_err(e)?;
        Ok(v)
    }

    /// The samples of one figure of one run, in their order; `None` when the run has no
    /// such figure.
    pub fn metric_samples(
        &self,
        run_id: i64,
        metric_id: &str,
    ) -> Result<Option<Vec<f64>>, HistoryError> {
        let row: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM metric WHERE run_id = ?1 AND metric_id = ?2",
                params![run_id, metric_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql_err("finding a figure", e))?;
        row.map(|r| self.samples(r)).transpose()
    }

    /// The runs `f` selects, oldest first.
    pub fn runs(&self, f: &RunFilter) -> Result<Vec<RunInfo>, HistoryError> {
        self.runs_where(f, None)
    }

    fn runs_where(&self, f: &RunFilter, id: Option<i64>) -> Result<Vec<RunInfo>, HistoryError> {
        let mut sql = String::from(
            "SELECT r.id, r.content_key, r.label, r.time_utc, r.tool_version, r.origin, r.host_name,
                    ma.fingerprint, ma.vendor, ma.model_name, ma.cpu_id, ma.cores, ma.pus,
                    ma.numa_nodes, NULL, ma.description, r.topology_hash, r.kernel,
                    r.firmware, r.memory_bytes, r.source_path, r.ingested_utc, r.tags,
                    r.metric_count
             FROM run r JOIN machine ma ON ma.id = r.machine_id
             WHERE 1 = 1",
        );
        let mut args = Vec::new();
        if let Some(id) = id {
            args.push(SqlValue::Integer(id));
            sql.push_str(" AND r.id = ?1");
        }
        filter_sql(f, &mut sql, &mut args);
        sql.push_str(" ORDER BY r.time_s, r.id");
        let e = |e| self.sql_err("listing runs", e);
        let mut st = self.conn.prepare_cached(&sql).map_err(e)?;
        let u = |v: Option<i64>| v.and_then(|v| u64::try_from(v).ok());
        let runs = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok(RunInfo {
                    run_id: r.get(0)?,
                    content_key: r.get(1)?,
                    label: r.get(2)?,
                    time_utc: r.get(3)?,
                    tool_version: r.get(4)?,
                    origin: r.get(5)?,
                    host: r.get(6)?,
                    machine: crate::Fingerprint {
                        fingerprint: r.get(7)?,
                        vendor: r.get(8)?,
                        model_name: r.get(9)?,
                        cpu_id: r.get(10)?,
                        cores: u(r.get(11)?),
                        pus: u(r.get(12)?),
                        numa_nodes: u(r.get(13)?),
                        // The run's memory: the machine's row has none since layout 4.
                        memory_gib: u(r.get(19)?).map(numalab_report::fingerprint::gib),
                    },
                    machine_description: r.get(15)?,
                    topology_hash: r.get(16)?,
                    kernel: r.get(17)?,
                    firmware: r.get(18)?,
                    memory_bytes: u(r.get(19)?),
                    source_path: r.get(20)?,
                    ingested_utc: r.get(21)?,
                    tags: tags_value(r.get(22)?),
                    metric_count: r.get::<_, i64>(23)?.max(0) as usize,
                })
            })
            .map_err(e)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(e)?;
        Ok(runs)
    }

    /// One stored run, if it exists.
    pub fn run(&self, run_id: i64) -> Result<Option<RunInfo>, HistoryError> {
        Ok(self
            .runs_where(&RunFilter::default(), Some(run_id))?
            .into_iter()
            .next())
    }
}
