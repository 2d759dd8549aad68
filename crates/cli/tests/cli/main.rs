//! The `numalab` binary tested as users run it, one module per area. One test binary
//! (not one per file) so that it links once; the helpers every module needs are in
//! `common`.

mod common;

mod browser;
mod c2c;
mod campaign;
mod cli;
mod db;
mod doctor;
mod evaluate;
mod flags;
mod harness;
mod home;
mod interrupt;
mod layout;
mod mem;
mod model;
mod power;
mod profile;
mod recorder;
mod report;
mod robust;
mod topo;
mod workload;
mod wrong_results;
