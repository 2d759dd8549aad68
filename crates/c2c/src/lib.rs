//! Core-to-core latency: where each core is relative to the others.
//!
//! Caches shared, clusters, dies, sockets and the mesh all show in how long a cache line
//! takes to travel between two cores. `numalab-pingpong` measures it; this crate plans which
//! pairs to measure on big machines ([`matrix`]), reads and writes the CSV format of the
//! `core-to-core-latency` tool ([`csv`]), infers the machine's latency structure from a
//! matrix alone ([`structure`]), compares that structure with hwloc's ([`compare`]) and
//! draws heatmaps ([`heatmap`]). The `numalab c2c` command wires these together.

pub mod compare;
pub mod csv;
pub mod heatmap;
pub mod matrix;
pub mod record;
pub mod structure;

pub use matrix::{LatencyMatrix, Pair, Plan};
pub use structure::{infer, try_infer, Structure};
