//! Core-to-core latency: range, levels, domains against hwloc.

#[allow(unused_imports)]
use super::*;

/// Groups of a level per package, if the level's groups nest inside packages.
pub(super) fn groups_per_package(m: &Machine, groups: &[Vec<u32>]) -> Option<usize> {
    if m.packages.is_empty() {
        return None;
    }
    let mut counts = vec![0usize; m.packages.len()];
    for g in groups {
        let p = m
            .packages
            .iter()
            .position(|p| g.iter().all(|c| p.cpus.contains(c)))?;
        counts[p] += 1;
    }
    let first = *counts.iter().find(|c| **c > 0)?;
    counts
        .iter()
        .all(|c| *c == 0 || *c == first)
        .then_some(first)
}

pub(super) fn c2c(l: &Loaded, m: Option<&Machine>, out: &mut Out<'_>) {
    for (r, rec) in l.records_of::<MatrixRecord>() {
        let anchor = Some(anchors::c2c_heatmap(out.b, &r.key));
        let vals = crate::metrics::pair_values(&rec);
        let Some(s) = numalab_stats::Summary::of(&vals) else {
            continue;
        };
        let range = if s.n == 1 {
            format!("{} for the one pair measured", ns(s.median))
        } else {
            format!(
                "{} to {}, median {} over {} pairs",
                ns(s.min),
                ns(s.max),
                ns(s.median),
                s.n
            )
        };
        out.push(
            "c2c_range",
            Severity::Info,
            format!("core-to-core latency ({}): {range}", rec.variant),
            anchor.clone(),
        );
        let mut levels = Vec::new();
        for lv in &rec.levels {
            if let (Some(name), Some(i), Some(e)) = (&lv.hwloc, lv.intra_ns, lv.inter_ns) {
                levels.push(format!("{} inside {name}, {} between them", ns(i), ns(e)));
            }
        }
        if !levels.is_empty() {
            out.push(
                "c2c_levels",
                Severity::Info,
                format!("core-to-core latency by level: {}", levels.join("; ")),
                Some(anchors::c2c_structure(out.b, &r.key)),
            );
        }
        if let Some(m) = m {
            let nodes_per_pkg = groups_per_package(
                m,
                &m.numa_nodes
                    .iter()
                    .filter(|n| n.has_cpus)
                    .map(|n| n.cpus.clone())
                    .collect::<Vec<_>>(),
            )
            .unwrap_or(1);
            for (li, lv) in rec.levels.iter().enumerate() {
                if lv.hwloc.is_some() {
                    continue;
                }
                let groups: Vec<Vec<u32>> = rec
                    .groups
                    .get(li)
                    .map(|g| g.iter().map(|g| g.cpus.clone()).collect())
                    .unwrap_or_default();
                let Some(k) = groups_per_package(m, &groups) else {
                    continue;
                };
                // Only coarse splits (several cores per group) say something about NUMA
                // modes; SMT pairs and clusters are finer than any NUMA node.
                let cores_per_group = groups.first().map_or(0, |g| g.len());
                if k > nodes_per_pkg && k > 1 && cores_per_group >= 4 {
                    out.push(
                        "c2c_domains",
                        Severity::Notice,
                        format!(
                            "core-to-core latency shows {k} domains per package ({} between vs {} inside) but hwloc shows {nodes_per_pkg} NUMA node(s) per package: check the NUMA mode in the firmware (sub-NUMA clustering, NPS, quadrant mode)",
                            lv.inter_ns.map_or("?".into(), ns),
                            lv.intra_ns.map_or("?".into(), ns),
                        ),
                        anchor.clone(),
                    );
                }
            }
        }
        for s in &rec.topology_comparison {
            out.push(
                "c2c_vs_hwloc",
                Severity::Notice,
                format!("core-to-core latency vs hwloc: {s}"),
                Some(anchors::c2c_structure(out.b, &r.key)),
            );
        }
    }
}
