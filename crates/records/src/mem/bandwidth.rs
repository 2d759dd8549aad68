//! `mem.bandwidth`: one kernel on a group of threads.

use super::kernel::{Isa, Kernel};
use super::{PagesObtained, Placement, Timer};
use numalab_schema::RecordKind;
use numalab_stats::Summary;
use serde::{Deserialize, Serialize};

/// A node pair of a matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixCell {
    /// Node of the threads.
    pub cpu_node: u32,
    /// Node of the data.
    pub mem_node: u32,
}

/// One bandwidth measurement: a kernel on a group of threads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthRecord {
    /// The kernel ("triad", "write-nt").
    pub kernel: Kernel,
    /// What it computes.
    pub formula: String,
    /// Instruction set used.
    pub isa: Isa,
    /// Threads.
    pub threads: usize,
    /// The node pair, in a matrix.
    pub matrix: Option<MatrixCell>,
    /// Where threads and pages really were.
    pub placement: Placement,
    /// Pages obtained.
    pub pages: PagesObtained,
    /// Bytes of one array, all threads.
    pub array_bytes: u64,
    /// Bytes of all the kernel's arrays, all threads.
    pub working_set_bytes: u64,
    /// Elements per array per thread.
    pub elements_per_thread: u64,
    /// Bytes per sample counted the STREAM way.
    pub stream_bytes_per_sample: u64,
    /// Bytes per sample actually moved, with write-allocate for plain stores.
    pub actual_bytes_per_sample: u64,
    /// Kernel passes per timed sample.
    pub inner_iterations: u64,
    /// Discarded warm-up rounds.
    pub warmup_rounds: usize,
    /// Raw samples: duration of each timed round, ns, from the earliest thread's start
    /// to the latest thread's end (the whole team, as STREAM times its parallel region).
    pub sample_ns: Vec<f64>,
    /// Per round, the duration of the slowest thread alone, ns (start skew excluded:
    /// likwid-bench's convention).
    pub slowest_thread_ns: Vec<f64>,
    /// STREAM-counted bandwidth, GB/s (10^9 bytes/s), over the samples.
    pub bandwidth_gbps: Summary,
    /// STREAM-counted bytes over the slowest thread's time, GB/s (likwid-bench's
    /// convention; higher than `bandwidth_gbps` by the threads' start skew).
    pub slowest_thread_gbps: Summary,
    /// Bandwidth in bytes actually moved, GB/s.
    pub actual_bandwidth_gbps: Summary,
    /// Median over rounds of slowest / fastest thread time (1.0 = balanced).
    pub imbalance: f64,
    /// Timer.
    pub timer: Timer,
    /// Vector width of the ISA that ran, bits (SVE: this CPU's vector length, read at
    /// run time; scalar: 64). Absent in records of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_bits: Option<u32>,
    /// Whether the kernel's results were checked and right ([`Verification`]); a wrong
    /// result fails the cell, so a written record says `true`. Absent in records of
    /// older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    /// The result check made after the timed rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// The memory controllers' own count of one untimed pass of this kernel (`inner`
    /// repetitions on every thread, after the timed rounds), where the machine has
    /// memory-controller PMUs (Intel iMC, AMD UMC/DF, Arm CMN).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncore: Option<crate::uncore::UncoreReport>,
    /// The probe's bytes of that pass against the controllers' (a difference beyond
    /// 10% is a finding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncore_check: Option<crate::uncore::ProbeCheck>,
    /// Why the controllers were not counted (no such PMU here, or it could not be
    /// read), when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncore_note: Option<String>,
    /// Which variant of the kernel ran and why: the ISA given with `--isa`, or the
    /// fastest of this CPU's vector ISAs in an untimed trial on the same threads and
    /// arrays. Absent in records of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<VariantChoice>,
}

/// How the variant of a bandwidth kernel was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantChoice {
    /// `given` (`--isa`) or `trial` (the fastest candidate won).
    pub how: String,
    /// The candidates with the STREAM-counted team bandwidth of their best trial pass,
    /// GB/s (empty when the ISA was given).
    pub trial: Vec<TrialPoint>,
    /// The choice in a sentence.
    pub reason: String,
}

/// One candidate of a variant trial.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrialPoint {
    /// The ISA tried.
    pub isa: Isa,
    /// Vector width on this CPU, bits.
    pub vector_bits: u32,
    /// GB/s of its best pass (STREAM-counted, all threads together).
    pub gbps: f64,
}

/// The result check of a bandwidth cell (`numalab_mem::kernels::verify`): after the timed
/// rounds every thread sets its arrays to known values, runs the measured kernel (same
/// ISA, lengths, alignment) and compares every element with the closed-form values the
/// formula must give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// How, in words.
    pub method: String,
    /// Kernel runs before the comparison.
    pub repetitions: u32,
    /// Elements compared, all arrays and threads.
    pub elements_checked: u64,
    /// Sum of the output arrays found, all threads (`read`: the sums it returned).
    pub checksum: f64,
    /// Its closed-form value.
    pub expected_checksum: f64,
    /// Relative error allowed per element and on the checksum.
    pub tolerance: f64,
}

impl RecordKind for BandwidthRecord {
    const KIND: &'static str = "mem.bandwidth";
}
