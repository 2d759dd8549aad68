//! The records `numalab c2c` writes (and `evaluate`, `report` and `compare` read):
//! one `c2c.pair` per measured pair, one `c2c.matrix` with the structure. The types live
//! in `numalab_records::c2c`; [`matrix_record`] builds a `c2c.matrix` from a matrix.

pub use numalab_records::c2c::{GroupJson, LevelJson, MatrixRecord, PairRecord};

use crate::compare::{compare, Comparison};
use crate::matrix::{LatencyMatrix, Selection};
use crate::structure::{self, Confidence, Structure};
use numalab_schema::{Machine, Origin};

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
pub fn matrix_record(
    matrix: &LatencyMatrix,
    machine: Option<&Machine>,
    meta: &MatrixMeta,
) -> (MatrixRecord, Structure, Option<Comparison>) {
    let structure = structure::infer(matrix);
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
        matrix_ns: matrix.rows(),
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
    (record, structure, comparison)
}
