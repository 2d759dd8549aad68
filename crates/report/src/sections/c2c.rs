//! Core-to-core latency: the heatmap (rows and columns in the order of the inferred
//! groups, so blocks show), the structure level by level with what hwloc calls it, and
//! the pairs' statistics. Above [`AGGREGATE_ABOVE_CPUS`] CPUs the heatmap shows blocks
//! of CPUs (each cell the median of the pairs between two blocks) instead of a cell per
//! pair, which for 160 CPUs was 2.8 MB of SVG; the full matrix stays in the raw data.

use super::table;
use crate::anchors;
use crate::doc::{OutlineItem, Section};
use crate::load::Loaded;
use crate::table::Cell;
use numalab_records::c2c::{Confidence, Evidence};
use numalab_records::c2c::{LatencyMatrix, Selection};
use numalab_records::c2c::{MatrixRecord, PairRecord};
use numalab_schema::cpulist;

/// The pairs of a variant shown in its table (the first ones in the journal).
const PAIRS_SHOWN: usize = 64;

/// The sections of the `c2c.matrix` records of a bundle.
pub fn sections(b: usize, l: &Loaded, of: &str) -> Vec<Section> {
    // One streaming pass over the pairs (a 2,000-CPU run writes millions): the first
    // [`PAIRS_SHOWN`] of each variant, and how many there are.
    let mut pairs: Vec<(String, Vec<PairRecord>, usize)> = Vec::new();
    l.each_of::<PairRecord>(|_, p| {
        let i = match pairs.iter().position(|(v, ..)| *v == p.variant) {
            Some(i) => i,
            None => {
                pairs.push((p.variant.clone(), Vec::new(), 0));
                pairs.len() - 1
            }
        };
        let (_, shown, n) = &mut pairs[i];
        *n += 1;
        if shown.len() < PAIRS_SHOWN {
            shown.push(p);
        }
        true
    });
    let mut out = Vec::new();
    // One matrix decoded at a time (a 2,000-CPU one is 4 million cells), and a check
    // for Ctrl-C and SIGTERM before each and after its heatmap: the report's next
    // check then ends it as interrupted.
    let stop = numalab_schema::interrupt::requested;
    l.each_of::<MatrixRecord>(|r, mut rec| {
        if stop() {
            return false;
        }
        let mut s = Section::new(
            &anchors::id(b, &format!("c2c-{}", r.key)),
            &format!("Core-to-core latency ({}){of}", rec.variant),
        );
        // The cells become the matrix (no copy: a 2,000-CPU matrix is 4 million cells,
        // 32 MB); nothing below reads `matrix_ns`.
        let cells = std::mem::take(&mut rec.matrix_ns);
        let matrix = LatencyMatrix::from_cells(rec.cpus.clone(), cells);
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
        if matrix.n() > AGGREGATE_ABOVE_CPUS {
            aggregated_heatmap(
                &mut s, b, &r.key, &rec, &matrix, &levels, &positions, &title,
            );
        } else {
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
        }
        if stop() {
            return false;
        }
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
        let (of_variant, all_of_variant) = pairs
            .iter()
            .find(|(v, ..)| *v == rec.variant)
            .map_or((&[][..], 0), |(_, shown, n)| (&shown[..], *n));
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
        for p in of_variant {
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
        if all_of_variant > PAIRS_SHOWN {
            pt.notes.push(format!(
                "{} more pairs in the raw-data appendix and the bundle",
                all_of_variant - PAIRS_SHOWN
            ));
        }
        s.table(pt);
        out.push(s);
        true
    });
    out
}

/// Above this many CPUs the heatmap aggregates blocks of CPUs: one cell per pair would be
/// n^2 cells (25,600 for 160 CPUs, 2.8 MB of SVG), unreadable at 3 pixels a cell.
pub const AGGREGATE_ABOVE_CPUS: usize = 64;

/// Blocks aimed at per side of an aggregated heatmap: a block holds at most
/// ceil(n / 32) CPUs (5 of 160): from about 32 to about 64 blocks a side.
const BLOCKS_PER_SIDE: usize = 32;

/// The heatmap of a big matrix by blocks of CPUs, the table of the blocks and a note
/// saying what a cell is and where every pair is.
#[allow(clippy::too_many_arguments)]
fn aggregated_heatmap(
    s: &mut Section,
    b: usize,
    key: &str,
    rec: &MatrixRecord,
    matrix: &LatencyMatrix,
    levels: &[Vec<Vec<u32>>],
    positions: &[usize],
    title: &str,
) {
    let n = matrix.n();
    let max = n.div_ceil(BLOCKS_PER_SIDE).max(1);
    let blocks = blocks(matrix.cpus(), levels, positions, max);
    let names: Vec<String> = blocks
        .iter()
        .map(|bl| cpulist::format(&bl.iter().map(|&p| matrix.cpus()[p]).collect::<Vec<_>>()))
        .collect();
    let lowest: Vec<String> = blocks
        .iter()
        .map(|bl| {
            bl.iter()
                .map(|&p| matrix.cpus()[p])
                .min()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let mut values = Vec::with_capacity(blocks.len());
    let mut titles = Vec::with_capacity(blocks.len());
    for (r, rows) in blocks.iter().enumerate() {
        let mut vrow = Vec::with_capacity(blocks.len());
        let mut trow = Vec::with_capacity(blocks.len());
        for (c, cols) in blocks.iter().enumerate() {
            let cell = block_cell(matrix, rows, cols, r == c);
            let pairs = if cell.measured == cell.total {
                format!(
                    "{} pair{}",
                    cell.total,
                    if cell.total == 1 { "" } else { "s" }
                )
            } else {
                format!("{} of {} pairs measured", cell.measured, cell.total)
            };
            let between = if r == c {
                format!("CPUs {}, inside", names[r])
            } else {
                format!("CPUs {} -> CPUs {}", names[r], names[c])
            };
            trow.push(match cell.median {
                Some(m) => format!("{between}: median {m:.1} ns of {pairs}"),
                None if cell.total == 0 => format!("{between}: one CPU, no pair"),
                None => format!("{between}: none of {} pairs measured", cell.total),
            });
            vrow.push(cell.median);
        }
        values.push(vrow);
        titles.push(trow);
    }
    let grouped = !levels.is_empty();
    s.chart(
        &anchors::c2c_heatmap(b, key),
        numalab_chart::Heatmap::cpu_blocks(
            &format!("{title} in {} blocks", blocks.len()),
            lowest.clone(),
            values,
            titles,
        )
        .to_svg(),
        format!(
            "Half round-trip time of one cache line between two pinned CPUs ({}), {} of {} pairs measured; aggregated: each row and column is a block of up to {max} CPUs ({}), labelled by its lowest CPU and listed in the table below; each cell is the median of the measured pairs between two blocks (on the diagonal: inside one block); grey = no pair measured",
            rec.statistic,
            matrix.measured_pairs(),
            matrix.total_pairs(),
            if grouped {
                "whole groups of the inferred structure where they fit, in its order"
            } else {
                "consecutive CPUs: no structure was inferred"
            }
        ),
    );
    let mut t = table(
        &anchors::id(b, &format!("c2c-blocks-{key}")),
        "Blocks of the heatmap",
        &[
            ("block", None),
            ("CPUs", None),
            ("count", None),
            ("median inside", Some("ns")),
            ("median to the other blocks", Some("ns")),
        ],
    );
    for (i, bl) in blocks.iter().enumerate() {
        let inside = block_cell(matrix, bl, bl, true);
        let rest: Vec<usize> = blocks
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .flat_map(|(_, o)| o.iter().copied())
            .collect();
        let outside = block_cell(matrix, bl, &rest, false);
        t.push(vec![
            Cell::text(&lowest[i]),
            Cell::text(&names[i]),
            Cell::num(bl.len() as f64, 0),
            super::opt(
                inside.median,
                1,
                if inside.total == 0 {
                    "one CPU"
                } else {
                    "not measured"
                },
            ),
            super::opt(outside.median, 1, "not measured"),
        ]);
    }
    t.notes.push(format!(
        "{n} CPUs are more than the {AGGREGATE_ABOVE_CPUS} the report draws a heatmap cell per pair for: each block is a row and a column of the heatmap, labelled by its lowest CPU; the full matrix, every pair, is in the raw data: the c2c.matrix record (in the HTML report's raw-data appendix, never cut, and in the bundle)"
    ));
    s.table(t);
}

/// What one cell of an aggregated heatmap holds.
struct BlockCell {
    /// Median of the measured pairs.
    median: Option<f64>,
    /// Pairs measured.
    measured: usize,
    /// Pairs between (or, on the diagonal, inside) the blocks.
    total: usize,
}

/// The pairs between blocks `a` and `b` (matrix positions), or inside `a` when `same`.
fn block_cell(m: &LatencyMatrix, a: &[usize], b: &[usize], same: bool) -> BlockCell {
    let mut values = Vec::new();
    let mut total = 0;
    for (i, &x) in a.iter().enumerate() {
        let others = if same { &a[i + 1..] } else { b };
        for &y in others {
            total += 1;
            if let Some(v) = m.get(x, y).filter(|v| v.is_finite()) {
                values.push(v);
            }
        }
    }
    BlockCell {
        median: numalab_stats::median(&values),
        measured: values.len(),
        total,
    }
}

/// Blocks of at most `max` CPUs (matrix positions) in display order (`positions`), each
/// the union of whole groups of one level under one parent group, or a run of
/// consecutive CPUs inside a finest-level group larger than `max`: a block never mixes
/// CPUs of two groups that are each larger than a block. `levels` are the groups of
/// each level, finest first (as in the record); CPUs in no group of a level stand alone
/// at that level.
pub fn blocks(
    cpus: &[u32],
    levels: &[Vec<Vec<u32>>],
    positions: &[usize],
    max: usize,
) -> Vec<Vec<usize>> {
    // group_of[k][p]: the group of level k holding position p.
    let group_of: Vec<Vec<Option<usize>>> = levels
        .iter()
        .map(|groups| {
            cpus.iter()
                .map(|c| groups.iter().position(|g| g.contains(c)))
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    split(positions, levels.len(), &group_of, max.max(1), &mut out);
    out
}

fn split(
    run: &[usize],
    depth: usize,
    group_of: &[Vec<Option<usize>>],
    max: usize,
    out: &mut Vec<Vec<usize>>,
) {
    if run.len() <= max {
        if !run.is_empty() {
            out.push(run.to_vec());
        }
        return;
    }
    // The children: runs of one group of the next finer level (single CPUs below the
    // finest level, or where a CPU is in no group).
    let mut children: Vec<&[usize]> = Vec::new();
    let mut start = 0;
    for i in 1..=run.len() {
        let end = i == run.len() || {
            let key = |p: usize| depth.checked_sub(1).and_then(|k| group_of[k][p]);
            match (key(run[i - 1]), key(run[i])) {
                (Some(a), Some(b)) => a != b,
                _ => true,
            }
        };
        if end {
            children.push(&run[start..i]);
            start = i;
        }
    }
    let mut current: Vec<usize> = Vec::new();
    for child in children {
        if child.len() > max {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            split(child, depth.saturating_sub(1), group_of, max, out);
        } else {
            if current.len() + child.len() > max {
                out.push(std::mem::take(&mut current));
            }
            current.extend_from_slice(child);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
}

#[cfg(test)]
mod tests {
    use super::blocks;

    #[test]
    fn blocks_follow_the_groups_and_stay_under_the_size() {
        // Two packages of 8 CPUs, cores of 2 (siblings i and i+8 of each package).
        let cpus: Vec<u32> = (0..16).collect();
        let cores: Vec<Vec<u32>> = (0..8).map(|c| vec![c, c + 8]).collect();
        let packages: Vec<Vec<u32>> = vec![
            [0, 1, 2, 3, 8, 9, 10, 11].to_vec(),
            [4, 5, 6, 7, 12, 13, 14, 15].to_vec(),
        ];
        let levels = vec![cores, packages];
        let positions = numalab_records::c2c::order_by_groups(&cpus, &levels);
        let b = blocks(&cpus, &levels, &positions, 5);
        let as_cpus: Vec<Vec<u32>> = b
            .iter()
            .map(|bl| {
                let mut v: Vec<u32> = bl.iter().map(|&p| cpus[p]).collect();
                v.sort_unstable();
                v
            })
            .collect();
        // Whole cores, two to a block, never across packages.
        assert_eq!(
            as_cpus,
            vec![
                vec![0, 1, 8, 9],
                vec![2, 3, 10, 11],
                vec![4, 5, 12, 13],
                vec![6, 7, 14, 15]
            ]
        );
        // No structure: runs of consecutive CPUs.
        let plain = blocks(&cpus, &[], &(0..16).collect::<Vec<_>>(), 5);
        assert_eq!(
            plain.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![5, 5, 5, 1]
        );
        // Every CPU in exactly one block, whatever the size.
        for max in 1..=17 {
            let mut all: Vec<usize> = blocks(&cpus, &levels, &positions, max)
                .into_iter()
                .inspect(|bl| assert!(bl.len() <= max))
                .flatten()
                .collect();
            all.sort_unstable();
            assert_eq!(all, (0..16).collect::<Vec<_>>());
        }
    }
}
