//! The memory configuration record beside bandwidth and loaded-latency results: the
//! firmware's memory tables (SMBIOS, read by `numalab-memconfig`) with the theoretical
//! peak every bandwidth figure is a share of, or why it is unknown. One key and one
//! reading rule for `numalab mem` and `numalab evaluate`.

use numalab_schema::sink::{Sink, SinkError};
use numalab_schema::{Origin, Record};

/// Key of the memory configuration record (once per journal).
pub const KEY: &str = "topology/memconfig";

/// The record: this machine's memory configuration read from `/`.
pub fn record() -> Record {
    let cfg = numalab_memconfig::read(std::path::Path::new("/"));
    Record::new(KEY, Origin::Measured, &cfg)
}

/// Pushes [`record`] to `sink` unless the sink has it (once per journal): what
/// `numalab mem` does before bandwidth and loaded latency, and `numalab evaluate`'s
/// topology step.
pub fn push_once(sink: &mut dyn Sink) -> Result<(), SinkError> {
    if !sink.done(KEY) {
        sink.push(record())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_schema::sink::MemorySink;

    #[test]
    fn the_record_is_pushed_once_per_journal() {
        let mut fresh = MemorySink::default();
        push_once(&mut fresh).unwrap();
        let keys: Vec<&str> = fresh.records.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, [KEY]);
        let mut resumed = MemorySink {
            previous: vec![record()],
            ..Default::default()
        };
        push_once(&mut resumed).unwrap();
        assert!(resumed.records.is_empty());
    }
}
