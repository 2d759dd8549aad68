//! The records `numalab c2c` writes (and `evaluate`, `report` and `compare` read):
//! one `c2c.pair` per measured pair, one `c2c.matrix` with the structure. The types live
//! in `numalab_records::c2c`; [`matrix_record`] builds a `c2c.matrix` from a matrix.

pub use numalab_records::c2c::{GroupJson, LevelJson, MatrixRecord, PairRecord};

use crate::compare::{compare, Comparison};
use crate::csv::Import;
use crate::matrix::{LatencyMatrix, Selection};
use crate::structure::{self, Confidence, Interrupted, Structure};
use numalab_schema::record::Host;
use numalab_schema::{Machine, Origin, Record};

/// What a matrix record says besides the matrix and its structure.
pub struct MatrixMeta {
    /// "cas", "flag" or "imported".
    pub variant: String,
    /// Statistic of the samples used as the cell value ("median"; "as imported").
    pub statistic: String,
    /// Where the line lived: "first-cpu-node" or "node:N".
    pub home_node_policy: Option<String>,
    /// How the pairs were chosen.
    pub selection: Option<Selection>,
    /// Measured or imported.
    pub origin: Origin,
    /// The record key.
    pub key: String,
    /// Notes of the run (failed pairs start with "pair ").
    pub extra_notes: Vec<String>,
}

/// The `c2c.matrix` record of a matrix: its structure inferred, compared with the
/// machine's hwloc topology when there is one; a failed pair makes the confidence low.
/// Returns the structure and the comparison too, for the caller's rendering.
/// [`Interrupted`] when Ctrl-C or SIGTERM stops the inference ([`structure::try_infer`]).
pub fn matrix_record(
    matrix: &LatencyMatrix,
    machine: Option<&Machine>,
    meta: &MatrixMeta,
) -> Result<(MatrixRecord, Structure, Option<Comparison>), Interrupted> {
    let structure = structure::try_infer(matrix)?;
    let comparison = machine.map(|m| compare(matrix, &structure, m));
    let mut notes = structure.notes.clone();
    notes.extend(meta.extra_notes.iter().cloned());
    let confidence = if meta.extra_notes.iter().any(|n| n.starts_with("pair ")) {
        Confidence::Low
    } else {
        structure.confidence
    };
    let record = MatrixRecord {
        cpus: matrix.cpus().to_vec(),
        matrix_ns: matrix.cells().clone(),
        groups: structure
            .levels
            .iter()
            .map(|l| {
                l.groups
                    .iter()
                    .map(|g| GroupJson {
                        cpus: g.cpus.clone(),
                        intra_ns: g.intra_ns,
                        inter_ns: g.inter_ns,
                    })
                    .collect()
            })
            .collect(),
        levels: structure
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| LevelJson {
                evidence: l.evidence,
                separation: l.separation,
                intra_ns: l.intra_ns,
                inter_ns: l.inter_ns,
                hwloc: comparison
                    .as_ref()
                    .and_then(|c| c.level_names.get(i).cloned().flatten()),
            })
            .collect(),
        variant: meta.variant.clone(),
        statistic: meta.statistic.clone(),
        home_node_policy: meta.home_node_policy.clone(),
        selection: meta.selection.clone(),
        confidence,
        notes,
        topology_comparison: comparison
            .as_ref()
            .map(|c| c.sentences.clone())
            .unwrap_or_default(),
    };
    Ok((record, structure, comparison))
}

/// The key of an imported matrix's `c2c.matrix` record.
pub const IMPORTED_KEY: &str = "c2c/matrix/imported";

/// The `c2c.matrix` record of a matrix imported from core-to-core-latency's CSV, keyed
/// [`IMPORTED_KEY`] with the imported origin: its values taken as they are, the import's
/// doubts and its assumption (CPU ids 0..N-1 in row order, means of samples) in the
/// notes, compared with `machine` when its topology is given. Returns the structure too;
/// [`Interrupted`] when Ctrl-C or SIGTERM stops the inference.
pub fn imported(
    import: &Import,
    machine: Option<&Machine>,
) -> Result<(Record, Structure), Interrupted> {
    let mut notes = import.problems.clone();
    notes.push(
        "imported from core-to-core-latency's CSV: CPU ids are assumed to be 0..N-1 in row order, values are means of samples"
            .into(),
    );
    let meta = MatrixMeta {
        variant: "imported".into(),
        statistic: "as imported".into(),
        home_node_policy: None,
        selection: None,
        origin: Origin::Imported,
        key: IMPORTED_KEY.into(),
        extra_notes: notes,
    };
    let (record, structure, _) = matrix_record(&import.matrix, machine, &meta)?;
    Ok((Record::new(meta.key, meta.origin, &record), structure))
}

/// The host an imported matrix is recorded on: unknown but for the file it came from
/// (`imported:PATH`) and, when given, the topology it was measured on.
pub fn imported_host(path: &std::path::Path, machine: Option<&Machine>) -> Host {
    let mut host = Host::unknown(format!("imported:{}", path.display()));
    if let Some(m) = machine {
        host.topology_hash = m.topology_hash();
        host.topology = Some(m.clone());
    }
    host
}

/// The configuration an imported matrix is recorded with: the file and the topology
/// given with it (null without one).
pub fn import_config(
    path: &std::path::Path,
    topology: Option<&std::path::Path>,
) -> serde_json::Value {
    serde_json::json!({ "input": path.display().to_string(),
        "topology": topology.map(|p| p.display().to_string()) })
}

/// Whether `numalab c2c` shows this record of its journal beside the matrix keyed
/// `key`: every record but the other `c2c.matrix` records (its pairs and itself).
pub fn shown_with(record: &Record, key: &str) -> bool {
    record.kind != <MatrixRecord as numalab_schema::RecordKind>::KIND || record.key == key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_import_is_recorded_as_imported_with_its_doubts_and_assumption() {
        let import = crate::csv::parse(b",,\n50,,\n90,90,\n", "m.csv").unwrap();
        let (rec, structure) = imported(&import, None).unwrap();
        assert_eq!(rec.key, IMPORTED_KEY);
        assert_eq!(rec.origin, Origin::Imported);
        let m: MatrixRecord = rec.decode().unwrap().unwrap();
        assert_eq!(m.cpus, vec![0, 1, 2]);
        assert_eq!(m.variant, "imported");
        assert!(m
            .notes
            .last()
            .unwrap()
            .starts_with("imported from core-to-core-latency's CSV"));
        assert_eq!(m.matrix_ns.get(1, 0), Some(50.0));
        assert_eq!(m.matrix_ns.get(2, 1), Some(90.0));
        assert_eq!(structure.levels.len(), m.levels.len());
        let host = imported_host(std::path::Path::new("m.csv"), None);
        assert_eq!(host.topology_hash, "imported:m.csv");
        assert!(host.topology.is_none());
        assert_eq!(
            import_config(std::path::Path::new("m.csv"), None),
            serde_json::json!({"input": "m.csv", "topology": null})
        );
        assert!(shown_with(&rec, IMPORTED_KEY));
        assert!(!shown_with(&rec, "c2c/matrix/cas"));
        let mut pair = rec.clone();
        pair.kind = "c2c.pair".into();
        assert!(shown_with(&pair, "c2c/matrix/cas"));
    }
}
