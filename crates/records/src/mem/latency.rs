//! `mem.latency`: a pointer chase's latency curve or one matrix point, and the kind
//! of every latency figure (what it is, besides the machine).

use super::{PagesObtained, Placement, Timer};
use numalab_schema::{units, RecordKind};
use numalab_stats::Summary;
use serde::{Deserialize, Serialize};

/// Block of the page-local order, bytes: a 4 KiB block, whatever pages back it.
pub const BLOCK_BYTES: u64 = 4096;

/// The order in which lines are visited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Random 4 KiB blocks, random lines within each block.
    PageLocal,
    /// Uniformly random over all lines.
    Global,
}

impl Order {
    /// Parses "page" / "page-local" / "block" or "global".
    pub fn parse(text: &str) -> Result<Order, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "page" | "page-local" | "block" => Ok(Order::PageLocal),
            "global" => Ok(Order::Global),
            _ => Err(format!("--order {text:?}: use page or global")),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Order::PageLocal => "page-local",
            Order::Global => "global",
        }
    }

    /// What it is, in words ("random over the working set", "random within 4 KiB blocks").
    pub fn describe(self, block_bytes: Option<u64>) -> String {
        match self {
            Order::Global => "random over the working set".into(),
            Order::PageLocal => format!(
                "random within {} blocks",
                numalab_schema::units::bytes(block_bytes.unwrap_or(BLOCK_BYTES))
            ),
        }
    }
}

/// One working-set size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Working set, bytes.
    pub working_set_bytes: u64,
    /// Lines in the chain.
    pub lines: u64,
    /// Dependent loads per timed batch.
    pub loads_per_batch: u64,
    /// Raw samples: ns per load of each batch (clock read cost subtracted).
    pub sample_ns: Vec<f64>,
    /// Over batches: p50 (median), p90, p99...
    pub latency_ns: Summary,
    /// Median in cycles, when the frequency is known.
    pub cycles_p50: Option<f64>,
}

/// A plateau of the curve, named after a cache level when its sizes fit one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// "L1d", "L2", "L3", "memory", or "plateau N" when no cache matches; "memory at L3
    /// sizes" (any cache) for a plateau at that cache's sizes whose latency is above half
    /// of memory's (`cache_bytes` then absent): the cache does not serve this CPU there.
    pub name: String,
    /// Size of the matching cache, bytes.
    pub cache_bytes: Option<u64>,
    /// First and last working set on the plateau, bytes.
    pub from_bytes: u64,
    /// Last working set on the plateau.
    pub to_bytes: u64,
    /// Median latency on the plateau (median of the points' medians), ns.
    pub latency_ns: f64,
    /// The same in cycles, when the frequency is known.
    pub cycles: Option<f64>,
}

/// When plateau `i` of `levels` repeats an earlier plateau's name (numalab_mem's
/// latency curve numbers a second plateau named after the same cache "L2 (2)"), the name
/// it repeats: the plateau is a second step within that cache's sizes (or within memory
/// at a cache's sizes), not another level.
pub fn repeat_of(levels: &[Level], i: usize) -> Option<&str> {
    let (base, n) = levels.get(i)?.name.rsplit_once(" (")?;
    n.strip_suffix(')')?.parse::<u32>().ok()?;
    levels[..i].iter().any(|e| e.name == base).then_some(base)
}

/// A step between levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Level before.
    pub from: String,
    /// Level after.
    pub to: String,
    /// Working set in the middle of the step (geometric mean crossing), bytes.
    pub at_bytes: u64,
    /// Latency after / before.
    pub ratio: f64,
}

/// Latency of one CPU to memory placed by one policy: a curve, or one matrix point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRecord {
    /// The chasing CPU.
    pub cpu: u32,
    /// Node pair, in a matrix.
    pub matrix: Option<super::MatrixCell>,
    /// Where the thread and pages really were.
    pub placement: Placement,
    /// Pages obtained.
    pub pages: PagesObtained,
    /// Visiting order.
    pub order: Order,
    /// Seed of the order.
    pub seed: u64,
    /// Distance between chain slots, bytes (the line size, or 2 lines).
    pub stride_bytes: u64,
    /// What the figures are (idle, order, pages, locality, the last-level cache they
    /// are set against); absent in records written before numalab 0.9, see
    /// [`LatencyRecord::kind`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    /// The points, ascending working set.
    pub points: Vec<Point>,
    /// Plateaus (curves only).
    pub levels: Vec<Level>,
    /// Steps between plateaus.
    pub steps: Vec<Step>,
    /// Frequency used for cycles (none: cycles not given).
    pub frequency: Option<super::Frequency>,
    /// Timer.
    pub timer: Timer,
}

impl RecordKind for LatencyRecord {
    const KIND: &'static str = "mem.latency";
}

impl LatencyRecord {
    /// What its figures are: the recorded kind, or for an older record the one its
    /// fields imply (page-local blocks were then the page size: 2 MiB with THP).
    pub fn kind(&self) -> Kind {
        self.kind.clone().unwrap_or_else(|| Kind {
            load: Load::Idle,
            order: self.order,
            block_bytes: (self.order == Order::PageLocal).then(|| {
                if self.pages.obtained == "thp" {
                    2 << 20
                } else {
                    self.pages.page_bytes
                }
            }),
            stride_bytes: self.stride_bytes,
            pages: self.pages.obtained.clone(),
            locality: Locality::of(&self.placement),
            llc_bytes: None,
        })
    }
}

/// Idle or under load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Load {
    /// Nothing else runs on purpose.
    Idle,
    /// Other CPUs move data at the same time.
    Loaded,
}

/// Where the chased memory is, seen from the chasing CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Locality {
    /// All pages on the chasing CPU's node.
    Local,
    /// All pages on other nodes.
    Remote,
    /// Some here, some elsewhere (interleave, or a placement that went astray).
    Mixed,
}

impl Locality {
    /// From where the pages were found, against the CPUs' nodes.
    pub fn of(p: &Placement) -> Locality {
        let total: u64 = p.pages_per_node.iter().map(|(_, c)| c).sum();
        let local: u64 = p
            .pages_per_node
            .iter()
            .filter(|(n, _)| p.cpu_nodes.contains(n))
            .map(|(_, c)| c)
            .sum();
        if total == 0 {
            // Nothing found where the pages are: judge by the nodes asked for.
            if p.expected_nodes.iter().all(|n| p.cpu_nodes.contains(n)) {
                Locality::Local
            } else if p.expected_nodes.iter().all(|n| !p.cpu_nodes.contains(n)) {
                Locality::Remote
            } else {
                Locality::Mixed
            }
        } else if local as f64 >= 0.99 * total as f64 {
            Locality::Local
        } else if local as f64 <= 0.01 * total as f64 {
            Locality::Remote
        } else {
            Locality::Mixed
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Locality::Local => "local",
            Locality::Remote => "remote",
            Locality::Mixed => "mixed local and remote",
        }
    }
}

/// What a latency figure is: everything besides the machine that changes it. Two
/// figures are the same quantity only if their kinds (and working sets) are equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Kind {
    /// Idle, or with traffic from other CPUs.
    pub load: Load,
    /// The visiting order.
    pub order: Order,
    /// Block of [`Order::PageLocal`], bytes (None for [`Order::Global`]).
    pub block_bytes: Option<u64>,
    /// Distance between the chain's slots, bytes.
    pub stride_bytes: u64,
    /// Pages obtained: "base", "thp", "thp-partial", "hugetlb".
    pub pages: String,
    /// Local, remote or mixed memory.
    pub locality: Locality,
    /// The last-level cache the chasing CPU sees, bytes, when known.
    pub llc_bytes: Option<u64>,
}

impl Kind {
    /// The kind of a chase by `opts` whose pages and placement are known.
    pub fn measured(
        load: Load,
        order: Order,
        stride_bytes: u64,
        pages: &PagesObtained,
        placement: &Placement,
        llc_bytes: Option<u64>,
    ) -> Kind {
        Kind {
            load,
            order,
            block_bytes: (order == Order::PageLocal).then_some(BLOCK_BYTES),
            stride_bytes,
            pages: pages.obtained.clone(),
            locality: Locality::of(placement),
            llc_bytes,
        }
    }

    /// Pages in words: "huge pages (THP)", "base pages".
    pub fn pages_text(&self) -> String {
        match self.pages.as_str() {
            "thp" => "huge pages (THP)".into(),
            "thp-partial" => "partly huge pages (THP)".into(),
            "base" => "base pages".into(),
            p if p.starts_with("hugetlb") => format!("huge pages ({p})"),
            p => format!("{p} pages"),
        }
    }

    /// True for huge pages, whole (THP or hugetlbfs).
    pub fn huge(&self) -> bool {
        self.pages == "thp" || self.pages.starts_with("hugetlb")
    }

    /// The working set in words, set against the last-level cache: "256 MiB (8x LLC)".
    pub fn size_text(&self, working_set_bytes: u64) -> String {
        let size = units::bytes(working_set_bytes);
        match self.llc_bytes.filter(|&l| l > 0) {
            Some(l) => {
                let r = working_set_bytes as f64 / l as f64;
                if r >= 1.95 {
                    format!("{size} ({r:.0}x LLC)")
                } else if r >= 0.5 {
                    format!("{size} ({r:.1}x LLC)")
                } else {
                    format!("{size} (1/{:.0} of LLC)", 1.0 / r)
                }
            }
            None => size,
        }
    }

    /// The whole kind in words, for a working set:
    /// "idle, random over 256 MiB (8x LLC), huge pages (THP), local".
    pub fn label(&self, working_set_bytes: u64) -> String {
        let order = match self.order {
            Order::Global => format!("random over {}", self.size_text(working_set_bytes)),
            Order::PageLocal => format!(
                "random within {} blocks of {}",
                units::bytes(self.block_bytes.unwrap_or(BLOCK_BYTES)),
                self.size_text(working_set_bytes)
            ),
        };
        let load = match self.load {
            Load::Idle => "idle",
            Load::Loaded => "loaded",
        };
        format!(
            "{load}, {order}, {}, {}",
            self.pages_text(),
            self.locality.name()
        )
    }

    /// The same quantity as `other` but for the page kind: same load, order, block,
    /// stride and locality.
    pub fn same_but_pages(&self, other: &Kind) -> bool {
        self.load == other.load
            && self.order == other.order
            && self.block_bytes == other.block_bytes
            && self.stride_bytes == other.stride_bytes
            && self.locality == other.locality
    }

    /// Is this what a performance engineer calls memory latency: uniformly random
    /// over a working set at least 4x the last-level cache (unknown cache: at least
    /// 64 MiB)?
    pub fn is_memory(&self, working_set_bytes: u64) -> bool {
        self.order == Order::Global
            && match self.llc_bytes.filter(|&l| l > 0) {
                Some(l) => working_set_bytes >= 4 * l,
                None => working_set_bytes >= 64 << 20,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(names: &[&str]) -> Vec<Level> {
        names
            .iter()
            .map(|n| Level {
                name: n.to_string(),
                cache_bytes: None,
                from_bytes: 0,
                to_bytes: 0,
                latency_ns: 1.0,
                cycles: None,
            })
            .collect()
    }

    #[test]
    fn a_numbered_plateau_repeats_only_a_name_before_it() {
        let l = levels(&[
            "L1d",
            "L2",
            "L2 (2)",
            "plateau (2)",
            "memory at L3 sizes",
            "memory at L3 sizes (3)",
            "L3 (x)",
        ]);
        let r: Vec<Option<&str>> = (0..=l.len()).map(|i| repeat_of(&l, i)).collect();
        assert_eq!(
            r,
            [
                None,
                None,
                Some("L2"),
                None,
                None,
                Some("memory at L3 sizes"),
                None,
                None
            ]
        );
    }
}
