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
    let headline = crate::sections::mem::headline_matrix(&lat);
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
            Some(crate::sections::mem::latency_kind_text(
                &r.kind(),
                r.points.first()?.working_set_bytes,
            ))
        })
        .unwrap_or_default();
    let kernel = crate::sections::mem::matrix_kernel(bw);
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
        let levels: Vec<String> = r
            .levels
            .iter()
            .map(|lv| format!("{} {}", lv.name, ns(lv.latency_ns)))
            .collect();
        let k = r.kind();
        out.push(
            "latency_levels",
            Severity::Info,
            format!(
                "load-to-load latency of CPU {} ({}, {}): {}",
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
                    crate::sections::mem::latency_kind_text(&kt, wt)
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
        let what = crate::sections::mem::latency_kind_text(&hk, ws)
            .replace(&format!(", {}", hk.pages_text()), "");
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
    let virtual_machine = l
        .bundle
        .envelope
        .host
        .hypervisor
        .as_deref()
        .filter(|h| !h.is_empty() && *h != "none");
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
        let (Some(idle), Some(full)) = (
            r.points.iter().find(|p| p.delay_ns.is_none()),
            r.points
                .iter()
                .filter(|p| p.delay_ns.is_some())
                .max_by(|a, b| a.traffic_gbps.total_cmp(&b.traffic_gbps)),
        ) else {
            continue;
        };
        let ratio = full.latency_ns.median / idle.latency_ns.median;
        out.push(
            "loaded_latency",
            if ratio > 1.5 {
                Severity::Notice
            } else {
                Severity::Info
            },
            format!(
                "under load, {} ({}) goes from {} idle to {} while {} other CPU(s) move {:.1} GB/s ({} idle)",
                if r.idle_kind().is_memory(r.chase_bytes) {
                    "memory latency"
                } else {
                    "the chaser's latency"
                },
                crate::sections::mem::latency_kind_text(&r.kind(), r.chase_bytes),
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
