//! `mem.migrate`: moving pages between nodes by three methods.

use super::kernel::Isa;
use super::Timer;
use numalab_schema::memory::PagePlacement;
use numalab_schema::RecordKind;
use numalab_stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A way of moving pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// One thread, libc `memcpy`, into memory bound to the target node.
    Memcpy,
    /// The `move_pages(2)` system call.
    MovePages,
    /// One thread, SIMD loads and non-temporal stores, into memory bound to the target.
    StreamCopy,
}

impl Method {
    /// All three.
    pub const ALL: [Method; 3] = [Method::Memcpy, Method::MovePages, Method::StreamCopy];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Memcpy => "memcpy",
            Method::MovePages => "move_pages",
            Method::StreamCopy => "stream_copy",
        }
    }

    /// Parses a name.
    pub fn parse(text: &str) -> Result<Method, String> {
        let t = text.trim().to_ascii_lowercase().replace('-', "_");
        Method::ALL
            .into_iter()
            .find(|m| m.name() == t || (t == "stream" && *m == Method::StreamCopy))
            .ok_or_else(|| {
                format!("unknown method {text:?} (methods: memcpy, move_pages, stream_copy)")
            })
    }
}

/// The reference throughput figures are compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// "link_peak" (given by the user) or "local_copy" (measured).
    pub kind: String,
    /// Payload GB/s.
    pub gbps: f64,
    /// How it was obtained.
    pub detail: String,
}

/// One method in one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodResult {
    /// The method.
    pub method: Method,
    /// Raw samples: time of each round, ns.
    pub sample_ns: Vec<f64>,
    /// Payload throughput over rounds, GB/s; None when nothing moved (same node).
    pub throughput_gbps: Option<Summary>,
    /// Median throughput as % of the reference.
    pub percent_of_reference: Option<f64>,
    /// Median time per page unit, ns.
    pub ns_per_page: f64,
    /// Base pages that ended on the target node (last round).
    pub pages_on_target: u64,
    /// Base pages that were not moved (last round), by reason ("ENOMEM": 12).
    pub pages_not_moved: BTreeMap<String, u64>,
    /// Where the destination pages are (last round).
    pub destination: PagePlacement,
    /// The destination holds the source's data (sampled, one word per page).
    pub data_verified: bool,
    /// A remark (e.g. why no throughput is given).
    pub note: Option<String>,
}

/// One cell: moving `pages` pages of `unit_bytes` from one node to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MigrateRecord {
    /// Source node.
    pub src_node: u32,
    /// Target node.
    pub dst_node: u32,
    /// Why this pair ("nearest", "farthest", "same-node baseline"...).
    pub pair_role: String,
    /// SLIT distance.
    pub distance: Option<u64>,
    /// The CPU that moved the pages.
    pub cpu: u32,
    /// Its node.
    pub cpu_node: Option<u32>,
    /// Page unit, bytes.
    pub unit_bytes: u64,
    /// Pages (units).
    pub pages: u64,
    /// Base pages.
    pub base_pages: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// How the unit maps to real pages here.
    pub unit_note: Option<String>,
    /// Source and target are the same node.
    pub same_node: bool,
    /// Destination faulted in before timing.
    pub prefault: bool,
    /// Time to fault in a fresh destination on the target node, ns per base page
    /// (measured separately each round; it is part of a cold copy's time).
    pub destination_fault_ns_per_base_page: Option<f64>,
    /// Source placement (first round): pages per node.
    pub source: PagePlacement,
    /// The methods.
    pub methods: Vec<MethodResult>,
    /// The fastest method with a throughput.
    pub winner: Option<Method>,
    /// Why it won, from the figures.
    pub why: String,
    /// The reference.
    pub reference: Reference,
    /// The sweep clamp, if any.
    pub clamp_note: Option<String>,
    /// ISA of the streaming copy.
    pub isa: Isa,
    /// Timer.
    pub timer: Timer,
}

impl RecordKind for MigrateRecord {
    const KIND: &'static str = "mem.migrate";
}

/// A few sentences over many cells: per pair and unit, which method wins for small
/// and large counts, and the best share of the reference.
pub fn conclude(records: &[MigrateRecord]) -> Vec<String> {
    let mut groups: BTreeMap<(u32, u32, u64), Vec<&MigrateRecord>> = BTreeMap::new();
    for r in records {
        groups
            .entry((r.src_node, r.dst_node, r.unit_bytes))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for ((src, dst, unit), mut rs) in groups {
        rs.sort_by_key(|r| r.pages);
        let winners: Vec<(u64, Option<Method>)> = rs.iter().map(|r| (r.pages, r.winner)).collect();
        let mut spans: Vec<(Option<Method>, u64, u64)> = Vec::new();
        for (pages, w) in winners {
            match spans.last_mut() {
                Some(s) if s.0 == w => s.2 = pages,
                _ => spans.push((w, pages, pages)),
            }
        }
        let best = rs
            .iter()
            .flat_map(|r| r.methods.iter().filter_map(|m| m.percent_of_reference))
            .fold(0.0, f64::max);
        let span_text = spans
            .iter()
            .map(|(w, a, b)| {
                let who = w.map_or("none", |m| m.name());
                if a == b {
                    format!("{who} at {a} pages")
                } else {
                    format!("{who} from {a} to {b} pages")
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        let role = rs.first().map(|r| r.pair_role.clone()).unwrap_or_default();
        out.push(format!(
            "node {src} -> node {dst} ({role}), {} pages: {span_text}; best {best:.0}% of the reference",
            numalab_schema::units::bytes(unit)
        ));
    }
    out
}
