//! Turns an hwloc topology into numalab's [`Machine`] description.
//!
//! Every structural fact comes from hwloc. Only what hwloc does not provide is read
//! from sysfs: cpufreq ranges and governors (from the live system or the snapshot's
//! copy of `/sys`).

use crate::load::{runtime_hwloc_version, Loaded};
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::attribute::{Initiator, MemoryAttributeFlags};
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::distance::DistancesKind;
use hwlocality::object::types::{CacheType, ObjectType};
use hwlocality::object::TopologyObject;
use hwlocality::Topology;
use numalab_schema::identity::{cpuinfo_number, implementer_vendor};
use numalab_schema::machine::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Describes a loaded topology.
pub fn describe(loaded: &Loaded) -> Machine {
    let topo = &loaded.topology;
    let root = topo.root_object();
    let info = |key: &str| -> Option<String> {
        root.info(key)
            .map(|v| v.to_string_lossy().trim().to_string())
            .filter(|s| !s.is_empty())
    };

    let packages: Vec<Domain> = topo
        .objects_with_type(ObjectType::Package)
        .map(|o| domain(o, 0))
        .collect();
    let dies: Vec<Domain> = topo
        .objects_with_type(ObjectType::Die)
        .map(|o| domain(o, 0))
        .collect();
    let groups = collect_groups(topo);

    let package_of = |cpus: &[u32]| -> Option<usize> {
        let first = *cpus.first()?;
        packages.iter().position(|p| p.cpus.contains(&first))
    };

    // hwloc gives a NUMA node the cpuset of the object it hangs from: its locality,
    // which is what `cpus` holds. A memory-only node (HBM, MCDRAM, NVM, CXL, or a
    // CPU-less node hwloc attached next to its nearest CPU node) shares or exceeds a CPU
    // node's locality, while Linux lists each CPU under one node only. A PU belongs to
    // the node with the smallest locality holding it, DRAM before other memory kinds,
    // then the lowest OS index; a node to which no PU belongs is memory-only.
    let mut numa_nodes: Vec<NumaNode> = topo
        .objects_with_type(ObjectType::NUMANode)
        .map(|o| {
            let cpus = cpus_of(o);
            let memory_bytes = match o.attributes() {
                Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map_or(0, |m| m.get()),
                _ => 0,
            };
            NumaNode {
                os_index: o.os_index().unwrap_or(0) as u32,
                has_cpus: !cpus.is_empty(),
                package: package_of(&cpus).or_else(|| {
                    o.first_ancestor_with_type(ObjectType::Package)
                        .and_then(|p| {
                            packages
                                .iter()
                                .position(|q| q.os_index == p.os_index().map(|i| i as u32))
                        })
                }),
                cpus,
                memory_bytes,
                subtype: o.subtype().map(|s| s.to_string_lossy().to_string()),
            }
        })
        .collect();
    let owner_of = |nodes: &[NumaNode], pu: u32| -> Option<u32> {
        nodes
            .iter()
            .filter(|n| n.cpus.contains(&pu))
            .min_by_key(|n| {
                let dram = n.subtype.as_deref().is_none_or(|s| s == "DRAM");
                (n.cpus.len(), !dram, n.os_index)
            })
            .map(|n| n.os_index)
    };
    let owns: Vec<bool> = numa_nodes
        .iter()
        .map(|n| {
            n.cpus
                .iter()
                .any(|&p| owner_of(&numa_nodes, p) == Some(n.os_index))
        })
        .collect();
    for (n, owns) in numa_nodes.iter_mut().zip(owns) {
        n.has_cpus = owns;
    }
    numa_nodes.sort_by_key(|n| n.os_index);

    let cpu_kinds = collect_cpu_kinds(topo);
    let kind_of = |cpus: &[u32]| -> Option<usize> {
        let first = *cpus.first()?;
        cpu_kinds.iter().position(|k| k.cpus.contains(&first))
    };

    let cores: Vec<Core> = topo
        .objects_with_type(ObjectType::Core)
        .map(|o| {
            let pus = cpus_of(o);
            Core {
                os_index: o.os_index().map(|i| i as u32),
                package: package_of(&pus),
                kind: if cpu_kinds.len() > 1 {
                    kind_of(&pus)
                } else {
                    None
                },
                pus,
            }
        })
        .collect();

    let mut pus: Vec<Pu> = topo
        .objects_with_type(ObjectType::PU)
        .map(|o| {
            let id = o.os_index().unwrap_or(0) as u32;
            let core = cores.iter().position(|c| c.pus.contains(&id));
            let siblings = core
                .map(|c| cores[c].pus.iter().copied().filter(|&p| p != id).collect())
                .unwrap_or_default();
            // The node a thread on this PU allocates from: the node it belongs to if
            // that has memory, else the first node with memory whose locality holds it.
            let numa_node = owner_of(&numa_nodes, id)
                .filter(|o| {
                    numa_nodes
                        .iter()
                        .any(|n| n.os_index == *o && n.memory_bytes > 0)
                })
                .or_else(|| {
                    numa_nodes
                        .iter()
                        .filter(|n| n.cpus.contains(&id) && n.memory_bytes > 0)
                        .min_by_key(|n| n.os_index)
                        .map(|n| n.os_index)
                });
            Pu {
                os_index: id,
                core,
                package: packages.iter().position(|p| p.cpus.contains(&id)),
                die: dies.iter().position(|d| d.cpus.contains(&id)),
                numa_node,
                siblings,
            }
        })
        .collect();
    pus.sort_by_key(|p| p.os_index);

    let caches = collect_caches(topo);
    let distances = collect_distances(topo);
    let memory_attributes = collect_memory_attributes(topo);
    let page_sizes = collect_page_sizes(topo);

    let mut frequencies = loaded
        .fsroot
        .as_deref()
        .map(|root| cpufreq_domains(root, &pus.iter().map(|p| p.os_index).collect::<Vec<_>>()))
        .unwrap_or_default();
    if frequencies.is_empty() {
        frequencies = frequencies_from_cpu_kinds(&cpu_kinds);
    }

    let mut cpu = cpu_identity(topo);
    if let Some(root) = loaded.fsroot.as_deref() {
        fill_from_cpuinfo(&mut cpu, root);
    }
    // Arm kernels report no model name: the cores' names come from the MIDR table.
    if cpu.model_name.is_none() {
        cpu.model_name = arm_model_name(&cpu, &cpu_kinds, loaded.fsroot.as_deref());
    }

    let mut infos = BTreeMap::new();
    for i in root.infos() {
        let k = i.name().to_string_lossy().to_string();
        // Volatile facts about the process that ran hwloc do not describe the machine.
        if matches!(k.as_str(), "ProcessName" | "LinuxCgroup" | "Backend") {
            continue;
        }
        infos.insert(k, i.value().to_string_lossy().trim().to_string());
    }

    let software = Software {
        os_name: info("OSName"),
        kernel: info("OSRelease"),
        hwloc: info("hwlocVersion")
            .or_else(|| matches!(loaded.source, MachineSource::Live).then(runtime_hwloc_version)),
        hostname: info("HostName"),
    };

    let mut m = Machine {
        schema_version: MACHINE_SCHEMA_VERSION,
        source: loaded.source.clone(),
        summary: Summary {
            packages: 0,
            numa_nodes: 0,
            cores: 0,
            pus: 0,
            numa: Vec::new(),
        },
        cpu,
        packages,
        dies,
        groups,
        numa_nodes,
        cores,
        pus,
        caches,
        cpu_kinds,
        distances,
        memory_attributes,
        frequencies,
        page_sizes,
        software,
        infos,
    };
    m.compute_summary();
    m
}

fn cpus_of(o: &TopologyObject) -> Vec<u32> {
    o.cpuset().map(|s| set_to_vec(&s)).unwrap_or_default()
}

fn set_to_vec(s: &CpuSet) -> Vec<u32> {
    s.iter_set().map(|i| usize::from(i) as u32).collect()
}

fn domain(o: &TopologyObject, level: u32) -> Domain {
    Domain {
        os_index: o.os_index().map(|i| i as u32),
        subtype: o.subtype().map(|s| s.to_string_lossy().to_string()),
        level,
        cpus: cpus_of(o),
    }
}

fn collect_groups(topo: &Topology) -> Vec<Domain> {
    // Groups can sit at several depths; level 0 is the outermost.
    let mut groups: Vec<(usize, Domain)> = topo
        .objects_with_type(ObjectType::Group)
        .map(|o| {
            let depth = match o.attributes() {
                Some(ObjectAttributes::Group(g)) => g.depth(),
                _ => 0,
            };
            (depth, domain(o, 0))
        })
        .collect();
    let mut depths: Vec<usize> = groups.iter().map(|(d, _)| *d).collect();
    depths.sort_unstable();
    depths.dedup();
    for (d, g) in &mut groups {
        g.level = depths.iter().position(|x| x == d).unwrap_or(0) as u32;
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

fn collect_caches(topo: &Topology) -> Vec<Cache> {
    let mut out = Vec::new();
    for o in topo.objects_with_type(ObjectType::MemCache) {
        let (size, line, depth) = match o.attributes() {
            Some(ObjectAttributes::Cache(c)) => (
                c.size().map(|s| s.get()),
                c.line_size().map(|l| l.get() as u32),
                c.depth() as u32,
            ),
            _ => (None, None, 0),
        };
        out.push(Cache {
            level: depth,
            kind: CacheKind::MemorySide,
            size_bytes: size,
            line_bytes: line,
            ways: None,
            cpus: cpus_of(o),
        });
    }
    for ty in [
        ObjectType::L1Cache,
        ObjectType::L1ICache,
        ObjectType::L2Cache,
        ObjectType::L2ICache,
        ObjectType::L3Cache,
        ObjectType::L3ICache,
        ObjectType::L4Cache,
        ObjectType::L5Cache,
    ] {
        for o in topo.objects_with_type(ty) {
            let Some(ObjectAttributes::Cache(c)) = o.attributes() else {
                continue;
            };
            let kind = match c.cache_type() {
                CacheType::Data => CacheKind::Data,
                CacheType::Instruction => CacheKind::Instruction,
                _ => CacheKind::Unified,
            };
            let ways = match c.associativity() {
                hwlocality::object::attributes::CacheAssociativity::Full => Some(0),
                hwlocality::object::attributes::CacheAssociativity::Ways(w) => Some(w.get() as u32),
                _ => None,
            };
            out.push(Cache {
                level: c.depth() as u32,
                kind,
                size_bytes: c.size().map(|s| s.get()),
                line_bytes: c.line_size().map(|l| l.get() as u32),
                ways,
                cpus: cpus_of(o),
            });
        }
    }
    out
}

fn collect_cpu_kinds(topo: &Topology) -> Vec<CpuKind> {
    let Ok(kinds) = topo.cpu_kinds() else {
        return Vec::new();
    };
    kinds
        .map(|k| CpuKind {
            cpus: set_to_vec(&k.cpuset),
            efficiency: k.efficiency.map(|e| e as u32),
            infos: k
                .infos
                .iter()
                .map(|i| {
                    (
                        i.name().to_string_lossy().to_string(),
                        i.value().to_string_lossy().to_string(),
                    )
                })
                .collect(),
        })
        .collect()
}

fn collect_distances(topo: &Topology) -> Vec<DistanceMatrix> {
    let Ok(all) = topo.distances(None) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in all {
        let objs: Vec<Option<&TopologyObject>> = d.objects().collect();
        // numalab describes distances between NUMA nodes only.
        if objs
            .iter()
            .any(|o| o.is_none_or(|o| o.object_type() != ObjectType::NUMANode))
        {
            continue;
        }
        let nodes: Vec<u32> = objs
            .iter()
            .map(|o| o.and_then(|o| o.os_index()).unwrap_or(0) as u32)
            .collect();
        let n = nodes.len();
        let flat = d.distances();
        let values: Vec<Vec<u64>> = (0..n).map(|i| flat[i * n..(i + 1) * n].to_vec()).collect();
        let kind = d.kind();
        out.push(DistanceMatrix {
            name: d.name().map(|s| s.to_string_lossy().to_string()),
            from_os: kind.contains(DistancesKind::FROM_OS),
            means: if kind.contains(DistancesKind::MEANS_BANDWIDTH) {
                "bandwidth".into()
            } else {
                "latency".into()
            },
            nodes,
            values,
        });
    }
    out
}

fn collect_memory_attributes(topo: &Topology) -> Vec<MemoryAttribute> {
    let specs = [
        ("Bandwidth", "MiB/s"),
        ("ReadBandwidth", "MiB/s"),
        ("WriteBandwidth", "MiB/s"),
        ("Latency", "ns"),
        ("ReadLatency", "ns"),
        ("WriteLatency", "ns"),
    ];
    let nodes: Vec<&TopologyObject> = topo.objects_with_type(ObjectType::NUMANode).collect();
    let mut out = Vec::new();
    for (name, unit) in specs {
        let Ok(Some(attr)) = topo.memory_attribute_named(name) else {
            continue;
        };
        let flags = attr.flags();
        let mut values = Vec::new();
        for node in &nodes {
            let target = node.os_index().unwrap_or(0) as u32;
            if flags.contains(MemoryAttributeFlags::NEED_INITIATOR) {
                let Ok((initiators, vals)) = attr.initiators(node) else {
                    continue;
                };
                for (init, value) in initiators.iter().zip(vals) {
                    let cpus = match init {
                        Initiator::CpuSet(set) => set_to_vec(set),
                        Initiator::Object(o) => cpus_of(o),
                    };
                    values.push(MemoryAttributeValue {
                        initiator_cpus: Some(cpus),
                        target_node: target,
                        value,
                    });
                }
            } else if let Ok(Some(value)) = attr.value(None, node) {
                values.push(MemoryAttributeValue {
                    initiator_cpus: None,
                    target_node: target,
                    value,
                });
            }
        }
        if !values.is_empty() {
            out.push(MemoryAttribute {
                name: name.into(),
                unit: unit.into(),
                higher_is_better: flags.contains(MemoryAttributeFlags::HIGHER_IS_BEST),
                values,
            });
        }
    }
    out
}

fn collect_page_sizes(topo: &Topology) -> Vec<PageSize> {
    let mut pools: BTreeMap<u64, u64> = BTreeMap::new();
    for o in topo.objects_with_type(ObjectType::NUMANode) {
        if let Some(ObjectAttributes::NUMANode(a)) = o.attributes() {
            for t in a.page_types() {
                *pools.entry(t.size().get()).or_default() += t.count();
            }
        }
    }
    let base = pools.keys().next().copied();
    pools
        .into_iter()
        .map(|(size, count)| PageSize {
            size_bytes: size,
            // hwloc reports the base page with a count of 0; only huge pages have pools.
            pool_pages: (Some(size) != base || count > 0).then_some(count),
        })
        .collect()
}

fn cpu_identity(topo: &Topology) -> CpuIdentity {
    // hwloc puts CPU infos on packages (x86, Linux /proc/cpuinfo) or on the root.
    let mut sources: Vec<&TopologyObject> = topo.objects_with_type(ObjectType::Package).collect();
    sources.push(topo.root_object());
    let get = |key: &str| -> Option<String> {
        sources
            .iter()
            .find_map(|o| o.info(key))
            .map(|v| v.to_string_lossy().trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let implementer = get("CPUImplementer").and_then(|v| cpuinfo_number(&v));
    let vendor = get("CPUVendor").or_else(|| implementer.map(implementer_vendor));
    CpuIdentity {
        architecture: get("Architecture"),
        vendor,
        model_name: get("CPUModel"),
        family: get("CPUFamilyNumber").and_then(|v| cpuinfo_number(&v)),
        model: get("CPUModelNumber").and_then(|v| cpuinfo_number(&v)),
        stepping: get("CPUStepping").and_then(|v| cpuinfo_number(&v)),
        implementer,
        part: get("CPUPart").and_then(|v| cpuinfo_number(&v)),
        variant: get("CPUVariant").and_then(|v| cpuinfo_number(&v)),
        revision: get("CPURevision").and_then(|v| cpuinfo_number(&v)),
    }
}

/// hwloc 2.9 does not report Arm MIDR fields for snapshots read on another
/// architecture; `/proc/cpuinfo` of the snapshot (or of this machine) has them.
/// Only fields hwloc left empty are filled.
fn fill_from_cpuinfo(cpu: &mut CpuIdentity, root: &Path) {
    let Ok(text) = std::fs::read_to_string(root.join("proc/cpuinfo")) else {
        return;
    };
    // The first processor block.
    let block = crate::cpuinfo::first(&text);
    let field = |name: &str| block.field(name).map(str::to_string);
    if cpu.implementer.is_none() {
        cpu.implementer = field("CPU implementer").and_then(|v| cpuinfo_number(&v));
        if cpu.implementer.is_some() {
            cpu.part = field("CPU part").and_then(|v| cpuinfo_number(&v));
            cpu.variant = field("CPU variant").and_then(|v| cpuinfo_number(&v));
            cpu.revision = field("CPU revision").and_then(|v| cpuinfo_number(&v));
            if cpu.vendor.is_none() {
                cpu.vendor = cpu.implementer.map(implementer_vendor);
            }
        }
    }
    if cpu.model_name.is_none() {
        cpu.model_name = field("model name");
    }
}

/// The name of an Arm CPU from numalab's MIDR table ([`numalab_schema::midr`]), with
/// every kind of core of chips that mix them (NVIDIA GB10: 10 Cortex-X925 and 10
/// Cortex-A725), in this order of sources: hwloc's CPU kinds when they carry a
/// `CPUPart` each, the processors of `/proc/cpuinfo` under `root`, the identity's own
/// MIDR fields. None if the CPU is not Arm.
fn arm_model_name(cpu: &CpuIdentity, kinds: &[CpuKind], root: Option<&Path>) -> Option<String> {
    // (MIDR fields, number of CPUs) per kind, in order of first appearance.
    let mut found: Vec<(CpuIdentity, usize)> = Vec::new();
    let mut add = |id: CpuIdentity, n: usize| match found.iter_mut().find(|(f, _)| *f == id) {
        Some((_, count)) => *count += n,
        None => found.push((id, n)),
    };
    let with_parts: Vec<&CpuKind> = kinds
        .iter()
        .filter(|k| k.infos.contains_key("CPUPart"))
        .collect();
    if with_parts.len() > 1 {
        for k in with_parts {
            let num = |key: &str| k.infos.get(key).and_then(|v| cpuinfo_number(v));
            add(
                CpuIdentity {
                    implementer: num("CPUImplementer").or(cpu.implementer),
                    part: num("CPUPart"),
                    variant: num("CPUVariant").or(cpu.variant),
                    revision: num("CPURevision").or(cpu.revision),
                    ..Default::default()
                },
                k.cpus.len(),
            );
        }
    } else if let Some(text) =
        root.and_then(|r| std::fs::read_to_string(r.join("proc/cpuinfo")).ok())
    {
        for block in crate::cpuinfo::blocks(&text) {
            let field = |name: &str| block.field(name).and_then(cpuinfo_number);
            if let (Some(implementer), Some(part)) = (field("CPU implementer"), field("CPU part")) {
                add(
                    CpuIdentity {
                        implementer: Some(implementer),
                        part: Some(part),
                        variant: field("CPU variant"),
                        revision: field("CPU revision"),
                        ..Default::default()
                    },
                    1,
                );
            }
        }
    }
    match found.len() {
        0 => cpu.arm_name(),
        1 => found[0].0.arm_name(),
        _ => Some(
            found
                .iter()
                .filter_map(|(id, n)| Some(format!("{n} x {}", id.arm_name()?)))
                .collect::<Vec<_>>()
                .join(" + "),
        ),
    }
}

fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// cpufreq settings per CPU, grouped into domains of CPUs with equal values.
pub fn cpufreq_domains(root: &Path, cpus: &[u32]) -> Vec<FrequencyDomain> {
    let mut domains: Vec<FrequencyDomain> = Vec::new();
    for &cpu in cpus {
        let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cpufreq"));
        if !dir.is_dir() {
            continue;
        }
        let num = |f: &str| read_trim(&dir.join(f)).and_then(|v| v.parse::<u64>().ok());
        let d = FrequencyDomain {
            cpus: vec![cpu],
            min_khz: num("scaling_min_freq").or_else(|| num("cpuinfo_min_freq")),
            max_khz: num("scaling_max_freq").or_else(|| num("cpuinfo_max_freq")),
            base_khz: num("base_frequency"),
            current_khz: num("scaling_cur_freq"),
            governor: read_trim(&dir.join("scaling_governor")),
            origin: "cpufreq".into(),
        };
        match domains.iter_mut().find(|x| {
            x.min_khz == d.min_khz
                && x.max_khz == d.max_khz
                && x.base_khz == d.base_khz
                && x.governor == d.governor
        }) {
            Some(x) => {
                x.cpus.push(cpu);
                // Current frequency differs per CPU; keep the highest seen.
                x.current_khz = x.current_khz.max(d.current_khz);
            }
            None => domains.push(d),
        }
    }
    domains
}

fn frequencies_from_cpu_kinds(kinds: &[CpuKind]) -> Vec<FrequencyDomain> {
    kinds
        .iter()
        .filter_map(|k| {
            let mhz = |key: &str| {
                k.infos
                    .get(key)
                    .and_then(|v| v.parse::<u64>().ok())
                    .map(|v| v * 1000)
            };
            let max = mhz("FrequencyMaxMHz");
            let base = mhz("FrequencyBaseMHz");
            (max.is_some() || base.is_some()).then(|| FrequencyDomain {
                cpus: k.cpus.clone(),
                min_khz: None,
                max_khz: max,
                base_khz: base,
                current_khz: None,
                governor: None,
                origin: "hwloc cpukinds".into(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpuinfo_root(block: &str, cpus: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc")).unwrap();
        let text: String = (0..cpus)
            .map(|i| format!("processor\t: {i}\n{block}\n"))
            .collect();
        std::fs::write(dir.path().join("proc/cpuinfo"), text).unwrap();
        dir
    }

    #[test]
    fn arm_cpus_are_named_from_cpuinfo() {
        // The emulated Neoverse N1 guest (QEMU -cpu neoverse-n1), 4 CPUs.
        let n1 = "BogoMIPS\t: 125.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0c\nCPU revision\t: 1\n";
        let d = cpuinfo_root(n1, 4);
        let mut cpu = CpuIdentity::default();
        fill_from_cpuinfo(&mut cpu, d.path());
        assert_eq!(cpu.vendor.as_deref(), Some("Arm"));
        assert_eq!(
            arm_model_name(&cpu, &[], Some(d.path())).as_deref(),
            Some("Arm Neoverse N1 (MIDR 0x414fd0c1, r4p1)")
        );
        // Without cpuinfo, from the identity hwloc gave.
        assert_eq!(
            arm_model_name(&cpu, &[], None).as_deref(),
            Some("Arm Neoverse N1 (MIDR 0x414fd0c1, r4p1)")
        );
        // Several parts, a known and an unknown one.
        for (part, name) in [
            ("0xd49", "Arm Neoverse N2 (MIDR 0x410fd490, r0p0)"),
            ("0xd40", "Arm Neoverse V1 (MIDR 0x410fd400, r0p0)"),
            ("0xd4f", "Arm Neoverse V2 (MIDR 0x410fd4f0, r0p0)"),
            (
                "0xd99",
                "Arm part 0xd99 (unknown to numalab; MIDR 0x410fd990, r0p0)",
            ),
        ] {
            let d = cpuinfo_root(
                &format!("CPU implementer\t: 0x41\nCPU variant\t: 0x0\nCPU part\t: {part}\nCPU revision\t: 0\n"),
                2,
            );
            assert_eq!(
                arm_model_name(&CpuIdentity::default(), &[], Some(d.path())).as_deref(),
                Some(name)
            );
        }
        // x86: no name from the table.
        let d = cpuinfo_root("vendor_id\t: GenuineIntel\nmodel name\t: Xeon\n", 2);
        assert_eq!(
            arm_model_name(&CpuIdentity::default(), &[], Some(d.path())),
            None
        );
    }
}
