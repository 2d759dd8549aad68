//! The memory bandwidth section: bandwidth against threads, the node-pair matrix, how
//! each figure was checked and its ISA chosen, and the memory controllers' own count.

use super::{first_seen, node_heatmap, node_matrix_table};
use crate::anchors;
use crate::doc::Section;
use crate::facts::matrix_kernel;
use crate::sections::table;
use crate::table::Cell;
use numalab_chart::{Bar, BarChart, LineChart, Series};
use numalab_records::mem::{BandwidthRecord, MatrixCell};
use numalab_records::memconfig::MemConfig;
use numalab_schema::{cpulist, units};

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

/// The memory bandwidth section of a bundle's bandwidth records.
pub(super) fn section(
    b: usize,
    recs: &[BandwidthRecord],
    peak: Option<&MemConfig>,
    of: &str,
) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "mem-bandwidth"),
        &format!("Memory bandwidth{of}"),
    );
    threads_chart(&mut s, b, recs);
    matrix_heatmap(&mut s, b, recs);
    measurements(&mut s, b, recs, peak);
    matrix_tables(&mut s, b, recs);
    controllers(&mut s, b, recs);
    s
}

/// Bandwidth against threads (lines per kernel), or by kernel (bars) when the sweep
/// has one thread count.
fn threads_chart(s: &mut Section, b: usize, recs: &[BandwidthRecord]) {
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
}

/// The node-pair matrix of the matrix kernel as a heatmap.
fn matrix_heatmap(s: &mut Section, b: usize, recs: &[BandwidthRecord]) {
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
}

/// Every measurement in one table, with its share of the peak and how it was checked.
fn measurements(s: &mut Section, b: usize, recs: &[BandwidthRecord], peak: Option<&MemConfig>) {
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
}

/// Every node-pair matrix as numbers: one table per kernel and thread count.
fn matrix_tables(s: &mut Section, b: usize, recs: &[BandwidthRecord]) {
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
            crate::sections::uncore::render(
                s,
                &anchors::id(b, &format!("mem-bandwidth-uncore-{i}")),
                u,
            );
        }
    }
}
