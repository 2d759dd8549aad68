//! Slice hashes in the field's published form: per-page maps generated here from hash
//! descriptions (constructed, and the published ones in tests/fixtures/slice-hash), with
//! noise and with few pages, recovered back; the readers' refusals; export, compare and
//! conflicts.

use numalab_home::conflicts::{analyse, choose_pages, page_histogram, ConflictOptions};
use numalab_home::import::{compare, import, load, Imported};
use numalab_home::map::Quiet;
use numalab_home::slicefit::recover;
use numalab_home::tables::{self, PageMaps, PAGE_MAP_BYTES};
use numalab_records::home::slices::SliceHash;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};

const PAGE: u64 = 2 << 20;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/slice-hash")
}

/// A hash with a random base sequence of `len` lines over `slices` slices (every slice
/// present) and random masks over bits low..=37.
fn constructed(slices: u32, len: usize, seed: u64) -> SliceHash {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut base: Vec<u8> = (0..len).map(|i| (i % slices as usize) as u8).collect();
    for i in (1..len).rev() {
        let j = rng.random_range(0..=i);
        base.swap(i, j);
    }
    let bits = len.trailing_zeros();
    let low = 6 + bits;
    let range = ((1u64 << 38) - 1) & !((1u64 << low) - 1);
    let masks = (0..bits).map(|_| rng.random::<u64>() & range).collect();
    tables::hash_from_tables(base, low, 37, masks)
}

/// Maps of `pages` random distinct 2 MiB pages the hash covers, `noise` of the lines
/// misread as another slice.
fn maps(h: &SliceHash, pages: usize, noise: f64, seed: u64) -> PageMaps {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let mut bases: Vec<u64> = Vec::new();
    while bases.len() < pages {
        let b = rng.random_range(0..(1u64 << (h.high_bit + 1 - 21))) * PAGE;
        if !bases.contains(&b) {
            bases.push(b);
        }
    }
    bases.sort_unstable();
    let pages = bases
        .into_iter()
        .map(|b| {
            let ids = (0..PAGE_MAP_BYTES as u64)
                .map(|i| {
                    let s = h.slice(b + 64 * i).unwrap();
                    if rng.random::<f64>() < noise {
                        (s + 1 + rng.random_range(0..h.slices as u8 - 1)) % h.slices as u8
                    } else {
                        s
                    }
                })
                .collect();
            (b, ids)
        })
        .collect();
    PageMaps {
        line_bytes: 64,
        lines_per_page: PAGE_MAP_BYTES,
        pages,
    }
}

/// Share of `n` random line addresses below 256 GiB where two hashes agree.
fn agreement(a: &SliceHash, b: &SliceHash, n: usize) -> f64 {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let same = (0..n)
        .filter(|_| {
            let x = rng.random_range(0..(1u64 << 32)) * 64;
            a.slice(x) == b.slice(x)
        })
        .count();
    same as f64 / n as f64
}

#[test]
fn constructed_hashes_are_recovered_exactly_from_64_pages() {
    // 16 slices linear, then uneven counts with long base sequences.
    for (slices, len, seed) in [
        (16u32, 16usize, 1u64),
        (18, 4096, 2),
        (28, 4096, 3),
        (38, 4096, 4),
        (56, 16384, 5),
    ] {
        let truth = constructed(slices, len, seed);
        let rec = recover(
            &maps(&truth, 64, 0.0, seed),
            "per-page maps",
            "generated",
            &mut Quiet,
        );
        let h = rec
            .hash
            .as_ref()
            .unwrap_or_else(|| panic!("{slices} slices: {rec:?}"));
        assert_eq!(rec.status, "recovered");
        assert_eq!(
            h.len(),
            len,
            "{slices} slices: the length is found, {:?}",
            rec.notes
        );
        assert_eq!(h.slices, slices);
        assert_eq!(h.low_bit, truth.low_bit);
        assert_eq!(h.base_sequence, truth.base_sequence, "{slices} slices");
        assert_eq!(h.masks, truth.masks, "{slices} slices");
        assert!(h.determined, "{:?}", rec.notes);
        assert_eq!(rec.agreement_fitted, Some(1.0));
        assert_eq!(rec.agreement_held, Some(1.0));
        assert_eq!(rec.pages_held, 8);
        assert_eq!(rec.agreement_held_pages, Some(1.0));
        assert_eq!(agreement(h, &truth, 20_000), 1.0);
    }
}

#[test]
fn misread_lines_are_outvoted_and_counted() {
    for (slices, len, seed) in [(18u32, 4096usize, 11u64), (56, 16384, 12)] {
        let truth = constructed(slices, len, seed);
        let rec = recover(
            &maps(&truth, 64, 0.03, seed),
            "per-page maps",
            "generated",
            &mut Quiet,
        );
        let h = rec.hash.as_ref().expect("recovered");
        assert_eq!(h.len(), len);
        assert_eq!(
            h.base_sequence, truth.base_sequence,
            "the majority corrects the misread lines"
        );
        assert_eq!(h.masks, truth.masks);
        // The hash is right and the maps are 3% wrong: the agreement says so.
        for a in [
            rec.agreement_fitted,
            rec.agreement_held,
            rec.agreement_held_pages,
        ] {
            let a = a.unwrap();
            assert!((0.96..0.98).contains(&a), "{a} for 3% misread lines");
        }
    }
}

#[test]
fn few_pages_say_what_they_cannot_know() {
    let truth = constructed(28, 4096, 21);
    let m = maps(&truth, 3, 0.0, 21);
    let rec = recover(&m, "per-page maps", "generated", &mut Quiet);
    let h = rec.hash.as_ref().expect("recovered");
    assert_eq!(h.len(), 4096);
    assert_eq!(rec.pages_held, 0, "fewer than 8 pages: none held back");
    assert!(!h.determined || h.covered_bits.count_ones() < 38 - 18);
    assert!(
        rec.notes.iter().any(|n| n.contains("never varied")),
        "{:?}",
        rec.notes
    );
    // Inside what the three pages varied the hash is right; outside it says nothing.
    let (mut inside, mut outside) = (0, 0);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for _ in 0..20_000 {
        let a = rng.random_range(0..(1u64 << 32)) * 64;
        match h.slice(a) {
            Some(s) => {
                inside += 1;
                if h.determined {
                    assert_eq!(Some(s), truth.slice(a));
                }
            }
            None => outside += 1,
        }
    }
    assert!(
        outside > 0 && inside > 0,
        "{inside} inside, {outside} outside"
    );
    // The pages' own lines are all right.
    for (b, ids) in &m.pages {
        for (i, &s) in ids.iter().enumerate().step_by(97) {
            assert_eq!(h.slice(b + 64 * i as u64), Some(s));
        }
    }
}

#[test]
fn the_published_hashes_survive_maps_and_recovery() {
    let mut seen = 0;
    for base in tables::base_sequence_files(&fixtures()) {
        let published = tables::read_table_pair(&base).unwrap();
        let rec = recover(
            &maps(&published, 32, 0.0, 1),
            "per-page maps",
            "generated",
            &mut Quiet,
        );
        let h = rec
            .hash
            .as_ref()
            .unwrap_or_else(|| panic!("{}: {:?}", base.display(), rec.notes));
        let name = base.file_name().unwrap().to_string_lossy().into_owned();
        // The length found is the published one, and the two agree everywhere below
        // 256 GiB that the 32 pages determine.
        assert_eq!(h.len(), published.len(), "{name}: {:?}", rec.notes);
        assert_eq!(rec.agreement_fitted, Some(1.0), "{name}");
        assert_eq!(rec.agreement_held_pages, Some(1.0), "{name}");
        if h.determined {
            assert_eq!(h.base_sequence, published.base_sequence, "{name}");
        }
        seen += 1;
    }
    assert_eq!(seen, 13);
}

#[test]
fn the_published_table_files_are_read_and_written_in_their_own_form() {
    let f = fixtures().join("BaseSequence_SKX_18-slice.tbl");
    let h = tables::read_table_pair(&f).unwrap();
    assert_eq!(
        (h.len(), h.slices, h.low_bit, h.high_bit),
        (4096, 18, 18, 37)
    );
    assert_eq!(h.masks[0], 0x4c8fc0000);
    assert_eq!(h.base_sequence[..4], [0, 11, 2, 9]);
    let [(bn, b), (mn, m)] = tables::table_files(&h).unwrap();
    assert_eq!(bn, "BaseSequence_18-slice.tbl");
    assert_eq!(
        b,
        std::fs::read(&f).unwrap(),
        "the base sequence is written byte for byte as published"
    );
    assert!(mn.starts_with("PermSelectMasks_18"));
    let text = String::from_utf8(m).unwrap();
    assert!(
        text.starts_with("18 37\n0x4c8fc0000 0x1d05380000 "),
        "{text}"
    );
    // The folder holds 13 pairs: one must be named.
    let e = load(&fixtures()).unwrap_err().to_string();
    assert!(
        e.contains("13 base sequences") && e.contains("give the BaseSequence_"),
        "{e}"
    );
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numalab-slices-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn per_page_map_folders_are_read_with_their_errors_named() {
    let truth = constructed(18, 4096, 31);
    let m = maps(&truth, 9, 0.0, 31);
    let d = scratch("read");
    for (b, ids) in &m.pages {
        std::fs::write(d.join(format!("PADDR_0x{b:x}.map")), ids).unwrap();
    }
    std::fs::write(d.join("README"), "not a map").unwrap();
    let rec = import(&d, &mut Quiet).unwrap();
    assert_eq!(rec.source, "per-page maps");
    assert_eq!((rec.pages, rec.pages_held), (9, 1));
    // Eight fitted pages vary 7 of the 17 page-number bits: the base sequence is the
    // one for the first page's other bits, and every line of the maps follows from it.
    assert_eq!(rec.hash.unwrap().len(), 4096);
    assert_eq!(rec.agreement_fitted, Some(1.0));
    assert_eq!(rec.agreement_held, Some(1.0));
    let refuse = |setup: &dyn Fn(&Path), want: &str| {
        let e = scratch("bad");
        for (b, ids) in &m.pages[..2] {
            std::fs::write(e.join(format!("PADDR_0x{b:x}.map")), ids).unwrap();
        }
        setup(&e);
        let err = import(&e, &mut Quiet).unwrap_err();
        assert_eq!(
            numalab_schema::Classify::class(&err),
            numalab_schema::ErrorClass::Input
        );
        assert!(err.to_string().contains(want), "{err} should say {want:?}");
        std::fs::remove_dir_all(&e).unwrap();
    };
    let (b0, ids0) = &m.pages[0];
    refuse(
        &|e| std::fs::write(e.join("PADDR_0x40000000.map"), &ids0[..100]).unwrap(),
        "holds 100 bytes",
    );
    refuse(
        &|e| std::fs::write(e.join("PADDR_page.map"), ids0).unwrap(),
        "does not parse",
    );
    refuse(
        &|e| std::fs::write(e.join("PADDR_0x40001000.map"), ids0).unwrap(),
        "not a multiple of 2 MiB",
    );
    refuse(
        &|e| std::fs::write(e.join(format!("PADDR_0x000{b0:x}.map")), ids0).unwrap(),
        "keep one map per page",
    );
    refuse(
        &|e| {
            let mut v = ids0.clone();
            v[77] = 255;
            std::fs::write(e.join("PADDR_0x80000000.map"), v).unwrap()
        },
        "line 77",
    );
    let empty = scratch("empty");
    assert!(import(&empty, &mut Quiet)
        .unwrap_err()
        .to_string()
        .contains("holds no per-page maps"));
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&empty).unwrap();
}

#[test]
fn two_numberings_of_one_hash_are_matched_by_relabelling() {
    let published =
        tables::read_table_pair(&fixtures().join("BaseSequence_SKX_28-slice.tbl")).unwrap();
    let mut other = published.clone();
    for s in other.base_sequence.iter_mut() {
        *s = (*s + 5) % 28;
    }
    let a = Imported::Hash {
        source: "tables",
        hash: published.clone(),
    };
    let b = Imported::Hash {
        source: "tables",
        hash: other.clone(),
    };
    let c = compare(&a, "A", &b, "B", &mut Quiet).unwrap();
    assert_eq!(c.lines, 100_000);
    assert!(c.agreement < 0.1, "{c:?}");
    assert_eq!(c.agreement_relabelled, 1.0);
    assert_eq!(c.relabelling.len(), 28);
    assert!(c.relabelling.contains(&[0, 5]));
    // Measured lines with 2% misread against the published tables.
    let m = maps(&published, 4, 0.02, 5);
    let lines = Imported::Maps {
        source: "per-page maps",
        maps: m,
        hash: None,
    };
    let c = compare(&lines, "maps", &a, "tables", &mut Quiet).unwrap();
    assert_eq!(c.lines, 4 * PAGE_MAP_BYTES as u64);
    assert!((0.97..0.99).contains(&c.agreement), "{c:?}");
    assert!(c.relabelling.is_empty());
}

/// A 16-slice hash whose permutation over the bits of a 4 KiB stride within a page has
/// rank 2 (so one page's lines at that stride reach 4 slices) and ignores bit 21: the
/// pages of each aligned pair reach the same 4, while other page bits move them.
fn crowding() -> SliceHash {
    let base: Vec<u8> = (0..16).collect();
    let masks = vec![
        0x1000 | 0x40_0000,
        0x2000 | 0x80_0000,
        0x100_0000,
        0x200_0000,
    ];
    tables::hash_from_tables(base, 10, 37, masks)
}

#[test]
fn contiguous_pages_that_crowd_a_stride_onto_few_slices_are_named_and_avoided() {
    let h = crowding();
    let one = page_histogram(&h, 0, 4096, PAGE);
    assert_eq!(one.iter().filter(|&&c| c > 0).count(), 4);
    let o = ConflictOptions {
        max_pages: 4,
        runs: 8,
        trials: 64,
        ..ConflictOptions::default()
    };
    let rec = analyse(&h, "crowding", &o).unwrap();
    let c = rec
        .combinations
        .iter()
        .find(|c| c.stride_bytes == 4096 && c.pages == 4)
        .unwrap();
    assert!((c.contiguous_worst - 4.0).abs() < 1e-9, "{c:?}");
    assert!(c.random_mean < c.contiguous_worst / 1.5, "{c:?}");
    assert!(c.chosen < c.contiguous_worst, "{c:?}");
    assert!(
        rec.advice[0].contains("choose_pages picks"),
        "{:?}",
        rec.advice
    );
    assert!(
        rec.advice
            .iter()
            .any(|a| a.starts_with("Lines 4 KiB apart land on 4 of the 16 slices")),
        "{:?}",
        rec.advice
    );
    // What the allocator follows: two pages that reach different slices.
    // Pages 0-7 (bits 21-23) reach the same 4 slices; page 8 others.
    let pool: Vec<u64> = (0..16).map(|i| i * PAGE).collect();
    let pick = choose_pages(&h, &pool, 4096, PAGE, 2);
    assert_eq!(pick, vec![0, 8 * PAGE]);
    // A hash whose masks over the bits a 4 KiB stride varies have full rank spreads
    // every page's lines at that stride evenly: nothing to avoid there.
    let good = constructed(16, 16, 9);
    let rec = analyse(&good, "random", &o).unwrap();
    for c in rec.combinations.iter().filter(|c| c.stride_bytes == 4096) {
        assert!((c.contiguous_worst - 1.0).abs() < 1e-9, "{c:?}");
        assert!((c.random_mean - 1.0).abs() < 1e-9, "{c:?}");
    }
}
