//! From decoded SMBIOS structures (and the NUMA nodes) to a [`MemConfig`]: devices to
//! sockets and channels, channels to peaks, peaks to sockets and nodes.

use crate::locator::{self, Placement};
use crate::nodes::{merge, overlap, NodeTopology};
use crate::smbios::{self, Decoded, DeviceSize, MemoryDeviceRaw};
use numalab_records::memconfig::{
    AddressRange, Channel, DeviceMapping, MemConfig, MemoryArray, MemoryDevice, NodePeak, Peak,
    SmbiosSource, SocketPeak,
};
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

/// Slowest data rate JEDEC defines for a generation, MT/s (a configured value below it
/// is a clock in MHz written by older firmware).
fn jedec_min_mts(code: u8) -> Option<u32> {
    match code {
        0x18 => Some(800),  // DDR3
        0x1A => Some(1600), // DDR4
        0x22 => Some(3200), // DDR5
        _ => None,
    }
}

/// The speed to use for a device, MT/s, and whether it is the rated one.
fn device_speed(raw: &MemoryDeviceRaw, n: &str, issues: &mut Issues) -> (Option<u32>, bool) {
    match (raw.configured_speed, raw.speed) {
        (Some(c), Some(r)) => {
            if u64::from(c) * 2 == u64::from(r)
                && jedec_min_mts(raw.memory_type).is_some_and(|m| c < m)
            {
                issues.add("clock_mhz", format!("{n} ({c} of {r})"));
                (Some(r), false)
            } else {
                (Some(c), false)
            }
        }
        (Some(c), None) => (Some(c), false),
        (None, Some(r)) => {
            issues.add("rated_speed", n.to_string());
            (Some(r), true)
        }
        (None, None) => (None, false),
    }
}

/// The data width to use for a device, bits.
fn device_width(raw: &MemoryDeviceRaw, n: &str, issues: &mut Issues) -> Option<u16> {
    let n = n.to_string();
    let ddr = smbios::is_ddr_dimm_type(raw.memory_type);
    match raw.data_width {
        Some(w) if ddr && (w == 72 || w == 80) && raw.total_width == Some(w) => {
            issues.add("width_ecc", format!("{n} ({w})"));
            Some(64)
        }
        Some(w) => {
            if raw.memory_type == 0x22 && w == 32 {
                issues.add("ddr5_32", n);
            }
            Some(w)
        }
        None if ddr => {
            issues.add("width_assumed", n);
            Some(64)
        }
        None => None,
    }
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

    // Arrays and their mapped ranges.
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
    let dn = names(&d.devices);
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

    // Sockets.
    let mut socket_of: Vec<Option<u32>> = vec![None; n];
    let mut socket_method: Option<&'static str> = None;
    let mut socket_why = String::new();
    let labeled: Vec<usize> = counted
        .iter()
        .copied()
        .filter(|&i| placements[i].socket.is_some())
        .collect();
    let families: BTreeSet<&str> = labeled
        .iter()
        .filter_map(|&i| placements[i].socket.as_ref().map(|s| s.family.as_str()))
        .collect();
    if !labeled.is_empty() && labeled.len() == counted.len() && families.len() == 1 {
        let numbers: BTreeSet<u32> = labeled
            .iter()
            .filter_map(|&i| placements[i].socket.as_ref().map(|s| s.number))
            .collect();
        let k = numbers.len() as u32;
        if populated_cpus > 0 && k > populated_cpus {
            socket_why = format!(
                "the locators name {k} sockets but SMBIOS lists {populated_cpus} populated processor(s)"
            );
            cfg.notes.push(format!(
                "{socket_why}: the locator numbers are not taken as sockets"
            ));
        } else {
            let rank: BTreeMap<u32, u32> = numbers
                .iter()
                .enumerate()
                .map(|(r, &num)| (num, r as u32))
                .collect();
            for &i in &labeled {
                socket_of[i] = placements[i]
                    .socket
                    .as_ref()
                    .and_then(|s| rank.get(&s.number).copied());
            }
            if rank.iter().any(|(num, r)| num != r) {
                let texts: BTreeMap<u32, String> = labeled
                    .iter()
                    .filter_map(|&i| placements[i].socket.as_ref())
                    .map(|s| (s.number, s.text.clone()))
                    .collect();
                let map: Vec<String> = rank
                    .iter()
                    .map(|(num, r)| {
                        format!(
                            "{} = socket {r}",
                            texts.get(num).cloned().unwrap_or_default()
                        )
                    })
                    .collect();
                cfg.notes.push(format!(
                    "sockets numbered in the order of the locators' labels: {}",
                    map.join(", ")
                ));
            }
            socket_method = Some("locators");
        }
    } else if families.len() > 1 {
        socket_why = format!(
            "the locators name sockets in several forms ({})",
            families.iter().copied().collect::<Vec<_>>().join(", ")
        );
    } else if !labeled.is_empty() {
        socket_why = format!(
            "only {} of {} locators name a socket",
            labeled.len(),
            counted.len()
        );
    } else {
        socket_why = "the locators name no socket".into();
    }
    if socket_method.is_none() {
        // One physical memory array per socket, in table order.
        let sys_arrays: Vec<u16> = d
            .arrays
            .iter()
            .filter(|a| !non_system.contains(&a.handle))
            .filter(|a| {
                counted
                    .iter()
                    .any(|&i| d.devices[i].array_handle == Some(a.handle))
            })
            .map(|a| a.handle)
            .collect();
        let all_in = counted.iter().all(|&i| {
            d.devices[i]
                .array_handle
                .is_some_and(|h| sys_arrays.contains(&h))
        });
        if sys_arrays.len() >= 2
            && all_in
            && (populated_cpus == 0 || populated_cpus as usize == sys_arrays.len())
        {
            for &i in &counted {
                socket_of[i] = d.devices[i]
                    .array_handle
                    .and_then(|h| sys_arrays.iter().position(|&x| x == h))
                    .map(|p| p as u32);
            }
            socket_method = Some("memory_arrays");
            cfg.assumptions.push(format!(
                "{socket_why}: sockets taken from the {} physical memory arrays, one per socket in table order (assumed)",
                sys_arrays.len()
            ));
        } else if populated_cpus == 1 {
            for &i in &counted {
                socket_of[i] = Some(0);
            }
            socket_method = Some("single_processor");
        }
    }

    // Device records.
    let qemu = d.system.as_deref().is_some_and(|s| s.contains("QEMU"))
        || d.devices
            .iter()
            .any(|x| x.manufacturer.as_deref() == Some("QEMU"));
    for (i, raw) in d.devices.iter().enumerate() {
        let pl = &placements[i];
        let populated = raw.size != DeviceSize::NotInstalled;
        if populated && raw.size == DeviceSize::Unknown && counts[i] {
            issues.add("size_unknown", dn[i].clone());
        }
        let mut placement = pl.rule.clone();
        if let Some(m) = socket_method.filter(|_| socket_of[i].is_some()) {
            if m != "locators" {
                placement.push_str(&format!(
                    "; socket {} from {}",
                    socket_of[i].unwrap_or(0),
                    if m == "memory_arrays" {
                        "its memory array"
                    } else {
                        "the single processor"
                    }
                ));
            }
        }
        if !counts[i] {
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
            socket: socket_of[i],
            socket_label: pl.socket.as_ref().map(|s| s.text.clone()),
            channel_label: pl.channel.clone(),
            channel: None,
            placement,
            mappings: d
                .device_maps
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
                .collect(),
        });
    }
    cfg.slots = counted.len();
    cfg.populated = counted
        .iter()
        .filter(|&&i| cfg.devices[i].populated)
        .count();

    // Channels.
    struct Acc {
        id: String,
        socket: Option<u32>,
        label: String,
        assumed: bool,
        members: Vec<usize>,
    }
    let mut accs: Vec<Acc> = Vec::new();
    let multi_array = d.arrays.len() > 1;
    let mut boardwide_named = false;
    for &i in &counted {
        let raw = &d.devices[i];
        if raw.size == DeviceSize::NotInstalled {
            continue;
        }
        if raw.data_width == Some(0) {
            issues.add("ecc_only", dn[i].clone());
            continue;
        }
        let scope = match (socket_of[i], raw.array_handle) {
            (Some(s), _) => format!("socket {s}"),
            (None, Some(h)) if multi_array => format!("array {h:#06x}"),
            _ => "board".to_string(),
        };
        let (label, assumed) = match &placements[i].channel {
            Some(c) => (c.clone(), false),
            None => {
                issues.add("assumed_channel", dn[i].clone());
                (dn[i].clone(), true)
            }
        };
        if !assumed && scope == "board" && populated_cpus > 1 {
            boardwide_named = true;
        }
        let id = if assumed {
            format!("{scope} slot {label}")
        } else {
            format!("{scope} channel {label}")
        };
        cfg.devices[i].channel = Some(id.clone());
        match accs.iter_mut().find(|a| a.id == id) {
            Some(a) => a.members.push(i),
            None => accs.push(Acc {
                id,
                socket: socket_of[i],
                label,
                assumed,
                members: vec![i],
            }),
        }
    }
    if boardwide_named {
        cfg.assumptions.push(format!(
            "the locators name channels but no socket on a board with {populated_cpus} processors: devices with the same channel name are taken as one channel"
        ));
    }

    for a in &accs {
        let mut speeds = Vec::new();
        let mut widths = Vec::new();
        let mut no_speed = Vec::new();
        let mut no_width = Vec::new();
        let mut types: Vec<String> = Vec::new();
        let mut rated = false;
        for &i in &a.members {
            let raw = &d.devices[i];
            let t = smbios::memory_type_name(raw.memory_type);
            if !types.contains(&t) {
                types.push(t);
            }
            let nm = dn[i].as_str();
            if smbios::is_hbm_type(raw.memory_type) {
                issues.add("hbm", nm.to_string());
            }
            if raw.technology.is_some_and(|t| (4..=7).contains(&t)) {
                issues.add("nonvolatile", nm.to_string());
            }
            match device_speed(raw, nm, &mut issues) {
                (Some(s), r) => {
                    speeds.push(s);
                    rated |= r;
                }
                (None, _) => no_speed.push(nm.to_string()),
            }
            match device_width(raw, nm, &mut issues) {
                Some(w) => widths.push(w),
                None => no_width.push(nm.to_string()),
            }
        }
        let speed = speeds.iter().copied().min();
        let width = widths.iter().copied().min();
        if speeds.iter().any(|&s| Some(s) != speed) {
            cfg.notes.push(format!(
                "{}: its devices run at different speeds ({} MT/s): the lowest is used",
                a.id,
                speeds
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if widths.iter().any(|&w| Some(w) != width) {
            cfg.notes.push(format!(
                "{}: its devices report different data widths: the narrowest is used",
                a.id
            ));
        }
        if speed.is_some() && !no_speed.is_empty() {
            cfg.notes.push(format!(
                "{}: {} {} no speed; the channel's other devices give it",
                a.id,
                list(&no_speed),
                if no_speed.len() == 1 {
                    "reports"
                } else {
                    "report"
                }
            ));
        }
        let peak = match (speed, width) {
            (Some(s), Some(w)) => Peak::of(f64::from(s) * 1e6 * f64::from(w) / 8.0),
            (s, w) => {
                let mut why = Vec::new();
                let verb = |v: &[String]| if v.len() == 1 { "reports" } else { "report" };
                if s.is_none() {
                    why.push(format!(
                        "{} {} no speed (SMBIOS speed 0 = unknown)",
                        list(&no_speed),
                        verb(&no_speed)
                    ));
                }
                if w.is_none() {
                    why.push(format!(
                        "{} {} no data width (FFFFh = unknown), and type {} has no standard width",
                        list(&no_width),
                        verb(&no_width),
                        types.join("/")
                    ));
                }
                Peak::unknown(why.join("; "))
            }
        };
        cfg.channels.push(Channel {
            id: a.id.clone(),
            socket: a.socket,
            label: a.label.clone(),
            assumed: a.assumed,
            devices: a.members.iter().map(|&i| dn[i].clone()).collect(),
            memory_type: types.join("/"),
            speed_mts: speed,
            speed_source: match (speed, rated) {
                (None, _) => "unknown".into(),
                (Some(_), true) => "rated".into(),
                (Some(_), false) => "configured".into(),
            },
            data_width_bits: width,
            peak,
        });
    }

    // Remarks, one sentence per kind.
    if let Some((l, _, _)) = issues.get("assumed_channel") {
        cfg.assumptions.push(format!(
            "the locators of {l} do not name a memory channel: one DIMM per channel assumed (if two of them share a channel, the peak is overstated)"
        ));
    }
    if let Some((l, v, _)) = issues.get("rated_speed") {
        cfg.assumptions.push(format!(
            "{l} {v} no configured speed: the rated speed is used (the memory controller may run slower)"
        ));
    }
    if let Some((l, v, _)) = issues.get("clock_mhz") {
        cfg.assumptions.push(format!(
            "{l} {v} a configured speed of half the rated one, below the generation's slowest data rate: taken as a clock in MHz (SMBIOS before 3.1 named the field a clock speed), so the rated MT/s is used"
        ));
    }
    if let Some((l, v, _)) = issues.get("width_assumed") {
        cfg.assumptions.push(format!(
            "{l} {v} no data width: 64 bits assumed (a JEDEC DDR module)"
        ));
    }
    if let Some((l, v, _)) = issues.get("width_ecc") {
        cfg.notes.push(format!(
            "{l} {v} a data width equal to the total width: the ECC bits were counted; 64 data bits used"
        ));
    }
    if let Some((l, v, _)) = issues.get("ddr5_32") {
        cfg.notes.push(format!(
            "{l} (DDR5) {v} 32 data bits, one subchannel rather than the module's two: the peak is as reported and may be half the module's"
        ));
    }
    if let Some((l, _, be)) = issues.get("hbm") {
        cfg.notes.push(format!(
            "{l} {be} HBM: the peak is speed x the data width SMBIOS reports, which may not describe the stack's interface (1024 bits per stack)"
        ));
    }
    if let Some((l, _, be)) = issues.get("nonvolatile") {
        cfg.notes.push(format!(
            "{l} {be} persistent memory: counted on their channel like DRAM"
        ));
    }
    if let Some((l, v, _)) = issues.get("ecc_only") {
        cfg.notes.push(format!(
            "{l} {v} data width 0 (error-correction bits only): not counted"
        ));
    }
    if let Some((l, v, _)) = issues.get("size_unknown") {
        cfg.notes
            .push(format!("{l} {v} an unknown size: taken as installed"));
    }
    if qemu {
        cfg.notes.push(
            "virtual machine (QEMU): the memory devices are synthesized by the hypervisor and say nothing about the host's DIMMs"
                .into(),
        );
    }

    // System peak.
    let declared: u64 = d
        .arrays
        .iter()
        .map(|a| u64::from(a.devices.unwrap_or(0)))
        .sum();
    let fewer = (d.devices.len() as u64) < declared;
    let incomplete = ((p.cut || d.skipped_devices > 0) && (declared == 0 || fewer))
        || (!p.ended && declared > 0 && fewer);
    cfg.system = if incomplete {
        Peak::unknown(format!(
            "the SMBIOS table is truncated or corrupt ({} of {} declared memory devices read{}): the peak would be incomplete",
            d.devices.len(),
            declared,
            if p.ended {
                ""
            } else {
                ", no end-of-table structure"
            }
        ))
    } else if cfg.channels.is_empty() {
        Peak::unknown(if d.devices.is_empty() {
            "SMBIOS lists no memory device (type 17)".to_string()
        } else if counted.is_empty() {
            "no memory device belongs to a system-memory array".to_string()
        } else if cfg.populated == 0 {
            format!(
                "no populated memory device: the {} slot(s) SMBIOS lists report no module installed",
                counted.len()
            )
        } else {
            "no populated memory device carries data bits".to_string()
        })
    } else if let Some(c) = cfg.channels.iter().find(|c| !c.peak.is_known()) {
        let mut why = format!(
            "the firmware does not report what the peak needs: {}",
            c.peak.reason.clone().unwrap_or_default()
        );
        if qemu {
            why.push_str(
                " (QEMU's tables: `-smbios type=17,speed=N` sets a speed, the data width stays unknown)",
            );
        }
        Peak::unknown(why)
    } else {
        Peak::of(cfg.channels.iter().filter_map(|c| c.peak.bytes_per_s).sum())
    };

    // Sockets.
    let all_socketed = counted.iter().all(|&i| socket_of[i].is_some());
    if let (Some(method), true) = (socket_method, all_socketed && !counted.is_empty()) {
        let sockets: BTreeSet<u32> = counted.iter().filter_map(|&i| socket_of[i]).collect();
        for s in sockets {
            let mine: Vec<usize> = counted
                .iter()
                .copied()
                .filter(|&i| socket_of[i] == Some(s))
                .collect();
            let chans: Vec<&Channel> = cfg
                .channels
                .iter()
                .filter(|c| c.socket == Some(s))
                .collect();
            let peak = if !cfg.system.is_known() && incomplete {
                Peak::unknown(cfg.system.reason.clone().unwrap_or_default())
            } else if chans.is_empty() {
                Peak::unknown(format!("no populated memory device on socket {s}"))
            } else if let Some(c) = chans.iter().find(|c| !c.peak.is_known()) {
                Peak::unknown(c.peak.reason.clone().unwrap_or_default())
            } else {
                Peak::of(chans.iter().filter_map(|c| c.peak.bytes_per_s).sum())
            };
            cfg.sockets.push(SocketPeak {
                socket: s,
                label: mine
                    .iter()
                    .find_map(|&i| placements[i].socket.as_ref().map(|x| x.text.clone())),
                slots: mine.len(),
                populated: mine.iter().filter(|&&i| cfg.devices[i].populated).count(),
                channels: chans.len(),
                peak,
                method: method.to_string(),
            });
        }
    } else if counted.is_empty() {
        cfg.sockets_reason = Some("no memory device to attribute".into());
    } else {
        cfg.sockets_reason = Some(format!(
            "the devices could not be attributed to sockets: {socket_why}{}",
            match cfg.processors {
                Some(p) => format!(", and SMBIOS lists {p} populated processors"),
                None => ", and SMBIOS lists no processor".into(),
            }
        ));
    }

    // Nodes.
    match nodes {
        Err(why) => cfg.nodes_reason = Some(why),
        Ok(topo) => node_peaks(&mut cfg, topo),
    }
    cfg
}

/// Per-node peaks: exact from address ranges where SMBIOS gives them, else from the
/// sockets, else unknown.
fn node_peaks(cfg: &mut MemConfig, topo: &NodeTopology) {
    cfg.notes.extend(topo.notes.iter().cloned());
    let mut packages: Vec<u32> = topo
        .nodes
        .iter()
        .flat_map(|n| n.packages.iter().copied())
        .collect();
    packages.sort_unstable();
    packages.dedup();
    let mut out: Vec<NodePeak> = topo
        .nodes
        .iter()
        .map(|n| NodePeak {
            node: n.node,
            socket: match n.packages.as_slice() {
                [p] => packages.iter().position(|x| x == p).map(|x| x as u32),
                _ => None,
            },
            memory_bytes: Some(n.memory_bytes),
            channels: None,
            peak: Peak::unknown("not derived"),
            method: "unknown".into(),
        })
        .collect();
    let no_memory = |out: &mut Vec<NodePeak>| {
        for (np, n) in out.iter_mut().zip(&topo.nodes) {
            if n.memory_bytes == 0 && !np.peak.is_known() {
                np.peak = Peak::unknown("the node has no memory");
            }
        }
    };
    if !cfg.system.is_known() {
        let why = format!(
            "system peak unknown: {}",
            cfg.system.reason.clone().unwrap_or_default()
        );
        for np in &mut out {
            np.peak = Peak::unknown(why.clone());
        }
        cfg.nodes = out;
        return;
    }

    // Channel -> node through address ranges (type 20, then type 19).
    let by_ranges = |ranges_of: &dyn Fn(&Channel) -> Vec<Vec<AddressRange>>|
     -> Result<Vec<Option<usize>>, String> {
        let mut res = Vec::new();
        for c in &cfg.channels {
            let mut node: Option<usize> = None;
            for r in ranges_of(c) {
                let r = merge(r);
                let total: u64 = r.iter().map(AddressRange::len).sum();
                if total == 0 {
                    return Err(format!("{} has no mapped address range", c.id));
                }
                let (best, ov) = topo
                    .nodes
                    .iter()
                    .enumerate()
                    .map(|(k, n)| (k, overlap(&r, &n.ranges)))
                    .max_by_key(|x| x.1)
                    .unwrap_or((0, 0));
                if u128::from(ov) * 10 < u128::from(total) * 9 {
                    return Err(format!(
                        "{}'s mapped range does not lie within one node",
                        c.id
                    ));
                }
                match node {
                    Some(x) if x != best => {
                        return Err(format!("{}'s devices map into different nodes", c.id))
                    }
                    _ => node = Some(best),
                }
            }
            if node.is_none() {
                return Err(format!("{} has no mapped address range", c.id));
            }
            res.push(node);
        }
        Ok(res)
    };
    let dev_ranges = |c: &Channel| -> Vec<Vec<AddressRange>> {
        cfg.devices
            .iter()
            .filter(|d| d.channel.as_deref() == Some(c.id.as_str()))
            .map(|d| d.mappings.iter().map(|m| m.range).collect())
            .collect()
    };
    let array_ranges = |c: &Channel| -> Vec<Vec<AddressRange>> {
        cfg.devices
            .iter()
            .filter(|d| d.channel.as_deref() == Some(c.id.as_str()))
            .map(|d| {
                cfg.arrays
                    .iter()
                    .filter(|a| Some(a.handle) == d.array_handle)
                    .flat_map(|a| a.ranges.iter().copied())
                    .collect()
            })
            .collect()
    };
    let have_ranges = topo.nodes.iter().any(|n| !n.ranges.is_empty());
    let mut tried: Vec<String> = Vec::new();
    for (method, f) in [
        (
            "device_address_ranges",
            &dev_ranges as &dyn Fn(&Channel) -> Vec<Vec<AddressRange>>,
        ),
        ("array_address_ranges", &array_ranges),
    ] {
        if !have_ranges {
            tried.push("the nodes' address ranges are unknown".into());
            break;
        }
        match by_ranges(f) {
            Ok(assign) => {
                for (k, np) in out.iter_mut().enumerate() {
                    let mine: Vec<&Channel> = cfg
                        .channels
                        .iter()
                        .zip(&assign)
                        .filter(|(_, a)| **a == Some(k))
                        .map(|(c, _)| c)
                        .collect();
                    if mine.is_empty() {
                        np.peak = Peak::unknown(
                            "no SMBIOS memory device maps into this node's memory (memory-only node: CXL, HBM or persistent memory?)",
                        );
                        continue;
                    }
                    np.channels = Some(mine.len() as f64);
                    np.peak = Peak::of(mine.iter().filter_map(|c| c.peak.bytes_per_s).sum());
                    np.method = method.into();
                }
                no_memory(&mut out);
                cfg.nodes = out;
                return;
            }
            Err(e) => tried.push(e),
        }
    }

    // Socket -> its nodes.
    if !cfg.sockets.is_empty() && packages.len() == cfg.sockets.len() {
        for sp in &cfg.sockets {
            let mem_nodes: Vec<usize> = out
                .iter()
                .enumerate()
                .filter(|(k, np)| np.socket == Some(sp.socket) && topo.nodes[*k].memory_bytes > 0)
                .map(|(k, _)| k)
                .collect();
            if mem_nodes.is_empty() {
                cfg.notes.push(format!(
                    "socket {}: no NUMA node with its CPUs has memory",
                    sp.socket
                ));
                continue;
            }
            let k = mem_nodes.len();
            let ids: Vec<String> = mem_nodes.iter().map(|&x| out[x].node.to_string()).collect();
            if k > 1 {
                cfg.assumptions.push(format!(
                    "socket {}'s {} channel(s) split evenly among its nodes {} (sub-NUMA clustering, NPS or quadrant mode): assumed, not read from the hardware{}",
                    sp.socket,
                    sp.channels,
                    ids.join(", "),
                    if sp.channels % k != 0 {
                        format!("; {} channels do not divide by {k}", sp.channels)
                    } else {
                        String::new()
                    }
                ));
            }
            for &x in &mem_nodes {
                out[x].channels = Some(sp.channels as f64 / k as f64);
                out[x].peak = match sp.peak.bytes_per_s {
                    Some(b) => Peak::of(b / k as f64),
                    None => sp.peak.clone(),
                };
                out[x].method = if k == 1 {
                    "socket_single_node".into()
                } else {
                    "split_evenly_assumed".into()
                };
            }
        }
        for (k, np) in out.iter_mut().enumerate() {
            if np.method == "unknown" && topo.nodes[k].memory_bytes > 0 {
                np.peak = Peak::unknown(if topo.nodes[k].cpus.is_empty() {
                    "memory-only node (no CPUs): its memory is not attributed to a socket's DIMM channels".to_string()
                } else {
                    "its CPUs are not on one socket".to_string()
                });
            }
        }
        no_memory(&mut out);
        cfg.nodes = out;
        return;
    }
    if !cfg.sockets.is_empty() {
        tried.push(format!(
            "SMBIOS attributes the devices to {} socket(s), sysfs shows CPUs on {} package(s)",
            cfg.sockets.len(),
            packages.len()
        ));
    } else {
        tried.push("the devices are not attributed to sockets".into());
    }

    let with_memory: Vec<usize> = (0..out.len())
        .filter(|&k| topo.nodes[k].memory_bytes > 0)
        .collect();
    if let [only] = with_memory.as_slice() {
        out[*only].peak = cfg.system.clone();
        out[*only].channels = Some(cfg.channels.len() as f64);
        out[*only].method = "single_memory_node".into();
        no_memory(&mut out);
        cfg.nodes = out;
        return;
    }
    let why = format!(
        "no way to attribute channels to nodes: {}",
        tried.join("; ")
    );
    for np in &mut out {
        np.peak = Peak::unknown(why.clone());
    }
    no_memory(&mut out);
    cfg.nodes = out;
}
