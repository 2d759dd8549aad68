//! The inferred latency structure next to what hwloc says, in sentences.
//!
//! hwloc reports what firmware and kernel describe: cores, caches, clusters, dies,
//! packages, NUMA nodes. Latency shows what the hardware does. Where they agree, a level
//! gets hwloc's name ("matches the L3 caches"); where they do not, the disagreement is a
//! finding ("hwloc shows 1 NUMA node but latency splits the 80 CPUs into 2 groups of 40
//! at 150 ns between vs 75 ns inside").

use crate::matrix::LatencyMatrix;
use crate::structure::{Level, Structure};
use numalab_schema::machine::CacheKind;
use numalab_schema::Machine;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// For each level of the structure (same order), the hwloc partition it matches.
    pub level_names: Vec<Option<String>>,
    /// Findings, one sentence each.
    pub sentences: Vec<String>,
}

/// A partition of CPUs that hwloc describes, with its name in the plural ("L3 caches").
struct HwPartition {
    singular: &'static str,
    plural: String,
    groups: Vec<Vec<u32>>,
}

fn restrict(groups: Vec<Vec<u32>>, cpus: &BTreeSet<u32>) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = groups
        .into_iter()
        .map(|g| {
            let mut g: Vec<u32> = g.into_iter().filter(|c| cpus.contains(c)).collect();
            g.sort_unstable();
            g.dedup();
            g
        })
        .filter(|g| !g.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether the groups cover every CPU exactly once.
fn is_partition(groups: &[Vec<u32>], cpus: &BTreeSet<u32>) -> bool {
    let mut seen = BTreeSet::new();
    for g in groups {
        for c in g {
            if !seen.insert(*c) {
                return false;
            }
        }
    }
    seen == *cpus
}

fn hw_partitions(machine: &Machine, cpus: &BTreeSet<u32>) -> Vec<HwPartition> {
    let mut out = Vec::new();
    let mut push = |singular: &'static str, plural: String, groups: Vec<Vec<u32>>| {
        let g = restrict(groups, cpus);
        if is_partition(&g, cpus) {
            out.push(HwPartition {
                singular,
                plural,
                groups: g,
            });
        }
    };
    push(
        "core",
        "cores (SMT siblings)".into(),
        machine.cores.iter().map(|c| c.pus.clone()).collect(),
    );
    let levels: BTreeSet<u32> = machine
        .caches
        .iter()
        .filter(|c| matches!(c.kind, CacheKind::Unified | CacheKind::Data))
        .map(|c| c.level)
        .collect();
    for level in levels {
        let groups: Vec<Vec<u32>> = machine
            .caches
            .iter()
            .filter(|c| c.level == level && matches!(c.kind, CacheKind::Unified | CacheKind::Data))
            .map(|c| c.cpus.clone())
            .collect();
        push("cache", format!("L{level} caches"), groups);
    }
    let mut by_level: BTreeMap<u32, Vec<Vec<u32>>> = BTreeMap::new();
    for g in &machine.groups {
        by_level.entry(g.level).or_default().push(g.cpus.clone());
    }
    for (level, groups) in by_level {
        let kind = machine
            .groups
            .iter()
            .find(|g| g.level == level)
            .and_then(|g| g.subtype.clone())
            .map(|k| format!("{}s", k.to_lowercase()))
            .unwrap_or_else(|| "hwloc groups".into());
        push("group", kind, groups);
    }
    push(
        "die",
        "dies".into(),
        machine.dies.iter().map(|d| d.cpus.clone()).collect(),
    );
    push(
        "package",
        "packages".into(),
        machine.packages.iter().map(|p| p.cpus.clone()).collect(),
    );
    push(
        "NUMA node",
        "NUMA nodes".into(),
        machine
            .numa_nodes
            .iter()
            .filter(|n| n.has_cpus)
            .map(|n| n.cpus.clone())
            .collect(),
    );
    out
}

fn count(n: usize, singular: &str, plural: &str) -> String {
    if n == 1 {
        format!("1 {singular}")
    } else {
        format!("{n} {plural}")
    }
}

fn ns(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.0} ns"))
        .unwrap_or_else(|| "? ns".into())
}

fn level_groups(level: &Level) -> Vec<Vec<u32>> {
    let mut g: Vec<Vec<u32>> = level.groups.iter().map(|g| g.cpus.clone()).collect();
    g.sort();
    g
}

/// Compares a structure (inferred from `matrix`) with a machine description.
pub fn compare(matrix: &LatencyMatrix, structure: &Structure, machine: &Machine) -> Comparison {
    let cpus: BTreeSet<u32> = matrix.cpus().iter().copied().collect();
    let hw = hw_partitions(machine, &cpus);
    let n = cpus.len();
    let mut level_names = Vec::new();
    let mut sentences = Vec::new();
    for level in &structure.levels {
        let groups = level_groups(level);
        let matched: Vec<&HwPartition> = hw.iter().filter(|h| h.groups == groups).collect();
        if !matched.is_empty() {
            let names: Vec<&str> = matched.iter().map(|h| h.plural.as_str()).collect();
            level_names.push(Some(names.join(" = ")));
            continue;
        }
        level_names.push(None);
        // Nearly an hwloc partition: most groups identical.
        let near = hw
            .iter()
            .map(|h| (h, groups.iter().filter(|g| h.groups.contains(g)).count()))
            .filter(|(_, same)| 2 * same >= groups.len())
            .max_by_key(|(_, same)| *same);
        if let Some((h, same)) = near {
            let differ: Vec<String> = level
                .groups
                .iter()
                .filter(|g| !h.groups.contains(&g.cpus))
                .take(4)
                .map(|g| {
                    format!(
                        "[{}] at {} inside",
                        numalab_schema::cpulist::format(&g.cpus),
                        ns(g.intra_ns)
                    )
                })
                .collect();
            sentences.push(format!(
                "latency groups {same} of {} like hwloc's {}, but not {}",
                groups.len(),
                h.plural,
                differ.join(", ")
            ));
            continue;
        }
        // The finest hwloc partition that this level refines (the container hwloc knows).
        let refines = |coarse: &[Vec<u32>]| {
            groups
                .iter()
                .all(|g| coarse.iter().any(|c| g.iter().all(|x| c.contains(x))))
        };
        let container = hw
            .iter()
            .filter(|h| refines(&h.groups) && h.groups.len() < groups.len())
            .max_by_key(|h| h.groups.len());
        let shape = level.shape();
        let what = format!(
            "latency splits the {n} CPUs into {} ({shape}) at {} between vs {} inside",
            count(groups.len(), "group", "groups"),
            ns(level.inter_ns),
            ns(level.intra_ns)
        );
        sentences.push(match container {
            Some(h) => format!(
                "hwloc shows {} but {what}",
                count(h.groups.len(), h.singular, &h.plural)
            ),
            None => format!("{what}; no hwloc object matches these groups"),
        });
    }
    // Coarse hwloc domains that latency does not separate.
    for h in hw
        .iter()
        .filter(|h| matches!(h.singular, "NUMA node" | "package" | "die"))
    {
        if h.groups.len() < 2 {
            continue;
        }
        if structure.levels.iter().any(|l| level_groups(l) == h.groups) {
            continue;
        }
        let member: BTreeMap<u32, usize> = h
            .groups
            .iter()
            .enumerate()
            .flat_map(|(gi, g)| g.iter().map(move |&c| (c, gi)))
            .collect();
        let (mut inside, mut between) = (Vec::new(), Vec::new());
        for i in 0..matrix.n() {
            for j in 0..i {
                if let Some(v) = matrix.get(i, j) {
                    let (a, b) = (matrix.cpus()[i], matrix.cpus()[j]);
                    if member.get(&a) == member.get(&b) {
                        inside.push(v);
                    } else {
                        between.push(v);
                    }
                }
            }
        }
        // With one measured CPU per domain (one CPU per node, or `--cpus 0,80` across
        // two sockets) no pair lies inside a domain: there is nothing to compare the
        // between-domain latency with, so no claim either way.
        if inside.is_empty() {
            sentences.push(format!(
                "hwloc shows {} with one measured CPU each: no pair lies inside one, so latency cannot show whether they separate ({} between them)",
                count(h.groups.len(), h.singular, &h.plural),
                ns(numalab_stats::median(&between))
            ));
            continue;
        }
        sentences.push(format!(
            "hwloc shows {} but latency does not separate them: {} between vs {} inside",
            count(h.groups.len(), h.singular, &h.plural),
            ns(numalab_stats::median(&between)),
            ns(numalab_stats::median(&inside))
        ));
    }
    Comparison {
        level_names,
        sentences,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structure::{Confidence, Evidence, Group};

    fn machine_with(nodes: Vec<Vec<u32>>, cores: Vec<Vec<u32>>) -> Machine {
        let json = serde_json::json!({
            "schema_version": 1,
            "source": {"kind": "live"},
            "summary": {"packages": 1, "numa_nodes": nodes.len(), "cores": cores.len(), "pus": 0, "numa": []},
            "cpu": {},
            "packages": [{"os_index": 0, "subtype": null, "level": 0, "cpus": nodes.concat()}],
            "dies": [], "groups": [],
            "numa_nodes": nodes.iter().enumerate().map(|(i, c)| serde_json::json!({
                "os_index": i, "cpus": c, "has_cpus": true, "memory_bytes": 1, "subtype": null, "package": 0
            })).collect::<Vec<_>>(),
            "cores": cores.iter().map(|p| serde_json::json!({"os_index": null, "pus": p, "package": 0, "kind": null})).collect::<Vec<_>>(),
            "pus": [], "caches": [], "cpu_kinds": [], "distances": [], "memory_attributes": [],
            "frequencies": [], "page_sizes": [], "software": {}, "infos": {}
        });
        serde_json::from_value(json).unwrap()
    }

    fn level(groups: Vec<Vec<u32>>, intra: f64, inter: f64) -> Level {
        Level {
            groups: groups
                .into_iter()
                .map(|cpus| Group {
                    cpus,
                    intra_ns: Some(intra),
                    inter_ns: Some(inter),
                })
                .collect(),
            evidence: Evidence::Latency,
            separation: 2.0,
            intra_ns: Some(intra),
            inter_ns: Some(inter),
        }
    }

    #[test]
    fn one_node_but_two_latency_domains_is_a_finding() {
        let cpus: Vec<u32> = (0..8).collect();
        let m = LatencyMatrix::new(cpus.clone());
        let machine = machine_with(vec![cpus.clone()], cpus.iter().map(|&c| vec![c]).collect());
        let s = Structure {
            cpus,
            levels: vec![level(vec![(0..4).collect(), (4..8).collect()], 75.0, 150.0)],
            confidence: Confidence::High,
            notes: vec![],
            gradients: vec![],
        };
        let c = compare(&m, &s, &machine);
        assert_eq!(c.level_names, vec![None]);
        assert_eq!(
            c.sentences,
            vec!["hwloc shows 1 NUMA node but latency splits the 8 CPUs into 2 groups (2 x 4) at 150 ns between vs 75 ns inside".to_string()]
        );
    }

    #[test]
    fn matching_levels_get_hwloc_names_and_unseen_nodes_are_reported() {
        let cpus: Vec<u32> = (0..4).collect();
        let mut m = LatencyMatrix::new(cpus.clone());
        for i in 0..4 {
            for j in 0..i {
                m.set(i, j, if i / 2 == j / 2 { 10.0 } else { 50.0 });
            }
        }
        // Two nodes of 2 CPUs that latency does not see; cores of 2 SMT siblings it does.
        let machine = machine_with(vec![vec![0, 2], vec![1, 3]], vec![vec![0, 1], vec![2, 3]]);
        let s = Structure {
            cpus,
            levels: vec![level(vec![vec![0, 1], vec![2, 3]], 10.0, 50.0)],
            confidence: Confidence::High,
            notes: vec![],
            gradients: vec![],
        };
        let c = compare(&m, &s, &machine);
        assert_eq!(
            c.level_names,
            vec![Some("cores (SMT siblings)".to_string())]
        );
        assert_eq!(
            c.sentences,
            vec!["hwloc shows 2 NUMA nodes but latency does not separate them: 30 ns between vs 50 ns inside".to_string()]
        );
    }

    #[test]
    fn one_cpu_per_node_makes_no_claim_about_separation() {
        // Found in the multi-node guest (4 nodes of 1 CPU each): the sentence said
        // "latency does not separate them: 27 ns between vs ? ns inside" although no
        // pair inside a node existed to compare with.
        let cpus: Vec<u32> = (0..4).collect();
        let mut m = LatencyMatrix::new(cpus.clone());
        for i in 0..4 {
            for j in 0..i {
                m.set(i, j, 27.0);
            }
        }
        let machine = machine_with(
            vec![vec![0], vec![1], vec![2], vec![3]],
            cpus.iter().map(|&c| vec![c]).collect(),
        );
        let s = Structure {
            cpus,
            levels: vec![],
            confidence: Confidence::High,
            notes: vec![],
            gradients: vec![],
        };
        let c = compare(&m, &s, &machine);
        assert_eq!(
            c.sentences,
            vec!["hwloc shows 4 NUMA nodes with one measured CPU each: no pair lies inside one, so latency cannot show whether they separate (27 ns between them)".to_string()]
        );
        assert!(!c.sentences[0].contains('?'));
    }
}
