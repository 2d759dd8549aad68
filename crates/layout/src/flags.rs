//! `numalab layout`'s flags in their text form, checked and turned into the library's
//! settings before anything is read or searched; every error names its flag.

use crate::error::LayoutError;
use crate::groundtruth::TrialOptions;
use crate::infer::{Kind, Options};
use crate::setup::{HopCost, Setup};
use crate::HopCosts;
use numalab_model::spec::Routing;
use numalab_model::Model;

fn usage(msg: impl Into<String>) -> LayoutError {
    LayoutError::Usage(msg.into())
}

/// `--geometry ROWSxCOLS` (e.g. `7x6`: 7 rows, 6 columns; both at least 1).
pub fn parse_geometry(text: &str) -> Result<(u32, u32), LayoutError> {
    let bad = || {
        usage(format!(
            "--geometry {text:?}: expected ROWSxCOLS, e.g. 7x6 (7 rows, 6 columns)"
        ))
    };
    let (r, c) = text
        .to_ascii_lowercase()
        .split_once('x')
        .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
        .ok_or_else(bad)?;
    let r: u32 = r.parse().map_err(|_| bad())?;
    let c: u32 = c.parse().map_err(|_| bad())?;
    if r == 0 || c == 0 {
        return Err(bad());
    }
    Ok((r, c))
}

/// `--hop-cost V,H` (cycles per vertical and horizontal hop, both at least 1) or `fit`.
pub fn parse_hop_cost(text: &str) -> Result<HopCost, LayoutError> {
    if text.trim().eq_ignore_ascii_case("fit") {
        return Ok(HopCost::Fit);
    }
    let bad = || {
        usage(format!(
            "--hop-cost {text:?}: expected VERTICAL,HORIZONTAL cycles (e.g. 1,2) or fit"
        ))
    };
    let (v, h) = text.split_once(',').ok_or_else(bad)?;
    let v: u32 = v.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if v == 0 || h == 0 {
        return Err(bad());
    }
    Ok(HopCost::Cycles {
        vertical: v,
        horizontal: h,
    })
}

/// `numalab layout infer`'s mesh and search flags as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InferFlags {
    /// `--input`, the matrix's path as text.
    pub input: String,
    /// `--geometry ROWSxCOLS`.
    pub geometry: Option<String>,
    /// `--preset`.
    pub preset: Option<String>,
    /// `--routing`.
    pub routing: Option<Routing>,
    /// `--hop-cost V,H|fit`.
    pub hop_cost: Option<String>,
    /// `--cores-per-tile` (at least 1).
    pub cores_per_tile: Option<u32>,
    /// `--disabled` tiles.
    pub disabled: Option<String>,
    /// Not `--no-tile-groups`.
    pub tile_groups: bool,
    /// `--seed`.
    pub seed: u64,
    /// `--restarts` (at least 1).
    pub restarts: usize,
    /// `--sweeps`.
    pub sweeps: usize,
}

/// The most restarts, sweeps or trials a flag takes: far past any useful search (each
/// is a whole search, each restart holds its placement), and a count the searches can
/// size their buffers by without overflowing.
pub const MAX_COUNT: usize = 1_000_000;

fn too_many(flag: &str, n: usize) -> Result<(), LayoutError> {
    if n > MAX_COUNT {
        return Err(usage(format!("{flag} {n}: at most {MAX_COUNT}")));
    }
    Ok(())
}

impl InferFlags {
    /// The mesh asked for and the search settings, checking the flags in order
    /// (geometry, hop cost, restarts, cores per tile).
    pub fn check(&self) -> Result<(Setup, Options), LayoutError> {
        let geometry = self.geometry.as_deref().map(parse_geometry).transpose()?;
        let hop_cost = self.hop_cost.as_deref().map(parse_hop_cost).transpose()?;
        if self.restarts == 0 {
            return Err(usage("--restarts must be at least 1"));
        }
        too_many("--restarts", self.restarts)?;
        too_many("--sweeps", self.sweeps)?;
        if self.cores_per_tile == Some(0) {
            return Err(usage("--cores-per-tile must be at least 1"));
        }
        let setup = Setup {
            input: self.input.clone(),
            preset: self.preset.clone(),
            geometry,
            routing: self.routing,
            hop_cost: hop_cost.unwrap_or_default(),
            cores_per_tile: self.cores_per_tile,
            disabled: self.disabled.clone(),
            tile_groups: self.tile_groups,
        };
        let opts = Options {
            seed: self.seed,
            restarts: self.restarts,
            sweeps: self.sweeps,
            ..Options::default()
        };
        Ok((setup, opts))
    }

    /// The configuration an inference records: the flags as given, with the cores per
    /// tile the grid was built with (`capacity`).
    pub fn config(&self, capacity: u32) -> serde_json::Value {
        serde_json::json!({
            "input": self.input,
            "geometry": self.geometry, "preset": self.preset,
            "routing": self.routing.map(|r| format!("{r:?}").to_lowercase()),
            "hop_cost": self.hop_cost, "cores_per_tile": capacity, "disabled": self.disabled,
            "tile_groups": self.tile_groups, "seed": self.seed, "restarts": self.restarts,
            "sweeps": self.sweeps,
        })
    }
}

/// `numalab layout groundtruth`'s flags as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroundtruthFlags {
    /// `--preset` (one socket).
    pub preset: String,
    /// `--noise-ns`: comma-separated levels, each 0 or more.
    pub noise_ns: String,
    /// `--trials` per level (at least 1).
    pub trials: usize,
    /// `--restarts` per inference (at least 1).
    pub restarts: usize,
    /// `--matrix`: the kind generated.
    pub kind: Kind,
    /// `--fit-hop-costs`.
    pub fit_hop_costs: bool,
    /// `--disabled-known`.
    pub disabled_known: bool,
    /// `--seed` of the first trial.
    pub seed: u64,
}

/// A checked ground-truth campaign: its noise levels, the preset's model and the trials'
/// settings.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// Noise levels, ns.
    pub levels: Vec<f64>,
    /// The preset, loaded.
    pub model: Model,
    /// Settings of every trial.
    pub trial: TrialOptions,
}

impl GroundtruthFlags {
    /// Checks the noise levels and counts, then loads the preset (which must have one
    /// socket).
    pub fn check(&self) -> Result<Campaign, LayoutError> {
        let levels: Vec<f64> = self
            .noise_ns
            .split(',')
            .map(|s| s.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                usage(format!(
                    "--noise-ns {:?}: expected numbers like 0,1,2,4",
                    self.noise_ns
                ))
            })?;
        if levels.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err(usage("--noise-ns: noise levels must be 0 or more"));
        }
        if self.trials == 0 || self.restarts == 0 {
            return Err(usage("--trials and --restarts must be at least 1"));
        }
        too_many("--trials", self.trials)?;
        too_many("--restarts", self.restarts)?;
        let model = Model::load(&self.preset, &[])?;
        if model.geo.sockets != 1 {
            return Err(usage(format!(
                "--preset {}: ground truth needs a one-socket preset",
                self.preset
            )));
        }
        let trial = TrialOptions {
            kind: self.kind,
            hop_costs: if self.fit_hop_costs {
                HopCosts::Fit
            } else {
                HopCosts::Fixed
            },
            disabled_known: self.disabled_known,
            search: Options {
                restarts: self.restarts,
                ..Options::default()
            },
        };
        Ok(Campaign {
            levels,
            model,
            trial,
        })
    }

    /// The configuration a campaign records: the flags, with the noise levels parsed and
    /// the matrix kind named as on the command line (`c2c`, `targets`).
    pub fn config(&self, levels: &[f64]) -> serde_json::Value {
        let matrix = match self.kind {
            Kind::CoreToCore => "c2c",
            Kind::CoreToTarget => "targets",
        };
        serde_json::json!({"preset": self.preset, "noise_ns": levels, "seed": self.seed,
            "trials": self.trials, "matrix": matrix, "fit_hop_costs": self.fit_hop_costs,
            "disabled_known": self.disabled_known, "restarts": self.restarts})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_schema::{Classify, ErrorClass};

    fn infer_flags() -> InferFlags {
        InferFlags {
            input: "m.csv".into(),
            geometry: Some("7X6".into()),
            preset: None,
            routing: Some(Routing::Yx),
            hop_cost: Some("1, 2".into()),
            cores_per_tile: Some(2),
            disabled: Some("2:0".into()),
            tile_groups: false,
            seed: 5,
            restarts: 3,
            sweeps: 10,
        }
    }

    #[test]
    fn geometry_and_hop_costs_parse_or_name_the_flag() {
        assert_eq!(parse_geometry(" 7 x 6").unwrap(), (7, 6));
        for bad in ["7", "0x6", "7x", "axb"] {
            let e = parse_geometry(bad).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Usage);
            assert_eq!(
                e.to_string(),
                format!("--geometry {bad:?}: expected ROWSxCOLS, e.g. 7x6 (7 rows, 6 columns)")
            );
        }
        assert_eq!(parse_hop_cost(" FIT ").unwrap(), HopCost::Fit);
        assert_eq!(
            parse_hop_cost("3,1").unwrap(),
            HopCost::Cycles {
                vertical: 3,
                horizontal: 1
            }
        );
        for bad in ["3", "0,1", "1;2"] {
            assert!(parse_hop_cost(bad)
                .unwrap_err()
                .to_string()
                .starts_with(&format!("--hop-cost {bad:?}: expected VERTICAL,HORIZONTAL")));
        }
    }

    #[test]
    fn infer_flags_become_a_setup_and_search_options() {
        let f = infer_flags();
        let (setup, opts) = f.check().unwrap();
        assert_eq!(setup.geometry, Some((7, 6)));
        assert_eq!(
            setup.hop_cost,
            HopCost::Cycles {
                vertical: 1,
                horizontal: 2
            }
        );
        assert_eq!(setup.routing, Some(Routing::Yx));
        assert_eq!((setup.cores_per_tile, setup.tile_groups), (Some(2), false));
        assert_eq!((opts.seed, opts.restarts, opts.sweeps), (5, 3, 10));
        let c = f.config(4);
        assert_eq!(c["routing"], "yx");
        assert_eq!(c["cores_per_tile"], 4);
        assert_eq!(c["hop_cost"], "1, 2");
        assert_eq!(c["geometry"], "7X6");
        let plain = InferFlags {
            hop_cost: None,
            ..f.clone()
        };
        assert_eq!(plain.check().unwrap().0.hop_cost, HopCost::Default);
        let e = |f: InferFlags| f.check().unwrap_err().to_string();
        assert_eq!(
            e(InferFlags {
                restarts: 0,
                cores_per_tile: Some(0),
                ..f.clone()
            }),
            "--restarts must be at least 1"
        );
        assert_eq!(
            e(InferFlags {
                restarts: usize::MAX,
                ..f.clone()
            }),
            format!("--restarts {}: at most 1000000", usize::MAX)
        );
        assert_eq!(
            e(InferFlags {
                sweeps: usize::MAX,
                ..f.clone()
            }),
            format!("--sweeps {}: at most 1000000", usize::MAX)
        );
        assert_eq!(
            e(InferFlags {
                cores_per_tile: Some(0),
                ..f.clone()
            }),
            "--cores-per-tile must be at least 1"
        );
        assert!(e(InferFlags {
            geometry: Some("x".into()),
            restarts: 0,
            ..f
        })
        .starts_with("--geometry"));
    }

    fn groundtruth_flags() -> GroundtruthFlags {
        GroundtruthFlags {
            preset: "knl-7210".into(),
            noise_ns: "0, 0.5,2".into(),
            trials: 2,
            restarts: 3,
            kind: Kind::CoreToTarget,
            fit_hop_costs: true,
            disabled_known: true,
            seed: 9,
        }
    }

    #[test]
    fn a_campaign_has_levels_a_one_socket_model_and_trial_settings() {
        let c = groundtruth_flags().check().unwrap();
        assert_eq!(c.levels, vec![0.0, 0.5, 2.0]);
        assert_eq!(c.model.geo.sockets, 1);
        assert_eq!(c.trial.kind, Kind::CoreToTarget);
        assert_eq!(c.trial.hop_costs, HopCosts::Fit);
        assert!(c.trial.disabled_known);
        assert_eq!(c.trial.search.restarts, 3);
        let config = groundtruth_flags().config(&c.levels);
        assert_eq!(config["matrix"], "targets");
        assert_eq!(config["noise_ns"][1], 0.5);
        assert_eq!(
            (config["seed"].as_u64(), config["trials"].as_u64()),
            (Some(9), Some(2))
        );
    }

    #[test]
    fn a_bad_campaign_names_its_flag() {
        let e = |f: GroundtruthFlags| f.check().unwrap_err().to_string();
        assert_eq!(
            e(GroundtruthFlags {
                noise_ns: "1,a".into(),
                ..groundtruth_flags()
            }),
            "--noise-ns \"1,a\": expected numbers like 0,1,2,4"
        );
        assert_eq!(
            e(GroundtruthFlags {
                noise_ns: "1,-2".into(),
                ..groundtruth_flags()
            }),
            "--noise-ns: noise levels must be 0 or more"
        );
        assert_eq!(
            e(GroundtruthFlags {
                trials: 0,
                ..groundtruth_flags()
            }),
            "--trials and --restarts must be at least 1"
        );
        assert_eq!(
            e(GroundtruthFlags {
                trials: usize::MAX,
                ..groundtruth_flags()
            }),
            format!("--trials {}: at most 1000000", usize::MAX)
        );
        assert_eq!(
            e(GroundtruthFlags {
                restarts: MAX_COUNT + 1,
                ..groundtruth_flags()
            }),
            "--restarts 1000001: at most 1000000"
        );
        assert_eq!(
            e(GroundtruthFlags {
                preset: "altra-q80-2s".into(),
                ..groundtruth_flags()
            }),
            "--preset altra-q80-2s: ground truth needs a one-socket preset"
        );
    }
}
