//! The records `numalab layout` writes: `layout.inference` (an inferred floorplan with its
//! fitted constants and confidence), `layout.groundtruth` (recovery accuracy at one noise
//! level) and `layout.affinity` (cores for cooperating threads). The types live in
//! `numalab_records::layout` (so that the report and everything that only reads results
//! builds without this crate) and are re-exported here under their old paths; this module
//! builds them from an inference ([`inference_record`]) and rebuilds the latency model of
//! an inferred floorplan ([`InferenceRecordExt::latency_model`]). Schedule records are in
//! `numalab_schedule::record`.
//!
//! An inference record holds the model geometry it was fitted on, so other commands
//! (`layout affinity --layout`, `schedule --layout`) can predict the latency between any two
//! cores from it without the matrix.

use crate::error::LayoutError;
use crate::grid::Grid;
use crate::infer::{Inference, Measured, Options};
use numalab_model::geometry::StopId;
pub use numalab_records::layout::{
    Accuracy, AffinityRecord, Constant, CorePlacement, GeometryInfo, GroundTruthRecord, HopCosts,
    InferenceRecord, Kind, MeshGeometry, MeshRouting, Restart, TargetPlacement, Trial,
};

/// The key of an inference from `input` (the matrix file as given).
pub fn inference_key(input: &str) -> String {
    format!("layout/inference/{input}")
}

/// The key of affinity advice for `threads` threads of pattern `comm` on the floorplan
/// or matrix `source`.
pub fn affinity_key(source: &str, threads: usize, comm: &str) -> String {
    format!("layout/affinity/{source}/{threads}/{comm}")
}

/// The envelope's host of a run whose matrix or floorplan is the file `path`: unknown,
/// named `TAG:PATH` (`layout:knl.csv`, `affinity:layout-out`).
pub fn file_host(tag: &str, path: &std::path::Path) -> numalab_schema::record::Host {
    numalab_schema::record::Host::unknown(format!("{tag}:{}", path.display()))
}

/// The bundle at `path`, which should be a `layout infer` output (folder, journal or JSON
/// bundle); one that cannot be read is an input error that says what to give.
pub fn read_layout_bundle(path: &std::path::Path) -> Result<numalab_schema::Bundle, LayoutError> {
    let (bundle, _) = numalab_schema::journal::read_bundle(path).map_err(|e| {
        LayoutError::Unreadable(format!(
            "{e}; give the output of `numalab layout infer --out DIR` or `--json`"
        ))
    })?;
    Ok(bundle)
}

/// The last `layout.inference` record of the bundle at `path` (an output folder, journal
/// or JSON bundle of `layout infer`); an unreadable bundle or one without such a record
/// is an input error that says what to give.
pub fn read_inference(path: &std::path::Path) -> Result<InferenceRecord, LayoutError> {
    read_layout_bundle(path)?
        .records_of::<InferenceRecord>()
        .into_iter()
        .last()
        .map(|(_, r)| r)
        .ok_or_else(|| {
            LayoutError::Unreadable(format!(
                "{}: holds no layout.inference record; run `numalab layout infer --out DIR` first",
                path.display()
            ))
        })
}

/// What an inference adds to its record's notes: that Ctrl-C cut its restarts short
/// (`asked` were asked for), and the mirror images of the placement that explain the
/// matrix equally well.
pub fn inference_notes(inf: &Inference, asked: usize) -> Vec<String> {
    let mut notes = Vec::new();
    if inf.interrupted {
        notes.push(format!(
            "interrupted: {} of {asked} restarts ran",
            inf.restarts.len()
        ));
    }
    if inf.symmetries.len() > 1 {
        let names: Vec<&str> = inf
            .symmetries
            .iter()
            .skip(1)
            .map(|s| s.name.as_str())
            .collect();
        notes.push(format!(
            "the placement is defined up to {}: a mirror image explains the matrix equally well",
            names.join(", ")
        ));
    }
    notes
}

/// Builds the record of an inference (`layout.inference`): the placement of every core
/// (and target) with its confidence, the fitted constants, the fit's figures and the
/// grid it was fitted on.
#[allow(clippy::too_many_arguments)]
pub fn inference_record(
    input: &str,
    origin: &str,
    grid: &Grid,
    preset: Option<String>,
    m: &Measured,
    inf: &Inference,
    tile_groups: &[Vec<u32>],
    search: &Options,
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

/// What an inference record can do with the layout crate: rebuild its latency model.
pub trait InferenceRecordExt {
    /// The latency model of this floorplan: predicted latency between two CPUs (or a CPU
    /// and a target), from their stops and the fitted constants.
    fn latency_model(&self) -> Result<LatencyModel, LayoutError>;
}

impl InferenceRecordExt for InferenceRecord {
    fn latency_model(&self) -> Result<LatencyModel, LayoutError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::{Solution, MAXP};
    use crate::grid::Symmetry;

    #[test]
    fn a_file_host_names_the_tag_and_the_path() {
        let h = file_host("affinity", std::path::Path::new("layout-out"));
        assert_eq!(
            h,
            numalab_schema::record::Host::unknown("affinity:layout-out")
        );
    }

    #[test]
    fn reading_an_inference_says_what_to_give() {
        use numalab_schema::{Classify, ErrorClass};
        let dir = std::env::temp_dir().join(format!("numalab-read-inf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = read_inference(&dir).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Input);
        assert!(e
            .to_string()
            .ends_with("; give the output of `numalab layout infer --out DIR` or `--json`"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn inference(interrupted: bool, symmetries: &[&str]) -> Inference {
        Inference {
            core_stop: Vec::new(),
            target_stop: Vec::new(),
            solution: Solution {
                beta: [0.0; MAXP],
                sse: 0.0,
                free: 0,
            },
            core_margin: Vec::new(),
            target_margin: Vec::new(),
            sigma_ns: 0.0,
            restarts: vec![
                Restart {
                    seed: 1,
                    sse: 0.0,
                    same_as_best: true,
                };
                3
            ],
            symmetries: symmetries
                .iter()
                .map(|n| Symmetry {
                    name: n.to_string(),
                    map: Vec::new(),
                })
                .collect(),
            interrupted,
        }
    }

    #[test]
    fn notes_say_interruptions_and_mirror_images() {
        assert!(inference_notes(&inference(false, &["identity"]), 8).is_empty());
        assert_eq!(
            inference_notes(&inference(true, &["identity", "mirror east-west", "rotate"]), 8),
            vec![
                "interrupted: 3 of 8 restarts ran".to_string(),
                "the placement is defined up to mirror east-west, rotate: a mirror image explains the matrix equally well".to_string(),
            ]
        );
    }
}
