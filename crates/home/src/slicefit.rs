//! The published form of a slice hash recovered from whole-page maps: a base sequence
//! of `L` lines and the permutation select masks (see
//! [`numalab_records::home::slices`]).
//!
//! The method:
//!
//! 1. *The length.* For `L` = 16, 32, ... up to 16,384 (or the page), the maps are cut
//!    into aligned blocks of `L` lines and the first block of the lowest page is the
//!    reference `R`. A block *fits* when one xor `p` of the line index makes it `R`:
//!    `block[i] = R[i ^ p]` for at least 75% of the lines both know. `p` is found by
//!    voting (each of 48 lines spread over the block votes for the `p` that give its
//!    slice, through the inverse of `R`; ties are separated on 512 lines), then checked
//!    on every line. Each length is scored on up to 256 blocks spread over the maps: the
//!    mean share of a block's lines its permutation gives, where a block whose
//!    permutation contradicts the masks the others give (step 3) scores 0. A valid
//!    length's double is valid too and scores the same up to noise, so the base
//!    sequence's length is the shortest one at which 90% of the blocks fit and the score
//!    is within `max(0.02%, a quarter of the misread share)` of the best length's (shorter
//!    blocks of a non-linear hash are not permutations of one sequence, and those of a
//!    linear hash with more than `L` slices cannot be). On the 13 published Intel
//!    hashes, maps made from them give back the published length every time
//!    (`crates/home/tests/slices.rs`).
//! 2. *The permutations.* Every block's `p` relative to `R`. When `R` repeats itself
//!    under some xor (exactly, or nearly so), several `p` explain a block about equally
//!    well: they are all kept, best first, and step 3 takes the first one the masks so
//!    far allow.
//! 3. *The masks.* `p_j = M (a_j ^ a_0)` over GF(2), `a_j` the block's address bits from
//!    `log2(line) + log2(L)` up: Gaussian elimination, best-fitting blocks first, every
//!    further block checked against the masks so far (a block that contradicts them is
//!    counted and left out). Bits no block varied are unknown: they are left out of
//!    the masks and the hash says it covers only addresses that differ from the
//!    reference in varied bits.
//! 4. *The base sequence.* Each position's slice is the majority over every fitted
//!    line that falls on it (which corrects misread lines when pages are many).
//! 5. *Held back.* One line in 16 (by a hash of its address) of every fitted page, and one
//!    page in 8 when there are 8 or more, take no part in 1-4; the record reports the
//!    share of them the hash gives, beside the share of the fitted lines.

use crate::hash::Gf2Basis;
use crate::tables::PageMaps;
use crate::watch::Watch;
use numalab_records::home::slices::{HomeHashRecord, SliceHash, MAX_BASE, MIN_BASE};
use numalab_records::home::LINE_UNKNOWN;

/// Share of the lines a block and the reference both know that must agree.
pub const BLOCK_FIT: f64 = 0.75;
/// Share of the tested blocks that must fit for a length to be accepted.
pub const LENGTH_FIT: f64 = 0.9;
/// Blocks tested per length.
const TESTED_BLOCKS: usize = 256;
/// Lines of a block that vote for its permutation.
const VOTERS: usize = 48;
/// Fewest known lines a block needs to be tested.
const MIN_LINES: usize = 8;

/// Whether a line is held back from the fit (1 in 16, by a mix of its address).
pub fn held_line(address: u64) -> bool {
    let mut z = address.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) & 15 == 0
}

/// A block: its address and its lines' slices.
#[derive(Clone, Copy)]
struct Block<'a> {
    addr: u64,
    ids: &'a [u8],
}

/// What a block's best permutation gives.
#[derive(Clone, Debug)]
struct Fit {
    perm: usize,
    agree: usize,
    compared: usize,
    /// Other permutations that explain the block nearly as well (within 1% of its
    /// lines, or 2 lines), best first.
    alts: Vec<(usize, usize)>,
}

impl Fit {
    fn share(&self) -> f64 {
        self.agree as f64 / self.compared.max(1) as f64
    }
    fn fits(&self) -> bool {
        self.compared >= MIN_LINES && self.share() >= BLOCK_FIT
    }
}

/// The reference block and the inverse of its sequence.
struct Reference {
    r: Vec<u8>,
    /// positions of each slice in `r`.
    at: Vec<Vec<u32>>,
}

impl Reference {
    fn new(ids: &[u8]) -> Reference {
        let mut at: Vec<Vec<u32>> = vec![Vec::new(); 255];
        for (i, &s) in ids.iter().enumerate() {
            if s != LINE_UNKNOWN {
                at[s as usize].push(i as u32);
            }
        }
        Reference {
            r: ids.to_vec(),
            at,
        }
    }

    /// The best xor of a block onto the reference, checked on every line.
    fn fit(&self, b: &Block, line_bytes: u32, votes: &mut Vec<u16>) -> Fit {
        let l = self.r.len();
        votes.clear();
        votes.resize(l, 0);
        let known: Vec<usize> = (0..l)
            .filter(|&i| {
                b.ids[i] != LINE_UNKNOWN && !held_line(b.addr + (i as u64) * u64::from(line_bytes))
            })
            .collect();
        if known.len() < MIN_LINES {
            return Fit {
                perm: 0,
                agree: 0,
                compared: known.len(),
                alts: Vec::new(),
            };
        }
        let step = (known.len() / VOTERS).max(1);
        for &i in known.iter().step_by(step).take(VOTERS) {
            for &r in &self.at[b.ids[i] as usize] {
                let p = i ^ r as usize;
                votes[p] = votes[p].saturating_add(1);
            }
        }
        // The leading candidates of the vote, each checked on every line.
        let top = votes.iter().copied().max().unwrap_or(0);
        let mut cands: Vec<usize> = (0..l)
            .filter(|&p| votes[p] + 3 >= top && votes[p] > 0)
            .collect();
        if cands.len() > 32 {
            // A sequence that nearly repeats itself under many xors ties many
            // candidates on 48 lines: a wider sample of 512 lines separates them.
            let step = (known.len() / 512).max(1);
            let wide: Vec<usize> = known.iter().copied().step_by(step).collect();
            let mut by_wide: Vec<(usize, usize)> = cands
                .iter()
                .map(|&p| {
                    (
                        wide.iter().filter(|&&i| self.r[i ^ p] == b.ids[i]).count(),
                        p,
                    )
                })
                .collect();
            by_wide.sort_by_key(|&(n, p)| (std::cmp::Reverse(n), p));
            cands = by_wide.into_iter().take(32).map(|(_, p)| p).collect();
        }
        let mut checked: Vec<(usize, usize, usize)> = cands
            .into_iter()
            .map(|p| {
                let (mut agree, mut compared) = (0, 0);
                for &i in &known {
                    let want = self.r[i ^ p];
                    if want != LINE_UNKNOWN {
                        compared += 1;
                        agree += usize::from(want == b.ids[i]);
                    }
                }
                (p, agree, compared)
            })
            .collect();
        checked.sort_by(|a, b| {
            let (x, y) = (
                a.1 as f64 / a.2.max(1) as f64,
                b.1 as f64 / b.2.max(1) as f64,
            );
            y.total_cmp(&x).then(a.0.cmp(&b.0))
        });
        let Some(&(perm, agree, compared)) = checked.first() else {
            return Fit {
                perm: 0,
                agree: 0,
                compared: 0,
                alts: Vec::new(),
            };
        };
        let slack = (compared / 100).max(2);
        let alts = checked[1..]
            .iter()
            .filter(|c| c.1 + slack >= agree)
            .map(|c| (c.0, c.1))
            .collect();
        Fit {
            perm,
            agree,
            compared,
            alts,
        }
    }
}

fn blocks<'a>(pages: &[&'a (u64, Vec<u8>)], l: usize, line_bytes: u32) -> Vec<Block<'a>> {
    let mut out = Vec::new();
    for (base, ids) in pages {
        for (k, chunk) in ids.chunks_exact(l).enumerate() {
            out.push(Block {
                addr: base + (k * l) as u64 * u64::from(line_bytes),
                ids: chunk,
            });
        }
    }
    out
}

/// Recovers the published form of the hash behind whole-page maps (see the module).
pub fn recover(
    maps: &PageMaps,
    source: &str,
    input: &str,
    watch: &mut dyn Watch,
) -> HomeHashRecord {
    let mut rec = HomeHashRecord::new(source, input, "not-found");
    rec.pages = maps.pages.len();
    rec.lines = maps.known_lines();
    let lpp = maps.lines_per_page;
    let lb = maps.line_bytes;
    if !lpp.is_power_of_two() || lpp < MIN_BASE || !lb.is_power_of_two() || maps.pages.is_empty() {
        rec.notes.push(format!(
            "pages of {lpp} lines of {lb} bytes: a base sequence needs pages of at least {MIN_BASE} lines (powers of two)"
        ));
        return rec;
    }
    let hold_pages = maps.pages.len() >= 8;
    type Page = (u64, Vec<u8>);
    let mut fitted: Vec<&Page> = Vec::new();
    let mut held: Vec<&Page> = Vec::new();
    for (i, p) in maps.pages.iter().enumerate() {
        if hold_pages && i % 8 == 7 {
            held.push(p);
        } else {
            fitted.push(p);
        }
    }
    rec.pages_held = held.len();
    let slices = maps
        .pages
        .iter()
        .flat_map(|(_, ids)| ids.iter())
        .filter(|&&b| b != LINE_UNKNOWN)
        .map(|&b| u32::from(b) + 1)
        .max()
        .unwrap_or(0);
    if slices == 0 {
        rec.notes
            .push("no line of the maps has a slice number".into());
        return rec;
    }
    let max_len = MAX_BASE.min(lpp);
    let mut votes = Vec::new();
    // Every length is scored: a valid length's doubles are valid too (with a zero mask
    // for the new bit) and explain the blocks as well (up to noise, and the ambiguity of
    // long blocks that repeat themselves), so the base sequence is the shortest length
    // that explains them as well as the best length does.
    let mut scored: Vec<Length> = Vec::new();
    let mut l = MIN_BASE;
    while l <= max_len {
        if watch.stop() {
            rec.notes
                .push("interrupted while looking for the base sequence's length".into());
            return rec;
        }
        watch.step(
            "base sequence length",
            u64::from(l.trailing_zeros()),
            u64::from(max_len.trailing_zeros()),
        );
        let all = blocks(&fitted, l, lb);
        let Some(ri) = reference_block(&all) else {
            break;
        };
        scored.push(score_length(&all, ri, l, lb, &mut votes));
        l *= 2;
    }
    let baseline = scored
        .iter()
        .filter(|c| c.tested > 0)
        .map(|c| c.score)
        .max_by(f64::total_cmp);
    let tolerance = baseline.map_or(0.0, |b| (0.25 * (1.0 - b)).max(0.000_2));
    let pick = scored.iter().find(|c| {
        c.tested > 0
            && c.fit as f64 >= LENGTH_FIT * c.tested as f64
            && c.contradict * 20 <= c.fit
            && baseline.is_some_and(|b| c.score >= b - tolerance)
    });
    let chosen = pick
        .or_else(|| scored.iter().find(|c| c.tested == 0 && baseline.is_none()))
        .map(|c| (c.len, c.reference));
    let tried: Vec<String> = scored.iter().map(Length::describe).collect();
    let Some((l, ri)) = chosen else {
        rec.notes.push(format!(
            "no base sequence of {MIN_BASE} to {max_len} lines explains the maps: the lines of aligned blocks are not xor-permutations of one sequence by permutations linear in the address (lengths tried: {})",
            scored.iter().map(Length::describe).collect::<Vec<_>>().join(", ")
        ));
        return rec;
    };
    if scored.iter().any(|c| c.len == l && c.tested == 0) {
        rec.notes.push(format!("the maps hold one block of {l} lines: it is its own base sequence, and nothing is known of the masks"));
    }
    if l > MIN_BASE {
        rec.notes.push(format!(
            "the base sequence is {l} lines long: the shortest length whose blocks are permutations of one sequence, by permutations linear in the address, as well as the best length's are (each length with the share of lines the best permutation gives: {})",
            tried.join(", ")
        ));
    }
    let low = lb.trailing_zeros() + l.trailing_zeros();
    let all = blocks(&fitted, l, lb);
    let a0 = all[ri].addr;
    let reference = Reference::new(all[ri].ids);
    // Every block's permutation; best-fitting first into the elimination.
    let Some(fits) = block_fits(&all, ri, &reference, lb, &mut votes, watch) else {
        rec.notes
            .push("interrupted while fitting the permutations".into());
        return rec;
    };
    rec.blocks = all.len();
    let mut order: Vec<&(usize, Fit)> = fits.iter().filter(|(_, f)| f.fits()).collect();
    let order: Vec<(usize, &Fit)> = {
        order.sort_by(|a, b| b.1.share().total_cmp(&a.1.share()).then(a.0.cmp(&b.0)));
        order.into_iter().map(|(j, f)| (*j, f)).collect()
    };
    let mut eq = Gf2Basis::new();
    let mut covered = 0u64;
    let mut used = vec![false; all.len()];
    let mut contradicted = 0usize;
    for (j, f) in &order {
        let diff = (all[*j].addr ^ a0) >> low;
        if admit(&mut eq, diff, f).is_some() {
            used[*j] = true;
            covered |= diff << low;
        } else {
            contradicted += 1;
        }
    }
    let unfit = all.len() - order.len();
    rec.blocks_fitted = used.iter().filter(|&&u| u).count();
    if unfit > 0 {
        rec.notes.push(format!(
            "{unfit} of {} blocks are no permutation of the base sequence (fewer than {:.0}% of their lines agree, or too few lines known) and were left out",
            all.len(),
            100.0 * BLOCK_FIT
        ));
    }
    if contradicted > 0 {
        rec.notes.push(format!(
            "{contradicted} blocks' permutations contradict the masks the other blocks give and were left out"
        ));
    }
    if contradicted * 20 > rec.blocks_fitted.max(1) {
        rec.notes.push("the permutations are not a linear function of the address bits: no set of masks explains them".into());
        return rec;
    }
    let bits = l.trailing_zeros() as usize;
    let masks: Vec<u64> = eq.solve(bits).into_iter().map(|x| x << low).collect();
    let determined = eq.dim() == covered.count_ones() as usize;
    let high = if covered == 0 {
        low.saturating_sub(1)
    } else {
        63 - covered.leading_zeros()
    };
    let mut hash = SliceHash {
        slices,
        line_bytes: lb,
        base_sequence: vec![LINE_UNKNOWN; l],
        low_bit: low,
        high_bit: high,
        masks,
        covered_bits: covered,
        reference: a0,
        determined,
    };
    // The base sequence: majority of every fitted line at its position.
    hash.base_sequence = base_sequence(&hash, &all, &used, slices as usize);
    let unseen = hash
        .base_sequence
        .iter()
        .filter(|&&b| b == LINE_UNKNOWN)
        .count();
    if unseen > 0 {
        rec.notes.push(format!("{unseen} of the base sequence's {l} positions were never seen: the slice of lines that fall on them is unknown"));
    }
    let missing: Vec<String> = (0..slices as u8)
        .filter(|s| !hash.base_sequence.contains(s))
        .map(|s| s.to_string())
        .collect();
    if !missing.is_empty() {
        rec.notes.push(format!(
            "slice number(s) {} never appear in the base sequence",
            missing.join(", ")
        ));
    }
    // What the pages varied and what they did not.
    let page_bits = lb.trailing_zeros() + lpp.trailing_zeros();
    let never: Vec<u32> = (low..=high.max(page_bits))
        .filter(|&b| covered >> b & 1 == 0)
        .collect();
    if !never.is_empty() {
        rec.notes.push(format!(
            "address bit(s) {} up to the highest varied bit {high} were never varied: the masks leave them out and the hash is known only for addresses that match page {a0:#x} there",
            numalab_records::home::bit_ranges(never.iter().fold(0u64, |m, &b| m | 1 << b))
        ));
    }
    if !determined {
        rec.notes.push(format!(
            "the pages vary {} address bits but only {} independent combinations of them: the masks are one solution consistent with every page, exact for addresses whose difference from page {a0:#x} is a combination of the measured ones",
            covered.count_ones(),
            eq.dim()
        ));
    }
    if hash.masks.iter().all(|&m| m == 0) && rec.blocks > 1 {
        rec.notes
            .push("every block is the base sequence unpermuted: the masks are all zero".into());
    }
    // Agreement.
    score_agreement(&mut rec, &hash, &fitted, &held);
    rec.status = "recovered".into();
    rec.hash = Some(hash);
    rec
}

/// Every block's permutation of the reference block `ri` (itself: the identity), in
/// block order; `None` if the watch asked to stop.
fn block_fits(
    all: &[Block],
    ri: usize,
    reference: &Reference,
    lb: u32,
    votes: &mut Vec<u16>,
    watch: &mut dyn Watch,
) -> Option<Vec<(usize, Fit)>> {
    let mut fits: Vec<(usize, Fit)> = Vec::with_capacity(all.len());
    for (j, b) in all.iter().enumerate() {
        if j % 4096 == 0 {
            watch.step("permutations", j as u64, all.len() as u64);
            if watch.stop() {
                return None;
            }
        }
        let f = if j == ri {
            let n = b
                .ids
                .iter()
                .enumerate()
                .filter(|&(i, &s)| {
                    s != LINE_UNKNOWN && !held_line(b.addr + i as u64 * u64::from(lb))
                })
                .count();
            Fit {
                perm: 0,
                agree: n,
                compared: n,
                alts: Vec::new(),
            }
        } else {
            reference.fit(b, lb, votes)
        };
        fits.push((j, f));
    }
    Some(fits)
}

/// The base sequence: at each position, the slice most of the `used` blocks' lines there
/// have (the lowest on a tie; `LINE_UNKNOWN` where no line was seen), under the
/// permutations `hash` gives them.
fn base_sequence(hash: &SliceHash, all: &[Block], used: &[bool], n: usize) -> Vec<u8> {
    let l = hash.base_sequence.len();
    let lb = hash.line_bytes;
    let mut sequence = vec![LINE_UNKNOWN; l];
    let mut count = vec![0u32; l * n];
    for (j, b) in all.iter().enumerate() {
        if !used[j] {
            continue;
        }
        let p = hash.permutation(b.addr);
        for (i, &s) in b.ids.iter().enumerate() {
            if s != LINE_UNKNOWN && !held_line(b.addr + i as u64 * u64::from(lb)) {
                count[(i ^ p) * n + s as usize] += 1;
            }
        }
    }
    for (pos, slot) in sequence.iter_mut().enumerate() {
        let row = &count[pos * n..(pos + 1) * n];
        if let Some((s, &c)) = row
            .iter()
            .enumerate()
            .max_by_key(|&(s, &c)| (c, std::cmp::Reverse(s)))
        {
            if c > 0 {
                *slot = s as u8;
            }
        }
    }
    sequence
}

/// The hash's agreement with the lines of the fitted pages (apart and on held-back
/// lines) and of the held-back pages, into `rec`, with a note on held-back pages the
/// hash cannot say.
fn score_agreement(
    rec: &mut HomeHashRecord,
    hash: &SliceHash,
    fitted: &[&(u64, Vec<u8>)],
    held: &[&(u64, Vec<u8>)],
) {
    let lb = hash.line_bytes;
    let score = |pages: &[&(u64, Vec<u8>)], held_only: Option<bool>| -> (u64, u64) {
        let (mut agree, mut n) = (0u64, 0u64);
        for (base, ids) in pages {
            for (i, &s) in ids.iter().enumerate() {
                let a = base + i as u64 * u64::from(lb);
                if s == LINE_UNKNOWN || held_only.is_some_and(|h| h != held_line(a)) {
                    continue;
                }
                n += 1;
                agree += u64::from(hash.slice(a) == Some(s));
            }
        }
        (agree, n)
    };
    let share = |(a, n): (u64, u64)| (n > 0).then(|| a as f64 / n as f64);
    let fit = score(fitted, Some(false));
    rec.lines_fitted = fit.1;
    rec.agreement_fitted = share(fit);
    let hl = score(fitted, Some(true));
    rec.lines_held = hl.1;
    rec.agreement_held = share(hl);
    if !held.is_empty() {
        let hp = score(held, None);
        rec.agreement_held_pages = share(hp);
        let outside = held.iter().filter(|(a, _)| !hash.covers(*a)).count();
        if outside > 0 {
            rec.notes.push(format!(
                "{outside} of the {} held-back pages differ from the fitted pages in address bits those never varied: the hash cannot say their slices",
                held.len()
            ));
        }
    }
}

/// Adds a block's equation `masks . diff = perm` with the first of its permutations
/// (best, then the near-equal ones) that the equations so far allow, and gives the lines
/// that permutation explains; `None` when none is allowed.
fn admit(eq: &mut Gf2Basis, diff: u64, f: &Fit) -> Option<usize> {
    let (rest, _) = eq.reduce(diff, 0);
    if rest != 0 {
        eq.insert(diff, f.perm as u64);
        return Some(f.agree);
    }
    std::iter::once((f.perm, f.agree))
        .chain(f.alts.iter().copied())
        .find(|&(p, _)| eq.reduce(diff, p as u64).1 == 0)
        .map(|(_, agree)| agree)
}

/// How well one length explains the blocks.
struct Length {
    len: usize,
    reference: usize,
    tested: usize,
    fit: usize,
    contradict: usize,
    /// Mean share of a tested block's lines its permutation gives (0 for blocks whose
    /// permutation contradicts the masks of the others).
    score: f64,
}

impl Length {
    fn describe(&self) -> String {
        format!(
            "{} ({:.1}%; {} of {} blocks fit{})",
            self.len,
            100.0 * self.score,
            self.fit,
            self.tested,
            if self.contradict > 0 {
                format!(", {} by permutations no masks give", self.contradict)
            } else {
                String::new()
            }
        )
    }
}

/// Up to [`TESTED_BLOCKS`] blocks spread over the maps, fitted onto the reference.
fn score_length(all: &[Block], ri: usize, l: usize, lb: u32, votes: &mut Vec<u16>) -> Length {
    let reference = Reference::new(all[ri].ids);
    let candidates: Vec<usize> = (0..all.len()).filter(|&j| j != ri).collect();
    let step = candidates.len().div_ceil(TESTED_BLOCKS).max(1);
    let low = lb.trailing_zeros() + l.trailing_zeros();
    let mut eq = Gf2Basis::new();
    let mut out = Length {
        len: l,
        reference: ri,
        tested: 0,
        fit: 0,
        contradict: 0,
        score: 0.0,
    };
    let mut fits: Vec<(usize, Fit)> = Vec::new();
    for &j in candidates.iter().step_by(step) {
        let f = reference.fit(&all[j], lb, votes);
        if f.compared < MIN_LINES {
            continue;
        }
        out.tested += 1;
        fits.push((j, f));
    }
    fits.sort_by(|a, b| b.1.share().total_cmp(&a.1.share()).then(a.0.cmp(&b.0)));
    let mut total = 0.0;
    for (j, f) in fits {
        if !f.fits() {
            total += f.share();
            continue;
        }
        out.fit += 1;
        let diff = (all[j].addr ^ all[ri].addr) >> low;
        if let Some(agree) = admit(&mut eq, diff, &f) {
            total += agree as f64 / f.compared.max(1) as f64;
        } else {
            out.contradict += 1;
        }
    }
    out.score = total / out.tested.max(1) as f64;
    out
}

/// The block to use as the reference: the first with three quarters of its lines known,
/// else the one with the most.
fn reference_block(all: &[Block]) -> Option<usize> {
    let known = |b: &Block| b.ids.iter().filter(|&&s| s != LINE_UNKNOWN).count();
    all.iter()
        .position(|b| 4 * known(b) >= 3 * b.ids.len())
        .or_else(|| (0..all.len()).max_by_key(|&j| (known(&all[j]), std::cmp::Reverse(j))))
        .filter(|&j| known(&all[j]) > 0)
}

/// The published form of a recovered GF(2) hash, over the pages a map measured: every
/// line of those pages predicted by the hash and the result fitted as imported maps are.
/// `None` when the hash does not predict (not recovered, no physical addresses) or no
/// base sequence explains it.
pub fn of_fit(rec: &numalab_records::home::HomeMapRecord) -> Option<SliceHash> {
    let h = rec.home_hash.as_ref()?;
    let line = u64::from(rec.line_bytes);
    let lpp = (rec.page_bytes / line.max(1)) as usize;
    let mut pages: Vec<(u64, Vec<u8>)> = Vec::new();
    for p in &rec.pages {
        let base = p.phys? - p.phys? % rec.page_bytes.max(1);
        let ids: Option<Vec<u8>> = (0..lpp)
            .map(|i| h.predict(base + i as u64 * line))
            .collect();
        pages.push((base, ids?));
    }
    pages.sort_by_key(|p| p.0);
    pages.dedup_by_key(|p| p.0);
    let maps = PageMaps {
        line_bytes: rec.line_bytes,
        lines_per_page: lpp,
        pages,
    };
    let out = recover(&maps, "home.map", "", &mut crate::watch::Quiet);
    out.hash
        .filter(|_| out.agreement_fitted.is_some_and(|a| a >= 0.999))
}
