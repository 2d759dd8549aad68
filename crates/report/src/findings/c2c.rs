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
    for (r, mut rec) in l.iter_of::<MatrixRecord>() {
        let anchor = Some(anchors::c2c_heatmap(out.b, &r.key));
        let vals = crate::metrics::take_pair_values(&mut rec);
        let Some(s) = range_of(vals) else {
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

/// The count, least, greatest and median of the pair latencies: the figures of
/// [`numalab_stats::Summary::of`] that the range finding names, computed the same way
/// on the values sorted in place (no sorted copy, no deviations: for 2,000 CPUs each
/// was 16 MB more). `None` when empty or with a NaN, as `Summary::of`.
fn range_of(mut vals: Vec<f64>) -> Option<Range> {
    if vals.is_empty() || vals.iter().any(|v| v.is_nan()) {
        return None;
    }
    vals.sort_by(f64::total_cmp);
    Some(Range {
        n: vals.len(),
        min: vals[0],
        max: vals[vals.len() - 1],
        median: numalab_stats::percentile_sorted(&vals, 50.0),
    })
}

/// See [`range_of`].
struct Range {
    n: usize,
    min: f64,
    max: f64,
    median: f64,
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use numalab_records::c2c::{Confidence, Evidence, GroupJson, LevelJson, SquareMatrix};

    /// A matrix over CPUs 0..n, `f(i, j)` between CPUs i and j (both directions).
    fn matrix(n: u32, f: impl Fn(u32, u32) -> Option<f64>) -> MatrixRecord {
        MatrixRecord {
            cpus: (0..n).collect(),
            matrix_ns: SquareMatrix::from_fn(n as usize, |i, j| {
                let (i, j) = (i as u32, j as u32);
                if i == j {
                    None
                } else {
                    f(i.min(j), i.max(j))
                }
            }),
            groups: vec![],
            levels: vec![],
            variant: "cas".into(),
            statistic: "median".into(),
            home_node_policy: None,
            selection: None,
            confidence: Confidence::High,
            notes: vec![],
            topology_comparison: vec![],
        }
    }

    /// 8 CPUs in two halves: 40 ns inside a half, 90 ns across.
    fn halves() -> MatrixRecord {
        matrix(8, |i, j| Some(if i / 4 == j / 4 { 40.0 } else { 90.0 }))
    }

    /// A level of groups with what latency and hwloc say of it.
    fn level(
        m: &mut MatrixRecord,
        groups: &[&[u32]],
        hwloc: Option<&str>,
        intra: Option<f64>,
        inter: Option<f64>,
    ) {
        m.groups.push(
            groups
                .iter()
                .map(|g| GroupJson {
                    cpus: g.to_vec(),
                    intra_ns: intra,
                    inter_ns: inter,
                })
                .collect(),
        );
        m.levels.push(LevelJson {
            evidence: Evidence::Both,
            separation: 2.0,
            intra_ns: intra,
            inter_ns: inter,
            hwloc: hwloc.map(String::from),
        });
    }

    fn c2c_of(m: &MatrixRecord, machine: Option<&Machine>) -> Vec<Finding> {
        let l = loaded(vec![rec("c2c/matrix/cas", m)]);
        run(&l, |l, out| c2c(l, machine, out))
    }

    /// One package of 8 CPUs, one NUMA node.
    fn one_node() -> Machine {
        machine(
            &[&[0, 1, 2, 3, 4, 5, 6, 7]],
            &[(0, &[0, 1, 2, 3, 4, 5, 6, 7])],
        )
    }

    // ------------------------------------------------------------ groups_per_package

    #[test]
    fn groups_per_package_counts_groups_nested_in_packages() {
        let m = machine(&[&[0, 1, 2, 3], &[4, 5, 6, 7]], &[]);
        assert_eq!(
            groups_per_package(&m, &[vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]),
            Some(2)
        );
        // A package without any group does not count against the others.
        assert_eq!(groups_per_package(&m, &[vec![0, 1], vec![2, 3]]), Some(2));
    }

    #[test]
    fn groups_per_package_refuses_straddling_or_uneven_groups() {
        let m = machine(&[&[0, 1, 2, 3], &[4, 5, 6, 7]], &[]);
        // A group across the two packages.
        assert_eq!(groups_per_package(&m, &[vec![2, 3, 4, 5]]), None);
        // Two groups in one package, one in the other.
        assert_eq!(
            groups_per_package(&m, &[vec![0, 1], vec![2, 3], vec![4, 5, 6, 7]]),
            None
        );
        // No packages, or no groups.
        assert_eq!(groups_per_package(&machine(&[], &[]), &[vec![0]]), None);
        assert_eq!(groups_per_package(&m, &[]), None);
    }

    // ------------------------------------------------------------ c2c_range

    #[test]
    fn the_range_gives_min_max_and_median_over_each_pair_once() {
        // 28 pairs: 12 inside the halves at 40 ns, 16 across at 90 ns; the 14th and
        // 15th of the sorted values (the median) are both 90 ns.
        let f = c2c_of(&halves(), None);
        says(
            &f,
            "c2c_range",
            Severity::Info,
            &["core-to-core latency (cas): 40.0 ns to 90.0 ns, median 90.0 ns over 28 pairs"],
        );
    }

    #[test]
    fn one_pair_is_named_as_such() {
        let f = c2c_of(&matrix(2, |_, _| Some(55.0)), None);
        says(
            &f,
            "c2c_range",
            Severity::Info,
            &["55.0 ns for the one pair measured"],
        );
    }

    #[test]
    fn a_matrix_without_values_says_nothing() {
        let mut m = matrix(4, |_, _| None);
        level(
            &mut m,
            &[&[0, 1], &[2, 3]],
            Some("L3"),
            Some(40.0),
            Some(90.0),
        );
        m.topology_comparison.push("hwloc differs".into());
        assert!(c2c_of(&m, Some(&one_node())).is_empty());
    }

    // ------------------------------------------------------------ c2c_levels

    #[test]
    fn levels_hwloc_names_are_given_with_both_latencies() {
        let mut m = halves();
        level(
            &mut m,
            &[&[0, 1, 2, 3], &[4, 5, 6, 7]],
            Some("L3"),
            Some(40.0),
            Some(90.0),
        );
        // A level hwloc does not know, or without a latency between groups, is left out.
        level(
            &mut m,
            &[&[0, 1, 2, 3, 4, 5, 6, 7]],
            None,
            Some(70.0),
            Some(100.0),
        );
        level(
            &mut m,
            &[&[0, 1, 2, 3, 4, 5, 6, 7]],
            Some("Package"),
            Some(70.0),
            None,
        );
        let f = c2c_of(&m, None);
        let t = says(
            &f,
            "c2c_levels",
            Severity::Info,
            &["core-to-core latency by level: 40.0 ns inside L3, 90.0 ns between them"],
        );
        assert!(!t.contains("Package") && !t.contains(';'), "{t}");
    }

    #[test]
    fn no_level_known_to_hwloc_no_levels_sentence() {
        let mut m = halves();
        level(
            &mut m,
            &[&[0, 1, 2, 3], &[4, 5, 6, 7]],
            None,
            Some(40.0),
            Some(90.0),
        );
        absent(&c2c_of(&m, None), "c2c_levels");
    }

    // ------------------------------------------------------------ c2c_domains

    #[test]
    fn more_latency_domains_than_numa_nodes_per_package_is_a_notice() {
        let mut m = halves();
        level(
            &mut m,
            &[&[0, 1, 2, 3], &[4, 5, 6, 7]],
            None,
            Some(40.0),
            Some(90.0),
        );
        let f = c2c_of(&m, Some(&one_node()));
        says(
            &f,
            "c2c_domains",
            Severity::Notice,
            &[
                "shows 2 domains per package (90.0 ns between vs 40.0 ns inside)",
                "hwloc shows 1 NUMA node(s) per package",
            ],
        );
    }

    #[test]
    fn domains_that_match_the_numa_nodes_are_not_a_mismatch() {
        let mut m = halves();
        level(
            &mut m,
            &[&[0, 1, 2, 3], &[4, 5, 6, 7]],
            None,
            Some(40.0),
            Some(90.0),
        );
        let two_nodes = machine(
            &[&[0, 1, 2, 3, 4, 5, 6, 7]],
            &[(0, &[0, 1, 2, 3]), (1, &[4, 5, 6, 7])],
        );
        absent(&c2c_of(&m, Some(&two_nodes)), "c2c_domains");
        // Without a machine description nothing is compared.
        absent(&c2c_of(&m, None), "c2c_domains");
    }

    #[test]
    fn small_groups_and_levels_hwloc_knows_are_not_numa_domains() {
        // Pairs of CPUs (SMT siblings, clusters) are finer than any NUMA node.
        let mut pairs = halves();
        level(
            &mut pairs,
            &[&[0, 1], &[2, 3], &[4, 5], &[6, 7]],
            None,
            Some(20.0),
            Some(40.0),
        );
        absent(&c2c_of(&pairs, Some(&one_node())), "c2c_domains");
        // A level hwloc names is explained by hwloc.
        let mut known = halves();
        level(
            &mut known,
            &[&[0, 1, 2, 3], &[4, 5, 6, 7]],
            Some("L3"),
            Some(40.0),
            Some(90.0),
        );
        absent(&c2c_of(&known, Some(&one_node())), "c2c_domains");
    }

    #[test]
    fn groups_across_packages_say_nothing_of_the_numa_mode() {
        let mut m = halves();
        level(
            &mut m,
            &[&[0, 1, 2, 3, 4, 5], &[6, 7]],
            None,
            Some(40.0),
            Some(90.0),
        );
        let two_packages = machine(
            &[&[0, 1, 2, 3], &[4, 5, 6, 7]],
            &[(0, &[0, 1, 2, 3]), (1, &[4, 5, 6, 7])],
        );
        absent(&c2c_of(&m, Some(&two_packages)), "c2c_domains");
    }

    // ------------------------------------------------------------ c2c_vs_hwloc

    #[test]
    fn each_disagreement_with_hwloc_is_a_notice() {
        let mut m = halves();
        m.topology_comparison = vec![
            "latency shows 2 groups where hwloc shows 1 L3".into(),
            "CPU 7 sits apart".into(),
        ];
        let f = c2c_of(&m, None);
        let v = of(&f, "c2c_vs_hwloc");
        assert_eq!(v.len(), 2, "{f:#?}");
        assert!(v.iter().all(|x| x.severity == Severity::Notice));
        assert_eq!(v[1].text, "core-to-core latency vs hwloc: CPU 7 sits apart");
        absent(&c2c_of(&halves(), None), "c2c_vs_hwloc");
    }
}
