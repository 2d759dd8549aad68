//! `perf script` data-address samples (`numalab profile --import`, numalab-memaccess)
//! and the sysfs PMU format and event strings numalab-uncore reads: never a panic.
//! The first line of the input is a format field ("config:0-7,32-35"), the second an
//! event string ("event=0x04,umask=0x03"); the whole input is also read as samples.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = numalab_memaccess::ImportOptions {
        read_symbols: false,
        ..Default::default()
    };
    if let Ok(r) = numalab_memaccess::import(text, &opts) {
        assert!(r.samples > 0);
        assert!(r.loads + r.stores + r.other <= r.samples);
    }
    let mut lines = text.lines();
    let (Some(format), Some(event)) = (lines.next(), lines.next()) else {
        return;
    };
    let path = Path::new("fuzz");
    let mut formats = BTreeMap::new();
    if let Ok(f) = numalab_uncore::sysfs::FormatField::parse("event", format, path) {
        let _ = f.place(u64::MAX);
        let _ = f.place(1);
        formats.insert("event".to_string(), f);
    }
    let _ = numalab_uncore::sysfs::parse_terms(event, &formats, path);
});
