//! The one interface every home measurement goes through: a buffer of lines and reads of
//! them from chosen cores. The live backend ([`crate::live`]) reads real memory with the
//! line flushed or owned by another core; the replay backend ([`crate::truth`]) answers
//! from a model-generated machine whose floorplan and hash the inference never sees.

use crate::error::HomeError;
pub use numalab_records::home::{Access, Fingerprint};

/// What a probe's buffer is.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferInfo {
    /// Bytes.
    pub bytes: u64,
    /// Page size, bytes (2 MiB or 1 GiB on huge pages, 4 KiB otherwise).
    pub page_bytes: u64,
    /// Backed by huge pages.
    pub huge_pages: bool,
    /// Cache line, bytes.
    pub line_bytes: u32,
    /// Physical address of every page, when `/proc/self/pagemap` gave them (root or
    /// CAP_SYS_ADMIN); `None` otherwise.
    pub page_phys: Option<Vec<u64>>,
    /// Why physical addresses are missing, when they are.
    pub phys_note: Option<String>,
}

impl BufferInfo {
    /// Lines per page.
    pub fn lines_per_page(&self) -> usize {
        (self.page_bytes / u64::from(self.line_bytes)) as usize
    }

    /// Pages.
    pub fn pages(&self) -> usize {
        (self.bytes / self.page_bytes) as usize
    }
}

/// A line of the buffer: page index and line index within the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Line {
    /// Page index.
    pub page: usize,
    /// Line index within the page.
    pub offset: u32,
}

/// Reads of buffer lines from chosen cores.
pub trait HomeProbe {
    /// The buffer.
    fn buffer(&self) -> &BufferInfo;
    /// The CPUs reads can run on (OS ids).
    fn cpus(&self) -> Vec<u32>;
    /// The machine the answers are valid on.
    fn fingerprint(&self) -> Fingerprint;
    /// "measured" or "model".
    fn origin(&self) -> &'static str;
    /// For each line, `repeats` reads from `reader` (an OS CPU id) with the given access
    /// (`owner`: the CPU that writes the line before each forwarded read), and their
    /// [`center_and_sigma`] latency, ns, in `lines` order.
    fn read_ns(
        &mut self,
        access: Access,
        reader: u32,
        owner: Option<u32>,
        lines: &[Line],
        repeats: u32,
    ) -> Result<Vec<f64>, HomeError>;
    /// Standard deviation of one read, ns, estimated by the probe from its repeats (the
    /// median absolute deviation scaled to a Gaussian sigma), pooled over every call so
    /// far; `None` before any read.
    fn noise_ns(&self) -> Option<f64>;
}

/// The centre of a line's repeated reads and their spread (sorts `v`): the
/// interquartile mean (the mean of the middle half), and 1.4826 x the median absolute
/// deviation (a Gaussian sigma). The interquartile mean ignores the slow tail
/// (interrupts, a migration) as a median does, and, unlike a median, it is not stuck on
/// the clock's ticks: a timer of 30 ns resolution still gives sub-tick centres.
pub fn center_and_sigma(v: &mut [f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let (_, sigma) = median_and_sigma(v);
    let n = v.len();
    let (lo, hi) = (n / 4, n - n / 4);
    let mid = &v[lo..hi.max(lo + 1)];
    (mid.iter().sum::<f64>() / mid.len() as f64, sigma)
}

/// The median of `v` and 1.4826 x its median absolute deviation (a Gaussian sigma);
/// sorts `v`. NaN for an empty slice.
pub fn median_and_sigma(v: &mut [f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let med = |s: &[f64]| numalab_stats::median_sorted(s).unwrap_or(f64::NAN);
    v.sort_by(f64::total_cmp);
    let m = med(v);
    let mut dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    dev.sort_by(f64::total_cmp);
    (m, 1.4826 * med(&dev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_sigma_of_small_samples() {
        let (m, s) = median_and_sigma(&mut [5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(m, 3.0);
        assert!((s - 1.4826).abs() < 1e-12);
        let (m, s) = median_and_sigma(&mut [2.0, 4.0]);
        assert_eq!(m, 3.0);
        assert!((s - 1.4826).abs() < 1e-12);
        assert!(median_and_sigma(&mut []).0.is_nan());
    }

    #[test]
    fn the_center_ignores_the_tail_and_the_ticks() {
        let (c, s) = center_and_sigma(&mut [10.0, 10.0, 11.0, 11.0, 500.0, 10.0, 11.0, 10.0]);
        assert!((c - 10.5).abs() < 1e-9, "{c}");
        assert!((s - 1.4826 * 0.5).abs() < 1e-9, "{s}");
        let (c, _) = center_and_sigma(&mut [3.0]);
        assert_eq!(c, 3.0);
        assert!(center_and_sigma(&mut []).0.is_nan());
    }
}
