//! The workload harness: runs the user's own program under thread counts, placements,
//! memory policies and parameter sweeps, and says what the numbers mean.
//!
//! The question users ask is about their program, not about the machine: how does it
//! scale here, where is the cliff and why, which `numactl` policy, which value of this
//! knob. Every run goes through `numalab-proc` (no shell unless asked, timeouts, the
//! whole process group cleaned up), gets its CPUs and memory policy from a [`plan`],
//! is measured by a [`metric`] (wall time, or a number the program prints), and is
//! sampled while it runs (power, temperature, frequency, per-node pages: [`sample`]).
//! Each run becomes a `harness.run` record as soon as it ends, so a killed study
//! resumes run by run; studies ([`scale`], [`policy`], [`sweep`]) then summarise with
//! medians and bootstrap intervals, find knees and name the best choice.
//!
//! The study summaries, their plans and statistics, what a run samples and the
//! `harness.run` record itself ([`RunRecord`]) are defined in `numalab-records`
//! (`records::harness`) and re-exported here under their old paths; plans are made
//! here ([`policy::new_plan`], [`sweep::new_plan`], [`ScalePlan::new`]). Their tables
//! and charts are the report's (`numalab_report::sections::harness`).

#![cfg_attr(not(test), forbid(unsafe_code))]
#![cfg_attr(test, deny(unsafe_code))]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod metric;
pub mod numa_maps;
pub mod options;
pub mod outcome;
pub mod plan;
pub mod policy;
pub mod run;
pub mod sample;
pub mod scale;
pub mod sweep;
// The tests' system calls, the one module allowed `unsafe`.
#[cfg(test)]
#[allow(unsafe_code)]
mod sys;

pub use metric::Metric;
pub use options::StudyOptions;
pub use plan::Placement;
pub use policy::{policy, PolicyKind, PolicyPlan, PolicySummary};
pub use run::{HarnessError, MemorySink, Progress, RunRecord, Sink, Study};
pub use scale::{scale, ScalePlan, ScaleSummary};
pub use sweep::{sweep, sweep_with, Param, SweepPlan, SweepSummary};
