//! numalab's machine model: what-if answers for machines the user does not have.
//!
//! A machine is described by a preset (TOML data in `presets/`, every number with its
//! source; [`spec`]), resolved into positions, NUMA nodes and an address map ([`model`])
//! on a mesh with dimension-order routing ([`geometry`]). Two engines read the same
//! description: [`analytic`] (exact per-link loads, zero-load latency, queueing per link
//! and virtual network, bandwidth ceilings; milliseconds) and [`des`] (a seeded,
//! deterministic discrete-event simulation of packets, link and port contention and
//! closed-loop cores; for saturation, hot spots and unbalanced memory), whose routers
//! are ideal output queues by default or, with `noc.router = "input-queued"`, [`router`]'s
//! virtual-channel routers with credits and iSLIP allocators (BookSim2's semantics,
//! synthetic traffic). [`experiments`]
//! runs the studies of experiments.md (B1, B5, C1) and returns typed records ([`records`])
//! in the schema measurements use, flagged as modeled. [`latency`] builds core-to-target
//! and core-to-core latency matrices for any core placement (layout inference reuses
//! it); [`svg`] draws the floorplan; [`machine`] describes the modeled machine in the
//! schema's `Machine` form; [`describe`] lists and shows presets for people.

pub mod analytic;
pub mod calibrate;
pub mod des;
pub mod describe;
pub mod error;
pub mod experiments;
pub mod geometry;
pub mod latency;
pub mod machine;
pub mod model;
pub mod records;
pub mod router;
pub mod spec;
pub mod svg;
pub mod traffic;

pub use error::ModelError;
pub use model::Model;
