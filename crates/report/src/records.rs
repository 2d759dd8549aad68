//! The records `numalab evaluate` and `numalab doctor` write about the machine itself:
//! its description (`topo.machine`), what it allows (`doctor.report`), how each step of
//! an evaluation ended (`evaluate.step`) and which power sensors and frequency controls
//! it has (`power.check`). They live here, beside the code that renders them, so that
//! `report` and `compare` read them without depending on the binary.

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

/// A doctor check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Fine for measuring.
    Ok,
    /// Usable, with a caveat that affects results.
    Warn,
    /// Something numalab needs does not work.
    Fail,
    /// A fact worth knowing.
    Info,
}

/// One doctor check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// Short name ("numa", "pmu"...).
    pub name: String,
    /// The verdict.
    pub verdict: Verdict,
    /// What was found, as a stable word for scripts, where the check has one: `smt`
    /// the kernel's word ("on", "off", "forceoff", "notsupported", "notimplemented",
    /// "unavailable"), `hypervisor` an id ("none", "qemu", "kvm", "xen", "aws-nitro",
    /// ...), `pmu-catalog` the event catalog id ("neoverse-n1", "x86-64") or "none".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// What was found.
    pub detail: String,
    /// What to do about it, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

/// What this machine allows (`doctor.report`; also `numalab doctor --json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DoctorReport {
    /// Layout version of this document.
    pub schema_version: u32,
    /// Host name.
    pub hostname: Option<String>,
    /// The checks.
    pub checks: Vec<Check>,
}

impl RecordKind for DoctorReport {
    const KIND: &'static str = "doctor.report";
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
}

impl RecordKind for StepRecord {
    const KIND: &'static str = "evaluate.step";
}

/// Sensors and frequencies found (`power.check`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PowerCheck {
    /// Readable sensors.
    pub sensors: Vec<numalab_sensors::Sensor>,
    /// cpufreq domains at the time of the check.
    pub frequencies: Vec<FrequencyDomain>,
}

impl RecordKind for PowerCheck {
    const KIND: &'static str = "power.check";
}
