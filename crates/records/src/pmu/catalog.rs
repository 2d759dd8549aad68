//! What the event catalogs contribute to records: which catalog a CPU was matched to
//! and where a metric is defined (the catalogs themselves, and their loaders, are
//! `numalab_pmu::catalog`).

use serde::{Deserialize, Serialize};

/// How the CPU was matched to a catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuMatch {
    /// Catalog id.
    pub catalog: String,
    /// CPU name.
    pub cpu: String,
    /// How it was decided ("MIDR 0x413fd0c1", "--cpu-model n1", "vendor GenuineIntel").
    pub how: String,
}

/// Where a metric comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricOrigin {
    /// numalab's methodology (data/metrics/*.toml).
    Methodology,
    /// The vendor's file (Arm telemetry).
    Vendor,
    /// Software events (data/linux/software.toml).
    Software,
}
