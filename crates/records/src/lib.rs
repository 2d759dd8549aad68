//! The record types of numalab: what each probe, model and command writes into a
//! results bundle, and the summaries derived from them.
//!
//! They live here, apart from the code that measures, so that everything that only
//! reads results (the report, comparisons, findings, the history) builds and runs on a
//! machine without hwloc or perf_event, and so that a record has one definition. The
//! probe crates re-export their records from here under their old paths
//! (`numalab_mem::latency::LatencyRecord` is [`mem::LatencyRecord`]). This crate
//! depends only on `numalab-schema` (the envelope, the journal, the machine
//! description and the vocabulary: memory policies, the clock check) and
//! `numalab-stats` (summaries).
//!
//! One module per record family: [`c2c`], [`harness`], [`mem`], [`model`], [`pmu`],
//! [`sensors`], [`workload`], [`warnings`] (the warnings a run folded), [`evaluate`]
//! (the machine, the steps and runs of an evaluation, power) and [`doctor`]; and [`process`], how a user's command ended,
//! which several carry, and [`mesh`], the mesh geometry the model computes with and an
//! inference record holds.

pub mod bmc;
pub mod c2c;
pub mod doctor;
pub mod evaluate;
pub mod harness;
pub mod home;
pub mod layout;
pub mod mem;
pub mod memaccess;
pub mod memconfig;
pub mod mesh;
pub mod model;
pub mod pmu;
pub mod process;
pub mod schedule;
pub mod sensors;
pub mod uncore;
pub mod warnings;
pub mod workload;
