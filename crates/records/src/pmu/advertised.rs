//! How the Arm core PMU stands on each event (sysfs), as profiles record it: the
//! rule itself is documented in `numalab_pmu::advertised`, which reads sysfs.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The common events every PMUv3 implementation must list (Arm Architecture Reference
/// Manual, PMU chapter, "required events"): L1D_CACHE_REFILL 0x03, L1D_CACHE 0x04,
/// BR_MIS_PRED 0x10, CPU_CYCLES 0x11, BR_PRED 0x12; plus INST_RETIRED 0x08 or
/// INST_SPEC 0x1B (at least one, see [`CorePmu::common_set_complete`]).
pub const REQUIRED_COMMON: &[u64] = &[0x03, 0x04, 0x10, 0x11, 0x12];

/// Whether `code` is a common architectural event (listed in sysfs when implemented).
pub fn is_common(code: u64) -> bool {
    code < 0x40 || (0x4000..0x4040).contains(&code)
}

/// How a catalog event stands against what the core PMU advertises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Advertised {
    /// Listed in the PMU's `events/` folder: opened.
    Listed,
    /// An IMPLEMENTATION DEFINED event (never listed) on a PMU that advertises the full
    /// required common set: opened and counted on trust.
    OnTrust,
    /// Not listed, and not to be trusted: not opened, reported as not supported.
    NotListed,
}

/// One Arm core PMU as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorePmu {
    /// Its name (`armv8_pmuv3_0`).
    pub name: String,
    /// The dynamic perf_event_attr.type from its `type` file.
    pub pmu_type: Option<u32>,
    /// The CPUs it serves (its `cpus` file, e.g. "0-3").
    pub cpus: Option<String>,
    /// Advertised events: sysfs name -> event number.
    pub events: BTreeMap<String, u64>,
    /// Its `caps/` files (e.g. `slots`), name -> content.
    #[serde(default)]
    pub caps: BTreeMap<String, String>,
}

impl CorePmu {
    /// Whether an event number is listed.
    pub fn lists(&self, code: u64) -> bool {
        self.events.values().any(|c| *c == code)
    }

    /// Whether the PMU advertises every required common event (real silicon does;
    /// emulators usually do not).
    pub fn common_set_complete(&self) -> bool {
        REQUIRED_COMMON.iter().all(|c| self.lists(*c)) && (self.lists(0x08) || self.lists(0x1B))
    }

    /// How event number `code` stands (the rule in the documentation of
    /// `numalab_pmu::advertised`).
    pub fn advertises(&self, code: u64) -> Advertised {
        if self.lists(code) {
            Advertised::Listed
        } else if !is_common(code) && self.common_set_complete() {
            Advertised::OnTrust
        } else {
            Advertised::NotListed
        }
    }

    /// Why an event is not opened (for [`Advertised::NotListed`]); the same words for
    /// every event of a kind, so reports can list them on one line.
    pub fn why_not(&self, code: u64) -> String {
        if is_common(code) {
            format!(
                "not advertised by {} (its common-event bitmap says the PMU does not implement it)",
                self.name
            )
        } else {
            format!(
                "not advertised by {}, which lists only {} events, not the architecture's required set (an emulated or minimal PMU): its IMPLEMENTATION DEFINED events would read 0",
                self.name,
                self.events.len()
            )
        }
    }
}
