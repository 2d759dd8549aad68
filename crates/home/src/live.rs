//! The live backend of [`HomeProbe`]: a locked buffer of real memory, preferably on huge
//! pages, whose lines are read from chosen CPUs so that every read has to go through the
//! line's home agent.
//!
//! - [`Access::Flushed`]: the reader flushes the line (`clflush` + `mfence` on x86-64,
//!   `dc civac` + `dsb ish` on aarch64, which Linux allows at EL0) and loads it again. A
//!   batch of K flush+fence+load iterations on the same line is timed and divided by K,
//!   each iteration's flush address depending on the previous load's value, so the
//!   iterations cannot overlap. A reported latency is therefore one flush, one fence and
//!   one load from memory: compare lines with each other, not with other tools' figures.
//! - [`Access::Forwarded`]: an owner thread pinned to the owner CPU writes the line (it
//!   then holds it modified) and signals through an atomic on a separate cache line; the
//!   reader, pinned to the reader CPU, times one load of the line. A single timed load
//!   includes the cost of reading the clock twice and two fences (about 20-40 ns on
//!   x86-64, reported as [`LiveProbe::timer_overhead_ns`]); it is an offset common to
//!   every line and is not subtracted. On machines whose clock ticks coarsely (many Arm
//!   systems count at 25-100 MHz, see [`LiveProbe::timer_resolution_ns`]) single reads
//!   are quantised to that tick.
//!
//! An owner CPU given with a flushed read is checked but plays no part.
//!
//! Measurements run on scoped threads pinned with hwloc, so the caller's own affinity is
//! never changed. Repeats are interleaved over the lines (repeat r of every line, then
//! repeat r+1), so a burst of interference spreads over many lines instead of
//! corrupting one; the interquartile mean of each line's repeats is returned
//! ([`crate::probe::center_and_sigma`]: robust to the slow tail like a median, but not
//! stuck on the clock's ticks), and each line's scaled median absolute deviation feeds
//! the pooled noise estimate.
//!
//! Physical addresses come from `/proc/self/pagemap`, which shows real frame numbers
//! only to processes with CAP_SYS_ADMIN. The parsers of `/proc/cpuinfo`, node `meminfo`
//! and pagemap entries are pure functions of the text, tested with other machines' text.

use crate::error::HomeError;
use crate::probe::{Access, BufferInfo, Fingerprint, HomeProbe, Line};
use numalab_records::home::{MEMORY_BLOCKS, MEMORY_MEMTOTAL};
use numalab_schema::{Classify, ErrorClass};
use numalab_topo::bind::{base_page_size, HwlocPlacer, PageKind, Placer, Region};
use numalab_topo::TopoError;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// The huge page size the buffer asks for (hugetlbfs pool and transparent huge pages).
pub const HUGE_PAGE_BYTES: u64 = 2 << 20;

/// The message [`BufferInfo::phys_note`] carries when pagemap hides frame numbers.
pub const PHYS_NEED_ROOT: &str = "physical addresses need root (CAP_SYS_ADMIN) to read /proc/self/pagemap; without them the hash is fitted on page offsets only";

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

fn topo_err(e: TopoError) -> HomeError {
    match e.class() {
        ErrorClass::Usage => HomeError::Usage(e.to_string()),
        ErrorClass::Unsupported => HomeError::Unsupported(e.to_string()),
        _ => HomeError::Runtime(e.to_string()),
    }
}

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

/// The frame number of a `/proc/self/pagemap` entry: bit 63 present, bits 0-54 the PFN
/// (which reads as 0 without CAP_SYS_ADMIN). `None` when the page is not present.
pub fn pagemap_pfn(entry: u64) -> Option<u64> {
    (entry >> 63 & 1 == 1).then_some(entry & ((1u64 << 55) - 1))
}

/// CPU identification from `/proc/cpuinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuIdent {
    /// "model name" (x86), or "implementer I part P" (Arm); distinct values joined by
    /// " + " (hybrid and big.LITTLE parts).
    pub model: String,
    /// "family F model M stepping S" (x86) or "variant V revision R" (Arm), distinct
    /// values joined by " + ".
    pub stepping: String,
    /// Processor entries.
    pub processors: u32,
}

fn push_distinct(list: &mut Vec<String>, v: String) {
    if !list.contains(&v) {
        list.push(v);
    }
}

/// Parses `/proc/cpuinfo` text (x86 or Arm).
pub fn parse_cpuinfo(text: &str) -> CpuIdent {
    let mut models = Vec::new();
    let mut steppings = Vec::new();
    let mut processors = 0;
    for block in text.split("\n\n") {
        let field = |name: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
        };
        if field("processor").is_some() {
            processors += 1;
        }
        if let (Some(imp), Some(part)) = (field("CPU implementer"), field("CPU part")) {
            push_distinct(&mut models, format!("implementer {imp} part {part}"));
            let variant = field("CPU variant").unwrap_or_else(|| "?".into());
            let revision = field("CPU revision").unwrap_or_else(|| "?".into());
            push_distinct(
                &mut steppings,
                format!("variant {variant} revision {revision}"),
            );
        } else if let Some(name) = field("model name") {
            push_distinct(&mut models, name);
            if let (Some(f), Some(m), Some(s)) =
                (field("cpu family"), field("model"), field("stepping"))
            {
                push_distinct(&mut steppings, format!("family {f} model {m} stepping {s}"));
            }
        }
    }
    let join = |v: Vec<String>| {
        if v.is_empty() {
            "unknown".to_string()
        } else {
            v.join(" + ")
        }
    };
    CpuIdent {
        model: join(models),
        stepping: join(steppings),
        processors,
    }
}

/// A node's `MemTotal` from its `meminfo` text (`Node N MemTotal: K kB`), rounded down
/// to whole MiB, in bytes.
pub fn node_mem_total_bytes(text: &str) -> Option<u64> {
    let b = numalab_topo::system::meminfo_bytes(text, "MemTotal")?;
    Some(b / (1 << 20) * (1 << 20))
}

/// One NUMA node's sysfs text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeText {
    /// Node id.
    pub id: u32,
    /// `/sys/devices/system/node/nodeN/meminfo`.
    pub meminfo: String,
    /// `/sys/devices/system/node/nodeN/cpulist`.
    pub cpulist: String,
    /// The memory blocks (`memoryM` entries) under `/sys/devices/system/node/nodeN`,
    /// when that folder could be listed.
    pub memory_blocks: Option<u64>,
}

/// The text a fingerprint is made from, read from a system root (normally `/`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemText {
    /// `/proc/cpuinfo`.
    pub cpuinfo: String,
    /// `/sys/devices/system/cpu/online`.
    pub online: Option<String>,
    /// `/proc/meminfo` (memory of a kernel without NUMA nodes in sysfs).
    pub meminfo: Option<String>,
    /// The nodes under `/sys/devices/system/node`, in any order.
    pub nodes: Vec<NodeText>,
    /// `/sys/devices/system/cpu/smt/active`.
    pub smt_active: Option<String>,
    /// `/sys/devices/system/memory/block_size_bytes` (hexadecimal), absent on a kernel
    /// without memory hot-plug.
    pub memory_block_size: Option<String>,
    /// The memory blocks under `/sys/devices/system/memory` (for a kernel without NUMA
    /// nodes in sysfs).
    pub memory_blocks: Option<u64>,
}

/// The `memoryM` entries of a sysfs folder, when it can be listed.
fn count_memory_blocks(dir: &Path) -> Option<u64> {
    let entries = std::fs::read_dir(dir).ok()?;
    Some(
        entries
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix("memory"))
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            })
            .count() as u64,
    )
}

impl SystemText {
    /// Reads the files under `root` (a folder holding `proc/` and `sys/`).
    pub fn read(root: &Path) -> SystemText {
        let read = |rel: &str| std::fs::read_to_string(root.join(rel)).ok();
        let mut nodes = Vec::new();
        if let Ok(dir) = std::fs::read_dir(root.join("sys/devices/system/node")) {
            for e in dir.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let Some(id) = name.strip_prefix("node").and_then(|n| n.parse().ok()) else {
                    continue;
                };
                nodes.push(NodeText {
                    id,
                    meminfo: read(&format!("sys/devices/system/node/{name}/meminfo"))
                        .unwrap_or_default(),
                    cpulist: read(&format!("sys/devices/system/node/{name}/cpulist"))
                        .unwrap_or_default(),
                    memory_blocks: count_memory_blocks(&e.path()),
                });
            }
        }
        SystemText {
            cpuinfo: read("proc/cpuinfo").unwrap_or_default(),
            online: read("sys/devices/system/cpu/online"),
            meminfo: read("proc/meminfo"),
            nodes,
            smt_active: read("sys/devices/system/cpu/smt/active"),
            memory_block_size: read("sys/devices/system/memory/block_size_bytes"),
            memory_blocks: count_memory_blocks(&root.join("sys/devices/system/memory")),
        }
    }

    /// Each node's present memory (memory blocks times the block size), in node order,
    /// when sysfs shows the block size and every node's blocks.
    fn present_memory(&self, nodes: &[&NodeText]) -> Option<Vec<u64>> {
        let size = u64::from_str_radix(self.memory_block_size.as_deref()?.trim(), 16)
            .ok()
            .filter(|&b| b > 0)?;
        if nodes.is_empty() {
            return Some(vec![self
                .memory_blocks
                .filter(|&n| n > 0)?
                .checked_mul(size)?]);
        }
        let per_node = nodes
            .iter()
            .map(|n| n.memory_blocks.and_then(|b| b.checked_mul(size)))
            .collect::<Option<Vec<u64>>>()?;
        // A kernel that lists no blocks under any node does not link them there.
        per_node.iter().any(|&b| b > 0).then_some(per_node)
    }

    /// The fingerprint this text describes (source "live").
    pub fn fingerprint(&self) -> Fingerprint {
        let cpu = parse_cpuinfo(&self.cpuinfo);
        let online = self
            .online
            .as_deref()
            .and_then(|t| numalab_schema::cpulist::parse(t.trim()).ok());
        let cpus = online.as_ref().map_or(cpu.processors, |v| v.len() as u32);
        let mut nodes: Vec<&NodeText> = self.nodes.iter().collect();
        nodes.sort_by_key(|n| n.id);
        let mut modes = Vec::new();
        let present = self.present_memory(&nodes);
        let memtotal = if nodes.is_empty() {
            modes.push("1 NUMA node".to_string());
            if let Some(list) = &online {
                modes.push(format!(
                    "node0 cpus {}",
                    numalab_schema::cpulist::format(list)
                ));
            }
            self.meminfo
                .as_deref()
                .and_then(node_mem_total_bytes)
                .into_iter()
                .collect()
        } else {
            modes.push(format!(
                "{} NUMA node{}",
                nodes.len(),
                if nodes.len() == 1 { "" } else { "s" }
            ));
            for n in &nodes {
                let list = numalab_schema::cpulist::parse(n.cpulist.trim())
                    .ok()
                    .filter(|l| !l.is_empty());
                modes.push(match list {
                    Some(l) => format!("node{} cpus {}", n.id, numalab_schema::cpulist::format(&l)),
                    None => format!("node{} cpus none", n.id),
                });
            }
            nodes
                .iter()
                .map(|n| node_mem_total_bytes(&n.meminfo).unwrap_or(0))
                .collect()
        };
        let (node_memory_bytes, memory_basis) = match present {
            Some(p) => (p, MEMORY_BLOCKS),
            None => (memtotal, MEMORY_MEMTOTAL),
        };
        match self.smt_active.as_deref().map(str::trim) {
            Some("1") => modes.push("SMT on".into()),
            Some("0") => modes.push("SMT off".into()),
            _ => {}
        }
        Fingerprint {
            source: "live".into(),
            cpu_model: cpu.model,
            stepping: cpu.stepping,
            cpus,
            node_memory_bytes,
            memory_basis: memory_basis.into(),
            modes,
        }
    }
}

/// The fingerprint of this machine.
pub fn live_fingerprint() -> Fingerprint {
    SystemText::read(Path::new("/")).fingerprint()
}

/// The CPUs this process may run on (the main thread's affinity).
pub fn allowed_cpus() -> Result<Vec<u32>, HomeError> {
    // SAFETY: getpid has no preconditions.
    affinity(unsafe { libc::getpid() })
}

/// The affinity of a thread (0: the calling one).
fn affinity(pid: libc::pid_t) -> Result<Vec<u32>, HomeError> {
    let mut words = 16usize;
    loop {
        let mut mask = vec![0u64; words];
        // SAFETY: the mask buffer is `words * 8` bytes long, as told.
        let rc = unsafe { libc::sched_getaffinity(pid, words * 8, mask.as_mut_ptr().cast()) };
        if rc == 0 {
            let mut cpus = Vec::new();
            for (w, bits) in mask.iter().enumerate() {
                for b in 0..64 {
                    if bits >> b & 1 == 1 {
                        cpus.push((w * 64 + b) as u32);
                    }
                }
            }
            return Ok(cpus);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINVAL) && words < 1 << 14 {
            words *= 4;
            continue;
        }
        return Err(HomeError::Runtime(format!("sched_getaffinity failed: {e}")));
    }
}

/// The cache line size: the largest coherency line size of CPU 0's caches, else 64.
fn cache_line_bytes() -> u32 {
    let mut best = 0u32;
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") {
        for e in dir.flatten() {
            if let Ok(t) = std::fs::read_to_string(e.path().join("coherency_line_size")) {
                if let Ok(v) = t.trim().parse::<u32>() {
                    best = best.max(v);
                }
            }
        }
    }
    if best.is_power_of_two() && (16..=1024).contains(&best) {
        best
    } else {
        64
    }
}

fn read_sys_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

// ---- the timed primitives ----------------------------------------------------------

/// Keeps later instructions from starting before this point (after reading the clock).
#[inline(always)]
pub(crate) fn fence_start() {
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence has no memory-safety preconditions (SSE2 is baseline on x86-64).
    unsafe {
        core::arch::x86_64::_mm_lfence();
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: an instruction barrier has no memory-safety effects.
    unsafe {
        core::arch::asm!("isb", options(nostack, preserves_flags));
    }
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// Waits until earlier loads have completed (before reading the clock).
#[inline(always)]
pub(crate) fn fence_end() {
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in fence_start.
    unsafe {
        core::arch::x86_64::_mm_lfence();
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: a data barrier has no memory-safety effects.
    unsafe {
        core::arch::asm!("dsb ish", options(nostack, preserves_flags));
    }
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// Writes back and invalidates the line at `p` from every cache, and waits for it.
///
/// # Safety
/// `p` must point into a mapped, readable page.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub(crate) unsafe fn flush_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: p is mapped (caller's contract); mfence has no preconditions.
    unsafe {
        core::arch::x86_64::_mm_clflush(p);
        core::arch::x86_64::_mm_mfence();
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: p is mapped (caller's contract); Linux enables DC CIVAC at EL0
    // (SCTLR_EL1.UCI).
    unsafe {
        core::arch::asm!("dc civac, {a}", "dsb ish", a = in(reg) p, options(nostack, preserves_flags));
    }
}

/// Nanoseconds per flush+fence+load of the line at `p`, over `k` dependent iterations.
///
/// # Safety
/// `p` must be 8-byte aligned and point into a mapped, readable page.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
unsafe fn flushed_batch_ns(p: *const u8, k: u32, zero: usize) -> f64 {
    let mut addr = p;
    let mut acc = 0u64;
    // One untimed round: the TLB entry of the page is warm for the batch.
    // SAFETY: p is mapped and aligned (caller's contract).
    unsafe {
        flush_line(addr);
        acc ^= std::ptr::read_volatile(addr.cast::<u64>());
    }
    let t0 = Instant::now();
    fence_start();
    for _ in 0..k {
        // SAFETY: addr == p: `zero` is 0 at run time, which the compiler cannot know,
        // so each flush waits for the previous load's value.
        unsafe {
            flush_line(addr);
            let v = std::ptr::read_volatile(addr.cast::<u64>());
            acc = acc.wrapping_add(v);
            addr = p.wrapping_add(v as usize & zero);
        }
    }
    fence_end();
    let dt = t0.elapsed();
    std::hint::black_box(acc);
    dt.as_nanos() as f64 / f64::from(k)
}

/// Nanoseconds of one load of the line at `p`, clock reads and fences included.
///
/// # Safety
/// `p` must be 8-byte aligned and point into a mapped, readable page.
#[inline(always)]
unsafe fn timed_read_ns(p: *const u8) -> f64 {
    let t0 = Instant::now();
    fence_start();
    // SAFETY: caller's contract.
    let v = unsafe { std::ptr::read_volatile(p.cast::<u64>()) };
    fence_end();
    let dt = t0.elapsed();
    std::hint::black_box(v);
    dt.as_nanos() as f64
}

/// The clock's cost around a timed read (median, ns) and its resolution (smallest
/// non-zero step seen, ns).
fn timer_calibration() -> (f64, f64) {
    let mut d: Vec<f64> = (0..301)
        .map(|_| {
            let t0 = Instant::now();
            fence_start();
            fence_end();
            t0.elapsed().as_nanos() as f64
        })
        .collect();
    let (overhead, _) = crate::probe::median_and_sigma(&mut d);
    let mut resolution = f64::INFINITY;
    let mut last = Instant::now();
    for _ in 0..2000 {
        let now = Instant::now();
        let step = now.duration_since(last).as_nanos() as f64;
        if step > 0.0 {
            resolution = resolution.min(step);
        }
        last = now;
    }
    (overhead, resolution)
}

// ---- the forwarded handshake -------------------------------------------------------

const HS_INIT: u64 = 0;
const HS_READY: u64 = 1;
const HS_FAILED: u64 = u64::MAX - 1;
const HS_STOP: u64 = u64::MAX;

/// The handshake between reader and owner, on its own cache lines (never the measured
/// one). `state`: even n >= 2 asks the owner to write `addr`; n + 1 says it has.
#[repr(align(256))]
struct Handshake {
    state: AtomicU64,
    addr: AtomicUsize,
}

/// Sets `state` to `value` when dropped while panicking (or always, if `always`), so
/// that the other thread stops spinning.
struct SignalOnDrop<'a> {
    state: &'a AtomicU64,
    value: u64,
    always: bool,
}

impl Drop for SignalOnDrop<'_> {
    fn drop(&mut self) {
        if self.always || std::thread::panicking() {
            self.state.store(self.value, Ordering::Release);
        }
    }
}

// ---- the probe ---------------------------------------------------------------------

impl LiveProbe {
    /// Maps, touches and locks the buffer, reads its physical addresses, loads the
    /// topology for pinning and calibrates the clock.
    pub fn new(opts: LiveOptions) -> Result<LiveProbe, HomeError> {
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
        let base = base_page_size() as u64;
        let unit = if opts.huge == HugeChoice::Never {
            base
        } else {
            HUGE_PAGE_BYTES
        };
        let bytes = opts.bytes.div_ceil(unit) * unit;
        let mut notes = Vec::new();
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
        let placer = HwlocPlacer::new().map_err(topo_err)?;
        let cpus = allowed_cpus()?;
        let line_bytes = cache_line_bytes();

        let (region, mut backing) = allocate(bytes as usize, opts.huge, &mut notes)?;

        // Lock: physical addresses stay put (no swap; compaction may still migrate
        // unless vm.compact_unevictable_allowed is 0).
        // SAFETY: locking our own mapping.
        let rc = unsafe { libc::mlock(region.as_slice().as_ptr().cast(), region.len()) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            notes.push(format!(
                "mlock of the buffer failed ({e}): pages may be swapped or moved, changing their physical addresses; raise the locked-memory limit (`ulimit -l`) or run as root"
            ));
        }

        // Physical addresses, and the check that transparent huge pages really are
        // physically contiguous 2 MiB pages (smaps can count a neighbour's THPs).
        let huge_pages_asked = backing != Backing::Base;
        let page_bytes_try = if huge_pages_asked {
            HUGE_PAGE_BYTES
        } else {
            base
        };
        let mut phys = page_phys(&region, page_bytes_try as usize, base as usize);
        if backing == Backing::Transparent {
            if let Ok(PhysPages::Known {
                contiguous: false, ..
            }) = &phys
            {
                notes.push("pagemap shows the buffer's 2 MiB pages are not physically contiguous: transparent huge pages do not back all of it; mapped as base pages".into());
                if opts.huge == HugeChoice::Require {
                    return Err(HomeError::Unsupported(
                        "huge pages were required but transparent huge pages do not back the whole buffer; reserve hugetlbfs pages (`echo N > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`) or use --huge auto".into(),
                    ));
                }
                backing = Backing::Base;
                phys = page_phys(&region, base as usize, base as usize);
            }
        }
        let page_bytes = if backing == Backing::Base {
            base
        } else {
            HUGE_PAGE_BYTES
        };
        let (page_phys, phys_note) = match phys {
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
                    "/proc/self/pagemap could not be read ({e}); without physical addresses the hash is fitted on page offsets only"
                )),
            ),
        };
        notes.push(match backing {
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
        });
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

    /// Flushed reads: `samples[i * repeats + r]`.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn measure_flushed(
        &self,
        reader: u32,
        addrs: &[usize],
        repeats: u32,
    ) -> Result<Vec<f64>, HomeError> {
        let placer = &self.placer;
        let k = self.flush_batch;
        let reps = repeats as usize;
        std::thread::scope(|s| {
            let h = s.spawn(move || -> Result<Vec<f64>, HomeError> {
                placer.pin_current_thread(reader).map_err(topo_err)?;
                let zero = std::hint::black_box(0usize);
                let mut out = vec![0.0; addrs.len() * reps];
                for r in 0..reps {
                    for (i, &a) in addrs.iter().enumerate() {
                        // SAFETY: a is a line address inside the live buffer (checked
                        // by line_addr), line aligned.
                        out[i * reps + r] = unsafe { flushed_batch_ns(a as *const u8, k, zero) };
                    }
                }
                Ok(out)
            });
            h.join()
                .unwrap_or_else(|_| Err(HomeError::Runtime("the measuring thread panicked".into())))
        })
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn measure_flushed(&self, _: u32, _: &[usize], _: u32) -> Result<Vec<f64>, HomeError> {
        Err(HomeError::Unsupported(
            "flushed reads need a user-mode cache flush, which this build has only for x86-64 and aarch64; use forwarded reads".into(),
        ))
    }

    /// Forwarded reads: `samples[i * repeats + r]`.
    fn measure_forwarded(
        &self,
        reader: u32,
        owner: u32,
        addrs: &[usize],
        repeats: u32,
    ) -> Result<Vec<f64>, HomeError> {
        let placer = &self.placer;
        let reps = repeats as usize;
        let hs = Handshake {
            state: AtomicU64::new(HS_INIT),
            addr: AtomicUsize::new(0),
        };
        let hs = &hs;
        std::thread::scope(|s| {
            let owner_thread = s.spawn(move || -> Result<(), HomeError> {
                let _guard = SignalOnDrop {
                    state: &hs.state,
                    value: HS_FAILED,
                    always: false,
                };
                if let Err(e) = placer.pin_current_thread(owner) {
                    hs.state.store(HS_FAILED, Ordering::Release);
                    return Err(topo_err(e));
                }
                hs.state.store(HS_READY, Ordering::Release);
                let mut expect = 2u64;
                loop {
                    let st = hs.state.load(Ordering::Acquire);
                    if st == HS_STOP {
                        return Ok(());
                    }
                    if st == expect {
                        let a = hs.addr.load(Ordering::Relaxed);
                        // SAFETY: a is a line address inside the live buffer, which
                        // read_ns holds exclusively (&mut self) while this runs.
                        unsafe { std::ptr::write_volatile(a as *mut u64, expect) };
                        hs.state.store(expect + 1, Ordering::Release);
                        expect += 2;
                    } else {
                        std::hint::spin_loop();
                    }
                }
            });
            let reader_thread = s.spawn(move || -> Result<Vec<f64>, HomeError> {
                // Whatever happens, the owner is told to stop.
                let _stop = SignalOnDrop {
                    state: &hs.state,
                    value: HS_STOP,
                    always: true,
                };
                placer.pin_current_thread(reader).map_err(topo_err)?;
                loop {
                    match hs.state.load(Ordering::Acquire) {
                        HS_INIT => std::hint::spin_loop(),
                        HS_READY => break,
                        // The owner's error is reported by its join.
                        _ => return Ok(Vec::new()),
                    }
                }
                let mut out = vec![0.0; addrs.len() * reps];
                let mut req = 2u64;
                for r in 0..reps {
                    for (i, &a) in addrs.iter().enumerate() {
                        // Warm the reader's TLB entry for the page with an untimed read;
                        // the owner's write then takes the line away again.
                        // SAFETY: a is a line address inside the live buffer.
                        std::hint::black_box(unsafe { std::ptr::read_volatile(a as *const u64) });
                        hs.addr.store(a, Ordering::Relaxed);
                        hs.state.store(req, Ordering::Release);
                        loop {
                            let st = hs.state.load(Ordering::Acquire);
                            if st == req + 1 {
                                break;
                            }
                            if st == HS_FAILED {
                                return Ok(Vec::new());
                            }
                            std::hint::spin_loop();
                        }
                        // SAFETY: as above.
                        out[i * reps + r] = unsafe { timed_read_ns(a as *const u8) };
                        req += 2;
                    }
                }
                Ok(out)
            });
            let read = reader_thread
                .join()
                .unwrap_or_else(|_| Err(HomeError::Runtime("the reading thread panicked".into())));
            let own = owner_thread
                .join()
                .unwrap_or_else(|_| Err(HomeError::Runtime("the owner thread panicked".into())));
            own?;
            let out = read?;
            if out.len() != addrs.len() * reps {
                return Err(HomeError::Runtime(
                    "the owner thread stopped before the reads were done".into(),
                ));
            }
            Ok(out)
        })
    }
}

/// Physical addresses of a buffer's pages.
enum PhysPages {
    /// One address per page; `contiguous`: each page is one physically contiguous,
    /// aligned block (always true for base pages).
    Known { phys: Vec<u64>, contiguous: bool },
    /// Frame numbers read as 0: no CAP_SYS_ADMIN.
    Hidden,
    /// This page (index) was not present.
    Absent(usize),
}

fn page_phys(region: &Region, page_bytes: usize, base: usize) -> std::io::Result<PhysPages> {
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

/// Maps and touches the buffer as `huge` asks.
fn allocate(
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
    // SAFETY: advising our own mapping.
    unsafe {
        libc::madvise(
            r.as_mut_slice().as_mut_ptr().cast(),
            r.len(),
            libc::MADV_NOHUGEPAGE,
        );
    }
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
    // SAFETY: advising our own mapping.
    let rc = unsafe {
        libc::madvise(
            r.as_mut_slice().as_mut_ptr().cast(),
            r.len(),
            libc::MADV_POPULATE_WRITE,
        )
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        // EINVAL: a kernel before 5.14; the free count was checked above.
        if e.raw_os_error() != Some(libc::EINVAL) {
            why_not.push(format!("hugetlbfs pages could not be populated: {e}"));
            return None;
        }
    }
    r.touch();
    Some(r)
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
        let samples = match (access, owner) {
            (Access::Forwarded, Some(o)) => self.measure_forwarded(reader, o, &addrs, repeats)?,
            _ => self.measure_flushed(reader, &addrs, repeats)?,
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
        if self.sigmas.is_empty() {
            return None;
        }
        let mut v = self.sigmas.clone();
        let mid = v.len() / 2;
        let (_, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
        Some(*m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Measuring tests share two vCPUs: one at a time.
    static MEASURE: Mutex<()> = Mutex::new(());

    fn measure_lock() -> std::sync::MutexGuard<'static, ()> {
        MEASURE.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn small(bytes: u64, huge: HugeChoice) -> LiveProbe {
        LiveProbe::new(LiveOptions {
            bytes,
            huge,
            ..LiveOptions::default()
        })
        .unwrap()
    }

    /// `n` lines spread over the buffer's pages and offsets.
    fn spread(info: &BufferInfo, n: usize) -> Vec<Line> {
        let pages = info.pages();
        let per = info.lines_per_page();
        (0..n)
            .map(|i| Line {
                page: i % pages,
                offset: ((i * 37 + i / pages) % per) as u32,
            })
            .collect()
    }

    fn has_cap_sys_admin() -> bool {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|caps| caps >> 21 & 1 == 1)
    }

    const X86_CPUINFO: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\nmicrocode\t: 0x2b000461\ncpu MHz\t\t: 2000.000\nflags\t\t: fpu vme de pse tsc clflush\nclflush size\t: 64\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nstepping\t: 8\nflags\t\t: fpu vme de pse tsc clflush\n\n";

    const ARM_CPUINFO: &str = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n";

    const BIG_LITTLE_CPUINFO: &str = "processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x2\nCPU part\t: 0xd05\nCPU revision\t: 0\n\nprocessor\t: 4\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd41\nCPU revision\t: 0\n";

    #[test]
    fn parses_x86_cpuinfo() {
        let c = parse_cpuinfo(X86_CPUINFO);
        assert_eq!(c.model, "Intel(R) Xeon(R) Platinum 8480+");
        assert_eq!(c.stepping, "family 6 model 143 stepping 8");
        assert_eq!(c.processors, 2);
    }

    #[test]
    fn parses_arm_cpuinfo() {
        let c = parse_cpuinfo(ARM_CPUINFO);
        assert_eq!(c.model, "implementer 0x41 part 0xd0c");
        assert_eq!(c.stepping, "variant 0x3 revision 1");
        assert_eq!(c.processors, 2);
        let b = parse_cpuinfo(BIG_LITTLE_CPUINFO);
        assert_eq!(
            b.model,
            "implementer 0x41 part 0xd05 + implementer 0x41 part 0xd41"
        );
        assert_eq!(
            b.stepping,
            "variant 0x2 revision 0 + variant 0x1 revision 0"
        );
        assert_eq!(parse_cpuinfo("").model, "unknown");
    }

    #[test]
    fn parses_node_meminfo() {
        let text = "Node 1 MemTotal:       263724032 kB\nNode 1 MemFree:        250000000 kB\nNode 1 MemUsed:         13724032 kB\n";
        // 263724032 kB = 257543 MiB exactly
        assert_eq!(node_mem_total_bytes(text), Some(257_543 << 20));
        // Rounded down to whole MiB.
        assert_eq!(
            node_mem_total_bytes("Node 0 MemTotal: 2049 kB\n"),
            Some(2 << 20)
        );
        assert_eq!(node_mem_total_bytes("Node 0 MemFree: 5 kB\n"), None);
    }

    #[test]
    fn fingerprint_from_another_machine() {
        let t = SystemText {
            cpuinfo: ARM_CPUINFO.into(),
            online: Some("0-159\n".into()),
            meminfo: None,
            nodes: vec![
                NodeText {
                    id: 1,
                    meminfo: "Node 1 MemTotal: 4194304 kB\n".into(),
                    cpulist: "80-159\n".into(),
                    memory_blocks: Some(34),
                },
                NodeText {
                    id: 0,
                    meminfo: "Node 0 MemTotal: 2097152 kB\n".into(),
                    cpulist: "0-79\n".into(),
                    memory_blocks: Some(17),
                },
                NodeText {
                    id: 2,
                    meminfo: "Node 2 MemTotal: 1048576 kB\n".into(),
                    cpulist: "\n".into(),
                    memory_blocks: Some(9),
                },
            ],
            smt_active: Some("0\n".into()),
            memory_block_size: None,
            memory_blocks: Some(60),
        };
        let f = t.fingerprint();
        assert_eq!(f.source, "live");
        assert_eq!(f.cpu_model, "implementer 0x41 part 0xd0c");
        assert_eq!(f.cpus, 160);
        // No block size in sysfs: the kernel's MemTotal.
        assert_eq!(f.node_memory_bytes, vec![2 << 30, 4 << 30, 1 << 30]);
        assert_eq!(f.memory_basis, MEMORY_MEMTOTAL);
        // With it: the memory present on each node, whatever MemTotal says (a kernel
        // keeps some for itself, and one that fills its memory map lazily after boot
        // shows MemTotal growing for minutes).
        let blocks = SystemText {
            memory_block_size: Some("8000000\n".into()),
            ..t.clone()
        }
        .fingerprint();
        assert_eq!(blocks.node_memory_bytes, vec![17 << 27, 34 << 27, 9 << 27]);
        assert_eq!(blocks.memory_basis, MEMORY_BLOCKS);
        assert_eq!(blocks.modes, f.modes);
        // A node whose folder could not be listed leaves the whole count to MemTotal.
        let mut partial = SystemText {
            memory_block_size: Some("8000000".into()),
            ..t.clone()
        };
        partial.nodes[2].memory_blocks = None;
        assert_eq!(partial.fingerprint().memory_basis, MEMORY_MEMTOTAL);
        // A block size that is not hexadecimal likewise.
        let garbled = SystemText {
            memory_block_size: Some("lots".into()),
            ..t.clone()
        };
        assert_eq!(garbled.fingerprint().memory_basis, MEMORY_MEMTOTAL);
        // Nor does a block size whose product overflows.
        let huge = SystemText {
            memory_block_size: Some("ffffffffffffffff".into()),
            ..t.clone()
        };
        assert_eq!(huge.fingerprint().memory_basis, MEMORY_MEMTOTAL);
        assert_eq!(
            f.modes,
            vec![
                "3 NUMA nodes",
                "node0 cpus 0-79",
                "node1 cpus 80-159",
                "node2 cpus none",
                "SMT off"
            ]
        );
        // Without NUMA nodes in sysfs: one node from /proc/meminfo.
        let flat = SystemText {
            cpuinfo: X86_CPUINFO.into(),
            online: None,
            meminfo: Some("MemTotal: 1048576 kB\nMemAvailable: 1000 kB\n".into()),
            nodes: Vec::new(),
            smt_active: Some("1".into()),
            memory_block_size: None,
            memory_blocks: None,
        }
        .fingerprint();
        assert_eq!(flat.cpus, 2);
        assert_eq!(flat.node_memory_bytes, vec![1 << 30]);
        assert_eq!(flat.modes, vec!["1 NUMA node", "SMT on"]);
        assert_eq!(flat.stepping, "family 6 model 143 stepping 8");
    }

    #[test]
    fn live_fingerprint_describes_this_machine() {
        let f = live_fingerprint();
        assert_eq!(f.source, "live");
        assert!(f.cpus >= 1);
        assert!(!f.node_memory_bytes.is_empty());
        assert!(f
            .node_memory_bytes
            .iter()
            .all(|b| b.is_multiple_of(1 << 20)));
        assert!(f.modes[0].contains("NUMA node"), "{:?}", f.modes);
        assert_ne!(f.cpu_model, "unknown");
        assert!(f.differences(&live_fingerprint()).is_empty());
        // Where sysfs shows memory blocks, they are what is counted.
        if Path::new("/sys/devices/system/memory/block_size_bytes").exists() {
            assert_eq!(f.memory_basis, MEMORY_BLOCKS);
        }
    }

    #[test]
    fn pagemap_entries() {
        assert_eq!(pagemap_pfn(0), None);
        assert_eq!(pagemap_pfn(1 << 63 | 0x1234), Some(0x1234));
        // Soft-dirty (55) and exclusive (56) bits are not part of the PFN.
        assert_eq!(pagemap_pfn(1 << 63 | 1 << 56 | 1 << 55 | 7), Some(7));
        // Present without CAP_SYS_ADMIN: PFN 0.
        assert_eq!(pagemap_pfn(1 << 63 | 1 << 56), Some(0));
        // Swapped, not present.
        assert_eq!(pagemap_pfn(1 << 62 | 99), None);
    }

    #[test]
    fn size_check_names_the_remedy() {
        assert!(check_buffer_size(1 << 20, 4 << 20, 0.5).is_ok());
        let e = check_buffer_size(3 << 20, 4 << 20, 0.5).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)));
        let msg = e.to_string();
        assert!(
            msg.contains("--bytes") && msg.contains("3145728") && msg.contains("4194304"),
            "{msg}"
        );
    }

    #[test]
    fn huge_choice_words() {
        assert_eq!(
            "Require".parse::<HugeChoice>().unwrap(),
            HugeChoice::Require
        );
        assert_eq!(HugeChoice::default().to_string(), "auto");
        assert!(matches!(
            "maybe".parse::<HugeChoice>(),
            Err(HomeError::Usage(_))
        ));
    }

    #[test]
    fn refuses_a_buffer_larger_than_free_memory_allows() {
        // 1 PiB is more than half of any machine's available memory.
        let e = LiveProbe::new(LiveOptions::with_bytes(1 << 50)).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        assert!(e.to_string().contains("--bytes"), "{e}");
        // And a small buffer with a tiny allowed share.
        let e = LiveProbe::new(LiveOptions {
            bytes: 4 << 20,
            max_free_fraction: 1e-9,
            ..LiveOptions::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("--bytes"), "{e}");
        assert!(matches!(
            LiveProbe::new(LiveOptions::with_bytes(0)),
            Err(HomeError::Usage(_))
        ));
    }

    #[test]
    fn refuses_bad_reads() {
        let mut p = small(64 << 10, HugeChoice::Never);
        let cpus = p.cpus();
        assert!(!cpus.is_empty());
        let c0 = cpus[0];
        let line = [Line { page: 0, offset: 0 }];
        let unknown = cpus.iter().max().unwrap() + 1000;
        let e = p
            .read_ns(Access::Flushed, unknown, None, &line, 3)
            .unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        assert!(e.to_string().contains(&unknown.to_string()), "{e}");
        let e = p
            .read_ns(Access::Forwarded, c0, Some(c0), &line, 3)
            .unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        let e = p
            .read_ns(Access::Forwarded, c0, None, &line, 3)
            .unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        let pages = p.buffer().pages();
        let per = p.buffer().lines_per_page() as u32;
        for bad in [
            Line {
                page: pages,
                offset: 0,
            },
            Line {
                page: 0,
                offset: per,
            },
        ] {
            let e = p.read_ns(Access::Flushed, c0, None, &[bad], 3).unwrap_err();
            assert!(matches!(e, HomeError::Usage(_)), "{e}");
        }
        let e = p.read_ns(Access::Flushed, c0, None, &line, 0).unwrap_err();
        assert!(matches!(e, HomeError::Usage(_)), "{e}");
        assert_eq!(p.noise_ns(), None);
        assert!(p
            .read_ns(Access::Flushed, c0, None, &[], 3)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn base_page_buffer() {
        let p = small(100_000, HugeChoice::Never);
        let b = p.buffer();
        assert_eq!(p.backing(), Backing::Base);
        assert!(!b.huge_pages);
        assert_eq!(b.page_bytes, base_page_size() as u64);
        assert!(b.bytes >= 100_000 && b.bytes.is_multiple_of(b.page_bytes));
        assert_eq!(p.origin(), "measured");
    }

    #[test]
    fn physical_addresses() {
        let p = small(4 << 20, HugeChoice::Auto);
        let b = p.buffer();
        eprintln!("notes: {:#?}", p.notes);
        if has_cap_sys_admin() {
            let phys = b.page_phys.as_ref().expect("root reads pagemap");
            assert_eq!(phys.len(), b.pages());
            assert!(b.phys_note.is_none());
            let mut seen = std::collections::HashSet::new();
            for &a in phys {
                assert!(a > 0 && a.is_multiple_of(b.page_bytes), "{a:#x}");
                assert!(seen.insert(a), "{a:#x} twice");
            }
        } else {
            assert!(b.page_phys.is_none());
            assert_eq!(b.phys_note.as_deref(), Some(PHYS_NEED_ROOT));
        }
        if b.huge_pages {
            assert_eq!(b.page_bytes, HUGE_PAGE_BYTES);
            assert_ne!(p.backing(), Backing::Base);
        } else {
            assert_eq!(b.page_bytes, base_page_size() as u64);
        }
    }

    #[test]
    fn require_gives_huge_pages_or_says_why_not() {
        match LiveProbe::new(LiveOptions {
            bytes: 4 << 20,
            huge: HugeChoice::Require,
            ..LiveOptions::default()
        }) {
            Ok(p) => {
                assert!(p.buffer().huge_pages);
                assert_eq!(p.buffer().page_bytes, HUGE_PAGE_BYTES);
            }
            Err(e) => {
                assert!(matches!(e, HomeError::Unsupported(_)), "{e}");
                assert!(e.to_string().contains("nr_hugepages"), "{e}");
            }
        }
    }

    #[test]
    fn flushed_reads_on_this_machine() {
        let _g = measure_lock();
        let mut p = small(4 << 20, HugeChoice::Auto);
        let lines = spread(p.buffer(), 64);
        let c0 = p.cpus()[0];
        let ns = p.read_ns(Access::Flushed, c0, None, &lines, 9).unwrap();
        assert_eq!(ns.len(), 64);
        assert!(ns.iter().all(|v| v.is_finite() && *v > 0.0), "{ns:?}");
        let noise = p.noise_ns().expect("noise after reads");
        assert!(noise.is_finite() && noise >= 0.0);
        let mut s = ns.clone();
        let (med, sd) = crate::probe::median_and_sigma(&mut s);
        eprintln!(
            "flushed: median over lines {med:.1} ns, spread {sd:.1} ns, min {:.1} max {:.1}, noise {noise:.2} ns, timer overhead {:.1} ns, resolution {:.1} ns, huge {}",
            s[0],
            s[s.len() - 1],
            p.timer_overhead_ns(),
            p.timer_resolution_ns(),
            p.buffer().huge_pages
        );
    }

    #[test]
    fn forwarded_reads_on_this_machine() {
        let _g = measure_lock();
        let mut p = small(4 << 20, HugeChoice::Auto);
        let lines = spread(p.buffer(), 64);
        let cpus = p.cpus();
        let before = affinity(0).unwrap();
        if cpus.len() < 2 {
            let e = p
                .read_ns(Access::Forwarded, cpus[0], Some(cpus[0] + 1), &lines, 9)
                .unwrap_err();
            assert!(matches!(e, HomeError::Usage(_)), "{e}");
            return;
        }
        let ns = p
            .read_ns(Access::Forwarded, cpus[0], Some(cpus[1]), &lines, 9)
            .unwrap();
        assert_eq!(ns.len(), 64);
        assert!(ns.iter().all(|v| v.is_finite() && *v > 0.0), "{ns:?}");
        let noise = p.noise_ns().expect("noise after reads");
        assert!(noise.is_finite() && noise >= 0.0);
        let mut s = ns.clone();
        let (med, sd) = crate::probe::median_and_sigma(&mut s);
        eprintln!(
            "forwarded: median over lines {med:.1} ns, spread {sd:.1} ns, min {:.1} max {:.1}, noise {noise:.2} ns, timer overhead {:.1} ns",
            s[0],
            s[s.len() - 1],
            p.timer_overhead_ns()
        );
        // The caller's thread keeps its own affinity: it was never pinned.
        assert_eq!(affinity(0).unwrap(), before);
    }
}
