//! Physical addresses of the buffer's pages from `/proc/self/pagemap`.

use numalab_topo::bind::Region;

/// The message [`BufferInfo::phys_note`] carries when pagemap hides frame numbers.
pub const PHYS_NEED_ROOT: &str = "physical addresses need root (CAP_SYS_ADMIN) to read /proc/self/pagemap; without them the hash is fitted on page offsets only";

/// The frame number of a `/proc/self/pagemap` entry: bit 63 present, bits 0-54 the PFN
/// (which reads as 0 without CAP_SYS_ADMIN). `None` when the page is not present.
pub fn pagemap_pfn(entry: u64) -> Option<u64> {
    (entry >> 63 & 1 == 1).then_some(entry & ((1u64 << 55) - 1))
}

/// Physical addresses of a buffer's pages.
pub(super) enum PhysPages {
    /// One address per page; `contiguous`: each page is one physically contiguous,
    /// aligned block (always true for base pages).
    Known { phys: Vec<u64>, contiguous: bool },
    /// Frame numbers read as 0: no CAP_SYS_ADMIN.
    Hidden,
    /// This page (index) was not present.
    Absent(usize),
}

/// The physical address of each `page_bytes` page of `region` (`base`: the base page size).
pub(super) fn page_phys(
    region: &Region,
    page_bytes: usize,
    base: usize,
) -> std::io::Result<PhysPages> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open("/proc/self/pagemap")?;
    let start = region.as_slice().as_ptr() as usize;
    let pages = region.len() / page_bytes;
    let per = page_bytes / base;
    let entry_at = |vaddr: usize| -> std::io::Result<u64> {
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, (vaddr / base * 8) as u64)?;
        Ok(u64::from_ne_bytes(b))
    };
    let mut pfns = Vec::with_capacity(pages);
    let mut contiguous = true;
    if per == 1 {
        // Base pages: read the entries in chunks.
        let mut raw = vec![0u8; pages * 8];
        let off = (start / base * 8) as u64;
        for (c, chunk) in raw.chunks_mut(1 << 16).enumerate() {
            f.read_exact_at(chunk, off + (c << 16) as u64)?;
        }
        for (i, e) in raw.chunks_exact(8).enumerate() {
            let e = u64::from_ne_bytes(e.try_into().expect("8 bytes"));
            match pagemap_pfn(e) {
                Some(p) => pfns.push(p),
                None => return Ok(PhysPages::Absent(i)),
            }
        }
    } else {
        for i in 0..pages {
            let va = start + i * page_bytes;
            let (Some(first), Some(last)) = (
                pagemap_pfn(entry_at(va)?),
                pagemap_pfn(entry_at(va + page_bytes - base)?),
            ) else {
                return Ok(PhysPages::Absent(i));
            };
            if !first.is_multiple_of(per as u64) || last != first + per as u64 - 1 {
                contiguous = false;
            }
            pfns.push(first);
        }
    }
    if pfns.iter().all(|&p| p == 0) {
        return Ok(PhysPages::Hidden);
    }
    Ok(PhysPages::Known {
        phys: pfns.into_iter().map(|p| p * base as u64).collect(),
        contiguous,
    })
}
