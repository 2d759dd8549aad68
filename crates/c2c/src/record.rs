//! The records `numalab c2c` writes (and `evaluate`, `report` and `compare` read):
//! one `c2c.pair` per measured pair, one `c2c.matrix` with the structure. They live in
//! `numalab_records::c2c`.

pub use numalab_records::c2c::{GroupJson, LevelJson, MatrixRecord, PairRecord};
