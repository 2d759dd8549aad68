//! The work metric of a run: its wall time (the program does a fixed amount of work),
//! or a number the program prints (a regex with one capture group, or a field of a JSON
//! document it prints, e.g. `requests_per_s`).
//!
//! Metrics are parsed and checked before a study starts (a regex without exactly one
//! capture group is refused at once), and a run whose output does not contain the
//! number is a recorded failure that shows the end of the output, so the user sees why.

use numalab_proc::Outcome;
use regex::Regex;
use serde_json::Value;

/// How a run's work is measured.
#[derive(Debug, Clone)]
pub enum Metric {
    /// Wall time of the run (fixed work): lower is better.
    Wall,
    /// A number printed by the program: the capture group of the last match.
    Regex {
        /// The pattern as given.
        source: String,
        /// The compiled pattern.
        re: Regex,
    },
    /// A number in a JSON document the program prints (whole stdout, or a JSON line).
    Json {
        /// The path as given: `a.b.0.c`, or a JSON pointer `/a/b/0/c`.
        path: String,
    },
}

/// Why a metric could not be parsed or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricError {
    /// The metric text is wrong (found before anything runs).
    #[error("--metric {text:?}: {reason}")]
    Syntax {
        /// The text.
        text: String,
        /// What is wrong, with an example.
        reason: String,
    },
    /// The output does not contain the number.
    #[error("the output has no match for {metric}; end of its output:\n{tail}")]
    NoMatch {
        /// The metric.
        metric: String,
        /// The last lines of stdout (and stderr).
        tail: String,
    },
    /// The match is not a number.
    #[error("{metric} matched {text:?}, which is not a number")]
    NotANumber {
        /// The metric.
        metric: String,
        /// What matched.
        text: String,
    },
}

impl numalab_schema::Classify for MetricError {
    fn class(&self) -> numalab_schema::ErrorClass {
        match self {
            MetricError::Syntax { .. } => numalab_schema::ErrorClass::Usage,
            _ => numalab_schema::ErrorClass::Runtime,
        }
    }
}

impl std::str::FromStr for Metric {
    type Err = MetricError;
    fn from_str(s: &str) -> Result<Self, MetricError> {
        Metric::parse(s)
    }
}

/// The last `lines` lines of a text (for error messages).
pub fn last_lines(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    let start = all.len().saturating_sub(lines);
    all[start..].join("\n")
}

impl Metric {
    /// Parses `wall`, `regex:RE` or `json:PATH`.
    pub fn parse(text: &str) -> Result<Metric, MetricError> {
        let syntax = |reason: &str| MetricError::Syntax {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        if text == "wall" || text == "time" {
            return Ok(Metric::Wall);
        }
        if let Some(src) = text.strip_prefix("regex:") {
            let re = Regex::new(src).map_err(|e| MetricError::Syntax {
                text: text.to_string(),
                reason: format!("not a valid regular expression ({e})"),
            })?;
            let groups = re.captures_len() - 1;
            if groups != 1 {
                return Err(syntax(&format!(
                    "the pattern has {groups} capture groups; it needs exactly one around the number, e.g. regex:'requests_per_s=([0-9.eE+-]+)' (use (?:...) for other groups)"
                )));
            }
            return Ok(Metric::Regex {
                source: src.to_string(),
                re,
            });
        }
        if let Some(path) = text.strip_prefix("json:") {
            if path.trim().is_empty() {
                return Err(syntax(
                    "the JSON path is empty; e.g. json:records.data.requests_per_s or json:/records/0/data/requests_per_s",
                ));
            }
            return Ok(Metric::Json {
                path: path.to_string(),
            });
        }
        Err(syntax(
            "use wall (wall time of fixed work), regex:PATTERN with one capture group, or json:PATH",
        ))
    }

    /// The metric as given (`wall`, `regex:...`, `json:...`).
    pub fn text(&self) -> String {
        match self {
            Metric::Wall => "wall".into(),
            Metric::Regex { source, .. } => format!("regex:{source}"),
            Metric::Json { path } => format!("json:{path}"),
        }
    }

    /// Whether the program's whole stdout is needed.
    pub fn needs_stdout(&self) -> bool {
        !matches!(self, Metric::Wall)
    }

    /// The metric's value for a finished run: wall seconds, or the printed number (the
    /// last match when the pattern matches several times).
    pub fn value(&self, outcome: &Outcome) -> Result<f64, MetricError> {
        match self {
            Metric::Wall => Ok(outcome.wall_ns as f64 / 1e9),
            _ => {
                let values = self.values(outcome)?;
                Ok(*values.last().expect("values() returns at least one"))
            }
        }
    }

    /// Every value the output holds (all matches of a regex; a JSON number, or every
    /// number of a JSON array). At least one, or an error. `Wall` gives the wall time.
    pub fn values(&self, outcome: &Outcome) -> Result<Vec<f64>, MetricError> {
        let stdout = outcome.stdout.as_deref().unwrap_or(&outcome.stdout_tail);
        let found = match self {
            Metric::Wall => return Ok(vec![outcome.wall_ns as f64 / 1e9]),
            Metric::Regex { re, .. } => {
                let mut v = regex_values(re, stdout, &self.text())?;
                if v.is_empty() {
                    v = regex_values(re, &outcome.stderr_tail, &self.text())?;
                }
                v
            }
            Metric::Json { path } => json_values(stdout, path, &self.text())?,
        };
        if found.is_empty() {
            let mut tail = last_lines(stdout, 10);
            let err = last_lines(&outcome.stderr_tail, 5);
            if tail.is_empty() {
                tail = "(stdout was empty)".into();
            }
            if !err.is_empty() {
                tail = format!("{tail}\n(stderr:)\n{err}");
            }
            return Err(MetricError::NoMatch {
                metric: self.text(),
                tail,
            });
        }
        Ok(found)
    }
}

fn parse_number(text: &str, metric: &str) -> Result<f64, MetricError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| MetricError::NotANumber {
            metric: metric.to_string(),
            text: text.to_string(),
        })
}

fn regex_values(re: &Regex, text: &str, metric: &str) -> Result<Vec<f64>, MetricError> {
    re.captures_iter(text)
        .filter_map(|c| c.get(1))
        .map(|m| parse_number(m.as_str(), metric))
        .collect()
}

/// Looks a path up: numeric segments index arrays; a name applied to an array takes
/// the first element where the rest of the path resolves.
fn lookup<'a>(v: &'a Value, segments: &[&str]) -> Option<&'a Value> {
    let Some((first, rest)) = segments.split_first() else {
        return Some(v);
    };
    match v {
        Value::Object(map) => lookup(map.get(*first)?, rest),
        Value::Array(items) => match first.parse::<usize>() {
            Ok(i) => lookup(items.get(i)?, rest),
            Err(_) => items.iter().find_map(|it| lookup(it, segments)),
        },
        _ => None,
    }
}

fn resolve<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    if path.starts_with('/') {
        doc.pointer(path)
    } else {
        let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
        lookup(doc, &segments)
    }
}

fn numbers(v: &Value, metric: &str) -> Result<Vec<f64>, MetricError> {
    match v {
        Value::Number(n) => Ok(n.as_f64().into_iter().collect()),
        Value::String(s) => Ok(vec![parse_number(s, metric)?]),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Number(n) => n.as_f64().ok_or_else(|| MetricError::NotANumber {
                    metric: metric.into(),
                    text: n.to_string(),
                }),
                other => Err(MetricError::NotANumber {
                    metric: metric.into(),
                    text: other.to_string(),
                }),
            })
            .collect(),
        other => Err(MetricError::NotANumber {
            metric: metric.to_string(),
            text: other.to_string(),
        }),
    }
}

/// The value at `path` in stdout read as one JSON document, or else in the last JSON
/// line that has it (JSON Lines output).
fn json_values(stdout: &str, path: &str, metric: &str) -> Result<Vec<f64>, MetricError> {
    if let Ok(doc) = serde_json::from_str::<Value>(stdout.trim()) {
        if let Some(v) = resolve(&doc, path) {
            return numbers(v, metric);
        }
    }
    for line in stdout.lines().rev() {
        let line = line.trim();
        if !(line.starts_with('{') || line.starts_with('[')) {
            continue;
        }
        if let Ok(doc) = serde_json::from_str::<Value>(line) {
            if let Some(v) = resolve(&doc, path) {
                return numbers(v, metric);
            }
        }
    }
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(stdout: &str) -> Outcome {
        Outcome {
            argv: vec!["x".into()],
            exit_code: Some(0),
            signal: None,
            signal_name: None,
            timed_out: false,
            interrupted: false,
            wall_ns: 2_500_000_000,
            user_cpu_ns: 0,
            sys_cpu_ns: 0,
            max_rss_bytes: 0,
            stdout_tail: stdout.to_string(),
            stderr_tail: String::new(),
            stdout: Some(stdout.to_string()),
            leftovers_killed: false,
            supervisor_lost: false,
        }
    }

    #[test]
    fn wall_time_in_seconds() {
        assert_eq!(Metric::parse("wall").unwrap().value(&outcome("")), Ok(2.5));
    }

    #[test]
    fn regex_takes_the_last_match_and_all_matches() {
        let m = Metric::parse("regex:requests_per_s=([0-9.]+)").unwrap();
        let o = outcome("warming up\nrequests_per_s=10.5\nrequests_per_s=1234.5\n");
        assert_eq!(m.value(&o), Ok(1234.5));
        assert_eq!(m.values(&o), Ok(vec![10.5, 1234.5]));
        let lat = Metric::parse(r"regex:latency_us=(\S+)").unwrap();
        let o = outcome("latency_us=1e2\nlatency_us=abc\n");
        assert!(matches!(
            lat.values(&o),
            Err(MetricError::NotANumber { .. })
        ));
    }

    #[test]
    fn a_regex_that_never_matches_shows_the_output_tail() {
        let m = Metric::parse("regex:rps=([0-9]+)").unwrap();
        let text: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let err = m.value(&outcome(&text)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("no match for regex:rps=([0-9]+)"), "{msg}");
        assert!(msg.contains("line 29") && !msg.contains("line 19"), "{msg}");
    }

    #[test]
    fn bad_metrics_are_refused_before_running() {
        for (text, why) in [
            ("regex:([0-9]+", "not a valid regular expression"),
            ("regex:rps=[0-9]+", "0 capture groups"),
            ("regex:(a)=(b)", "2 capture groups"),
            ("json:", "path is empty"),
            ("throughput", "use wall"),
        ] {
            let e = Metric::parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
        assert!(Metric::parse("regex:(?:a|b)=([0-9]+)").is_ok());
    }

    #[test]
    fn json_paths_in_a_bundle_and_in_json_lines() {
        let bundle = r#"{"schema_version":1,"envelope":{},"records":[
            {"kind":"workload.info","data":{"threads":4}},
            {"kind":"workload.run","data":{"requests_per_s":5321.5,"latency_us":[10,20,30]}}]}"#;
        let m = Metric::parse("json:records.data.requests_per_s").unwrap();
        assert_eq!(m.value(&outcome(bundle)), Ok(5321.5));
        let p = Metric::parse("json:/records/1/data/requests_per_s").unwrap();
        assert_eq!(p.value(&outcome(bundle)), Ok(5321.5));
        let l = Metric::parse("json:records.data.latency_us").unwrap();
        assert_eq!(l.values(&outcome(bundle)), Ok(vec![10.0, 20.0, 30.0]));
        let lines = "starting\n{\"rps\": 1}\n{\"other\": 2}\n{\"rps\": \"7.5\"}\ndone\n";
        let r = Metric::parse("json:rps").unwrap();
        assert_eq!(r.value(&outcome(lines)), Ok(7.5));
        let missing = Metric::parse("json:records.data.nope").unwrap();
        assert!(matches!(
            missing.value(&outcome(bundle)),
            Err(MetricError::NoMatch { .. })
        ));
    }
}
