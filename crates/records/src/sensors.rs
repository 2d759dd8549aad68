//! What a power, energy or temperature sensor is (`numalab-sensors` finds and reads
//! them; `evaluate` records the ones it found, the harness and the workload name them
//! in their power figures).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What a sensor measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SensorKind {
    /// A cumulative energy counter (powercap), in microjoules; power is its rate.
    Energy,
    /// Instantaneous power (hwmon), in microwatts.
    Power,
    /// Temperature (hwmon), in millidegrees Celsius.
    Temperature,
}

/// One readable sensor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sensor {
    /// Stable id, e.g. `powercap:intel-rapl:0` or `hwmon:hwmon2:power1`.
    pub id: String,
    /// What it measures.
    pub kind: SensorKind,
    /// The kernel's name or label ("package-0", "CPU power", "SoC Temperature").
    pub label: String,
    /// What the figure covers, in words ("CPU package 0 (RAPL): cores, caches, uncore").
    pub covers: String,
    /// The file holding the value.
    pub path: PathBuf,
    /// For energy counters: the value at which the counter wraps (microjoules).
    pub max_energy_uj: Option<u64>,
}
