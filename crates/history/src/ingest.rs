//! Storing bundles: the content key, the hardware fingerprint, the size caps and the
//! one transaction per bundle.
//!
//! Why: a fleet copies, re-sends and re-collects bundles; keying runs by their content
//! makes ingest idempotent whatever the path, and one transaction per bundle makes it
//! safe to kill at any moment.

use crate::{retry, unix_seconds, History, HistoryError};
use numalab_report::load::Loaded;
use numalab_report::metrics::Metric;
use numalab_schema::record::{Bundle, Envelope, Record, Warning};
use numalab_schema::units::bytes;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Record kinds kept verbatim beside the figures: the runs of `numalab scale`, `policy`
/// and `sweep` (`harness.run`), which [`History::task_history`] returns for `schedule`.
pub const KEPT_KINDS: &[&str] = &["harness.run"];

/// Size caps on what is stored: a bundle over any of them is refused as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest bundle file (an output folder's `results.jsonl`, or a bundle file), bytes.
    /// No cap by default (`u64::MAX`): the reader's input limit applies (2 GiB,
    /// `NUMALAB_MAX_INPUT`), and memory is bounded by reading: a journal is streamed
    /// into an index, one record decoded at a time, a line over 128 MiB skipped with a
    /// warning, and the figures are made of at most
    /// [`numalab_report::load::PER_KIND`] records of a kind. Set it to refuse large
    /// bundles for another reason (disk, time).
    pub max_bundle_bytes: u64,
    /// Most records in a bundle.
    pub max_records: usize,
    /// Most figures in a bundle.
    pub max_metrics: usize,
    /// Most samples of one figure.
    pub max_samples_per_metric: usize,
    /// Longest string (label, figure id, name, unit, setup, tag key), bytes.
    pub max_text_bytes: usize,
    /// Largest tags object, as JSON text, bytes.
    pub max_tags_bytes: usize,
}

impl Default for Limits {
    /// No cap on the bundle file's size of its own (see [`Limits::max_bundle_bytes`]), 1,000,000 records, 100,000 figures, 1,000,000 samples
    /// per figure, 64 KiB per string and per tags object.
    fn default() -> Self {
        Limits {
            max_bundle_bytes: u64::MAX,
            max_records: 1_000_000,
            max_metrics: 100_000,
            max_samples_per_metric: 1_000_000,
            max_text_bytes: 64 << 10,
            max_tags_bytes: 64 << 10,
        }
    }
}

/// What the caller adds to a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IngestOptions {
    /// Label for people; default: the bundle's host name, else its folder or file name.
    pub label: Option<String>,
    /// Free-form tags: a JSON object (e.g. `{"cluster": "a", "node": "n17"}`); its
    /// top-level entries can be filtered on ([`crate::RunFilter::tags`]). `Null` = none.
    pub tags: Value,
}

/// The bundles to ingest for `paths`: a fleet folder (`numalab fleet run`'s) stands for
/// the bundle of every node in it, each tagged `fleet=<folder name>` and `node=<node>`
/// (tags given win) and labelled by its node unless a label was given; any other path
/// stands for itself. The second list names, one line each, the nodes without a bundle
/// (they failed before writing one), which are not ingested.
pub fn expand_fleets(
    paths: &[PathBuf],
    opts: &IngestOptions,
) -> (Vec<(PathBuf, IngestOptions)>, Vec<String>) {
    use numalab_report::fleet::{is_fleet, node_folders};
    let (mut out, mut skipped) = (Vec::new(), Vec::new());
    for b in paths {
        let nodes = match is_fleet(b).then(|| node_folders(b)) {
            Some(Ok(nodes)) => nodes,
            _ => {
                out.push((b.clone(), opts.clone()));
                continue;
            }
        };
        let fleet = b
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| b.display().to_string());
        for (node, dir) in nodes {
            if !dir.join("results.jsonl").is_file() {
                skipped.push(format!(
                    "{}: node {} has no bundle (see its status.json); not ingested",
                    b.display(),
                    numalab_schema::text::visible(&node, true)
                ));
                continue;
            }
            let mut o = opts.clone();
            if let serde_json::Value::Object(m) = &mut o.tags {
                m.entry("fleet")
                    .or_insert_with(|| serde_json::Value::String(fleet.clone()));
                m.entry("node")
                    .or_insert_with(|| serde_json::Value::String(node.clone()));
            }
            if o.label.is_none() {
                o.label = Some(node);
            }
            out.push((dir, o));
        }
    }
    (out, skipped)
}

/// What [`History::ingest`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum IngestOutcome {
    /// A new run was stored.
    Stored {
        /// Its id.
        run_id: i64,
        /// Its [`content_key`].
        content_key: String,
        /// Figures stored.
        metrics: usize,
        /// Problems met while reading the bundle (a cut-off last line...).
        warnings: Vec<Warning>,
    },
    /// A bundle with the same content was already stored; nothing changed (the tags and
    /// label given this time are not applied).
    AlreadyPresent {
        /// The stored run.
        run_id: i64,
        /// Its [`content_key`].
        content_key: String,
    },
}

impl IngestOutcome {
    /// The run's id, new or old.
    pub fn run_id(&self) -> i64 {
        match self {
            IngestOutcome::Stored { run_id, .. } | IngestOutcome::AlreadyPresent { run_id, .. } => {
                *run_id
            }
        }
    }
}

pub use numalab_report::fingerprint::Fingerprint;

/// Writes `v` as JSON with object keys sorted, whatever the map type serde_json uses.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The content key of a bundle: SHA-256 (64 hex digits) over the canonical JSON
/// (object keys sorted) of the envelope, then of each record in key order. It does
/// not depend on where the bundle lives, its modification time, the order the records
/// were written in, or whether it is a journal or a bundle file.
pub fn content_key(bundle: &Bundle) -> String {
    keyed(&bundle.envelope, &Fetch::Memory(bundle))
        .expect("records in memory are always there")
        .0
}

/// The records of a bundle being stored, with their payloads: in memory, or read back
/// one at a time from a journal kept as an index ([`Loaded`]: what must see every
/// record reads the journal again, so memory stays bounded).
enum Fetch<'a> {
    Memory(&'a Bundle),
    Loaded(&'a Loaded),
}

impl Fetch<'_> {
    /// Visits every record in key order (`false`: one could not be read back).
    fn in_key_order(&self, visit: &mut dyn FnMut(&Record) -> bool) -> bool {
        match self {
            Fetch::Memory(b) => {
                let mut order: Vec<usize> = (0..b.records.len()).collect();
                order.sort_by(|&x, &y| b.records[x].key.cmp(&b.records[y].key));
                for i in order {
                    if !visit(&b.records[i]) {
                        break;
                    }
                }
                true
            }
            Fetch::Loaded(l) => l.each_in_key_order(visit),
        }
    }

    /// Visits every record of `kind` in the bundle's order (`false`: one could not be
    /// read back).
    fn of_kind(&self, kind: &str, visit: &mut dyn FnMut(&Record) -> bool) -> bool {
        match self {
            Fetch::Memory(b) => {
                for r in b.records.iter().filter(|r| r.kind == kind) {
                    if !visit(r) {
                        break;
                    }
                }
                true
            }
            Fetch::Loaded(l) => l.each_record(kind, visit),
        }
    }
}

/// The content key and the envelope as JSON (one serialization for both); the records
/// are read one at a time, in key order. `None` when a record cannot be read back.
fn keyed(envelope: &Envelope, fetch: &Fetch<'_>) -> Option<(String, Value)> {
    let mut h = Sha256::new();
    let mut text = String::new();
    h.update(b"numalab-history-content-v1\n");
    let env = serde_json::to_value(envelope).expect("envelopes serialize");
    canonical(&env, &mut text);
    text.push('\n');
    h.update(text.as_bytes());
    let read = fetch.in_key_order(&mut |r| {
        text.clear();
        let v = serde_json::to_value(r).expect("records serialize");
        canonical(&v, &mut text);
        text.push('\n');
        h.update(text.as_bytes());
        true
    });
    if !read {
        return None;
    }
    let key = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Some((key, env))
}

/// The value a tag filter compares with: a string as it is, anything else as JSON.
pub(crate) fn tag_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn finite(samples: &[f64]) -> Vec<f64> {
    samples.iter().copied().filter(|v| v.is_finite()).collect()
}

impl History {
    /// Stores the bundle at `path` (an output folder, a journal or a bundle file) with
    /// default options. See [`History::ingest_with`].
    pub fn ingest(&mut self, path: &Path) -> Result<IngestOutcome, HistoryError> {
        self.ingest_with(path, &IngestOptions::default())
    }

    /// Stores the bundle at `path` with a label and tags: its figures
    /// ([`numalab_report::metrics::metrics`]), every sample, the machine's fingerprint
    /// and the records of [`KEPT_KINDS`], in one transaction. A bundle whose content is
    /// already stored is not stored again ([`IngestOutcome::AlreadyPresent`]).
    ///
    /// The file's size is checked against [`Limits::max_bundle_bytes`] before it is read;
    /// a journal of [`numalab_report::load::INDEX_FROM`] bytes or more is streamed
    /// into an index and its records are read back one at a time
    /// ([`numalab_report::load::load`]), so memory does not grow with its payloads.
    pub fn ingest_with(
        &mut self,
        path: &Path,
        opts: &IngestOptions,
    ) -> Result<IngestOutcome, HistoryError> {
        let file = if path.is_dir() {
            path.join(numalab_schema::journal::JOURNAL_FILE)
        } else {
            path.to_path_buf()
        };
        if let Ok(meta) = std::fs::metadata(&file) {
            if meta.is_file() && meta.len() > self.limits.max_bundle_bytes {
                return Err(HistoryError::TooLarge {
                    path: file,
                    what: "the bundle file".into(),
                    actual: bytes(meta.len()),
                    limit: bytes(self.limits.max_bundle_bytes),
                });
            }
        }
        let loaded = numalab_report::load::load(path)?;
        self.ingest_loaded(&loaded, opts)
    }

    /// Stores a bundle already read (or built in memory). See [`History::ingest_with`].
    pub fn ingest_loaded(
        &mut self,
        loaded: &Loaded,
        opts: &IngestOptions,
    ) -> Result<IngestOutcome, HistoryError> {
        self.check_bundle(&loaded.path, loaded.record_count())?;
        let metrics = numalab_report::metrics::metrics(loaded);
        // The figures of a kind are made of its first records: say so where it matters.
        let mut warnings = loaded.warnings.clone();
        for (kind, n) in loaded.over_bound() {
            warnings.push(Warning::new(
                "over-bound",
                numalab_report::load::over_bound_note(&loaded.label, &kind, n),
            ));
        }
        let mut opts = opts.clone();
        if opts.label.is_none() {
            opts.label = Some(loaded.label.clone());
        }
        self.store(
            &loaded.path,
            &loaded.bundle,
            &Fetch::Loaded(loaded),
            &metrics,
            &opts,
            warnings,
        )
    }

    /// Stores a bundle with figures the caller extracted (an importer, a benchmark):
    /// the figures are taken to be the bundle's, and the run is keyed by the bundle's
    /// [`content_key`] alone. Same checks and transaction as [`History::ingest_with`].
    pub fn ingest_with_metrics(
        &mut self,
        bundle: &Bundle,
        metrics: &[Metric],
        opts: &IngestOptions,
    ) -> Result<IngestOutcome, HistoryError> {
        self.check_bundle(Path::new(""), bundle.records.len())?;
        self.store(
            Path::new(""),
            bundle,
            &Fetch::Memory(bundle),
            metrics,
            opts,
            Vec::new(),
        )
    }

    fn check_bundle(&self, path: &Path, records: usize) -> Result<(), HistoryError> {
        if records > self.limits.max_records {
            return Err(HistoryError::TooLarge {
                path: path.to_path_buf(),
                what: "the record count".into(),
                actual: records.to_string(),
                limit: self.limits.max_records.to_string(),
            });
        }
        Ok(())
    }

    fn check_text(&self, path: &Path, what: &str, s: &str) -> Result<(), HistoryError> {
        if s.len() > self.limits.max_text_bytes {
            return Err(HistoryError::TooLarge {
                path: path.to_path_buf(),
                what: format!("{what} ({:?}...)", s.chars().take(40).collect::<String>()),
                actual: bytes(s.len() as u64),
                limit: bytes(self.limits.max_text_bytes as u64),
            });
        }
        Ok(())
    }

    fn store(
        &mut self,
        path: &Path,
        bundle: &Bundle,
        fetch: &Fetch<'_>,
        metrics: &[Metric],
        opts: &IngestOptions,
        warnings: Vec<Warning>,
    ) -> Result<IngestOutcome, HistoryError> {
        let env: &Envelope = &bundle.envelope;
        // Everything is checked before the transaction starts.
        let time = humantime::parse_rfc3339_weak(env.created_utc.trim()).map_err(|e| {
            HistoryError::Invalid {
                path: path.to_path_buf(),
                reason: format!(
                    "the envelope's created_utc {:?} is not an RFC 3339 time ({e}); the bundle was not stored",
                    env.created_utc.chars().take(60).collect::<String>()
                ),
            }
        })?;
        let tags = match &opts.tags {
            Value::Null => serde_json::Map::new(),
            Value::Object(m) => m.clone(),
            other => {
                return Err(HistoryError::Invalid {
                    path: self.path.clone(),
                    reason: format!(
                        "tags must be a JSON object like {{\"cluster\": \"a\"}}, not {}",
                        other.to_string().chars().take(60).collect::<String>()
                    ),
                })
            }
        };
        let tags_text = Value::Object(tags.clone()).to_string();
        if tags_text.len() > self.limits.max_tags_bytes {
            return Err(HistoryError::TooLarge {
                path: path.to_path_buf(),
                what: "the tags".into(),
                actual: bytes(tags_text.len() as u64),
                limit: bytes(self.limits.max_tags_bytes as u64),
            });
        }
        for k in tags.keys() {
            self.check_text(path, "a tag key", k)?;
        }
        if metrics.len() > self.limits.max_metrics {
            return Err(HistoryError::TooLarge {
                path: path.to_path_buf(),
                what: "the figure count".into(),
                actual: metrics.len().to_string(),
                limit: self.limits.max_metrics.to_string(),
            });
        }
        for m in metrics {
            for (what, s) in [
                ("a figure id", m.id.as_str()),
                ("a figure group", &m.group),
                ("a figure name", &m.name),
                ("a unit", &m.unit),
                ("a setup", m.setup.as_deref().unwrap_or("")),
            ] {
                self.check_text(path, what, s)?;
            }
            if m.samples.len() > self.limits.max_samples_per_metric {
                return Err(HistoryError::TooLarge {
                    path: path.to_path_buf(),
                    what: format!("the sample count of {:?}", m.id),
                    actual: m.samples.len().to_string(),
                    limit: self.limits.max_samples_per_metric.to_string(),
                });
            }
        }
        let label = opts
            .label
            .clone()
            .or_else(|| env.host.hostname.clone())
            .unwrap_or_else(|| "unnamed".into());
        self.check_text(path, "the label", &label)?;
        let changed = || {
            HistoryError::Invalid {
            path: path.to_path_buf(),
            reason: "a record could not be read back from the journal (was it rewritten while being stored?); the bundle was not stored; ingest it again".into(),
        }
        };
        let (key, mut light) = keyed(env, fetch).ok_or_else(changed)?;
        let fp = Fingerprint::of(&env.host);
        // The machine description is summarised in `machine`; the rest is kept.
        if let Some(host) = light.get_mut("host").and_then(Value::as_object_mut) {
            host.insert("topology".into(), Value::Null);
        }
        let envelope_json = light.to_string();
        let memory_bytes: Option<i64> = env.host.topology.as_ref().and_then(|m| {
            i64::try_from(m.summary.numa.iter().map(|n| n.memory_bytes).sum::<u64>()).ok()
        });
        let kernel = env.host.kernel.clone().or_else(|| {
            env.host
                .topology
                .as_ref()
                .and_then(|m| m.software.kernel.clone())
        });
        let source = (!path.as_os_str().is_empty()).then(|| {
            numalab_schema::text::path_text(
                &std::fs::canonicalize(path).unwrap_or(path.to_path_buf()),
            )
        });
        let origin = serde_json::to_value(env.origin)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        // The kept records are read back one at a time inside the transaction.
        let mut unreadable = false;
        let now = numalab_schema::record::now_utc();
        let as_i64 = |n: Option<u64>| n.and_then(|n| i64::try_from(n).ok());

        let outcome = retry(|| {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some(id) = tx
                .query_row(
                    "SELECT id FROM run WHERE content_key = ?1",
                    params![key],
                    |r| r.get::<_, i64>(0),
                )
                .optional()?
            {
                return Ok(IngestOutcome::AlreadyPresent {
                    run_id: id,
                    content_key: key.clone(),
                });
            }
            tx.prepare_cached(
                "INSERT INTO machine (fingerprint, vendor, model_name, cpu_id, cores, pus, numa_nodes, memory_gib, description)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (fingerprint) DO NOTHING",
            )?
            .execute(params![
                fp.fingerprint,
                fp.vendor,
                fp.model_name,
                fp.cpu_id,
                as_i64(fp.cores),
                as_i64(fp.pus),
                as_i64(fp.numa_nodes),
                // Memory is a run's (`run.memory_bytes`), not the machine's identity.
                Option::<i64>::None,
                fp.identity_description(),
            ])?;
            let machine_id: i64 = tx
                .prepare_cached("SELECT id FROM machine WHERE fingerprint = ?1")?
                .query_row(params![fp.fingerprint], |r| r.get(0))?;
            tx.prepare_cached(
                "INSERT INTO run (content_key, label, time_utc, time_s, tool_version, origin, host_name,
                     machine_id, topology_hash, kernel, firmware, memory_bytes, source_path,
                     ingested_utc, tags, metric_count, envelope)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            )?
            .execute(params![
                key,
                label,
                env.created_utc,
                unix_seconds(time),
                env.tool.version,
                origin,
                env.host.hostname,
                machine_id,
                env.host.topology_hash,
                kernel,
                numalab_report::fingerprint::firmware_of(&env.host),
                memory_bytes,
                source,
                now,
                tags_text,
                metrics.len() as i64,
                envelope_json,
            ])?;
            let run_id = tx.last_insert_rowid();
            {
                let mut tag =
                    tx.prepare_cached("INSERT INTO tag (run_id, key, value) VALUES (?1, ?2, ?3)")?;
                for (k, v) in &tags {
                    tag.execute(params![run_id, k, tag_text(v)])?;
                }
                let mut metric = tx.prepare_cached(
                    "INSERT INTO metric (run_id, metric_id, metric_group, name, unit, higher_is_better,
                         setup, bound_low, bound_high, n, median, mad, min, max)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                )?;
                let mut sample = tx.prepare_cached(
                    "INSERT INTO sample (metric_row, idx, value) VALUES (?1, ?2, ?3)",
                )?;
                for m in metrics {
                    let values = finite(&m.samples);
                    let s = numalab_stats::Summary::of(&values);
                    let bounds = m.bounds.filter(|(a, b)| a.is_finite() && b.is_finite());
                    metric.execute(params![
                        run_id,
                        m.id,
                        m.group,
                        m.name,
                        m.unit,
                        m.higher_is_better,
                        m.setup,
                        bounds.map(|b| b.0),
                        bounds.map(|b| b.1),
                        values.len() as i64,
                        s.as_ref().map(|s| s.median),
                        s.as_ref().map(|s| s.mad),
                        s.as_ref().map(|s| s.min),
                        s.as_ref().map(|s| s.max),
                    ])?;
                    let row = tx.last_insert_rowid();
                    for (i, v) in values.iter().enumerate() {
                        sample.execute(params![row, i as i64, v])?;
                    }
                }
                if !store_kept(&tx, fetch, run_id)? {
                    // Rolled back when the transaction is dropped.
                    unreadable = true;
                    return Err(rusqlite::Error::QueryReturnedNoRows);
                }
            }
            tx.commit()?;
            Ok(IngestOutcome::Stored {
                run_id,
                content_key: key.clone(),
                metrics: metrics.len(),
                warnings: warnings.clone(),
            })
        });
        if unreadable {
            return Err(changed());
        }
        let outcome = outcome.map_err(|e| self_err(&self.path, e))?;
        Ok(outcome)
    }
}

/// Stores the records of [`KEPT_KINDS`] of run `run_id`, read back one at a time;
/// `false` when one could not be read back.
fn store_kept(
    tx: &rusqlite::Transaction<'_>,
    fetch: &Fetch<'_>,
    run_id: i64,
) -> rusqlite::Result<bool> {
    let mut rec = tx.prepare_cached(
        "INSERT INTO kept_record (run_id, key, kind, record) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for kind in KEPT_KINDS {
        let mut failed = None;
        let read = fetch.of_kind(kind, &mut |r| {
            let json = serde_json::to_string(r).expect("records serialize");
            match rec.execute(params![run_id, r.key, r.kind, json]) {
                Ok(_) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        if !read {
            return Ok(false);
        }
    }
    Ok(true)
}

fn self_err(path: &Path, e: rusqlite::Error) -> HistoryError {
    HistoryError::sqlite(path, "storing the bundle", e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_sorts_keys_at_every_level() {
        let v: Value =
            serde_json::from_str(r#"{"b":1,"a":{"d":[{"z":1,"y":2}],"c":"x\"y"}}"#).unwrap();
        let mut s = String::new();
        canonical(&v, &mut s);
        assert_eq!(s, r#"{"a":{"c":"x\"y","d":[{"y":2,"z":1}]},"b":1}"#);
    }
}
