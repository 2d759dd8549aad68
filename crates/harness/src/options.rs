//! A study's options as `numalab scale`, `policy` and `sweep` take them: checked into a
//! [`Study`] before anything runs, and the run's configuration as the envelope keeps it.

use crate::metric::Metric;
use crate::run::{HarnessError, Study};

/// The longest `--timeout` accepted, s (365 days).
pub const MAX_TIMEOUT_S: f64 = numalab_schema::units::MAX_DURATION.as_secs() as f64;

/// The most runs per point `--repeat` takes: the study's run list is made up front, and
/// a million runs of even the shortest command is days.
pub const MAX_REPEAT: usize = 1_000_000;

/// The options every study shares, as given (text and numbers, unchecked).
#[derive(Debug, Clone, PartialEq)]
pub struct StudyOptions {
    /// The command, with placeholders.
    pub command: Vec<String>,
    /// The work metric: `wall`, `regex:PATTERN` or `json:PATH`.
    pub metric: String,
    /// The printed metric is a time.
    pub lower_is_better: bool,
    /// Per-request response times the program prints (same syntax as `metric`).
    pub response: Option<String>,
    /// Unit of the response times as printed.
    pub response_unit: String,
    /// Runs per point.
    pub repeat: usize,
    /// Kill a run after this many seconds.
    pub timeout: Option<f64>,
    /// Run the command through `/bin/sh -c`.
    pub shell: bool,
    /// Stop at the first failed run.
    pub fail_fast: bool,
    /// `NAME=VALUE` environment variables for the command.
    pub env: Vec<String>,
    /// Time between samples, ms (at least 10 is used).
    pub sample_interval: u64,
}

fn usage(msg: impl Into<String>) -> HarnessError {
    HarnessError::Usage(msg.into())
}

impl StudyOptions {
    /// The study these options describe, every option checked: the metrics parse (a
    /// response is printed, never `wall`; `lower_is_better` needs a printed metric), at
    /// least one run per point, a timeout above 0 and at most a year, `NAME=VALUE`
    /// variables.
    pub fn study(&self) -> Result<Study, HarnessError> {
        let mut s = Study::new(self.command.clone());
        s.metric = Metric::parse(&self.metric)?;
        s.response = match &self.response {
            Some(r) => Some(
                Metric::parse(r)
                    .map_err(|e| usage(e.to_string().replacen("--metric", "--response", 1)))?,
            ),
            None => None,
        };
        if matches!(s.response, Some(Metric::Wall)) {
            return Err(usage(
                "--response wall: response times must be printed by the program (regex:... or json:...)",
            ));
        }
        s.response_unit = self.response_unit.clone();
        s.lower_is_better = self.lower_is_better;
        if self.lower_is_better && matches!(s.metric, Metric::Wall) {
            return Err(usage(
                "--lower-is-better applies to a printed metric; wall time is already a time",
            ));
        }
        if self.repeat == 0 {
            return Err(usage("--repeat 0: give at least 1 run per point"));
        }
        if self.repeat > MAX_REPEAT {
            return Err(usage(format!(
                "--repeat {}: at most {MAX_REPEAT} runs per point",
                self.repeat
            )));
        }
        s.repeat = self.repeat;
        s.timeout = match self.timeout {
            // Bounded so that a deadline (now + timeout) can always be formed: a year is
            // longer than any run a study times.
            Some(t) => match numalab_schema::units::seconds(t) {
                Some(d) => Some(d),
                None => {
                    return Err(usage(format!(
                    "--timeout {t:?}: give a positive number of seconds, at most {MAX_TIMEOUT_S} (a year)"
                )))
                }
            },
            None => None,
        };
        s.shell = self.shell;
        s.fail_fast = self.fail_fast;
        for kv in &self.env {
            let (k, v) = kv
                .split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| usage(format!("--env {kv:?}: write NAME=VALUE")))?;
            s.env.push((k.to_string(), v.to_string()));
        }
        // 0 ms would be no interval at all, and one past a year never samples: refused.
        let max_ms = MAX_TIMEOUT_S as u64 * 1000;
        if !(1..=max_ms).contains(&self.sample_interval) {
            return Err(usage(format!(
                "--sample-interval {}: give 1 to {max_ms} ms (under 10, it samples every 10 ms)",
                self.sample_interval
            )));
        }
        s.sampling.interval_ms = self.sample_interval.max(10);
        Ok(s)
    }

    /// The run's configuration: which study (`scale`, `policy`, `sweep`), these options
    /// and the study's plan.
    pub fn config(&self, kind: &str, plan: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "study": kind,
            "command": self.command,
            "shell": self.shell,
            "metric": self.metric,
            "lower_is_better": self.lower_is_better,
            "response": self.response,
            "repeat": self.repeat,
            "timeout_s": self.timeout,
            "env": self.env,
            "sample_interval_ms": self.sample_interval,
            "plan": plan,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{DEFAULT_METRIC, DEFAULT_REPEAT, DEFAULT_RESPONSE_UNIT};
    use numalab_schema::{Classify, ErrorClass};

    fn options() -> StudyOptions {
        StudyOptions {
            command: vec!["./app".into(), "{threads}".into()],
            metric: DEFAULT_METRIC.into(),
            lower_is_better: false,
            response: None,
            response_unit: DEFAULT_RESPONSE_UNIT.into(),
            repeat: DEFAULT_REPEAT,
            timeout: None,
            shell: false,
            fail_fast: false,
            env: Vec::new(),
            sample_interval: crate::sample::SamplingConfig::default().interval_ms,
        }
    }

    /// The flags' defaults (these constants and the sampling interval, which `numalab
    /// scale`, `policy` and `sweep` show as theirs) make the study `Study::new` makes.
    #[test]
    fn the_flags_defaults_are_the_studys() {
        let given = options().study().unwrap();
        let fresh = Study::new(given.command.clone());
        assert!(matches!(given.metric, Metric::Wall));
        assert_eq!(format!("{:?}", given.metric), format!("{:?}", fresh.metric));
        assert_eq!(given.repeat, fresh.repeat);
        assert_eq!(given.response_unit, fresh.response_unit);
        assert_eq!(given.sampling, fresh.sampling);
    }

    fn refused(o: StudyOptions) -> String {
        let e = o.study().unwrap_err();
        assert_eq!(e.class(), ErrorClass::Usage, "{e}");
        e.to_string()
    }

    #[test]
    fn good_options_make_the_study() {
        let o = StudyOptions {
            metric: "regex:rate=([0-9.]+)".into(),
            lower_is_better: true,
            response: Some("regex:lat=([0-9.]+)".into()),
            timeout: Some(2.5),
            env: vec!["OMP_NUM_THREADS={threads}".into(), "EMPTY=".into()],
            sample_interval: 1,
            ..options()
        };
        let s = o.study().unwrap();
        assert!(s.lower_is_better && s.response.is_some());
        assert_eq!(s.timeout, Some(std::time::Duration::from_millis(2500)));
        assert_eq!(s.env[0], ("OMP_NUM_THREADS".into(), "{threads}".into()));
        assert_eq!(s.env[1], ("EMPTY".into(), String::new()));
        assert_eq!(s.sampling.interval_ms, 10);
        assert_eq!(s.repeat, 3);
    }

    #[test]
    fn each_bad_option_is_refused_with_its_flag() {
        let m = refused(StudyOptions {
            response: Some("regex:(".into()),
            ..options()
        });
        assert!(m.starts_with("--response \"regex:(\""), "{m}");
        let m = refused(StudyOptions {
            response: Some("wall".into()),
            ..options()
        });
        assert!(m.starts_with("--response wall:"), "{m}");
        let m = refused(StudyOptions {
            lower_is_better: true,
            ..options()
        });
        assert!(m.starts_with("--lower-is-better"), "{m}");
        let m = refused(StudyOptions {
            repeat: 0,
            ..options()
        });
        assert_eq!(m, "--repeat 0: give at least 1 run per point");
        for ms in [0, u64::MAX] {
            let m = refused(StudyOptions {
                sample_interval: ms,
                ..options()
            });
            assert!(
                m.starts_with(&format!("--sample-interval {ms}: give 1 to ")),
                "{m}"
            );
        }
        let m = refused(StudyOptions {
            repeat: usize::MAX,
            ..options()
        });
        assert_eq!(
            m,
            format!("--repeat {}: at most 1000000 runs per point", usize::MAX)
        );
        assert!(StudyOptions {
            repeat: MAX_REPEAT,
            ..options()
        }
        .study()
        .is_ok());
        for t in [
            0.0,
            -1.0,
            MAX_TIMEOUT_S * 2.0,
            f64::NAN,
            f64::INFINITY,
            1e308,
        ] {
            let m = refused(StudyOptions {
                timeout: Some(t),
                ..options()
            });
            assert!(m.starts_with(&format!("--timeout {t:?}:")), "{m}");
        }
        for kv in ["NOEQUALS", "=v"] {
            let m = refused(StudyOptions {
                env: vec![kv.into()],
                ..options()
            });
            assert_eq!(m, format!("--env {kv:?}: write NAME=VALUE"));
        }
        assert!(refused(StudyOptions {
            metric: "bogus".into(),
            ..options()
        })
        .starts_with("--metric"));
    }

    #[test]
    fn the_config_names_the_study_its_options_and_plan() {
        let c = options().config("sweep", serde_json::json!({"threads": 4}));
        assert_eq!(c["study"], "sweep");
        assert_eq!(c["sample_interval_ms"], 250);
        assert_eq!(c["plan"]["threads"], 4);
        assert!(c["timeout_s"].is_null());
        assert_eq!(c.as_object().unwrap().len(), 11);
    }
}
