//! The options of a run as the user typed them (`model run`'s flags), checked and turned
//! into [`Options`], and the run's recorded configuration.

use super::{Engine, Experiment, Options, Target};
use crate::des::DesConfig;
use crate::error::{usage, ModelError};
use crate::Model;
use numalab_schema::{cpulist, units};

/// The most cycles `--cycles` and `--warmup` take each: a billion NoC cycles is hours
/// of run time per point; more is a typo, and the bound keeps cycle sums from wrapping.
pub const MAX_CYCLES: u64 = 1_000_000_000;

/// The most offered loads `--loads` takes: each is a run of `--cycles`.
pub const MAX_LOADS: usize = 1000;

/// A run's options in their text form, each named after its `model run` flag (the
/// errors name the flags). [`RunFlags::options`] checks them against the model.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFlags {
    /// The preset as given (`--preset`), `NAME[:VARIANT,...]` or a file.
    pub preset: String,
    /// `--set` overrides.
    pub sets: Vec<String>,
    /// `--engine`.
    pub engine: Engine,
    /// `--seed` of the discrete-event engine.
    pub seed: u64,
    /// `--warmup` cycles.
    pub warmup: u64,
    /// `--cycles` measured (at least 1; also the drain).
    pub cycles: u64,
    /// `--flits` per synthetic packet (1-64).
    pub flits: u32,
    /// `--jobs` (at least 1; default the CPUs this process may use).
    pub jobs: Option<usize>,
    /// `--cores`: a CPU list or `node:N`.
    pub cores: Option<String>,
    /// `--data-node`: a node list.
    pub data_node: Option<String>,
    /// `--target`: `slice:N` or `mc:N`.
    pub target: Option<String>,
    /// `--hotspot`: `STOP:FRACTION`.
    pub hotspot: Option<String>,
    /// `--loads`: comma-separated fractions.
    pub loads: Option<String>,
    /// `--working-set`: a size such as `512M`.
    pub working_set: Option<String>,
}

impl RunFlags {
    /// The run's [`Options`], checking the flags in order (cycles, jobs, flits, then each
    /// list) and `--cores` against `model`; the first bad flag is a usage error naming it.
    pub fn options(&self, model: &Model) -> Result<Options, ModelError> {
        if self.cycles == 0 || self.cycles > MAX_CYCLES {
            return Err(usage(format!(
                "--cycles {}: must be 1-{MAX_CYCLES} (bounds in docs/model.md)",
                self.cycles
            )));
        }
        if self.warmup > MAX_CYCLES {
            return Err(usage(format!(
                "--warmup {}: must be 0-{MAX_CYCLES} (bounds in docs/model.md)",
                self.warmup
            )));
        }
        let jobs = match self.jobs {
            Some(0) => return Err(usage("--jobs must be at least 1")),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if self.flits == 0 || self.flits > 64 {
            return Err(usage("--flits must be 1-64"));
        }
        let mut opts = Options {
            engine: self.engine,
            des: DesConfig {
                seed: self.seed,
                warmup_cycles: self.warmup,
                measure_cycles: self.cycles,
                drain_cycles: self.cycles,
            },
            flits: self.flits,
            base_preset: self.preset.clone(),
            sets: self.sets.clone(),
            jobs,
            ..Default::default()
        };
        if let Some(c) = &self.cores {
            opts.cores = Some(parse_cores(model, c)?);
        }
        if let Some(d) = &self.data_node {
            let ids = cpulist::parse(d).map_err(|e| usage(format!("--data-node {d}: {e}")))?;
            opts.data_nodes = Some(ids);
        }
        if let Some(t) = &self.target {
            opts.target = Some(
                t.parse::<Target>()
                    .map_err(|e| usage(format!("--target {e}")))?,
            );
        }
        if let Some(h) = &self.hotspot {
            opts.hotspot = Some(parse_hotspot(h)?);
        }
        if let Some(l) = &self.loads {
            let v: Result<Vec<f64>, _> = l.split(',').map(|x| x.trim().parse::<f64>()).collect();
            let v =
                v.map_err(|_| usage(format!("--loads {l}: expected numbers like 0.1,0.5,0.9")))?;
            if v.len() > MAX_LOADS {
                return Err(usage(format!(
                    "--loads: {} loads given, at most {MAX_LOADS} (each is a run; bounds in docs/model.md)",
                    v.len()
                )));
            }
            opts.loads = Some(v);
        }
        if let Some(w) = &self.working_set {
            opts.working_set_bytes =
                Some(units::parse_bytes(w).map_err(|e| usage(format!("--working-set {w}: {e}")))?);
        }
        Ok(opts)
    }
}

/// `--hotspot STOP:FRACTION`: the fraction from 0 to 1 (NaN refused); the stop's range is
/// checked when the experiment runs.
fn parse_hotspot(h: &str) -> Result<(u32, f64), ModelError> {
    let (s, f) = h.split_once(':').ok_or_else(|| {
        usage(format!(
            "--hotspot {h}: expected STOP:FRACTION, e.g. 27:0.2"
        ))
    })?;
    let stop: u32 = s
        .parse()
        .map_err(|_| usage(format!("--hotspot {h}: {s} is not a stop number")))?;
    let frac: f64 = f
        .parse()
        .ok()
        .filter(|x: &f64| (0.0..=1.0).contains(x))
        .ok_or_else(|| usage(format!("--hotspot {h}: {f} is not a fraction from 0 to 1")))?;
    Ok((stop, frac))
}

/// The cores of `--cores`: `node:N` (node N's cores; a memory-only node is an error) or
/// a CPU list such as `0-15` (checked against the model when the experiment runs).
pub fn parse_cores(model: &Model, text: &str) -> Result<Vec<usize>, ModelError> {
    if let Some(n) = text.strip_prefix("node:") {
        let n: usize = n
            .parse()
            .map_err(|_| usage(format!("--cores {text}: expected node:N")))?;
        let node = model.nodes.get(n).ok_or_else(|| {
            usage(format!(
                "--cores {text}: {} has nodes 0-{}",
                model.label,
                model.nodes.len() - 1
            ))
        })?;
        if node.cores.is_empty() {
            return Err(usage(format!(
                "--cores {text}: node {n} has no cores (memory only)"
            )));
        }
        return Ok(node.cores.clone());
    }
    let ids = cpulist::parse(text).map_err(|e| usage(format!("--cores {text}: {e}")))?;
    Ok(ids.into_iter().map(|i| i as usize).collect())
}

/// The configuration a run records in its envelope: the preset and overrides, the
/// experiment's name, the options and the sources of the model's values.
pub fn run_config(model: &Model, experiment: Experiment, opts: &Options) -> serde_json::Value {
    serde_json::json!({
        "preset": opts.base_preset,
        "sets": opts.sets,
        "experiment": experiment.name(),
        "options": opts,
        "sources": model.sources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> RunFlags {
        RunFlags {
            preset: "knl-7210:snc4".into(),
            sets: vec![],
            engine: Engine::Des,
            seed: 7,
            warmup: 10,
            cycles: 100,
            flits: 2,
            jobs: Some(3),
            cores: None,
            data_node: None,
            target: None,
            hotspot: None,
            loads: None,
            working_set: None,
        }
    }

    fn err(f: &RunFlags, model: &Model) -> String {
        f.options(model).unwrap_err().to_string()
    }

    #[test]
    fn turns_the_flags_into_options() {
        let model = Model::load("knl-7210:snc4", &[]).unwrap();
        let f = RunFlags {
            cores: Some("node:1".into()),
            data_node: Some("0,3".into()),
            target: Some("mc:2".into()),
            hotspot: Some("27:0.25".into()),
            loads: Some("0.1, 0.5".into()),
            working_set: Some("1K".into()),
            ..flags()
        };
        let o = f.options(&model).unwrap();
        assert_eq!(o.engine, Engine::Des);
        assert_eq!(o.des.seed, 7);
        assert_eq!((o.des.warmup_cycles, o.des.measure_cycles), (10, 100));
        assert_eq!(o.des.drain_cycles, 100);
        assert_eq!((o.flits, o.jobs), (2, 3));
        assert_eq!(o.cores.as_deref(), Some(&model.nodes[1].cores[..]));
        assert_eq!(o.data_nodes, Some(vec![0, 3]));
        assert_eq!(o.target, Some(Target::Mc(2)));
        assert_eq!(o.hotspot, Some((27, 0.25)));
        assert_eq!(o.loads, Some(vec![0.1, 0.5]));
        assert_eq!(o.working_set_bytes, Some(1024));
        assert_eq!(o.base_preset, "knl-7210:snc4");
        let c = run_config(&model, Experiment::Hotspot, &o);
        assert_eq!(c["experiment"], "hotspot");
        assert_eq!(c["preset"], "knl-7210:snc4");
        assert_eq!(c["options"]["flits"], 2);
        assert!(c["options"].get("jobs").is_none());
    }

    #[test]
    fn names_the_first_bad_flag() {
        let model = Model::load("knl-7210:snc4", &[]).unwrap();
        let bad = |f: RunFlags| err(&f, &model);
        assert_eq!(
            bad(RunFlags {
                cycles: 0,
                flits: 0,
                ..flags()
            }),
            "--cycles 0: must be 1-1000000000 (bounds in docs/model.md)"
        );
        assert_eq!(
            bad(RunFlags {
                cycles: u64::MAX,
                ..flags()
            }),
            "--cycles 18446744073709551615: must be 1-1000000000 (bounds in docs/model.md)"
        );
        assert_eq!(
            bad(RunFlags {
                loads: Some(vec!["0.5"; MAX_LOADS + 1].join(",")),
                ..flags()
            }),
            "--loads: 1001 loads given, at most 1000 (each is a run; bounds in docs/model.md)"
        );
        assert_eq!(
            bad(RunFlags {
                warmup: MAX_CYCLES + 1,
                ..flags()
            }),
            "--warmup 1000000001: must be 0-1000000000 (bounds in docs/model.md)"
        );
        assert_eq!(
            bad(RunFlags {
                jobs: Some(0),
                ..flags()
            }),
            "--jobs must be at least 1"
        );
        assert_eq!(
            bad(RunFlags {
                flits: 65,
                ..flags()
            }),
            "--flits must be 1-64"
        );
        assert_eq!(
            bad(RunFlags {
                hotspot: Some("27".into()),
                ..flags()
            }),
            "--hotspot 27: expected STOP:FRACTION, e.g. 27:0.2"
        );
        assert_eq!(
            bad(RunFlags {
                hotspot: Some("27:x".into()),
                ..flags()
            }),
            "--hotspot 27:x: x is not a fraction from 0 to 1"
        );
        // NaN and values outside 0..1 are refused here, not run (issue 50's campaign).
        for f in ["NaN", "inf", "-0.5", "1.5"] {
            assert_eq!(
                bad(RunFlags {
                    hotspot: Some(format!("27:{f}")),
                    ..flags()
                }),
                format!("--hotspot 27:{f}: {f} is not a fraction from 0 to 1")
            );
        }
        assert_eq!(
            bad(RunFlags {
                loads: Some("0.1,a".into()),
                ..flags()
            }),
            "--loads 0.1,a: expected numbers like 0.1,0.5,0.9"
        );
        assert!(bad(RunFlags {
            target: Some("disk:1".into()),
            ..flags()
        })
        .starts_with("--target 'disk:1'"));
        let e = RunFlags {
            flits: 0,
            ..flags()
        }
        .options(&model)
        .unwrap_err();
        assert_eq!(
            numalab_schema::Classify::class(&e),
            numalab_schema::ErrorClass::Usage
        );
    }

    #[test]
    fn cores_by_node_or_list() {
        let model = Model::load("knl-7210:snc4,cache", &[]).unwrap();
        assert_eq!(parse_cores(&model, "0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(parse_cores(&model, "node:0").unwrap(), model.nodes[0].cores);
        assert_eq!(
            parse_cores(&model, "node:x").unwrap_err().to_string(),
            "--cores node:x: expected node:N"
        );
        let last = model.nodes.len() - 1;
        assert_eq!(
            parse_cores(&model, "node:99").unwrap_err().to_string(),
            format!("--cores node:99: {} has nodes 0-{last}", model.label)
        );
    }

    #[test]
    fn a_memory_only_node_has_no_cores() {
        let model = Model::load("knl-7210:snc4", &[]).unwrap();
        // Flat mode: MCDRAM is a NUMA node of its own, without cores.
        let n = model.nodes.iter().position(|n| n.cores.is_empty()).unwrap();
        assert_eq!(
            parse_cores(&model, &format!("node:{n}"))
                .unwrap_err()
                .to_string(),
            format!("--cores node:{n}: node {n} has no cores (memory only)")
        );
    }
}
