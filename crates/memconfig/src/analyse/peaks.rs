//! The system peak (sum of the channels') and each socket's peak.

use super::sockets::Sockets;
use super::Table;
use numalab_records::memconfig::{Channel, MemConfig, Peak, SocketPeak};
use std::collections::BTreeSet;

/// Sets the system peak, unknown with a reason where the table is incomplete, has no
/// channel or a channel's peak is unknown. Returns whether the table is incomplete.
pub(super) fn system(
    cfg: &mut MemConfig,
    t: &Table<'_>,
    cut: bool,
    ended: bool,
    qemu: bool,
) -> bool {
    let d = t.d;
    let counted = &t.counted;
    let declared: u64 = d
        .arrays
        .iter()
        .map(|a| u64::from(a.devices.unwrap_or(0)))
        .sum();
    let fewer = (d.devices.len() as u64) < declared;
    let incomplete = ((cut || d.skipped_devices > 0) && (declared == 0 || fewer))
        || (!ended && declared > 0 && fewer);
    cfg.system = if incomplete {
        Peak::unknown(format!(
            "the SMBIOS table is truncated or corrupt ({} of {} declared memory devices read{}): the peak would be incomplete",
            d.devices.len(),
            declared,
            if ended {
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
    incomplete
}

/// Pushes each socket's peak where every counted device has a socket, else says why not.
pub(super) fn sockets(cfg: &mut MemConfig, t: &Table<'_>, sk: &Sockets, incomplete: bool) {
    let counted = &t.counted;
    let socket_of = &sk.of;
    let all_socketed = counted.iter().all(|&i| socket_of[i].is_some());
    if let (Some(method), true) = (sk.method, all_socketed && !counted.is_empty()) {
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
            let socket = SocketPeak {
                socket: s,
                label: mine
                    .iter()
                    .find_map(|&i| t.placements[i].socket.as_ref().map(|x| x.text.clone())),
                slots: mine.len(),
                populated: mine.iter().filter(|&&i| cfg.devices[i].populated).count(),
                channels: chans.len(),
                peak,
                method: method.to_string(),
            };
            cfg.sockets.push(socket);
        }
    } else if counted.is_empty() {
        cfg.sockets_reason = Some("no memory device to attribute".into());
    } else {
        cfg.sockets_reason = Some(format!(
            "the devices could not be attributed to sockets: {}{}",
            sk.why,
            match cfg.processors {
                Some(p) => format!(", and SMBIOS lists {p} populated processors"),
                None => ", and SMBIOS lists no processor".into(),
            }
        ));
    }
}
