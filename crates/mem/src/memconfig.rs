//! The memory configuration record beside bandwidth and loaded-latency results: the
//! firmware's memory tables (SMBIOS, read by `numalab-memconfig`) with the theoretical
//! peak every bandwidth figure is a share of, or why it is unknown. One key and one
//! reading rule for `numalab mem` and `numalab evaluate`.

use numalab_schema::{Origin, Record};

/// Key of the memory configuration record (once per journal).
pub const KEY: &str = "topology/memconfig";

/// The record: this machine's memory configuration read from `/`.
pub fn record() -> Record {
    let cfg = numalab_memconfig::read(std::path::Path::new("/"));
    Record::new(KEY, Origin::Measured, &cfg)
}
