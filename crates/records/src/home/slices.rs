//! The address-to-slice hash in the form the field publishes it (J. D. McCalpin, "Mapping
//! Addresses to L3/CHA Slices in Intel Processors", TACC TR-2021-03): a *base sequence* of
//! slice numbers, one per cache line of a block of `L` lines (`L` a power of two, 16 to
//! 16,384), repeated over memory with a binary permutation per block:
//!
//! `slice(a) = base[((a / line) mod L) xor perm(a)]`, bit `k` of `perm(a)` the parity of
//! `a & masks[k]` (the *permutation select masks*, over the address bits from
//! `log2(line) + log2(L)` up), and the records that carry it: `home.hash` (a hash
//! imported or recovered from per-page maps or tables), `home.compare` (two maps of one
//! part line by line) and `home.conflicts` (strides and page combinations whose lines
//! crowd onto few slices).

use super::LINE_UNKNOWN;
use numalab_schema::RecordKind;
use serde::{Deserialize, Serialize};

/// Shortest base sequence the published form uses, lines.
pub const MIN_BASE: usize = 16;
/// Longest base sequence, lines (14 permutation bits).
pub const MAX_BASE: usize = 16_384;
/// Masks a published mask table lists (permutation bits 0..13; unused ones are 0x0).
pub const TABLE_MASKS: usize = 14;

/// A hash in the published form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceHash {
    /// Slices (largest slice number + 1).
    pub slices: u32,
    /// Cache line, bytes (64).
    pub line_bytes: u32,
    /// Slice of each line of a block at permutation 0; [`LINE_UNKNOWN`] where no line
    /// was ever seen at that position.
    pub base_sequence: Vec<u8>,
    /// Lowest address bit the masks apply to (`log2(line) + log2(len)`).
    pub low_bit: u32,
    /// Highest address bit the masks are known to be right for.
    pub high_bit: u32,
    /// One mask per permutation bit (`log2(len)` of them), byte addresses.
    pub masks: Vec<u64>,
    /// Address bits (from `low_bit` up) that the data behind the hash varied: an
    /// address that differs from `reference` in other bits is outside what is known.
    pub covered_bits: u64,
    /// The address whose unvaried bits the base sequence belongs to (0 for tables: the
    /// published base sequence is the one at physical address 0).
    pub reference: u64,
    /// Every covered bit was determined on its own (not only in combination with others).
    pub determined: bool,
}

impl SliceHash {
    /// Lines of the base sequence.
    pub fn len(&self) -> usize {
        self.base_sequence.len()
    }

    /// Whether the base sequence is empty (never, for a valid hash).
    pub fn is_empty(&self) -> bool {
        self.base_sequence.is_empty()
    }

    /// Whether the shape is usable: a power-of-two sequence within the published range,
    /// one mask per permutation bit, a line size that is a power of two.
    pub fn valid(&self) -> bool {
        let l = self.base_sequence.len();
        l.is_power_of_two()
            && (MIN_BASE..=MAX_BASE).contains(&l)
            && self.masks.len() == l.trailing_zeros() as usize
            && self.line_bytes.is_power_of_two()
            && self.low_bit == self.line_bytes.trailing_zeros() + l.trailing_zeros()
            && self.high_bit < 64
    }

    /// Whether the data behind the hash varied every address bit from `low_bit` to
    /// `high_bit`, each on its own: then the reference's other bits do not matter below
    /// `high_bit`.
    pub fn fully_covered(&self) -> bool {
        if self.low_bit > self.high_bit || self.low_bit >= 64 {
            return false;
        }
        let top = if self.high_bit >= 63 {
            u64::MAX
        } else {
            (1u64 << (self.high_bit + 1)) - 1
        };
        self.determined && self.covered_bits == top & !((1u64 << self.low_bit) - 1)
    }

    /// The permutation of the block holding `address`.
    pub fn permutation(&self, address: u64) -> usize {
        self.masks
            .iter()
            .enumerate()
            .map(|(k, m)| (((address & m).count_ones() & 1) as usize) << k)
            .sum()
    }

    /// The position in the base sequence of the line holding `address`.
    pub fn position(&self, address: u64) -> usize {
        let l = self.base_sequence.len().max(1);
        ((address >> self.line_bytes.trailing_zeros()) as usize & (l - 1))
            ^ self.permutation(address)
    }

    /// Whether `address` lies where the hash is known: it differs from `reference` only
    /// in covered bits (and in bits below `low_bit`).
    pub fn covers(&self, address: u64) -> bool {
        let low = if self.low_bit >= 64 {
            u64::MAX
        } else {
            (1u64 << self.low_bit) - 1
        };
        (address ^ self.reference) & !low & !self.covered_bits == 0
    }

    /// The slice of `address`, when the hash covers it and its position was seen.
    pub fn slice(&self, address: u64) -> Option<u8> {
        if !self.valid() || !self.covers(address) {
            return None;
        }
        self.base_sequence
            .get(self.position(address))
            .copied()
            .filter(|&s| s != LINE_UNKNOWN)
    }
}

/// A hash brought in or recovered (`home.hash`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HomeHashRecord {
    /// "per-page maps", "tables" or "home.map".
    pub source: String,
    /// The file or folder read.
    pub input: String,
    /// "recovered" (the hash explains the maps), "tables" (read as published) or
    /// "not-found".
    pub status: String,
    /// The hash (null when not found).
    pub hash: Option<SliceHash>,
    /// Pages read.
    pub pages: usize,
    /// Lines with a slice number read.
    pub lines: u64,
    /// Blocks of the base sequence's length the maps hold, and of them those whose lines
    /// are a permutation of the base sequence.
    pub blocks: usize,
    /// Blocks that fit.
    pub blocks_fitted: usize,
    /// Lines the fit used and the share of them the hash gives.
    pub lines_fitted: u64,
    /// Share of the fitted lines the hash gives.
    pub agreement_fitted: Option<f64>,
    /// Lines of fitted pages held back from the fit (1 in 16) and the share the hash gives.
    pub lines_held: u64,
    /// Share of held-back lines the hash gives.
    pub agreement_held: Option<f64>,
    /// Whole pages held back from the fit (1 in 8 when there are 8 or more).
    pub pages_held: usize,
    /// Share of the held-back pages' lines the hash gives.
    pub agreement_held_pages: Option<f64>,
    /// Facts and cautions, in sentences (what cannot be known, and why).
    pub notes: Vec<String>,
}

impl RecordKind for HomeHashRecord {
    const KIND: &'static str = "home.hash";
}

impl HomeHashRecord {
    /// A record of `source` read from `input` with `status`, no hash and nothing counted yet.
    pub fn new(source: &str, input: &str, status: &str) -> HomeHashRecord {
        HomeHashRecord {
            source: source.into(),
            input: input.into(),
            status: status.into(),
            hash: None,
            pages: 0,
            lines: 0,
            blocks: 0,
            blocks_fitted: 0,
            lines_fitted: 0,
            agreement_fitted: None,
            lines_held: 0,
            agreement_held: None,
            pages_held: 0,
            agreement_held_pages: None,
            notes: Vec::new(),
        }
    }
}

/// Two maps of one part compared line by line (`home.compare`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HomeCompareRecord {
    /// The first map.
    pub a: String,
    /// The second map.
    pub b: String,
    /// What the lines compared were ("the measured lines of A", "random addresses both
    /// cover").
    pub lines_from: String,
    /// Lines compared.
    pub lines: u64,
    /// Share where both give the same slice number.
    pub agreement: f64,
    /// Share after the best one-to-one relabelling of B's numbers onto A's.
    pub agreement_relabelled: f64,
    /// The relabelling, `[a, b]` pairs, where it is not the identity.
    pub relabelling: Vec<[u8; 2]>,
    /// Facts and cautions, in sentences.
    pub notes: Vec<String>,
}

impl RecordKind for HomeCompareRecord {
    const KIND: &'static str = "home.compare";
}

/// How the lines of an access pattern spread over the slices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrideSpread {
    /// Distance between consecutive accesses, bytes.
    pub stride_bytes: u64,
    /// Lines the pattern touches.
    pub lines: u64,
    /// Slices they land on.
    pub slices_hit: u32,
    /// Lines on the busiest slice over the mean lines per slice (1 is perfect).
    pub imbalance: f64,
}

/// A buffer of N pages read at one stride within each page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCombination {
    /// Stride within each page, bytes.
    pub stride_bytes: u64,
    /// Pages in the buffer.
    pub pages: u32,
    /// Imbalance of the worst run of contiguous pages tried.
    pub contiguous_worst: f64,
    /// Median imbalance over the contiguous runs tried.
    pub contiguous_median: f64,
    /// First page of the worst run.
    pub worst_first_page: u64,
    /// Mean imbalance of random pages from the covered range (what an allocator that
    /// ignores the hash gets on average).
    pub random_mean: f64,
    /// Imbalance of the pages [`HomeConflictsRecord::advice`] chooses.
    pub chosen: f64,
    /// Those pages (first byte addresses), picked from the candidates in address order
    /// from the worst run's first page.
    pub chosen_pages: Vec<u64>,
}

/// Strides and page combinations whose lines concentrate on few slices (`home.conflicts`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HomeConflictsRecord {
    /// The hash analysed (its source).
    pub hash_from: String,
    /// Slices.
    pub slices: u32,
    /// Page size, bytes.
    pub page_bytes: u64,
    /// Power-of-two strides over the covered range.
    pub strides: Vec<StrideSpread>,
    /// Buffers of several pages read at a stride within each page.
    pub combinations: Vec<PageCombination>,
    /// What to do, in sentences.
    pub advice: Vec<String>,
    /// Facts and cautions, in sentences.
    pub notes: Vec<String>,
}

impl RecordKind for HomeConflictsRecord {
    const KIND: &'static str = "home.conflicts";
}
