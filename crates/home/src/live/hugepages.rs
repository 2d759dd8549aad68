//! How the live buffer is backed: huge-page choices, the hugetlbfs pool and transparent
//! huge pages, and the allocation that tries them in turn.

use super::topo_err;
use crate::error::HomeError;
use numalab_topo::bind::{PageKind, Region};
use numalab_topo::TopoError;

/// The huge page size the buffer asks for (hugetlbfs pool and transparent huge pages).
pub const HUGE_PAGE_BYTES: u64 = 2 << 20;

/// Whether the buffer goes on huge pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HugeChoice {
    /// hugetlbfs pages if enough are reserved, else transparent huge pages, else base
    /// pages.
    #[default]
    Auto,
    /// hugetlbfs or transparent huge pages over the whole buffer, or an error.
    Require,
    /// Base pages only (transparent huge pages refused).
    Never,
}

impl HugeChoice {
    /// The word used on the command line.
    pub fn word(&self) -> &'static str {
        match self {
            HugeChoice::Auto => "auto",
            HugeChoice::Require => "require",
            HugeChoice::Never => "never",
        }
    }
}

impl std::fmt::Display for HugeChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

impl std::str::FromStr for HugeChoice {
    type Err = HomeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(HugeChoice::Auto),
            "require" => Ok(HugeChoice::Require),
            "never" => Ok(HugeChoice::Never),
            other => Err(HomeError::Usage(format!(
                "huge pages {other:?}: say auto, require or never"
            ))),
        }
    }
}

/// What backs the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// Pages from the hugetlbfs pool.
    HugeTlb,
    /// Transparent huge pages over the whole buffer.
    Transparent,
    /// Base pages (possibly some transparent huge pages, not over the whole buffer).
    Base,
}

/// Maps and touches the buffer as `huge` asks.
pub(super) fn allocate(
    len: usize,
    huge: HugeChoice,
    notes: &mut Vec<String>,
) -> Result<(Region, Backing), HomeError> {
    let region_err = |e: TopoError| topo_err(e);
    if huge == HugeChoice::Never {
        let mut r = Region::new(len, PageKind::Base).map_err(region_err)?;
        r.touch();
        return Ok((r, Backing::Base));
    }
    let mut why_not = Vec::new();
    if let Some(r) = hugetlb_region(len, &mut why_not) {
        return Ok((r, Backing::HugeTlb));
    }
    let mut r = Region::new(len, PageKind::Transparent).map_err(region_err)?;
    r.touch();
    let thp = r.thp_bytes();
    if thp.is_some_and(|t| t >= r.len() as u64) {
        notes.push(format!(
            "hugetlbfs pages were not used ({}); transparent huge pages back the buffer",
            why_not.join("; ")
        ));
        return Ok((r, Backing::Transparent));
    }
    let thp_words = match thp {
        Some(t) => format!("transparent huge pages back {t} of its {} bytes", r.len()),
        None => "its transparent huge pages could not be counted (/proc/self/smaps)".into(),
    };
    if huge == HugeChoice::Require {
        return Err(HomeError::Unsupported(format!(
            "huge pages were required but the buffer is not on them: {}; {thp_words}; reserve 2 MiB pages (`echo {} > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`) or use --huge auto",
            why_not.join("; "),
            len as u64 / HUGE_PAGE_BYTES
        )));
    }
    notes.push(format!(
        "the buffer is on base pages: {}; {thp_words}; reserve 2 MiB pages (`echo {} > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`) for a map of whole 2 MiB pages",
        why_not.join("; "),
        len as u64 / HUGE_PAGE_BYTES
    ));
    // THP may still back part of it; the map is kept in base pages, which is right
    // either way. Ask for no further collapses so the physical addresses hold.
    crate::sys::madvise(&mut r, libc::MADV_NOHUGEPAGE);
    Ok((r, Backing::Base))
}

/// A touched hugetlbfs region of `len` bytes, or why not.
fn hugetlb_region(len: usize, why_not: &mut Vec<String>) -> Option<Region> {
    let need = len as u64 / HUGE_PAGE_BYTES;
    match read_sys_u64("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages") {
        None => {
            why_not.push("this kernel has no 2 MiB hugetlbfs pool".into());
            return None;
        }
        Some(free) if free < need => {
            why_not.push(format!("{free} free 2 MiB hugetlbfs pages, {need} needed"));
            return None;
        }
        Some(_) => {}
    }
    let mut r = match Region::new(len, PageKind::HugeTlb(HUGE_PAGE_BYTES)) {
        Ok(r) => r,
        Err(e) => {
            why_not.push(format!("hugetlbfs mapping failed: {e}"));
            return None;
        }
    };
    // Populate now, so that a pool emptied meanwhile gives an error, not SIGBUS.
    let rc = crate::sys::madvise(&mut r, libc::MADV_POPULATE_WRITE);
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        // EINVAL: a kernel before 5.14; the free count was checked above.
        if e.raw_os_error() != Some(libc::EINVAL) {
            why_not.push(format!(
                "hugetlbfs pages could not be populated: {}",
                numalab_schema::text::io_reason(&e)
            ));
            return None;
        }
    }
    r.touch();
    Some(r)
}

/// A number from a one-value sysfs file.
fn read_sys_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}
