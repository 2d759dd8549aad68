//! Facts derived from records that several parts of the report need (sections,
//! findings, metrics), so that none of them depends on another for them: the machine a
//! bundle describes, the headline memory-latency matrix and what its figures are, the
//! kernel a bandwidth matrix is shown for, the GB/s of each timed round.

use crate::load::Loaded;
use numalab_records::evaluate::TopologyRecord;
use numalab_records::mem::latency::LatencyRecord;
use numalab_records::mem::BandwidthRecord;
use numalab_schema::Machine;

/// The machine a bundle describes: its `topo.machine` record, else the envelope's.
pub fn machine_of(l: &Loaded) -> Option<Machine> {
    l.records_of::<TopologyRecord>()
        .into_iter()
        .next()
        .map(|(_, t)| t.machine)
        .or_else(|| l.bundle.envelope.host.topology.clone())
}

/// GB/s of each timed round of a bandwidth record.
pub fn round_gbps(r: &BandwidthRecord) -> Vec<f64> {
    r.sample_ns
        .iter()
        .filter(|ns| **ns > 0.0)
        .map(|ns| r.stream_bytes_per_sample as f64 / ns)
        .collect()
}

/// The kernel a matrix is shown for: triad when measured, else the first.
pub fn matrix_kernel(recs: &[BandwidthRecord]) -> Option<String> {
    let names: Vec<String> = recs
        .iter()
        .filter(|r| r.matrix.is_some())
        .map(|r| r.kernel.name())
        .collect();
    if names.iter().any(|n| n == "triad") {
        Some("triad".into())
    } else {
        names.first().cloned()
    }
}

/// The node-matrix cells of the headline memory latency: one page kind asked for, the
/// one whose cells all got huge pages (THP or hugetlbfs) when there is one, else the
/// kind with the most cells. Cells of other page kinds (the local pairs again on base
/// pages) measure the translation cost beside it.
pub fn headline_matrix(lat: &[LatencyRecord]) -> Vec<&LatencyRecord> {
    let matrix: Vec<&LatencyRecord> = lat.iter().filter(|r| r.matrix.is_some()).collect();
    let mut asked: Vec<String> = Vec::new();
    for r in &matrix {
        let n = r.pages.requested.name();
        if !asked.contains(&n) {
            asked.push(n);
        }
    }
    let of = |n: &str| -> Vec<&LatencyRecord> {
        matrix
            .iter()
            .copied()
            .filter(|r| r.pages.requested.name() == n)
            .collect()
    };
    let pick = asked
        .iter()
        .find(|n| of(n).iter().all(|r| r.kind().huge()))
        .or_else(|| asked.iter().max_by_key(|n| of(n).len()));
    pick.map(|n| of(n)).unwrap_or_default()
}

/// A latency record's figure at working set `ws` in words, without the locality (the
/// node pair says it): "random over 256 MiB (8x LLC), huge pages (THP)".
pub fn latency_kind_text(k: &numalab_records::mem::latency::Kind, ws: u64) -> String {
    let label = k.label(ws);
    // "idle, ORDER, PAGES, LOCALITY" -> "ORDER, PAGES"
    let parts: Vec<&str> = label.splitn(2, ", ").collect();
    let rest = parts.get(1).copied().unwrap_or(&label);
    rest.rsplit_once(", ")
        .map_or(rest.to_string(), |(a, _)| a.to_string())
}

/// The hypervisor the bundle was measured under, if any: an empty name or "none"
/// (what some tools write on bare metal) is no hypervisor.
pub fn hypervisor(l: &Loaded) -> Option<&str> {
    l.bundle
        .envelope
        .host
        .hypervisor
        .as_deref()
        .filter(|h| !h.trim().is_empty() && !h.trim().eq_ignore_ascii_case("none"))
}
