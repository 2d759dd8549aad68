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

/// Per-node page counts of a region, as the kernel reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PagePlacement {
    /// (node OS index, pages on it), ascending by node.
    pub pages_per_node: Vec<(u32, u64)>,
    /// Pages not yet allocated (never touched).
    pub not_present: u64,
}

impl PagePlacement {
    /// Counts per-page nodes.
    pub fn from_page_nodes(nodes: &[Option<u32>]) -> Self {
        let mut map = std::collections::BTreeMap::new();
        let mut absent = 0;
        for n in nodes {
            match n {
                Some(n) => *map.entry(*n).or_insert(0u64) += 1,
                None => absent += 1,
            }
        }
        PagePlacement {
            pages_per_node: map.into_iter().collect(),
            not_present: absent,
        }
    }

    /// Fraction of present pages on the given nodes (1.0 = all of them).
    pub fn fraction_on(&self, nodes: &[u32]) -> f64 {
        let total: u64 = self.pages_per_node.iter().map(|(_, c)| c).sum();
        if total == 0 {
            return 0.0;
        }
        let on: u64 = self
            .pages_per_node
            .iter()
            .filter(|(n, _)| nodes.contains(n))
            .map(|(_, c)| c)
            .sum();
        on as f64 / total as f64
    }
}
