//! Data accesses (`pmu.memaccess`): which mappings and data symbols the sampled loads
//! and stores hit, how many were slow and remote, latency per node of the page, and
//! falsely shared cache lines.

use super::{opt, table};
use crate::anchors;
use crate::doc::Section;
use crate::load::Loaded;
use crate::table::{Cell, Table};
use numalab_chart::{LineChart, Series};
use numalab_records::memaccess::{MemAccessRecord, RegionRow};

fn region_table(id: &str, title: &str, first: &str, rows: &[RegionRow], unit: &str) -> Table {
    let mut t = table(
        id,
        title,
        &[
            (first, None),
            ("kind", None),
            ("where", None),
            ("samples", None),
            ("of all samples", Some("%")),
            ("loads", None),
            ("stores", None),
            ("slow loads", None),
            ("of all slow loads", Some("%")),
            ("remote", Some("%")),
            ("slow loads remote", Some("%")),
            ("HITM", None),
            ("TLB misses", None),
            ("median load latency", Some(unit)),
            ("served from", None),
        ],
    );
    for r in rows.iter().take(40) {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(r.object.clone());
        parts.extend(r.section.clone());
        parts.extend(r.start.clone());
        parts.extend(r.size_bytes.map(numalab_schema::units::bytes));
        let place = parts.join(", ");
        let levels: Vec<String> = r.levels.iter().map(|(l, n)| format!("{l} {n}")).collect();
        t.push(vec![
            Cell::text(r.name.clone()),
            Cell::text(r.kind.clone()),
            Cell::text(place),
            Cell::num(r.samples as f64, 0),
            Cell::num(r.samples_pct, 1),
            Cell::num(r.loads as f64, 0),
            Cell::num(r.stores as f64, 0),
            Cell::num(r.slow_loads as f64, 0),
            Cell::num(r.slow_loads_pct, 1),
            Cell::num(r.remote_pct, 1),
            opt(r.slow_remote_pct, 1, "no slow loads"),
            Cell::num(r.hitm as f64, 0),
            Cell::num(r.tlb_misses as f64, 0),
            opt(r.median_latency, 0, "no loads"),
            Cell::text(levels.join(", ")),
        ]);
    }
    if rows.len() > 40 {
        t.notes
            .push(format!("{} more rows in the bundle", rows.len() - 40));
    }
    t
}

fn fmt_edge(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.0}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// The sections of the `pmu.memaccess` records of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let mut out = Vec::new();
    for (r, rec) in l.records_of::<MemAccessRecord>() {
        let key = anchors::slug(&r.key);
        let mut s = Section::new(
            &anchors::id(b, &format!("memaccess-{key}")),
            &format!("Data accesses: {}{of}", rec.facility),
        );
        let unit = rec.latency_unit.as_str();
        let from = match (
            &rec.source.path,
            rec.source.command.is_empty(),
            rec.source.pid,
        ) {
            (Some(p), _, _) => format!("imported from {p}"),
            (None, false, _) => format!("sampled running `{}`", rec.source.command.join(" ")),
            (None, true, Some(pid)) => format!("sampled from process {pid}"),
            _ => rec.source.kind.clone(),
        };
        let thr = match rec.threshold.how.as_str() {
            "percentile" => format!(
                "the {}th percentile of the sampled load latencies",
                rec.threshold.percentile.unwrap_or(90.0)
            ),
            "given in ns" => "given in ns".to_string(),
            _ => "given".to_string(),
        };
        s.para(format!(
            "{} samples ({} loads, {} stores, {} other) {from}{}. Slow loads: latency >= {:.0} {unit} ({thr}): {}. Remote per the PMU: {} samples.{}",
            rec.samples,
            rec.loads,
            rec.stores,
            rec.other,
            rec.source
                .format
                .as_ref()
                .map_or(String::new(), |f| format!(" ({f})")),
            rec.threshold.value,
            rec.slow_loads,
            rec.remote,
            if rec.lost > 0 {
                format!(" The kernel lost {} samples.", rec.lost)
            } else {
                String::new()
            }
        ));
        s.list(rec.findings.clone());
        s.table(region_table(
            &anchors::id(b, &format!("memaccess-{key}-mappings")),
            "Samples per mapping",
            "mapping",
            &rec.mappings,
            unit,
        ));
        if !rec.symbols.is_empty() {
            s.table(region_table(
                &anchors::id(b, &format!("memaccess-{key}-symbols")),
                "Samples per data symbol and named region",
                "symbol or region",
                &rec.symbols,
                unit,
            ));
        }
        if !rec.node_histograms.is_empty() && rec.bin_edges.len() >= 2 {
            let bins: Vec<String> = rec
                .bin_edges
                .windows(2)
                .map(|w| format!("{}-{}", fmt_edge(w[0]), fmt_edge(w[1])))
                .collect();
            let mut cols: Vec<(&str, Option<&str>)> = vec![
                ("node of the page", None),
                ("how known", None),
                ("loads", None),
                ("slow loads", None),
                ("median", Some(unit)),
            ];
            for b in &bins {
                cols.push((b.as_str(), None));
            }
            let mut t = table(
                &anchors::id(b, &format!("memaccess-{key}-nodes")),
                &format!("Load latency per node of the page (loads per {unit} bin)"),
                &cols,
            );
            for h in &rec.node_histograms {
                let mut row = vec![
                    Cell::text(h.label.clone()),
                    Cell::text(h.how.clone()),
                    Cell::num(h.loads as f64, 0),
                    Cell::num(h.slow_loads as f64, 0),
                    opt(h.median_latency, 0, "no loads"),
                ];
                row.extend(h.counts.iter().map(|&c| Cell::num(c as f64, 0)));
                t.push(row);
            }
            if !rec.node_methods.is_empty() {
                let m: Vec<String> = rec
                    .node_methods
                    .iter()
                    .map(|(how, n)| format!("{how}: {n} loads"))
                    .collect();
                t.notes
                    .push(format!("How the nodes were obtained: {}.", m.join("; ")));
            }
            s.table(t);
            if rec.bin_edges.len() >= 3 {
                let mut chart = LineChart::new(
                    "Load latency per node of the page",
                    &format!("latency, upper edge of the bin ({unit})"),
                    "share of that node's loads (%)",
                );
                chart.x_log = true;
                for h in &rec.node_histograms {
                    let n = h.loads.max(1) as f64;
                    let pts: Vec<(f64, f64)> = rec
                        .bin_edges
                        .iter()
                        .skip(1)
                        .zip(&h.counts)
                        .map(|(&x, &c)| (x, c as f64 * 100.0 / n))
                        .collect();
                    chart
                        .series
                        .push(Series::new(&format!("{} ({})", h.label, h.how), pts));
                }
                s.chart(
                    &anchors::id(b, &format!("memaccess-{key}-latency-chart")),
                    chart.to_svg(),
                    "Share of each node's sampled loads per power-of-two latency bin",
                );
            }
        }
        let mut fs = table(
            &anchors::id(b, &format!("memaccess-{key}-false-sharing")),
            "False sharing: lines written or HITM-loaded from several CPUs at different offsets",
            &[
                ("line", None),
                ("pid", None),
                ("in", None),
                ("offset", None),
                ("CPUs", None),
                ("stores", None),
                ("loads", None),
                ("HITM", None),
                ("code", None),
            ],
        );
        for line in &rec.false_sharing {
            for o in &line.offsets {
                let cpus: Vec<String> = o.cpus.iter().map(|c| c.to_string()).collect();
                fs.push(vec![
                    Cell::text(line.line.clone()),
                    Cell::num(f64::from(line.pid), 0),
                    Cell::text(line.region.clone()),
                    Cell::text(format!("0x{:x}", o.offset)),
                    Cell::text(cpus.join(", ")),
                    Cell::num(o.stores as f64, 0),
                    Cell::num(o.loads as f64, 0),
                    Cell::num(o.hitm as f64, 0),
                    Cell::text(o.code.join(", ")),
                ]);
            }
        }
        if rec.false_sharing.is_empty() {
            fs.notes
                .push("No line was written or HITM-loaded from two CPUs at two offsets.".into());
        }
        s.table(fs);
        s.list(rec.notes.iter().map(|n| format!("note: {n}")).collect());
        out.push(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_records::memaccess::{
        FalseSharingLine, LineOffset, MemSource, NodeHistogram, Threshold,
    };
    use numalab_schema::record::{Host, Tool, SCHEMA_VERSION};
    use numalab_schema::{Bundle, Envelope, Origin, Record};

    fn row(name: &str) -> RegionRow {
        RegionRow {
            name: name.into(),
            kind: "anonymous".into(),
            object: Some("pid 1".into()),
            section: None,
            start: Some("0x7f0000000000".into()),
            size_bytes: Some(4096),
            samples: 10,
            samples_pct: 50.0,
            loads: 9,
            stores: 1,
            slow_loads: 3,
            slow_loads_pct: 75.0,
            remote: 4,
            remote_pct: 40.0,
            slow_remote_pct: Some(66.7),
            hitm: 0,
            tlb_misses: 0,
            median_latency: Some(120.0),
            levels: vec![("L1".into(), 5), ("remote RAM".into(), 4)],
        }
    }

    fn record() -> MemAccessRecord {
        MemAccessRecord {
            source: MemSource {
                kind: "imported".into(),
                path: Some("x.script".into()),
                format: Some("perf script (pid,cpu,addr,data_src,weight)".into()),
                command: vec![],
                pid: None,
                events: vec![("cpu/mem-loads,ldlat=30/P".into(), 20)],
            },
            facility: "imported (Intel PEBS load latency)".into(),
            latency_unit: "cycles".into(),
            samples: 20,
            loads: 18,
            stores: 2,
            other: 0,
            lost: 0,
            threshold: Threshold {
                value: 300.0,
                unit: "cycles".into(),
                how: "percentile".into(),
                percentile: Some(90.0),
                cycles_per_ns: None,
            },
            slow_loads: 4,
            remote: 8,
            mappings: vec![row("anon 0x7f0000000000-0x7f0000001000")],
            symbols: vec![row("graph.edges")],
            bin_edges: vec![32.0, 64.0, 128.0, 256.0],
            node_histograms: vec![NodeHistogram {
                label: "remote per the PMU".into(),
                node: None,
                how: "PMU remote bit".into(),
                loads: 6,
                slow_loads: 3,
                median_latency: Some(200.0),
                counts: vec![1, 2, 3],
            }],
            node_methods: vec![("PMU remote bit".into(), 18)],
            false_sharing: vec![FalseSharingLine {
                line: "0x1000".into(),
                pid: 1,
                line_bytes: 64,
                region: "[heap]".into(),
                samples: 3,
                stores: 2,
                hitm: 1,
                cpus: vec![0, 1],
                offsets: vec![LineOffset {
                    offset: 8,
                    cpus: vec![1],
                    stores: 2,
                    loads: 0,
                    hitm: 0,
                    code: vec!["update".into()],
                }],
            }],
            findings: vec!["75% of slow loads hit graph.edges.".into()],
            notes: vec!["a note".into()],
        }
    }

    #[test]
    fn a_record_becomes_tables_a_chart_and_sentences() {
        let rec = record();
        let envelope = Envelope {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "numalab".into(),
                version: "0.0.0".into(),
                target: "x86_64-linux".into(),
                profile: "release".into(),
            },
            created_utc: "2024-01-01T00:00:00Z".into(),
            command: vec!["numalab".into(), "test".into()],
            config: serde_json::json!({}),
            origin: Origin::Imported,
            host: Host::unknown("00"),
        };
        let l = Loaded::from_bundle(
            "test",
            Bundle {
                schema_version: SCHEMA_VERSION,
                envelope,
                records: vec![Record::new("pmu/memaccess/1", Origin::Imported, &rec)],
            },
        );
        assert_eq!(super::super::decodes(&l.bundle.records[0]), Some(true));
        let secs = sections(0, &l, "");
        assert_eq!(secs.len(), 1);
        let md = secs[0].to_text(crate::table::Format::Markdown, true);
        for want in [
            "graph.edges",
            "75% of slow loads hit graph.edges.",
            "Load latency per node of the page",
            "remote per the PMU",
            "0x1000",
            "update",
            "note: a note",
            "32-64",
        ] {
            assert!(md.contains(want), "{want}:\n{md}");
        }
        assert_eq!(secs[0].tables().count(), 4);
    }
}
