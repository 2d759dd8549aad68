//! Bandwidth as a share of the memory's theoretical peak.
//!
//! A bundle carries the machine's memory configuration as read from SMBIOS (the
//! `memconfig.smbios` record: channels, speeds, widths, and the peak per system,
//! socket and NUMA node, or why there is none). Every bandwidth figure is shown beside
//! its share of the peak that applies to it: a node-pair cell against the memory
//! node's peak, a figure of the whole machine against the system's. Where the peak is
//! unknown (a virtual machine without SMBIOS memory devices, tables only root can read)
//! the share is "unknown" and the table says why, once.

use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::memconfig::MemConfig;

/// The memory configuration of a bundle: its latest `memconfig.smbios` record.
pub fn of(l: &Loaded) -> Option<MemConfig> {
    l.records_of::<MemConfig>()
        .into_iter()
        .map(|(_, m)| m)
        .next_back()
}

/// The peak that applies to a figure whose data is on `mem_node` (None: the whole
/// machine's), GB/s, or why there is none.
pub fn applicable(cfg: &MemConfig, mem_node: Option<u32>) -> Result<f64, String> {
    match mem_node {
        None => cfg.peak_gbps().ok_or_else(|| {
            cfg.unknown_reason()
                .unwrap_or("the system peak was not derived")
                .to_string()
        }),
        Some(n) => match cfg.node(n) {
            Some(p) => p.peak.gbps.ok_or_else(|| {
                p.peak
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("node {n}'s peak was not derived"))
            }),
            None => Err(cfg
                .nodes_reason
                .clone()
                .or_else(|| cfg.unknown_reason().map(str::to_string))
                .unwrap_or_else(|| format!("no peak for node {n}"))),
        },
    }
}

/// Share of the peak as a percentage, `gbps` measured on data on `mem_node`.
pub fn share_pct(cfg: &MemConfig, gbps: f64, mem_node: Option<u32>) -> Option<f64> {
    let peak = applicable(cfg, mem_node).ok()?;
    (peak > 0.0 && gbps.is_finite()).then(|| 100.0 * gbps / peak)
}

/// The table cell: "46.2" (percent), "unknown" where the peak is, "-" where the bundle
/// has no memory configuration (older versions did not record it).
pub fn share_cell(cfg: Option<&MemConfig>, gbps: f64, mem_node: Option<u32>) -> Cell {
    match cfg {
        None => Cell::text("-"),
        Some(c) => match share_pct(c, gbps, mem_node) {
            Some(p) => Cell::num(p, 1),
            None => Cell::text("unknown"),
        },
    }
}

/// The share cell of a key figure: memory-bandwidth figures only (empty otherwise); a
/// node-pair figure (`.local`, `.remote`, pooled over nodes) against the median of
/// the nodes' peaks, a machine-wide one against the system's.
pub fn metric_share(cfg: Option<&MemConfig>, id: &str, gbps: f64) -> Cell {
    if !id.starts_with("mem.bandwidth.") {
        return Cell::text("");
    }
    let Some(c) = cfg else {
        return Cell::text("-");
    };
    if id.ends_with(".local") || id.ends_with(".remote") {
        let peaks: Vec<f64> = c.nodes.iter().filter_map(|n| n.peak.gbps).collect();
        return match numalab_stats::median(&peaks) {
            Some(p) if p > 0.0 && peaks.len() == c.nodes.len() => Cell::num(100.0 * gbps / p, 1),
            _ => Cell::text("unknown"),
        };
    }
    share_cell(Some(c), gbps, None)
}

/// The note under a table with shares: the configuration and its peak, or why the
/// peak is unknown.
pub fn note(cfg: Option<&MemConfig>) -> String {
    match cfg {
        None => "of peak: this bundle has no memory configuration (numalab records it with every bandwidth measurement since the SMBIOS reader; rerun to get it)".into(),
        Some(c) => match c.peak_gbps() {
            Some(_) => {
                let mut t = format!(
                    "of peak: STREAM-counted GB/s (STREAM's own convention) as a share of the theoretical peak from SMBIOS (configured speed x data width per populated channel; plain stores also move write-allocate reads, see actual bytes): {}",
                    c.summary()
                );
                if !c.nodes.is_empty() {
                    let nodes: Vec<String> = c
                        .nodes
                        .iter()
                        .map(|n| match n.peak.gbps {
                            Some(g) => format!("node {} {g:.1} GB/s ({})", n.node, n.method),
                            None => format!("node {} unknown", n.node),
                        })
                        .collect();
                    t.push_str(&format!("; node-pair cells against their memory node's peak: {}", nodes.join(", ")));
                }
                for a in &c.assumptions {
                    t.push_str(&format!("; assumed: {a}"));
                }
                t
            }
            None => format!(
                "of peak: peak unknown: {}",
                c.unknown_reason().unwrap_or("not derived")
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_records::memconfig::{NodePeak, Peak};

    fn cfg(system: Peak, nodes: Vec<NodePeak>) -> MemConfig {
        MemConfig {
            system,
            nodes,
            ..MemConfig::default()
        }
    }

    fn node(n: u32, peak: Peak) -> NodePeak {
        NodePeak {
            node: n,
            socket: Some(0),
            memory_bytes: None,
            channels: Some(4.0),
            peak,
            method: "split_evenly_assumed".into(),
        }
    }

    #[test]
    fn shares_use_the_node_peak_for_cells_and_the_system_peak_otherwise() {
        // 8 channels of DDR4-3200: 204.8 GB/s; two nodes of 4 channels: 102.4 each.
        let c = cfg(
            Peak::of(8.0 * 3200e6 * 8.0),
            vec![
                node(0, Peak::of(4.0 * 3200e6 * 8.0)),
                node(1, Peak::of(4.0 * 3200e6 * 8.0)),
            ],
        );
        let sys = share_pct(&c, 102.4, None).unwrap();
        assert!((sys - 50.0).abs() < 1e-9, "{sys}");
        let cell = share_pct(&c, 51.2, Some(1)).unwrap();
        assert!((cell - 50.0).abs() < 1e-9, "{cell}");
        assert!(share_pct(&c, 51.2, Some(7)).is_none());
        assert!(note(Some(&c)).contains("node 1 102.4 GB/s"));
    }

    #[test]
    fn an_unknown_peak_says_why_and_gives_no_share() {
        let c = cfg(
            Peak::unknown("no SMBIOS tables (/sys/firmware/dmi is absent)"),
            vec![],
        );
        assert!(share_pct(&c, 10.0, None).is_none());
        assert_eq!(share_cell(Some(&c), 10.0, None), Cell::text("unknown"));
        assert_eq!(share_cell(None, 10.0, None), Cell::text("-"));
        let n = note(Some(&c));
        assert!(
            n.contains("peak unknown") && n.contains("/sys/firmware/dmi"),
            "{n}"
        );
        assert!(applicable(&c, Some(0))
            .unwrap_err()
            .contains("/sys/firmware/dmi"));
    }
}
