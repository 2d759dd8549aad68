//! The PMU check of `numalab evaluate` (run by `numalab_pmu::check`): what counting is
//! possible, which event catalog fits the CPU, and a short count of a built-in loop
//! checked against the thread's CPU-time clock.

use super::capability::Capability;
use super::catalog::CpuMatch;
use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// A PMU check (`pmu.check`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PmuCheck {
    /// What counting is possible.
    pub capability: Capability,
    /// The capability in one sentence.
    pub verdict: String,
    /// The catalog for this CPU, if one fits.
    #[serde(default)]
    pub cpu: Option<CpuMatch>,
    /// Why no catalog fits.
    #[serde(default)]
    pub cpu_problem: Option<String>,
    /// Programmable counters per CPU (from the catalog).
    #[serde(default)]
    pub counters: Option<usize>,
    /// Iterations of the built-in loop.
    pub loop_iterations: u64,
    /// Task clock of the loop, ns (perf software event).
    #[serde(default)]
    pub loop_task_clock_ns: Option<u64>,
    /// The thread's CPU time over the loop, ns (CLOCK_THREAD_CPUTIME_ID).
    #[serde(default)]
    pub loop_thread_cpu_ns: Option<u64>,
    /// task clock / thread CPU time (1.0 = perfect agreement).
    #[serde(default)]
    pub task_clock_agreement: Option<f64>,
    /// Runs of the loop taken: another when the two clocks disagree by more than 5%, up
    /// to 3, the one closest to agreement recorded (absent in records before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_runs: Option<u32>,
    /// Cycles of the loop (hardware PMU only).
    #[serde(default)]
    pub loop_cycles: Option<u64>,
    /// Instructions of the loop (hardware PMU only).
    #[serde(default)]
    pub loop_instructions: Option<u64>,
    /// Instructions per cycle of the loop.
    #[serde(default)]
    pub loop_ipc: Option<f64>,
}

impl RecordKind for PmuCheck {
    const KIND: &'static str = "pmu.check";
}
