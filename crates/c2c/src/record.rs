//! The records `numalab c2c` writes (and `evaluate`, `report` and `compare` read):
//! one `c2c.pair` per measured pair, one `c2c.matrix` with the structure.

use crate::matrix::Selection;
use crate::structure::{self, Confidence};
use numalab_schema::RecordKind;
use numalab_stats::Summary;
use serde::{Deserialize, Serialize};

/// One measured pair (`c2c.pair`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRecord {
    /// CPU of the first thread (starts and times each round trip).
    pub first: u32,
    /// CPU of the answering thread.
    pub second: u32,
    /// "cas" or "flag".
    pub variant: String,
    /// Node asked for the line (null: first touch by the first thread).
    pub home_node_requested: Option<u32>,
    /// Node the kernel placed the line on.
    pub home_node: Option<u32>,
    /// Round trips per sample.
    pub round_trips: u32,
    /// Median half round-trip time over samples, ns (the matrix value).
    pub latency_ns: f64,
    /// Statistics of the samples (ns).
    pub summary: Summary,
    /// Half round-trip time of each sample, ns.
    pub samples_ns: Vec<f64>,
    /// Wall time of the pair (setup, warm-up, samples), ns.
    pub wall_ns: u64,
}

impl RecordKind for PairRecord {
    const KIND: &'static str = "c2c.pair";
}

/// One group in the JSON contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupJson {
    /// CPU ids.
    pub cpus: Vec<u32>,
    /// Median latency inside the group, ns.
    pub intra_ns: Option<f64>,
    /// Median latency to the other groups of the same parent, ns.
    pub inter_ns: Option<f64>,
}

/// What a level is, next to `groups`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelJson {
    /// "latency", "profile" or "both".
    pub evidence: structure::Evidence,
    /// Median per-CPU separation (nearest outsider / farthest mate).
    pub separation: f64,
    /// Median latency inside groups, ns.
    pub intra_ns: Option<f64>,
    /// Median latency between groups of the same parent, ns.
    pub inter_ns: Option<f64>,
    /// The hwloc partition this level matches, if any.
    pub hwloc: Option<String>,
}

/// The matrix and its structure (`c2c.matrix`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixRecord {
    /// CPU ids, in matrix order.
    pub cpus: Vec<u32>,
    /// Half round-trip latency, ns; `matrix_ns[i][j]` between `cpus[i]` and `cpus[j]`;
    /// null on the diagonal and where unmeasured.
    pub matrix_ns: Vec<Vec<Option<f64>>>,
    /// Levels of groups, finest first.
    pub groups: Vec<Vec<GroupJson>>,
    /// For each level of `groups`: how it was found and what hwloc calls it.
    pub levels: Vec<LevelJson>,
    /// "cas", "flag" or "imported".
    pub variant: String,
    /// Statistic of the samples used as the cell value ("median"; "as imported").
    pub statistic: String,
    /// Where the line lived: "first-cpu-node" or "node:N" (null when imported).
    pub home_node_policy: Option<String>,
    /// How the pairs were chosen.
    pub selection: Option<Selection>,
    /// "high" or "low".
    pub confidence: Confidence,
    /// Why the confidence is low, and facts about the input.
    pub notes: Vec<String>,
    /// Disagreements between latency and hwloc, in sentences.
    pub topology_comparison: Vec<String>,
}

impl RecordKind for MatrixRecord {
    const KIND: &'static str = "c2c.matrix";
}
