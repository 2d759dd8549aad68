//! Integration tests of the reference workload (one binary, shared helpers). The stop
//! flag and the counting allocator are process-wide, so their tests live in their own
//! binaries (`interrupt.rs`, `alloc.rs`).

mod fold;
mod generation;
mod itinerary;
mod placement;
mod routes;
mod run;

use numalab_workload::graph::{generate, GraphSpec, OwnedGraph};
use std::path::PathBuf;

/// A generated graph.
pub fn graph(seed: u64, nodes: u32) -> OwnedGraph {
    generate(&GraphSpec { seed, nodes }).expect("generate")
}

/// The topology fixtures folder.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/topology")
        .join(name)
}

/// A machine description from a fixture.
pub fn fixture_machine(name: &str) -> numalab_schema::Machine {
    numalab_topo::machine(&numalab_topo::Input::detect(&fixture(name)).expect("detect"))
        .expect("load fixture")
}
