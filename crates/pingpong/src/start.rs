//! What a live `numalab c2c` run starts from, gathered at once: the topology and its
//! placer, the selected CPUs planned, the clock check and the host facts.

use crate::probe::{plan, MatrixPlan, Options, PlanUsage, CLOCK_READS};
use numalab_schema::clock::ClockCheck;
use numalab_schema::{Classify, ErrorClass, Machine};
use numalab_topo::bind::HwlocPlacer;
use numalab_topo::system::HostFacts;
use numalab_topo::TopoError;

/// A planned live run, not started yet.
pub struct Start {
    /// This machine.
    pub machine: Machine,
    /// Pins the pair's threads and places the line.
    pub placer: HwlocPlacer,
    /// The plan of the selected CPUs.
    pub plan: MatrixPlan,
    /// The clock checked.
    pub clock: ClockCheck,
    /// The host facts of the envelope.
    pub facts: HostFacts,
}

/// Why a live run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The topology could not be read, or the CPU list does not read or fit.
    #[error("{0}")]
    Topo(#[from] TopoError),
    /// The selected CPUs cannot be planned (`--cpus` named with why).
    #[error("--cpus {cpus:?}: {reason}")]
    Cpus {
        /// `--cpus` as given.
        cpus: String,
        /// Why.
        reason: PlanUsage,
    },
    /// The helper thread died (a bug).
    #[error(
        "the thread checking the clock and reading the host facts panicked; report this as a bug"
    )]
    Panicked,
}

impl Classify for StartError {
    fn class(&self) -> ErrorClass {
        match self {
            StartError::Topo(e) => e.class(),
            StartError::Cpus { .. } => ErrorClass::Usage,
            StartError::Panicked => ErrorClass::Runtime,
        }
    }
}

/// Reads the live topology, selects `cpus` ("0-3,8", "node:N", "all", ...) and plans
/// their matrix with `options`. The clock check and the host facts (some 20 reads of
/// /proc and /sys, 0.3 ms) run beside hwloc's discovery (sysfs reads): they are
/// independent.
pub fn start(cpus: &str, options: &Options) -> Result<Start, StartError> {
    let beside = std::thread::spawn(|| {
        (
            numalab_clock::check(CLOCK_READS),
            numalab_topo::system::host_facts(),
        )
    });
    let (machine, placer) = numalab_topo::live_with_placer()?;
    let selected = numalab_topo::select::CpuSelection::parse(cpus)?.resolve(&machine)?;
    let plan = plan(&machine, &selected, options).map_err(|reason| StartError::Cpus {
        cpus: cpus.into(),
        reason,
    })?;
    let (clock, facts) = beside.join().map_err(|_| StartError::Panicked)?;
    Ok(Start {
        machine,
        placer,
        plan,
        clock,
        facts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_refused_names_the_cpus_option_as_given() {
        let e = StartError::Cpus {
            cpus: "0".into(),
            reason: PlanUsage("1 CPU selected: core-to-core latency needs at least 2".into()),
        };
        assert_eq!(e.class(), ErrorClass::Usage);
        assert_eq!(
            e.to_string(),
            "--cpus \"0\": 1 CPU selected: core-to-core latency needs at least 2"
        );
        assert_eq!(StartError::Panicked.class(), ErrorClass::Runtime);
    }
}
