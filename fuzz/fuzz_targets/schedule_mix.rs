//! Task mixes (`numalab schedule --mix`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = numalab_schedule::mix::Mix::parse(text, "fuzz.toml");
});
