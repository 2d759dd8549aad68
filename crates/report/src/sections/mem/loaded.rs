//! The latency under load section: latency against the traffic of the other CPUs.

use super::placement_text;
use crate::anchors;
use crate::doc::Section;
use crate::facts::latency_kind_text;
use crate::sections::table;
use crate::table::Cell;
use numalab_chart::{LineChart, Series};
use numalab_records::mem::LoadedRecord;
use numalab_records::memconfig::MemConfig;
use numalab_schema::cpulist;

/// The loaded-latency section: latency against the other CPUs' traffic.
pub(super) fn section(
    b: usize,
    recs: &[(String, LoadedRecord)],
    peak: Option<&MemConfig>,
    of: &str,
) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "mem-loaded"),
        &format!("Latency under load{of}"),
    );
    let mut c = LineChart::new(
        "Latency against memory traffic",
        "traffic of the other CPUs (GB/s, STREAM-counted)",
        "ns per load",
    );
    for (_, r) in recs {
        let mut series = Series::new(
            &format!(
                "CPU {} chasing, {} generator(s)",
                r.chaser_cpu,
                r.generator_cpus.len()
            ),
            r.points
                .iter()
                .map(|p| (p.traffic_gbps, p.latency_ns.median))
                .collect(),
        );
        series.band = r
            .points
            .iter()
            .map(|p| (p.traffic_gbps, p.latency_ns.p10, p.latency_ns.p90))
            .collect();
        c.series.push(series);
    }
    s.chart(
        &anchors::mem_loaded(b),
        c.to_svg(),
        "One CPU chases pointers while the others read memory at increasing rates, from idle to saturation (bands: p10-p90)",
    );
    for (key, r) in recs {
        let mut t = table(
            &anchors::id(b, &format!("mem-loaded-{key}")),
            &format!(
                "CPU {} chasing ({}), generators {} ({} traffic, {}); data {} ({})",
                r.chaser_cpu,
                latency_kind_text(&r.kind(), r.chase_bytes),
                cpulist::format(&r.generator_cpus),
                r.traffic.name(),
                r.isa,
                r.placement.policy,
                placement_text(&r.placement)
            ),
            &[
                ("delay", Some("ns")),
                ("traffic", Some("GB/s")),
                ("actual traffic", Some("GB/s")),
                ("of peak", Some("%")),
                ("p50", Some("ns")),
                ("p90", Some("ns")),
                ("p99", Some("ns")),
            ],
        );
        // The data on one node: that node's peak; spread over several: the system's.
        let data_node = match r.placement.expected_nodes.as_slice() {
            [n] => Some(*n),
            _ => None,
        };
        for p in &r.points {
            t.push(vec![
                p.delay_ns
                    .map_or(Cell::text("idle"), |d| Cell::num(d as f64, 0)),
                Cell::num(p.traffic_gbps, 2),
                Cell::num(p.actual_traffic_gbps, 2),
                crate::peak::share_cell(peak, p.traffic_gbps, data_node),
                Cell::num(p.latency_ns.median, 1),
                Cell::num(p.latency_ns.p90, 1),
                Cell::num(p.latency_ns.p99, 1),
            ]);
        }
        t.notes.push(format!(
            "of peak: traffic (STREAM-counted) against the peak of {}; {}",
            data_node.map_or("the system".to_string(), |n| format!("node {n}")),
            crate::peak::note(peak)
        ));
        s.table(t);
    }
    s
}
