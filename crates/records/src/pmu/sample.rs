//! Hot spots, as a sampling run (`pmu.samples`, made by `numalab_pmu::sample`) records
//! them: samples attributed to functions and to source lines.

use serde::{Deserialize, Serialize};

/// Samples attributed to one function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionHits {
    /// Demangled function name (the outermost function for inlined code).
    pub function: String,
    /// The file it lives in (executable or library), or "[kernel]", "[unknown]".
    pub object: String,
    /// Samples whose instruction pointer is in it.
    pub self_samples: u64,
    /// Share of all samples, percent.
    pub self_pct: f64,
    /// Samples with it anywhere on the call chain.
    pub total_samples: u64,
    /// Share of all samples, percent.
    pub total_pct: f64,
    /// Its most sampled source line ("src/main.rs:42").
    #[serde(default)]
    pub hottest_line: Option<String>,
}

/// Samples attributed to one source line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineHits {
    /// Source file.
    pub file: String,
    /// Line.
    pub line: u32,
    /// Function.
    pub function: String,
    /// Samples.
    pub samples: u64,
    /// Share of all samples, percent.
    pub pct: f64,
}
