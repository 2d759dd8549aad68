//! The pointer-chase kernel: writing a random cyclic chain of line addresses into a
//! region and the timed walk that follows it (the latency probes' inner loop). Like the
//! SIMD kernels beside it, this is raw memory access, so it is one of the two places in
//! the crate with `unsafe` (the other being the SIMD kernels themselves).

use crate::chase::{sequence, Order};
use numalab_topo::bind::Region;

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
