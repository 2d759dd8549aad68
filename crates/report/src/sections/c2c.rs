//! Core-to-core latency: the heatmap (rows and columns in the order of the inferred
//! groups, so blocks show), the structure level by level with what hwloc calls it, and
//! the pairs' statistics.

use super::table;
use crate::anchors;
use crate::doc::{OutlineItem, Section};
use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::c2c::{Confidence, Evidence};
use numalab_records::c2c::{LatencyMatrix, Selection};
use numalab_records::c2c::{MatrixRecord, PairRecord};
use numalab_schema::cpulist;

/// The sections of the `c2c.matrix` records of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    let pairs: Vec<PairRecord> = l
        .records_of::<PairRecord>()
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    let mut out = Vec::new();
    for (r, rec) in l.records_of::<MatrixRecord>() {
        let mut s = Section::new(
            &anchors::id(b, &format!("c2c-{}", r.key)),
            &format!("Core-to-core latency ({}){of}", rec.variant),
        );
        let matrix = LatencyMatrix::from_rows(rec.cpus.clone(), &rec.matrix_ns);
        let levels: Vec<Vec<Vec<u32>>> = rec
            .groups
            .iter()
            .map(|l| l.iter().map(|g| g.cpus.clone()).collect())
            .collect();
        let positions = numalab_records::c2c::order_by_groups(&rec.cpus, &levels);
        let title = format!(
            "core-to-core latency ({}), {} CPUs",
            rec.variant,
            rec.cpus.len()
        );
        s.chart(
            &anchors::c2c_heatmap(b, &r.key),
            numalab_chart::Heatmap::cpu_matrix(&title, matrix.cpus(), &positions, |a, b| {
                matrix.get(a, b)
            }).to_svg(),
            format!(
                "Half round-trip time of one cache line between two pinned CPUs ({}), {} of {} pairs measured; rows and columns ordered by the inferred groups; grey = not measured",
                rec.statistic,
                matrix.measured_pairs(),
                matrix.total_pairs()
            ),
        );
        let selection = match &rec.selection {
            Some(Selection::Full) | None => "every pair".to_string(),
            Some(Selection::Sampled {
                grouped_by,
                per_group_pair,
                seed,
                ..
            }) => format!(
                "every pair inside each {grouped_by}, {per_group_pair} sampled pairs between each two (seed {seed})"
            ),
        };
        s.para(format!(
            "Pairs: {selection}; {} of {} measured. Home of the line: {}. Confidence of the structure: {}.",
            matrix.measured_pairs(),
            matrix.total_pairs(),
            rec.home_node_policy.as_deref().unwrap_or("as imported"),
            match rec.confidence {
                Confidence::High => "high",
                Confidence::Low => "low (see the notes)",
            }
        ));
        let mut t = table(
            &anchors::c2c_structure(b, &r.key),
            "Latency structure, finest level first",
            &[
                ("level", None),
                ("groups", None),
                ("inside", Some("ns")),
                ("between", Some("ns")),
                ("separation", None),
                ("evidence", None),
                ("hwloc", None),
            ],
        );
        let mut outline = Vec::new();
        for (i, lv) in rec.levels.iter().enumerate() {
            let groups = rec.groups.get(i).cloned().unwrap_or_default();
            let sizes: Vec<usize> = groups.iter().map(|g| g.cpus.len()).collect();
            let shape = if sizes.iter().all(|s| Some(s) == sizes.first()) {
                format!("{} x {}", sizes.len(), sizes.first().copied().unwrap_or(0))
            } else {
                format!("{} groups", sizes.len())
            };
            t.push(vec![
                Cell::num((i + 1) as f64, 0),
                Cell::text(shape),
                super::opt(lv.intra_ns, 1, "one CPU per group"),
                super::opt(lv.inter_ns, 1, "one group"),
                Cell::num(lv.separation, 2),
                Cell::text(match lv.evidence {
                    Evidence::Latency => "latency",
                    Evidence::Profile => "profile",
                    Evidence::Both => "both",
                }),
                lv.hwloc.as_ref().map_or(Cell::text("no match"), Cell::text),
            ]);
            let mut items = Vec::new();
            for g in groups.iter().take(16) {
                items.push(OutlineItem {
                    depth: rec.levels.len() - 1 - i,
                    text: format!(
                        "level {}: CPUs {} ({} inside)",
                        i + 1,
                        cpulist::format(&g.cpus),
                        g.intra_ns.map_or("-".into(), numalab_schema::units::nanos)
                    ),
                    emphasis: false,
                });
            }
            // Coarsest level first.
            items.extend(outline);
            outline = items;
        }
        if t.rows.is_empty() {
            s.para("No latency structure was found (too few CPUs, or every pair alike).");
        }
        s.table(t);
        s.outline(outline);
        s.list(rec.topology_comparison.clone());
        s.list(rec.notes.iter().map(|n| format!("note: {n}")).collect());
        let of_variant: Vec<&PairRecord> =
            pairs.iter().filter(|p| p.variant == rec.variant).collect();
        let mut pt = table(
            &anchors::id(b, &format!("c2c-pairs-{}", r.key)),
            "Pairs (first 64)",
            &[
                ("CPUs", None),
                ("home node", None),
                ("median", Some("ns")),
                ("p10", Some("ns")),
                ("p90", Some("ns")),
                ("samples", None),
                ("round trips per sample", None),
            ],
        );
        for p in of_variant.iter().take(64) {
            pt.push(vec![
                Cell::text(format!("{} - {}", p.first, p.second)),
                super::opt(p.home_node.map(f64::from), 0, "unknown"),
                Cell::num(p.latency_ns, 1),
                Cell::num(p.summary.p10, 1),
                Cell::num(p.summary.p90, 1),
                Cell::num(p.summary.n as f64, 0),
                Cell::num(f64::from(p.round_trips), 0),
            ]);
        }
        if of_variant.len() > 64 {
            pt.notes.push(format!(
                "{} more pairs in the raw-data appendix and the bundle",
                of_variant.len() - 64
            ));
        }
        s.table(pt);
        out.push(s);
    }
    out
}
