//! Core-to-core CSV matrices (`numalab c2c --input`, `layout --input`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(import) = numalab_c2c::csv::parse(data, "fuzz.csv") {
        // Whatever is accepted is a square matrix over its CPUs.
        let m = &import.matrix;
        assert_eq!(m.cpus().len(), m.n());
        assert_eq!(m.cells().n(), m.n());
        assert_eq!(m.cells().rows().count(), m.n());
    }
});
