//! From decoded SMBIOS structures (and the NUMA nodes) to a [`MemConfig`]: devices to
//! sockets and channels, channels to peaks, peaks to sockets and nodes.

mod channels;
mod devices;
mod node_peaks;
mod peaks;
mod remarks;
mod sockets;

use crate::locator::{self, Placement};
use crate::nodes::{merge, NodeTopology};
use crate::smbios::{self, Decoded, MemoryDeviceRaw};
use numalab_records::memconfig::{AddressRange, MemConfig, MemoryArray, SmbiosSource};
use std::collections::{BTreeMap, BTreeSet};

/// What the reading step hands over.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// Where it came from.
    pub source: SmbiosSource,
    /// The decoded structures.
    pub decoded: Decoded,
    /// Notes from reading and walking the table.
    pub notes: Vec<String>,
    /// Whether the table walk stopped early (truncated or corrupt table).
    pub cut: bool,
    /// Whether the end-of-table structure (type 127) was met (true for sources that
    /// have none, such as per-structure files).
    pub ended: bool,
}

/// The NUMA nodes, or why they are unknown.
pub type Nodes<'a> = Result<&'a NodeTopology, String>;

/// Lists at most four items, then how many more.
fn list(items: &[String]) -> String {
    const SHOWN: usize = 4;
    if items.len() <= SHOWN {
        items.join(", ")
    } else {
        format!(
            "{} and {} more",
            items[..SHOWN].join(", "),
            items.len() - SHOWN
        )
    }
}

/// Devices that share one remark, rendered as one sentence at the end.
#[derive(Default)]
struct Issues(BTreeMap<&'static str, Vec<String>>);

impl Issues {
    fn add(&mut self, kind: &'static str, who: String) {
        let v = self.0.entry(kind).or_default();
        if !v.contains(&who) {
            v.push(who);
        }
    }

    /// The devices as a subject, with "reports"/"report" and "is"/"are" to agree.
    fn get(&self, kind: &str) -> Option<(String, &'static str, &'static str)> {
        self.0.get(kind).map(|v| {
            if v.len() == 1 {
                (list(v), "reports", "is")
            } else {
                (list(v), "report", "are")
            }
        })
    }
}

/// A name for each device in sentences and channel ids: its locator, with the bank
/// locator when the locator repeats (AMD boards call every channel's first slot
/// `DIMM 0`), with the handle when that still repeats or there is none.
fn names(devices: &[MemoryDeviceRaw]) -> Vec<String> {
    let count = |v: &[String], x: &str| v.iter().filter(|y| y.as_str() == x).count();
    let locs: Vec<String> = devices
        .iter()
        .map(|x| x.locator.clone().unwrap_or_default())
        .collect();
    let with_bank: Vec<String> = devices
        .iter()
        .zip(&locs)
        .map(
            |(x, l)| match x.bank_locator.as_deref().filter(|b| !b.is_empty()) {
                Some(b) if count(&locs, l) > 1 => format!("{l} ({b})"),
                _ => l.clone(),
            },
        )
        .collect();
    devices
        .iter()
        .zip(&with_bank)
        .map(|(x, l)| {
            if l.is_empty() {
                format!("device {:#06x}", x.handle)
            } else if count(&with_bank, l) > 1 {
                format!("{l} [{:#06x}]", x.handle)
            } else {
                l.clone()
            }
        })
        .collect()
}

/// What every step after the arrays shares: the table, which devices count, their names
/// and where the locators put them.
struct Table<'a> {
    /// The decoded structures.
    d: &'a Decoded,
    /// Populated processors SMBIOS lists.
    populated_cpus: u32,
    /// Arrays not used as system memory (video, flash, cache ...).
    non_system: BTreeSet<u16>,
    /// Per device: whether it belongs to system memory.
    counts: Vec<bool>,
    /// The indices of the devices that count.
    counted: Vec<usize>,
    /// Per device: its name in sentences and channel ids.
    names: Vec<String>,
    /// Per device: what its locators say.
    placements: Vec<Placement>,
}

/// Builds the record.
pub fn analyse(p: Parsed, nodes: Nodes<'_>) -> MemConfig {
    let d = &p.decoded;
    let mut cfg = MemConfig {
        source: p.source,
        ..MemConfig::default()
    };
    cfg.source.system = d.system.clone();
    cfg.source.skipped += d.skipped;
    cfg.notes.extend(p.notes);
    cfg.notes.extend(d.notes.iter().cloned());
    let mut issues = Issues::default();

    let populated_cpus = d.processors.iter().filter(|x| x.populated).count() as u32;
    cfg.processors = (!d.processors.is_empty()).then_some(populated_cpus);

    arrays(&mut cfg, d);
    let t = table(&mut cfg, d, populated_cpus);
    let sk = sockets::attribute(&mut cfg, &t);
    devices::records(&mut cfg, &t, &sk, &mut issues);
    let accs = channels::group(&mut cfg, &t, &sk, &mut issues);
    channels::peaks(&mut cfg, &t, &accs, &mut issues);
    remarks::push(&mut cfg, &issues);
    let qemu = is_qemu(d);
    if qemu {
        cfg.notes.push(
            "virtual machine (QEMU): the memory devices are synthesized by the hypervisor and say nothing about the host's DIMMs"
                .into(),
        );
    }
    let incomplete = peaks::system(&mut cfg, &t, p.cut, p.ended, qemu);
    peaks::sockets(&mut cfg, &t, &sk, incomplete);

    // Nodes.
    match nodes {
        Err(why) => cfg.nodes_reason = Some(why),
        Ok(topo) => node_peaks::node_peaks(&mut cfg, topo),
    }
    cfg
}

/// Whether the table comes from QEMU (its system name or a device's manufacturer).
fn is_qemu(d: &Decoded) -> bool {
    d.system.as_deref().is_some_and(|s| s.contains("QEMU"))
        || d.devices
            .iter()
            .any(|x| x.manufacturer.as_deref() == Some("QEMU"))
}

/// The arrays with their mapped ranges, and a note for each range of an unknown array.
fn arrays(cfg: &mut MemConfig, d: &Decoded) {
    for a in &d.arrays {
        let ranges = merge(
            d.array_maps
                .iter()
                .filter(|m| m.array_handle == a.handle)
                .map(|m| AddressRange {
                    start: m.start,
                    end: m.end,
                })
                .collect(),
        );
        cfg.arrays.push(MemoryArray {
            handle: a.handle,
            location: smbios::array_location_name(a.location),
            usage: smbios::array_use_name(a.usage),
            error_correction: smbios::error_correction_name(a.error_correction),
            max_capacity_bytes: a.max_capacity_bytes,
            slots: a.devices,
            ranges,
        });
    }
    for m in &d.array_maps {
        if !d.arrays.iter().any(|a| a.handle == m.array_handle) {
            cfg.notes.push(format!(
                "array mapped address {:#06x} refers to array {:#06x}, which the table does not list",
                m.handle, m.array_handle
            ));
        }
    }
}

/// Which devices count (those of system-memory arrays), their names, and where the
/// locators put them (Dell boards: the socket from the letter, no channel).
fn table<'a>(cfg: &mut MemConfig, d: &'a Decoded, populated_cpus: u32) -> Table<'a> {
    let non_system: BTreeSet<u16> = d
        .arrays
        .iter()
        .filter(|a| !matches!(a.usage, 1..=3))
        .map(|a| a.handle)
        .collect();

    // Devices: which count, where the locators put them.
    let n = d.devices.len();
    let counts: Vec<bool> = d
        .devices
        .iter()
        .map(|x| x.array_handle.is_none_or(|h| !non_system.contains(&h)))
        .collect();
    let excluded = counts.iter().filter(|c| !**c).count();
    if excluded > 0 {
        cfg.notes.push(format!(
            "{excluded} memory device(s) belong to arrays not used as system memory (video, flash, cache ...) and are not counted"
        ));
    }
    let mut placements: Vec<Placement> = d
        .devices
        .iter()
        .map(|x| {
            locator::parse(
                x.locator.as_deref().unwrap_or(""),
                x.bank_locator.as_deref().unwrap_or(""),
            )
        })
        .collect();
    let counted: Vec<usize> = (0..n).filter(|&i| counts[i]).collect();
    let names = names(&d.devices);
    if locator::is_dell_board(
        counted
            .iter()
            .map(|&i| d.devices[i].locator.as_deref().unwrap_or("")),
    ) {
        for &i in &counted {
            let loc = d.devices[i].locator.as_deref().unwrap_or("");
            if let Some(s) = locator::dell_socket(loc) {
                placements[i].rule = format!(
                    "Dell locator: socket {} from the letter; the slot number does not say the channel",
                    s.text
                );
                placements[i].socket = Some(s);
                placements[i].channel = None;
            }
        }
    }
    Table {
        d,
        populated_cpus,
        non_system,
        counts,
        counted,
        names,
        placements,
    }
}
