//! The records `numalab layout` writes: `layout.inference` (an inferred floorplan with its
//! fitted constants and confidence), `layout.groundtruth` (recovery accuracy at one noise
//! level) and `layout.affinity` (cores for cooperating threads). Schedule records are in
//! `numalab_schedule::record`.
//!
//! An inference record holds the model geometry it was fitted on, so other commands
//! (`layout affinity --layout`, `schedule --layout`) can predict the latency between any two
//! cores from it without the matrix.

use crate::error::LayoutError;
use crate::grid::{Grid, HopCosts};
use crate::groundtruth::Trial;
use crate::infer::{Inference, Kind, Measured, Restart};
use numalab_model::geometry::{Geometry, StopId};
use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

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
    pub stop: StopId,
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
    pub stop: StopId,
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
    pub geo: Geometry,
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

impl InferenceRecord {
    /// Builds the record of an inference.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        input: &str,
        origin: &str,
        grid: &Grid,
        preset: Option<String>,
        m: &Measured,
        inf: &Inference,
        tile_groups: &[Vec<u32>],
        search: &crate::infer::Options,
        notes: Vec<String>,
    ) -> InferenceRecord {
        let xy = |s: StopId| {
            let (x, y) = grid.xy(s);
            [x, y]
        };
        let cores: Vec<CorePlacement> = m
            .cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                let s = inf.core_stop[i];
                let mg = inf.core_margin[i];
                CorePlacement {
                    cpu,
                    x: xy(s)[0],
                    y: xy(s)[1],
                    stop: s,
                    confidence: mg.confidence,
                    delta_sse_ns2: mg.delta_sse,
                    alternative: mg.alternative.map(xy),
                }
            })
            .collect();
        let targets = m
            .targets
            .iter()
            .enumerate()
            .filter(|_| m.kind == Kind::CoreToTarget)
            .map(|(j, t)| {
                let s = inf.target_stop[j];
                let mg = inf.target_margin[j];
                TargetPlacement {
                    target: t.clone(),
                    x: xy(s)[0],
                    y: xy(s)[1],
                    stop: s,
                    confidence: mg.confidence,
                    delta_sse_ns2: mg.delta_sse,
                    alternative: mg.alternative.map(xy),
                }
            })
            .collect();
        let names = grid.coefficient_names();
        let mut constants = vec![Constant {
            name: "base".into(),
            value_ns: inf.solution.beta[0],
        }];
        for (k, n) in names.iter().enumerate() {
            constants.push(Constant {
                name: n.clone(),
                value_ns: inf.solution.beta[k + 1],
            });
        }
        let nobs = m.obs.len();
        let mean = m.obs.iter().map(|o| o.y).sum::<f64>() / nobs.max(1) as f64;
        let sst: f64 = m.obs.iter().map(|o| (o.y - mean).powi(2)).sum();
        let occupied: Vec<StopId> = inf.core_stop.clone();
        let empty_tiles = grid
            .core_stops()
            .into_iter()
            .filter(|s| !occupied.contains(s))
            .map(xy)
            .collect();
        let stops_without = |f: &dyn Fn(usize) -> bool| -> Vec<[u32; 2]> {
            (0..grid.stops())
                .filter(|&s| !f(s))
                .map(|s| xy(s as StopId))
                .collect()
        };
        let classes = |h: bool| -> Vec<u32> {
            let mut v: Vec<u32> = grid
                .classes
                .iter()
                .filter(|c| c.horizontal == h)
                .map(|c| c.cycles)
                .collect();
            v.dedup();
            v
        };
        let geometry = GeometryInfo {
            rows: grid.geo.rows,
            cols: grid.geo.cols,
            routing: format!("{:?}", grid.geo.routing).to_lowercase(),
            hop_costs: grid.hop_costs,
            hop_cycles_vertical: classes(false),
            hop_cycles_horizontal: classes(true),
            cores_per_tile: grid.capacity,
            preset,
            no_cores: stops_without(&|s| grid.core_slot[s]),
            no_targets: if m.kind == Kind::CoreToTarget {
                stops_without(&|s| grid.target_slot[s])
            } else {
                Vec::new()
            },
        };
        let low_confidence_cpus = cores
            .iter()
            .filter(|c| c.confidence < 0.9)
            .map(|c| c.cpu)
            .collect();
        InferenceRecord {
            input: input.to_string(),
            kind: m.kind,
            input_origin: origin.to_string(),
            geometry,
            geo: grid.geo.clone(),
            cores,
            targets,
            base_ns: inf.solution.beta[0],
            same_stop_ns: inf.solution.beta[1],
            constants,
            residual_rms_ns: (inf.solution.sse / nobs.max(1) as f64).sqrt(),
            sse_ns2: inf.solution.sse,
            observations: nobs,
            r_squared: if sst > 0.0 {
                1.0 - inf.solution.sse / sst
            } else {
                0.0
            },
            tile_groups: tile_groups
                .iter()
                .map(|g| g.iter().map(|&p| m.cpus[p as usize]).collect())
                .collect(),
            empty_tiles,
            symmetries: inf.symmetries.iter().map(|s| s.name.clone()).collect(),
            restarts_same_as_best: inf.restarts.iter().filter(|r| r.same_as_best).count(),
            restarts: inf.restarts.clone(),
            seed: search.seed,
            sweeps: search.sweeps,
            low_confidence_cpus,
            notes,
        }
    }

    /// The latency model of this floorplan: predicted latency between two CPUs (or a CPU
    /// and a target), from their stops and the fitted constants.
    pub fn latency_model(&self) -> Result<LatencyModel, LayoutError> {
        let grid = Grid::new(
            self.geo.clone(),
            self.geometry.cores_per_tile,
            self.geometry.hop_costs,
        )?;
        let beta: Vec<f64> = self.constants.iter().map(|c| c.value_ns).collect();
        if beta.len() != grid.feature_count() + 1 {
            return Err(LayoutError::input(
                &self.input,
                "the layout's constants do not match its geometry; rerun `numalab layout infer`",
            ));
        }
        Ok(LatencyModel { grid, beta })
    }
}

/// Predicted latency between stops from an inferred floorplan.
#[derive(Debug, Clone)]
pub struct LatencyModel {
    /// The grid.
    pub grid: Grid,
    beta: Vec<f64>,
}

impl LatencyModel {
    /// Predicted latency between stops a and b, ns.
    pub fn ns(&self, a: StopId, b: StopId) -> f64 {
        let f = self.grid.features(a, b);
        self.beta[0]
            + f.iter()
                .zip(&self.beta[1..])
                .map(|(x, c)| x * c)
                .sum::<f64>()
    }
}
