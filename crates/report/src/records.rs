//! The records `numalab evaluate` and `numalab doctor` write about the machine itself;
//! they live in `numalab_records::{evaluate, doctor}` and are re-exported here for the
//! report's sections and findings.

pub use numalab_records::doctor::*;
pub use numalab_records::evaluate::*;
