//! What `numalab doctor` finds this machine allows (`doctor.report`): one check per
//! thing numalab needs, with a verdict, what was found and what to do.

use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

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
    /// ...), `pmu-catalog` the event catalog id ("neoverse-n1", "x86-64") or "none",
    /// `perf-metrics` how numalab's formulas compare with the installed perf's ("agree",
    /// "differ", "no-json", "no-perf", "unreadable", "no-catalog", "no-metrics",
    /// "none-shared").
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
