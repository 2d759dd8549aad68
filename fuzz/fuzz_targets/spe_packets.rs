//! Arm SPE packets from a perf AUX area (`numalab profile --memory-samples` on an SPE
//! machine): the decoder and the mapping of its records into memory samples.
#![no_main]
use libfuzzer_sys::fuzz_target;
use numalab_memaccess::spe;

fuzz_target!(|data: &[u8]| {
    let d = spe::decode(data);
    assert!(d.consumed <= data.len());
    // The complete records lie before `consumed`: decoding that prefix finds them all.
    assert_eq!(spe::decode(&data[..d.consumed]).records, d.records);
    let mut summary = spe::Summary::default();
    for r in &d.records {
        summary.add(r);
        if let Some(s) = spe::to_mem_sample(r, 1, 1, 0) {
            assert_eq!(Some(s.addr), r.virt_addr);
        }
    }
    assert_eq!(summary.records, d.records.len() as u64);
    let _ = summary.notes("fuzz");
});
