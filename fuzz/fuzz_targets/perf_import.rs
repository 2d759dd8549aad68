//! perf stat output, CSV (`-x,`) and JSON (`-j`) (`numalab profile --import`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((_, lines)) = numalab_pmu::import::parse("fuzz.txt", text) {
        assert!(!lines.is_empty());
        for l in &lines {
            assert!(!l.event.is_empty());
        }
    }
});
