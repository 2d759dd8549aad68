//! The memory latency section: the curve over working sets with its plateaus, the
//! idle-latency matrix beside the firmware's SLIT, and every figure with its kind.

use super::{first_seen, node_heatmap, node_matrix_table, placement_text};
use crate::anchors;
use crate::doc::Section;
use crate::facts::{headline_matrix, latency_kind_text};
use crate::sections::{opt, table};
use crate::table::Cell;
use numalab_chart::{AxisFormat, LineChart, Series};
use numalab_records::mem::latency::LatencyRecord;
use numalab_records::mem::MatrixCell;
use numalab_schema::machine::CacheKind;
use numalab_schema::{units, Machine};

/// The cache sizes a CPU sees, as chart marks ("L1d 32 KiB").
fn cache_marks(m: Option<&Machine>, cpu: u32) -> Vec<(f64, String)> {
    let Some(m) = m else { return Vec::new() };
    let mut out: Vec<(f64, String)> = m
        .caches
        .iter()
        .filter(|c| {
            c.cpus.contains(&cpu)
                && matches!(
                    c.kind,
                    CacheKind::Data | CacheKind::Unified | CacheKind::MemorySide
                )
        })
        .filter_map(|c| {
            let size = c.size_bytes?;
            let kind = match c.kind {
                CacheKind::Data => "d",
                CacheKind::MemorySide => " (memory-side)",
                _ => "",
            };
            Some((
                size as f64,
                format!("L{}{kind} {}", c.level, units::bytes(size)),
            ))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.dedup();
    out
}

/// The memory latency section of a bundle's latency records.
pub(super) fn section(b: usize, recs: &[LatencyRecord], m: Option<&Machine>, of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "mem-latency"),
        &format!("Memory latency{of}"),
    );
    curve(&mut s, b, recs, m);
    matrix_heatmap(&mut s, b, recs, m);
    matrix_tables(&mut s, b, recs);
    point_tables(&mut s, b, recs);
    kinds_table(&mut s, b, recs);
    s
}

/// The latency curves over working sets: their chart and their plateaus.
fn curve(s: &mut Section, b: usize, recs: &[LatencyRecord], m: Option<&Machine>) {
    let curves: Vec<&LatencyRecord> = recs
        .iter()
        .filter(|r| r.matrix.is_none() && r.points.len() > 1)
        .collect();
    if let Some(first) = curves.first() {
        curve_chart(s, b, &curves, m, first.cpu);
        plateau_table(s, b, &curves);
    }
}

/// The curves on log axes, with the cache sizes of the first curve's CPU marked.
fn curve_chart(
    s: &mut Section,
    b: usize,
    curves: &[&LatencyRecord],
    m: Option<&Machine>,
    first_cpu: u32,
) {
    let mut c = LineChart::new(
        "Load-to-load latency against working set",
        "working set (log scale)",
        "ns per load (log scale)",
    );
    c.x_log = true;
    c.y_log = true;
    c.x_format = AxisFormat::Bytes;
    c.marks = cache_marks(m, first_cpu);
    for r in curves {
        let mut series = Series::new(
            &format!(
                "CPU {}, {}, {}",
                r.cpu,
                r.order.describe(r.kind().block_bytes),
                r.kind().pages_text()
            ),
            r.points
                .iter()
                .map(|p| (p.working_set_bytes as f64, p.latency_ns.median))
                .collect(),
        );
        series.band = r
            .points
            .iter()
            .map(|p| {
                (
                    p.working_set_bytes as f64,
                    p.latency_ns.p10,
                    p.latency_ns.p90,
                )
            })
            .collect();
        c.series.push(series);
    }
    s.chart(
        &anchors::mem_latency(b),
        c.to_svg(),
        "Median time per dependent load over a random cycle through the working set, in the order each series names (bands: p10-p90 of the batches); dashed: the cache sizes of that CPU. Each step is where the working set leaves a cache; on base pages, random order past the TLB's reach adds page walks",
    );
}

/// The plateaus found on each curve, a second step within a level said so.
fn plateau_table(s: &mut Section, b: usize, curves: &[&LatencyRecord]) {
    let mut t = table(
        &anchors::id(b, "mem-latency-levels"),
        "Plateaus of the curve",
        &[
            ("CPU", None),
            ("order", None),
            ("pages", None),
            ("level", None),
            ("cache", None),
            ("working sets", None),
            ("latency", Some("ns")),
            ("cycles", None),
        ],
    );
    let mut repeats = false;
    for r in curves {
        for (i, lv) in r.levels.iter().enumerate() {
            // A second plateau named after the same level is a step within it.
            let name = match numalab_records::mem::latency::repeat_of(&r.levels, i) {
                Some(base) => {
                    repeats = true;
                    format!("{base}, second step")
                }
                None => lv.name.clone(),
            };
            t.push(vec![
                Cell::num(f64::from(r.cpu), 0),
                Cell::text(r.order.describe(r.kind().block_bytes)),
                Cell::text(&r.pages.obtained),
                Cell::text(name),
                lv.cache_bytes
                    .map_or(Cell::text("-"), |c| Cell::text(units::bytes(c))),
                Cell::text(format!(
                    "{} - {}",
                    units::bytes(lv.from_bytes),
                    units::bytes(lv.to_bytes)
                )),
                Cell::num(lv.latency_ns, 1),
                opt(lv.cycles, 1, "no known frequency"),
            ]);
        }
    }
    if repeats {
        t.notes.push("A \"second step\" is a plateau within the sizes of the level before it (the record names it \"L2 (2)\"): a TLB's reach or a slower part of the cache; the curve cannot tell which.".into());
    }
    s.table(t);
}

/// The idle-latency matrix of the headline kind as a heatmap, and as a table beside
/// the firmware's distances (SLIT).
fn matrix_heatmap(s: &mut Section, b: usize, recs: &[LatencyRecord], m: Option<&Machine>) {
    let matrix = headline_matrix(recs);
    let cells: Vec<(MatrixCell, f64)> = matrix
        .iter()
        .filter_map(|r| Some((r.matrix?, r.points.first()?.latency_ns.median)))
        .collect();
    if let Some(h) = node_heatmap("Idle memory latency by node pair (ns)", &cells, "ns") {
        let what = matrix
            .first()
            .and_then(|r| {
                Some(latency_kind_text(
                    &r.kind(),
                    r.points.first()?.working_set_bytes,
                ))
            })
            .unwrap_or_default();
        s.chart(
            &anchors::mem_latency_matrix(b),
            h.to_svg(),
            format!("Idle latency from the first CPU of each node to memory bound to each node: {what} (median ns)"),
        );
        let slit = m.and_then(|m| m.slit().cloned());
        let mut t = table(
            &anchors::id(b, "mem-latency-slit"),
            "Measured latency beside the firmware's distances (SLIT)",
            &[
                ("threads on node", None),
                ("data on node", None),
                ("latency", Some("ns")),
                ("x local", None),
                ("SLIT", None),
                ("SLIT / local", None),
            ],
        );
        for (mc, v) in &cells {
            let local = cells
                .iter()
                .find(|(x, _)| x.cpu_node == mc.cpu_node && x.mem_node == mc.cpu_node)
                .map(|(_, v)| *v);
            let d = |a: u32, b: u32| -> Option<u64> {
                let s = slit.as_ref()?;
                let i = s.nodes.iter().position(|n| *n == a)?;
                let j = s.nodes.iter().position(|n| *n == b)?;
                s.values.get(i)?.get(j).copied()
            };
            let sl = d(mc.cpu_node, mc.mem_node);
            let sl_local = d(mc.cpu_node, mc.cpu_node);
            t.push(vec![
                Cell::num(f64::from(mc.cpu_node), 0),
                Cell::num(f64::from(mc.mem_node), 0),
                Cell::num(*v, 1),
                opt(local.map(|l| v / l), 2, "no local cell"),
                opt(sl.map(|x| x as f64), 0, "no SLIT"),
                opt(
                    sl.zip(sl_local).map(|(a, b)| a as f64 / b as f64),
                    2,
                    "no SLIT",
                ),
            ]);
        }
        t.notes.push("the SLIT is the firmware's relative distance (10 = local): an ordering, not a measurement".into());
        s.table(t);
    }
}

/// Every node-pair matrix as numbers, one per page kind asked for.
fn matrix_tables(s: &mut Section, b: usize, recs: &[LatencyRecord]) {
    // Every node-pair matrix as numbers, one per page kind asked for.
    let matrix_cells: Vec<&LatencyRecord> = recs.iter().filter(|r| r.matrix.is_some()).collect();
    for kind in first_seen(matrix_cells.iter().map(|r| r.pages.requested.name())) {
        let of_kind: Vec<&&LatencyRecord> = matrix_cells
            .iter()
            .filter(|r| r.pages.requested.name() == kind)
            .collect();
        let cells: Vec<(MatrixCell, f64)> = of_kind
            .iter()
            .filter_map(|r| Some((r.matrix?, r.points.first()?.latency_ns.median)))
            .collect();
        let what = of_kind
            .first()
            .and_then(|r| {
                Some(latency_kind_text(
                    &r.kind(),
                    r.points.first()?.working_set_bytes,
                ))
            })
            .unwrap_or_default();
        let obtained = of_kind
            .first()
            .map(|r| r.pages.obtained.clone())
            .unwrap_or_default();
        s.table(node_matrix_table(
            &anchors::id(b, &format!("mem-latency-matrix-{kind}")),
            &format!("Idle latency by node pair, median ns: {kind} pages asked (obtained: {obtained}), {what}"),
            &cells,
            1,
        ));
    }
}

/// Every point of every curve, with the steps found between plateaus.
fn point_tables(s: &mut Section, b: usize, recs: &[LatencyRecord]) {
    // Every point of every curve, with the steps found between plateaus.
    for (i, r) in recs.iter().filter(|r| r.matrix.is_none()).enumerate() {
        let mut t = table(
            &anchors::id(b, &format!("mem-latency-points-{i}")),
            &format!(
                "CPU {}, data {} ({}), {} pages asked, {} obtained; idle, {}",
                r.cpu,
                r.placement.policy,
                placement_text(&r.placement),
                r.pages.requested.name(),
                r.pages.obtained,
                r.order.describe(r.kind().block_bytes)
            ),
            &[
                ("working set", None),
                ("p50", Some("ns")),
                ("p90", Some("ns")),
                ("p99", Some("ns")),
            ],
        );
        for p in &r.points {
            t.push(vec![
                Cell::text(units::bytes(p.working_set_bytes)),
                Cell::num(p.latency_ns.median, 2),
                Cell::num(p.latency_ns.p90, 2),
                Cell::num(p.latency_ns.p99, 2),
            ]);
        }
        for st in &r.steps {
            t.notes.push(format!(
                "step {} -> {} at about {} ({:.1}x)",
                st.from,
                st.to,
                units::bytes(st.at_bytes),
                st.ratio
            ));
        }
        s.table(t);
    }
}

/// Every figure with what it is, so that none is read as another.
fn kinds_table(s: &mut Section, b: usize, recs: &[LatencyRecord]) {
    // Every figure with what it is, so that none is read as another.
    let mut t = table(
        &anchors::id(b, "mem-latency-kinds"),
        "What each latency figure is",
        &[
            ("probe", None),
            ("CPU", None),
            ("data", None),
            ("kind", None),
            ("median", Some("ns")),
            ("p10", Some("ns")),
            ("p90", Some("ns")),
        ],
    );
    for r in recs {
        let (probe, p) = match r.matrix {
            Some(_) => ("node matrix", r.points.first()),
            None => ("curve, largest working set", r.points.last()),
        };
        let Some(p) = p else { continue };
        let data = match r.matrix {
            Some(m) => format!("node {}", m.mem_node),
            None => r.placement.policy.to_string(),
        };
        let k = r.kind();
        t.push(vec![
            Cell::text(probe),
            Cell::num(f64::from(r.cpu), 0),
            Cell::text(data),
            Cell::text(k.label(p.working_set_bytes)),
            Cell::num(p.latency_ns.median, 1),
            Cell::num(p.latency_ns.p10, 1),
            Cell::num(p.latency_ns.p90, 1),
        ]);
    }
    t.notes.push("memory latency is the idle figure in random order over a working set well past the last-level cache (LLC); figures of different kinds (order, pages, working set, locality) are different quantities and are never compared with each other".into());
    s.table(t);
}
