//! The records `numalab evaluate` writes about the machine and the run itself: its
//! description (`topo.machine`), how each step ended (`evaluate.step`), with which
//! options each run went (`evaluate.run`), and which power sensors and frequency
//! controls it has (`power.check`).

use numalab_schema::machine::FrequencyDomain;
use numalab_schema::{Machine, RecordKind};
use serde::{Deserialize, Serialize};

/// The machine description as a record (`topo.machine`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopologyRecord {
    /// The machine.
    pub machine: Machine,
    /// The short summary as printed by `numalab topo`.
    pub summary_text: String,
}

impl RecordKind for TopologyRecord {
    const KIND: &'static str = "topo.machine";
}

/// How an evaluation step ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum StepStatus {
    /// Completed.
    Done,
    /// Not run, and why (the machine cannot do it, or the user left it out).
    Skipped {
        /// Why.
        reason: String,
    },
    /// Failed; the other steps went on.
    Failed {
        /// The error.
        error: String,
    },
}

impl StepStatus {
    /// The outcome in a word or two ("done", "FAILED: error"); the reason of a skip
    /// between `open` and `close` ("skipped (reason)" in a log line, "skipped: reason"
    /// in the closing summary).
    pub fn describe(&self, open: &str, close: &str) -> String {
        match self {
            StepStatus::Done => "done".to_string(),
            StepStatus::Skipped { reason } => format!("skipped{open}{reason}{close}"),
            StepStatus::Failed { error } => format!("FAILED: {error}"),
        }
    }
}

/// The record closing an evaluation step (`evaluate.step`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// Step id.
    pub step: String,
    /// Step title.
    pub title: String,
    /// Outcome.
    pub outcome: StepStatus,
    /// Seconds spent in this run of the step.
    pub seconds: f64,
    /// Which run of `evaluate` in this folder closed the step (the `evaluate.run`
    /// record with this number holds its options); absent in journals written before
    /// runs were numbered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<u32>,
}

impl RecordKind for StepRecord {
    const KIND: &'static str = "evaluate.step";
}

/// The reason recorded for a step the user left out with `--skip`. Such a step is not
/// finished: a later run without that `--skip` fills it in.
pub const LEFT_OUT: &str = "left out with --skip";

impl StepRecord {
    /// The step's closing line in a log: "step c2c done in 3.2 s", "step pmu skipped
    /// (reason) in 0.0 s".
    pub fn log_line(&self) -> String {
        format!(
            "step {} {} in {:.1} s",
            self.step,
            self.outcome.describe(" (", ")"),
            self.seconds
        )
    }

    /// Whether the user left this step out (`--skip`), as opposed to the machine not
    /// allowing it.
    pub fn left_out(&self) -> bool {
        matches!(&self.outcome, StepStatus::Skipped { reason } if reason == LEFT_OUT)
    }

    /// Whether a later run has nothing left to do for this step: it completed, or the
    /// machine cannot do it. A failed or left-out step is run again.
    pub fn finished(&self) -> bool {
        match &self.outcome {
            StepStatus::Done => true,
            StepStatus::Skipped { .. } => !self.left_out(),
            StepStatus::Failed { .. } => false,
        }
    }
}

/// The latest outcome of each step, in the order the steps were first closed. A step
/// that failed or was left out in one run and was completed by a later run (in the same
/// folder) has several `evaluate.step` records; the last one written is its outcome.
pub fn latest_steps(steps: impl IntoIterator<Item = StepRecord>) -> Vec<StepRecord> {
    let mut out: Vec<StepRecord> = Vec::new();
    for s in steps {
        match out.iter_mut().find(|o| o.step == s.step) {
            Some(slot) => *slot = s,
            None => out.push(s),
        }
    }
    out
}

/// One invocation of `numalab evaluate` in an output folder (`evaluate.run`): the
/// options it ran with, so that every record after it (up to the next run) is known to
/// come from these options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// 1 for the run that created the folder, then 2, 3, ... for each resumption.
    pub run: u32,
    /// The command line.
    pub command: Vec<String>,
    /// `--quick`.
    pub quick: bool,
    /// `--skip`.
    pub skip: Vec<String>,
    /// When the run started (RFC 3339 UTC).
    pub started_utc: String,
}

impl RecordKind for RunRecord {
    const KIND: &'static str = "evaluate.run";
}

/// Sensors and frequencies found (`power.check`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PowerCheck {
    /// Readable sensors.
    pub sensors: Vec<crate::sensors::Sensor>,
    /// cpufreq domains at the time of the check.
    pub frequencies: Vec<FrequencyDomain>,
}

impl RecordKind for PowerCheck {
    const KIND: &'static str = "power.check";
}

#[cfg(test)]
mod step_tests {
    use super::*;

    fn step(id: &str, outcome: StepStatus, run: u32) -> StepRecord {
        StepRecord {
            step: id.into(),
            title: id.into(),
            outcome,
            seconds: 1.0,
            run: Some(run),
        }
    }

    #[test]
    fn the_last_outcome_of_each_step_wins_and_order_is_kept() {
        let left_out = StepStatus::Skipped {
            reason: LEFT_OUT.into(),
        };
        let cannot = StepStatus::Skipped {
            reason: "no power sensors".into(),
        };
        let failed = StepStatus::Failed { error: "x".into() };
        let all = vec![
            step("a", left_out.clone(), 1),
            step("b", failed.clone(), 1),
            step("c", cannot.clone(), 1),
            step("b", StepStatus::Done, 2),
            step("a", StepStatus::Done, 3),
        ];
        let latest = latest_steps(all);
        let ids: Vec<(&str, u32)> = latest
            .iter()
            .map(|s| (s.step.as_str(), s.run.unwrap()))
            .collect();
        assert_eq!(ids, [("a", 3), ("b", 2), ("c", 1)]);
        assert!(latest.iter().all(StepRecord::finished));
        // Left out by the user or failed: to be run again; not possible here: finished.
        assert!(!step("a", left_out, 1).finished());
        assert!(step("a", left_out_not(), 1).finished());
        assert!(!step("b", failed, 1).finished());
        assert!(step("c", cannot, 1).finished() && !step("c", StepStatus::Done, 1).left_out());
    }

    fn left_out_not() -> StepStatus {
        StepStatus::Skipped {
            reason: "left out by the machine".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_outcome_is_described_in_a_word_or_two() {
        assert_eq!(StepStatus::Done.describe(" (", ")"), "done");
        let skipped = StepStatus::Skipped {
            reason: LEFT_OUT.into(),
        };
        assert_eq!(
            skipped.describe(" (", ")"),
            "skipped (left out with --skip)"
        );
        assert_eq!(skipped.describe(": ", ""), "skipped: left out with --skip");
        let failed = StepStatus::Failed {
            error: "no PMU".into(),
        };
        assert_eq!(failed.describe(": ", ""), "FAILED: no PMU");
        let r = StepRecord {
            step: "pmu".into(),
            title: "counters".into(),
            outcome: skipped,
            seconds: 3.0,
            run: None,
        };
        assert_eq!(
            r.log_line(),
            "step pmu skipped (left out with --skip) in 3.0 s"
        );
    }
}
