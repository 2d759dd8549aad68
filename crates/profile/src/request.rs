//! What `numalab profile` was asked for, from its flags: the mode, the checks of the
//! flags alone, the run's configuration, and the counting options of a session.

use crate::{Options, Problem, Target};
use numalab_memaccess::{AnalysisOptions, NamedRegion, ThresholdSpec};
use numalab_pmu::catalog::{self, CpuMatch};
use numalab_schema::text::path_text;
use numalab_schema::ErrorClass;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `numalab profile`'s flags, as values (the command line's `--output` options aside).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// The command to count (after `--`).
    pub command: Vec<String>,
    /// `--import FILE`: a `perf stat` or `perf script` file.
    pub import: Option<PathBuf>,
    /// `--compare BASE NEW`.
    pub compare: Option<[PathBuf; 2]>,
    /// `--list`: show a catalog.
    pub list: bool,
    /// `--exact`.
    pub exact: bool,
    /// `--metrics SET`.
    pub metrics: Option<String>,
    /// `--events LIST`.
    pub events: Option<String>,
    /// `--sample EVENT`.
    pub sample: Option<String>,
    /// `--sample-freq HZ`.
    pub sample_freq: u64,
    /// `--sample-period N`.
    pub sample_period: Option<u64>,
    /// `--cpu-model NAME`.
    pub cpu_model: Option<String>,
    /// `--counters N`.
    pub counters: Option<u32>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// `--shell`.
    pub shell: bool,
    /// `--pid PID`.
    pub pid: Option<i32>,
    /// `--all-cpus`.
    pub all_cpus: bool,
    /// `--interval`.
    pub interval: Option<Duration>,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--no-uncore`.
    pub no_uncore: bool,
    /// `--memory-samples`.
    pub memory_samples: bool,
    /// `--slow CYCLES`.
    pub slow: Option<f64>,
    /// `--regions FILE`.
    pub regions: Option<PathBuf>,
    /// `--same-machine`.
    pub same_machine: bool,
}

/// What a request does (the flags' conflicts leave at most one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode<'a> {
    /// Show what a CPU model's catalog offers.
    List,
    /// Compare two profiles: base, new.
    Compare(&'a Path, &'a Path),
    /// Analyse a file recorded elsewhere.
    Import(&'a Path),
    /// Count a command, a process or every CPU.
    Count,
}

/// The CPUs whose catalog a request may use: the one named with `--cpu-model`, and this
/// machine's as detected (or why it could not be).
#[derive(Debug, Clone)]
pub struct Cpus {
    /// `--cpu-model`, resolved.
    pub given: Option<CpuMatch>,
    /// This machine's.
    pub live: Result<CpuMatch, Problem>,
}

impl Cpus {
    /// The catalog to count with: the one named, else this machine's (or why there is none).
    pub fn counting(self) -> Result<CpuMatch, Problem> {
        match self.given {
            Some(c) => Ok(c),
            None => self.live,
        }
    }
}

/// This machine's CPU as a catalog match: its identity, and the MIDR from sysfs on Arm;
/// for a CPU numalab ships no catalog for, the installed perf's events and metrics when
/// it lists them (`catalog::perf::prefer_perf`).
pub fn detect_cpu(cpu: &numalab_schema::machine::CpuIdentity) -> Result<CpuMatch, Problem> {
    catalog::detect(cpu, catalog::midr_from_sysfs(Path::new("/")))
        .map(catalog::perf::prefer_perf)
        .map_err(Problem::of)
}

impl Request {
    /// The mode the flags choose, refused (usage) when they choose none.
    pub fn mode(&self) -> Result<Mode<'_>, Problem> {
        if self.list {
            Ok(Mode::List)
        } else if let Some([base, new]) = &self.compare {
            Ok(Mode::Compare(base, new))
        } else if let Some(path) = &self.import {
            Ok(Mode::Import(path))
        } else if !self.command.is_empty() || self.pid.is_some() || self.all_cpus {
            Ok(Mode::Count)
        } else {
            Err(Problem::new(
                ErrorClass::Usage,
                "nothing to profile: give a command after `--` (numalab profile -- ./my-program), --pid PID, --all-cpus, --import FILE, --compare BASE NEW or --list",
            ))
        }
    }

    /// `--cpu-model`, resolved to a catalog (None when not given).
    pub fn given_cpu(&self) -> Result<Option<CpuMatch>, Problem> {
        self.cpu_model
            .as_deref()
            .map(catalog::resolve_model)
            .transpose()
            .map_err(Problem::of)
    }

    /// The metric set counted ([`crate::metric_set`] of `--metrics` and `--events`).
    pub fn metric_set(&self) -> String {
        crate::metric_set(self.metrics.as_deref(), self.events.is_some())
    }

    /// `--events` as the list the catalog selection takes.
    pub fn events(&self) -> Vec<String> {
        self.events.iter().cloned().collect()
    }

    /// The run's effective configuration, as the envelope records it.
    pub fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "command": self.command,
            "import": self.import.as_deref().map(path_text),
            "compare": self.compare.as_ref().map(|v| v.iter().map(|p| path_text(p)).collect::<Vec<_>>()),
            "exact": self.exact,
            "metrics": self.metric_set(),
            "events": self.events,
            "sample": self.sample,
            "sample_freq": self.sample_freq,
            "sample_period": self.sample_period,
            "cpu_model": self.cpu_model,
            "counters": self.counters,
            "timeout_s": self.timeout.map(|d| d.as_secs_f64()),
            "pid": self.pid,
            "all_cpus": self.all_cpus,
            "interval_ms": self.interval.map(|d| d.as_millis() as u64),
            "duration_s": self.duration.map(|d| d.as_secs_f64()),
            "no_uncore": self.no_uncore,
            "memory_samples": self.memory_samples,
            "slow": self.slow,
            "regions": self.regions.as_deref().map(path_text),
            "same_machine": self.same_machine,
        })
    }

    /// How slow loads are chosen: `--slow` (above 0) or the default percentile.
    pub fn analysis(&self) -> Result<AnalysisOptions, Problem> {
        let mut a = AnalysisOptions::default();
        if let Some(v) = self.slow {
            if !(v.is_finite() && v > 0.0) {
                return Err(Problem::new(
                    ErrorClass::Usage,
                    format!("--slow {v}: give a latency above 0 (the PMU's weight, cycles)"),
                ));
            }
            a.threshold = ThresholdSpec::Value(v);
        }
        Ok(a)
    }

    /// `--regions FILE`, read and parsed (none without it).
    pub fn regions(&self) -> Result<Vec<NamedRegion>, Problem> {
        let Some(p) = self.regions.as_deref() else {
            return Ok(Vec::new());
        };
        let input =
            |e: String| Problem::new(ErrorClass::Input, format!("--regions {}: {e}", p.display()));
        // Read as a direct input: a device or a FIFO is refused, never read.
        let what = "the address ranges";
        let text = numalab_schema::input::read_to_string(p, what, numalab_schema::input::TEXT)
            .map_err(|e| input(e.reason))?;
        numalab_memaccess::parse_regions(&text)
            .map_err(|e| input(format!("{e} (each line: name start len [pid])")))
    }

    /// What is counted: the process (`--pid`), every CPU (`--all-cpus`, with or without a
    /// command), or the command.
    pub fn target(&self) -> Target {
        let (argv, shell, timeout) = (self.command.clone(), self.shell, self.timeout);
        match (self.pid, self.all_cpus) {
            (Some(pid), _) => Target::Pid(pid),
            (None, true) => Target::AllCpus {
                argv,
                shell,
                timeout,
            },
            (None, false) => Target::Command {
                argv,
                shell,
                timeout,
            },
        }
    }

    /// The counting session's options: the data-address options checked first, then the
    /// catalog chosen (`--cpu-model`, else this machine's).
    pub fn options(&self, cpus: Cpus) -> Result<Options, Problem> {
        let analysis = self.analysis()?;
        let regions = self.regions()?;
        Ok(Options {
            target: self.target(),
            cpu: cpus.counting()?,
            metrics: self.metric_set(),
            events: self.events(),
            exact: self.exact,
            counters: self.counters.map(|c| c as usize),
            interval: self.interval,
            duration: self.duration,
            uncore: !self.no_uncore,
            sample: self.sample.clone(),
            sample_freq: self.sample_freq,
            sample_period: self.sample_period,
            memory_samples: self.memory_samples,
            analysis,
            regions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Request {
        Request {
            sample_freq: 999,
            ..Default::default()
        }
    }

    #[test]
    fn the_mode_follows_the_flags_and_none_is_refused() {
        let mut r = request();
        let e = r.mode().unwrap_err();
        assert_eq!(e.class, ErrorClass::Usage);
        assert!(e.message.starts_with("nothing to profile"), "{e}");
        r.all_cpus = true;
        assert_eq!(r.mode(), Ok(Mode::Count));
        let r = Request {
            pid: Some(7),
            ..request()
        };
        assert_eq!(r.mode(), Ok(Mode::Count));
        let r = Request {
            import: Some("a.csv".into()),
            ..request()
        };
        assert_eq!(r.mode(), Ok(Mode::Import(Path::new("a.csv"))));
        let r = Request {
            compare: Some(["a".into(), "b".into()]),
            ..request()
        };
        assert_eq!(r.mode(), Ok(Mode::Compare(Path::new("a"), Path::new("b"))));
        let r = Request {
            list: true,
            ..request()
        };
        assert_eq!(r.mode(), Ok(Mode::List));
    }

    #[test]
    fn the_config_names_every_flag_and_the_metric_set_counted() {
        let r = Request {
            command: vec!["./a".into()],
            events: Some("r11".into()),
            interval: Some(Duration::from_millis(250)),
            compare: Some(["x".into(), "y".into()]),
            ..request()
        };
        let c = r.config();
        assert_eq!(c["metrics"], "");
        assert_eq!(c["events"], "r11");
        assert_eq!(c["interval_ms"], 250);
        assert_eq!(c["compare"], serde_json::json!(["x", "y"]));
        assert_eq!(c["sample_freq"], 999);
        assert!(c["import"].is_null() && c["timeout_s"].is_null());
        assert_eq!(c.as_object().unwrap().len(), 21);
        assert_eq!(request().config()["metrics"], "first-pass");
    }

    #[test]
    fn slow_must_be_a_latency_above_zero() {
        for bad in [0.0, -1.0, f64::NAN] {
            let r = Request {
                slow: Some(bad),
                ..request()
            };
            let e = r.analysis().unwrap_err();
            assert_eq!(e.class, ErrorClass::Usage);
            assert!(e.message.starts_with(&format!("--slow {bad}:")), "{e}");
        }
        let r = Request {
            slow: Some(40.0),
            ..request()
        };
        assert_eq!(r.analysis().unwrap().threshold, ThresholdSpec::Value(40.0));
    }

    #[test]
    fn regions_are_read_and_a_bad_file_is_an_input_problem() {
        assert!(request().regions().unwrap().is_empty());
        let dir =
            std::env::temp_dir().join(format!("numalab-profile-regions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.txt");
        std::fs::write(&good, "graph 0x1000 4K\n").unwrap();
        let r = Request {
            regions: Some(good),
            ..request()
        };
        assert_eq!(r.regions().unwrap().len(), 1);
        let bad = dir.join("bad.txt");
        std::fs::write(&bad, "graph nowhere\n").unwrap();
        let e = Request {
            regions: Some(bad),
            ..request()
        }
        .regions()
        .unwrap_err();
        assert_eq!(e.class, ErrorClass::Input);
        assert!(
            e.message.ends_with("(each line: name start len [pid])"),
            "{e}"
        );
        let e = Request {
            regions: Some(dir.join("missing.txt")),
            ..request()
        }
        .regions()
        .unwrap_err();
        assert!(e.message.starts_with("--regions "), "{e}");
        // A device is refused as a direct input would be, never read.
        let e = Request {
            regions: Some("/dev/zero".into()),
            ..request()
        }
        .regions()
        .unwrap_err();
        assert_eq!(e.class, ErrorClass::Input);
        assert!(
            e.message
                .starts_with("--regions /dev/zero: this is a device, not a file"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_target_and_options_follow_the_flags() {
        let r = Request {
            command: vec!["./a".into()],
            all_cpus: true,
            counters: Some(4),
            no_uncore: true,
            ..request()
        };
        assert!(matches!(r.target(), Target::AllCpus { ref argv, .. } if argv == &["./a"]));
        assert_eq!(
            Request {
                pid: Some(9),
                ..request()
            }
            .target(),
            Target::Pid(9)
        );
        let live = Err(Problem::new(ErrorClass::Unsupported, "no catalog"));
        let given = catalog::resolve_model("neoverse-n1").unwrap();
        let o = r
            .options(Cpus {
                given: Some(given.clone()),
                live: live.clone(),
            })
            .unwrap();
        assert_eq!((o.counters, o.uncore, o.cpu), (Some(4), false, given));
        let e = r.options(Cpus { given: None, live }).unwrap_err();
        assert_eq!(e.message, "no catalog");
    }
}
