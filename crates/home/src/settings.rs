//! The settings of `numalab home map` and `bench` as given (counts, sizes, lists as
//! text), checked into the options the map, the model trial and the bench take.

use crate::bench::BenchOptions;
use crate::error::HomeError;
use crate::groundtruth::TrialOptions;
use crate::live::{HugeChoice, LiveOptions};
use crate::locate::Floorplan;
use crate::map::MapOptions;
use numalab_schema::units;
use std::path::PathBuf;

/// How a buffer is mapped, as given (shared by `map` and `bench`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapSettings {
    /// Reader CPUs.
    pub cpus: usize,
    /// Reads per line and CPU.
    pub repeats: u32,
    /// Lines sampled on every page after the first.
    pub sample_lines: usize,
    /// Look for memory interfaces.
    pub interfaces: bool,
    /// Place every CPU again from its latencies to the located homes.
    pub refine: bool,
    /// Seed of the line sample and the grouping (and of the model's machine).
    pub seed: u64,
}

/// The model machine, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    /// Standard deviation of the noise on every read, ns.
    pub noise_ns: f64,
    /// Buffer pages.
    pub pages: usize,
    /// Page size of the buffer, as text ("2MiB", "64KiB").
    pub page_size: String,
    /// Memory node of the buffer.
    pub node: u32,
    /// Physical addresses are known (root).
    pub phys: bool,
    /// Preset overrides, KEY=VALUE.
    pub sets: Vec<String>,
}

fn usage(msg: impl Into<String>) -> HomeError {
    HomeError::Usage(msg.into())
}

impl MapSettings {
    /// The map's options over `pages` (None: all), refused (usage) unless every count is
    /// at least 1.
    pub fn options(&self, pages: Option<usize>) -> Result<MapOptions, HomeError> {
        if self.cpus == 0 || self.repeats == 0 || self.sample_lines == 0 {
            return Err(usage(
                "--cpus, --repeats and --sample-lines must be at least 1",
            ));
        }
        crate::map::check_repeats(self.repeats)?;
        Ok(MapOptions {
            probe_cpus: self.cpus,
            repeats: self.repeats,
            sample_lines: self.sample_lines,
            pages,
            interfaces: self.interfaces,
            seed: self.seed,
            refine_cpus: self.refine,
        })
    }
}

impl ModelSettings {
    /// A modelled trial of `preset` mapped with `map` over `pages`: the noise 0 or more,
    /// at least one page, pages a power of two of 4 KiB or more; the machine's seed is
    /// the map's.
    pub fn trial(
        &self,
        preset: &str,
        map: &MapSettings,
        pages: Option<usize>,
    ) -> Result<TrialOptions, HomeError> {
        if !(self.noise_ns.is_finite() && self.noise_ns >= 0.0) {
            return Err(usage(format!(
                "--noise-ns {}: give a standard deviation of 0 or more",
                self.noise_ns
            )));
        }
        if self.pages == 0 {
            return Err(usage("--pages must be at least 1"));
        }
        let page = page_size(&self.page_size)?;
        let mut t = TrialOptions::new(preset);
        t.truth.noise_ns = self.noise_ns;
        t.truth.seed = map.seed;
        t.truth.pages = self.pages;
        t.truth.page_bytes = page;
        t.truth.node = self.node;
        t.truth.phys_known = self.phys;
        t.truth.sets = self.sets.clone();
        t.map = map.options(pages)?;
        Ok(t)
    }
}

/// `--page-size SIZE`: bytes, a power of two of 4 KiB or more (usage error otherwise).
pub fn page_size(text: &str) -> Result<u64, HomeError> {
    let page = units::parse_bytes(text).map_err(|e| usage(format!("--page-size {text:?}: {e}")))?;
    if !page.is_power_of_two() || page < 4096 {
        return Err(usage(format!(
            "--page-size {text}: give a power of two of 4KiB or more"
        )));
    }
    Ok(page)
}

/// `home map`'s request on this machine or a model (`--import` aside), as given.
#[derive(Debug, Clone, PartialEq)]
pub struct MapRequest {
    /// `--model PRESET`: map a model machine instead of this one.
    pub model: Option<String>,
    /// `--bytes`: the buffer's size on this machine, as text.
    pub bytes: String,
    /// `--huge`.
    pub huge: HugeChoice,
    /// `--floorplan`: a `layout infer` output of this machine.
    pub floorplan: Option<PathBuf>,
    /// `--measure-pages` (None: all).
    pub measure_pages: Option<usize>,
    /// How the buffer is mapped.
    pub map: MapSettings,
    /// The model machine.
    pub model_settings: ModelSettings,
}

impl MapRequest {
    /// The run's configuration, as recorded in the envelope.
    pub fn config(&self) -> serde_json::Value {
        let (m, x) = (&self.map, &self.model_settings);
        serde_json::json!({
            "model": self.model, "bytes": self.bytes, "huge": format!("{:?}", self.huge).to_lowercase(),
            "floorplan": self.floorplan.as_ref().map(|p| p.display().to_string()),
            "measure_pages": self.measure_pages, "cpus": m.cpus, "repeats": m.repeats,
            "sample_lines": m.sample_lines, "interfaces": m.interfaces, "seed": m.seed,
            "noise_ns": x.noise_ns, "pages": x.pages, "page_size": x.page_size, "node": x.node,
            "phys": x.phys, "sets": x.sets,
        })
    }

    /// The modelled trial of `preset` over the pages asked for.
    pub fn trial(&self, preset: &str) -> Result<TrialOptions, HomeError> {
        self.model_settings
            .trial(preset, &self.map, self.measure_pages)
    }

    /// What mapping this machine takes, checked in order before anything is allocated:
    /// the buffer (`--bytes`, a usage error unless a size), the floorplan read from its
    /// file, the map's options.
    pub fn live(&self) -> Result<(LiveOptions, Option<Floorplan>, MapOptions), HomeError> {
        let bytes = units::parse_bytes(&self.bytes)
            .map_err(|e| usage(format!("--bytes {:?}: {e}", self.bytes)))?;
        let floorplan = self.floorplan.as_deref().map(Floorplan::read).transpose()?;
        let opts = self.map.options(self.measure_pages)?;
        let live = LiveOptions {
            huge: self.huge,
            ..LiveOptions::with_bytes(bytes)
        };
        Ok((live, floorplan, opts))
    }
}

/// `home bench`'s request on a model machine, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchRequest {
    /// The preset.
    pub model: String,
    /// Threads of the reduction kernel.
    pub threads: usize,
    /// Lines each thread reads.
    pub lines: usize,
    /// Largest affinity strength, hops.
    pub max_distance: u32,
    /// `--stencil LIST`, as text.
    pub stencil: String,
}

impl BenchRequest {
    /// The bench's options: the stencil's thread counts, then the model trial mapped
    /// with `map` over all pages.
    pub fn options(
        &self,
        map: &MapSettings,
        model: &ModelSettings,
    ) -> Result<BenchOptions, HomeError> {
        let stencil = stencil_threads(&self.stencil)?;
        let mut b = BenchOptions::new(&self.model);
        b.trial = model.trial(&self.model, map, None)?;
        b.threads = self.threads;
        b.lines_per_thread = self.lines;
        b.max_distance = self.max_distance;
        b.stencil_threads = stencil;
        Ok(b)
    }

    /// The run's configuration, as recorded in the envelope.
    pub fn config(&self, map: &MapSettings, x: &ModelSettings) -> serde_json::Value {
        serde_json::json!({
            "model": self.model, "threads": self.threads, "lines": self.lines, "max_distance": self.max_distance,
            "stencil": self.stencil, "cpus": map.cpus, "repeats": map.repeats, "seed": map.seed,
            "noise_ns": x.noise_ns, "pages": x.pages, "page_size": x.page_size, "node": x.node,
            "phys": x.phys, "sets": x.sets,
        })
    }
}

/// `--stencil LIST`: the stencil's thread counts, comma separated (empty items skipped).
pub fn stencil_threads(text: &str) -> Result<Vec<usize>, HomeError> {
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            usage(format!(
                "--stencil {text:?}: expected thread counts like 4,8,16"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_schema::{Classify, ErrorClass};

    fn map() -> MapSettings {
        MapSettings {
            cpus: 16,
            repeats: 128,
            sample_lines: 64,
            interfaces: true,
            refine: false,
            seed: 3,
        }
    }

    fn model() -> ModelSettings {
        ModelSettings {
            noise_ns: 4.0,
            pages: 64,
            page_size: "2MiB".into(),
            node: 1,
            phys: false,
            sets: vec!["mesh.rows=4".into()],
        }
    }

    fn refused(r: Result<TrialOptions, HomeError>) -> String {
        let e = r.unwrap_err();
        assert_eq!(e.class(), ErrorClass::Usage, "{e}");
        e.to_string()
    }

    fn request() -> MapRequest {
        MapRequest {
            model: None,
            bytes: "1MiB".into(),
            huge: HugeChoice::Never,
            floorplan: None,
            measure_pages: Some(2),
            map: map(),
            model_settings: model(),
        }
    }

    #[test]
    fn a_map_request_records_its_flags_and_checks_the_buffer_size() {
        let c = request().config();
        assert_eq!(c["huge"], "never");
        assert_eq!(c["bytes"], "1MiB");
        assert_eq!(c["interfaces"], true);
        assert_eq!(c["phys"], false);
        assert!(c["floorplan"].is_null());
        assert!(c.get("refine").is_none());
        let (live, floorplan, opts) = request().live().unwrap();
        assert_eq!((live.bytes, live.huge), (1 << 20, HugeChoice::Never));
        assert!(floorplan.is_none());
        assert_eq!(opts.pages, Some(2));
        let bad = MapRequest {
            bytes: "lots".into(),
            ..request()
        };
        let e = bad.live().unwrap_err();
        assert_eq!(e.class(), ErrorClass::Usage);
        assert!(e.to_string().starts_with("--bytes \"lots\": "), "{e}");
        assert_eq!(request().trial("knl-7210").unwrap().map.pages, Some(2));
    }

    #[test]
    fn a_bench_request_parses_the_stencil_before_the_trial() {
        let mut r = BenchRequest {
            model: "knl-7210".into(),
            threads: 8,
            lines: 32,
            max_distance: 3,
            stencil: "2, 4".into(),
        };
        let b = r.options(&map(), &model()).unwrap();
        assert_eq!(b.stencil_threads, vec![2, 4]);
        assert_eq!((b.threads, b.lines_per_thread, b.max_distance), (8, 32, 3));
        assert_eq!(b.trial.truth.seed, 3);
        let c = r.config(&map(), &model());
        assert_eq!(
            (c["stencil"].clone(), c["seed"].clone()),
            ("2, 4".into(), 3.into())
        );
        r.stencil = "x".into();
        let bad = ModelSettings {
            pages: 0,
            ..model()
        };
        assert_eq!(
            r.options(&map(), &bad).unwrap_err().to_string(),
            "--stencil \"x\": expected thread counts like 4,8,16"
        );
    }

    #[test]
    fn page_sizes_are_powers_of_two_of_4kib_or_more() {
        assert_eq!(page_size("64KiB").unwrap(), 65536);
        assert_eq!(
            page_size("3KiB").unwrap_err().to_string(),
            "--page-size 3KiB: give a power of two of 4KiB or more"
        );
        assert!(page_size("x")
            .unwrap_err()
            .to_string()
            .starts_with("--page-size \"x\": "));
    }

    #[test]
    fn map_settings_need_every_count() {
        let o = map().options(Some(8)).unwrap();
        assert_eq!(
            (o.probe_cpus, o.pages, o.refine_cpus, o.seed),
            (16, Some(8), false, 3)
        );
        for bad in [
            MapSettings { cpus: 0, ..map() },
            MapSettings {
                repeats: 0,
                ..map()
            },
            MapSettings {
                sample_lines: 0,
                ..map()
            },
        ] {
            assert_eq!(
                bad.options(None).unwrap_err().to_string(),
                "--cpus, --repeats and --sample-lines must be at least 1"
            );
        }
    }

    #[test]
    fn the_model_trial_takes_the_map_seed_and_checks_the_machine() {
        let t = model().trial("knl-7210", &map(), None).unwrap();
        assert_eq!(
            (
                t.truth.seed,
                t.truth.page_bytes,
                t.truth.node,
                t.truth.phys_known
            ),
            (3, 2 << 20, 1, false)
        );
        assert_eq!(t.truth.sets, ["mesh.rows=4"]);
        assert_eq!(t.map.probe_cpus, 16);
        let m = refused(
            ModelSettings {
                noise_ns: -1.0,
                ..model()
            }
            .trial("p", &map(), None),
        );
        assert_eq!(m, "--noise-ns -1: give a standard deviation of 0 or more");
        let m = refused(
            ModelSettings {
                pages: 0,
                ..model()
            }
            .trial("p", &map(), None),
        );
        assert_eq!(m, "--pages must be at least 1");
        let m = refused(
            ModelSettings {
                page_size: "lots".into(),
                ..model()
            }
            .trial("p", &map(), None),
        );
        assert!(m.starts_with("--page-size \"lots\": "), "{m}");
        let m = refused(
            ModelSettings {
                page_size: "1KiB".into(),
                ..model()
            }
            .trial("p", &map(), None),
        );
        assert_eq!(m, "--page-size 1KiB: give a power of two of 4KiB or more");
        let bad_map = MapSettings { cpus: 0, ..map() };
        assert!(model().trial("p", &bad_map, None).is_err());
    }

    #[test]
    fn the_stencil_is_a_list_of_thread_counts() {
        assert_eq!(stencil_threads("4, 8,,16").unwrap(), vec![4, 8, 16]);
        assert!(stencil_threads("").unwrap().is_empty());
        let e = stencil_threads("4,x").unwrap_err();
        assert_eq!(e.class(), ErrorClass::Usage);
        assert_eq!(
            e.to_string(),
            "--stencil \"4,x\": expected thread counts like 4,8,16"
        );
    }
}
