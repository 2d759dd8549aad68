//! Core-to-core latency (draft).
pub mod matrix;
pub mod structure;
