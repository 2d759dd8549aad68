//! Process control for every command numalab runs on a user's behalf.
//!
//! `scale`, `policy`, `sweep`, `profile` and `schedule` all run a user's program, and
//! they all need the same guarantees: argv without a shell (unless asked), a timeout,
//! the command's whole process tree ended on timeout, Ctrl-C, exit, or the death of
//! numalab itself or of the supervisor, even by SIGKILL (no orphans left, also none that called `setsid`: the
//! command runs under a small supervisor process, described in `src/spawn.rs`),
//! exit status and signals recorded, the tail of stdout/stderr kept, CPU time and peak
//! memory from `wait4`, CPU affinity and a NUMA memory policy applied in the child
//! before `exec`, and optionally a *gate*: the child is created and waits before `exec`
//! until the parent has attached performance counters to it (as `perf stat` does), so
//! counting starts exactly at `exec`.
//!
//! The standard library's `Command` cannot do the gate (its `spawn` waits for `exec`),
//! so the supervisor and the command are created with `fork` (and the command with
//! `execve`) here, doing only async-signal-safe system calls after `fork`.
//!
//! The tools numalab runs itself (`ipmitool`, `srun`, `sbatch`, `scontrol`) need none of
//! that: [`group`] runs them as plain children in their own process group, with a
//! deadline, a cancel flag and bounded captured output.
//!
//! `unsafe` lives in three modules: `spawn::sys` (numalab's side of the system calls),
//! `spawn::child` (what runs after `fork`) and [`group`]'s process-group calls.

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod group;
mod spawn;
mod subst;

pub use spawn::sys::effective_uid;
pub use spawn::{spawn, Outcome, ProcError, Running, Spec};
pub use subst::{placeholders, substitute};
