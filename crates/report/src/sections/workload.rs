//! The reference request workload: throughput per run and per thread, response-time
//! percentiles with their intervals, how busy the CPUs were (and who else used them),
//! where the graph's pages were, and power where it could be read.

use super::{iv, opt, table};
use crate::anchors;
use crate::doc::Section;
use crate::load::Loaded;
use crate::table::Cell;
use numalab_chart::{Bar, BarChart, LineChart, Series};
use numalab_records::workload::WorkloadRun;
use numalab_schema::cpulist;

/// The workload section of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let mut runs: Vec<WorkloadRun> = l
        .records_of::<WorkloadRun>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    if runs.is_empty() {
        return Vec::new();
    }
    runs.sort_by(|a, b| (a.mode.name(), a.threads).cmp(&(b.mode.name(), b.threads)));
    let mut s = Section::new(
        &anchors::id(b, "workload"),
        &format!("Reference workload{of}"),
    );
    let first = &runs[0];
    s.para(format!(
        "Route search and itinerary planning on a synthetic road network of {} intersections ({}, fingerprint {}), {:.0}% route queries; closed-loop clients pinned {}, {:.1} s measured after {:.1} s of warm-up.",
        first.graph.nodes,
        numalab_schema::units::bytes(first.graph.bytes),
        first.graph.fingerprint,
        first.route_share * 100.0,
        first.placement.name(),
        first.duration_s,
        first.warmup_s
    ));
    // Per-thread throughput against threads, one line per data mode (when a mode has
    // several thread counts), else bars.
    let modes: Vec<&str> = {
        let mut m: Vec<&str> = runs.iter().map(|r| r.mode.name()).collect();
        m.dedup();
        m
    };
    let lines = modes
        .iter()
        .any(|m| runs.iter().filter(|r| r.mode.name() == *m).count() > 1);
    if lines {
        let mut c = LineChart::new(
            "Requests/s per thread",
            "client threads",
            "requests/s per thread",
        );
        let mut ticks: Vec<f64> = runs.iter().map(|r| r.threads as f64).collect();
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        c.x_log = ticks.last().copied().unwrap_or(1.0) >= 8.0;
        c.x_ticks = ticks;
        for m in &modes {
            let of: Vec<&WorkloadRun> = runs.iter().filter(|r| r.mode.name() == *m).collect();
            // The median time slice (what the band is an interval of), per thread.
            let per_thread = |r: &WorkloadRun| {
                r.requests_per_s_interval
                    .as_ref()
                    .map_or(r.requests_per_s_per_thread, |i| {
                        i.estimate / r.threads as f64
                    })
            };
            let mut series = Series::new(
                m,
                of.iter()
                    .map(|r| (r.threads as f64, per_thread(r)))
                    .collect(),
            );
            series.band = of
                .iter()
                .filter_map(|r| {
                    let i = r.requests_per_s_interval.as_ref()?;
                    let t = r.threads as f64;
                    Some((t, i.low / t, i.high / t))
                })
                .collect();
            c.series.push(series);
            if let Some(one) = of.iter().find(|r| r.threads == 1) {
                let y = per_thread(one);
                let xs = [of[0].threads as f64, of[of.len() - 1].threads as f64];
                c.series.push(Series::reference(
                    &format!("{m}: perfect scaling"),
                    xs.iter().map(|x| (*x, y)).collect(),
                ));
            }
        }
        s.chart(
            &anchors::workload_chart(b),
            c.to_svg(),
            "Requests per second per client thread (median time slice; bands: its 95% interval). Dashed: perfect scaling from one thread; falling: each thread gets less done as threads are added",
        );
    } else {
        let chart = BarChart {
            title: "Requests/s per thread".into(),
            x_label: "requests/s per thread".into(),
            bars: runs
                .iter()
                .map(|r| {
                    let t = r.threads as f64;
                    Bar::new(
                        &format!("{} thread(s), {}", r.threads, r.mode.name()),
                        r.requests_per_s_per_thread,
                        r.requests_per_s_interval
                            .as_ref()
                            .map(|i| (i.low / t, i.high / t)),
                    )
                })
                .collect(),
            reference: None,
        };
        s.chart(
            &anchors::workload_chart(b),
            chart.to_svg(),
            "Requests per second per client thread, with the 95% interval of the median time slice",
        );
    }
    let mut t = table(
        &anchors::workload_table(b),
        "Runs",
        &[
            ("threads", None),
            ("data", None),
            ("requests/s", None),
            ("median slice", Some("requests/s")),
            ("per thread", Some("requests/s")),
            ("p50", Some("ms")),
            ("p95", Some("ms")),
            ("p99", Some("ms")),
            ("CPU use", None),
            ("CPUs busy (any process)", None),
            ("stolen", None),
            ("requests/J", None),
        ],
    );
    for r in &runs {
        let lat = r.latency.as_ref();
        let why_lat = "no request completed";
        t.push(vec![
            Cell::num(r.threads as f64, 0),
            Cell::text(r.mode.name()),
            Cell::num(r.requests_per_s, 1),
            iv(
                r.requests_per_s_interval.as_ref(),
                1.0,
                1,
                "fewer than 3 time slices",
            ),
            Cell::num(r.requests_per_s_per_thread, 1),
            iv(lat.map(|l| &l.p50_ns), 1e-6, 3, why_lat),
            iv(lat.map(|l| &l.p95_ns), 1e-6, 3, why_lat),
            iv(lat.map(|l| &l.p99_ns), 1e-6, 3, why_lat),
            Cell::num(r.cpu_utilization, 2),
            opt(r.worker_cpus_busy, 2, "/proc/stat not readable"),
            opt(r.worker_cpus_steal, 3, "/proc/stat not readable"),
            match (r.requests_per_joule, &r.power_unavailable_reason) {
                (Some(j), _) => Cell::num(j, 2),
                (None, Some(why)) => Cell::missing(why),
                (None, None) => Cell::missing("no power figure"),
            },
        ]);
    }
    t.notes.push("CPU use = process CPU time / (window x threads); CPUs busy = the clients' CPUs busy with any process (/proc/stat): a large gap means other processes shared them".into());
    t.notes.push("requests/s = requests / measured window; median slice = median of the per-slice rates with its 95% bootstrap interval; percentiles with 95% intervals".into());
    s.table(t);
    let mut p = table(
        &anchors::id(b, "workload-pages"),
        "Graph pages per NUMA node",
        &[
            ("threads", None),
            ("data", None),
            ("pages per node", None),
            ("copies", None),
        ],
    );
    for r in &runs {
        p.push(vec![
            Cell::num(r.threads as f64, 0),
            Cell::text(r.mode.name()),
            Cell::text(
                r.pages_per_node
                    .iter()
                    .map(|(n, c)| format!("node {n}: {c}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            Cell::num(r.memory.copies.len() as f64, 0),
        ]);
    }
    if runs.iter().any(|r| r.memory.modes_equivalent_here) {
        p.notes.push("one NUMA node: the data modes put every page on the same node here and differ only by noise".into());
    }
    s.table(p);
    for (i, r) in runs.iter().enumerate() {
        run_detail(&mut s, b, i, r);
    }
    vec![s]
}

/// One run in full: where its clients ran, response time by request type, each copy
/// of the graph and where its pages are, each client thread, power and temperatures.
fn run_detail(s: &mut Section, b: usize, i: usize, r: &WorkloadRun) {
    let nodes = {
        let mut n = r.pu_nodes.clone();
        n.sort_unstable();
        n.dedup();
        n
    };
    let mut t = table(
        &anchors::id(b, &format!("workload-run-{i}")),
        &format!(
            "{} client thread(s), {} data ({}: PUs {}, node(s) {}); {} requests ({} routes, {} itineraries) in {:.1} s after {:.1} s of warm-up{}; graph of {} streets built in {:.2} s",
            r.threads,
            r.mode.name(),
            r.placement.name(),
            cpulist::format(&r.pus),
            cpulist::format(&nodes),
            r.requests,
            r.requests_route,
            r.requests_itinerary,
            r.measured_s,
            r.warmup_s,
            if r.interrupted { " (interrupted: partial)" } else { "" },
            r.graph.edges,
            r.graph.generation_s
        ),
        &[
            ("requests", None),
            ("count", None),
            ("p50", Some("ms")),
            ("p95", Some("ms")),
            ("p99", Some("ms")),
        ],
    );
    for (name, l) in [
        ("all", &r.latency),
        ("routes", &r.latency_route),
        ("itineraries", &r.latency_itinerary),
    ] {
        let why = "no request of this type completed";
        t.push(vec![
            Cell::text(name),
            l.as_ref()
                .map_or(Cell::missing(why), |l| Cell::num(l.requests as f64, 0)),
            iv(l.as_ref().map(|l| &l.p50_ns), 1e-6, 3, why),
            iv(l.as_ref().map(|l| &l.p95_ns), 1e-6, 3, why),
            iv(l.as_ref().map(|l| &l.p99_ns), 1e-6, 3, why),
        ]);
    }
    t.notes.push(format!(
        "requests per CPU-second: {}",
        r.requests_per_cpu_s
            .map_or("none (no CPU time measured)".to_string(), |x| format!(
                "{x:.1}"
            ))
    ));
    match (r.power_watts, &r.power_unavailable_reason) {
        (Some(w), _) => t.notes.push(format!(
            "power {w:.1} W ({}), {} requests/J",
            r.power_covers.as_deref().unwrap_or("coverage unknown"),
            r.requests_per_joule
                .map_or("no".to_string(), |j| format!("{j:.2}"))
        )),
        (None, Some(why)) => t.notes.push(format!("power: {why}")),
        (None, None) => t.notes.push("power: not available".into()),
    }
    for tc in &r.temperatures {
        t.notes.push(format!(
            "{}: max {:.1} C, mean {:.1} C",
            tc.label, tc.max_c, tc.mean_c
        ));
    }
    s.table(t);
    let mut c = table(
        &anchors::id(b, &format!("workload-copies-{i}")),
        "Copies of the graph",
        &[
            ("copy", None),
            ("for node", None),
            ("policy", None),
            ("written from PU", None),
            ("pages", None),
            ("page size", None),
            ("pages per node", None),
            ("not present", None),
        ],
    );
    for (k, cp) in r.memory.copies.iter().enumerate() {
        c.push(vec![
            Cell::num(k as f64, 0),
            opt(cp.for_node.map(f64::from), 0, "shared by every node"),
            Cell::text(&cp.policy),
            Cell::num(f64::from(cp.built_on_pu), 0),
            Cell::num(cp.pages as f64, 0),
            Cell::text(numalab_schema::units::bytes(cp.page_bytes)),
            Cell::text(if cp.pages_per_node.is_empty() {
                "none located".to_string()
            } else {
                cp.pages_per_node
                    .iter()
                    .map(|(n, p)| format!("node {n}: {p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }),
            Cell::num(cp.not_present as f64, 0),
        ]);
    }
    s.table(c);
    if r.clients.len() > THREADS_ONE_ROW_EACH {
        s.table(client_blocks(b, i, r));
        return;
    }
    let mut th = table(
        &anchors::id(b, &format!("workload-threads-{i}")),
        "Client threads",
        &[
            ("PU", None),
            ("node", None),
            ("requests/s", None),
            ("CPU use", Some("%")),
        ],
    );
    for cl in &r.clients {
        th.push(vec![
            Cell::num(f64::from(cl.pu), 0),
            Cell::num(f64::from(cl.node), 0),
            Cell::num(cl.requests_per_s, 1),
            Cell::num(cl.cpu_utilization * 100.0, 0),
        ]);
    }
    s.table(th);
}

/// Up to this many client threads a run's table has a row per thread; above, a row per
/// block of threads (like the core-to-core heatmap above 64 CPUs).
const THREADS_ONE_ROW_EACH: usize = 64;

/// The client threads of a big run by blocks: the threads of one node sorted by PU, cut
/// into runs of at most ceil(threads / 32), with their sum and spread; every thread
/// stays in the record.
fn client_blocks(b: usize, i: usize, r: &WorkloadRun) -> crate::table::Table {
    let max = r.clients.len().div_ceil(32).max(1);
    let mut clients: Vec<_> = r.clients.iter().collect();
    clients.sort_by_key(|c| (c.node, c.pu));
    let mut t = table(
        &anchors::id(b, &format!("workload-threads-{i}")),
        &format!("Client threads, by blocks of up to {max} PUs of one node"),
        &[
            ("PUs", None),
            ("node", None),
            ("threads", None),
            ("requests/s", None),
            ("per thread, lowest", Some("requests/s")),
            ("per thread, median", Some("requests/s")),
            ("CPU use, lowest", Some("%")),
            ("CPU use, median", Some("%")),
        ],
    );
    for node in clients.chunk_by(|a, b| a.node == b.node) {
        let k = node.len().div_ceil(max);
        for j in 0..k {
            let block = &node[j * node.len() / k..(j + 1) * node.len() / k];
            let pus: Vec<u32> = block.iter().map(|c| c.pu).collect();
            let rate: Vec<f64> = block.iter().map(|c| c.requests_per_s).collect();
            let cpu: Vec<f64> = block.iter().map(|c| c.cpu_utilization * 100.0).collect();
            let lowest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
            t.push(vec![
                Cell::text(cpulist::format(&pus)),
                Cell::num(f64::from(block[0].node), 0),
                Cell::num(block.len() as f64, 0),
                Cell::num(rate.iter().sum(), 1),
                Cell::num(lowest(&rate), 1),
                opt(numalab_stats::median(&rate), 1, "no thread"),
                Cell::num(lowest(&cpu), 0),
                opt(numalab_stats::median(&cpu), 0, "no thread"),
            ]);
        }
    }
    t.notes.push(format!(
        "{} client threads are more than {THREADS_ONE_ROW_EACH}: one row per block; each thread's figures are in the workload.run record (raw data)",
        r.clients.len()
    ));
    t
}
