//! The records the model commands write (`model.*`); they live in
//! `numalab_records::model`.

pub use numalab_records::model::*;
