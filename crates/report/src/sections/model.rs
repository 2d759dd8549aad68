//! Modeled machines: STREAM triad by data node, latency heatmaps over the floorplan,
//! latency-versus-load curves, NUMA/SLC configurations and engine checks. Every section
//! is flagged as modeled.

use super::table;
use crate::anchors;
use crate::doc::Section;
use crate::load::Loaded;
use crate::table::Cell;
use numalab_chart::{Bar, BarChart, Heatmap, LineChart, Series};
use numalab_records::model as m;
use numalab_schema::Record;

fn vns(t: &mut crate::table::Table, v: &[numalab_records::model::VnFigures]) {
    for x in v {
        t.notes.push(format!(
            "{} network: {:.3} packets/cycle, {:.1} cycles latency ({:.1} queueing), busiest link {:.0}%",
            x.vn,
            x.packets_per_cycle,
            x.latency_cycles,
            x.queueing_cycles,
            x.max_link_utilization * 100.0
        ));
    }
}

/// One policy run's node x node packet matrix and its controllers' local and remote
/// accesses (records written before these were reported have neither: nothing shown).
fn policy_tables(s: &mut Section, b: usize, key: &str, p: &m::Policy) {
    let what = format!("{} / {} ({})", p.configuration, p.application, p.engine);
    let n = p.node_packets_per_cycle.len();
    if n > 0 {
        let mut cols: Vec<(String, Option<&str>)> = vec![("from node \\ to node".into(), None)];
        cols.extend((0..n).map(|d| (format!("{d}"), None)));
        cols.push(("total".into(), None));
        let cols: Vec<(&str, Option<&str>)> = cols.iter().map(|(c, u)| (c.as_str(), *u)).collect();
        let mut t = table(
            &anchors::model(b, &format!("{key}-nodes")),
            &format!("Packets per 1000 cycles between NUMA nodes, {what}"),
            &cols,
        );
        for (src, row) in p.node_packets_per_cycle.iter().enumerate() {
            let mut cells = vec![Cell::text(format!("{src}"))];
            cells.extend(row.iter().map(|&x| Cell::num(x * 1000.0, 1)));
            cells.push(Cell::num(row.iter().sum::<f64>() * 1000.0, 1));
            t.push(cells);
        }
        t.notes.push(
            "rows: node of the sending stop; columns: node of the receiving stop; all four virtual networks".into(),
        );
        s.table(t);
    }
    if !p.mc_node.is_empty() {
        let mut t = table(
            &anchors::model(b, &format!("{key}-controllers")),
            &format!("Memory accesses per controller, {what}"),
            &[
                ("controller", None),
                ("node", None),
                ("local", Some("accesses/kcycle")),
                ("from other nodes", Some("accesses/kcycle")),
                ("local", Some("%")),
            ],
        );
        for (i, &node) in p.mc_node.iter().enumerate() {
            let l = p.mc_local_accesses_per_cycle.get(i).copied().unwrap_or(0.0);
            let r = p
                .mc_remote_accesses_per_cycle
                .get(i)
                .copied()
                .unwrap_or(0.0);
            t.push(vec![
                Cell::text(format!("{i}")),
                Cell::num(f64::from(node), 0),
                Cell::num(l * 1000.0, 1),
                Cell::num(r * 1000.0, 1),
                if l + r > 0.0 {
                    Cell::num(100.0 * l / (l + r), 1)
                } else {
                    Cell::missing("no accesses")
                },
            ]);
        }
        t.notes.push(format!(
            "local: the requesting core is on the controller's node; {:.1}% of all accesses are local",
            p.local_share * 100.0
        ));
        s.table(t);
    }
}

/// The modeled STREAM triad by data node: the chart and its table.
fn triad_section(b: usize, triads: &[(&Record, m::StreamTriad)], of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "model-triad"),
        &format!("Modeled STREAM triad{of}"),
    );
    s.modeled = true;
    s.chart(
        &anchors::model_triad(b),
        BarChart {
            title: "Modeled triad bandwidth by data node".into(),
            x_label: "GB/s".into(),
            bars: triads
                .iter()
                .map(|(_, t)| {
                    Bar::new(
                        &format!(
                            "{} cores, data on node {} ({})",
                            t.cores.len(),
                            t.data_node,
                            t.engine
                        ),
                        t.bandwidth_gbps,
                        None,
                    )
                })
                .collect(),
            reference: None,
        }
        .to_svg(),
        "Triad bandwidth with the threads' cores fixed and the arrays on each node in turn (modeled)",
    );
    let mut t = table(
        &anchors::id(b, "model-triad-table"),
        &format!(
            "Triad by data node, threads on cores {}",
            numalab_schema::cpulist::format(
                &triads[0]
                    .1
                    .cores
                    .iter()
                    .map(|&c| c as u32)
                    .collect::<Vec<_>>()
            )
        ),
        &[
            ("preset", None),
            ("engine", None),
            ("cores", None),
            ("data node", None),
            ("memory", None),
            ("bandwidth", Some("GB/s")),
            ("peak", Some("GB/s")),
            ("of peak", Some("%")),
            ("request latency", Some("ns")),
            ("mean hops", None),
            ("SLC hits", None),
            ("saturated", None),
            ("queueing req/snp/rsp/dat", Some("cycles")),
        ],
    );
    for (_, x) in triads {
        t.push(vec![
            Cell::text(&x.preset),
            Cell::text(&x.engine),
            Cell::num(x.cores.len() as f64, 0),
            Cell::num(f64::from(x.data_node), 0),
            Cell::text(&x.memory_kind),
            Cell::num(x.bandwidth_gbps, 1),
            Cell::num(x.peak_gbps, 1),
            Cell::num(x.percent_of_peak, 1),
            Cell::num(x.request_latency_ns, 1),
            Cell::num(x.mean_hops, 2),
            Cell::num(x.slc_hit_ratio, 2),
            Cell::text(if x.saturated { "yes" } else { "no" }),
            Cell::text(
                x.vns
                    .iter()
                    .map(|v| format!("{:.2}", v.queueing_cycles))
                    .collect::<Vec<_>>()
                    .join("/"),
            ),
        ]);
    }
    s.table(t);
    s
}

/// One modeled latency heatmap over the floorplan: the chart, its grid as numbers and
/// the spread.
fn heatmap_section(b: usize, key: &str, h: &m::LatencyHeatmap, of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, &format!("model-heat-section-{key}")),
        &format!("Modeled latency to {} ({}){of}", h.target, h.preset),
    );
    s.modeled = true;
    let sockets: Vec<u32> = {
        let mut v: Vec<u32> = h.cells.iter().map(|c| c.socket).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let max_x = h.cells.iter().map(|c| c.x).max().unwrap_or(0);
    let max_y = h.cells.iter().map(|c| c.y).max().unwrap_or(0);
    // Columns: x of socket 0, then of socket 1...; rows: y from the top.
    let cols: Vec<String> = sockets
        .iter()
        .flat_map(|s| (0..=max_x).map(move |x| format!("s{s}x{x}")))
        .collect();
    let rows: Vec<String> = (0..=max_y).rev().map(|y| format!("y{y}")).collect();
    let mut values = vec![vec![None; cols.len()]; rows.len()];
    let mut counts = vec![vec![0usize; cols.len()]; rows.len()];
    for c in &h.cells {
        let si = sockets.iter().position(|s| *s == c.socket).unwrap_or(0);
        let col = si * (max_x as usize + 1) + c.x as usize;
        let row = (max_y - c.y) as usize;
        let cell: &mut Option<f64> = &mut values[row][col];
        *cell = Some(cell.unwrap_or(0.0) + c.latency_cycles);
        counts[row][col] += 1;
    }
    for (r, row) in values.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            if let Some(x) = v {
                *x /= counts[r][c] as f64;
            }
        }
    }
    // The same grid as numbers.
    let spec: Vec<(String, Option<&str>)> = std::iter::once(("row".to_string(), None))
        .chain(cols.iter().map(|c| (c.clone(), None)))
        .collect();
    let spec: Vec<(&str, Option<&str>)> = spec.iter().map(|(n, u)| (n.as_str(), *u)).collect();
    let mut grid = table(
        &anchors::id(b, &format!("model-heat-grid-{key}")),
        &format!(
            "Latency to {} by core position, NoC cycles (mean of the cores at each stop)",
            h.target
        ),
        &spec,
    );
    for (name, row) in rows.iter().zip(&values) {
        let mut cells = vec![Cell::text(name)];
        cells.extend(
            row.iter()
                .map(|v| v.map_or(Cell::missing("no core"), |x| Cell::num(x, 0))),
        );
        grid.push(cells);
    }
    let mut hm = Heatmap::new(
        &format!("Latency to {} by core position (cycles)", h.target),
        rows,
        cols,
        values,
        "cycles",
    );
    hm.row_label = "row".into();
    hm.col_label = "column".into();
    s.chart(
        &anchors::model(b, key),
        hm.to_svg(),
        format!(
            "Mean latency from the cores at each mesh position to a line homed at {} (stop {:?}), NoC cycles; grey: no core (modeled)",
            h.target, h.target_stop
        ),
    );
    let mut t = table(
        &anchors::id(b, &format!("model-heat-table-{key}")),
        "Spread",
        &[
            ("min", Some("cycles")),
            ("max", Some("cycles")),
            ("spread", Some("cycles")),
            ("mean", Some("ns")),
            ("spread", Some("ns")),
        ],
    );
    t.push(vec![
        Cell::num(h.min_cycles, 1),
        Cell::num(h.max_cycles, 1),
        Cell::num(h.spread_cycles, 1),
        Cell::num(h.mean_ns, 1),
        Cell::num(h.spread_ns, 1),
    ]);
    t.notes.push(format!(
        "min {:.1}, max {:.1}, spread {:.1} cycles ({:.1} ns); mean {:.1} ns",
        h.min_cycles, h.max_cycles, h.spread_cycles, h.spread_ns, h.mean_ns
    ));
    s.table(grid);
    s.table(t);
    s
}

/// One modeled latency-versus-load curve: the chart and its points.
fn traffic_section(b: usize, key: &str, tr: &m::Traffic, of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, &format!("model-traffic-section-{key}")),
        &format!(
            "Modeled {} traffic on {} ({}, {} flit(s) per packet){of}",
            tr.pattern, tr.preset, tr.engine, tr.flits
        ),
    );
    s.modeled = true;
    let mut c = LineChart::new(
        &format!("{} traffic: latency against offered load", tr.pattern),
        "offered load (packets per stop per cycle)",
        "mean packet latency (cycles)",
    );
    c.series.push(Series::new(
        &tr.engine,
        tr.points
            .iter()
            .map(|p| (p.offered, p.latency_cycles))
            .collect(),
    ));
    c.marks.push((tr.saturation_rate, "saturation".into()));
    if let Some(bb) = tr.bisection_bound {
        c.marks.push((bb, "bisection bound".into()));
    }
    s.chart(
        &anchors::model(b, key),
        c.to_svg(),
        "Mean packet latency as the offered load grows, to saturation (modeled)",
    );
    let mut t = table(
        &anchors::id(b, &format!("model-traffic-table-{key}")),
        "Curve",
        &[
            ("offered", None),
            ("accepted", None),
            ("latency", Some("cycles")),
            ("busiest link", None),
            ("stable", None),
        ],
    );
    for p in &tr.points {
        t.push(vec![
            Cell::num(p.offered, 4),
            Cell::num(p.accepted, 4),
            Cell::num(p.latency_cycles, 1),
            Cell::num(p.max_link_utilization, 2),
            Cell::text(if p.stable { "yes" } else { "no" }),
        ]);
    }
    t.notes.push(format!(
        "zero-load latency {:.2} cycles, mean hops {:.3}; saturation (busiest link at 100%) {:.4} packets/stop/cycle{}",
        tr.zero_load_latency_cycles,
        tr.mean_hops,
        tr.saturation_rate,
        tr.bisection_bound
            .map_or(String::new(), |bb| format!(" (bisection bound 4/k = {bb:.4})"))
    ));
    if let Some(r) = tr.router_saturation_rate {
        t.notes.push(format!(
            "input-queued routers: the analytic model saturates at {r:.4} packets/stop/cycle ({:.0}% of the link bound), where input ports lose cycles in switch allocation",
            100.0 * r / tr.saturation_rate
        ));
    }
    if let Some(st) = tr.saturation_observed {
        t.notes.push(format!(
            "highest stable load: {st:.4} ({:.0}% of the saturation rate)",
            100.0 * st / tr.saturation_rate
        ));
    }
    s.table(t);
    s
}

/// The modeled NUMA and SLC configurations: the chart, their table and each run's
/// packet matrix.
fn policy_section(b: usize, policies: &[(&Record, m::Policy)], of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "model-policy"),
        &format!("Modeled NUMA and SLC configurations{of}"),
    );
    s.modeled = true;
    s.chart(
        &anchors::model_policy(b),
        BarChart {
            title: "Modeled bandwidth by configuration".into(),
            x_label: "GB/s".into(),
            bars: policies
                .iter()
                .map(|(_, p)| {
                    Bar::new(
                        &format!("{} / {}", p.configuration, p.application),
                        p.bandwidth_gbps,
                        None,
                    )
                })
                .collect(),
            reference: None,
        }
        .to_svg(),
        "Bandwidth of the same application traffic under each configuration (modeled)",
    );
    let mut t = table(
        &anchors::id(b, "model-policy-table"),
        "Configurations",
        &[
            ("configuration", None),
            ("application", None),
            ("nodes", None),
            ("bandwidth", Some("GB/s")),
            ("latency", Some("ns")),
            ("SLC hits", None),
            ("mean hops", None),
            ("controller imbalance", None),
            ("local accesses", Some("%")),
            ("saturated", None),
        ],
    );
    for (_, p) in policies {
        t.push(vec![
            Cell::text(&p.configuration),
            Cell::text(&p.application),
            Cell::num(p.numa_nodes as f64, 0),
            Cell::num(p.bandwidth_gbps, 1),
            Cell::num(p.request_latency_ns, 1),
            Cell::num(p.slc_hit_ratio, 2),
            Cell::num(p.mean_hops, 2),
            Cell::num(p.mc_imbalance, 2),
            if p.mc_node.is_empty() {
                Cell::missing("record written before local accesses were reported")
            } else {
                Cell::num(p.local_share * 100.0, 1)
            },
            Cell::text(if p.saturated { "yes" } else { "no" }),
        ]);
        if p.configuration == policies[0].1.configuration {
            vns(&mut t, &p.vns);
        }
    }
    s.table(t);
    for (r, p) in policies {
        policy_tables(&mut s, b, &r.key, p);
    }
    s
}

/// The model engines against each other: one table per check.
fn check_section(b: usize, checks: &[(&Record, m::Check)], of: &str) -> Section {
    let mut s = Section::new(
        &anchors::id(b, "model-check"),
        &format!("Model engines against each other{of}"),
    );
    s.modeled = true;
    for (r, c) in checks {
        // With the routers named (synthetic traffic), each column says whose it is.
        let (an, de) = match &c.router {
            Some(k) => (format!("analytic {k}"), format!("discrete-event {k}")),
            None => ("analytic".to_string(), "discrete-event".to_string()),
        };
        let other = c
            .other_router
            .as_ref()
            .map(|k| (format!("discrete-event {k}"), format!("{k} vs {de}")));
        let mut cols: Vec<(&str, Option<&str>)> = vec![
            ("metric", None),
            (&an, None),
            (&de, None),
            ("difference", Some("%")),
        ];
        if let Some((o, d)) = &other {
            cols.push((o, None));
            cols.push((d, Some("%")));
        }
        let mut t = table(
            &anchors::model(b, &r.key),
            &format!("{} {} ({})", c.preset, c.experiment, c.point),
            &cols,
        );
        for m in &c.metrics {
            let mut row = vec![
                Cell::text(&m.name),
                Cell::num(m.analytic, 3),
                Cell::num(m.des, 3),
                Cell::num(m.relative_difference * 100.0, 1),
            ];
            if other.is_some() {
                row.push(m.other_router_des.map_or_else(
                    || Cell::missing("not run at this load"),
                    |v| Cell::num(v, 3),
                ));
                row.push(m.other_router_difference.map_or_else(
                    || Cell::missing("not run at this load"),
                    |v| Cell::num(v * 100.0, 1),
                ));
            }
            t.push(row);
        }
        t.notes.extend(c.not_run.iter().cloned());
        s.table(t);
    }
    s
}

/// The model sections of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let mut out = Vec::new();
    let triads = l.records_of::<m::StreamTriad>();
    if !triads.is_empty() {
        out.push(triad_section(b, &triads, of));
    }
    for (r, h) in l.records_of::<m::LatencyHeatmap>() {
        out.push(heatmap_section(b, &r.key, &h, of));
    }
    for (r, tr) in l.records_of::<m::Traffic>() {
        out.push(traffic_section(b, &r.key, &tr, of));
    }
    let policies = l.records_of::<m::Policy>();
    if !policies.is_empty() {
        out.push(policy_section(b, &policies, of));
    }
    let checks = l.records_of::<m::Check>();
    if !checks.is_empty() {
        out.push(check_section(b, &checks, of));
    }
    out
}
