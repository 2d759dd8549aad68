//! The field's own files for address-to-slice maps, read and written with bounds and
//! clear errors:
//!
//! - per-page maps, as counter-based mapping tools write them: one file per 2 MiB page,
//!   `PADDR_0x<physical base, hex>.map`, one byte (the slice number, 0-254) per 64-byte
//!   line, 32,768 bytes;
//! - the published compact description: `BaseSequence_[<part>_]<n>-slice.tbl` (one decimal
//!   slice number per line) and `PermSelectMasks_[<part>_]<n>-slice.tbl` (first line: the
//!   lowest and highest address bit the masks apply to; second line: 14 masks in hex,
//!   permutation bit 0 first, `0x0` for unused ones);
//! - numalab's own `home.map` records (the measured lines of the pages whose physical
//!   address is known).
//!
//! Every error is an input error (exit 3) naming the file and what is wrong.

use crate::HomeError;
use numalab_records::home::slices::{SliceHash, MAX_BASE, MIN_BASE, TABLE_MASKS};
use numalab_records::home::{HomeMapRecord, LINE_UNKNOWN};
use numalab_schema::text::path_text;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bytes of a per-page map file (one per line of a 2 MiB page).
pub const PAGE_MAP_BYTES: usize = 32_768;
/// Bytes of a line in per-page map files.
pub const MAP_LINE_BYTES: u32 = 64;
/// Most per-page maps read at once (32 GiB of memory mapped; 512 MiB held).
pub const MAX_PAGES: usize = 16_384;
/// Largest table file read, bytes (16,384 lines of a 3-digit number are 65 KiB).
const TABLE_BYTES: u64 = 1 << 20;

/// Measured slice numbers of whole pages, by physical address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageMaps {
    /// Cache line, bytes.
    pub line_bytes: u32,
    /// Lines per page (a power of two).
    pub lines_per_page: usize,
    /// (physical base, slice number per line; [`LINE_UNKNOWN`] where not measured),
    /// in address order, no address twice.
    pub pages: Vec<(u64, Vec<u8>)>,
}

impl PageMaps {
    /// Lines with a slice number.
    pub fn known_lines(&self) -> u64 {
        self.pages
            .iter()
            .map(|(_, ids)| ids.iter().filter(|&&b| b != LINE_UNKNOWN).count() as u64)
            .sum()
    }
}

fn bad(path: &Path, msg: impl Into<String>) -> HomeError {
    HomeError::input(path_text(path), msg)
}

fn read_bounded(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, HomeError> {
    numalab_schema::input::read(path, what, limit).map_err(|e| bad(path, e.reason))
}

/// The physical base in a per-page map's file name (`PADDR_0x<hex>.map`).
pub fn page_address(name: &str) -> Option<u64> {
    let hex = name
        .strip_prefix("PADDR_0x")
        .or_else(|| name.strip_prefix("PADDR_0X"))?
        .strip_suffix(".map")?;
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// One per-page map file's bytes, checked.
pub fn parse_page_map(bytes: &[u8], path: &Path, base: u64) -> Result<Vec<u8>, HomeError> {
    if bytes.len() != PAGE_MAP_BYTES {
        return Err(bad(
            path,
            format!(
                "it holds {} bytes; a per-page map holds one byte per 64-byte line of a 2 MiB page, {PAGE_MAP_BYTES} bytes",
                bytes.len()
            ),
        ));
    }
    if let Some(i) = bytes.iter().position(|&b| b == LINE_UNKNOWN) {
        return Err(bad(
            path,
            format!(
                "the byte of line {i} (address {:#x}) is 255; slice numbers are 0 to 254",
                base + i as u64 * u64::from(MAP_LINE_BYTES)
            ),
        ));
    }
    Ok(bytes.to_vec())
}

/// The per-page maps of a folder (`PADDR_0x<hex>.map` files; other files are left
/// alone). Refused: a `.map` file whose name does not parse, a base that is not 2 MiB
/// aligned, the same page twice, a file of the wrong size, a byte of 255, more than
/// [`MAX_PAGES`] pages, a folder without maps.
pub fn read_page_maps(dir: &Path) -> Result<PageMaps, HomeError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        bad(
            dir,
            format!("cannot be read: {}", numalab_schema::input::io_reason(&e)),
        )
    })?;
    let mut named: BTreeMap<u64, PathBuf> = BTreeMap::new();
    for e in entries {
        let e = e.map_err(|e| bad(dir, numalab_schema::input::io_reason(&e)))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".map") {
            continue;
        }
        let path = e.path();
        let base = page_address(&name).ok_or_else(|| {
            bad(
                &path,
                "the name does not parse: per-page maps are named PADDR_0x<physical base in hex>.map",
            )
        })?;
        let page = PAGE_MAP_BYTES as u64 * u64::from(MAP_LINE_BYTES);
        if base % page != 0 {
            return Err(bad(
                &path,
                format!("the base {base:#x} is not a multiple of 2 MiB; a per-page map covers one 2 MiB page from its first byte"),
            ));
        }
        if let Some(other) = named.insert(base, path.clone()) {
            return Err(bad(
                &path,
                format!(
                    "it maps page {base:#x}, as {} does; keep one map per page",
                    path_text(&other)
                ),
            ));
        }
        if named.len() > MAX_PAGES {
            return Err(bad(
                dir,
                format!("it holds more than {MAX_PAGES} per-page maps; import a subset (a few hundred pages determine the hash)"),
            ));
        }
    }
    if named.is_empty() {
        return Err(bad(
            dir,
            "it holds no per-page maps (PADDR_0x<base>.map), no BaseSequence_*.tbl and no home.map record",
        ));
    }
    let mut pages = Vec::with_capacity(named.len());
    for (base, path) in named {
        let bytes = read_bounded(&path, "a per-page map", PAGE_MAP_BYTES as u64)?;
        pages.push((base, parse_page_map(&bytes, &path, base)?));
    }
    Ok(PageMaps {
        line_bytes: MAP_LINE_BYTES,
        lines_per_page: PAGE_MAP_BYTES,
        pages,
    })
}

/// The measured lines of a `home.map` record's pages with a physical address.
pub fn maps_of_record(rec: &HomeMapRecord, what: &str) -> Result<PageMaps, HomeError> {
    let line = u64::from(rec.line_bytes.max(1));
    let lpp = (rec.page_bytes / line) as usize;
    if !rec.line_bytes.is_power_of_two() || !lpp.is_power_of_two() || lpp < MIN_BASE {
        return Err(HomeError::input(
            what,
            format!(
                "its pages of {} bytes hold {lpp} lines of {} bytes; a hash needs pages of at least {MIN_BASE} lines, powers of two",
                rec.page_bytes, rec.line_bytes
            ),
        ));
    }
    let mut by_base: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for p in &rec.pages {
        let Some(phys) = p.phys else { continue };
        let ids = numalab_records::home::from_hex(&p.home).ok_or_else(|| {
            HomeError::input(what, format!("page {}: its home ids are not hex", p.index))
        })?;
        let mut full = vec![LINE_UNKNOWN; lpp];
        if p.full {
            if ids.len() != lpp {
                return Err(HomeError::input(
                    what,
                    format!("page {}: {} ids for {lpp} lines", p.index, ids.len()),
                ));
            }
            full.copy_from_slice(&ids);
        } else {
            if ids.len() != rec.sample_offsets.len() {
                return Err(HomeError::input(
                    what,
                    format!(
                        "page {}: {} ids for {} sampled offsets",
                        p.index,
                        ids.len(),
                        rec.sample_offsets.len()
                    ),
                ));
            }
            for (&o, &id) in rec.sample_offsets.iter().zip(&ids) {
                if let Some(slot) = full.get_mut(o as usize) {
                    *slot = id;
                }
            }
        }
        by_base.insert(phys - phys % rec.page_bytes.max(1), full);
    }
    if by_base.is_empty() {
        return Err(HomeError::input(
            what,
            "no page of the map has a physical address (it was made without root); rerun `numalab home map` as root",
        ));
    }
    Ok(PageMaps {
        line_bytes: rec.line_bytes,
        lines_per_page: lpp,
        pages: by_base.into_iter().collect(),
    })
}

/// A base sequence file: one decimal slice number (0-254) per line, 16 to 16,384 lines,
/// a power of two.
pub fn parse_base_sequence(text: &str, what: &str) -> Result<Vec<u8>, HomeError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let v: u8 = t
            .parse()
            .ok()
            .filter(|&v| v != LINE_UNKNOWN)
            .ok_or_else(|| {
                HomeError::input(
                    what,
                    format!("line {}: {t:?} is not a slice number from 0 to 254", n + 1),
                )
            })?;
        if out.len() == MAX_BASE {
            return Err(HomeError::input(
                what,
                format!(
                    "it lists more than {MAX_BASE} slice numbers; a base sequence has 16 to 16384"
                ),
            ));
        }
        out.push(v);
    }
    if !out.len().is_power_of_two() || out.len() < MIN_BASE {
        return Err(HomeError::input(
            what,
            format!(
                "it lists {} slice numbers; a base sequence has a power of two from {MIN_BASE} to {MAX_BASE}",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// A permutation select mask file for a base sequence of `len` lines: `(low, high,
/// masks)`, the masks beyond `log2(len)` checked to be zero and dropped.
pub fn parse_masks(text: &str, what: &str, len: usize) -> Result<(u32, u32, Vec<u64>), HomeError> {
    let err = |m: String| HomeError::input(what, m);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().ok_or_else(|| {
        err("it is empty; the first line holds the lowest and highest address bit".into())
    })?;
    let bits: Vec<u32> = first
        .split_whitespace()
        .map(|w| w.parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| err(format!("line 1: {first:?} is not two decimal bit numbers")))?;
    let [low, high] = bits[..] else {
        return Err(err(format!(
            "line 1: {first:?} holds {} numbers; give the lowest and the highest address bit",
            bits.len()
        )));
    };
    let bits_of_len = len.trailing_zeros();
    let expect = MAP_LINE_BYTES.trailing_zeros() + bits_of_len;
    if low != expect {
        return Err(err(format!(
            "line 1: the lowest bit is {low}, but a base sequence of {len} lines of 64 bytes ends at bit {expect}; the pair does not belong together"
        )));
    }
    if high >= 64 || high < low {
        return Err(err(format!(
            "line 1: the highest bit {high} must be from {low} to 63"
        )));
    }
    let second = lines
        .next()
        .ok_or_else(|| err("it has no second line; it holds the 14 masks in hex".into()))?;
    let masks: Vec<u64> = second
        .split_whitespace()
        .enumerate()
        .map(|(k, w)| {
            w.strip_prefix("0x")
                .or_else(|| w.strip_prefix("0X"))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    err(format!(
                        "line 2, mask {k}: {w:?} is not a hex number like 0x3880c00000"
                    ))
                })
        })
        .collect::<Result<_, _>>()?;
    if masks.len() != TABLE_MASKS {
        return Err(err(format!(
            "line 2 holds {} masks; the format has {TABLE_MASKS}",
            masks.len()
        )));
    }
    if lines.next().is_some() {
        return Err(err("it has more than two lines".into()));
    }
    let range = if high == 63 {
        u64::MAX
    } else {
        (1u64 << (high + 1)) - 1
    } & !((1u64 << low) - 1);
    for (k, &m) in masks.iter().enumerate() {
        if k >= bits_of_len as usize && m != 0 {
            return Err(err(format!(
                "mask {k} is {m:#x}, but a base sequence of {len} lines has only {bits_of_len} permutation bits"
            )));
        }
        if m & !range != 0 {
            return Err(err(format!(
                "mask {k} ({m:#x}) has bits outside {low}-{high}, the range line 1 gives"
            )));
        }
    }
    Ok((low, high, masks[..bits_of_len as usize].to_vec()))
}

/// A hash from a published table pair.
pub fn hash_from_tables(base: Vec<u8>, low: u32, high: u32, masks: Vec<u64>) -> SliceHash {
    let covered = (if high == 63 {
        u64::MAX
    } else {
        (1u64 << (high + 1)) - 1
    }) & !((1u64 << low) - 1);
    SliceHash {
        slices: base.iter().map(|&b| u32::from(b) + 1).max().unwrap_or(0),
        line_bytes: MAP_LINE_BYTES,
        base_sequence: base,
        low_bit: low,
        high_bit: high,
        masks,
        covered_bits: covered,
        reference: 0,
        determined: true,
    }
}

/// The table pair of a base sequence file (its `PermSelectMasks_` twin beside it).
pub fn read_table_pair(base_file: &Path) -> Result<SliceHash, HomeError> {
    let name = base_file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let rest = name.strip_prefix("BaseSequence_").ok_or_else(|| {
        bad(
            base_file,
            "a base sequence file is named BaseSequence_[<part>_]<n>-slice.tbl",
        )
    })?;
    let masks_file = base_file.with_file_name(format!("PermSelectMasks_{rest}"));
    let what = path_text(base_file);
    let text = read_bounded(base_file, "a base sequence", TABLE_BYTES)?;
    let text = String::from_utf8(text).map_err(|_| bad(base_file, "it is not text"))?;
    let base = parse_base_sequence(&text, &what)?;
    if !masks_file.exists() {
        return Err(bad(
            base_file,
            format!(
                "its mask table {} is missing; the pair is needed",
                path_text(&masks_file)
            ),
        ));
    }
    let mtext = read_bounded(&masks_file, "a permutation select mask table", TABLE_BYTES)?;
    let mtext = String::from_utf8(mtext).map_err(|_| bad(&masks_file, "it is not text"))?;
    let (low, high, masks) = parse_masks(&mtext, &path_text(&masks_file), base.len())?;
    let hash = hash_from_tables(base, low, high, masks);
    if let Some(n) = rest
        .strip_suffix("-slice.tbl")
        .and_then(|r| r.rsplit('_').next())
        .and_then(|n| n.parse::<u32>().ok())
    {
        if n < hash.slices {
            return Err(bad(
                base_file,
                format!(
                    "its name says {n} slices but it lists slice {}",
                    hash.slices - 1
                ),
            ));
        }
    }
    Ok(hash)
}

/// The base sequence files of a folder.
pub fn base_sequence_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("BaseSequence_") && n.ends_with(".tbl"))
        })
        .collect();
    out.sort();
    out
}

/// The two files of the published form for a hash: `(name, bytes)` of
/// `BaseSequence_<n>-slice.tbl` and `PermSelectMasks_<n>-slice.tbl`. Refused when a
/// position of the base sequence was never seen (the format has no word for unknown).
pub fn table_files(h: &SliceHash) -> Result<[(String, Vec<u8>); 2], HomeError> {
    if !h.valid() {
        return Err(HomeError::Usage(
            "the hash is not in the published shape".into(),
        ));
    }
    if let Some(i) = h.base_sequence.iter().position(|&b| b == LINE_UNKNOWN) {
        return Err(HomeError::Usage(format!(
            "position {i} of the base sequence was never seen (no line of the maps fell on it); import more pages before exporting tables"
        )));
    }
    let n = h.slices;
    let mut base = String::with_capacity(h.len() * 4);
    for b in &h.base_sequence {
        base.push_str(&format!("{b}\n"));
    }
    let mut masks: Vec<String> = h.masks.iter().map(|m| format!("{m:#x}")).collect();
    masks.resize(TABLE_MASKS, "0x0".into());
    let perm = format!("{} {}\n{}\n", h.low_bit, h.high_bit, masks.join(" "));
    Ok([
        (format!("BaseSequence_{n}-slice.tbl"), base.into_bytes()),
        (format!("PermSelectMasks_{n}-slice.tbl"), perm.into_bytes()),
    ])
}

/// `--export-tables DIR`: where each file of `hash`'s published table pair goes in `dir`
/// (created here if missing) and its bytes, for the caller to write. No hash in the
/// published form is a usage error; a folder that cannot be created, a runtime error.
pub fn export(hash: Option<&SliceHash>, dir: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>, HomeError> {
    let h = hash.ok_or_else(|| {
        HomeError::Usage(
            "--export-tables: there is no hash in the published form to export (see the record's notes)".into(),
        )
    })?;
    let files = table_files(h)?;
    std::fs::create_dir_all(dir).map_err(|e| {
        HomeError::Runtime(format!(
            "--export-tables {}: cannot create the folder: {}",
            path_text(dir),
            numalab_schema::input::io_reason(&e)
        ))
    })?;
    Ok(files
        .into_iter()
        .map(|(name, bytes)| (dir.join(name), bytes))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_names_parse_and_refuse() {
        assert_eq!(page_address("PADDR_0x1ae00000.map"), Some(0x1ae0_0000));
        assert_eq!(page_address("PADDR_0X00200000.map"), Some(0x20_0000));
        assert_eq!(page_address("PADDR_0x.map"), None);
        assert_eq!(page_address("PADDR_0xzz.map"), None);
        assert_eq!(page_address("PADDR_0x11112222333344445.map"), None);
        assert_eq!(page_address("page3.map"), None);
    }

    #[test]
    fn base_sequences_and_masks_are_checked() {
        let ok: String = (0..16).map(|i| format!("{}\n", i % 3)).collect();
        assert_eq!(parse_base_sequence(&ok, "b").unwrap().len(), 16);
        let short: String = (0..12).map(|i| format!("{i}\n")).collect();
        assert!(parse_base_sequence(&short, "b")
            .unwrap_err()
            .to_string()
            .contains("12 slice numbers"));
        assert!(parse_base_sequence("1\n255\n", "b")
            .unwrap_err()
            .to_string()
            .contains("line 2"));
        let m = "10 37\n0x1b5f575400 0x2eb5faa800 0x3cccc93000 0x31aeeb1000 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 \n";
        let (lo, hi, masks) = parse_masks(m, "m", 16).unwrap();
        assert_eq!((lo, hi, masks.len()), (10, 37, 4));
        assert!(parse_masks(m, "m", 32)
            .unwrap_err()
            .to_string()
            .contains("does not belong"));
        let extra = m.replace(
            "0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 ",
            "0x400 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 ",
        );
        assert!(parse_masks(&extra, "m", 16)
            .unwrap_err()
            .to_string()
            .contains("only 4 permutation bits"));
        let low = m.replace("0x1b5f575400", "0x1b5f575600");
        assert!(parse_masks(&low, "m", 16)
            .unwrap_err()
            .to_string()
            .contains("outside 10-37"));
        assert!(parse_masks("10 37\n0x1 0x2\n", "m", 16)
            .unwrap_err()
            .to_string()
            .contains("2 masks"));
    }

    #[test]
    fn tables_round_trip() {
        let base: Vec<u8> = (0..32u8).map(|i| i % 5).collect();
        let h = hash_from_tables(
            base.clone(),
            11,
            30,
            vec![0x800, 0x1000, 0x6000, 0, 0x4000_0000],
        );
        let [(bn, b), (mn, m)] = table_files(&h).unwrap();
        assert_eq!(
            (bn.as_str(), mn.as_str()),
            ("BaseSequence_5-slice.tbl", "PermSelectMasks_5-slice.tbl")
        );
        let back = parse_base_sequence(std::str::from_utf8(&b).unwrap(), "b").unwrap();
        assert_eq!(back, base);
        let (lo, hi, masks) = parse_masks(std::str::from_utf8(&m).unwrap(), "m", 32).unwrap();
        assert_eq!(hash_from_tables(back, lo, hi, masks), h);
    }

    #[test]
    fn export_needs_a_hash_and_names_the_files_in_the_folder() {
        let e = export(None, Path::new("unused")).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)));
        assert!(e
            .to_string()
            .starts_with("--export-tables: there is no hash"));
        let masks = vec![0x800, 0x1000, 0x6000, 0, 0x4000_0000];
        let h = hash_from_tables((0..32u8).map(|i| i % 5).collect(), 11, 30, masks);
        let dir = std::env::temp_dir().join(format!("numalab-export-{}", std::process::id()));
        let files = export(Some(&h), &dir).unwrap();
        assert!(dir.is_dir());
        let names: Vec<PathBuf> = files.into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            names,
            vec![
                dir.join("BaseSequence_5-slice.tbl"),
                dir.join("PermSelectMasks_5-slice.tbl")
            ]
        );
        let blocker = dir.join("file");
        std::fs::write(&blocker, "x").unwrap();
        let e = export(Some(&h), &blocker.join("sub")).unwrap_err();
        assert!(matches!(e, HomeError::Runtime(_)));
        assert!(
            e.to_string().contains(": cannot create the folder: "),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
