//! Charts drawn from records: what to show of a record family, with `numalab_chart`
//! doing the drawing. One module per family that has charts of its own.

pub mod harness;
