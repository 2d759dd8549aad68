//! The settings of `numalab home map` and `bench` as given (counts, sizes, lists as
//! text), checked into the options the map, the model trial and the bench take.

use crate::error::HomeError;
use crate::groundtruth::TrialOptions;
use crate::map::MapOptions;
use numalab_schema::units;

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
        let page = units::parse_bytes(&self.page_size)
            .map_err(|e| usage(format!("--page-size {:?}: {e}", self.page_size)))?;
        if !page.is_power_of_two() || page < 4096 {
            return Err(usage(format!(
                "--page-size {}: give a power of two of 4KiB or more",
                self.page_size
            )));
        }
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
