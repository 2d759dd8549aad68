//! Process control for every command numalab runs on a user's behalf.
//!
//! `scale`, `policy`, `sweep`, `profile` and `schedule` all run a user's program, and
//! they all need the same guarantees: argv without a shell (unless asked), a timeout,
//! the whole process group cleaned up on timeout, Ctrl-C or exit (no orphans left),
//! exit status and signals recorded, the tail of stdout/stderr kept, CPU time and peak
//! memory from `wait4`, CPU affinity and a NUMA memory policy applied in the child
//! before `exec`, and optionally a *gate*: the child is created and waits before `exec`
//! until the parent has attached performance counters to it (as `perf stat` does), so
//! counting starts exactly at `exec`.
//!
//! The standard library's `Command` cannot do the gate (its `spawn` waits for `exec`),
//! so the child is created with `fork` and `execve` here, doing only async-signal-safe
//! system calls between the two.

mod spawn;
mod subst;

pub use spawn::{spawn, Outcome, ProcError, Running, Spec};
pub use subst::{placeholders, substitute};
