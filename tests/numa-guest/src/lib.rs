//! numalab's multi-node NUMA code, proven on a real Linux kernel.
//!
//! Our development machines have one NUMA node; users have 2 to 16. This crate boots a
//! QEMU guest with emulated NUMA nodes (four with one CPU each, one memory-only, a SLIT
//! with every distance different) from Debian's packaged kernel and a busybox
//! initramfs built at test time, runs a suite of checks inside it, and judges the
//! results on the host. Inside the guest the checks ask the kernel where pages really
//! are (`move_pages` and `/proc/self/numa_maps`) after numalab's own library placed
//! them, and run the `numalab` binary against the layout QEMU was given.
//!
//! - [`layout`]: the guest's NUMA layout (one source for QEMU and the expectations);
//! - [`checks`]: the checks and their order; [`cli_checks`]: the table of `numalab`
//!   command lines and assertions on their `--json` output (where new commands' checks go),
//!   [`cli_asserts`] the assertions on the measuring commands' results;
//! - [`guest`]: the runner inside the guest; [`protocol`]: its report to the host;
//! - [`host`]: initramfs, QEMU, timeout and cleanup;
//! - [`touch`]: the memory-touching test program `numalab policy` runs in the guest;
//! - [`wide`]: the wide guest's suite (every command once at 2 to 160 CPUs, timed).
//!
//! Run it with `make test-numa` or `scripts/test-numa.sh` (see docs/numa-guest.md).

pub mod arm_checks;
pub mod checks;
pub mod cli_asserts;
pub mod cli_checks;
pub mod guest;
pub mod host;
pub mod layout;
pub mod platform;
pub mod protocol;
pub mod spin;
pub mod suite;
pub mod touch;
pub mod wide;
