//! Bundles and journals (`numalab report`, `compare`, resuming `--out`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = numalab_schema::journal::parse_bundle(std::path::Path::new("fuzz.jsonl"), data);
});
