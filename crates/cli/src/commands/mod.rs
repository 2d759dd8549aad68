//! One module per command (its flags, plan, calls and rendering); [`crate::cli::run`]
//! dispatches.

pub mod c2c;
pub mod db;
pub mod doctor;
pub mod evaluate;
pub mod fleet;
pub mod generate;
pub mod harness;
pub mod home;
pub mod home_hash;
pub mod kernel;
pub mod layout;
pub mod mem;
pub mod model;
pub mod profile;
pub mod report;
pub mod schedule;
pub mod topo;
pub mod workload;
