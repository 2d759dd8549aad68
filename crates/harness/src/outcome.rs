//! What a study tells people beside its tables: the progress line of each run, and how
//! many runs failed with the exit that makes (partial, or nothing measured at all).

use crate::run::Progress;
use crate::{PolicySummary, ScaleSummary, SweepSummary};
use numalab_schema::{Classify, ErrorClass};

/// Runs of a study that failed, of all its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunCount {
    /// Runs that failed (recorded with why).
    pub failed: usize,
    /// Every run of the study.
    pub all: usize,
}

/// A study's summary, counted in runs.
pub trait Runs {
    /// The failed runs and all runs of every point.
    fn run_count(&self) -> RunCount;
}

impl Runs for ScaleSummary {
    fn run_count(&self) -> RunCount {
        let all = self.points.iter().map(|p| p.stats.runs).sum();
        RunCount {
            failed: self.failed_runs,
            all,
        }
    }
}

impl Runs for PolicySummary {
    fn run_count(&self) -> RunCount {
        let all = self.results.iter().map(|p| p.stats.runs).sum();
        RunCount {
            failed: self.failed_runs,
            all,
        }
    }
}

impl Runs for SweepSummary {
    fn run_count(&self) -> RunCount {
        let all = self.points.iter().map(|p| p.stats.runs).sum();
        RunCount {
            failed: self.failed_runs,
            all,
        }
    }
}

/// Failed runs of a finished study, with where to look (the records with --json, else
/// the table above).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunsFailed {
    /// Every run failed: nothing was measured (a failure).
    #[error("every run failed ({failed} of {all}): nothing was measured (recorded; see the {see} for why)")]
    Every {
        /// Runs that failed.
        failed: usize,
        /// All runs.
        all: usize,
        /// "records" or "table above".
        see: &'static str,
    },
    /// Some runs failed, the others measured (partial).
    #[error("{failed} of {all} run(s) failed (recorded; see the {see})")]
    Some {
        /// Runs that failed.
        failed: usize,
        /// All runs.
        all: usize,
        /// "records" or "table above".
        see: &'static str,
    },
}

impl Classify for RunsFailed {
    fn class(&self) -> ErrorClass {
        match self {
            RunsFailed::Every { .. } => ErrorClass::Runtime,
            RunsFailed::Some { .. } => ErrorClass::Partial,
        }
    }
}

impl RunCount {
    /// Fine when no run failed; else partial, or a failure when every run did. `json`:
    /// the results went out as JSON records (not a table).
    pub fn verdict(self, json: bool) -> Result<(), RunsFailed> {
        let RunCount { failed, all } = self;
        let see = if json { "records" } else { "table above" };
        match failed {
            0 => Ok(()),
            _ if failed >= all => Err(RunsFailed::Every { failed, all, see }),
            _ => Err(RunsFailed::Some { failed, all, see }),
        }
    }
}

impl Progress {
    /// The progress bar's message: "LABEL: STATUS", the status cut to 60 characters.
    pub fn message(&self) -> String {
        let status: String = self.status.chars().take(60).collect();
        format!("{}: {}", self.label, status)
    }

    /// "LABEL: STATUS" of a failed run (said in full where no bar shows it).
    pub fn failure(&self) -> Option<String> {
        self.status
            .starts_with("failed")
            .then(|| format!("{}: {}", self.label, self.status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_runs_make_the_study_partial_or_a_failure() {
        let count = |failed, all| RunCount { failed, all };
        assert_eq!(count(0, 6).verdict(false), Ok(()));
        let some = count(2, 6).verdict(false).unwrap_err();
        assert_eq!(some.class(), ErrorClass::Partial);
        assert_eq!(
            some.to_string(),
            "2 of 6 run(s) failed (recorded; see the table above)"
        );
        let every = count(6, 6).verdict(true).unwrap_err();
        assert_eq!(every.class(), ErrorClass::Runtime);
        assert_eq!(
            every.to_string(),
            "every run failed (6 of 6): nothing was measured (recorded; see the records for why)"
        );
    }

    #[test]
    fn progress_says_the_point_and_its_status() {
        let p = |status: &str| Progress {
            done: 1,
            total: 2,
            label: "4 threads".into(),
            status: status.into(),
        };
        assert_eq!(p("ok 1.23 s").message(), "4 threads: ok 1.23 s");
        assert_eq!(p("ok 1.23 s").failure(), None);
        let long = format!("failed: {}", "x".repeat(80));
        assert_eq!(p(&long).message().chars().count(), "4 threads: ".len() + 60);
        assert_eq!(p(&long).failure().unwrap(), format!("4 threads: {long}"));
    }
}
