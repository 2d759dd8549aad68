//! Memory: remote against local (node matrices, SLIT), bandwidth saturation, latency curves and kinds, page walks, latency under load, page migration.

#[allow(unused_imports)]
use super::*;
use numalab_records::mem::latency::LatencyRecord;
use numalab_records::mem::BandwidthRecord;
use numalab_records::mem::{LoadedRecord, MigrateRecord};

/// Diagonal and off-diagonal cells of a node-pair matrix: per CPU node, the local value
/// and each remote one.
pub(super) struct NodeMatrix {
    cells: Vec<(u32, u32, f64)>,
}

impl NodeMatrix {
    fn local(&self, node: u32) -> Option<f64> {
        self.cells
            .iter()
            .find(|(c, m, _)| *c == node && *m == node)
            .map(|(_, _, v)| *v)
    }

    /// (cpu node, mem node, value, value / local) of every remote cell with a local one.
    fn remote_ratios(&self) -> Vec<(u32, u32, f64, f64)> {
        self.cells
            .iter()
            .filter(|(c, m, _)| c != m)
            .filter_map(|(c, m, v)| {
                let l = self.local(*c)?;
                (l > 0.0).then_some((*c, *m, *v, v / l))
            })
            .collect()
    }

    fn median_local(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .cells
            .iter()
            .filter(|(c, m, _)| c == m)
            .map(|(_, _, v)| *v)
            .collect();
        numalab_stats::median(&v)
    }
}

/// Every memory finding, in the report's order.
pub(super) fn mem(l: &Loaded, m: Option<&Machine>, out: &mut Out<'_>) {
    let bw: Vec<BandwidthRecord> = l
        .records_of::<BandwidthRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let lat: Vec<LatencyRecord> = l
        .records_of::<LatencyRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let headline = crate::facts::headline_matrix(&lat);
    remote_against_local(m, out, &bw, &headline);
    bandwidth_saturation(out, &bw);
    latency_curves(out, &lat);
    page_walks(l, out, &lat, &headline);
    same_quantity(l, out, &lat);
    under_load(l, out);
    migration(l, out);
}

/// Remote against local memory (latency and bandwidth node matrices), and the
/// firmware's distances (SLIT) against the measured latency.
fn remote_against_local(
    m: Option<&Machine>,
    out: &mut Out<'_>,
    bw: &[BandwidthRecord],
    headline: &[&LatencyRecord],
) {
    // Remote against local, from the node-pair matrices (the headline kind only).
    let lat_m = NodeMatrix {
        cells: headline
            .iter()
            .filter_map(|r| {
                let mc = r.matrix?;
                Some((
                    mc.cpu_node,
                    mc.mem_node,
                    r.points.first()?.latency_ns.median,
                ))
            })
            .collect(),
    };
    let headline_what = headline
        .first()
        .and_then(|r| {
            Some(crate::facts::latency_kind_text(
                &r.kind(),
                r.points.first()?.working_set_bytes,
            ))
        })
        .unwrap_or_default();
    let kernel = crate::facts::matrix_kernel(bw);
    let bw_m = NodeMatrix {
        cells: bw
            .iter()
            .filter(|r| Some(r.kernel.name()) == kernel)
            .filter_map(|r| {
                let mc = r.matrix?;
                Some((mc.cpu_node, mc.mem_node, r.bandwidth_gbps.median))
            })
            .collect(),
    };
    let lr = lat_m.remote_ratios();
    let br = bw_m.remote_ratios();
    let med = |v: Vec<f64>| numalab_stats::median(&v);
    let lat_ratio = med(lr.iter().map(|x| x.3).collect());
    let bw_ratio = med(br.iter().map(|x| x.3).collect());
    let mut parts = Vec::new();
    if let (Some(r), Some(local)) = (lat_ratio, lat_m.median_local()) {
        parts.push(format!(
            "{} local latency ({} vs {}, idle, {headline_what})",
            x(r),
            ns(local),
            ns(local * r)
        ));
    }
    if let (Some(r), Some(local)) = (bw_ratio, bw_m.median_local()) {
        parts.push(format!(
            "{} local bandwidth ({}, {:.1} vs {:.1} GB/s)",
            x(r),
            kernel.clone().unwrap_or_default(),
            local,
            local * r
        ));
    }
    if !parts.is_empty() {
        let farthest = lr
            .iter()
            .max_by(|a, b| a.3.total_cmp(&b.3))
            .filter(|f| lat_ratio.is_some_and(|r| f.3 > r * 1.1))
            .map(|f| {
                format!(
                    "; farthest pair node {} -> {}: {} local latency",
                    f.0,
                    f.1,
                    x(f.3)
                )
            })
            .unwrap_or_default();
        out.push(
            "remote_memory",
            Severity::Notice,
            format!("remote memory: {}{farthest}", parts.join(", ")),
            Some(if lat_ratio.is_some() {
                anchors::mem_latency_matrix(out.b)
            } else {
                anchors::mem_bandwidth_matrix(out.b)
            }),
        );
    }
    // The firmware's distances against the measured latency.
    if let Some(slit) = m.and_then(|m| m.slit()) {
        let d = |a: u32, b: u32| -> Option<u64> {
            let i = slit.nodes.iter().position(|n| *n == a)?;
            let j = slit.nodes.iter().position(|n| *n == b)?;
            slit.values.get(i)?.get(j).copied()
        };
        let worst = lr
            .iter()
            .filter_map(|(c, mn, _, r)| {
                let (s, s0) = (d(*c, *mn)?, d(*c, *c)?);
                let sr = s as f64 / s0.max(1) as f64;
                Some((*c, *mn, s, sr, *r, (r / sr).ln().abs()))
            })
            .max_by(|a, b| a.5.total_cmp(&b.5));
        if let Some((c, mn, s, sr, r, off)) = worst {
            let (sev, verdict) = if off > 0.25f64.ln_1p() {
                (
                    Severity::Notice,
                    "the firmware's distances are an ordering, not a measurement: use the measured figures",
                )
            } else {
                (Severity::Info, "they agree within 25%")
            };
            out.push(
                "slit_vs_measured",
                sev,
                format!(
                    "SLIT says {s} ({} local) from node {c} to node {mn}, measured remote latency is {} local: {verdict}",
                    x(sr),
                    x(r)
                ),
                Some(anchors::id(out.b, "mem-latency-slit")),
            );
        }
    }
}

/// Where bandwidth stops growing with threads.
fn bandwidth_saturation(out: &mut Out<'_>, bw: &[BandwidthRecord]) {
    // Where bandwidth stops growing with threads.
    let sweep: Vec<&BandwidthRecord> = bw.iter().filter(|r| r.matrix.is_none()).collect();
    let k = if sweep.iter().any(|r| r.kernel.name() == "triad") {
        Some("triad".to_string())
    } else {
        sweep.first().map(|r| r.kernel.name())
    };
    if let Some(k) = k {
        let mut pts: Vec<(f64, f64, usize)> = sweep
            .iter()
            .filter(|r| r.kernel.name() == k)
            .map(|r| {
                (
                    r.threads as f64,
                    r.bandwidth_gbps.median,
                    r.placement.cpu_nodes.len().max(1),
                )
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
        let ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
        let anchor = Some(anchors::mem_bandwidth(out.b));
        if let Some(i) = numalab_stats::knee::saturation(&xs, &ys, 0.1) {
            let per_node = (xs[i] / pts[i].2 as f64).round();
            let last = pts.len() - 1;
            out.push(
                "bandwidth_saturation",
                Severity::Notice,
                format!(
                    "{k} bandwidth saturates at about {per_node:.0} thread{} per node ({:.1} GB/s at {} thread{} on {} node{}; {:.1} GB/s at {})",
                    if per_node == 1.0 { "" } else { "s" },
                    ys[i],
                    xs[i],
                    if xs[i] == 1.0 { "" } else { "s" },
                    pts[i].2,
                    if pts[i].2 == 1 { "" } else { "s" },
                    ys[last],
                    xs[last]
                ),
                anchor,
            );
        } else if pts.len() >= 2 && pts[0].0 == 1.0 {
            let last = pts.len() - 1;
            out.push(
                "bandwidth_one_thread",
                Severity::Info,
                format!(
                    "{k} bandwidth: one thread reaches {} of what {} threads reach ({:.1} vs {:.1} GB/s)",
                    x(ys[0] / ys[last]),
                    xs[last],
                    ys[0],
                    ys[last]
                ),
                anchor,
            );
        }
    }
}

/// The plateaus of the latency curves, and huge against base pages at their end.
fn latency_curves(out: &mut Out<'_>, lat: &[LatencyRecord]) {
    // The latency curve's plateaus.
    for r in lat
        .iter()
        .filter(|r| r.matrix.is_none() && !r.levels.is_empty())
    {
        // A second plateau named after the same cache ("L2 (2)": numalab_mem::latency
        // numbers repeats) is a step within that cache's size, not another cache: said
        // as such, with where it starts.
        let mut levels: Vec<String> = Vec::new();
        for (i, lv) in r.levels.iter().enumerate() {
            let repeat = numalab_records::mem::latency::repeat_of(&r.levels, i);
            levels.push(match repeat {
                // Memory at a cache's sizes in two steps: where the second starts.
                Some(base) if base.starts_with("memory") => format!(
                    "{base} {} from {}",
                    ns(lv.latency_ns),
                    numalab_schema::units::bytes(lv.from_bytes)
                ),
                Some(base) => format!(
                    "{base} {} from {} (a second step within the {base}'s size: a TLB's reach or a slower part of the cache; the curve cannot tell which)",
                    ns(lv.latency_ns),
                    numalab_schema::units::bytes(lv.from_bytes)
                ),
                None => format!("{} {}", lv.name, ns(lv.latency_ns)),
            });
        }
        let k = r.kind();
        // A plateau at a cache's sizes with memory's latency (numalab_mem::latency::
        // CACHE_HIT_MAX_OF_MEMORY): say what it means.
        let unserved: Vec<&str> = r
            .levels
            .iter()
            .filter_map(|lv| lv.name.strip_prefix("memory at ")?.strip_suffix(" sizes"))
            .collect();
        let why = if unserved.is_empty() {
            String::new()
        } else {
            let c = unserved.join(" and ");
            format!(
                " (the {c} does not serve this CPU: at its sizes loads take over half of memory's latency; on a virtual machine or a shared host a CPU may get a small share of a cache, or the cache is partitioned)"
            )
        };
        out.push(
            "latency_levels",
            Severity::Info,
            format!(
                "load-to-load latency of CPU {} ({}, {}): {}{why}",
                r.cpu,
                r.order.describe(k.block_bytes),
                k.pages_text(),
                levels.join(", ")
            ),
            Some(anchors::mem_latency(out.b)),
        );
    }
    // Huge pages against base pages at the largest working set of the curves, the
    // same order and working set only: then the difference is translation.
    let curve_end = |huge: bool| {
        lat.iter()
            .filter(|r| {
                r.matrix.is_none() && r.kind().huge() == huge && r.pages.obtained != "thp-partial"
            })
            .find_map(|r| {
                r.points
                    .last()
                    .map(|p| (r.kind(), p.working_set_bytes, p.latency_ns.median))
            })
    };
    if let (Some((kb, wb, b)), Some((kt, wt, t))) = (curve_end(false), curve_end(true)) {
        if wb == wt && kb.same_but_pages(&kt) && (t / b - 1.0).abs() > 0.1 {
            out.push(
                "huge_pages",
                Severity::Info,
                format!(
                    "{}: huge pages give {} the latency of base pages ({} vs {}): {}",
                    crate::facts::latency_kind_text(&kt, wt)
                        .replace(&format!(", {}", kt.pages_text()), ""),
                    x(t / b),
                    ns(t),
                    ns(b),
                    if t < b {
                        "address translation (TLB misses and page walks) costs that much on base pages"
                    } else {
                        "slower on huge pages in the same order, which translation cannot explain: the machine was not steady (a busy host or VM); rerun before trusting either"
                    }
                ),
                Some(anchors::mem_latency(out.b)),
            );
        }
    }
}

/// What translation costs (the headline's local cells on base pages), and nested
/// paging in a VM.
fn page_walks(l: &Loaded, out: &mut Out<'_>, lat: &[LatencyRecord], headline: &[&LatencyRecord]) {
    // Page walks: the headline's local cells against the same cells on base pages.
    let mut walks: Vec<(u32, f64, f64, u64)> = Vec::new();
    for h in headline.iter().filter(|r| r.kind().huge()) {
        let (Some(mc), Some(hp)) = (h.matrix, h.points.first()) else {
            continue;
        };
        if mc.cpu_node != mc.mem_node {
            continue;
        }
        let base = lat.iter().find(|r| {
            r.matrix == Some(mc)
                && r.pages.obtained == "base"
                && r.kind().same_but_pages(&h.kind())
                && r.points.first().map(|p| p.working_set_bytes) == Some(hp.working_set_bytes)
        });
        if let Some(bp) = base.and_then(|r| r.points.first()) {
            walks.push((
                mc.cpu_node,
                hp.latency_ns.median,
                bp.latency_ns.median,
                hp.working_set_bytes,
            ));
        }
    }
    if let Some(&(node, huge, base, ws)) = walks.first() {
        let hk = headline[0].kind();
        let what =
            crate::facts::latency_kind_text(&hk, ws).replace(&format!(", {}", hk.pages_text()), "");
        let more = if walks.len() > 1 {
            format!(" (node {node}; {} local pairs measured)", walks.len())
        } else {
            String::new()
        };
        let text = if base > huge * 1.02 {
            format!(
                "page walks: idle local memory latency ({what}) is {} on huge pages and {} on base pages{more}: on base pages {} ({:.0}%) of each load is translation (TLB misses and page walks); the headline figure uses huge pages",
                ns(huge),
                ns(base),
                ns(base - huge),
                (base - huge) / base * 100.0
            )
        } else {
            format!(
                "page walks: idle local memory latency ({what}) is {} on huge pages and {} on base pages{more}: no translation cost shows beyond the noise",
                ns(huge),
                ns(base)
            )
        };
        out.push(
            "page_walks",
            Severity::Info,
            text,
            Some(anchors::id(out.b, "mem-latency-kinds")),
        );
    }
    // In a VM, nested paging inflates memory latency even on the guest's huge pages.
    let virtual_machine = crate::facts::hypervisor(l);
    let memory_measured = lat.iter().any(|r| {
        r.points
            .iter()
            .any(|p| r.kind().is_memory(p.working_set_bytes))
    });
    if let (Some(hv), true) = (virtual_machine, memory_measured) {
        out.push(
            "memory_latency_vm",
            Severity::Notice,
            format!(
                "this is a virtual machine ({hv}): with nested paging a TLB miss walks the guest's and the host's page tables, and the host's page size cannot be seen from inside, so memory latency here is higher than the bare machine's, even on huge pages"
            ),
            Some(anchors::mem_latency(out.b)),
        );
    }
}

/// One quantity measured by several probes of a run: do they agree?
fn same_quantity(l: &Loaded, out: &mut Out<'_>, lat: &[LatencyRecord]) {
    // The same quantity from different probes of one run: idle memory latency of one
    // kind (order, pages, locality) and working set, by every probe that measured it.
    let mut dram: Vec<(String, numalab_records::mem::latency::Kind, u64, f64)> = Vec::new();
    for r in lat {
        let local = r.matrix.is_none_or(|c| c.cpu_node == c.mem_node);
        let p = if r.matrix.is_some() {
            r.points.first()
        } else {
            r.points.last()
        };
        if let (true, Some(p)) = (local, p) {
            if r.kind().is_memory(p.working_set_bytes) {
                let probe = if r.matrix.is_some() {
                    "node matrix"
                } else {
                    "latency curve"
                };
                dram.push((
                    probe.to_string(),
                    r.kind(),
                    p.working_set_bytes,
                    p.latency_ns.median,
                ));
            }
        }
    }
    let loaded_records = l.records_of::<LoadedRecord>();
    for (_, r) in &loaded_records {
        if let Some(idle) = r.points.iter().find(|p| p.delay_ns.is_none()) {
            if r.idle_kind().is_memory(r.chase_bytes) {
                dram.push((
                    "loaded latency, idle point".into(),
                    r.idle_kind(),
                    r.chase_bytes,
                    idle.latency_ns.median,
                ));
            }
        }
    }
    let mut groups: Vec<(numalab_records::mem::latency::Kind, u64)> = Vec::new();
    for d in &dram {
        if !groups.contains(&(d.1.clone(), d.2)) {
            groups.push((d.1.clone(), d.2));
        }
    }
    for (kind, ws) in groups {
        let same: Vec<&(String, numalab_records::mem::latency::Kind, u64, f64)> =
            dram.iter().filter(|d| d.1 == kind && d.2 == ws).collect();
        let lo = same.iter().min_by(|a, b| a.3.total_cmp(&b.3));
        let hi = same.iter().max_by(|a, b| a.3.total_cmp(&b.3));
        if let (Some(lo), Some(hi)) = (lo, hi) {
            if lo.3 > 0.0 && hi.3 / lo.3 > DISAGREEMENT {
                out.push(
                    "latency_disagreement",
                    Severity::Notice,
                    format!(
                        "memory latency ({}) was {} by the {} and {} by the {} in this run ({} the lower): the same measurement gave different figures, so the machine's memory latency was not stable during the run (a busy host or VM); rerun on an idle machine before trusting either",
                        kind.label(ws),
                        ns(lo.3),
                        lo.0,
                        ns(hi.3),
                        hi.0,
                        x(hi.3 / lo.3)
                    ),
                    Some(anchors::mem_latency(out.b)),
                );
            }
        }
    }
}

/// Latency under load.
fn under_load(l: &Loaded, out: &mut Out<'_>) {
    let loaded_records = l.records_of::<LoadedRecord>();
    // Latency under load.
    for (_, r) in loaded_records {
        let Some((idle, full)) = numalab_records::mem::loaded::idle_and_busiest(&r.points) else {
            continue;
        };
        let ratio = full.latency_ns.median / idle.latency_ns.median;
        // How far each point's latency moved within the point itself (its first half of
        // batches against its second): a change between the points no larger than that is
        // not an effect of the traffic that this run can show.
        let drift = numalab_records::mem::loaded::drift_ns(&r.points);
        let change = full.latency_ns.median - idle.latency_ns.median;
        let measurable = drift.is_none_or(|d| change.abs() > d);
        let verdict = match drift {
            Some(d) if !measurable => format!(
                ": a change no larger than the points' own drift (their first and second halves of batches differ by up to {}), so no effect of the load that this run can tell apart{}",
                ns(d),
                if d > 0.05 * idle.latency_ns.median {
                    "; the machine was not quiet (a drift over 5% of the idle latency): rerun on an idle one to see smaller effects"
                } else {
                    ""
                }
            ),
            _ if change < 0.0 => ": lower under load, beyond the points' own drift: traffic can hold up a memory or uncore clock that idles down, or the machine's latency changed between the points".to_string(),
            _ => String::new(),
        };
        out.push(
            "loaded_latency",
            if ratio > 1.5 && measurable {
                Severity::Notice
            } else {
                Severity::Info
            },
            format!(
                "under load, {} ({}) goes from {} idle to {} while {} other CPU(s) move {:.1} GB/s ({} idle){verdict}",
                if r.idle_kind().is_memory(r.chase_bytes) {
                    "memory latency"
                } else {
                    "the chaser's latency"
                },
                crate::facts::latency_kind_text(&r.kind(), r.chase_bytes),
                ns(idle.latency_ns.median),
                ns(full.latency_ns.median),
                r.generator_cpus.len(),
                full.traffic_gbps,
                x(ratio)
            ),
            Some(anchors::mem_loaded(out.b)),
        );
    }
}

/// Page migration: the fastest method per pair.
fn migration(l: &Loaded, out: &mut Out<'_>) {
    // Page migration: the biggest cell of each pair, base-page unit first.
    let mig: Vec<MigrateRecord> = l
        .records_of::<MigrateRecord>()
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let mut roles: Vec<&str> = Vec::new();
    for r in &mig {
        if !roles.contains(&r.pair_role.as_str()) {
            roles.push(&r.pair_role);
        }
    }
    for role in roles {
        let Some(big) = mig
            .iter()
            .filter(|r| r.pair_role == role)
            .max_by_key(|r| (r.pages * r.unit_bytes, std::cmp::Reverse(r.unit_bytes)))
        else {
            continue;
        };
        let text = if big.same_node {
            format!(
                "page migration between nodes not measured (one NUMA node); same-node copies of {} x {} pages, a baseline only: {}",
                big.pages,
                numalab_schema::units::bytes(big.unit_bytes),
                big.why
            )
        } else {
            format!(
                "page migration node {} -> {} ({role}), {} x {} pages: {}",
                big.src_node,
                big.dst_node,
                big.pages,
                numalab_schema::units::bytes(big.unit_bytes),
                big.why
            )
        };
        out.push(
            "migration",
            Severity::Info,
            text,
            Some(anchors::mem_migrate(out.b)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use numalab_records::mem::kernel::{Isa, Kernel};
    use numalab_records::mem::latency::{Kind, Level, Load, Locality, Order, Point};
    use numalab_records::mem::{
        LoadedPoint, MatrixCell, PageRequest, PagesObtained, Placement, Reference, Timer, Traffic,
    };
    use numalab_schema::clock::ClockCheck;
    use numalab_schema::memory::{MemPolicy, PagePlacement};
    use numalab_schema::Record;

    /// Working set of a memory-latency figure: 256 MiB (over the 64 MiB that counts as
    /// memory when the last-level cache is unknown).
    const WS: u64 = 256 << 20;

    fn timer() -> Timer {
        Timer {
            check: ClockCheck {
                clock: "monotonic".into(),
                reported_resolution_ns: 1.0,
                observed_step_ns: 20.0,
                read_overhead_ns: 20.0,
                backwards: 0,
                reads: 1000,
            },
            subtracted_ns: 20.0,
        }
    }

    /// Threads on `cpu_node`, every page on `mem_node`, as asked.
    fn placement(cpu_node: u32, mem_node: u32) -> Placement {
        Placement {
            backend: "fake".into(),
            cpus: vec![cpu_node * 4],
            cpu_nodes: vec![cpu_node],
            policy: MemPolicy::Bind(vec![mem_node]),
            expected_nodes: vec![mem_node],
            pages_per_node: vec![(mem_node, 1000)],
            pages_not_present: 0,
            fraction_expected: 1.0,
        }
    }

    /// Pages obtained: "base", "thp" or "thp-partial" (the last two asked as THP).
    fn pages(obtained: &str) -> PagesObtained {
        PagesObtained {
            requested: if obtained == "base" {
                PageRequest::Base
            } else {
                PageRequest::Thp
            },
            obtained: obtained.into(),
            page_bytes: 4096,
            thp_bytes: Some(if obtained == "base" { 0 } else { WS }),
            total_bytes: WS,
        }
    }

    /// An idle chase uniformly random over the buffer, local or remote.
    fn global(pages: &str, local: bool) -> Kind {
        Kind {
            load: Load::Idle,
            order: Order::Global,
            block_bytes: None,
            stride_bytes: 64,
            pages: pages.into(),
            locality: if local {
                Locality::Local
            } else {
                Locality::Remote
            },
            llc_bytes: None,
        }
    }

    fn point(ws: u64, ns: f64) -> Point {
        Point {
            working_set_bytes: ws,
            lines: ws / 64,
            loads_per_batch: 1000,
            sample_ns: vec![ns],
            latency_ns: summary(ns),
            cycles_p50: None,
        }
    }

    /// A latency record: a curve (no cell) or one node-matrix point.
    fn latency(
        cell: Option<(u32, u32)>,
        pages_obtained: &str,
        kind: Kind,
        points: &[(u64, f64)],
    ) -> LatencyRecord {
        let (c, m) = cell.unwrap_or((0, 0));
        LatencyRecord {
            cpu: c * 4,
            matrix: cell.map(|(cpu_node, mem_node)| MatrixCell { cpu_node, mem_node }),
            placement: placement(c, m),
            pages: pages(pages_obtained),
            order: kind.order,
            seed: 1,
            stride_bytes: kind.stride_bytes,
            kind: Some(kind),
            points: points.iter().map(|&(ws, ns)| point(ws, ns)).collect(),
            levels: vec![],
            steps: vec![],
            frequency: None,
            timer: timer(),
        }
    }

    /// The idle latency from node `c` to node `m` over 256 MiB, random over the buffer.
    fn cell(c: u32, m: u32, pages_obtained: &str, ns: f64) -> LatencyRecord {
        latency(
            Some((c, m)),
            pages_obtained,
            global(pages_obtained, c == m),
            &[(WS, ns)],
        )
    }

    /// A local latency curve ending at 256 MiB.
    fn curve(pages_obtained: &str, points: &[(u64, f64)]) -> LatencyRecord {
        latency(None, pages_obtained, global(pages_obtained, true), points)
    }

    /// A 2x2 node matrix on THP: `local` on the diagonal, `a` from 0 to 1, `b` from 1 to 0.
    fn lat_matrix(local: f64, a: f64, b: f64) -> Vec<LatencyRecord> {
        vec![
            cell(0, 0, "thp", local),
            cell(0, 1, "thp", a),
            cell(1, 0, "thp", b),
            cell(1, 1, "thp", local),
        ]
    }

    fn bw(
        kernel: &str,
        threads: usize,
        cell: Option<(u32, u32)>,
        gbps: f64,
        nodes: u32,
    ) -> BandwidthRecord {
        let (c, m) = cell.unwrap_or((0, 0));
        let mut p = placement(c, m);
        p.cpu_nodes = (0..nodes).collect();
        BandwidthRecord {
            kernel: Kernel::parse(kernel).unwrap(),
            formula: String::new(),
            isa: Isa::Scalar,
            threads,
            matrix: cell.map(|(cpu_node, mem_node)| MatrixCell { cpu_node, mem_node }),
            placement: p,
            pages: pages("base"),
            array_bytes: WS / 3,
            working_set_bytes: WS,
            elements_per_thread: 1000,
            stream_bytes_per_sample: 1000,
            actual_bytes_per_sample: 1000,
            inner_iterations: 1,
            warmup_rounds: 1,
            sample_ns: vec![1000.0],
            slowest_thread_ns: vec![1000.0],
            bandwidth_gbps: summary(gbps),
            slowest_thread_gbps: summary(gbps),
            actual_bandwidth_gbps: summary(gbps),
            imbalance: 1.0,
            timer: timer(),
            vector_bits: None,
            verified: Some(true),
            verification: None,
            uncore: None,
            uncore_check: None,
            uncore_note: None,
            variant: None,
        }
    }

    /// Latency under load: (delay, GB/s of the generators, chaser ns) per point; no
    /// delay is the idle point.
    fn under(chase_bytes: u64, points: &[(Option<u64>, f64, f64)]) -> LoadedRecord {
        LoadedRecord {
            chaser_cpu: 0,
            generator_cpus: vec![1, 2, 3],
            traffic: Traffic::Read,
            isa: Isa::Scalar,
            placement: placement(0, 0),
            pages: pages("thp"),
            chase_bytes,
            generator_bytes: WS,
            kind: Some(Kind {
                load: Load::Loaded,
                ..global("thp", true)
            }),
            points: points
                .iter()
                .map(|&(delay_ns, traffic_gbps, ns)| LoadedPoint {
                    delay_ns,
                    traffic_gbps,
                    actual_traffic_gbps: traffic_gbps,
                    sample_ns: vec![ns],
                    latency_ns: summary(ns),
                    loads_per_batch: 1000,
                    duration_ns: 1_000_000,
                })
                .collect(),
            timer: timer(),
        }
    }

    fn migrate(role: &str, unit_bytes: u64, n: u64, same_node: bool, why: &str) -> MigrateRecord {
        MigrateRecord {
            src_node: 0,
            dst_node: if same_node { 0 } else { 1 },
            pair_role: role.into(),
            distance: None,
            cpu: 0,
            cpu_node: Some(0),
            unit_bytes,
            pages: n,
            base_pages: n * unit_bytes / 4096,
            bytes: n * unit_bytes,
            unit_note: None,
            same_node,
            prefault: true,
            destination_fault_ns_per_base_page: None,
            source: PagePlacement::default(),
            methods: vec![],
            winner: None,
            why: why.into(),
            reference: Reference {
                kind: "local_copy".into(),
                gbps: 10.0,
                detail: String::new(),
            },
            clamp_note: None,
            isa: Isa::Scalar,
            timer: timer(),
        }
    }

    /// The memory findings of a bundle of these records, on this machine.
    fn mem_with(
        env: numalab_schema::Envelope,
        records: Vec<Record>,
        m: Option<&Machine>,
    ) -> Vec<Finding> {
        run(&loaded_with(env, records), |l, out| mem(l, m, out))
    }

    fn mem_of(records: Vec<Record>, m: Option<&Machine>) -> Vec<Finding> {
        mem_with(envelope(), records, m)
    }

    fn recs<T: numalab_schema::RecordKind>(what: &str, v: &[T]) -> Vec<Record> {
        v.iter()
            .enumerate()
            .map(|(i, r)| rec(&format!("{what}/{i}"), r))
            .collect()
    }

    fn two_nodes_slit(remote: u64) -> Machine {
        let mut m = machine(
            &[&[0, 1, 2, 3], &[4, 5, 6, 7]],
            &[(0, &[0, 1, 2, 3]), (1, &[4, 5, 6, 7])],
        );
        add_slit(&mut m, &[0, 1], &[&[10, remote], &[remote, 10]]);
        m
    }

    // ------------------------------------------------------------ remote_memory

    #[test]
    fn remote_latency_is_the_median_ratio_to_the_local_cell() {
        let f = mem_of(recs("lat", &lat_matrix(100.0, 150.0, 150.0)), None);
        let x = one(&f, "remote_memory");
        assert_eq!(x.severity, Severity::Notice);
        assert_eq!(
            x.text,
            "remote memory: 1.50x local latency (100.0 ns vs 150.0 ns, idle, random over 256 MiB, huge pages (THP))"
        );
        assert_eq!(x.anchor.as_deref(), Some("mem-latency-matrix"));
    }

    #[test]
    fn the_farthest_pair_is_named_when_well_above_the_median() {
        // Ratios 1.5 (0 -> 1) and 2.1 (1 -> 0): median 1.8, and 2.1 > 1.8 x 1.1.
        let f = mem_of(recs("lat", &lat_matrix(100.0, 150.0, 210.0)), None);
        says(
            &f,
            "remote_memory",
            Severity::Notice,
            &[
                "1.80x local latency (100.0 ns vs 180.0 ns",
                "; farthest pair node 1 -> 0: 2.10x local latency",
            ],
        );
        // 1.5 and 1.6: median 1.55; 1.6 is within 10% of it.
        let f = mem_of(recs("lat", &lat_matrix(100.0, 150.0, 160.0)), None);
        let t = says(
            &f,
            "remote_memory",
            Severity::Notice,
            &["1.55x local latency"],
        );
        assert!(!t.contains("farthest"), "{t}");
    }

    #[test]
    fn remote_bandwidth_uses_the_triad_matrix() {
        // Triad: 14 / 40 = 0.35 both ways; copy (not shown) would say 0.50x.
        let mut b = Vec::new();
        for (k, remote) in [("copy", 20.0), ("triad", 14.0)] {
            for (c, m) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                b.push(bw(
                    k,
                    4,
                    Some((c, m)),
                    if c == m { 40.0 } else { remote },
                    1,
                ));
            }
        }
        let f = mem_of(recs("bw", &b), None);
        let x = one(&f, "remote_memory");
        assert_eq!(
            x.text,
            "remote memory: 0.35x local bandwidth (triad, 40.0 vs 14.0 GB/s)"
        );
        assert_eq!(x.anchor.as_deref(), Some("mem-bandwidth-matrix"));
    }

    #[test]
    fn latency_and_bandwidth_are_said_in_one_sentence() {
        let mut r = recs("lat", &lat_matrix(100.0, 150.0, 150.0));
        r.extend(recs(
            "bw",
            &[
                bw("triad", 4, Some((0, 0)), 40.0, 1),
                bw("triad", 4, Some((0, 1)), 20.0, 1),
            ],
        ));
        let f = mem_of(r, None);
        says(
            &f,
            "remote_memory",
            Severity::Notice,
            &[
                "1.50x local latency",
                ", 0.50x local bandwidth (triad, 40.0 vs 20.0 GB/s)",
            ],
        );
    }

    #[test]
    fn no_remote_figure_without_both_a_local_and_a_remote_cell() {
        // One node: only the local cell.
        absent(
            &mem_of(recs("lat", &[cell(0, 0, "thp", 100.0)]), None),
            "remote_memory",
        );
        // A remote cell whose threads' node has no local cell: no reference.
        absent(
            &mem_of(
                recs("lat", &[cell(0, 1, "thp", 150.0), cell(1, 1, "thp", 100.0)]),
                None,
            ),
            "remote_memory",
        );
        absent(&mem_of(vec![], None), "remote_memory");
    }

    // ------------------------------------------------------------ slit_vs_measured

    #[test]
    fn a_slit_far_from_the_measured_ratio_is_a_notice() {
        // SLIT 21/10 = 2.10x; measured 1.50x: ln(2.1/1.5) = 0.34 > ln(1.25) = 0.22.
        let f = mem_of(
            recs("lat", &lat_matrix(100.0, 150.0, 150.0)),
            Some(&two_nodes_slit(21)),
        );
        says(
            &f,
            "slit_vs_measured",
            Severity::Notice,
            &[
                "SLIT says 21 (2.10x local)",
                "measured remote latency is 1.50x local: the firmware's distances are an ordering",
            ],
        );
    }

    #[test]
    fn a_slit_within_25_percent_agrees() {
        // SLIT 2.10x, measured 2.00x.
        let f = mem_of(
            recs("lat", &lat_matrix(100.0, 200.0, 200.0)),
            Some(&two_nodes_slit(21)),
        );
        says(
            &f,
            "slit_vs_measured",
            Severity::Info,
            &["measured remote latency is 2.00x local: they agree within 25%"],
        );
    }

    #[test]
    fn the_worst_pair_against_the_slit_is_the_one_said() {
        // SLIT 2.0x both ways; measured 1.9x (0 -> 1) and 1.2x (1 -> 0): 1 -> 0 is off.
        let f = mem_of(
            recs("lat", &lat_matrix(100.0, 190.0, 120.0)),
            Some(&two_nodes_slit(20)),
        );
        says(
            &f,
            "slit_vs_measured",
            Severity::Notice,
            &["from node 1 to node 0, measured remote latency is 1.20x local"],
        );
    }

    #[test]
    fn no_slit_or_no_latency_matrix_no_comparison() {
        let plain = machine(
            &[&[0, 1, 2, 3], &[4, 5, 6, 7]],
            &[(0, &[0, 1, 2, 3]), (1, &[4, 5, 6, 7])],
        );
        absent(
            &mem_of(recs("lat", &lat_matrix(100.0, 150.0, 150.0)), Some(&plain)),
            "slit_vs_measured",
        );
        absent(
            &mem_of(recs("lat", &lat_matrix(100.0, 150.0, 150.0)), None),
            "slit_vs_measured",
        );
        // Bandwidth cells only: nothing to set against distances.
        let b = [
            bw("triad", 4, Some((0, 0)), 40.0, 1),
            bw("triad", 4, Some((0, 1)), 20.0, 1),
        ];
        absent(
            &mem_of(recs("bw", &b), Some(&two_nodes_slit(21))),
            "slit_vs_measured",
        );
    }

    // ------------------------------------------------------------ bandwidth_saturation

    #[test]
    fn bandwidth_saturates_at_the_knee_per_node() {
        // 10, 18, 30, 32 GB/s at 1, 2, 4, 8 threads: farthest above the chord at 4.
        let sweep = |nodes| {
            [(1, 10.0), (2, 18.0), (4, 30.0), (8, 32.0)]
                .iter()
                .map(|&(t, g)| bw("triad", t, None, g, nodes))
                .collect::<Vec<_>>()
        };
        let f = mem_of(recs("bw", &sweep(1)), None);
        let x = one(&f, "bandwidth_saturation");
        assert_eq!(x.severity, Severity::Notice);
        assert_eq!(
            x.text,
            "triad bandwidth saturates at about 4 threads per node (30.0 GB/s at 4 threads on 1 node; 32.0 GB/s at 8)"
        );
        // The same threads over two nodes: 4 / 2 = 2 per node.
        let f = mem_of(recs("bw", &sweep(2)), None);
        says(
            &f,
            "bandwidth_saturation",
            Severity::Notice,
            &["about 2 threads per node (30.0 GB/s at 4 threads on 2 nodes;"],
        );
    }

    #[test]
    fn a_straight_line_gives_one_threads_share_instead() {
        let b = [
            bw("triad", 4, None, 40.0, 1),
            bw("triad", 1, None, 10.0, 1),
            bw("triad", 2, None, 20.0, 1),
        ];
        let f = mem_of(recs("bw", &b), None);
        absent(&f, "bandwidth_saturation");
        says(
            &f,
            "bandwidth_one_thread",
            Severity::Info,
            &["triad bandwidth: one thread reaches 0.25x of what 4 threads reach (10.0 vs 40.0 GB/s)"],
        );
    }

    #[test]
    fn triad_is_preferred_else_the_first_kernel() {
        let mut b = vec![
            bw("copy", 1, None, 10.0, 1),
            bw("copy", 4, None, 20.0, 1),
            bw("triad", 1, None, 12.0, 1),
            bw("triad", 4, None, 36.0, 1),
        ];
        let f = mem_of(recs("bw", &b), None);
        says(
            &f,
            "bandwidth_one_thread",
            Severity::Info,
            &["triad bandwidth:", "0.33x"],
        );
        b.retain(|r| r.kernel.name() == "copy");
        let f = mem_of(recs("bw", &b), None);
        says(
            &f,
            "bandwidth_one_thread",
            Severity::Info,
            &["copy bandwidth:", "0.50x"],
        );
    }

    #[test]
    fn no_sweep_from_one_thread_no_bandwidth_sentence() {
        // Matrix cells are not a sweep; a sweep without a one-thread point and no knee
        // says nothing.
        let b = [
            bw("triad", 1, Some((0, 0)), 10.0, 1),
            bw("triad", 4, Some((0, 0)), 40.0, 1),
            bw("triad", 2, None, 20.0, 1),
            bw("triad", 4, None, 40.0, 1),
        ];
        let f = mem_of(recs("bw", &b), None);
        absent(&f, "bandwidth_saturation");
        absent(&f, "bandwidth_one_thread");
    }

    // ------------------------------------------------------------ latency_levels

    #[test]
    fn the_plateaus_of_a_curve_are_listed() {
        let mut c = curve("base", &[(32 << 10, 1.2), (WS, 95.3)]);
        c.cpu = 3;
        for (name, ns) in [("L1d", 1.2), ("L2", 4.0), ("memory", 95.3)] {
            c.levels.push(Level {
                name: name.into(),
                cache_bytes: None,
                from_bytes: 0,
                to_bytes: 0,
                latency_ns: ns,
                cycles: None,
            });
        }
        // A matrix cell with levels is not a curve.
        let mut m = cell(0, 0, "thp", 100.0);
        m.levels = c.levels.clone();
        let f = mem_of(vec![rec("curve", &c), rec("cell", &m)], None);
        let x = one(&f, "latency_levels");
        assert_eq!(x.severity, Severity::Info);
        assert_eq!(
            x.text,
            "load-to-load latency of CPU 3 (random over the working set, base pages): L1d 1.20 ns, L2 4.00 ns, memory 95.3 ns"
        );
    }

    #[test]
    fn a_cache_that_does_not_serve_the_cpu_is_explained() {
        let mut c = curve("base", &[(32 << 10, 1.35), (WS, 205.1)]);
        for (name, ns) in [
            ("L1d", 1.35),
            ("L2", 3.87),
            ("memory at L3 sizes", 173.1),
            ("memory", 205.1),
        ] {
            c.levels.push(Level {
                name: name.into(),
                cache_bytes: None,
                from_bytes: 0,
                to_bytes: 0,
                latency_ns: ns,
                cycles: None,
            });
        }
        let f = mem_of(vec![rec("curve", &c)], None);
        let x = one(&f, "latency_levels");
        assert_eq!(
            x.text,
            "load-to-load latency of CPU 0 (random over the working set, base pages): L1d 1.35 ns, L2 3.87 ns, memory at L3 sizes 173.1 ns, memory 205.1 ns (the L3 does not serve this CPU: at its sizes loads take over half of memory's latency; on a virtual machine or a shared host a CPU may get a small share of a cache, or the cache is partitioned)"
        );
    }

    #[test]
    fn a_second_step_within_one_cache_is_not_another_cache() {
        let mut c = curve("thp", &[(32 << 10, 1.69), (WS, 232.8)]);
        for (name, from, ns) in [
            ("L1d", 4 << 10, 1.69),
            ("L2", 64 << 10, 5.41),
            ("L2 (2)", 512 << 10, 7.03),
            ("memory", 1 << 30, 232.8),
        ] {
            c.levels.push(Level {
                name: name.into(),
                cache_bytes: None,
                from_bytes: from,
                to_bytes: from,
                latency_ns: ns,
                cycles: None,
            });
        }
        let f = mem_of(vec![rec("curve", &c)], None);
        assert_eq!(
            one(&f, "latency_levels").text,
            "load-to-load latency of CPU 0 (random over the working set, huge pages (THP)): L1d 1.69 ns, L2 5.41 ns, L2 7.03 ns from 512 KiB (a second step within the L2's size: a TLB's reach or a slower part of the cache; the curve cannot tell which), memory 232.8 ns"
        );
        // The plateau table says the same, with a note.
        #[cfg(feature = "render")]
        {
            let sections = crate::sections::mem::sections(
                0,
                &loaded_with(envelope(), vec![rec("curve", &c)]),
                "",
            );
            let t = sections
                .iter()
                .flat_map(|s| &s.blocks)
                .find_map(|b| match b {
                    crate::doc::Block::Table { table }
                        if table.id.ends_with("mem-latency-levels") =>
                    {
                        Some(table)
                    }
                    _ => None,
                })
                .unwrap();
            let names: Vec<String> = t
                .rows
                .iter()
                .map(|r| match &r[3] {
                    crate::table::Cell::Text(s) => s.clone(),
                    c => panic!("{c:?}"),
                })
                .collect();
            assert_eq!(names, ["L1d", "L2", "L2, second step", "memory"]);
            assert!(
                t.notes.iter().any(|n| n.contains("second step")),
                "{:?}",
                t.notes
            );
        }
        // Memory at a cache's sizes in two steps is said without the cache's words.
        c.levels[2].name = "memory at L3 sizes".into();
        c.levels.insert(3, c.levels[2].clone());
        c.levels[3].name = "memory at L3 sizes (2)".into();
        c.levels[3].from_bytes = 64 << 20;
        c.levels[3].latency_ns = 145.5;
        let f = mem_of(vec![rec("curve", &c)], None);
        assert!(
            one(&f, "latency_levels").text.contains(
                "memory at L3 sizes 7.03 ns, memory at L3 sizes 145.5 ns from 64 MiB, memory 232.8 ns (the L3 does not serve this CPU"
            ),
            "{}",
            one(&f, "latency_levels").text
        );
        // A name that only looks numbered, with no plateau of its base before it, is
        // said as it is.
        c.levels.remove(1);
        c.levels[1].name = "plateau (2)".into();
        let f = mem_of(vec![rec("curve", &c)], None);
        assert!(
            one(&f, "latency_levels")
                .text
                .contains(", plateau (2) 7.03 ns, "),
            "{}",
            one(&f, "latency_levels").text
        );
    }

    #[test]
    fn a_curve_without_plateaus_has_no_levels_sentence() {
        absent(
            &mem_of(vec![rec("curve", &curve("base", &[(WS, 95.0)]))], None),
            "latency_levels",
        );
    }

    // ------------------------------------------------------------ huge_pages

    #[test]
    fn huge_pages_faster_than_base_pages_is_translation() {
        // 90 / 120 = 0.75x at the same working set and order.
        let r = vec![
            rec("base", &curve("base", &[(1 << 20, 5.0), (WS, 120.0)])),
            rec("thp", &curve("thp", &[(1 << 20, 5.0), (WS, 90.0)])),
        ];
        let f = mem_of(r, None);
        let x = one(&f, "huge_pages");
        assert_eq!(x.severity, Severity::Info);
        assert_eq!(
            x.text,
            "random over 256 MiB: huge pages give 0.75x the latency of base pages (90.0 ns vs 120.0 ns): address translation (TLB misses and page walks) costs that much on base pages"
        );
    }

    #[test]
    fn huge_pages_slower_than_base_pages_is_an_unsteady_machine() {
        // 144 / 120 = 1.20x.
        let r = vec![
            rec("base", &curve("base", &[(WS, 120.0)])),
            rec("thp", &curve("thp", &[(WS, 144.0)])),
        ];
        says(
            &mem_of(r, None),
            "huge_pages",
            Severity::Info,
            &["1.20x the latency", "translation cannot explain"],
        );
    }

    #[test]
    fn huge_pages_are_compared_only_like_with_like_and_beyond_10_percent() {
        let base = curve("base", &[(WS, 120.0)]);
        // Within 10%: 115 / 120.
        let close = curve("thp", &[(WS, 115.0)]);
        absent(
            &mem_of(vec![rec("a", &base), rec("b", &close)], None),
            "huge_pages",
        );
        // Another working set at the end of the curve.
        let other_ws = curve("thp", &[(WS * 2, 90.0)]);
        absent(
            &mem_of(vec![rec("a", &base), rec("b", &other_ws)], None),
            "huge_pages",
        );
        // Partly huge pages are neither.
        let partial = curve("thp-partial", &[(WS, 90.0)]);
        absent(
            &mem_of(vec![rec("a", &base), rec("b", &partial)], None),
            "huge_pages",
        );
        // Another order: page-local blocks are another quantity.
        let mut blocks = curve("thp", &[(WS, 90.0)]);
        blocks.kind = Some(Kind {
            order: Order::PageLocal,
            block_bytes: Some(4096),
            ..global("thp", true)
        });
        absent(
            &mem_of(vec![rec("a", &base), rec("b", &blocks)], None),
            "huge_pages",
        );
    }

    // ------------------------------------------------------------ page_walks

    #[test]
    fn page_walks_are_the_base_page_cost_of_the_local_cell() {
        // Huge 100 ns, base 130 ns: 30 ns, 30 / 130 = 23% of each load.
        let mut l = lat_matrix(100.0, 150.0, 150.0);
        l.push(cell(0, 0, "base", 130.0));
        let f = mem_of(recs("lat", &l), None);
        let x = one(&f, "page_walks");
        assert_eq!(x.severity, Severity::Info);
        assert!(
            x.text.starts_with(
                "page walks: idle local memory latency (random over 256 MiB) is 100.0 ns on huge pages and 130.0 ns on base pages: on base pages 30.0 ns (23%) of each load is translation"
            ),
            "{}",
            x.text
        );
        // The headline stays on huge pages: the base cell is not a remote ratio.
        says(
            &f,
            "remote_memory",
            Severity::Notice,
            &["1.50x local latency (100.0 ns vs 150.0 ns"],
        );
    }

    #[test]
    fn page_walks_within_2_percent_are_noise() {
        // 101.5 < 100 x 1.02.
        let mut l = lat_matrix(100.0, 150.0, 150.0);
        l.push(cell(0, 0, "base", 101.5));
        let f = mem_of(recs("lat", &l), None);
        says(
            &f,
            "page_walks",
            Severity::Info,
            &["is 100.0 ns on huge pages and 101.5 ns on base pages: no translation cost shows beyond the noise"],
        );
    }

    #[test]
    fn several_local_pairs_are_counted() {
        let mut l = lat_matrix(100.0, 150.0, 150.0);
        l.push(cell(0, 0, "base", 130.0));
        l.push(cell(1, 1, "base", 128.0));
        let f = mem_of(recs("lat", &l), None);
        says(
            &f,
            "page_walks",
            Severity::Info,
            &["(node 0; 2 local pairs measured)"],
        );
    }

    #[test]
    fn no_page_walks_without_a_base_page_twin() {
        // Huge pages only.
        absent(
            &mem_of(recs("lat", &lat_matrix(100.0, 150.0, 150.0)), None),
            "page_walks",
        );
        // Base pages only: the headline is not on huge pages.
        let base = [cell(0, 0, "base", 130.0), cell(0, 1, "base", 190.0)];
        absent(&mem_of(recs("lat", &base), None), "page_walks");
        // A base-page twin at another working set is another quantity.
        let mut l = lat_matrix(100.0, 150.0, 150.0);
        let mut twin = cell(0, 0, "base", 130.0);
        twin.points[0].working_set_bytes = WS * 2;
        l.push(twin);
        absent(&mem_of(recs("lat", &l), None), "page_walks");
    }

    // ------------------------------------------------------------ memory_latency_vm

    #[test]
    fn memory_latency_in_a_vm_is_a_notice() {
        let mut env = envelope();
        env.host.hypervisor = Some("KVM".into());
        let f = mem_with(
            env.clone(),
            vec![rec("c", &curve("thp", &[(WS, 140.0)]))],
            None,
        );
        says(
            &f,
            "memory_latency_vm",
            Severity::Notice,
            &["this is a virtual machine (KVM): with nested paging"],
        );
        // Only caches measured: no memory latency to inflate.
        let f = mem_with(env, vec![rec("c", &curve("thp", &[(1 << 20, 5.0)]))], None);
        absent(&f, "memory_latency_vm");
    }

    #[test]
    fn bare_metal_memory_latency_is_not_flagged() {
        let r = || vec![rec("c", &curve("thp", &[(WS, 140.0)]))];
        absent(&mem_of(r(), None), "memory_latency_vm");
        for h in ["", "none"] {
            let mut env = envelope();
            env.host.hypervisor = Some(h.into());
            absent(&mem_with(env, r(), None), "memory_latency_vm");
        }
    }

    // ------------------------------------------------------------ latency_disagreement

    #[test]
    fn two_probes_25_percent_apart_on_one_quantity_disagree() {
        // Node matrix 100 ns, curve 140 ns, same kind and working set: 1.40x.
        let r = vec![
            rec("cell", &cell(0, 0, "thp", 100.0)),
            rec("curve", &curve("thp", &[(1 << 20, 5.0), (WS, 140.0)])),
        ];
        let f = mem_of(r, None);
        let x = one(&f, "latency_disagreement");
        assert_eq!(x.severity, Severity::Notice);
        assert!(
            x.text.starts_with(
                "memory latency (idle, random over 256 MiB, huge pages (THP), local) was 100.0 ns by the node matrix and 140.0 ns by the latency curve in this run (1.40x the lower)"
            ),
            "{}",
            x.text
        );
    }

    #[test]
    fn the_idle_point_of_the_loaded_probe_is_one_of_the_probes() {
        let r = vec![
            rec("curve", &curve("thp", &[(WS, 100.0)])),
            rec(
                "loaded",
                &under(WS, &[(None, 0.0, 130.0), (Some(0), 20.0, 200.0)]),
            ),
        ];
        says(
            &mem_of(r, None),
            "latency_disagreement",
            Severity::Notice,
            &[
                "100.0 ns by the latency curve and 130.0 ns by the loaded latency, idle point",
                "(1.30x the lower)",
            ],
        );
    }

    #[test]
    fn agreeing_or_different_quantities_are_not_a_disagreement() {
        // 120 / 100 = 1.2: within 25%.
        let close = vec![
            rec("cell", &cell(0, 0, "thp", 100.0)),
            rec("curve", &curve("thp", &[(WS, 120.0)])),
        ];
        absent(&mem_of(close, None), "latency_disagreement");
        // Another working set.
        let other_ws = vec![
            rec("cell", &cell(0, 0, "thp", 100.0)),
            rec("curve", &curve("thp", &[(WS * 2, 140.0)])),
        ];
        absent(&mem_of(other_ws, None), "latency_disagreement");
        // Other pages.
        let other_pages = vec![
            rec("cell", &cell(0, 0, "thp", 100.0)),
            rec("curve", &curve("base", &[(WS, 140.0)])),
        ];
        absent(&mem_of(other_pages, None), "latency_disagreement");
        // A remote cell is not local memory latency.
        let remote = vec![
            rec("cell", &cell(0, 1, "thp", 300.0)),
            rec("curve", &curve("thp", &[(WS, 100.0)])),
        ];
        absent(&mem_of(remote, None), "latency_disagreement");
        // Nor are two remote cells of one matrix (1.5x and 2.1x local) two probes of one
        // quantity.
        absent(
            &mem_of(recs("lat", &lat_matrix(100.0, 150.0, 210.0)), None),
            "latency_disagreement",
        );
        // Caches (8 MiB, under 64 MiB) are not memory.
        let small = vec![
            rec(
                "a",
                &latency(Some((0, 0)), "thp", global("thp", true), &[(8 << 20, 10.0)]),
            ),
            rec("b", &curve("thp", &[(8 << 20, 20.0)])),
        ];
        absent(&mem_of(small, None), "latency_disagreement");
    }

    // ------------------------------------------------------------ loaded_latency

    #[test]
    fn latency_under_the_most_traffic_against_idle() {
        // The point with the most traffic (30 GB/s, 180 ns), not the slowest one:
        // 180 / 100 = 1.80x.
        let r = under(
            WS,
            &[
                (None, 0.0, 100.0),
                (Some(100), 30.0, 180.0),
                (Some(1000), 10.0, 190.0),
            ],
        );
        let f = mem_of(vec![rec("loaded", &r)], None);
        let x = one(&f, "loaded_latency");
        assert_eq!(x.severity, Severity::Notice);
        assert_eq!(
            x.text,
            "under load, memory latency (random over 256 MiB, huge pages (THP)) goes from 100.0 ns idle to 180.0 ns while 3 other CPU(s) move 30.0 GB/s (1.80x idle)"
        );
    }

    #[test]
    fn a_small_rise_is_info_and_a_cache_sized_chase_is_not_memory() {
        // 1 MiB: the chaser stays in the caches; 130 / 100 = 1.30x.
        let r = under(1 << 20, &[(None, 0.0, 100.0), (Some(0), 30.0, 130.0)]);
        let f = mem_of(vec![rec("loaded", &r)], None);
        says(
            &f,
            "loaded_latency",
            Severity::Info,
            &["under load, the chaser's latency (", "(1.30x idle)"],
        );
    }

    /// A loaded-latency record whose idle and loaded points have the given batch series.
    fn under_series(idle: &[f64], loaded: &[f64]) -> LoadedRecord {
        let mut r = under(WS, &[(None, 0.0, 0.0), (Some(100), 30.0, 0.0)]);
        for (p, v) in r.points.iter_mut().zip([idle, loaded]) {
            p.sample_ns = v.to_vec();
            p.latency_ns = numalab_stats::Summary::of(v).expect("finite samples");
        }
        r
    }

    #[test]
    fn a_change_within_the_points_own_drift_is_not_called_an_effect() {
        // Idle: 200 ns then 240 ns (halves 40 ns apart, median 220); loaded: 230 ns
        // throughout. 230 / 220 is within that drift.
        let idle = [200.0, 200.0, 200.0, 200.0, 240.0, 240.0, 240.0, 240.0];
        let f = mem_of(vec![rec("l", &under_series(&idle, &[230.0; 8]))], None);
        let x = one(&f, "loaded_latency");
        assert_eq!(x.severity, Severity::Info);
        assert_eq!(
            x.text,
            "under load, memory latency (random over 256 MiB, huge pages (THP)) goes from 220.0 ns idle to 230.0 ns while 3 other CPU(s) move 30.0 GB/s (1.05x idle): a change no larger than the points' own drift (their first and second halves of batches differ by up to 40.0 ns), so no effect of the load that this run can tell apart; the machine was not quiet (a drift over 5% of the idle latency): rerun on an idle one to see smaller effects"
        );
        // A rise past 1.5x is no notice when the drift covers it: idle halves at 100 and
        // 200 ns (median 150), loaded 240 ns (1.60x, 90 ns above, drift 100 ns).
        let idle = [100.0, 100.0, 100.0, 100.0, 200.0, 200.0, 200.0, 200.0];
        let f = mem_of(vec![rec("l", &under_series(&idle, &[240.0; 8]))], None);
        let x = one(&f, "loaded_latency");
        assert_eq!(x.severity, Severity::Info);
        assert!(
            x.text.contains("(1.60x idle): a change no larger"),
            "{}",
            x.text
        );
        // A small drift (2 ns of 200) covering a 1 ns change: no effect, and no advice
        // to rerun.
        let idle = [199.0, 199.0, 199.0, 199.0, 201.0, 201.0, 201.0, 201.0];
        let f = mem_of(vec![rec("l", &under_series(&idle, &[201.0; 8]))], None);
        let x = one(&f, "loaded_latency");
        assert!(
            x.text.ends_with(
                "differ by up to 2.00 ns), so no effect of the load that this run can tell apart"
            ),
            "{}",
            x.text
        );
    }

    #[test]
    fn lower_under_load_beyond_the_drift_is_said_and_a_steady_rise_is_not_qualified() {
        let f = mem_of(
            vec![rec("l", &under_series(&[200.0; 8], &[150.0; 8]))],
            None,
        );
        says(
            &f,
            "loaded_latency",
            Severity::Info,
            &["(0.75x idle): lower under load, beyond the points' own drift: traffic can hold up a memory or uncore clock"],
        );
        // Steady points 100 and 180 ns: a rise well past the drift (0), said plainly.
        let f = mem_of(
            vec![rec("l", &under_series(&[100.0; 8], &[180.0; 8]))],
            None,
        );
        let x = one(&f, "loaded_latency");
        assert_eq!(x.severity, Severity::Notice);
        assert!(x.text.ends_with("(1.80x idle)"), "{}", x.text);
    }

    #[test]
    fn no_idle_or_no_loaded_point_no_loaded_sentence() {
        let no_idle = under(WS, &[(Some(0), 30.0, 180.0)]);
        let no_load = under(WS, &[(None, 0.0, 100.0)]);
        let f = mem_of(vec![rec("a", &no_idle), rec("b", &no_load)], None);
        absent(&f, "loaded_latency");
    }

    // ------------------------------------------------------------ migration

    #[test]
    fn the_biggest_cell_of_each_pair_is_said() {
        let m = [
            migrate("nearest", 4096, 256, false, "small"),
            migrate("nearest", 4096, 1024, false, "move_pages wins"),
            migrate("farthest", 4096, 64, false, "memcpy wins"),
        ];
        let f = mem_of(recs("mig", &m), None);
        let v = of(&f, "migration");
        assert_eq!(v.len(), 2, "{f:#?}");
        assert!(v.iter().all(|x| x.severity == Severity::Info));
        assert_eq!(
            v[0].text,
            "page migration node 0 -> 1 (nearest), 1024 x 4 KiB pages: move_pages wins"
        );
        assert_eq!(
            v[1].text,
            "page migration node 0 -> 1 (farthest), 64 x 4 KiB pages: memcpy wins"
        );
    }

    #[test]
    fn at_equal_bytes_the_base_page_unit_is_said() {
        // 512 x 4 KiB = 1 x 2 MiB.
        let m = [
            migrate("nearest", 2 << 20, 1, false, "huge"),
            migrate("nearest", 4096, 512, false, "base"),
        ];
        let f = mem_of(recs("mig", &m), None);
        says(
            &f,
            "migration",
            Severity::Info,
            &["512 x 4 KiB pages: base"],
        );
    }

    #[test]
    fn same_node_copies_say_migration_was_not_measured() {
        let m = [migrate(
            "same-node baseline",
            4096,
            1024,
            true,
            "stream_copy fastest",
        )];
        let f = mem_of(recs("mig", &m), None);
        says(
            &f,
            "migration",
            Severity::Info,
            &["page migration between nodes not measured (one NUMA node); same-node copies of 1024 x 4 KiB pages, a baseline only: stream_copy fastest"],
        );
        absent(&mem_of(vec![], None), "migration");
    }
}
