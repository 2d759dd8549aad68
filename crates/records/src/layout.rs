//! Floorplan inference, its ground-truth accuracy and affinity advice: the records
//! `numalab layout` writes, `layout.inference` ([`InferenceRecord`], an inferred
//! floorplan with its fitted constants and confidence), `layout.groundtruth`
//! ([`GroundTruthRecord`], recovery accuracy at one noise level) and `layout.affinity`
//! ([`AffinityRecord`], cores for cooperating threads), with the plain data they hold.
//! `numalab_layout` builds them (and the latency model of an inference record) and
//! re-exports them under its own paths (`numalab_layout::record`, `numalab_layout::Kind`,
//! `numalab_layout::HopCosts`, ...).
//!
//! An inference record holds the mesh geometry it was fitted on ([`MeshGeometry`], which
//! is [`crate::mesh::Geometry`], the machine model's geometry), so other commands
//! (`layout affinity --layout`, `schedule --layout`) can predict the latency between any
//! two cores from it without the matrix. Stops are numbered `y * cols + x` (`u32`, the model's `StopId`).

use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// What a latency matrix relates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Core to core (a `numalab c2c` matrix).
    CoreToCore,
    /// Core to target (a line homed at each slice or served by each controller).
    CoreToTarget,
}

/// Whether hop costs are known or fitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HopCosts {
    /// Use the geometry's link cycles; fit one scale (ns per cycle).
    Fixed,
    /// Fit one cost (ns) per kind of link.
    Fit,
}

/// The mesh an inference record was fitted on ([`crate::mesh::Geometry`], the machine
/// model's geometry itself, under its record name) and its routing.
pub use crate::mesh::{Geometry as MeshGeometry, Routing as MeshRouting};

/// One restart of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Restart {
    /// Its seed.
    pub seed: u64,
    /// Final squared error, ns^2.
    pub sse: f64,
    /// Same placement as the best, modulo the mesh's symmetries.
    pub same_as_best: bool,
}

/// The mesh the matrix was fitted to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeometryInfo {
    /// Rows (y).
    pub rows: u32,
    /// Columns (x).
    pub cols: u32,
    /// "xy" or "yx".
    pub routing: String,
    /// Hop costs given (fixed) or fitted.
    pub hop_costs: HopCosts,
    /// Cycles of a vertical and a horizontal hop in the geometry (the given costs when
    /// fixed; the kinds of links when fitted).
    pub hop_cycles_vertical: Vec<u32>,
    /// Same, horizontal.
    pub hop_cycles_horizontal: Vec<u32>,
    /// Cores a tile holds.
    pub cores_per_tile: u32,
    /// The preset the geometry came from, if any.
    pub preset: Option<String>,
    /// Stops that may hold no core (not tiles, or tiles known disabled), `[x, y]`.
    pub no_cores: Vec<[u32; 2]>,
    /// Stops that may hold no target, `[x, y]`.
    pub no_targets: Vec<[u32; 2]>,
}

/// Where one core was placed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorePlacement {
    /// OS CPU id.
    pub cpu: u32,
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// Stop id (`y * cols + x`).
    pub stop: u32,
    /// Probability that this stop rather than the best alternative is right.
    pub confidence: f64,
    /// Growth of the squared error at the best alternative, ns^2.
    pub delta_sse_ns2: f64,
    /// The best alternative stop `[x, y]`.
    pub alternative: Option<[u32; 2]>,
}

/// Where one target was placed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetPlacement {
    /// Target name (a column of the matrix).
    pub target: String,
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// Stop id.
    pub stop: u32,
    /// As for cores.
    pub confidence: f64,
    /// As for cores.
    pub delta_sse_ns2: f64,
    /// As for cores.
    pub alternative: Option<[u32; 2]>,
}

/// A fitted constant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Constant {
    /// "base", "same_stop", "horizontal", "vertical", "per_cycle", ...
    pub name: String,
    /// Value, ns (ns per hop of that kind; ns per cycle for `per_cycle`).
    pub value_ns: f64,
}

impl Constant {
    /// The unit of the value: "ns" for `base` and `same_stop`, "ns per cycle" for
    /// `per_cycle`, "ns per hop" otherwise.
    pub fn unit(&self) -> &'static str {
        match self.name.as_str() {
            "base" | "same_stop" => "ns",
            "per_cycle" => "ns per cycle",
            _ => "ns per hop",
        }
    }
}

/// An inferred floorplan (`layout.inference`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InferenceRecord {
    /// The matrix file.
    pub input: String,
    /// Core-to-core or core-to-target.
    pub kind: Kind,
    /// Measured, imported or modeled.
    pub input_origin: String,
    /// The mesh.
    pub geometry: GeometryInfo,
    /// The model geometry itself (routing and link costs), to rebuild the latency model.
    pub geo: MeshGeometry,
    /// Every core.
    pub cores: Vec<CorePlacement>,
    /// Every target (core-to-target matrices).
    pub targets: Vec<TargetPlacement>,
    /// Fitted constants: base, same_stop, then one per hop kind (or per cycle).
    pub constants: Vec<Constant>,
    /// Base latency (no hop), ns.
    pub base_ns: f64,
    /// Offset of two cores on the same tile (or a core and a target at its own stop), ns.
    pub same_stop_ns: f64,
    /// Root mean square residual, ns.
    pub residual_rms_ns: f64,
    /// Sum of squared residuals, ns^2.
    pub sse_ns2: f64,
    /// Latencies fitted.
    pub observations: usize,
    /// Share of the latency variance the model explains.
    pub r_squared: f64,
    /// Groups of CPUs constrained to share a tile (from the c2c structure or given).
    pub tile_groups: Vec<Vec<u32>>,
    /// Tiles that could hold cores and hold none: the disabled tiles, as inferred.
    pub empty_tiles: Vec<[u32; 2]>,
    /// Symmetries the placement is defined up to.
    pub symmetries: Vec<String>,
    /// Every restart.
    pub restarts: Vec<Restart>,
    /// Restarts that ended at the same placement as the best (modulo symmetries).
    pub restarts_same_as_best: usize,
    /// Seed of the first restart.
    pub seed: u64,
    /// Annealing sweeps per restart.
    pub sweeps: usize,
    /// CPUs whose confidence is below 0.9.
    pub low_confidence_cpus: Vec<u32>,
    /// Facts and cautions, in sentences.
    pub notes: Vec<String>,
}

impl RecordKind for InferenceRecord {
    const KIND: &'static str = "layout.inference";
}

/// How close an inferred placement is to the truth, modulo symmetries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    /// Fraction of cores at exactly their true stop.
    pub exact_fraction: f64,
    /// Mean Manhattan distance (hops) between inferred and true stops.
    pub mean_displacement_hops: f64,
    /// Fraction of targets exactly placed (core-to-target matrices).
    pub target_exact_fraction: Option<f64>,
    /// The symmetry under which the inferred placement matches best.
    pub symmetry: String,
}

/// One trial of the accuracy curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Noise standard deviation, ns.
    pub noise_ns: f64,
    /// Seed of the truth (and of the search).
    pub seed: u64,
    /// Accuracy of the inferred placement.
    pub accuracy: Accuracy,
    /// Tile groups found in the noisy matrix by the c2c structure.
    pub tile_groups_found: usize,
    /// Of those, groups that are true tiles.
    pub tile_groups_correct: usize,
    /// Residual RMS of the fit, ns.
    pub residual_rms_ns: f64,
    /// Squared error of the true placement under its own best constants (what a perfect
    /// search would reach), ns^2, next to the inferred one's.
    pub truth_sse_ns2: f64,
    /// Squared error of the inferred placement, ns^2.
    pub inferred_sse_ns2: f64,
    /// The inferred placement fits at least as well as the true one (within rounding:
    /// 1e-9 of the sum of squared latencies): the search did its job.
    pub search_optimal: bool,
    /// Search time, s.
    pub seconds: f64,
}

/// Recovery accuracy at one noise level (`layout.groundtruth`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroundTruthRecord {
    /// Preset.
    pub preset: String,
    /// Matrix kind generated.
    pub kind: Kind,
    /// Hop costs given or fitted.
    pub hop_costs: HopCosts,
    /// Whether the search was told the disabled tiles.
    pub disabled_known: bool,
    /// Noise standard deviation, ns.
    pub noise_ns: f64,
    /// Mean fraction of cores placed exactly (modulo symmetries).
    pub exact_fraction_mean: f64,
    /// Worst trial.
    pub exact_fraction_min: f64,
    /// Mean displacement, hops.
    pub mean_displacement_hops: f64,
    /// Fraction of true tile pairs the c2c structure found (null without tiles).
    pub tile_groups_correct_fraction: Option<f64>,
    /// Trials whose inferred squared error is at most the true placement's: the search
    /// did its job; the remaining error comes from the noise, not the search.
    pub search_optimal_trials: usize,
    /// Median search time, s.
    pub seconds_median: f64,
    /// Every trial.
    pub trials: Vec<Trial>,
    /// The symmetries accuracy is taken modulo.
    pub symmetries: Vec<String>,
}

impl RecordKind for GroundTruthRecord {
    const KIND: &'static str = "layout.groundtruth";
}

/// Cores for cooperating threads (`layout.affinity`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffinityRecord {
    /// Threads.
    pub threads: usize,
    /// Where the latencies come from: "layout" (an inferred floorplan) or "c2c" (a matrix
    /// and its groups).
    pub source: String,
    /// Communication weights: "uniform" or the file.
    pub communication: String,
    /// CPU of each thread (thread i runs on `placement[i]`).
    pub placement: Vec<u32>,
    /// The CPUs, as a list ("0-3,8").
    pub cpulist: String,
    /// Weighted mean latency between communicating threads, ns.
    pub cost_ns: f64,
    /// The same for "scatter" (thread i on the i-th CPU in OS order).
    pub scatter_cost_ns: f64,
    /// CPUs of scatter.
    pub scatter_placement: Vec<u32>,
    /// scatter_cost / cost: how much faster communication is predicted to be.
    pub predicted_gain: f64,
    /// For each thread, the nearest target (slice or controller) to home its data at,
    /// when the layout has targets.
    pub nearest_targets: Vec<Option<String>>,
    /// Facts and cautions.
    pub notes: Vec<String>,
}

impl RecordKind for AffinityRecord {
    const KIND: &'static str = "layout.affinity";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json<T: Serialize>(v: T) -> String {
        serde_json::to_string(&v).unwrap()
    }

    #[test]
    fn enums_keep_their_json_names() {
        assert_eq!(json(Kind::CoreToCore), "\"core-to-core\"");
        assert_eq!(json(Kind::CoreToTarget), "\"core-to-target\"");
        assert_eq!(json(HopCosts::Fixed), "\"fixed\"");
        assert_eq!(json(HopCosts::Fit), "\"fit\"");
        assert_eq!(json(MeshRouting::Xy), "\"xy\"");
        assert_eq!(json(MeshRouting::Yx), "\"yx\"");
    }

    #[test]
    fn constants_know_their_units() {
        let c = |n: &str| Constant {
            name: n.into(),
            value_ns: 1.0,
        };
        assert_eq!(c("base").unit(), "ns");
        assert_eq!(c("same_stop").unit(), "ns");
        assert_eq!(c("per_cycle").unit(), "ns per cycle");
        assert_eq!(c("horizontal").unit(), "ns per hop");
    }

    #[test]
    fn kinds_are_the_layout_kinds() {
        assert_eq!(InferenceRecord::KIND, "layout.inference");
        assert_eq!(GroundTruthRecord::KIND, "layout.groundtruth");
        assert_eq!(AffinityRecord::KIND, "layout.affinity");
    }
}
