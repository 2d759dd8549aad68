//! The anonymous memory mapping ([`Region`]) and the memory system calls on it (`mmap`,
//! `madvise`, `munmap`, `move_pages`, `sysconf`): every `unsafe` block of the crate's
//! system calls is here, behind safe functions and methods. [`crate::bind`] re-exports
//! the public names.

use crate::error::TopoError;
use numalab_schema::memory::PageKind;

/// An anonymous memory mapping, page aligned, unmapped on drop.
#[derive(Debug)]
pub struct Region {
    ptr: *mut u8,
    len: usize,
    page_kind: PageKind,
    page_bytes: usize,
}

// SAFETY: the mapping is owned by the Region; access goes through &/&mut borrows.
unsafe impl Send for Region {}
// SAFETY: shared access is read-only through &[u8].
unsafe impl Sync for Region {}

fn os_err(call: &str, remedy: &str) -> TopoError {
    let e = std::io::Error::last_os_error();
    TopoError::Binding {
        call: call.into(),
        detail: numalab_schema::text::io_reason(&e),
        remedy: remedy.into(),
        unsupported: matches!(
            e.raw_os_error(),
            Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::EOPNOTSUPP)
        ),
    }
}

/// The base page size of this system.
pub fn base_page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}

impl Region {
    /// The start address of the mapping, as a number (the fake placer's key).
    pub(crate) fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// Maps `len` bytes (rounded up to whole pages). Nothing is touched yet, so a
    /// policy set with [`crate::bind::Placer::bind_region`] before the first write decides placement.
    pub fn new(len: usize, page_kind: PageKind) -> Result<Region, TopoError> {
        if len == 0 {
            return Err(TopoError::Selection(
                "a memory region of 0 bytes was asked for".into(),
            ));
        }
        let base = base_page_size();
        let (page_bytes, extra_flags) = match page_kind {
            PageKind::Base | PageKind::Transparent => (base, 0),
            PageKind::HugeTlb(size) => {
                if !size.is_power_of_two() || size < base as u64 {
                    return Err(TopoError::Selection(format!(
                        "{size} is not a huge page size"
                    )));
                }
                let shift = size.trailing_zeros() as libc::c_int;
                (
                    size as usize,
                    libc::MAP_HUGETLB | (shift << libc::MAP_HUGE_SHIFT),
                )
            }
        };
        // THP needs 2 MiB alignment to be useful: over-map and trim.
        let align = if page_kind == PageKind::Transparent {
            2 << 20
        } else {
            page_bytes
        };
        let len = len.div_ceil(page_bytes) * page_bytes;
        let map_len = if align > page_bytes { len + align } else { len };
        // SAFETY: anonymous private mapping; the result is checked below.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | extra_flags,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            let remedy = match page_kind {
                PageKind::HugeTlb(size) => format!(
                    "reserve huge pages first, e.g. `echo N > /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages`, or use transparent huge pages",
                    size / 1024
                ),
                _ => "free some memory or ask for a smaller size".into(),
            };
            return Err(os_err(&format!("mmap({len} bytes)"), &remedy));
        }
        let mut ptr = raw.cast::<u8>();
        if map_len > len {
            let addr = ptr as usize;
            let aligned = addr.div_ceil(align) * align;
            let head = aligned - addr;
            let tail = map_len - head - len;
            // SAFETY: trimming parts of our own fresh mapping.
            unsafe {
                if head > 0 {
                    libc::munmap(raw, head);
                }
                if tail > 0 {
                    libc::munmap((aligned + len) as *mut libc::c_void, tail);
                }
            }
            ptr = aligned as *mut u8;
        }
        let advice = match page_kind {
            PageKind::Transparent => Some(libc::MADV_HUGEPAGE),
            PageKind::Base => Some(libc::MADV_NOHUGEPAGE),
            PageKind::HugeTlb(_) => None,
        };
        if let Some(advice) = advice {
            // SAFETY: advising our own mapping; failure only means no THP control.
            unsafe {
                libc::madvise(ptr.cast(), len, advice);
            }
        }
        Ok(Region {
            ptr,
            len,
            page_kind,
            page_bytes,
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty (never: regions have at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kind of pages asked for.
    pub fn page_kind(&self) -> PageKind {
        self.page_kind
    }

    /// The size of the pages the region is managed in (base page size unless hugetlbfs).
    pub fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.len / self.page_bytes
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr/len describe our live mapping.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr/len describe our live mapping, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// A typed view (the region is page aligned, so any primitive type fits).
    pub fn as_mut_typed<T: bytemuck_like::Plain>(&mut self) -> &mut [T] {
        let n = self.len / std::mem::size_of::<T>();
        // SAFETY: page alignment satisfies T's alignment; T is plain old data for
        // which every bit pattern (including zero pages) is valid.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<T>(), n) }
    }

    /// A typed read-only view.
    pub fn as_typed<T: bytemuck_like::Plain>(&self) -> &[T] {
        let n = self.len / std::mem::size_of::<T>();
        // SAFETY: as for as_mut_typed.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<T>(), n) }
    }

    /// Writes one byte per page so that every page is allocated now, by this thread.
    pub fn touch(&mut self) {
        let step = self.page_bytes;
        let s = self.as_mut_slice();
        let mut i = 0;
        while i < s.len() {
            // SAFETY: i < len; volatile so the touch is not optimised away.
            unsafe { std::ptr::write_volatile(s.as_mut_ptr().add(i), 0) };
            i += step;
        }
    }

    /// Bytes of the region backed by transparent huge pages, from `/proc/self/smaps`.
    pub fn thp_bytes(&self) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let start = self.ptr as usize;
        let end = start + self.len;
        let mut total = 0u64;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = a < end && b > start;
                        continue;
                    }
                }
            }
            if inside {
                if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                    total += crate::system::kb_bytes(rest)?;
                }
            }
        }
        Some(total)
    }

    pub(crate) fn page_addresses(&self) -> Vec<*mut libc::c_void> {
        (0..self.pages())
            .map(|i| self.ptr.wrapping_add(i * self.page_bytes).cast())
            .collect()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly our mapping.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// Marker for plain-old-data element types of typed region views.
pub mod bytemuck_like {
    /// Types for which every bit pattern is valid and that need no drop.
    ///
    /// # Safety
    /// Implement only for such types.
    pub unsafe trait Plain: Copy + 'static {}
    // SAFETY: primitive numbers accept every bit pattern.
    unsafe impl Plain for u8 {}
    // SAFETY: as above.
    unsafe impl Plain for u32 {}
    // SAFETY: as above.
    unsafe impl Plain for u64 {}
    // SAFETY: as above.
    unsafe impl Plain for usize {}
    // SAFETY: as above.
    unsafe impl Plain for f32 {}
    // SAFETY: as above.
    unsafe impl Plain for f64 {}
}

/// `move_pages` on this process's pages: to `nodes` when given, else only asking where
/// each page is; the per-page status in `status`.
///
/// # Panics
/// When `status`, or `nodes` when given, is not as long as `pages`.
pub(crate) fn move_pages_syscall(
    pages: &[*mut libc::c_void],
    nodes: Option<&[libc::c_int]>,
    status: &mut [libc::c_int],
) -> Result<(), std::io::Error> {
    assert_eq!(status.len(), pages.len(), "a move_pages status per page");
    assert!(
        nodes.is_none_or(|n| n.len() == pages.len()),
        "a move_pages node per page"
    );
    // SAFETY: the kernel reads pages.len() entries of `pages` and of `nodes` (null or
    // as long, asserted above) and writes as many of `status` (as long, asserted); pid 0
    // is this process, and moving its pages does not change their contents.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_long,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes.map_or(std::ptr::null(), |n| n.as_ptr()),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mapping no address space holds (1 EiB) fails with the OS error in words (issue
    /// 50), not std's "Cannot allocate memory (os error 12)".
    #[test]
    fn a_failed_mapping_says_the_os_error_in_words() {
        let Err(e) = Region::new(1 << 60, PageKind::Base) else {
            panic!("1 EiB was mapped");
        };
        let text = e.to_string();
        assert!(text.starts_with("mmap("), "{text}");
        assert!(!text.contains("os error"), "{text}");
        assert!(
            text.ends_with("free some memory or ask for a smaller size"),
            "{text}"
        );
    }
}
