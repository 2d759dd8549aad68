//! The vocabulary of measured memory attributes: hwloc's predefined performance
//! attributes (node-to-node bandwidth and latency), their units, and a measured figure
//! for one node pair. Plain data: `numalab-topo` writes them into an hwloc topology
//! (`topo::memattrs`), `numalab-report` chooses them from a bundle's records.

use serde::{Deserialize, Serialize};

/// One of hwloc's predefined performance memory attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Attribute {
    /// Average of read and write bandwidth, MiB/s.
    Bandwidth,
    /// Read bandwidth, MiB/s.
    ReadBandwidth,
    /// Write bandwidth, MiB/s.
    WriteBandwidth,
    /// Average of read and write latency, ns.
    Latency,
    /// Read latency, ns.
    ReadLatency,
    /// Write latency, ns.
    WriteLatency,
}

impl Attribute {
    /// Every attribute.
    pub const ALL: [Attribute; 6] = [
        Attribute::Bandwidth,
        Attribute::ReadBandwidth,
        Attribute::WriteBandwidth,
        Attribute::Latency,
        Attribute::ReadLatency,
        Attribute::WriteLatency,
    ];

    /// hwloc's name ("Bandwidth", "ReadLatency", ...).
    pub fn name(self) -> &'static str {
        match self {
            Attribute::Bandwidth => "Bandwidth",
            Attribute::ReadBandwidth => "ReadBandwidth",
            Attribute::WriteBandwidth => "WriteBandwidth",
            Attribute::Latency => "Latency",
            Attribute::ReadLatency => "ReadLatency",
            Attribute::WriteLatency => "WriteLatency",
        }
    }

    /// The attribute of an hwloc name (any case).
    pub fn from_name(text: &str) -> Option<Attribute> {
        Attribute::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(text.trim()))
    }

    /// Whether it is a bandwidth (else a latency).
    pub fn is_bandwidth(self) -> bool {
        matches!(
            self,
            Attribute::Bandwidth | Attribute::ReadBandwidth | Attribute::WriteBandwidth
        )
    }

    /// The unit hwloc defines for it: "MiB/s" or "ns".
    pub fn hwloc_unit(self) -> &'static str {
        if self.is_bandwidth() {
            "MiB/s"
        } else {
            "ns"
        }
    }
}

impl std::fmt::Display for Attribute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The unit of a measured value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// GB/s, 10^9 bytes per second (numalab's and STREAM's bandwidth unit).
    GBps,
    /// MiB/s, 2^20 bytes per second (hwloc's bandwidth unit).
    MiBps,
    /// Nanoseconds (hwloc's latency unit).
    Ns,
}

impl Unit {
    /// Its symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::GBps => "GB/s",
            Unit::MiBps => "MiB/s",
            Unit::Ns => "ns",
        }
    }
}

/// A measured figure for one (initiator node, target node) pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredValue {
    /// OS index of the NUMA node whose CPUs accessed the memory.
    pub initiator_node: u32,
    /// OS index of the NUMA node holding the memory.
    pub target_node: u32,
    /// Which hwloc attribute it sets.
    pub attribute: Attribute,
    /// The value, in `unit`.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
    /// Where it comes from, in words (e.g. "measured, mem.bandwidth read, 8 threads").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A value as it was set in the topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetValue {
    /// hwloc attribute name.
    pub attribute: Attribute,
    /// OS index of the initiator node.
    pub initiator_node: u32,
    /// The initiator: the CPUs of the initiator node.
    pub initiator_cpus: Vec<u32>,
    /// OS index of the target node.
    pub target_node: u32,
    /// The value set, in `unit`.
    pub value: u64,
    /// hwloc's unit: "MiB/s" or "ns".
    pub unit: String,
    /// The value the topology held for this pair before (from the firmware's HMAT or
    /// an earlier export), now replaced.
    pub replaced: Option<u64>,
    /// Where the value comes from ([`MeasuredValue::source`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl SetValue {
    /// The value in a line: "Bandwidth node0 -> node1: 12,345 MiB/s (source)", and the
    /// value it replaced, if any.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} node{} -> node{}: {} {}",
            self.attribute,
            self.initiator_node,
            self.target_node,
            grouped(self.value),
            self.unit
        );
        if let Some(src) = &self.source {
            line.push_str(&format!(" ({src})"));
        }
        if let Some(old) = self.replaced {
            line.push_str(&format!(
                "; replaces {} {} already in the topology (firmware HMAT or an earlier export)",
                grouped(old),
                self.unit
            ));
        }
        line
    }
}

/// 12345 -> "12,345".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_value_reads_as_one_line_with_grouped_digits() {
        assert_eq!(grouped(5), "5");
        assert_eq!(grouped(123_456), "123,456");
        assert_eq!(grouped(1_234_567), "1,234,567");
        let mut v = SetValue {
            attribute: Attribute::Bandwidth,
            initiator_node: 0,
            initiator_cpus: vec![0, 1],
            target_node: 1,
            value: 12_345,
            unit: "MiB/s".into(),
            replaced: None,
            source: None,
        };
        assert_eq!(v.line(), "Bandwidth node0 -> node1: 12,345 MiB/s");
        v.source = Some("measured".into());
        v.replaced = Some(1000);
        assert_eq!(
            v.line(),
            "Bandwidth node0 -> node1: 12,345 MiB/s (measured); replaces 1,000 MiB/s already in the topology (firmware HMAT or an earlier export)"
        );
    }
}
