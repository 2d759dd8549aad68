//! Assertions on the `--json` output of numalab's measuring commands in the guest:
//! node matrices, migration, policy studies, the reference workload, core-to-core
//! latency and `evaluate`.
//!
//! The guest's memory is all the same host memory, so nothing here compares speeds.
//! What is asserted is the shape of the results (N x M cells, every ordered pair, every
//! method) and the placement each result records, against the [`Layout`] QEMU was
//! started with: the threads' node, the node the data was asked on, and the pages per
//! node the kernel reported, which must all be where they were asked to be. Where a
//! command runs our test program (`numa-guest touch`), the program's own numa_maps
//! count is compared with what numalab sampled.
//!
//! The entries that run these live in `cli_checks::table`.

use crate::layout::Layout;
use crate::touch::TouchReport;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What an assertion returns.
type Res = Result<String, String>;

/// The value at a dotted path (`placement.cpus`, `methods.0.method`).
pub fn at<'a>(v: &'a Value, path: &str) -> Result<&'a Value, String> {
    let mut cur = v;
    for part in path.split('.') {
        cur = match part.parse::<usize>() {
            Ok(i) => cur.get(i),
            Err(_) => cur.get(part),
        }
        .ok_or_else(|| format!("no `{path}` in {}", short(v)))?;
    }
    Ok(cur)
}

fn short(v: &Value) -> String {
    let t = v.to_string();
    if t.chars().count() > 300 {
        format!("{}...", t.chars().take(300).collect::<String>())
    } else {
        t
    }
}

/// An unsigned integer at a path.
pub fn u64_at(v: &Value, path: &str) -> Result<u64, String> {
    at(v, path)?
        .as_u64()
        .ok_or_else(|| format!("`{path}` is not an unsigned integer in {}", short(v)))
}

/// A string at a path.
pub fn str_at<'a>(v: &'a Value, path: &str) -> Result<&'a str, String> {
    at(v, path)?
        .as_str()
        .ok_or_else(|| format!("`{path}` is not a string in {}", short(v)))
}

/// A list of node or CPU numbers at a path.
pub fn u32s_at(v: &Value, path: &str) -> Result<Vec<u32>, String> {
    at(v, path)?
        .as_array()
        .ok_or_else(|| format!("`{path}` is not a list in {}", short(v)))?
        .iter()
        .map(|x| {
            x.as_u64()
                .map(|n| n as u32)
                .ok_or_else(|| format!("`{path}` holds a non-number: {x}"))
        })
        .collect()
}

/// `[[node, count], ...]` at a path, as a map.
pub fn node_counts_at(v: &Value, path: &str) -> Result<BTreeMap<u32, u64>, String> {
    let list = at(v, path)?
        .as_array()
        .ok_or_else(|| format!("`{path}` is not a list in {}", short(v)))?;
    let mut out = BTreeMap::new();
    for pair in list {
        let (n, c) = (
            pair.get(0).and_then(Value::as_u64),
            pair.get(1).and_then(Value::as_u64),
        );
        match (n, c) {
            (Some(n), Some(c)) => {
                out.insert(n as u32, c);
            }
            _ => return Err(format!("`{path}` holds {pair}, not [node, count]")),
        }
    }
    Ok(out)
}

/// The memory policy a record shows, as `bind:2`, `interleave:0-4`, `preferred:2`.
fn policy_text(v: &Value) -> Result<String, String> {
    let kind = str_at(v, "policy")?;
    let nodes = match at(v, "nodes")? {
        Value::Array(_) => u32s_at(v, "nodes")?,
        Value::Number(n) => vec![n.as_u64().unwrap_or(u64::MAX) as u32],
        other => return Err(format!("policy nodes {other}")),
    };
    Ok(format!(
        "{kind}:{}",
        numalab_schema::cpulist::format(&nodes)
    ))
}

fn warning_codes(rec: &Value) -> Vec<String> {
    rec.get("warnings")
        .and_then(Value::as_array)
        .map(|w| {
            w.iter()
                .filter_map(|x| x.get("code").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The whole records (key, kind, data, warnings) of one kind.
fn full_records<'a>(bundle: &'a Value, kind: &str) -> Vec<&'a Value> {
    bundle
        .get("records")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter(|x| x.get("kind").and_then(Value::as_str) == Some(kind))
                .collect()
        })
        .unwrap_or_default()
}

/// The placement block of a `mem.*` record says: threads on the CPUs of `cpu_node`,
/// data bound to `mem_node`, and every page the kernel reported on `mem_node`.
fn expect_cell_placement(
    l: &Layout,
    p: &Value,
    cpu_node: u32,
    mem_node: u32,
    what: &str,
) -> Result<u64, String> {
    let want_cpus = &l.nodes[cpu_node as usize].cpus;
    let cpus = u32s_at(p, "cpus")?;
    expect(
        !cpus.is_empty() && cpus.iter().all(|c| want_cpus.contains(c)),
        format!("{what}: threads on node {cpu_node}'s CPUs {want_cpus:?}, got {cpus:?}"),
    )?;
    expect(
        u32s_at(p, "cpu_nodes")? == [cpu_node],
        format!(
            "{what}: cpu_nodes [{cpu_node}], got {}",
            at(p, "cpu_nodes")?
        ),
    )?;
    let pol = policy_text(at(p, "policy")?)?;
    expect(
        pol == format!("bind:{mem_node}"),
        format!("{what}: policy bind:{mem_node}, got {pol}"),
    )?;
    expect(
        u32s_at(p, "expected_nodes")? == [mem_node],
        format!("{what}: expected_nodes [{mem_node}]"),
    )?;
    let pages = node_counts_at(p, "pages_per_node")?;
    let total: u64 = pages.values().sum();
    expect(
        total > 0 && pages.keys().eq([mem_node].iter()),
        format!("{what}: every page on node {mem_node}, the kernel says {pages:?}"),
    )?;
    expect(
        u64_at(p, "pages_not_present")? == 0,
        format!("{what}: no page missing"),
    )?;
    Ok(total)
}

/// `mem bandwidth --matrix`: one record per (node with CPUs, node with memory,
/// kernel), each with its placement as asked and a positive bandwidth.
pub fn bandwidth_matrix(l: &Layout, v: &Value, kernels: &[&str]) -> Res {
    let recs = full_records(v, "mem.bandwidth");
    let rows: Vec<u32> = l.cpu_nodes().map(|n| n.id).collect();
    let cols = l.node_ids();
    let want = rows.len() * cols.len() * kernels.len();
    expect(
        recs.len() == want,
        format!(
            "{} rows x {} columns x {} kernels = {want} records, got {}",
            rows.len(),
            cols.len(),
            kernels.len(),
            recs.len()
        ),
    )?;
    let mut seen = BTreeSet::new();
    let mut pages_seen = BTreeSet::new();
    let mut figures = Vec::new();
    for r in &recs {
        let d = at(r, "data")?;
        let (cn, mn) = (
            u64_at(d, "matrix.cpu_node")? as u32,
            u64_at(d, "matrix.mem_node")? as u32,
        );
        let kernel = str_at(d, "kernel")?.to_string();
        let what = format!("cell cpu {cn} / mem {mn} / {kernel}");
        expect(
            rows.contains(&cn) && cols.contains(&mn),
            format!("{what}: a row of the CPU nodes and a column of the memory nodes"),
        )?;
        expect(
            seen.insert((cn, mn, kernel.clone())),
            format!("{what} only once"),
        )?;
        let pages = expect_cell_placement(l, at(d, "placement")?, cn, mn, &what)?;
        let total_bytes = u64_at(d, "pages.total_bytes")?;
        let page_bytes = u64_at(d, "pages.page_bytes")?;
        expect(
            pages * page_bytes == total_bytes,
            format!("{what}: the pages found ({pages}) cover the {total_bytes} bytes mapped"),
        )?;
        expect(
            u64_at(d, "threads")? as usize == l.nodes[cn as usize].cpus.len(),
            format!("{what}: one thread per CPU of node {cn}"),
        )?;
        let gbps = at(d, "bandwidth_gbps.median")?.as_f64().unwrap_or(f64::NAN);
        expect(
            gbps.is_finite() && gbps > 0.0,
            format!("{what}: a positive bandwidth, got {gbps}"),
        )?;
        expect(
            !warning_codes(r).iter().any(|w| w == "placement_mismatch"),
            format!("{what}: no placement_mismatch warning"),
        )?;
        pages_seen.insert(pages);
        figures.push((kernel, cn, mn, gbps));
    }
    let last = kernels.last().copied().unwrap_or_default();
    let cells: Vec<(u32, u32, f64)> = figures
        .iter()
        .filter(|f| f.0 == last)
        .map(|f| (f.1, f.2, f.3))
        .collect();
    Ok(format!(
        "{} cells ({} CPU nodes x {} memory nodes incl. memory-only x {} kernels), each bound to its node, all pages there; {last} GB/s {}",
        recs.len(),
        rows.len(),
        cols.len(),
        kernels.len(),
        figure_rows(&cells, 2)
    ))
}

/// A node-pair matrix of figures as one line: `[cpu 0: 1.2 1.1 ... | cpu 1: ...]`,
/// columns in node order. Shown in the check's detail so that a run's report carries
/// the figures the guest measured (placement is what is asserted, not these values:
/// every guest node is the same host memory).
pub fn figure_rows(cells: &[(u32, u32, f64)], decimals: usize) -> String {
    let rows: BTreeSet<u32> = cells.iter().map(|c| c.0).collect();
    let lines: Vec<String> = rows
        .iter()
        .map(|r| {
            let mut row: Vec<(u32, f64)> = cells
                .iter()
                .filter(|c| c.0 == *r)
                .map(|c| (c.1, c.2))
                .collect();
            row.sort_by_key(|c| c.0);
            let vals: Vec<String> = row
                .iter()
                .map(|c| format!("{:.*}", decimals, c.1))
                .collect();
            format!("cpu {r}: {}", vals.join(" "))
        })
        .collect();
    format!("[{}]", lines.join(" | "))
}

/// `mem latency --matrix`: one record per (node with CPUs, node with memory, page
/// kind), the chasing CPU on the row node, the pages on the column node.
pub fn latency_matrix(l: &Layout, v: &Value, kinds: &[&str], size: Option<u64>) -> Res {
    let recs = full_records(v, "mem.latency");
    latency_matrix_records(l, &recs, kinds, size)
}

/// As [`latency_matrix`], on records already picked (e.g. from a journal).
pub fn latency_matrix_records(
    l: &Layout,
    recs: &[&Value],
    kinds: &[&str],
    size: Option<u64>,
) -> Res {
    let rows: Vec<u32> = l.cpu_nodes().map(|n| n.id).collect();
    let cols = l.node_ids();
    let want = rows.len() * cols.len() * kinds.len();
    expect(
        recs.len() == want,
        format!(
            "{} x {} x {} page kinds = {want} latency cells, got {}",
            rows.len(),
            cols.len(),
            kinds.len(),
            recs.len()
        ),
    )?;
    let mut seen = BTreeSet::new();
    let mut sizes = BTreeSet::new();
    let mut figures = Vec::new();
    for r in recs {
        let d = at(r, "data")?;
        let (cn, mn) = (
            u64_at(d, "matrix.cpu_node")? as u32,
            u64_at(d, "matrix.mem_node")? as u32,
        );
        let kind = str_at(d, "pages.requested.kind")?.to_string();
        let what = format!("latency cell cpu {cn} / mem {mn} / {kind}");
        expect(
            kinds.contains(&kind.as_str()),
            format!("{what}: page kind one of {kinds:?}"),
        )?;
        expect(
            seen.insert((cn, mn, kind.clone())),
            format!("{what} only once"),
        )?;
        let cpu = u64_at(d, "cpu")? as u32;
        expect(
            l.node_of_cpu(cpu) == Some(cn),
            format!("{what}: the chasing CPU {cpu} is on node {cn}"),
        )?;
        expect_cell_placement(l, at(d, "placement")?, cn, mn, &what)?;
        let points = at(d, "points")?.as_array().ok_or("points is not a list")?;
        expect(points.len() == 1, format!("{what}: one working set"))?;
        let ws = u64_at(&points[0], "working_set_bytes")?;
        if let Some(s) = size {
            expect(ws == s, format!("{what}: working set {s}, got {ws}"))?;
        }
        sizes.insert(ws);
        let p50 = at(&points[0], "latency_ns.median")?
            .as_f64()
            .unwrap_or(f64::NAN);
        expect(
            p50.is_finite() && p50 > 0.0,
            format!("{what}: a positive latency, got {p50}"),
        )?;
        if kind == kinds[0] {
            figures.push((cn, mn, p50));
        }
        expect(
            !warning_codes(r).iter().any(|w| w == "placement_mismatch"),
            format!("{what}: no placement_mismatch warning"),
        )?;
    }
    expect(
        sizes.len() == 1,
        format!("one working set for every cell, got {sizes:?}"),
    )?;
    Ok(format!(
        "{} cells ({} x {} x {kinds:?}), working set {} B, chaser and pages on the nodes asked; {} ns {}",
        recs.len(),
        rows.len(),
        cols.len(),
        sizes.iter().next().copied().unwrap_or(0),
        kinds[0],
        figure_rows(&figures, 0)
    ))
}

/// `mem latency --matrix` as text: one table per page kind (not one per cell), each
/// with a row per CPU node and a column per memory node.
pub fn latency_matrix_text(l: &Layout, out: &str, kinds: &[&str]) -> Res {
    // The report's node-pair tables on the terminal: a title line, then indented lines
    // (the header, one row per node with CPUs, notes) up to a blank line.
    let lines: Vec<&str> = out.lines().collect();
    let tables: Vec<(&str, Vec<&str>)> = lines
        .iter()
        .enumerate()
        .filter(|(_, x)| x.starts_with("Idle latency by node pair"))
        .map(|(i, t)| {
            let body = lines[i + 1..]
                .iter()
                .take_while(|x| x.starts_with("  "))
                .copied()
                .collect();
            (*t, body)
        })
        .collect();
    expect(
        tables.len() == kinds.len(),
        format!(
            "{} tables (one per page kind), got {}:\n{out}",
            kinds.len(),
            tables.len()
        ),
    )?;
    let want: Vec<String> = l.node_ids().iter().map(u32::to_string).collect();
    for k in kinds {
        let of: Vec<&(&str, Vec<&str>)> = tables
            .iter()
            .filter(|(t, _)| t.contains(&format!("{k} pages asked")))
            .collect();
        expect(of.len() == 1, format!("one table for {k} pages:\n{out}"))?;
        let body = &of[0].1;
        let header = body
            .iter()
            .find(|x| x.trim_start().starts_with("threads on node"))
            .ok_or_else(|| format!("no column header:\n{out}"))?;
        let cols: Vec<&str> = header.split("data on ").skip(1).map(str::trim).collect();
        expect(
            cols == want,
            format!("columns data on {want:?}, got {header:?}"),
        )?;
        for n in l.cpu_nodes() {
            let id = n.id.to_string();
            expect(
                body.iter()
                    .filter(|x| x.split_whitespace().next() == Some(id.as_str()))
                    .count()
                    == 1,
                format!("a row for node {id} in the {k} table:\n{out}"),
            )?;
        }
    }
    Ok(format!(
        "{} tables, rows {:?}, columns data on {:?}",
        tables.len(),
        l.cpu_nodes().map(|n| n.id).collect::<Vec<_>>(),
        l.node_ids()
    ))
}

/// The CPU that moves pages from `src` to `dst`: the first of the target node, or of
/// the source node when the target has no CPUs (docs/mem.md).
pub fn mover_cpu(l: &Layout, src: u32, dst: u32) -> u32 {
    let first = |n: u32| l.nodes[n as usize].cpus.first().copied();
    first(dst).or_else(|| first(src)).unwrap_or(0)
}

/// One `mem.migrate` record: the pair's distance and mover, the source on `src`, and
/// for every method every page on `dst` with the data checked.
fn migrate_record(l: &Layout, r: &Value, methods: &[&str]) -> Result<(u32, u32, String), String> {
    let d = at(r, "data")?;
    let (src, dst) = (u64_at(d, "src_node")? as u32, u64_at(d, "dst_node")? as u32);
    let what = format!("{src} -> {dst} ({})", str_at(r, "key")?);
    expect(src != dst, format!("{what}: distinct nodes"))?;
    expect(
        u64_at(d, "distance")? == l.distance(src, dst),
        format!("{what}: SLIT distance {}", l.distance(src, dst)),
    )?;
    let cpu = u64_at(d, "cpu")? as u32;
    expect(
        cpu == mover_cpu(l, src, dst),
        format!("{what}: moved by CPU {}, got {cpu}", mover_cpu(l, src, dst)),
    )?;
    expect(
        l.node_of_cpu(cpu) == Some(u64_at(d, "cpu_node")? as u32),
        format!("{what}: cpu_node is CPU {cpu}'s node"),
    )?;
    let base = u64_at(d, "base_pages")?;
    let source = node_counts_at(d, "source.pages_per_node")?;
    expect(
        source == BTreeMap::from([(src, base)]),
        format!("{what}: all {base} source pages on node {src}, got {source:?}"),
    )?;
    let ms = at(d, "methods")?
        .as_array()
        .ok_or("methods is not a list")?;
    let names: Vec<&str> = ms
        .iter()
        .filter_map(|m| m.get("method")?.as_str())
        .collect();
    expect(
        names.len() == methods.len() && methods.iter().all(|m| names.contains(m)),
        format!("{what}: methods {methods:?}, got {names:?}"),
    )?;
    for m in ms {
        let name = str_at(m, "method")?;
        let dest = node_counts_at(m, "destination.pages_per_node")?;
        expect(
            dest == BTreeMap::from([(dst, base)]),
            format!("{what} {name}: all {base} pages end on node {dst}, the kernel says {dest:?}"),
        )?;
        expect(
            u64_at(m, "pages_on_target")? == base,
            format!("{what} {name}: pages_on_target {base}"),
        )?;
        expect(
            at(m, "pages_not_moved")?
                .as_object()
                .is_some_and(|o| o.is_empty()),
            format!("{what} {name}: no page left behind"),
        )?;
        expect(
            at(m, "data_verified")? == &Value::Bool(true),
            format!("{what} {name}: data verified"),
        )?;
        let t = at(m, "throughput_gbps.median")?
            .as_f64()
            .unwrap_or(f64::NAN);
        expect(
            t.is_finite() && t > 0.0,
            format!("{what} {name}: a throughput"),
        )?;
    }
    expect(
        at(d, "winner")?.is_string(),
        format!("{what}: a winner named"),
    )?;
    Ok((src, dst, str_at(d, "pair_role")?.to_string()))
}

/// `mem migrate` (nearest and farthest pair by SLIT): two pairs, each moved as asked.
pub fn migrate_nearest_farthest(l: &Layout, v: &Value, units: usize) -> Res {
    let recs = full_records(v, "mem.migrate");
    let ((na, nb), (fa, fb)) = l.nearest_and_farthest();
    expect(
        recs.len() == 2 * units,
        format!(
            "2 pairs x {units} page unit(s) = {} records, got {}",
            2 * units,
            recs.len()
        ),
    )?;
    let mut pairs = BTreeSet::new();
    let mut reference = None;
    for r in &recs {
        let (s, d, role) = migrate_record(l, r, &["memcpy", "move_pages", "stream_copy"])?;
        let want = if (s, d) == (na, nb) {
            "nearest"
        } else if (s, d) == (fa, fb) {
            "farthest"
        } else {
            return Err(format!(
                "pair {s} -> {d} is neither the nearest ({na} -> {nb}) nor the farthest ({fa} -> {fb}) by SLIT"
            ));
        };
        expect(
            role == want,
            format!("{s} -> {d} labelled {want}, got {role}"),
        )?;
        pairs.insert((s, d));
        let rk = str_at(at(r, "data")?, "reference.kind")?.to_string();
        let g = at(r, "data.reference.gbps")?.as_f64().unwrap_or(0.0);
        expect(
            rk == "local_copy" && g > 0.0,
            format!("{s} -> {d}: a measured local-copy reference, got {rk} {g}"),
        )?;
        reference = Some(g);
    }
    expect(pairs.len() == 2, "both pairs")?;
    Ok(format!(
        "nearest {na} -> {nb} (SLIT {}) and farthest {fa} -> {fb} (SLIT {}): every page of every method on the target, data verified; reference {:.2} GB/s",
        l.distance(na, nb),
        l.distance(fa, fb),
        reference.unwrap_or(0.0)
    ))
}

/// `mem migrate --all`: every ordered pair of distinct nodes, each moved as asked.
pub fn migrate_all(l: &Layout, v: &Value, methods: &[&str]) -> Res {
    let recs = full_records(v, "mem.migrate");
    let n = l.nodes.len();
    expect(
        recs.len() == n * (n - 1),
        format!("{n} x {} ordered pairs, got {} records", n - 1, recs.len()),
    )?;
    let mut pairs = BTreeSet::new();
    for r in &recs {
        let (s, d, _) = migrate_record(l, r, methods)?;
        expect(pairs.insert((s, d)), format!("{s} -> {d} only once"))?;
    }
    Ok(format!(
        "all {} ordered pairs, every page on its target node for {methods:?}",
        pairs.len()
    ))
}

/// The program's own report (`numa-guest touch`) in a run record's stdout tail.
fn touch_report(run: &Value) -> Result<TouchReport, String> {
    let tail = str_at(run, "outcome.stdout_tail")?;
    let line = tail
        .lines()
        .rev()
        .find(|x| x.trim_start().starts_with('{'))
        .ok_or_else(|| format!("no report line in the program's output: {tail:?}"))?;
    serde_json::from_str(line).map_err(|e| format!("the program's report {line:?}: {e}"))
}

/// Pages (of `page` bytes) the program touched per node, as numa_maps counted them for
/// the policy, and what the policy asked.
fn expect_touch_pages(
    l: &Layout,
    policy: &str,
    node: u32,
    threads: usize,
    t: &TouchReport,
) -> Result<(), String> {
    let pages = &t.pages_per_node;
    let total: u64 = pages.values().sum();
    let page = numalab_topo::bind::base_page_size() as u64;
    expect(
        total * page == t.touched_bytes,
        format!(
            "{policy}: all {} touched pages resident, numa_maps counts {pages:?}",
            t.touched_bytes / page
        ),
    )?;
    match policy {
        "local" => {
            // Each thread first-touched its share on its own CPU's node.
            let mut want: BTreeMap<u32, u64> = BTreeMap::new();
            let share = total / threads as u64;
            for cpu in &t.cpus {
                *want
                    .entry(l.node_of_cpu(*cpu).ok_or("a CPU of no node")?)
                    .or_insert(0) += share;
            }
            expect(
                pages == &want,
                format!(
                    "local: the pages of each thread on its CPU's node {want:?}, got {pages:?}"
                ),
            )
        }
        "interleave" => {
            let all = l.node_ids();
            let (lo, hi) = (pages.values().min(), pages.values().max());
            expect(
                pages.keys().copied().collect::<Vec<_>>() == all
                    && hi.zip(lo).is_some_and(|(h, l)| h - l <= threads as u64),
                format!("interleave: pages spread evenly over nodes {all:?}, got {pages:?}"),
            )?;
            expect(
                t.policy == "interleave",
                format!("interleave: numa_maps policy interleave, got {}", t.policy),
            )
        }
        "bind" | "preferred" => expect(
            pages == &BTreeMap::from([(node, total)]),
            format!("{policy}: all pages on node {node}, got {pages:?}"),
        ),
        other => Err(format!("unexpected policy {other}")),
    }
}

/// `numalab policy -- numa-guest touch`: per policy, the page counts numalab sampled
/// from the program's numa_maps match what the policy asked and what the program
/// itself saw; then the class and advice.
pub fn policy_study(
    l: &Layout,
    v: &Value,
    node: u32,
    threads: usize,
    class: &str,
    recommended: &str,
) -> Res {
    let summary = records(v, "harness.policy")?[0];
    let runs = full_records(v, "harness.run");
    expect(
        at(summary, "single_node")? == &Value::Bool(false),
        "a multi-node study",
    )?;
    expect(
        u32s_at(summary, "plan.memory_nodes")? == l.node_ids(),
        format!("memory nodes {:?} (the memory-only one too)", l.node_ids()),
    )?;
    expect(
        u32s_at(summary, "plan.interleave_nodes")? == l.node_ids(),
        "interleave over every node with memory",
    )?;
    expect(
        u64_at(summary, "plan.node")? as u32 == node,
        format!("bind/preferred node {node}"),
    )?;
    let page = numalab_topo::bind::base_page_size() as u64;
    let results = at(summary, "results")?
        .as_array()
        .ok_or("results is not a list")?;
    expect(results.len() == 4, "4 policies")?;
    let mut seen = Vec::new();
    for r in results {
        let policy = str_at(r, "policy")?;
        let run = runs
            .iter()
            .find(|x| x.pointer("/data/point").and_then(Value::as_str) == Some(policy))
            .ok_or_else(|| format!("no run record for {policy}"))?;
        let run = at(run, "data")?;
        expect(
            at(run, "ok")? == &Value::Bool(true),
            format!("{policy}: the run succeeded: {}", at(run, "failure")?),
        )?;
        let t = touch_report(run)?;
        expect_touch_pages(l, policy, node, threads, &t)?;
        // numalab's sample of the data pages, in bytes per node (all anonymous memory:
        // the program's own buffer plus its stacks and heap).
        let data: BTreeMap<u32, u64> = at(r, "pages.data")?
            .as_object()
            .ok_or("pages.data is not a map")?
            .iter()
            .map(|(k, x)| (k.parse().unwrap_or(u32::MAX), x.as_u64().unwrap_or(0)))
            .collect();
        // The rest of the process's anonymous memory: the main heap and stack, and per
        // thread a stack and a malloc arena. Seen in the guests: 2.2 MiB beyond the
        // buffer with 4 threads (x86), 2.13 MiB with 1 thread (the emulated Arm server,
        // where 1 + 1 MiB was too little once).
        let slack = (2 + threads as u64) << 20;
        for n in data.keys().chain(t.pages_per_node.keys()) {
            let theirs = t.pages_per_node.get(n).copied().unwrap_or(0) * page;
            let ours = data.get(n).copied().unwrap_or(0);
            expect(
                ours >= theirs && ours - theirs <= slack,
                format!(
                    "{policy}: numalab's sample of node {n} ({ours} B of data) is the program's own numa_maps count ({theirs} B) plus at most {} MiB of stacks and heap",
                    slack >> 20
                ),
            )?;
        }
        seen.push(format!(
            "{policy} {}",
            t.pages_per_node
                .iter()
                .map(|(n, c)| format!("N{n}={c}"))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    let got_class = str_at(summary, "class")?;
    expect(
        got_class == class,
        format!(
            "class {class}, got {got_class}: {}",
            str_at(summary, "classification")?
        ),
    )?;
    let rec = at(summary, "recommended")?.as_str().unwrap_or("none");
    expect(
        rec == recommended,
        format!(
            "recommended {recommended}, got {rec}: {}",
            str_at(summary, "recommendation")?
        ),
    )?;
    let line = str_at(summary, "command_line")?;
    expect(
        line.starts_with("numactl ") && line.contains("numa-guest touch"),
        format!("a numactl line to paste, got {line:?}"),
    )?;
    Ok(format!(
        "{}; class {class}, advice {recommended}: {line}",
        seen.join("; ")
    ))
}

/// `numalab workload run --mode MODE`: the copies of the road graph are where the mode
/// puts them.
pub fn workload_mode(l: &Layout, v: &Value, mode: &str) -> Res {
    let r = records(v, "workload.run")?[0];
    let rec = full_records(v, "workload.run")[0];
    expect(str_at(r, "mode")? == mode, format!("mode {mode}"))?;
    let pus = u32s_at(r, "pus")?;
    let pu_nodes = u32s_at(r, "pu_nodes")?;
    let all_cpus: Vec<u32> = l.cpu_nodes().flat_map(|n| n.cpus.clone()).collect();
    expect(
        pus == all_cpus,
        format!("one client per CPU {all_cpus:?}, got {pus:?}"),
    )?;
    let want_nodes: Vec<u32> = pus.iter().filter_map(|c| l.node_of_cpu(*c)).collect();
    expect(
        pu_nodes == want_nodes,
        format!("client nodes {want_nodes:?}, got {pu_nodes:?}"),
    )?;
    expect(
        at(r, "memory.modes_equivalent_here")? == &Value::Bool(false)
            && u64_at(r, "memory.numa_nodes")? as usize == l.nodes.len(),
        "modes not equivalent on this multi-node machine",
    )?;
    let copies = at(r, "memory.copies")?
        .as_array()
        .ok_or("copies is not a list")?;
    let mut lines = Vec::new();
    let mut sum: BTreeMap<u32, u64> = BTreeMap::new();
    for (i, c) in copies.iter().enumerate() {
        let pages = node_counts_at(c, "pages_per_node")?;
        let total = u64_at(c, "pages")?;
        expect(
            pages.values().sum::<u64>() == total && u64_at(c, "not_present")? == 0,
            format!("copy {i}: every one of its {total} pages present and counted: {pages:?}"),
        )?;
        expect(
            at(c, "fraction_on_expected")?.as_f64() == Some(1.0),
            format!("copy {i}: all pages on the expected nodes"),
        )?;
        let built = u64_at(c, "built_on_pu")? as u32;
        match mode {
            "shared-first-touch" => {
                let n0 = l.node_of_cpu(pus[0]).ok_or("first client on no node")?;
                expect(
                    built == pus[0],
                    format!("built by the first client's PU {}", pus[0]),
                )?;
                expect(
                    pages == BTreeMap::from([(n0, total)]),
                    format!("first touch: every page on node {n0} (the builder's), got {pages:?}"),
                )?;
            }
            "shared-interleaved" => {
                let all = l.node_ids();
                let (lo, hi) = (pages.values().min(), pages.values().max());
                expect(
                    pages.keys().copied().collect::<Vec<_>>() == all
                        && hi.zip(lo).is_some_and(|(h, l)| h - l <= 1),
                    format!("interleaved: round-robin over every node {all:?}, got {pages:?}"),
                )?;
                expect(u32s_at(c, "expected_nodes")? == all, "expected nodes: all")?;
            }
            "replicated" => {
                let n = u64_at(c, "for_node")? as u32;
                expect(
                    l.node_of_cpu(built) == Some(n),
                    format!("copy for node {n} built on a CPU of it, got PU {built}"),
                )?;
                expect(
                    pages == BTreeMap::from([(n, total)]),
                    format!("copy for node {n}: every page there, got {pages:?}"),
                )?;
                let readers = u32s_at(c, "readers")?;
                let want: Vec<u32> = pus
                    .iter()
                    .copied()
                    .filter(|p| l.node_of_cpu(*p) == Some(n))
                    .collect();
                expect(
                    readers == want,
                    format!("copy for node {n} read by {want:?}, got {readers:?}"),
                )?;
            }
            other => return Err(format!("unknown mode {other}")),
        }
        for (n, c) in &pages {
            *sum.entry(*n).or_insert(0) += c;
        }
        lines.push(format!("{pages:?}"));
    }
    let want_copies = if mode == "replicated" {
        l.cpu_nodes().count()
    } else {
        1
    };
    expect(
        copies.len() == want_copies,
        format!("{want_copies} copies, got {}", copies.len()),
    )?;
    expect(
        node_counts_at(r, "pages_per_node")? == sum,
        "the record's pages per node add up the copies'",
    )?;
    let bad: Vec<String> = warning_codes(rec)
        .into_iter()
        .filter(|w| w.starts_with("placement"))
        .collect();
    expect(bad.is_empty(), format!("no placement warning, got {bad:?}"))?;
    let rps = at(r, "requests_per_s")?.as_f64().unwrap_or(0.0);
    expect(rps > 0.0, "requests were served")?;
    Ok(format!(
        "{} copies, pages per node {}",
        copies.len(),
        lines.join(" ")
    ))
}

/// `numalab c2c --home-node N`: every pair's line on node N, as asked and as the kernel
/// placed it; no sentence built on a missing figure.
pub fn c2c_home(l: &Layout, v: &Value, home: u32, cpus: &[u32]) -> Res {
    let pairs = records(v, "c2c.pair")?;
    let n = cpus.len();
    expect(
        pairs.len() == n * (n - 1) / 2,
        format!(
            "{} pairs for CPUs {cpus:?}, got {}",
            n * (n - 1) / 2,
            pairs.len()
        ),
    )?;
    for p in &pairs {
        let (a, b) = (u64_at(p, "first")? as u32, u64_at(p, "second")? as u32);
        expect(
            cpus.contains(&a) && cpus.contains(&b) && a != b,
            format!("pair {a}-{b}"),
        )?;
        expect(
            u64_at(p, "home_node_requested")? as u32 == home
                && u64_at(p, "home_node")? as u32 == home,
            format!("pair {a}-{b}: line asked for and placed on node {home}, got {p}"),
        )?;
        let lat = at(p, "latency_ns")?.as_f64().unwrap_or(f64::NAN);
        expect(
            lat.is_finite() && lat > 0.0,
            format!("pair {a}-{b}: a latency"),
        )?;
    }
    let m = records(v, "c2c.matrix")?[0];
    expect(
        str_at(m, "home_node_policy")? == format!("node:{home}"),
        format!("matrix home_node_policy node:{home}"),
    )?;
    expect(u32s_at(m, "cpus")? == cpus, format!("matrix over {cpus:?}"))?;
    let sentences: Vec<&str> = at(m, "topology_comparison")?
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for s in &sentences {
        expect(
            !s.contains('?'),
            format!("no sentence on a missing figure: {s:?}"),
        )?;
    }
    let nodes: BTreeSet<u32> = cpus.iter().filter_map(|c| l.node_of_cpu(*c)).collect();
    Ok(format!(
        "{} pairs over nodes {nodes:?}, every line on node {home}; findings: {}",
        pairs.len(),
        sentences.join(" / ")
    ))
}

/// `numalab evaluate --quick`: the steps ran (or were left out as asked) and the node
/// matrices are in the journal with their placement.
pub fn evaluate_journal(l: &Layout, journal: &str, skipped: &[&str]) -> Res {
    let recs: Vec<Value> = journal
        .lines()
        .filter(|x| !x.trim().is_empty())
        .map(|x| serde_json::from_str(x).map_err(|e| format!("journal line {x:?}: {e}")))
        .collect::<Result<_, _>>()?;
    let of = |kind: &str| -> Vec<&Value> {
        recs.iter()
            .filter(|r| r.get("kind").and_then(Value::as_str) == Some(kind))
            .collect()
    };
    let mut steps = Vec::new();
    for s in of("evaluate.step") {
        let d = at(s, "data")?;
        let id = str_at(d, "step")?;
        let status = str_at(d, "outcome.status")?;
        if skipped.contains(&id) {
            expect(
                status == "skipped",
                format!("step {id} skipped as asked, got {status}"),
            )?;
        } else if id == "power" {
            // The guest has no sensors: skipped with its reason, or done.
            expect(status != "failed", format!("step power not failed: {d}"))?;
        } else {
            expect(status == "done", format!("step {id} done, got {d}"))?;
        }
        let secs = at(d, "seconds")?.as_f64().unwrap_or(f64::NAN);
        steps.push(format!("{id}:{status}:{secs:.0}s"));
    }
    expect(steps.len() == 9, format!("9 step records, got {steps:?}"))?;
    // The bandwidth node matrix: every kernel of the quick set, every node pair (none
    // at all when the step was left out).
    let bw: Vec<&Value> = of("mem.bandwidth")
        .into_iter()
        .filter(|r| r.pointer("/data/matrix").is_some_and(|m| !m.is_null()))
        .collect();
    let b = if skipped.contains(&"bandwidth") {
        expect(
            of("mem.bandwidth").is_empty(),
            format!(
                "no bandwidth record when the step is left out, got {}",
                bw.len()
            ),
        )?;
        "left out".to_string()
    } else {
        let kernels: BTreeSet<String> = bw
            .iter()
            .filter_map(|r| r.pointer("/data/kernel")?.as_str().map(str::to_string))
            .collect();
        let kernels: Vec<&str> = kernels.iter().map(String::as_str).collect();
        expect(
            !kernels.is_empty(),
            "a bandwidth node matrix in the journal",
        )?;
        let bundle = serde_json::json!({ "records": bw });
        bandwidth_matrix(l, &bundle, &kernels)?
    };
    let lat: Vec<&Value> = of("mem.latency")
        .into_iter()
        .filter(|r| r.pointer("/data/matrix").is_some_and(|m| !m.is_null()))
        .collect();
    // The headline matrix on THP for every pair, the local pairs again on base pages
    // (the page-walk share); every cell names its kind, with the locality the kernel's
    // page placement gives (local on the diagonal, remote elsewhere).
    let asked = |r: &Value, k: &str| {
        r.pointer("/data/pages/requested/kind")
            .and_then(Value::as_str)
            == Some(k)
    };
    let huge: Vec<&Value> = lat.iter().copied().filter(|r| asked(r, "thp")).collect();
    let base: Vec<&Value> = lat.iter().copied().filter(|r| asked(r, "base")).collect();
    let m = latency_matrix_records(l, &huge, &["thp"], None)?;
    let cpu_nodes: Vec<u32> = l.cpu_nodes().map(|n| n.id).collect();
    let diagonal = |r: &Value| {
        let c = r.pointer("/data/matrix/cpu_node").and_then(Value::as_u64);
        let n = r.pointer("/data/matrix/mem_node").and_then(Value::as_u64);
        c.is_some() && c == n
    };
    expect(
        base.len() == cpu_nodes.len() && base.iter().all(|r| diagonal(r)),
        format!(
            "one base-page cell per CPU node, on the diagonal ({} nodes), got {}",
            cpu_nodes.len(),
            base.len()
        ),
    )?;
    for r in huge.iter().chain(&base) {
        let k = at(at(r, "data")?, "kind")?;
        let want = if diagonal(r) { "local" } else { "remote" };
        expect(
            str_at(k, "order")? == "global" && str_at(k, "locality")? == want,
            format!(
                "{}: kind order global, locality {want}, got {k}",
                str_at(r, "key")?
            ),
        )?;
    }
    // The default idle working set (256 MiB) does not fit a quarter of these nodes'
    // free memory: evaluate fits it to the tightest node rather than skipping the matrix.
    let ws = lat
        .first()
        .and_then(|r| r.pointer("/data/points/0/working_set_bytes"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let smallest = l.nodes.iter().map(|n| n.memory_mib).min().unwrap_or(0) << 20;
    expect(
        ws > 0 && ws < 256 << 20 && ws <= smallest / 4,
        format!("the latency matrix's working set fitted to the nodes (at most a quarter of the smallest, {smallest} B), got {ws} B"),
    )?;
    expect(
        !of("mem.loaded").is_empty(),
        "a loaded-latency curve in the journal",
    )?;
    // The memory configuration read from this guest's SMBIOS tables (QEMU's own, on a
    // real kernel's /sys/firmware/dmi): the devices are listed, and the peak is a
    // figure or "unknown" with a reason (QEMU's type 17 gives no speed), never a guess.
    let cfg = of("memconfig.smbios");
    expect(
        cfg.len() == 1,
        format!("one memory configuration record, got {}", cfg.len()),
    )?;
    let c = at(cfg[0], "data")?;
    let system = at(c, "system")?;
    let peak = match system.get("gbps").and_then(Value::as_f64) {
        Some(g) => {
            expect(g > 0.0, format!("a positive peak: {system}"))?;
            format!("{g:.1} GB/s")
        }
        None => {
            let why = str_at(system, "reason")?;
            expect(
                why.len() > 10,
                format!("a reason for the unknown peak: {system}"),
            )?;
            format!("unknown: {why}")
        }
    };
    if std::path::Path::new("/sys/firmware/dmi/tables/DMI").exists() {
        let devices = at(c, "devices")?.as_array().map_or(0, Vec::len);
        expect(
            devices > 0,
            format!("the guest has SMBIOS tables, so its memory devices are listed: {c}"),
        )?;
    }
    Ok(format!(
        "steps {}; bandwidth: {b}; latency: {m}; peak {peak}",
        steps.join(" ")
    ))
}

/// `report.html` of `numalab evaluate`: a page with the bandwidth and idle-latency
/// node-pair heatmaps (their anchors, and a picture in each; no bandwidth heatmap when
/// that step was left out).
pub fn evaluate_report(html: &str, skipped: &[&str]) -> Res {
    expect(
        html.trim_start()
            .to_ascii_lowercase()
            .starts_with("<!doctype html"),
        "report.html is an HTML page",
    )?;
    let mut seen = Vec::new();
    if skipped.contains(&"bandwidth") {
        expect(
            !html.contains("id=\"mem-bandwidth-matrix\""),
            "no bandwidth heatmap when the step is left out",
        )?;
    }
    for anchor in ["mem-bandwidth-matrix", "mem-latency-matrix"] {
        if anchor == "mem-bandwidth-matrix" && skipped.contains(&"bandwidth") {
            continue;
        }
        let at = html
            .find(&format!("id=\"{anchor}\""))
            .ok_or_else(|| format!("report.html has no #{anchor}"))?;
        let rest = &html[at..];
        let end = rest.find("</figure>").unwrap_or(rest.len());
        expect(
            rest[..end].contains("<svg"),
            format!("#{anchor} holds a picture"),
        )?;
        seen.push(anchor);
    }
    Ok(format!(
        "report.html ({} KiB) with #{}",
        html.len() / 1024,
        seen.join(", #")
    ))
}

/// Fails with `what` unless `cond` holds.
/// `numalab home map --json` on the guest: one measured map of `lines` lines read from
/// CPUs of the guest, forwarded with an owner (the guest has several CPUs), every line
/// in a home or marked unknown with a note, and a fingerprint naming every node and its memory.
pub fn home_map(l: &Layout, v: &Value, lines: u64) -> Res {
    let maps = records(v, "home.map")?;
    expect(
        maps.len() == 1,
        format!("one home.map record, got {}", maps.len()),
    )?;
    let m = maps[0];
    expect(str_at(m, "input_origin")? == "measured", "origin measured")?;
    expect(
        u64_at(m, "lines_measured")? == lines,
        format!("{lines} lines measured"),
    )?;
    expect(
        str_at(m, "access")? == "forwarded",
        "forwarded reads (several CPUs)",
    )?;
    let cpus: Vec<u32> = l.cpu_nodes().flat_map(|n| n.cpus.clone()).collect();
    let readers = u32s_at(m, "probe_cpus")?;
    expect(
        !readers.is_empty() && readers.iter().all(|c| cpus.contains(c)),
        format!("readers {readers:?} among the guest's CPUs {cpus:?}"),
    )?;
    let homes = at(m, "homes")?.as_array().ok_or("homes is not a list")?;
    let assigned: u64 = homes.iter().filter_map(|h| h["lines"].as_u64()).sum();
    // A line either counts in one home or is marked `ff` (its page matched no shift of
    // the hash clearly), and unknown lines are said in a note.
    let pages = at(m, "pages")?.as_array().ok_or("pages is not a list")?;
    let mut marked = 0u64;
    let mut unknown = 0u64;
    for p in pages {
        let hex = p["home"].as_str().ok_or("a page without home bytes")?;
        expect(hex.len() % 2 == 0, "home bytes in pairs of hex digits")?;
        marked += hex.len() as u64 / 2;
        unknown += (0..hex.len() / 2)
            .filter(|i| hex[2 * i..2 * i + 2].eq_ignore_ascii_case("ff"))
            .count() as u64;
    }
    expect(
        marked == lines,
        format!("a home byte for every line: {marked} of {lines}"),
    )?;
    expect(
        !homes.is_empty() && assigned + unknown == lines,
        format!("every line in a home or marked unknown: {assigned} + {unknown} of {lines}"),
    )?;
    if unknown > 0 {
        let notes = at(m, "notes")?.to_string();
        expect(
            notes.contains(&format!("{unknown} of {lines} lines have no home")),
            format!("a note on the {unknown} lines without a home"),
        )?;
    }
    let fp = at(m, "fingerprint")?;
    expect(
        u64_at(fp, "cpus")? == cpus.len() as u64,
        "fingerprint CPU count",
    )?;
    let per_node = at(fp, "node_memory_bytes")?.as_array().map_or(0, Vec::len);
    expect(
        per_node == l.nodes.len(),
        format!(
            "memory of {} nodes in the fingerprint, got {per_node}",
            l.nodes.len()
        ),
    )?;
    // The guest's kernel shows memory blocks: each node's memory is counted in whole
    // blocks, so at least what QEMU gave it and at most a block more at each end (a
    // block at most 256 MiB on these small guests), never the whole guest's.
    expect(
        str_at(fp, "memory_basis")? == "memory blocks",
        "memory counted in memory blocks",
    )?;
    let memory = at(fp, "node_memory_bytes")?
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect::<Vec<u64>>())
        .unwrap_or_default();
    for (node, bytes) in l.nodes.iter().zip(&memory) {
        let given = node.memory_mib << 20;
        expect(
            *bytes >= given && *bytes <= given + (512 << 20),
            format!(
                "node {} memory in blocks {bytes} bytes for {} MiB given",
                node.id, node.memory_mib
            ),
        )?;
    }
    let modes = at(fp, "modes")?.to_string();
    let n = l.nodes.len();
    expect(
        modes.contains(&format!("{n} NUMA nodes")),
        format!("\"{n} NUMA nodes\" in {modes}"),
    )?;
    Ok(format!(
        "{lines} lines ({unknown} without a home), {} reader(s), {} home group(s), fingerprint of {n} nodes",
        readers.len(),
        homes.len()
    ))
}

pub fn expect(cond: bool, what: impl Into<String>) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(format!("expected {}", what.into()))
    }
}

/// The `data` of every record of this `kind` in a bundle printed by `--json`
/// (`{"envelope": .., "records": [{"kind": .., "data": ..}, ..]}`); an error if none.
pub fn records<'a>(bundle: &'a Value, kind: &str) -> Result<Vec<&'a Value>, String> {
    let recs = bundle
        .get("records")
        .and_then(Value::as_array)
        .ok_or("no `records` array: not a results bundle")?;
    let found: Vec<&Value> = recs
        .iter()
        .filter(|r| r.get("kind").and_then(Value::as_str) == Some(kind))
        .filter_map(|r| r.get("data"))
        .collect();
    if found.is_empty() {
        let kinds: std::collections::BTreeSet<&str> = recs
            .iter()
            .filter_map(|r| r.get("kind").and_then(Value::as_str))
            .collect();
        return Err(format!(
            "no record of kind {kind} (kinds present: {kinds:?})"
        ));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The terminal output of `numalab mem latency --matrix --page-kinds base,thp` on the
    /// standard guest (5 nodes, node 4 without CPUs), as the report's section prints it.
    fn latency_text(drop_row: Option<&str>) -> String {
        let mut out = String::from(
            "Memory latency\n--------------\n\nMeasured latency beside the firmware's distances (SLIT)\n  threads on node  data on node  latency (ns)\n                0             0         144.7\n                0             1          17.4\n\n",
        );
        for kind in ["base", "thp"] {
            out.push_str(&format!(
                "Idle latency by node pair, median ns: {kind} pages asked (obtained: {kind}), random over 2 MiB\n  threads on node  data on 0  data on 1  data on 2  data on 3  data on 4\n"
            ));
            for n in 0..4 {
                let row = format!(
                    "                {n}      221.4       18.1       14.8      147.8       16.7\n"
                );
                if drop_row != Some(&format!("{kind}{n}")) {
                    out.push_str(&row);
                }
            }
            out.push('\n');
        }
        out.push_str(
            "What each latency figure is\n  probe        CPU  data\n  node matrix    0  node 0\n",
        );
        out
    }

    #[test]
    fn the_latency_matrix_text_is_read_table_by_table() {
        let l = Layout::standard();
        assert_eq!(
            l.node_ids(),
            vec![0, 1, 2, 3, 4],
            "the sample assumes the standard guest"
        );
        let ok = latency_matrix_text(&l, &latency_text(None), &["base", "thp"]).unwrap();
        assert!(ok.starts_with("2 tables"), "{ok}");
        // A node's row missing from one table is caught, though the SLIT table has rows
        // starting with that node too.
        let e = latency_matrix_text(&l, &latency_text(Some("thp0")), &["base", "thp"]).unwrap_err();
        assert!(e.contains("a row for node 0 in the thp table"), "{e}");
        // A page kind without its table.
        let e = latency_matrix_text(&l, &latency_text(None), &["base", "thp", "hugetlb-2m"])
            .unwrap_err();
        assert!(e.contains("3 tables"), "{e}");
    }
    use serde_json::json;

    /// A `mem.bandwidth` matrix cell as numalab records it, with its pages on `on`.
    fn bw_cell(l: &Layout, cn: u32, mn: u32, on: u32) -> Value {
        json!({"key": format!("bw/{cn}/{mn}"), "kind": "mem.bandwidth", "warnings": [], "data": {
            "matrix": {"cpu_node": cn, "mem_node": mn},
            "kernel": "triad",
            "threads": l.nodes[cn as usize].cpus.len(),
            "pages": {"total_bytes": 64 * 4096, "page_bytes": 4096},
            "bandwidth_gbps": {"median": 1.5 + f64::from(cn) + f64::from(mn) / 10.0},
            "placement": {
                "cpus": l.nodes[cn as usize].cpus,
                "cpu_nodes": [cn],
                "policy": {"policy": "bind", "nodes": [mn]},
                "expected_nodes": [mn],
                "pages_per_node": [[on, 64]],
                "pages_not_present": 0
            }
        }})
    }

    fn bw_bundle(l: &Layout, wrong: Option<(u32, u32)>) -> Value {
        let mut recs = Vec::new();
        for cn in l.cpu_nodes().map(|n| n.id) {
            for mn in l.node_ids() {
                let on = if wrong == Some((cn, mn)) {
                    (mn + 1) % 5
                } else {
                    mn
                };
                recs.push(bw_cell(l, cn, mn, on));
            }
        }
        json!({ "records": recs })
    }

    #[test]
    fn a_bandwidth_matrix_passes_only_with_every_page_where_asked() {
        let l = Layout::standard();
        let ok = bandwidth_matrix(&l, &bw_bundle(&l, None), &["triad"]).unwrap();
        assert!(ok.starts_with("20 cells"), "{ok}");
        // The figures are shown row by row, columns in node order.
        assert!(
            ok.contains("[cpu 0: 1.50 1.60 1.70 1.80 1.90 | cpu 1: 2.50"),
            "{ok}"
        );
        let e = bandwidth_matrix(&l, &bw_bundle(&l, Some((2, 4))), &["triad"]).unwrap_err();
        assert!(
            e.contains("cell cpu 2 / mem 4") && e.contains("every page on node 4"),
            "{e}"
        );
        // A missing cell, or a kernel asked for and not measured, fails too.
        let mut short = bw_bundle(&l, None);
        short["records"].as_array_mut().unwrap().pop();
        assert!(bandwidth_matrix(&l, &short, &["triad"])
            .unwrap_err()
            .contains("got 19"));
        assert!(bandwidth_matrix(&l, &bw_bundle(&l, None), &["copy", "triad"]).is_err());
    }

    #[test]
    fn the_report_must_hold_both_heatmaps() {
        let page = |a: &str, b: &str| {
            format!("<!DOCTYPE html>\n<html><body><figure id=\"{a}\"><svg></svg><figcaption>x</figcaption></figure><figure id=\"{b}\"><svg></svg></figure></body></html>")
        };
        let all: &[&str] = &[];
        let ok = evaluate_report(&page("mem-bandwidth-matrix", "mem-latency-matrix"), all).unwrap();
        assert!(ok.contains("#mem-latency-matrix"), "{ok}");
        let e =
            evaluate_report(&page("mem-bandwidth-matrix", "mem-latency-chart"), all).unwrap_err();
        assert!(e.contains("no #mem-latency-matrix"), "{e}");
        let empty = "<!DOCTYPE html><figure id=\"mem-bandwidth-matrix\"></figure><figure id=\"mem-latency-matrix\"><svg/></figure>";
        assert!(evaluate_report(empty, all)
            .unwrap_err()
            .contains("holds a picture"));
        assert!(evaluate_report("not html", all).is_err());
        // With the bandwidth step left out: the latency heatmap alone, and a bandwidth
        // heatmap would be a figure from nowhere.
        let no_bw = &["bandwidth"];
        let ok = evaluate_report(&page("mem-latency-matrix", "other"), no_bw).unwrap();
        assert!(!ok.contains("bandwidth"), "{ok}");
        let e = evaluate_report(&page("mem-bandwidth-matrix", "mem-latency-matrix"), no_bw)
            .unwrap_err();
        assert!(e.contains("left out"), "{e}");
        assert!(evaluate_report(&page("mem-latency-chart", "x"), no_bw).is_err());
    }

    /// A `home.map` bundle of 2 pages of 3 lines on the standard guest: homes counting
    /// `in_homes` lines, page 1's bytes `page1`, and these notes.
    fn home_bundle(l: &Layout, in_homes: u64, page1: &str, notes: &[&str]) -> Value {
        let cpus: Vec<u32> = l.cpu_nodes().flat_map(|n| n.cpus.clone()).collect();
        json!({"records": [{"kind": "home.map", "data": {
            "input_origin": "measured",
            "lines_measured": 6,
            "access": "forwarded",
            "probe_cpus": cpus,
            "homes": [{"id": 0, "lines": in_homes}],
            "pages": [{"home": "000000"}, {"home": page1}],
            "notes": notes,
            "fingerprint": {
                "cpus": cpus.len(),
                "node_memory_bytes": l.nodes.iter().map(|n| n.memory_mib << 20).collect::<Vec<u64>>(),
                "memory_basis": "memory blocks",
                "modes": [format!("{} NUMA nodes", l.nodes.len())]
            }
        }}]})
    }

    #[test]
    fn a_home_map_accounts_for_every_line() {
        let l = Layout::standard();
        let ok = home_map(&l, &home_bundle(&l, 6, "000000", &[]), 6).unwrap();
        assert!(ok.contains("(0 without a home)"), "{ok}");
        // A page whose shift was not clear: its lines are marked ff and a note says so.
        let note = "3 of 6 lines have no home (marked ff): ...";
        let ok = home_map(&l, &home_bundle(&l, 3, "ffffff", &[note]), 6).unwrap();
        assert!(ok.contains("(3 without a home)"), "{ok}");
        let e = home_map(&l, &home_bundle(&l, 3, "ffffff", &[]), 6).unwrap_err();
        assert!(e.contains("a note on the 3 lines"), "{e}");
        // Lines lost: neither in a home nor marked.
        let e = home_map(&l, &home_bundle(&l, 5, "000000", &[]), 6).unwrap_err();
        assert!(e.contains("5 + 0 of 6"), "{e}");
        let e = home_map(&l, &home_bundle(&l, 5, "0000", &[]), 6).unwrap_err();
        assert!(e.contains("a home byte for every line: 5 of 6"), "{e}");
    }
}
