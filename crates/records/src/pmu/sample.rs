//! Hot spots, as a sampling run (`pmu.samples`, made by `numalab_pmu::sample`) records
//! them: samples attributed to functions and to source lines.

use crate::process::Outcome;
use numalab_schema::RecordKind;
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

/// A sampling run (`pmu.samples`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleReport {
    /// The event sampled.
    pub event: String,
    /// Sampling frequency asked for, Hz (when sampling by frequency).
    #[serde(default)]
    pub frequency_hz: Option<u64>,
    /// Sampling period (events per sample), when sampling by period.
    #[serde(default)]
    pub period: Option<u64>,
    /// Samples taken.
    pub samples: u64,
    /// Samples the kernel lost (ring buffer full).
    pub lost: u64,
    /// Samples attributed to a named function.
    pub attributed: u64,
    /// Median call-chain depth (frames), when chains were recorded.
    #[serde(default)]
    pub callchain_depth_median: Option<f64>,
    /// Functions, most samples first (at most 200).
    pub functions: Vec<FunctionHits>,
    /// Distinct functions seen (more than `functions` holds when truncated).
    #[serde(default)]
    pub functions_seen: usize,
    /// Source lines, most samples first (at most 50).
    pub lines: Vec<LineHits>,
    /// What skid means for this event.
    pub skid: String,
    /// The command.
    pub command: Vec<String>,
    /// How it ended.
    pub outcome: Outcome,
}

impl RecordKind for SampleReport {
    const KIND: &'static str = "pmu.samples";
}
