//! Memory probes: bandwidth, latency, loaded latency and page migration, per NUMA node
//! pair, on threads pinned through hwloc and memory whose placement is checked.
//!
//! This is what Intel MLC, Arm's system characterization tool, STREAM and
//! likwid-bench measure, done openly on both architectures and with distributions
//! instead of single numbers. Each probe is split the same way:
//!
//! - a **plan** built and checked against a [`numalab_schema::Machine`] before anything
//!   runs (unknown CPUs or nodes, too many threads, sizes beyond the free memory of the
//!   target node are errors here), made of **cells** with stable record keys, so a
//!   killed run resumes cell by cell and plans for a 160-core, 8-node machine can be
//!   tested on a laptop with [`numalab_topo::bind::FakePlacer`];
//! - an executor taking the plan and a [`Placer`] and delivering typed records to a
//!   [`Sink`] as each cell completes.
//!
//! Modules: [`kernels`] (the SIMD kernels and their byte accounting), [`pool`] (pinned
//! workers, bound and first-touched memory, placement checks), [`budget`] (how much
//! memory a node can safely give), [`chase`] (random cyclic pointer chains and
//! their timed walk), [`bandwidth`], [`latency`], [`loaded`], [`migrate`]; [`request`]
//! (the probes' options as given, read into plans) and [`probe`] (a plan of any probe,
//! as `numalab mem` and `numalab evaluate` run it).

#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod bandwidth;
pub mod budget;
// `unsafe` lives in the timed kernels only: the SIMD bandwidth kernels (`kernels`) and
// the pointer chase (`chase`), plus, for the tests, `sys`; every block says why it is
// sound.
#[allow(unsafe_code)]
pub mod chase;
pub mod checks;
#[allow(unsafe_code)]
pub mod kernels;
pub mod latency;
pub mod loaded;
pub mod memconfig;
pub mod migrate;
pub mod pool;
pub mod probe;
pub mod request;
#[cfg(test)]
#[allow(unsafe_code)]
mod sys;

use numalab_schema::{Classify, ErrorClass};
use numalab_topo::TopoError;

pub use numalab_topo::bind::Placer;

/// A memory-probe error: what failed, on which input, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    /// The request is wrong (unknown kernel, too many threads, size too large...).
    #[error("{0}")]
    Usage(String),
    /// This machine cannot do it (no huge pages reserved, no such ISA...).
    #[error("{0}")]
    Unsupported(String),
    /// Pinning, binding or a page query failed.
    #[error(transparent)]
    Topo(#[from] TopoError),
    /// A kernel could not run.
    #[error(transparent)]
    Kernel(#[from] kernels::KernelError),
    /// Something failed while measuring.
    #[error("{0}")]
    Runtime(String),
    /// Writing a record failed (the sink's error, as text).
    #[error("{0}")]
    Output(String),
    /// Stopped by Ctrl-C.
    #[error("interrupted; everything measured so far was kept")]
    Interrupted,
}

impl Classify for MemError {
    fn class(&self) -> ErrorClass {
        match self {
            MemError::Usage(_) => ErrorClass::Usage,
            MemError::Unsupported(_) => ErrorClass::Unsupported,
            MemError::Topo(e) => e.class(),
            MemError::Kernel(kernels::KernelError::Lengths(_)) => ErrorClass::Runtime,
            MemError::Kernel(_) => ErrorClass::Unsupported,
            MemError::Runtime(_) | MemError::Output(_) => ErrorClass::Runtime,
            MemError::Interrupted => ErrorClass::Interrupted,
        }
    }
}

/// Where records go as cells complete (the CLI's journal, `evaluate`, a test's vector):
/// the one protocol of every probe.
pub use numalab_schema::sink::{MemorySink, Sink, SinkError};

impl From<SinkError> for MemError {
    fn from(e: SinkError) -> Self {
        MemError::Output(e.0)
    }
}

/// What a plan's execution produced: records written, cells skipped (already in the
/// journal), cells failed with their key, interrupted (the shared executor outcome).
pub type Outcome = numalab_schema::sink::Outcome<MemError>;

/// The shared executor loop's parts (skip, deliver, fail, progress, interrupt).
pub type Cells<'s> = numalab_schema::sink::Cells<'s, MemError>;

pub use numalab_records::mem::{PageRequest, PagesObtained, Placement, Timer};

/// Checks the clock and turns its problems into warnings.
pub fn check_clock() -> (numalab_clock::ClockCheck, Vec<numalab_schema::Warning>) {
    let c = numalab_clock::check(200_000);
    let w = c
        .problems()
        .into_iter()
        .map(|p| numalab_schema::Warning::new("clock", p))
        .collect();
    (c, w)
}

pub use numalab_records::mem::Frequency;

/// The frequency of `pu` from the machine description, if any.
pub fn frequency_of(machine: &numalab_schema::Machine, pu: u32) -> Option<Frequency> {
    let d = machine.frequencies.iter().find(|d| d.cpus.contains(&pu))?;
    let (khz, what) = if let Some(k) = d.max_khz {
        (k, "max")
    } else if let Some(k) = d.base_khz {
        (k, "base")
    } else {
        (d.current_khz?, "current")
    };
    (khz > 0).then(|| Frequency {
        khz,
        source: format!("{} {what}", d.origin),
    })
}

/// Rounds `bytes` up to a multiple of `to` (saturating: a size no machine has stays
/// one, for the memory budget to refuse).
pub(crate) fn round_up(bytes: u64, to: u64) -> u64 {
    bytes.div_ceil(to).saturating_mul(to)
}

/// The last-level cache total of the machine, or a stand-in when hwloc does not know
/// it (32 MiB; said in the plan's notes by the callers).
pub fn llc_bytes(machine: &numalab_schema::Machine) -> (u64, Option<String>) {
    match machine.last_level_cache_total() {
        Some(b) if b > 0 => (b, None),
        _ => (
            32 << 20,
            Some("the last-level cache size is unknown; sizes assume 32 MiB".into()),
        ),
    }
}

/// The last-level cache one CPU sees (the largest data or unified cache instance that
/// serves it): what a single chasing thread can hold. Falls back to [`llc_bytes`].
pub fn llc_of_cpu(machine: &numalab_schema::Machine, pu: u32) -> (u64, Option<String>) {
    use numalab_schema::machine::CacheKind;
    machine
        .caches
        .iter()
        .filter(|c| c.cpus.contains(&pu) && matches!(c.kind, CacheKind::Data | CacheKind::Unified))
        .max_by_key(|c| (c.level, c.size_bytes))
        .and_then(|c| c.size_bytes)
        .filter(|&b| b > 0)
        .map_or_else(|| llc_bytes(machine), |b| (b, None))
}
