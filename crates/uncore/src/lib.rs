//! Uncore and fabric counters: what the memory system itself counts.
//!
//! numalab's probes measure what the cores see; the memory controllers, the LLC slices,
//! the socket links, the data fabric and the mesh count what reaches them. This crate
//!
//! 1. discovers the uncore PMUs the kernel exposes under
//!    `<root>/sys/bus/event_source/devices` ([`discover`], [`sysfs`]): Intel
//!    `uncore_imc_*` / `uncore_imc_free_running_*` / `uncore_cha_*` / `uncore_upi_*`,
//!    AMD `amd_df` / `amd_umc_*`, Arm `arm_cmn_*`, and maps each to a socket through
//!    its cpumask;
//! 2. counts them system-wide within each box's counter budget ([`Session`],
//!    [`Backend`]: [`PerfBackend`] for real counters, [`ReplayBackend`] for recorded
//!    ones), naming every event that cannot be opened and explaining a refusal;
//! 3. derives memory bandwidth per controller and socket, LLC/SLC hit ratio,
//!    directory and snoop traffic and socket-link bytes ([`derive`]; the formulas and
//!    their sources are data, `data/formulas.toml`, read by [`formulas`] and evaluated
//!    by the one expression engine, `numalab-expr`);
//! 4. compares a probe's bytes with the controllers' ([`compare_with_probe`]).
//!
//! ```no_run
//! use numalab_uncore::{discover, packages_from_sysfs, PerfBackend, Session, What};
//! let root = std::path::Path::new("/");
//! let discovery = discover(root, &packages_from_sysfs(root))?;
//! let mut backend = PerfBackend;
//! let session = Session::start(&discovery, &What::memory(), &mut backend)?;
//! // ... the workload ...
//! let report = session.stop()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The records ([`numalab_records::uncore`]) are what other records embed.

pub mod backend;
pub mod compare;
pub mod derive;
pub mod formulas;
pub mod permission;
pub mod session;
pub mod sysfs;
pub mod table;
pub mod what;

pub use backend::{Backend, PerfBackend, Replay, ReplayBackend};
pub use compare::compare_with_probe;
pub use numalab_records::uncore::{ProbeCheck, UncoreCounts, UncoreReport};
pub use session::{plan, Extra, Session, UncoreError, What};
pub use sysfs::{discover, packages_from_sysfs, CpuPackages, Discovery, SysfsError};
pub use table::{Budgets, Class};
