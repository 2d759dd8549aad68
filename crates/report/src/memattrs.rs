//! Which measured figures of a bundle become hwloc memory attributes
//! (`numalab topo --memattrs-from DIR --export-xml FILE`): the node-pair bandwidth and
//! idle latency matrices chosen by one rule each, and the check that the bundle was
//! measured on the machine whose topology receives them.

use crate::Loaded;
use numalab_records::mem::bandwidth::BandwidthRecord;
use numalab_records::mem::latency::{LatencyRecord, Load};
use numalab_schema::memattrs::{Attribute, MeasuredValue, Unit};
use numalab_schema::{Machine, Origin};
use std::path::Path;

/// `numalab topo`'s XML flags checked together, before anything is read: `--memattrs-from`
/// needs `--export-xml` (the file its values go into), and `--export-xml` saves this
/// machine's topology, so with `--input` only when `--memattrs-from` adds values to it.
/// The error is the usage message.
pub fn check_export_flags(
    input: Option<&Path>,
    export_xml: Option<&Path>,
    memattrs_from: Option<&Path>,
) -> Result<(), String> {
    match (memattrs_from, export_xml, input) {
        (Some(bundle), None, _) => Err(format!(
            "--memattrs-from {} needs --export-xml FILE: the measured values are written into that hwloc XML file",
            bundle.display()
        )),
        (None, Some(_), Some(input)) => Err(format!(
            "--export-xml saves this machine's topology and cannot be used with --input {} (that file already is one), unless --memattrs-from adds measured values to it",
            input.display()
        )),
        _ => Ok(()),
    }
}

/// The values (and notes) a bundle gives the topology `machine`, named `topo_name`: the
/// bundle's recorded topology ([`recorded_topology`]), its matrices chosen
/// ([`measured_values`]), and the check that both describe one machine
/// ([`same_machine`]), in that order.
pub fn values_for(
    bundle: &Loaded,
    bundle_name: &str,
    machine: &Machine,
    topo_name: &str,
) -> Result<(Vec<MeasuredValue>, Vec<String>), String> {
    let recorded = recorded_topology(bundle, bundle_name, topo_name)?;
    let found = measured_values(bundle, recorded, bundle_name)?;
    same_machine(recorded, bundle_name, machine, topo_name)?;
    Ok(found)
}

/// The topology a bundle recorded, to be matched with `topo_name` ([`same_machine`]);
/// a bundle of a numalab before 0.9 records none.
pub fn recorded_topology<'a>(
    bundle: &'a Loaded,
    bundle_name: &str,
    topo_name: &str,
) -> Result<&'a Machine, String> {
    bundle.bundle.envelope.host.topology.as_ref().ok_or_else(|| {
        format!("{bundle_name}: the bundle records no topology, so it cannot be matched with {topo_name}; measure again with numalab 0.9 or later")
    })
}

/// What `--export-xml` wrote: the file, how many values, from which bundle, and how to
/// use it.
pub fn exported(xml: &str, values: usize, bundle_name: &str) -> String {
    format!(
        "wrote {xml} with {values} measured memory attribute value(s) from {bundle_name}; use it with HWLOC_XMLFILE={xml} HWLOC_THISSYSTEM=1"
    )
}

/// Refuses a bundle measured on another machine than the topology describes: node
/// count, node OS indexes and their CPUs, CPU count.
pub fn same_machine(
    recorded: &Machine,
    bundle: &str,
    topo: &Machine,
    topo_name: &str,
) -> Result<(), String> {
    let shape = |m: &Machine| {
        let nodes: Vec<String> = m
            .numa_nodes
            .iter()
            .map(|n| n.os_index.to_string())
            .collect();
        format!(
            "{} NUMA node(s) ({}) and {} CPU(s)",
            m.numa_nodes.len(),
            nodes.join(", "),
            m.pus.len()
        )
    };
    let nodes = |m: &Machine| -> Vec<(u32, Vec<u32>)> {
        m.numa_nodes
            .iter()
            .map(|n| (n.os_index, n.cpus.clone()))
            .collect()
    };
    if recorded.pus.len() == topo.pus.len() && nodes(recorded) == nodes(topo) {
        return Ok(());
    }
    let missing: Vec<String> = recorded
        .numa_nodes
        .iter()
        .filter(|n| topo.node(n.os_index).is_none())
        .map(|n| n.os_index.to_string())
        .collect();
    let detail = if missing.is_empty() {
        String::new()
    } else {
        format!(
            "; its node(s) {} are not in {topo_name}",
            missing.join(", ")
        )
    };
    Err(format!(
        "{bundle} was measured on a machine with {} ({}), but {topo_name} has {}{detail}: measured values only fit the machine they were measured on; give that machine's topology with --input FILE.xml, or measure this one",
        shape(recorded),
        bundle_host(recorded),
        shape(topo),
    ))
}

/// The CPU model a machine description names.
fn bundle_host(m: &Machine) -> String {
    m.cpu
        .model_name
        .clone()
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The figures of the bundle's node-pair matrices, one per (attribute, node pair):
///
/// - Bandwidth: the read-only kernel where the matrix measured it, else triad
///   (STREAM-counted GB/s); the record with the most threads (all CPUs of the
///   initiator node, as `--matrix` runs it) and, among records of other ISAs, the
///   highest; its median over the timed rounds.
/// - ReadBandwidth: the read kernel, WriteBandwidth: the write kernel (plain stores,
///   STREAM-counted: bytes written), where measured; chosen the same way.
/// - Latency: the idle latency matrix of the headline page kind (the report's: huge
///   pages when every cell got them), the median at the largest working set of each
///   cell (DRAM, beyond the last-level cache).
pub fn measured_values(
    bundle: &Loaded,
    recorded: &Machine,
    name: &str,
) -> Result<(Vec<MeasuredValue>, Vec<String>), String> {
    let mut notes = Vec::new();
    let bw: Vec<BandwidthRecord> = bundle
        .records_of::<BandwidthRecord>()
        .into_iter()
        .filter(|(rec, r)| rec.origin == Origin::Measured && r.matrix.is_some())
        .map(|(_, r)| r)
        .collect();
    let lat: Vec<LatencyRecord> = bundle
        .records_of::<LatencyRecord>()
        .into_iter()
        .filter(|(rec, r)| {
            rec.origin == Origin::Measured && r.matrix.is_some() && r.kind().load == Load::Idle
        })
        .map(|(_, r)| r)
        .collect();
    if bw.is_empty() && lat.is_empty() {
        return Err(format!("{name}: no measured node-pair matrix (mem.bandwidth or mem.latency records with a node pair); run `numalab mem bandwidth --matrix --out DIR` first (and `numalab mem latency --matrix --out DIR`, or `numalab evaluate --out DIR`), then give DIR"));
    }
    let node_cpus = |node: u32| recorded.node(node).map_or(0, |n| n.cpus.len());
    let mut out = Vec::new();
    let kernels: Vec<String> = bw.iter().map(|r| r.kernel.name()).collect();
    let has = |k: &str| kernels.iter().any(|n| n == k);
    let mut plan: Vec<(Attribute, &str)> = Vec::new();
    if has("read") {
        plan.push((Attribute::Bandwidth, "read"));
        plan.push((Attribute::ReadBandwidth, "read"));
    } else if has("triad") {
        plan.push((Attribute::Bandwidth, "triad"));
    }
    if has("write") {
        plan.push((Attribute::WriteBandwidth, "write"));
    }
    if bw.is_empty() {
        notes.push(format!("{name} has no bandwidth matrix: Bandwidth not set (run `numalab mem bandwidth --matrix --out DIR`)"));
    } else if plan.is_empty() {
        let mut ks = kernels.clone();
        ks.sort();
        ks.dedup();
        return Err(format!("{name}: its bandwidth matrix measured {} but neither read nor triad, the kernels Bandwidth is taken from; run `numalab mem bandwidth --matrix --kernel read,triad --out DIR` first", ks.join(", ")));
    }
    for (attr, kernel) in plan {
        let mut pairs: Vec<(u32, u32)> = bw
            .iter()
            .filter(|r| r.kernel.name() == kernel)
            .filter_map(|r| r.matrix.map(|m| (m.cpu_node, m.mem_node)))
            .collect();
        pairs.sort();
        pairs.dedup();
        for (i, t) in pairs {
            let cell: Vec<&BandwidthRecord> = bw
                .iter()
                .filter(|r| {
                    r.kernel.name() == kernel
                        && r.matrix.is_some_and(|m| m.cpu_node == i && m.mem_node == t)
                })
                .collect();
            let most = cell.iter().map(|r| r.threads).max().unwrap_or(0);
            let Some(best) = cell
                .iter()
                .filter(|r| r.threads == most)
                .max_by(|a, b| a.bandwidth_gbps.median.total_cmp(&b.bandwidth_gbps.median))
            else {
                continue;
            };
            let cpus = node_cpus(i);
            let threads = if cpus > 0 && best.threads < cpus {
                format!("{} of node{i}'s {cpus} CPUs", best.threads)
            } else {
                format!("{} threads", best.threads)
            };
            out.push(MeasuredValue {
                initiator_node: i,
                target_node: t,
                attribute: attr,
                value: best.bandwidth_gbps.median,
                unit: Unit::GBps,
                source: Some(format!(
                    "measured, mem.bandwidth {kernel}, {threads}, median {:.1} GB/s",
                    best.bandwidth_gbps.median
                )),
            });
        }
    }
    if lat.is_empty() {
        notes.push(format!("{name} has no idle latency matrix: Latency not set (run `numalab mem latency --matrix --out DIR`)"));
    }
    let headline = crate::facts::headline_matrix(&lat);
    let mut seen = std::collections::BTreeSet::new();
    for r in headline {
        let Some(m) = r.matrix else { continue };
        let Some(p) = r.points.iter().max_by_key(|p| p.working_set_bytes) else {
            continue;
        };
        if !seen.insert((m.cpu_node, m.mem_node)) {
            continue;
        }
        let kind = r.kind();
        if let Some(llc) = kind.llc_bytes {
            if p.working_set_bytes <= llc {
                notes.push(format!(
                    "node{} -> node{}: the latency working set ({} bytes) fits the last-level cache ({llc} bytes): that Latency is not DRAM's",
                    m.cpu_node, m.mem_node, p.working_set_bytes
                ));
            }
        }
        out.push(MeasuredValue {
            initiator_node: m.cpu_node,
            target_node: m.mem_node,
            attribute: Attribute::Latency,
            value: p.latency_ns.median,
            unit: Unit::Ns,
            source: Some(format!(
                "measured, mem.latency idle, {}, median {:.1} ns",
                crate::facts::latency_kind_text(&kind, p.working_set_bytes),
                p.latency_ns.median
            )),
        });
    }
    Ok((out, notes))
}

#[cfg(test)]
mod export_tests {
    use super::*;

    #[test]
    fn a_bundle_without_topology_cannot_be_matched() {
        let bundle = numalab_schema::Bundle {
            schema_version: numalab_schema::record::SCHEMA_VERSION,
            envelope: numalab_schema::Envelope {
                schema_version: numalab_schema::record::SCHEMA_VERSION,
                tool: numalab_schema::record::Tool::this("0"),
                created_utc: "2026-01-01T00:00:00Z".into(),
                command: vec![],
                config: serde_json::Value::Null,
                origin: Origin::Measured,
                host: numalab_schema::record::Host::unknown("h"),
            },
            records: vec![],
        };
        let mut loaded = Loaded::from_bundle("b", bundle);
        let e = recorded_topology(&loaded, "old/", "this machine").unwrap_err();
        let here = Machine::empty(numalab_schema::machine::MachineSource::Live);
        assert_eq!(
            values_for(&loaded, "old/", &here, "this machine"),
            Err(e.clone())
        );
        // With a topology but no matrix, the missing matrix is said first.
        loaded.bundle.envelope.host.topology = Some(here.clone());
        let e2 = values_for(&loaded, "res/", &here, "this machine").unwrap_err();
        assert!(e2.starts_with("res/: no measured node-pair matrix"), "{e2}");
        assert!(
            e.starts_with(
                "old/: the bundle records no topology, so it cannot be matched with this machine;"
            ),
            "{e}"
        );
        assert_eq!(
            exported("m.xml", 4, "res/"),
            "wrote m.xml with 4 measured memory attribute value(s) from res/; use it with HWLOC_XMLFILE=m.xml HWLOC_THISSYSTEM=1"
        );
    }

    #[test]
    fn xml_flags_are_checked_together() {
        let (b, x, i) = (Path::new("res/"), Path::new("m.xml"), Path::new("t.xml"));
        assert_eq!(check_export_flags(None, None, None), Ok(()));
        assert_eq!(check_export_flags(Some(i), Some(x), Some(b)), Ok(()));
        assert_eq!(check_export_flags(None, Some(x), None), Ok(()));
        let e = check_export_flags(Some(i), None, Some(b)).unwrap_err();
        assert_eq!(e, "--memattrs-from res/ needs --export-xml FILE: the measured values are written into that hwloc XML file");
        let e = check_export_flags(Some(i), Some(x), None).unwrap_err();
        assert!(e.starts_with("--export-xml saves this machine's topology and cannot be used with --input t.xml (that file"), "{e}");
    }
}
