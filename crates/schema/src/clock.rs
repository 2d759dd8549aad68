//! What the check of the clock found (`numalab_clock::check` makes it); it travels with
//! every record whose figures depend on timing.

use serde::{Deserialize, Serialize};

/// What the clock check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockCheck {
    /// Clock used.
    pub clock: String,
    /// Resolution the kernel reports (clock_getres), ns.
    pub reported_resolution_ns: f64,
    /// Smallest non-zero difference seen between consecutive reads, ns.
    pub observed_step_ns: f64,
    /// Median cost of one read (back-to-back reads), ns: subtracted from short timings.
    pub read_overhead_ns: f64,
    /// Reads where the clock went backwards (must be 0).
    pub backwards: u64,
    /// Reads taken.
    pub reads: u64,
}

impl ClockCheck {
    /// Problems that make timings untrustworthy, in sentences.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.backwards > 0 {
            out.push(format!(
                "the monotonic clock went backwards {} times in {} reads: timings on this machine are unreliable",
                self.backwards, self.reads
            ));
        }
        if self.observed_step_ns > 100.0 {
            out.push(format!(
                "the clock only advances in steps of {:.0} ns: short intervals are timed in batches long enough to hide it",
                self.observed_step_ns
            ));
        }
        if self.read_overhead_ns > 1000.0 {
            out.push(format!(
                "reading the clock costs {:.0} ns (no vDSO?): short timings are dominated by the timer",
                self.read_overhead_ns
            ));
        }
        out
    }

    /// The shortest interval worth timing with this clock so that resolution and
    /// overhead stay under 1% of it.
    pub fn min_interval_ns(&self) -> f64 {
        100.0 * self.observed_step_ns.max(self.read_overhead_ns).max(1.0)
    }
}
