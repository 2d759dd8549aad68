//! Where each cache line lives (`numalab home`, experiments.md C): which home agent (CHA,
//! HN-F/SLC slice) and which memory interface serve each line of a buffer, measured from
//! cores across the floorplan; the address hash behind it, recovered over GF(2); memory
//! handed to a thread from lines homed near its core; and the study's affinity
//! experiments.

pub mod error;
pub mod probe;

pub use error::HomeError;
