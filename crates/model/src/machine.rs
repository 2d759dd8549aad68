//! The modeled machine in the schema's [`Machine`] form (`source: model`), so a modeled
//! bundle's envelope describes its machine the way a measured one does, and `report` /
//! `compare` can put them side by side. PU numbering follows Linux on such machines: the
//! first hardware thread of every core, then the second, and so on.

use crate::latency;
use crate::model::Model;
use numalab_schema::machine::{
    Cache, CacheKind, Core, CpuIdentity, DistanceMatrix, Domain, FrequencyDomain, Machine,
    MachineSource, NumaNode, PageSize, Pu,
};
use numalab_schema::record::Host;
use std::collections::BTreeMap;

/// The machine description of a model.
pub fn describe(model: &Model) -> Machine {
    let n_cores = model.cores.len() as u32;
    let threads = model.spec.cores.threads_per_core;
    let pu_of = |core: u32, t: u32| t * n_cores + core;
    let sockets = model.geo.sockets;
    let packages: Vec<Domain> = (0..sockets)
        .map(|k| Domain {
            os_index: Some(k),
            subtype: None,
            level: 0,
            cpus: cpus(model, |c| model.cores[c].socket == k, threads),
        })
        .collect();
    // One group per stop with cores (tile, crosspoint).
    let mut stops: Vec<u32> = model.cores.iter().map(|c| c.stop).collect();
    stops.dedup();
    let groups: Vec<Domain> = stops
        .iter()
        .map(|&s| Domain {
            os_index: None,
            subtype: Some("Tile".into()),
            level: 0,
            cpus: cpus(model, |c| model.cores[c].stop == s, threads),
        })
        .collect();
    let numa_nodes: Vec<NumaNode> = model
        .nodes
        .iter()
        .map(|n| NumaNode {
            os_index: n.id,
            cpus: cpus(model, |c| n.cores.contains(&c), threads),
            has_cpus: !n.cores.is_empty(),
            memory_bytes: n.memory_bytes,
            subtype: Some(model.pools[n.pool].kind.clone()),
            package: Some(n.socket as usize),
        })
        .collect();
    let cores: Vec<Core> = (0..n_cores)
        .map(|c| Core {
            os_index: Some(c),
            pus: (0..threads).map(|t| pu_of(c, t)).collect(),
            package: Some(model.cores[c as usize].socket as usize),
            kind: Some(0),
        })
        .collect();
    let mut pus: Vec<Pu> = Vec::new();
    for t in 0..threads {
        for c in 0..n_cores {
            let ci = &model.cores[c as usize];
            pus.push(Pu {
                os_index: pu_of(c, t),
                core: Some(c as usize),
                package: Some(ci.socket as usize),
                die: None,
                numa_node: Some(ci.node),
                siblings: (0..threads)
                    .filter(|&u| u != t)
                    .map(|u| pu_of(c, u))
                    .collect(),
            });
        }
    }
    let line = model.spec.cores.line_bytes;
    let mut caches: Vec<Cache> = (0..n_cores)
        .map(|c| Cache {
            level: 2,
            kind: CacheKind::Unified,
            size_bytes: Some(model.spec.cores.l2_bytes),
            line_bytes: Some(line),
            ways: None,
            cpus: (0..threads).map(|t| pu_of(c, t)).collect(),
        })
        .collect();
    if model.spec.slc.bytes > 0 {
        for p in &packages {
            caches.push(Cache {
                level: 3,
                kind: CacheKind::Unified,
                size_bytes: Some(model.spec.slc.bytes),
                line_bytes: Some(line),
                ways: None,
                cpus: p.cpus.clone(),
            });
        }
    }
    if let Some(cp) = model.cache_pool {
        for p in &packages {
            caches.push(Cache {
                level: 4,
                kind: CacheKind::MemorySide,
                size_bytes: Some(model.pools[cp].capacity_bytes),
                line_bytes: Some(line),
                ways: None,
                cpus: p.cpus.clone(),
            });
        }
    }
    let mut infos = BTreeMap::new();
    infos.insert("ModelPreset".to_string(), model.label.clone());
    infos.insert(
        "ModelDescription".to_string(),
        model.spec.description.clone(),
    );
    let khz = (model.spec.cores.clock_ghz * 1e6).round() as u64;
    let mut m = Machine {
        cpu: CpuIdentity {
            model_name: Some(format!("modeled: {}", model.spec.description)),
            ..Default::default()
        },
        packages,
        groups,
        numa_nodes,
        cores,
        pus,
        caches,
        distances: vec![node_distances(model)],
        frequencies: vec![FrequencyDomain {
            cpus: (0..n_cores * threads).collect(),
            min_khz: None,
            max_khz: Some(khz),
            base_khz: Some(khz),
            current_khz: None,
            governor: None,
            origin: "model preset".into(),
        }],
        page_sizes: vec![PageSize {
            size_bytes: 4096,
            pool_pages: None,
        }],
        infos,
        ..Machine::empty(MachineSource::Model {
            preset: model.label.clone(),
        })
    };
    m.compute_summary();
    m
}

fn cpus(model: &Model, pick: impl Fn(usize) -> bool, threads: u32) -> Vec<u32> {
    let n = model.cores.len() as u32;
    let mut v: Vec<u32> = (0..threads)
        .flat_map(|t| (0..n).filter(|&c| pick(c as usize)).map(move |c| t * n + c))
        .collect();
    v.sort_unstable();
    v
}

/// Modeled node distances in SLIT style: mean zero-load read latency from a node's cores
/// to its own memory = 10; others scaled. Memory-only nodes are reached from the CPU
/// node whose region holds them (their row is that node's).
fn node_distances(model: &Model) -> DistanceMatrix {
    let n = model.nodes.len();
    let lat = |from: usize, to: usize| -> f64 {
        let src = if model.nodes[from].cores.is_empty() {
            // A memory-only node's "initiator": the CPU node sharing its slices.
            model
                .cpu_nodes()
                .find(|c| c.slices == model.nodes[from].slices)
                .unwrap_or(&model.nodes[0])
        } else {
            &model.nodes[from]
        };
        let t = &model.nodes[to];
        let mut sum = 0.0;
        let mut k = 0.0;
        for &c in &src.cores {
            for (i, &m) in t.mcs.iter().enumerate() {
                let home = t
                    .slices
                    .get(i % t.slices.len().max(1))
                    .copied()
                    .unwrap_or(0);
                sum += latency::memory_read_cycles(
                    model,
                    model.cores[c].stop,
                    model.slices[home].stop,
                    m,
                );
                k += 1.0;
            }
        }
        sum / k
    };
    let values: Vec<Vec<u64>> = (0..n)
        .map(|i| {
            let own = lat(i, i);
            (0..n)
                .map(|j| (10.0 * lat(i, j) / own).round() as u64)
                .collect()
        })
        .collect();
    DistanceMatrix {
        name: Some("ModeledLatency".into()),
        from_os: false,
        means: "latency".into(),
        nodes: model.nodes.iter().map(|n| n.id).collect(),
        values,
    }
}

/// The envelope's host for a modeled run.
pub fn host(model: &Model) -> Host {
    let m = describe(model);
    Host {
        hostname: None,
        cpu_model: m.cpu.model_name.clone(),
        kernel: None,
        governor: None,
        smt: Some(
            if model.spec.cores.threads_per_core > 1 {
                "on"
            } else {
                "notsupported"
            }
            .into(),
        ),
        hypervisor: None,
        container: None,
        topology_hash: m.topology_hash(),
        topology: Some(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knl_description_has_four_threads_per_core_and_mcdram_node() {
        let model = Model::load("knl-7210", &[]).unwrap();
        let m = describe(&model);
        assert_eq!(m.summary.cores, 64);
        assert_eq!(m.summary.pus, 256);
        assert_eq!(m.pus[64].os_index, 64);
        assert_eq!(m.pus[64].core, Some(0));
        assert_eq!(m.numa_nodes[1].subtype.as_deref(), Some("MCDRAM"));
        assert!(!m.numa_nodes[1].has_cpus);
        assert_eq!(
            m.source,
            MachineSource::Model {
                preset: "knl-7210".into()
            }
        );
        let d = &m.distances[0];
        assert_eq!(d.values[0][0], 10);
    }

    #[test]
    fn two_sockets_have_remote_distances_above_local() {
        let model = Model::load("altra-q80-2s", &[]).unwrap();
        let m = describe(&model);
        assert_eq!(m.summary.packages, 2);
        assert_eq!(m.summary.numa[1].cpus.first(), Some(&80));
        let d = &m.distances[0].values;
        assert_eq!(d[0][0], 10);
        assert!(d[0][1] > 10, "{d:?}");
        // Different presets, different hashes; same preset, same hash.
        let again = describe(&Model::load("altra-q80-2s", &[]).unwrap());
        assert_eq!(m.topology_hash(), again.topology_hash());
        assert_ne!(
            m.topology_hash(),
            describe(&Model::load("altra-q80", &[]).unwrap()).topology_hash()
        );
    }
}
