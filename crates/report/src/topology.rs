//! A picture of a machine for reports: packages as boxes, their NUMA nodes inside
//! (CPUs, memory, technology), memory-only nodes apart, and the SLIT beside it.

use crate::escape;
use numalab_schema::machine::{CacheKind, Machine};
use numalab_schema::{cpulist, units};
use std::fmt::Write as _;

/// The topology picture as SVG.
pub fn picture(m: &Machine) -> String {
    let pkgs = m.packages.len().max(1);
    let box_w = 300.0;
    let gap = 20.0;
    let node_h = 46.0;
    let max_nodes = (0..pkgs)
        .map(|p| {
            m.numa_nodes
                .iter()
                .filter(|n| n.has_cpus && n.package.unwrap_or(0) == p)
                .count()
        })
        .max()
        .unwrap_or(1)
        .max(1);
    let memory_only: Vec<_> = m.numa_nodes.iter().filter(|n| !n.has_cpus).collect();
    let cols = pkgs.min(4);
    let rows = pkgs.div_ceil(cols);
    let pkg_h = 56.0 + max_nodes as f64 * (node_h + 8.0);
    let w = cols as f64 * (box_w + gap) + gap;
    let h = rows as f64 * (pkg_h + gap)
        + gap
        + if memory_only.is_empty() {
            0.0
        } else {
            node_h + 30.0
        };
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\"><title>topology</title>"
    );
    let l3 = |cpus: &[u32]| -> Option<String> {
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
    };
    for p in 0..pkgs {
        let x = gap + (p % cols) as f64 * (box_w + gap);
        let y = gap + (p / cols) as f64 * (pkg_h + gap);
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
        let _ = write!(
            out,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{box_w}\" height=\"{pkg_h:.1}\" rx=\"6\" fill=\"#f4f6fa\" stroke=\"#567\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-weight=\"600\">Package {p}: {cores} cores, CPUs {}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">{}</text>",
            x + 10.0,
            y + 18.0,
            escape(&cpulist::format(&cpus)),
            x + 10.0,
            y + 36.0,
            escape(&l3(&cpus).unwrap_or_default())
        );
        let nodes: Vec<_> = m
            .numa_nodes
            .iter()
            .filter(|n| n.has_cpus && n.package.unwrap_or(0) == p)
            .collect();
        for (i, n) in nodes.iter().enumerate() {
            let ny = y + 48.0 + i as f64 * (node_h + 8.0);
            let _ = write!(
                out,
                "<rect x=\"{:.1}\" y=\"{ny:.1}\" width=\"{:.1}\" height=\"{node_h}\" rx=\"4\" fill=\"#fff\" stroke=\"#89a\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\">NUMA {}: {}{}</text><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">CPUs {}</text>",
                x + 10.0,
                box_w - 20.0,
                x + 18.0,
                ny + 18.0,
                n.os_index,
                escape(&units::bytes(n.memory_bytes)),
                escape(&n.subtype.as_ref().map(|s| format!(" {s}")).unwrap_or_default()),
                x + 18.0,
                ny + 36.0,
                escape(&cpulist::format(&n.cpus))
            );
        }
    }
    if !memory_only.is_empty() {
        let y = h - node_h - 20.0;
        let _ = write!(
            out,
            "<text x=\"{gap}\" y=\"{:.1}\" fill=\"#555\">memory-only nodes</text>",
            y - 6.0
        );
        for (i, n) in memory_only.iter().enumerate() {
            let x = gap + i as f64 * 170.0;
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"160\" height=\"{node_h}\" rx=\"4\" fill=\"#fffbe8\" stroke=\"#a98\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\">NUMA {}: {}{}</text>",
                x + 8.0,
                y + 26.0,
                n.os_index,
                escape(&units::bytes(n.memory_bytes)),
                escape(&n.subtype.as_ref().map(|s| format!(" {s}")).unwrap_or_default())
            );
        }
    }
    out.push_str("</svg>");
    out
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
            schema_version: MACHINE_SCHEMA_VERSION,
            source: MachineSource::Live,
            summary: Summary {
                packages: 0,
                numa_nodes: 0,
                cores: 0,
                pus: 0,
                numa: vec![],
            },
            cpu: CpuIdentity::default(),
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
            dies: vec![],
            groups: vec![],
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
            pus: vec![],
            caches: vec![],
            cpu_kinds: vec![],
            distances: vec![],
            memory_attributes: vec![],
            frequencies: vec![],
            page_sizes: vec![],
            software: Software::default(),
            infos: Default::default(),
        };
        m.compute_summary();
        let svg = picture(&m);
        assert!(svg.contains("Package 1: 2 cores, CPUs 2-3"));
        assert!(svg.contains("NUMA 1: 1 GiB"));
        assert!(svg.contains("memory-only nodes"));
        assert!(svg.contains("NUMA 2: 1 GiB HBM"));
    }
}
