//! The live backend of [`HomeProbe`]: a locked buffer of real memory, preferably on huge
//! pages, whose lines are read from chosen CPUs so that every read has to go through the
//! line's home agent.
//!
//! - [`Access::Flushed`]: the reader flushes the line (`clflush` + `mfence` on x86-64,
//!   `dc civac` + `dsb ish` on aarch64, which Linux allows at EL0) and loads it again. A
//!   batch of K flush+fence+load iterations on the same line is timed and divided by K,
//!   each iteration's flush address depending on the previous load's value, so the
//!   iterations cannot overlap. A reported latency is therefore one flush, one fence and
//!   one load from memory: compare lines with each other, not with other tools' figures.
//! - [`Access::Forwarded`]: an owner thread pinned to the owner CPU writes the line (it
//!   then holds it modified) and signals through an atomic on a separate cache line; the
//!   reader, pinned to the reader CPU, times one load of the line. A single timed load
//!   includes the cost of reading the clock twice and two fences (about 20-40 ns on
//!   x86-64, reported as [`LiveProbe::timer_overhead_ns`]); it is an offset common to
//!   every line and is not subtracted. On machines whose clock ticks coarsely (many Arm
//!   systems count at 25-100 MHz, see [`LiveProbe::timer_resolution_ns`]) single reads
//!   are quantised to that tick.
//!
//! An owner CPU given with a flushed read is checked but plays no part.
//!
//! Measurements run on scoped threads pinned with hwloc, so the caller's own affinity is
//! never changed. Repeats are interleaved over the lines (repeat r of every line, then
//! repeat r+1), so a burst of interference spreads over many lines instead of
//! corrupting one; the interquartile mean of each line's repeats is returned
//! ([`crate::probe::center_and_sigma`]: robust to the slow tail like a median, but not
//! stuck on the clock's ticks), and each line's scaled median absolute deviation feeds
//! the pooled noise estimate.
//!
//! Physical addresses come from `/proc/self/pagemap`, which shows real frame numbers
//! only to processes with CAP_SYS_ADMIN. The parsers of `/proc/cpuinfo`, node `meminfo`
//! and pagemap entries are pure functions of the text, tested with other machines' text.

mod affinity;
mod backend;
mod hugepages;
mod identity;
mod measure;
mod pagemap;
mod timing;

pub use affinity::allowed_cpus;
pub use backend::{check_buffer_size, LiveOptions, LiveProbe};
pub use hugepages::{Backing, HugeChoice, HUGE_PAGE_BYTES};
pub use identity::{
    live_fingerprint, node_mem_total_bytes, parse_cpuinfo, CpuIdent, NodeText, SystemText,
};
pub use pagemap::{pagemap_pfn, PHYS_NEED_ROOT};
pub(crate) use timing::{fence_end, fence_start, LiveBuffer, LiveLine};

use crate::error::HomeError;
use numalab_schema::{Classify, ErrorClass};
use numalab_topo::TopoError;

/// A topology error as this crate's error, of the same class.
fn topo_err(e: TopoError) -> HomeError {
    match e.class() {
        ErrorClass::Usage => HomeError::Usage(e.to_string()),
        ErrorClass::Unsupported => HomeError::Unsupported(e.to_string()),
        _ => HomeError::Runtime(e.to_string()),
    }
}

#[cfg(test)]
mod tests;
