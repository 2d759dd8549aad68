//! How memory is asked for: the NUMA policy of a region and the pages that back it
//! (the vocabulary; `numalab_topo::bind` applies them).

use serde::{Deserialize, Serialize};

/// Where pages of a region should go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "policy", content = "nodes")]
pub enum MemPolicy {
    /// The kernel's default: each page on the node of the CPU that first touches it.
    FirstTouch,
    /// Only these nodes (strict: allocation fails rather than spill elsewhere).
    Bind(Vec<u32>),
    /// Round-robin page by page over these nodes.
    Interleave(Vec<u32>),
    /// This node if it has free memory, else anywhere (Linux MPOL_PREFERRED).
    Preferred(u32),
}

impl std::fmt::Display for MemPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: &[u32]| crate::cpulist::format(v);
        match self {
            MemPolicy::FirstTouch => write!(f, "first-touch"),
            MemPolicy::Bind(n) => write!(f, "bind:{}", list(n)),
            MemPolicy::Interleave(n) => write!(f, "interleave:{}", list(n)),
            MemPolicy::Preferred(n) => write!(f, "preferred:{n}"),
        }
    }
}

/// Which pages back a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageKind {
    /// Base pages only (transparent huge pages are refused with MADV_NOHUGEPAGE).
    Base,
    /// Ask for transparent huge pages (MADV_HUGEPAGE); the kernel may or may not comply.
    Transparent,
    /// hugetlbfs pages of this size from the reserved pool.
    HugeTlb(u64),
}
