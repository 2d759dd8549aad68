//! The live probe itself: options, the locked buffer made and described, and
//! [`HomeProbe`] reads of its lines from pinned threads.

use super::affinity::allowed_cpus;
use super::hugepages::{allocate, Backing, HugeChoice, HUGE_PAGE_BYTES};
use super::identity::{cache_line_bytes, live_fingerprint};
use super::pagemap::{page_phys, PhysPages, PHYS_NEED_ROOT};
use super::timing::{timer_calibration, LiveBuffer, LiveLine};
use super::{measure, topo_err};
use crate::error::HomeError;
use crate::probe::{Access, BufferInfo, Fingerprint, HomeProbe, Line};
use numalab_topo::bind::{base_page_size, HwlocPlacer, Region};

/// How the live buffer is made and measured.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveOptions {
    /// Buffer size, bytes (rounded up to whole pages: 2 MiB unless `huge` is `Never`).
    pub bytes: u64,
    /// Huge pages.
    pub huge: HugeChoice,
    /// The largest share of `MemAvailable` the buffer may take (0 < f <= 1).
    pub max_free_fraction: f64,
    /// Flush+load iterations timed together per flushed measurement (1..=4096).
    pub flush_batch: u32,
}

impl LiveOptions {
    /// The defaults with a buffer of `bytes`.
    pub fn with_bytes(bytes: u64) -> Self {
        LiveOptions {
            bytes,
            ..LiveOptions::default()
        }
    }
}

impl Default for LiveOptions {
    /// 64 MiB, huge pages if possible, at most half the available memory, batches of 16.
    fn default() -> Self {
        LiveOptions {
            bytes: 64 << 20,
            huge: HugeChoice::Auto,
            max_free_fraction: 0.5,
            flush_batch: 16,
        }
    }
}

/// The live probe: a locked buffer of real memory and reads of its lines from pinned
/// threads.
#[derive(Debug)]
pub struct LiveProbe {
    region: Region,
    info: BufferInfo,
    backing: Backing,
    placer: HwlocPlacer,
    cpus: Vec<u32>,
    fingerprint: Fingerprint,
    flush_batch: u32,
    timer_overhead_ns: f64,
    timer_resolution_ns: f64,
    sigmas: Vec<f64>,
    /// Facts about the buffer and the measurement a reader of the results should know
    /// (page backing, a failed `mlock`, the timer), in sentences.
    pub notes: Vec<String>,
}

/// `bytes` in MiB, or in GiB from 1 GiB up, with one decimal.
fn mib(bytes: u64) -> String {
    let m = bytes as f64 / (1u64 << 20) as f64;
    if m >= 1024.0 {
        format!("{:.1} GiB", m / 1024.0)
    } else {
        format!("{m:.1} MiB")
    }
}

/// Refuses a buffer of `bytes` larger than `fraction` of `available` bytes (the
/// system's `MemAvailable`).
pub fn check_buffer_size(bytes: u64, available: u64, fraction: f64) -> Result<(), HomeError> {
    let limit = (available as f64 * fraction) as u64;
    if bytes > limit {
        return Err(HomeError::Usage(format!(
            "a buffer of {bytes} bytes ({}) is more than {:.0}% of the memory available ({available} bytes, {}, MemAvailable in /proc/meminfo); ask for at most {limit} bytes with --bytes",
            mib(bytes),
            fraction * 100.0,
            mib(available)
        )));
    }
    Ok(())
}

// ---- the probe ---------------------------------------------------------------------

impl LiveProbe {
    /// Maps, touches and locks the buffer, reads its physical addresses, loads the
    /// topology for pinning and calibrates the clock.
    pub fn new(opts: LiveOptions) -> Result<LiveProbe, HomeError> {
        check_options(&opts)?;
        let base = base_page_size() as u64;
        let mut notes = Vec::new();
        let bytes = buffer_bytes(&opts, base, &mut notes)?;
        let placer = HwlocPlacer::new().map_err(topo_err)?;
        let cpus = allowed_cpus()?;
        let line_bytes = cache_line_bytes();

        let (region, mut backing) = allocate(bytes as usize, opts.huge, &mut notes)?;
        lock_buffer(&region, &mut notes);
        let (page_phys, phys_note) =
            physical_pages(&region, &mut backing, opts.huge, base, &mut notes)?;
        let page_bytes = if backing == Backing::Base {
            base
        } else {
            HUGE_PAGE_BYTES
        };
        notes.push(backing_note(backing, bytes, base));
        notes.push(
            "the buffer was first touched by the thread that created the probe: its pages are on that thread's NUMA node unless a memory policy says otherwise".into(),
        );

        let (timer_overhead_ns, timer_resolution_ns) = timer_calibration();
        notes.push(format!(
            "each forwarded read includes the clock's own cost, about {timer_overhead_ns:.0} ns (an offset common to every line, not subtracted); clock resolution {timer_resolution_ns:.0} ns"
        ));
        let info = BufferInfo {
            bytes,
            page_bytes,
            huge_pages: backing != Backing::Base,
            line_bytes,
            page_phys,
            phys_note,
        };
        Ok(LiveProbe {
            region,
            info,
            backing,
            placer,
            cpus,
            fingerprint: live_fingerprint(),
            flush_batch: opts.flush_batch,
            timer_overhead_ns,
            timer_resolution_ns,
            sigmas: Vec::new(),
            notes,
        })
    }

    /// What backs the buffer.
    pub fn backing(&self) -> Backing {
        self.backing
    }

    /// The clock's cost included in each forwarded read, ns (median of empty timings).
    pub fn timer_overhead_ns(&self) -> f64 {
        self.timer_overhead_ns
    }

    /// The smallest non-zero step seen between consecutive clock reads, ns (the clock's
    /// tick, or the cost of reading it when that is larger).
    pub fn timer_resolution_ns(&self) -> f64 {
        self.timer_resolution_ns
    }

    /// Flush+load iterations timed together per flushed measurement.
    pub fn flush_batch(&self) -> u32 {
        self.flush_batch
    }

    /// The byte address of a line, or a usage error if it is outside the buffer.
    fn line_addr(&self, line: &Line) -> Result<usize, HomeError> {
        let pages = self.info.pages();
        let per_page = self.info.lines_per_page();
        if line.page >= pages || line.offset as usize >= per_page {
            return Err(HomeError::Usage(format!(
                "line {} of page {} is outside the buffer ({pages} pages of {per_page} lines); ask for a larger buffer with --bytes or fewer lines",
                line.offset, line.page
            )));
        }
        let off = line.page * self.info.page_bytes as usize
            + line.offset as usize * self.info.line_bytes as usize;
        Ok(self.region.as_slice().as_ptr() as usize + off)
    }

    fn check_cpu(&self, cpu: u32, role: &str) -> Result<(), HomeError> {
        if self.cpus.contains(&cpu) {
            Ok(())
        } else {
            Err(HomeError::Usage(format!(
                "{role} CPU {cpu} is not available to this process; it may run on CPUs {}",
                numalab_schema::cpulist::format(&self.cpus)
            )))
        }
    }
}

impl HomeProbe for LiveProbe {
    fn buffer(&self) -> &BufferInfo {
        &self.info
    }

    fn cpus(&self) -> Vec<u32> {
        self.cpus.clone()
    }

    fn fingerprint(&self) -> Fingerprint {
        self.fingerprint.clone()
    }

    fn origin(&self) -> &'static str {
        "measured"
    }

    fn read_ns(
        &mut self,
        access: Access,
        reader: u32,
        owner: Option<u32>,
        lines: &[Line],
        repeats: u32,
    ) -> Result<Vec<f64>, HomeError> {
        self.check_cpu(reader, "reader")?;
        if let Some(o) = owner {
            self.check_cpu(o, "owner")?;
        }
        if repeats == 0 {
            return Err(HomeError::Usage("repeats must be at least 1".into()));
        }
        let owner = match (access, owner) {
            (Access::Forwarded, None) => {
                return Err(HomeError::Usage(
                    "forwarded reads need an owner CPU that writes each line before it is read".into(),
                ))
            }
            (Access::Forwarded, Some(o)) if o == reader => {
                return Err(HomeError::Usage(format!(
                    "the owner CPU must differ from the reader CPU ({reader}): a line written by the reader itself is read from its own cache"
                )))
            }
            (_, o) => o,
        };
        let addrs: Vec<usize> = lines
            .iter()
            .map(|l| self.line_addr(l))
            .collect::<Result<_, _>>()?;
        if addrs.is_empty() {
            return Ok(Vec::new());
        }
        let buffer = LiveBuffer::new(self.region.as_mut_slice());
        let lines: Vec<LiveLine<'_>> = addrs
            .iter()
            .map(|&a| {
                buffer.line(a).ok_or_else(|| {
                    HomeError::Runtime(format!("address {a:#x} is not a line of the buffer"))
                })
            })
            .collect::<Result<_, _>>()?;
        let samples = match (access, owner) {
            (Access::Forwarded, Some(o)) => {
                measure::forwarded(&self.placer, reader, o, &lines, repeats)?
            }
            _ => measure::flushed(&self.placer, self.flush_batch, reader, &lines, repeats)?,
        };
        let reps = repeats as usize;
        // A clock with step q cannot resolve less than q / sqrt(12) (the deviation of a
        // uniform rounding error), divided by the iterations a flushed sample averages:
        // a line whose repeats all fell on one tick has that much noise, not none.
        let per_sample = match access {
            Access::Flushed => f64::from(self.flush_batch),
            Access::Forwarded => 1.0,
        };
        let floor = if self.timer_resolution_ns.is_finite() {
            self.timer_resolution_ns / 12f64.sqrt() / per_sample
        } else {
            0.0
        };
        let mut medians = Vec::with_capacity(addrs.len());
        for chunk in samples.chunks_exact(reps) {
            let mut v = chunk.to_vec();
            let (m, sigma) = crate::probe::center_and_sigma(&mut v);
            medians.push(m);
            if reps >= 2 && sigma.is_finite() {
                self.sigmas.push(sigma.max(floor));
            }
        }
        Ok(medians)
    }

    /// The median, over every line measured with at least two repeats, of the line's
    /// 1.4826 x median absolute deviation (at least the clock's rounding error,
    /// resolution / sqrt(12), divided by the flush batch for flushed reads).
    fn noise_ns(&self) -> Option<f64> {
        numalab_stats::upper_median(&self.sigmas)
    }
}

/// Refuses an empty buffer, a share of free memory outside (0, 1] and a flush batch
/// outside 1..=4096.
fn check_options(opts: &LiveOptions) -> Result<(), HomeError> {
    if opts.bytes == 0 {
        return Err(HomeError::Usage(
            "a buffer of 0 bytes was asked for; give --bytes".into(),
        ));
    }
    if !(opts.max_free_fraction > 0.0 && opts.max_free_fraction <= 1.0) {
        return Err(HomeError::Usage(format!(
            "the largest share of free memory must be in (0, 1], not {}",
            opts.max_free_fraction
        )));
    }
    if !(1..=4096).contains(&opts.flush_batch) {
        return Err(HomeError::Usage(format!(
            "flush batch {} is outside 1..=4096",
            opts.flush_batch
        )));
    }
    Ok(())
}

/// The buffer size: `opts.bytes` rounded up to whole pages (2 MiB unless huge pages are
/// refused), checked against free memory and the address space; notes say what was
/// rounded or could not be checked.
fn buffer_bytes(opts: &LiveOptions, base: u64, notes: &mut Vec<String>) -> Result<u64, HomeError> {
    let unit = if opts.huge == HugeChoice::Never {
        base
    } else {
        HUGE_PAGE_BYTES
    };
    let bytes = opts.bytes.div_ceil(unit) * unit;
    match std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| numalab_topo::system::meminfo_bytes(&t, "MemAvailable"))
    {
        Some(avail) => check_buffer_size(bytes, avail, opts.max_free_fraction)?,
        None => notes.push(
            "MemAvailable was not readable from /proc/meminfo: the buffer size was not checked against free memory".into(),
        ),
    }
    if usize::try_from(bytes).is_err() {
        return Err(HomeError::Usage(format!(
            "a buffer of {bytes} bytes does not fit this address space; ask for less with --bytes"
        )));
    }
    if bytes != opts.bytes {
        notes.push(format!(
            "the buffer was rounded up from {} to {bytes} bytes (whole {} pages)",
            opts.bytes,
            mib(unit)
        ));
    }
    Ok(bytes)
}

/// Locks the buffer in memory, or notes why it could not be.
fn lock_buffer(region: &Region, notes: &mut Vec<String>) {
    // Lock: physical addresses stay put (no swap; compaction may still migrate
    // unless vm.compact_unevictable_allowed is 0).
    let rc = crate::sys::mlock(region);
    if rc != 0 {
        let e = numalab_schema::text::io_reason(&std::io::Error::last_os_error());
        notes.push(format!(
            "mlock of the buffer failed ({e}): pages may be swapped or moved, changing their physical addresses; raise the locked-memory limit (`ulimit -l`) or run as root"
        ));
    }
}

/// The physical address of each page and the note on them ([`BufferInfo::page_phys`],
/// [`BufferInfo::phys_note`]); a transparent-huge-page buffer whose 2 MiB pages are not
/// physically contiguous is demoted to base pages (`backing`), or refused if huge pages
/// were required.
fn physical_pages(
    region: &Region,
    backing: &mut Backing,
    huge: HugeChoice,
    base: u64,
    notes: &mut Vec<String>,
) -> Result<(Option<Vec<u64>>, Option<String>), HomeError> {
    // Physical addresses, and the check that transparent huge pages really are
    // physically contiguous 2 MiB pages (smaps can count a neighbour's THPs).
    let huge_pages_asked = *backing != Backing::Base;
    let page_bytes_try = if huge_pages_asked {
        HUGE_PAGE_BYTES
    } else {
        base
    };
    let mut phys = page_phys(region, page_bytes_try as usize, base as usize);
    if *backing == Backing::Transparent {
        if let Ok(PhysPages::Known {
            contiguous: false, ..
        }) = &phys
        {
            notes.push("pagemap shows the buffer's 2 MiB pages are not physically contiguous: transparent huge pages do not back all of it; mapped as base pages".into());
            if huge == HugeChoice::Require {
                return Err(HomeError::Unsupported(
                    "huge pages were required but transparent huge pages do not back the whole buffer; reserve hugetlbfs pages (`echo N > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`) or use --huge auto".into(),
                ));
            }
            *backing = Backing::Base;
            phys = page_phys(region, base as usize, base as usize);
        }
    }
    Ok(match phys {
        Ok(PhysPages::Known { phys, .. }) => (Some(phys), None),
        Ok(PhysPages::Hidden) => (None, Some(PHYS_NEED_ROOT.to_string())),
        Ok(PhysPages::Absent(i)) => (
            None,
            Some(format!(
                "page {i} of the buffer was not present in /proc/self/pagemap although touched; physical addresses are not used"
            )),
        ),
        Err(e) => (
            None,
            Some(format!(
                "/proc/self/pagemap could not be read ({}); without physical addresses the hash is fitted on page offsets only",
                numalab_schema::text::io_reason(&e)
            )),
        ),
    })
}

/// The note saying what backs the buffer of `bytes`.
fn backing_note(backing: Backing, bytes: u64, base: u64) -> String {
    match backing {
        Backing::HugeTlb => format!(
            "buffer: {} on {} hugetlbfs pages of 2 MiB",
            mib(bytes),
            bytes / HUGE_PAGE_BYTES
        ),
        Backing::Transparent => format!(
            "buffer: {} on {} transparent huge pages of 2 MiB",
            mib(bytes),
            bytes / HUGE_PAGE_BYTES
        ),
        Backing::Base => format!(
            "buffer: {} on {} base pages of {} KiB",
            mib(bytes),
            bytes / base,
            base / 1024
        ),
    }
}
