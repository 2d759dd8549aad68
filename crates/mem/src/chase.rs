//! Random cyclic pointer chains for latency probes.
//!
//! Each cache line of a working set holds the address of the next line to visit. The
//! visiting order is one cycle through every line, random so that no prefetcher can
//! guess the next address, and every load depends on the previous one, so the time
//! per step is the load-to-use latency of wherever the lines live.
//!
//! Two orders:
//! - [`Order::Global`] (default): every line in uniformly random order, what a
//!   performance engineer means by memory latency. With a working set well past the
//!   last-level cache nearly every load misses it, lands on a random DRAM row and, past
//!   the TLB's reach, also walks the page tables: the difference between base and huge
//!   pages in this order is the translation cost.
//! - [`Order::PageLocal`]: blocks of [`BLOCK_BYTES`] (4 KiB, whatever the page size) in
//!   random order, and the lines of each block in random order before moving to the
//!   next. Consecutive loads stay in one DRAM row and one page, so open rows,
//!   adjacent-line and streaming prefetchers and the TLB all help: a row-buffer- and
//!   prefetch-friendly order, faster than [`Order::Global`] by up to 3x, reported under
//!   its own name and never as memory latency. The block size is fixed so that base
//!   and huge pages are measured in the same order.

use numalab_topo::bind::Region;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Bytes of a block of [`Order::PageLocal`]: a 4 KiB base page on x86 and most Arm
/// kernels, and the same on every page kind, so that an order means one thing.
pub use numalab_records::mem::latency::BLOCK_BYTES;

pub use numalab_records::mem::latency::Order;

/// The visiting order of `lines` lines grouped in blocks (pages) of `per_block` lines:
/// a permutation of `0..lines`.
pub fn sequence(lines: usize, per_block: usize, order: Order, seed: u64) -> Vec<u32> {
    assert!(lines <= u32::MAX as usize, "too many lines for a chain");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out: Vec<u32> = Vec::with_capacity(lines);
    match order {
        Order::Global => {
            out.extend(0..lines as u32);
            out.shuffle(&mut rng);
        }
        Order::PageLocal => {
            let per_block = per_block.max(1);
            let blocks = lines.div_ceil(per_block);
            let mut block_order: Vec<u32> = (0..blocks as u32).collect();
            block_order.shuffle(&mut rng);
            let mut inner: Vec<u32> = Vec::with_capacity(per_block);
            for b in block_order {
                let first = b as usize * per_block;
                let last = (first + per_block).min(lines);
                inner.clear();
                inner.extend(first as u32..last as u32);
                inner.shuffle(&mut rng);
                out.extend_from_slice(&inner);
            }
        }
    }
    out
}

/// A pointer chain written into the first `lines * line_bytes` bytes of a region.
pub struct Chain<'a> {
    region: &'a Region,
    start: usize,
    lines: usize,
}

impl<'a> Chain<'a> {
    /// Writes a chain through `bytes` bytes of `region` (lines of `line_bytes`,
    /// randomized in blocks of `block_bytes`).
    pub fn build(
        region: &'a mut Region,
        bytes: usize,
        line_bytes: usize,
        block_bytes: usize,
        order: Order,
        seed: u64,
    ) -> Chain<'a> {
        let line_bytes = line_bytes.max(std::mem::size_of::<usize>());
        let lines = (bytes.min(region.len()) / line_bytes).max(1);
        let seq = sequence(lines, (block_bytes / line_bytes).max(1), order, seed);
        let base = region.as_mut_slice().as_mut_ptr();
        for w in 0..lines {
            let from = seq[w] as usize * line_bytes;
            let to = seq[(w + 1) % lines] as usize * line_bytes;
            // SAFETY: from and to are below lines * line_bytes <= region.len(), and
            // line_bytes >= 8 keeps each word inside its line; regions are page aligned
            // so every line start is aligned for usize.
            unsafe {
                base.add(from).cast::<usize>().write(base.add(to) as usize);
            }
        }
        let start = base as usize + seq[0] as usize * line_bytes;
        Chain {
            region,
            start,
            lines,
        }
    }

    /// Lines in the cycle.
    pub fn lines(&self) -> usize {
        self.lines
    }

    /// The address the chain starts from.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Follows the chain `steps` times from `from` (an address of the chain, e.g.
    /// [`Chain::start`] or what a previous walk returned); returns where it ended.
    #[inline(never)]
    pub fn walk(&self, from: usize, steps: u64) -> usize {
        let lo = self.region.as_slice().as_ptr() as usize;
        assert!(
            from >= lo && from < lo + self.region.len(),
            "walk must start inside the chain"
        );
        let mut p = from as *const usize;
        // SAFETY: every line of the chain holds the address of another line of the same
        // live region (written by build, and the region is borrowed for 'a).
        unsafe {
            let mut n = steps / 8;
            while n > 0 {
                p = *p as *const usize;
                p = *p as *const usize;
                p = *p as *const usize;
                p = *p as *const usize;
                p = *p as *const usize;
                p = *p as *const usize;
                p = *p as *const usize;
                p = *p as *const usize;
                n -= 1;
            }
            for _ in 0..steps % 8 {
                p = *p as *const usize;
            }
        }
        p as usize
    }

    /// Follows the whole chain once and returns the number of steps to come back and
    /// the number of distinct lines seen (both equal `lines` for a valid single cycle).
    pub fn verify(&self, line_bytes: usize) -> (usize, usize) {
        let lo = self.region.as_slice().as_ptr() as usize;
        let mut seen = vec![false; self.lines];
        let mut p = self.start;
        let mut steps = 0;
        let mut distinct = 0;
        loop {
            let idx = (p - lo) / line_bytes.max(8);
            if idx < seen.len() && !seen[idx] {
                seen[idx] = true;
                distinct += 1;
            }
            p = self.walk(p, 1);
            steps += 1;
            if p == self.start || steps > self.lines {
                break;
            }
        }
        (steps, distinct)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::bind::PageKind;

    #[test]
    fn sequences_are_permutations() {
        for order in [Order::PageLocal, Order::Global] {
            for lines in [1, 2, 63, 64, 65, 1000, 4096] {
                let mut s = sequence(lines, 64, order, 7);
                s.sort_unstable();
                assert_eq!(s, (0..lines as u32).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn page_local_order_stays_in_a_page_then_jumps_randomly() {
        let lines = 64 * 100;
        let s = sequence(lines, 64, Order::PageLocal, 1);
        // Exactly one page change per page (99 changes between 100 pages).
        let changes = s.windows(2).filter(|w| w[0] / 64 != w[1] / 64).count();
        assert_eq!(changes, 99);
        // Neither the pages nor the lines inside them are in address order.
        let sequential = s.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(sequential < lines / 10, "{sequential} sequential steps");
        let pages: Vec<u32> = s.iter().step_by(64).map(|l| l / 64).collect();
        assert!(pages.windows(2).filter(|w| w[1] == w[0] + 1).count() < 10);
        // A different seed, a different order; the same seed, the same order.
        assert_ne!(s, sequence(lines, 64, Order::PageLocal, 2));
        assert_eq!(s, sequence(lines, 64, Order::PageLocal, 1));
    }

    #[test]
    fn the_chain_is_one_cycle_over_all_lines() {
        for order in [Order::PageLocal, Order::Global] {
            for bytes in [64, 4096, 4096 * 3 + 640, 1 << 20] {
                let mut r = Region::new(bytes.max(4096), PageKind::Base).unwrap();
                let chain = Chain::build(&mut r, bytes, 64, 4096, order, 42);
                let lines = bytes / 64;
                assert_eq!(chain.lines(), lines);
                assert_eq!(chain.verify(64), (lines, lines), "{order:?} {bytes}");
                // Walking the cycle length returns to the start.
                assert_eq!(chain.walk(chain.start(), lines as u64), chain.start());
                assert_eq!(chain.walk(chain.start(), 3 * lines as u64), chain.start());
            }
        }
    }

    #[test]
    fn order_names_parse() {
        assert_eq!(Order::parse("page").unwrap(), Order::PageLocal);
        assert_eq!(Order::parse("GLOBAL").unwrap(), Order::Global);
        assert!(Order::parse("zigzag").is_err());
    }
}
