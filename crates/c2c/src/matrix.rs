//! The core-to-core latency matrix and the plan of which pairs to measure.
//!
//! A [`LatencyMatrix`] is what every other module exchanges: CPU ids (OS indices) and a
//! symmetric table of half round-trip latencies in ns, with holes where a pair was not
//! measured (sampled runs, a run stopped early, bad cells of an imported file). The
//! [`Plan`] decides which pairs a run measures: every pair, or on big machines every pair
//! inside each cache/cluster group plus a stratified sample of pairs across groups, so
//! that a 256-PU machine finishes in minutes while the structure stays visible.

use numalab_schema::machine::CacheKind;
use numalab_schema::Machine;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use numalab_records::c2c::{LatencyMatrix, Selection};

/// One pair to measure, by CPU id (`first` runs the first thread and, by default, owns the
/// cache line's memory node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Pair {
    /// CPU of the thread that starts each round trip.
    pub first: u32,
    /// CPU of the thread that answers.
    pub second: u32,
}

/// The pairs a run measures, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The CPUs, ascending.
    pub cpus: Vec<u32>,
    /// How pairs were chosen.
    pub selection: Selection,
    /// The pairs (first > second by position in `cpus`, as in the CSV's lower triangle).
    pub pairs: Vec<Pair>,
}

impl Plan {
    /// Every pair of `cpus`.
    pub fn full(cpus: &[u32]) -> Plan {
        let mut cpus = cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        let mut pairs = Vec::new();
        for i in 0..cpus.len() {
            for j in 0..i {
                pairs.push(Pair {
                    first: cpus[i],
                    second: cpus[j],
                });
            }
        }
        Plan {
            cpus,
            selection: Selection::Full,
            pairs,
        }
    }

    /// Every pair inside each group plus, between every two groups, `per_group_pair`
    /// pairs drawn without replacement (seeded), with each CPU used as evenly as
    /// possible so that every CPU's view of every other group is sampled. CPUs of `cpus`
    /// in no group form singleton groups.
    pub fn sampled(
        cpus: &[u32],
        groups: &[Vec<u32>],
        grouped_by: &str,
        per_group_pair: usize,
        seed: u64,
    ) -> Plan {
        let mut cpus = cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        let pos: BTreeMap<u32, usize> = cpus.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        // Keep only the chosen CPUs, one group per CPU (first group wins).
        let mut seen = BTreeMap::new();
        let mut kept: Vec<Vec<u32>> = Vec::new();
        for g in groups {
            let members: Vec<u32> = g
                .iter()
                .copied()
                .filter(|c| pos.contains_key(c) && !seen.contains_key(c))
                .collect();
            if members.is_empty() {
                continue;
            }
            for &c in &members {
                seen.insert(c, kept.len());
            }
            kept.push(members);
        }
        for &c in &cpus {
            if let std::collections::btree_map::Entry::Vacant(e) = seen.entry(c) {
                e.insert(kept.len());
                kept.push(vec![c]);
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut set = std::collections::BTreeSet::new();
        for g in &kept {
            for (a, &x) in g.iter().enumerate() {
                for &y in &g[..a] {
                    set.insert(ordered(&pos, x, y));
                }
            }
        }
        for a in 0..kept.len() {
            for b in 0..a {
                let (ga, gb) = (&kept[a], &kept[b]);
                let all = ga.len() * gb.len();
                let k = per_group_pair.min(all);
                if k == all {
                    for &x in ga {
                        for &y in gb {
                            set.insert(ordered(&pos, x, y));
                        }
                    }
                    continue;
                }
                // Stratified: walk both groups in shuffled orders, so each member of
                // each group appears about k / |group| times.
                let mut sa = ga.clone();
                let mut sb = gb.clone();
                sa.shuffle(&mut rng);
                sb.shuffle(&mut rng);
                let mut chosen = std::collections::BTreeSet::new();
                let mut t = 0usize;
                while chosen.len() < k {
                    let x = sa[t % sa.len()];
                    // Offset by t / |sa| so repeated passes meet new partners.
                    let y = sb[(t + t / sa.len()) % sb.len()];
                    chosen.insert(ordered(&pos, x, y));
                    t += 1;
                    if t > 4 * all {
                        break;
                    }
                }
                set.extend(chosen);
            }
        }
        let pairs = set.into_iter().map(|(_, p)| p).collect();
        Plan {
            cpus,
            selection: Selection::Sampled {
                groups: kept,
                grouped_by: grouped_by.to_string(),
                per_group_pair,
                seed,
            },
            pairs,
        }
    }

    /// Number of pairs of a full run over the same CPUs.
    pub fn full_pairs(&self) -> usize {
        self.cpus.len() * self.cpus.len().saturating_sub(1) / 2
    }
}

/// A pair with the larger position first, keyed by positions so plans run in a stable
/// (row-major, lower-triangle) order.
fn ordered(pos: &BTreeMap<u32, usize>, x: u32, y: u32) -> ((usize, usize), Pair) {
    let (px, py) = (pos[&x], pos[&y]);
    if px > py {
        (
            (px, py),
            Pair {
                first: x,
                second: y,
            },
        )
    } else {
        (
            (py, px),
            Pair {
                first: y,
                second: x,
            },
        )
    }
}

/// The groups whose inside pairs a sampled run measures in full: hwloc clusters if any,
/// else the instances of the largest cache shared by several cores, else NUMA nodes.
pub fn sampling_groups(machine: &Machine) -> (Vec<Vec<u32>>, String) {
    let innermost = machine.groups.iter().map(|g| g.level).max();
    if let Some(level) = innermost {
        let g: Vec<Vec<u32>> = machine
            .groups
            .iter()
            .filter(|g| g.level == level)
            .map(|g| g.cpus.clone())
            .collect();
        if g.len() > 1 {
            return (g, "hwloc group".into());
        }
    }
    let shared = machine
        .caches
        .iter()
        .filter(|c| {
            c.kind != CacheKind::MemorySide
                && c.kind != CacheKind::Instruction
                && machine
                    .cores
                    .iter()
                    .filter(|core| core.pus.iter().any(|p| c.cpus.contains(p)))
                    .count()
                    > 1
        })
        .map(|c| c.level)
        .min();
    if let Some(level) = shared {
        let g: Vec<Vec<u32>> = machine
            .caches
            .iter()
            .filter(|c| c.level == level && c.kind != CacheKind::Instruction)
            .map(|c| c.cpus.clone())
            .collect();
        return (g, format!("L{level} cache"));
    }
    (
        machine
            .numa_nodes
            .iter()
            .filter(|n| n.has_cpus)
            .map(|n| n.cpus.clone())
            .collect(),
        "NUMA node".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_rows_averages_both_triangles_and_keeps_holes() {
        let rows = vec![
            vec![None, Some(10.0), None],
            vec![Some(12.0), None, None],
            vec![Some(30.0), None, None],
        ];
        let m = LatencyMatrix::from_rows(vec![0, 1, 2], &rows);
        assert_eq!(m.get(0, 1), Some(11.0));
        assert_eq!(m.get(2, 0), Some(30.0));
        assert_eq!(m.get(1, 2), None);
        assert_eq!(m.get(1, 1), None);
        assert_eq!(m.measured_pairs(), 2);
        assert_eq!(m.total_pairs(), 3);
        let sub = m.select(&[2, 0]);
        assert_eq!(sub.cpus(), &[2, 0]);
        assert_eq!(sub.get(0, 1), Some(30.0));
    }

    #[test]
    fn full_plan_is_the_lower_triangle() {
        let p = Plan::full(&[3, 1, 2, 1]);
        assert_eq!(p.cpus, vec![1, 2, 3]);
        assert_eq!(
            p.pairs,
            vec![
                Pair {
                    first: 2,
                    second: 1
                },
                Pair {
                    first: 3,
                    second: 1
                },
                Pair {
                    first: 3,
                    second: 2
                }
            ]
        );
        assert_eq!(p.full_pairs(), 3);
    }

    fn fixture_machine(name: &str) -> Machine {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/topology")
            .join(name);
        numalab_topo::machine(&numalab_topo::Input::detect(&path).unwrap()).unwrap()
    }

    #[test]
    fn sampling_groups_follow_clusters_then_shared_caches() {
        // Kunpeng 920 snapshot: 32 clusters of 4 cores (hwloc groups).
        let m = fixture_machine("128arm-2pa2n8cluster4co.tar.bz2");
        let (g, by) = sampling_groups(&m);
        assert_eq!(by, "hwloc group");
        assert_eq!(g.len(), 32);
        assert!(g.iter().all(|g| g.len() == 4));
        // Dual EPYC 7763 (SMT off in this file): no groups; L3 shared by 8 cores per CCD.
        let m = fixture_machine("AMD-19h-Zen3-2xEpyc-7763.xml");
        let (g, by) = sampling_groups(&m);
        assert_eq!(by, "L3 cache");
        assert_eq!(g.len(), 16);
        assert!(g.iter().all(|g| g.len() == 8));
        let p = Plan::sampled(&m.pu_ids(), &g, &by, 4, 1);
        assert_eq!(p.pairs.len(), 16 * 28 + 120 * 4);
        assert!(
            p.pairs.len() < p.full_pairs() / 8,
            "{} of {}",
            p.pairs.len(),
            p.full_pairs()
        );
    }

    #[test]
    fn sampled_plan_covers_groups_and_samples_across_evenly() {
        let cpus: Vec<u32> = (0..64).collect();
        let groups: Vec<Vec<u32>> = (0..8).map(|g| (g * 8..g * 8 + 8).collect()).collect();
        let p = Plan::sampled(&cpus, &groups, "L3 cache", 8, 7);
        // 8 groups x 28 inside pairs + 28 group pairs x 8 samples.
        assert_eq!(p.pairs.len(), 8 * 28 + 28 * 8);
        let same = |a: u32, b: u32| a / 8 == b / 8;
        let inside = p.pairs.iter().filter(|q| same(q.first, q.second)).count();
        assert_eq!(inside, 8 * 28);
        // Every CPU meets every other group exactly once (8 samples over 8 members).
        for c in 0..64u32 {
            for g in 0..8u32 {
                if g == c / 8 {
                    continue;
                }
                let n = p
                    .pairs
                    .iter()
                    .filter(|q| {
                        (q.first == c && q.second / 8 == g) || (q.second == c && q.first / 8 == g)
                    })
                    .count();
                assert_eq!(n, 1, "cpu {c} group {g}");
            }
        }
        // Deterministic for a seed, different for another.
        assert_eq!(p, Plan::sampled(&cpus, &groups, "L3 cache", 8, 7));
        assert_ne!(
            p.pairs,
            Plan::sampled(&cpus, &groups, "L3 cache", 8, 8).pairs
        );
        // Lower-triangle orientation.
        assert!(p.pairs.iter().all(|q| q.first > q.second));
    }
}
