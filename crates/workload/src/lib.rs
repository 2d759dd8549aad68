//! numalab's built-in reference request workload.
//!
//! The server evaluation numalab exists for (a travel-planning engine moved from Xeon to
//! a 160-core Arm server) measured a CPU-bound, multi-threaded optimizer answering
//! requests over a large shared road graph. Most users who want to compare two servers
//! have no harness around their own engine on day one, so numalab ships a workload with
//! the same character:
//!
//! - [`graph`]: a synthetic road network (millions of nodes, CSR arrays), generated
//!   deterministically from a seed and a size;
//! - [`route`]: shortest-path queries (bidirectional Dijkstra, per-thread reusable
//!   state, no allocation per request);
//! - [`itinerary`]: itinerary planning, a small two-objective evolutionary search whose
//!   fitness looks up travel times on the same graph;
//! - [`request`]: the request streams and the per-thread worker;
//! - [`placement`]: client pinning (compact/scatter) and the three data placement modes
//!   (shared-first-touch, shared-interleaved, replicated), verified page by page;
//! - [`run`]: closed-loop clients for a fixed time, and the `workload.run` record
//!   (requests/s total and per thread, response-time percentiles with intervals, CPU
//!   utilisation, pages per node, power where readable);
//! - [`reference`]: slow, obviously right implementations the tests compare against.
//!
//! Entry points: [`run::run`] (generate and run) and [`run::run_on`] (run several
//! configurations on one generated graph).
//!
//! The record ([`WorkloadRun`] and what it holds, [`Mode`], [`CpuOrder`],
//! [`itinerary::EaParams`]) is defined in `numalab-records` (`records::workload`) and
//! re-exported here under its old paths.

#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod graph;
pub mod itinerary;
pub mod placement;
pub mod plan;
pub mod reference;
pub mod request;
pub mod route;
pub mod run;
// The system calls, the one module allowed `unsafe`.
#[allow(unsafe_code)]
mod sys;

pub use placement::{CpuOrder, Mode};
pub use run::{run, run_on, Outcome, RunConfig, WorkloadRun};

use numalab_schema::{Classify, ErrorClass};
use numalab_topo::TopoError;

/// Errors of the workload; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A bad parameter.
    #[error("{0}")]
    Usage(String),
    /// The graph (or its replicas) does not fit in memory.
    #[error("{0}")]
    Memory(String),
    /// Pinning, memory binding or a page query failed.
    #[error(transparent)]
    Topo(#[from] TopoError),
    /// Something else failed while running.
    #[error("{0}")]
    Runtime(String),
    /// Stopped (Ctrl-C) before anything was measured.
    #[error("{0}")]
    Interrupted(String),
}

impl Classify for WorkloadError {
    fn class(&self) -> ErrorClass {
        match self {
            WorkloadError::Usage(_) => ErrorClass::Usage,
            WorkloadError::Memory(_) => ErrorClass::Unsupported,
            WorkloadError::Topo(e) => e.class(),
            WorkloadError::Runtime(_) => ErrorClass::Runtime,
            WorkloadError::Interrupted(_) => ErrorClass::Interrupted,
        }
    }
}
