//! The machine's memory configuration from SMBIOS, and the theoretical peak memory
//! bandwidth per system, per socket and per NUMA node.
//!
//! # Sources
//!
//! - `/sys/firmware/dmi/tables/DMI`: the whole SMBIOS structure table, and
//!   `/sys/firmware/dmi/tables/smbios_entry_point`: its entry point (the version).
//!   Both are readable by root only.
//! - `/sys/firmware/dmi/entries/T-N/raw`: one structure per file (kernels with
//!   `CONFIG_DMI_SYSFS`), used when the table file is absent or unreadable.
//! - `/sys/devices/system/node/nodeN/memoryM`, `/sys/devices/system/memory/block_size_bytes`,
//!   `nodeN/cpulist` and the CPUs' `physical_package_id`: the NUMA nodes' memory and sockets.
//!
//! Everything is read under a root folder (`/` on the machine, a fixture tree in tests).
//! The parser ([`smbios`]) is written from DMTF DSP0134 3.x and decodes types 1, 4, 16,
//! 17, 19 and 20; a truncated or hostile table ends in notes, never in a panic.
//!
//! # The rule: bandwidth is per channel
//!
//! A channel's theoretical peak is its transfer rate times its data width:
//! `configured speed (MT/s) x 10^6 x data width (bits) / 8` bytes per second. DIMMs on
//! the same channel (2 DIMMs per channel) share that bus, so the system peak is the
//! sum over the channels that hold at least one DIMM, not over the DIMMs. The devices
//! are grouped into channels and sockets by their locator strings ([`locator`] lists the
//! vendor forms understood); when a locator does not name the channel, the device is
//! assumed to have a channel of its own (one DIMM per channel) and
//! [`MemConfig::assumptions`] says so.
//!
//! The configured memory speed is used; when it is unknown the rated speed is, with an
//! assumption. DDR5: a module has two independent 32-bit subchannels (40 bits with ECC)
//! and SMBIOS reports the module's data width, 64 bits (total width 80 with ECC); the
//! two subchannels together move 8 bytes per transfer, so the formula is the same as
//! for DDR4: one DDR5-4800 DIMM per channel gives `4800e6 x 64 / 8 = 38.4 GB/s`.
//!
//! Per NUMA node, channels are attributed through SMBIOS address ranges intersected
//! with the nodes' memory blocks (type 20 per device, else type 19 per array), else by
//! socket: a socket's only node gets its peak, and a socket with several nodes
//! (sub-NUMA clustering, NPS, quadrants) has its channels split evenly among them, said
//! as an assumption. Each [`NodePeak`] names the method used.
//!
//! # Limits
//!
//! - The figure is the interface's theoretical peak; sustained bandwidth is lower
//!   (refresh, read/write turnarounds, page misses), typically 70-90% of it.
//! - SMBIOS describes devices, not the memory controller: the data width it reports may
//!   not be the controller's real width (HBM stacks have 1024-bit interfaces; LPDDR
//!   packages may be listed per package or per channel; CXL memory is usually absent),
//!   and nothing says which channels the controller interleaves.
//! - Locators are free text: an unrecognized form means assumed channels.
//! - No tables (a virtual machine without SMBIOS, a container without `/sys/firmware`),
//!   unreadable tables (not root), devices without speed (QEMU's "DIMM 0") or without
//!   populated devices give no figure, with the reason; a figure is never invented.

#![warn(missing_docs)]

pub mod analyse;
pub mod locator;
pub mod nodes;
pub mod smbios;
pub mod synth;

pub use numalab_records::memconfig::{
    AddressRange, Channel, DeviceMapping, MemConfig, MemoryArray, MemoryDevice, NodePeak, Peak,
    SmbiosSource, SocketPeak,
};

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;

/// Largest table file read (a real table is a few tens of KiB).
const MAX_TABLE_BYTES: u64 = 16 << 20;

/// Structure types read from `entries/` (the rest are not needed).
const TYPES: [u8; 6] = [1, 4, 16, 17, 19, 20];

fn read_capped(p: &Path) -> std::io::Result<Vec<u8>> {
    let mut v = Vec::new();
    File::open(p)?.take(MAX_TABLE_BYTES).read_to_end(&mut v)?;
    Ok(v)
}

fn denied_reason(p: &Path) -> String {
    format!(
        "SMBIOS tables not readable: {}: permission denied (the kernel lets only root read them); run numalab as root, or read the memory devices with `sudo dmidecode -t memory`",
        p.display()
    )
}

/// Walks a table, with the entry point when there is one, into what [`analyse`] takes.
fn parse_bytes(
    entry_point: Option<&[u8]>,
    table: &[u8],
    mut source: SmbiosSource,
) -> analyse::Parsed {
    let mut notes = Vec::new();
    let mut bytes = table;
    if let Some(ep) = entry_point {
        match smbios::parse_entry_point(ep) {
            Ok(e) => {
                source.version = Some(e.version());
                source.entry_point = Some(e.kind.to_string());
                if !e.checksum_ok {
                    notes.push("the SMBIOS entry point's checksum is wrong".into());
                }
                // 3.0 gives a maximum size, 2.1 and legacy the exact length.
                let declared = usize::try_from(e.table_len).unwrap_or(usize::MAX);
                if declared > 0 && table.len() > declared {
                    bytes = &table[..declared];
                } else if e.kind != smbios::EntryPointKind::Smbios3 && table.len() < declared {
                    notes.push(format!(
                        "the table holds {} bytes, the entry point declares {declared}",
                        table.len()
                    ));
                }
            }
            Err(e) => notes.push(format!("entry point not understood: {e}")),
        }
    }
    let t = smbios::parse_table(bytes);
    notes.extend(t.notes.iter().cloned());
    source.structures = t.structures.len();
    source.skipped = t.skipped;
    analyse::Parsed {
        source,
        decoded: smbios::decode(&t.structures),
        notes,
        cut: t.cut,
        ended: t.ended,
    }
}

/// Reads the SMBIOS data under `root`: the table file, else the per-structure files.
fn load(root: &Path) -> Result<analyse::Parsed, String> {
    let dmi = root.join("sys/firmware/dmi");
    if !dmi.exists() {
        return Err(format!(
            "no SMBIOS tables: {} does not exist (firmware without SMBIOS, such as some virtual machines and boards, a container without /sys/firmware, or a kernel without DMI support)",
            dmi.display()
        ));
    }
    let table_path = dmi.join("tables/DMI");
    let ep_path = dmi.join("tables/smbios_entry_point");
    let mut notes = Vec::new();
    let mut denied: Option<String> = None;
    match read_capped(&table_path) {
        Ok(table) => {
            let ep = read_capped(&ep_path).ok();
            if ep.is_none() {
                notes.push(format!(
                    "{} not readable: SMBIOS version unknown",
                    ep_path.display()
                ));
            }
            let mut files = vec![table_path.display().to_string()];
            if ep.is_some() {
                files.push(ep_path.display().to_string());
            }
            let source = SmbiosSource {
                root: root.display().to_string(),
                kind: "table".into(),
                files,
                ..SmbiosSource::default()
            };
            let mut parsed = parse_bytes(ep.as_deref(), &table, source);
            notes.append(&mut parsed.notes);
            parsed.notes = notes;
            return Ok(parsed);
        }
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            denied = Some(denied_reason(&table_path));
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => notes.push(format!("{}: {e}", table_path.display())),
    }

    // One file per structure.
    let entries = dmi.join("entries");
    let rd = match std::fs::read_dir(&entries) {
        Ok(rd) => rd,
        Err(e) => {
            return Err(match (denied, e.kind()) {
                (Some(d), _) => d,
                (None, ErrorKind::PermissionDenied) => denied_reason(&entries),
                (None, _) => format!(
                    "no SMBIOS tables: {} has neither tables/DMI nor entries/",
                    dmi.display()
                ),
            })
        }
    };
    let mut found: Vec<(u8, u32, std::path::PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let (t, i) = name.split_once('-')?;
            let (t, i) = (t.parse::<u8>().ok()?, i.parse::<u32>().ok()?);
            TYPES.contains(&t).then(|| (t, i, e.path().join("raw")))
        })
        .collect();
    found.sort();
    let mut structures = Vec::new();
    let mut skipped = 0usize;
    let mut skipped_devices = 0usize;
    let mut denied_entries = 0usize;
    for (t, _, path) in &found {
        match read_capped(path) {
            Ok(b) => match smbios::parse_structure(&b) {
                Ok(s) => structures.push(s),
                Err(e) => {
                    notes.push(format!("{}: {e}", path.display()));
                    skipped += 1;
                    skipped_devices += usize::from(*t == 17);
                }
            },
            Err(e) => {
                if e.kind() == ErrorKind::PermissionDenied {
                    denied_entries += 1;
                } else {
                    notes.push(format!("{}: {e}", path.display()));
                }
                skipped += 1;
                skipped_devices += usize::from(*t == 17);
            }
        }
    }
    if structures.is_empty() && denied_entries > 0 {
        return Err(denied.unwrap_or_else(|| denied_reason(&entries)));
    }
    if found.is_empty() {
        return Err(denied.unwrap_or_else(|| {
            format!(
                "no SMBIOS tables: {} lists no structure of types 1, 4, 16, 17, 19 or 20",
                entries.display()
            )
        }));
    }
    let mut decoded = smbios::decode(&structures);
    decoded.skipped_devices += skipped_devices;
    Ok(analyse::Parsed {
        source: SmbiosSource {
            root: root.display().to_string(),
            kind: "entries".into(),
            files: vec![format!(
                "{} ({} structures of types 1, 4, 16, 17, 19, 20)",
                entries.display(),
                found.len()
            )],
            structures: structures.len(),
            skipped,
            ..SmbiosSource::default()
        },
        decoded,
        notes,
        cut: false,
        ended: true,
    })
}

/// Reads the memory configuration of the machine whose files are under `root`
/// (normally `/`) and derives its peaks. Never fails: what cannot be read or derived is
/// absent with its reason.
pub fn read(root: &Path) -> MemConfig {
    let topo = nodes::read_nodes(root);
    match load(root) {
        Ok(parsed) => analyse::analyse(parsed, topo.as_ref().map_err(Clone::clone)),
        Err(why) => MemConfig {
            source: SmbiosSource {
                root: root.display().to_string(),
                kind: "none".into(),
                ..SmbiosSource::default()
            },
            system: Peak::unknown(why.clone()),
            sockets_reason: Some(why.clone()),
            nodes_reason: Some(why),
            ..MemConfig::default()
        },
    }
}

/// Derives the configuration from a structure table given as bytes (and its entry
/// point, if known), without NUMA node information.
pub fn from_table(entry_point: Option<&[u8]>, table: &[u8]) -> MemConfig {
    let source = SmbiosSource {
        kind: "bytes".into(),
        ..SmbiosSource::default()
    };
    analyse::analyse(
        parse_bytes(entry_point, table, source),
        Err("no NUMA node information given".into()),
    )
}

/// A measured bandwidth as a share of a peak (0.8 = 80%). None when the peak is unknown
/// or not positive, or the measurement is not a finite non-negative number.
pub fn share(measured_bytes_per_s: f64, peak_bytes_per_s: Option<f64>) -> Option<f64> {
    let p = peak_bytes_per_s?;
    if !(p.is_finite()
        && p > 0.0
        && measured_bytes_per_s.is_finite()
        && measured_bytes_per_s >= 0.0)
    {
        return None;
    }
    Some(measured_bytes_per_s / p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_of_peak() {
        assert_eq!(share(102.4e9, Some(204.8e9)), Some(0.5));
        assert_eq!(share(1.0, None), None);
        assert_eq!(share(1.0, Some(0.0)), None);
        assert_eq!(share(f64::NAN, Some(1.0)), None);
        assert_eq!(share(-1.0, Some(1.0)), None);
    }

    #[test]
    fn absent_tables_give_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let m = read(dir.path());
        assert_eq!(m.peak(), None);
        let why = m.unknown_reason().unwrap();
        assert!(why.contains("sys/firmware/dmi does not exist"), "{why}");
        assert_eq!(m.source.kind, "none");
        assert!(m.summary().starts_with("peak unknown: no SMBIOS tables"));
    }

    #[test]
    fn permission_reason_names_root_and_dmidecode() {
        let r = denied_reason(Path::new("/sys/firmware/dmi/tables/DMI"));
        assert!(r.contains("root") && r.contains("dmidecode"), "{r}");
    }
}
