//! Performance counters.
//!
//! [`capability`] answers what this machine lets us count before anything is
//! attempted: is there a hardware PMU at all (many VMs have none), which software
//! events work, and what `perf_event_paranoid` permits.

pub mod capability;
