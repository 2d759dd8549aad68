//! Records of the memory probes (`mem.bandwidth`, `mem.latency`, `mem.loaded`,
//! `mem.migrate`) and what they share: the pages obtained, where threads and pages
//! really were, the timer. `numalab_mem` measures them and re-exports them under its
//! own paths.

pub mod bandwidth;
pub mod kernel;
pub mod latency;
pub mod loaded;
pub mod migrate;

pub use bandwidth::{BandwidthRecord, MatrixCell, Verification};
pub use latency::{Kind, LatencyRecord, Load, Locality};
pub use loaded::{LoadedPoint, LoadedRecord, Traffic};
pub use migrate::{Method, MethodResult, MigrateRecord, Reference};

use serde::{Deserialize, Serialize};

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
    pub fn page_kind(&self) -> numalab_schema::memory::PageKind {
        match self {
            PageRequest::Base => numalab_schema::memory::PageKind::Base,
            PageRequest::Thp => numalab_schema::memory::PageKind::Transparent,
            PageRequest::HugeTlb(b) => numalab_schema::memory::PageKind::HugeTlb(*b),
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
    pub policy: numalab_schema::memory::MemPolicy,
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
    pub check: numalab_schema::clock::ClockCheck,
    /// Nanoseconds subtracted from each timed interval (one clock read), or 0 where the
    /// intervals are so long that it does not matter.
    pub subtracted_ns: f64,
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
