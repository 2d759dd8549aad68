//! Memory probes: bandwidth, latency, loaded latency and page migration, per NUMA node
//! pair, on threads pinned through hwloc and memory whose placement is checked.
//!
//! This is what Intel MLC, Arm's system characterization tool, STREAM and
//! likwid-bench measure, done openly on both architectures and with distributions
//! instead of single numbers. Each probe is split the same way:
//!
//! - a **plan** built and checked against a [`numalab_schema::Machine`] before anything
//!   runs (unknown CPUs or nodes, too many threads, sizes beyond the free memory of the
//!   target node are errors here), made of **cells** with stable record keys, so a
//!   killed run resumes cell by cell and plans for a 160-core, 8-node machine can be
//!   tested on a laptop with [`numalab_topo::bind::FakePlacer`];
//! - an executor taking the plan and a [`Placer`] and delivering typed records to a
//!   [`Sink`] as each cell completes.
//!
//! Modules: [`kernels`] (the SIMD kernels and their byte accounting), [`pool`] (pinned
//! workers, bound and first-touched memory, placement checks), [`budget`] (how much
//! memory a node can safely give), [`chase`] (random cyclic pointer chains),
//! [`bandwidth`], [`latency`], [`loaded`], [`migrate`].

pub mod bandwidth;
pub mod budget;
pub mod chase;
pub mod kernels;
pub mod latency;
pub mod loaded;
pub mod migrate;
pub mod pool;

use numalab_schema::{Classify, ErrorClass, Record};
use numalab_topo::TopoError;
use serde::{Deserialize, Serialize};

pub use numalab_topo::bind::Placer;

/// A memory-probe error: what failed, on which input, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    /// The request is wrong (unknown kernel, too many threads, size too large...).
    #[error("{0}")]
    Usage(String),
    /// This machine cannot do it (no huge pages reserved, no such ISA...).
    #[error("{0}")]
    Unsupported(String),
    /// Pinning, binding or a page query failed.
    #[error(transparent)]
    Topo(#[from] TopoError),
    /// A kernel could not run.
    #[error(transparent)]
    Kernel(#[from] kernels::KernelError),
    /// Something failed while measuring.
    #[error("{0}")]
    Runtime(String),
    /// Writing a record failed (the sink's error, as text).
    #[error("{0}")]
    Output(String),
    /// Stopped by Ctrl-C.
    #[error("interrupted; everything measured so far was kept")]
    Interrupted,
}

impl Classify for MemError {
    fn class(&self) -> ErrorClass {
        match self {
            MemError::Usage(_) => ErrorClass::Usage,
            MemError::Unsupported(_) => ErrorClass::Unsupported,
            MemError::Topo(e) => e.class(),
            MemError::Kernel(kernels::KernelError::Lengths(_)) => ErrorClass::Runtime,
            MemError::Kernel(_) => ErrorClass::Unsupported,
            MemError::Runtime(_) | MemError::Output(_) => ErrorClass::Runtime,
            MemError::Interrupted => ErrorClass::Interrupted,
        }
    }
}

/// Where records go as cells complete (the CLI's journal, `evaluate`, a test's vector).
pub trait Sink: Send {
    /// Whether a record with this key already exists (a resumed run skips its cell).
    fn done(&self, _key: &str) -> bool {
        false
    }
    /// Takes a finished record.
    fn push(&mut self, record: Record) -> Result<(), MemError>;
    /// Progress: `done` of `total` units of the current step, named `label`.
    fn progress(&mut self, _label: &str, _done: u64, _total: u64) {}
}

impl Sink for Vec<Record> {
    fn done(&self, key: &str) -> bool {
        self.iter().any(|r| r.key == key)
    }
    fn push(&mut self, record: Record) -> Result<(), MemError> {
        Vec::push(self, record);
        Ok(())
    }
}

/// What a plan's execution produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Records written in this run.
    pub written: usize,
    /// Cells skipped because their record already existed.
    pub skipped: usize,
    /// Cells that failed, with their key and error; the other cells went on.
    pub failed: Vec<(String, MemError)>,
    /// Stopped by Ctrl-C before the end.
    pub interrupted: bool,
}

impl Outcome {
    /// The error class the whole run ends with, if not success.
    pub fn class(&self) -> Option<ErrorClass> {
        if self.interrupted {
            Some(ErrorClass::Interrupted)
        } else if self.failed.is_empty() {
            None
        } else if self.written > 0 || self.skipped > 0 {
            Some(ErrorClass::Partial)
        } else {
            Some(self.failed[0].1.class())
        }
    }
}

/// Which pages back the memory of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "size_bytes")]
pub enum PageRequest {
    /// Base pages only (transparent huge pages refused for the region).
    Base,
    /// Transparent huge pages (asked with MADV_HUGEPAGE; the kernel may not comply).
    Thp,
    /// hugetlbfs pages of this size from the reserved pool.
    HugeTlb(u64),
}

impl PageRequest {
    /// Parses `base`, `thp`, `hugetlb` (default 2 MiB) or `hugetlb:1GiB`.
    pub fn parse(text: &str) -> Result<PageRequest, String> {
        let t = text.trim().to_ascii_lowercase();
        match t.as_str() {
            "base" | "4k" | "small" => Ok(PageRequest::Base),
            "thp" | "huge" => Ok(PageRequest::Thp),
            "hugetlb" => Ok(PageRequest::HugeTlb(2 << 20)),
            _ => {
                if let Some(size) = t.strip_prefix("hugetlb:") {
                    let b = numalab_schema::units::parse_bytes(size)?;
                    if !b.is_power_of_two() || b < 4096 {
                        return Err(format!(
                            "--pages {text:?}: {b} bytes is not a huge page size"
                        ));
                    }
                    Ok(PageRequest::HugeTlb(b))
                } else {
                    Err(format!(
                        "--pages {text:?}: use base, thp, hugetlb or hugetlb:SIZE (e.g. hugetlb:1GiB)"
                    ))
                }
            }
        }
    }

    /// A short name for keys and tables ("base", "thp", "hugetlb-2MiB").
    pub fn name(&self) -> String {
        match self {
            PageRequest::Base => "base".into(),
            PageRequest::Thp => "thp".into(),
            PageRequest::HugeTlb(b) => format!(
                "hugetlb-{}",
                numalab_schema::units::bytes(*b).replace(' ', "")
            ),
        }
    }

    /// The region kind to map.
    pub fn page_kind(&self) -> numalab_topo::bind::PageKind {
        match self {
            PageRequest::Base => numalab_topo::bind::PageKind::Base,
            PageRequest::Thp => numalab_topo::bind::PageKind::Transparent,
            PageRequest::HugeTlb(b) => numalab_topo::bind::PageKind::HugeTlb(*b),
        }
    }
}

/// The pages a probe actually got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagesObtained {
    /// What was asked for.
    pub requested: PageRequest,
    /// "base", "thp", "thp-partial" (some huge pages) or "hugetlb".
    pub obtained: String,
    /// Size of the pages the memory is managed in (the base page unless hugetlbfs).
    pub page_bytes: u64,
    /// Bytes backed by transparent huge pages (from /proc/self/smaps); None if unknown.
    pub thp_bytes: Option<u64>,
    /// Bytes mapped.
    pub total_bytes: u64,
}

impl PagesObtained {
    /// Fraction of the memory on huge pages (THP or hugetlbfs).
    pub fn huge_fraction(&self) -> f64 {
        match self.requested {
            PageRequest::HugeTlb(_) => 1.0,
            _ => self.thp_bytes.unwrap_or(0) as f64 / self.total_bytes.max(1) as f64,
        }
    }

    /// Combines several regions' figures.
    pub fn merge(parts: &[PagesObtained]) -> Option<PagesObtained> {
        let first = parts.first()?;
        let total: u64 = parts.iter().map(|p| p.total_bytes).sum();
        let thp: Option<u64> = parts.iter().map(|p| p.thp_bytes).sum();
        Some(PagesObtained::describe(
            first.requested,
            first.page_bytes,
            thp,
            total,
        ))
    }

    /// Builds the description from raw figures.
    pub fn describe(
        requested: PageRequest,
        page_bytes: u64,
        thp_bytes: Option<u64>,
        total: u64,
    ) -> PagesObtained {
        let obtained = match requested {
            PageRequest::HugeTlb(_) => "hugetlb".to_string(),
            _ => match thp_bytes {
                Some(0) | None => "base".into(),
                Some(t) if t * 100 >= total * 95 => "thp".into(),
                Some(_) => "thp-partial".into(),
            },
        };
        PagesObtained {
            requested,
            obtained,
            page_bytes,
            thp_bytes,
            total_bytes: total,
        }
    }
}

/// Where threads and memory of one measurement really were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Binding backend ("hwloc", or "fake" in tests of plans).
    pub backend: String,
    /// PUs the threads were pinned to, in worker order.
    pub cpus: Vec<u32>,
    /// NUMA nodes of those PUs (distinct, ascending).
    pub cpu_nodes: Vec<u32>,
    /// The memory policy asked for.
    pub policy: numalab_topo::bind::MemPolicy,
    /// Nodes the pages should be on.
    pub expected_nodes: Vec<u32>,
    /// Pages per node the kernel reports, over all the memory of the measurement.
    pub pages_per_node: Vec<(u32, u64)>,
    /// Pages not allocated when checked.
    pub pages_not_present: u64,
    /// Fraction of present pages on the expected nodes.
    pub fraction_expected: f64,
}

impl Placement {
    /// A warning when pages are not where they were asked to be.
    pub fn warning(&self) -> Option<numalab_schema::Warning> {
        if self.fraction_expected >= 0.99 && self.pages_not_present == 0 {
            return None;
        }
        let per = self
            .pages_per_node
            .iter()
            .map(|(n, c)| format!("node {n}: {c}"))
            .collect::<Vec<_>>()
            .join(", ");
        Some(
            numalab_schema::Warning::new(
                "placement_mismatch",
                format!(
                    "only {:.1}% of the pages are on node(s) {} as asked ({per}; {} not present)",
                    self.fraction_expected * 100.0,
                    numalab_schema::cpulist::format(&self.expected_nodes),
                    self.pages_not_present
                ),
            )
            .with_remedy("the node may be short of free memory, or a cgroup cpuset limits its mems; see `numalab doctor`"),
        )
    }
}

/// The timer facts every timed record carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timer {
    /// The clock check made before measuring.
    pub check: numalab_clock::ClockCheck,
    /// Nanoseconds subtracted from each timed interval (one clock read), or 0 where the
    /// intervals are so long that it does not matter.
    pub subtracted_ns: f64,
}

/// Checks the clock and turns its problems into warnings.
pub fn check_clock() -> (numalab_clock::ClockCheck, Vec<numalab_schema::Warning>) {
    let c = numalab_clock::check(200_000);
    let w = c
        .problems()
        .into_iter()
        .map(|p| numalab_schema::Warning::new("clock", p))
        .collect();
    (c, w)
}

/// The CPU frequency to turn ns into cycles, when the machine description knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frequency {
    /// kHz used for the conversion.
    pub khz: u64,
    /// Where it comes from ("cpufreq max", "hwloc cpukinds base"...): the clock the core
    /// actually ran at is not known, so cycles are approximate.
    pub source: String,
}

/// The frequency of `pu` from the machine description, if any.
pub fn frequency_of(machine: &numalab_schema::Machine, pu: u32) -> Option<Frequency> {
    let d = machine.frequencies.iter().find(|d| d.cpus.contains(&pu))?;
    let (khz, what) = if let Some(k) = d.max_khz {
        (k, "max")
    } else if let Some(k) = d.base_khz {
        (k, "base")
    } else {
        (d.current_khz?, "current")
    };
    (khz > 0).then(|| Frequency {
        khz,
        source: format!("{} {what}", d.origin),
    })
}

/// Rounds `bytes` up to a multiple of `to`.
pub(crate) fn round_up(bytes: u64, to: u64) -> u64 {
    bytes.div_ceil(to) * to
}

/// The last-level cache total of the machine, or a stand-in when hwloc does not know
/// it (32 MiB; said in the plan's notes by the callers).
pub fn llc_bytes(machine: &numalab_schema::Machine) -> (u64, Option<String>) {
    match machine.last_level_cache_total() {
        Some(b) if b > 0 => (b, None),
        _ => (
            32 << 20,
            Some("the last-level cache size is unknown; sizes assume 32 MiB".into()),
        ),
    }
}

/// The last-level cache one CPU sees (the largest data or unified cache instance that
/// serves it): what a single chasing thread can hold. Falls back to [`llc_bytes`].
pub fn llc_of_cpu(machine: &numalab_schema::Machine, pu: u32) -> (u64, Option<String>) {
    use numalab_schema::machine::CacheKind;
    machine
        .caches
        .iter()
        .filter(|c| c.cpus.contains(&pu) && matches!(c.kind, CacheKind::Data | CacheKind::Unified))
        .max_by_key(|c| (c.level, c.size_bytes))
        .and_then(|c| c.size_bytes)
        .filter(|&b| b > 0)
        .map_or_else(|| llc_bytes(machine), |b| (b, None))
}
