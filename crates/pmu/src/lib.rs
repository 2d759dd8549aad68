//! Performance counters, turned into an explanation.
//!
//! [`capability`] answers what this machine lets us count before anything is
//! attempted: is there a hardware PMU at all (many VMs have none), which software
//! events work, and what `perf_event_paranoid` permits. [`catalog`] holds the event
//! catalogs (Arm's own files for the Neoverse cores, the kernel's generic events on
//! x86-64) and the methodology's metrics as data; [`expr`] evaluates every formula;
//! [`count`] counts a child process with perf_event_open (default and `--exact` modes);
//! [`metrics`] derives the metrics ([`mux`]: with the uncertainty multiplexing leaves
//! them), [`tree`] walks the decision tree to a verdict,
//! [`consistency`] checks the vendor's invariants over them (level 1 sums to 100% ...);
//! [`import`] reads `perf stat` output from other machines, [`compare`] compares two
//! profiles, [`sample`] finds hot spots; [`profile`] ties it together for
//! `numalab profile` and for other commands (`sweep --profile`, `evaluate`).

#![deny(unsafe_code)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod advertised;
pub mod capability;
pub mod catalog;
pub mod check;
pub mod compare;
pub mod consistency;
pub mod count;
pub mod expr;
pub mod import;
pub mod metrics;
pub mod mux;
pub mod profile;
pub mod sample;
// The system calls, the one module allowed `unsafe`.
#[allow(unsafe_code)]
mod sys;
pub mod tree;
pub mod trust;
