//! numalab's data model.
//!
//! Everything numalab measures, models or imports ends up as data defined here: the
//! machine description ([`machine::Machine`]), the envelope and typed records of a
//! results bundle ([`record`]), and the append-only journal that makes long runs
//! survive being killed ([`journal`]). The crate has no hardware access, so every other
//! crate (and any offline tool) can read and write these files.

#![cfg_attr(not(test), forbid(unsafe_code))]
#![cfg_attr(test, deny(unsafe_code))]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod clock;
pub mod collect;
pub mod cpulist;
pub mod error;
pub mod fold;
pub mod identity;
pub mod input;
pub mod interrupt;
pub mod journal;
pub mod lock;
pub mod machine;
pub mod memattrs;
pub mod memory;
pub mod midr;
pub mod output;
pub mod record;
pub mod sink;
// The tests' system calls, the one module allowed `unsafe`.
#[cfg(test)]
#[allow(unsafe_code)]
mod sys;
pub mod text;
pub mod units;

pub use error::{Classify, ErrorClass};
pub use machine::Machine;
pub use record::{Bundle, Envelope, Origin, Record, RecordKind, Warning};
