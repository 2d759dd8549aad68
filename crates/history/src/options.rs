//! Options given as text (tags, times, baselines, the sides of a regression check) read
//! into the history's types, with messages that name the option and show an example.

use crate::{Baseline, RunFilter};
use numalab_schema::{Classify, ErrorClass};
use std::time::SystemTime;

/// An option that does not read: its message names the option (`--since "x"`), says
/// why and gives an example. A usage error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct OptionError(pub String);

impl Classify for OptionError {
    fn class(&self) -> ErrorClass {
        ErrorClass::Usage
    }
}

/// `KEY=VALUE` tags (`--tag`), the key trimmed and not empty, the value as given.
pub fn parse_tags(tags: &[String]) -> Result<Vec<(String, String)>, OptionError> {
    tags.iter()
        .map(|t| match t.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => Err(OptionError(format!(
                "--tag {t:?}: give KEY=VALUE, e.g. --tag node=n17"
            ))),
        })
        .collect()
}

/// `KEY=VALUE` tags ([`parse_tags`]) as the JSON object of [`crate::IngestOptions::tags`]
/// (every value a string).
pub fn tags_object(tags: &[String]) -> Result<serde_json::Value, OptionError> {
    Ok(serde_json::Value::Object(
        parse_tags(tags)?
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect(),
    ))
}

/// A time given to `flag`: RFC 3339, a date alone (`2026-11-01`) meaning its midnight
/// UTC.
pub fn parse_time(flag: &str, t: &str) -> Result<SystemTime, OptionError> {
    let full = if t.len() == 10 {
        format!("{t}T00:00:00Z")
    } else {
        t.to_string()
    };
    humantime::parse_rfc3339_weak(&full).map_err(|e| {
        OptionError(format!(
            "{flag} {t:?}: {e}; give an RFC 3339 date or time, e.g. 2026-11-01 or 2026-11-01T12:00:00Z"
        ))
    })
}

impl RunFilter {
    /// The filter of options given as text: machine fingerprint, host name, `--tag`
    /// KEY=VALUE pairs, `--since` and `--until` times ([`parse_time`]).
    pub fn parse(
        machine: Option<String>,
        host: Option<String>,
        tags: &[String],
        since: Option<&str>,
        until: Option<&str>,
    ) -> Result<RunFilter, OptionError> {
        Ok(RunFilter {
            machine,
            host,
            tags: parse_tags(tags)?,
            since: since.map(|t| parse_time("--since", t)).transpose()?,
            until: until.map(|t| parse_time("--until", t)).transpose()?,
        })
    }
}

impl Baseline {
    /// `--baseline`: `first`, a run id (`run:12`) or a time ([`parse_time`]: the first
    /// run at or after it).
    pub fn parse(text: &str) -> Result<Baseline, OptionError> {
        if text == "first" {
            return Ok(Baseline::First);
        }
        if let Some(id) = text.strip_prefix("run:") {
            return id.parse().map(Baseline::Run).map_err(|_| {
                OptionError(format!(
                    "--baseline {text:?}: give run:N with a run id from `numalab db runs`"
                ))
            });
        }
        parse_time("--baseline", text).map(Baseline::Time)
    }
}

/// Checks the sides of a regression check before any work: each side has at least one
/// run, and the assumed run-to-run spread (`run_noise`, percent) is a finite,
/// non-negative number.
pub fn check_regression_sides(
    baseline_runs: usize,
    latest_runs: usize,
    run_noise: f64,
) -> Result<(), OptionError> {
    if baseline_runs == 0 || latest_runs == 0 {
        return Err(OptionError(
            "--baseline-runs and --latest-runs must be at least 1".into(),
        ));
    }
    if !(run_noise.is_finite() && run_noise >= 0.0) {
        return Err(OptionError(format!(
            "--run-noise {run_noise}: give a percentage, e.g. 10"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn tags_are_key_value_pairs_with_a_key() {
        let tags = ["node=n17".to_string(), " rack = 3=4".to_string()];
        assert_eq!(
            parse_tags(&tags).unwrap(),
            vec![
                ("node".to_string(), "n17".to_string()),
                ("rack".to_string(), " 3=4".to_string())
            ]
        );
        assert_eq!(
            tags_object(&tags).unwrap(),
            serde_json::json!({"node": "n17", "rack": " 3=4"})
        );
        let e = parse_tags(&["=x".into()]).unwrap_err();
        assert_eq!(e.0, r#"--tag "=x": give KEY=VALUE, e.g. --tag node=n17"#);
        assert_eq!(e.class(), ErrorClass::Usage);
        assert!(parse_tags(&["novalue".into()]).is_err());
    }

    #[test]
    fn a_date_alone_is_its_midnight_utc() {
        let day = parse_time("--since", "2026-11-01").unwrap();
        let exact = parse_time("--since", "2026-11-01T00:00:00Z").unwrap();
        assert_eq!(day, exact);
        assert_eq!(
            parse_time("--since", "1970-01-02").unwrap(),
            UNIX_EPOCH + Duration::from_secs(86_400)
        );
        let e = parse_time("--until", "yesterday").unwrap_err();
        assert!(e.0.starts_with(r#"--until "yesterday": "#), "{e}");
        assert!(e.0.ends_with("e.g. 2026-11-01 or 2026-11-01T12:00:00Z"));
    }

    #[test]
    fn a_filter_reads_every_option() {
        let f = RunFilter::parse(
            Some("00ff".into()),
            None,
            &["node=n1".into()],
            Some("1970-01-02"),
            None,
        )
        .unwrap();
        assert_eq!(f.machine.as_deref(), Some("00ff"));
        assert_eq!(f.tags, vec![("node".into(), "n1".into())]);
        assert_eq!(f.since, Some(UNIX_EPOCH + Duration::from_secs(86_400)));
        assert_eq!(f.until, None);
        let e = RunFilter::parse(None, None, &[], None, Some("x")).unwrap_err();
        assert!(e.0.starts_with("--until \"x\""));
    }

    #[test]
    fn a_baseline_is_first_a_run_or_a_time() {
        assert_eq!(Baseline::parse("first").unwrap(), Baseline::First);
        assert_eq!(Baseline::parse("run:12").unwrap(), Baseline::Run(12));
        assert_eq!(
            Baseline::parse("1970-01-02").unwrap(),
            Baseline::Time(UNIX_EPOCH + Duration::from_secs(86_400))
        );
        assert_eq!(
            Baseline::parse("run:x").unwrap_err().0,
            r#"--baseline "run:x": give run:N with a run id from `numalab db runs`"#
        );
        assert!(Baseline::parse("latest")
            .unwrap_err()
            .0
            .starts_with("--baseline \"latest\""));
    }

    #[test]
    fn regression_sides_need_a_run_each_and_a_real_noise() {
        assert!(check_regression_sides(1, 3, 0.0).is_ok());
        assert!(check_regression_sides(0, 1, 10.0).is_err());
        assert!(check_regression_sides(1, 0, 10.0).is_err());
        assert_eq!(
            check_regression_sides(1, 1, -5.0).unwrap_err().0,
            "--run-noise -5: give a percentage, e.g. 10"
        );
        assert!(check_regression_sides(1, 1, f64::NAN).is_err());
    }
}
