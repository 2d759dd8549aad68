//! Home maps (`numalab schedule --home-map`, `home bench --map`, `numalab_home_open`) and
//! the hash recovery on arbitrary measured ids: never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use numalab_home::hash::{recover, relabel_full_page, relabel_page, PageIds};

fuzz_target!(|data: &[u8]| {
    if let Ok(rec) = numalab_home::ffi::parse_map(data, "fuzz.json") {
        let _ = numalab_home::alloc::Homes::from_record(&rec);
        for h in rec.home_hash.iter().chain(rec.interface_hash.iter()) {
            for a in [0u64, 64, 1 << 21, u64::MAX] {
                let _ = h.predict(a);
            }
        }
    }
    // Ids of a page of up to 256 lines and of one sampled page.
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let lpp = 1usize << (head % 9);
    let n = rest.len().min(lpp);
    let (full, more) = rest.split_at(n);
    let offsets: Vec<u32> = more.iter().take(4).map(|&b| u32::from(b)).collect();
    let sampled = &more[more.len().min(4)..];
    let ids = &sampled[..sampled.len().min(offsets.len())];
    let input = PageIds {
        lines_per_page: lpp,
        line_bytes: 64,
        full_page: full,
        full_page_phys: (head & 1 == 1).then_some(1 << 30),
        sample_offsets: &offsets,
        pages: vec![((head & 2 == 2).then_some(3 << 30), ids)],
    };
    let fit = recover("home", &input);
    let _ = relabel_full_page(&fit, &input);
    let _ = relabel_page(&fit, &input, 0);
    let _ = relabel_page(&fit, &input, 7);
    let _ = fit.predict(12345 << 6);
});
