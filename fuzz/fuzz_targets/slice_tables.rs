//! The readers of the field's slice-hash files (per-page maps, base sequence and mask
//! tables) and the recovery on arbitrary small maps: never a panic, never a hang.
#![no_main]
use libfuzzer_sys::fuzz_target;
use numalab_home::tables::{self, PageMaps};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = tables::page_address(&text);
    if let Ok(base) = tables::parse_base_sequence(&text, "fuzz") {
        let _ = tables::parse_masks(&text, "fuzz", base.len());
    }
    for len in [16usize, 512, 16384] {
        if let Ok((lo, hi, masks)) = tables::parse_masks(&text, "fuzz", len) {
            let base: Vec<u8> = (0..len).map(|i| (i % 7) as u8).collect();
            let h = tables::hash_from_tables(base, lo, hi, masks);
            for a in [0u64, 64, 1 << 21, u64::MAX] {
                let _ = h.slice(a);
            }
            let _ = tables::table_files(&h);
        }
    }
    let _ = tables::parse_page_map(data, Path::new("fuzz.map"), 0);
    // Small maps: the first byte picks lines per page (16-256) and pages (1-4); the rest
    // are slice numbers, page bases from the first bytes of each page.
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let lpp = 16usize << (head % 5);
    let pages: Vec<(u64, Vec<u8>)> = rest
        .chunks(lpp)
        .take(1 + (head as usize >> 5) % 4)
        .enumerate()
        .filter(|(_, c)| c.len() == lpp)
        .map(|(k, c)| (((k as u64) << 21) ^ (u64::from(c[0]) << 24), c.to_vec()))
        .collect();
    let mut pages = pages;
    pages.sort_by_key(|p| p.0);
    pages.dedup_by_key(|p| p.0);
    let maps = PageMaps {
        line_bytes: 64,
        lines_per_page: lpp,
        pages,
    };
    let rec = numalab_home::slicefit::recover(&maps, "fuzz", "fuzz", &mut numalab_home::map::Quiet);
    if let Some(h) = rec.hash {
        let _ = h.slice(1 << 30);
        let o = numalab_home::conflicts::ConflictOptions { max_pages: 2, runs: 2, trials: 2, ..Default::default() };
        let _ = numalab_home::conflicts::analyse(&h, "fuzz", &o);
    }
});
