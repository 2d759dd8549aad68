//! One [`MemoryDevice`] record per SMBIOS memory device, with where it was placed.

use super::sockets::Sockets;
use super::{Issues, Table};
use crate::smbios::{self, DeviceSize, MemoryDeviceRaw};
use numalab_records::memconfig::{AddressRange, DeviceMapping, MemConfig, MemoryDevice};

/// Pushes the device records and counts the slots and populated devices.
pub(super) fn records(cfg: &mut MemConfig, t: &Table<'_>, sk: &Sockets, issues: &mut Issues) {
    let d = t.d;
    for (i, raw) in d.devices.iter().enumerate() {
        let pl = &t.placements[i];
        let populated = raw.size != DeviceSize::NotInstalled;
        if populated && raw.size == DeviceSize::Unknown && t.counts[i] {
            issues.add("size_unknown", t.names[i].clone());
        }
        let mut placement = pl.rule.clone();
        if let Some(m) = sk.method.filter(|_| sk.of[i].is_some()) {
            if m != "locators" {
                placement.push_str(&format!(
                    "; socket {} from {}",
                    sk.of[i].unwrap_or(0),
                    if m == "memory_arrays" {
                        "its memory array"
                    } else {
                        "the single processor"
                    }
                ));
            }
        }
        if !t.counts[i] {
            placement = "not counted: its array is not system memory".into();
        }
        cfg.devices.push(MemoryDevice {
            handle: raw.handle,
            array_handle: raw.array_handle,
            locator: raw.locator.clone().unwrap_or_default(),
            bank_locator: raw.bank_locator.clone().unwrap_or_default(),
            memory_type: smbios::memory_type_name(raw.memory_type),
            memory_type_code: raw.memory_type,
            form_factor: smbios::form_factor_name(raw.form_factor),
            technology: raw.technology.map(smbios::technology_name),
            populated,
            size_bytes: match raw.size {
                DeviceSize::Bytes(b) => Some(b),
                _ => None,
            },
            total_width_bits: raw.total_width,
            data_width_bits: raw.data_width,
            speed_mts: raw.speed,
            configured_speed_mts: raw.configured_speed,
            rank: raw.rank,
            manufacturer: raw.manufacturer.clone(),
            part_number: raw.part_number.clone(),
            socket: sk.of[i],
            socket_label: pl.socket.as_ref().map(|s| s.text.clone()),
            channel_label: pl.channel.clone(),
            channel: None,
            placement,
            mappings: mappings(t, raw),
        });
    }
    cfg.slots = t.counted.len();
    cfg.populated = t
        .counted
        .iter()
        .filter(|&&i| cfg.devices[i].populated)
        .count();
}

/// The device's mapped address ranges (type 20).
fn mappings(t: &Table<'_>, raw: &MemoryDeviceRaw) -> Vec<DeviceMapping> {
    t.d.device_maps
        .iter()
        .filter(|m| m.device_handle == raw.handle)
        .map(|m| DeviceMapping {
            range: AddressRange {
                start: m.start,
                end: m.end,
            },
            array_mapping_handle: m.array_mapped_handle,
            partition_row_position: m.partition_row_position,
            interleave_position: m.interleave_position,
            interleaved_data_depth: m.interleaved_data_depth,
        })
        .collect()
}
