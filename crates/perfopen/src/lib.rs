//! perf_event attributes and groups, in one place, for every crate that counts or
//! samples (`pmu`, `uncore`, `memaccess`, `home`).
//!
//! [`attrs`] turns an event's encoding (PMU type and config words) on a target (a task
//! and its future threads and children, one thread, every process on one CPU, the
//! calling thread) into a `perf_event::Builder` with the privilege levels it excludes;
//! [`group`] opens a group (leader and members, each member's open status, the group
//! read format with enabled and running times), starts and stops it, and reads it into
//! values with their times; [`failure`] classifies why a counter did not open (its
//! errno), once, for each crate to map onto its own records. Sampling options
//! (periods, sample types, skid) stay with the crates that sample: they set them on
//! the builder [`attrs::builder`] returns.
//!
//! Everything goes through the `perf-event2` crate: there is no `unsafe` here.

#![deny(unsafe_code)]

pub mod attrs;
pub mod failure;
pub mod group;

pub use attrs::{builder, set_start, Encoding, Exclude, Start, Target};
pub use failure::Failure;
pub use group::{
    prepare_member, Group, GroupValues, MemberStatus, GROUP_READ_FORMAT, NO_EVENT_OPENED,
};

#[cfg(test)]
mod tests;
