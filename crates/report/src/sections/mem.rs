//! Memory: bandwidth against threads and the node-pair matrix, the latency curve over
//! working sets on a log axis with the CPU's cache sizes marked and the plateaus found,
//! the idle-latency matrix beside the firmware's SLIT, latency under load, and page
//! migration by method.

use super::{opt, table};
use crate::anchors;
use crate::doc::Section;
use crate::facts::{headline_matrix, latency_kind_text, matrix_kernel};
use crate::load::Loaded;
use crate::table::{Cell, Table};
use numalab_chart::{AxisFormat, Bar, BarChart, Heatmap, LineChart, Series};
use numalab_records::mem::latency::LatencyRecord;
use numalab_records::mem::LoadedRecord;
use numalab_records::mem::MigrateRecord;
use numalab_records::mem::{BandwidthRecord, MatrixCell};
use numalab_records::memconfig::MemConfig;
use numalab_schema::machine::CacheKind;
use numalab_schema::{cpulist, units, Machine};

/// A node-pair matrix as a heatmap: rows = the threads' node, columns = the data's node.
pub(crate) fn node_heatmap(
    title: &str,
    cells: &[(MatrixCell, f64)],
    unit: &str,
) -> Option<Heatmap> {
    let mut rows: Vec<u32> = cells.iter().map(|(m, _)| m.cpu_node).collect();
    let mut cols: Vec<u32> = cells.iter().map(|(m, _)| m.mem_node).collect();
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    if rows.is_empty() {
        return None;
    }
    let values = rows
        .iter()
        .map(|r| {
            cols.iter()
                .map(|c| {
                    cells
                        .iter()
                        .find(|(m, _)| m.cpu_node == *r && m.mem_node == *c)
                        .map(|(_, v)| *v)
                })
                .collect()
        })
        .collect();
    let mut h = Heatmap::new(
        title,
        rows.iter().map(|r| r.to_string()).collect(),
        cols.iter().map(|c| c.to_string()).collect(),
        values,
        unit,
    );
    h.row_label = "threads on node".into();
    h.col_label = "data on node".into();
    Some(h)
}

/// A node-pair matrix as a table (rows = the threads' node, columns = the data's
/// node), so that the figures of a heatmap can be read and copied.
fn node_matrix_table(id: &str, title: &str, cells: &[(MatrixCell, f64)], digits: usize) -> Table {
    let mut rows: Vec<u32> = cells.iter().map(|(m, _)| m.cpu_node).collect();
    let mut cols: Vec<u32> = cells.iter().map(|(m, _)| m.mem_node).collect();
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    let names: Vec<String> = std::iter::once("threads on node".to_string())
        .chain(cols.iter().map(|c| format!("data on {c}")))
        .collect();
    let spec: Vec<(&str, Option<&str>)> = names.iter().map(|n| (n.as_str(), None)).collect();
    let mut t = table(id, title, &spec);
    for r in &rows {
        let mut row = vec![Cell::num(f64::from(*r), 0)];
        for c in &cols {
            row.push(
                cells
                    .iter()
                    .find(|(m, _)| m.cpu_node == *r && m.mem_node == *c)
                    .map_or(Cell::missing("not measured"), |(_, v)| {
                        Cell::num(*v, digits)
                    }),
            );
        }
        t.push(row);
    }
    t
}

/// Where the kernel says the pages are: "node 0 50%, node 1 50%".
fn placement_text(p: &numalab_records::mem::Placement) -> String {
    let total: u64 = p.pages_per_node.iter().map(|x| x.1).sum();
    p.pages_per_node
        .iter()
        .map(|(n, c)| format!("node {n} {:.0}%", 100.0 * *c as f64 / total.max(1) as f64))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The distinct items in the order they first appear.
fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// One line on the result checks of bandwidth records.
fn verified_text(rs: &[BandwidthRecord]) -> String {
    let checked: Vec<&BandwidthRecord> = rs.iter().filter(|r| r.verified == Some(true)).collect();
    let elements: u64 = checked
        .iter()
        .filter_map(|r| r.verification.as_ref())
        .map(|v| v.elements_checked)
        .sum();
    let wrong = rs.iter().filter(|r| r.verified == Some(false)).count();
    if wrong > 0 {
        format!(
            "results WRONG in {wrong} of {} records: the kernel's arrays did not match the closed-form values",
            rs.len()
        )
    } else if checked.is_empty() {
        "results not verified: these records come from a numalab version that did not check kernel results".to_string()
    } else if checked.len() == rs.len() {
        format!(
            "results verified: every kernel's arrays matched the closed-form values ({elements} elements compared)"
        )
    } else {
        format!(
            "results verified for {} of {} records (the others come from an older version)",
            checked.len(),
            rs.len()
        )
    }
}

/// The cache sizes a CPU sees, as chart marks ("L1d 32 KiB").
/// How the ISA of each measurement was chosen, when a trial chose it: "ISA: the fastest
/// of avx2, avx512 in an untimed trial on the same threads and arrays: triad, 1 thread:
/// avx2 (avx2 40.10, avx512 39.20 GB/s); ...".
fn variant_text(rs: &[BandwidthRecord]) -> Option<String> {
    let tried: Vec<String> = rs
        .iter()
        .filter_map(|r| {
            let v = r.variant.as_ref()?;
            (v.how == "trial" && v.trial.len() > 1).then(|| {
                let t: Vec<String> = v
                    .trial
                    .iter()
                    .map(|p| format!("{} {:.2}", p.isa, p.gbps))
                    .collect();
                let cell = match &r.matrix {
                    Some(m) => format!(", node {} -> {}", m.cpu_node, m.mem_node),
                    None => String::new(),
                };
                format!(
                    "{}, {} thread(s){cell}: {} ({} GB/s)",
                    r.kernel.name(),
                    r.threads,
                    r.isa,
                    t.join(", ")
                )
            })
        })
        .collect();
    if tried.is_empty() {
        return None;
    }
    const SHOWN: usize = 12;
    let more = tried.len().saturating_sub(SHOWN);
    Some(format!(
        "ISA: no --isa was given, so each measurement ran the fastest of this CPU's vector ISAs in an untimed trial on the same threads and arrays (best of 2 passes each): {}{}",
        tried[..tried.len().min(SHOWN)].join("; "),
        if more > 0 {
            format!("; and {more} more (in each record's `variant`)")
        } else {
            String::new()
        }
    ))
}

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

/// The memory sections of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let machine = crate::facts::machine_of(l);
    let mut out = Vec::new();
    let bw: Vec<BandwidthRecord> = l
        .records_of::<BandwidthRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let peak = crate::peak::of(l);
    if !bw.is_empty() {
        out.push(bandwidth(b, &bw, peak.as_ref(), of));
    }
    let lat: Vec<LatencyRecord> = l
        .records_of::<LatencyRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    if !lat.is_empty() {
        out.push(latency(b, &lat, machine.as_ref(), of));
    }
    let loaded: Vec<(String, LoadedRecord)> = l
        .records_of::<LoadedRecord>()
        .into_iter()
        .map(|(r, x)| (r.key.clone(), x))
        .collect();
    if !loaded.is_empty() {
        out.push(loaded_section(b, &loaded, peak.as_ref(), of));
    }
    let mig: Vec<MigrateRecord> = l
        .records_of::<MigrateRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    if !mig.is_empty() {
        out.push(migrate(b, &mig, of));
    }
    out
}

fn bandwidth(b: usize, recs: &[BandwidthRecord], peak: Option<&MemConfig>, of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "mem-bandwidth"),
        &format!("Memory bandwidth{of}"),
    );
    let sweep: Vec<&BandwidthRecord> = recs.iter().filter(|r| r.matrix.is_none()).collect();
    let mut kernels: Vec<String> = sweep.iter().map(|r| r.kernel.name()).collect();
    kernels.dedup();
    let mut threads: Vec<f64> = sweep.iter().map(|r| r.threads as f64).collect();
    threads.sort_by(f64::total_cmp);
    threads.dedup();
    if threads.len() > 1 {
        let mut c = LineChart::new(
            "Bandwidth against threads",
            "threads",
            "GB/s (STREAM-counted)",
        );
        c.x_log = threads.last().copied().unwrap_or(1.0) >= 8.0;
        c.x_ticks = threads.clone();
        let mut seen = Vec::new();
        for k in &kernels {
            if seen.contains(k) {
                continue;
            }
            seen.push(k.clone());
            let of_k: Vec<&&BandwidthRecord> =
                sweep.iter().filter(|r| r.kernel.name() == *k).collect();
            let mut series = Series::new(
                k,
                of_k.iter()
                    .map(|r| (r.threads as f64, r.bandwidth_gbps.median))
                    .collect(),
            );
            series.band = of_k
                .iter()
                .map(|r| (r.threads as f64, r.bandwidth_gbps.p10, r.bandwidth_gbps.p90))
                .collect();
            c.series.push(series);
        }
        s.chart(
            &anchors::mem_bandwidth(b),
            c.to_svg(),
            "Median bandwidth over the timed rounds (bands: p10-p90) as threads are added; where a line flattens, more threads do not get more bandwidth",
        );
    } else if !sweep.is_empty() {
        s.chart(
            &anchors::mem_bandwidth(b),
            BarChart {
                title: "Bandwidth by kernel".into(),
                x_label: "GB/s (STREAM-counted)".into(),
                bars: sweep
                    .iter()
                    .map(|r| {
                        Bar::new(
                            &format!("{}, {} thread(s)", r.kernel.name(), r.threads),
                            r.bandwidth_gbps.median,
                            Some((r.bandwidth_gbps.p10, r.bandwidth_gbps.p90)),
                        )
                    })
                    .collect(),
                reference: None,
            }
            .to_svg(),
            "Median bandwidth over the timed rounds, p10-p90",
        );
    }
    if let Some(k) = matrix_kernel(recs) {
        let cells: Vec<(MatrixCell, f64)> = recs
            .iter()
            .filter(|r| r.kernel.name() == k)
            .filter_map(|r| Some((r.matrix?, r.bandwidth_gbps.median)))
            .collect();
        if let Some(h) = node_heatmap(
            &format!("Bandwidth by node pair ({k}, GB/s)"),
            &cells,
            "GB/s",
        ) {
            s.chart(
                &anchors::mem_bandwidth_matrix(b),
                h.to_svg(),
                format!("{k} bandwidth with the threads of one node and the data bound to another (median GB/s)"),
            );
        }
    }
    let mut t = table(
        &anchors::id(b, "mem-bandwidth-table"),
        "Measurements",
        &[
            ("kernel", None),
            ("ISA", None),
            ("threads", None),
            ("CPUs", None),
            ("data", None),
            ("median", Some("GB/s")),
            ("of peak", Some("%")),
            ("p10", Some("GB/s")),
            ("p90", Some("GB/s")),
            ("slowest thread", Some("GB/s")),
            ("actual bytes", Some("GB/s")),
            ("imbalance", None),
            ("working set", None),
            ("pages", None),
            ("on expected nodes", None),
        ],
    );
    for r in recs {
        let data = match &r.matrix {
            Some(m) => format!("node {}", m.mem_node),
            None => r.placement.policy.to_string(),
        };
        t.push(vec![
            Cell::text(r.kernel.name()),
            Cell::text(r.isa.to_string()),
            Cell::num(r.threads as f64, 0),
            Cell::text(cpulist::format(&r.placement.cpus)),
            Cell::text(data),
            Cell::num(r.bandwidth_gbps.median, 2),
            crate::peak::share_cell(peak, r.bandwidth_gbps.median, r.matrix.map(|m| m.mem_node)),
            Cell::num(r.bandwidth_gbps.p10, 2),
            Cell::num(r.bandwidth_gbps.p90, 2),
            Cell::num(r.slowest_thread_gbps.median, 2),
            Cell::num(r.actual_bandwidth_gbps.median, 2),
            Cell::num(r.imbalance, 2),
            Cell::text(units::bytes(r.working_set_bytes)),
            Cell::text(&r.pages.obtained),
            Cell::num(r.placement.fraction_expected, 3),
        ]);
    }
    t.notes.push("GB/s = 10^9 bytes/s counted as STREAM does; actual bytes include the write-allocate reads of plain stores; imbalance = slowest / fastest thread".into());
    if let Some(r) = recs.first() {
        t.notes.push(format!(
            "{} timed rounds per measurement after 1 warm-up round",
            r.sample_ns.len()
        ));
    }
    t.notes.push(verified_text(recs));
    if let Some(n) = variant_text(recs) {
        t.notes.push(n);
    }
    t.notes.push(crate::peak::note(peak));
    s.table(t);
    // Every node-pair matrix as numbers: one table per kernel and thread count.
    for k in first_seen(
        recs.iter()
            .filter(|r| r.matrix.is_some())
            .map(|r| r.kernel.name()),
    ) {
        let of_k: Vec<&BandwidthRecord> = recs
            .iter()
            .filter(|r| r.matrix.is_some() && r.kernel.name() == k)
            .collect();
        for n in first_seen(of_k.iter().map(|r| r.threads)) {
            let cells: Vec<(MatrixCell, f64)> = of_k
                .iter()
                .filter(|r| r.threads == n)
                .filter_map(|r| Some((r.matrix?, r.bandwidth_gbps.median)))
                .collect();
            s.table(node_matrix_table(
                &anchors::id(b, &format!("mem-bandwidth-matrix-{k}-{n}")),
                &format!("{k}, {n} thread(s) per node: median GB/s by node pair"),
                &cells,
                1,
            ));
        }
    }
    controllers(&mut s, b, recs);
    s
}

/// The memory controllers' own count beside the probe's bytes (an untimed pass of each
/// kernel counted with the uncore PMUs), or why there is none.
fn controllers(s: &mut Section, b: usize, recs: &[BandwidthRecord]) {
    let checked: Vec<&BandwidthRecord> = recs.iter().filter(|r| r.uncore.is_some()).collect();
    if checked.is_empty() {
        let mut notes: Vec<&str> = recs
            .iter()
            .filter_map(|r| r.uncore_note.as_deref())
            .collect();
        notes.dedup();
        for n in notes {
            s.para(format!("Memory controllers: {n}."));
        }
        return;
    }
    let mut t = table(
        &anchors::id(b, "mem-bandwidth-controllers"),
        "The probe's bytes against the memory controllers' count",
        &[
            ("kernel", None),
            ("threads", None),
            ("cell", None),
            ("side", None),
            ("probe", Some("GB/s")),
            ("controllers", Some("GB/s")),
            ("difference", Some("%")),
            ("verdict", None),
        ],
    );
    for r in &checked {
        let cell = match r.matrix {
            Some(m) => format!("CPU node {} -> memory node {}", m.cpu_node, m.mem_node),
            None => format!(
                "CPUs {}",
                numalab_schema::cpulist::format(&r.placement.cpus)
            ),
        };
        match &r.uncore_check {
            Some(c) => {
                for side in &c.sides {
                    t.push(vec![
                        Cell::text(r.kernel.name()),
                        Cell::num(r.threads as f64, 0),
                        Cell::text(&cell),
                        Cell::text(&side.side),
                        Cell::num(side.probe_gbps, 2),
                        Cell::num(side.controllers_gbps, 2),
                        Cell::num(side.difference_pct, 1),
                        Cell::text(&c.verdict),
                    ]);
                }
            }
            None => t.push(vec![
                Cell::text(r.kernel.name()),
                Cell::num(r.threads as f64, 0),
                Cell::text(&cell),
                Cell::missing("no controller figure"),
                Cell::missing("no controller figure"),
                Cell::missing("no controller figure"),
                Cell::missing("no controller figure"),
                Cell::text("see the controllers' notes"),
            ]),
        }
    }
    t.notes.push("one untimed pass of each kernel (its inner repetitions on every thread) after the timed rounds, counted system-wide at the memory controllers; the probe's reads include the line a plain store reads first (write-allocate); beyond 10% apart is a finding".into());
    s.table(t);
    // The controllers' breakdown of the first few passes (per controller, socket, link).
    for (i, r) in checked.iter().take(4).enumerate() {
        if let Some(u) = &r.uncore {
            super::uncore::render(s, &anchors::id(b, &format!("mem-bandwidth-uncore-{i}")), u);
        }
    }
}

fn latency(b: usize, recs: &[LatencyRecord], m: Option<&Machine>, of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "mem-latency"),
        &format!("Memory latency{of}"),
    );
    let curves: Vec<&LatencyRecord> = recs
        .iter()
        .filter(|r| r.matrix.is_none() && r.points.len() > 1)
        .collect();
    if let Some(first) = curves.first() {
        let mut c = LineChart::new(
            "Load-to-load latency against working set",
            "working set (log scale)",
            "ns per load (log scale)",
        );
        c.x_log = true;
        c.y_log = true;
        c.x_format = AxisFormat::Bytes;
        c.marks = cache_marks(m, first.cpu);
        for r in &curves {
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
        for r in &curves {
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
    s
}

fn loaded_section(
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

fn migrate(b: usize, recs: &[MigrateRecord], of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "mem-migrate"),
        &format!("Page migration{of}"),
    );
    let mut pairs: Vec<(u32, u32, String)> = Vec::new();
    for r in recs {
        let p = (r.src_node, r.dst_node, r.pair_role.clone());
        if !pairs.contains(&p) {
            pairs.push(p);
        }
    }
    for (i, (src, dst, role)) in pairs.iter().enumerate() {
        let of_pair: Vec<&MigrateRecord> = recs
            .iter()
            .filter(|r| r.src_node == *src && r.dst_node == *dst)
            .collect();
        let mut c = LineChart::new(
            &format!("Node {src} -> node {dst} ({role})"),
            "pages moved (log scale)",
            "GB/s (payload)",
        );
        c.x_log = true;
        let mut names: Vec<(String, u64)> = Vec::new();
        for r in &of_pair {
            for m in &r.methods {
                let n = (m.method.name().to_string(), r.unit_bytes);
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        for (method, unit) in &names {
            let pts: Vec<(f64, f64)> = of_pair
                .iter()
                .filter(|r| r.unit_bytes == *unit)
                .filter_map(|r| {
                    let m = r.methods.iter().find(|m| m.method.name() == method)?;
                    Some((r.pages as f64, m.throughput_gbps.as_ref()?.median))
                })
                .collect();
            if !pts.is_empty() {
                c.series.push(Series::new(
                    &format!("{method}, {} pages", units::bytes(*unit)),
                    pts,
                ));
            }
        }
        let id = if i == 0 {
            anchors::mem_migrate(b)
        } else {
            anchors::id(b, &format!("mem-migrate-{src}-{dst}"))
        };
        s.chart(
            &id,
            c.to_svg(),
            "Payload throughput of each method as the number of pages grows (move_pages has none when source and target are the same node)",
        );
    }
    let mut t = table(
        &anchors::id(b, "mem-migrate-table"),
        "Cells",
        &[
            ("from", None),
            ("to", None),
            ("pair", None),
            ("page unit", None),
            ("pages", None),
            ("memcpy", Some("GB/s")),
            ("move_pages", Some("GB/s")),
            ("stream_copy", Some("GB/s")),
            ("winner", None),
            ("of local copy", Some("%")),
        ],
    );
    let mut whys = Vec::new();
    for r in recs {
        let gbps = |name: &str| -> Cell {
            match r.methods.iter().find(|m| m.method.name() == name) {
                Some(m) => match &m.throughput_gbps {
                    Some(t) => Cell::num(t.median, 2),
                    None => Cell::missing(m.note.clone().unwrap_or_else(|| "nothing moved".into())),
                },
                None => Cell::missing("not measured"),
            }
        };
        let winner = r.winner.map(|w| w.name().to_string());
        let pct = r
            .methods
            .iter()
            .find(|m| Some(m.method) == r.winner)
            .and_then(|m| m.percent_of_reference);
        t.push(vec![
            Cell::num(f64::from(r.src_node), 0),
            Cell::num(f64::from(r.dst_node), 0),
            Cell::text(&r.pair_role),
            Cell::text(units::bytes(r.unit_bytes)),
            Cell::num(r.pages as f64, 0),
            gbps("memcpy"),
            gbps("move_pages"),
            gbps("stream_copy"),
            Cell::text(winner.unwrap_or_else(|| "-".into())),
            opt(pct, 0, "no winner"),
        ]);
    }
    // One sentence per pair role: the conclusion at its largest cell (most pages of the
    // largest unit), as the findings state it; the table holds every cell.
    let mut roles: Vec<&str> = Vec::new();
    for r in recs {
        if !roles.contains(&r.pair_role.as_str()) {
            roles.push(&r.pair_role);
        }
    }
    for role in roles {
        if let Some(big) = recs
            .iter()
            .filter(|r| r.pair_role == role)
            .max_by_key(|r| (r.pages * r.unit_bytes, std::cmp::Reverse(r.unit_bytes)))
        {
            whys.push(format!(
                "{role}, {} x {} pages: {}",
                big.pages,
                units::bytes(big.unit_bytes),
                big.why
            ));
        }
    }
    if let Some(r) = recs.first() {
        t.notes.push(format!(
            "reference: {} ({:.2} GB/s): {}",
            r.reference.kind, r.reference.gbps, r.reference.detail
        ));
        if let Some(n) = &r.unit_note {
            t.notes.push(n.clone());
        }
        if let Some(n) = &r.clamp_note {
            t.notes.push(n.clone());
        }
    }
    if recs.iter().any(|r| r.same_node) {
        t.notes.push("same node: move_pages moves nothing, so it has no throughput there; its per-page checking cost is in the bundle".into());
    }
    s.table(t);
    whys.extend(numalab_records::mem::migrate::conclude(recs));
    s.list(whys);
    s
}
