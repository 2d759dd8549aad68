//! A picture of a machine for reports: packages as boxes, their NUMA nodes inside
//! (CPUs, memory, technology), memory-only nodes apart; drawn by `numalab_chart` as a
//! box diagram.

use numalab_chart::{BoxDiagram, BoxGroup, BoxItem};
use numalab_schema::machine::{CacheKind, Machine};
use numalab_schema::{cpulist, units};

/// The last-level cache of these CPUs: "L3 32 MiB in 2 slice(s)".
fn llc(m: &Machine, cpus: &[u32]) -> Option<String> {
    let level = m
        .caches
        .iter()
        .filter(|c| c.kind == CacheKind::Unified)
        .map(|c| c.level)
        .max()?;
    let of: Vec<_> = m
        .caches
        .iter()
        .filter(|c| {
            c.level == level
                && c.kind == CacheKind::Unified
                && c.cpus.iter().any(|x| cpus.contains(x))
        })
        .collect();
    let total: u64 = of.iter().filter_map(|c| c.size_bytes).sum();
    Some(format!(
        "L{level} {} in {} slice(s)",
        units::bytes(total),
        of.len()
    ))
}

/// The machine as a box diagram: a group per package, its NUMA nodes with CPUs
/// inside, memory-only nodes apart.
pub fn diagram(m: &Machine) -> BoxDiagram {
    let node_line = |n: &numalab_schema::machine::NumaNode| {
        format!(
            "NUMA {}: {}{}",
            n.os_index,
            units::bytes(n.memory_bytes),
            n.subtype
                .as_ref()
                .map(|s| format!(" {s}"))
                .unwrap_or_default()
        )
    };
    let groups = (0..m.packages.len().max(1))
        .map(|p| {
            let cpus: Vec<u32> = m
                .packages
                .get(p)
                .map(|d| d.cpus.clone())
                .unwrap_or_else(|| m.pu_ids());
            let cores = m
                .cores
                .iter()
                .filter(|c| c.package == Some(p) || m.packages.is_empty())
                .count();
            BoxGroup {
                title: format!(
                    "Package {p}: {cores} cores, CPUs {}",
                    cpulist::format(&cpus)
                ),
                subtitle: llc(m, &cpus).unwrap_or_default(),
                items: m
                    .numa_nodes
                    .iter()
                    .filter(|n| n.has_cpus && n.package.unwrap_or(0) == p)
                    .map(|n| BoxItem {
                        lines: vec![node_line(n), format!("CPUs {}", cpulist::format(&n.cpus))],
                    })
                    .collect(),
            }
        })
        .collect();
    BoxDiagram {
        title: "topology".into(),
        groups,
        loose_title: "memory-only nodes".into(),
        loose: m
            .numa_nodes
            .iter()
            .filter(|n| !n.has_cpus)
            .map(|n| BoxItem {
                lines: vec![node_line(n)],
            })
            .collect(),
    }
}

/// The topology picture as SVG.
pub fn picture(m: &Machine) -> String {
    diagram(m).to_svg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_schema::machine::*;

    #[test]
    fn two_packages_and_a_memory_only_node() {
        let node = |os, cpus: Vec<u32>, package| NumaNode {
            os_index: os,
            has_cpus: !cpus.is_empty(),
            cpus,
            memory_bytes: 1 << 30,
            subtype: if os == 2 { Some("HBM".into()) } else { None },
            package,
        };
        let mut m = Machine {
            packages: vec![
                Domain {
                    os_index: Some(0),
                    subtype: None,
                    level: 0,
                    cpus: vec![0, 1],
                },
                Domain {
                    os_index: Some(1),
                    subtype: None,
                    level: 0,
                    cpus: vec![2, 3],
                },
            ],
            numa_nodes: vec![
                node(0, vec![0, 1], Some(0)),
                node(1, vec![2, 3], Some(1)),
                node(2, vec![], None),
            ],
            cores: (0..4)
                .map(|i| Core {
                    os_index: Some(i),
                    pus: vec![i],
                    package: Some(i as usize / 2),
                    kind: None,
                })
                .collect(),
            ..Machine::empty(MachineSource::Live)
        };
        m.compute_summary();
        let svg = picture(&m);
        assert!(svg.contains("Package 1: 2 cores, CPUs 2-3"));
        assert!(svg.contains("NUMA 1: 1 GiB"));
        assert!(svg.contains("memory-only nodes"));
        assert!(svg.contains("NUMA 2: 1 GiB HBM"));
    }
}
