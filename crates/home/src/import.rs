//! Maps and hashes from outside, and two of them compared (`numalab home map --import`,
//! `numalab home compare`).
//!
//! What a path may be: a folder of per-page maps (`PADDR_0x<base>.map`), a published
//! table pair (a `BaseSequence_*.tbl` file, or a folder holding one pair), or numalab's
//! own output (a folder or file holding a `home.map` record, whose measured lines are
//! used, or a `home.hash` record from an earlier import).

use crate::tables::{self, PageMaps};
use crate::watch::Watch;
use crate::HomeError;
use numalab_records::home::slices::{HomeCompareRecord, HomeHashRecord, SliceHash};
use numalab_records::home::HomeMapRecord;
use numalab_schema::text::path_text;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use std::path::Path;

/// Addresses drawn when two hashes are compared without measured lines.
pub const COMPARE_ADDRESSES: usize = 100_000;

/// What a path held.
#[derive(Debug, Clone)]
pub enum Imported {
    /// Measured lines (per-page maps or a `home.map` record), with the hash that came
    /// with them, if any.
    Maps {
        /// "per-page maps" or "home.map".
        source: &'static str,
        /// The lines.
        maps: PageMaps,
        /// The record's own published-form hash (home.map records only).
        hash: Option<SliceHash>,
    },
    /// A hash without lines: a table pair or an earlier import.
    Hash {
        /// "tables" or "home.hash".
        source: &'static str,
        /// The hash.
        hash: SliceHash,
    },
}

/// Reads what `path` holds (see the module).
pub fn load(path: &Path) -> Result<Imported, HomeError> {
    let what = path_text(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.starts_with("BaseSequence_") && !path.is_dir() {
        return Ok(Imported::Hash {
            source: "tables",
            hash: tables::read_table_pair(path)?,
        });
    }
    if path.is_dir() {
        let has_maps = std::fs::read_dir(path)
            .map_err(|e| {
                HomeError::input(
                    &what,
                    format!("cannot be read: {}", numalab_schema::input::io_reason(&e)),
                )
            })?
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".map"));
        if has_maps {
            return Ok(Imported::Maps {
                source: "per-page maps",
                maps: tables::read_page_maps(path)?,
                hash: None,
            });
        }
        let pairs = tables::base_sequence_files(path);
        match pairs.len() {
            0 => {}
            1 => {
                return Ok(Imported::Hash {
                    source: "tables",
                    hash: tables::read_table_pair(&pairs[0])?,
                })
            }
            _ => {
                let names: Vec<String> = pairs
                    .iter()
                    .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                return Err(HomeError::input(
                    what,
                    format!("it holds {} base sequences ({}); give the BaseSequence_*.tbl file of the one wanted", names.len(), names.join(", ")),
                ));
            }
        }
        let nothing = "it holds no per-page maps (PADDR_0x<base>.map), no BaseSequence_*.tbl and no home.map or home.hash record";
        let (bundle, _) = numalab_schema::journal::read_bundle(path)
            .map_err(|_| HomeError::input(&what, nothing))?;
        if let Some((_, r)) = bundle.records_of::<HomeHashRecord>().into_iter().last() {
            return hash_of_record(r, &what);
        }
        let Some((_, rec)) = bundle.records_of::<HomeMapRecord>().into_iter().last() else {
            return Err(HomeError::input(&what, nothing));
        };
        return Ok(Imported::Maps {
            source: "home.map",
            maps: tables::maps_of_record(&rec, &what)?,
            hash: rec.slice_hash.clone(),
        });
    }
    let rec: HomeMapRecord = crate::ffi::load_map(path).map_err(|e| match e {
        HomeError::Input { what, msg } => HomeError::input(
            what,
            format!("{msg}; --import and compare take per-page maps (PADDR_0x<base>.map), a BaseSequence_*.tbl pair, or numalab's home.map or home.hash output"),
        ),
        other => other,
    })?;
    Ok(Imported::Maps {
        source: "home.map",
        maps: tables::maps_of_record(&rec, &what)?,
        hash: rec.slice_hash.clone(),
    })
}

fn hash_of_record(r: HomeHashRecord, what: &str) -> Result<Imported, HomeError> {
    match r.hash {
        Some(hash) if hash.valid() => Ok(Imported::Hash {
            source: "home.hash",
            hash,
        }),
        _ => Err(HomeError::input(
            what,
            format!("its home.hash record holds no hash (status {})", r.status),
        )),
    }
}

/// The hash of what a path held: its own, or the one recovered from its lines; the
/// recovery's notes when no hash explains them.
pub fn hash_of(x: &Imported, name: &str, watch: &mut dyn Watch) -> Result<SliceHash, HomeError> {
    match x {
        Imported::Hash { hash, .. }
        | Imported::Maps {
            hash: Some(hash), ..
        } => Ok(hash.clone()),
        Imported::Maps { maps, source, .. } => {
            let r = crate::slicefit::recover(maps, source, name, watch);
            r.hash.ok_or_else(|| {
                HomeError::input(
                    name,
                    format!(
                        "no hash in the published form explains its lines: {}",
                        r.notes.join("; ")
                    ),
                )
            })
        }
    }
}

/// The `home.hash` record of an import: maps recovered, tables read as published.
pub fn import(path: &Path, watch: &mut dyn Watch) -> Result<HomeHashRecord, HomeError> {
    let what = path_text(path);
    Ok(match load(path)? {
        Imported::Maps { source, maps, .. } => {
            crate::slicefit::recover(&maps, source, &what, watch)
        }
        Imported::Hash { source, hash } => {
            let mut rec = HomeHashRecord::new(source, &what, "tables");
            rec.notes.push(format!(
                "read as published: a base sequence of {} lines, masks over address bits {}-{}",
                hash.len(),
                hash.low_bit,
                hash.high_bit
            ));
            rec.hash = Some(hash);
            rec
        }
    })
}

/// The best one-to-one relabelling of `b`'s numbers onto `a`'s from their co-occurrence
/// counts (greedy, largest first): `(pairs a <- b, lines it makes agree)`.
pub fn relabel(counts: &HashMap<(u8, u8), u64>) -> (Vec<[u8; 2]>, u64) {
    let mut cells: Vec<(&(u8, u8), &u64)> = counts.iter().collect();
    cells.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
    let (mut ua, mut ub) = ([false; 256], [false; 256]);
    let mut pairs = Vec::new();
    let mut right = 0;
    for (&(a, b), &c) in cells {
        if ua[a as usize] || ub[b as usize] {
            continue;
        }
        ua[a as usize] = true;
        ub[b as usize] = true;
        right += c;
        pairs.push([a, b]);
    }
    pairs.sort_unstable();
    (pairs, right)
}

/// Compares two maps of one part line by line (see [`HomeCompareRecord`]).
pub fn compare(
    a: &Imported,
    a_name: &str,
    b: &Imported,
    b_name: &str,
    watch: &mut dyn Watch,
) -> Result<HomeCompareRecord, HomeError> {
    let mut counts: HashMap<(u8, u8), u64> = HashMap::new();
    let mut notes = Vec::new();
    let mut lines = 0u64;
    let mut uncovered = 0u64;
    let lines_from;
    match (a, b) {
        (Imported::Maps { maps: ma, .. }, Imported::Maps { maps: mb, .. }) => {
            lines_from = "the lines both maps measured".to_string();
            let bmap: HashMap<u64, &Vec<u8>> = mb.pages.iter().map(|(p, ids)| (*p, ids)).collect();
            for (p, ids) in &ma.pages {
                let Some(other) = bmap.get(p) else { continue };
                if ma.lines_per_page != mb.lines_per_page {
                    break;
                }
                for (&x, &y) in ids.iter().zip(other.iter()) {
                    if x != numalab_records::home::LINE_UNKNOWN
                        && y != numalab_records::home::LINE_UNKNOWN
                    {
                        lines += 1;
                        *counts.entry((x, y)).or_default() += 1;
                    }
                }
            }
            if lines == 0 {
                // No common page: compare A's lines with B's hash.
                notes.push("the two maps share no measured page: A's lines are compared with the hash recovered from B".into());
                let hb = hash_of(b, b_name, watch)?;
                against(ma, &hb, false, &mut counts, &mut lines, &mut uncovered);
            }
        }
        (Imported::Maps { maps, .. }, other) | (other, Imported::Maps { maps, .. }) => {
            let maps_first = matches!(a, Imported::Maps { .. });
            lines_from = format!(
                "the measured lines of {}",
                if maps_first { "A" } else { "B" }
            );
            let h = hash_of(other, if maps_first { b_name } else { a_name }, watch)?;
            against(
                maps,
                &h,
                !maps_first,
                &mut counts,
                &mut lines,
                &mut uncovered,
            );
        }
        (Imported::Hash { hash: ha, .. }, Imported::Hash { hash: hb, .. }) => {
            lines_from = format!("{COMPARE_ADDRESSES} random line addresses both hashes cover");
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            let free = ha.covered_bits | ((1u64 << ha.low_bit.min(63)) - 1);
            let line_mask = !(u64::from(ha.line_bytes.max(1)) - 1);
            let mut tries = 0;
            while (lines as usize) < COMPARE_ADDRESSES && tries < 4 * COMPARE_ADDRESSES {
                tries += 1;
                let addr = (ha.reference ^ (rng.random::<u64>() & free)) & line_mask;
                match (ha.slice(addr), hb.slice(addr)) {
                    (Some(x), Some(y)) => {
                        lines += 1;
                        *counts.entry((x, y)).or_default() += 1;
                    }
                    _ => uncovered += 1,
                }
            }
        }
    }
    if uncovered > 0 {
        notes.push(format!("{uncovered} line(s) lay where a hash does not reach (address bits its data never varied) and were not compared"));
    }
    if lines == 0 {
        return Err(HomeError::input(
            format!("{a_name} and {b_name}"),
            "they have no line in common to compare (different pages, and no hash covering the other's addresses)",
        ));
    }
    let same: u64 = counts
        .iter()
        .filter(|((x, y), _)| x == y)
        .map(|(_, c)| c)
        .sum();
    let (pairs, right) = relabel(&counts);
    let relabelling: Vec<[u8; 2]> = pairs.into_iter().filter(|[x, y]| x != y).collect();
    if !relabelling.is_empty() {
        notes.push(format!(
            "the two number the slices differently: {} of B's numbers are relabelled",
            relabelling.len()
        ));
    }
    Ok(HomeCompareRecord {
        a: a_name.into(),
        b: b_name.into(),
        lines_from,
        lines,
        agreement: same as f64 / lines as f64,
        agreement_relabelled: right as f64 / lines as f64,
        relabelling,
        notes,
    })
}

/// Counts the measured lines of `maps` against `h` into `counts` (keys `(map, hash)`,
/// or `(hash, map)` when `flip`); lines the hash does not cover into `uncovered`.
fn against(
    maps: &PageMaps,
    h: &SliceHash,
    flip: bool,
    counts: &mut HashMap<(u8, u8), u64>,
    lines: &mut u64,
    uncovered: &mut u64,
) {
    for (p, ids) in &maps.pages {
        for (i, &x) in ids.iter().enumerate() {
            if x == numalab_records::home::LINE_UNKNOWN {
                continue;
            }
            match h.slice(p + i as u64 * u64::from(maps.line_bytes)) {
                Some(y) => {
                    *lines += 1;
                    *counts
                        .entry(if flip { (y, x) } else { (x, y) })
                        .or_default() += 1;
                }
                None => *uncovered += 1,
            }
        }
    }
}
