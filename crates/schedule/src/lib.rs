//! Scheduling a mix of tasks on the cores (experiments.md C4, C5): `numalab schedule`.
//!
//! A mix file ([`mix`]) lists tasks with their data sizes and allowed thread counts.
//! Past runs recorded by `numalab scale` give each task a run-time model ([`history`]).
//! Three schedules are built ([`plan`]): fair, load and optimized. They are run for real,
//! all tasks at once with binding, repeated as a campaign with outliers discarded and
//! medians reported, or evaluated on the machine model ([`run`]). Records in [`record`].

pub mod campaign;
pub mod history;
pub mod mix;
pub mod plan;
pub mod record;
pub mod run;
pub mod study;
