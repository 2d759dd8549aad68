//! Records of the core-to-core latency probe (`c2c.pair`, `c2c.matrix`) and the matrix
//! they carry. `numalab_c2c` measures and analyses them and re-exports them under its
//! own paths.

use numalab_schema::RecordKind;
use numalab_stats::Summary;
use serde::{Deserialize, Serialize};

mod square;
pub use square::SquareMatrix;

/// A symmetric matrix of half round-trip latencies (ns) between CPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyMatrix {
    cpus: Vec<u32>,
    /// n x n; no value on the diagonal and where unmeasured.
    values: SquareMatrix,
}

impl LatencyMatrix {
    /// An empty matrix (nothing measured) over these CPUs, in this order.
    pub fn new(cpus: Vec<u32>) -> Self {
        let n = cpus.len();
        LatencyMatrix {
            cpus,
            values: SquareMatrix::new(n),
        }
    }

    /// Builds a matrix from rows (`rows[i][j]` = latency between `cpus[i]` and `cpus[j]`).
    /// Where both (i, j) and (j, i) are given, the cell is their mean; the diagonal is
    /// ignored. Rows may be shorter than `cpus` (missing cells are unmeasured).
    pub fn from_rows(cpus: Vec<u32>, rows: &[Vec<Option<f64>>]) -> Self {
        let mut m = LatencyMatrix::new(cpus);
        let n = m.n();
        for i in 0..n {
            for j in 0..i {
                let a = rows.get(i).and_then(|r| r.get(j).copied().flatten());
                let b = rows.get(j).and_then(|r| r.get(i).copied().flatten());
                let v = match (a, b) {
                    (Some(a), Some(b)) => Some((a + b) / 2.0),
                    (a, b) => a.or(b),
                };
                if let Some(v) = v {
                    m.set(i, j, v);
                }
            }
        }
        m
    }

    /// [`LatencyMatrix::from_rows`] of a record's cells, taken as they are (no copy: a
    /// 2,000-CPU matrix is 4 million cells, 32 MB) and made symmetric in place; cut or
    /// extended (a copy) when they are not as many as the CPUs.
    pub fn from_cells(cpus: Vec<u32>, cells: SquareMatrix) -> Self {
        let n = cpus.len();
        let mut v = if cells.n() == n {
            cells
        } else {
            cells.resized(n)
        };
        for i in 0..n {
            v.set(i, i, None);
            for j in 0..i {
                let m = match (v.get(i, j), v.get(j, i)) {
                    (Some(a), Some(b)) => Some((a + b) / 2.0),
                    (a, b) => a.or(b),
                };
                v.set(i, j, m);
                v.set(j, i, m);
            }
        }
        LatencyMatrix { cpus, values: v }
    }

    /// Number of CPUs.
    pub fn n(&self) -> usize {
        self.cpus.len()
    }

    /// The CPU ids (OS indices), in matrix order.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// Latency between the i-th and j-th CPUs (positions, not ids); `None` if unmeasured
    /// or i == j.
    pub fn get(&self, i: usize, j: usize) -> Option<f64> {
        if i == j {
            return None;
        }
        self.values.get(i, j)
    }

    /// Sets the latency between the i-th and j-th CPUs (both directions).
    pub fn set(&mut self, i: usize, j: usize, ns: f64) {
        if i == j {
            return;
        }
        self.values.set(i, j, Some(ns));
        self.values.set(j, i, Some(ns));
    }

    /// Clears a cell (both directions).
    pub fn clear(&mut self, i: usize, j: usize) {
        self.values.set(i, j, None);
        self.values.set(j, i, None);
    }

    /// Position of a CPU id in the matrix.
    pub fn index_of(&self, cpu: u32) -> Option<usize> {
        self.cpus.iter().position(|&c| c == cpu)
    }

    /// The cells (for JSON: `null` where unmeasured, and on the diagonal).
    pub fn cells(&self) -> &SquareMatrix {
        &self.values
    }

    /// Number of measured pairs (each unordered pair counted once).
    pub fn measured_pairs(&self) -> usize {
        self.values.rows().flatten().filter(|v| v.is_some()).count() / 2
    }

    /// Number of unordered pairs, n (n - 1) / 2.
    pub fn total_pairs(&self) -> usize {
        self.n() * self.n().saturating_sub(1) / 2
    }

    /// Every measured value, each unordered pair once.
    pub fn measured_values(&self) -> Vec<f64> {
        let n = self.n();
        let mut out = Vec::with_capacity(self.measured_pairs());
        for i in 0..n {
            for j in 0..i {
                if let Some(v) = self.get(i, j) {
                    out.push(v);
                }
            }
        }
        out
    }

    /// The sub-matrix over some positions, in the order given.
    pub fn select(&self, positions: &[usize]) -> LatencyMatrix {
        let mut m = LatencyMatrix::new(positions.iter().map(|&p| self.cpus[p]).collect());
        for (a, &i) in positions.iter().enumerate() {
            for (b, &j) in positions.iter().enumerate().take(a) {
                if let Some(v) = self.get(i, j) {
                    m.set(a, b, v);
                }
            }
        }
        m
    }
}

/// How the pairs of a run were chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Selection {
    /// Every pair of the chosen CPUs.
    Full,
    /// Every pair inside each group, plus a stratified sample across groups.
    Sampled {
        /// The groups (CPU ids) whose inside pairs are all measured.
        groups: Vec<Vec<u32>>,
        /// What the groups are (e.g. "L3 cache", "cluster").
        grouped_by: String,
        /// Pairs measured between each two groups.
        per_group_pair: usize,
        /// Seed of the sample.
        seed: u64,
    },
}

/// Which view of the matrix revealed a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// Group-mates are faster to each other than to outsiders.
    Latency,
    /// Group-mates see the rest of the machine alike (interchangeable CPUs).
    Profile,
    /// Both views agree on this partition.
    Both,
}

/// How much to trust the structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// The matrix is complete and clean.
    High,
    /// The matrix has holes, bad cells or too few CPUs: read the notes.
    Low,
}

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
    pub evidence: Evidence,
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
    /// Half round-trip latency, ns; cell (i, j) between `cpus[i]` and `cpus[j]`; null on
    /// the diagonal and where unmeasured. Rows of n numbers and nulls in JSON, one flat
    /// allocation in memory ([`SquareMatrix`]).
    pub matrix_ns: SquareMatrix,
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

/// Positions of `cpus` sorted by group, coarsest level first, then matrix order.
/// `levels` are the CPU groups of each level, finest first (as in a `c2c.matrix`
/// record), so a saved matrix is drawn in the same order as a live one.
pub fn order_by_groups(cpus: &[u32], levels: &[Vec<Vec<u32>>]) -> Vec<usize> {
    let mut pos: Vec<usize> = (0..cpus.len()).collect();
    let key = |p: usize| -> Vec<usize> {
        let cpu = cpus[p];
        let mut k: Vec<usize> = levels
            .iter()
            .rev()
            .map(|groups| {
                groups
                    .iter()
                    .position(|g| g.contains(&cpu))
                    .unwrap_or(usize::MAX)
            })
            .collect();
        k.push(p);
        k
    };
    pos.sort_by_key(|&p| key(p));
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cells taken as they are give the matrix that rows give: the mean where both
    /// directions are measured, either one where one is, nothing on the diagonal, rows
    /// and cells past the CPUs left out.
    #[test]
    fn cells_make_the_matrix_rows_make() {
        let rows = vec![
            vec![Some(9.0), Some(10.0), None, Some(30.0), Some(99.0)],
            vec![Some(12.0), None, Some(20.0)],
            vec![Some(31.5), Some(21.0), Some(5.0), None],
            vec![None, None],
            vec![Some(1.0)],
        ];
        let cpus = vec![4, 5, 6, 7];
        let copied = LatencyMatrix::from_rows(cpus.clone(), &rows);
        let padded = SquareMatrix::from_fn(5, |i, j| rows[i].get(j).copied().flatten());
        let owned = LatencyMatrix::from_cells(cpus, padded);
        assert_eq!(owned, copied);
        assert_eq!(owned.get(0, 1), Some(11.0));
        assert_eq!(owned.get(3, 0), Some(30.0));
        assert_eq!(owned.get(2, 2), None);
        assert_eq!(owned.measured_pairs(), 4);
        assert_eq!(owned.cells().n(), 4);
    }
}
