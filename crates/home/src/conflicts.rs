//! Which address patterns a slice hash crowds onto few slices, and which pages to use
//! instead (`numalab home conflicts`).
//!
//! A hash spreads consecutive lines evenly, but a pattern that keeps some address bits
//! fixed sees only the slices those bits allow. Two kinds of pattern are tried:
//!
//! - *strides*: 4,096 lines at a power-of-two stride from the hash's reference address,
//!   from one line up to the highest covered bit;
//! - *page combinations*: a buffer of N pages (1, 2, 4, ... up to `max_pages`) read at a
//!   stride within each page (1 KiB up to a sixteenth of the page). The slices a page's
//!   pattern hits depend on the page's permutation, so some sets of pages pile their
//!   lines onto the same subset (the snoop-filter and L3 conflicts on some combinations
//!   of contiguous 2 MiB pages that cost DGEMM and HPL several percent on Skylake-SP).
//!   Runs of N contiguous pages spread over the covered range are compared with N
//!   random pages (what an allocator that ignores the hash gets on average) and with the
//!   N pages [`choose_pages`] picks from the first 4N candidates.
//!
//! The measure is the *imbalance*: lines on the busiest slice over the mean per slice
//! (1 is perfect; random placement of few lines is above 1 too, which is why the random
//! pages are the baseline). A combination is a conflict when its worst contiguous run is
//! 1.5 times the random mean or more.

use crate::HomeError;
use numalab_records::home::slices::{
    HomeConflictsRecord, PageCombination, SliceHash, StrideSpread,
};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// Ratio of the worst contiguous run to the random mean that makes a conflict.
pub const CONFLICT_RATIO: f64 = 1.5;

/// What to try.
#[derive(Debug, Clone)]
pub struct ConflictOptions {
    /// Page size, bytes (2 MiB).
    pub page_bytes: u64,
    /// Largest buffer tried, pages (a power of two).
    pub max_pages: u32,
    /// Contiguous runs tried per combination.
    pub runs: usize,
    /// Random page sets per combination.
    pub trials: usize,
    /// Seed of the random pages.
    pub seed: u64,
}

impl Default for ConflictOptions {
    fn default() -> Self {
        ConflictOptions {
            page_bytes: 2 << 20,
            max_pages: 16,
            runs: 32,
            trials: 32,
            seed: 1,
        }
    }
}

impl ConflictOptions {
    /// `home conflicts`' flags as given: `--page-size` (a power of two of 4 KiB or
    /// more), `--max-pages` from 1 to 4096, `--runs` at least 1 (usage errors otherwise);
    /// the other settings are the defaults.
    pub fn from_flags(
        page_size: &str,
        max_pages: u32,
        runs: usize,
    ) -> Result<ConflictOptions, HomeError> {
        let page_bytes = crate::settings::page_size(page_size)?;
        if max_pages == 0 || max_pages > 4096 || runs == 0 {
            return Err(HomeError::Usage(
                "--max-pages must be from 1 to 4096 and --runs at least 1".into(),
            ));
        }
        Ok(ConflictOptions {
            page_bytes,
            max_pages,
            runs,
            ..ConflictOptions::default()
        })
    }
}

/// Lines on the busiest slice over the mean per slice.
pub fn imbalance(hist: &[u32], slices: u32) -> f64 {
    let total: u64 = hist.iter().map(|&c| u64::from(c)).sum();
    if total == 0 || slices == 0 {
        return 1.0;
    }
    f64::from(*hist.iter().max().unwrap_or(&0)) * f64::from(slices) / total as f64
}

/// Lines per slice of the lines at `stride` within the page at `page`.
pub fn page_histogram(h: &SliceHash, page: u64, stride: u64, page_bytes: u64) -> Vec<u32> {
    let mut hist = vec![0u32; h.slices as usize];
    let mut off = 0;
    while off < page_bytes {
        if let Some(s) = h.slice(page + off) {
            if let Some(c) = hist.get_mut(s as usize) {
                *c += 1;
            }
        }
        off += stride.max(1);
    }
    hist
}

/// From `candidates` (page addresses), `n` pages whose lines at `stride` spread over the
/// slices best: greedily, the page that keeps the busiest slice lightest, ties to the
/// lower address. What `numalab_home`'s allocator follows to avoid a conflict.
pub fn choose_pages(
    h: &SliceHash,
    candidates: &[u64],
    stride: u64,
    page_bytes: u64,
    n: usize,
) -> Vec<u64> {
    let hists: Vec<Vec<u32>> = candidates
        .iter()
        .map(|&p| page_histogram(h, p, stride, page_bytes))
        .collect();
    let mut sum = vec![0u32; h.slices as usize];
    let mut taken = vec![false; candidates.len()];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n.min(candidates.len()) {
        let best = (0..candidates.len())
            .filter(|&c| !taken[c])
            .min_by_key(|&c| {
                let max = sum
                    .iter()
                    .zip(&hists[c])
                    .map(|(a, b)| a + b)
                    .max()
                    .unwrap_or(0);
                let sq: u64 = sum
                    .iter()
                    .zip(&hists[c])
                    .map(|(a, b)| u64::from(a + b).pow(2))
                    .sum();
                (max, sq, candidates[c])
            });
        let Some(c) = best else { break };
        taken[c] = true;
        for (a, b) in sum.iter_mut().zip(&hists[c]) {
            *a += b;
        }
        out.push(candidates[c]);
    }
    out.sort_unstable();
    out
}

fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b >= 1024 && b.is_multiple_of(1024) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// The strides and page combinations of a hash (see the module).
pub fn analyse(
    h: &SliceHash,
    from: &str,
    o: &ConflictOptions,
) -> Result<HomeConflictsRecord, HomeError> {
    if !h.valid() || h.slices == 0 {
        return Err(HomeError::input(from, "the hash is not in the published shape (a base sequence of 16 to 16384 lines and one mask per permutation bit)"));
    }
    if !o.page_bytes.is_power_of_two()
        || o.page_bytes < 4096
        || o.max_pages == 0
        || o.runs == 0
        || o.trials == 0
    {
        return Err(HomeError::Usage("the page size must be a power of two of 4 KiB or more, and pages, runs and trials at least 1".into()));
    }
    let mut notes = Vec::new();
    let line = u64::from(h.line_bytes);
    let page_base = h.reference & !(o.page_bytes - 1);
    // Strides from one line up to the highest covered bit.
    let mut strides = Vec::new();
    let mut s = line;
    while s > 0 && s.trailing_zeros() <= h.high_bit.max(h.low_bit) {
        let mut hist = vec![0u32; h.slices as usize];
        let mut lines = 0u64;
        for j in 0..4096u64 {
            let Some(a) = j.checked_mul(s).and_then(|d| page_base.checked_add(d)) else {
                break;
            };
            match h.slice(a) {
                Some(x) => {
                    hist[x as usize] += 1;
                    lines += 1;
                }
                None => break,
            }
        }
        if lines >= 16 {
            strides.push(StrideSpread {
                stride_bytes: s,
                lines,
                slices_hit: hist.iter().filter(|&&c| c > 0).count() as u32,
                imbalance: imbalance(&hist, h.slices),
            });
        }
        s = s.wrapping_mul(2);
    }
    // Candidate pages: contiguous from the reference's page while the hash covers them.
    let mut candidates = Vec::new();
    let mut p = page_base;
    while candidates.len() < 4096 && h.covers(p) {
        candidates.push(p);
        match p.checked_add(o.page_bytes) {
            Some(q) => p = q,
            None => break,
        }
    }
    let page_number_bits = h.covered_bits & !(o.page_bytes - 1);
    if candidates.len() < 2 {
        notes.push(format!(
            "the hash covers no second contiguous page after {page_base:#x}: page combinations need maps of more pages"
        ));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(o.seed);
    let mut combinations = Vec::new();
    let mut stride = 1024u64.max(line);
    while candidates.len() >= 2 && stride <= o.page_bytes / 16 {
        let mut cache: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut hist_of = |p: u64| -> Vec<u32> {
            cache
                .entry(p)
                .or_insert_with(|| page_histogram(h, p, stride, o.page_bytes))
                .clone()
        };
        let mut n = 1u32;
        while n <= o.max_pages && (n as usize) <= candidates.len() {
            let nu = n as usize;
            let last_start = candidates.len() - nu;
            let runs = o.runs.min(last_start + 1);
            let mut run_imb: Vec<(f64, u64)> = (0..runs)
                .map(|r| {
                    let start = if runs == 1 {
                        0
                    } else {
                        r * last_start / (runs - 1)
                    };
                    let mut sum = vec![0u32; h.slices as usize];
                    for &pg in &candidates[start..start + nu] {
                        for (a, b) in sum.iter_mut().zip(hist_of(pg)) {
                            *a += b;
                        }
                    }
                    (imbalance(&sum, h.slices), candidates[start])
                })
                .collect();
            run_imb.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let (worst, worst_first) = run_imb[0];
            let median = run_imb[run_imb.len() / 2].0;
            let mut random = 0.0;
            for _ in 0..o.trials {
                let mut sum = vec![0u32; h.slices as usize];
                for _ in 0..nu {
                    let pg = page_base ^ (rng.random::<u64>() & page_number_bits);
                    for (a, b) in sum.iter_mut().zip(hist_of(pg)) {
                        *a += b;
                    }
                }
                random += imbalance(&sum, h.slices);
            }
            random /= o.trials as f64;
            let from_worst = candidates
                .iter()
                .position(|&c| c == worst_first)
                .unwrap_or(0);
            let pool: Vec<u64> = candidates[from_worst..]
                .iter()
                .take((4 * nu).max(64))
                .copied()
                .collect();
            let chosen_pages = choose_pages(h, &pool, stride, o.page_bytes, nu);
            let mut sum = vec![0u32; h.slices as usize];
            for &pg in &chosen_pages {
                for (a, b) in sum.iter_mut().zip(hist_of(pg)) {
                    *a += b;
                }
            }
            combinations.push(PageCombination {
                stride_bytes: stride,
                pages: n,
                contiguous_worst: worst,
                contiguous_median: median,
                worst_first_page: worst_first,
                random_mean: random,
                chosen: imbalance(&sum, h.slices),
                chosen_pages,
            });
            n *= 2;
        }
        stride *= 2;
    }
    let mut advice = Vec::new();
    let mut flagged: Vec<&PageCombination> = combinations
        .iter()
        .filter(|c| c.pages > 1 && c.contiguous_worst >= CONFLICT_RATIO * c.random_mean)
        .collect();
    flagged.sort_by(|a, b| {
        (b.contiguous_worst / b.random_mean)
            .total_cmp(&(a.contiguous_worst / a.random_mean))
            .then(a.stride_bytes.cmp(&b.stride_bytes))
    });
    for c in flagged.iter().take(3) {
        advice.push(format!(
            "A buffer of {} pages of {} read at a stride of {} within each page: the contiguous pages from {:#x} put {:.2}x the mean load on the busiest slice (pages at random: {:.2}x). Use the pages numalab_home::conflicts::choose_pages picks from the {} from there ({:.2}x): {}.",
            c.pages,
            fmt_bytes(o.page_bytes),
            fmt_bytes(c.stride_bytes),
            c.worst_first_page,
            c.contiguous_worst,
            c.random_mean,
            (4 * c.pages).max(64),
            c.chosen,
            c.chosen_pages.iter().map(|p| format!("{p:#x}")).collect::<Vec<_>>().join(", ")
        ));
    }
    if flagged.is_empty() {
        let top = combinations.iter().filter(|c| c.pages > 1).max_by(|a, b| {
            (a.contiguous_worst / a.random_mean).total_cmp(&(b.contiguous_worst / b.random_mean))
        });
        advice.push(match top {
            Some(c) => format!(
                "No contiguous page combination tried crowds its lines onto few slices beyond what random pages do (the largest ratio, {:.2}, is {} pages at a stride of {}): no pages need skipping.",
                c.contiguous_worst / c.random_mean,
                c.pages,
                fmt_bytes(c.stride_bytes)
            ),
            None => "No page combination could be tried.".into(),
        });
    }
    for st in &strides {
        if st.lines >= 4 * u64::from(h.slices) && st.slices_hit * 2 <= h.slices {
            advice.push(format!(
                "Lines {} apart land on {} of the {} slices ({:.2}x the mean load on the busiest): avoid that stride in arrays read in parallel, or pad the leading dimension by a line.",
                fmt_bytes(st.stride_bytes),
                st.slices_hit,
                h.slices,
                st.imbalance
            ));
        }
    }
    if !h.fully_covered() {
        notes.push(format!(
            "the hash is known for addresses that match {:#x} in the bits its data never varied; pages outside that are not tried",
            h.reference
        ));
    }
    Ok(HomeConflictsRecord {
        hash_from: from.into(),
        slices: h.slices,
        page_bytes: o.page_bytes,
        strides,
        combinations,
        advice,
        notes,
    })
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    #[test]
    fn conflict_flags_are_checked_in_order() {
        let o = ConflictOptions::from_flags("64KiB", 8, 4).unwrap();
        assert_eq!(
            (o.page_bytes, o.max_pages, o.runs, o.trials),
            (65536, 8, 4, 32)
        );
        let refused = |p: &str, m, r| {
            ConflictOptions::from_flags(p, m, r)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused("1000", 0, 0),
            "--page-size 1000: give a power of two of 4KiB or more"
        );
        for (m, r) in [(0, 1), (4097, 1), (16, 0)] {
            assert_eq!(
                refused("2MiB", m, r),
                "--max-pages must be from 1 to 4096 and --runs at least 1"
            );
        }
    }
}
