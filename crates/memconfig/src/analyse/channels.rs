//! Memory channels: the populated devices grouped by socket and channel label, and each
//! channel's speed, width and peak.

use super::sockets::Sockets;
use super::{list, Issues, Table};
use crate::smbios::{self, DeviceSize, MemoryDeviceRaw};
use numalab_records::memconfig::{Channel, MemConfig, Peak};

/// A channel being gathered: its id, socket, label and member devices.
pub(super) struct Acc {
    id: String,
    socket: Option<u32>,
    label: String,
    assumed: bool,
    members: Vec<usize>,
}

/// Groups the populated counted devices into channels (setting each device's channel).
pub(super) fn group(
    cfg: &mut MemConfig,
    t: &Table<'_>,
    sk: &Sockets,
    issues: &mut Issues,
) -> Vec<Acc> {
    let d = t.d;
    let dn = &t.names;
    let populated_cpus = t.populated_cpus;
    let mut accs: Vec<Acc> = Vec::new();
    let multi_array = d.arrays.len() > 1;
    let mut boardwide_named = false;
    for &i in &t.counted {
        let raw = &d.devices[i];
        if raw.size == DeviceSize::NotInstalled {
            continue;
        }
        if raw.data_width == Some(0) {
            issues.add("ecc_only", dn[i].clone());
            continue;
        }
        let scope = match (sk.of[i], raw.array_handle) {
            (Some(s), _) => format!("socket {s}"),
            (None, Some(h)) if multi_array => format!("array {h:#06x}"),
            _ => "board".to_string(),
        };
        let (label, assumed) = match &t.placements[i].channel {
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
                socket: sk.of[i],
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
    accs
}

/// What a channel's devices report: speeds, widths, who reports none, memory types.
#[derive(Default)]
struct Reported {
    speeds: Vec<u32>,
    widths: Vec<u16>,
    no_speed: Vec<String>,
    no_width: Vec<String>,
    types: Vec<String>,
    rated: bool,
}

/// Gathers what the channel's devices report, noting HBM, persistent memory and the
/// speed and width quirks.
fn reported(t: &Table<'_>, a: &Acc, issues: &mut Issues) -> Reported {
    let mut r = Reported::default();
    for &i in &a.members {
        let raw = &t.d.devices[i];
        let ty = smbios::memory_type_name(raw.memory_type);
        if !r.types.contains(&ty) {
            r.types.push(ty);
        }
        let nm = t.names[i].as_str();
        if smbios::is_hbm_type(raw.memory_type) {
            issues.add("hbm", nm.to_string());
        }
        if raw.technology.is_some_and(|t| (4..=7).contains(&t)) {
            issues.add("nonvolatile", nm.to_string());
        }
        match device_speed(raw, nm, issues) {
            (Some(s), rated) => {
                r.speeds.push(s);
                r.rated |= rated;
            }
            (None, _) => r.no_speed.push(nm.to_string()),
        }
        match device_width(raw, nm, issues) {
            Some(w) => r.widths.push(w),
            None => r.no_width.push(nm.to_string()),
        }
    }
    r
}

/// Pushes one [`Channel`] per group with its speed, width and peak.
pub(super) fn peaks(cfg: &mut MemConfig, t: &Table<'_>, accs: &[Acc], issues: &mut Issues) {
    for a in accs {
        let r = reported(t, a, issues);
        let speed = r.speeds.iter().copied().min();
        let width = r.widths.iter().copied().min();
        disagreements(cfg, a, &r, speed, width);
        let peak = match (speed, width) {
            (Some(s), Some(w)) => Peak::of(f64::from(s) * 1e6 * f64::from(w) / 8.0),
            (s, w) => unknown_peak(&r, s, w),
        };
        cfg.channels.push(Channel {
            id: a.id.clone(),
            socket: a.socket,
            label: a.label.clone(),
            assumed: a.assumed,
            devices: a.members.iter().map(|&i| t.names[i].clone()).collect(),
            memory_type: r.types.join("/"),
            speed_mts: speed,
            speed_source: match (speed, r.rated) {
                (None, _) => "unknown".into(),
                (Some(_), true) => "rated".into(),
                (Some(_), false) => "configured".into(),
            },
            data_width_bits: width,
            peak,
        });
    }
}

/// Notes where the channel's devices disagree on speed or width, or some report no speed.
fn disagreements(
    cfg: &mut MemConfig,
    a: &Acc,
    r: &Reported,
    speed: Option<u32>,
    width: Option<u16>,
) {
    if r.speeds.iter().any(|&s| Some(s) != speed) {
        cfg.notes.push(format!(
            "{}: its devices run at different speeds ({} MT/s): the lowest is used",
            a.id,
            r.speeds
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if r.widths.iter().any(|&w| Some(w) != width) {
        cfg.notes.push(format!(
            "{}: its devices report different data widths: the narrowest is used",
            a.id
        ));
    }
    if speed.is_some() && !r.no_speed.is_empty() {
        cfg.notes.push(format!(
            "{}: {} {} no speed; the channel's other devices give it",
            a.id,
            list(&r.no_speed),
            if r.no_speed.len() == 1 {
                "reports"
            } else {
                "report"
            }
        ));
    }
}

/// The unknown peak of a channel lacking a speed or a width, saying which devices lack it.
fn unknown_peak(r: &Reported, s: Option<u32>, w: Option<u16>) -> Peak {
    let mut why = Vec::new();
    let verb = |v: &[String]| if v.len() == 1 { "reports" } else { "report" };
    if s.is_none() {
        why.push(format!(
            "{} {} no speed (SMBIOS speed 0 = unknown)",
            list(&r.no_speed),
            verb(&r.no_speed)
        ));
    }
    if w.is_none() {
        why.push(format!(
            "{} {} no data width (FFFFh = unknown), and type {} has no standard width",
            list(&r.no_width),
            verb(&r.no_width),
            r.types.join("/")
        ));
    }
    Peak::unknown(why.join("; "))
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
