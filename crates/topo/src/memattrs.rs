//! Measured memory attributes for hwloc consumers: node-to-node bandwidth and latency
//! written into a topology as hwloc memory attributes (`Bandwidth`, `ReadBandwidth`,
//! `WriteBandwidth` in MiB/s; `Latency`, `ReadLatency`, `WriteLatency` in ns), exported
//! by hwloc as XML that runtimes load with `HWLOC_XMLFILE=FILE HWLOC_THISSYSTEM=1`.
//!
//! The initiator of a value is the cpuset of the initiator NUMA node; the target is the
//! NUMA node object with the target's OS index. A value already in the topology for
//! the same initiator cpuset and target (from the firmware's HMAT) is replaced, and the
//! export says which ([`SetValue::replaced`]). Values are converted to hwloc's units
//! and rounded to integers; a value that is not finite, not positive, rounds to 0 or
//! does not fit in 64 bits is an error, never clamped.
//!
//! hwlocality 1.0.0-alpha.13 sets values only on attributes it registers itself
//! (`MemoryAttributeBuilder::set_values`): hwloc's predefined attributes cannot be
//! written through it. The values are therefore set with hwloc's own
//! `hwloc_memattr_set_value` (through `hwlocality-sys`) on a copy of the topology
//! imported from the XML hwlocality exports, and hwloc writes the resulting XML.
//! Reading them back ([`value`], [`initiators`]) uses hwlocality's memory attribute
//! API.

use crate::error::TopoError;
use crate::hwloc_ffi::Raw;
use crate::load::Loaded;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::attribute::{Initiator, MemoryAttribute};
use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;
use hwlocality::Topology;
use hwlocality_sys as sys;

pub use numalab_schema::memattrs::{Attribute, MeasuredValue, SetValue, Unit};

/// hwloc's id of `attribute`.
fn id(attribute: Attribute) -> sys::hwloc_memattr_id_t {
    match attribute {
        Attribute::Bandwidth => sys::HWLOC_MEMATTR_ID_BANDWIDTH,
        Attribute::ReadBandwidth => sys::HWLOC_MEMATTR_ID_READ_BANDWIDTH,
        Attribute::WriteBandwidth => sys::HWLOC_MEMATTR_ID_WRITE_BANDWIDTH,
        Attribute::Latency => sys::HWLOC_MEMATTR_ID_LATENCY,
        Attribute::ReadLatency => sys::HWLOC_MEMATTR_ID_READ_LATENCY,
        Attribute::WriteLatency => sys::HWLOC_MEMATTR_ID_WRITE_LATENCY,
    }
}

/// hwlocality's handle of `attribute` in `topology`.
fn handle(attribute: Attribute, topology: &Topology) -> MemoryAttribute<'_> {
    match attribute {
        Attribute::Bandwidth => MemoryAttribute::bandwidth(topology),
        Attribute::ReadBandwidth => MemoryAttribute::read_bandwidth(topology),
        Attribute::WriteBandwidth => MemoryAttribute::write_bandwidth(topology),
        Attribute::Latency => MemoryAttribute::latency(topology),
        Attribute::ReadLatency => MemoryAttribute::read_latency(topology),
        Attribute::WriteLatency => MemoryAttribute::write_latency(topology),
    }
}

/// hwloc XML carrying measured memory attributes, and what was set.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    /// The XML, written by hwloc (v2 format).
    pub xml: String,
    /// Every value set, in the order given.
    pub values: Vec<SetValue>,
}

/// Converts a value to hwloc's unit of `attribute` (MiB/s or ns), rounded to the
/// nearest integer. Refuses a unit that does not fit the attribute and a value that is
/// not finite, not positive, rounds to 0 or does not fit in 64 bits.
pub fn to_hwloc(attribute: Attribute, value: f64, unit: Unit) -> Result<u64, String> {
    let scaled = match (attribute.is_bandwidth(), unit) {
        (true, Unit::GBps) => value * 1e9 / (1u64 << 20) as f64,
        (true, Unit::MiBps) | (false, Unit::Ns) => value,
        (true, Unit::Ns) | (false, Unit::GBps | Unit::MiBps) => {
            return Err(format!(
                "{attribute} is in {}, not {}",
                attribute.hwloc_unit(),
                unit.symbol()
            ))
        }
    };
    if !scaled.is_finite() || scaled <= 0.0 {
        return Err(format!(
            "{attribute} value {value} {} is not a positive number",
            unit.symbol()
        ));
    }
    let rounded = scaled.round();
    // 2^64 is exactly representable; anything at or above it does not fit.
    if rounded >= 18_446_744_073_709_551_616.0 {
        return Err(format!(
            "{attribute} value {value} {} is {scaled:e} {}, more than hwloc's 64-bit values hold",
            unit.symbol(),
            attribute.hwloc_unit()
        ));
    }
    if rounded < 1.0 {
        return Err(format!(
            "{attribute} value {value} {} rounds to 0 {}; hwloc's values are integers",
            unit.symbol(),
            attribute.hwloc_unit()
        ));
    }
    Ok(rounded as u64)
}

fn what(loaded: &Loaded) -> String {
    match &loaded.source {
        numalab_schema::machine::MachineSource::Live => "this machine".into(),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.get("path").and_then(|p| p.as_str()).map(String::from))
            .unwrap_or_else(|| "the topology".into()),
    }
}

fn hwloc_err(loaded: &Loaded, call: &str) -> TopoError {
    TopoError::Hwloc {
        what: what(loaded),
        detail: format!("{call} failed ({})", std::io::Error::last_os_error()),
        remedy: "report this as a bug".into(),
    }
}

/// The NUMA nodes of a topology by OS index.
fn numa_nodes(topology: &Topology) -> Vec<(u32, &TopologyObject)> {
    topology
        .objects_with_type(ObjectType::NUMANode)
        .filter_map(|o| Some((o.os_index()? as u32, o)))
        .collect()
}

fn cpus(set: &CpuSet) -> Vec<u32> {
    set.iter_set().map(|i| usize::from(i) as u32).collect()
}

/// Returns `loaded`'s topology as hwloc XML with `values` set as hwloc memory
/// attributes: for each value, the initiator is the cpuset of the initiator NUMA node
/// and the target the NUMA node with that OS index, the value converted to hwloc's unit
/// ([`to_hwloc`]). A value the topology held for the same initiator cpuset and target
/// is replaced ([`SetValue::replaced`]).
///
/// Errors: a node missing from the topology, an initiator node without CPUs, two values
/// for the same attribute and pair, a value that does not convert, and a value hwloc
/// would not answer with afterwards (the topology holds one for a wider initiator
/// cpuset that shadows it).
pub fn export_xml(loaded: &Loaded, values: &[MeasuredValue]) -> Result<Export, TopoError> {
    let topology = &loaded.topology;
    let bad = |reason: String| TopoError::Selection(format!("{}: {reason}", what(loaded)));
    let nodes = numa_nodes(topology);
    let machine = crate::describe::describe(loaded);
    let node_list = nodes
        .iter()
        .map(|(os, _)| os.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut seen = std::collections::BTreeSet::new();
    let mut converted = Vec::with_capacity(values.len());
    for v in values {
        for (role, node) in [("initiator", v.initiator_node), ("target", v.target_node)] {
            if !nodes.iter().any(|(os, _)| *os == node) {
                return Err(bad(format!(
                    "{} node{} -> node{}: {role} NUMA node {node} is not in this topology (its nodes: {node_list})",
                    v.attribute, v.initiator_node, v.target_node
                )));
            }
        }
        if !seen.insert((v.attribute, v.initiator_node, v.target_node)) {
            return Err(bad(format!(
                "two {} values for node{} -> node{}",
                v.attribute, v.initiator_node, v.target_node
            )));
        }
        // numalab's view of the node's CPUs (a memory-only node has none, although
        // hwloc gives it the cpuset of the CPUs it is attached near).
        let init_cpus = machine
            .node(v.initiator_node)
            .map(|n| n.cpus.clone())
            .unwrap_or_default();
        if init_cpus.is_empty() {
            return Err(bad(format!(
                "{} node{} -> node{}: NUMA node {} has no CPUs, so it cannot be an initiator",
                v.attribute, v.initiator_node, v.target_node, v.initiator_node
            )));
        }
        let value = to_hwloc(v.attribute, v.value, v.unit).map_err(|e| {
            bad(format!(
                "{} node{} -> node{}: {e}",
                v.attribute, v.initiator_node, v.target_node
            ))
        })?;
        converted.push(SetValue {
            attribute: v.attribute,
            initiator_node: v.initiator_node,
            initiator_cpus: init_cpus,
            target_node: v.target_node,
            value,
            unit: v.attribute.hwloc_unit().into(),
            replaced: None,
            source: v.source.clone(),
        });
    }

    let xml = topology
        .export_xml(hwlocality::topology::export::xml::XMLExportFlags::empty())
        .map_err(|e| TopoError::Hwloc {
            what: what(loaded),
            detail: e.to_string(),
            remedy: "report this as a bug".into(),
        })?;
    let raw = Raw::from_xml(xml.as_str()).map_err(|detail| TopoError::Hwloc {
        what: what(loaded),
        detail,
        remedy: "report this as a bug".into(),
    })?;
    for s in &mut converted {
        let (Some(init), Some(target)) = (raw.node(s.initiator_node), raw.node(s.target_node))
        else {
            return Err(bad(format!(
                "NUMA node {} or {} vanished when hwloc re-imported the topology",
                s.initiator_node, s.target_node
            )));
        };
        s.replaced = raw.get(id(s.attribute), init, target);
        if raw.set(id(s.attribute), init, target, s.value) != 0 {
            return Err(hwloc_err(
                loaded,
                &format!(
                    "hwloc_memattr_set_value({} node{} -> node{})",
                    s.attribute, s.initiator_node, s.target_node
                ),
            ));
        }
    }
    // Every value must be what hwloc now answers for the node's cpuset.
    for s in &converted {
        let (Some(init), Some(target)) = (raw.node(s.initiator_node), raw.node(s.target_node))
        else {
            continue;
        };
        let now = raw.get(id(s.attribute), init, target);
        if now != Some(s.value) {
            return Err(bad(format!(
                "{} node{} -> node{}: hwloc answers {} instead of the value set ({} {}): the topology holds a value for a wider initiator (CPUs including node{}'s) that shadows it; export the topology without memory attributes (e.g. from a snapshot) and try again",
                s.attribute,
                s.initiator_node,
                s.target_node,
                now.map_or("nothing".into(), |v| v.to_string()),
                s.value,
                s.unit,
                s.initiator_node
            )));
        }
    }
    let xml = raw.export().map_err(|detail| TopoError::Hwloc {
        what: what(loaded),
        detail,
        remedy: "report this as a bug".into(),
    })?;
    Ok(Export {
        xml,
        values: converted,
    })
}

/// The value of `attribute` hwloc gives for initiator CPUs `initiator_cpus` and the
/// NUMA node with OS index `target_node` (hwlocality's `MemoryAttribute::value`).
pub fn value(
    topology: &Topology,
    attribute: Attribute,
    initiator_cpus: &[u32],
    target_node: u32,
) -> Result<Option<u64>, TopoError> {
    let target = numa_nodes(topology)
        .into_iter()
        .find(|(os, _)| *os == target_node)
        .map(|(_, o)| o)
        .ok_or_else(|| TopoError::Selection(format!("no NUMA node {target_node}")))?;
    let mut set = CpuSet::new();
    for &c in initiator_cpus {
        set.set(c as usize);
    }
    handle(attribute, topology)
        .value(Some(Initiator::from(set)), target)
        .map_err(|e| TopoError::Selection(format!("{attribute} of node {target_node}: {e}")))
}

/// Every (initiator CPUs, value) pair hwloc holds for `attribute` and the NUMA node with
/// OS index `target_node` (hwlocality's `MemoryAttribute::initiators`).
pub fn initiators(
    topology: &Topology,
    attribute: Attribute,
    target_node: u32,
) -> Result<Vec<(Vec<u32>, u64)>, TopoError> {
    let target = numa_nodes(topology)
        .into_iter()
        .find(|(os, _)| *os == target_node)
        .map(|(_, o)| o)
        .ok_or_else(|| TopoError::Selection(format!("no NUMA node {target_node}")))?;
    let (inits, values) = handle(attribute, topology)
        .initiators(target)
        .map_err(|e| TopoError::Selection(format!("{attribute} of node {target_node}: {e}")))?;
    Ok(inits
        .into_iter()
        .zip(values)
        .map(|(i, v)| {
            let c = match i {
                Initiator::CpuSet(s) => cpus(&s),
                Initiator::Object(o) => o.cpuset().map(|s| cpus(&s)).unwrap_or_default(),
            };
            (c, v)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_and_round() {
        // 1 GB/s = 10^9 / 2^20 MiB/s = 953.674... MiB/s.
        assert_eq!(to_hwloc(Attribute::Bandwidth, 1.0, Unit::GBps), Ok(954));
        assert_eq!(to_hwloc(Attribute::Bandwidth, 12.5, Unit::GBps), Ok(11921));
        assert_eq!(
            to_hwloc(Attribute::ReadBandwidth, 100.4, Unit::MiBps),
            Ok(100)
        );
        assert_eq!(to_hwloc(Attribute::Latency, 87.5, Unit::Ns), Ok(88));
        assert!(to_hwloc(Attribute::Latency, 1.0, Unit::GBps).is_err());
        assert!(to_hwloc(Attribute::Bandwidth, 1.0, Unit::Ns).is_err());
        assert!(to_hwloc(Attribute::Latency, f64::NAN, Unit::Ns).is_err());
        assert!(to_hwloc(Attribute::Latency, -3.0, Unit::Ns).is_err());
        assert!(to_hwloc(Attribute::Latency, 0.4, Unit::Ns).is_err());
        assert!(to_hwloc(Attribute::Latency, 1.9e19, Unit::Ns).is_err());
        assert!(to_hwloc(Attribute::Bandwidth, 2e16, Unit::GBps).is_err());
        assert_eq!(
            to_hwloc(Attribute::Latency, 1.8e19, Unit::Ns),
            Ok(18_000_000_000_000_000_000)
        );
    }

    #[test]
    fn names_round_trip() {
        for a in Attribute::ALL {
            assert_eq!(Attribute::from_name(a.name()), Some(a));
        }
        assert_eq!(Attribute::from_name("latency"), Some(Attribute::Latency));
    }
}
