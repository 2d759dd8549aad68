//! The perf ring buffer and AUX area of one event's file descriptor, mapped with
//! mmap(2) and read through the head and tail words of the shared header page
//! (`struct perf_event_mmap_page`): the crate's second module allowed `unsafe`.
//! perf-event2 maps the ring buffer but not the AUX area, which Arm SPE writes into.
//!
//! Protocol (include/uapi/linux/perf_event.h): map the header page and 2^n data pages
//! at offset 0; write `aux_offset` (past the data pages) and `aux_size` (2^m pages)
//! into the header; map the AUX area at `aux_offset`, writable so that the kernel does
//! not overwrite unread data. The kernel advances `data_head` / `aux_head`; the reader
//! copies what lies between its tail and the head (read with acquire ordering) and
//! then publishes the new tail (release ordering).

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};

/// Offsets of the header's fields (struct perf_event_mmap_page; the same on every
/// architecture: 1024 is after the 116 reserved u64 that pad the first part).
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const AUX_HEAD: usize = 1056;
const AUX_TAIL: usize = 1064;
const AUX_OFFSET: usize = 1072;
const AUX_SIZE: usize = 1080;

/// A mapped ring buffer with its AUX area; unmapped when dropped.
pub(crate) struct AuxRing {
    base: *mut u8,
    base_len: usize,
    page: usize,
    data_len: usize,
    aux: *mut u8,
    aux_len: usize,
}

fn mmap(fd: RawFd, len: usize, offset: usize) -> io::Result<*mut u8> {
    let off = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mmap offset too large"))?;
    // SAFETY: a new shared mapping chosen by the kernel (addr NULL), not overlapping any
    // memory of ours; the result is checked against MAP_FAILED before any use.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            off,
        )
    };
    if p == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(p.cast())
    }
}

impl AuxRing {
    /// Maps `data_pages` data pages and `aux_pages` AUX pages (powers of two) of the
    /// event `fd`. The fd must stay open while the ring lives (the mapping itself
    /// keeps the event alive, but the caller owns the fd).
    pub(crate) fn map(fd: RawFd, data_pages: usize, aux_pages: usize) -> io::Result<AuxRing> {
        if !data_pages.is_power_of_two() || !aux_pages.is_power_of_two() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "ring sizes must be powers of two pages",
            ));
        }
        let page = usize::try_from(crate::sys::sysconf_page_size())
            .ok()
            .filter(|&p| p >= 4096)
            .ok_or_else(|| io::Error::other("the page size is unknown"))?;
        let data_len = data_pages * page;
        let base_len = page + data_len;
        let aux_len = aux_pages * page;
        let base = mmap(fd, base_len, 0)?;
        let mut ring = AuxRing {
            base,
            base_len,
            page,
            data_len,
            aux: std::ptr::null_mut(),
            aux_len: 0,
        };
        ring.word(AUX_OFFSET)
            .store(base_len as u64, Ordering::SeqCst);
        ring.word(AUX_SIZE).store(aux_len as u64, Ordering::SeqCst);
        ring.aux = mmap(fd, aux_len, base_len)?;
        ring.aux_len = aux_len;
        Ok(ring)
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.page);
        // SAFETY: `offset` is one of the header's u64 fields: 8-aligned (the mapping is
        // page-aligned) and inside the header page, which stays mapped while `self`
        // lives (the borrow ties the reference to it). The kernel writes these words
        // concurrently, hence the atomic type (same size and alignment as u64).
        unsafe { &*self.base.add(offset).cast::<AtomicU64>() }
    }

    /// Appends the bytes between `tail` and `head` of the ring at `ring` (`len` bytes,
    /// a power of two) to `out`; when the writer is more than `len` ahead, the last
    /// `len` bytes. Returns how many bytes were skipped as overwritten.
    fn copy(ring: *const u8, len: usize, tail: u64, head: u64, out: &mut Vec<u8>) -> u64 {
        let mut avail = head.wrapping_sub(tail);
        let mut skipped = 0;
        if avail > len as u64 {
            skipped = avail - len as u64;
            avail = len as u64;
        }
        let from = (head.wrapping_sub(avail) % len as u64) as usize;
        let avail = avail as usize;
        let first = avail.min(len - from);
        // SAFETY: `ring` maps `len` bytes for as long as the caller's ring lives; the
        // ranges [from, from + first) and [0, avail - first) lie inside it (from < len,
        // first <= len - from, avail <= len). The kernel does not write these bytes
        // until the reader publishes a tail past them, which happens after the copy.
        unsafe {
            out.extend_from_slice(std::slice::from_raw_parts(ring.add(from), first));
            out.extend_from_slice(std::slice::from_raw_parts(ring, avail - first));
        }
        skipped
    }

    /// Appends the ring buffer's new records (whole records: the kernel publishes
    /// `data_head` at record boundaries) to `out`, then frees their space.
    pub(crate) fn read_data(&mut self, out: &mut Vec<u8>) {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        // SAFETY: the data pages follow the header page inside the base mapping.
        let data = unsafe { self.base.add(self.page) };
        Self::copy(data, self.data_len, tail, head, out);
        self.word(DATA_TAIL).store(head, Ordering::Release);
    }

    /// Appends the AUX area's new bytes to `out`, then frees their space. Returns how
    /// many bytes were skipped as overwritten (0 unless the kernel ran over).
    pub(crate) fn read_aux(&mut self, out: &mut Vec<u8>) -> u64 {
        let head = self.word(AUX_HEAD).load(Ordering::Acquire);
        let tail = self.word(AUX_TAIL).load(Ordering::Relaxed);
        let skipped = Self::copy(self.aux, self.aux_len, tail, head, out);
        self.word(AUX_TAIL).store(head, Ordering::Release);
        skipped
    }
}

impl Drop for AuxRing {
    fn drop(&mut self) {
        if !self.aux.is_null() {
            // SAFETY: `aux` was returned by mmap with `aux_len` bytes and is unmapped
            // once; no reference into it outlives `self`.
            unsafe { libc::munmap(self.aux.cast(), self.aux_len) };
        }
        // SAFETY: `base` was returned by mmap with `base_len` bytes and is unmapped
        // once; references from `word` borrow `self` and cannot outlive it.
        unsafe { libc::munmap(self.base.cast(), self.base_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_wrap_around_and_overruns() {
        let ring: Vec<u8> = (0..16).collect();
        let mut out = Vec::new();
        // tail 12, head 20: bytes 12..16 then 0..4.
        assert_eq!(AuxRing::copy(ring.as_ptr(), 16, 12, 20, &mut out), 0);
        assert_eq!(out, [12, 13, 14, 15, 0, 1, 2, 3]);
        // Nothing new.
        out.clear();
        assert_eq!(AuxRing::copy(ring.as_ptr(), 16, 20, 20, &mut out), 0);
        assert!(out.is_empty());
        // The writer 20 bytes ahead of a 16-byte ring: the last 16, 4 skipped.
        assert_eq!(AuxRing::copy(ring.as_ptr(), 16, 0, 20, &mut out), 4);
        assert_eq!(out, [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3]);
    }

    #[test]
    fn sizes_must_be_powers_of_two() {
        let e = AuxRing::map(-1, 3, 4).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        // A bad descriptor: mmap's error, nothing mapped.
        let e = AuxRing::map(-1, 2, 4).err().unwrap();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }
}
