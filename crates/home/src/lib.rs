//! Where each cache line lives (`numalab home`, experiments.md C): which home agent (CHA,
//! HN-F/SLC slice) and which memory interface serve each line of a buffer, measured from
//! cores across the floorplan; the address hash behind it, recovered over GF(2); memory
//! handed to a thread from lines homed near its core; and the study's affinity
//! experiments.
//!
//! `unsafe` lives in four modules: `sys` (system calls on our own mappings),
//! `live::timing` (the flush, fence and timed accesses), [`ffi`] (the C ABI and its
//! pool of raw lines) and `alloc::raw` ([`alloc::LineValue`], the element types a pool
//! holds, and their checked reads and writes in pool bytes).

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod alloc;
pub mod bench;
pub mod bench_live;
pub mod cluster;
pub mod conflicts;
pub mod error;
pub mod ffi;
pub mod groundtruth;
pub mod hash;
pub mod import;
pub mod keys;
pub mod live;
pub mod locate;
pub mod map;
pub mod probe;
pub mod settings;
pub mod slicefit;
mod sys;
pub mod tables;
pub mod truth;
pub mod watch;

pub use error::HomeError;
